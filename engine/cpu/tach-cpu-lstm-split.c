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
 * Threads: the engine thread; the region runs on the backend's OpenMP pool.
 */
#include "tach-cpu-lstm-private.h"

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

  tach_cpu_bind_threads (be);
#pragma omp parallel
  {
    int nth = omp_get_num_threads (), tid = omp_get_thread_num ();
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
              {
#pragma omp barrier
              }
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
