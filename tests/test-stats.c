/* test-stats.c: the statistics behind verdicts (engine/stats), on
 * synthetic samples whose answer is known: known order statistics and
 * quantiles, overlapping samples within noise, separated ones significant
 * with the right sign, a share of a gap within noise never a fraction, and
 * the intervals' coverage over 1000 simulated draws (95% intervals must
 * cover the truth in 90-99% of them; a wrong interval misses by far more).
 * Every draw comes from a fixed seed, so the counts are the same on every
 * machine.  The verdict of two runs measured apart on a busy machine
 * (tach_summary_compare), and explain's speed-up from the rounds' ratios
 * with its gap's interval from it.  And
 * the store that keeps every Nth step (tach-strided.h).
 */
#include <math.h>
#include <string.h>

#include "tach-stats.h"
#include <tach-engine.h>
#include "tach-strided.h"

#define DRAWS 1000

static double
normal (GRand *rand)
{
  /* Box-Muller; 1 - u keeps the logarithm's argument above 0. */
  double u = 1.0 - g_rand_double (rand), v = g_rand_double (rand);

  return sqrt (-2 * log (u)) * cos (2 * G_PI * v);
}

static void
assert_coverage (guint hits, const char *what)
{
  double c = (double) hits / DRAWS;

  if (g_test_verbose ())
    g_printerr ("%s: coverage %.3f\n", what, c);
  g_assert_cmpfloat (c, >=, 0.90);
  g_assert_cmpfloat (c, <=, 0.99);
}

static void
test_t_quantiles (void)
{
  /* Published values of Student's t, 97.5% quantile. */
  g_assert_cmpfloat_with_epsilon (tach_stats_t975 (1), 12.706, 1e-3);
  g_assert_cmpfloat_with_epsilon (tach_stats_t975 (2), 4.303, 1e-3);
  g_assert_cmpfloat_with_epsilon (tach_stats_t975 (30), 2.042, 1e-3);
  g_assert_cmpfloat_with_epsilon (tach_stats_t975 (40), 2.0211, 2e-4);
  g_assert_cmpfloat_with_epsilon (tach_stats_t975 (60), 2.0003, 2e-4);
  g_assert_cmpfloat_with_epsilon (tach_stats_t975 (120), 1.9799, 2e-4);
  g_assert_cmpfloat_with_epsilon (tach_stats_t975 (0), 1.95996, 1e-4);
}

static void
test_median_known (void)
{
  double x[100];
  TachInterval iv;

  /* 1..100 in a shuffled order without runs (i * 37 mod 101 never sits
   * beside its neighbour): the textbook ranks 40 and 61. */
  for (guint i = 0; i < 100; i++)
    x[i] = (double) ((i + 1) * 37 % 101);
  tach_stats_median_ci (x, 100, &iv);
  g_assert_cmpfloat (iv.value, ==, 50.5);
  g_assert_cmpfloat (iv.lo, ==, 40);
  g_assert_cmpfloat (iv.hi, ==, 61);
  g_assert_cmpfloat (tach_stats_median (x, 3), ==, 37);

  /* Too few values for 95%: a value, no interval, no verdict. */
  tach_stats_median_ci (x, 7, &iv);
  g_assert_true (isfinite (iv.value));
  g_assert_false (tach_interval_is_known (&iv));
  g_assert_cmpint (tach_interval_verdict (&iv, 0), ==, TACH_VERDICT_UNKNOWN);
  tach_stats_median_ci (x, 8, &iv);
  g_assert_true (tach_interval_is_known (&iv));
}

/* Skewed step times (exponential, as a tail of slow steps is): the true
 * median is ln 2. */
static void
test_median_coverage_iid (void)
{
  g_autoptr(GRand) rand = g_rand_new_with_seed (33);
  double x[60];
  guint hits = 0;

  for (guint d = 0; d < DRAWS; d++)
    {
      TachInterval iv;

      for (guint i = 0; i < G_N_ELEMENTS (x); i++)
        x[i] = -log (1.0 - g_rand_double (rand));
      tach_stats_median_ci (x, G_N_ELEMENTS (x), &iv);
      hits += iv.lo <= G_LN2 && G_LN2 <= iv.hi;
    }
  assert_coverage (hits, "median, independent");
}

