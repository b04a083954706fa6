/* tach-explain-run.c: an explanation between two configurations: which
 * knobs differ, the configuration of each subset, measuring them with real
 * runs and the sentences that read the result (explain.csv is
 * tach-explain-csv.c's).
 */
#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-analysis-private.h"
#include "tach-csv-private.h"
#include "tach-error-private.h"
#include "tach-explain-private.h"
#include "tach-stats.h"

/* Whether a setting that is not an execution mode must agree between A
 * and B: all but the preset's name. */
static gboolean
setting_must_agree (const TachKnobInfo *info)
{
  return !info->is_mode && info->id != TACH_KNOB_PRESET;
}

TachExplain *
tach_explain_new (const TachConfig *from, const TachConfig *to, guint rounds, GError **error)
{
  const char *keys[TACH_KNOB_COUNT];
  char *from_values[TACH_KNOB_COUNT];
  char *to_values[TACH_KNOB_COUNT];
  guint n = 0, n_infos = 0;
  const TachKnobInfo *infos = tach_knobs (&n_infos);
  TachExplain *explain = NULL;
  /* The knobs that differ but apply to neither side, and why. */
  g_autoptr(GString) idle = g_string_new (NULL);

  if (from->workload != to->workload)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   _("cannot explain %s against %s: a gap is explained between two "
                     "configurations of one workload"),
                   tach_workload_to_string (from->workload), tach_workload_to_string (to->workload));
      return NULL;
    }
  for (guint i = 0; i < n_infos; i++)
    {
      g_autofree char *a = NULL, *b = NULL;

      if (!setting_must_agree (&infos[i]))
        continue;
      a = tach_config_get (from, infos[i].name);
      b = tach_config_get (to, infos[i].name);
      if (g_strcmp0 (a, b) != 0)
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                       _("the two configurations differ in %s (%s and %s): an explanation "
                         "measures execution modes with the same %s; set it alike for both"),
                       infos[i].name, a != NULL ? a : "", b != NULL ? b : "", infos[i].name);
          return NULL;
        }
    }

  /* The execution modes, in the knob table's order. */
  for (guint i = 0; i < n_infos; i++)
    {
      const char *key = infos[i].name;
      g_autofree char *a = NULL, *b = NULL;

      if (!infos[i].is_mode)
        continue;
      a = tach_config_get (from, key);
      b = tach_config_get (to, key);

      /* A knob that matters to neither side changes nothing to measure. */
      if (g_strcmp0 (a, b) == 0)
        continue;
      {
        const char *why = NULL;

        if (!tach_config_knob_applies (from, key, &why)
            && !tach_config_knob_applies (to, key, NULL))
          {
            g_string_append_printf (idle, "%s%s (%s -> %s: %s)", idle->len > 0 ? "; " : "", key,
                                    a != NULL ? a : "", b != NULL ? b : "",
                                    why != NULL ? why : _("it does not apply here"));
            continue;
          }
      }
      keys[n] = key;
      from_values[n] = g_steal_pointer (&a);
      to_values[n] = g_steal_pointer (&b);
      n++;
    }

  if (n == 0 && idle->len > 0)
    {
      /* Differences that matter elsewhere (grad-sync across ranks): say
       * where, rather than that there are none. */
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   _("nothing to explain here: the two configurations differ only in knobs "
                     "that do not apply to this run: %s"), idle->str);
      return NULL;
    }
  explain = tach_explain_new_for_knobs (n, keys, (const char *const *) from_values,
                                        (const char *const *) to_values, NULL, rounds,
                                        from->seed, error);
  for (guint i = 0; i < n; i++)
    {
      g_free (from_values[i]);
      g_free (to_values[i]);
    }
  if (explain == NULL)
    return NULL;

  explain->has_configs = TRUE;
  tach_config_copy (&explain->from, from);
  tach_config_copy (&explain->to, to);
  return explain;
}

const TachConfig *
tach_explain_get_config (TachExplain *explain, gboolean to)
{
  g_return_val_if_fail (explain->has_configs, NULL);
  return to ? &explain->to : &explain->from;
}

