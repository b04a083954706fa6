/* tach-explain-live.c: an explanation's figures while it runs.
 *
 * A window shows the waterfall as rounds complete, not only at the end.
 * The running explanation belongs to the thread that measures it, so what
 * is shown is a copy: the plan and the measured costs of the whole rounds
 * so far, with the shares, intervals and verdicts computed over them
 * exactly as the end computes them over every round.  The copy is made on
 * the measuring thread (from the progress callback) and handed over whole.
 */
#include <string.h>

#include "tach-explain-private.h"

static void
copy_failure (TachExplainFailure *to, const TachExplainFailure *from)
{
  to->mask = from->mask;
  to->name = g_strdup (from->name);
  to->reason = g_strdup (from->reason);
}

TachExplain *
tach_explain_dup_so_far (TachExplain *explain, guint rounds)
{
  g_autofree gboolean *known_bad = NULL;
  TachExplain *copy;
  guint n_masks;

  g_return_val_if_fail (explain != NULL, NULL);
  n_masks = explain->masks->len;
  /* A paired interval needs 2 rounds; the plan is drawn at the start. */
  if (rounds < 2 || n_masks == 0 || explain->costs == NULL || rounds > explain->rounds)
    return NULL;

  copy = g_new0 (TachExplain, 1);
  copy->n_knobs = explain->n_knobs;
  copy->knobs = g_new0 (TachExplainKnob, explain->n_knobs);
  for (guint i = 0; i < explain->n_knobs; i++)
    {
      const TachExplainKnob *from = &explain->knobs[i];
      TachExplainKnob *to = &copy->knobs[i];

      to->key = g_strdup (from->key);
      to->title = g_strdup (from->title);
      to->from = g_strdup (from->from);
      to->to = g_strdup (from->to);
      to->changes_results = from->changes_results;
    }
  copy->rounds = rounds;
  copy->min_rounds = explain->min_rounds;
  copy->budget_s = explain->budget_s;
  copy->target = explain->target;
  copy->seed = explain->seed;
  copy->exact = explain->exact;

  copy->n_orderings = explain->n_orderings;
  copy->orderings = g_memdup2 (explain->orderings,
                               (gsize) explain->n_orderings * explain->n_knobs * sizeof (guint));
  copy->ordering_ok = g_new0 (gboolean, MAX (explain->n_orderings, 1));
  copy->masks = g_array_copy (explain->masks);
  copy->slot = g_memdup2 (explain->slot, ((gsize) 1 << explain->n_knobs) * sizeof (guint));
  copy->failed = g_memdup2 (explain->failed, n_masks * sizeof (gboolean));
  copy->costs = g_memdup2 (explain->costs, (gsize) rounds * n_masks * sizeof (TachExplainCost));
  copy->failures = g_array_new (FALSE, TRUE, sizeof (TachExplainFailure));
  g_array_set_clear_func (copy->failures, tach_explain_failure_clear);
  for (guint i = 0; i < explain->failures->len; i++)
    {
      TachExplainFailure failure;

      copy_failure (&failure, &g_array_index (explain->failures, TachExplainFailure, i));
      g_array_append_val (copy->failures, failure);
    }
  copy->runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  copy->label_from = g_strdup (tach_explain_get_label (explain, FALSE));
  copy->label_to = g_strdup (tach_explain_get_label (explain, TRUE));

  /* What is known not to run, by mask, as the run knows it. */
  known_bad = g_new0 (gboolean, (gsize) 1 << explain->n_knobs);
  for (guint i = 0; i < n_masks; i++)
    known_bad[g_array_index (explain->masks, guint, i)] = explain->failed[i];
  if (!tach_explain_update_shares (copy, known_bad))
    {
      tach_explain_free (copy);
      return NULL;
    }
  return copy;
}