/* Correlated step times (AR(1), phi 0.7: a busy spell slows a stretch of
 * steps).  The order-statistic interval that takes the steps as
 * independent misses far more than 5% of the time; the widened one
 * covers. */
static void
test_median_coverage_correlated (void)
{
  g_autoptr(GRand) rand = g_rand_new_with_seed (3333);
  double x[400];
  guint hits = 0, naive_hits = 0;

  for (guint d = 0; d < DRAWS; d++)
    {
      TachInterval iv;
      double e = normal (rand) / sqrt (1 - 0.49);
      double half, lo, hi;
      g_autofree double *s = NULL;

      for (guint i = 0; i < G_N_ELEMENTS (x); i++)
        {
          e = 0.7 * e + normal (rand);
          x[i] = 10 + e;
        }
      tach_stats_median_ci (x, G_N_ELEMENTS (x), &iv);
      hits += iv.lo <= 10 && 10 <= iv.hi;

      /* The same ranks without the inflation (n = 400: the 181st and
       * 221st of the sorted values). */
      s = g_memdup2 (x, sizeof x);
      for (guint i = 1; i < G_N_ELEMENTS (x); i++)
        for (guint j = i; j > 0 && s[j - 1] > s[j]; j--)
          {
            double t = s[j];

            s[j] = s[j - 1];
            s[j - 1] = t;
          }
      half = 1.959964 * sqrt (400.0) / 2;
      lo = s[(guint) floor (200 - half) - 1];
      hi = s[(guint) ceil (200 + half)];
      naive_hits += lo <= 10 && 10 <= hi;
    }
  assert_coverage (hits, "median, correlated");
  g_assert_cmpfloat ((double) naive_hits / DRAWS, <, 0.85);
}

static void
test_mean_coverage (void)
{
  g_autoptr(GRand) rand = g_rand_new_with_seed (42);
  guint hits = 0;

  /* Five rounds: Student's t at 4 degrees of freedom. */
  for (guint d = 0; d < DRAWS; d++)
    {
      double x[5];
      TachInterval iv;

      for (guint i = 0; i < 5; i++)
        x[i] = 3 + 0.5 * normal (rand);
      tach_stats_mean_ci (x, 5, &iv);
      hits += iv.lo <= 3 && 3 <= iv.hi;
    }
  assert_coverage (hits, "mean, 5 rounds");
}

/* Rates per round of two configurations: a round's load slows both
 * (shared factor), each has its own noise too. */
static void
draw_rounds (GRand *rand, double rate_a, double rate_b, double noise, guint n, double *a,
             double *b)
{
  for (guint i = 0; i < n; i++)
    {
      double load = exp (0.2 * normal (rand));

      a[i] = rate_a / load * exp (noise * normal (rand));
      b[i] = rate_b / load * exp (noise * normal (rand));
    }
}

static void
test_ratio_paired (void)
{
  g_autoptr(GRand) rand = g_rand_new_with_seed (7);
  double a[8], b[8];
  TachInterval iv;
  guint hits = 0;

  /* Overlapping: the same rate, the rounds' noise 10%: within noise but
   * for the 5% of draws that a 95% interval misses. */
  for (guint d = 0; d < DRAWS; d++)
    {
      draw_rounds (rand, 100, 100, 0.10, 5, a, b);
      tach_stats_ratio_paired (a, b, 5, &iv);
      hits += tach_interval_verdict (&iv, 1) == TACH_VERDICT_WITHIN_NOISE;
    }
  assert_coverage (hits, "paired ratio, the same rate: within noise");
  hits = 0;
  g_assert_cmpstr (tach_verdict_to_string (TACH_VERDICT_WITHIN_NOISE), ==, "within-noise");
  g_assert_cmpstr (tach_verdict_to_string (TACH_VERDICT_SIGNIFICANT), ==, "significant");

  /* Separated: b is twice as fast, and half as fast the other way. */
  draw_rounds (rand, 100, 200, 0.05, 5, a, b);
  tach_stats_ratio_paired (a, b, 5, &iv);
  g_assert_cmpint (tach_interval_verdict (&iv, 1), ==, TACH_VERDICT_SIGNIFICANT);
  g_assert_cmpfloat (iv.lo, >, 1);
  g_assert_cmpfloat (iv.value, >, 1.8);
  g_assert_cmpfloat (iv.value, <, 2.2);
  tach_stats_ratio_paired (b, a, 5, &iv);
  g_assert_cmpint (tach_interval_verdict (&iv, 1), ==, TACH_VERDICT_SIGNIFICANT);
  g_assert_cmpfloat (iv.hi, <, 1);

  /* Pairing takes out the rounds' shared load: the coverage of the true
   * ratio 1.5 over 1000 draws of 4 rounds. */
  for (guint d = 0; d < DRAWS; d++)
    {
      draw_rounds (rand, 100, 150, 0.05, 4, a, b);
      tach_stats_ratio_paired (a, b, 4, &iv);
      hits += iv.lo <= 1.5 && 1.5 <= iv.hi;
    }
  assert_coverage (hits, "paired ratio, 4 rounds");

  /* A rate of 0 has no ratio. */
  a[0] = 0;
  tach_stats_ratio_paired (a, b, 4, &iv);
  g_assert_cmpint (tach_interval_verdict (&iv, 1), ==, TACH_VERDICT_UNKNOWN);
}

