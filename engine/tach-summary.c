/* tach-summary.c: summary statistics over a run's samples.
 *
 * Warm-up steps are shown but never summarised: lazy initialisation,
 * autotuning and graph capture would otherwise skew every figure.  Rates are
 * medians with their 10th and 90th percentiles, not means, because a step
 * time distribution has a long tail (page faults, other processes).
 *
 * Which clock: on an asynchronous device the host only queues steps, so
 * host time per step is the enqueue rate; the rates then come from the
 * device timeline (device_step_ms) whenever every measured step has it,
 * and the summary says so (rate_clock).  Beside the median, the end-to-end
 * rate divides the measured steps by the wall time from the end of warm-up
 * to the final synchronisation, which any clock must agree with.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tach-engine.h"

#define LOSS_WINDOW 10

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

/* Linear interpolation between closest ranks of sorted @v. */
static double
percentile (const double *v, guint n, double p)
{
  double pos, frac;
  guint lo;

  if (n == 0)
    return NAN;
  pos = p * (double) (n - 1);
  lo = (guint) floor (pos);
  if (lo + 1 >= n)
    return v[n - 1];
  frac = pos - (double) lo;
  return v[lo] + frac * (v[lo + 1] - v[lo]);
}

/* Mean of the observed (non-NaN) losses among @count measured samples
 * starting at measured index @from. */
static double
mean_loss (const TachSample *const *measured, guint from, guint count)
{
  double sum = 0.0;
  guint seen = 0;

  for (guint i = from; i < from + count; i++)
    if (!isnan (measured[i]->loss))
      {
        sum += measured[i]->loss;
        seen++;
      }
  return seen > 0 ? sum / seen : NAN;
}

static void
add_phase (double *sum, double value)
{
  /* A phase the engine did not observe adds nothing rather than NaN. */
  if (!isnan (value))
    *sum += value;
}

void
tach_summary_compute (const TachSample *samples, guint n, guint64 items_per_step,
                      double flops_per_step, double device_peak_flops, TachSummary *out)
{
  g_autofree const TachSample **measured = g_new (const TachSample *, MAX (n, 1));
  g_autofree double *rates = g_new (double, MAX (n, 1));
  guint n_measured = 0, n_rates = 0, n_device = 0, n_calls = 0;
  double warm_end_s = 0.0;
  gboolean device_clock;
  double step_sum = 0.0, feed = 0.0, compute = 0.0, sync = 0.0, host = 0.0;
  guint window;

  memset (out, 0, sizeof *out);
  out->items_unit = "samples/s";
  out->flops_per_step = flops_per_step;
  out->test_accuracy = NAN;
  out->wall_s = n > 0 ? samples[n - 1].wall_s : 0.0;

  for (guint i = 0; i < n; i++)
    {
      const TachSample *s = &samples[i];

      if (s->warmup)
        {
          warm_end_s = MAX (warm_end_s, s->wall_s);
          continue;
        }
      measured[n_measured++] = s;
      if (s->device_step_ms > 0.0 && isfinite (s->device_step_ms))
        n_device++;
      if (isfinite (s->api_calls))
        rates[n_calls++] = s->api_calls;
    }
  qsort (rates, n_calls, sizeof (double), compare_doubles);
  out->api_calls_per_step = n_calls > 0 ? percentile (rates, n_calls, 0.5) : NAN;
  /* One clock for every rate of the run, never a mixture. */
  device_clock = n_measured > 0 && n_device == n_measured;
  out->rate_clock = device_clock ? "device" : "host";
  for (guint m = 0; m < n_measured; m++)
    {
      const TachSample *s = measured[m];

      if (s->step_ms > 0.0 && isfinite (s->step_ms))
        {
          rates[n_rates++] = 1000.0 / (device_clock ? s->device_step_ms : s->step_ms);
          step_sum += s->step_ms;
          add_phase (&feed, s->feed_ms);
          add_phase (&compute, s->compute_ms);
          add_phase (&sync, s->sync_ms);
          add_phase (&host, s->host_ms);
        }
    }

  out->steps = n_measured;
  out->e2e_steps_per_s = n_measured > 0 && out->wall_s > warm_end_s
                         ? (double) n_measured / (out->wall_s - warm_end_s) : NAN;
  qsort (rates, n_rates, sizeof (double), compare_doubles);
  out->steps_per_s_median = percentile (rates, n_rates, 0.5);
  out->steps_per_s_p10 = percentile (rates, n_rates, 0.1);
  out->steps_per_s_p90 = percentile (rates, n_rates, 0.9);
  out->items_per_s = (double) items_per_step * out->steps_per_s_median;

  /* Two windows that never overlap, so that a short run's first and final
   * losses are two different averages; a single step is only a final one. */
  window = MIN (LOSS_WINDOW, n_measured / 2);
  out->first_loss = window > 0 ? mean_loss (measured, 0, window) : NAN;
  if (n_measured == 1)
    window = 1;
  out->final_loss = window > 0 ? mean_loss (measured, n_measured - window, window) : NAN;
  out->loss_window_steps = window;

  if (step_sum > 0.0)
    {
      out->feed_share = feed / step_sum;
      out->compute_share = compute / step_sum;
      out->sync_share = sync / step_sum;
      out->host_share = host / step_sum;
    }
  else
    out->feed_share = out->compute_share = out->sync_share = out->host_share = NAN;

  out->achieved_flops = flops_per_step * out->steps_per_s_median;
  out->peak_share = device_peak_flops > 0.0 ? out->achieved_flops / device_peak_flops : NAN;
}
