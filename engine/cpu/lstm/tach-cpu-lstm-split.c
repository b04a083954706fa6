/* tach-cpu-lstm-split.c: the inference LSTM of a few streams (token-by-
 * token generation), its hidden units split between the threads.
 *
 * At batch 1 every time step is a matrix-vector product over W_h and a
 * pointwise pass of H units: far too little work to wake the pool per
 * step, and bound by moving the weights from L2 to the core.  Here the
 * pool runs the whole pass in one region, each thread owning a span of
 * hidden units: the rows of W_x and W_h that feed its units' four gates,
 * so that each core streams only its share of the weights (and keeps it
 * in its own L2 from one token to the next).  Per time step each thread
 * computes its units' gates (the small x W^T kernels on its rows of W),
 * activates them and writes its units' c and h; one barrier then lets
 * every thread read all of h_{t-1}.  Each output's arithmetic is the
 * serial path's (the kernels' sums depend only on k, the pointwise math
 * only on the element), so the split changes no result.
 *
 * On frozen weights (a generation loop: tach-cpu-lstm-frozen.c) the split
 * runs on packed copies too: the input side of every row comes from the
 * rows kept (or the packed W_x) on the calling thread, then each span's
 * recurrent product reads its own packed copy of the rows of W_h that
 * feed it (its units' four gates gathered, so that no block of 16 rows
 * straddles two spans), into its gates gathered and put back.  The packed
 * kernels' outputs do not depend on which rows share a block, so this
 * too gives the serial pass's bits.
 *
 * Threads: the engine thread; the region runs on the backend's OpenMP pool.
 */
#include <string.h>

#include "tach-cpu-lstm-private.h"

/* A barrier of the region's threads that spins on one cache line: the
 * split waits once per time step, a few microseconds apart, and
 * libgomp's barrier took 0.53 us on the 2-core AMD EPYC of bench/README.md
 * where this one takes 0.09 us.  A waiter whose partner is later than
 * TACH_CPU_WAIT_SPIN_US sleeps until the last one wakes it
 * (tach_cpu_wait_for): a partner that late was preempted by other work,
 * and needs the processor more than the waiter's spin does. */
typedef struct {
  _Alignas (64) int arrived;  /* threads at the barrier, this phase */
  _Alignas (64) int phase;     /* flips when the last one arrives */
  TachCpuWait wait;
  TachBackend *be;
} SpinBarrier;

static void
spin_barrier_wait (SpinBarrier *b, int nth, int *phase)
{
  int next = !*phase;

  *phase = next;
  if (__atomic_add_fetch (&b->arrived, 1, __ATOMIC_ACQ_REL) == nth)
    {
      __atomic_store_n (&b->arrived, 0, __ATOMIC_RELAXED);
      __atomic_store_n (&b->phase, next, __ATOMIC_SEQ_CST);
      tach_cpu_wait_wake (&b->wait, &b->phase);
      return;
    }
  tach_cpu_wait_for (&b->wait, &b->phase, next, b->be);
}

/* Spans start at multiples of this: each unit keeps its place modulo
 * the vector width (16 floats on AVX-512, 8 on AVX2), so that the
 * pointwise loops put it in the same part (vector body or remainder) as
 * the serial path does, and the spans' gate blocks are whole blocks of
 * the GEMM kernels where H allows. */
#define SPLIT_ALIGN 16

/* The first unit of span @tid of @nth over @h units. */
static int
span_start (int h, int tid, int nth)
{
  int start = (int) ((gint64) h * tid / nth);

  if (tid >= nth)
    return h;
  return MIN ((start + SPLIT_ALIGN / 2) / SPLIT_ALIGN * SPLIT_ALIGN, h);
}

/* Gates of units [u0, u1) of rows @m rows of @a (lda apart) times the
 * gate rows of @w that feed them (W [4h, k]): four blocks of rows, one per
 * gate, into the same columns of @g (ldg apart).  beta 0 or 1. */
static dnnl_status_t
span_gemm (size_t m, int h, int u0, int u1, size_t k, const float *a, size_t lda,
           const float *w, float beta, float *g, size_t ldg)
{
  for (int q = 0; q < 4; q++)
    {
      size_t row = (size_t) q * h + u0;
      dnnl_status_t st = tach_cpu_sgemm_local (FALSE, TRUE, m, (size_t) (u1 - u0), k, 1.0f, a,
                                               lda, w + row * k, k, beta, g + row, ldg);

      if (st != dnnl_success)
        return st;
    }
  return dnnl_success;
}

