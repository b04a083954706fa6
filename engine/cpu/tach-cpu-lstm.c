/* tach-cpu-lstm.c: the fused LSTM and the per-timestep cell of the
 * unrolled mode, on dnnl_sgemm and vectorised pointwise loops.
 *
 * oneDNN 2.6's LSTM primitive picks its reference implementation for the
 * shapes and plain weights Tach uses (H = 40 or 100), so the fused op is
 * written here the way cuDNN structures it:
 *   forward   one input GEMM over all time steps (T*N x I by I x 4H), then
 *             per step one recurrent GEMM (N x H by H x 4H) into the gates
 *             and one fused pointwise pass (bias, activations, c, h);
 *   backward  per step one fused pointwise pass and one recurrent GEMM for
 *             dh; the weight gradients batched over all time steps
 *             (dW_x = dG^T X in one GEMM per direction, the bias gradient
 *             as ones^T dG), no dx unless asked for.
 * The weights are used in Tach's canonical layout as they are: a row-major
 * W [4H, K] is the transposed operand of x W^T, so nothing is converted
 * (but for the input weights of two directions, packed side by side so
 * that one input GEMM serves both).
 *
 * Large batches run the recurrence in slices of the batch, one per thread
 * of the pool: samples are independent, so each thread runs every time step
 * of its own samples (recurrent GEMM on its rows, pointwise pass) with no
 * barrier between steps, where a pooled GEMM per step would wake and join
 * the pool 2T times per pass.  Backward, each slice also lays out h_{t-1}
 * beside each row (zero at a direction's first step), so that the
 * recurrent weight gradient is one GEMM over all rows, in either layout.
 *
 * Rows: x, y, the gates and the cell states share one row order, that of
 * the data: row (t, n) is t*N + n time-major and n*T + t batch-major, so
 * the rows of one time step are 1 or T rows apart, which the GEMMs take
 * as their leading dimension.  The reserve space holds the activated gates
 * [T*N, dirs*4H] and the cell states [T*N, dirs*H].  The pointwise math
 * of one row is in tach-cpu-lstm-rows.c.
 *
 * Threads: the engine thread; the loops run on the backend's OpenMP pool.
 */
#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-cpu-lstm-private.h"


/* Batches of at least this many samples per thread run in slices. */
#define LSTM_SLICE_MIN 32

/* The plan whose GEMMs run now on this thread: set on entry to the
 * forward and backward passes, read by sgemm() below. */
static __thread TachCpuGemmMode lstm_gemm_mode;

/* Rows of one time step lie T rows apart batch-major (12.8 KB of gates
 * for W1), too far apart for the hardware prefetchers, and the pointwise
 * passes stall on every row's first load: each pass asks for the rows a
 * few samples ahead, and backward also for the gate-gradient rows it is
 * about to write (W1 on two cores: 2 ahead beat 4 and 8). */
#define LSTM_PREFETCH_AHEAD 2

static inline void
prefetch_span (const void *p, size_t bytes, gboolean write)
{
  const char *c = p;

  if (write)
    for (size_t o = 0; o < bytes; o += 64)
      __builtin_prefetch (c + o, 1, 3);
  else
    for (size_t o = 0; o < bytes; o += 64)
      __builtin_prefetch (c + o, 0, 3);
}

/* ------------------------------------------------------------- planning */

void
tach_cpu_lstm_plan_free (TachBackend *be, TachLstmPlan *plan)
{
  if (plan == NULL)
    return;
  tach_cpu_mem_free (be, plan->work);
  tach_cpu_mem_free (be, plan->dgates);
  tach_cpu_mem_free (be, plan->dh);
  tach_cpu_mem_free (be, plan->dc);
  tach_cpu_mem_free (be, plan->ones);
  tach_cpu_mem_free (be, plan->wx_both);
  tach_cpu_mem_free (be, plan->hprev);
  tach_cpu_mem_free (be, plan->xh);
  tach_cpu_mem_free (be, plan->dw_xh);
  tach_cpu_mem_free (be, plan->db_part);
  g_free (plan);
}

