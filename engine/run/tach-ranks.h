/* tach-ranks.h: data-parallel ranks, over MPI (and NCCL on GPUs).
 *
 * `mpirun -np N tach-cli run ...` starts N processes; each joins the job
 * (tach_ranks_init), trains the same model on its shard of every global
 * batch (the feeder's shard: TachBackend.rank and .ranks) and averages its
 * gradients with the others' before each update, through MPI's all-reduce
 * (TachGradReducer): Tach writes no collective of its own.  How the
 * gradients travel is the grad-sync knob:
 *   per-tensor  one blocking all-reduce per parameter tensor, in order,
 *               after backward (no overlap, no fusion)
 *   fused       one blocking all-reduce of the flat gradient buffer after
 *               backward (Horovod's tensor fusion)
 *   overlap     buckets of at most bucket-mb, in reverse order of the
 *               parameters (the order backward produces them), each
 *               all-reduced asynchronously (MPI_Iallreduce) once every
 *               tensor in it is ready, launched in bucket order on every
 *               rank, and tested with MPI_Test as backward goes on, since
 *               Open MPI progresses a request only inside MPI calls
 *               (grad-progress: between layers, or by a progress thread);
 *               all are waited on before the update (PyTorch DDP's Reducer)
 * and grad-compress casts the buckets to fp16 or bf16 before the wire and
 * widens them after (it changes results).  The sum's division by N is the
 * same in every mode, so with two ranks (where a + b is the same sum
 * whatever the algorithm) every mode gives the same bits.
 *
 * On a CUDA device the same buckets travel by NCCL (tach-grad-device.c:
 * ncclAllReduce on the device's buffers, the communicator bootstrapped
 * over MPI: rank 0's NCCL id broadcast), one GPU per rank, each rank the
 * GPU of its place among the ranks of its machine.
 *
 * Every wait on another rank has a deadline (tach_ranks_set_timeout): a
 * rank that dies or hangs fails the others' runs with an error that names
 * it, from the heartbeats each rank sends rank 0 as it reaches a step's
 * synchronisation, instead of hanging forever.
 *
 * A build without MPI (meson -Dmpi=disabled) keeps the same interface:
 * one process, and a clear error when it finds itself started by mpirun.
 *
 * Threads: MPI is initialised for MPI_THREAD_SERIALIZED: the main thread
 * calls tach_ranks_init, tach_ranks_check_config and tach_ranks_finish;
 * the engine thread, in between, everything else; under
 * grad-progress=thread the reducer's progress thread tests the buckets in
 * flight, under the reducer's lock, which the engine thread holds for its
 * own MPI calls while they fly.  Never two at once.
 */
#pragma once

#include "tach-engine.h"
#include "tach-backend.h"

G_BEGIN_DECLS

/* tach_ranks_init, tach_ranks_world_rank/size, tach_ranks_finish and
 * tach_ranks_check_world_config are public (tach-engine.h). */
typedef struct _TachRanks TachRanks;
typedef struct _TachGradReducer TachGradReducer;

/* The job this process belongs to, or NULL when it runs alone. */
TachRanks  *tach_ranks_world (void);
/* The ranks a run of config ranks=@n goes over: the job for n = N (or
 * alone), the first @n ranks as tach_ranks_prepare_first made them, or
 * NULL (not prepared, or this rank is not among them). */
TachRanks  *tach_ranks_for_count (guint n);
guint       tach_ranks_rank (const TachRanks *ranks);
guint       tach_ranks_size (const TachRanks *ranks);

/* This rank's place among the ranks on its machine, and how many there
 * are (0 of 1 alone): a rank on GPUs drives the GPU of its place. */
void        tach_ranks_local (const TachRanks *ranks, guint *local_rank, guint *local_size);

/* Seconds a rank waits on the others before it gives up (8 after the first
 * step; the first step also waits for the slowest rank's set-up, 120). */
