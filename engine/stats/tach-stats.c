/* tach-stats.c: intervals and verdicts (see tach-stats.h).
 *
 * Two kinds of data reach here.  A run's step times are many values in
 * time order that are not independent: a busy spell of the machine slows
 * a stretch of consecutive steps, so the medians of a run get an interval
 * from order statistics widened by the series' autocorrelation.  Rounds
 * (explain, sweep) give a few values, one per round, each itself a median
 * of many steps and the rounds run in a shuffled interleaved order, so
 * they are close to independent and close to normal: Student's t, which
 * is honest about how few they are (2 rounds give a t of 12.7, wide
 * intervals, not false findings).
 *
 * A verdict is always read off the interval that is shown: significant
 * when the interval excludes "no change", within noise when it holds it.
 * A separate test (a Mann-Whitney p-value as benchstat prints) could
 * disagree with the interval beside it; one rule cannot.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tach-stats.h"

/* The normal's 97.5% quantile: two-sided 95%. */
#define Z975 1.959963984540054


const char *
tach_verdict_to_string (TachVerdict verdict)
{
  switch (verdict)
    {
    case TACH_VERDICT_SIGNIFICANT:
      return "significant";
    case TACH_VERDICT_WITHIN_NOISE:
      return "within-noise";
    case TACH_VERDICT_UNKNOWN:
    default:
      return "";
    }
}

gboolean
tach_interval_is_known (const TachInterval *iv)
{
  return isfinite (iv->value) && isfinite (iv->lo) && isfinite (iv->hi);
}

TachVerdict
tach_interval_verdict (const TachInterval *iv, double no_change)
{
  if (!tach_interval_is_known (iv))
    return TACH_VERDICT_UNKNOWN;
  if (iv->lo > no_change || iv->hi < no_change)
    return TACH_VERDICT_SIGNIFICANT;
  return TACH_VERDICT_WITHIN_NOISE;
}

double
tach_interval_rel_halfwidth (const TachInterval *iv)
{
  if (!tach_interval_is_known (iv) || iv->value == 0)
    return INFINITY;
  return 0.5 * (iv->hi - iv->lo) / fabs (iv->value);
}

double
tach_interval_shrink_needed (const TachInterval *iv, double no_change)
{
  double half, dist;

  if (!tach_interval_is_known (iv) || iv->value == no_change)
    return INFINITY;
  /* The end on the side of no change decides whether it is excluded. */
  if (iv->value > no_change)
    {
      half = iv->value - iv->lo;
      dist = iv->value - no_change;
    }
  else
    {
      half = iv->hi - iv->value;
      dist = no_change - iv->value;
    }
  return half / dist;
}

static void
interval_unknown (TachInterval *out, double value)
{
  out->value = value;
  out->lo = out->hi = NAN;
}

/* ---------------------------------------------------------------- t */

double
tach_stats_t975 (guint df)
{
  /* Tabulated to 30 degrees of freedom; past that the Cornish-Fisher
   * expansion about the normal is within 1e-4 of the exact quantile. */
  static const double table[31] = {
    Z975, 12.7062, 4.30265, 3.18245, 2.77645, 2.57058, 2.44691, 2.36462, 2.30600,
    2.26216, 2.22814, 2.20099, 2.17881, 2.16037, 2.14479, 2.13145, 2.11991, 2.10982,
    2.10092, 2.09302, 2.08596, 2.07961, 2.07387, 2.06866, 2.06390, 2.05954, 2.05553,
    2.05183, 2.04841, 2.04523, 2.04227,
  };
  double z = Z975, v = df;

  if (df <= 30)
    return table[df];
  return z + (z * z * z + z) / (4 * v)
         + (5 * pow (z, 5) + 16 * z * z * z + 3 * z) / (96 * v * v);
}

/* ----------------------------------------------------------- medians */

