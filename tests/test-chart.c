/* test-chart.c: the chart's scale (ticks, log axis, labels) and data
 * (bounded buckets, min/max kept, smoothing), without a display. */
#include <math.h>
#include <string.h>
#include <glib.h>

#include "tach-chart-axis.h"
#include "tach-chart-series.h"

static void
test_axis_nice_step (void)
{
  g_assert_cmpfloat_with_epsilon (tach_chart_nice_step (1.0, 5), 0.2, 1e-12);
  g_assert_cmpfloat_with_epsilon (tach_chart_nice_step (7.3, 5), 2.0, 1e-12);
  g_assert_cmpfloat_with_epsilon (tach_chart_nice_step (1234.0, 4), 500.0, 1e-9);
  g_assert_cmpfloat_with_epsilon (tach_chart_nice_step (0.031, 3), 0.02, 1e-12);
  g_assert_cmpfloat_with_epsilon (tach_chart_nice_step (100.0, 10), 10.0, 1e-12);
}

static void
test_axis_linear_ticks (void)
{
  TachChartAxis axis;
  double ticks[TACH_CHART_AXIS_MAX_TICKS];
  guint n;

  tach_chart_axis_init (&axis, FALSE);
  tach_chart_axis_set_range (&axis, 3.2, 97.5, 5);
  /* The range is widened to whole ticks of a 1-2-5 step. */
  g_assert_cmpfloat_with_epsilon (axis.step, 20.0, 1e-12);
  g_assert_cmpfloat_with_epsilon (axis.min, 0.0, 1e-12);
  g_assert_cmpfloat_with_epsilon (axis.max, 100.0, 1e-12);

  n = tach_chart_axis_ticks (&axis, 5, ticks, G_N_ELEMENTS (ticks));
  g_assert_cmpuint (n, ==, 6);
  for (guint i = 0; i < n; i++)
    g_assert_cmpfloat_with_epsilon (ticks[i], 20.0 * i, 1e-9);

  g_assert_cmpfloat_with_epsilon (tach_chart_axis_map (&axis, 50.0), 0.5, 1e-12);
  g_assert_cmpfloat_with_epsilon (tach_chart_axis_unmap (&axis, 0.25), 25.0, 1e-12);

  /* Ticks of a small step land on the step and read as short decimals. */
  tach_chart_axis_set_range (&axis, 0.0, 0.9, 9);
  n = tach_chart_axis_ticks (&axis, 9, ticks, G_N_ELEMENTS (ticks));
  g_assert_cmpuint (n, ==, 10);
  g_assert_cmpfloat_with_epsilon (ticks[3], 0.3, 1e-15);
  {
    g_autofree char *label = tach_chart_axis_format (&axis, ticks[3]);
    g_assert_cmpstr (label, ==, "0.3");
  }

  /* A flat series still gets a band around it. */
  tach_chart_axis_set_range (&axis, 5.0, 5.0, 5);
  g_assert_cmpfloat (axis.min, <, 5.0);
  g_assert_cmpfloat (axis.max, >, 5.0);
}

static void
test_axis_labels (void)
{
  TachChartAxis axis;
  g_autofree char *a = NULL, *b = NULL, *c = NULL;

  tach_chart_axis_init (&axis, FALSE);
  tach_chart_axis_set_range (&axis, 0.0, 25000.0, 5);
  a = tach_chart_axis_format (&axis, 10000.0);
  g_assert_cmpstr (a, ==, "10k");

  tach_chart_axis_set_range (&axis, 0.0, 4e6, 4);
  b = tach_chart_axis_format (&axis, 3e6);
  g_assert_cmpstr (b, ==, "3M");

  tach_chart_axis_set_range (&axis, 0.0, 2.0, 4);
  c = tach_chart_axis_format (&axis, 1.5);
  g_assert_cmpstr (c, ==, "1.5");
}

