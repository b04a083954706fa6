/* tach-explain-view.c: the Explain part of the Compare view.
 *
 * The measurement blocks for as long as its runs take, so it runs in a
 * GTask thread that gets copied configurations and a cancellable; each of
 * its runs makes its own engine thread.  Progress is two atomics that the
 * worker writes and a coalesced idle reads.  After each whole round from
 * the second on, the worker also leaves a copy of the figures so far
 * (tach_explain_dup_so_far) in a slot that the same idle empties, so the
 * waterfall and its intervals grow, marked provisional, as rounds
 * complete.  The result is posted when the task completes, and a result
 * (or a copy) from an explanation that was replaced is dropped by
 * generation number.  Errors go to the window as the "error"
 * signal, which shows them the way Compare's are shown.
 */
#include "tach-explain-view.h"
#include "tach-a11y.h"

#include "tach-export-chooser.h"
#include "tach-sweep.h"
#include "tach-task-view.h"

#include <glib/gi18n.h>
#include <math.h>

struct _TachExplainView
{
  GtkWidget               parent_instance;

  GtkWidget              *box;
  GtkDropDown            *from_choice, *to_choice;
  GtkStringList          *presets;
  GtkButton              *button;
  GtkMenuButton          *export_button;
  GtkProgressBar         *progress;
  GtkLabel               *progress_text; /* the rounds line, under the row: it wraps */
  TachExplainChart       *chart;
  GtkLabel               *summary;
  GtkLabel               *text;

  TachExplainViewBaseFunc base_func;
  gpointer                base_data;
  TachWorkload            workload;

  TachExplain            *explain;     /* owned: the last finished one */
  char                   *source;      /* owned: the explain.csv it was read from, or NULL */
  TachExplain            *live;        /* owned: the running one's rounds so far, shown */
  gpointer                live_slot;   /* atomic: a LiveFigures the worker left, or NULL */
  GCancellable           *cancellable; /* the running one's, or NULL */
  guint                   generation;
  gint                    done, total; /* atomic, written by the worker */
  gint                    rounds_done; /* atomic: whole rounds measured */
  gint                    widest;      /* atomic: the speed-up's +- in 1/10000, or -1 */
  gint                    idle_pending; /* atomic */
  gint64                  start_us;    /* monotonic: the measuring began */
  guint                   min_rounds;  /* tach-cli's --rounds, --budget and --target */
  double                  budget_s, target;
};

G_DEFINE_FINAL_TYPE (TachExplainView, tach_explain_view, GTK_TYPE_WIDGET)

enum { PROP_0, PROP_RUNNING };
static GParamSpec *running_pspec;
static guint signals[TACH_TASK_VIEW_N_SIGNALS];

gboolean
tach_explain_view_get_running (TachExplainView *self)
{
  return self->cancellable != NULL;
}

TachExplain *
tach_explain_view_get_explain (TachExplainView *self)
{
  return self->explain;
}

TachExplain *
tach_explain_view_get_live (TachExplainView *self)
{
  return self->live;
}

TachExplainChart *
tach_explain_view_get_chart (TachExplainView *self)
{
  return self->chart;
}

const char *
tach_explain_view_get_text (TachExplainView *self)
{
  return gtk_label_get_text (self->text);
}

void
tach_explain_view_set_rounds (TachExplainView *self, guint min_rounds, double budget_s,
                              double target)
{
  self->min_rounds = MAX (min_rounds, TACH_EXPLAIN_MIN_ROUNDS);
  self->budget_s = MAX (budget_s, 0.0);
  self->target = target > 0 ? target : TACH_EXPLAIN_DEFAULT_TARGET;
}

void
tach_explain_view_set_base_func (TachExplainView *self, TachExplainViewBaseFunc func,
                                 gpointer user_data)
{
  self->base_func = func;
  self->base_data = user_data;
  tach_explain_view_refresh_presets (self);
}

