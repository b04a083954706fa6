/* tach-cpu-backend.c: the CPU backend's lifecycle, memory ops, timing,
 * device description (its model name and measured peak) and op table; the
 * memory itself is tach-cpu-memory.c's.
 *
 * Every op runs synchronously on the calling (engine) thread, so "device"
 * memory is host memory, events are host monotonic timestamps and
 * synchronize only drains oneDNN's in-order stream.  Threads: the engine
 * thread, except the device functions, which any thread may call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dnnl_debug.h>
#include <inttypes.h>
#include <glib/gi18n-lib.h>

#include "tach-cpu-private.h"
#include "tach-error-private.h"

struct _TachEvent {
  gint64 ns;   /* CLOCK_MONOTONIC */
};

/* ---------------------------------------------------------------- memory */

static void *
cpu_alloc (TachBackend *be, size_t bytes)
{
  return tach_cpu_mem_alloc (be, bytes);
}

static void
cpu_dealloc (TachBackend *be, void *ptr)
{
  tach_cpu_mem_free (be, ptr);
}

static void
cpu_upload (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  tach_cpu_frozen_write (be, dst, bytes);
  if (bytes > 0)
    memcpy (dst, src, bytes);
}

static void
cpu_download (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  if (bytes > 0)
    memcpy (dst, src, bytes);
}

static void
cpu_zero (TachBackend *be, void *ptr, size_t bytes)
{
  tach_cpu_frozen_write (be, ptr, bytes);
  if (bytes > 0)
    memset (ptr, 0, bytes);
}

static void
cpu_copy (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  tach_cpu_frozen_write (be, dst, bytes);
  /* memmove: callers may shift a buffer within itself. */
  if (bytes > 0)
    memmove (dst, src, bytes);
}

static void
cpu_synchronize (TachBackend *be)
{
  TACH_DNNL_TRY (be, dnnl_stream_wait (TACH_CPU (be)->stream), out);
out:
  return;
}

static guint64
cpu_peak_memory (TachBackend *be)
{
  return TACH_CPU (be)->peak_bytes;
}

static guint64
cpu_frozen_copies_peak (TachBackend *be)
{
  return TACH_CPU (be)->frozen_copies_peak_bytes;
}

/* ---------------------------------------------------------------- timing */

static gint64
monotonic_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (gint64) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

static TachEvent *
cpu_event_new (TachBackend *be)
{
  return g_new0 (TachEvent, 1);
}

static void
cpu_event_free (TachBackend *be, TachEvent *ev)
{
  g_free (ev);
}

static void
cpu_event_record (TachBackend *be, TachEvent *ev)
{
  /* Ops are synchronous, so the host clock at record time is when all work
   * queued before it finished. */
  ev->ns = monotonic_ns ();
}

static double
cpu_event_elapsed_ms (TachBackend *be, TachEvent *start, TachEvent *end)
{
  return (double) (end->ns - start->ns) / 1e6;
}

/* ------------------------------------------------------------- lifecycle */

static void
cpu_free (TachBackend *be)
{
  TachCpuBackend *cpu = TACH_CPU (be);

  /* First: a job still running ahead may read the backend's memory. */
  tach_cpu_ahead_stop (be);
  /* Before the primitives' engine and the allocation table go. */
  tach_cpu_gemm_bf16_clear (be);
  tach_cpu_gemm_packs_clear (be);
  tach_cpu_frozen_clear (be);
  if (cpu->sizes != NULL)
    {
      GHashTableIter iter;
      gpointer ptr;

      /* Whatever the models did not free goes now. */
      g_hash_table_iter_init (&iter, cpu->sizes);
      while (g_hash_table_iter_next (&iter, &ptr, NULL))
        free (ptr);
      g_hash_table_unref (cpu->sizes);
    }
  if (cpu->stream != NULL)
    dnnl_stream_destroy (cpu->stream);
  if (cpu->engine != NULL)
    dnnl_engine_destroy (cpu->engine);
  g_free (cpu);
}

