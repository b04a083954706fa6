/* tach-explain.c: the attribution of a speed gap to knobs: the plan (which
 * configurations, which orderings), the interleaved rounds and the Shapley
 * values.  Configurations, real runs, sentences and CSV are in
 * tach-explain-run.c; what an explanation says of itself, in
 * tach-explain-query.c.
 *
 * A Shapley value is the mean over orderings of the knobs of each knob's
 * marginal change: walking from A to B one knob at a time in the order
 * given, the step time after the knob flips minus the time before.  Along
 * any one ordering the changes add up to t(B) - t(A), so any mean of them
 * does too: this holds for all k! orderings (exact), for a sample of them,
 * and for the orderings left when some step cannot run.  The shares are
 * computed per round from that round's measurements, then averaged, so the
 * spread over rounds comes with them.
 *
 * Intervals: the rounds are the independent replicates (each round visits
 * every configuration in a shuffled order, so a busy spell falls on a
 * round, not on one configuration), and every figure is a mean over
 * rounds, so each share gets Student's t over its rounds' values, paired
 * by round (tach-stats.c says why): a mean, not a median, so that the
 * shares add up to the gap.  B's speed-up, its gap and A's and B's step
 * times take their intervals on the log scale: none reaches 0 or below.
 * With a budget, rounds are added until they meet the target.
 */
#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-explain-private.h"
#include "tach-stats.h"

static void
knob_clear (TachExplainKnob *knob)
{
  g_clear_pointer (&knob->key, g_free);
  g_clear_pointer (&knob->title, g_free);
  g_clear_pointer (&knob->from, g_free);
  g_clear_pointer (&knob->to, g_free);
}

void
tach_explain_failure_clear (gpointer data)
{
  TachExplainFailure *failure = data;

  g_clear_pointer (&failure->name, g_free);
  g_clear_pointer (&failure->reason, g_free);
}

static void
plan_clear (TachExplain *explain)
{
  g_clear_pointer (&explain->orderings, g_free);
  g_clear_pointer (&explain->ordering_ok, g_free);
  g_clear_pointer (&explain->slot, g_free);
  g_clear_pointer (&explain->failed, g_free);
  g_clear_pointer (&explain->costs, g_free);
  if (explain->masks != NULL)
    g_array_set_size (explain->masks, 0);
  if (explain->failures != NULL)
    g_array_set_size (explain->failures, 0);
  explain->n_orderings = 0;
  explain->orderings_used = 0;
  explain->done = FALSE;
}

void
tach_explain_free (TachExplain *explain)
{
  if (explain == NULL)
    return;
  plan_clear (explain);
  for (guint i = 0; explain->knobs != NULL && i < explain->n_knobs; i++)
    knob_clear (&explain->knobs[i]);
  g_free (explain->knobs);
  g_clear_pointer (&explain->masks, g_array_unref);
  g_clear_pointer (&explain->failures, g_array_unref);
  g_clear_pointer (&explain->runs, g_ptr_array_unref);
  if (explain->has_configs)
    {
      tach_config_clear (&explain->from);
      tach_config_clear (&explain->to);
    }
  g_free (explain->label_from);
  g_free (explain->label_to);
  g_free (explain->device_id);
  g_free (explain->id);
  g_free (explain);
}

