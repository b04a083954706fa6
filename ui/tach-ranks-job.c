/* tach-ranks-job.c: mpirun of this build's tach-cli, for runs of several
 * ranks (tach-ranks-job.h). */
#include "tach-build-config.h"
#include "tach-ranks-job.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib/gi18n.h>
#include <glib/gstdio.h>

struct _TachRanksJob
{
  GObject              parent_instance;

  TachConfig           config;
  char                *folder;
  GSubprocess         *process;
  GDataInputStream    *lines;      /* mpirun's stdout, line by line */
  GMemoryOutputStream *errors;     /* mpirun's stderr, whole */
  GArray              *progress;   /* TachProgress per rank */
  GError              *error;
  guint                pending;    /* of: the exit, stdout's end, stderr's end */
  gboolean             running;
  gboolean             stopped;
  gboolean             has_results;
};

G_DEFINE_FINAL_TYPE (TachRanksJob, tach_ranks_job, G_TYPE_OBJECT)

enum {
  PROGRESS,
  FINISHED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

#define TACH_RANKS_INSTALL_HINT "apt-get install openmpi-bin libopenmpi-dev"

/* ----------------------------------------------------------- the command */

/* This build's tach-cli: the build folder's when the running program lies
 * in it (the window and the tests run from there), else the installed one. */
static char *
find_cli (void)
{
  g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
  g_autofree char *real_root = realpath (TACH_BUILD_ROOT, NULL);
  g_autofree char *root = g_strconcat (real_root != NULL ? real_root : TACH_BUILD_ROOT,
                                       G_DIR_SEPARATOR_S, NULL);

  if (exe != NULL && g_str_has_prefix (exe, root))
    return g_build_filename (TACH_BUILD_ROOT, "app", "tach-cli", NULL);
  return g_build_filename (BINDIR, "tach-cli", NULL);
}

gboolean
tach_ranks_job_check (GError **error)
{
  g_autofree char *mpirun = NULL, *cli = NULL;

  if (!tach_ranks_have_mpi ())
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                   _("This Tach was built without MPI, so it cannot run several ranks: install "
                     "Open MPI (%s) and rebuild Tach (meson setup --reconfigure build "
                     "-Dmpi=enabled), or set Ranks to 1"), TACH_RANKS_INSTALL_HINT);
      return FALSE;
    }
  mpirun = g_find_program_in_path ("mpirun");
  if (mpirun == NULL)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                   _("mpirun was not found on the PATH, so several ranks cannot start: install "
                     "Open MPI (%s) and rebuild Tach, or set Ranks to 1"), TACH_RANKS_INSTALL_HINT);
      return FALSE;
    }
  cli = find_cli ();
  if (!g_file_test (cli, G_FILE_TEST_IS_EXECUTABLE))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                   _("The ranks run tach-cli, which is not at %s: build it (meson compile) or "
                     "install Tach (meson install)"), cli);
      return FALSE;
    }
  return TRUE;
}

GStrv
tach_ranks_job_argv (const TachConfig *config, const char *dir, gboolean progress)
{
  g_autoptr(GStrvBuilder) argv = g_strv_builder_new ();
  g_autofree char *np = g_strdup_printf ("%u", config->ranks);
  g_autofree char *cli = find_cli ();
  static const char *const setup[] = { "workload", "task", "device", "preset", NULL };
  TachConfig reference = { 0 };
  const TachKnobInfo *knobs;
  guint n = 0;

  g_strv_builder_add_many (argv, "mpirun", "-np", np, NULL);
  /* More ranks than processors is slow, but what was asked for. */
  if (config->ranks > g_get_num_processors ())
    g_strv_builder_add (argv, "--oversubscribe");
  g_strv_builder_add_many (argv, cli, "run", "--csv", dir, NULL);
  if (progress)
    g_strv_builder_add (argv, "--progress");

  /* The set-up knobs in the order tach_config_set wants them, then each
   * knob that differs from what they give: the same configuration, said
   * as briefly as the command line allows. */
  tach_config_init (&reference, config->workload);
  for (guint i = 0; setup[i] != NULL; i++)
    {
      g_autofree char *value = tach_config_get (config, setup[i]);
      g_autofree char *option = g_strconcat ("--", setup[i], NULL);

      if (value == NULL || *value == '\0')
        continue;
      g_strv_builder_add_many (argv, option, value, NULL);
      tach_config_set (&reference, setup[i], value, NULL);
    }
  knobs = tach_knobs (&n);
  for (guint i = 0; i < n; i++)
    {
      const char *name = knobs[i].name;
      g_autofree char *value = NULL, *was = NULL;

      if (g_strv_contains (setup, name) || knobs[i].id == TACH_KNOB_RANKS)
        continue;
      value = tach_config_get (config, name);
      was = tach_config_get (&reference, name);
      if (value != NULL && g_strcmp0 (value, was) != 0)
        {
          g_autofree char *option = g_strconcat ("--", name, NULL);

          g_strv_builder_add_many (argv, option, value, NULL);
        }
    }
  tach_config_clear (&reference);
  return g_strv_builder_end (argv);
}

