/* tach-cuda-host.c: the CUDA backend's host side of memory: pinned
 * allocations, the staged uploads of the host feeds, and the data-fault
 * flag through which kernels report bad input.
 *
 * Staged uploads: feed_dict and numpy feeds hand over pageable memory and
 * may reuse it once the call returns.  A pageable cudaMemcpyAsync may wait
 * for the stream (the driver's documented right), and a synchronous upload
 * waits for every step queued before it, so that with sync > 1 the feed
 * phase would absorb the previous steps' compute.  Instead each upload
 * copies @src into one of TACH_CUDA_STAGE_SLOTS pinned buffers and queues
 * the device copy on the compute stream, in order with the steps that read
 * the same device batch, and returns.  A slot is reused only once the copy
 * out of it has run (an event per slot): the host waits only for copies
 * queued TACH_CUDA_STAGE_SLOTS uploads ago.
 *
 * Data faults: a kernel that finds a label out of range writes the first
 * one (row + 1, label, classes) into mapped pinned memory and goes on; the
 * backend reads it after each wait on the device, without an API call, and
 * fails with the CPU backend's TACH_ERROR_DATA message.
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-cuda-private.h"
#include "tach-error-private.h"

void *
tach_cuda_pinned_alloc (TachBackend *be, size_t bytes)
{
  void *ptr = NULL;
  cudaError_t status = cudaMallocHost (&ptr, bytes == 0 ? 1 : bytes);

  if (status == cudaErrorMemoryAllocation)
    {
      (void) cudaGetLastError ();
      tach_backend_fail (be, TACH_ERROR_OUT_OF_MEMORY,
                         W_("out of pinned host memory: could not lock %zu bytes for "
                           "asynchronous copies; lower {batch} or {samples}"), (gsize) bytes);
      return NULL;
    }
  TACH_CUDA_TRY (be, status, return NULL);
  return ptr;
}

gboolean
tach_cuda_host_init (TachBackend *be)
{
  TachCudaBackend *cb = TACH_CUDA (be);

  TACH_CUDA_TRY (be, cudaHostAlloc ((void **) &cb->fault, 4 * sizeof (int32_t), cudaHostAllocMapped),
                 return FALSE);
  memset ((void *) cb->fault, 0, 4 * sizeof (int32_t));
  TACH_CUDA_TRY (be, cudaHostGetDevicePointer ((void **) &cb->fault_dev, (void *) cb->fault, 0),
                 return FALSE);
  return TRUE;
}

void
tach_cuda_host_clear (TachBackend *be)
{
  TachCudaBackend *cb = TACH_CUDA (be);

  for (guint i = 0; i < TACH_CUDA_STAGE_SLOTS; i++)
    {
      if (cb->stage[i].done != NULL)
        (void) cudaEventDestroy (cb->stage[i].done);
      if (cb->stage[i].ptr != NULL)
        (void) cudaFreeHost (cb->stage[i].ptr);
    }
  memset (cb->stage, 0, sizeof cb->stage);
  if (cb->fault != NULL)
    (void) cudaFreeHost ((void *) cb->fault);
  cb->fault = NULL;
  cb->fault_dev = NULL;
}

gboolean
tach_cuda_check_faults (TachBackend *be)
{
  volatile int32_t *fault = TACH_CUDA (be)->fault;
  int32_t row;

  if (fault == NULL || (row = fault[0]) == 0)
    return TRUE;
  tach_backend_fail_label (be, fault[1], row - 1, fault[2]);
  fault[0] = 0;
  return FALSE;
}

void
tach_cuda_upload_staged (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  TachCudaStage *slot = &cb->stage[cb->stage_next];

  if (!tach_cuda_not_capturing (be, "an upload from host memory"))
    return;
  cb->stage_next = (cb->stage_next + 1) % TACH_CUDA_STAGE_SLOTS;
  if (slot->done == NULL)
    TACH_CUDA_TRY (be, cudaEventCreateWithFlags (&slot->done, cudaEventDisableTiming), return);
  else
    TACH_CUDA_TRY (be, cudaEventSynchronize (slot->done), return);
  if (slot->size < bytes)
    {
      if (slot->ptr != NULL)
        TACH_CUDA_TRY (be, cudaFreeHost (slot->ptr), return);
      slot->ptr = NULL;
      slot->size = 0;
      slot->ptr = tach_cuda_pinned_alloc (be, bytes);
      if (slot->ptr == NULL)
        return;
      slot->size = bytes;
    }
  memcpy (slot->ptr, src, bytes);
  TACH_CUDA_TRY (be, cudaMemcpyAsync (dst, slot->ptr, bytes, cudaMemcpyHostToDevice, cb->stream),
                 return);
  TACH_CUDA_TRY (be, cudaEventRecord (slot->done, cb->stream), return);
}