size_t
tach_cpu_lstm_reserve_floats (const TachLstmPlan *plan)
{
  return plan->rows * ((size_t) plan->ldg + plan->ldh);
}

TachLstmPlan *
tach_cpu_lstm_plan_new (TachBackend *be, const TachLstmDesc *desc)
{
  const TachLstmDesc *d = desc;
  TachLstmPlan *plan;

  if (d->T <= 0 || d->N <= 0 || d->I <= 0 || d->H <= 0 || (d->dirs != 1 && d->dirs != 2)
      || (size_t) d->T * d->N > G_MAXINT / (8 * (size_t) d->H + (size_t) d->I))
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("an LSTM needs positive sizes, 1 or 2 directions and fewer than "
                           "2^31 elements per tensor: T=%d N=%d I=%d H=%d dirs=%d"),
                         d->T, d->N, d->I, d->H, d->dirs);
      return NULL;
    }
  if (d->precision != TACH_PRECISION_FP32)
    {
      tach_backend_fail (be, TACH_ERROR_UNSUPPORTED,
                         _("the CPU backend's LSTM runs in fp32 only: use --precision fp32"));
      return NULL;
    }

  plan = g_new0 (TachLstmPlan, 1);
  plan->desc = *desc;
  plan->dir_stride = (size_t) 4 * d->H * ((size_t) d->I + d->H + 1);
  plan->rows = (size_t) d->T * d->N;
  plan->G = 4 * d->H;
  plan->ldg = d->dirs * plan->G;
  plan->ldh = d->dirs * d->H;

  plan->sliced = d->N >= LSTM_SLICE_MIN * (int) MAX (be->threads, 1);
  plan->can_split = !plan->sliced && tach_cpu_lstm_split_wanted (be, d);
  if (d->dirs == 2)
    plan->wx_both = tach_cpu_mem_alloc (be, (size_t) 2 * plan->G * d->I * sizeof (float));
  if (d->training && plan->sliced)
    {
      if (d->dirs == 1)
        {
          size_t ldxh = (size_t) d->I + d->H;

          plan->xh = tach_cpu_mem_alloc (be, plan->rows * ldxh * sizeof (float));
          plan->dw_xh = tach_cpu_mem_alloc (be, (size_t) plan->G * ldxh * sizeof (float));
        }
      else
        plan->hprev = tach_cpu_mem_alloc (be, plan->rows * plan->ldh * sizeof (float));
      plan->db_part = tach_cpu_mem_alloc (be, (size_t) MAX (be->threads, 1) * plan->ldg
                                                * sizeof (float));
    }
  if (!d->training)
    plan->work = tach_cpu_mem_alloc (be, tach_cpu_lstm_reserve_floats (plan) * sizeof (float));
  else
    {
      plan->dgates = tach_cpu_mem_alloc (be, plan->rows * plan->ldg * sizeof (float));
      plan->dh = tach_cpu_mem_alloc (be, (size_t) d->dirs * d->N * d->H * sizeof (float));
      plan->dc = tach_cpu_mem_alloc (be, (size_t) d->dirs * d->N * d->H * sizeof (float));
      if (!plan->sliced)
        plan->ones = tach_cpu_mem_alloc (be, plan->rows * sizeof (float));
      if (plan->ones != NULL)
        for (size_t r = 0; r < plan->rows; r++)
          plan->ones[r] = 1.0f;
    }
  if (tach_backend_ok (be))
    tach_cpu_lstm_plan_tune (be, plan);
  if (!tach_backend_ok (be))
    {
      tach_cpu_lstm_plan_free (be, plan);
      return NULL;
    }
  return plan;
}

size_t
tach_cpu_lstm_reserve_bytes (TachBackend *be, TachLstmPlan *plan)
{
  return plan->desc.training ? tach_cpu_lstm_reserve_floats (plan) * sizeof (float) : 0;
}

/* ------------------------------------------------------------ execution */

static inline gboolean
sgemm (TachBackend *be, char ta, char tb, size_t m, size_t n, size_t k, float alpha,
       const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c,
       size_t ldc)
{
  return tach_cpu_sgemm_mode (be, lstm_gemm_mode, ta == 'T', tb == 'T', m, n, k, alpha, a, lda,
                              b, ldb, beta, c, ldc);
}

