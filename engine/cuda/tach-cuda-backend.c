/* tach-cuda-backend.c: the CUDA backend's lifecycle, memory, events,
 * graphs, dense algebra and device enumeration.
 *
 * One backend = one device + one non-blocking stream with its cuBLAS and
 * cuDNN handles bound to it.  Every op is queued on that stream; only
 * synchronize, download and event_elapsed_ms block.  Every CUDA, cuDNN and
 * cuBLAS status goes through the TACH_*_TRY macros into the sticky error
 * (tach-cuda-check.c, with the device memory every part allocates).
 */
#include <string.h>

#include <inttypes.h>
#include <glib/gi18n-lib.h>

#include "tach-cuda-private.h"
#include "tach-error-private.h"

/* 32 MiB is what cuBLAS asks for on Hopper; giving it up front keeps
 * cuBLAS from allocating inside a graph capture. */
#define TACH_CUBLAS_WORKSPACE_BYTES (32u << 20)

static void *
cuda_alloc (TachBackend *be, size_t bytes)
{
  return tach_cuda_alloc_internal (be, bytes);
}

static void
cuda_dealloc (TachBackend *be, void *ptr)
{
  tach_cuda_free_internal (be, ptr);
}

/* A copy from pageable host memory, as feed_dict does: it returns once the
 * data has left @src, without waiting for the steps queued before it
 * (tach-cuda-host.c). */
static void
cuda_upload (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  tach_cuda_upload_staged (be, dst, src, bytes);
}

static void *
cuda_host_alloc (TachBackend *be, size_t bytes)
{
  return tach_cuda_pinned_alloc (be, bytes);
}

static void
cuda_host_free (TachBackend *be, void *ptr)
{
  if (ptr != NULL)
    (void) tach_cuda_check (be, cudaFreeHost (ptr), "cudaFreeHost (ptr)", __FILE__, __LINE__);
}

/* Ordering: the copy is queued on the backend's stream, so it runs after
 * every op queued before it and before every op queued after it; the host
 * does not wait.  @src (pinned, from host_alloc) must stay unchanged until
 * the stream has passed the copy: record an event after this call and wait
 * on it (or synchronize) before refilling @src. */
static void
cuda_upload_async (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  TACH_CUDA_TRY (be, cudaMemcpyAsync (dst, src, bytes, cudaMemcpyHostToDevice,
                                      TACH_CUDA (be)->stream), return);
}

/* feed=prefetch's copy: on the copy stream, so that it overlaps whatever
 * the compute stream is running; @after and @done order it against the
 * compute stream without the host waiting. */
static void
cuda_upload_overlapped (TachBackend *be, void *dst, const void *src, size_t bytes,
                        TachEvent *after, TachEvent *done)
{
  TachCudaBackend *cb = TACH_CUDA (be);

  /* A captured graph would bake in this batch's slot and the wait on an
   * event recorded outside it. */
  if (!tach_cuda_not_capturing (be, "an overlapped upload"))
    return;
  if (after != NULL)
    TACH_CUDA_TRY (be, cudaStreamWaitEvent (cb->copy_stream, (cudaEvent_t) after, 0), return);
  if (bytes > 0)
    TACH_CUDA_TRY (be, cudaMemcpyAsync (dst, src, bytes, cudaMemcpyHostToDevice, cb->copy_stream),
                   return);
  if (done != NULL)
    TACH_CUDA_TRY (be, cudaEventRecord ((cudaEvent_t) done, cb->copy_stream), return);
}

static void
cuda_stream_wait (TachBackend *be, TachEvent *ev)
{
  if (!tach_cuda_not_capturing (be, "waiting for an overlapped upload"))
    return;
  TACH_CUDA_TRY (be, cudaStreamWaitEvent (TACH_CUDA (be)->stream, (cudaEvent_t) ev, 0), return);
}

static void
cuda_download (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  TachCudaBackend *cb = TACH_CUDA (be);

  if (!tach_cuda_not_capturing (be, "a download"))
    return;
  TACH_CUDA_TRY (be, cudaMemcpyAsync (dst, src, bytes, cudaMemcpyDeviceToHost, cb->stream), return);
  TACH_CUDA_TRY (be, cudaStreamSynchronize (cb->stream), return);
  tach_cuda_check_faults (be);
}

