/* tach-cli-run.c: the run command, and what the sweeps share with it
 * (one run's hand-off, the summary's text, the CSV session).
 *
 * Each run goes through the same hand-off as the GUI: tach_run_start() on
 * the main context with a notify callback that drains samples, a GMainLoop
 * that waits for the run to end, and SIGINT (SIGTERM, SIGHUP) turned into
 * tach_run_stop().
 *
 * One unit with tach-cli-scaling.c (tools/folder-arrows.py lists the two
 * as one): `run --scaling` is a mode of this command, which hands it the
 * configuration it built, and its rounds run through this file's session.
 */
#include "tach-build-config.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <inttypes.h>
#include <glib-unix.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>

#include "tach-cli-private.h"

FILE *tach_cli_progress_out;

void
tach_cli_session_init (TachCliSession *session)
{
  memset (session, 0, sizeof *session);
  session->loop = g_main_loop_new (NULL, FALSE);
  session->scratch = g_array_new (FALSE, FALSE, sizeof (TachSample));
  session->live = isatty (STDERR_FILENO);
}

void
tach_cli_session_clear (TachCliSession *session)
{
  g_clear_pointer (&session->loop, g_main_loop_unref);
  g_clear_pointer (&session->scratch, g_array_unref);
  g_clear_pointer (&session->csv, tach_csv_stream_free);
}

static gboolean tach_cli_run_state_is_final (TachRunState state);

/* Main thread: writes the rows of the run in progress published so far,
 * once it has any.  An error is kept by the stream and reported when it is
 * committed: the run goes on. */
static void
tach_cli_stream_csv (TachCliSession *session)
{
  if (session->csv == NULL || session->run == NULL || tach_run_get_n_samples (session->run) == 0)
    return;
  /* A data-parallel run's rows wait for its end, when rank 0 has split
   * every rank's communication into its exposed part and the imbalance. */
  if (tach_run_get_config (session->run)->ranks > 1
      && !tach_cli_run_state_is_final (tach_run_get_state (session->run)))
    return;
  tach_csv_stream_add_run (session->csv, session->run);
  tach_csv_stream_write (session->csv, NULL);
}

static gboolean
tach_cli_run_state_is_final (TachRunState state)
{
  return state == TACH_RUN_STATE_FINISHED || state == TACH_RUN_STATE_CANCELLED ||
         state == TACH_RUN_STATE_FAILED;
}

static void
tach_cli_live_clear (TachCliSession *session)
{
  if (!session->live_shown)
    return;
  fputs ("\r\033[K", stderr);
  fflush (stderr);
  session->live_shown = FALSE;
}

static void
tach_cli_live_print (TachCliSession *session)
{
  g_autoptr(GString) line = g_string_new ("\r\033[K");
  guint64 eval_done = 0, eval_total = 0;

  if (session->label != NULL)
    g_string_append_printf (line, "%s  ", session->label);
  if (session->run != NULL
      && tach_run_get_evaluation (session->run, &eval_done, &eval_total) == TACH_EVALUATION_RUNNING)
    {
      /* After the last step: the test set, its own phase. */
      g_string_append_printf (line, _("evaluating the test set  %" PRIu64 "/%" PRIu64), eval_done,
                              eval_total);
      fputs (line->str, stderr);
      fflush (stderr);
      session->live_shown = TRUE;
      return;
    }
  if (session->done_steps == 0)
    {
      /* A run that syncs only at the end hands its samples over late:
       * show that it is alive rather than a step count that never moves. */
      double elapsed = (double) (g_get_monotonic_time () - session->started_us) / G_USEC_PER_SEC;

      g_string_append_printf (line, _("step –/%" PRIu64 "  %.0f s elapsed, "
                                      "steps are reported at sync points"),
                              session->total_steps, elapsed);
      fputs (line->str, stderr);
      fflush (stderr);
      session->live_shown = TRUE;
      return;
    }
  g_string_append_printf (line, _("step %" PRIu64 "/%" PRIu64),
                          session->done_steps, session->total_steps);
  if (session->rate > 0)
    g_string_append_printf (line, _("  %.1f steps/s"), session->rate);
  if (!isnan (session->last_loss))
    g_string_append_printf (line, _("  loss %.4f"), session->last_loss);
  if (session->rate > 0 && session->total_steps > session->done_steps)
    g_string_append_printf (line, _("  ETA %.0f s"),
                            (double) (session->total_steps - session->done_steps) / session->rate);

  fputs (line->str, stderr);
  fflush (stderr);
  session->live_shown = TRUE;
}

