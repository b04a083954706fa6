/* tach-async-device.c: the asynchronous test double (see the header). */
#include <string.h>
#include <time.h>

#include "tach-async-device-private.h"
#include "tach-config-private.h"

static double copy_ns_per_byte = 0.0;
static double op_us = 0.0;
static gint fail_next_op;

void
async_fail_next_op (void)
{
  g_atomic_int_set (&fail_next_op, 1);
}

void
tach_async_device_set_op_cost (double us)
{
  op_us = us;
}

void
tach_async_device_set_copy_cost (double ns_per_byte)
{
  copy_ns_per_byte = ns_per_byte;
}

static gint64
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (gint64) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

static GMutex trace_lock;
static GArray *trace;       /* TachAsyncSpan, the caller's, or NULL */

void
tach_async_device_trace (GArray *spans)
{
  g_mutex_lock (&trace_lock);
  trace = spans;
  g_mutex_unlock (&trace_lock);
}

/* Notes what ran from @start_ns to now, if a test traces. */
static void
trace_span (TachAsyncSpanKind kind, gboolean copy_stream, gint64 start_ns)
{
  TachAsyncSpan span = { kind, copy_stream, start_ns, now_ns () };

  g_mutex_lock (&trace_lock);
  if (trace != NULL)
    g_array_append_val (trace, span);
  g_mutex_unlock (&trace_lock);
}

/* ---------------------------------------------------------- the streams */

typedef struct {
  AsyncBackend *ab;
  AsyncStream  *stream;
} Worker;

static gpointer
worker_main (gpointer data)
{
  Worker *w = data;

  for (;;)
    {
      AsyncJob *job = g_async_queue_pop (w->stream->queue);
      gboolean quit = job->func == NULL;

      if (!quit)
        {
          w->ab->cpu->step_offset = job->step_offset;
          w->ab->cpu->pos_offset = job->pos_offset;
          job->func (w->ab->cpu, job);
        }
      g_free (job);
      g_mutex_lock (&w->ab->lock);
      w->stream->done++;
      g_cond_broadcast (&w->ab->cond);
      g_mutex_unlock (&w->ab->lock);
      if (quit)
        break;
    }
  g_free (w);
  return NULL;
}

static void
stream_start (AsyncBackend *ab, AsyncStream *stream, const char *name)
{
  Worker *w = g_new0 (Worker, 1);

  w->ab = ab;
  w->stream = stream;
  stream->queue = g_async_queue_new ();
  stream->thread = g_thread_new (name, worker_main, w);
}

void
async_submit (TachBackend *be, AsyncStream *stream, AsyncJob *job, AsyncJobFunc func)
{
  AsyncBackend *ab = ASYNC (be);

  /* One call into the device's library, as a launch or a copy is on a GPU. */
  be->api_calls++;
  job->func = func;
  job->step_offset = be->step_offset;
  job->pos_offset = be->pos_offset;
  if (async_capture_job (be, stream, job))
    return;
  g_mutex_lock (&ab->lock);
  stream->submitted++;
  g_mutex_unlock (&ab->lock);
  g_async_queue_push (stream->queue, job);
}

/* Moves an error of a queued op into the sticky error (after a wait). */
static void
take_cpu_error (AsyncBackend *ab)
{
  if (ab->cpu->error != NULL)
    tach_backend_set_error (&ab->base, g_steal_pointer (&ab->cpu->error));
}

void
async_synchronize (TachBackend *be)
{
  AsyncBackend *ab = ASYNC (be);

  if (!async_not_capturing (be, "a synchronisation"))
    return;
  be->api_calls++;
  g_mutex_lock (&ab->lock);
  while (ab->compute.done < ab->compute.submitted || ab->copy.done < ab->copy.submitted
         || ab->side.done < ab->side.submitted)
    g_cond_wait (&ab->cond, &ab->lock);
  g_mutex_unlock (&ab->lock);
  take_cpu_error (ab);
}