static void
cuda_zero (TachBackend *be, void *ptr, size_t bytes)
{
  TACH_CUDA_TRY (be, cudaMemsetAsync (ptr, 0, bytes, TACH_CUDA (be)->stream), return);
}

static void
cuda_copy (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  TACH_CUDA_TRY (be, cudaMemcpyAsync (dst, src, bytes, cudaMemcpyDeviceToDevice,
                                      TACH_CUDA (be)->stream), return);
}

static void
cuda_synchronize (TachBackend *be)
{
  if (!tach_cuda_not_capturing (be, "synchronize"))
    return;
  TACH_CUDA_TRY (be, cudaStreamSynchronize (TACH_CUDA (be)->stream), return);
  TACH_CUDA_TRY (be, cudaStreamSynchronize (TACH_CUDA (be)->copy_stream), return);
  tach_cuda_check_faults (be);
}

static guint64
cuda_peak_memory (TachBackend *be)
{
  return TACH_CUDA (be)->peak_bytes;
}

/* --------------------------------------------------------------- events */

static TachEvent *
cuda_event_new (TachBackend *be)
{
  cudaEvent_t ev = NULL;

  TACH_CUDA_TRY (be, cudaEventCreate (&ev), return NULL);
  return (TachEvent *) ev;
}

static void
cuda_event_free (TachBackend *be, TachEvent *ev)
{
  if (ev != NULL)
    (void) tach_cuda_check (be, cudaEventDestroy ((cudaEvent_t) ev), "cudaEventDestroy (ev)",
                            __FILE__, __LINE__);
}

static void
cuda_event_record (TachBackend *be, TachEvent *ev)
{
  TACH_CUDA_TRY (be, cudaEventRecord ((cudaEvent_t) ev, TACH_CUDA (be)->stream), return);
}

static void
cuda_event_synchronize (TachBackend *be, TachEvent *ev)
{
  if (!tach_cuda_not_capturing (be, "waiting for an event"))
    return;
  TACH_CUDA_TRY (be, cudaEventSynchronize ((cudaEvent_t) ev), return);
  tach_cuda_check_faults (be);
}

static double
cuda_event_elapsed_ms (TachBackend *be, TachEvent *start, TachEvent *end)
{
  float ms = 0.0f;

  TACH_CUDA_TRY (be, cudaEventSynchronize ((cudaEvent_t) end), return NAN);
  TACH_CUDA_TRY (be, cudaEventElapsedTime (&ms, (cudaEvent_t) start, (cudaEvent_t) end), return NAN);
  return ms;
}

/* --------------------------------------------------------------- graphs */

static void
cuda_graph_begin (TachBackend *be)
{
  TachCudaBackend *cb = TACH_CUDA (be);

  if (cb->capturing)
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG, _("a CUDA graph capture is already in progress"));
      return;
    }
  /* Thread-local mode: only this thread's unsafe calls (a stray
   * cudaMalloc) break the capture, and they are reported. */
  TACH_CUDA_TRY (be, cudaStreamBeginCapture (cb->stream, cudaStreamCaptureModeThreadLocal), return);
  cb->capturing = TRUE;
}

static TachGraph *
cuda_graph_end (TachBackend *be)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  cudaError_t status;

  if (!cb->capturing)
    {
      /* Ending a capture that an error kept from starting is not an error
       * of its own (tach_graph_end ends captures after errors). */
      if (be->error == NULL)
        tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG, _("graph_end without graph_begin"));
      return NULL;
    }
  cb->capturing = FALSE;
  status = cudaStreamEndCapture (cb->stream, &graph);
  TACH_CUDA_TRY (be, status, goto out);
  TACH_CUDA_TRY (be, cudaGraphInstantiate (&exec, graph, 0), goto out);

out:
  if (graph != NULL)
    (void) cudaGraphDestroy (graph);
  return (TachGraph *) exec;
}

static void
cuda_graph_launch (TachBackend *be, TachGraph *graph)
{
  TACH_CUDA_TRY (be, cudaGraphLaunch ((cudaGraphExec_t) graph, TACH_CUDA (be)->stream), return);
}

static void
cuda_graph_free (TachBackend *be, TachGraph *graph)
{
  if (graph != NULL)
    (void) tach_cuda_check (be, cudaGraphExecDestroy ((cudaGraphExec_t) graph),
                            "cudaGraphExecDestroy (graph)", __FILE__, __LINE__);
}