/* Explain's speed-up comes from the rounds' ratios of step times, and
 * the gap's interval from the speed-up's: over draws of step times around
 * and away from a gap of 0, the gap's interval holds 0 exactly when the
 * speed-up's holds 1, on the matching side (a gap above 0, b slower, is a
 * ratio below 1), and the verdict returned is the speed-up's. */
static void
test_speedup_paired (void)
{
  g_autoptr(GRand) rand = g_rand_new_with_seed (13);
  double a[6], b[6];
  TachInterval gap, ratio;
  guint significant = 0, within = 0;

  for (guint d = 0; d < DRAWS; d++)
    {
      TachVerdict verdict;

      /* Rates 100 against 90..110: step times whose gap is sometimes
       * resolved, sometimes not, with shared load per round. */
      draw_rounds (rand, 100, 90 + 20 * g_rand_double (rand), 0.05, 6, a, b);
      for (guint i = 0; i < 6; i++)
        {
          a[i] = 1000 / a[i];
          b[i] = 1000 / b[i];
        }
      verdict = tach_stats_speedup_paired (a, b, 6, &ratio, &gap);
      g_assert_cmpint (verdict, ==, tach_interval_verdict (&ratio, 1));
      g_assert_cmpint (tach_interval_verdict (&gap, 0), ==, verdict);
      g_assert_cmpfloat (ratio.lo, <=, ratio.value);
      g_assert_cmpfloat (ratio.value, <=, ratio.hi);
      g_assert_cmpfloat (gap.lo, <=, gap.value);
      g_assert_cmpfloat (gap.value, <=, gap.hi);
      if (verdict == TACH_VERDICT_SIGNIFICANT)
        {
          significant++;
          g_assert_true ((gap.lo > 0) == (ratio.hi < 1));
          g_assert_true ((gap.hi < 0) == (ratio.lo > 1));
        }
      else
        within++;
    }
  /* Both kinds were drawn. */
  g_assert_cmpuint (significant, >, DRAWS / 10);
  g_assert_cmpuint (within, >, DRAWS / 10);

  /* The value: a's 10 ms against b's 5 ms in every round is 2x. */
  {
    const double ta[] = { 10, 10, 10 }, tb[] = { 5, 5, 5 };

    g_assert_cmpint (tach_stats_speedup_paired (ta, tb, 3, &ratio, &gap), ==,
                     TACH_VERDICT_SIGNIFICANT);
    g_assert_cmpfloat_with_epsilon (ratio.value, 2.0, 1e-12);
    g_assert_cmpfloat_with_epsilon (gap.value, -5.0, 1e-12);
  }
  /* Issue 42: B steady at 12.0-12.2 ms, A at 46 ms and more with one
   * busy round: a clear speed-up with two bounded ends above 1, where the
   * differences' interval reached past A's whole time (an infinite end). */
  {
    const double ta[] = { 46.0, 52.0, 160.0 }, tb[] = { 12.0, 12.2, 12.1 };

    g_assert_cmpint (tach_stats_speedup_paired (ta, tb, 3, &ratio, &gap), ==,
                     TACH_VERDICT_SIGNIFICANT);
    g_assert_true (tach_interval_is_known (&ratio));
    g_assert_cmpfloat (ratio.lo, >, 1);
    g_assert_cmpfloat (ratio.hi, <, 100);
    /* B cannot take less than no time: the gap ends above -t(A). */
    g_assert_cmpfloat (gap.lo, >, -(46.0 + 52.0 + 160.0) / 3);
    g_assert_cmpfloat (gap.hi, <, 0);
  }
  /* Fewer than 2 rounds: a value, no interval, no verdict. */
  {
    const double ta[] = { 10 }, tb[] = { 10 };

    g_assert_cmpint (tach_stats_speedup_paired (ta, tb, 1, &ratio, &gap), ==,
                     TACH_VERDICT_UNKNOWN);
    g_assert_cmpfloat_with_epsilon (ratio.value, 1.0, 1e-12);
    g_assert_false (tach_interval_is_known (&gap));
  }
}