/* Main thread: the engine's coalesced hand-off. */
static void
tach_cli_on_notify (TachRun *run, gpointer user_data)
{
  TachCliSession *session = user_data;
  guint64 eval_total = 0;

  if (run != session->run)
    return;

  do
    {
      g_array_set_size (session->scratch, 0);
      tach_run_drain_samples (run, session->scratch);
      for (guint i = 0; i < session->scratch->len; i++)
        {
          const TachSample *sample = &g_array_index (session->scratch, TachSample, i);

          session->done_steps = MAX (session->done_steps, sample->step + 1);
          if (!isnan (sample->loss))
            session->last_loss = sample->loss;
          if (session->progress_on)
            tach_progress_add (&session->progress, sample);
        }
    }
  while (session->scratch->len == TACH_RUN_DRAIN_MAX);
  /* Between sync points the engine still says how far it has got. */
  session->done_steps = MAX (session->done_steps, tach_run_get_steps_done (run));

  /* The test-set evaluation after the last step: on a terminal the live
   * line follows it; elsewhere (a pipe, a file) a line says it has begun,
   * as it happens. */
  if (tach_run_get_evaluation (run, NULL, &eval_total) == TACH_EVALUATION_RUNNING)
    {
      if (session->live)
        tach_cli_live_print (session);
      /* Under mpirun, rank 0 says it for the job. */
      else if (!session->eval_said && eval_total > 0 && tach_ranks_world_rank () == 0)
        {
          fprintf (stderr, _("tach-cli: %s%sevaluating the test set (%" PRIu64 " items)\n"),
                   session->label != NULL ? session->label : "",
                   session->label != NULL ? ": " : "", eval_total);
          fflush (stderr);
          session->eval_said = TRUE;
        }
    }

  if (tach_cli_run_state_is_final (tach_run_get_state (run)))
    g_main_loop_quit (session->loop);
}

/* Main thread, once a second: the live line.  It also ends the loop if the
 * run has ended without a final notify reaching us. */
static gboolean
tach_cli_on_tick (gpointer user_data)
{
  TachCliSession *session = user_data;
  double now_s = (double) g_get_monotonic_time () / G_USEC_PER_SEC;
  double dt = now_s - session->window_wall_s;

  /* The rate over the last tick, from the steps the engine reports done
   * (published or not), so that a run syncing only at the end shows one. */
  if (session->done_steps > session->window_steps && dt > 0 && session->window_wall_s > 0)
    session->rate = (double) (session->done_steps - session->window_steps) / dt;
  session->window_steps = session->done_steps;
  session->window_wall_s = now_s;

  if (session->live)
    tach_cli_live_print (session);
  tach_cli_stream_csv (session);

  if (session->run != NULL && tach_cli_run_state_is_final (tach_run_get_state (session->run)))
    g_main_loop_quit (session->loop);

  return G_SOURCE_CONTINUE;
}

/* Main thread: --progress's line for the steps since the last one, on
 * stdout (every rank's own under mpirun, which merges them). */
static void
tach_cli_progress_print (TachCliSession *session)
{
  g_autofree char *line = NULL;

  if (!session->progress_on)
    return;
  /* Between sync points the engine still says how far it has got. */
  session->progress.step = MAX (session->progress.step, session->done_steps);
  line = tach_progress_take_line (&session->progress);
  fputs (line, tach_cli_progress_out != NULL ? tach_cli_progress_out : stdout);
  fflush (tach_cli_progress_out != NULL ? tach_cli_progress_out : stdout);
}

