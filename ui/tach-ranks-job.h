/* tach-ranks-job.h: a data-parallel run launched from the window.
 *
 * The window is one process; N ranks are N processes that mpirun starts.
 * So a run of more than one rank runs `mpirun -np N tach-cli run
 * --progress --csv DIR ...` of this build's tach-cli with the same
 * settings, through GSubprocess, without blocking the main loop.  Every
 * rank writes a progress line on stdout about twice a second
 * (tach-progress.h), which the job parses as mpirun hands them on; rank 0
 * writes the results to DIR as it does for any --csv run, and the window
 * opens that folder when the job ends, as it opens saved results.  Stop
 * sends SIGINT to each rank (mpirun's children), as Ctrl+C stops tach-cli
 * alone: the ranks agree on a step to stop after, and the run ends there
 * as a whole run ends, every rank's rows in rank 0's folder, the job
 * finished normally.  Before every rank can take it (still starting), or
 * at a second Stop, SIGTERM to mpirun's process group: mpirun ends the job
 * (SIGTERM to the ranks a second later, SIGKILL a second after that), the
 * ranks give up their waits on each other, and rank 0 writes the rows it
 * has if it can within that second.
 */
#pragma once

#include <gio/gio.h>
#include <tach-engine.h>
#include <tach-progress.h>

G_BEGIN_DECLS

#define TACH_TYPE_RANKS_JOB (tach_ranks_job_get_type ())
G_DECLARE_FINAL_TYPE (TachRanksJob, tach_ranks_job, TACH, RANKS_JOB, GObject)

/* Whether this build can launch ranks: built with MPI, mpirun on PATH,
 * its tach-cli found.  Otherwise FALSE with TACH_ERROR_UNSUPPORTED and a
 * message that says how to install what is missing.  Any thread. */
gboolean      tach_ranks_job_check        (GError          **error);
/* The command a job of @config (config->ranks ranks) runs, writing its
 * results into @dir.  Any thread. */
GStrv         tach_ranks_job_argv         (const TachConfig *config,
                                           const char       *dir,
                                           gboolean          progress);

/* Where jobs put their results folders from now on: @root (created as
 * needed; NULL: the user's cache, ~/.cache/tach/ranks/).  Tests keep
 * theirs in a temporary folder.  Main thread, before any job. */
void          tach_ranks_job_set_root     (const char       *root);
/* A job of @config (config->ranks > 1), its results in a new folder under
 * the root.  Main thread from here on. */
TachRanksJob *tach_ranks_job_new          (const TachConfig *config);
/* Starts mpirun; FALSE with the reason when it cannot (then nothing runs). */
gboolean      tach_ranks_job_start        (TachRanksJob     *self,
                                           GError          **error);
/* Ends the job as Stop ends a run: the ranks stop together and rank 0
 * keeps every rank's rows.  Never blocks. */
void          tach_ranks_job_stop         (TachRanksJob     *self);
gboolean      tach_ranks_job_is_running   (TachRanksJob     *self);
gboolean      tach_ranks_job_was_stopped  (TachRanksJob     *self);
const TachConfig *tach_ranks_job_get_config (TachRanksJob   *self);
const char   *tach_ranks_job_get_folder   (TachRanksJob     *self);
/* Rank @rank's last progress line, or NULL before its first. */
const TachProgress *tach_ranks_job_get_progress (TachRanksJob *self,
                                                 guint         rank);
/* Once ended: why it failed (mpirun's or the ranks' own words), or NULL. */
const GError *tach_ranks_job_get_error    (TachRanksJob     *self);
/* Once ended: whether the folder holds results to open. */
gboolean      tach_ranks_job_has_results  (TachRanksJob     *self);

/* For a sweep's worker thread: runs a job of @config to its end, blocking,
 * and returns its run as read back from its results folder (stopped when
 * @cancellable is cancelled), or NULL with @error.  Any thread but the
 * main one. */
TachRun      *tach_ranks_job_run_sync     (const TachConfig *config,
                                           GCancellable     *cancellable,
                                           GError          **error);

G_END_DECLS