static const TachBackendOps cpu_ops = {
  .free = cpu_free,
  .alloc = cpu_alloc,
  .dealloc = cpu_dealloc,
  .upload = cpu_upload,
  .host_alloc = NULL,
  .host_free = NULL,
  .upload_async = NULL,
  .download = cpu_download,
  .zero = cpu_zero,
  .copy = cpu_copy,
  .synchronize = cpu_synchronize,
  .peak_memory = cpu_peak_memory,

  .event_new = cpu_event_new,
  .event_free = cpu_event_free,
  .event_record = cpu_event_record,
  .event_elapsed_ms = cpu_event_elapsed_ms,

  .graph_begin = NULL,
  .graph_end = NULL,
  .graph_launch = NULL,
  .graph_free = NULL,

  .gemm = tach_cpu_gemm_op,
  .freeze = tach_cpu_freeze,
  .frozen_copies_peak = cpu_frozen_copies_peak,
  .gemm_bf16 = tach_cpu_gemm_bf16,
  .bias_add = tach_cpu_bias_add,
  .bias_grad = tach_cpu_bias_grad,
  .relu_fwd = tach_cpu_relu_fwd,
  .relu_bwd = tach_cpu_relu_bwd,

  .lstm_plan_new = tach_cpu_lstm_plan_new,
  .lstm_plan_free = tach_cpu_lstm_plan_free,
  .lstm_reserve_bytes = tach_cpu_lstm_reserve_bytes,
  .lstm_fwd = tach_cpu_lstm_fwd,
  .lstm_bwd = tach_cpu_lstm_bwd,
  .lstm_cell_fwd = tach_cpu_lstm_cell_fwd,
  .lstm_cell_bwd = tach_cpu_lstm_cell_bwd,

  .max_over_time_fwd = tach_cpu_max_over_time_fwd,
  .max_over_time_bwd = tach_cpu_max_over_time_bwd,
  .sigmoid_bce = tach_cpu_sigmoid_bce,
  .softmax_ce = tach_cpu_softmax_ce,
  .accuracy = tach_cpu_accuracy,

  .conv_plan_new = tach_cpu_conv_plan_new,
  .conv_plan_free = tach_cpu_conv_plan_free,
  .conv_fwd = tach_cpu_conv_fwd,
  .conv_bwd = tach_cpu_conv_bwd,
  .conv_block_fwd = tach_cpu_conv_block_fwd,
  .conv_block_bwd = tach_cpu_conv_block_bwd,
  .maxpool_fwd = tach_cpu_maxpool_fwd,
  .maxpool_bwd = tach_cpu_maxpool_bwd,
  .avgpool_fwd = tach_cpu_avgpool_fwd,
  .avgpool_bwd = tach_cpu_avgpool_bwd,
  .dropout_fwd = tach_cpu_dropout_fwd,
  .dropout_bwd = tach_cpu_dropout_bwd,

  .embedding = tach_cpu_embedding,
  .sample_tokens = tach_cpu_sample_tokens,
  .sample_tokens_nll = tach_cpu_sample_tokens_nll,

  .gemm_strided_batched = tach_cpu_gemm_strided_batched,
  .add = tach_cpu_add,
  .scale = tach_cpu_scale,
  .layernorm_fwd = tach_cpu_layernorm_fwd,
  .layernorm_bwd = tach_cpu_layernorm_bwd,
  .gelu_fwd = tach_cpu_gelu_fwd,
  .gelu_bwd = tach_cpu_gelu_bwd,
  .heads_split = tach_cpu_heads_split,
  .heads_merge = tach_cpu_heads_merge,
  .causal_softmax_fwd = tach_cpu_causal_softmax_fwd,
  .causal_softmax_bwd = tach_cpu_causal_softmax_bwd,
  .attention_fwd = tach_cpu_attention_fwd,
  .attention_bwd = tach_cpu_attention_bwd,
  .embedding_bwd = tach_cpu_embedding_bwd,

  .adam = tach_cpu_adam,
  .sgd = tach_cpu_sgd,
};

/* ---------------------------------------------------------------- device */

/* The CPU's model name from /proc/cpuinfo ("CPU" when unknown); free it. */
static char *
cpu_model_name (void)
{
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;

  if (!g_file_get_contents ("/proc/cpuinfo", &text, NULL, NULL))
    return g_strdup ("CPU");
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      const char *colon;

      if (!g_str_has_prefix (lines[i], "model name"))
        continue;
      colon = strchr (lines[i], ':');
      if (colon != NULL && colon[1] != '\0')
        return g_strstrip (g_strdup (colon + 1));
    }
  return g_strdup ("CPU");
}

/* --------------------------------------------------------- peak FLOP/s */

/* The best of up to @reps sgemms of @size^3 within @budget_us, after a
 * warm-up call: on a shared machine the best run is the one least
 * disturbed by other processes. */
