/* tach-scaling-view.c: the Scaling view.
 *
 * As Explain, the sweep blocks for as long as its runs take, so it runs
 * in a GTask thread that gets the points' copied configurations and a
 * cancellable; each run makes its own engine thread, and Stop stops the
 * one running.  Each finished run is posted to the main thread, which
 * fills its cell of the grid and redraws, so the lines grow as the sweep
 * goes; results of a sweep that was replaced are dropped by generation
 * number.  The grid, its checks, its order and the loop are the engine's
 * sweep (tach-sweep.h), run on the GTask thread with its callbacks there;
 * the chosen knob and the entry's values make its axis directly, so the
 * GUI and tach-cli sweep the same grid the same way.
 *
 * It runs in shuffled rounds as tach-cli sweep does (TachSweepRounds, the
 * same defaults): after each round the worker records the rounds' rates,
 * decides whether to run another and posts the figures so far (each
 * point's run nearest its median, the speed-ups paired by round) with the
 * "round 3 of up to N" line; Stop keeps every round measured.
 */
#include "tach-scaling-view.h"
#include "tach-sweep.h"
#include "tach-chart-draw.h"

#include <string.h>

#include "tach-export-chooser.h"
#include "tach-task-view.h"
#include "tach-ranks-job.h"

#include <glib/gi18n.h>
#include <math.h>

struct _TachScalingView
{
  GtkWidget               parent_instance;

  GtkWidget              *box;
  GtkDropDown            *knob_choice;
  GtkStringList          *knobs;
  GtkEntry               *values_entry;
  GtkButton              *button;
  GtkMenuButton          *export_button;
  GtkProgressBar         *progress;
  GtkLabel               *rounds_label; /* the rounds so far, then what stayed unresolved */
  GtkWidget              *toggles;     /* a button per preset */
  TachScalingChart       *chart;

  TachScalingViewBaseFunc base_func;
  gpointer                base_data;
  int                     workload;    /* -1 before the first refresh */

  /* The grid shown: axis, presets, and per point its run. */
  TachSweepAxis          *axis;
  TachScalingGrid         grid;
  TachRun               **runs;        /* [v * n_presets + p], owned, or NULL: the shown */
  guint                   n_points;
  GPtrArray              *all_runs;    /* TachRun*, owned: every round's, for the export */
  guint                   min_rounds;  /* tach-cli's --rounds, --budget and --target */
  double                  budget_s, target;

  GCancellable           *cancellable; /* the running sweep's, or NULL */
  guint                   generation;
  guint                   done, total;
};

G_DEFINE_FINAL_TYPE (TachScalingView, tach_scaling_view, GTK_TYPE_WIDGET)

enum { PROP_0, PROP_RUNNING };
static GParamSpec *running_pspec;
static guint signals[TACH_TASK_VIEW_N_SIGNALS];

gboolean
tach_scaling_view_get_running (TachScalingView *self)
{
  return self->cancellable != NULL;
}

const TachScalingGrid *
tach_scaling_view_get_grid (TachScalingView *self)
{
  return self->axis != NULL ? &self->grid : NULL;
}

TachRun *
tach_scaling_view_get_run (TachScalingView *self, guint preset, guint value)
{
  guint np = self->axis != NULL ? g_strv_length (self->grid.presets) : 0;
  guint i = value * np + preset;

  return preset < np && i < self->n_points ? self->runs[i] : NULL;
}

TachScalingChart *
tach_scaling_view_get_chart (TachScalingView *self)
{
  return self->chart;
}

static void
grid_clear (TachScalingView *self)
{
  for (guint i = 0; i < self->n_points; i++)
    g_clear_pointer (&self->runs[i], tach_run_unref);
  g_clear_pointer (&self->runs, g_free);
  self->n_points = 0;
  g_clear_pointer (&self->grid.presets, g_strfreev);
  g_clear_pointer (&self->grid.x, g_free);
  g_clear_pointer (&self->grid.rate, g_free);
  g_clear_pointer (&self->grid.rate_lo, g_free);
  g_clear_pointer (&self->grid.rate_hi, g_free);
  g_clear_pointer (&self->grid.ratio, g_free);
  g_clear_pointer (&self->grid.ratio_lo, g_free);
  g_clear_pointer (&self->grid.ratio_hi, g_free);
  g_clear_pointer (&self->grid.busy, g_free);
  g_clear_pointer (&self->grid.hidden, g_free);
  g_ptr_array_set_size (self->all_runs, 0);
  g_clear_pointer (&self->axis, tach_sweep_axis_free);
  memset (&self->grid, 0, sizeof self->grid);
}

