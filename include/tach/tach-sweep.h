/* tach-sweep.h: sweeps: a grid of presets x the values of one knob (or the
 * presets alone), every point made and checked before anything runs, and
 * the loop that runs the points in an interleaved order, round after
 * round.  tach-cli's sweep (--presets, --vary) and the GUI's Scaling view
 * both drive it, so they sweep the same grid the same way.
 *
 * The values of an axis are read from a --vary KNOB=SPEC or, for a knob
 * already chosen, from its SPEC alone (tach_sweep_axis_new).
 *
 * A sweep runs in rounds: each round visits every point once, in
 * tach_sweep_point()'s order.  Today a sweep runs the rounds it is given
 * (one by default); funcs->round_done may ask for more, so that rounds can
 * go on until the figures are resolved.
 *
 * Threads: the axis functions and tach_sweep_point() may be called from
 * any thread.  A TachSweep is used by one thread at a time: made on one,
 * it may be handed to a worker thread that calls tach_sweep_run(), which
 * blocks for as long as its runs take (each run still makes its own engine
 * thread) and calls every callback of its TachSweepFuncs on that calling
 * thread.  Only the GCancellable given to tach_sweep_run() may be touched
 * from another thread meanwhile: cancelling it (from any thread) stops the
 * run in progress and skips the points left.
 */
#pragma once

#include <gio/gio.h>

#include "tach-engine.h"
#include "tach-verdict.h"

G_BEGIN_DECLS

/* ------------------------------------------------------------------ axis */

typedef struct {
  const TachKnobInfo *knob;      /* the knob varied (a static row) */
  GStrv               values;    /* owned: in the order given, each one tach_config_set takes */
  gboolean            geometric; /* from an A..BxF range: plot on log axes */
} TachSweepAxis;

/* Reads the values of @knob from @spec, which is
 *   V1,V2,...   any values the knob takes ("fused,unrolled", "64,256"),
 *               or V1;V2;... when a value has commas itself ("16,32;32,64");
 *   A..BxF      an integer knob's geometric range: A, A*F, A*F^2, ... up
 *               to B (F above 1, rounded to whole numbers, repeats dropped);
 *   A..B+S      an integer knob's arithmetic range: A, A+S, ... up to B;
 *   all         every value of a choice knob.
 * Each value is checked on a copy of @base (tach_config_set), so errors
 * name the knob and the value (TACH_ERROR_INVALID_CONFIG).  The workload
 * and the preset are not knobs a sweep varies (presets are its other
 * axis).  Any thread. */
TachSweepAxis *tach_sweep_axis_new (const TachConfig *base, const TachKnobInfo *knob,
                                    const char *spec, GError **error);
/* The same from "KNOB=SPEC" (tach-cli's --vary); an unknown knob is an
 * error.  Any thread. */
TachSweepAxis *tach_sweep_axis_parse (const TachConfig *base, const char *spec, GError **error);
TachSweepAxis *tach_sweep_axis_copy (const TachSweepAxis *axis);
void           tach_sweep_axis_free (TachSweepAxis *axis);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachSweepAxis, tach_sweep_axis_free)

/* The @k-th point (0 <= k < n_presets * n_values) of the interleaved
 * order: values in turn, and at each value every preset, in the given
 * order at even values and reversed at odd ones, so that drift (heat,
 * other load) falls alike on every preset.  Any thread. */
void           tach_sweep_point (guint n_presets, guint n_values, guint k, guint *preset,
                                 guint *value);

/* ------------------------------------------------------------------ grid */

typedef struct _TachSweep TachSweep;

/* Makes the configuration of preset @preset into @out (initialised by
 * the function; cleared by the sweep), or returns FALSE with @error.
 * Called by tach_sweep_new() on its thread. */
typedef gboolean (*TachSweepConfigFunc) (const char *preset, TachConfig *out,
                                         gpointer user_data, GError **error);

/* A grid of @presets (NULL-terminated, at least one) x the values of
 * @axis (copied; NULL: one point per preset, nothing varied).  Each point's
 * configuration is made now: by @make (NULL: a copy of @base with the
 * preset applied), then the varied knob set over it, then, when @validate,
 * checked against its device (memory included, tach_config_validate).  A
 * point that cannot be made or checked keeps the message why
 * (tach_sweep_get_problem) and will not run.  One thread at a time. */