/* ------------------------------------------------------------- events */

typedef struct {
  AsyncJob    job;
  AsyncEvent *ev;
  guint64     seq;
  AsyncBackend *ab;
} EventJob;

static void
run_record (TachBackend *cpu, AsyncJob *job)
{
  EventJob *j = (EventJob *) job;

  g_mutex_lock (&j->ab->lock);
  j->ev->reached = j->seq;
  j->ev->t_ns = now_ns ();
  g_cond_broadcast (&j->ab->cond);
  g_mutex_unlock (&j->ab->lock);
}

static void
run_wait (TachBackend *cpu, AsyncJob *job)
{
  EventJob *j = (EventJob *) job;

  g_mutex_lock (&j->ab->lock);
  while (j->ev->reached < j->seq)
    g_cond_wait (&j->ab->cond, &j->ab->lock);
  g_mutex_unlock (&j->ab->lock);
}

void
async_queue_event_job (TachBackend *be, AsyncStream *stream, TachEvent *event,
                       gboolean record)
{
  AsyncBackend *ab = ASYNC (be);
  AsyncEvent *ev = (AsyncEvent *) event;
  EventJob *j = JOB_NEW (EventJob);

  g_mutex_lock (&ab->lock);
  if (record)
    ev->recorded++;
  j->seq = ev->recorded;
  g_mutex_unlock (&ab->lock);
  j->ev = ev;
  j->ab = ab;
  async_submit (be, stream, &j->job, record ? run_record : run_wait);
}

static TachEvent *
async_event_new (TachBackend *be)
{
  return (TachEvent *) g_new0 (AsyncEvent, 1);
}

static void
async_event_free (TachBackend *be, TachEvent *ev)
{
  /* Queued jobs may still point at it. */
  async_synchronize (be);
  g_free (ev);
}

static void
async_event_record (TachBackend *be, TachEvent *ev)
{
  async_queue_event_job (be, &ASYNC (be)->compute, ev, TRUE);
}

static void
async_event_synchronize (TachBackend *be, TachEvent *event)
{
  AsyncBackend *ab = ASYNC (be);
  AsyncEvent *ev = (AsyncEvent *) event;

  be->api_calls++;
  g_mutex_lock (&ab->lock);
  while (ev->reached < ev->recorded)
    g_cond_wait (&ab->cond, &ab->lock);
  g_mutex_unlock (&ab->lock);
  take_cpu_error (ab);
}

static double
async_event_elapsed_ms (TachBackend *be, TachEvent *start, TachEvent *end)
{
  async_event_synchronize (be, start);
  async_event_synchronize (be, end);
  return (double) (((AsyncEvent *) end)->t_ns - ((AsyncEvent *) start)->t_ns) / 1e6;
}

static void
async_stream_wait (TachBackend *be, TachEvent *ev)
{
  async_queue_event_job (be, &ASYNC (be)->compute, ev, FALSE);
}

/* ------------------------------------------------------------- memory */

typedef struct {
  AsyncJob    job;
  void       *dst;
  const void *src;
  size_t      bytes;
  void       *owned;     /* freed after the copy (a staged pageable upload) */
  gboolean    h2d;       /* pays the simulated copy cost */
  gboolean    copy_stream; /* queued on the copy stream */
  int         fill;      /* -1: copy; else memset value */
} CopyJob;

static void
run_copy (TachBackend *cpu, AsyncJob *job)
{
  CopyJob *j = (CopyJob *) job;
  gint64 t0 = now_ns ();

  if (j->h2d && copy_ns_per_byte > 0.0)
    g_usleep ((gulong) (copy_ns_per_byte * (double) j->bytes / 1000.0));
  if (j->fill >= 0)
    memset (j->dst, j->fill, j->bytes);
  else
    memcpy (j->dst, j->src, j->bytes);
  g_free (j->owned);
  if (j->h2d)
    trace_span (TACH_ASYNC_SPAN_UPLOAD, j->copy_stream, t0);
}