void
tach_scaling_view_set_rounds (TachScalingView *self, guint min_rounds, double budget_s,
                              double target)
{
  self->min_rounds = MAX (min_rounds, 1);
  self->budget_s = MAX (budget_s, 0.0);
  self->target = target > 0 ? target : TACH_SWEEP_DEFAULT_TARGET;
}

void
tach_scaling_view_set_base_func (TachScalingView *self, TachScalingViewBaseFunc func,
                                 gpointer user_data)
{
  self->base_func = func;
  self->base_data = user_data;
  tach_scaling_view_refresh (self);
}

/* The knobs a sweep can vary for the workload: whole numbers and choices
 * that apply to it (the workload and the preset are the other axes). */
void
tach_scaling_view_refresh (TachScalingView *self)
{
  const TachConfig *base = self->base_func != NULL ? self->base_func (self->base_data) : NULL;
  g_autoptr(GStrvBuilder) builder = NULL;
  g_auto(GStrv) names = NULL;
  const TachKnobInfo *knobs;
  guint n, batch = 0, count = 0;

  if (base == NULL || (int) base->workload == self->workload)
    return;
  self->workload = base->workload;
  builder = g_strv_builder_new ();
  knobs = tach_knobs (&n);
  for (guint i = 0; i < n; i++)
    {
      const TachKnobInfo *knob = &knobs[i];

      if (knob->id == TACH_KNOB_WORKLOAD || knob->id == TACH_KNOB_PRESET
          || knob->kind == TACH_KNOB_KIND_TEXT || !tach_config_knob_applies (base, knob->name, NULL))
        continue;
      if (g_str_equal (knob->name, "batch"))
        batch = count;
      g_strv_builder_add (builder, knob->name);
      count++;
    }
  names = g_strv_builder_end (builder);
  gtk_string_list_splice (self->knobs, 0, g_list_model_get_n_items (G_LIST_MODEL (self->knobs)),
                          (const char *const *) names);
  /* The knob the report's case scales with. */
  gtk_drop_down_set_selected (self->knob_choice, batch);
}

gboolean
tach_scaling_view_set_spec (TachScalingView *self, const char *knob, const char *values)
{
  guint n;

  tach_scaling_view_refresh (self);
  n = g_list_model_get_n_items (G_LIST_MODEL (self->knobs));
  for (guint i = 0; i < n; i++)
    if (g_str_equal (gtk_string_list_get_string (self->knobs, i), knob))
      {
        gtk_drop_down_set_selected (self->knob_choice, i);
        gtk_editable_set_text (GTK_EDITABLE (self->values_entry), values);
        return TRUE;
      }
  return FALSE;
}

static void
update_state (TachScalingView *self)
{
  gboolean running = self->cancellable != NULL;

  tach_task_button_update (self->button, self->progress, running, _("_Run Sweep"), "win.scale");
  gtk_widget_set_sensitive (GTK_WIDGET (self->knob_choice), !running);
  gtk_widget_set_sensitive (GTK_WIDGET (self->values_entry), !running);
  gtk_widget_set_sensitive (GTK_WIDGET (self->export_button), !running && self->axis != NULL);
  g_object_notify_by_pspec (G_OBJECT (self), running_pspec);
}

const char *
tach_scaling_view_get_rounds_text (TachScalingView *self)
{
  return gtk_label_get_text (self->rounds_label);
}

/* The line under the row: the rounds so far, then the outcome. */
static void
set_rounds_line (TachScalingView *self, const char *text)
{
  gtk_label_set_text (self->rounds_label, text);
  gtk_widget_set_visible (GTK_WIDGET (self->rounds_label), text != NULL && *text != '\0');
}