TachSweep          *tach_sweep_new (const TachConfig *base, const char *const *presets,
                                    const TachSweepAxis *axis, TachSweepConfigFunc make,
                                    gpointer make_data, gboolean validate);
void                tach_sweep_free (TachSweep *sweep);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachSweep, tach_sweep_free)

/* Points are numbered value * n_presets + preset: the order of a table of
 * the grid (values, then presets), not the order they run in. */
guint               tach_sweep_get_n_presets (TachSweep *sweep);
guint               tach_sweep_get_n_values (TachSweep *sweep);
guint               tach_sweep_get_n_points (TachSweep *sweep);
const char         *tach_sweep_get_preset (TachSweep *sweep, guint preset);
/* The axis (NULL for presets alone) and its value @value. */
const TachSweepAxis *tach_sweep_get_axis (TachSweep *sweep);
const char         *tach_sweep_get_value (TachSweep *sweep, guint value);
/* Why point @index will not run (translated), or NULL; how many will not. */
const char         *tach_sweep_get_problem (TachSweep *sweep, guint index);
guint               tach_sweep_get_n_problems (TachSweep *sweep);
/* Makes a problem of every point whose ranks this process cannot run
 * itself (tach_ranks_check_count: ranks=2 without mpirun), so that a
 * sweep that runs its points here says so once, before any round (the
 * window runs them through mpirun instead, and does not call it). */
void                tach_sweep_check_ranks (TachSweep *sweep);
/* Point @index's configuration, or NULL when it could not be made. */
const TachConfig   *tach_sweep_get_config (TachSweep *sweep, guint index);

/* Each round in a new shuffled order drawn from @seed, not
 * tach_sweep_point()'s (the same points, once each).  Call before
 * tach_sweep_run(). */
void                tach_sweep_set_shuffle (TachSweep *sweep, guint64 seed);
/* The rounds run when funcs->round_done is NULL: 1 unless set.  Call
 * before tach_sweep_run(). */
void                tach_sweep_set_rounds (TachSweep *sweep, guint rounds);
/* The order of the next round's points (@order: n_points indices, each
 * value * n_presets + preset): tach_sweep_point()'s order, or a new
 * shuffled one after tach_sweep_set_shuffle().  tach_sweep_run() takes
 * every round's order from here; a caller that runs the points itself,
 * one at a time on its main loop (the window's Compare), takes them from
 * here too and hands each run back with tach_sweep_set_run(). */
void                tach_sweep_next_order (TachSweep *sweep, guint *order);
/* Point @index's run of round @round (a new reference is taken; NULL:
 * none), for a caller that runs the points itself; rounds begun grow to
 * @round + 1.  Not while tach_sweep_run() runs. */
void                tach_sweep_set_run (TachSweep *sweep, guint index, guint round, TachRun *run);
/* Rounds begun by tach_sweep_run() (so far, or in all once it returned). */
guint               tach_sweep_get_rounds_run (TachSweep *sweep);
/* Point @index's run of round @round, or NULL (not run, or it could not
 * start).  The sweep holds a reference. */
TachRun            *tach_sweep_get_run (TachSweep *sweep, guint index, guint round);

/* One point as the loop reaches it. */
typedef struct {
  guint index;    /* value * n_presets + preset */
  guint preset, value;
  guint round;    /* 0-based */
  guint ordinal;  /* 1-based: points of this round started so far, this one
                   * included (of n_points - n_problems); 0 when it is skipped */
} TachSweepPoint;

typedef enum {
  TACH_SWEEP_RAN,        /* run: @run is its run (finished, failed or stopped),
                          * or NULL with @error when it could not start */
  TACH_SWEEP_UNRUNNABLE, /* skipped: it has a problem (tach_sweep_get_problem) */
  TACH_SWEEP_STOPPED,    /* skipped: the sweep was stopped before it (it may
                          * have a problem too) */
} TachSweepOutcome;

/* What tach_sweep_run() calls, each on its calling thread; each may be NULL. */
typedef struct {
  /* Runs @config (point @point's) to its end.  Returns the run, also when
   * it failed or was stopped (then @error says why), or NULL with @error
   * when it could not start.  NULL: tach_run_new(), tach_run_start()
   * without a main context, tach_run_wait(), marked varied by the axis's
   * knob, stopped when the cancellable is cancelled. */
  TachRun *(*run)        (TachSweep *sweep, const TachSweepPoint *point,
                          const TachConfig *config, gpointer user_data, GError **error);
  /* After each point of each round, run or skipped, in the order visited;
   * @run (borrowed; the sweep keeps a reference) and @error as run left
   * them. */
  void     (*done)       (TachSweep *sweep, const TachSweepPoint *point,
                          TachSweepOutcome outcome, TachRun *run, const GError *error,
                          gpointer user_data);
  /* After round @round (0-based) has visited every point, unless stopped:
   * whether to run another.  NULL: until the rounds set are run. */
  gboolean (*round_done) (TachSweep *sweep, guint round, gpointer user_data);
} TachSweepFuncs;