static gboolean
tach_cli_on_progress_tick (gpointer user_data)
{
  tach_cli_progress_print (user_data);
  return G_SOURCE_CONTINUE;
}

/* Main thread: a stop signal's handler; only the first one's number is
 * the command's exit status. */
static gboolean
tach_cli_stop_on_signal (gpointer user_data)
{
  const TachCliStopWatch *watch = user_data;
  TachCliStop *stop = watch->stop;

  if (stop->signo == 0)
    stop->signo = watch->signo;
  /* Under mpirun, a rank that exits or is killed makes mpirun end the
   * others (SIGTERM, then SIGKILL a second later): each rank gives up its
   * waits on the others at once, and rank 0 writes the rows it has. */
  if (watch->signo == SIGTERM && tach_ranks_world_size () > 1)
    tach_ranks_abandon ();
  if (stop->on_stop != NULL)
    stop->on_stop (stop->data);
  return G_SOURCE_CONTINUE;
}

void
tach_cli_stop_watch (TachCliStop *stop, void (*on_stop) (gpointer data), gpointer data)
{
  static const int signals[TACH_CLI_N_STOP_SIGNALS] = { SIGINT, SIGTERM, SIGHUP };

  stop->on_stop = on_stop;
  stop->data = data;
  stop->signo = 0;
  for (guint i = 0; i < TACH_CLI_N_STOP_SIGNALS; i++)
    {
      stop->watch[i].stop = stop;
      stop->watch[i].signo = signals[i];
      stop->ids[i] = g_unix_signal_add (signals[i], tach_cli_stop_on_signal, &stop->watch[i]);
    }
}

void
tach_cli_stop_unwatch (TachCliStop *stop)
{
  for (guint i = 0; i < TACH_CLI_N_STOP_SIGNALS; i++)
    if (stop->ids[i] != 0)
      {
        g_source_remove (stop->ids[i]);
        stop->ids[i] = 0;
      }
}

int
tach_cli_stop_exit_status (const TachCliStop *stop, int status)
{
  if (stop->signo != 0 && status == TACH_CLI_EXIT_OK)
    return 128 + stop->signo;
  return status;
}

/* Main thread: Ctrl+C (or SIGTERM, SIGHUP) stops the run after its current
 * step; the command then reports and saves what ran. */
static void
tach_cli_session_on_stop (gpointer data)
{
  TachCliSession *session = data;

  if (session->run != NULL)
    tach_run_stop (session->run);
}

void
tach_cli_session_watch_signals (TachCliSession *session)
{
  tach_cli_stop_watch (&session->stop, tach_cli_session_on_stop, session);
}

/* Runs one configuration to its end.  Returns the run (also when it failed
 * or was cancelled) or NULL when it could not start; *error is set when it
 * did not finish normally. */
TachRun *
tach_cli_run_one (TachCliSession   *session,
                  const TachConfig *config,
                  GError          **error)
{
  g_autoptr(TachRun) run = NULL;
  guint tick_id, progress_id = 0;

  run = tach_run_new (config, error);
  if (run == NULL)
    return NULL;

  if (session->header != 0)
    {
      tach_cli_print_header (tach_run_get_config (run), tach_run_get_device (run),
                             session->header == 1, session->varied, session->varied_values);
      session->header = 0;
    }

  session->run = run;
  session->total_steps = config->steps;
  session->done_steps = 0;
  session->last_loss = NAN;
  session->window_steps = 0;
  session->window_wall_s = 0;
  session->rate = 0;
  session->eval_said = FALSE;
  session->started_us = g_get_monotonic_time ();

  if (!tach_run_start (run, g_main_loop_get_context (session->loop),
                       tach_cli_on_notify, session, error))
    {
      session->run = NULL;
      return NULL;
    }

  tick_id = g_timeout_add_seconds (1, tach_cli_on_tick, session);
  if (session->progress_on)
    {
      tach_progress_init (&session->progress, tach_ranks_world_rank (),
                          tach_ranks_world_size (), config->steps);
      progress_id = g_timeout_add (500, tach_cli_on_progress_tick, session);
    }
  if (!tach_cli_run_state_is_final (tach_run_get_state (run)))
    g_main_loop_run (session->loop);
  g_source_remove (tick_id);
  if (progress_id != 0)
    g_source_remove (progress_id);
  tach_cli_live_clear (session);

  tach_run_wait (run, error);
  tach_cli_progress_print (session);
  tach_cli_stream_csv (session);
  session->run = NULL;
  return g_steal_pointer (&run);
}