void        tach_ranks_set_timeout (double first_s, double later_s);

/* Compares @config with every rank's (rank 0's against each other's):
 * every knob, and Tach's version; on a difference every rank fails with
 * TACH_ERROR_INVALID_CONFIG and one message that names the rank, the knob
 * and both values.  Collective: every rank calls it.  TRUE when alone. */
gboolean    tach_ranks_check_config (TachRanks *ranks, const TachConfig *config,
                                     GError **error);

/* Gathers @n doubles from every rank onto rank 0, in rank order, into
 * @out (n * size doubles, rank 0 only; NULL elsewhere), within the
 * timeout.  Collective. */
gboolean    tach_ranks_gather (TachRanks *ranks, const double *values, guint n, double *out,
                               GError **error);
/* Gathers every rank's @n bytes (@n may differ between ranks) onto rank
 * 0: *all is a GBytes per rank, in rank order, on rank 0 (NULL
 * elsewhere).  Collective. */
gboolean    tach_ranks_gather_bytes (TachRanks *ranks, const void *data, gsize n,
                                     GPtrArray **all, GError **error);
/* Whether every rank holds the same @n bytes at @data (a hash of each,
 * compared on every rank); FALSE + @error naming the first rank whose
 * bytes differ from rank 0's.  Collective. */
gboolean    tach_ranks_check_same_bytes (TachRanks *ranks, const void *data, gsize n,
                                         const char *what, GError **error);

/* What to add to this rank's monotonic clock (tach_ranks_now_ms, ms) to
 * read rank 0's: measured by pings to rank 0, within the shortest round
 * trip's half (tach-ranks-clock.c); 0 on rank 0 and alone.  Collective. */
gboolean    tach_ranks_clock_offset (TachRanks *ranks, double *offset_ms, GError **error);

/* A data-parallel run's stop, agreed by every rank (tach-ranks-stop.c):
 * each rank votes at the start of every step whether it was asked to stop
 * (tach_run_stop), and counts the vote before at the end of the step;
 * when any rank voted to stop, every rank learns it at the same step and
 * stops after it, its collectives complete.  NULL (no vote) for fewer
 * than 2 ranks.  Engine thread. */
typedef struct _TachRanksVote TachRanksVote;
TachRanksVote *tach_ranks_vote_new (TachRanks *ranks);
/* At the start of each step: this rank's vote.  Collective. */
gboolean    tach_ranks_vote_cast (TachRanksVote *vote, gboolean stop, GError **error);
/* At the end of each step: whether any rank voted to stop at the step
 * before (FALSE after the first step). */
gboolean    tach_ranks_vote_count (TachRanksVote *vote, gboolean *stop, GError **error);
/* After the last step: waits for the votes not counted (every rank cast
 * as many). */
gboolean    tach_ranks_vote_settle (TachRanksVote *vote, GError **error);
void        tach_ranks_vote_free (TachRanksVote *vote);

/* ------------------------------------------------------ gradient reducer */

/* A step's communication figures, per rank (milliseconds).  On a device
 * backend (NCCL) they come from the device's events: exposed is the time
 * the compute stream waited for the collectives. */
typedef struct {
  double arrive_ms;   /* from the step's start to its synchronisation (compute, feeding) */
  double comm_ms;     /* exposed: blocked in MPI calls that compute did not hide */
  double pack_ms;     /* casting to and from the wire's fp16/bf16 and scaling by 1/N */
  double wait_ms;     /* of comm_ms, waiting for the first rank to start (imbalance) */
  double poll_ms;     /* MPI_Test polls between layers (overlap) */
  double bytes;       /* bytes this rank put on the wire this step */
  guint  collectives; /* all-reduces this step */
} TachGradStepStats;

/* What a flight was: an all-reduce, or under shard=grads a bucket's
 * reduce-scatter and its all-gather of the updated parameters. */
