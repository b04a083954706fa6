/* tach-sweep-rounds.c: when a sweep has measured enough (tach-sweep.h).
 * The rounds are the replicates of every comparison: within a round the
 * points run one after another, so two points of one round meet the same
 * machine and their ratio in that round cancels what the round's load did
 * to both; the rounds' ratios give the interval (tach_stats_ratio_paired:
 * the geometric mean of the rounds' ratios, Student's t over them).
 * Rounds are added only while they can still change a verdict: a
 * comparison known to the target needs no more, and a round that would
 * not fit the budget (the time for rounds after the required ones) at the
 * pace so far is not begun.
 */
#include <math.h>

#include <glib/gi18n-lib.h>

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
  /* The budget is for the rounds after the required ones (as --budget
   * says): the added rounds and the next must fit in it at the pace so
   * far. */
  if (r->budget_s <= 0 || rounds_done >= TACH_SWEEP_MAX_ROUNDS || rounds_done == 0
      || (rounds_done + 1 - r->min_rounds) * (spent_s / rounds_done) > r->budget_s)
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

double
tach_sweep_rounds_get_widest (TachSweepRounds *r)
{
  double widest = NAN;

  for (guint i = 0; i < r->base->len; i++)
    {
      TachInterval ratio;
      double half;

      if (tach_sweep_rounds_get_ratio (r, i, &ratio) == TACH_VERDICT_UNKNOWN)
        continue;
      half = tach_interval_rel_halfwidth (&ratio);
      if (isfinite (half) && !(half <= widest))
        widest = half;
    }
  return widest;
}

guint
tach_rounds_fit (guint min_rounds, double budget_s, guint rounds_done, double spent_s)
{
  double fit;

  if (budget_s <= 0 || rounds_done == 0 || spent_s <= 0)
    return budget_s <= 0 ? min_rounds : MAX (min_rounds, rounds_done);
  /* want_more's rule: a round is begun while it is expected to end within
   * the budget, which counts from the end of the required rounds, at the
   * pace so far. */
  fit = min_rounds + floor (budget_s / (spent_s / rounds_done));
  return CLAMP ((guint) MIN (fit, TACH_SWEEP_MAX_ROUNDS), MAX (min_rounds, rounds_done),
                TACH_SWEEP_MAX_ROUNDS);
}

char *
tach_rounds_dup_progress (guint round, guint min_rounds, double budget_s, double target,
                          guint rounds_done, double spent_s, double widest)
{
  guint most = MAX (tach_rounds_fit (min_rounds, budget_s, rounds_done, spent_s), round);

  if (rounds_done == 0 && budget_s > 0)
    /* Translators: the round being measured and the fewest that will run. */
    return g_strdup_printf (_("round %u of at least %u"), round, min_rounds);
  if (!isfinite (widest))
    /* Translators: the round being measured and the most that may run. */
    return g_strdup_printf (_("round %u of up to %u"), round, most);
  /* Translators: the round being measured, the most that may run, the
   * widest speed-up interval so far and the one asked for, as +-percent. */
  return g_strdup_printf (_("round %u of up to %u, speed-ups known to ±%.1f%% (target ±%.0f%%)"),
                          round, most, 100.0 * widest, 100.0 * target);
}

guint
tach_sweep_rounds_get_max_rounds (TachSweepRounds *r, guint rounds_done, double spent_s)
{
  return tach_rounds_fit (r->min_rounds, r->budget_s, rounds_done, spent_s);
}

char *
tach_sweep_rounds_dup_progress (TachSweepRounds *r, guint round, guint rounds_done,
                                double spent_s)
{
  return tach_rounds_dup_progress (round, r->min_rounds, r->budget_s, r->target, rounds_done,
                                   spent_s, tach_sweep_rounds_get_widest (r));
}

TachSweepRounds *
tach_sweep_rounds_new_for_sweep (TachSweep *sweep, guint min_rounds, double budget_s,
                                 double target)
{
  guint np = tach_sweep_get_n_presets (sweep);
  TachSweepRounds *r = tach_sweep_rounds_new (tach_sweep_get_n_points (sweep), min_rounds,
                                              budget_s, target);

  /* Comparison (v, p) is v * (np - 1) + p - 1: tach_sweep_rounds_point_comparison. */
  for (guint v = 0; v < tach_sweep_get_n_values (sweep); v++)
    for (guint p = 1; p < np; p++)
      tach_sweep_rounds_add_comparison (r, v * np, v * np + p);
  return r;
}

int
tach_sweep_rounds_point_comparison (TachSweep *sweep, guint index)
{
  guint np = tach_sweep_get_n_presets (sweep);

  if (index % np == 0 || index >= tach_sweep_get_n_points (sweep))
    return -1;
  return (int) ((index / np) * (np - 1) + index % np - 1);
}

double
tach_sweep_run_rate (TachRun *run)
{
  TachSummary s;

  if (run == NULL || tach_run_get_state (run) != TACH_RUN_STATE_FINISHED)
    return NAN;
  tach_run_get_summary (run, &s);
  return s.items_per_s;
}

void
tach_sweep_rounds_record_round (TachSweepRounds *r, TachSweep *sweep, guint round)
{
  for (guint i = 0; i < tach_sweep_get_n_points (sweep); i++)
    tach_sweep_rounds_record (r, i, round, tach_sweep_run_rate (tach_sweep_get_run (sweep, i, round)));
}