static void
test_axis_log (void)
{
  TachChartAxis axis;
  double ticks[TACH_CHART_AXIS_MAX_TICKS];
  guint n;

  tach_chart_axis_init (&axis, TRUE);
  tach_chart_axis_set_range (&axis, 0.03, 450.0, 8);
  /* Decades around the data. */
  g_assert_cmpfloat_with_epsilon (axis.min, 0.01, 1e-12);
  g_assert_cmpfloat_with_epsilon (axis.max, 1000.0, 1e-9);
  g_assert_cmpfloat_with_epsilon (tach_chart_axis_map (&axis, 1.0), 0.4, 1e-12);
  g_assert_cmpfloat_with_epsilon (tach_chart_axis_map (&axis, 10.0), 0.6, 1e-12);
  g_assert_cmpfloat_with_epsilon (tach_chart_axis_unmap (&axis, 0.8), 100.0, 1e-9);
  /* Zero and negative values have no place on a log axis. */
  g_assert_true (isnan (tach_chart_axis_map (&axis, 0.0)));
  g_assert_true (isnan (tach_chart_axis_map (&axis, -1.0)));

  n = tach_chart_axis_ticks (&axis, 8, ticks, G_N_ELEMENTS (ticks));
  g_assert_cmpuint (n, ==, 6);
  for (guint i = 0; i < n; i++)
    g_assert_cmpfloat_with_epsilon (ticks[i], pow (10.0, -2.0 + i), 1e-9 * ticks[i] + 1e-15);

  /* A range within one decade gets 2 and 5 in between. */
  tach_chart_axis_set_range (&axis, 1.5, 8.0, 8);
  n = tach_chart_axis_ticks (&axis, 8, ticks, G_N_ELEMENTS (ticks));
  g_assert_cmpuint (n, ==, 4);
  g_assert_cmpfloat_with_epsilon (ticks[1], 2.0, 1e-12);
  g_assert_cmpfloat_with_epsilon (ticks[2], 5.0, 1e-12);

  /* A series that reaches zero still draws its positive part. */
  tach_chart_axis_set_range (&axis, 0.0, 2.0, 8);
  g_assert_cmpfloat (axis.min, >, 0.0);
  g_assert_cmpfloat_with_epsilon (axis.max, 10.0, 1e-12);
}

/* A label read back: its number times its suffix's scale. */
static double
parse_label (const char *label)
{
  char *end = NULL;
  double v = g_ascii_strtod (label, &end);

  if (g_str_equal (end, "k"))
    return v * 1e3;
  if (g_str_equal (end, "M"))
    return v * 1e6;
  if (g_str_equal (end, "G"))
    return v * 1e9;
  g_assert_cmpstr (end, ==, "");
  return v;
}

/* Every tick of a log axis is labelled in one notation (powers of ten,
 * or numbers with k, M, G), and each label reads back as its tick: the
 * Scaling chart's items/s over 1k..1M mixed "1e+05" with "10k". */
static void
test_axis_log_labels (void)
{
  static const double ranges[][2] = {
    { 1500, 4e5 }, { 2e3, 9e5 }, { 150, 4e4 }, { 0.03, 450 }, { 1.5, 8 }, { 20, 3e7 },
    { 3e4, 4e5 }, { 3e-5, 0.2 }, { 5, 2e13 },
  };
  TachChartAxis axis;

  tach_chart_axis_init (&axis, TRUE);
  for (guint r = 0; r < G_N_ELEMENTS (ranges); r++)
    {
      double ticks[TACH_CHART_AXIS_MAX_TICKS];
      guint n, n_exp = 0;

      tach_chart_axis_set_range (&axis, ranges[r][0], ranges[r][1], 8);
      n = tach_chart_axis_ticks (&axis, 8, ticks, G_N_ELEMENTS (ticks));
      for (guint i = 0; i < n; i++)
        {
          g_autofree char *label = tach_chart_axis_format (&axis, ticks[i]);

          g_test_message ("%g..%g: %s", ranges[r][0], ranges[r][1], label);
          n_exp += strchr (label, 'e') != NULL;
          g_assert_cmpfloat_with_epsilon (parse_label (label), ticks[i], 1e-9 * ticks[i]);
        }
      if (n_exp != 0 && n_exp != n)
        g_error ("%g..%g: %u of %u labels in powers of ten", ranges[r][0], ranges[r][1], n_exp, n);
      /* Powers of ten only where k, M and short decimals fall short. */
      g_assert_true ((n_exp != 0) == (axis.min < 1e-3 || axis.max >= 1e12));
    }
}