/* ---------------------------------------------------------------- output */

static char *
tach_cli_format_percent (double share)
{
  if (isnan (share))
    return g_strdup ("–");
  return g_strdup_printf ("%.1f%%", share * 100.0);
}

char *
tach_cli_format_efficiency (double value, double lo, double hi)
{
  if (isnan (value))
    return g_strdup (_("not measured"));
  if (isnan (lo) || isnan (hi))
    return g_strdup_printf ("%.0f%% (–)", 100.0 * value);
  return g_strdup_printf ("%.0f%% (%.0f–%.0f%%)", 100.0 * value, 100.0 * lo, 100.0 * hi);
}

char *
tach_cli_format_number (double value, const char *format)
{
  if (isnan (value) || isinf (value))
    return g_strdup ("–");
  return g_strdup_printf (format, value);
}

void
tach_cli_summary_text_init (TachCliSummaryText *text, const TachSummary *s)
{
  text->median = tach_cli_format_number (s->steps_per_s_median, "%.2f");
  text->p10 = tach_cli_format_number (s->steps_per_s_p10, "%.2f");
  text->p90 = tach_cli_format_number (s->steps_per_s_p90, "%.2f");
  text->items = tach_cli_format_number (s->items_per_s, "%.1f");
  text->first = tach_cli_format_number (s->first_loss, "%.4f");
  text->final = tach_cli_format_number (s->final_loss, "%.4f");
  text->feed = tach_cli_format_percent (s->feed_share);
  text->compute = tach_cli_format_percent (s->compute_share);
  text->sync = tach_cli_format_percent (s->sync_share);
  text->host = tach_cli_format_percent (s->host_share);
  text->peak = tach_cli_format_percent (s->peak_share);
}

void
tach_cli_summary_text_clear (TachCliSummaryText *text)
{
  char **fields[] = {
    &text->median, &text->p10, &text->p90, &text->items, &text->first, &text->final,
    &text->feed, &text->compute, &text->sync, &text->host, &text->peak,
  };

  for (guint i = 0; i < G_N_ELEMENTS (fields); i++)
    g_clear_pointer (fields[i], g_free);
}

void
tach_cli_print_header (const TachConfig     *config,
                       const TachDeviceInfo *device,
                       gboolean              with_preset,
                       const char           *varied,
                       const char           *varied_values)
{
  const char *task = config->task == TACH_TASK_GENERATE ? _("generate") : _("train");
  g_autofree char *batch = g_strdup_printf ("%u", config->batch);
  g_autofree char *steps = g_strdup_printf ("%u", config->steps);
  g_autofree char *warmup = g_strdup_printf ("%u", tach_config_get_warmup (config));
  char **field = NULL;

  /* A sweep's varied knob shows its values, not the first point's. */
  if (varied != NULL)
    field = g_str_equal (varied, "batch") ? &batch
            : g_str_equal (varied, "steps") ? &steps
            : g_str_equal (varied, "warmup") ? &warmup : NULL;
  if (field != NULL)
    {
      g_free (*field);
      *field = g_strdup (varied_values);
    }

  printf (_("%s (%s) on %s (%s), batch %s, %s steps (%s warm-up)"),
          tach_workload_to_string (config->workload), task,
          device != NULL ? device->id : config->device,
          device != NULL && device->name != NULL ? device->name : "?",
          batch, steps, warmup);
  if (varied != NULL && field == NULL)
    printf (_(", %s %s"), varied, varied_values);
  if (with_preset && config->preset != NULL)
    printf (_(", preset %s"), config->preset);
  printf ("\n");
  fflush (stdout);
}