/* What the slices of one pass share (all borrowed). */
typedef struct {
  const TachLstmPlan *plan;
  const float        *x;
  const float        *w;
  const float        *y;
  const float        *dy;
  float              *h;        /* forward: y, written */
  float              *gates;    /* forward: written; backward: read */
  float              *cells;
} LstmPass;

typedef dnnl_status_t (*LstmSliceFunc) (const LstmPass *pass, int n0, int n1);

/* Runs @func on slices of the batch, one per thread of the pool.  Only the
 * engine thread records errors, so the threads hand back a status. */
static gboolean
run_slices (TachBackend *be, const LstmPass *pass, LstmSliceFunc func)
{
  int N = pass->plan->desc.N;
  dnnl_status_t status = dnnl_success;

#pragma omp parallel
  {
    int nth = omp_get_num_threads (), tid = omp_get_thread_num ();
    int n0 = (int) ((gint64) N * tid / nth), n1 = (int) ((gint64) N * (tid + 1) / nth);
    dnnl_status_t st = n1 > n0 ? func (pass, n0, n1) : dnnl_success;

    if (st != dnnl_success)
      {
#pragma omp atomic write
        status = st;
      }
  }
  if (status != dnnl_success)
    tach_cpu_dnnl_fail (be, status, "dnnl_sgemm (a slice of the LSTM's time steps)",
                        __FILE__, __LINE__);
  return status == dnnl_success;
}

/* Every time step of samples [n0, n1) in every direction, on this thread;
 * the gates hold the input side already. */
static dnnl_status_t
forward_slice (const LstmPass *pass, int n0, int n1)
{
  const TachLstmPlan *plan = pass->plan;
  const TachLstmDesc *d = &plan->desc;
  int H = d->H, G = plan->G, count = n1 - n0;
  size_t ldg = plan->ldg, ldh = plan->ldh, sr = step_rows (d);

  for (int dir = 0; dir < d->dirs; dir++)
    {
      const float *wh = pass->w + dir * plan->dir_stride + (size_t) G * d->I;
      const float *b = wh + (size_t) G * H;

      for (int k = 0; k < d->T; k++)
        {
          int t = time_at (d, dir, k);
          int tp = k > 0 ? time_at (d, dir, k - 1) : t;
          float *g_t = pass->gates + row_of (d, t, n0) * ldg + dir * G;
          float *c_t = pass->cells + row_of (d, t, n0) * ldh + dir * H;
          float *h_t = pass->h + row_of (d, t, n0) * ldh + dir * H;
          const float *c_p = pass->cells + row_of (d, tp, n0) * ldh + dir * H;
          const float *h_p = pass->h + row_of (d, tp, n0) * ldh + dir * H;

          if (k > 0)
            {
              dnnl_status_t st = tach_cpu_sgemm_local (FALSE, TRUE, count, G, H, 1.0f, h_p,
                                                       sr * ldh, wh, H, 1.0f, g_t, sr * ldg);

              if (st != dnnl_success)
                return st;
            }
          for (int n = 0; n < count; n++)
            {
              if (n + LSTM_PREFETCH_AHEAD < count)
                {
                  size_t a = (size_t) (n + LSTM_PREFETCH_AHEAD) * sr;

                  prefetch_span (g_t + a * ldg, (size_t) G * sizeof (float), FALSE);
                  if (k > 0)
                    prefetch_span (c_p + a * ldh, (size_t) H * sizeof (float), FALSE);
                }
              tach_cpu_lstm_row_forward (H, g_t + n * sr * ldg, b,
                                         k > 0 ? c_p + n * sr * ldh : NULL, c_t + n * sr * ldh,
                                         h_t + n * sr * ldh);
            }
        }
    }
  return dnnl_success;
}

/* The input side of every time step and direction: one GEMM, the two
 * directions' W_x packed side by side (96 K floats for W1, copied once per
 * pass) so that their gates come out of the same product. */