static void
test_series_bounded (void)
{
  g_autoptr(TachChartSeries) series = tach_chart_series_new ("run", 0);
  const guint64 n_points = 1000000;
  const TachChartBucket *b;
  guint64 total = 0;
  double lo, hi, x0, x1;
  gboolean spike_seen = FALSE;
  guint n;

  for (guint64 i = 0; i < n_points; i++)
    {
      double y = 100.0 + sin ((double) i * 0.001);

      /* One spike and one dip: a min/max per bucket must keep both. */
      if (i == 654321)
        y = 1000.0;
      if (i == 123457)
        y = 1.0;
      tach_chart_series_append (series, i, i * 1e-3, y, i < 10);
    }

  b = tach_chart_series_get_buckets (series, &n);
  g_assert_cmpuint (n, <=, TACH_CHART_SERIES_CAPACITY);
  g_assert_cmpuint (n, >, TACH_CHART_SERIES_CAPACITY / 2);
  g_assert_cmpuint (tach_chart_series_get_n_points (series), ==, n_points);
  for (guint i = 0; i < n; i++)
    {
      total += b[i].count;
      spike_seen |= b[i].y_max == 1000.0;
      g_assert_cmpfloat (b[i].y_min, <=, b[i].y_max);
      if (i > 0)
        g_assert_cmpuint (b[i].step_first, >, b[i - 1].step_last);
    }
  g_assert_cmpuint (total, ==, n_points);
  g_assert_true (spike_seen);

  g_assert_true (tach_chart_series_get_y_range (series, &lo, &hi));
  g_assert_cmpfloat (lo, ==, 1.0);
  g_assert_cmpfloat (hi, ==, 1000.0);
  g_assert_true (tach_chart_series_get_x_range (series, FALSE, &x0, &x1));
  g_assert_cmpfloat (x0, ==, 0.0);
  g_assert_cmpfloat (x1, ==, (double) (n_points - 1));
  g_assert_true (tach_chart_series_get_warmup_end (series, FALSE, &x1));
  g_assert_cmpfloat (x1, ==, 10.0);
}

static void
test_series_missing (void)
{
  g_autoptr(TachChartSeries) series = tach_chart_series_new ("run", 1);
  const TachChartBucket *b;
  guint n;

  /* A value the engine did not observe leaves a gap, not a zero. */
  tach_chart_series_append (series, 0, 0.0, 1.0, FALSE);
  tach_chart_series_append (series, 1, 0.1, NAN, FALSE);
  tach_chart_series_append (series, 2, 0.2, 3.0, FALSE);
  b = tach_chart_series_get_buckets (series, &n);
  g_assert_cmpuint (n, ==, 3);
  g_assert_cmpuint (b[1].count, ==, 0);
  g_assert_cmpfloat (tach_chart_bucket_mean (&b[2]), ==, 3.0);
  g_assert_false (tach_chart_series_get_warmup_end (series, FALSE, &(double) { 0 }));
}