/* A mean step time's interval cannot reach 0: rounds of 46, 52 and 200
 * ms gave "-23.29 to +173.35 ms" symmetrically; on the log scale the
 * lower end stays above 0 and the mean inside. */
static void
test_mean_positive (void)
{
  g_autoptr(GRand) rand = g_rand_new_with_seed (21);
  const double x[] = { 46.0, 52.0, 200.0 };
  TachInterval iv;
  guint hits = 0;

  tach_stats_mean_ci_positive (x, 3, &iv);
  g_assert_cmpfloat_with_epsilon (iv.value, 298.0 / 3, 1e-9);
  g_assert_cmpfloat (iv.lo, >, 0);
  g_assert_cmpfloat (iv.lo, <, iv.value);
  g_assert_cmpfloat (iv.hi, >, 200);
  tach_stats_mean_ci_positive (x, 1, &iv);
  g_assert_false (tach_interval_is_known (&iv));

  /* Coverage of a mean step time of 20 ms with 5% noise, 5 rounds. */
  for (guint d = 0; d < DRAWS; d++)
    {
      double y[5];

      for (guint i = 0; i < 5; i++)
        y[i] = 20 * (1 + 0.05 * normal (rand));
      tach_stats_mean_ci_positive (y, 5, &iv);
      hits += iv.lo <= 20 && 20 <= iv.hi;
    }
  assert_coverage (hits, "mean step time, 5 rounds");
}

/* A run's summary with a median of @rate steps/s known to +-1%, 32 items a
 * step, and others taking @busy of the machine. */
static TachSummary
summary_at (double rate, double busy)
{
  TachSummary s;

  memset (&s, 0, sizeof s);
  s.steps_per_s_median = rate;
  s.steps_per_s_lo = 0.99 * rate;
  s.steps_per_s_hi = 1.01 * rate;
  s.items_per_s = 32 * rate;
  s.items_per_s_lo = 32 * s.steps_per_s_lo;
  s.items_per_s_hi = 32 * s.steps_per_s_hi;
  s.machine_busy = busy;
  return s;
}

/* Issue 42: under one busy core every `tuned` run fell to one thread, and
 * pairing by round cannot cancel that: the comparison says so in words a
 * person acts on.  Runs that kept their threads on an idle machine get no
 * caveat; a busy machine alone gets one too. */