static void
update_progress (TachScalingView *self)
{
  g_autofree char *label = g_strdup_printf (_("%u of %u points measured"), self->done, self->total);

  gtk_progress_bar_set_fraction (self->progress, self->total > 0 ? (double) self->done / self->total : 0);
  gtk_progress_bar_set_text (self->progress, label);
}

void
tach_scaling_view_set_preset_visible (TachScalingView *self, guint preset, gboolean visible)
{
  GtkWidget *toggle = gtk_widget_get_first_child (self->toggles);

  if (self->axis == NULL || preset >= g_strv_length (self->grid.presets))
    return;
  self->grid.hidden[preset] = !visible;
  for (guint i = 0; toggle != NULL; i++, toggle = gtk_widget_get_next_sibling (toggle))
    if (i == preset)
      gtk_toggle_button_set_active (GTK_TOGGLE_BUTTON (toggle), visible);
  gtk_widget_queue_draw (GTK_WIDGET (self->chart));
}

static void
on_toggled (GtkToggleButton *toggle, TachScalingView *self)
{
  guint preset = GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (toggle), "tach-preset"));

  if (self->axis != NULL && preset < g_strv_length (self->grid.presets))
    {
      self->grid.hidden[preset] = !gtk_toggle_button_get_active (toggle);
      gtk_widget_queue_draw (GTK_WIDGET (self->chart));
    }
}

/* A toggle per preset, in its line's colour, as the run charts' legend. */
static void
fill_toggles (TachScalingView *self)
{
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (self->toggles)) != NULL)
    gtk_box_remove (GTK_BOX (self->toggles), child);
  for (guint p = 0; self->grid.presets[p] != NULL; p++)
    {
      GtkWidget *button = gtk_toggle_button_new ();
      GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
      GtkWidget *swatch = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
      g_autofree char *color = g_strdup_printf ("color-%u", p % TACH_CHART_N_COLORS);

      gtk_widget_add_css_class (swatch, "run-swatch");
      gtk_widget_add_css_class (swatch, color);
      gtk_widget_set_valign (swatch, GTK_ALIGN_CENTER);
      gtk_box_append (GTK_BOX (box), swatch);
      gtk_box_append (GTK_BOX (box), gtk_label_new (self->grid.presets[p]));
      gtk_button_set_child (GTK_BUTTON (button), box);
      gtk_widget_add_css_class (button, "flat");
      gtk_widget_add_css_class (button, "legend-button");
      gtk_widget_set_tooltip_text (button, _("Show or hide this preset in the charts"));
      gtk_toggle_button_set_active (GTK_TOGGLE_BUTTON (button), TRUE);
      g_object_set_data (G_OBJECT (button), "tach-preset", GUINT_TO_POINTER (p));
      g_signal_connect (button, "toggled", G_CALLBACK (on_toggled), self);
      gtk_box_append (GTK_BOX (self->toggles), button);
    }
}

/* ---------------------------------------------------------------- worker */

/* The sweep and its rounds: the worker's while it runs, the main
 * thread's once it returned. */
typedef struct {
  TachSweep       *sweep;
  TachSweepRounds *rounds;
  gint64           start_us;   /* monotonic: the first round began */
} ScalingJob;

static void
scaling_job_free (ScalingJob *job)
{
  tach_sweep_free (job->sweep);
  tach_sweep_rounds_free (job->rounds);
  g_free (job);
}

/* The figures after a round: made where the rounds are, shown on the main
 * thread. */
typedef struct {
  TachScalingView *view;     /* owned ref */
  guint            generation, n_points;
  TachRun        **shown;    /* [index] owned refs or NULL: each point's run nearest its median */
  double          *ratio;    /* [index] x 3: value, lo, hi; NaN unpaired */
  char            *line;     /* owned, or NULL: the rounds line */
} RoundFigures;

