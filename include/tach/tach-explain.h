/* tach-explain.h: explaining a speed gap, knob by knob.
 *
 * Given two configurations A and B of one workload, the execution-mode
 * knobs in which they differ are K.  For every subset S of K (or, above
 * TACH_EXPLAIN_MAX_EXACT knobs, for the subsets on a sample of orderings)
 * the configuration "A with the knobs in S set as in B" is measured, in
 * interleaved rounds visited in a shuffled order, so that machine noise
 * falls on every configuration alike.  Each knob's share of the step-time
 * difference t(B) - t(A) is its Shapley value over those measurements: the
 * mean, over orderings of the knobs, of the change in step time when the
 * knob flips from its A value to its B value.  The shares add up exactly to
 * the gap, interactions are split fairly, and since the value is linear the
 * same average over phase times splits each share by phase.
 *
 * A configuration that cannot run is reported by name; only the orderings
 * whose every step runs are used, and when none is left (or A or B itself
 * cannot run) the explanation fails with a message naming each failed
 * combination and why.
 *
 * The measurement is injected (TachExplainCostFuncs), so the attribution is
 * tested with deterministic costs; tach_explain_run() measures with real
 * runs of the engine.
 *
 * Threads: a TachExplain is used by one thread at a time.
 * tach_explain_run() blocks for as long as its runs take: call it from a
 * worker thread in a user interface (each run still makes its own engine
 * thread).
 */
#pragma once

#include <gio/gio.h>

#include "tach-engine.h"
#include "tach-verdict.h"

G_BEGIN_DECLS

/* Up to this many differing knobs every subset is measured (32
 * configurations); above it, orderings are sampled. */
#define TACH_EXPLAIN_MAX_EXACT 5
/* The most knobs an explanation takes (a mask is a guint). */
#define TACH_EXPLAIN_MAX_KNOBS 16
/* The fewest rounds that spread noise fairly. */
#define TACH_EXPLAIN_MIN_ROUNDS 3
/* The most rounds an adaptive explanation adds (its costs grow with
 * them); past this an interval shrinks by under 15% per doubling of the
 * time already spent. */
#define TACH_EXPLAIN_MAX_ROUNDS 64
/* The default target: the speed ratio B/A known to within +-5%, and each
 * share to within +-10% of the gap (twice the target): a share is a
 * difference of differences, with about twice the ratio's noise, and a
 * tenth of the gap is finer than any sentence about a knob needs. */
#define TACH_EXPLAIN_DEFAULT_TARGET 0.05
/* Orderings drawn when they are sampled (in reversed pairs). */
#define TACH_EXPLAIN_SAMPLED_ORDERINGS 24

/* A step's phases, TachSample's: a data-parallel step (under mpirun, on
 * several ranks) has three more, each cut from compute: the exposed
 * communication, the packing and the imbalance (the wait for the slowest
 * rank), each the ranks' mean.  A process of its own has none of them
 * (0 ms; tach_explain_has_rank_phases() says which). */
typedef enum {
  TACH_EXPLAIN_PHASE_FEED,
  TACH_EXPLAIN_PHASE_COMPUTE,
  TACH_EXPLAIN_PHASE_SYNC,
  TACH_EXPLAIN_PHASE_HOST,
  TACH_EXPLAIN_PHASE_COMM,
  TACH_EXPLAIN_PHASE_PACK,
  TACH_EXPLAIN_PHASE_IMBALANCE,
  TACH_EXPLAIN_N_PHASES,
} TachExplainPhase;

/* The phases of a process of its own: feed, compute, sync and host. */
#define TACH_EXPLAIN_N_SINGLE_PHASES (TACH_EXPLAIN_PHASE_HOST + 1)

/* One measurement of one configuration: its step time and that time split
 * into phases, in ms. */
typedef struct {
  double step_ms;
  double phase_ms[TACH_EXPLAIN_N_PHASES];
} TachExplainCost;