/* What a NULL funcs->run does, for a given one to leave points to: runs
 * @config (a point of @sweep) to its end on this thread, marked varied by
 * the axis's knob, stopped when @cancellable is cancelled. */
TachRun            *tach_sweep_run_point (TachSweep *sweep, const TachConfig *config,
                                          GCancellable *cancellable, GError **error);

/* Runs the grid round after round, each in tach_sweep_point()'s order,
 * skipping the points with a problem.  Once @cancellable is cancelled the
 * run in progress is stopped (by the default funcs->run; a given one stops
 * its own) and every point left is reported TACH_SWEEP_STOPPED.  Returns
 * FALSE (TACH_ERROR_CANCELLED) when stopped, else TRUE: a point that fails
 * is reported to funcs->done and the sweep goes on.  Blocks: see Threads
 * above.  A sweep runs once. */
gboolean            tach_sweep_run (TachSweep *sweep, const TachSweepFuncs *funcs,
                                    gpointer user_data, GCancellable *cancellable,
                                    GError **error);

/* ---------------------------------------------------------------- verdicts */

/* When a sweep has measured enough.  Each comparison is the ratio of two
 * points' rates (other / base) paired by round: the geometric mean of the
 * rounds' ratios with a Student-t 95% interval (a round's load cancels in
 * its ratio).  A sweep runs at least @min_rounds rounds, then more while
 * a comparison is not known to +-@target and the next round, at the pace
 * so far, fits in @budget_s seconds (0: @min_rounds only): its
 * funcs->round_done asks tach_sweep_rounds_want_more().  Any thread, one
 * at a time; the clock is the caller's (tests inject one). */
#define TACH_SWEEP_MAX_ROUNDS 64
/* The defaults of tach-cli's --rounds, --budget and --target, which the
 * window's Compare and Scaling use too: at least 3 rounds (2 give a
 * Student-t interval with 1 degree of freedom, 12.7 times the standard
 * error: too wide to resolve anything), rounds added for up to 45 s (the
 * README's examples finish in under a minute on an idle 2-core machine),
 * each speed-up known to +-5% (differences between execution modes are
 * tens of percent; 5% is the run-to-run drift of an idle machine).  The
 * README's explain (the bilstm at batch 1024, 8 configurations of 30
 * steps) measures its 3 rounds in about 20 s on an idle 2-core machine;
 * the budget leaves rounds to add within a minute.  Explain's are the
 * same (TACH_EXPLAIN_MIN_ROUNDS, TACH_EXPLAIN_DEFAULT_TARGET). */
#define TACH_SWEEP_DEFAULT_ROUNDS 3
#define TACH_SWEEP_DEFAULT_BUDGET_S 45.0
#define TACH_SWEEP_DEFAULT_TARGET 0.05

typedef struct _TachSweepRounds TachSweepRounds;

TachSweepRounds *tach_sweep_rounds_new (guint n_points, guint min_rounds, double budget_s,
                                        double target);
void             tach_sweep_rounds_free (TachSweepRounds *rounds);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachSweepRounds, tach_sweep_rounds_free)
/* Compares point @other against point @base; returns the comparison's index. */
guint            tach_sweep_rounds_add_comparison (TachSweepRounds *rounds, guint base,
                                                   guint other);
/* Point @point's rate in round @round (NaN or <= 0: not measured). */
void             tach_sweep_rounds_record (TachSweepRounds *rounds, guint point, guint round,
                                           double rate);
/* After @rounds_done rounds that took @spent_s seconds: whether to run
 * another. */
gboolean         tach_sweep_rounds_want_more (TachSweepRounds *rounds, guint rounds_done,
                                              double spent_s);
/* The median of @point's rates over the rounds (NaN: none). */
double           tach_sweep_rounds_get_rate (TachSweepRounds *rounds, guint point);
/* Comparison @i's ratio with its 95% interval, and its verdict against 1. */
TachVerdict      tach_sweep_rounds_get_ratio (TachSweepRounds *rounds, guint i,
                                              TachInterval *ratio);
