/* tach-sweep-rounds.c: when a sweep has measured enough (tach-sweep.h).
 * The rounds are the replicates of every comparison: within a round the
 * points run one after another, so two points of one round meet the same
 * machine and their ratio in that round cancels what the round's load did
 * to both; the rounds' ratios give the interval (tach_stats_ratio_paired:
 * the geometric mean of the rounds' ratios, Student's t over them).
 * Rounds are added only while they can still change a verdict: a
 * comparison known to the target needs no more, and a round that would
 * not fit the budget at the pace so far is not begun.
 */
#include <math.h>

#include "tach-stats.h"
#include "tach-sweep.h"

struct _TachSweepRounds {
  guint   n_points;
  guint   min_rounds;
  double  budget_s;
  double  target;
  GArray *base, *other;    /* guint: the comparisons' points */
  GArray *rates;           /* double: round x n_points, NaN where not measured */
};

TachSweepRounds *
tach_sweep_rounds_new (guint n_points, guint min_rounds, double budget_s, double target)
{
  TachSweepRounds *r = g_new0 (TachSweepRounds, 1);

  r->n_points = n_points;
  r->min_rounds = CLAMP (min_rounds, 1, TACH_SWEEP_MAX_ROUNDS);
  r->budget_s = MAX (budget_s, 0.0);
  r->target = target > 0 ? target : 0.05;
  r->base = g_array_new (FALSE, FALSE, sizeof (guint));
  r->other = g_array_new (FALSE, FALSE, sizeof (guint));
  r->rates = g_array_new (FALSE, FALSE, sizeof (double));
  return r;
}

void
tach_sweep_rounds_free (TachSweepRounds *r)
{
  if (r == NULL)
    return;
  g_array_unref (r->base);
  g_array_unref (r->other);
  g_array_unref (r->rates);
  g_free (r);
}

guint
tach_sweep_rounds_add_comparison (TachSweepRounds *r, guint base, guint other)
{
  g_return_val_if_fail (base < r->n_points && other < r->n_points, 0);
  g_array_append_val (r->base, base);
  g_array_append_val (r->other, other);
  return r->base->len - 1;
}

static guint
rounds_recorded (TachSweepRounds *r)
{
  return r->n_points > 0 ? r->rates->len / r->n_points : 0;
}

void
tach_sweep_rounds_record (TachSweepRounds *r, guint point, guint round, double rate)
{
  g_return_if_fail (point < r->n_points && round < TACH_SWEEP_MAX_ROUNDS);
  while (rounds_recorded (r) <= round)
    for (guint i = 0; i < r->n_points; i++)
      {
        double none = NAN;

        g_array_append_val (r->rates, none);
      }
  g_array_index (r->rates, double, (gsize) round * r->n_points + point)
    = rate > 0 && isfinite (rate) ? rate : NAN;
}

double
tach_sweep_rounds_get_rate (TachSweepRounds *r, guint point)
{
  guint rounds = rounds_recorded (r);
  g_autofree double *v = g_new (double, rounds + 1);
  guint n = 0;

  for (guint k = 0; k < rounds; k++)
    {
      double x = g_array_index (r->rates, double, (gsize) k * r->n_points + point);

      if (isfinite (x))
        v[n++] = x;
    }
  return tach_stats_median (v, n);
}

TachVerdict
tach_sweep_rounds_get_ratio (TachSweepRounds *r, guint i, TachInterval *ratio)
{
  guint rounds = rounds_recorded (r);
  g_autofree double *a = g_new (double, rounds + 1);
  g_autofree double *b = g_new (double, rounds + 1);
  guint base = g_array_index (r->base, guint, i), other = g_array_index (r->other, guint, i);
  guint n = 0;

  /* The rounds that measured both: a pair is only a pair within a round. */
  for (guint k = 0; k < rounds; k++)
    {
      double x = g_array_index (r->rates, double, (gsize) k * r->n_points + base);
      double y = g_array_index (r->rates, double, (gsize) k * r->n_points + other);

      if (isfinite (x) && isfinite (y))
        {
          a[n] = x;
          b[n++] = y;
        }
    }
  if (n == 0)
    {
      *ratio = (TachInterval) { NAN, NAN, NAN };
      return TACH_VERDICT_UNKNOWN;
    }
  tach_stats_ratio_paired (a, b, n, ratio);
  return tach_interval_verdict (ratio, 1);
}

gboolean
tach_sweep_rounds_is_resolved (TachSweepRounds *r, guint i)
{
  TachInterval ratio;

  if (r->budget_s <= 0)
    return TRUE;
  tach_sweep_rounds_get_ratio (r, i, &ratio);
  return tach_interval_rel_halfwidth (&ratio) <= r->target;
}

gboolean
tach_sweep_rounds_want_more (TachSweepRounds *r, guint rounds_done, double spent_s)
{
  if (rounds_done < r->min_rounds)
    return TRUE;
  if (r->budget_s <= 0 || rounds_done >= TACH_SWEEP_MAX_ROUNDS || rounds_done == 0
      || spent_s + spent_s / rounds_done > r->budget_s)
    return FALSE;
  /* A comparison with no pair measured (a point that fails) is not
   * waited for: more rounds will not measure it. */
  for (guint i = 0; i < r->base->len; i++)
    {
      TachInterval ratio;

      if (tach_sweep_rounds_get_ratio (r, i, &ratio) != TACH_VERDICT_UNKNOWN
          && tach_interval_rel_halfwidth (&ratio) > r->target)
        return TRUE;
    }
  return FALSE;
}