static void
queue_copy (TachBackend *be, AsyncStream *stream, void *dst, const void *src, size_t bytes,
            gboolean h2d, gboolean stage)
{
  CopyJob *j = JOB_NEW (CopyJob);

  j->dst = dst;
  j->bytes = bytes;
  j->h2d = h2d;
  j->copy_stream = stream == &ASYNC (be)->copy;
  j->fill = -1;
  /* A pageable source may change once the call returns: copy it now, as
   * a driver stages pageable memory. */
  j->src = stage ? (j->owned = g_memdup2 (src, bytes)) : src;
  async_submit (be, stream, &j->job, run_copy);
}

static void *
async_alloc (TachBackend *be, size_t bytes)
{
  TachBackend *cpu = ASYNC (be)->cpu;
  void *ptr;

  if (!async_not_capturing (be, "an allocation"))
    return NULL;
  ptr = cpu->ops->alloc (cpu, bytes);

  if (ptr == NULL)
    take_cpu_error (ASYNC (be));
  return ptr;
}

static void
async_dealloc (TachBackend *be, void *ptr)
{
  /* As cudaFree: the device is done with everything queued. */
  async_synchronize (be);
  ASYNC (be)->cpu->ops->dealloc (ASYNC (be)->cpu, ptr);
}

static void
async_upload (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  if (async_not_capturing (be, "an upload from host memory"))
    queue_copy (be, &ASYNC (be)->compute, dst, src, bytes, TRUE, TRUE);
}

static void *
async_host_alloc (TachBackend *be, size_t bytes)
{
  return g_try_malloc (MAX (bytes, 1));
}

static void
async_host_free (TachBackend *be, void *ptr)
{
  async_synchronize (be);
  g_free (ptr);
}

static void
async_upload_async (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  queue_copy (be, &ASYNC (be)->compute, dst, src, bytes, TRUE, FALSE);
}

static void
async_upload_overlapped (TachBackend *be, void *dst, const void *src, size_t bytes,
                         TachEvent *after, TachEvent *done)
{
  AsyncStream *copy = &ASYNC (be)->copy;

  if (after != NULL)
    async_queue_event_job (be, copy, after, FALSE);
  if (bytes > 0)
    queue_copy (be, copy, dst, src, bytes, TRUE, FALSE);
  if (done != NULL)
    async_queue_event_job (be, copy, done, TRUE);
}

static void
async_download (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  if (!async_not_capturing (be, "a download"))
    return;
  async_synchronize (be);
  if (be->error == NULL)
    memcpy (dst, src, bytes);
}

static void
async_zero (TachBackend *be, void *ptr, size_t bytes)
{
  CopyJob *j = JOB_NEW (CopyJob);

  j->dst = ptr;
  j->bytes = bytes;
  j->fill = 0;
  async_submit (be, &ASYNC (be)->compute, &j->job, run_copy);
}

static void
async_copy (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  queue_copy (be, &ASYNC (be)->compute, dst, src, bytes, FALSE, FALSE);
}

static guint64
async_peak_memory (TachBackend *be)
{
  return ASYNC (be)->cpu->ops->peak_memory (ASYNC (be)->cpu);
}

/* -------------------------------------------------------------- plans */

/* Plans are made and freed on the host with the device idle, as a GPU
 * backend's are (they allocate, and cudaFree waits). */
static TachLstmPlan *
async_lstm_plan_new (TachBackend *be, const TachLstmDesc *desc)
{
  TachBackend *cpu = ASYNC (be)->cpu;
  TachLstmPlan *plan;

  async_synchronize (be);
  plan = cpu->ops->lstm_plan_new (cpu, desc);
  take_cpu_error (ASYNC (be));
  return plan;
}

static void
async_lstm_plan_free (TachBackend *be, TachLstmPlan *plan)
{
  async_synchronize (be);
  ASYNC (be)->cpu->ops->lstm_plan_free (ASYNC (be)->cpu, plan);
}