void
tach_explain_view_refresh_presets (TachExplainView *self)
{
  const TachConfig *base = self->base_func != NULL ? self->base_func (self->base_data) : NULL;
  g_autoptr(GPtrArray) presets = NULL;
  guint n_old;

  if (base == NULL || (base->workload == self->workload
                       && g_list_model_get_n_items (G_LIST_MODEL (self->presets)) > 0))
    return;
  self->workload = base->workload;
  presets = tach_presets_for_workload (base->workload);
  n_old = g_list_model_get_n_items (G_LIST_MODEL (self->presets));
  {
    g_autoptr(GStrvBuilder) builder = g_strv_builder_new ();
    g_auto(GStrv) names = NULL;

    for (guint i = 0; i < presets->len; i++)
      g_strv_builder_add (builder, ((const TachPreset *) g_ptr_array_index (presets, i))->name);
    names = g_strv_builder_end (builder);
    gtk_string_list_splice (self->presets, 0, n_old, (const char *const *) names);
  }
  /* The report's case first, the fastest correct one last. */
  gtk_drop_down_set_selected (self->from_choice, 0);
  gtk_drop_down_set_selected (self->to_choice, presets->len > 0 ? presets->len - 1 : 0);
}

gboolean
tach_explain_view_set_presets (TachExplainView *self, const char *from, const char *to)
{
  guint n = g_list_model_get_n_items (G_LIST_MODEL (self->presets));
  guint a = G_MAXUINT, b = G_MAXUINT;

  tach_explain_view_refresh_presets (self);
  for (guint i = 0; i < n; i++)
    {
      const char *name = gtk_string_list_get_string (self->presets, i);

      if (g_strcmp0 (name, from) == 0)
        a = i;
      if (g_strcmp0 (name, to) == 0)
        b = i;
    }
  if (a == G_MAXUINT || b == G_MAXUINT)
    return FALSE;
  gtk_drop_down_set_selected (self->from_choice, a);
  gtk_drop_down_set_selected (self->to_choice, b);
  return TRUE;
}

static void
update_state (TachExplainView *self)
{
  gboolean running = self->cancellable != NULL;

  /* win.explain waits for a run to end, as Compare does. */
  tach_task_button_update (self->button, self->progress, running, _("_Explain"), "win.explain");
  gtk_widget_set_visible (GTK_WIDGET (self->progress_text), running);
  gtk_widget_set_sensitive (GTK_WIDGET (self->from_choice), !running);
  gtk_widget_set_sensitive (GTK_WIDGET (self->to_choice), !running);
  gtk_widget_set_sensitive (GTK_WIDGET (self->export_button), !running && self->explain != NULL);
  g_object_notify_by_pspec (G_OBJECT (self), running_pspec);
}

/* What the chart shows, in words: the check, the method, and a sentence
 * per knob with more than a tenth of the gap.  @provisional: the rounds so
 * far of a running explanation, said to be so, with nothing yet called
 * unresolved. */