static RoundFigures *
round_figures_new (TachSweep *sweep, TachSweepRounds *rounds)
{
  guint n = tach_sweep_get_n_points (sweep);
  RoundFigures *f = g_new0 (RoundFigures, 1);

  f->n_points = n;
  f->shown = g_new0 (TachRun *, n);
  f->ratio = g_new (double, 3 * n);
  for (guint i = 0; i < n; i++)
    {
      TachRun *run = tach_sweep_rounds_pick_run (rounds, sweep, i);
      int c = tach_sweep_rounds_point_comparison (sweep, i);
      TachInterval iv = { NAN, NAN, NAN };

      f->shown[i] = run != NULL ? tach_run_ref (run) : NULL;
      /* One round pairs nothing: the chart takes the two runs' ratio. */
      if (c >= 0 && tach_sweep_get_rounds_run (sweep) >= 2
          && tach_sweep_rounds_get_ratio (rounds, c, &iv) == TACH_VERDICT_UNKNOWN)
        iv = (TachInterval) { NAN, NAN, NAN };
      f->ratio[3 * i] = iv.value;
      f->ratio[3 * i + 1] = iv.lo;
      f->ratio[3 * i + 2] = iv.hi;
    }
  return f;
}

static void
round_figures_free (RoundFigures *f)
{
  for (guint i = 0; i < f->n_points; i++)
    g_clear_pointer (&f->shown[i], tach_run_unref);
  g_free (f->shown);
  g_free (f->ratio);
  g_free (f->line);
  g_clear_object (&f->view);
  g_free (f);
}

/* Main thread: the figures into the grid, the line under the row. */
static void
round_figures_show (TachScalingView *self, RoundFigures *f)
{
  if (self->axis == NULL || f->n_points != self->n_points)
    return;
  for (guint i = 0; i < f->n_points; i++)
    {
      if (f->shown[i] != NULL)
        {
          g_clear_pointer (&self->runs[i], tach_run_unref);
          self->runs[i] = tach_run_ref (f->shown[i]);
        }
      if (self->runs[i] != NULL && tach_run_get_state (self->runs[i]) == TACH_RUN_STATE_FINISHED)
        {
          TachSummary s;

          tach_run_get_summary (self->runs[i], &s);
          self->grid.rate[i] = s.items_per_s;
          self->grid.rate_lo[i] = s.items_per_s_lo;
          self->grid.rate_hi[i] = s.items_per_s_hi;
          self->grid.busy[i] = s.machine_busy;
        }
      self->grid.ratio[i] = f->ratio[3 * i];
      self->grid.ratio_lo[i] = f->ratio[3 * i + 1];
      self->grid.ratio_hi[i] = f->ratio[3 * i + 2];
    }
  if (f->line != NULL)
    set_rounds_line (self, f->line);
  gtk_widget_queue_draw (GTK_WIDGET (self->chart));
}

static gboolean
on_round_figures (gpointer data)
{
  RoundFigures *f = data;

  if (f->generation == f->view->generation && f->view->cancellable != NULL)
    {
      round_figures_show (f->view, f);
      f->view->done = 0;
      update_progress (f->view);
    }
  round_figures_free (f);
  return G_SOURCE_REMOVE;
}

typedef struct {
  TachScalingView *view;   /* owned ref */
  guint            generation, index, round;
  TachRun         *run;    /* owned */
  GError          *error;  /* owned, or NULL */
} PointDone;

static gboolean
on_point_done (gpointer data)
{
  PointDone *done = data;
  TachScalingView *self = done->view;

  if (done->generation == self->generation && self->axis != NULL && done->index < self->n_points)
    {
      self->done++;
      update_progress (self);
      /* The first round fills the chart as it goes; later rounds change
       * it when they end (on_round_figures). */
      if (done->round == 0 && done->run != NULL
          && tach_run_get_state (done->run) == TACH_RUN_STATE_FINISHED)
        {
          TachSummary s;

          tach_run_get_summary (done->run, &s);
          self->grid.rate[done->index] = s.items_per_s;
          self->grid.rate_lo[done->index] = s.items_per_s_lo;
          self->grid.rate_hi[done->index] = s.items_per_s_hi;
          self->grid.busy[done->index] = s.machine_busy;
          if (s.items_unit != NULL)
            self->grid.unit = s.items_unit;
          gtk_widget_queue_draw (GTK_WIDGET (self->chart));
        }
      if (done->run != NULL)
        {
          g_ptr_array_add (self->all_runs, tach_run_ref (done->run));
          if (self->runs[done->index] == NULL)
            self->runs[done->index] = tach_run_ref (done->run);
        }
      if (done->error != NULL && !g_error_matches (done->error, TACH_ERROR, TACH_ERROR_CANCELLED))
        g_signal_emit (self, signals[TACH_TASK_VIEW_SIGNAL_ERROR], 0, NULL, done->error);
    }
  g_clear_pointer (&done->run, tach_run_unref);
  g_clear_error (&done->error);
  g_object_unref (done->view);
  g_free (done);
  return G_SOURCE_REMOVE;
}

