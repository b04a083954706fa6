/* tach-chart-axis.c: linear and log scales with "nice" ticks.
 *
 * Ticks follow the 1-2-5 rule on linear axes and land on decades on log
 * axes (with 2 and 5 in between when the range spans few decades), so that
 * labels stay short and grid lines line up between redraws.
 */
#include "tach-chart-axis.h"

#include <math.h>
#include <stdio.h>

/* The smallest positive value a log axis shows: losses can reach zero. */
#define LOG_FLOOR 1e-9

void
tach_chart_axis_init (TachChartAxis *axis,
                      gboolean       log)
{
  axis->log = log;
  axis->min = log ? 1.0 : 0.0;
  axis->max = log ? 10.0 : 1.0;
  axis->step = log ? 0.0 : 0.2;
}

double
tach_chart_nice_step (double range,
                      guint  max_ticks)
{
  static const double mantissas[] = { 1.0, 2.0, 5.0, 10.0 };
  double raw, magnitude;

  if (!(range > 0.0) || !isfinite (range))
    return 1.0;
  raw = range / MAX (max_ticks, 1);
  magnitude = pow (10.0, floor (log10 (raw)));
  for (guint i = 0; i < G_N_ELEMENTS (mantissas); i++)
    if (mantissas[i] * magnitude >= raw * (1.0 - 1e-9))
      return mantissas[i] * magnitude;
  return 10.0 * magnitude;
}

void
tach_chart_axis_set_range (TachChartAxis *axis,
                           double         lo,
                           double         hi,
                           guint          max_ticks)
{
  if (!isfinite (lo) || !isfinite (hi) || lo > hi)
    {
      tach_chart_axis_init (axis, axis->log);
      return;
    }

  if (axis->log)
    {
      double dlo, dhi;

      if (hi <= LOG_FLOOR)
        hi = 1.0;
      if (lo <= LOG_FLOOR)
        lo = MAX (hi * 1e-3, LOG_FLOOR);
      dlo = floor (log10 (lo) + 1e-9);
      dhi = ceil (log10 (hi) - 1e-9);
      if (dhi <= dlo)
        dhi = dlo + 1.0;
      axis->min = pow (10.0, dlo);
      axis->max = pow (10.0, dhi);
      axis->step = 0.0;
      return;
    }

  /* A flat series still needs a visible band around it. */
  if (hi - lo < 1e-12 * MAX (fabs (lo), 1.0))
    {
      double pad = fabs (lo) > 0.0 ? fabs (lo) * 0.1 : 1.0;
      lo -= pad;
      hi += pad;
    }

  axis->step = tach_chart_nice_step (hi - lo, max_ticks);
  axis->min = floor (lo / axis->step + 1e-9) * axis->step;
  axis->max = ceil (hi / axis->step - 1e-9) * axis->step;
  if (axis->max <= axis->min)
    axis->max = axis->min + axis->step;
}

double
tach_chart_axis_map (const TachChartAxis *axis,
                     double               value)
{
  if (axis->log)
    {
      if (!(value > 0.0))
        return NAN;
      return (log10 (value) - log10 (axis->min))
             / (log10 (axis->max) - log10 (axis->min));
    }
  return (value - axis->min) / (axis->max - axis->min);
}

double
tach_chart_axis_unmap (const TachChartAxis *axis,
                       double               fraction)
{
  if (axis->log)
    {
      double lmin = log10 (axis->min);
      return pow (10.0, lmin + fraction * (log10 (axis->max) - lmin));
    }
  return axis->min + fraction * (axis->max - axis->min);
}

guint
tach_chart_axis_ticks (const TachChartAxis *axis,
                       guint                max_ticks,
                       double              *ticks,
                       guint                n_ticks)
{
  guint n = 0;

  if (axis->log)
    {
      int dlo = (int) lround (log10 (axis->min));
      int dhi = (int) lround (log10 (axis->max));
      int decades = dhi - dlo;
      int stride = MAX (1, (decades + (int) max_ticks - 1) / MAX ((int) max_ticks, 1));
      gboolean subticks = decades <= 2 && max_ticks >= 3 * (guint) decades + 1;

      for (int d = dlo; d <= dhi && n < n_ticks; d += stride)
        {
          double base = pow (10.0, d);

          ticks[n++] = base;
          if (subticks && d < dhi)
            {
              if (n < n_ticks)
                ticks[n++] = 2.0 * base;
              if (n < n_ticks)
                ticks[n++] = 5.0 * base;
            }
        }
      return n;
    }

  for (guint i = 0; n < n_ticks; i++)
    {
      double v = axis->min + i * axis->step;

      if (v > axis->max + axis->step * 1e-6)
        break;
      /* Snap away the rounding error of repeated additions. */
      v = round (v / axis->step) * axis->step;
      if (fabs (v) < axis->step * 1e-9)
        v = 0.0;
      ticks[n++] = v;
    }
  return n;
}

char *
tach_chart_axis_format (const TachChartAxis *axis,
                        double               value)
{
  const char *suffix = "";
  double scale = 1.0;
  double step = axis->step;
  int decimals;

  /* A log axis's labels share one notation: an axis reaching below 1e-3
   * or up to 1e12 reads in powers of ten, every tick of it, and any other
   * in 500, 1k, 20k, 1M; picked tick by tick, "1e+05" sat among "10k"s. */
  if (axis->log)
    {
      double a = fabs (value);

      if (axis->min < 1e-3 || axis->max >= 1e12)
        return g_strdup_printf ("%.0e", value);
      if (a >= 1e9)
        scale = 1e9, suffix = "G";
      else if (a >= 1e6)
        scale = 1e6, suffix = "M";
      else if (a >= 1e3)
        scale = 1e3, suffix = "k";
      step = pow (10.0, floor (log10 (a > 0.0 ? a / scale : 1.0)));
      decimals = step >= 1.0 ? 0 : (int) ceil (-log10 (step) - 1e-9);
      return g_strdup_printf ("%.*f%s", CLAMP (decimals, 0, 9), value / scale, suffix);
    }

  /* Large magnitudes read better as 12k or 3.5M than as long digits. */
  if (MAX (fabs (axis->max), fabs (axis->min)) >= 1e6 && step >= 1e5)
    {
      scale = 1e6;
      suffix = "M";
    }
  else if (MAX (fabs (axis->max), fabs (axis->min)) >= 1e4 && step >= 100)
    {
      scale = 1e3;
      suffix = "k";
    }

  step /= scale;
  decimals = step >= 1.0 ? 0 : (int) ceil (-log10 (step) - 1e-9);
  decimals = CLAMP (decimals, 0, 9);
  return g_strdup_printf ("%.*f%s", decimals, value / scale, suffix);
}
