/* tach-run-private.h: a run's state, shared by the runner (tach-run.c) and
 * the results reader (tach-results.c), which makes ended runs from a
 * results folder. */
#pragma once

#include "tach-engine.h"
#include "tach-backend.h"
#include "tach-ranks.h"
#include "tach-sample-store.h"

G_BEGIN_DECLS

/* What a run loaded from a results folder has beyond its samples: the
 * summary as it was written (figures such as FLOP/s and peak memory are not
 * in the samples), where it came from, and which knobs the folder did not
 * record. */
typedef struct {
  TachSummary summary;
  char       *record_id;       /* the run_id in runs.csv */
  char       *source;          /* the folder */
  GHashTable *unknown_knobs;   /* knob names, or NULL when all are known */
} TachRunRecord;

void  tach_run_record_free (TachRunRecord *record);
/* The samples of rank @rank (0: the run's own), or NULL; under the run's
 * lock. */
TachSampleStore *tach_run_rank_samples (TachRun *run, guint rank);
/* Data parallel: folds the other ranks' figures into @summary, rank 0's
 * (tach-engine.h's TachSummary says which); under the run's lock. */
void             tach_run_summarise_ranks (TachRun *run, TachSummary *summary);
/* Data parallel, once the run has ended: rank @rank's flights of its
 * all-reduces (TachGradFlight) appended to @out; how many.  The trace's
 * per-bucket tracks (output/tach-trace.c).  @rank counts as in
 * tach_run_rank_samples (0: the run's own, which after a lost rank is
 * this rank's alone). */
guint            tach_run_copy_rank_flights (TachRun *run, guint rank, GArray *out);
/* Which rank of the job the samples of tach_run_rank_samples (@run, @i)
 * are: @i on rank 0 once gathered, this rank's own for 0 otherwise. */
guint            tach_run_get_rank_of (TachRun *run, guint i);
/* The next process-wide run number (tach_run_get_id). */
guint tach_run_next_id (void);

struct _TachRun {
  gint           ref_count;       /* atomic */
  guint          id;
  TachConfig     config;          /* owned copy */
  TachDevice     *device;         /* owned: resolved, or a record's */
  gint64         start_time;      /* real time, µs; 0 until started */

  GMutex         lock;
  GCond          cond;            /* signalled when the state leaves RUNNING */
  TachSampleStore *samples;       /* under lock */
  /* Data parallel, on rank 0 once the run has ended: the other ranks'
   * samples (TachSampleStore, ranks 1..), gathered; NULL otherwise. */
  GPtrArray     *rank_samples;    /* under lock */
  /* ... and every rank's flights (a GArray of TachGradFlight per rank,
   * rank 0's first), gathered; after a lost rank, this rank's own alone;
   * NULL otherwise. */
  GPtrArray     *rank_flights;    /* under lock */
  guint          drained;         /* samples[0..drained) were drained */
  TachRunState   state;           /* under lock */
  GError        *error;           /* under lock; set once before FAILED */
  GThread       *thread;          /* under lock */
  gboolean       started;         /* under lock */
  guint64        items_per_step;  /* under lock, set by the engine thread */
  double         flops_per_step;
  guint64        peak_memory;
  /* Generation's request length (TachModelClass.request_steps; 0: none)
   * and what the model's memory holds (memory_parts; NaN unknown). */
  guint64        request_steps;
  double         memory_parts[5];
  /* What the parameters hold in this process (TachBackend.held_*: the
   * parameters, gradients, optimizer state and their peak; NaN unknown). */
  double         held[4];
  gsize          pending_bytes;   /* under lock, set as the run ends: tach_run_get_pending_bytes */
  double         test_accuracy;
  TachEvaluation evaluation;      /* under lock, with eval_done, eval_total and eval_s */
  guint64        eval_done, eval_total;
  double         eval_s;          /* the evaluation's wall time, NaN where none ran */
  TachInterval   weak_scaling;    /* under lock: tach_run_set_scaling, NaN unset */
  TachInterval   strong_scaling;
  double         threads_asked, threads_fewest, threads_fewer_share; /* under lock: NaN unknown */
  double         machine_busy;    /* under lock: others' share of the CPU while measuring, NaN unknown */
  char          *text;
  char          *algorithms;      /* under lock: what each plan ran (tach_run_dup_algorithms) */
  TachRunRecord *record;         /* owned: a run loaded from a results folder, or NULL */
  char          *varied;         /* owned: the knob a sweep varied for this run, or NULL */
  gboolean       no_evaluation;  /* set before start: skip the test-set evaluation */
  char          *label;          /* owned: tach_run_set_label's, or NULL */
  char          *data_kind;      /* owned: tach_config_get_data_source's, set once */
  char          *data_path;      /* owned, or NULL */

  gint           stop;            /* atomic */
  gint           notify_pending;  /* atomic */
  gint           notify_closed;   /* atomic: tach_run_wait() has returned, no call follows */
  gint           steps_done;      /* atomic: steps run, published or not */
  GMainContext  *context;         /* owned, NULL when no notify */
  TachRunNotify  notify;
  gpointer       user_data;
};

/* The most host memory the run kept for steps not yet synced (their
 * records and the loss slots, counted as if the device's were on the host
 * too), known once it has ended: with sync=end every step is pending until
 * the end, so this is what such a run costs per step beyond its samples.
 * For tests and benchmarks. */
gsize tach_run_get_pending_bytes (TachRun *run);
/* How many timed steps wait as pending records before they move to the
 * held store (1024); tests lower it so that short runs move them too.  Set
 * it before starting a run.  Returns the previous count. */
guint tach_run_set_hold_min (guint steps);

/* The size of the blocks tach_results_load() reads samples.csv in (1 MB);
 * tests lower it to hold every block size to the same load.  Returns the
 * previous size. */
guint tach_results_set_block_size (guint bytes);

G_END_DECLS
