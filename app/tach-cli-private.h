/* tach-cli-private.h: what the parts of tach-cli share.
 *
 * tach-cli.c parses the command line and runs the small commands;
 * tach-cli-run.c runs workloads on the engine thread (run and sweep), shows
 * the live line and the summaries, and writes the CSV.
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
  GArray *knobs;      /* owned; element type TachCliKnob */
} TachCliOptions;

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

int   tach_cli_command_run   (const TachCliOptions *options);
int   tach_cli_command_sweep (const TachCliOptions *options);

G_END_DECLS