void
tach_cli_print_summary (TachRun *run)
{
  TachSummary s;
  const TachConfig *config = tach_run_get_config (run);
  g_auto(TachCliSummaryText) t = { 0 };

  tach_run_get_summary (run, &s);
  tach_cli_summary_text_init (&t, &s);

  printf (_("  steps/s      %s median [%s–%s p10–p90] over %" PRIu64 " steps, %s\n"),
          t.median, t.p10, t.p90, s.steps,
          g_strcmp0 (s.rate_clock, "device") == 0 ? _("device timeline") : _("host clock"));
  /* The median's own uncertainty, which a comparison of two runs uses;
   * the p10-p90 above is the spread of single steps. */
  if (isfinite (s.steps_per_s_lo))
    printf (_("               median's 95%% interval %.2f–%.2f steps/s, %.1f–%.1f %s\n"),
            s.steps_per_s_lo, s.steps_per_s_hi, s.items_per_s_lo, s.items_per_s_hi,
            s.items_unit != NULL ? s.items_unit : _("items/s"));
  else if (s.steps > 0)
    printf (_("               too few measured steps for a 95%% interval of the median\n"));
  if (!isnan (s.e2e_steps_per_s))
    printf (_("  end to end   %.2f steps/s (measured steps over the wall time after warm-up)\n"),
            s.e2e_steps_per_s);
  if (!isnan (s.api_calls_per_step))
    printf (_("  API calls    %.0f per step (median, the runner's own included)\n"),
            s.api_calls_per_step);
  printf ("  %-12s %s\n", s.items_unit != NULL ? s.items_unit : _("items/s"), t.items);
  if (!isnan (s.first_loss) || !isnan (s.final_loss))
    printf (ngettext ("  loss         %s first → %s final, each the mean of %u step\n",
                      "  loss         %s first → %s final, each the mean of %u steps\n",
                      s.loss_window_steps), t.first, t.final, s.loss_window_steps);
  printf (_("  phases       feed %s  compute %s  sync %s  host %s\n"),
          t.feed, t.compute, t.sync, t.host);
  if (!isnan (s.comm_share))
    {
      printf (_("  ranks        %u, mean shares of the step: exposed communication %.1f%%"
                "  packing %.1f%%  imbalance %.1f%%\n"),
              config->ranks, 100.0 * s.comm_share, 100.0 * s.pack_share,
              100.0 * s.imbalance_share);
      if (!isnan (s.slowest_rank))
        printf (_("               slowest rank %.0f, its compute %.1f%% above the quickest's\n"),
                s.slowest_rank, 100.0 * s.rank_compute_spread);
    }
  if (!isnan (s.weak_scaling))
    {
      g_autofree char *weak = tach_cli_format_efficiency (s.weak_scaling, s.weak_scaling_lo,
                                                          s.weak_scaling_hi);
      g_autofree char *strong = tach_cli_format_efficiency (s.strong_scaling,
                                                            s.strong_scaling_lo,
                                                            s.strong_scaling_hi);

      printf (_("  scaling      weak %s, strong %s of ideal, against one process (samples/s"
                " over %u times one process's at batch %u and at %u)\n"),
              weak, strong, config->ranks, config->batch, config->batch * config->ranks);
    }
  if (!isnan (s.achieved_flops) && s.achieved_flops > 0)
    {
      printf (_("  compute      %.1f GFLOP/s, %s of device peak\n"), s.achieved_flops / 1e9, t.peak);
      /* The count is the same for every backend and peer, so that rates
       * compare: a fast algorithm can beat the peak by it. */
      if (s.peak_share > 1.0)
        printf (_("               above the peak: FLOPs are counted as a direct algorithm does "
                  "them, and the backend does fewer (Winograd convolution)\n"));
    }
  if (s.peak_memory_bytes > 0)
    {
      g_autofree char *memory = g_format_size_full (s.peak_memory_bytes, G_FORMAT_SIZE_IEC_UNITS);
      printf (_("  memory       %s peak\n"), memory);
    }
  if (tach_run_get_data_kind (run) != NULL)
    {
      const char *path = tach_run_get_data_path (run);

      if (path != NULL)
        /* Translators: the data a run read: its kind, then its file or folder. */
        printf (_("  data         %s from %s\n"), _(tach_run_get_data_kind (run)), path);
      else
        printf (_("  data         %s\n"), _(tach_run_get_data_kind (run)));
    }
  if (!isnan (s.test_accuracy))
    printf (_("  accuracy     %.2f%% on the test set\n"), s.test_accuracy * 100.0);
  else if (tach_run_get_evaluation (run, NULL, NULL) == TACH_EVALUATION_STOPPED)
    printf (_("  accuracy     not measured: the test-set evaluation was stopped\n"));
  /* What the wall time covers: the steps and the evaluation, not set-up. */
  if (!isnan (s.eval_s))
    printf (_("  wall time    %.2f s: steps %.2f s, test-set evaluation %.2f s (set-up not counted)\n"),
            s.wall_s, s.wall_s - s.eval_s, s.eval_s);
  else
    printf (_("  wall time    %.2f s from the first step (set-up not counted)\n"), s.wall_s);
  if (isfinite (s.machine_busy))
    printf (_("  machine busy %.0f%% of CPU time taken by other processes%s\n"),
            100.0 * s.machine_busy,
            s.machine_busy >= TACH_SUMMARY_BUSY_SHARE
            ? _(": the figures above are slower than on an idle machine") : "");
  {
    g_autofree char *algorithms = tach_run_dup_algorithms (run);

    if (algorithms != NULL)
      printf (_("  algorithms   %s\n"), algorithms);
  }

  if (config->task == TACH_TASK_GENERATE && config->print_text)
    {
      g_autofree char *text = tach_run_dup_text (run);

      if (text != NULL)
        printf (_("  text         %s\n"), text);
    }
  fflush (stdout);
}