static gboolean
input_gemm (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w, float *gates)
{
  const TachLstmDesc *d = &plan->desc;
  size_t gi = (size_t) plan->G * d->I;

  if (d->dirs == 1)
    return sgemm (be, 'N', 'T', plan->rows, plan->G, d->I, 1.0f, x, d->I, w, d->I, 0.0f,
                  gates, plan->ldg);
  for (int dir = 0; dir < d->dirs; dir++)
    memcpy (plan->wx_both + dir * gi, w + dir * plan->dir_stride, gi * sizeof (float));
  return sgemm (be, 'N', 'T', plan->rows, plan->ldg, d->I, 1.0f, x, d->I, plan->wx_both, d->I,
                0.0f, gates, plan->ldg);
}

void
tach_cpu_lstm_forward_pass (TachBackend *be, TachLstmPlan *plan, const float *x,
                            const float *w, float *y, void *reserve)
{
  const TachLstmDesc *d = &plan->desc;
  int N = d->N, H = d->H, I = d->I, G = plan->G;
  size_t ldg = plan->ldg, ldh = plan->ldh, sr = step_rows (d);
  float *gates, *cells;
  gboolean parallel = (size_t) N * H >= TACH_CPU_PARALLEL_MIN / 4;

  lstm_gemm_mode = plan->gemm_mode;
  tach_cpu_bind_threads (be);
  if (d->training && reserve == NULL)
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("a training LSTM forward needs its reserve space: "
                           "allocate tach_lstm_reserve_bytes() and pass it"));
      return;
    }
  gates = d->training ? reserve : plan->work;
  cells = gates + plan->rows * ldg;

  if (plan->gemm_mode == TACH_CPU_GEMM_SPLIT)
    {
      tach_cpu_lstm_split_forward (be, d, x, w, y, gates, cells);
      return;
    }
  if (!input_gemm (be, plan, x, w, gates))
    return;
  if (plan->sliced)
    {
      LstmPass pass = { .plan = plan, .w = w, .h = y, .gates = gates, .cells = cells };

      run_slices (be, &pass, forward_slice);
      return;
    }

  for (int dir = 0; dir < d->dirs; dir++)
    {
      const float *wh = w + dir * plan->dir_stride + (size_t) G * I;
      const float *b = wh + (size_t) G * H;

      for (int k = 0; k < d->T; k++)
        {
          int t = time_at (d, dir, k);
          int tp = k > 0 ? time_at (d, dir, k - 1) : t;
          float *g_t = gates + row_of (d, t, 0) * ldg + dir * G;
          float *c_t = cells + row_of (d, t, 0) * ldh + dir * H;
          float *h_t = y + row_of (d, t, 0) * ldh + dir * H;
          const float *c_p = cells + row_of (d, tp, 0) * ldh + dir * H;
          const float *h_p = y + row_of (d, tp, 0) * ldh + dir * H;

          if (k > 0 && !sgemm (be, 'N', 'T', N, G, H, 1.0f, h_p, sr * ldh, wh, H, 1.0f,
                               g_t, sr * ldg))
            return;
          /* A region with a false if clause still costs a call into the
           * OpenMP runtime: small batches loop here instead. */
          if (parallel)
            {
#pragma omp parallel for
              for (int n = 0; n < N; n++)
                tach_cpu_lstm_row_forward (H, g_t + n * sr * ldg, b,
                                           k > 0 ? c_p + n * sr * ldh : NULL, c_t + n * sr * ldh,
                                           h_t + n * sr * ldh);
            }
          else
            for (int n = 0; n < N; n++)
              tach_cpu_lstm_row_forward (H, g_t + n * sr * ldg, b,
                                         k > 0 ? c_p + n * sr * ldh : NULL, c_t + n * sr * ldh,
                                         h_t + n * sr * ldh);
        }
    }
}

/* Every time step of samples [n0, n1) in every direction, backward, on
 * this thread: the gate gradients and the recurrent dh; then h_{t-1} of
 * these samples' rows into plan->hprev, or (one direction) x and h_{t-1}
 * of each row side by side into plan->xh. */