/* A knob that differs, and (once measured) its share. */
typedef struct {
  char    *key;              /* "layout" */
  char    *title;            /* "Layout", translated */
  char    *from, *to;        /* its value in A and in B */
  gboolean changes_results;  /* a knob whose values give different losses */

  double   share_ms;         /* mean over rounds of its Shapley value */
  double   share_min_ms;     /* the lowest and highest round's value */
  double   share_max_ms;
  double   phase_ms[TACH_EXPLAIN_N_PHASES];  /* share split by phase (adds up to share_ms) */
  double   fraction;         /* share_ms over the gap; NaN when the gap is
                              * within noise (no share of noise is a fraction) */

  /* The share's 95% interval over rounds (Student's t of the rounds'
   * Shapley values) and whether it excludes 0; the fraction's (delta
   * method, NaN where fraction is). */
  TachInterval share_ci;
  TachVerdict  verdict;
  TachInterval fraction_ci;
  /* The share is known to the target (within target x 2 of the gap), or
   * the gap is resolved as no change. */
  gboolean     resolved;
} TachExplainKnob;

/* A configuration that could not run: the knobs set as in B (the rest as
 * in A) and why. */
typedef struct {
  guint  mask;
  char  *name;     /* "feed=resident layout=batch-major", or A's / B's name */
  char  *reason;
} TachExplainFailure;

typedef struct _TachExplain TachExplain;

/* The measurement a TachExplain runs on. */
typedef struct {
  /* Optional.  Whether configuration @mask (bit i: knob i set as in B) can
   * run at all; FALSE with @error (the reason) when not.  Asked once per
   * configuration before anything is measured. */
  gboolean (*check)   (guint mask, gpointer user_data, GError **error);
  /* Measures configuration @mask once, in round @round (0-based).  An error
   * in TACH_ERROR_CANCELLED ends the explanation; any other marks the
   * configuration as unrunnable (it is not measured again). */
  gboolean (*measure) (guint mask, guint round, TachExplainCost *cost,
                       gpointer user_data, GError **error);
  /* Optional.  The clock the budget is read on, in seconds (any origin);
   * g_get_monotonic_time() when NULL.  Tests inject one. */
  double   (*now_s)   (gpointer user_data);
} TachExplainCostFuncs;

/* An explanation of knobs given directly (no configurations): @keys, @from
 * and @to hold @n_knobs entries each, @changes_results may be NULL.  The
 * measurement must be given to tach_explain_run_with().  Fails
 * (TACH_ERROR_INVALID_CONFIG) for no knob, more than
 * TACH_EXPLAIN_MAX_KNOBS, or fewer than TACH_EXPLAIN_MIN_ROUNDS rounds. */
TachExplain *tach_explain_new_for_knobs (guint n_knobs, const char *const *keys,
                                         const char *const *from, const char *const *to,
                                         const gboolean *changes_results, guint rounds,
                                         guint64 seed, GError **error);
/* An explanation of @from -> @to (copied): one workload, the same settings
 * but for execution-mode knobs.  Errors (TACH_ERROR_INVALID_CONFIG) name a
 * setting that differs (batch, steps, seed...), or say that no knob
 * differs.  Knobs that apply to neither configuration are left out. */
TachExplain *tach_explain_new (const TachConfig *from, const TachConfig *to, guint rounds,
                               GError **error);
void         tach_explain_free (TachExplain *explain);

guint                  tach_explain_get_n_knobs (TachExplain *explain);
const TachExplainKnob *tach_explain_get_knob (TachExplain *explain, guint i);
/* Rounds measured (after a run) or to be measured at least (before). */
guint                  tach_explain_get_rounds (TachExplain *explain);
/* Adaptive rounds: after the rounds given to tach_explain_new, rounds are
 * added while some comparison is not known to @target (the speed ratio
 * B/A to +-@target, each share to +-2 @target of the gap) and the rounds
 * added so far and the next fit in @budget_s seconds at the pace of the
 * rounds so far: the budget counts from the end of the given rounds
 * (rounds already under way always finish; at most
 * TACH_EXPLAIN_MAX_ROUNDS).  A budget of 0
 * measures the given rounds only (the default). */
void                   tach_explain_set_budget (TachExplain *explain, double budget_s,
                                                double target);