static double
measure_sgemm_peak (int threads, int size, int reps, gint64 budget_us)
{
  const size_t count = (size_t) size * (size_t) size;
  g_autofree float *a = g_try_new (float, count);
  g_autofree float *b = g_try_new (float, count);
  g_autofree float *c = g_try_new (float, count);
  double best_s = G_MAXDOUBLE;
  gint64 budget_end;

  if (a == NULL || b == NULL || c == NULL)
    return 0.0;
  for (size_t i = 0; i < count; i++)
    {
      a[i] = (float) (i % 7) * 0.25f;
      b[i] = (float) (i % 5) * 0.5f;
    }
  omp_set_num_threads (threads);
  dnnl_sgemm ('N', 'N', size, size, size, 1.0f, a, size, b, size, 0.0f, c, size);
  budget_end = g_get_monotonic_time () + budget_us;
  for (int rep = 0; rep < reps; rep++)
    {
      gint64 t0 = g_get_monotonic_time ();
      gint64 t1;

      dnnl_sgemm ('N', 'N', size, size, size, 1.0f, a, size, b, size, 0.0f, c, size);
      t1 = g_get_monotonic_time ();
      best_s = MIN (best_s, (double) (t1 - t0) / 1e6);
      if (t1 > budget_end && rep >= 2)
        break;
    }
  return best_s > 0.0 && best_s < G_MAXDOUBLE
           ? 2.0 * (double) size * (double) size * (double) size / best_s
           : 0.0;
}

/* The cache: $XDG_CACHE_HOME/tach/cpu-peak.ini, one group per CPU model,
 * one key per thread count, in GFLOP/s: the best rate this machine has
 * shown.  Without it, one thorough measurement (1024^3 sgemms, about
 * 0.4 s); with it, a short probe (about 20 ms) that raises it when the
 * machine does better than ever before, so that a measurement disturbed
 * by other processes does not stay the peak for good. */
static char *
peak_cache_path (void)
{
  return g_build_filename (g_get_user_cache_dir (), "tach", "cpu-peak.ini", NULL);
}

static gpointer
measure_peak (gpointer data)
{
  double *result = data;
  g_autofree char *path = peak_cache_path ();
  g_autofree char *model = cpu_model_name ();
  g_autofree char *key = NULL;
  g_autoptr(GKeyFile) cache = g_key_file_new ();
  int threads = g_get_num_processors ();
  double measured;
  double cached = 0.0;

  /* A run capped by TACH_CPU_ISA has a peak of its own. */
  key = tach_cpu_isa_capped ()
          ? g_strdup_printf ("threads-%d-%s", threads, tach_cpu_isa_name (tach_cpu_isa ()))
          : g_strdup_printf ("threads-%d", threads);
  if (g_key_file_load_from_file (cache, path, G_KEY_FILE_NONE, NULL))
    {
      g_autoptr(GError) error = NULL;

      cached = g_key_file_get_double (cache, model, key, &error) * 1e9;
      if (error != NULL || !(cached > 0.0))
        cached = 0.0;
    }
  measured = cached > 0.0 ? measure_sgemm_peak (threads, 512, 8, 20000)
                          : measure_sgemm_peak (threads, 1024, 40, 400000);
  *result = MAX (cached, measured);
  if (measured > cached)
    {
      g_autofree char *dir = g_path_get_dirname (path);

      /* A cache that cannot be written only costs a measurement next time. */
      g_key_file_set_double (cache, model, key, measured / 1e9);
      if (g_mkdir_with_parents (dir, 0700) == 0)
        g_key_file_save_to_file (cache, path, NULL);
    }
  return result;
}

double
tach_cpu_measure_peak_flops (void)
{
  static GOnce once = G_ONCE_INIT;
  static double peak = 0.0;

  /* Cached for the process too: listing devices must stay cheap. */
  g_once (&once, measure_peak, &peak);
  return peak;
}

static TachDeviceInfo *
cpu_device_info_new (guint threads)
{
  TachDeviceInfo *info = g_new0 (TachDeviceInfo, 1);
  const dnnl_version_t *version = dnnl_version ();
  long pages = sysconf (_SC_PHYS_PAGES);
  long page_size = sysconf (_SC_PAGE_SIZE);

  info->id = g_strdup ("cpu");
  info->name = cpu_model_name ();
  info->kind = TACH_DEVICE_KIND_CPU;
  info->memory_bytes = pages > 0 && page_size > 0 ? (guint64) pages * (guint64) page_size : 0;
  info->threads = threads;
  info->versions = g_strdup_printf ("oneDNN %d.%d.%d, %s%s", version->major, version->minor,
                                    version->patch, tach_cpu_isa_name (tach_cpu_isa ()),
                                    tach_cpu_isa_capped () ? " (TACH_CPU_ISA)" : "");
  /* The peak is the measured sgemm rate of all cores, not a datasheet
   * figure: it is what the workloads' GEMMs can reach on this machine.
   * Measuring takes time, so listing leaves it to the registry's
   * tach_device_measure_peak_flops(), asked off the GUI's main thread. */
  info->peak_flops = 0.0;
  return info;
}

