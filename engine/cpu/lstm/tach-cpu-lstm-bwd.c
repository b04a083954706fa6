/* tach-cpu-lstm-bwd.c: the fused LSTM's backward pass (tach-cpu-lstm.c
 * says how it is structured): per step the pointwise pass and the
 * recurrent product for dh, the weight gradients batched over the steps;
 * in slices of the batch, each block summing into its own copy of the
 * weight gradient, the copies added in block order.
 *
 * Threads: the engine thread; the loops run on the backend's OpenMP pool.
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-cpu-lstm-private.h"
#include "tach-error-private.h"

/* Rows of the transposed gradients each task of the sum of the blocks'
 * copies adds and transposes: one AVX transpose's. */
#define LSTM_SUM_ROWS 8

/* A block's copy of the weight gradient (in plan->dw_part), laid out for
 * its products: dW_x of both directions, one [dirs * 4H, I] matrix, or
 * transposed, [I, dirs * 4H] (plan->dwx_t), then per direction dW_h
 * transposed [H, 4H] and the bias gradient [4H]; this is direction @dir's
 * dW_h^T.  Transposed, the products are X^T dG and H_prev^T dG, which
 * dnnl_sgemm runs faster than dG^T X and dG^T H_prev where dG is the
 * wider (one thread, Intel Xeon model 167, at AVX-512 and AVX2: lstm-lm's
 * 400 x 100 x 256, 117 against 141 and 86 against 95 GFLOP/s; the
 * bilstm's dW_h 160 x 40 x 640, 118-125 against 144-157 at AVX-512).
 * In place, lstm-lm training gains 2-4% at AVX-512, within noise at AVX2.
 * The bilstm's dW_x keeps dG^T X: transposed, it was faster alone but
 * 2-7% slower in place at AVX-512. */
static inline float *
part_dwh (const TachLstmPlan *plan, float *part, int dir)
{
  const TachLstmDesc *d = &plan->desc;

  return part + (size_t) d->dirs * plan->G * d->I + (size_t) dir * plan->G * (d->H + 1);
}

/* Rows [@r0, @r1) of the [rows, @cols] matrix at @off of every block's
 * copy, added in block order into @out (those rows, @cols apart): each
 * element's sum is the same whatever thread computed which block. */
static void
sum_rows (const TachLstmPlan *plan, size_t off, size_t r0, size_t r1, size_t cols, float *out)
{
  size_t nw = (size_t) plan->desc.dirs * plan->dir_stride, n = (r1 - r0) * cols;
  const float *first = plan->dw_part + off + r0 * cols;
  int blocks = tach_cpu_lstm_blocks (plan);

#pragma omp simd
  for (size_t i = 0; i < n; i++)
    out[i] = first[i];
  for (int blk = 1; blk < blocks; blk++)
    {
      const float *p = first + (size_t) blk * nw;

#pragma omp simd
      for (size_t i = 0; i < n; i++)
        out[i] += p[i];
    }
}

/* Rows [@r0, @r1) of the transposed [rows, @cols] matrix at @off of the
 * blocks' copies, added (sum_rows) into plan->dw_sum at the same place,
 * then transposed back @n columns at a time: columns [c0, c0 + @n) into
 * the matrix at @dst + c0 / @n * @dstride, rows @ldd apart. */
static void
sum_transposed (const TachLstmPlan *plan, size_t off, size_t r0, size_t r1, size_t cols,
                size_t n, float *dst, size_t ldd, size_t dstride)
{
  float *sum = plan->dw_sum + off;

  sum_rows (plan, off, r0, r1, cols, sum + r0 * cols);
  for (size_t c0 = 0; c0 < cols; c0 += n)
    tach_cpu_transpose_rows (r0, r1, n, sum + c0, cols, dst + c0 / n * dstride, ldd);
}

/* dw: the blocks' copies added in block order, in strips of
 * LSTM_SUM_ROWS rows, dW_x and dW_h transposed back where the products
 * made them so; each bias gradient one task. */
