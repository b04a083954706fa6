/* test-sample-store.c: a run's compact sample store and the summaries
 * computed from it.
 *
 * The store keeps each value rounded once (floats; feed, sync and host to
 * 0.05%);
 * what it gives back is what every reader sees.  The summaries over the
 * store must equal, bit for bit, a plain reference (every value sorted,
 * as the summaries were computed before the store) over the samples it
 * gives back, whether the percentiles come from sorting or from the radix
 * selection used for long runs; and they stay within the rounding of the
 * summaries of the unrounded samples.  The median's 95% interval is
 * tach_stats_median_ci() of the rates in time order, on either path.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tach-sample-store.h"
#include "tach-stats.h"

/* ------------------------------------------------------------ reference */

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

static double
ref_percentile (GArray *v, double p)
{
  double pos, *d = (double *) v->data;
  guint lo;

  if (v->len == 0)
    return NAN;
  qsort (d, v->len, sizeof (double), cmp_double);
  pos = p * (v->len - 1);
  lo = (guint) floor (pos);
  return lo + 1 >= v->len ? d[v->len - 1] : d[lo] + (pos - lo) * (d[lo + 1] - d[lo]);
}

static double
ref_mean_loss (GPtrArray *measured, guint from, guint count)
{
  double sum = 0.0;
  guint seen = 0;

  for (guint i = from; i < from + count; i++)
    {
      const TachSample *s = measured->pdata[i];

      if (!isnan (s->loss))
        sum += s->loss, seen++;
    }
  return seen > 0 ? sum / seen : NAN;
}

/* The summary as computed before the store: every measured sample's rate
 * in one sorted array. */
static void
ref_summary (GArray *samples, guint64 items, double flops, double peak, TachSummary *out)
{
  g_autoptr(GPtrArray) measured = g_ptr_array_new ();
  g_autoptr(GArray) rates = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr(GArray) calls = g_array_new (FALSE, FALSE, sizeof (double));
  double warm_end = 0.0, sum = 0.0, ph[4] = { 0 };
  guint n_device = 0, window;
  gboolean device;

  memset (out, 0, sizeof *out);
  out->wall_s = samples->len > 0 ? g_array_index (samples, TachSample, samples->len - 1).wall_s : 0.0;
  for (guint i = 0; i < samples->len; i++)
    {
      TachSample *s = &g_array_index (samples, TachSample, i);

      if (s->warmup)
        warm_end = MAX (warm_end, s->wall_s);
      else
        {
          g_ptr_array_add (measured, s);
          n_device += s->device_step_ms > 0.0 && isfinite (s->device_step_ms);
          if (isfinite (s->api_calls))
            g_array_append_val (calls, s->api_calls);
        }
    }
  device = measured->len > 0 && n_device == measured->len;
  out->rate_clock = device ? "device" : "host";
  for (guint m = 0; m < measured->len; m++)
    {
      const TachSample *s = measured->pdata[m];
      const double p[4] = { s->feed_ms, s->compute_ms, s->sync_ms, s->host_ms };
      double r;

      if (!(s->step_ms > 0.0 && isfinite (s->step_ms)))
        continue;
      r = 1000.0 / (device ? s->device_step_ms : s->step_ms);
      g_array_append_val (rates, r);
      sum += s->step_ms;
      for (guint k = 0; k < 4; k++)
        if (!isnan (p[k]))
          ph[k] += p[k];
    }
  out->steps = measured->len;
  /* The median's interval from the rates in time order (before sorting). */
  {
    TachInterval iv;

    tach_stats_median_ci ((const double *) rates->data, rates->len, &iv);
    out->steps_per_s_lo = iv.lo;
    out->steps_per_s_hi = iv.hi;
    out->items_per_s_lo = items * iv.lo;
    out->items_per_s_hi = items * iv.hi;
  }
  out->machine_busy = NAN;
  out->api_calls_per_step = ref_percentile (calls, 0.5);
  out->steps_per_s_median = ref_percentile (rates, 0.5);
  out->steps_per_s_p10 = ref_percentile (rates, 0.1);
  out->steps_per_s_p90 = ref_percentile (rates, 0.9);
  out->e2e_steps_per_s = measured->len > 0 && out->wall_s > warm_end
                         ? measured->len / (out->wall_s - warm_end) : NAN;
  out->items_per_s = items * out->steps_per_s_median;
  window = MIN (10, measured->len / 2);
  out->first_loss = window > 0 ? ref_mean_loss (measured, 0, window) : NAN;
  if (measured->len == 1)
    window = 1;
  out->final_loss = window > 0 ? ref_mean_loss (measured, measured->len - window, window) : NAN;
  out->loss_window_steps = window;
  out->feed_share = sum > 0 ? ph[0] / sum : NAN;
  out->compute_share = sum > 0 ? ph[1] / sum : NAN;
  out->sync_share = sum > 0 ? ph[2] / sum : NAN;
  out->host_share = sum > 0 ? ph[3] / sum : NAN;
  out->flops_per_step = flops;
  out->achieved_flops = flops * out->steps_per_s_median;
  out->peak_share = peak > 0 ? out->achieved_flops / peak : NAN;
}