GPtrArray *
tach_cpu_backend_devices (void)
{
  GPtrArray *devices = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_device_info_free);

  tach_cpu_isa_init (NULL);
  g_ptr_array_add (devices, cpu_device_info_new (g_get_num_processors ()));
  return devices;
}

gboolean
tach_cpu_backend_supports (TachKnobId knob, int value, const char **why)
{
  if (why != NULL)
    *why = NULL;
  tach_cpu_isa_init (NULL);

  if (knob == TACH_KNOB_LAUNCH && value == TACH_LAUNCH_GRAPH)
    {
      if (why != NULL)
        *why = W_("CUDA graphs need a GPU: use {launch=eager}");
      return FALSE;
    }
  if (knob != TACH_KNOB_PRECISION)
    return TRUE;
  switch ((TachPrecision) value)
    {
    case TACH_PRECISION_TF32:
      if (why != NULL)
        *why = W_("tf32 is a GPU tensor-core mode: use {precision=fp32} on the CPU");
      return FALSE;
    case TACH_PRECISION_FP16:
      if (why != NULL)
        *why = W_("fp16 is not available on the CPU backend: use {precision=fp32}");
      return FALSE;
    case TACH_PRECISION_BF16:
      /* oneDNN's effective ISA honours TACH_CPU_ISA and ONEDNN_MAX_CPU_ISA,
       * so a capped run reports bf16 as unavailable, as on an older
       * processor. */
      if ((dnnl_get_effective_cpu_isa () & dnnl_cpu_isa_avx512_core_bf16)
          != dnnl_cpu_isa_avx512_core_bf16)
        {
          if (why != NULL)
            *why = tach_cpu_isa_capped ()
                     ? W_("bf16 on the CPU needs AVX-512 BF16, which TACH_CPU_ISA caps away: "
                         "unset TACH_CPU_ISA or use {precision=fp32}")
                     : W_("bf16 on the CPU needs a processor with AVX-512 BF16 (Intel Cooper "
                         "Lake or Sapphire Rapids, AMD Zen 4 or later), which this one lacks: "
                         "use {precision=fp32}");
          return FALSE;
        }
      return TRUE;
    case TACH_PRECISION_FP32:
    default:
      return TRUE;
    }
}

TachBackend *
tach_cpu_backend_new (guint threads, TachPrecision precision, GError **error)
{
  TachCpuBackend *cpu;
  TachBackend *be;
  const char *why = NULL;
  const char *bad_isa = NULL;
  dnnl_status_t status;

  tach_cpu_isa_init (&bad_isa);
  if (bad_isa != NULL)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   _("TACH_CPU_ISA is '%s', which is not avx512, avx2 or baseline: set one of "
                     "those to cap the CPU's vector extensions, or unset it"), bad_isa);
      return NULL;
    }
  if (!tach_cpu_backend_supports (TACH_KNOB_PRECISION, precision, &why))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED, "%s", why);
      return NULL;
    }

  cpu = g_new0 (TachCpuBackend, 1);
  be = &cpu->parent;
  be->ops = &cpu_ops;
  be->threads = threads > 0 ? threads : (guint) g_get_num_processors ();
  be->precision = precision;
  cpu->sizes = g_hash_table_new (g_direct_hash, g_direct_equal);

  status = dnnl_engine_create (&cpu->engine, dnnl_cpu, 0);
  if (status == dnnl_success)
    status = dnnl_stream_create (&cpu->stream, cpu->engine, dnnl_stream_default_flags);
  if (status != dnnl_success)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
                   _("could not start oneDNN on the CPU; check the libdnnl2 installation: %s"),
                   dnnl_status2str (status));
      cpu_free (be);
      return NULL;
    }

  /* The backend describes itself (with the thread count it really uses),
   * so that a backend made without the registry still names its device in
   * messages. */
  be->device = cpu_device_info_new (be->threads);
  tach_cpu_threads_init (be);
  omp_set_num_threads ((int) be->threads);
  return be;
}
