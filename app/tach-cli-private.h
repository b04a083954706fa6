/* tach-cli-private.h: what the parts of tach-cli share.
 *
 * tach-cli.c parses the command line and runs the small commands;
 * tach-cli-run.c runs workloads on the engine thread (run and sweep), shows
 * the live line and the summaries, and writes the CSV; tach-cli-explain.c
 * explains the gap between two configurations knob by knob.
 *
 * Threads: everything here runs on the main thread.
 */
#pragma once

#include <stdio.h>

#include <glib.h>

#include "tach-engine.h"
#include "tach-progress.h"

G_BEGIN_DECLS

/* Exit codes, as documented in --help. */
enum {
  TACH_CLI_EXIT_OK = 0,
  TACH_CLI_EXIT_FAILURE = 1,     /* a runtime failure: device, data, IO, library */
  TACH_CLI_EXIT_USAGE = 2,       /* bad usage or configuration */
  TACH_CLI_EXIT_INTERRUPTED = 130, /* stopped by SIGINT, as shells report it */
  /* Stopped by SIGTERM: 143, by SIGHUP: 129 (128 + the signal's number). */
};

/* The signals that stop a command as Ctrl+C does: SIGINT, SIGTERM (kill,
 * timeout, a service manager) and SIGHUP (the terminal closed).  Each
 * stops the run in progress after its step; the command then reports and
 * writes what was measured, and exits 128 + the first signal's number. */
#define TACH_CLI_N_STOP_SIGNALS 3
typedef struct TachCliStop TachCliStop;
typedef struct {
  TachCliStop *stop;    /* borrowed: the one it belongs to */
  int          signo;
} TachCliStopWatch;
struct TachCliStop {
  void      (*on_stop) (gpointer data);  /* main thread, at each signal */
  gpointer    data;
  int         signo;    /* the first stop signal that came, or 0 */
  guint       ids[TACH_CLI_N_STOP_SIGNALS];
  TachCliStopWatch watch[TACH_CLI_N_STOP_SIGNALS];
};
/* Installs the handlers (g_unix_signal_add on the default main context);
 * @stop must stay where it is until tach_cli_stop_unwatch(). */
void tach_cli_stop_watch   (TachCliStop *stop, void (*on_stop) (gpointer data), gpointer data);
void tach_cli_stop_unwatch (TachCliStop *stop);
/* @status, or 128 + the signal's number when a stop signal came and
 * @status is TACH_CLI_EXIT_OK (under mpirun, for SIGTERM alone: ranks
 * stopped by SIGINT or SIGHUP end as a whole run ends). */
int  tach_cli_stop_exit_status (const TachCliStop *stop, int status);

/* One knob given on the command line, in the order given. */
typedef struct {
  char *key;    /* owned */
  char *value;  /* owned */
} TachCliKnob;

/* What the run and sweep commands need from the command line. */
typedef struct {
  char   *workload;   /* owned, or NULL when not given */
  char   *preset;     /* owned, or NULL */
  char   *presets;    /* owned: sweep's list ("a,b" or "all"), or NULL */
  char   *vary;       /* owned: sweep's --vary KNOB=SPEC, or NULL */
  char   *csv_dir;    /* owned, or NULL */
  char   *from, *to;  /* owned: explain's sides (a preset or "k=v ..."), or NULL */
  guint   rounds;     /* explain's rounds */
  double  budget_s;   /* explain's time budget for adding rounds (0: none) */
  double  target;     /* explain's target: a ratio to +-target (0.05) */
  char   *tensorboard_dir; /* owned, or NULL */
  char   *trace_path;      /* owned, or NULL: run's --trace FILE */
  gboolean progress;       /* run's --progress: tach-progress.h lines on stdout */
  gboolean scaling;        /* run --scaling: against one process, under mpirun */
  char   *scaling_ranks;   /* owned: run --scaling-ranks LIST ("1,2,4"), or NULL: N */
  GArray *knobs;      /* owned; element type TachCliKnob */
} TachCliOptions;

/* The hidden command `_generate bash-completion|man` (tach-cli-gen.c). */
int tach_cli_command_generate (int argc, char **argv);

/* tach-cli-config.c: what every command shares. */

/* Prints "tach-cli: MESSAGE" and the hint to try --help on stderr. */
void  tach_cli_usage_error (const char *format, ...) G_GNUC_PRINTF (1, 2);
/* Under mpirun, on a rank other than 0 started with rank 0's command line:
 * its usage errors are rank 0's, which rank 0 says (main() sets it). */