void
tach_explain_set_labels (TachExplain *explain, const char *from, const char *to)
{
  g_free (explain->label_from);
  g_free (explain->label_to);
  explain->label_from = g_strdup (from);
  explain->label_to = g_strdup (to);
}

const char *
tach_explain_get_label (TachExplain *explain, gboolean to)
{
  const char *label = to ? explain->label_to : explain->label_from;

  if (label != NULL)
    return label;
  if (explain->has_configs)
    {
      const TachConfig *config = to ? &explain->to : &explain->from;

      if (config->preset != NULL)
        return config->preset;
    }
  return to ? "B" : "A";
}

void
tach_explain_config_for_mask (TachExplain *explain, guint mask, TachConfig *out)
{
  guint full = (1u << explain->n_knobs) - 1;

  g_return_if_fail (explain->has_configs);
  tach_config_copy (out, &explain->from);
  for (guint i = 0; i < explain->n_knobs; i++)
    if (mask & (1u << i))
      {
        g_autoptr(GError) error = NULL;

        /* The value came from tach_config_get() of the same workload. */
        if (!tach_config_set (out, explain->knobs[i].key, explain->knobs[i].to, &error))
          g_warning ("explain: %s", error->message);
      }
  /* Only A and B are presets; a mix of them is not. */
  g_free (out->preset);
  out->preset = mask == 0 ? g_strdup (explain->from.preset)
                : mask == full ? g_strdup (explain->to.preset) : NULL;
}

char *
tach_explain_dup_mask_label (TachExplain *explain, guint mask)
{
  guint full = (1u << explain->n_knobs) - 1;
  g_autoptr(GString) label = NULL;
  const char *sep = " + ";

  if (mask == full)
    return g_strdup (tach_explain_get_label (explain, TRUE));
  label = g_string_new (tach_explain_get_label (explain, FALSE));
  for (guint i = 0; i < explain->n_knobs; i++)
    if (mask & (1u << i))
      {
        g_string_append_printf (label, "%s%s=%s", sep, explain->knobs[i].key,
                                explain->knobs[i].to);
        sep = " ";
      }
  return g_string_free (g_steal_pointer (&label), FALSE);
}

/* ---------------------------------------------------------- real runs */

typedef struct {
  TachExplain    *explain;
  GCancellable   *cancellable;
  char           *device_id;
} RealRuns;

static gboolean
real_check (guint mask, gpointer user_data, GError **error)
{
  RealRuns *real = user_data;
  TachConfig config;
  gboolean ok;

  tach_explain_config_for_mask (real->explain, mask, &config);
  ok = tach_config_validate (&config, real->device_id, error);
  tach_config_clear (&config);
  return ok;
}

/* A run's step time is its median measured step; its phases are their
 * means scaled to add up to that median, so that one slow step moves
 * neither and the phases still sum to the step.  A run of several ranks
 * (rank 0's, which holds every rank's samples once it has ended) counts
 * every rank's steps: its phases are then the ranks' means, the exposed
 * communication, packing and imbalance among them, as runs.csv's shares
 * are. */
