/* tach-scaling-view-sweep.c: the Scaling view's sweep: its worker, the
 * figures after each round, Start and Stop.
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
#include "tach-scaling-view-private.h"
#include "tach-ranks-job.h"

#include <glib/gi18n.h>
#include <math.h>

/* The line under the row: the rounds so far, then the outcome; under it
 * where runs lost threads or the machine was busy, in Compare's and the
 * CLI's words, since the speed-ups above are then of a busy machine. */
static void
set_rounds_line (TachScalingView *self, const char *text, const char *caveats)
{
  GtkWidget *scroller = gtk_widget_get_ancestor (GTK_WIDGET (self->rounds_label),
                                                 GTK_TYPE_SCROLLED_WINDOW);
  g_autofree char *both = caveats != NULL && text != NULL && *text != '\0'
                          ? g_strdup_printf ("%s\n%s", text, caveats) : NULL;

  if (both == NULL && caveats != NULL)
    text = caveats;
  gtk_label_set_text (self->rounds_label, both != NULL ? both : text);
  /* The scrolled area, not only the label: empty, its scrollbar's
   * minimum would still take some 60 px of the view's height. */
  gtk_widget_set_visible (scroller, text != NULL && *text != '\0');
}

static void
update_progress (TachScalingView *self)
{
  g_autofree char *label = g_strdup_printf (_("%u of %u points measured"), self->done, self->total);

  gtk_progress_bar_set_fraction (self->progress, self->total > 0 ? (double) self->done / self->total : 0);
  gtk_progress_bar_set_text (self->progress, label);
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
  char            *caveats;  /* owned, or NULL: tach_sweep_rounds_dup_load_caveats */
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
  f->caveats = tach_sweep_rounds_dup_load_caveats (rounds, sweep);
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
  g_free (f->caveats);
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
    set_rounds_line (self, f->line, f->caveats);
  tach_scaling_chart_changed (self->chart);
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
          tach_scaling_chart_changed (self->chart);
        }
      if (done->run != NULL)
        {
          g_ptr_array_add (self->all_runs, tach_run_ref (done->run));
          if (self->runs[done->index] == NULL)
            self->runs[done->index] = tach_run_ref (done->run);
        }
      if (done->error != NULL && !g_error_matches (done->error, TACH_ERROR, TACH_ERROR_CANCELLED))
        g_signal_emit (self, tach_scaling_view_signals[TACH_TASK_VIEW_SIGNAL_ERROR], 0, NULL,
                       done->error);
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
  set_rounds_line (self, line, f->caveats);
  round_figures_free (f);
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
  tach_scaling_view_update_state (self);
  g_signal_emit (self, tach_scaling_view_signals[TACH_TASK_VIEW_SIGNAL_FINISHED], 0);
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
  /* The presets that differ at the most ranks the sweep runs: alone, not
   * the data-parallel ones, which would run as tuned (duplicate lines). */
  {
    guint most = base->ranks;

    for (guint v = 0; axis->knob->id == TACH_KNOB_RANKS && axis->values[v] != NULL; v++)
      most = MAX (most, (guint) g_ascii_strtoull (axis->values[v], NULL, 10));
    presets = tach_presets_for_ranks (base->workload, most);
  }
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
      g_signal_emit (self, tach_scaling_view_signals[TACH_TASK_VIEW_SIGNAL_ERROR], 0,
                     _("Some Points Will Not Run"), warning);
    }

  tach_scaling_view_grid_clear (self);
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
  tach_scaling_view_fill_toggles (self);
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

    set_rounds_line (self, line, NULL);
  }
  task = g_task_new (self, self->cancellable, on_swept, NULL);
  g_task_set_source_tag (task, tach_scaling_view_start);
  g_object_set_data (G_OBJECT (task), "tach-generation", GUINT_TO_POINTER (self->generation));
  g_task_set_task_data (task, job, (GDestroyNotify) scaling_job_free);
  g_task_run_in_thread (task, scaling_thread);
  tach_scaling_view_update_state (self);
  return TRUE;
}

void
tach_scaling_view_stop (TachScalingView *self)
{
  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
}
