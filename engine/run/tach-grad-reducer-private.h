/* tach-grad-reducer-private.h: what the gradient reducer's two paths
 * share: tach-grad-reducer.c (the buckets, host memory over MPI) and
 * tach-grad-device.c (device memory over the backend's collectives).
 *
 * Threads: the engine thread, and under grad-progress=thread the progress
 * thread, which touches the buckets and MPI only under the reducer's lock
 * while they fly (tach-grad-reducer.c).
 */
#pragma once

#include "tach-ranks-private.h"
#include "tach-strided.h"

G_BEGIN_DECLS

typedef struct {
  size_t   start, end;   /* floats of the flat buffer */
  guint    n_tensors;
  guint    n_ready;      /* this step */
  gboolean launched;
  gboolean done;
  double   t_launch;     /* host ms (MPI): launched, and seen complete */
  double   t_done;
  /* shard=grads (tach-grad-shard.c): each rank's floats of the bucket
   * (padded: chunk times the ranks covers it), where this rank's shard of
   * it starts in the shard's buffers, and the all-gather's counts and
   * displacements by rank (owned, 2 x ranks ints). */
  size_t   chunk, state;
  int     *gather_counts;
  double   t_gather;     /* shard=all: host ms, its all-gather launched */
  gboolean gather_ahead; /* shard=all: that all-gather is a prefetch */
  gboolean gathering;    /* shard=all: its all-gather launched and not seen complete */
#ifdef HAVE_MPI
  MPI_Request req;
  MPI_Request gather;
#endif
} Bucket;

/* The device path's events of one step (a ring of them: the device runs
 * behind the host).  On the compute stream: begin, and per synchronisation
 * sync (the update reached) and after (the update may go on); per bucket
 * and synchronisation: ready (overlap: its gradients written), and on the
 * stream its all-reduce runs: t0 pack t1 all-reduce t2 unpack t3.  A step
 * synchronises once, or under accumulate-sync=every once per micro-batch
 * (up to @syncs times): synchronisation s's bucket i is event s n + i. */
typedef struct {
  guint64     step;
  gboolean    pending;   /* recorded, not read yet */
  guint       n_syncs;   /* this step's so far */
  TachEvent  *begin;
  TachEvent **sync, **after;
  TachEvent **ready, **t0, **t1, **t2, **t3;
} DeviceSlot;

#define DEVICE_RING 4

struct _TachGradReducer {
  TachGradSyncHook  hook;         /* first: what the backend holds */
  TachRanks        *ranks;        /* borrowed */
  TachBackend      *be;           /* borrowed */
  TachGradSync      mode;
  TachGradCompress  compress;
  gboolean          device;       /* the backend's collectives, on its memory */
  size_t            bucket_floats;
  GArray           *buckets;      /* Bucket, in launch order */
  guint            *tensor_bucket;
  guint             n_tensors;
  size_t            trainable;
  guint             next_launch;
  guint16          *wire;         /* owned: grad-compress's buffer, trainable halves
                                   * (host memory, or the device's) */
  const float      *params;       /* borrowed, from the last reduce */
  size_t            total;
  guint64           step;
  double            t_begin;      /* ms: the step began */
  gboolean          arrived;      /* this step reached its synchronisation */
  GArray           *steps;        /* TachGradStepStats, by step */
  TachStrided       flights;      /* TachGradFlight */
  DeviceSlot        slots[DEVICE_RING];
  guint             syncs;        /* device: the most synchronisations a step makes */
  gboolean          joined;       /* device: the communicator is made */
  gboolean          unsettled;    /* device: collectives queued and not waited for */
  gboolean          aborted;      /* device: the communicator aborted after a failure */
#ifdef HAVE_MPI
  MPI_Op            op;           /* the wire's sum under grad-compress */
#endif
  /* shard=grads (tach-grad-shard.c): this rank's shard of the averaged
   * gradients (owned; NULL unsharded) and the ranges it updates. */
  float            *shard_grad;
  TachGradShard     shard;
  size_t           *shard_ranges; /* owned: offsets, counts, states (3 x buckets) */
  /* shard=all (tach-grad-shard-all.c): the units' buckets, as
   * tach_params_alloc cut them (owned; NULL otherwise), the shard's
   * parameters (borrowed, from the last all-gather), and whether the
   * steps have ended (the check at the end: an evaluation's all-gathers
   * are no step's). */
  size_t           *unit_ranges;  /* starts, ends (2 x buckets) */
  guint            *unit_tensor_bucket;
  guint             n_unit_buckets, n_unit_tensors;
  guint             n_units, n_kept, n_gathers;
  const float      *shard_params;
  gboolean          ended;
  /* grad-progress=thread: the progress thread, and what it shares with
   * the engine thread under @lock (tach-grad-reducer.c). */
  GThread          *progress;
  GMutex            lock;
  GCond             wake;
  gboolean          flying;       /* buckets launched and not all done: test them */
  gboolean          quit;
  GError           *progress_error;
};

