/* tach-explain-query.c: what an explanation says of itself: its knobs,
 * rounds, gap, costs, speed-up, orderings, failures and runs, read by the
 * CLI, the window and the CSV writer (tach-explain.c measures and computes
 * them).
 *
 * Threads: whichever thread owns the explanation.
 */
#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-explain-private.h"
#include "tach-stats.h"

guint
tach_explain_get_n_knobs (TachExplain *explain)
{
  return explain->n_knobs;
}

const TachExplainKnob *
tach_explain_get_knob (TachExplain *explain, guint i)
{
  g_return_val_if_fail (i < explain->n_knobs, NULL);
  return &explain->knobs[i];
}

guint
tach_explain_get_rounds (TachExplain *explain)
{
  return explain->rounds;
}

void
tach_explain_set_budget (TachExplain *explain, double budget_s, double target)
{
  explain->budget_s = MAX (budget_s, 0.0);
  explain->target = target > 0 ? target : TACH_EXPLAIN_DEFAULT_TARGET;
}

TachVerdict
tach_explain_get_gap (TachExplain *explain, TachInterval *gap)
{
  /* The comparison's one verdict, the speed-up's. */
  *gap = explain->gap;
  return tach_interval_verdict (&explain->speedup, 1);
}

void
tach_explain_get_cost_ci (TachExplain *explain, gboolean to, TachInterval *ci)
{
  *ci = to ? explain->to_ci : explain->from_ci;
}

gboolean
tach_explain_is_partial (TachExplain *explain)
{
  return explain->partial;
}

TachVerdict
tach_explain_get_speedup (TachExplain *explain, TachInterval *ratio)
{
  *ratio = explain->speedup;
  return tach_interval_verdict (ratio, 1);
}

gboolean
tach_explain_is_resolved (TachExplain *explain)
{
  if (!explain->gap_resolved)
    return FALSE;
  for (guint i = 0; i < explain->n_knobs; i++)
    if (!explain->knobs[i].resolved)
      return FALSE;
  return TRUE;
}

gboolean
tach_explain_is_exact (TachExplain *explain)
{
  return explain->exact;
}

guint
tach_explain_get_n_configs (TachExplain *explain)
{
  if (explain->masks->len > 0)
    return explain->masks->len;
  if (explain->exact)
    return 1u << explain->n_knobs;
  return MIN (1u << explain->n_knobs,
              2 + TACH_EXPLAIN_SAMPLED_ORDERINGS * (explain->n_knobs - 1));
}

const TachExplainCost *
tach_explain_get_cost (TachExplain *explain, gboolean to)
{
  return to ? &explain->cost_to : &explain->cost_from;
}

void
tach_explain_get_gap_range (TachExplain *explain, double *min_ms, double *max_ms)
{
  *min_ms = explain->gap_min;
  *max_ms = explain->gap_max;
}

void
tach_explain_get_cost_range (TachExplain *explain, gboolean to, double *min_ms, double *max_ms)
{
  *min_ms = to ? explain->to_min : explain->from_min;
  *max_ms = to ? explain->to_max : explain->from_max;
}

void
tach_explain_get_orderings (TachExplain *explain, guint *used, guint *drawn)
{
  if (used != NULL)
    *used = explain->orderings_used;
  if (drawn != NULL)
    *drawn = explain->n_orderings;
}

GArray *
tach_explain_get_failures (TachExplain *explain)
{
  return explain->failures;
}

GPtrArray *
tach_explain_get_runs (TachExplain *explain)
{
  return explain->runs;
}

char *
tach_explain_describe_mask (TachExplain *explain, guint mask)
{
  g_autoptr(GString) out = g_string_new (NULL);

  for (guint i = 0; i < explain->n_knobs; i++)
    if (mask & (1u << i))
      g_string_append_printf (out, "%s%s=%s", out->len > 0 ? " " : "",
                              explain->knobs[i].key, explain->knobs[i].to);
  if (out->len == 0)
    return g_strdup (_("A (the starting configuration)"));
  return g_string_free (g_steal_pointer (&out), FALSE);
}
