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

#include <glib.h>

#include "tach-engine.h"

G_BEGIN_DECLS

/* Exit codes, as documented in --help. */
enum {
  TACH_CLI_EXIT_OK = 0,
  TACH_CLI_EXIT_FAILURE = 1,     /* a runtime failure: device, data, IO, library */
  TACH_CLI_EXIT_USAGE = 2,       /* bad usage or configuration */
  TACH_CLI_EXIT_INTERRUPTED = 130, /* stopped by SIGINT, as shells report it */
};

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
  char   *csv_dir;    /* owned, or NULL */
  char   *from, *to;  /* owned: explain's sides (a preset or "k=v ..."), or NULL */
  guint   rounds;     /* explain's rounds */
  char   *tensorboard_dir; /* owned, or NULL */
  GArray *knobs;      /* owned; element type TachCliKnob */
} TachCliOptions;

/* The hidden command `_generate bash-completion|man` (tach-cli-gen.c). */
int tach_cli_command_generate (int argc, char **argv);

/* Prints "tach-cli: MESSAGE" and the hint to try --help on stderr. */
void  tach_cli_usage_error (const char *format, ...) G_GNUC_PRINTF (1, 2);

/* The exit code for an engine error: 2 for configuration errors, 1 for the
 * rest. */
int   tach_cli_exit_code_for_error (const GError *error);

/* Builds the configuration of one run: the workload's defaults, then
 * @preset (may be NULL), then the explicit knobs in the order given. */
gboolean tach_cli_build_config (const TachCliOptions *options,
                                const char           *preset,
                                TachConfig           *config,
                                GError              **error);

/* Prints "WORKLOAD (TASK) on DEVICE (NAME), batch B, N steps (W warm-up)"
 * and, with @with_preset, the preset. */
void     tach_cli_print_header (const TachConfig     *config,
                                const TachDeviceInfo *device,
                                gboolean              with_preset);
/* Appends @text to @line padded to @width characters (not bytes); a
 * right-aligned column also gets a two-space gutter before it. */
void     tach_cli_pad (GString *line, const char *text, int width, gboolean right);
/* Whether --csv DIR can be written (or created), before anything runs. */
gboolean tach_cli_check_csv_dir (const char *dir, GError **error);
/* Appends @runs to DIR/runs.csv and samples.csv; reports an error itself. */
gboolean tach_cli_write_csv (const char *dir, GPtrArray *runs);

/* Sets the knobs given on the command line, in the order given. */
gboolean tach_cli_apply_knobs (const TachCliOptions *options,
                               TachConfig           *config,
                               GError              **error);

int   tach_cli_command_run     (const TachCliOptions *options);
int   tach_cli_command_sweep   (const TachCliOptions *options);
int   tach_cli_command_explain (const TachCliOptions *options);

G_END_DECLS