static void
cost_from_run (TachRun *run, TachExplainCost *cost)
{
  g_autoptr(GArray) samples = g_array_new (FALSE, FALSE, sizeof (TachSample));
  g_autoptr(GArray) steps = g_array_new (FALSE, FALSE, sizeof (double));
  double phase[TACH_EXPLAIN_N_PHASES] = { 0 };
  double sum = 0;
  guint n, n_ranks = tach_run_get_n_ranks (run);

  for (guint r = 0; r < n_ranks; r++)
    tach_run_copy_rank_samples (run, r, 0, G_MAXUINT, samples);
  for (guint i = 0; i < samples->len; i++)
    {
      const TachSample *s = &g_array_index (samples, TachSample, i);
      const double p[TACH_EXPLAIN_N_PHASES] = {
        s->feed_ms, s->compute_ms, s->sync_ms, s->host_ms, s->comm_ms, s->pack_ms,
        s->imbalance_ms,
      };

      if (s->warmup || !isfinite (s->step_ms))
        continue;
      g_array_append_val (steps, s->step_ms);
      /* NaN where not observed: the ranks' phases in a process alone. */
      for (int k = 0; k < TACH_EXPLAIN_N_PHASES; k++)
        if (isfinite (p[k]))
          phase[k] += p[k];
    }
  n = steps->len;
  memset (cost, 0, sizeof *cost);
  if (n == 0)
    return;
  cost->step_ms = tach_stats_median ((const double *) steps->data, n);
  for (int k = 0; k < TACH_EXPLAIN_N_PHASES; k++)
    sum += phase[k];
  if (sum <= 0)
    {
      cost->phase_ms[TACH_EXPLAIN_PHASE_HOST] = cost->step_ms;
      return;
    }
  for (int k = 0; k < TACH_EXPLAIN_N_PHASES; k++)
    cost->phase_ms[k] = cost->step_ms * phase[k] / sum;
}

static gboolean
real_measure (guint mask, guint round, TachExplainCost *cost, gpointer user_data,
              GError **error)
{
  RealRuns *real = user_data;
  g_autoptr(TachRun) run = NULL;
  g_autoptr(GError) run_error = NULL;
  TachConfig config;

  (void) round;
  if (g_cancellable_set_error_if_cancelled (real->cancellable, error))
    {
      g_clear_error (error);
      g_set_error (error, TACH_ERROR, TACH_ERROR_CANCELLED, _("the explanation was stopped"));
      return FALSE;
    }

  tach_explain_config_for_mask (real->explain, mask, &config);
  run = tach_analysis_run (&config, NULL, real->cancellable, &run_error);
  tach_config_clear (&config);
  if (run != NULL)
    {
      g_autofree char *label = tach_explain_dup_mask_label (real->explain, mask);

      /* Named by what it is, before the CSV and the window read it. */
      tach_run_set_label (run, label);
      g_ptr_array_add (real->explain->runs, tach_run_ref (run));
    }
  if (run_error != NULL)
    {
      g_propagate_error (error, g_steal_pointer (&run_error));
      return FALSE;
    }
  if (tach_run_get_state (run) == TACH_RUN_STATE_CANCELLED)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_CANCELLED, _("the explanation was stopped"));
      return FALSE;
    }

  cost_from_run (run, cost);
  if (!(cost->step_ms > 0))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("the run measured no step: give more {steps} than warm-up steps"));
      tach_error_add_hint (error, TACH_KNOB_STEPS, NULL, TACH_KNOB_STEPS, NULL, NULL);
      return FALSE;
    }
  return TRUE;
}

gboolean
tach_explain_run (TachExplain *explain, GCancellable *cancellable,
                  TachExplainProgress progress, gpointer progress_data, GError **error)
{
  static const TachExplainCostFuncs funcs = { real_check, real_measure };
  g_autoptr(TachDeviceInfo) device = NULL;
  RealRuns real = { explain, cancellable, NULL };
  gboolean ok;

  g_return_val_if_fail (explain->has_configs, FALSE);
  device = tach_device_resolve (explain->from.device != NULL ? explain->from.device : "auto",
                                error);
  if (device == NULL)
    return FALSE;
  real.device_id = device->id;
  g_free (explain->device_id);
  explain->device_id = g_strdup (device->id);
  ok = tach_explain_run_with (explain, &funcs, &real, progress, progress_data, error);
  return ok;
}

/* ------------------------------------------------------------ sentences */