static void
show_explain (TachExplainView *self, TachExplain *explain, gboolean provisional)
{
  g_autoptr(GString) summary = g_string_new (NULL);
  g_autoptr(GString) text = g_string_new (NULL);
  const TachExplainCost *a = tach_explain_get_cost (explain, FALSE);
  const TachExplainCost *b = tach_explain_get_cost (explain, TRUE);
  GArray *failures = tach_explain_get_failures (explain);
  double sum = 0, lo, hi;
  guint used = 0, drawn = 0;

  for (guint i = 0; i < tach_explain_get_n_knobs (explain); i++)
    {
      const TachExplainKnob *knob = tach_explain_get_knob (explain, i);

      sum += knob->share_ms;
      /* Findings only: a share within noise is none, and a share of a gap
       * within noise is no fraction of it. */
      if (knob->verdict == TACH_VERDICT_SIGNIFICANT && !isnan (knob->fraction)
          && fabs (knob->fraction) > 0.10)
        {
          g_autofree char *sentence = tach_explain_dup_sentence (explain, i);

          g_string_append_printf (text, "%s%s", text->len > 0 ? "\n" : "", sentence);
        }
    }
  tach_explain_get_gap_range (explain, &lo, &hi);
  tach_explain_get_orderings (explain, &used, &drawn);
  g_string_append_printf (summary, _("The shares sum to %+.2f ms; the measured gap is %+.2f ms "
                                     "(rounds %+.2f to %+.2f ms)."),
                          sum, b->step_ms - a->step_ms, lo, hi);
  g_string_append (summary, " ");
  if (tach_explain_is_exact (explain))
    g_string_append_printf (summary, _("Exact Shapley values over %u configurations, %u rounds."),
                            tach_explain_get_n_configs (explain), tach_explain_get_rounds (explain));
  else
    g_string_append_printf (summary, _("Sampled Shapley values: %u random orderings, %u configurations, %u rounds."),
                            drawn, tach_explain_get_n_configs (explain), tach_explain_get_rounds (explain));
  if (used < drawn)
    g_string_append_printf (summary, _(" %u of %u orderings run at every step."), used, drawn);
  for (guint i = 0; i < failures->len; i++)
    {
      const TachExplainFailure *f = &g_array_index (failures, TachExplainFailure, i);

      g_string_append_printf (summary, "\n");
      g_string_append_printf (summary, _("Could not run %s: %s"), f->name, f->reason);
    }
  {
    g_autofree char *verdict = tach_explain_dup_verdict (explain);
    g_autofree char *unresolved = tach_explain_dup_unresolved (explain);

    g_string_append_printf (summary, "\n%s", verdict);
    if (provisional)
      {
        guint rounds = tach_explain_get_rounds (explain);

        g_string_append_c (summary, '\n');
        g_string_append_printf (summary,
                                ngettext ("Provisional: the figures of %u round so far; they "
                                          "change as rounds complete.",
                                          "Provisional: the figures of %u rounds so far; they "
                                          "change as rounds complete.", rounds), rounds);
      }
    else if (tach_explain_is_partial (explain))
      g_string_append_printf (summary, "\n%s",
                              _("Stopped: the figures are those of the whole rounds measured "
                                "before the stop."));
    if (unresolved != NULL && !provisional)
      g_string_append_printf (summary, "\n%s", unresolved);
    if (explain == self->explain && self->source != NULL)
      {
        g_string_append_c (summary, '\n');
        /* Translators: an explanation read from a results folder's file. */
        g_string_append_printf (summary, _("Read from %s."), self->source);
      }
  }
  gtk_label_set_text (self->summary, summary->str);
  gtk_label_set_text (self->text, text->str);
  tach_explain_chart_set_explain (self->chart, explain);
  tach_explain_chart_set_provisional (self->chart, provisional);
}

static void
show_result (TachExplainView *self)
{
  show_explain (self, self->explain, FALSE);
}

/* ---------------------------------------------------------------- worker */

typedef struct {
  TachExplainView *view;   /* owned ref */
  guint            generation;
} ProgressIdle;

/* The figures so far of explanation @generation, from the worker. */
typedef struct {
  TachExplain *explain;    /* owned */
  guint        generation;
} LiveFigures;

static void
live_figures_free (LiveFigures *live)
{
  if (live == NULL)
    return;
  tach_explain_free (live->explain);
  g_free (live);
}

/* Empties the worker's slot: what it held, or NULL. */
static LiveFigures *
take_live (TachExplainView *self)
{
  return g_atomic_pointer_exchange (&self->live_slot, NULL);
}

static gboolean
on_progress_idle (gpointer data)
{
  ProgressIdle *idle = data;
  TachExplainView *self = idle->view;

  g_atomic_int_set (&self->idle_pending, 0);
  if (idle->generation == self->generation && self->cancellable != NULL)
    {
      int done = g_atomic_int_get (&self->done), total = g_atomic_int_get (&self->total);
      int rounds = g_atomic_int_get (&self->rounds_done), widest = g_atomic_int_get (&self->widest);
      g_autofree char *line =
        tach_rounds_dup_progress (rounds + 1, self->min_rounds, self->budget_s, self->target,
                                  rounds, (g_get_monotonic_time () - self->start_us) / 1e6,
                                  widest >= 0 ? widest / 1e4 : NAN);
      /* Translators: the rounds line, then configurations measured. */
      g_autofree char *label = g_strdup_printf (_("%s · %d of %d configurations measured"),
                                                line, done, total);

      gtk_progress_bar_set_fraction (self->progress, total > 0 ? (double) done / total : 0);
      gtk_label_set_text (self->progress_text, label);
    }
  {
    LiveFigures *live = take_live (self);

    /* A copy from an explanation that was replaced or has ended is dropped. */
    if (live != NULL && live->generation == self->generation && self->cancellable != NULL)
      {
        g_clear_pointer (&self->live, tach_explain_free);
        self->live = g_steal_pointer (&live->explain);
        show_explain (self, self->live, TRUE);
      }
    live_figures_free (live);
  }
  g_object_unref (idle->view);
  g_free (idle);
  return G_SOURCE_REMOVE;
}