/* Bit for bit, NaN equal to NaN. */
static void
assert_same (double a, double b, const char *what)
{
  if (!(a == b || (isnan (a) && isnan (b))))
    g_error ("%s: %.17g != %.17g", what, a, b);
}

static void
assert_summaries_equal (const TachSummary *a, const TachSummary *b)
{
  g_assert_cmpuint (a->steps, ==, b->steps);
  g_assert_cmpuint (a->loss_window_steps, ==, b->loss_window_steps);
  g_assert_cmpstr (a->rate_clock, ==, b->rate_clock);
  assert_same (a->steps_per_s_median, b->steps_per_s_median, "median");
  assert_same (a->steps_per_s_p10, b->steps_per_s_p10, "p10");
  assert_same (a->steps_per_s_p90, b->steps_per_s_p90, "p90");
  assert_same (a->items_per_s, b->items_per_s, "items/s");
  assert_same (a->steps_per_s_lo, b->steps_per_s_lo, "median's interval, low");
  assert_same (a->steps_per_s_hi, b->steps_per_s_hi, "median's interval, high");
  assert_same (a->items_per_s_lo, b->items_per_s_lo, "items/s interval, low");
  assert_same (a->items_per_s_hi, b->items_per_s_hi, "items/s interval, high");
  assert_same (a->machine_busy, b->machine_busy, "machine busy");
  assert_same (a->first_loss, b->first_loss, "first loss");
  assert_same (a->final_loss, b->final_loss, "final loss");
  assert_same (a->feed_share, b->feed_share, "feed");
  assert_same (a->compute_share, b->compute_share, "compute");
  assert_same (a->sync_share, b->sync_share, "sync");
  assert_same (a->host_share, b->host_share, "host");
  assert_same (a->achieved_flops, b->achieved_flops, "flops");
  assert_same (a->peak_share, b->peak_share, "peak");
  assert_same (a->wall_s, b->wall_s, "wall");
  assert_same (a->e2e_steps_per_s, b->e2e_steps_per_s, "e2e");
  assert_same (a->api_calls_per_step, b->api_calls_per_step, "api calls");
}

/* --------------------------------------------------------------- samples */

typedef enum { KIND_CPU, KIND_GPU } Kind;

/* @n samples as a runner makes them: consecutive steps, each starting where
 * the last ended, a long-tailed step time, NaN where the kind has none. */
static GArray *
make_samples (guint n, Kind kind, guint32 seed)
{
  GArray *samples = g_array_sized_new (FALSE, TRUE, sizeof (TachSample), n);
  g_autoptr(GRand) rand = g_rand_new_with_seed (seed);
  gint64 wall_ns = 123456;

  for (guint i = 0; i < n; i++)
    {
      TachSample s = { 0 };
      double step = 0.02 + g_rand_double (rand) * 0.01;

      if (g_rand_int_range (rand, 0, 100) == 0)
        step *= 50.0;                                 /* the tail */
      /* Times on a nanosecond grid, as the runner's clock gives them. */
      step = floor (step * 1e6) / 1e6;
      wall_ns += (gint64) llround (step * 1e6);
      s.step = i;
      s.warmup = i < 5;
      s.wall_s = (double) wall_ns / 1e9;
      s.step_ms = step;
      s.feed_ms = step * 0.01 * g_rand_double (rand);
      s.sync_ms = i % 7 == 0 ? step * 0.1 : 0.0;
      s.host_ms = step * 0.1 * g_rand_double (rand);
      s.compute_ms = step - s.feed_ms - s.sync_ms - s.host_ms;
      s.loss = (float) (6.0 - i * 1e-6 + g_rand_double (rand) * 0.1);
      s.accuracy = kind == KIND_GPU ? (float) g_rand_double (rand) : NAN;
      s.device_step_ms = kind == KIND_GPU && i > 0 ? step * 0.9 : NAN;
      s.api_calls = kind == KIND_GPU ? (double) g_rand_int_range (rand, 40, 44) : NAN;
      /* One process: no ranks to communicate with. */
      s.comm_ms = s.pack_ms = s.imbalance_ms = NAN;
      g_array_append_val (samples, s);
    }
  return samples;
}