char *
tach_explain_dup_sentence (TachExplain *explain, guint i)
{
  const TachExplainKnob *knob;
  g_autofree char *from = NULL, *to = NULL, *cost = NULL;

  g_return_val_if_fail (i < explain->n_knobs, NULL);
  knob = &explain->knobs[i];
  /* What each value does, from the knob's row, in the shape of the
   * configurations explained (A's: B's shape is the same). */
  from = tach_knob_dup_clause (knob->key, explain->has_configs ? &explain->from : NULL, knob->from);
  to = tach_knob_dup_clause (knob->key, explain->has_configs ? &explain->from : NULL, knob->to);
  if (knob->verdict == TACH_VERDICT_WITHIN_NOISE)
    cost = g_strdup_printf (_("changes the step by %+.3g ms, within noise (%+.3g to %+.3g ms)"),
                            knob->share_ms, knob->share_ci.lo, knob->share_ci.hi);
  else if (isnan (knob->fraction))
    cost = g_strdup_printf (knob->share_ms <= 0 ? _("saves %.3g ms a step")
                                                : _("costs %.3g ms a step"),
                            fabs (knob->share_ms));
  else if (knob->fraction > 1)
    /* More than the whole gap is no finding of its own: the other knobs
     * together pull the other way by the difference. */
    cost = g_strdup_printf (knob->share_ms <= 0
                            ? _("saves %.3g ms a step, more than the whole gap of %.3g ms: "
                                "the other knobs together cost %.3g ms of it back")
                            : _("costs %.3g ms a step, more than the whole gap of %.3g ms: "
                                "the other knobs together save %.3g ms of it"),
                            fabs (knob->share_ms), fabs (explain->gap.value),
                            fabs (knob->share_ms - explain->gap.value));
  else if (knob->fraction < 0)
    cost = g_strdup_printf (knob->share_ms <= 0
                            ? _("saves %.3g ms a step, against the gap of %+.3g ms: the other "
                                "knobs pull the other way by more")
                            : _("costs %.3g ms a step, against the gap of %+.3g ms: the other "
                                "knobs pull the other way by more"),
                            fabs (knob->share_ms), explain->gap.value);
  else
    cost = g_strdup_printf (knob->share_ms <= 0
                            ? _("saves %.3g ms a step (%.0f%% of the gap, %.0f–%.0f%%)")
                            : _("costs %.3g ms a step (%.0f%% of the gap, %.0f–%.0f%%)"),
                            fabs (knob->share_ms), 100.0 * knob->fraction,
                            100.0 * MAX (knob->fraction_ci.lo, 0.0),
                            100.0 * MIN (knob->fraction_ci.hi, 1.0));
  /* TRANSLATORS: "Layout misread -> batch-major saves 44.1 ms a step (80%
   * of the gap): <what misread does>, where <what batch-major does>." */
  return g_strdup_printf (_("%s %s -> %s %s: %s, where %s."), knob->title, knob->from,
                          knob->to, cost, from, to);
}

/* A speed-up's interval, "1.12–1.31x", or in words where the rounds
 * give it no ends: never an infinite end or a "±inf%". */
static char *
dup_ratio_interval (const TachInterval *ratio)
{
  if (!tach_interval_is_known (ratio))
    return g_strdup (_("not known yet: more rounds needed"));
  return g_strdup_printf (_("%.2f–%.2fx"), ratio->lo, ratio->hi);
}

void
tach_explain_side_load (TachExplain *explain, guint mask, TachSummary *out)
{
  g_autofree char *label = NULL;

  /* Read back from explain.csv: its runs are not at hand, what they did
   * was saved. */
  if (explain->sides_saved)
    {
      *out = explain->sides[mask != 0];
      return;
    }
  label = tach_explain_dup_mask_label (explain, mask);
  memset (out, 0, sizeof *out);
  out->machine_busy = out->threads_asked = out->threads_fewest = NAN;
  out->threads_fewer_share = NAN;
  for (guint i = 0; i < explain->runs->len; i++)
    {
      TachRun *run = explain->runs->pdata[i];
      TachSummary s;

      tach_run_get_summary (run, &s);
      if (isfinite (s.machine_busy) && !(s.machine_busy <= out->machine_busy))
        out->machine_busy = s.machine_busy;
      if (g_strcmp0 (tach_run_get_label (run), label) != 0 || !isfinite (s.threads_fewest))
        continue;
      out->threads_asked = s.threads_asked;
      if (!(s.threads_fewest >= out->threads_fewest))
        out->threads_fewest = s.threads_fewest;
      if (!(s.threads_fewer_share <= out->threads_fewer_share))
        out->threads_fewer_share = s.threads_fewer_share;
    }
}

