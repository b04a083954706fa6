/* tach-cuda-nccl.c: the CUDA backend's collectives, through NCCL: data
 * parallel ranks on GPUs (tach-backend-ops.h's collective slots).
 *
 * Each rank drives one GPU.  The runner makes the communicator over MPI
 * (run/tach-ranks.c: rank 0's coll_new_id, MPI's broadcast, every rank's
 * coll_join) and queues the gradients' all-reduces here, on the compute
 * stream or, for the buckets that overlap backward, on a side stream
 * ordered against it by events.  Tach writes no collective: ncclAllReduce
 * sums, in place, floats or (grad-compress) fp16/bf16 halves; the casts
 * and the division by the ranks are this backend's kernels.
 *
 * NCCL is opened with dlopen on the first coll_join (as cuBLAS is, in
 * tach-cuda-cublas.c), so that a build with NCCL's header runs one
 * process on a host without libnccl.so.2; only ranks on GPUs need it.
 * A build without the header (HAVE_NCCL undefined) leaves the slots NULL,
 * and the runner refuses ranks on GPUs with a message saying so.
 *
 * Threads: the engine thread, as every op.
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-cuda-private.h"

#ifdef HAVE_NCCL
/* nccl.h declares a few functions as f () (NCCL 2.28). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#define TACH_NCCL_SONAME "libnccl.so." G_STRINGIFY (NCCL_MAJOR)

/* The NCCL entries the backend calls, typed from nccl.h's declarations. */
typedef struct {
  __typeof__ (ncclGetUniqueId)     *get_unique_id;
  __typeof__ (ncclCommInitRank)    *comm_init_rank;
  __typeof__ (ncclCommDestroy)     *comm_destroy;
  __typeof__ (ncclCommAbort)       *comm_abort;
  __typeof__ (ncclAllReduce)       *all_reduce;
  __typeof__ (ncclGetErrorString)  *get_error_string;
  __typeof__ (ncclGetLastError)    *get_last_error;
  __typeof__ (ncclGetVersion)      *get_version;
} TachNccl;

static TachNccl nccl;

G_STATIC_ASSERT (sizeof (ncclUniqueId) == TACH_COLL_ID_BYTES);

/* Opens NCCL once; FALSE + the backend's sticky error when it is not
 * there. */
static gboolean
nccl_load (TachBackend *be)
{
#define SYMBOL(field, name) { G_STRUCT_OFFSET (TachNccl, field), name }
  static const TachCudaSymbol symbols[] = {
    SYMBOL (get_unique_id, "ncclGetUniqueId"),
    SYMBOL (comm_init_rank, "ncclCommInitRank"),
    SYMBOL (comm_destroy, "ncclCommDestroy"),
    SYMBOL (comm_abort, "ncclCommAbort"),
    SYMBOL (all_reduce, "ncclAllReduce"),
    SYMBOL (get_error_string, "ncclGetErrorString"),
    SYMBOL (get_last_error, "ncclGetLastError"),
    SYMBOL (get_version, "ncclGetVersion"),
  };
#undef SYMBOL
  static gsize done;
  static char *failure;
  const char *why = tach_cuda_load_once (&done, &failure, TACH_NCCL_SONAME, symbols,
                                         G_N_ELEMENTS (symbols), &nccl, sizeof nccl);

  if (why == NULL)
    return TRUE;
  tach_backend_fail (be, TACH_ERROR_LIBRARY,
                     _("NCCL could not be loaded, which data-parallel ranks on GPUs need:"
                       " install NCCL %d (%s, e.g. the libnccl2 package or the nvidia-nccl"
                       " wheel's lib folder on LD_LIBRARY_PATH) or use --device cpu: %s"),
                     NCCL_MAJOR, TACH_NCCL_SONAME, why);
  return FALSE;
}

/* Records a failed NCCL result in the sticky error: NCCL's name for it,
 * its last message, and the call. */
static gboolean
nccl_check (TachBackend *be, ncclResult_t result, const char *call)
{
  const char *last;

  be->api_calls++;
  if (result == ncclSuccess)
    return TRUE;
  last = nccl.get_last_error != NULL ? nccl.get_last_error (TACH_CUDA (be)->comm) : NULL;
  tach_backend_fail (be, TACH_ERROR_LIBRARY, _("NCCL failed: %s: %s%s%s"), call,
                     nccl.get_error_string (result), last != NULL && *last ? ": " : "",
                     last != NULL ? last : "");
  return FALSE;
}