static TachSampleStore *
store_of (GArray *samples)
{
  TachSampleStore *store = tach_sample_store_new ();

  for (guint i = 0; i < samples->len; i++)
    tach_sample_store_append (store, &g_array_index (samples, TachSample, i));
  return store;
}

static void
assert_close (double kept, double given, double rel, const char *what, guint i)
{
  if (isnan (given) ? !isnan (kept) : fabs (kept - given) > rel * fabs (given))
    g_error ("sample %u: %s kept as %.17g, given %.17g", i, what, kept, given);
}

/* ----------------------------------------------------------------- tests */

/* Each value comes back as kept: floats exactly, phases to 0.05%, wall_s
 * to the rounding of the step times, steps and warm-up exactly. */
static void
test_store_values (void)
{
  const guint n = 10000;
  g_autoptr(GArray) given = make_samples (n, KIND_GPU, 1);
  TachSampleStore *store = store_of (given);
  g_autoptr(GArray) kept = g_array_new (FALSE, FALSE, sizeof (TachSample));
  g_autoptr(GArray) part = g_array_new (FALSE, FALSE, sizeof (TachSample));

  g_assert_cmpuint (tach_sample_store_get_length (store), ==, n);
  g_assert_cmpuint (tach_sample_store_copy (store, 0, G_MAXUINT, kept), ==, n);
  for (guint i = 0; i < n; i++)
    {
      const TachSample *g = &g_array_index (given, TachSample, i);
      const TachSample *k = &g_array_index (kept, TachSample, i);

      g_assert_cmpuint (k->step, ==, g->step);
      g_assert_cmpint (k->warmup, ==, g->warmup);
      assert_same (k->step_ms, (float) g->step_ms, "step_ms");
      assert_same (k->loss, g->loss, "loss");
      assert_same (k->accuracy, g->accuracy, "accuracy");
      assert_same (k->device_step_ms, (float) g->device_step_ms, "device_step_ms");
      assert_same (k->api_calls, g->api_calls, "api_calls");
      assert_close (k->feed_ms, g->feed_ms, 1.0 / 2048, "feed_ms", i);
      assert_same (k->compute_ms, (float) g->compute_ms, "compute_ms");
      assert_close (k->sync_ms, g->sync_ms, 1.0 / 2048, "sync_ms", i);
      assert_close (k->host_ms, g->host_ms, 1.0 / 2048, "host_ms", i);
      assert_close (k->wall_s, g->wall_s, 1e-7, "wall_s", i);
    }

  /* A range from the middle of a chunk reads the same samples. */
  g_assert_cmpuint (tach_sample_store_copy (store, 4100, 300, part), ==, 300);
  for (guint i = 0; i < 300; i++)
    g_assert_cmpmem (&g_array_index (part, TachSample, i), sizeof (TachSample),
                     &g_array_index (kept, TachSample, 4100 + i), sizeof (TachSample));
  g_array_set_size (part, 0);
  g_assert_cmpuint (tach_sample_store_copy (store, n - 2, 10, part), ==, 2);
  g_assert_cmpuint (tach_sample_store_copy (store, n, 10, part), ==, 0);

  /* Appending what was given back keeps it as it is. */
  {
    TachSampleStore *again = store_of (kept);
    g_autoptr(GArray) twice = g_array_new (FALSE, FALSE, sizeof (TachSample));

    tach_sample_store_copy (again, 0, G_MAXUINT, twice);
    g_assert_cmpmem (twice->data, n * sizeof (TachSample), kept->data, n * sizeof (TachSample));
    tach_sample_store_free (again);
  }
  tach_sample_store_free (store);
}

/* The runner's sync=end path: steps kept without their losses, the losses
 * set once they are read back (in pieces, across chunk edges), then the
 * steps moved behind those already in the run's store.  The samples come
 * back as if each had been appended whole, in order. */
