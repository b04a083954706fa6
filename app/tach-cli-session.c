/* tach-cli-session.c: what every command that runs something shares: one
 * run's hand-off (tach_cli_run_one), its live line and progress lines,
 * SIGINT (SIGTERM, SIGHUP) turned into tach_run_stop(), and the CSV
 * session that streams a run's rows and commits them at its end; the
 * header line that opens a run's output.
 *
 * Each run goes through the same hand-off as the GUI: tach_run_start() on
 * the main context with a notify callback that drains samples, a GMainLoop
 * that waits for the run to end.  The run command (tach-cli-run.c), its
 * --scaling mode, sweep and explain call it; it calls none of them.
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
  FILE *out = tach_cli_progress_out != NULL ? tach_cli_progress_out : stdout;
  g_autofree char *line = NULL;
  gsize length, done = 0;

  if (!session->progress_on)
    return;
  /* Between sync points the engine still says how far it has got. */
  session->progress.step = MAX (session->progress.step, session->done_steps);
  line = tach_progress_take_line (&session->progress);
  /* One write(2) of the whole line, after what stdio holds: through a
   * stream's buffer a line could leave in two writes (the buffer's end
   * falling within it), and mpirun hands on each piece as it comes, other
   * output between them.  A pipe takes a write of up to PIPE_BUF bytes
   * whole; the loop is for a write cut short by a signal. */
  fflush (out);
  length = strlen (line);
  while (done < length)
    {
      gssize n = write (fileno (out), line + done, length - done);

      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      done += n;
    }
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
  /* Under mpirun, ranks that SIGINT or SIGHUP stopped (the window's Stop
   * sends SIGINT to each) stop together and end as a whole run ends: with
   * 0, since mpirun takes any other status for a rank's failure and ends
   * the others its own way, SIGTERM and a second later SIGKILL, which a
   * stopped job need not wait for.  SIGTERM there is mpirun ending the
   * job: 143, as alone. */
  if (stop->signo != SIGTERM && tach_ranks_world_size () > 1)
    return status;
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

/* The line that opens a run's output: what runs, where, how long. */
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
  /* A step is an update: say how many micro-batches make it. */
  if (tach_config_get_accumulate (config) > 1 && g_strcmp0 (varied, "accumulate") != 0)
    printf (_(", each step one update of %u micro-batches"), tach_config_get_accumulate (config));
  if (varied != NULL && field == NULL)
    printf (_(", %s %s"), varied, varied_values);
  if (with_preset && config->preset != NULL)
    printf (_(", preset %s"), config->preset);
  printf ("\n");
  fflush (stdout);
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
  if (session->no_evaluation)
    tach_run_set_evaluate (run, FALSE);

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
  /* A stop signal that came while the run was being built found no run to
   * stop (session->run was still NULL): the run stops before its first
   * step instead of running all its steps. */
  if (session->stop.signo != 0)
    tach_run_stop (run);

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

/* Checks before the run that the trace can be written at @path: a file
 * (or none yet) in a folder that exists and can be written; the writer
 * makes no folder. */
static gboolean
tach_cli_check_trace_path (const char *path, GError **error)
{
  g_autofree char *dir = g_path_get_dirname (path);

  if (g_file_test (path, G_FILE_TEST_IS_DIR))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                   _("Cannot write the trace to '%s': it is a folder: name a file in it"), path);
      return FALSE;
    }
  if (!g_file_test (dir, G_FILE_TEST_IS_DIR))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                   _("Cannot write the trace to '%s': '%s' is not a folder"), path, dir);
      return FALSE;
    }
  if (g_access (dir, W_OK | X_OK) != 0)
    {
      int saved_errno = errno;

      g_set_error (error, TACH_ERROR, TACH_ERROR_IO, _("Cannot write the trace to '%s': %s: %s"),
                   path, dir, g_strerror (saved_errno));
      return FALSE;
    }
  return TRUE;
}

gboolean
tach_cli_check_outputs (const TachCliOptions *options, GError **error)
{
  return (options->csv_dir == NULL || tach_cli_check_out_dir (options->csv_dir, FALSE, error))
         && (options->tensorboard_dir == NULL
             || tach_cli_check_out_dir (options->tensorboard_dir, TRUE, error))
         && (options->trace_path == NULL
             || tach_cli_check_trace_path (options->trace_path, error));
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