/* Whether every subset is measured (FALSE: orderings are sampled). */
gboolean               tach_explain_is_exact (TachExplain *explain);
/* Configurations measured per round (known once the orderings are drawn,
 * at the start of a run; before, the number a run will measure at most). */
guint                  tach_explain_get_n_configs (TachExplain *explain);
/* "feed=resident layout=batch-major": the knobs of @mask set as in B. */
char                  *tach_explain_describe_mask (TachExplain *explain, guint mask);
/* The configuration of @mask (tach_explain_new only): A with the knobs of
 * @mask as in B.  Clear @out with tach_config_clear(). */
void                   tach_explain_config_for_mask (TachExplain *explain, guint mask,
                                                     TachConfig *out);
const TachConfig      *tach_explain_get_config (TachExplain *explain, gboolean to);
/* How A and B are named in tables, charts and explain.csv: a preset's name,
 * "k=v ..." settings, a run's name.  By default the preset of each
 * configuration, else "A" and "B". */
void                   tach_explain_set_labels (TachExplain *explain, const char *from,
                                                const char *to);
const char            *tach_explain_get_label (TachExplain *explain, gboolean to);

/* Measures with @funcs and computes the shares.  Returns FALSE with
 * @error when cancelled, when A or B cannot run, or when no ordering is
 * left that runs at every step (the message names each failed combination
 * and why).  @progress, if not NULL, is called after each measurement on
 * the calling thread with the measurements done and in all. */
typedef void (*TachExplainProgress) (TachExplain *explain, guint done, guint total,
                                     gpointer user_data);
gboolean     tach_explain_run_with (TachExplain *explain, const TachExplainCostFuncs *funcs,
                                    gpointer user_data, TachExplainProgress progress,
                                    gpointer progress_data, GError **error);
/* Measures with real runs of the engine (tach_explain_new only): each
 * configuration is validated against A's device, then run to its end.
 * @cancellable stops the run in progress.  Blocks; see above. */
gboolean     tach_explain_run (TachExplain *explain, GCancellable *cancellable,
                               TachExplainProgress progress, gpointer progress_data,
                               GError **error);

/* The explanation so far, while tach_explain_run() or _run_with() measures
 * it: a new explanation (free it with tach_explain_free) of the first
 * @rounds whole rounds, every figure below computed over them as the end
 * computes it over all; its runs are not kept (no machine share).  Call it
 * on the measuring thread, e.g. from the progress callback once
 * @done / tach_explain_get_n_configs() rounds are whole; the copy may go
 * to any thread.  NULL under 2 rounds (no interval), before the plan is
 * drawn, or when no ordering runs. */
TachExplain *tach_explain_dup_so_far (TachExplain *explain, guint rounds);

/* Whether a run that was stopped (tach_explain_run returned FALSE with
 * TACH_ERROR_CANCELLED) kept the whole rounds it measured before the stop,
 * 2 or more: then every figure below is theirs (tach_explain_get_rounds
 * says how many). */
gboolean     tach_explain_is_partial (TachExplain *explain);

/* After a run.  Step times of A and B, mean over rounds, with the lowest
 * and highest round's. */
const TachExplainCost *tach_explain_get_cost (TachExplain *explain, gboolean to);
/* After a run: whether its steps had the data-parallel phases (exposed
 * communication, packing, imbalance), measured on several ranks under
 * mpirun; FALSE for a process of its own, whose phases are the first
 * TACH_EXPLAIN_N_SINGLE_PHASES. */
gboolean     tach_explain_has_rank_phases (TachExplain *explain);
void         tach_explain_get_gap_range (TachExplain *explain, double *min_ms, double *max_ms);
/* The gap t(B) - t(A) in ms, mean over rounds, with its 95% interval
 * paired by round; its verdict against 0. */
TachVerdict  tach_explain_get_gap (TachExplain *explain, TachInterval *gap);
/* B's speed-up over A (t(A) / t(B)), the geometric mean of the rounds'
 * ratios with its 95% interval; its verdict against 1. */
