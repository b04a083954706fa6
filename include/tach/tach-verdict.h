/* tach-verdict.h: a value with its 95% interval, and the verdict it gives.
 *
 * Every ratio, difference and share Tach shows carries an interval; where
 * the interval holds "no change" the value is within noise (`~` in the
 * CLI and CSV, "within noise" in the window), never a finding.  The
 * statistics that make the intervals are the engine's (engine/stats);
 * this header is what a front end reads.
 *
 * Threads: any; nothing here keeps state.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The confidence level of every interval Tach shows. */
#define TACH_STATS_LEVEL 0.95

/* A value and its interval; both ends are NaN where the data cannot give
 * a 95% interval (too few values), and such a value is no finding. */
typedef struct {
  double value;
  double lo, hi;
} TachInterval;

typedef enum {
  /* Too little data for an interval: no verdict either way. */
  TACH_VERDICT_UNKNOWN,
  /* The interval holds "no change" (a ratio of 1, a difference of 0). */
  TACH_VERDICT_WITHIN_NOISE,
  /* The interval lies wholly on one side of "no change". */
  TACH_VERDICT_SIGNIFICANT,
} TachVerdict;

/* "significant", "within-noise", or "" for TACH_VERDICT_UNKNOWN: the
 * words of the CSV's verdict columns (not translated). */
const char  *tach_verdict_to_string (TachVerdict verdict);
/* The verdict of @iv against @no_change (1 for a ratio, 0 for a
 * difference): significant when the interval excludes it, so that a
 * verdict never disagrees with the interval shown beside it. */
TachVerdict  tach_interval_verdict (const TachInterval *iv, double no_change);
/* Whether @iv has both ends. */
gboolean     tach_interval_is_known (const TachInterval *iv);
/* Half the interval's width over |value| (INFINITY when unknown or when
 * the value is 0): "known to within +-5%" is a relative half-width of
 * 0.05. */
double       tach_interval_rel_halfwidth (const TachInterval *iv);
/* The ratio b/a of two values measured apart, each with its interval
 * (two runs' median rates): the intervals combine on a log scale.
 * Returns the verdict against 1. */
TachVerdict  tach_interval_ratio (const TachInterval *a, const TachInterval *b,
                                  TachInterval *ratio);
/* How many times narrower @iv must become for a value the size of its
 * value to be told from @no_change: its half-width on the side of
 * @no_change over the distance to it (1 or less: resolved already;
 * INFINITY when unknown or when the value is @no_change itself).  Rounds
 * needed grow as its square. */
double       tach_interval_shrink_needed (const TachInterval *iv, double no_change);

G_END_DECLS