/* Worker thread: at most one idle pending, as the engine's hand-off. */
static void
on_progress (TachExplain *explain, guint done, guint total, gpointer user_data)
{
  GTask *task = user_data;
  TachExplainView *self = g_task_get_source_object (task);
  ProgressIdle *idle;

  /* The worker owns the explanation while it runs: its rounds and the
   * speed-up's interval so far are read here and handed over. */
  {
    guint per_round = tach_explain_get_n_configs (explain);
    TachInterval ratio;
    double half;

    tach_explain_get_speedup (explain, &ratio);
    half = tach_interval_rel_halfwidth (&ratio);
    g_atomic_int_set (&self->rounds_done, per_round > 0 ? (gint) (done / per_round) : 0);
    g_atomic_int_set (&self->widest, isfinite (half) && half < 1e4 ? (gint) lround (half * 1e4) : -1);
    /* A round has just become whole: its figures, for the chart. */
    if (per_round > 0 && done % per_round == 0)
      {
        TachExplain *so_far = tach_explain_dup_so_far (explain, done / per_round);

        if (so_far != NULL)
          {
            LiveFigures *live = g_new (LiveFigures, 1);

            live->explain = so_far;
            live->generation = GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (task), "tach-generation"));
            /* The newest replaces one the main thread has not taken yet. */
            live_figures_free (g_atomic_pointer_exchange (&self->live_slot, live));
          }
      }
  }
  g_atomic_int_set (&self->done, (gint) done);
  g_atomic_int_set (&self->total, (gint) total);
  if (!g_atomic_int_compare_and_exchange (&self->idle_pending, 0, 1))
    return;
  idle = g_new (ProgressIdle, 1);
  idle->view = g_object_ref (self);
  idle->generation = GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (task), "tach-generation"));
  /* Always a source on the task's context: g_main_context_invoke() would
   * call it on this thread whenever the main thread is between iterations. */
  {
    GSource *source = g_idle_source_new ();

    g_source_set_callback (source, on_progress_idle, idle, NULL);
    g_source_attach (source, g_task_get_context (task));
    g_source_unref (source);
  }
}

static void
explain_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  TachExplain *explain = task_data;
  GError *error = NULL;

  (void) source;
  if (tach_explain_run (explain, cancellable, on_progress, task, &error))
    g_task_return_boolean (task, TRUE);
  else
    g_task_return_error (task, error);
}

static void
on_explained (GObject *source, GAsyncResult *result, gpointer user_data)
{
  TachExplainView *self = TACH_EXPLAIN_VIEW (source);
  GTask *task = G_TASK (result);
  guint generation = GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (task), "tach-generation"));
  g_autoptr(GError) error = NULL;

  (void) user_data;
  if (generation != self->generation)
    return;
  g_clear_object (&self->cancellable);
  /* The end replaces the rounds so far, whatever it is. */
  live_figures_free (take_live (self));
  if (self->live != NULL)
    {
      /* Until a result replaces them: the last finished one, or nothing. */
      if (self->explain != NULL)
        show_result (self);
      else
        {
          tach_explain_chart_set_explain (self->chart, NULL);
          gtk_label_set_text (self->summary, "");
          gtk_label_set_text (self->text, "");
        }
      g_clear_pointer (&self->live, tach_explain_free);
    }
  if (g_task_propagate_boolean (task, &error))
    {
      /* The task keeps its data until it is freed: take a copy of the
       * pointer and keep the explanation alive through the task's ref. */
      g_clear_pointer (&self->explain, tach_explain_free);
      g_clear_pointer (&self->source, g_free);
      self->explain = g_object_steal_data (G_OBJECT (task), "tach-explain");
      show_result (self);
    }
  else if (g_error_matches (error, TACH_ERROR, TACH_ERROR_CANCELLED)
           && tach_explain_is_partial (g_object_get_data (G_OBJECT (task), "tach-explain")))
    {
      /* Stopped after whole rounds: their explanation, said to be theirs. */
      g_clear_pointer (&self->explain, tach_explain_free);
      g_clear_pointer (&self->source, g_free);
      self->explain = g_object_steal_data (G_OBJECT (task), "tach-explain");
      show_result (self);
    }
  else if (!g_error_matches (error, TACH_ERROR, TACH_ERROR_CANCELLED))
    g_signal_emit (self, signals[TACH_TASK_VIEW_SIGNAL_ERROR], 0, _("Cannot Explain the Gap"), error);
  update_state (self);
  g_signal_emit (self, signals[TACH_TASK_VIEW_SIGNAL_FINISHED], 0);
}