/* ------------------------------------------------------------------- CSV */

/* Checks before any run that an output folder can be written (or
 * created), so that a long run is not wasted on a typo.  The writer
 * (tach_csv_append(), tach_tensorboard_export()) is still the judge when
 * the files are written. */
static gboolean
tach_cli_check_out_dir (const char *dir, gboolean tensorboard, GError **error)
{
  g_autofree char *path = g_canonicalize_filename (dir, NULL);

  while (!g_file_test (path, G_FILE_TEST_EXISTS))
    {
      g_autofree char *parent = g_path_get_dirname (path);

      if (g_str_equal (parent, path))
        break;
      g_free (path);
      path = g_steal_pointer (&parent);
    }

  if (!g_file_test (path, G_FILE_TEST_IS_DIR))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                   tensorboard ? _("Cannot write TensorBoard logs into '%s': '%s' is not a folder")
                               : _("Cannot write CSV files into '%s': '%s' is not a folder"),
                   dir, path);
      return FALSE;
    }
  if (g_access (path, W_OK | X_OK) != 0)
    {
      int saved_errno = errno;

      g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                   tensorboard ? _("Cannot write TensorBoard logs into '%s': %s: %s")
                               : _("Cannot write CSV files into '%s': %s: %s"),
                   dir, path, g_strerror (saved_errno));
      return FALSE;
    }
  return TRUE;
}

gboolean
tach_cli_check_outputs (const TachCliOptions *options, GError **error)
{
  return (options->csv_dir == NULL || tach_cli_check_out_dir (options->csv_dir, FALSE, error))
         && (options->tensorboard_dir == NULL
             || tach_cli_check_out_dir (options->tensorboard_dir, TRUE, error));
}

gboolean
tach_cli_session_open_csv (TachCliSession *session, const char *dir)
{
  g_autoptr(GError) error = NULL;

  if (dir == NULL)
    return TRUE;
  session->csv = tach_csv_stream_open (dir, &error);
  if (session->csv == NULL)
    {
      fprintf (stderr, "tach-cli: %s\n", error->message);
      return FALSE;
    }
  return TRUE;
}

