/* tach-explain-private.h: what the attribution (tach-explain.c) and its
 * configurations, runs, sentences and CSV (tach-explain-run.c) share. */
#pragma once

#include "tach-explain.h"

G_BEGIN_DECLS

struct _TachExplain {
  guint            n_knobs;
  TachExplainKnob *knobs;          /* owned, n_knobs */
  guint            rounds;         /* measured (at least min_rounds after a run) */
  guint            min_rounds;
  double           budget_s;       /* for rounds after min_rounds; 0: exactly min_rounds */
  double           round_s;        /* a round's mean time in the last run, 0 unknown */
  gboolean         budget_ended;   /* the budget, not the target, ended the rounds */
  gboolean         partial;        /* stopped, the whole rounds before kept */
  double           target;
  guint64          seed;

  gboolean         has_configs;    /* made by tach_explain_new */
  TachConfig       from, to;       /* owned when has_configs */

  /* The plan, drawn at the start of a run. */
  gboolean         exact;
  guint            n_orderings;
  guint           *orderings;      /* owned: n_orderings x n_knobs knob indices */
  gboolean        *ordering_ok;    /* owned: every step of the ordering runs */
  guint            orderings_used;
  GArray          *masks;          /* guint: the configurations measured, A first */
  guint           *slot;           /* owned: 1 << n_knobs, mask -> index in masks, or G_MAXUINT */
  gboolean        *failed;         /* owned: per index in masks */
  TachExplainCost *costs;          /* owned: rounds x masks->len */
  GArray          *failures;       /* TachExplainFailure */

  /* Results. */
  gboolean         done;
  TachExplainCost  cost_from, cost_to;
  double           from_min, from_max, to_min, to_max, gap_min, gap_max;
  TachInterval     gap, speedup, from_ci, to_ci;
  gboolean         gap_resolved;

  GPtrArray       *runs;           /* TachRun*, owned */
  char            *label_from, *label_to;  /* owned, or NULL */
  char            *device_id;      /* owned: the device measured on, or NULL */
  char            *id;             /* explain_id of explain.csv, made on first write */

  /* Read back from explain.csv (tach_explain_csv_load), without runs:
   * what tach_explain_side_load gives for A ([0]) and B ([1]). */
  gboolean         sides_saved;
  TachSummary      sides[2];
};

/* What to call the run of configuration @mask: A's label for none of B's
 * values, B's for all, else "A + knob=value ..." with the knobs of B it
 * takes (tach_run_set_label). */
char *tach_explain_dup_mask_label (TachExplain *explain, guint mask);

/* The orderings that still run at every step (@known_bad: 1 << n_knobs
 * entries, the configurations that cannot run), and every figure over
 * the first explain->rounds rounds; FALSE when no ordering is left. */
gboolean tach_explain_update_shares (TachExplain *explain, const gboolean *known_bad);

/* What the runs of configuration @mask (A: 0, B: all) did with their
 * threads, and the busiest any run of the explanation saw (the worst
 * round, not the mean that one quiet round hides), as a summary for
 * tach_summary_dup_load_caveat (only those fields set). */
void     tach_explain_side_load (TachExplain *explain, guint mask, TachSummary *out);

/* Frees a TachExplainFailure's strings (the failures array's clear func). */
void     tach_explain_failure_clear (gpointer data);

G_END_DECLS