TachExplain *
tach_explain_new_for_knobs (guint n_knobs, const char *const *keys,
                            const char *const *from, const char *const *to,
                            const gboolean *changes_results, guint rounds,
                            guint64 seed, GError **error)
{
  TachExplain *explain;

  if (n_knobs == 0)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   _("nothing to explain: the two configurations differ in no execution-mode knob"));
      return NULL;
    }
  if (n_knobs > TACH_EXPLAIN_MAX_KNOBS)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   _("too many knobs to explain (%u): at most %u"), n_knobs,
                   (guint) TACH_EXPLAIN_MAX_KNOBS);
      return NULL;
    }
  if (rounds < TACH_EXPLAIN_MIN_ROUNDS)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   _("invalid value '%u' for --rounds: at least %u rounds are needed "
                     "so that machine noise falls on every configuration alike"),
                   rounds, (guint) TACH_EXPLAIN_MIN_ROUNDS);
      return NULL;
    }

  explain = g_new0 (TachExplain, 1);
  explain->n_knobs = n_knobs;
  explain->knobs = g_new0 (TachExplainKnob, n_knobs);
  explain->rounds = explain->min_rounds = rounds;
  explain->target = TACH_EXPLAIN_DEFAULT_TARGET;
  explain->seed = seed;
  explain->exact = n_knobs <= TACH_EXPLAIN_MAX_EXACT;
  explain->masks = g_array_new (FALSE, FALSE, sizeof (guint));
  explain->failures = g_array_new (FALSE, TRUE, sizeof (TachExplainFailure));
  g_array_set_clear_func (explain->failures, tach_explain_failure_clear);
  explain->runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);

  for (guint i = 0; i < n_knobs; i++)
    {
      TachExplainKnob *knob = &explain->knobs[i];
      const TachKnobInfo *row = tach_knob_lookup (keys[i]);

      knob->key = g_strdup (keys[i]);
      knob->title = g_strdup (row != NULL ? _(row->title) : keys[i]);
      knob->from = g_strdup (from[i]);
      knob->to = g_strdup (to[i]);
      knob->changes_results = changes_results != NULL ? changes_results[i]
                              : row != NULL && row->changes_results;
      knob->share_ms = knob->share_min_ms = knob->share_max_ms = NAN;
      knob->fraction = NAN;
      knob->share_ci = knob->fraction_ci = (TachInterval) { NAN, NAN, NAN };
    }
  return explain;
}

/* ------------------------------------------------------------------ plan */

static guint
full_mask (TachExplain *explain)
{
  return (1u << explain->n_knobs) - 1;
}

static void
add_mask (TachExplain *explain, guint mask)
{
  if (explain->slot[mask] != G_MAXUINT)
    return;
  explain->slot[mask] = explain->masks->len;
  g_array_append_val (explain->masks, mask);
}

/* Whether every configuration along @order runs, by what is known now. */
static gboolean
ordering_runs (TachExplain *explain, const guint *order, const gboolean *known_bad)
{
  guint mask = 0;

  for (guint s = 0; s < explain->n_knobs; s++)
    {
      mask |= 1u << order[s];
      if (known_bad != NULL && known_bad[mask])
        return FALSE;
    }
  return TRUE;
}

/* The next permutation of @a in lexicographic order; FALSE after the last. */
static gboolean
next_permutation (guint *a, guint n)
{
  guint i, j;

  if (n < 2)
    return FALSE;
  i = n - 1;
  while (i > 0 && a[i - 1] >= a[i])
    i--;
  if (i == 0)
    return FALSE;
  j = n - 1;
  while (a[j] <= a[i - 1])
    j--;
  { guint t = a[i - 1]; a[i - 1] = a[j]; a[j] = t; }
  for (guint l = i, r = n - 1; l < r; l++, r--)
    { guint t = a[l]; a[l] = a[r]; a[r] = t; }
  return TRUE;
}

/* Draws the orderings and the configurations they need.  @known_bad
 * (1 << k entries) marks configurations that cannot run: sampled orderings
 * avoid them. */
