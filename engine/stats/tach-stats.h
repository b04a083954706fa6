/* tach-stats.h: the statistics behind Tach's verdicts: 95% confidence
 * intervals of a median, a mean, a ratio and a fraction, and whether an
 * interval resolves a change or leaves it within noise.
 *
 * A leaf of the engine: pure functions over arrays of doubles that call
 * nothing but GLib and libm, so anyone may call them (runs, summaries,
 * explain, sweep, the window).  Every choice of statistic is explained
 * beside its function in tach-stats.c.
 *
 * The interval and verdict types, and what app/ and ui/ may ask of them,
 * are public (include/tach/tach-verdict.h); this header is the engine's.
 *
 * Threads: any; nothing here keeps state.
 */
#pragma once

#include "tach-verdict.h"

G_BEGIN_DECLS

/* The median of @n values (copied; NaN for none). */
double       tach_stats_median (const double *x, gsize n);
/* The median of @n values in time order (a run's step times) with a 95%
 * interval from order statistics, widened for the series'
 * autocorrelation.  Needs about 8 values or more for an interval. */
void         tach_stats_median_ci (const double *x, gsize n, TachInterval *out);
/* The same in pieces, for a caller that reads its values in passes
 * rather than keeping them (a run's summary over its sample store): after
 * the median, one pass in time order through a TachStatsSigns gives the
 * series' inflation, and tach_stats_median_ranks() the two ranks (0-based,
 * ascending) whose values bound the interval; FALSE when @n values are too
 * few for a 95% interval. */
/* Autocorrelations are summed at most this far: step-time disturbances (a
 * build, a browser's burst) last tens of steps; past this the estimates
 * are mostly noise. */
#define TACH_STATS_MAX_LAG 64
typedef struct {
  double  median;
  guint64 n;
  double  sum, sum_sq;
  double  lag[TACH_STATS_MAX_LAG + 1];   /* sums of s_i s_(i+k) */
  gint8   ring[TACH_STATS_MAX_LAG];      /* the last signs */
} TachStatsSigns;

void         tach_stats_signs_init (TachStatsSigns *signs, double median);
void         tach_stats_signs_add (TachStatsSigns *signs, double x);
double       tach_stats_signs_inflation (const TachStatsSigns *signs);
gboolean     tach_stats_median_ranks (guint64 n, double inflation, guint64 *lo, guint64 *hi);

/* The mean of @n independent values (one per round) with a Student-t 95%
 * interval; needs 2 values or more. */
void         tach_stats_mean_ci (const double *x, gsize n, TachInterval *out);
/* The ratio b/a of @n pairs measured in the same rounds (a's and b's
 * rates in round i): the geometric mean of the per-round ratios, with a
 * Student-t interval of their logarithms. */
void         tach_stats_ratio_paired (const double *a, const double *b, gsize n,
                                      TachInterval *out);
/* The ratio b/a of two values measured apart (two runs' median rates, each
 * with its interval): the ratio of the values, with an interval that
 * combines the two on a log scale. */
void         tach_stats_ratio_unpaired (const TachInterval *a, const TachInterval *b,
                                        TachInterval *out);
/* The mean difference b - a of @n pairs measured in the same rounds, with
 * a Student-t interval of the per-round differences. */
void         tach_stats_diff_paired (const double *a, const double *b, gsize n,
                                     TachInterval *out);
/* The mean of @n positive values (one per round: step times) with a 95%
 * interval on the log scale, so that it cannot reach 0 or below: the
 * arithmetic mean (what shares of it add up to) times exp (-+t s / sqrt n)
 * with s the standard deviation of the values' logarithms.  Unknown for
 * fewer than 2 values or a value that is not above 0. */
void         tach_stats_mean_ci_positive (const double *x, gsize n, TachInterval *out);
/* The speed-up t(a) / t(b) of b over a from step times of the same @n
 * rounds: the geometric mean of the per-round ratios with a Student-t
 * interval of their logarithms (tach_stats_ratio_paired), so it is
 * bounded wherever it has an interval, and into @gap (may be NULL) the
 * gap t(b) - t(a): the mean of the per-round differences (what shares add
 * up to), its interval the speed-up's mapped through a's mean time (a
 * gap above 0, b slower, is a speed-up below 1), so the two hold "no
 * change" together.  Returns the comparison's one verdict, against 1. */
TachVerdict  tach_stats_speedup_paired (const double *a, const double *b, gsize n,
                                        TachInterval *speedup, TachInterval *gap);
/* The fraction mean (part) / mean (whole) of @n pairs from the same
 * rounds (a knob's share of a gap), with a delta-method interval.  The
 * value is NaN (and the interval unknown) unless @whole_verdict (the
 * gap's, from the comparison's one statistic) is significant: a share of
 * a gap within noise is no fraction. */
void         tach_stats_fraction_paired (const double *part, const double *whole, gsize n,
                                         TachVerdict whole_verdict, TachInterval *out);
/* Shuffles @a (@n values) in place, every order alike likely (Fisher-Yates
 * on @rand): the order of a round's configurations, so that drift and
 * load fall on no configuration more than another. */
void         tach_stats_shuffle (GRand *rand, guint *a, guint n);

/* The two-sided 97.5% quantile of Student's t with @df degrees of freedom
 * (the normal's 1.95996 for df 0, meaning infinite). */
double       tach_stats_t975 (guint df);

G_END_DECLS