/* ----------------------------------------------------------------- GEMM */

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, and a
 * row-major matrix read column-major is its transpose: so B and A swap
 * places and keep their own transpose flags. */
static void
cuda_gemm (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k, float alpha,
           const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
  TachCudaBackend *cb = TACH_CUDA (be);

  TACH_CUBLAS_TRY (be, tach_cublas.gemm_ex (cb->cublas,
                                            /* transa = */ tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                            /* transb = */ ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                            /* m = */ n, /* n = */ m, /* k = */ k,
                                            &alpha,
                                            /* A = */ b, CUDA_R_32F, ldb,
                                            /* B = */ a, CUDA_R_32F, lda,
                                            &beta,
                                            /* C = */ c, CUDA_R_32F, ldc,
                                            cb->cublas_compute, CUBLAS_GEMM_DEFAULT), return);
}

/* The Transformer's batched product (attention's per-head q k^T and p
 * v), swapped to column-major as cuda_gemm, in the precision's compute
 * type. */
static void
cuda_gemm_strided_batched (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k,
                           float alpha, const float *a, int lda, size_t stride_a, const float *b,
                           int ldb, size_t stride_b, float beta, float *c, int ldc,
                           size_t stride_c, int batch)
{
  TachCudaBackend *cb = TACH_CUDA (be);

  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  TACH_CUBLAS_TRY (be, tach_cublas.gemm_strided_batched_ex (cb->cublas,
                                                            /* transa = */ tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                            /* transb = */ ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                            /* m = */ n, /* n = */ m, /* k = */ k,
                                                            &alpha,
                                                            /* A = */ b, CUDA_R_32F, ldb,
                                                            (long long) stride_b,
                                                            /* B = */ a, CUDA_R_32F, lda,
                                                            (long long) stride_a,
                                                            &beta,
                                                            /* C = */ c, CUDA_R_32F, ldc,
                                                            (long long) stride_c,
                                                            batch, cb->cublas_compute,
                                                            CUBLAS_GEMM_DEFAULT), return);
}

/* --------------------------------------------------------------- devices */

/* FP32 lanes per SM by compute capability (from NVIDIA's tables): an FMA
 * counts as two FLOPs. */
static int
fp32_lanes_per_sm (int major, int minor)
{
  if (major >= 9)
    return 128;
  if (major == 8)
    return minor == 0 ? 64 : 128;
  if (major == 7 || major == 6)
    return 64;
  return 128;
}

static char *
version_string (int v)
{
  return g_strdup_printf ("%d.%d", v / 1000, (v % 1000) / 10);
}

static TachDeviceInfo *
device_info_for (int ordinal, GError **error)
{
  struct cudaDeviceProp prop;
  int clock_khz = 0, driver = 0, runtime = 0;
  int cublas_major = 0, cublas_minor = 0, cublas_patch = 0;
  size_t cudnn = cudnnGetVersion ();
  g_autofree char *driver_s = NULL, *runtime_s = NULL, *cublas_s = NULL;
  TachDeviceInfo *info;
  cudaError_t status;

  status = cudaGetDeviceProperties (&prop, ordinal);
  if (status == cudaSuccess)
    status = cudaDeviceGetAttribute (&clock_khz, cudaDevAttrClockRate, ordinal);
  if (status == cudaSuccess)
    status = cudaDriverGetVersion (&driver);
  if (status == cudaSuccess)
    status = cudaRuntimeGetVersion (&runtime);
  if (status != cudaSuccess)
    {
      (void) cudaGetLastError ();
      g_set_error (error, TACH_ERROR, TACH_ERROR_DEVICE_UNAVAILABLE,
                   _("could not query CUDA device %d: %s"), ordinal, cudaGetErrorName (status));
      return NULL;
    }
  /* A GPU without cuBLAS is still listed (its versions say so); opening
   * it says why it cannot run. */
  if (tach_cublas_load (NULL))
    {
      (void) tach_cublas.get_property (MAJOR_VERSION, &cublas_major);
      (void) tach_cublas.get_property (MINOR_VERSION, &cublas_minor);
      (void) tach_cublas.get_property (PATCH_LEVEL, &cublas_patch);
      cublas_s = g_strdup_printf ("%d.%d.%d", cublas_major, cublas_minor, cublas_patch);
    }
  else
    cublas_s = g_strdup (_("not found"));
  driver_s = version_string (driver);
  runtime_s = version_string (runtime);

  info = g_new0 (TachDeviceInfo, 1);
  info->id = g_strdup_printf ("cuda:%d", ordinal);
  info->name = g_strdup (prop.name);
  info->kind = TACH_DEVICE_KIND_GPU;
  info->memory_bytes = prop.totalGlobalMem;
  info->peak_flops = (double) prop.multiProcessorCount * fp32_lanes_per_sm (prop.major, prop.minor)
                     * 2.0 * clock_khz * 1e3;
  info->versions = g_strdup_printf ("compute %d.%d, %d SMs, driver %s, runtime %s, cuDNN %zu.%zu.%zu, "
                                    "cuBLAS %s",
                                    prop.major, prop.minor, prop.multiProcessorCount,
                                    driver_s, runtime_s, cudnn / 10000, (cudnn % 10000) / 100,
                                    cudnn % 100, cublas_s);
  info->threads = 1;
  return info;
}