TachVerdict  tach_explain_get_speedup (TachExplain *explain, TachInterval *ratio);
/* Whether every comparison met the target (always TRUE without a
 * budget: nothing was asked), and if not, a sentence naming what stayed
 * unresolved and how much narrower its interval must become
 * (translated; NULL when all is resolved). */
gboolean     tach_explain_is_resolved (TachExplain *explain);
/* "verdict: tuned is 1.80x as fast as tf1-feed-dict (95% interval
 * 1.62–2.01x), significant", or "~ ... within noise", followed by
 * tach_explain_dup_load_caveat's words where it has some (translated). */
char        *tach_explain_dup_verdict (TachExplain *explain);
/* Where A's or B's runs lost threads to other processes, or any run saw
 * the machine busy (the worst run, not the mean): what that means for the
 * speed-up and what to do (tach_summary_dup_load_caveat); NULL where the
 * runs ran as on an idle machine. */
char        *tach_explain_dup_load_caveat (TachExplain *explain);
/* A's or B's step time, mean over rounds, with its 95% interval. */
void         tach_explain_get_cost_ci (TachExplain *explain, gboolean to, TachInterval *ci);
/* The mean share (0 to 1) of the machine's CPU time that other processes
 * took while the runs measured (tach_explain_run only; NaN unknown). */
double       tach_explain_get_machine_busy (TachExplain *explain);
char        *tach_explain_dup_unresolved (TachExplain *explain);
void         tach_explain_get_cost_range (TachExplain *explain, gboolean to,
                                          double *min_ms, double *max_ms);
/* Orderings of the knobs averaged over, and how many were drawn (all k!
 * when exact): fewer are used when some step could not run. */
void         tach_explain_get_orderings (TachExplain *explain, guint *used, guint *drawn);
/* The configurations that could not run (element type TachExplainFailure). */
GArray      *tach_explain_get_failures (TachExplain *explain);
/* The runs tach_explain_run() measured, in the order run (TachRun*); they
 * belong in runs.csv and samples.csv. */
GPtrArray   *tach_explain_get_runs (TachExplain *explain);

/* One sentence for knob @i, saying what its value reproduces and what it
 * costs, e.g. "Layout misread -> batch-major saves 44.1 ms a step (80% of
 * the gap): the time-major misread turns 10 recurrent steps of batch 1024
 * into 1024 steps of batch 10." (translated). */
char        *tach_explain_dup_sentence (TachExplain *explain, guint i);

/* Appends the explanation to DIR/explain.csv (creating DIR and the file
 * with its header; RFC 4180, C-locale numbers, written atomically like
 * runs.csv).  One row for A, one per knob, one for B, all with one
 * explain_id. */
gboolean     tach_explain_csv_append (TachExplain *explain, const char *dir, GError **error);
/* Whether DIR's explain.csv, runs.csv and samples.csv (those there) take
 * new rows: their columns are this version's (or an earlier one's, to
 * widen) and no row is malformed (NUL bytes included).  Call it before
 * the first round, so that a damaged file stops the command before it
 * measures anything; tach_explain_csv_append checks explain.csv again
 * before it writes any of the three, so that all three gain rows or none
 * does.  Changes nothing in DIR. */
gboolean     tach_explain_csv_check (const char *dir, GError **error);
/* Reads DIR/explain.csv back (as tach_explain_csv_append writes it) and
 * appends one ended explanation per explain_id to @explains (element type
 * TachExplain*, in the file's order) with every figure as saved: its
 * knobs, shares, intervals, verdicts, phases, rounds and what stayed
 * unresolved, so that it reads and draws as it did (its runs are in
 * runs.csv, not in it).  An explanation whose rows cannot all be read is
 * skipped whole and described in @problems (element type char*,
 * "FILE:LINE: what", when not NULL), as is a malformed row or a NUL byte;
 * the others still load.  TRUE, adding nothing, where DIR has no
 * explain.csv; FALSE (TACH_ERROR_DATA) when it cannot be read or is not
 * one.  Any thread. */
gboolean     tach_explain_csv_load (const char *dir, GPtrArray *explains, GPtrArray *problems,
                                    GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachExplain, tach_explain_free)

G_END_DECLS