/* Posts @func(@data) to the main thread, at the task's own priority, so
 * that every point and round is shown before the sweep is reported
 * finished. */
static void
post_to_view (GTask *task, GSourceFunc func, gpointer data)
{
  GSource *idle = g_idle_source_new ();

  g_source_set_priority (idle, G_PRIORITY_DEFAULT);
  g_source_set_callback (idle, func, data, NULL);
  g_source_attach (idle, g_task_get_context (task));
  g_source_unref (idle);
}

static guint
task_generation (GTask *task)
{
  return GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (task), "tach-generation"));
}

/* TachSweepFuncs.done, on the sweep's thread: a point that ran is posted
 * to the main thread. */
static void
on_point_ran (TachSweep *sweep, const TachSweepPoint *point, TachSweepOutcome outcome,
              TachRun *run, const GError *error, gpointer user_data)
{
  GTask *task = user_data;
  const TachConfig *config = tach_sweep_get_config (sweep, point->index);
  PointDone *done;

  if (outcome != TACH_SWEEP_RAN)
    return;
  done = g_new0 (PointDone, 1);
  done->view = g_object_ref (g_task_get_source_object (task));
  done->generation = task_generation (task);
  done->index = point->index;
  done->round = point->round;
  done->run = run != NULL ? tach_run_ref (run) : NULL;
  done->error = error != NULL ? g_error_copy (error) : NULL;
  if (done->error != NULL && config->preset != NULL)
    g_prefix_error (&done->error, "%s: ", config->preset);
  post_to_view (task, on_point_done, done);
}

/* TachSweepFuncs.round_done, on the sweep's thread: the round's rates
 * into the verdicts, the figures so far to the view, and another round
 * while a speed-up misses the target and time is left. */
static gboolean
on_round_ran (TachSweep *sweep, guint round, gpointer user_data)
{
  GTask *task = user_data;
  ScalingJob *job = g_task_get_task_data (task);
  double spent = (g_get_monotonic_time () - job->start_us) / 1e6;
  RoundFigures *f;
  gboolean more;

  tach_sweep_rounds_record_round (job->rounds, sweep, round);
  more = tach_sweep_rounds_want_more (job->rounds, round + 1, spent);
  f = round_figures_new (sweep, job->rounds);
  f->view = g_object_ref (g_task_get_source_object (task));
  f->generation = task_generation (task);
  if (more)
    f->line = tach_sweep_rounds_dup_progress (job->rounds, round + 2, round + 1, spent);
  post_to_view (task, on_round_figures, f);
  return more;
}

/* TachSweepFuncs.run, on the sweep's thread: a point of several ranks is
 * a run of mpirun (tach-ranks-job.h), read back from its results. */
static TachRun *
run_point (TachSweep *sweep, const TachSweepPoint *point, const TachConfig *config,
           gpointer user_data, GError **error)
{
  GCancellable *cancellable = g_task_get_cancellable (user_data);
  TachRun *run;

  (void) point;
  if (config->ranks <= 1)
    return tach_sweep_run_point (sweep, config, cancellable, error);
  run = tach_ranks_job_run_sync (config, cancellable, error);
  if (run != NULL)
    tach_run_set_varied (run, tach_sweep_get_axis (sweep) != NULL
                              ? tach_sweep_get_axis (sweep)->knob->name : NULL);
  return run;
}

static void
scaling_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  static const TachSweepFuncs funcs = { run_point, on_point_ran, on_round_ran };
  ScalingJob *job = task_data;

  (void) source;
  job->start_us = g_get_monotonic_time ();
  tach_sweep_run (job->sweep, &funcs, task, cancellable, NULL);
  g_task_return_boolean (task, TRUE);
}

/* Main thread, the sweep over: the figures of every round measured (a
 * stopped round's pairs too) and what stayed unresolved. */