/* Whether comparison @i met the target (always TRUE without a budget). */
gboolean         tach_sweep_rounds_is_resolved (TachSweepRounds *rounds, guint i);
/* The widest relative half-width (tach_interval_rel_halfwidth) of the
 * comparisons measured so far; NaN when none has an interval yet. */
double           tach_sweep_rounds_get_widest (TachSweepRounds *rounds);
/* How many rounds the run will reach at most: the minimum, or after
 * @rounds_done rounds that took @spent_s seconds, as many as fit the
 * budget at that pace (at most TACH_SWEEP_MAX_ROUNDS). */
guint            tach_sweep_rounds_get_max_rounds (TachSweepRounds *rounds, guint rounds_done,
                                                   double spent_s);
/* "round 3 of up to 9, speed-ups known to +-6.2% (target +-5%)": where
 * the measuring is while round @round (1-based) runs, @rounds_done rounds
 * having taken @spent_s seconds (translated). */
char            *tach_sweep_rounds_dup_progress (TachSweepRounds *rounds, guint round,
                                                 guint rounds_done, double spent_s);

/* The same for any measurement in rounds (explain's too): the most
 * rounds that fit @budget_s at the pace of @rounds_done rounds in
 * @spent_s seconds, and the line; @widest is NaN while no interval is
 * known. */
guint            tach_rounds_fit (guint min_rounds, double budget_s, guint rounds_done,
                                  double spent_s);
char            *tach_rounds_dup_progress (guint round, guint min_rounds, double budget_s,
                                           double target, guint rounds_done, double spent_s,
                                           double widest);

/* The comparisons of a sweep's grid: each preset against the first preset
 * at the same value, paired by round (what tach-cli's sweep tables and the
 * window's Compare and Scaling show). */
TachSweepRounds *tach_sweep_rounds_new_for_sweep (TachSweep *sweep, guint min_rounds,
                                                  double budget_s, double target);
/* The comparison of point @index against its value's first preset, or -1
 * for a first preset (tach_sweep_rounds_new_for_sweep's). */
int              tach_sweep_rounds_point_comparison (TachSweep *sweep, guint index);
/* The rate a sweep compares: @run's items/s (steps/s times the batch, so
 * that presets of other batch sizes compare the same work), NaN unless it
 * finished. */
double           tach_sweep_run_rate (TachRun *run);
/* Records every point's rate of round @round from @sweep's runs. */
void             tach_sweep_rounds_record_round (TachSweepRounds *rounds, TachSweep *sweep,
                                                 guint round);
/* The run of point @index to show: the round whose rate is nearest the
 * point's median over rounds (borrowed; NULL when none ran). */
TachRun         *tach_sweep_rounds_pick_run (TachSweepRounds *rounds, TachSweep *sweep,
                                             guint index);
/* One line per comparison of tach_sweep_rounds_new_for_sweep that missed
 * the target ("unresolved after 5 rounds: tuned against tf1-feed-dict is
 * known to +-7.1%, not the +-5% asked"), or NULL when none did
 * (translated). */
char            *tach_sweep_rounds_dup_unresolved (TachSweepRounds *rounds, TachSweep *sweep);
/* The sweep over (@stopped: by Stop): its last round's rates recorded (a
 * stopped round's pairs count too), then "5 rounds: every speed-up known
 * to +-5%.", "5 rounds." or "Stopped in round 2; ...", and the unresolved
 * lines under it (translated). */
char            *tach_sweep_rounds_dup_outcome (TachSweepRounds *rounds, TachSweep *sweep,
                                                gboolean stopped);

/* Point @index's load caveat against point @base_index
 * (tach_summary_dup_load_caveat of their summaries @base and @s, each
 * named "preset knob=value"), or NULL where neither lost threads nor ran
 * on a busy machine (translated). */
char            *tach_sweep_dup_load_caveat (TachSweep *sweep, guint base_index,
                                             const TachSummary *base, guint index,
                                             const TachSummary *s);
/* The load caveats of every point against its value's first preset, for
 * the runs tach_sweep_rounds_pick_run shows, one a line; NULL when there
 * is none (what the CLI's table notes and the Scaling view says). */
char            *tach_sweep_rounds_dup_load_caveats (TachSweepRounds *rounds, TachSweep *sweep);

G_END_DECLS