static void
test_store_late_losses (void)
{
  const guint n = 10000, before = 1500;
  g_autoptr(GArray) given = make_samples (n, KIND_GPU, 4);
  g_autoptr(GArray) direct_kept = g_array_new (FALSE, FALSE, sizeof (TachSample));
  g_autoptr(GArray) late_kept = g_array_new (FALSE, FALSE, sizeof (TachSample));
  TachSampleStore *direct = store_of (given);
  TachSampleStore *run = tach_sample_store_new ();
  TachSampleStore *held = tach_sample_store_new ();
  g_autofree float *loss = g_new (float, n);
  g_autofree float *accuracy = g_new (float, n);

  for (guint i = 0; i < n; i++)
    {
      TachSample s = g_array_index (given, TachSample, i);

      loss[i] = (float) s.loss;
      accuracy[i] = (float) s.accuracy;
      if (i >= before)
        s.loss = s.accuracy = NAN;
      tach_sample_store_append (i < before ? run : held, &s);
    }
  /* Pieces of 3000: through the chunk edges at 4096 and 8192. */
  for (guint from = 0; from < n - before; from += 3000)
    tach_sample_store_set_losses (held, from, MIN (3000, n - before - from),
                                  loss + before + from, accuracy + before + from);
  tach_sample_store_move (run, held);

  g_assert_cmpuint (tach_sample_store_get_length (held), ==, 0);
  g_assert_cmpuint (tach_sample_store_get_length (run), ==, n);
  tach_sample_store_copy (direct, 0, G_MAXUINT, direct_kept);
  tach_sample_store_copy (run, 0, G_MAXUINT, late_kept);
  for (guint i = 0; i < n; i++)
    {
      TachSample *d = &g_array_index (direct_kept, TachSample, i);
      TachSample *l = &g_array_index (late_kept, TachSample, i);

      /* wall_s runs on from each chunk's first sample: the held steps'
       * first chunk starts from its own, so the last bits may differ. */
      assert_close (l->wall_s, d->wall_s, 1e-7, "wall_s", i);
      l->wall_s = d->wall_s;
      g_assert_cmpmem (l, sizeof *l, d, sizeof *d);
    }
  /* The store goes on after the move. */
  {
    TachSample next = g_array_index (direct_kept, TachSample, n - 1);

    next.step++;
    next.wall_s += next.step_ms / 1000.0;
    tach_sample_store_append (run, &next);
    g_assert_cmpuint (tach_sample_store_get_length (run), ==, n + 1);
  }
  tach_sample_store_free (direct);
  tach_sample_store_free (run);
  tach_sample_store_free (held);
}

/* The CPU's step (no accuracy, device clock or call counts) in 18 bytes
 * and a bit; the GPU's with all of them in 30. */
static void
test_store_bytes (void)
{
  const guint n = 100000;
  g_autoptr(GArray) cpu = make_samples (n, KIND_CPU, 2);
  g_autoptr(GArray) gpu = make_samples (n, KIND_GPU, 3);
  TachSampleStore *a = store_of (cpu), *b = store_of (gpu);
  double per_cpu = (double) tach_sample_store_get_bytes (a) / n;
  double per_gpu = (double) tach_sample_store_get_bytes (b) / n;

  g_test_message ("bytes per step: CPU %.2f, GPU %.2f", per_cpu, per_gpu);
  g_assert_cmpfloat (per_cpu, <, 18.3);
  g_assert_cmpfloat (per_gpu, <, 30.3);
  tach_sample_store_free (a);
  tach_sample_store_free (b);
}

/* What the runner never gives but a file may: a negative phase, steps that
 * jump, a wall clock that does not follow the step times.  Kept as given
 * (to a float), in chunks of their own. */
