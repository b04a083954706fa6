/* tach-window-compare.c: Compare Presets: every preset of the workload in
 * shuffled rounds, as tach-cli sweep --presets all runs them.
 *
 * The runs are the window's own (live in the charts and the run table),
 * one at a time on the main loop through its queue; the grid, each
 * round's shuffled order and the runs by round are the engine's sweep
 * (tach-sweep.h), and the verdicts and when to stop are its rounds
 * (TachSweepRounds, tach-cli's defaults): after each round its rates are
 * recorded, the Compare view's rows become each preset's run nearest its
 * median with the speed-up paired by round, and another round is queued
 * while a speed-up misses the target and the next round fits the budget.
 * Stop ends it keeping the rounds measured.
 *
 * TachWindow is one class written in parts by concern (tach-window.c and
 * its six tach-window-*.c, over tach-window-private.h): the parts call one
 * another as one unit, which tools/folder-arrows.py lists.  */
#include "tach-window-private.h"
#include "tach-sweep.h"

#include <glib/gi18n.h>
#include <math.h>

struct _TachWindowCompare {
  guint            min_rounds;  /* tach-cli's --rounds, --budget, --target */
  double           budget_s, target;
  TachSweep       *sweep;       /* the running or last comparison, or NULL */
  TachSweepRounds *rounds;
  TachRunObject  **shown;       /* [preset]: owned ref or NULL, the row of each */
  GPtrArray       *objects;     /* TachRunObject*, owned: every round's */
  guint            round;       /* 0-based: the round queued last */
  gint64           start_us;    /* monotonic: the first round began */
  gboolean         running;
};

TachWindowCompare *
tach_window_compare_new (void)
{
  TachWindowCompare *c = g_new0 (TachWindowCompare, 1);

  c->min_rounds = TACH_SWEEP_DEFAULT_ROUNDS;
  c->budget_s = TACH_SWEEP_DEFAULT_BUDGET_S;
  c->target = TACH_SWEEP_DEFAULT_TARGET;
  c->objects = g_ptr_array_new_with_free_func (g_object_unref);
  return c;
}

static void
compare_clear (TachWindowCompare *c)
{
  guint np = c->sweep != NULL ? tach_sweep_get_n_presets (c->sweep) : 0;

  for (guint p = 0; p < np; p++)
    g_clear_object (&c->shown[p]);
  g_clear_pointer (&c->shown, g_free);
  g_clear_pointer (&c->sweep, tach_sweep_free);
  g_clear_pointer (&c->rounds, tach_sweep_rounds_free);
  g_ptr_array_set_size (c->objects, 0);
  c->running = FALSE;
}

void
tach_window_compare_free (TachWindowCompare *c)
{
  if (c == NULL)
    return;
  compare_clear (c);
  g_ptr_array_unref (c->objects);
  g_free (c);
}

void
tach_window_set_rounds (TachWindow *self, guint min_rounds, double budget_s, double target)
{
  g_return_if_fail (TACH_IS_WINDOW (self));
  self->compare->min_rounds = MAX (min_rounds, 1);
  self->compare->budget_s = MAX (budget_s, 0.0);
  self->compare->target = target > 0 ? target : TACH_SWEEP_DEFAULT_TARGET;
  tach_scaling_view_set_rounds (self->scaling_view, min_rounds, budget_s, target);
  tach_explain_view_set_rounds (self->explain_view, min_rounds, budget_s, target);
}

/* Queues round @round's points in the sweep's next (shuffled) order. */
static void
queue_round (TachWindow *self, guint round)
{
  TachWindowCompare *c = self->compare;
  guint n = tach_sweep_get_n_points (c->sweep);
  g_autofree guint *order = g_new (guint, n);

  c->round = round;
  tach_sweep_next_order (c->sweep, order);
  for (guint j = 0; j < n; j++)
    {
      const TachConfig *config = tach_sweep_get_config (c->sweep, order[j]);
      TachQueuedRun *queued;

      if (config == NULL || tach_sweep_get_problem (c->sweep, order[j]) != NULL)
        continue;
      queued = g_new0 (TachQueuedRun, 1);
      tach_config_copy (&queued->config, config);
      queued->in_sweep = TRUE;
      queued->point = (int) order[j];
      queued->round = round;
      g_queue_push_tail (&self->queue, queued);
    }
}