gboolean
tach_cli_session_commit_csv (TachCliSession *session)
{
  g_autoptr(TachCsvStream) csv = g_steal_pointer (&session->csv);
  g_autoptr(GError) error = NULL;

  if (csv == NULL)
    return TRUE;
  /* The last rows of a run are written as it ends (tach_cli_run_one). */
  if (!tach_csv_stream_write (csv, &error))
    {
      fprintf (stderr, "tach-cli: %s\n", error->message);
      return FALSE;
    }
  if (tach_csv_stream_get_n_runs (csv) > 0 && !tach_csv_stream_commit (csv, &error))
    {
      fprintf (stderr, "tach-cli: %s\n", error->message);
      return FALSE;
    }
  return TRUE;
}

int
tach_cli_session_finish (const TachCliOptions *options, TachCliSession *session,
                         GPtrArray *runs, int status)
{
  /* Both outputs are written whatever became of the other. */
  gboolean csv_ok = tach_cli_session_commit_csv (session);
  gboolean tensorboard_ok = tach_cli_write_tensorboard (options->tensorboard_dir, runs);

  if (!csv_ok || !tensorboard_ok)
    status = MAX (status, TACH_CLI_EXIT_FAILURE);
  status = tach_cli_stop_exit_status (&session->stop, status);
  tach_cli_stop_unwatch (&session->stop);
  tach_cli_session_clear (session);
  return status;
}

/* Writes the runs that produced samples; reports an error itself. */
gboolean
tach_cli_write_csv (const char *dir, GPtrArray *runs)
{
  g_autoptr(GError) error = NULL;

  if (dir == NULL || runs->len == 0)
    return TRUE;
  if (!tach_csv_append (dir, runs, &error))
    {
      fprintf (stderr, "tach-cli: %s\n", error->message);
      return FALSE;
    }
  return TRUE;
}

/* Writes the runs as TensorBoard event files; reports an error itself. */
gboolean
tach_cli_write_tensorboard (const char *dir, GPtrArray *runs)
{
  g_autoptr(GError) error = NULL;

  if (dir == NULL || runs->len == 0)
    return TRUE;
  if (!tach_tensorboard_export (dir, runs, NULL, &error))
    {
      fprintf (stderr, "tach-cli: %s\n", error->message);
      return FALSE;
    }
  return TRUE;
}

/* Whether a run ran far enough to be worth a CSV row: a stopped or failed
 * run is, with the steps it measured (its row says how it ended). */
gboolean
tach_cli_run_has_results (TachRun *run)
{
  TachRunState state = tach_run_get_state (run);

  if (state == TACH_RUN_STATE_FINISHED)
    return TRUE;
  if (state != TACH_RUN_STATE_CANCELLED && state != TACH_RUN_STATE_FAILED)
    return FALSE;
  return tach_run_get_n_samples (run) > 0;
}

/* ------------------------------------------------------------------- run */