static void
plan_draw (TachExplain *explain, GRand *rand, const gboolean *known_bad)
{
  guint k = explain->n_knobs;
  guint n_masks = 1u << k;

  explain->slot = g_new (guint, n_masks);
  for (guint m = 0; m < n_masks; m++)
    explain->slot[m] = G_MAXUINT;

  if (explain->exact)
    {
      guint perm[TACH_EXPLAIN_MAX_EXACT];
      guint n = 1;

      for (guint i = 2; i <= k; i++)
        n *= i;
      explain->n_orderings = n;
      explain->orderings = g_new (guint, (gsize) n * k);
      for (guint i = 0; i < k; i++)
        perm[i] = i;
      for (guint o = 0; o < n; o++)
        {
          memcpy (&explain->orderings[(gsize) o * k], perm, k * sizeof (guint));
          next_permutation (perm, k);
        }
      for (guint m = 0; m < n_masks; m++)
        add_mask (explain, m);
    }
  else
    {
      guint n = TACH_EXPLAIN_SAMPLED_ORDERINGS;
      guint got = 0, tries = 0;

      explain->orderings = g_new (guint, (gsize) n * k);
      /* Each ordering comes with its reverse (antithetic pairs: a knob early
       * in one is late in the other), which lowers the sampling error. */
      while (got + 1 < n && tries < 1000 * n)
        {
          guint *a = &explain->orderings[(gsize) got * k];
          guint *b = a + k;

          tries++;
          for (guint i = 0; i < k; i++)
            a[i] = i;
          tach_stats_shuffle (rand, a, k);
          for (guint i = 0; i < k; i++)
            b[i] = a[k - 1 - i];
          if (!ordering_runs (explain, a, known_bad) || !ordering_runs (explain, b, known_bad))
            continue;
          got += 2;
        }
      explain->n_orderings = got;
      add_mask (explain, 0);
      add_mask (explain, full_mask (explain));
      for (guint o = 0; o < got; o++)
        {
          guint mask = 0;

          for (guint s = 0; s + 1 < k; s++)
            {
              mask |= 1u << explain->orderings[(gsize) o * k + s];
              add_mask (explain, mask);
            }
        }
    }

  explain->ordering_ok = g_new (gboolean, MAX (explain->n_orderings, 1));
  explain->failed = g_new0 (gboolean, explain->masks->len);
  explain->costs = g_new0 (TachExplainCost, (gsize) explain->rounds * explain->masks->len);
}

static void
add_failure (TachExplain *explain, guint mask, const GError *error)
{
  TachExplainFailure failure = { mask, tach_explain_describe_mask (explain, mask),
                                 g_strdup (error != NULL ? error->message : _("it failed")) };

  if (mask == full_mask (explain))
    {
      g_free (failure.name);
      failure.name = g_strdup (_("B (the target configuration)"));
    }
  g_array_append_val (explain->failures, failure);
}

static char *
failures_text (TachExplain *explain)
{
  g_autoptr(GString) out = g_string_new (NULL);

  for (guint i = 0; i < explain->failures->len; i++)
    {
      const TachExplainFailure *f = &g_array_index (explain->failures, TachExplainFailure, i);

      g_string_append_printf (out, "%s%s (%s)", i > 0 ? "; " : "", f->name, f->reason);
    }
  return g_string_free (g_steal_pointer (&out), FALSE);
}

/* ---------------------------------------------------------------- shares */

static double
cost_part (const TachExplainCost *cost, int part)
{
  return part < 0 ? cost->step_ms : cost->phase_ms[part];
}

/* One round's Shapley values of part @part (-1: step time) into @share
 * (n_knobs), over the orderings that run. */
static void
round_shares (TachExplain *explain, guint round, int part, double *share)
{
  const TachExplainCost *costs = &explain->costs[(gsize) round * explain->masks->len];
  guint k = explain->n_knobs;

  for (guint i = 0; i < k; i++)
    share[i] = 0;
  for (guint o = 0; o < explain->n_orderings; o++)
    {
      const guint *order = &explain->orderings[(gsize) o * k];
      guint mask = 0;
      double before;

      if (!explain->ordering_ok[o])
        continue;
      before = cost_part (&costs[explain->slot[0]], part);
      for (guint s = 0; s < k; s++)
        {
          double after;

          mask |= 1u << order[s];
          after = cost_part (&costs[explain->slot[mask]], part);
          share[order[s]] += after - before;
          before = after;
        }
    }
  for (guint i = 0; i < k; i++)
    share[i] /= explain->orderings_used;
}

/* Whether the intervals meet the target: the speed ratio to +-target
 * (or, with no budget, whatever it is: nothing more was asked), each
 * share to +-2 target of the gap.  A gap resolved as no change (its
 * ratio known to the target, within noise) leaves no share to pursue. */
static void
judge_resolved (TachExplain *explain)
{
  gboolean asked = explain->budget_s > 0;
  double gap_ms = fabs (explain->gap.value);
  gboolean no_change;

  explain->gap_resolved = !asked
                          || tach_interval_rel_halfwidth (&explain->speedup) <= explain->target;
  no_change = explain->gap_resolved
              && tach_interval_verdict (&explain->speedup, 1) != TACH_VERDICT_SIGNIFICANT;
  for (guint i = 0; i < explain->n_knobs; i++)
    {
      TachExplainKnob *knob = &explain->knobs[i];
      double half = 0.5 * (knob->share_ci.hi - knob->share_ci.lo);

      knob->resolved = !asked || no_change
                       || (isfinite (half) && half <= 2 * explain->target * gap_ms);
    }
}