GPtrArray *
tach_cuda_backend_devices (void)
{
  GPtrArray *devices = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_device_info_free);
  int count = 0;

  /* Any error here (35, insufficient driver, when there is no driver at
   * all) means there is no usable CUDA device: list none. */
  if (cudaGetDeviceCount (&count) != cudaSuccess)
    {
      (void) cudaGetLastError ();
      return devices;
    }
  for (int i = 0; i < count; i++)
    {
      TachDeviceInfo *info = device_info_for (i, NULL);

      if (info != NULL)
        g_ptr_array_add (devices, info);
    }
  return devices;
}

gboolean
tach_cuda_backend_supports (TachKnobId knob, int value, const char **why)
{
  if (why != NULL)
    *why = NULL;
  if (knob == TACH_KNOB_PRECISION && value == TACH_PRECISION_BF16)
    {
      /* cuBLAS could down-convert to bf16, but cuDNN's RNN and convolution
       * only down-convert float32 data to fp16: a bf16 run would be bf16 in
       * name only. */
      if (why != NULL)
        *why = _("the CUDA backend keeps tensors in float32 and cuDNN's LSTM and convolution can "
                 "only down-convert them to fp16, so bf16 is not available; use fp16 or tf32");
      return FALSE;
    }
  /* Every other knob value of design.md is implemented: rnn fused/unrolled
   * (cuDNN RNN / cuBLAS + cell kernel), both layouts, every feed (pinned
   * memory and asynchronous copies for prefetch), sync, metrics, launch
   * eager/graph (stream capture), call-setup, sampling host/device and
   * precision fp32/tf32/fp16. */
  return TRUE;
}

/* ------------------------------------------------------------- lifecycle */

static void
cuda_free (TachBackend *be)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  GHashTableIter iter;
  gpointer ptr;

  if (cb->capturing && cb->stream != NULL)
    {
      cudaGraph_t graph = NULL;

      /* A run that failed mid-capture leaves the stream capturing. */
      if (cudaStreamEndCapture (cb->stream, &graph) == cudaSuccess && graph != NULL)
        (void) cudaGraphDestroy (graph);
      (void) cudaGetLastError ();
    }
  /* Before the wait below: a communicator still here has lost a rank. */
  tach_cuda_nccl_clear (be);
  if (cb->stream != NULL)
    (void) cudaStreamSynchronize (cb->stream);
  tach_cuda_host_clear (be);
  tach_cuda_free_internal (be, cb->rows_scratch);
  tach_cuda_free_internal (be, cb->att_scratch);
  if (cb->cublas != NULL)
    (void) tach_cublas.destroy (cb->cublas);
  if (cb->cudnn != NULL)
    (void) cudnnDestroy (cb->cudnn);
  if (cb->sizes != NULL)
    {
      /* Whatever the models leaked goes with the backend. */
      g_hash_table_iter_init (&iter, cb->sizes);
      while (g_hash_table_iter_next (&iter, &ptr, NULL))
        (void) cudaFree (ptr);
      g_hash_table_unref (cb->sizes);
    }
  if (cb->cublas_workspace != NULL)
    (void) cudaFree (cb->cublas_workspace);
  if (cb->copy_stream != NULL)
    (void) cudaStreamDestroy (cb->copy_stream);
  if (cb->stream != NULL)
    (void) cudaStreamDestroy (cb->stream);
  (void) cudaGetLastError ();
  g_clear_error (&be->error);
  g_clear_pointer (&be->device, tach_device_info_free);
  g_free (cb);
}