int
tach_cli_command_run (const TachCliOptions *options)
{
  TachConfig config = { 0 };
  TachCliOptions quiet;
  TachCliSession session;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autoptr(TachRun) run = NULL;
  int status = TACH_CLI_EXIT_OK;

  if (!tach_cli_build_config (options, options->preset, &config, &error))
    {
      tach_cli_usage_error ("%s", error->message);
      tach_config_clear (&config);
      return tach_cli_exit_code_for_error (error);
    }
  if (options->scaling && (tach_ranks_world_size () == 1 || config.ranks == 1))
    {
      /* Said by rank 0 alone, not once per rank. */
      if (tach_ranks_world_rank () == 0)
        tach_cli_usage_error (_("--scaling compares N ranks with one process: start it as"
                                " mpirun -np N tach-cli run ... --scaling (N of 2 or more),"
                                " without --ranks 1"));
      tach_config_clear (&config);
      return TACH_CLI_EXIT_USAGE;
    }
  /* Under mpirun: the job's ranks, the same settings on every rank (rank
   * 0 names a difference), and the outputs rank 0's alone, since it holds
   * every rank's figures once the run has ended. */
  if (!tach_cli_join_ranks (&config, &options, &quiet))
    {
      tach_config_clear (&config);
      return TACH_CLI_EXIT_USAGE;
    }
  if (!tach_cli_check_outputs (options, &error))
    {
      fprintf (stderr, "tach-cli: %s\n", error->message);
      tach_config_clear (&config);
      return TACH_CLI_EXIT_FAILURE;
    }
  /* --ranks 1 under mpirun: rank 0 runs alone, the others wait for it
   * (asleep) and print nothing. */
  if (!tach_ranks_takes_part (&config))
    {
      guchar done = 0;

      tach_config_clear (&config);
      return tach_ranks_share (&done, 1, NULL) ? TACH_CLI_EXIT_OK : TACH_CLI_EXIT_FAILURE;
    }
  tach_cli_print_notices (options, &config);
  if (options->scaling)
    {
      status = tach_cli_run_scaling (options, &config);
      tach_config_clear (&config);
      return status;
    }

  tach_cli_session_init (&session);
  session.progress_on = options->progress;
  /* Before the folder is opened: a Ctrl-C while the folder's rows are
   * copied stops the run as it starts, instead of killing the command. */
  tach_cli_session_watch_signals (&session);
  if (!tach_cli_session_open_csv (&session, options->csv_dir))
    {
      tach_cli_stop_unwatch (&session.stop);
      tach_cli_session_clear (&session);
      tach_config_clear (&config);
      return TACH_CLI_EXIT_FAILURE;
    }
  session.header = 1;

  run = tach_cli_run_one (&session, &config, &error);
  if (run == NULL)
    {
      /* It never started: a bad configuration (including one whose data
       * cannot fit in memory) is a usage error; the rest are failures. */
      if (g_error_matches (error, TACH_ERROR, TACH_ERROR_OUT_OF_MEMORY))
        status = TACH_CLI_EXIT_USAGE;
      else
        status = tach_cli_exit_code_for_error (error);
      if (status == TACH_CLI_EXIT_USAGE)
        tach_cli_usage_error ("%s", error->message);
      else
        fprintf (stderr, "tach-cli: %s\n", error->message);
    }
  else
    {
      if (tach_run_get_state (run) == TACH_RUN_STATE_FAILED)
        {
          fprintf (stderr, "tach-cli: %s\n",
                   error != NULL ? error->message : _("the run failed"));
          status = TACH_CLI_EXIT_FAILURE;
          /* What was measured before the failure is still shown. */
          if (tach_cli_run_has_results (run))
            {
              printf (_("  (failed after %u steps)\n"), tach_run_get_n_samples (run));
              tach_cli_print_summary (run);
            }
        }
      else
        {
          if (tach_run_get_evaluation (run, NULL, NULL) == TACH_EVALUATION_STOPPED)
            printf (_("  (stopped during the test-set evaluation, after all %" PRIu64 " steps)\n"),
                    session.done_steps);
          else if (tach_run_get_state (run) == TACH_RUN_STATE_CANCELLED)
            printf (_("  (stopped after %" PRIu64 " steps)\n"), session.done_steps);
          tach_cli_print_summary (run);
        }
      if (tach_cli_run_has_results (run))
        g_ptr_array_add (runs, tach_run_ref (run));
      if (options->trace_path != NULL && tach_cli_run_has_results (run))
        {
          g_autoptr(GError) trace_error = NULL;

          if (!tach_run_write_trace (run, options->trace_path, &trace_error))
            {
              fprintf (stderr, "tach-cli: %s\n", trace_error->message);
              status = MAX (status, TACH_CLI_EXIT_FAILURE);
            }
        }
    }

  status = tach_cli_session_finish (options, &session, runs, status);
  if (tach_ranks_world_size () > 1 && config.ranks == 1)
    {
      guchar done = 1;

      /* Releases the ranks that sat this run out. */
      tach_ranks_share (&done, 1, NULL);
    }
  tach_config_clear (&config);
  return status;
}