/* Shows @object in preset @preset's row of the comparison, the rows in
 * the presets' order. */
static void
show_row (TachWindow *self, guint preset, TachRunObject *object)
{
  TachWindowCompare *c = self->compare;
  guint position = 0;

  for (guint p = 0; p < preset; p++)
    position += c->shown[p] != NULL;
  if (c->shown[preset] == object)
    return;
  g_list_store_splice (self->sweep, position, c->shown[preset] != NULL ? 1 : 0,
                       (gpointer *) &object, 1);
  g_set_object (&c->shown[preset], object);
}

void
tach_window_compare_started (TachWindow *self, const TachQueuedRun *queued,
                             TachRunObject *object)
{
  TachWindowCompare *c = self->compare;

  if (c->sweep == NULL || queued->point < 0)
    return;
  tach_sweep_set_run (c->sweep, queued->point, queued->round, tach_run_object_get_run (object));
  g_ptr_array_add (c->objects, g_object_ref (object));
  /* The row follows the run in progress, live; at the round's end it
   * shows the run nearest the median again. */
  show_row (self, queued->point, object);
}

static TachRunObject *
object_of_run (TachWindowCompare *c, TachRun *run)
{
  for (guint i = 0; i < c->objects->len && run != NULL; i++)
    if (tach_run_object_get_run (c->objects->pdata[i]) == run)
      return c->objects->pdata[i];
  return NULL;
}

/* The rows after round @round: each preset's run nearest its median, the
 * speed-up paired by round, and @line above them. */
static void
show_round (TachWindow *self, guint round, const char *line)
{
  TachWindowCompare *c = self->compare;
  TachRunObject *first = object_of_run (c, tach_sweep_rounds_pick_run (c->rounds, c->sweep, 0));
  g_autoptr(GString) text = g_string_new (line);

  tach_sweep_rounds_record_round (c->rounds, c->sweep, round);
  for (guint p = 0; p < tach_sweep_get_n_presets (c->sweep); p++)
    {
      TachRunObject *object = object_of_run (c, tach_sweep_rounds_pick_run (c->rounds, c->sweep, p));
      int k = tach_sweep_rounds_point_comparison (c->sweep, p);
      TachInterval ratio;

      if (object == NULL)
        continue;
      show_row (self, p, object);
      if (k >= 0 && tach_sweep_get_rounds_run (c->sweep) >= 2
          && tach_sweep_rounds_get_ratio (c->rounds, k, &ratio) != TACH_VERDICT_UNKNOWN)
        {
          tach_compare_view_set_paired (self->compare_view, object, &ratio);
          /* The run table gives the same figure for the pair. */
          tach_run_object_set_paired (object, first, &ratio);
        }
      /* Runs that lost threads, or a busy machine: said where the figure
       * is shown, as the CLI's table says it. */
      if (first != NULL && object != first)
        {
          TachSummary a, b;
          g_autofree char *caveat = NULL;

          tach_run_get_summary (tach_run_object_get_run (first), &a);
          tach_run_get_summary (tach_run_object_get_run (object), &b);
          caveat = tach_summary_dup_load_caveat (tach_sweep_get_preset (c->sweep, 0), &a,
                                                 tach_sweep_get_preset (c->sweep, p), &b);
          if (caveat != NULL)
            g_string_append_printf (text, "%s%s", text->len > 0 ? "\n" : "", caveat);
        }
    }
  tach_compare_view_set_rounds_text (self->compare_view, text->len > 0 ? text->str : NULL);
}