/* -------------------------------------------------------------- the job */

/* In the child, before mpirun starts: a process group of its own, so that
 * Stop reaches mpirun and whatever it runs in that group (each rank makes
 * its own, and mpirun passes SIGTERM on to them). */
static void
child_setup (gpointer data)
{
  (void) data;
  setpgid (0, 0);
}

static GSubprocessLauncher *
make_launcher (GSubprocessFlags flags)
{
  GSubprocessLauncher *launcher = g_subprocess_launcher_new (flags);

  /* Open MPI refuses to run as root unless told twice (CI, containers). */
  if (geteuid () == 0)
    {
      g_subprocess_launcher_setenv (launcher, "OMPI_ALLOW_RUN_AS_ROOT", "1", TRUE);
      g_subprocess_launcher_setenv (launcher, "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", TRUE);
    }
  g_subprocess_launcher_set_child_setup (launcher, child_setup, NULL, NULL);
  return launcher;
}

static void
signal_group (GSubprocess *process, int signo)
{
  const char *id = process != NULL ? g_subprocess_get_identifier (process) : NULL;
  pid_t pid = id != NULL ? (pid_t) atoi (id) : 0;

  if (pid > 1 && kill (-pid, signo) != 0 && errno == ESRCH)
    kill (pid, signo);
}

/* Whether process @pid (a decimal string) is a child of @parent that
 * catches SIGINT: a rank whose stop handler is in place. */
static gboolean
is_rank_of (const char *pid, pid_t parent)
{
  g_autofree char *stat_path = g_build_filename ("/proc", pid, "stat", NULL);
  g_autofree char *status_path = g_build_filename ("/proc", pid, "status", NULL);
  g_autofree char *stat = NULL, *status = NULL;
  const char *after, *caught;
  char state;
  long ppid = 0;
  guint64 mask;

  if (!g_file_get_contents (stat_path, &stat, NULL, NULL))
    return FALSE;
  /* "PID (COMM) STATE PPID ...", the command possibly holding ") ". */
  after = strrchr (stat, ')');
  if (after == NULL || sscanf (after + 1, " %c %ld", &state, &ppid) != 2 || ppid != parent)
    return FALSE;
  if (!g_file_get_contents (status_path, &status, NULL, NULL)
      || (caught = strstr (status, "\nSigCgt:")) == NULL)
    return FALSE;
  mask = g_ascii_strtoull (caught + strlen ("\nSigCgt:"), NULL, 16);
  return (mask & (G_GUINT64_CONSTANT (1) << (SIGINT - 1))) != 0;
}

/* Stops the job's @n ranks by SIGINT to each, as Ctrl+C stops tach-cli
 * alone: they agree on a step to stop after, finish it and the run as a
 * whole run ends, and exit, mpirun with them.  Through mpirun a stop is
 * its end of a job: SIGTERM to the ranks a second after it is asked,
 * SIGKILL a second after that (odls_base_sigkill_timeout), whatever the
 * ranks are doing, rank 0's rows included.  FALSE, signalling nothing,
 * unless every rank (mpirun's children here) catches SIGINT yet. */
static gboolean
signal_ranks (GSubprocess *process, guint n)
{
  const char *id = process != NULL ? g_subprocess_get_identifier (process) : NULL;
  pid_t parent = id != NULL ? (pid_t) atoi (id) : 0;
  g_autoptr(GArray) pids = g_array_new (FALSE, FALSE, sizeof (pid_t));
  g_autoptr(GDir) dir = NULL;
  const char *name;

  if (parent <= 1 || (dir = g_dir_open ("/proc", 0, NULL)) == NULL)
    return FALSE;
  while ((name = g_dir_read_name (dir)) != NULL)
    if (g_ascii_isdigit (name[0]) && is_rank_of (name, parent))
      {
        pid_t pid = (pid_t) atoi (name);

        g_array_append_val (pids, pid);
      }
  if (pids->len != n)
    return FALSE;
  for (guint i = 0; i < pids->len; i++)
    kill (g_array_index (pids, pid_t, i), SIGINT);
  return TRUE;
}