static void
test_load_caveat (void)
{
  TachSummary a = summary_at (10, 0.02), b = summary_at (40, 0.03);
  g_autofree char *none = NULL, *fell = NULL, *busy = NULL, *both = NULL;

  a.threads_asked = b.threads_asked = 2;
  a.threads_fewest = b.threads_fewest = 2;
  a.threads_fewer_share = b.threads_fewer_share = 0;
  none = tach_summary_dup_load_caveat ("tf1-feed-dict", &a, "tuned", &b);
  g_assert_null (none);

  b.threads_fewest = 1;
  b.threads_fewer_share = 0.8;
  b.machine_busy = 0.55;
  fell = tach_summary_dup_load_caveat ("tf1-feed-dict", &a, "tuned", &b);
  g_assert_cmpstr (fell, ==, "tuned ran on 1 thread of 2 because other processes took 55% of "
                   "the CPU: this speed-up is for a busy machine; rerun idle to compare");

  /* A moment on fewer threads is not worth a caveat; a busy machine is. */
  b.threads_fewer_share = 0.01;
  busy = tach_summary_dup_load_caveat ("tf1-feed-dict", &a, "tuned", &b);
  g_assert_nonnull (busy);
  g_assert_null (strstr (busy, "thread"));
  g_assert_nonnull (strstr (busy, "rerun idle"));

  a.threads_fewest = 1;
  a.threads_fewer_share = 0.5;
  b.threads_fewer_share = 0.5;
  both = tach_summary_dup_load_caveat ("tf1-feed-dict", &a, "tuned", &b);
  g_assert_nonnull (strstr (both, "tf1-feed-dict ran on 1 of 2 threads and tuned on 1 of 2"));
}

/* Two runs measured apart: narrow within-run intervals 20% apart are
 * significant on an idle machine, and not resolved (within noise, with
 * the reason) where either run's machine was busy or the two runs' loads
 * differ; an unmeasured load is no evidence. */
static void
test_ratio_busy_apart (void)
{
  TachSummary a = summary_at (100, 0.02), b = summary_at (120, 0.03);
  TachInterval ratio;
  g_autofree char *why = NULL;

  g_assert_cmpint (tach_summary_compare (&a, &b, &ratio, NULL), ==, TACH_VERDICT_SIGNIFICANT);
  g_assert_cmpfloat_with_epsilon (ratio.value, 1.2, 1e-9);
  g_assert_false (tach_summary_busy_apart (a.machine_busy, b.machine_busy));
  g_assert_null (tach_summary_dup_busy_apart (a.machine_busy, b.machine_busy));

  /* Either run busy: the same interval, no longer a finding. */
  b.machine_busy = TACH_SUMMARY_BUSY_SHARE + 0.2;
  a.machine_busy = TACH_SUMMARY_BUSY_SHARE + 0.2;
  g_assert_cmpint (tach_summary_compare (&a, &b, &ratio, NULL), ==, TACH_VERDICT_WITHIN_NOISE);
  g_assert_cmpfloat (ratio.lo, >, 1);
  g_assert_true (tach_summary_busy_apart (b.machine_busy, a.machine_busy));
  a.machine_busy = 0.0;
  g_assert_cmpint (tach_summary_compare (&a, &b, &ratio, NULL), ==, TACH_VERDICT_WITHIN_NOISE);
  why = tach_summary_dup_busy_apart (a.machine_busy, b.machine_busy);
  g_assert_nonnull (why);
  g_assert_nonnull (strstr (why, "0% vs 30%"));

  /* Both below the threshold but apart by more than the spread. */
  a.machine_busy = 0.0;
  b.machine_busy = TACH_SUMMARY_APART_BUSY_SPREAD + 0.02;
  g_assert_cmpfloat (b.machine_busy, <, TACH_SUMMARY_BUSY_SHARE);
  g_assert_cmpint (tach_summary_compare (&a, &b, &ratio, NULL), ==, TACH_VERDICT_WITHIN_NOISE);

  /* Unknown loads: the within-run interval stands. */
  a.machine_busy = b.machine_busy = NAN;
  g_assert_cmpint (tach_summary_compare (&a, &b, &ratio, NULL), ==, TACH_VERDICT_SIGNIFICANT);

  /* A ratio within noise stays so, and one without an interval stays
   * without a verdict, whatever the load. */
  b = summary_at (100.5, 0.5);
  g_assert_cmpint (tach_summary_compare (&a, &b, &ratio, NULL), ==, TACH_VERDICT_WITHIN_NOISE);
  b.steps_per_s_lo = b.steps_per_s_hi = NAN;
  b.items_per_s_lo = b.items_per_s_hi = NAN;
  g_assert_cmpint (tach_summary_compare (&a, &b, &ratio, NULL), ==, TACH_VERDICT_UNKNOWN);
}