static void
show_outcome (TachScalingView *self, ScalingJob *job, gboolean stopped)
{
  g_autofree char *line = NULL;
  RoundFigures *f;

  if (tach_sweep_get_rounds_run (job->sweep) == 0)
    return;
  line = tach_sweep_rounds_dup_outcome (job->rounds, job->sweep, stopped);
  f = round_figures_new (job->sweep, job->rounds);
  round_figures_show (self, f);
  round_figures_free (f);
  set_rounds_line (self, line);
}

static void
on_swept (GObject *source, GAsyncResult *result, gpointer user_data)
{
  TachScalingView *self = TACH_SCALING_VIEW (source);
  GTask *task = G_TASK (result);

  (void) user_data;
  g_task_propagate_boolean (task, NULL);
  if (task_generation (task) != self->generation)
    return;
  show_outcome (self, g_task_get_task_data (task), g_cancellable_is_cancelled (self->cancellable));
  g_clear_object (&self->cancellable);
  update_state (self);
  g_signal_emit (self, signals[TACH_TASK_VIEW_SIGNAL_FINISHED], 0);
}

gboolean
tach_scaling_view_start (TachScalingView *self, GError **error)
{
  const TachConfig *base = self->base_func != NULL ? self->base_func (self->base_data) : NULL;
  const char *knob;
  g_autoptr(GPtrArray) presets = NULL;
  g_autoptr(GString) problems = g_string_new (NULL);
  g_autoptr(GStrvBuilder) builder = g_strv_builder_new ();
  g_auto(GStrv) names = NULL;
  g_autoptr(TachSweepAxis) axis = NULL;
  g_autoptr(TachSweep) sweep = NULL;
  g_autoptr(GTask) task = NULL;
  ScalingJob *job;
  guint np, nv, n_points, bad;

  g_return_val_if_fail (base != NULL, FALSE);
  if (self->cancellable != NULL)
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                           _("A sweep is already running: stop it first"));
      return FALSE;
    }
  tach_scaling_view_refresh (self);
  knob = gtk_string_list_get_string (self->knobs, gtk_drop_down_get_selected (self->knob_choice));
  if (knob == NULL)
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                           _("Choose the knob to vary"));
      return FALSE;
    }
  axis = tach_sweep_axis_new (base, tach_knob_lookup (knob),
                              gtk_editable_get_text (GTK_EDITABLE (self->values_entry)), error);
  if (axis == NULL)
    return FALSE;
  presets = tach_presets_for_workload (base->workload);
  np = presets->len;
  nv = g_strv_length (axis->values);
  if (np == 0)
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                           _("The workload has no presets to compare"));
      return FALSE;
    }

  for (guint p = 0; p < np; p++)
    g_strv_builder_add (builder, ((const TachPreset *) g_ptr_array_index (presets, p))->name);
  names = g_strv_builder_end (builder);

  /* Every point is made and checked (memory included) before any runs. */
  sweep = tach_sweep_new (base, (const char *const *) names, axis, NULL, NULL, TRUE);
  n_points = tach_sweep_get_n_points (sweep);
  bad = tach_sweep_get_n_problems (sweep);
  for (guint i = 0; i < n_points; i++)
    if (tach_sweep_get_problem (sweep, i) != NULL)
      g_string_append_printf (problems, "\n%s %s=%s: %s", names[i % np], axis->knob->name,
                              axis->values[i / np], tach_sweep_get_problem (sweep, i));
  if (bad == n_points)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   _("None of the %u points can run:%s"), bad, problems->str);
      return FALSE;
    }
  if (bad > 0)
    {
      g_autoptr(GError) warning = NULL;

      g_set_error (&warning, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   ngettext ("%u of %u points will not run:%s", "%u of %u points will not run:%s", bad),
                   bad, n_points, problems->str);
      g_signal_emit (self, signals[TACH_TASK_VIEW_SIGNAL_ERROR], 0, _("Some Points Will Not Run"), warning);
    }

  grid_clear (self);
  self->axis = g_steal_pointer (&axis);
  self->grid.presets = g_steal_pointer (&names);
  self->grid.knob = self->axis->knob->name;
  self->grid.unit = _("items/s");
  self->grid.values = self->axis->values;
  self->grid.geometric = self->axis->geometric;
  /* Over ranks, each preset's ideal (weak) scaling: N times one rank's. */
  self->grid.ideal = self->axis->knob->id == TACH_KNOB_RANKS;
  self->grid.x = g_new (double, nv);
  for (guint v = 0; v < nv; v++)
    {
      char *end = NULL;
      double x = g_ascii_strtod (self->axis->values[v], &end);

      self->grid.x[v] = end != NULL && *end == '\0' && self->axis->knob->kind == TACH_KNOB_KIND_INTEGER
                        ? x : v;
    }
  if (self->axis->knob->kind != TACH_KNOB_KIND_INTEGER)
    self->grid.geometric = FALSE;
  self->grid.rate = g_new (double, n_points);
  self->grid.rate_lo = g_new (double, n_points);
  self->grid.rate_hi = g_new (double, n_points);
  self->grid.ratio = g_new (double, n_points);
  self->grid.ratio_lo = g_new (double, n_points);
  self->grid.ratio_hi = g_new (double, n_points);
  self->grid.busy = g_new (double, n_points);
  for (guint i = 0; i < n_points; i++)
    self->grid.rate[i] = self->grid.rate_lo[i] = self->grid.rate_hi[i] = self->grid.ratio[i]
      = self->grid.ratio_lo[i] = self->grid.ratio_hi[i] = self->grid.busy[i] = NAN;
  self->grid.hidden = g_new0 (gboolean, np);
  self->n_points = n_points;
  self->runs = g_new0 (TachRun *, n_points);
  fill_toggles (self);
  tach_scaling_chart_set_grid (self->chart, &self->grid);

  self->generation++;
  self->cancellable = g_cancellable_new ();
  self->done = 0;
  self->total = n_points - bad;
  update_progress (self);
  /* Shuffled rounds, each preset against the first at each value, paired
   * by round: tach-cli sweep's. */
  job = g_new0 (ScalingJob, 1);
  job->rounds = tach_sweep_rounds_new_for_sweep (sweep, self->min_rounds, self->budget_s,
                                                 self->target);
  if (self->min_rounds > 1 || self->budget_s > 0)
    tach_sweep_set_shuffle (sweep, base->seed);
  job->sweep = g_steal_pointer (&sweep);
  {
    g_autofree char *line = tach_sweep_rounds_dup_progress (job->rounds, 1, 0, 0);

    set_rounds_line (self, line);
  }
  task = g_task_new (self, self->cancellable, on_swept, NULL);
  g_task_set_source_tag (task, tach_scaling_view_start);
  g_object_set_data (G_OBJECT (task), "tach-generation", GUINT_TO_POINTER (self->generation));
  g_task_set_task_data (task, job, (GDestroyNotify) scaling_job_free);
  g_task_run_in_thread (task, scaling_thread);
  update_state (self);
  return TRUE;
}