static dnnl_status_t
backward_slice (const LstmPass *pass, int n0, int n1)
{
  const TachLstmPlan *plan = pass->plan;
  const TachLstmDesc *d = &plan->desc;
  int N = d->N, H = d->H, G = plan->G, count = n1 - n0;
  size_t ldg = plan->ldg, ldh = plan->ldh, sr = step_rows (d);

  for (int dir = 0; dir < d->dirs; dir++)
    {
      const float *wh = pass->w + dir * plan->dir_stride + (size_t) G * d->I;
      float *dh = plan->dh + ((size_t) dir * N + n0) * H;
      float *dc = plan->dc + ((size_t) dir * N + n0) * H;
      float *db = plan->db_part + (size_t) omp_get_thread_num () * ldg + dir * G;

      for (int k = d->T - 1; k >= 0; k--)
        {
          int t = time_at (d, dir, k);
          int tp = k > 0 ? time_at (d, dir, k - 1) : t;
          const float *g_t = pass->gates + row_of (d, t, n0) * ldg + dir * G;
          const float *c_t = pass->cells + row_of (d, t, n0) * ldh + dir * H;
          const float *c_p = pass->cells + row_of (d, tp, n0) * ldh + dir * H;
          const float *dy_t = pass->dy + row_of (d, t, n0) * ldh + dir * H;
          float *dg_t = plan->dgates + row_of (d, t, n0) * ldg + dir * G;
          gboolean last = k == d->T - 1;
          dnnl_status_t st;

          for (int n = 0; n < count; n++)
            {
              if (n + LSTM_PREFETCH_AHEAD < count)
                {
                  size_t a = (size_t) (n + LSTM_PREFETCH_AHEAD) * sr;

                  prefetch_span (g_t + a * ldg, (size_t) G * sizeof (float), FALSE);
                  prefetch_span (c_t + a * ldh, (size_t) H * sizeof (float), FALSE);
                  prefetch_span (dy_t + a * ldh, (size_t) H * sizeof (float), FALSE);
                  prefetch_span (dg_t + a * ldg, (size_t) G * sizeof (float), TRUE);
                  if (k > 0)
                    prefetch_span (c_p + a * ldh, (size_t) H * sizeof (float), FALSE);
                }
              tach_cpu_lstm_row_backward (H, g_t + n * sr * ldg, c_t + n * sr * ldh,
                            k > 0 ? c_p + n * sr * ldh : NULL, dy_t + n * sr * ldh,
                            last ? NULL : dh + (size_t) n * H, dc + (size_t) n * H, !last,
                            dg_t + n * sr * ldg, db);
            }
          if (k == 0)
            break;
          /* dh_{t-1} = dG_t W_h */
          st = tach_cpu_sgemm_local (FALSE, FALSE, count, H, G, 1.0f, dg_t, sr * ldg, wh, H,
                                     0.0f, dh, H);
          if (st != dnnl_success)
            return st;
        }
      for (int n = n0; n < n1; n++)
        for (int k = 0; k < d->T; k++)
          {
            size_t r = row_of (d, time_at (d, dir, k), n);
            float *hp;

            if (plan->xh != NULL)
              {
                size_t ldxh = (size_t) d->I + H;

                memcpy (plan->xh + r * ldxh, pass->x + r * d->I, (size_t) d->I * sizeof (float));
                hp = plan->xh + r * ldxh + d->I;
              }
            else
              hp = plan->hprev + r * ldh + dir * H;

            if (k == 0)
              memset (hp, 0, (size_t) H * sizeof (float));
            else
              memcpy (hp, pass->y + row_of (d, time_at (d, dir, k - 1), n) * ldh + dir * H,
                      (size_t) H * sizeof (float));
          }
    }
  return dnnl_success;
}

/* The per-step part of backward, step by step over the whole batch (small
 * batches): gate gradients, the recurrent dh and, batch-major, dW_h. */