static void
compute_shares (TachExplain *explain)
{
  guint k = explain->n_knobs;
  guint n = explain->rounds;
  guint full = explain->slot[full_mask (explain)];
  g_autofree double *share = g_new (double, k);
  /* Per round: the knobs' shares (k x n), A's and B's step times, the gap. */
  g_autofree double *round_share = g_new (double, (gsize) k * n);
  g_autofree double *step_a = g_new (double, n);
  g_autofree double *step_b = g_new (double, n);
  g_autofree double *round_gap = g_new (double, n);
  TachVerdict gap_verdict;

  for (guint i = 0; i < k; i++)
    {
      TachExplainKnob *knob = &explain->knobs[i];

      knob->share_ms = 0;
      knob->share_min_ms = INFINITY;
      knob->share_max_ms = -INFINITY;
      for (int p = 0; p < TACH_EXPLAIN_N_PHASES; p++)
        knob->phase_ms[p] = 0;
    }
  memset (&explain->cost_from, 0, sizeof explain->cost_from);
  memset (&explain->cost_to, 0, sizeof explain->cost_to);
  explain->from_min = explain->to_min = explain->gap_min = INFINITY;
  explain->from_max = explain->to_max = explain->gap_max = -INFINITY;

  for (guint r = 0; r < n; r++)
    {
      const TachExplainCost *costs = &explain->costs[(gsize) r * explain->masks->len];
      const TachExplainCost *a = &costs[explain->slot[0]];
      const TachExplainCost *b = &costs[full];

      round_shares (explain, r, -1, share);
      for (guint i = 0; i < k; i++)
        {
          TachExplainKnob *knob = &explain->knobs[i];

          round_share[(gsize) i * n + r] = share[i];
          knob->share_ms += share[i] / n;
          knob->share_min_ms = MIN (knob->share_min_ms, share[i]);
          knob->share_max_ms = MAX (knob->share_max_ms, share[i]);
        }
      for (int p = 0; p < TACH_EXPLAIN_N_PHASES; p++)
        {
          round_shares (explain, r, p, share);
          for (guint i = 0; i < k; i++)
            explain->knobs[i].phase_ms[p] += share[i] / n;
          explain->cost_from.phase_ms[p] += a->phase_ms[p] / n;
          explain->cost_to.phase_ms[p] += b->phase_ms[p] / n;
        }
      explain->cost_from.step_ms += a->step_ms / n;
      explain->cost_to.step_ms += b->step_ms / n;
      explain->from_min = MIN (explain->from_min, a->step_ms);
      explain->from_max = MAX (explain->from_max, a->step_ms);
      explain->to_min = MIN (explain->to_min, b->step_ms);
      explain->to_max = MAX (explain->to_max, b->step_ms);
      explain->gap_min = MIN (explain->gap_min, b->step_ms - a->step_ms);
      explain->gap_max = MAX (explain->gap_max, b->step_ms - a->step_ms);
      step_a[r] = a->step_ms;
      step_b[r] = b->step_ms;
      round_gap[r] = b->step_ms - a->step_ms;
    }

  /* Step times on the log scale (a slow round widens the upper end only);
   * B's speed-up from the rounds' ratios, the gap's interval its
   * transform: the headline and the shares never disagree on a gap. */
  tach_stats_mean_ci_positive (step_a, n, &explain->from_ci);
  tach_stats_mean_ci_positive (step_b, n, &explain->to_ci);
  gap_verdict = tach_stats_speedup_paired (step_a, step_b, n, &explain->speedup, &explain->gap);
  for (guint i = 0; i < k; i++)
    {
      TachExplainKnob *knob = &explain->knobs[i];
      const double *rs = &round_share[(gsize) i * n];

      tach_stats_mean_ci (rs, n, &knob->share_ci);
      knob->verdict = tach_interval_verdict (&knob->share_ci, 0);
      /* A gap within noise (or one whose rounds cannot say) has no
       * fractions: 828% of a gap that might be 0 says nothing.  Without
       * an interval (fewer than 2 rounds) only a zero gap has none. */
      if (gap_verdict == TACH_VERDICT_SIGNIFICANT)
        tach_stats_fraction_paired (rs, round_gap, n, gap_verdict, &knob->fraction_ci);
      else
        knob->fraction_ci = (TachInterval) { NAN, NAN, NAN };
      knob->fraction = knob->fraction_ci.value;
    }
  judge_resolved (explain);
  explain->done = TRUE;
}