char *
tach_explain_dup_load_caveat (TachExplain *explain)
{
  TachSummary a, b;

  tach_explain_side_load (explain, 0, &a);
  tach_explain_side_load (explain, (1u << explain->n_knobs) - 1, &b);
  return tach_summary_dup_load_caveat (tach_explain_get_label (explain, FALSE), &a,
                                       tach_explain_get_label (explain, TRUE), &b);
}

char *
tach_explain_dup_verdict (TachExplain *explain)
{
  g_autoptr(GString) out = g_string_new (NULL);
  TachInterval ratio;
  TachVerdict verdict = tach_explain_get_speedup (explain, &ratio);
  g_autofree char *interval = dup_ratio_interval (&ratio);
  g_autofree char *caveat = tach_explain_dup_load_caveat (explain);
  const char *la = tach_explain_get_label (explain, FALSE);
  const char *lb = tach_explain_get_label (explain, TRUE);

  if (verdict == TACH_VERDICT_SIGNIFICANT)
    g_string_append_printf (out, _("verdict: %s is %.2fx as fast as %s (95%% interval %s), "
                                   "significant"), lb, ratio.value, la, interval);
  else if (verdict == TACH_VERDICT_WITHIN_NOISE)
    g_string_append_printf (out, _("verdict: ~ %s against %s is %.2fx, within noise (95%% interval "
                                   "%s)"), lb, la, ratio.value, interval);
  else
    g_string_append_printf (out, _("verdict: %s against %s is %.2fx; its interval is %s"),
                            lb, la, ratio.value, interval);
  if (caveat != NULL)
    g_string_append_printf (out, "; %s", caveat);
  return g_string_free (g_steal_pointer (&out), FALSE);
}

/* The rounds an interval @shrink times too wide needs: rounds narrow it
 * as their square root.  0 where it cannot say. */
static guint
rounds_for (TachExplain *explain, double shrink)
{
  if (!isfinite (shrink) || shrink <= 1)
    return 0;
  return (guint) MIN (ceil (shrink * shrink * explain->rounds), 1e6);
}

/* What ended the rounds with something unresolved, and what would take
 * it further: about @needed rounds in all. */
static void
append_stop_reason (TachExplain *explain, GString *out, guint needed)
{
  double more_s = (needed - MIN (needed, explain->min_rounds)) * explain->round_s;

  if (out->len > 0)
    g_string_append_c (out, '\n');
  if (explain->rounds >= TACH_EXPLAIN_MAX_ROUNDS)
    g_string_append_printf (out, _("The rounds stopped at the most there may be (%u); about %u "
                                   "would resolve it."),
                            (guint) TACH_EXPLAIN_MAX_ROUNDS, needed);
  else if (explain->budget_ended && explain->round_s > 0)
    g_string_append_printf (out, _("The budget of %.0f s for rounds after the %u given ended them, "
                                   "not the target: about %u rounds would resolve it (--rounds %u, "
                                   "or --budget %.0f at %.0f s a round)."),
                            explain->budget_s, explain->min_rounds, needed,
                            MIN (needed, (guint) TACH_EXPLAIN_MAX_ROUNDS), ceil (more_s),
                            explain->round_s);
  else
    g_string_append_printf (out, _("About %u rounds would resolve it (--rounds %u)."),
                            needed, MIN (needed, (guint) TACH_EXPLAIN_MAX_ROUNDS));
}

