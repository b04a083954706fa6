/* tach-cuda-check.c: what every part of the CUDA backend calls: the
 * checks that turn a CUDA, cuDNN or cuBLAS status into the backend's
 * sticky error (the TACH_*_TRY macros), the refusal of work that would
 * block or allocate inside a graph capture, and device memory with its
 * live and peak counts.  Below tach-cuda-backend.c (the ops table, which
 * calls each part) and the parts (conv, rnn, host, nccl, ops): it calls
 * none of them, so that the backend's files call one another one way.
 */
#include <string.h>

#include <inttypes.h>
#include <glib/gi18n-lib.h>

#include "tach-cuda-private.h"
#include "tach-error-private.h"

/* --------------------------------------------------------------- errors */

static gint
code_for_cuda (cudaError_t status)
{
  return status == cudaErrorMemoryAllocation ? TACH_ERROR_OUT_OF_MEMORY : TACH_ERROR_LIBRARY;
}

gboolean
tach_cuda_check (TachBackend *be, cudaError_t status, const char *call, const char *file, int line)
{
  be->api_calls++;
  if (status == cudaSuccess)
    return TRUE;
  /* Clear the runtime's own last error so that later launches report
   * their own failures, not this one. */
  (void) cudaGetLastError ();
  tach_backend_fail (be, code_for_cuda (status), _("the CUDA runtime failed: %s (%s) in %s at %s:%d"),
                     cudaGetErrorName (status), cudaGetErrorString (status), call, file, line);
  return FALSE;
}

gboolean
tach_cudnn_status_is_refusal (cudnnStatus_t status)
{
  switch ((int) status)
    {
    /* This algorithm, data type or layout cannot do this shape: another
     * algorithm may. */
    case CUDNN_STATUS_BAD_PARAM:
    case 2001: /* CUDNN_STATUS_INVALID_VALUE, deprecated */
    case CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND:
    case CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH:
    case CUDNN_STATUS_NOT_SUPPORTED:
    case CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN:
    case CUDNN_STATUS_NOT_SUPPORTED_SHAPE:
    case CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE:
    case CUDNN_STATUS_NOT_SUPPORTED_LAYOUT:
    case CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT:
    case CUDNN_STATUS_NOT_SUPPORTED_PADDING:
    case CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM:
      return TRUE;
    /* Everything else is not about the shape, and no other algorithm
     * fixes it: a bad pointer or stream (a Tach bug), a driver, CUDA
     * runtime or architecture mismatch (3005-3007), a missing runtime
     * prerequisite or sub-library (3008, 3009), internal and execution
     * failures (4xxx, 5xxx). */
    default:
      return FALSE;
    }
}

gboolean
tach_cudnn_check (TachBackend *be, cudnnStatus_t status, const char *call, const char *file, int line)
{
  char detail[512] = "";

  be->api_calls++;
  if (status == CUDNN_STATUS_SUCCESS)
    return TRUE;
  /* cuDNN 9 keeps a message per thread that says what it did not like
   * (the status alone rarely does); reading it also resets it. */
  cudnnGetLastErrorString (detail, sizeof detail);
  tach_backend_fail (be,
                     status == CUDNN_STATUS_ALLOC_FAILED
                     || status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
                     ? TACH_ERROR_OUT_OF_MEMORY : TACH_ERROR_LIBRARY,
                     _("cuDNN failed: %s (%d) in %s at %s:%d%s%s"), cudnnGetErrorString (status),
                     (int) status, call, file, line, detail[0] != '\0' ? ": " : "", detail);
  return FALSE;
}

gboolean
tach_cublas_check (TachBackend *be, cublasStatus_t status, const char *call, const char *file, int line)
{
  be->api_calls++;
  if (status == CUBLAS_STATUS_SUCCESS)
    return TRUE;
  tach_backend_fail (be, status == CUBLAS_STATUS_ALLOC_FAILED ? TACH_ERROR_OUT_OF_MEMORY : TACH_ERROR_LIBRARY,
                     _("cuBLAS failed: %s (%s) in %s at %s:%d"), tach_cublas.get_status_name (status),
                     tach_cublas.get_status_string (status), call, file, line);
  return FALSE;
}

gboolean
tach_cuda_not_capturing (TachBackend *be, const char *what)
{
  if (!TACH_CUDA (be)->capturing)
    return TRUE;
  tach_backend_fail (be, TACH_ERROR_UNSUPPORTED,
                     _("%s is not allowed while a CUDA graph is being captured: it would block or "
                       "allocate; move it out of the captured step"), what);
  return FALSE;
}

/* --------------------------------------------------------------- memory */

void *
tach_cuda_alloc_internal (TachBackend *be, size_t bytes)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  void *ptr = NULL;
  cudaError_t status;

  if (be->error != NULL || !tach_cuda_not_capturing (be, "allocating device memory"))
    return NULL;
  status = cudaMalloc (&ptr, bytes == 0 ? 1 : bytes);
  if (status == cudaErrorMemoryAllocation)
    {
      size_t free_b = 0, total_b = 0;

      (void) cudaGetLastError ();
      (void) cudaMemGetInfo (&free_b, &total_b);
      tach_backend_fail (be, TACH_ERROR_OUT_OF_MEMORY,
                         W_("out of GPU memory on cuda:%d: could not allocate %zu"
                           " bytes (%zu of %zu free); lower {batch} "
                           "or {samples}"),
                         cb->ordinal, (gsize) bytes, (gsize) free_b, (gsize) total_b);
      return NULL;
    }
  TACH_CUDA_TRY (be, status, return NULL);
  g_hash_table_insert (cb->sizes, ptr, GSIZE_TO_POINTER (bytes));
  cb->live_bytes += bytes;
  cb->peak_bytes = MAX (cb->peak_bytes, cb->live_bytes);
  return ptr;
}

void
tach_cuda_free_internal (TachBackend *be, void *ptr)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  gpointer size;

  if (ptr == NULL)
    return;
  if (g_hash_table_steal_extended (cb->sizes, ptr, NULL, &size))
    cb->live_bytes -= GPOINTER_TO_SIZE (size);
  /* cudaFree synchronises the device; a failure here (a lost device)
   * still goes to the sticky error, but freeing never stops early. */
  (void) tach_cuda_check (be, cudaFree (ptr), "cudaFree (ptr)", __FILE__, __LINE__);
}