/* ------------------------------------------------------------------- run */

static double
now_s (const TachExplainCostFuncs *funcs, gpointer user_data)
{
  if (funcs->now_s != NULL)
    return funcs->now_s (user_data);
  return g_get_monotonic_time () / 1e6;
}

/* The orderings that still run at every step, and the shares over the
 * rounds so far; FALSE when no ordering is left. */
gboolean
tach_explain_update_shares (TachExplain *explain, const gboolean *known_bad)
{
  guint k = explain->n_knobs;

  explain->orderings_used = 0;
  for (guint o = 0; o < explain->n_orderings; o++)
    {
      explain->ordering_ok[o] = ordering_runs (explain, &explain->orderings[(gsize) o * k],
                                               known_bad);
      explain->orderings_used += explain->ordering_ok[o];
    }
  if (explain->orderings_used == 0)
    return FALSE;
  compute_shares (explain);
  return TRUE;
}

/* funcs->measure, and under mpirun rank 0's verdict on it for every rank:
 * a configuration that failed on rank 0 is left out on every rank, so
 * that the ranks go on measuring the same ones. */
static gboolean
measure_agreed (const TachExplainCostFuncs *funcs, guint mask, guint round,
                TachExplainCost *cost, gpointer user_data, GError **error)
{
  gboolean ok = funcs->measure (mask, round, cost, user_data, error);
  guchar agreed = ok;

  if (tach_ranks_world_size () == 1)
    return ok;
  if (!tach_ranks_share (&agreed, 1, NULL))
    agreed = FALSE;
  if (!agreed && ok)
    g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
                 _("the configuration failed on rank 0 (its message is rank 0's)"));
  return agreed;
}