/* The comparison is over: what stayed unresolved, or that it was stopped. */
static void
show_outcome (TachWindow *self, gboolean stopped)
{
  TachWindowCompare *c = self->compare;
  guint rounds = tach_sweep_get_rounds_run (c->sweep);
  g_autofree char *line = NULL;

  c->running = FALSE;
  if (rounds == 0)
    return;
  line = tach_sweep_rounds_dup_outcome (c->rounds, c->sweep, stopped);
  show_round (self, rounds - 1, line);
}

void
tach_window_compare_run_finished (TachWindow *self, TachRunObject *run)
{
  TachWindowCompare *c = self->compare;
  double spent;

  if (!c->running || g_ptr_array_find (c->objects, run, NULL) == FALSE)
    return;
  if (tach_run_object_get_state (run) == TACH_RUN_STATE_CANCELLED)
    {
      show_outcome (self, TRUE);
      return;
    }
  if (!g_queue_is_empty (&self->queue))
    return;
  /* A round is over. */
  spent = (g_get_monotonic_time () - c->start_us) / 1e6;
  tach_sweep_rounds_record_round (c->rounds, c->sweep, c->round);
  if (tach_sweep_rounds_want_more (c->rounds, c->round + 1, spent))
    {
      g_autofree char *line = tach_sweep_rounds_dup_progress (c->rounds, c->round + 2,
                                                              c->round + 1, spent);

      show_round (self, c->round, line);
      queue_round (self, c->round + 1);
    }
  else
    show_outcome (self, FALSE);
}

/* Queues every preset of the current workload, with the panel's other
 * settings (batch, steps, seed, device), in rounds, and shows the
 * comparison. */
gboolean
tach_window_compare_presets (TachWindow  *self,
                             GError     **error)
{
  const TachConfig *base = tach_config_panel_get_config (self->config_panel);
  /* The window runs one process: not the data-parallel presets. */
  g_autoptr(GPtrArray) presets = tach_presets_for_ranks (base->workload, base->ranks);
  g_autoptr(GStrvBuilder) builder = g_strv_builder_new ();
  g_auto(GStrv) names = NULL;
  TachWindowCompare *c = self->compare;
  TachSweep *sweep;

  g_return_val_if_fail (TACH_IS_WINDOW (self), FALSE);

  if (tach_window_get_running (self))
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                           _("A run is already in progress: stop it first"));
      return FALSE;
    }
  if (presets->len == 0)
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                           _("The workload has no presets to compare"));
      return FALSE;
    }
  for (guint i = 0; i < presets->len; i++)
    g_strv_builder_add (builder, ((const TachPreset *) g_ptr_array_index (presets, i))->name);
  names = g_strv_builder_end (builder);
  /* Made up front: a preset that cannot be made is said before any runs. */
  sweep = tach_sweep_new (base, (const char *const *) names, NULL, NULL, NULL, FALSE);
  for (guint i = 0; i < presets->len; i++)
    if (tach_sweep_get_problem (sweep, i) != NULL)
      {
        g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG, "%s: %s", names[i],
                     tach_sweep_get_problem (sweep, i));
        tach_sweep_free (sweep);
        return FALSE;
      }

  g_queue_clear_full (&self->queue, (GDestroyNotify) tach_window_queued_run_free);
  compare_clear (c);
  c->sweep = sweep;
  c->shown = g_new0 (TachRunObject *, presets->len);
  c->rounds = tach_sweep_rounds_new_for_sweep (sweep, c->min_rounds, c->budget_s, c->target);
  /* One pass without a budget keeps the order given, as tach-cli's. */
  if (c->min_rounds > 1 || c->budget_s > 0)
    tach_sweep_set_shuffle (sweep, base->seed);
  c->running = TRUE;
  c->start_us = g_get_monotonic_time ();
  queue_round (self, 0);

  g_list_store_remove_all (self->sweep);
  tach_compare_view_clear_rounds (self->compare_view);
  {
    g_autofree char *line = tach_sweep_rounds_dup_progress (c->rounds, 1, 0, 0);

    tach_compare_view_set_rounds_text (self->compare_view, line);
  }
  adw_view_stack_set_visible_child_name (self->view_stack, "compare");
  tach_window_job_started (self, TRUE);
  return tach_window_start_next (self, error);
}