static void
test_series_smoothing (void)
{
  g_autoptr(TachChartSeries) series = tach_chart_series_new ("run", 0);
  double smooth[64], level = 0.0, debias = 0.0;
  const double weight = 0.6;

  for (guint i = 0; i < 64; i++)
    tach_chart_series_append (series, i, i, (i % 2) ? 3.0 : 1.0, FALSE);

  /* Weight 0 is the raw line. */
  tach_chart_series_smooth (series, 0.0, smooth);
  g_assert_cmpfloat (smooth[0], ==, 1.0);
  g_assert_cmpfloat (smooth[1], ==, 3.0);

  /* One point per bucket: exactly TensorBoard's debiased EMA, which starts
   * at the first value instead of at zero. */
  tach_chart_series_smooth (series, weight, smooth);
  for (guint i = 0; i < 64; i++)
    {
      level = level * weight + (1 - weight) * ((i % 2) ? 3.0 : 1.0);
      debias = debias * weight + (1 - weight);
      g_assert_cmpfloat_with_epsilon (smooth[i], level / debias, 1e-12);
    }
  g_assert_cmpfloat_with_epsilon (smooth[0], 1.0, 1e-12);
  /* Heavy smoothing settles near the mean of the alternation. */
  tach_chart_series_smooth (series, 0.95, smooth);
  g_assert_cmpfloat (fabs (smooth[63] - 2.0), <, 0.2);
}

static void
test_series_smoothing_merged (void)
{
  g_autoptr(TachChartSeries) fine = tach_chart_series_new ("fine", 0);
  g_autoptr(TachChartSeries) coarse = tach_chart_series_new ("coarse", 0);
  g_autofree double *a = g_new (double, TACH_CHART_SERIES_CAPACITY);
  g_autofree double *b = g_new (double, TACH_CHART_SERIES_CAPACITY);
  guint n_fine, n_coarse;

  /* A constant-rate run smooths to the same level whatever the bucket
   * width, because a bucket of c points advances the average c steps. */
  for (guint i = 0; i < 1000; i++)
    tach_chart_series_append (fine, i, i, 5.0 + (i >= 500), FALSE);
  for (guint i = 0; i < 100000; i += 100)
    for (guint j = 0; j < 100; j++)
      tach_chart_series_append (coarse, i + j, i + j, 5.0 + (i >= 50000), FALSE);

  tach_chart_series_get_buckets (fine, &n_fine);
  tach_chart_series_get_buckets (coarse, &n_coarse);
  g_assert_cmpuint (tach_chart_series_get_bucket_width (coarse), >, 1);
  tach_chart_series_smooth (fine, 0.9, a);
  tach_chart_series_smooth (coarse, 0.999, b);
  g_assert_cmpfloat_with_epsilon (a[n_fine - 1], 6.0, 1e-6);
  g_assert_cmpfloat_with_epsilon (b[n_coarse - 1], 6.0, 1e-3);
  g_assert_cmpfloat_with_epsilon (a[0], 5.0, 1e-12);
  g_assert_cmpfloat_with_epsilon (b[0], 5.0, 1e-12);
}

static void
test_series_clear (void)
{
  g_autoptr(TachChartSeries) series = tach_chart_series_new ("run", 0);
  guint n;

  for (guint i = 0; i < 10000; i++)
    tach_chart_series_append (series, i, i, i, FALSE);
  g_assert_cmpuint (tach_chart_series_get_bucket_width (series), >, 1);
  tach_chart_series_clear (series);
  tach_chart_series_get_buckets (series, &n);
  g_assert_cmpuint (n, ==, 0);
  g_assert_cmpuint (tach_chart_series_get_bucket_width (series), ==, 1);
  g_assert_false (tach_chart_series_get_y_range (series, &(double) { 0 }, &(double) { 0 }));
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/gui/chart/axis/nice-step", test_axis_nice_step);
  g_test_add_func ("/gui/chart/axis/linear-ticks", test_axis_linear_ticks);
  g_test_add_func ("/gui/chart/axis/labels", test_axis_labels);
  g_test_add_func ("/gui/chart/axis/log", test_axis_log);
  g_test_add_func ("/gui/chart/axis/log-labels", test_axis_log_labels);
  g_test_add_func ("/gui/chart/series/bounded", test_series_bounded);
  g_test_add_func ("/gui/chart/series/missing", test_series_missing);
  g_test_add_func ("/gui/chart/series/smoothing", test_series_smoothing);
  g_test_add_func ("/gui/chart/series/smoothing-merged", test_series_smoothing_merged);
  g_test_add_func ("/gui/chart/series/clear", test_series_clear);
  return g_test_run ();
}