void
tach_scaling_view_stop (TachScalingView *self)
{
  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
}

/* --------------------------------------------------------------- exports */

gboolean
tach_scaling_view_export_image (TachScalingView *self, const char *path, GError **error)
{
  return tach_scaling_chart_export (self->chart, path, 1000, 620, error);
}

gboolean
tach_scaling_view_export_csv (TachScalingView *self, const char *dir, GError **error)
{
  /* Every round's runs, as tach-cli sweep --csv writes them. */
  GPtrArray *runs = self->all_runs;

  if (runs->len == 0)
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_IO, _("There is no scaling sweep to export yet"));
      return FALSE;
    }
  return tach_csv_append (dir, runs, error);
}

static gboolean
export_format (GtkWidget *widget, const char *format, const char *path, GError **error)
{
  TachScalingView *self = TACH_SCALING_VIEW (widget);

  return g_str_equal (format, "csv") ? tach_scaling_view_export_csv (self, path, error)
                                     : tach_scaling_view_export_image (self, path, error);
}

static void
export_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  static TachExportChooser chooser = { NULL, NULL, "tach-scaling", NULL, export_format };

  (void) action_name;
  chooser.file_title = _("Export the Scaling Charts");
  chooser.folder_title = _("Export the Sweep to a Folder");
  chooser.error_heading = _("Cannot Export the Sweep");
  tach_export_chooser_show (widget, &chooser, g_variant_get_string (parameter, NULL));
}