static size_t
async_lstm_reserve_bytes (TachBackend *be, TachLstmPlan *plan)
{
  return ASYNC (be)->cpu->ops->lstm_reserve_bytes (ASYNC (be)->cpu, plan);
}

static TachConvPlan *
async_conv_plan_new (TachBackend *be, const TachConvDesc *desc)
{
  TachBackend *cpu = ASYNC (be)->cpu;
  TachConvPlan *plan;

  async_synchronize (be);
  plan = cpu->ops->conv_plan_new (cpu, desc);
  take_cpu_error (ASYNC (be));
  return plan;
}

static void
async_conv_plan_free (TachBackend *be, TachConvPlan *plan)
{
  async_synchronize (be);
  ASYNC (be)->cpu->ops->conv_plan_free (ASYNC (be)->cpu, plan);
}

/* ---------------------------------------------------------------- ops */

/* Each compute op becomes a job holding its arguments: ASYNC_OP (slot,
 * T1, a1, T2, a2, ...) defines the job struct, the function the worker
 * runs (the CPU's op) and the queuing function that fills the slot. */
#define TA_NARGS(...) TA_NARGS_ (__VA_ARGS__, 17, 17, 16, 16, 15, 15, 14, 14, 13, 13, 12, 12, \
                                 11, 11, 10, 10, 9, 9, 8, 8, 7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, \
                                 1, 1, 0)
#define TA_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17,  \
                  _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32,  \
                  _33, _34, N, ...) N
#define TA_CAT(a, b) TA_CAT_ (a, b)
#define TA_CAT_(a, b) a##b
#define TA_MAP(m, s, ...) TA_CAT (TA_MAP, TA_NARGS (__VA_ARGS__)) (m, s, __VA_ARGS__)
#define TA_MAP1(m, s, T, a) m (T, a)
#define TA_MAP2(m, s, T, a, ...) m (T, a) s () TA_MAP1 (m, s, __VA_ARGS__)
#define TA_MAP3(m, s, T, a, ...) m (T, a) s () TA_MAP2 (m, s, __VA_ARGS__)
#define TA_MAP4(m, s, T, a, ...) m (T, a) s () TA_MAP3 (m, s, __VA_ARGS__)
#define TA_MAP5(m, s, T, a, ...) m (T, a) s () TA_MAP4 (m, s, __VA_ARGS__)
#define TA_MAP6(m, s, T, a, ...) m (T, a) s () TA_MAP5 (m, s, __VA_ARGS__)
#define TA_MAP7(m, s, T, a, ...) m (T, a) s () TA_MAP6 (m, s, __VA_ARGS__)
#define TA_MAP8(m, s, T, a, ...) m (T, a) s () TA_MAP7 (m, s, __VA_ARGS__)
#define TA_MAP9(m, s, T, a, ...) m (T, a) s () TA_MAP8 (m, s, __VA_ARGS__)
#define TA_MAP10(m, s, T, a, ...) m (T, a) s () TA_MAP9 (m, s, __VA_ARGS__)
#define TA_MAP11(m, s, T, a, ...) m (T, a) s () TA_MAP10 (m, s, __VA_ARGS__)
#define TA_MAP12(m, s, T, a, ...) m (T, a) s () TA_MAP11 (m, s, __VA_ARGS__)
#define TA_MAP13(m, s, T, a, ...) m (T, a) s () TA_MAP12 (m, s, __VA_ARGS__)
#define TA_MAP14(m, s, T, a, ...) m (T, a) s () TA_MAP13 (m, s, __VA_ARGS__)
#define TA_MAP15(m, s, T, a, ...) m (T, a) s () TA_MAP14 (m, s, __VA_ARGS__)
#define TA_MAP16(m, s, T, a, ...) m (T, a) s () TA_MAP15 (m, s, __VA_ARGS__)
#define TA_MAP17(m, s, T, a, ...) m (T, a) s () TA_MAP16 (m, s, __VA_ARGS__)
#define TA_COMMA() ,
#define TA_NONE()
#define TA_FIELD(T, a) T a;
#define TA_PARAM(T, a) T a
#define TA_USE(T, a) j->a
#define TA_SET(T, a) j->a = a;