/* What went wrong, in the ranks' own words ("tach-cli: ..." lines, each
 * once), else in mpirun's. */
static GError *
error_from (int status, const char *text)
{
  g_auto(GStrv) lines = g_strsplit (text != NULL ? text : "", "\n", -1);
  g_autoptr(GString) message = g_string_new (NULL);
  g_autoptr(GString) other = g_string_new (NULL);

  for (guint i = 0; lines[i] != NULL; i++)
    {
      const char *line = g_strstrip (lines[i]);

      if (g_str_has_prefix (line, "tach-cli: "))
        {
          line += strlen ("tach-cli: ");
          if (g_str_has_prefix (line, "note:") || strstr (message->str, line) != NULL)
            continue;
          g_string_append_printf (message, "%s%s", message->len > 0 ? "\n" : "", line);
        }
      else if (*line != '\0' && strspn (line, "-") != strlen (line) && other->len < 2000
               && !g_str_has_prefix (line, "Try 'tach-cli"))
        g_string_append_printf (other, "%s%s", other->len > 0 ? "\n" : "", line);
    }
  if (message->len == 0)
    g_string_assign (message, other->len > 0 ? other->str : _("mpirun ended without a message"));
  return g_error_new (TACH_ERROR, status == 2 ? TACH_ERROR_INVALID_CONFIG : TACH_ERROR_LIBRARY,
                      /* Translators: a multi-rank run that failed: mpirun's exit status, then
                       * what the ranks or mpirun said. */
                      _("mpirun exited with status %d: %s"), status, message->str);
}

static gboolean
folder_has_results (const char *folder)
{
  g_autofree char *runs = g_build_filename (folder, "runs.csv", NULL);

  return g_file_test (runs, G_FILE_TEST_IS_REGULAR);
}

static void
job_part_done (TachRanksJob *self)
{
  if (self->pending == 0 || --self->pending > 0)
    return;
  self->running = FALSE;
  if (g_subprocess_get_if_exited (self->process))
    {
      int status = g_subprocess_get_exit_status (self->process);

      /* A stopped job ends as its ranks were ended: not a failure. */
      if (status != 0 && !self->stopped)
        self->error = error_from (status, g_memory_output_stream_get_data (self->errors));
    }
  else if (!self->stopped)
    self->error = g_error_new (TACH_ERROR, TACH_ERROR_LIBRARY, _("mpirun was killed by signal %d"),
                               g_subprocess_get_term_sig (self->process));
  self->has_results = folder_has_results (self->folder);
  g_signal_emit (self, signals[FINISHED], 0);
  g_object_unref (self);
}

static void
on_exited (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_subprocess_wait_finish (G_SUBPROCESS (source), result, NULL);
  job_part_done (user_data);
}

static void
on_errors_read (GObject *source, GAsyncResult *result, gpointer user_data)
{
  TachRanksJob *self = user_data;

  g_output_stream_splice_finish (G_OUTPUT_STREAM (source), result, NULL);
  /* NUL-terminated for reading as text. */
  g_output_stream_write_all (G_OUTPUT_STREAM (self->errors), "", 1, NULL, NULL, NULL);
  g_output_stream_close (G_OUTPUT_STREAM (self->errors), NULL, NULL);
  job_part_done (self);
}

static void
on_line (GObject *source, GAsyncResult *result, gpointer user_data)
{
  TachRanksJob *self = user_data;
  g_autofree char *line = g_data_input_stream_read_line_finish_utf8 (G_DATA_INPUT_STREAM (source),
                                                                     result, NULL, NULL);
  TachProgress progress;

  if (line == NULL)
    {
      job_part_done (self);
      return;
    }
  /* The summary and the header around them are rank 0's words for a
   * terminal: the results folder has them. */
  if (tach_progress_parse (line, &progress) && progress.ranks == self->config.ranks)
    {
      g_array_index (self->progress, TachProgress, progress.rank) = progress;
      g_signal_emit (self, signals[PROGRESS], 0, progress.rank);
    }
  g_data_input_stream_read_line_async (self->lines, G_PRIORITY_DEFAULT, NULL, on_line, self);
}