static void
test_ratio_unpaired (void)
{
  g_autoptr(GRand) rand = g_rand_new_with_seed (11);
  double a[200], b[200];
  TachInterval ia, ib, iv;
  guint hits = 0;

  /* Two runs' step rates, overlapping (the same distribution): within
   * noise, but for the 5% of draws that a 95% interval misses. */
  for (guint d = 0; d < DRAWS; d++)
    {
      for (guint i = 0; i < 200; i++)
        {
          a[i] = 50 * exp (0.3 * normal (rand));
          b[i] = 50 * exp (0.3 * normal (rand));
        }
      tach_stats_median_ci (a, 200, &ia);
      tach_stats_median_ci (b, 200, &ib);
      tach_stats_ratio_unpaired (&ia, &ib, &iv);
      hits += tach_interval_verdict (&iv, 1) == TACH_VERDICT_WITHIN_NOISE;
    }
  assert_coverage (hits, "unpaired ratio, the same distribution: within noise");
  hits = 0;

  /* Separated: b 30% slower. */
  for (guint i = 0; i < 200; i++)
    b[i] = 35 * exp (0.3 * normal (rand));
  tach_stats_median_ci (b, 200, &ib);
  tach_stats_ratio_unpaired (&ia, &ib, &iv);
  g_assert_cmpint (tach_interval_verdict (&iv, 1), ==, TACH_VERDICT_SIGNIFICANT);
  g_assert_cmpfloat (iv.hi, <, 1);
  g_assert_cmpfloat (iv.lo, <, 0.7);

  /* Coverage of the true ratio 0.7. */
  for (guint d = 0; d < DRAWS; d++)
    {
      for (guint i = 0; i < 60; i++)
        {
          a[i] = 50 * exp (0.3 * normal (rand));
          b[i] = 35 * exp (0.3 * normal (rand));
        }
      tach_stats_median_ci (a, 60, &ia);
      tach_stats_median_ci (b, 60, &ib);
      tach_stats_ratio_unpaired (&ia, &ib, &iv);
      hits += iv.lo <= 0.7 && 0.7 <= iv.hi;
    }
  assert_coverage (hits, "unpaired ratio, 60 steps each");

  /* Without both intervals: a value, no verdict. */
  tach_stats_median_ci (a, 5, &ia);
  tach_stats_ratio_unpaired (&ia, &ib, &iv);
  g_assert_true (isfinite (iv.value));
  g_assert_cmpint (tach_interval_verdict (&iv, 1), ==, TACH_VERDICT_UNKNOWN);
}

static void
test_diff_paired (void)
{
  const double a[] = { 10.0, 12.0, 11.0, 10.5 };
  const double b[] = { 8.0, 10.1, 8.9, 8.5 };
  const double c[] = { 10.3, 11.6, 11.4, 10.2 };
  TachInterval iv;

  /* b - a is -2 +- 0.1 each round: significant, and negative. */
  tach_stats_diff_paired (a, b, 4, &iv);
  g_assert_cmpfloat_with_epsilon (iv.value, -2.0, 1e-12);
  g_assert_cmpint (tach_interval_verdict (&iv, 0), ==, TACH_VERDICT_SIGNIFICANT);
  g_assert_cmpfloat (iv.hi, <, 0);
  /* c - a changes sign from round to round. */
  tach_stats_diff_paired (a, c, 4, &iv);
  g_assert_cmpint (tach_interval_verdict (&iv, 0), ==, TACH_VERDICT_WITHIN_NOISE);
}

static void
test_fraction (void)
{
  g_autoptr(GRand) rand = g_rand_new_with_seed (5);
  double part[6], whole[6];
  TachInterval iv;
  guint hits = 0;

  /* A gap within noise (-1.08 ms, rounds from -3.4 to +0.2, as issue 33
   * measured): no share is a fraction of it, however large. */
  {
    const double gap[] = { -3.4, 0.2, -0.04 };
    const double share[] = { -8.9, 11.2, 1.0 };
    TachInterval gap_ci;

    tach_stats_mean_ci (gap, 3, &gap_ci);
    tach_stats_fraction_paired (share, gap, 3, tach_interval_verdict (&gap_ci, 0), &iv);
    g_assert_true (isnan (iv.value));
    g_assert_cmpint (tach_interval_verdict (&iv, 0), ==, TACH_VERDICT_UNKNOWN);
  }

  /* A resolved gap of 10 ms of which the knob takes 80%. */
  for (guint d = 0; d < DRAWS; d++)
    {
      for (guint i = 0; i < 6; i++)
        {
          double s = 8 + 0.6 * normal (rand);

          part[i] = s;
          whole[i] = s + 2 + 0.6 * normal (rand);
        }
      tach_stats_fraction_paired (part, whole, 6, TACH_VERDICT_SIGNIFICANT, &iv);
      g_assert_true (isfinite (iv.value));
      hits += iv.lo <= 0.8 && 0.8 <= iv.hi;
    }
  assert_coverage (hits, "share of a gap, 6 rounds");
}