gboolean
tach_cpu_lstm_split_wanted (TachBackend *be, const TachLstmDesc *d)
{
  /* The spans' products are small whenever the whole pass's are: on the
   * small kernels, whose outputs' bits do not depend on the columns
   * computed with them, as the plain pass runs them. */
  return !d->training && be->threads >= 2 && d->N <= TACH_CPU_LSTM_SPLIT_MAX_N
         && d->H >= 2 * SPLIT_ALIGN && tach_cpu_lstm_forward_small (d);
}

void
tach_cpu_lstm_split_forward (TachBackend *be, const TachLstmDesc *d, const float *x,
                             const float *w, float *y, float *gates, float *cells)
{
  const int H = d->H, I = d->I, G = 4 * d->H, T = d->T, N = d->N;
  const size_t ldg = (size_t) d->dirs * G, ldh = (size_t) d->dirs * H;
  const size_t dir_stride = (size_t) G * ((size_t) I + H + 1);
  const size_t sr = step_rows (d);
  dnnl_status_t status = dnnl_success;
  SpinBarrier barrier = { .be = be };

  tach_cpu_bind_threads (be);
#pragma omp parallel
  {
    int nth = omp_get_num_threads (), tid = omp_get_thread_num (), phase = 0;
    int u0 = span_start (H, tid, nth), u1 = span_start (H, tid + 1, nth);
    dnnl_status_t st = dnnl_success;

    for (int dir = 0; dir < d->dirs; dir++)
      {
        const float *wx = w + dir * dir_stride;
        const float *wh = wx + (size_t) G * I;
        const float *b = wh + (size_t) G * H;

        /* The input side of every time step: the rows of x, in any order,
         * are the rows of the gates. */
        if (u1 > u0 && st == dnnl_success)
          st = span_gemm ((size_t) T * N, H, u0, u1, (size_t) I, x, (size_t) I, wx, 0.0f,
                          gates + dir * G, ldg);
        for (int k = 0; k < T; k++)
          {
            TachLstmStep s = forward_step (d, dir, k, gates, cells, y);
            float *g_t = s.g, *c_t = s.c, *h_t = s.h;
            const float *c_p = s.c_prev, *h_p = s.h_prev;

            /* Every thread's h_{t-1} (and, before the first step, no
             * one's input side) is complete. */
            if (k > 0)
              spin_barrier_wait (&barrier, nth, &phase);
            if (u1 <= u0 || st != dnnl_success)
              continue;
            if (k > 0)
              st = span_gemm ((size_t) N, H, u0, u1, (size_t) H, h_p, sr * ldh, wh, 1.0f, g_t,
                              sr * ldg);
            for (int n = 0; n < N && st == dnnl_success; n++)
              tach_cpu_lstm_span_forward (u1 - u0, H, g_t + n * sr * ldg + u0, b + u0,
                                          k > 0 ? c_p + n * sr * ldh + u0 : NULL,
                                          c_t + n * sr * ldh + u0, h_t + n * sr * ldh + u0);
          }
        /* The next direction starts from all of this one's weights read
         * by everyone: nothing to wait for, its rows are disjoint. */
      }
    if (st != dnnl_success)
      {
#pragma omp atomic write
        status = st;
      }
  }
  if (status != dnnl_success)
    tach_cpu_dnnl_fail (be, status, "dnnl_sgemm (a span of the LSTM's hidden units)",
                        __FILE__, __LINE__);
}

/* ------------------------------------------------------ on frozen weights */

/* Floats of span @s's packed rows of W_h (its units' four gates). */
static size_t
span_packed_floats (const TachLstmPlan *plan, int s, int spans)
{
  int H = plan->desc.H, nu = span_start (H, s + 1, spans) - span_start (H, s, spans);

  return tach_cpu_packed_nt_floats ((size_t) 4 * nu, (size_t) H);
}

/* Packs, for each direction and span, the rows of W_h that feed the
 * span's units, gathered gate by gate (i, f, z, o: 4 x nu rows); once per
 * packing of the frozen copies and per thread count.  FALSE on a failed
 * allocation (sticky error set). */