gboolean
tach_explain_run_with (TachExplain *explain, const TachExplainCostFuncs *funcs,
                       gpointer user_data, TachExplainProgress progress,
                       gpointer progress_data, GError **error)
{
  guint k = explain->n_knobs;
  guint n_all = 1u << k;
  guint full = full_mask (explain);
  g_autoptr(GRand) rand = g_rand_new_with_seed_array ((const guint32[]) {
      (guint32) explain->seed, (guint32) (explain->seed >> 32), 0x7ac4e1u }, 3);
  g_autofree gboolean *known_bad = g_new0 (gboolean, n_all);
  g_autofree guint *order = NULL;
  guint done = 0, total;
  double start_s;

  g_return_val_if_fail (funcs != NULL && funcs->measure != NULL, FALSE);

  plan_clear (explain);
  g_ptr_array_set_size (explain->runs, 0);
  explain->partial = FALSE;

  /* What cannot run is known first, so that sampled orderings avoid it.
   * Only the configurations an exact plan needs are asked about when
   * sampling would ask about too many. */
  if (funcs->check != NULL)
    for (guint m = 0; m < n_all; m++)
      {
        g_autoptr(GError) why = NULL;

        if (!explain->exact && m != 0 && m != full && n_all > 256)
          continue;
        if (!funcs->check (m, user_data, &why))
          {
            known_bad[m] = TRUE;
            add_failure (explain, m, why);
          }
      }
  if (known_bad[0] || known_bad[full])
    {
      /* A's or B's own reason says it all: the mixes share it. */
      guint end = known_bad[0] ? 0 : full;
      const char *reason = NULL;

      for (guint i = 0; i < explain->failures->len && reason == NULL; i++)
        if (g_array_index (explain->failures, TachExplainFailure, i).mask == end)
          reason = g_array_index (explain->failures, TachExplainFailure, i).reason;
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED, _("cannot explain: %s: %s"),
                   known_bad[0] ? _("A cannot run") : _("B cannot run"), reason);
      return FALSE;
    }

  plan_draw (explain, rand, known_bad);
  for (guint i = 0; i < explain->masks->len; i++)
    if (known_bad[g_array_index (explain->masks, guint, i)])
      explain->failed[i] = TRUE;

  /* Interleaved rounds: every configuration once per round, in a new
   * shuffled order each round, so that drift and noise fall on all alike.
   * With a budget, rounds go on past the minimum while an interval misses
   * the target and the next round is expected to fit (a round takes about
   * what the rounds so far took on average). */
  order = g_new (guint, explain->masks->len);
  explain->rounds = explain->min_rounds;
  explain->round_s = 0;
  explain->budget_ended = FALSE;
  total = explain->rounds * explain->masks->len;
  start_s = now_s (funcs, user_data);
  for (guint r = 0;; r++)
    {
      if (r == explain->rounds)
        {
          double spent = now_s (funcs, user_data) - start_s;
          /* The budget is for the rounds after the given ones (--budget):
           * the added rounds and the next must fit it at the pace so far. */
          gboolean time_left = (r + 1 - explain->min_rounds) * (spent / r) <= explain->budget_s;
          gboolean fits = explain->budget_s > 0 && r < TACH_EXPLAIN_MAX_ROUNDS && time_left;
          guchar more = fits && tach_explain_update_shares (explain, known_bad)
                        && !tach_explain_is_resolved (explain);

          explain->round_s = spent / r;
          explain->budget_ended = explain->budget_s > 0 && !time_left;
          /* Under mpirun every rank measures the same configurations in
           * the same order (the seed is the same on every rank); whether
           * to add a round, from a clock and figures, is rank 0's word. */
          if (tach_ranks_world_size () > 1 && !tach_ranks_share (&more, 1, error))
            return FALSE;
          if (!more)
            break;
          explain->rounds++;
          explain->costs = g_renew (TachExplainCost, explain->costs,
                                    (gsize) explain->rounds * explain->masks->len);
          memset (&explain->costs[(gsize) r * explain->masks->len], 0,
                  explain->masks->len * sizeof (TachExplainCost));
          total += explain->masks->len;
        }
      for (guint i = 0; i < explain->masks->len; i++)
        order[i] = i;
      tach_stats_shuffle (rand, order, explain->masks->len);
      for (guint j = 0; j < explain->masks->len; j++)
        {
          guint idx = order[j];
          guint mask = g_array_index (explain->masks, guint, idx);
          g_autoptr(GError) local = NULL;
          TachExplainCost *cost = &explain->costs[(gsize) r * explain->masks->len + idx];

          done++;
          if (!explain->failed[idx] && !measure_agreed (funcs, mask, r, cost, user_data, &local))
            {
              if (g_error_matches (local, TACH_ERROR, TACH_ERROR_CANCELLED) || mask == 0
                  || mask == full)
                {
                  /* Stopped: the whole rounds before this one stand, when
                   * they are 2 or more (a paired interval needs 2). */
                  if (g_error_matches (local, TACH_ERROR, TACH_ERROR_CANCELLED) && r >= 2)
                    {
                      explain->rounds = r;
                      explain->partial = tach_explain_update_shares (explain, known_bad);
                    }
                  if (!g_error_matches (local, TACH_ERROR, TACH_ERROR_CANCELLED))
                    {
                      add_failure (explain, mask, local);
                      g_prefix_error (&local, _("cannot explain: %s: "),
                                      mask == 0 ? _("A cannot run") : _("B cannot run"));
                    }
                  g_propagate_error (error, g_steal_pointer (&local));
                  return FALSE;
                }
              explain->failed[idx] = TRUE;
              known_bad[mask] = TRUE;
              add_failure (explain, mask, local);
            }
          if (progress != NULL)
            progress (explain, done, total, progress_data);
        }
    }

  if (!tach_explain_update_shares (explain, known_bad))
    {
      g_autofree char *text = failures_text (explain);

      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                   _("cannot explain: no ordering of the knobs runs at every step; "
                     "these combinations failed: %s"), text);
      return FALSE;
    }

  return TRUE;
}
