/* tach-progress.h: a run's progress as lines of text that a front end reads
 * from another process.
 *
 * `tach-cli run --progress` writes one such line on stdout about twice a
 * second while it runs, and one as it ends; under mpirun every rank writes
 * its own, and mpirun merges the ranks' lines into its stdout.  The window
 * runs `mpirun -np N tach-cli run --progress ...` for a multi-rank run and
 * shows each rank's rate and phases from them, live:
 *
 *   tach-progress rank=1 ranks=2 step=40 steps=200 window=9 warmup=0 wall_s=1.62 rate=24.8
 *     step_ms=40.3 feed_ms=0.1 compute_ms=30.2 sync_ms=0 host_ms=0.4 comm_ms=9.1
 *     pack_ms=0.5 loss=0.6931 end=1
 *
 * (one line, written with one write(2) so that nothing the process writes
 * splits it; numbers in the C locale, "nan" where not observed; end=1
 * marks it whole).  The
 * figures are means over the steps since the rank's previous line
 * (@window of them; warm-up steps only while there are no others).  While
 * the run goes on a rank cannot tell its wait for the slowest rank from
 * the transfer (that needs every rank's arrival, which rank 0 gathers at
 * the end: tach-run-ranks.c), so comm_ms holds both until the run's
 * results are read.  Any thread; a TachProgress is used by one at a time.
 */
#pragma once

#include "tach-engine.h"

G_BEGIN_DECLS

#define TACH_PROGRESS_PREFIX "tach-progress "

typedef struct {
  guint    rank, ranks;
  guint64  step;        /* steps done */
  guint64  steps;       /* steps in all, warm-up included */
  guint    window;      /* steps the means cover (0: none since the last line) */
  gboolean warmup;      /* they are warm-up steps */
  double   wall_s;      /* at the end of the last step, since the first began; NaN before */
  double   rate;        /* steps/s over them */
  double   step_ms, feed_ms, compute_ms, sync_ms, host_ms, comm_ms, pack_ms;
  double   loss;        /* the last step's with a loss, NaN before */

  /*< private >*/
  double   sums[2][7];  /* [warm-up?][phase]: the window's sums */
  guint    counts[2];
} TachProgress;

void     tach_progress_init      (TachProgress *progress, guint rank, guint ranks,
                                  guint64 steps);
/* Adds a step's sample to the window. */
void     tach_progress_add       (TachProgress *progress, const TachSample *sample);
/* The line for the window so far (with its '\n'), which then starts anew;
 * free with g_free(). */
char    *tach_progress_take_line (TachProgress *progress);
/* Reads a line written by tach_progress_take_line() (with or without its
 * '\n') into @out; FALSE for any other line, and for one that lacks a key
 * this version writes (a line cut short).  A line that holds other words
 * or the start of another before a whole one (merged by mpirun) is read
 * from the last line begun. */
gboolean tach_progress_parse     (const char *line, TachProgress *out);

G_END_DECLS