#define NCCL_TRY(be, call, on_error) \
  G_STMT_START { if (!nccl_check ((be), (call), #call)) { on_error; } } G_STMT_END

static cudaStream_t
stream_of (TachBackend *be, gboolean side)
{
  return side ? TACH_CUDA (be)->side_stream : TACH_CUDA (be)->stream;
}

static void
cuda_coll_new_id (TachBackend *be, guint8 *id)
{
  ncclUniqueId unique;

  if (!nccl_load (be))
    return;
  NCCL_TRY (be, nccl.get_unique_id (&unique), return);
  memcpy (id, &unique, sizeof unique);
}

static void
cuda_coll_join (TachBackend *be, const guint8 *id, guint rank, guint size)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  ncclUniqueId unique;
  ncclComm_t comm = NULL;
  int version = 0;

  if (!nccl_load (be))
    return;
  memcpy (&unique, id, sizeof unique);
  if (cb->side_stream == NULL)
    TACH_CUDA_TRY (be, cudaStreamCreateWithFlags (&cb->side_stream, cudaStreamNonBlocking),
                   return);
  /* The communicator binds to the current device: this backend's. */
  TACH_CUDA_TRY (be, cudaSetDevice (cb->ordinal), return);
  NCCL_TRY (be, nccl.comm_init_rank (&comm, (int) size, unique, (int) rank), return);
  cb->comm = comm;
  if (nccl.get_version (&version) == ncclSuccess)
    {
      g_autofree char *note = g_strdup_printf ("NCCL %d.%d.%d, rank %u of %u on cuda:%d",
                                               version / 10000, version / 100 % 100,
                                               version % 100, rank, size, cb->ordinal);

      tach_backend_note_algorithm (be, "collectives", note);
    }
}

static void
cuda_coll_leave (TachBackend *be, gboolean abort)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  ncclComm_t comm = cb->comm;

  if (comm == NULL)
    return;
  cb->comm = NULL;
  /* Whatever the error state: the communicator's resources go. */
  if (abort)
    (void) nccl.comm_abort (comm);
  else if (nccl.comm_destroy (comm) != ncclSuccess)
    (void) nccl.comm_abort (comm);
}

static ncclDataType_t
wire_type (TachGradCompress wire)
{
  switch (wire)
    {
    case TACH_GRAD_COMPRESS_FP16:
      return ncclFloat16;
    case TACH_GRAD_COMPRESS_BF16:
      return ncclBfloat16;
    case TACH_GRAD_COMPRESS_NONE:
    default:
      return ncclFloat32;
    }
}

static void
cuda_coll_allreduce (TachBackend *be, void *buf, size_t count, TachGradCompress wire,
                     gboolean side)
{
  TachCudaBackend *cb = TACH_CUDA (be);

  if (cb->comm == NULL)
    {
      tach_backend_fail (be, TACH_ERROR_LIBRARY,
                         _("a gradient all-reduce before the ranks' communicator was made"));
      return;
    }
  if (!tach_cuda_not_capturing (be, "a gradient all-reduce"))
    return;
  NCCL_TRY (be, nccl.all_reduce (buf, buf, count, wire_type (wire), ncclSum,
                                 (ncclComm_t) cb->comm, stream_of (be, side)), return);
}

static void
cuda_coll_pack (TachBackend *be, const float *grad, guint16 *wire, size_t n,
                TachGradCompress compress, gboolean side)
{
  TACH_CUDA_LAUNCH (be, tach_cuda_launch_grad_pack (stream_of (be, side), grad, wire, n,
                                                    compress == TACH_GRAD_COMPRESS_BF16),
                    return);
}

static void
cuda_coll_unpack (TachBackend *be, const guint16 *wire, float *grad, size_t n,
                  TachGradCompress compress, float divisor, gboolean side)
{
  TACH_CUDA_LAUNCH (be, tach_cuda_launch_grad_unpack (stream_of (be, side), wire, grad, n,
                                                      compress == TACH_GRAD_COMPRESS_BF16,
                                                      divisor),
                    return);
}

static void
cuda_side_record (TachBackend *be, TachEvent *ev)
{
  TACH_CUDA_TRY (be, cudaEventRecord ((cudaEvent_t) ev, TACH_CUDA (be)->side_stream), return);
}

static void
cuda_side_wait (TachBackend *be, TachEvent *ev)
{
  TACH_CUDA_TRY (be, cudaStreamWaitEvent (TACH_CUDA (be)->side_stream, (cudaEvent_t) ev, 0),
                 return);
}

static gboolean
cuda_event_query (TachBackend *be, TachEvent *ev)
{
  cudaError_t status = cudaEventQuery ((cudaEvent_t) ev);

  /* "Not ready" is an answer, not a failure, but the runtime may keep it
   * as the last error, which the next launch's check (the launchers return
   * cudaGetLastError()) would then take for its own: cleared, as
   * PyTorch's CUDAEvent::query does. */
  if (status == cudaErrorNotReady)
    {
      (void) cudaGetLastError ();
      return FALSE;
    }
  TACH_CUDA_TRY (be, status, return TRUE);
  return TRUE;
}

void
tach_cuda_nccl_fill_ops (TachBackendOps *ops)
{
  ops->coll_new_id = cuda_coll_new_id;
  ops->coll_join = cuda_coll_join;
  ops->coll_leave = cuda_coll_leave;
  ops->coll_allreduce = cuda_coll_allreduce;
  ops->coll_pack = cuda_coll_pack;
  ops->coll_unpack = cuda_coll_unpack;
  ops->side_record = cuda_side_record;
  ops->side_wait = cuda_side_wait;
  ops->event_query = cuda_event_query;
}

void
tach_cuda_nccl_clear (TachBackend *be)
{
  TachCudaBackend *cb = TACH_CUDA (be);

  /* Still joined when the backend goes: the run failed, and a rank may be
   * lost, so no wait on the others. */
  cuda_coll_leave (be, TRUE);
  if (cb->side_stream != NULL)
    {
      (void) cudaStreamSynchronize (cb->side_stream);
      (void) cudaStreamDestroy (cb->side_stream);
      cb->side_stream = NULL;
    }
}

#else /* !HAVE_NCCL */

void
tach_cuda_nccl_fill_ops (TachBackendOps *ops)
{
  (void) ops;
}

void
tach_cuda_nccl_clear (TachBackend *be)
{
  (void) be;
}

#endif /* HAVE_NCCL */