gboolean
tach_explain_view_start_configs (TachExplainView *self,
                                 const TachConfig *from, const char *from_label,
                                 const TachConfig *to, const char *to_label,
                                 GError **error)
{
  g_autoptr(GTask) task = NULL;
  TachExplain *explain;

  g_return_val_if_fail (TACH_IS_EXPLAIN_VIEW (self), FALSE);
  if (self->cancellable != NULL)
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                           _("An explanation is already running: stop it first"));
      return FALSE;
    }
  explain = tach_explain_new (from, to, self->min_rounds, error);
  if (explain == NULL)
    return FALSE;
  tach_explain_set_labels (explain, from_label, to_label);
  /* Rounds added as tach-cli explain adds them, to the same targets. */
  tach_explain_set_budget (explain, self->budget_s, self->target);

  self->generation++;
  self->cancellable = g_cancellable_new ();
  g_atomic_int_set (&self->done, 0);
  g_atomic_int_set (&self->rounds_done, 0);
  g_atomic_int_set (&self->widest, -1);
  self->start_us = g_get_monotonic_time ();
  g_atomic_int_set (&self->total, (gint) (tach_explain_get_n_configs (explain)
                                          * tach_explain_get_rounds (explain)));
  gtk_progress_bar_set_fraction (self->progress, 0);
  gtk_label_set_text (self->progress_text, _("Measuring…"));
  task = g_task_new (self, self->cancellable, on_explained, NULL);
  g_task_set_source_tag (task, tach_explain_view_start_configs);
  /* The worker's own outcome comes back, stopped or not: a stop is its
   * TACH_ERROR_CANCELLED (with the whole rounds kept), which GTask's check
   * would replace with a G_IO_ERROR_CANCELLED that on_explained shows as a
   * failure. */
  g_task_set_check_cancellable (task, FALSE);
  g_object_set_data (G_OBJECT (task), "tach-generation", GUINT_TO_POINTER (self->generation));
  /* Owned by the task until the result is taken; the worker reads it
   * only while the task runs. */
  g_object_set_data_full (G_OBJECT (task), "tach-explain", explain,
                          (GDestroyNotify) tach_explain_free);
  g_task_set_task_data (task, explain, NULL);
  g_task_run_in_thread (task, explain_thread);
  update_state (self);
  return TRUE;
}

gboolean
tach_explain_view_show_loaded (TachExplainView *self, TachExplain *explain, const char *source)
{
  g_return_val_if_fail (TACH_IS_EXPLAIN_VIEW (self), FALSE);
  /* The one measuring now keeps the view: its end would replace it. */
  if (self->cancellable != NULL)
    {
      tach_explain_free (explain);
      return FALSE;
    }
  g_clear_pointer (&self->explain, tach_explain_free);
  g_free (self->source);
  self->source = g_strdup (source);
  self->explain = explain;
  show_result (self);
  update_state (self);
  return TRUE;
}

gboolean
tach_explain_view_start (TachExplainView *self, GError **error)
{
  const TachConfig *base = self->base_func != NULL ? self->base_func (self->base_data) : NULL;
  const char *a, *b;
  TachConfig from, to;
  gboolean ok;

  g_return_val_if_fail (base != NULL, FALSE);
  tach_explain_view_refresh_presets (self);
  a = gtk_string_list_get_string (self->presets, gtk_drop_down_get_selected (self->from_choice));
  b = gtk_string_list_get_string (self->presets, gtk_drop_down_get_selected (self->to_choice));
  if (a == NULL || b == NULL)
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                           _("Choose two presets to explain the gap between"));
      return FALSE;
    }
  tach_config_copy (&from, base);
  tach_config_copy (&to, base);
  ok = tach_config_apply_preset (&from, a, error) && tach_config_apply_preset (&to, b, error)
       && tach_explain_view_start_configs (self, &from, a, &to, b, error);
  tach_config_clear (&from);
  tach_config_clear (&to);
  return ok;
}