static TachBackendOps cuda_ops = {
  .free = cuda_free,
  .alloc = cuda_alloc,
  .dealloc = cuda_dealloc,
  .upload = cuda_upload,
  .host_alloc = cuda_host_alloc,
  .host_free = cuda_host_free,
  .upload_async = cuda_upload_async,
  .upload_overlapped = cuda_upload_overlapped,
  .stream_wait = cuda_stream_wait,
  .event_synchronize = cuda_event_synchronize,
  .download = cuda_download,
  .zero = cuda_zero,
  .copy = cuda_copy,
  .synchronize = cuda_synchronize,
  .peak_memory = cuda_peak_memory,
  .event_new = cuda_event_new,
  .event_free = cuda_event_free,
  .event_record = cuda_event_record,
  .event_elapsed_ms = cuda_event_elapsed_ms,
  .graph_begin = cuda_graph_begin,
  .graph_end = cuda_graph_end,
  .graph_launch = cuda_graph_launch,
  .graph_free = cuda_graph_free,
  .gemm = cuda_gemm,
  .gemm_strided_batched = cuda_gemm_strided_batched,
  .lstm_plan_new = tach_cuda_lstm_plan_new,
  .lstm_plan_free = tach_cuda_lstm_plan_free,
  .lstm_reserve_bytes = tach_cuda_lstm_reserve_bytes,
  .lstm_weight_map = tach_cuda_lstm_weight_map,
  .lstm_fwd = tach_cuda_lstm_fwd,
  .lstm_bwd = tach_cuda_lstm_bwd,
  .conv_plan_new = tach_cuda_conv_plan_new,
  .conv_plan_free = tach_cuda_conv_plan_free,
  .conv_fwd = tach_cuda_conv_fwd,
  .conv_bwd = tach_cuda_conv_bwd,
  .conv_block_fwd = tach_cuda_conv_block_fwd,
  .conv_block_bwd = tach_cuda_conv_block_bwd,
};

static gsize cuda_ops_ready = 0;

/* Pins the math mode of both libraries for @precision, so that an fp32 run
 * never silently uses TF32 tensor cores and a tf32 run always may. */
static gboolean
pin_math_mode (TachBackend *be, TachPrecision precision)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  cublasMath_t math = CUBLAS_DEFAULT_MATH;

  switch (precision)
    {
    case TACH_PRECISION_FP32:
      cb->cublas_compute = CUBLAS_COMPUTE_32F;
      cb->cudnn_math = CUDNN_FMA_MATH;
      break;
    case TACH_PRECISION_TF32:
      math = CUBLAS_TF32_TENSOR_OP_MATH;
      cb->cublas_compute = CUBLAS_COMPUTE_32F_FAST_TF32;
      cb->cudnn_math = CUDNN_DEFAULT_MATH;
      break;
    case TACH_PRECISION_FP16:
      cb->cublas_compute = CUBLAS_COMPUTE_32F_FAST_16F;
      cb->cudnn_math = CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
      break;
    case TACH_PRECISION_BF16:
    default:
      {
        const char *why = NULL;

        tach_cuda_backend_supports (TACH_KNOB_PRECISION, TACH_PRECISION_BF16, &why);
        tach_backend_fail (be, TACH_ERROR_UNSUPPORTED, "%s", why);
        return FALSE;
      }
    }
  TACH_CUBLAS_TRY (be, tach_cublas.set_math_mode (cb->cublas, math), return FALSE);
  return TRUE;
}