static gboolean
backward_steps (TachBackend *be, TachLstmPlan *plan, const float *w, const float *y,
                const float *dy, const float *gates, const float *cells, float *dw)
{
  const TachLstmDesc *d = &plan->desc;
  int N = d->N, H = d->H, I = d->I, G = plan->G;
  size_t ldg = plan->ldg, ldh = plan->ldh, sr = step_rows (d);
  gboolean parallel = (size_t) N * H >= TACH_CPU_PARALLEL_MIN / 4;

  for (int dir = 0; dir < d->dirs; dir++)
    {
      const float *wh = w + dir * plan->dir_stride + (size_t) G * I;
      float *dwh = dw + dir * plan->dir_stride + (size_t) G * I;
      float *dh = plan->dh + (size_t) dir * N * H;
      float *dc = plan->dc + (size_t) dir * N * H;

      /* Batch-major, the recurrent weight gradient is summed step by step
       * below; time-major, it is one GEMM after the loop. */
      if (!d->time_major || d->T == 1)
        memset (dwh, 0, (size_t) G * H * sizeof (float));

      for (int k = d->T - 1; k >= 0; k--)
        {
          int t = time_at (d, dir, k);
          int tp = k > 0 ? time_at (d, dir, k - 1) : t;
          const float *g_t = gates + row_of (d, t, 0) * ldg + dir * G;
          const float *c_t = cells + row_of (d, t, 0) * ldh + dir * H;
          const float *c_p = cells + row_of (d, tp, 0) * ldh + dir * H;
          const float *dy_t = dy + row_of (d, t, 0) * ldh + dir * H;
          float *dg_t = plan->dgates + row_of (d, t, 0) * ldg + dir * G;
          gboolean last = k == d->T - 1;

#pragma omp parallel for if (parallel)
          for (int n = 0; n < N; n++)
            tach_cpu_lstm_row_backward (H, g_t + n * sr * ldg, c_t + n * sr * ldh,
                          k > 0 ? c_p + n * sr * ldh : NULL, dy_t + n * sr * ldh,
                          last ? NULL : dh + (size_t) n * H, dc + (size_t) n * H, !last,
                          dg_t + n * sr * ldg, NULL);
          if (k == 0)
            break;
          /* dh_{t-1} = dG_t W_h, and (batch-major) dW_h += dG_t^T h_{t-1}. */
          if (!sgemm (be, 'N', 'N', N, H, G, 1.0f, dg_t, sr * ldg, wh, H, 0.0f, dh, H))
            return FALSE;
          if (!d->time_major
              && !sgemm (be, 'T', 'N', G, H, N, 1.0f, dg_t, sr * ldg,
                         y + row_of (d, tp, 0) * ldh + dir * H, sr * ldh, 1.0f, dwh, H))
            return FALSE;
        }

      /* Time-major, h_{t-1} of every step but the first is one block of
       * rows shifted by one step (N rows) from the gate gradients. */
      if (d->time_major && d->T > 1)
        {
          const float *dg_from = plan->dgates + (dir == 0 ? (size_t) N * ldg : 0) + dir * G;
          const float *h_from = y + (dir == 0 ? 0 : (size_t) N * ldh) + dir * H;

          if (!sgemm (be, 'T', 'N', G, H, (size_t) (d->T - 1) * N, 1.0f, dg_from, ldg,
                      h_from, ldh, 0.0f, dwh, H))
            return FALSE;
        }
    }
  return TRUE;
}

