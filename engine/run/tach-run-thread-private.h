/* tach-run-thread-private.h: the engine thread's working state, shared by
 * tach-run.c (the thread and its step loop) and tach-run-pending.c (the
 * steps executed but not yet published: timing, holding, syncing,
 * publishing).
 *
 * Threads: the engine thread, but tach_run_schedule_notify() posts to the
 * run's GMainContext.
 */
#pragma once

#include "tach-machine.h"
#include "tach-model.h"
#include "tach-ranks.h"
#include "tach-run-private.h"
#include "tach-run-timing.h"
#include "tach-sample-store.h"

G_BEGIN_DECLS

/* No capture: every step runs eagerly. */
#define TACH_RUN_NO_CAPTURE G_MAXUINT64

/* A step executed but not yet read back, kept in the widths the sample
 * store keeps (floats; wall_s a double, as the store checks chunks against
 * it): 40 bytes, not a 120-byte TachSample and its marks.  The step number
 * is the first pending step's plus the index (pending steps are
 * consecutive), warm-up follows from the step, the events' slots from the
 * step number (tach_step_marks_for), whether the device times were read
 * from TachRunThread.n_timed, and sync_ms is only the last step's (the one that
 * syncs, published at once).  The loss and the accuracy are NaN until the
 * sync reads them back.
 *
 * With sync=end every step of the run waits for the end, so once hold_min (1024)
 * steps have their times they move on to a sample store of their own
 * (TachRunThread.held, a dozen bytes a step instead of 40), which gets their
 * losses at the sync and then joins the run's store whole. */
typedef struct {
  double wall_s;
  float  step_ms;
  float  feed_ms;
  float  compute_ms;
  float  host_ms;
  float  device_step_ms;
  float  api_calls;
  float  loss;
  float  accuracy;
} TachRunPending;

/* The engine thread's working state. */
typedef struct {
  TachRun              *run;       /* borrowed */
  TachBackend          *be;
  const TachModelClass *klass;
  TachModel            *model;
  /* One float per step not yet read back (per micro-batch: accumulate
   * floats a slot), step i in slot i % loss_slots:
   * a sync every N steps needs N slots, not one per step of the run.  The
   * host reads them through staging buffers of MIN (loss_slots, LOSS_PIECE). */
  float                *loss_dev;
  float                *acc_dev;
  float                *loss_host;
  float                *acc_host;
  guint64               loss_slots;
  guint64               loss_staging;
  TachStepTimer         timer;
  TachSampleStore      *held;      /* timed pending steps, the ones before pending_first */
  gsize                 held_bytes;
  GArray               *pending;   /* TachRunPending, steps pending_first.. */
  guint64               pending_first;
  guint                 n_timed;   /* pending[0..n_timed) have their device times */
  gsize                 pending_peak;  /* bytes, the most kept for pending steps */
  gint64                t0;        /* monotonic start, ns */
  /* Data parallel: what to add to this rank's clock (ms) to read rank
   * 0's (tach_ranks_clock_offset), so that rank 0 puts every rank's steps
   * on its clock (tach_run_gather_ranks). */
  double                clock_offset_ms;
  /* The machine's counters where measuring began (the end of warm-up). */
  TachMachineMark       measure_mark;
  gint64                t_notify;  /* last notification, ns */

  /* launch=graph (see the top of tach-run.c) */
  guint64               capture_step;  /* TACH_RUN_NO_CAPTURE when eager */
  TachGraph            *graph;         /* from capture_step on */
  uint64_t             *step_offset;   /* device: steps since capture_step */
  float                *loss_fixed;    /* device: the captured step's slots */
  float                *acc_fixed;

  /* Data parallel: the gradients' reducer (NULL alone), which keeps each
   * step's figures (tach_grad_reducer_step_stats: comm and pack for the
   * samples, the arrival for the imbalance worked out across ranks at the
   * end) beside the pending records, which a run of one process keeps as
   * small as before. */
  TachGradReducer      *reducer;
  /* Data parallel: the ranks' agreement on the step a stop ends (NULL
   * alone: the stop flag is read directly). */
  TachRanksVote        *vote;
} TachRunThread;

/* The run's thread: schedules a notification unless one is pending. */
void     tach_run_schedule_notify (TachRun *run);
/* Notes the bytes kept for the steps not yet synced. */
void     tach_run_pending_note_bytes (TachRunThread *e);
/* Between steps: moves the timed pending steps to the held store once
 * there are enough of them (tach_run_set_hold_min). */
void     tach_run_pending_hold (TachRunThread *e);
/* Reads the device times of the pending steps up to index @upto. */
void     tach_run_pending_time (TachRunThread *e, guint upto);
/* Synchronises and reads the waiting steps' losses back; *sync_ms is the
 * time spent.  FALSE when the backend failed. */
gboolean tach_run_pending_sync (TachRunThread *e, double *sync_ms);
/* Publishes the waiting steps' samples; the last one synced for
 * @last_sync_ms.  The caller tells the main thread when it should look. */
void     tach_run_pending_publish (TachRunThread *e, double last_sync_ms);
/* After a failure: publishes the steps that ended before it, and tells. */
void     tach_run_pending_publish_ended (TachRunThread *e);
/* Data parallel, after the last step (run/tach-run-ranks.c): gathers every
 * rank's samples on rank 0, splits each step's communication into the
 * exposed part and the imbalance, and keeps them in the run.  Collective. */
gboolean tach_run_gather_ranks (TachRunThread *e, GError **error);
/* Data parallel, when the ranks lost each other before the gather: this
 * rank's own flights become the run's (its trace's all-reduces). */
void     tach_run_keep_own_flights (TachRunThread *e);

/* Whether the job's ranks can run @config (tach-run-rank-device.c); on a
 * GPU, *device becomes the rank's own. */
gboolean tach_run_check_ranks (const TachConfig *config, TachDevice **device, GError **error);

G_END_DECLS