void
tach_explain_view_stop (TachExplainView *self)
{
  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
}

/* --------------------------------------------------------------- exports */

gboolean
tach_explain_view_export_image (TachExplainView *self, const char *path, GError **error)
{
  return tach_explain_chart_export (self->chart, path, 1100, error);
}

gboolean
tach_explain_view_export_csv (TachExplainView *self, const char *dir, GError **error)
{
  if (self->explain == NULL)
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_IO, _("There is no explanation to export yet"));
      return FALSE;
    }
  return tach_explain_csv_append (self->explain, dir, error);
}

static gboolean
export_format (GtkWidget *widget, const char *format, const char *path, GError **error)
{
  TachExplainView *self = TACH_EXPLAIN_VIEW (widget);

  return g_str_equal (format, "csv") ? tach_explain_view_export_csv (self, path, error)
                                     : tach_explain_view_export_image (self, path, error);
}

static void
export_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  static TachExportChooser chooser = { NULL, NULL, "tach-explain", NULL, export_format };

  (void) action_name;
  chooser.file_title = _("Export the Waterfall");
  chooser.folder_title = _("Export the Explanation to a Folder");
  chooser.error_heading = _("Cannot Export the Explanation");
  tach_export_chooser_show (widget, &chooser, g_variant_get_string (parameter, NULL));
}

/* ----------------------------------------------------------------- class */

static void
tach_explain_view_dispose (GObject *object)
{
  TachExplainView *self = TACH_EXPLAIN_VIEW (object);

  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  g_object_set_data (object, "tach-export-chooser", NULL);
  if (self->chart != NULL)
    tach_explain_chart_set_explain (self->chart, NULL);
  g_clear_pointer (&self->explain, tach_explain_free);
  g_clear_pointer (&self->source, g_free);
  g_clear_pointer (&self->live, tach_explain_free);
  g_clear_pointer (&self->box, gtk_widget_unparent);
  G_OBJECT_CLASS (tach_explain_view_parent_class)->dispose (object);
}

static void
tach_explain_view_finalize (GObject *object)
{
  TachExplainView *self = TACH_EXPLAIN_VIEW (object);

  /* The worker holds the view until its task ends: the last copy it left
   * may come after dispose. */
  live_figures_free (take_live (self));
  G_OBJECT_CLASS (tach_explain_view_parent_class)->finalize (object);
}

static void
tach_explain_view_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  switch (prop_id)
    {
    case PROP_RUNNING:
      g_value_set_boolean (value, tach_explain_view_get_running (TACH_EXPLAIN_VIEW (object)));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
tach_explain_view_class_init (TachExplainViewClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = tach_explain_view_dispose;
  object_class->finalize = tach_explain_view_finalize;
  object_class->get_property = tach_explain_view_get_property;

  /* "error" gets the heading of an explanation that failed. */
  running_pspec = tach_task_view_class_install (object_class, signals);

  gtk_widget_class_install_action (widget_class, "explain.export", "s", export_action);
  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "tach-explain-view");
}