/* This step's figures (the step began). */
static inline TachGradStepStats *
tach_grad_reducer_current (TachGradReducer *self)
{
  return &g_array_index (self->steps, TachGradStepStats, self->step);
}

/* The rank reached its step's synchronisation (tach-grad-reducer.c). */
void tach_grad_reducer_arrive (TachGradReducer *self);
/* Keeps @flight, as the trace would keep its step (both paths record
 * flights: here, so that the device path needs nothing of
 * tach-grad-reducer.c, which drives it). */
static inline void
tach_grad_reducer_add_flight (TachGradReducer *self, const TachGradFlight *flight)
{
  tach_strided_add (&self->flights, flight);
}

/* tach-grad-shard.c: shard=grads over MPI.  Hooks the shard's ways in
 * (TachGradSyncHook.shard, gather) and asks for the slack a padded
 * reduce-scatter reads. */
void     tach_grad_shard_init (TachGradReducer *self, const TachConfig *config);
/* Once the buckets are cut: each one's chunk and this rank's shard of it,
 * the shard's buffer, and the run's note of the layout (padding
 * included). */
void     tach_grad_shard_layout (TachGradReducer *self);
void     tach_grad_shard_clear (TachGradReducer *self);
/* The end of a note of the shard's layout: the buckets' sizes, what each
 * rank keeps (@keeps), @extra (NULL: nothing) and the padding. */
void     tach_grad_shard_append_layout (TachGradReducer *self, GString *text, const char *keeps,
                                        const char *extra, guint size, guint padded);

/* tach-grad-shard-all.c: shard=all over MPI, on top of shard=grads.
 * Hooks the units and the parameters' all-gathers in. */
void     tach_grad_shard_all_init (TachGradReducer *self, const TachConfig *config);
/* Cuts the buckets again as the units say (before the shard's layout;
 * nothing unless fully sharded). */
void     tach_grad_shard_all_cut (TachGradReducer *self);
/* The run's note of the units' layout. */
char    *tach_grad_shard_all_dup_layout (TachGradReducer *self, guint size, guint padded);
/* For the end's check: every unit's parameters, gathered from the
 * shards into @host (a copy of the flat buffer); TRUE at once unless
 * fully sharded. */
gboolean tach_grad_shard_all_fill (TachGradReducer *self, float *host, GError **error);
void     tach_grad_shard_all_clear (TachGradReducer *self);
/* grad-progress=thread, under the lock: tests the all-gathers in flight
 * so that Open MPI moves them on; how many are still in flight. */
int      tach_grad_shard_all_test (TachGradReducer *self);
#ifdef HAVE_MPI
/* Starts bucket @b's reduce-scatter of @grad (the MPI call's code). */
int      tach_grad_shard_launch (TachGradReducer *self, Bucket *b, const float *grad);
#endif

/* tach-grad-device.c: the device path, with MPI only (ranks need it). */
#ifdef HAVE_MPI
/* Makes the communicator over MPI (FALSE + the backend's error). */
gboolean tach_grad_device_join (TachGradReducer *self);
/* Makes the events of the ring, once the buckets are known. */
void     tach_grad_device_layout (TachGradReducer *self);
void     tach_grad_device_begin_step (TachGradReducer *self);
/* Queues bucket @b's all-reduce (after its gradients). */
void     tach_grad_device_launch (TachGradReducer *self, guint b, float *grad);
/* The update's side: every bucket queued; the compute stream waits for
 * them; the watchdog waits for the step before. */
void     tach_grad_device_reduce (TachGradReducer *self, float *grad);
gboolean tach_grad_device_settle (TachGradReducer *self, GError **error);
/* Reads the events of @step if they are still pending. */
void     tach_grad_device_read (TachGradReducer *self, guint64 step);
void     tach_grad_device_clear (TachGradReducer *self);
void     tach_grad_device_abort (TachGradReducer *self);
#endif

G_END_DECLS