static int
compare_double (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

/* The median of @sorted (n > 0). */
static double
sorted_median (const double *sorted, gsize n)
{
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

double
tach_stats_median (const double *x, gsize n)
{
  g_autofree double *s = NULL;

  if (n == 0)
    return NAN;
  s = g_memdup2 (x, n * sizeof (double));
  qsort (s, n, sizeof (double), (int (*) (const void *, const void *)) compare_double);
  return sorted_median (s, n);
}

/* The variance inflation of the count of values below the median, from
 * the autocorrelation of the series of signs (x_i above or below the
 * median).  The median's interval rests on that count being binomial, n/4
 * its variance; correlated steps make it n/4 (1 + 2 sum_k rho_k).  The sum
 * runs over the lags while the estimates stay positive (Geyer's initial
 * positive sequence, cut at TACH_STATS_MAX_LAG): beyond the first
 * non-positive one they are noise.  An independent series gives 1 (never
 * less: a negative first lag is taken as independent, the safe side).
 * One pass, a ring of the last signs: no copy of a long run. */
void
tach_stats_signs_init (TachStatsSigns *signs, double median)
{
  memset (signs, 0, sizeof *signs);
  signs->median = median;
}

void
tach_stats_signs_add (TachStatsSigns *signs, double x)
{
  gint8 s = x > signs->median ? 1 : x < signs->median ? -1 : 0;
  guint64 back = MIN (signs->n, (guint64) TACH_STATS_MAX_LAG);

  for (guint64 k = 1; k <= back; k++)
    signs->lag[k] += s * signs->ring[(signs->n - k) % TACH_STATS_MAX_LAG];
  signs->ring[signs->n % TACH_STATS_MAX_LAG] = s;
  signs->sum += s;
  signs->sum_sq += s * s;
  signs->n++;
}

double
tach_stats_signs_inflation (const TachStatsSigns *signs)
{
  double n = (double) signs->n, mean, var, sum = 0;

  if (signs->n < 2)
    return 1;
  mean = signs->sum / n;
  var = signs->sum_sq - n * mean * mean;
  if (var <= 0)
    return 1;
  for (guint64 k = 1; k <= TACH_STATS_MAX_LAG && k < signs->n / 2; k++)
    {
      /* Centred by the whole series' mean (ties make it non-zero). */
      double c = (signs->lag[k] - (n - k) * mean * mean) / var;

      if (c <= 0)
        break;
      sum += c;
    }
  return 1 + 2 * sum;
}

/* A distribution-free interval: for independent values the count below the
 * true median is binomial (n, 1/2), so the order statistics ranked
 * n/2 -+ z sqrt (n)/2 (with the continuity correction) bound it at 95%,
 * whatever the distribution of step times (they are skewed: a tail of slow
 * steps).  The ranks spread by sqrt of the inflation for a correlated
 * series, which is what resampling blocks would estimate too, without a
 * random draw: the same samples always give the same interval. */
gboolean
tach_stats_median_ranks (guint64 n, double inflation, guint64 *lo, guint64 *hi)
{
  double half = Z975 * sqrt ((double) n * MAX (inflation, 1.0)) / 2;
  /* 1-based ranks: n = 100 gives the 40th and 61st, the textbook pair. */
  double lo_rank = floor (n / 2.0 - half);
  double hi_rank = ceil (n / 2.0 + half) + 1;

  if (lo_rank < 1 || hi_rank > (double) n)
    return FALSE;
  *lo = (guint64) lo_rank - 1;
  *hi = (guint64) hi_rank - 1;
  return TRUE;
}

void
tach_stats_median_ci (const double *x, gsize n, TachInterval *out)
{
  g_autofree double *s = NULL;
  TachStatsSigns signs;
  guint64 lo, hi;

  if (n == 0)
    {
      interval_unknown (out, NAN);
      return;
    }
  s = g_memdup2 (x, n * sizeof (double));
  qsort (s, n, sizeof (double), (int (*) (const void *, const void *)) compare_double);
  tach_stats_signs_init (&signs, sorted_median (s, n));
  for (gsize i = 0; i < n; i++)
    tach_stats_signs_add (&signs, x[i]);
  if (!tach_stats_median_ranks (n, tach_stats_signs_inflation (&signs), &lo, &hi))
    {
      interval_unknown (out, signs.median);
      return;
    }
  out->value = signs.median;
  out->lo = s[lo];
  out->hi = s[hi];
}

/* ------------------------------------------------------------ rounds */

static void
mean_sd (const double *x, gsize n, double *mean, double *sd)
{
  double m = 0, v = 0;

  for (gsize i = 0; i < n; i++)
    m += x[i];
  m /= n;
  for (gsize i = 0; i < n; i++)
    v += (x[i] - m) * (x[i] - m);
  *mean = m;
  *sd = n > 1 ? sqrt (v / (n - 1)) : NAN;
}

void
tach_stats_mean_ci (const double *x, gsize n, TachInterval *out)
{
  double mean, sd, half;

  if (n == 0)
    {
      interval_unknown (out, NAN);
      return;
    }
  mean_sd (x, n, &mean, &sd);
  if (n < 2 || !isfinite (sd))
    {
      interval_unknown (out, mean);
      return;
    }
  half = tach_stats_t975 ((guint) (n - 1)) * sd / sqrt ((double) n);
  out->value = mean;
  out->lo = mean - half;
  out->hi = mean + half;
}

void
tach_stats_diff_paired (const double *a, const double *b, gsize n, TachInterval *out)
{
  g_autofree double *d = g_new (double, MAX (n, 1));

  for (gsize i = 0; i < n; i++)
    d[i] = b[i] - a[i];
  tach_stats_mean_ci (d, n, out);
}

/* Speed ratios multiply (2x then 2x is 4x, and 0.5x is 2x the other way),
 * so they are averaged as logarithms: the interval of b/a is the inverse
 * of the interval of a/b, which an arithmetic mean of ratios would not
 * give.  Pairing by round takes out what a round's load did to both. */
void
tach_stats_ratio_paired (const double *a, const double *b, gsize n, TachInterval *out)
{
  g_autofree double *r = g_new (double, MAX (n, 1));
  TachInterval log_iv;

  for (gsize i = 0; i < n; i++)
    {
      if (!(a[i] > 0 && b[i] > 0))
        {
          interval_unknown (out, NAN);
          return;
        }
      r[i] = log (b[i] / a[i]);
    }
  tach_stats_mean_ci (r, n, &log_iv);
  out->value = exp (log_iv.value);
  out->lo = exp (log_iv.lo);
  out->hi = exp (log_iv.hi);
}

/* Two runs measured apart share no rounds to pair: each median's interval
 * gives a standard error on the log scale (its half-width over z), and the
 * two add in quadrature, as the errors of independent measurements do. */
void
tach_stats_ratio_unpaired (const TachInterval *a, const TachInterval *b, TachInterval *out)
{
  double se_a, se_b, se, r;

  if (!(a->value > 0 && b->value > 0))
    {
      interval_unknown (out, NAN);
      return;
    }
  r = b->value / a->value;
  if (!tach_interval_is_known (a) || !tach_interval_is_known (b) || !(a->lo > 0)
      || !(b->lo > 0))
    {
      interval_unknown (out, r);
      return;
    }
  se_a = (log (a->hi) - log (a->lo)) / (2 * Z975);
  se_b = (log (b->hi) - log (b->lo)) / (2 * Z975);
  se = sqrt (se_a * se_a + se_b * se_b);
  out->value = r;
  out->lo = exp (log (r) - Z975 * se);
  out->hi = exp (log (r) + Z975 * se);
}

/* Step times are positive and their noise multiplies (a busy round slows
 * every step by a factor), so a mean step time's interval is taken on the
 * log scale: a round at 200 ms among rounds at 50 ms widens the upper end,
 * never pushes the lower one below 0 as a symmetric interval would. */
void
tach_stats_mean_ci_positive (const double *x, gsize n, TachInterval *out)
{
  g_autofree double *l = g_new (double, MAX (n, 1));
  double mean = 0, lmean, lsd, half;

  for (gsize i = 0; i < n; i++)
    {
      if (!(x[i] > 0) || !isfinite (x[i]))
        {
          tach_stats_mean_ci (x, n, out);
          interval_unknown (out, out->value);
          return;
        }
      mean += x[i] / n;
      l[i] = log (x[i]);
    }
  if (n < 2)
    {
      interval_unknown (out, n == 1 ? x[0] : NAN);
      return;
    }
  mean_sd (l, n, &lmean, &lsd);
  half = tach_stats_t975 ((guint) (n - 1)) * lsd / sqrt ((double) n);
  out->value = mean;
  out->lo = mean * exp (-half);
  out->hi = mean * exp (half);
}

/* A speed-up and a gap measured over the same rounds must give one
 * verdict.  The statistic is the per-round ratio of step times on the
 * log scale: a round's load slows A and B by about the same factor, so
 * the ratio cancels it where the difference in ms would not (A at 46 to
 * 200 ms against B's steady 12 ms is a clear 4x and more, while the
 * differences' interval reaches past A's whole time and made the ratio's
 * upper end infinite).  The gap's interval is the ratio's mapped through
 * A's mean time, a monotonic map, so its ends lie on the same sides of 0
 * as the ratio's do of 1. */
TachVerdict
tach_stats_speedup_paired (const double *a, const double *b, gsize n,
                           TachInterval *speedup, TachInterval *gap)
{
  double a_mean = 0, gap_mean = 0;
  TachVerdict verdict;

  /* Rates are inverse times: b's speed-up is a's time over b's. */
  tach_stats_ratio_paired (b, a, n, speedup);
  verdict = tach_interval_verdict (speedup, 1);
  if (gap == NULL)
    return verdict;
  for (gsize i = 0; i < n; i++)
    {
      a_mean += a[i] / n;
      gap_mean += (b[i] - a[i]) / n;
    }
  if (n == 0)
    gap_mean = NAN;
  if (!tach_interval_is_known (speedup) || !(a_mean > 0))
    {
      interval_unknown (gap, gap_mean);
      return verdict;
    }
  gap->value = gap_mean;
  gap->lo = a_mean / speedup->hi - a_mean;
  gap->hi = a_mean / speedup->lo - a_mean;
  /* The mean of differences and the geometric mean of ratios part a
   * little where rounds spread; the interval shown holds the value. */
  gap->lo = MIN (gap->lo, gap_mean);
  gap->hi = MAX (gap->hi, gap_mean);
  return verdict;
}

TachVerdict
tach_interval_ratio (const TachInterval *a, const TachInterval *b, TachInterval *ratio)
{
  tach_stats_ratio_unpaired (a, b, ratio);
  return tach_interval_verdict (ratio, 1);
}

/* A share is a fraction of two means over the same rounds, both noisy and
 * correlated (a knob's share moves with the gap it is part of): the delta
 * method's variance of S/G, (var S - 2 f cov (S, G) + f^2 var G) / (n G^2),
 * with Student's t for the few rounds.  Where the gap itself is within
 * noise the fraction is undefined, not merely wide: no value is given,
 * which is what keeps a share of noise from being printed as 828%. */
void
tach_stats_fraction_paired (const double *part, const double *whole, gsize n,
                            TachVerdict whole_verdict, TachInterval *out)
{
  double ms, mg, vs = 0, vg = 0, cov = 0, f, var, half;

  if (n < 2 || whole_verdict != TACH_VERDICT_SIGNIFICANT)
    {
      interval_unknown (out, NAN);
      return;
    }
  ms = mg = 0;
  for (gsize i = 0; i < n; i++)
    {
      ms += part[i];
      mg += whole[i];
    }
  ms /= n;
  mg /= n;
  for (gsize i = 0; i < n; i++)
    {
      vs += (part[i] - ms) * (part[i] - ms);
      vg += (whole[i] - mg) * (whole[i] - mg);
      cov += (part[i] - ms) * (whole[i] - mg);
    }
  vs /= n - 1;
  vg /= n - 1;
  cov /= n - 1;
  f = ms / mg;
  var = (vs - 2 * f * cov + f * f * vg) / (n * mg * mg);
  half = tach_stats_t975 ((guint) (n - 1)) * sqrt (MAX (var, 0));
  out->value = f;
  out->lo = f - half;
  out->hi = f + half;
}

void
tach_stats_shuffle (GRand *rand, guint *a, guint n)
{
  for (guint i = n; i > 1; i--)
    {
      guint j = (guint) g_rand_int_range (rand, 0, (gint32) i);
      guint t = a[i - 1];

      a[i - 1] = a[j];
      a[j] = t;
    }
}