static gboolean
pack_spans (TachBackend *be, TachLstmPlan *plan, const float *w, int spans)
{
  const TachLstmDesc *d = &plan->desc;
  const int H = d->H, I = d->I, G = plan->G;
  size_t per_dir = 0;
  float *rows, *out;

  if (plan->span_packed != NULL && plan->spans == spans && !plan->spans_stale)
    return TRUE;
  for (int s = 0; s < spans; s++)
    per_dir += span_packed_floats (plan, s, spans);
  tach_cpu_mem_free (be, plan->span_packed);
  plan->span_packed = tach_cpu_mem_alloc (be, d->dirs * per_dir * sizeof (float));
  if (plan->span_g == NULL)
    plan->span_g = tach_cpu_mem_alloc (be, (size_t) d->N * G * sizeof (float));
  rows = g_new (float, (size_t) G * H);
  plan->spans = 0;
  if (!tach_backend_ok (be))
    {
      g_free (rows);
      return FALSE;
    }
  out = plan->span_packed;
  for (int dir = 0; dir < d->dirs; dir++)
    {
      const float *wh = w + dir * plan->dir_stride + (size_t) G * I;

      for (int s = 0; s < spans; s++)
        {
          int u0 = span_start (H, s, spans), nu = span_start (H, s + 1, spans) - u0;

          for (int q = 0; q < 4; q++)
            memcpy (rows + (size_t) q * nu * H, wh + ((size_t) q * H + u0) * H,
                    (size_t) nu * H * sizeof (float));
          tach_cpu_pack_nt ((size_t) 4 * nu, (size_t) H, rows, (size_t) H, out);
          out += span_packed_floats (plan, s, spans);
        }
    }
  g_free (rows);
  plan->spans = spans;
  plan->spans_stale = FALSE;
  return TRUE;
}

/* One step's recurrent product and pointwise math for span @s: the
 * span's gates gathered from @g_t (the input side there), h_{t-1} times
 * the span's packed rows added, put back, then activated. */
static void
span_step (const TachLstmPlan *plan, int s, int spans, const float *packed, float *span_g,
           const TachLstmStep *st, const float *b, gboolean first)
{
  const TachLstmDesc *d = &plan->desc;
  const int H = d->H, N = d->N;
  const int u0 = span_start (H, s, spans), nu = span_start (H, s + 1, spans) - u0;
  const size_t ldg = plan->ldg, ldh = plan->ldh, sr = step_rows (d), gn = (size_t) 4 * nu;

  if (nu <= 0)
    return;
  if (!first)
    {
      for (int n = 0; n < N; n++)
        for (int q = 0; q < 4; q++)
          memcpy (span_g + n * gn + (size_t) q * nu, st->g + n * sr * ldg + (size_t) q * H + u0,
                  (size_t) nu * sizeof (float));
      tach_cpu_packed_nt ((size_t) N, gn, (size_t) H, 1.0f, st->h_prev, sr * ldh, packed, 1.0f,
                          span_g, gn);
      for (int n = 0; n < N; n++)
        for (int q = 0; q < 4; q++)
          memcpy (st->g + n * sr * ldg + (size_t) q * H + u0, span_g + n * gn + (size_t) q * nu,
                  (size_t) nu * sizeof (float));
    }
  for (int n = 0; n < N; n++)
    tach_cpu_lstm_span_forward (nu, H, st->g + n * sr * ldg + u0, b + u0,
                                first ? NULL : st->c_prev + n * sr * ldh + u0,
                                st->c + n * sr * ldh + u0, st->h + n * sr * ldh + u0);
}

void
tach_cpu_lstm_split_frozen_forward (TachBackend *be, TachLstmPlan *plan, const float *x,
                                    const float *w, float *y, float *gates, float *cells)
{
  const TachLstmDesc *d = &plan->desc;
  const int H = d->H, I = d->I, G = plan->G;
  const int spans = MAX (1, MIN ((int) be->threads, H / SPLIT_ALIGN));
  SpinBarrier barrier = { .be = be };

  if (!tach_cpu_lstm_frozen_pack (be, plan, w) || !pack_spans (be, plan, w, spans))
    return;
  /* The input side of every row: a row seen before is a copy. */
  tach_cpu_lstm_frozen_input_side (plan, x, gates);
  tach_cpu_bind_threads (be);
#pragma omp parallel num_threads (MIN (spans, (int) tach_cpu_threads_now (be)))
  {
    int nth = omp_get_num_threads (), tid = omp_get_thread_num (), phase = 0;

    for (int dir = 0; dir < d->dirs; dir++)
      {
        const float *b = w + dir * plan->dir_stride + (size_t) G * (I + H);
        const float *dir_packed = plan->span_packed;

        for (int s = 0; s < dir * spans; s++)
          dir_packed += span_packed_floats (plan, s % spans, spans);
        for (int k = 0; k < d->T; k++)
          {
            TachLstmStep st = forward_step (d, dir, k, gates, cells, y);
            const float *packed = dir_packed;

            /* Every span's h_{t-1} is complete. */
            if (k > 0)
              spin_barrier_wait (&barrier, nth, &phase);
            for (int s = 0; s < spans; s++)
              {
                if (s % nth == tid)
                  span_step (plan, s, spans, packed, plan->span_g + (size_t) d->N * 4
                                                                    * span_start (H, s, spans),
                             &st, b, k == 0);
                packed += span_packed_floats (plan, s, spans);
              }
          }
      }
  }
}