static GSubprocess *
spawn (const TachConfig *config, const char *folder, gboolean progress, GError **error)
{
  GSubprocessFlags flags = G_SUBPROCESS_FLAGS_STDERR_PIPE
                           | (progress ? G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                       : G_SUBPROCESS_FLAGS_STDOUT_SILENCE);
  g_autoptr(GSubprocessLauncher) launcher = NULL;
  g_auto(GStrv) argv = NULL;

  if (!tach_ranks_job_check (error))
    return NULL;
  if (g_mkdir_with_parents (folder, 0755) != 0)
    {
      int saved_errno = errno;

      g_set_error (error, TACH_ERROR, TACH_ERROR_IO, _("Cannot make the results folder %s: %s"),
                   folder, g_strerror (saved_errno));
      return NULL;
    }
  launcher = make_launcher (flags);
  argv = tach_ranks_job_argv (config, folder, progress);
  return g_subprocess_launcher_spawnv (launcher, (const char *const *) argv, error);
}

static char *folder_root;

void
tach_ranks_job_set_root (const char *root)
{
  g_free (folder_root);
  folder_root = g_strdup (root);
}

/* A new folder for a job's results, under the root: "ranks-DATE-TIME-XXXXXX",
 * made now (NULL when it cannot be; spawn() then says why). */
static char *
new_folder (void)
{
  g_autoptr(GDateTime) now = g_date_time_new_now_local ();
  g_autofree char *stamp = g_date_time_format (now, "%Y%m%d-%H%M%S");
  g_autofree char *name = g_strdup_printf ("ranks-%s-XXXXXX", stamp);
  g_autofree char *root = folder_root != NULL
                          ? g_strdup (folder_root)
                          : g_build_filename (g_get_user_cache_dir (), "tach", "ranks", NULL);
  char *path = g_build_filename (root, name, NULL);

  g_mkdir_with_parents (root, 0755);
  if (g_mkdtemp (path) == NULL)
    {
      /* spawn() makes it, or reports why it cannot. */
      g_free (path);
      path = g_build_filename (root, "ranks", NULL);
    }
  return path;
}

TachRanksJob *
tach_ranks_job_new (const TachConfig *config)
{
  TachRanksJob *self = g_object_new (TACH_TYPE_RANKS_JOB, NULL);
  TachProgress none;

  tach_config_copy (&self->config, config);
  self->folder = new_folder ();
  g_array_set_size (self->progress, 0);
  for (guint r = 0; r < config->ranks; r++)
    {
      tach_progress_init (&none, r, config->ranks, config->steps);
      none.step = 0;
      none.window = 0;
      g_array_append_val (self->progress, none);
    }
  return self;
}

gboolean
tach_ranks_job_start (TachRanksJob *self, GError **error)
{
  g_return_val_if_fail (TACH_IS_RANKS_JOB (self), FALSE);
  g_return_val_if_fail (self->process == NULL, FALSE);

  self->process = spawn (&self->config, self->folder, TRUE, error);
  if (self->process == NULL)
    return FALSE;
  self->running = TRUE;
  self->pending = 3;
  /* The job keeps itself until its three ends have come in. */
  g_object_ref (self);
  self->lines = g_data_input_stream_new (g_subprocess_get_stdout_pipe (self->process));
  self->errors = G_MEMORY_OUTPUT_STREAM (g_memory_output_stream_new_resizable ());
  g_data_input_stream_read_line_async (self->lines, G_PRIORITY_DEFAULT, NULL, on_line, self);
  g_output_stream_splice_async (G_OUTPUT_STREAM (self->errors),
                                g_subprocess_get_stderr_pipe (self->process),
                                G_OUTPUT_STREAM_SPLICE_CLOSE_SOURCE, G_PRIORITY_DEFAULT, NULL,
                                on_errors_read, self);
  g_subprocess_wait_async (self->process, NULL, on_exited, self);
  return TRUE;
}

void
tach_ranks_job_stop (TachRanksJob *self)
{
  g_return_if_fail (TACH_IS_RANKS_JOB (self));
  if (!self->running)
    return;
  /* The ranks themselves, once all can take it; else (still starting, or
   * a second Stop) mpirun's end of the job. */
  if (!self->stopped && signal_ranks (self->process, self->config.ranks))
    {
      self->stopped = TRUE;
      return;
    }
  self->stopped = TRUE;
  signal_group (self->process, SIGTERM);
}

gboolean
tach_ranks_job_is_running (TachRanksJob *self)
{
  g_return_val_if_fail (TACH_IS_RANKS_JOB (self), FALSE);
  return self->running;
}

gboolean
tach_ranks_job_was_stopped (TachRanksJob *self)
{
  g_return_val_if_fail (TACH_IS_RANKS_JOB (self), FALSE);
  return self->stopped;
}