void
tach_cpu_lstm_bwd (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w,
                   const float *y, const float *dy, void *reserve, float *dx, float *dw)
{
  const TachLstmDesc *d = &plan->desc;
  int H = d->H, I = d->I, G = plan->G;
  size_t ldg = plan->ldg, ldh = plan->ldh;
  const float *gates = reserve;
  const float *cells;

  lstm_gemm_mode = plan->gemm_mode;
  tach_cpu_bind_threads (be);
  if (!d->training)
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("LSTM backward needs a plan made for training: set training in the TachLstmDesc"));
      return;
    }
  if (d->need_dx && dx == NULL)
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("LSTM backward was planned with need_dx but given no dx buffer"));
      return;
    }
  if (reserve == NULL)
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("LSTM backward needs the reserve space its forward filled"));
      return;
    }
  cells = gates + plan->rows * ldg;

  if (plan->sliced)
    {
      LstmPass pass = { .plan = plan, .x = x, .w = w, .y = y, .dy = dy,
                        .gates = (float *) gates, .cells = (float *) cells };

      /* Threads that get no samples leave their part as it is. */
      memset (plan->db_part, 0, (size_t) MAX (be->threads, 1) * ldg * sizeof (float));
      if (!run_slices (be, &pass, backward_slice))
        return;
    }
  else if (!backward_steps (be, plan, w, y, dy, gates, cells, dw))
    return;

  /* One direction, sliced: [dW_x | dW_h] = dG^T [X | H_prev] over all
   * time steps in one GEMM of K = I + H columns, then to the two blocks;
   * db is the sum of the slices' parts. */
  if (plan->xh != NULL)
    {
      size_t ldxh = (size_t) I + H;
      float *dwh = dw + (size_t) G * I;
      float *db = dwh + (size_t) G * H;

      if (!sgemm (be, 'T', 'N', G, ldxh, plan->rows, 1.0f, plan->dgates, ldg, plan->xh, ldxh,
                  0.0f, plan->dw_xh, ldxh))
        return;
      for (int j = 0; j < G; j++)
        {
          memcpy (dw + (size_t) j * I, plan->dw_xh + j * ldxh, (size_t) I * sizeof (float));
          memcpy (dwh + (size_t) j * H, plan->dw_xh + j * ldxh + I, (size_t) H * sizeof (float));
        }
      memcpy (db, plan->db_part, (size_t) G * sizeof (float));
      for (guint th = 1; th < MAX (be->threads, 1); th++)
        for (int j = 0; j < G; j++)
          db[j] += plan->db_part[(size_t) th * ldg + j];
      if (d->need_dx
          && !sgemm (be, 'N', 'N', plan->rows, I, G, 1.0f, plan->dgates, ldg, w, I, 0.0f, dx, I))
        return;
      return;
    }

  /* dW_x = dG^T X over all time steps, both directions in one GEMM (into
   * wx_both, then to each direction's block): one product of 2 * 4H rows
   * runs about a fifth faster than two of 4H (W1 on two cores). */
  if (d->dirs == 2)
    {
      size_t gi = (size_t) G * I;

      if (!sgemm (be, 'T', 'N', 2 * G, I, plan->rows, 1.0f, plan->dgates, ldg, x, I, 0.0f,
                  plan->wx_both, I))
        return;
      for (int dir = 0; dir < 2; dir++)
        memcpy (dw + dir * plan->dir_stride, plan->wx_both + dir * gi, gi * sizeof (float));
    }
  else if (!sgemm (be, 'T', 'N', G, I, plan->rows, 1.0f, plan->dgates, ldg, x, I, 0.0f, dw, I))
    return;

  for (int dir = 0; dir < d->dirs; dir++)
    {
      float *dwx = dw + dir * plan->dir_stride;
      float *dwh = dwx + (size_t) G * I;
      float *db = dwh + (size_t) G * H;
      const float *dg = plan->dgates + dir * G;

      /* dW_h = dG^T H_prev over all time steps at once; db = 1^T dG, the
       * slices' parts summed or one product. */
      if (plan->sliced)
        {
          if (!sgemm (be, 'T', 'N', G, H, plan->rows, 1.0f, dg, ldg, plan->hprev + dir * H, ldh,
                      0.0f, dwh, H))
            return;
          memcpy (db, plan->db_part + dir * G, (size_t) G * sizeof (float));
          for (guint th = 1; th < MAX (be->threads, 1); th++)
            for (int j = 0; j < G; j++)
              db[j] += plan->db_part[(size_t) th * ldg + dir * G + j];
        }
      else if (!sgemm (be, 'N', 'N', 1, G, plan->rows, 1.0f, plan->ones, plan->rows, dg, ldg,
                       0.0f, db, G))
        return;
      if (d->need_dx
          && !sgemm (be, 'N', 'N', plan->rows, I, G, 1.0f, dg, ldg, w + dir * plan->dir_stride,
                     I, dir == 0 ? 0.0f : 1.0f, dx, I))
        return;
    }
}