static void
sum_parts (const TachLstmPlan *plan, float *dw)
{
  const TachLstmDesc *d = &plan->desc;
  const size_t I = (size_t) d->I, H = (size_t) d->H, G = (size_t) plan->G;
  const size_t gi = G * I, ldg = (size_t) plan->ldg, ds = plan->dir_stride;
  /* dW_x's strips: of its I rows transposed (both directions), else of
   * each direction's 4H rows. */
  const long gs = (long) ((G + LSTM_SUM_ROWS - 1) / LSTM_SUM_ROWS);
  const long xs = plan->dwx_t ? (long) ((I + LSTM_SUM_ROWS - 1) / LSTM_SUM_ROWS) : d->dirs * gs;
  const long hs = (long) ((H + LSTM_SUM_ROWS - 1) / LSTM_SUM_ROWS);
  const long tasks = xs + d->dirs * (hs + 1);
  size_t nw = (size_t) d->dirs * ds;

#pragma omp parallel for if (nw * (size_t) tach_cpu_lstm_blocks (plan) >= TACH_CPU_PARALLEL_MIN)
  for (long task = 0; task < tasks; task++)
    {
      if (task < xs && plan->dwx_t)
        {
          size_t r0 = (size_t) task * LSTM_SUM_ROWS, r1 = MIN (r0 + LSTM_SUM_ROWS, I);

          sum_transposed (plan, 0, r0, r1, ldg, G, dw, I, ds);
          continue;
        }
      if (task < xs)
        {
          size_t dir = (size_t) (task / gs), r0 = (size_t) (task % gs) * LSTM_SUM_ROWS;

          sum_rows (plan, dir * gi, r0, MIN (r0 + LSTM_SUM_ROWS, G), I, dw + dir * ds + r0 * I);
          continue;
        }
      int dir = (int) ((task - xs) / (hs + 1)), strip = (int) ((task - xs) % (hs + 1));
      size_t off = (size_t) (part_dwh (plan, plan->dw_part, dir) - plan->dw_part);
      float *out = dw + dir * ds + gi;

      if (strip < hs)
        {
          size_t r0 = (size_t) strip * LSTM_SUM_ROWS, r1 = MIN (r0 + LSTM_SUM_ROWS, H);

          sum_transposed (plan, off, r0, r1, G, G, out, H, 0);
        }
      else
        sum_rows (plan, off + G * H, 0, 1, G, out + G * H);
    }
}

/* Every time step of samples [n0, n1) in every direction, backward, on
 * this thread, in blocks of plan->block samples.  Per direction and step
 * the pointwise pass writes the step's gate gradients into the block's
 * rows of this thread's dG block ([nb * T, dirs * 4H], the rows in the
 * data's order) and adds them to the bias gradient; dh_{t-1} = dG_t W_h
 * follows while they are in cache.  After both directions, dW_x = dG^T X
 * (or its transpose) over the block's steps and both directions in one
 * GEMM, dx = dG W_x in one, and dW_h^T = H_prev^T dG per direction and
 * step.
 * The weight gradient goes to the block's copy in plan->dw_part, laid out
 * for these products (part_dwh), which lstm_bwd adds up in block order
 * and transposes. */