const TachConfig *
tach_ranks_job_get_config (TachRanksJob *self)
{
  g_return_val_if_fail (TACH_IS_RANKS_JOB (self), NULL);
  return &self->config;
}

const char *
tach_ranks_job_get_folder (TachRanksJob *self)
{
  g_return_val_if_fail (TACH_IS_RANKS_JOB (self), NULL);
  return self->folder;
}

const TachProgress *
tach_ranks_job_get_progress (TachRanksJob *self, guint rank)
{
  const TachProgress *progress;

  g_return_val_if_fail (TACH_IS_RANKS_JOB (self), NULL);
  if (rank >= self->progress->len)
    return NULL;
  progress = &g_array_index (self->progress, TachProgress, rank);
  return progress->step > 0 || progress->window > 0 ? progress : NULL;
}

const GError *
tach_ranks_job_get_error (TachRanksJob *self)
{
  g_return_val_if_fail (TACH_IS_RANKS_JOB (self), NULL);
  return self->error;
}

gboolean
tach_ranks_job_has_results (TachRanksJob *self)
{
  g_return_val_if_fail (TACH_IS_RANKS_JOB (self), FALSE);
  return self->has_results;
}

/* ---------------------------------------------------------- synchronous */

typedef struct {
  GSubprocess *process;
  guint        ranks;
} SyncJob;

static void
on_cancelled (GCancellable *cancellable, gpointer data)
{
  SyncJob *job = data;

  (void) cancellable;
  if (!signal_ranks (job->process, job->ranks))
    signal_group (job->process, SIGTERM);
}

TachRun *
tach_ranks_job_run_sync (const TachConfig *config, GCancellable *cancellable, GError **error)
{
  g_autofree char *folder = new_folder ();
  g_autoptr(GSubprocess) process = NULL;
  g_autofree char *errors = NULL;
  g_autoptr(GPtrArray) runs = NULL;
  g_autoptr(GError) local_error = NULL;
  gulong handler = 0;
  gboolean stopped;
  SyncJob job;

  process = spawn (config, folder, FALSE, error);
  if (process == NULL)
    return NULL;
  job.process = process;
  job.ranks = config->ranks;
  if (cancellable != NULL)
    handler = g_cancellable_connect (cancellable, G_CALLBACK (on_cancelled), &job, NULL);
  g_subprocess_communicate_utf8 (process, NULL, NULL, NULL, &errors, NULL);
  g_subprocess_wait (process, NULL, NULL);
  if (handler != 0)
    g_cancellable_disconnect (cancellable, handler);
  stopped = g_cancellable_is_cancelled (cancellable);
  if (!stopped && (!g_subprocess_get_if_exited (process)
                   || g_subprocess_get_exit_status (process) != 0))
    {
      g_propagate_error (error, error_from (g_subprocess_get_if_exited (process)
                                            ? g_subprocess_get_exit_status (process) : -1,
                                            errors));
      return NULL;
    }
  if (!folder_has_results (folder))
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_CANCELLED, _("Stopped"));
      return NULL;
    }
  runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  if (!tach_results_load (folder, runs, NULL, error))
    return NULL;
  if (runs->len == 0)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA, _("%s holds no run"), folder);
      return NULL;
    }
  if (stopped)
    g_set_error_literal (error, TACH_ERROR, TACH_ERROR_CANCELLED, _("Stopped"));
  return tach_run_ref (runs->pdata[runs->len - 1]);
}

/* ---------------------------------------------------------------- class */

static void
tach_ranks_job_finalize (GObject *object)
{
  TachRanksJob *self = TACH_RANKS_JOB (object);

  tach_config_clear (&self->config);
  g_free (self->folder);
  g_clear_object (&self->process);
  g_clear_object (&self->lines);
  g_clear_object (&self->errors);
  g_clear_pointer (&self->progress, g_array_unref);
  g_clear_error (&self->error);
  G_OBJECT_CLASS (tach_ranks_job_parent_class)->finalize (object);
}

static void
tach_ranks_job_class_init (TachRanksJobClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = tach_ranks_job_finalize;

  /* A rank's progress line came in: its rank. */
  signals[PROGRESS] = g_signal_new ("progress", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                    0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_UINT);
  /* mpirun has exited and its output has been read. */
  signals[FINISHED] = g_signal_new ("finished", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                    0, NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void
tach_ranks_job_init (TachRanksJob *self)
{
  self->progress = g_array_new (FALSE, TRUE, sizeof (TachProgress));
}