static void
test_shrink (void)
{
  TachInterval gap = { -1.08, -3.4, 1.24 };
  TachInterval ratio = { 1.2, 1.1, 1.3 };

  /* The gap's interval reaches 2.32 ms towards 0 from 1.08 away: it must
   * become 2.15 times narrower. */
  g_assert_cmpfloat_with_epsilon (tach_interval_shrink_needed (&gap, 0), 2.32 / 1.08, 1e-9);
  g_assert_cmpfloat (tach_interval_shrink_needed (&ratio, 1), <, 1);
  g_assert_cmpfloat_with_epsilon (tach_interval_rel_halfwidth (&ratio), 0.1 / 1.2, 1e-12);
}

/* The store that keeps every Nth step (the trace's and the reducer's
 * bound): 3 records a step for 1000 steps into at most 64 keep the first
 * step and an even sample, every kept step whole and in order. */
static void
test_strided (void)
{
  typedef struct { guint64 step; guint k; } Record;
  TachStrided s;
  guint64 last = 0;

  tach_strided_init (&s, sizeof (Record), G_STRUCT_OFFSET (Record, step), 64);
  for (guint64 step = 0; step < 1000; step++)
    for (guint k = 0; k < 3; k++)
      {
        Record r = { step, k };

        g_assert_cmpint (tach_strided_add (&s, &r), ==, tach_strided_keeps (&s, step));
      }
  /* 1000 steps of 3 at most 64 records: a stride of 64 keeps 16 steps, 48
   * records; 32 would keep 32 steps, 96. */
  g_assert_cmpuint (s.stride, ==, 64);
  g_assert_cmpuint (s.items->len, ==, 48);
  for (guint i = 0; i < s.items->len; i++)
    {
      const Record *r = &g_array_index (s.items, Record, i);

      g_assert_cmpuint (r->step % s.stride, ==, 0);
      g_assert_cmpuint (r->k, ==, i % 3);
      g_assert_cmpuint (r->step, ==, (guint64) (i / 3) * s.stride);
      g_assert_cmpuint (r->step, >=, last);
      last = r->step;
    }
  g_assert_false (tach_strided_keeps (&s, 1000 + 32));
  tach_strided_clear (&s);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/stats/t-quantiles", test_t_quantiles);
  g_test_add_func ("/engine/stats/median/known", test_median_known);
  g_test_add_func ("/engine/stats/median/coverage-independent", test_median_coverage_iid);
  g_test_add_func ("/engine/stats/median/coverage-correlated", test_median_coverage_correlated);
  g_test_add_func ("/engine/stats/mean/coverage", test_mean_coverage);
  g_test_add_func ("/engine/stats/ratio/paired", test_ratio_paired);
  g_test_add_func ("/engine/stats/ratio/unpaired", test_ratio_unpaired);
  g_test_add_func ("/engine/stats/ratio/speedup-paired", test_speedup_paired);
  g_test_add_func ("/engine/stats/mean/positive", test_mean_positive);
  g_test_add_func ("/engine/stats/ratio/busy-apart", test_ratio_busy_apart);
  g_test_add_func ("/engine/stats/diff/paired", test_diff_paired);
  g_test_add_func ("/engine/stats/fraction", test_fraction);
  g_test_add_func ("/engine/stats/load-caveat", test_load_caveat);
  g_test_add_func ("/engine/stats/shrink", test_shrink);
  g_test_add_func ("/engine/stats/strided", test_strided);
  return g_test_run ();
}