extern gboolean tach_cli_quiet_usage;

/* The exit code for an engine error: 2 for configuration errors, 1 for the
 * rest. */
int   tach_cli_exit_code_for_error (const GError *error);

/* Builds the configuration of one run: the workload's defaults, then
 * @preset (may be NULL), then, under mpirun, ranks = the job's size, then
 * the explicit knobs in the order given. */
gboolean tach_cli_build_config (const TachCliOptions *options,
                                const char           *preset,
                                TachConfig           *config,
                                GError              **error);
/* Says on stderr which knobs given on the command line @config does not
 * honour: those that do not apply to it (the reason the window greys
 * their rows with) and a warm-up cut to half the steps. */
void     tach_cli_print_notices (const TachCliOptions *options, const TachConfig *config);
/* Prints on stdout, once the first run of round 1 took @first_s seconds,
 * the expected time for the @runs runs of the @rounds given rounds (each
 * as long as the first: an estimate, said so) and, with @budget_s above 0,
 * the most the budget adds: "about 2 min 30 s for the 3 given rounds
 * (24 runs), then at most 45 s more".  Rank 0's alone under mpirun. */
void     tach_cli_print_estimate (double first_s, guint runs, guint rounds, double budget_s);
/* Sets the knobs given on the command line, in the order given. */
gboolean tach_cli_apply_knobs (const TachCliOptions *options,
                               TachConfig           *config,
                               GError              **error);

/* Prints "WORKLOAD (TASK) on DEVICE (NAME), batch B, N steps (W warm-up)"
 * and, with @with_preset, the preset.  @varied (a knob's name, or NULL) is
 * a sweep's varied knob, shown with @varied_values in place of the first
 * point's value. */
void     tach_cli_print_header (const TachConfig     *config,
                                const TachDeviceInfo *device,
                                gboolean              with_preset,
                                const char           *varied,
                                const char           *varied_values);
/* Appends @text to @line padded to @width characters (not bytes); a
 * right-aligned column also gets a two-space gutter before it. */
void     tach_cli_pad (GString *line, const char *text, int width, gboolean right);
/* One column of a table row, for tach_cli_pad_cells(). */
typedef struct {
  const char *text;
  int         width;
  gboolean    right;
} TachCliCell;
/* tach_cli_pad() over @n_cells cells in order. */
void     tach_cli_pad_cells (GString *line, const TachCliCell *cells, guint n_cells);
/* Whether the --csv and --tensorboard folders given can be written (or
 * created), before anything runs. */
gboolean tach_cli_check_outputs (const TachCliOptions *options, GError **error);
/* Appends @runs to DIR/runs.csv and samples.csv; reports an error itself. */
gboolean tach_cli_write_csv (const char *dir, GPtrArray *runs);

/* Where --progress lines go: stdout, or under mpirun on ranks other than 0
 * (whose stdout is silenced) the stdout they were given; NULL: stdout. */
extern FILE *tach_cli_progress_out;

/* Under mpirun (else TRUE at once): checks that every rank was started
 * with @config (rank 0 prints the difference; FALSE then), and on ranks
 * other than 0, which print nothing and write no file, points *@options at
 * @quiet, a copy without outputs.  Collective. */
gboolean tach_cli_join_ranks (const TachConfig *config, const TachCliOptions **options,
                              TachCliOptions *quiet);

/* State shared by every run of one command. */
typedef struct {
  GMainLoop *loop;
  TachRun   *run;           /* borrowed: the run in progress, or NULL */
  GArray    *scratch;       /* drained samples, reused */
  const char *label;        /* borrowed: "tuned 2/4" in a sweep, or NULL */
  gboolean   no_evaluation; /* a sweep's runs: no test-set evaluation (tach_run_set_evaluate) */
  gboolean   live;          /* stderr is a terminal: show the live line */
  gboolean   live_shown;    /* a live line is on screen and must be cleared */
  TachCliStop stop;         /* SIGINT, SIGTERM, SIGHUP; stop.signo: interrupted */
  int        header;        /* print a header once the device is known:
                               0 no, 1 with the preset, 2 without */
  const char *varied;       /* borrowed: sweep --vary's knob for the header, or NULL */
  const char *varied_values; /* borrowed: its values, as the header shows them */

  /* Progress of the run in progress, from the drained samples. */
  guint64    total_steps;   /* warm-up + measured */
  guint64    done_steps;
  double     last_loss;
  guint64    window_steps;  /* at the previous tick */
  double     window_wall_s;   /* monotonic time of the last tick, s */
  double     rate;          /* steps/s over the last tick, 0 before the first */
  gint64     started_us;    /* monotonic time the run started */
  gboolean   eval_said;     /* without a live line: the evaluation's start was said */
  /* --progress: the lines of tach-progress.h, from the drained samples. */
  gboolean   progress_on;
  TachProgress progress;

  /* --csv DIR: samples.csv streams as the runs go; a run is added once it
   * has samples (so exactly the runs with results get a row). */
  TachCsvStream *csv;       /* owned, or NULL */
} TachCliSession;