/* ----------------------------------------------------------------- class */

static void
tach_scaling_view_dispose (GObject *object)
{
  TachScalingView *self = TACH_SCALING_VIEW (object);

  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  g_object_set_data (object, "tach-export-chooser", NULL);
  if (self->chart != NULL)
    tach_scaling_chart_set_grid (self->chart, NULL);
  grid_clear (self);
  g_clear_pointer (&self->all_runs, g_ptr_array_unref);
  g_clear_pointer (&self->box, gtk_widget_unparent);
  G_OBJECT_CLASS (tach_scaling_view_parent_class)->dispose (object);
}

static void
tach_scaling_view_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  switch (prop_id)
    {
    case PROP_RUNNING:
      g_value_set_boolean (value, tach_scaling_view_get_running (TACH_SCALING_VIEW (object)));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
tach_scaling_view_class_init (TachScalingViewClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = tach_scaling_view_dispose;
  object_class->get_property = tach_scaling_view_get_property;

  /* "error" gets a heading, or NULL for a toast (points that will not run). */
  running_pspec = tach_task_view_class_install (object_class, signals);

  gtk_widget_class_install_action (widget_class, "scaling.export", "s", export_action);
  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "tach-scaling-view");
}

static void
tach_scaling_view_init (TachScalingView *self)
{
  GtkWidget *row = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  GtkWidget *label;

  self->workload = -1;
  self->all_runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  tach_scaling_view_set_rounds (self, TACH_SWEEP_DEFAULT_ROUNDS, TACH_SWEEP_DEFAULT_BUDGET_S,
                                TACH_SWEEP_DEFAULT_TARGET);
  self->box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 10);
  gtk_widget_set_parent (self->box, GTK_WIDGET (self));

  label = gtk_label_new (_("Vary"));
  gtk_widget_add_css_class (label, "heading");
  gtk_box_append (GTK_BOX (row), label);
  self->knobs = gtk_string_list_new (NULL);
  self->knob_choice = GTK_DROP_DOWN (gtk_drop_down_new (G_LIST_MODEL (self->knobs), NULL));
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->knob_choice));
  gtk_box_append (GTK_BOX (row), gtk_label_new (_("over")));
  self->values_entry = GTK_ENTRY (gtk_entry_new ());
  gtk_editable_set_text (GTK_EDITABLE (self->values_entry), "64..1024x2");
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->values_entry),
                               _("Values as tach-cli sweep --vary takes them: a list (64,256), "
                                 "a geometric range (64..1024x2), a step range (10..50+10), "
                                 "or all of a choice"));
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->values_entry));
  self->button = GTK_BUTTON (gtk_button_new_with_mnemonic (_("_Run Sweep")));
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->button),
                               _("Run every preset at every value, interleaved, and plot how "
                                 "each one scales"));
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->button));

  self->export_button = GTK_MENU_BUTTON (tach_export_menu_button_new ("scaling.export", _("Export the sweep")));
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->export_button));

  self->progress = tach_task_progress_new ();
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->progress));
  gtk_box_append (GTK_BOX (self->box), row);

  self->rounds_label = GTK_LABEL (gtk_label_new (NULL));
  gtk_label_set_xalign (self->rounds_label, 0);
  gtk_label_set_wrap (self->rounds_label, TRUE);
  gtk_widget_add_css_class (GTK_WIDGET (self->rounds_label), "dim-label");
  gtk_widget_set_visible (GTK_WIDGET (self->rounds_label), FALSE);
  gtk_box_append (GTK_BOX (self->box), GTK_WIDGET (self->rounds_label));

  self->toggles = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 4);
  gtk_box_append (GTK_BOX (self->box), self->toggles);
  self->chart = TACH_SCALING_CHART (tach_scaling_chart_new ());
  gtk_widget_set_vexpand (GTK_WIDGET (self->chart), TRUE);
  gtk_box_append (GTK_BOX (self->box), GTK_WIDGET (self->chart));

  update_state (self);
}

GtkWidget *
tach_scaling_view_new (void)
{
  return g_object_new (TACH_TYPE_SCALING_VIEW, NULL);
}