static void
tach_explain_view_init (TachExplainView *self)
{
  GtkWidget *row = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  GtkWidget *scroller = gtk_scrolled_window_new ();
  GtkWidget *content = gtk_box_new (GTK_ORIENTATION_VERTICAL, 10);
  GtkWidget *label;

  tach_explain_view_set_rounds (self, TACH_SWEEP_DEFAULT_ROUNDS, TACH_SWEEP_DEFAULT_BUDGET_S,
                                TACH_SWEEP_DEFAULT_TARGET);
  /* The row of controls stays in place above the waterfall and its text,
   * which scroll under it: scrolled with them, it went under the Compare
   * bars above the view. */
  self->box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 10);
  gtk_widget_set_parent (self->box, GTK_WIDGET (self));
  gtk_widget_add_css_class (row, "explain-controls");
  gtk_widget_set_margin_start (row, 24);
  gtk_widget_set_margin_end (row, 24);
  gtk_widget_set_margin_top (row, 12);

  label = gtk_label_new (_("Explain the gap from"));
  gtk_widget_add_css_class (label, "heading");
  gtk_box_append (GTK_BOX (row), label);
  self->presets = gtk_string_list_new (NULL);
  self->from_choice = GTK_DROP_DOWN (gtk_drop_down_new (G_LIST_MODEL (g_object_ref (self->presets)), NULL));
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->from_choice));
  tach_a11y_label_by (GTK_WIDGET (self->from_choice), label);
  label = gtk_label_new (_("to"));
  gtk_box_append (GTK_BOX (row), label);
  self->to_choice = GTK_DROP_DOWN (gtk_drop_down_new (G_LIST_MODEL (self->presets), NULL));
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->to_choice));
  tach_a11y_label_by (GTK_WIDGET (self->to_choice), label);
  self->button = GTK_BUTTON (gtk_button_new_with_mnemonic (_("_Explain")));
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->button),
                               _("Measure every mix of the knobs in which the two presets differ, "
                                 "in shuffled rounds, and give each knob its share of the gap"));
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->button));

  self->export_button = GTK_MENU_BUTTON (tach_export_menu_button_new ("explain.export", _("Export the explanation")));
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->export_button));

  /* The bar in the row, its line under it: the line grows with the rounds
   * and the speed-ups' intervals, and as the bar's text it widened the
   * row past the view, folding the settings panel away and running off
   * the window's edge (issue 42). */
  self->progress = tach_task_progress_new ();
  gtk_progress_bar_set_show_text (self->progress, FALSE);
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->progress));
  gtk_box_append (GTK_BOX (self->box), tach_a11y_scroll_sideways (row));
  self->progress_text = GTK_LABEL (gtk_label_new (NULL));
  gtk_label_set_wrap (self->progress_text, TRUE);
  /* A wrapped label asks for its whole line as its natural width, which
   * folds the panel as surely: it asks for a short one, and fills what it
   * gets. */
  gtk_label_set_max_width_chars (self->progress_text, 40);
  gtk_label_set_xalign (self->progress_text, 0);
  gtk_widget_set_margin_start (GTK_WIDGET (self->progress_text), 24);
  gtk_widget_set_margin_end (GTK_WIDGET (self->progress_text), 24);
  gtk_widget_add_css_class (GTK_WIDGET (self->progress_text), "dim-label");
  gtk_widget_add_css_class (GTK_WIDGET (self->progress_text), "numeric");
  gtk_box_append (GTK_BOX (self->box), GTK_WIDGET (self->progress_text));

  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (scroller), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_widget_set_vexpand (scroller, TRUE);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), content);
  gtk_widget_set_valign (content, GTK_ALIGN_START);
  gtk_widget_set_margin_start (content, 24);
  gtk_widget_set_margin_end (content, 24);
  gtk_widget_set_margin_bottom (content, 18);
  gtk_box_append (GTK_BOX (self->box), scroller);

  self->chart = TACH_EXPLAIN_CHART (tach_explain_chart_new ());
  gtk_box_append (GTK_BOX (content), GTK_WIDGET (self->chart));
  gtk_box_append (GTK_BOX (content), tach_a11y_figures_new (GTK_WIDGET (self->chart)));
  self->summary = GTK_LABEL (gtk_label_new (NULL));
  self->text = GTK_LABEL (gtk_label_new (NULL));
  gtk_label_set_wrap (self->summary, TRUE);
  gtk_label_set_xalign (self->summary, 0);
  gtk_widget_add_css_class (GTK_WIDGET (self->summary), "dim-label");
  gtk_label_set_wrap (self->text, TRUE);
  gtk_label_set_xalign (self->text, 0);
  gtk_label_set_selectable (self->text, TRUE);
  gtk_box_append (GTK_BOX (content), GTK_WIDGET (self->summary));
  gtk_box_append (GTK_BOX (content), GTK_WIDGET (self->text));

  update_state (self);
}

GtkWidget *
tach_explain_view_new (void)
{
  return g_object_new (TACH_TYPE_EXPLAIN_VIEW, NULL);
}