char *
tach_explain_dup_unresolved (TachExplain *explain)
{
  g_autoptr(GString) out = g_string_new (NULL);
  guint needed = 0;
  TachInterval gap, ratio;
  TachVerdict verdict = tach_explain_get_gap (explain, &gap);
  g_autofree char *interval = NULL;

  tach_explain_get_speedup (explain, &ratio);
  interval = dup_ratio_interval (&ratio);
  if (verdict != TACH_VERDICT_SIGNIFICANT)
    {
      double shrink = tach_interval_shrink_needed (&ratio, 1);

      if (isfinite (shrink))
        /* Rounds needed grow as the square of the narrowing. */
        g_string_append_printf (out, _("The gap is not resolved: %+.3f ms, 95%% interval %+.3f to "
                                       "%+.3f ms, within noise. Its interval would have to be "
                                       "%.1f times narrower (about %.0f rounds instead of %u) "
                                       "to tell this gap from no change; until then no share "
                                       "is a fraction of it."),
                                gap.value, gap.lo, gap.hi, shrink,
                                ceil (shrink * shrink * explain->rounds), explain->rounds);
      else
        g_string_append_printf (out, _("The gap is not resolved: %+.3f ms, and its rounds give "
                                       "no interval; no share is a fraction of it."),
                                gap.value);
    }
  if (!explain->gap_resolved && tach_interval_is_known (&ratio))
    g_string_append_printf (out, _("%sUnresolved after %u rounds: B's speed-up %.2fx is known "
                                   "to ±%.1f%% (%s), not the ±%.0f%% asked."),
                            out->len > 0 ? "\n" : "", explain->rounds, ratio.value,
                            100.0 * tach_interval_rel_halfwidth (&ratio), interval,
                            100.0 * explain->target);
  else if (!explain->gap_resolved)
    g_string_append_printf (out, _("%sUnresolved after %u rounds: B's speed-up %.2fx is %s."),
                            out->len > 0 ? "\n" : "", explain->rounds, ratio.value, interval);
  needed = explain->gap_resolved ? 0
           : rounds_for (explain, tach_interval_rel_halfwidth (&ratio) / explain->target);
  for (guint i = 0; i < explain->n_knobs; i++)
    {
      const TachExplainKnob *knob = &explain->knobs[i];

      if (knob->resolved)
        continue;
      needed = MAX (needed, rounds_for (explain, 0.5 * (knob->share_ci.hi - knob->share_ci.lo)
                                                 / (2 * explain->target * fabs (gap.value))));
      g_string_append_printf (out, _("%sUnresolved after %u rounds: the share of %s, %+.3f ms, "
                                     "is known to ±%.3f ms, not the ±%.3f ms (%.0f%% of the gap) "
                                     "asked."),
                              out->len > 0 ? "\n" : "", explain->rounds, knob->title,
                              knob->share_ms, 0.5 * (knob->share_ci.hi - knob->share_ci.lo),
                              2 * explain->target * fabs (gap.value), 200.0 * explain->target);
    }
  if (needed > 0)
    append_stop_reason (explain, out, needed);
  if (out->len == 0)
    return NULL;
  return g_string_free (g_steal_pointer (&out), FALSE);
}

/* ------------------------------------------------------------ queries */

gboolean
tach_explain_has_rank_phases (TachExplain *explain)
{
  if (!explain->done)
    return FALSE;
  for (int p = TACH_EXPLAIN_N_SINGLE_PHASES; p < TACH_EXPLAIN_N_PHASES; p++)
    {
      if (explain->cost_from.phase_ms[p] != 0 || explain->cost_to.phase_ms[p] != 0)
        return TRUE;
      for (guint i = 0; i < explain->n_knobs; i++)
        if (explain->knobs[i].phase_ms[p] != 0)
          return TRUE;
    }
  return FALSE;
}

double
tach_explain_get_machine_busy (TachExplain *explain)
{
  double sum = 0;
  guint n = 0;

  for (guint i = 0; i < explain->runs->len; i++)
    {
      TachSummary s;

      tach_run_get_summary (explain->runs->pdata[i], &s);
      if (isfinite (s.machine_busy))
        {
          sum += s.machine_busy;
          n++;
        }
    }
  return n > 0 ? sum / n : NAN;
}