void      tach_cli_session_init  (TachCliSession *session);
/* Discards a CSV stream not committed (the folder stays as it was). */
void      tach_cli_session_clear (TachCliSession *session);
/* Opens --csv DIR (NULL: none) for the session's runs, locking it; reports
 * an error itself. */
gboolean  tach_cli_session_open_csv   (TachCliSession *session, const char *dir);
/* Writes the session's runs to its CSV folder (runs.csv and the rest of
 * samples.csv) and renames its files; nothing when no run had results.
 * Reports an error itself. */
gboolean  tach_cli_session_commit_csv (TachCliSession *session);
/* Installs the session's stop signals (SIGINT, SIGTERM, SIGHUP): each
 * stops the run in progress after its step and marks the session
 * interrupted.  tach_cli_session_finish() removes them. */
void      tach_cli_session_watch_signals (TachCliSession *session);
/* Runs one configuration to its end.  Returns the run (also when it failed
 * or was cancelled) or NULL when it could not start; *error is set when it
 * did not finish normally. */
TachRun  *tach_cli_run_one       (TachCliSession   *session,
                                  const TachConfig *config,
                                  GError          **error);
/* Whether a run ran far enough to be worth a CSV row: a stopped or failed
 * run is, with the steps it measured (its row says how it ended). */
gboolean  tach_cli_run_has_results (TachRun *run);
/* What both sweeps do first: the workload, the preset names (the
 * workload's own for "all"; alone, not the data-parallel ones), under
 * mpirun the ranks' agreement (tach_cli_join_ranks: *@options may become
 * @quiet) and a check of the --csv folder.  Returns TACH_CLI_EXIT_OK and
 * sets *names, or reports and returns the exit status. */
int       tach_cli_sweep_start (const TachCliOptions **options, TachCliOptions *quiet,
                                TachWorkload *workload, GStrv *names);
/* What `run` and both sweeps do last: the CSV and TensorBoard logs of
 * @runs (both, whatever became of the other), the interrupted status, the
 * session's signal handlers and the session itself.  Returns the status. */
int       tach_cli_session_finish (const TachCliOptions *options, TachCliSession *session,
                                   GPtrArray *runs, int status);
/* A summary's numbers as the run report and the sweep table both show
 * them: one place for their formats. */
typedef struct {
  char *median, *p10, *p90;      /* steps/s */
  char *items;                   /* items/s */
  char *first, *final;           /* losses */
  char *feed, *compute, *sync, *host, *peak;  /* shares */
} TachCliSummaryText;
void     tach_cli_summary_text_init  (TachCliSummaryText *text, const TachSummary *s);
void     tach_cli_summary_text_clear (TachCliSummaryText *text);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (TachCliSummaryText, tach_cli_summary_text_clear)
/* Writes the runs as TensorBoard event files; reports an error itself. */
gboolean tach_cli_write_tensorboard (const char *dir, GPtrArray *runs);
/* @value in @format, or "–" when it is not a finite number. */
char     *tach_cli_format_number (double value, const char *format);
/* A scaling efficiency with its interval: "94% (90–98%)", "not measured". */
char     *tach_cli_format_efficiency (double value, double lo, double hi);
/* Prints a run's summary as `run` does. */
void      tach_cli_print_summary (TachRun *run);
/* `run --scaling` under mpirun (tach-cli-scaling.c): @config on its N
 * ranks against one process at its batch and at N times it, in rounds. */
int       tach_cli_run_scaling (const TachCliOptions *options, const TachConfig *config);

int   tach_cli_command_run     (const TachCliOptions *options);
int   tach_cli_command_sweep   (const TachCliOptions *options);
/* sweep with --vary: the grid of presets x the knob's values. */
int   tach_cli_command_sweep_vary (const TachCliOptions *options);
int   tach_cli_command_explain (const TachCliOptions *options);

G_END_DECLS