typedef enum {
  TACH_GRAD_FLIGHT_ALL_REDUCE,
  TACH_GRAD_FLIGHT_REDUCE_SCATTER,
  TACH_GRAD_FLIGHT_ALL_GATHER,
} TachGradFlightKind;

/* One collective as it flew: from its launch to its completion, measured
 * from the start of its step on this rank's clock (the host's over MPI,
 * the device's over NCCL). */
typedef struct {
  guint64 step;
  guint   bucket;     /* in launch order */
  guint   kind;       /* TachGradFlightKind */
  guint   ahead;      /* shard=all: an all-gather prefetched (shard-prefetch=next) */
  double  start_ms;
  double  dur_ms;
  double  bytes;      /* on the wire */
} TachGradFlight;

/* The reducer of one run (engine thread): @config's grad-sync,
 * bucket-mb and grad-compress.  It hooks itself into @be
 * (TachBackend.grad_sync), so that the models' tach_params_update and
 * tach_params_grad_ready reach it; its buckets become one of the run's
 * algorithm notes ("gradient all-reduce: overlap: 2 all-reduces a step:
 * 0.04 0.40 MB").  Over host memory (the CPU) the gradients travel by
 * MPI; over a device with collectives (TachBackendOps' coll_* slots: the
 * CUDA backend's NCCL) by the device's own, whose communicator it makes
 * here over MPI.  Errors become @be's sticky error. */
TachGradReducer *tach_grad_reducer_new  (TachRanks *ranks, TachBackend *be,
                                         const TachConfig *config);
/* Marks the start of step @step (the watchdog's heartbeat) and clears its
 * figures.  @start_ms is when the step began on the monotonic clock
 * (tach_ranks_now_ms's), which its arrival and flights count from, as the
 * step's samples do. */
void             tach_grad_reducer_begin_step (TachGradReducer *reducer, guint64 step,
                                               double start_ms);
/* The figures of step @step, once known (a device's are read when its
 * events have passed: at the latest when the step's timing is read);
 * FALSE when not known. */
gboolean         tach_grad_reducer_step_stats (TachGradReducer *reducer, guint64 step,
                                               TachGradStepStats *stats);
/* Waits, within the ranks' timeout, for every collective queued so far:
 * before the runner blocks on the device, so that a lost rank ends the
 * run with a message instead of a hang.  TRUE at once over MPI. */
gboolean         tach_grad_reducer_settle (TachGradReducer *reducer, GError **error);
/* The flights kept (TachGradFlight; every step's, or every Nth step's in
 * a long run, as the trace keeps them), complete after
 * tach_grad_reducer_check_params. */
GArray          *tach_grad_reducer_get_flights (TachGradReducer *reducer);
guint            tach_grad_reducer_get_n_buckets (TachGradReducer *reducer);
/* After the last step: whether every rank's parameters are bit-identical,
 * checked by their hashes (downloaded from @be). */
gboolean         tach_grad_reducer_check_params (TachGradReducer *reducer, GError **error);
/* The gradients' wire casts (grad-compress), rounding to nearest even as
 * the device's do: what the MPI path sends, and what the GPU tests hold
 * the device's casts to. */
guint16          tach_grad_float_to_fp16 (float f);
float            tach_grad_fp16_to_float (guint16 h);
guint16          tach_grad_float_to_bf16 (float f);
float            tach_grad_bf16_to_float (guint16 h);

/* After a failure, before anything waits on the device: aborts the
 * device's communicator (ncclCommAbort), which ends the collectives that
 * would never complete (those of a rank gone, or queued before this rank's
 * own error), and leaves the figures of steps whose collectives had not
 * ended unread (NaN) rather than waiting for them.  Nothing over MPI,
 * whose waits have the ranks' deadline. */
void             tach_grad_reducer_abort (TachGradReducer *reducer);
void             tach_grad_reducer_free (TachGradReducer *reducer);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachGradReducer, tach_grad_reducer_free)

G_END_DECLS