static void
test_store_irregular (void)
{
  TachSampleStore *store = tach_sample_store_new ();
  g_autoptr(GArray) kept = g_array_new (FALSE, FALSE, sizeof (TachSample));
  TachSample s[4] = {
    { .step = 0, .wall_s = 1.0, .step_ms = 2.0, .feed_ms = 0.5, .host_ms = NAN },
    { .step = 1, .wall_s = 1.002, .step_ms = 2.0, .feed_ms = -0.25, .host_ms = 1.0 },
    { .step = 7, .wall_s = 9.0, .step_ms = 3.0, .feed_ms = 0.125, .host_ms = 1e12 },
    { .step = 8, .wall_s = NAN, .step_ms = NAN, .feed_ms = 0.0, .host_ms = 0.0 },
  };

  for (guint i = 0; i < 4; i++)
    {
      s[i].compute_ms = s[i].sync_ms = s[i].loss = s[i].accuracy = NAN;
      s[i].device_step_ms = s[i].api_calls = NAN;
      tach_sample_store_append (store, &s[i]);
    }
  tach_sample_store_copy (store, 0, G_MAXUINT, kept);
  g_assert_cmpuint (kept->len, ==, 4);
  for (guint i = 0; i < 4; i++)
    {
      const TachSample *k = &g_array_index (kept, TachSample, i);

      g_assert_cmpuint (k->step, ==, s[i].step);
      assert_same (k->feed_ms, s[i].feed_ms, "feed_ms");
      assert_same (k->host_ms, (float) s[i].host_ms, "host_ms");
      assert_same (k->compute_ms, NAN, "compute_ms");
      assert_close (k->wall_s, s[i].wall_s, 1e-12, "wall_s", i);
    }
  tach_sample_store_free (store);
}

static void
check_summaries (Kind kind, guint n, guint32 seed)
{
  g_autoptr(GArray) given = make_samples (n, kind, seed);
  TachSampleStore *store = store_of (given);
  g_autoptr(GArray) kept = g_array_new (FALSE, FALSE, sizeof (TachSample));
  TachSummary ref, from_store, from_array, radix, unrounded;
  guint limit;

  tach_sample_store_copy (store, 0, G_MAXUINT, kept);
  ref_summary (kept, 4, 1e9, 1e12, &ref);
  tach_summary_compute_store (store, 4, 1e9, 1e12, &from_store);
  tach_summary_compute ((const TachSample *) kept->data, kept->len, 4, 1e9, 1e12, &from_array);
  assert_summaries_equal (&from_store, &ref);
  assert_summaries_equal (&from_array, &ref);

  /* Radix selection instead of sorting: the same numbers. */
  limit = tach_summary_set_sort_limit (0);
  tach_summary_compute_store (store, 4, 1e9, 1e12, &radix);
  assert_summaries_equal (&radix, &ref);
  tach_summary_compute ((const TachSample *) given->data, given->len, 4, 1e9, 1e12, &radix);
  ref_summary (given, 4, 1e9, 1e12, &unrounded);
  assert_summaries_equal (&radix, &unrounded);
  tach_summary_set_sort_limit (limit);

  /* And the store's rounding hardly moves them. */
  if (n < 30)
    {
      tach_sample_store_free (store);
      return;
    }
  g_assert_cmpfloat (fabs (ref.steps_per_s_median / unrounded.steps_per_s_median - 1), <, 1e-6);
  g_assert_cmpfloat (fabs (ref.steps_per_s_p10 / unrounded.steps_per_s_p10 - 1), <, 1e-6);
  g_assert_cmpfloat (fabs (ref.compute_share - unrounded.compute_share), <, 1.0 / 2048);
  g_assert_cmpfloat (fabs (ref.feed_share - unrounded.feed_share), <, 1.0 / 2048);
  g_assert_cmpfloat (fabs (ref.e2e_steps_per_s / unrounded.e2e_steps_per_s - 1), <, 1e-6);
  assert_same (ref.final_loss, unrounded.final_loss, "final loss");
  tach_sample_store_free (store);
}

static void
test_summary_equal (void)
{
  const guint sizes[] = { 0, 1, 2, 6, 7, 30, 4096, 4097, 20011 };

  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      check_summaries (KIND_CPU, sizes[i], 10 + i);
      check_summaries (KIND_GPU, sizes[i], 20 + i);
    }
}

/* Past the sort limit (long runs), with the default limit. */
static void
test_summary_long (void)
{
  check_summaries (KIND_CPU, 300000, 5);
  check_summaries (KIND_GPU, 200000, 6);
}

int
main (int argc, char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/store/values", test_store_values);
  g_test_add_func ("/engine/store/bytes", test_store_bytes);
  g_test_add_func ("/engine/store/late-losses", test_store_late_losses);
  g_test_add_func ("/engine/store/irregular", test_store_irregular);
  g_test_add_func ("/engine/store/summary", test_summary_equal);
  g_test_add_func ("/engine/store/summary-long", test_summary_long);
  return g_test_run ();
}