#define ASYNC_OP(slot, ...)                                                              \
  typedef struct { AsyncJob job; TA_MAP (TA_FIELD, TA_NONE, __VA_ARGS__) } slot##_job;   \
  static void                                                                            \
  slot##_run (TachBackend *cpu, AsyncJob *job)                                           \
  {                                                                                      \
    slot##_job *j = (slot##_job *) job;                                                  \
    gint64 t0 = now_ns ();                                                               \
    if (op_us > 0.0)                                                                     \
      g_usleep ((gulong) op_us);                                                         \
    cpu->ops->slot (cpu, TA_MAP (TA_USE, TA_COMMA, __VA_ARGS__));                        \
    trace_span (TACH_ASYNC_SPAN_OP, FALSE, t0);                                          \
  }                                                                                      \
  static void                                                                            \
  slot##_queue (TachBackend *be, TA_MAP (TA_PARAM, TA_COMMA, __VA_ARGS__))               \
  {                                                                                      \
    slot##_job *j;                                                                       \
    if (g_atomic_int_compare_and_exchange (&fail_next_op, 1, 0))                         \
      {                                                                                  \
        tach_backend_fail (be, TACH_ERROR_LIBRARY, "injected: a kernel launch failed");  \
        return;                                                                          \
      }                                                                                  \
    j = JOB_NEW (slot##_job);                                                            \
    TA_MAP (TA_SET, TA_NONE, __VA_ARGS__)                                                \
    async_submit (be, &ASYNC (be)->compute, &j->job, slot##_run);                              \
  }

#define GEMM_ARGS gboolean, ta, gboolean, tb, int, m, int, n, int, k, float, alpha,          \
                  const float *, a, int, lda, const float *, b, int, ldb, float, beta,       \
                  float *, c, int, ldc
ASYNC_OP (gemm, GEMM_ARGS)
ASYNC_OP (gemm_bf16, GEMM_ARGS)
ASYNC_OP (bias_add, float *, y, const float *, bias, int, m, int, n)
ASYNC_OP (bias_grad, const float *, dy, float *, db, int, m, int, n, float, beta)
ASYNC_OP (relu_fwd, const float *, x, float *, y, size_t, n)
ASYNC_OP (relu_bwd, const float *, y, const float *, dy, float *, dx, size_t, n)
ASYNC_OP (lstm_fwd, TachLstmPlan *, plan, const float *, x, const float *, w, float *, y,
          void *, reserve)
ASYNC_OP (lstm_bwd, TachLstmPlan *, plan, const float *, x, const float *, w, const float *, y,
          const float *, dy, void *, reserve, float *, dx, float *, dw)
ASYNC_OP (lstm_cell_fwd, int, n, int, h, float *, gates, const float *, bias,
          const float *, c_prev, float *, c, float *, h_out, int, ldh)
ASYNC_OP (lstm_cell_bwd, int, n, int, h, const float *, gates, const float *, c_prev,
          const float *, c, const float *, dh, int, lddh, const float *, dc, float *, dgates,
          float *, dc_prev)
ASYNC_OP (max_over_time_fwd, const float *, x, float *, y, int32_t *, idx, int, n, int, t, int, c)
ASYNC_OP (max_over_time_bwd, const float *, dy, const int32_t *, idx, float *, dx, int, n, int, t,
          int, c)
ASYNC_OP (sigmoid_bce, const float *, logits, const float *, labels, int, n, float *, loss,
          float *, dlogits)
ASYNC_OP (softmax_ce, const float *, logits, const int32_t *, labels, int, n, int, classes,
          float *, loss, float *, dlogits)
ASYNC_OP (accuracy, const float *, logits, const void *, labels, int, n, int, classes,
          float *, acc)
ASYNC_OP (conv_fwd, TachConvPlan *, plan, const float *, x, const float *, w, const float *, b,
          float *, y)
ASYNC_OP (conv_bwd, TachConvPlan *, plan, const float *, x, const float *, w, const float *, dy,
          float *, dx, float *, dw, float *, db)
ASYNC_OP (maxpool_fwd, const float *, x, float *, y, int32_t *, idx, int, n, int, c, int, h, int, w)
ASYNC_OP (maxpool_bwd, const float *, dy, const int32_t *, idx, float *, dx, int, n, int, c,
          int, h, int, w)
ASYNC_OP (conv_block_fwd, TachConvPlan *, plan, const float *, x, const float *, w,
          const float *, b, float *, act, int32_t *, idx, float *, y)
ASYNC_OP (conv_block_bwd, TachConvPlan *, plan, const float *, x, const float *, w,
          const float *, act, const int32_t *, idx, const float *, dy, float *, dact,
          float *, dx, float *, dw, float *, db)
ASYNC_OP (avgpool_fwd, const float *, x, float *, y, int, n, int, c, int, hw)
ASYNC_OP (avgpool_bwd, const float *, dy, float *, dx, int, n, int, c, int, hw)
ASYNC_OP (dropout_fwd, const float *, x, float *, y, size_t, n, float, p, guint64, seed,
          guint64, counter, guint64, first)
ASYNC_OP (dropout_bwd, const float *, dy, float *, dx, size_t, n, float, p, guint64, seed,
          guint64, counter, guint64, first)
ASYNC_OP (embedding, const float *, table, const int32_t *, idx, float *, out, int, n, int, dim)
ASYNC_OP (sample_tokens, const float *, logits, int, n, int, vocab, guint64, seed,
          guint64, counter, int32_t *, tok, int32_t *, ctx, int, len)
ASYNC_OP (sample_tokens_nll, const float *, logits, int, n, int, vocab, guint64, seed,
          guint64, counter, int32_t *, tok, int32_t *, ctx, int, len, float *, loss)
ASYNC_OP (adam, float *, param, const float *, grad, float *, m, float *, v, size_t, n,
          float, lr, float, beta1, float, beta2, float, eps, float *, t)
ASYNC_OP (sgd, float *, param, const float *, grad, size_t, n, float, lr)
ASYNC_OP (gemm_strided_batched, gboolean, ta, gboolean, tb, int, m, int, n, int, k, float, alpha,
          const float *, a, int, lda, size_t, stride_a, const float *, b, int, ldb,
          size_t, stride_b, float, beta, float *, c, int, ldc, size_t, stride_c, int, batch)
ASYNC_OP (add, const float *, a, const float *, b, float *, y, size_t, n)
ASYNC_OP (scale, float *, x, float, alpha, size_t, n)
ASYNC_OP (layernorm_fwd, const float *, x, const float *, res, float *, sum, const float *, gamma,
          const float *, beta, float *, y, float *, mean, float *, rstd, int, rows, int, dim)
ASYNC_OP (layernorm_bwd, const float *, x, const float *, gamma, const float *, mean,
          const float *, rstd, const float *, dy, const float *, dres, float *, dx,
          float *, dgamma, float *, dbeta, int, rows, int, dim)
ASYNC_OP (gelu_fwd, float *, x, const float *, bias, float *, y, int, rows, int, dim)
ASYNC_OP (gelu_bwd, const float *, x, const float *, dy, float *, dx, size_t, n)
ASYNC_OP (heads_split, const float *, x, int, ldx, float *, y, int, B, int, T, int, H, int, hd,
          int, cap, int, pos)
ASYNC_OP (heads_merge, const float *, y, float *, x, int, ldx, int, B, int, T, int, H, int, hd,
          int, cap, int, pos)
ASYNC_OP (causal_softmax_fwd, float *, s, int, bh, int, tq, int, tk, int, pos, float, scale)
ASYNC_OP (causal_softmax_bwd, const float *, p, const float *, dp, float *, ds, int, bh, int, tq,
          int, tk, float, scale)
ASYNC_OP (attention_fwd, const float *, q, const float *, k, const float *, v, float *, o,
          float *, lse, int, B, int, H, int, tq, int, tk, int, cap, int, hd, int, pos,
          float, scale, TachAttnDropout, drop)
ASYNC_OP (attention_bwd, const float *, q, const float *, k, const float *, v, const float *, o,
          const float *, dout, const float *, lse, float *, dq, float *, dk, float *, dv, int, B,
          int, H, int, t, int, hd, float, scale, TachAttnDropout, drop)
ASYNC_OP (embedding_bwd, const float *, dout, const int32_t *, idx, float *, dtable, int, n,
          int, dim)

/* ---------------------------------------------------------- lifecycle */

static void
stream_stop (AsyncBackend *ab, AsyncStream *stream)
{
  if (stream->thread == NULL)
    return;
  g_async_queue_push (stream->queue, g_new0 (AsyncJob, 1));
  g_thread_join (stream->thread);
  g_async_queue_unref (stream->queue);
}

static void
async_free (TachBackend *be)
{
  AsyncBackend *ab = ASYNC (be);

  stream_stop (ab, &ab->compute);
  stream_stop (ab, &ab->copy);
  stream_stop (ab, &ab->side);
  tach_backend_free (ab->cpu);
  g_mutex_clear (&ab->lock);
  g_cond_clear (&ab->cond);
  g_free (ab);
}

static TachBackendOps async_ops, async_graph_ops;
/* tach_async_device_set_graphs(): the double says it can launch graphs,
 * and a backend opened then has them. */
static gboolean claims_graphs;

#define FILL(slot) async_ops.slot = cpu->ops->slot != NULL ? slot##_queue : NULL

static void
fill_ops (const TachBackend *cpu)
{
  async_ops = (TachBackendOps) {
    .free = async_free,
    .alloc = async_alloc,
    .dealloc = async_dealloc,
    .upload = async_upload,
    .host_alloc = async_host_alloc,
    .host_free = async_host_free,
    .upload_async = async_upload_async,
    .upload_overlapped = async_upload_overlapped,
    .stream_wait = async_stream_wait,
    .event_synchronize = async_event_synchronize,
    .download = async_download,
    .zero = async_zero,
    .copy = async_copy,
    .synchronize = async_synchronize,
    .peak_memory = async_peak_memory,
    .event_new = async_event_new,
    .event_free = async_event_free,
    .event_record = async_event_record,
    .event_elapsed_ms = async_event_elapsed_ms,
    .lstm_plan_new = async_lstm_plan_new,
    .lstm_plan_free = async_lstm_plan_free,
    .lstm_reserve_bytes = async_lstm_reserve_bytes,
    .conv_plan_new = async_conv_plan_new,
    .conv_plan_free = async_conv_plan_free,
  };
  async_fill_coll_ops (&async_ops);
  FILL (gemm);
  FILL (gemm_bf16);
  FILL (bias_add);
  FILL (bias_grad);
  FILL (relu_fwd);
  FILL (relu_bwd);
  FILL (lstm_fwd);
  FILL (lstm_bwd);
  FILL (lstm_cell_fwd);
  FILL (lstm_cell_bwd);
  FILL (max_over_time_fwd);
  FILL (max_over_time_bwd);
  FILL (sigmoid_bce);
  FILL (softmax_ce);
  FILL (accuracy);
  FILL (conv_fwd);
  FILL (conv_bwd);
  FILL (maxpool_fwd);
  FILL (maxpool_bwd);
  FILL (conv_block_fwd);
  FILL (conv_block_bwd);
  FILL (avgpool_fwd);
  FILL (avgpool_bwd);
  FILL (dropout_fwd);
  FILL (dropout_bwd);
  FILL (embedding);
  FILL (sample_tokens);
  FILL (sample_tokens_nll);
  FILL (adam);
  FILL (sgd);
  FILL (gemm_strided_batched);
  FILL (add);
  FILL (scale);
  FILL (layernorm_fwd);
  FILL (layernorm_bwd);
  FILL (gelu_fwd);
  FILL (gelu_bwd);
  FILL (heads_split);
  FILL (heads_merge);
  FILL (causal_softmax_fwd);
  FILL (causal_softmax_bwd);
  FILL (attention_fwd);
  FILL (attention_bwd);
  FILL (embedding_bwd);
  async_graph_ops = async_ops;
  async_fill_graph_ops (&async_graph_ops);
}

static TachDeviceInfo *
device_info (const TachDeviceInfo *cpu)
{
  TachDeviceInfo *info = g_new0 (TachDeviceInfo, 1);

  info->id = g_strdup (TACH_ASYNC_DEVICE_ID);
  info->name = g_strdup ("asynchronous test double (CPU ops on a worker thread)");
  info->kind = TACH_DEVICE_KIND_GPU;
  info->versions = g_strdup ("test double");
  if (cpu != NULL)
    {
      info->peak_flops = cpu->peak_flops;
      info->threads = cpu->threads;
    }
  return info;
}

static GPtrArray *
async_devices (void)
{
  GPtrArray *devices = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_device_info_free);

  g_ptr_array_add (devices, device_info (NULL));
  return devices;
}

static TachBackend *
async_open (guint ordinal, guint threads, TachPrecision precision, GError **error)
{
  static gsize ops_ready = 0;
  TachBackend *cpu = tach_backend_new ("cpu", threads, precision, error);
  AsyncBackend *ab;

  if (cpu == NULL)
    return NULL;
  if (g_once_init_enter (&ops_ready))
    {
      fill_ops (cpu);
      g_once_init_leave (&ops_ready, 1);
    }
  ab = g_new0 (AsyncBackend, 1);
  ab->cpu = cpu;
  ab->base.ops = claims_graphs ? &async_graph_ops : &async_ops;
  /* As a GPU backend's: the host threads the user asked for, 0 by default. */
  ab->base.threads = threads;
  ab->base.precision = precision;
  ab->base.counts_api_calls = TRUE;
  ab->base.device = device_info (cpu->device);
  g_mutex_init (&ab->lock);
  g_cond_init (&ab->cond);
  stream_start (ab, &ab->compute, "async-compute");
  stream_start (ab, &ab->copy, "async-copy");
  stream_start (ab, &ab->side, "async-side");
  return &ab->base;
}

static gboolean
async_supports (TachKnobId knob, int value, const char **why)
{
  if (knob == TACH_KNOB_LAUNCH && value == TACH_LAUNCH_GRAPH && claims_graphs)
    return TRUE;
  if (knob == TACH_KNOB_LAUNCH && value == TACH_LAUNCH_GRAPH)
    {
      if (why != NULL)
        *why = "the asynchronous test double has no graphs";
      return FALSE;
    }
  return tach_backend_supports_knob ("cpu", knob, value, why);
}

/* A row like the built-in ones: device "async:0", a GPU-like device with
 * none of their capabilities. */
static TachBackendRow row = {
  .prefix = "async", .ordinals = TRUE, .kind = TACH_DEVICE_KIND_GPU,
  .none = "the asynchronous test double lists no device '%s'",
  .devices = async_devices,
  .open = async_open,
  .supports = async_supports,
};

void
tach_async_device_register (void)
{
  tach_backend_registry_set_extra_row (&row);
}

void
tach_async_device_set_graphs (gboolean claim)
{
  claims_graphs = claim;
  row.caps = claim ? TACH_BACKEND_CAP_GRAPHS : 0;
}