static dnnl_status_t
backward_slice (const TachLstmPass *pass, int n0, int n1)
{
  const TachLstmPlan *plan = pass->plan;
  const TachLstmDesc *d = &plan->desc;
  int N = d->N, H = d->H, I = d->I, G = plan->G;
  size_t ldg = plan->ldg, ldh = plan->ldh, sr = step_rows (d);
  int tid = omp_get_thread_num ();
  float *dg = plan->dg_block + (size_t) tid * plan->block * d->T * ldg;
  const float *wx_all = d->dirs == 2 ? plan->wx_both : pass->w;
  dnnl_status_t st = dnnl_success;

  for (int b0 = n0; b0 < n1; b0 += plan->block)
    {
      int nb = MIN (plan->block, n1 - b0);
      float *part = plan->dw_part + (size_t) (b0 / plan->block) * d->dirs * plan->dir_stride;

      for (int dir = 0; dir < d->dirs; dir++)
        memset (part_dwh (plan, part, dir) + (size_t) G * H, 0, (size_t) G * sizeof (float));

      for (int dir = 0; dir < d->dirs; dir++)
        {
          const float *wh = pass->w + dir * plan->dir_stride + (size_t) G * I;
          float *db = part_dwh (plan, part, dir) + (size_t) G * H;
          float *dh = plan->dh + ((size_t) dir * N + b0) * H;
          float *dc = plan->dc + ((size_t) dir * N + b0) * H;

          for (int k = d->T - 1; k >= 0; k--)
            {
              int t = time_at (d, dir, k);
              int tp = k > 0 ? time_at (d, dir, k - 1) : t;
              const float *g_t = pass->gates + row_of (d, t, b0) * ldg + dir * G;
              const float *c_t = pass->cells + row_of (d, t, b0) * ldh + dir * H;
              const float *c_p = pass->cells + row_of (d, tp, b0) * ldh + dir * H;
              const float *dy_t = pass->dy + row_of (d, t, b0) * ldh + dir * H;
              /* The block's rows in the data's order: n * T + t or t * nb + n. */
              float *dg_t = dg + (d->time_major ? (size_t) t * nb : (size_t) t) * ldg + dir * G;
              gboolean last = k == d->T - 1;

              for (int n = 0; n < nb; n++)
                {
                  if (n + TACH_CPU_LSTM_PREFETCH_AHEAD < nb)
                    {
                      size_t a = (size_t) (n + TACH_CPU_LSTM_PREFETCH_AHEAD) * sr;

                      tach_cpu_lstm_prefetch (g_t + a * ldg, (size_t) G * sizeof (float), FALSE);
                      tach_cpu_lstm_prefetch (c_t + a * ldh, (size_t) H * sizeof (float), FALSE);
                      tach_cpu_lstm_prefetch (dy_t + a * ldh, (size_t) H * sizeof (float), FALSE);
                      if (k > 0)
                        tach_cpu_lstm_prefetch (c_p + a * ldh, (size_t) H * sizeof (float), FALSE);
                    }
                  tach_cpu_lstm_row_backward (H, g_t + n * sr * ldg, c_t + n * sr * ldh,
                                k > 0 ? c_p + n * sr * ldh : NULL, dy_t + n * sr * ldh,
                                last ? NULL : dh + (size_t) n * H, dc + (size_t) n * H, !last,
                                dg_t + n * sr * ldg, db);
                }
              if (k == 0)
                break;
              /* dh_{t-1} = dG_t W_h. */
              st = tach_cpu_sgemm_local (FALSE, FALSE, nb, H, G, 1.0f, dg_t, sr * ldg, wh, H,
                                         0.0f, dh, H);
              if (st != dnnl_success)
                return st;
            }
        }
      /* dW_x += dG^T X (or its transpose) and dx = dG W_x over the block,
       * both directions. */
      for (int t = 0; t < (d->time_major ? d->T : 1); t++)
        {
          size_t rows = d->time_major ? (size_t) nb : (size_t) nb * d->T;
          const float *dg_r = dg + (d->time_major ? (size_t) t * nb * ldg : 0);
          size_t xr = row_of (d, t, b0) * I;

          if (plan->repeat)
            st = t == 0 ? tach_cpu_lstm_repeat_dwx (pass, dg, b0, nb, part) : dnnl_success;
          else if (plan->dwx_t)
            st = tach_cpu_sgemm_local (TRUE, FALSE, I, ldg, rows, 1.0f, pass->x + xr, I, dg_r,
                                       ldg, t == 0 ? 0.0f : 1.0f, part, ldg);
          else
            st = tach_cpu_sgemm_local (TRUE, FALSE, ldg, I, rows, 1.0f, dg_r, ldg, pass->x + xr,
                                       I, t == 0 ? 0.0f : 1.0f, part, I);
          if (st == dnnl_success && d->need_dx)
            st = tach_cpu_sgemm_local (FALSE, FALSE, rows, I, ldg, 1.0f, dg_r, ldg, wx_all, I,
                                       0.0f, pass->dx + xr, I);
          if (st != dnnl_success)
            return st;
        }
      /* dW_h^T = H_prev^T dG per direction over the block, one product a
       * step that has a previous one: the step's rows of dG (T rows apart
       * batch-major, consecutive time-major) against the rows of y at
       * h_{t-1} (dir 0) or h_{t+1} (dir 1), read where they lie.  The first
       * step of each direction, with no previous h, adds nothing and is
       * left out: lstm-lm's 4 steps have 3 products of 100 x 400 x 128
       * where a copy of H_prev with its zero rows fed one of 100 x 400 x
       * 512 (one thread, AMD EPYC Zen 4: 276-285 us against 369-370 a
       * block, at AVX-512 and AVX2); the bilstm's 10 steps 9 of 40 x 160 x
       * 64, 69-72 us against 76-77. */
      for (int dir = 0; dir < d->dirs; dir++)
        {
          float *dwh_t = part_dwh (plan, part, dir);
          size_t lda = sr * ldh, ldb = d->time_major ? ldg : (size_t) d->T * ldg;
          gboolean first = TRUE;

          for (int k = 1; k < d->T; k++)
            {
              int t = time_at (d, dir, k), tp = time_at (d, dir, k - 1);
              const float *dg_t = dg + (d->time_major ? (size_t) t * nb : (size_t) t) * ldg
                                  + dir * G;

              st = tach_cpu_sgemm_local (TRUE, FALSE, H, G, nb, 1.0f,
                                         pass->y + row_of (d, tp, b0) * ldh + dir * H, lda,
                                         dg_t, ldb, first ? 0.0f : 1.0f, dwh_t, G);
              if (st != dnnl_success)
                return st;
              first = FALSE;
            }
          if (first)
            memset (dwh_t, 0, (size_t) G * H * sizeof (float));
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
          if (!tach_cpu_lstm_sgemm (be, 'N', 'N', N, H, G, 1.0f, dg_t, sr * ldg, wh, H, 0.0f,
                                    dh, H))
            return FALSE;
          if (!d->time_major
              && !tach_cpu_lstm_sgemm (be, 'T', 'N', G, H, N, 1.0f, dg_t, sr * ldg,
                                       y + row_of (d, tp, 0) * ldh + dir * H, sr * ldh, 1.0f,
                                       dwh, H))
            return FALSE;
        }

      /* Time-major, h_{t-1} of every step but the first is one block of
       * rows shifted by one step (N rows) from the gate gradients. */
      if (d->time_major && d->T > 1)
        {
          const float *dg_from = plan->dgates + (dir == 0 ? (size_t) N * ldg : 0) + dir * G;
          const float *h_from = y + (dir == 0 ? 0 : (size_t) N * ldh) + dir * H;

          if (!tach_cpu_lstm_sgemm (be, 'T', 'N', G, H, (size_t) (d->T - 1) * N, 1.0f, dg_from,
                                    ldg, h_from, ldh, 0.0f, dwh, H))
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
  size_t ldg = plan->ldg;
  const float *gates = reserve;
  const float *cells;

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
      TachLstmPass pass = { .plan = plan, .x = x, .w = w, .y = y, .dy = dy,
                        .gates = (float *) gates, .cells = (float *) cells, .dx = dx,
                        .dw = dw };
      if (d->dirs == 2)
        tach_cpu_lstm_pack_wx_both (plan, w);

      if (tach_cpu_lstm_run_slices (be, &pass, backward_slice))
        sum_parts (plan, dw);
      return;
    }
  if (!backward_steps (be, plan, w, y, dy, gates, cells, dw))
    return;

  /* dW_x = dG^T X over all time steps, both directions in one GEMM (into
   * wx_both, then to each direction's block): one product of 2 * 4H rows
   * runs about a fifth faster than two of 4H (W1 on two cores). */
  if (d->dirs == 2)
    {
      size_t gi = (size_t) G * I;

      if (!tach_cpu_lstm_sgemm (be, 'T', 'N', 2 * G, I, plan->rows, 1.0f, plan->dgates, ldg, x, I,
                                0.0f, plan->wx_both, I))
        return;
      for (int dir = 0; dir < 2; dir++)
        memcpy (dw + dir * plan->dir_stride, plan->wx_both + dir * gi, gi * sizeof (float));
    }
  else if (!tach_cpu_lstm_sgemm (be, 'T', 'N', G, I, plan->rows, 1.0f, plan->dgates, ldg, x, I,
                                 0.0f, dw, I))
    return;

  for (int dir = 0; dir < d->dirs; dir++)
    {
      float *dwx = dw + dir * plan->dir_stride;
      float *db = dwx + (size_t) G * (I + H);
      const float *dg = plan->dgates + dir * G;

      /* db = 1^T dG in one product (dW_h is summed in backward_steps). */
      if (!tach_cpu_lstm_sgemm (be, 'N', 'N', 1, G, plan->rows, 1.0f, plan->ones, plan->rows, dg,
                                ldg, 0.0f, db, G))
        return;
      if (d->need_dx
          && !tach_cpu_lstm_sgemm (be, 'N', 'N', plan->rows, I, G, 1.0f, dg, ldg,
                                   w + dir * plan->dir_stride, I, dir == 0 ? 0.0f : 1.0f, dx, I))
        return;
    }
}