TachRun *
tach_sweep_rounds_pick_run (TachSweepRounds *r, TachSweep *sweep, guint index)
{
  double median = tach_sweep_rounds_get_rate (r, index), best = INFINITY;
  TachRun *pick = NULL;

  for (guint k = 0; k < tach_sweep_get_rounds_run (sweep); k++)
    {
      TachRun *run = tach_sweep_get_run (sweep, index, k);
      double d = fabs (tach_sweep_run_rate (run) - median);

      if (run == NULL)
        continue;
      /* The first run when none has a rate (failed, stopped). */
      if (pick == NULL || d < best)
        {
          pick = run;
          best = isfinite (d) ? d : INFINITY;
        }
    }
  return pick;
}

char *
tach_sweep_rounds_dup_unresolved (TachSweepRounds *r, TachSweep *sweep)
{
  g_autoptr(GString) text = g_string_new (NULL);
  guint np = tach_sweep_get_n_presets (sweep), rounds = tach_sweep_get_rounds_run (sweep);
  const TachSweepAxis *axis = tach_sweep_get_axis (sweep);

  for (guint i = 0; i < tach_sweep_get_n_points (sweep); i++)
    {
      int c = tach_sweep_rounds_point_comparison (sweep, i);
      TachInterval ratio;
      g_autofree char *name = NULL;

      if (c < 0 || (guint) c >= r->base->len || tach_sweep_rounds_is_resolved (r, c)
          || tach_sweep_rounds_get_ratio (r, c, &ratio) == TACH_VERDICT_UNKNOWN)
        continue;
      name = axis != NULL ? g_strdup_printf ("%s %s=%s", tach_sweep_get_preset (sweep, i % np),
                                             axis->knob->name, tach_sweep_get_value (sweep, i / np))
                          : g_strdup (tach_sweep_get_preset (sweep, i % np));
      if (text->len > 0)
        g_string_append_c (text, '\n');
      g_string_append_printf (text, _("unresolved after %u rounds: %s against %s is known to "
                                      "±%.1f%%, not the ±%.0f%% asked"),
                              rounds, name, tach_sweep_get_preset (sweep, 0),
                              100.0 * tach_interval_rel_halfwidth (&ratio), 100.0 * r->target);
    }
  return text->len > 0 ? g_string_free (g_steal_pointer (&text), FALSE) : NULL;
}

char *
tach_sweep_rounds_dup_outcome (TachSweepRounds *r, TachSweep *sweep, gboolean stopped)
{
  guint rounds = tach_sweep_get_rounds_run (sweep);
  g_autoptr(GString) line = g_string_new (NULL);
  g_autofree char *unresolved = NULL;

  if (rounds == 0)
    return g_strdup ("");
  /* Recorded again: a stopped round's pairs count too. */
  tach_sweep_rounds_record_round (r, sweep, rounds - 1);
  unresolved = tach_sweep_rounds_dup_unresolved (r, sweep);
  if (stopped)
    g_string_append_printf (line, _("Stopped in round %u; the rounds measured are shown."), rounds);
  else if (unresolved == NULL && r->budget_s > 0 && rounds >= 2)
    g_string_append_printf (line, g_dngettext (GETTEXT_PACKAGE,
                                               "%u round: every speed-up known to ±%.0f%%.",
                                               "%u rounds: every speed-up known to ±%.0f%%.",
                                               rounds),
                            rounds, 100.0 * r->target);
  else
    g_string_append_printf (line, g_dngettext (GETTEXT_PACKAGE, "%u round.", "%u rounds.", rounds),
                            rounds);
  if (unresolved != NULL)
    g_string_append_printf (line, "\n%s", unresolved);
  return g_string_free (g_steal_pointer (&line), FALSE);
}

char *
tach_sweep_dup_load_caveat (TachSweep *sweep, guint base_index, const TachSummary *base,
                            guint index, const TachSummary *s)
{
  const TachSweepAxis *axis = tach_sweep_get_axis (sweep);
  guint np = tach_sweep_get_n_presets (sweep);
  g_autofree char *name_a = axis != NULL
    ? g_strdup_printf ("%s %s=%s", tach_sweep_get_preset (sweep, base_index % np),
                       axis->knob->name, axis->values[base_index / np])
    : g_strdup (tach_sweep_get_preset (sweep, base_index % np));
  g_autofree char *name_b = axis != NULL
    ? g_strdup_printf ("%s %s=%s", tach_sweep_get_preset (sweep, index % np),
                       axis->knob->name, axis->values[index / np])
    : g_strdup (tach_sweep_get_preset (sweep, index % np));

  return tach_summary_dup_load_caveat (name_a, base, name_b, s);
}

char *
tach_sweep_rounds_dup_load_caveats (TachSweepRounds *r, TachSweep *sweep)
{
  guint np = tach_sweep_get_n_presets (sweep);
  GString *out = NULL;

  for (guint i = 0; i < tach_sweep_get_n_points (sweep); i++)
    {
      guint base_index = i - i % np;
      TachRun *a = tach_sweep_rounds_pick_run (r, sweep, base_index);
      TachRun *b = tach_sweep_rounds_pick_run (r, sweep, i);
      TachSummary sa, sb;
      g_autofree char *caveat = NULL;

      if (i == base_index || a == NULL || b == NULL)
        continue;
      tach_run_get_summary (a, &sa);
      tach_run_get_summary (b, &sb);
      caveat = tach_sweep_dup_load_caveat (sweep, base_index, &sa, i, &sb);
      if (caveat == NULL)
        continue;
      if (out == NULL)
        out = g_string_new (NULL);
      g_string_append_printf (out, "%s%s", out->len > 0 ? "\n" : "", caveat);
    }
  return out != NULL ? g_string_free (out, FALSE) : NULL;
}