gboolean
tach_cuda_parse_plain (const char *spec, guint *plain, GError **error)
{
  static const struct { const char *name; guint bit; gboolean in_all; } names[] = {
    { "wspace", TACH_CUDA_LEAN_WSPACE, TRUE },
    { "sampler", TACH_CUDA_LEAN_SAMPLER, TRUE },
    { "conv", TACH_CUDA_LEAN_CONV, TRUE },
    { "conv-fuse", TACH_CUDA_LEAN_CONV_FUSE, TRUE },
    { "wgrad", TACH_CUDA_LEAN_WGRAD, TRUE },
    { "persist", TACH_CUDA_LEAN_PERSIST, FALSE },
  };
  g_auto (GStrv) parts = g_strsplit (spec != NULL ? spec : "", ",", -1);
  guint bits = 0;

  for (guint i = 0; parts[i] != NULL; i++)
    {
      const char *name = g_strstrip (parts[i]);
      gboolean known = FALSE;

      if (*name == '\0')
        continue;
      for (guint j = 0; j < G_N_ELEMENTS (names); j++)
        if (g_str_equal (name, names[j].name) || (names[j].in_all && g_str_equal (name, "all")))
          {
            bits |= names[j].bit;
            known = TRUE;
          }
      if (!known)
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                       _("TACH_CUDA_PLAIN names an unknown path \"%s\": use wspace, sampler, "
                         "conv, conv-fuse, wgrad, persist or all, separated by commas, or unset it"), name);
          return FALSE;
        }
    }
  *plain = bits;
  return TRUE;
}

TachBackend *
tach_cuda_backend_new (int ordinal, guint threads, TachPrecision precision, GError **error)
{
  TachCudaBackend *cb;
  TachBackend *be;
  int count = 0;

  if (cudaGetDeviceCount (&count) != cudaSuccess || ordinal < 0 || ordinal >= count)
    {
      (void) cudaGetLastError ();
      g_set_error (error, TACH_ERROR, TACH_ERROR_DEVICE_UNAVAILABLE,
                   W_("no CUDA device cuda:%d: install the NVIDIA driver or use {device=cpu}"), ordinal);
      return NULL;
    }

  if (g_once_init_enter (&cuda_ops_ready))
    {
      tach_cuda_ops_fill_kernels (&cuda_ops);
      tach_cuda_nccl_fill_ops (&cuda_ops);
      g_once_init_leave (&cuda_ops_ready, 1);
    }

  cb = g_new0 (TachCudaBackend, 1);
  if (!tach_cuda_parse_plain (g_getenv ("TACH_CUDA_PLAIN"), &cb->plain, error))
    {
      g_free (cb);
      return NULL;
    }
  be = &cb->base;
  be->ops = &cuda_ops;
  be->threads = threads;
  be->precision = precision;
  be->counts_api_calls = TRUE;
  cb->ordinal = ordinal;
  cb->sizes = g_hash_table_new (g_direct_hash, g_direct_equal);
  be->device = device_info_for (ordinal, error);
  if (be->device == NULL || !tach_cublas_load (error))
    goto fail;

  TACH_CUDA_TRY (be, cudaSetDevice (ordinal), goto fail);
  TACH_CUDA_TRY (be, cudaStreamCreateWithFlags (&cb->stream, cudaStreamNonBlocking), goto fail);
  TACH_CUDA_TRY (be, cudaStreamCreateWithFlags (&cb->copy_stream, cudaStreamNonBlocking), goto fail);
  TACH_CUBLAS_TRY (be, tach_cublas.create (&cb->cublas), goto fail);
  TACH_CUBLAS_TRY (be, tach_cublas.set_stream (cb->cublas, cb->stream), goto fail);
  TACH_CUDA_TRY (be, cudaMalloc (&cb->cublas_workspace, TACH_CUBLAS_WORKSPACE_BYTES), goto fail);
  TACH_CUBLAS_TRY (be, tach_cublas.set_workspace (cb->cublas, cb->cublas_workspace,
                                                  TACH_CUBLAS_WORKSPACE_BYTES), goto fail);
  TACH_CUDNN_TRY (be, cudnnCreate (&cb->cudnn), goto fail);
  TACH_CUDNN_TRY (be, cudnnSetStream (cb->cudnn, cb->stream), goto fail);
  /* Allocated here, not at the first loss, which may be inside a capture. */
  cb->rows_scratch = tach_cuda_alloc_internal (be, TACH_CUDA_ROWS_SCRATCH_BYTES);
  if (cb->rows_scratch == NULL)
    goto fail;
  TACH_CUDA_TRY (be, cudaMemsetAsync (cb->rows_scratch, 0, TACH_CUDA_ROWS_SCRATCH_BYTES, cb->stream),
                 goto fail);
  if (!tach_cuda_host_init (be))
    goto fail;
  if (!pin_math_mode (be, precision))
    goto fail;
  return be;

fail:
  if (be->error != NULL)
    g_propagate_error (error, g_steal_pointer (&be->error));
  cuda_free (be);
  return NULL;
}
