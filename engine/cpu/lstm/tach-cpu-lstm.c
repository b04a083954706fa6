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
 * of its own samples with no barrier between steps, where a pooled GEMM per
 * step would wake and join the pool 2T times per pass.  A slice runs in
 * blocks of LSTM_BLOCK samples whose gates, cell states and gate gradients
 * over all steps stay in L2 (W1: 64 samples, 0.8 MB of gates): forward,
 * the block's input side in one GEMM (every step, both directions), then
 * per step the recurrent GEMM and the pointwise pass; backward, per step
 * the pointwise pass into the block's gate gradients (the bias gradient
 * summed beside the math) and dh_{t-1}, then over the block's steps
 * dW_x += dG^T X (and dx) for both directions in one GEMM, and dW_h +=
 * dG^T H_prev per step from the block's gate gradients, still in L2, and
 * y's rows as they lie (tach-cpu-lstm-bwd.c).  So no pass over the whole sequence's gates
 * or gate gradients is left (13 MB each for W1, which no cache holds), and
 * the products that carry most of the FLOPs run on 640 rows rather than
 * per step on strided rows fetched from memory (W1, one thread, loaded
 * Xeon: the input side 0.87x, dW_x 0.78x their per-step time); each block sums into its own copy of the weight gradient, the
 * copies added in block order at the end, and the
 * slices are whole blocks, so that the number of threads changes no bit
 * of the result.
 *
 * Rows: x, y, the gates and the cell states share one row order, that of
 * the data: row (t, n) is t*N + n time-major and n*T + t batch-major, so
 * the rows of one time step are 1 or T rows apart, which the GEMMs take
 * as their leading dimension.  The reserve space holds the activated gates
 * [T*N, dirs*4H] and the cell states [T*N, dirs*H].  The pointwise math
 * of one row is in tach-cpu-lstm-rows.c.
 *
 * The backward pass is in tach-cpu-lstm-bwd.c.
 *
 * Threads: the engine thread; the loops run on the backend's OpenMP pool.
 */
#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-cpu-lstm-private.h"
#include "tach-error-private.h"

/* Batches of at least this many samples run in slices, whatever the
 * number of threads: sliced and plain passes sum the weight gradient in
 * another order, so the choice must not depend on --threads (this was 32
 * per thread: on two threads, the same 64). */
#define LSTM_SLICE_MIN 64

/* Samples per block of a slice: LSTM_BLOCK, doubled while the block's
 * gates over all its steps stay within LSTM_BLOCK_BYTES and the batch
 * keeps two blocks, from the shape alone (the blocks' copies of the
 * weight gradient are added in block order, so the block sets the bits;
 * --threads must not).  W1 (H 40, 12.8 KB of gates a sample) on the Xeon,
 * one thread: 64 and 96 alike, 512 (the whole slice in one block) 10%
 * slower; below 64 the per-step products (64 x 160 x 40) fall under
 * TACH_CPU_SMALL_GEMM to the kernels made for generation's few rows, 1.5x
 * slower in all.  W2's training (H 100, T 4: 6.4 KB a sample) takes 128,
 * its per-step products twice as tall: on the AMD EPYC of bench/README.md,
 * two threads, five interleaved pairs, 2-15% faster than 64 (median 5%),
 * W1 unchanged. */
#define LSTM_BLOCK 64
#define LSTM_BLOCK_BYTES (800u << 10)

static int
block_for (const TachLstmDesc *d)
{
  size_t sample = (size_t) d->T * d->dirs * 4 * d->H * sizeof (float);
  int block = LSTM_BLOCK;

  while ((size_t) 2 * block * sample <= LSTM_BLOCK_BYTES && 4 * block <= d->N)
    block *= 2;
  return block;
}

/* ------------------------------------------------------------- planning */

void
tach_cpu_lstm_plan_free (TachBackend *be, TachLstmPlan *plan)
{
  if (plan == NULL)
    return;
  tach_cpu_lstm_frozen_settle (plan);
  tach_cpu_mem_free (be, plan->work);
  tach_cpu_mem_free (be, plan->dgates);
  tach_cpu_mem_free (be, plan->dh);
  tach_cpu_mem_free (be, plan->dc);
  tach_cpu_mem_free (be, plan->ones);
  tach_cpu_mem_free (be, plan->wx_both);
  tach_cpu_mem_free (be, plan->wx_k);
  tach_cpu_mem_free (be, plan->wh_k);
  tach_cpu_mem_free (be, plan->dg_block);
  tach_cpu_mem_free (be, plan->dw_part);
  tach_cpu_mem_free (be, plan->dw_sum);
  tach_cpu_mem_free (be, plan->rep_map);
  tach_cpu_mem_free (be, plan->rep_first);
  tach_cpu_mem_free (be, plan->rep_count);
  tach_cpu_mem_free (be, plan->rep_x);
  tach_cpu_mem_free (be, plan->rep_p);
  tach_cpu_mem_free (be, plan->rep_slot);
  tach_cpu_mem_free (be, plan->packed);
  tach_cpu_mem_free (be, plan->memo_x);
  tach_cpu_mem_free (be, plan->memo_g);
  tach_cpu_mem_free (be, plan->memo_start);
  tach_cpu_mem_free (be, plan->memo_start_ok);
  tach_cpu_mem_free (be, plan->memo_slot);
  tach_cpu_mem_free (be, plan->win_x);
  tach_cpu_mem_free (be, plan->win_h);
  tach_cpu_mem_free (be, plan->win_c);
  tach_cpu_mem_free (be, plan->ahead_h);
  tach_cpu_mem_free (be, plan->ahead_g);
  tach_cpu_mem_free (be, plan->span_packed);
  tach_cpu_mem_free (be, plan->span_g);
  g_free (plan);
}

size_t
tach_cpu_lstm_reserve_floats (const TachLstmPlan *plan)
{
  return plan->rows * ((size_t) plan->ldg + plan->ldh);
}

TachLstmPlan *
tach_cpu_lstm_plan_build (TachBackend *be, const TachLstmDesc *desc)
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
                         W_("the CPU backend's LSTM runs in fp32 only: use {precision=fp32}"));
      return NULL;
    }

  plan = g_new0 (TachLstmPlan, 1);
  plan->desc = *desc;
  plan->dir_stride = (size_t) 4 * d->H * ((size_t) d->I + d->H + 1);
  plan->rows = (size_t) d->T * d->N;
  plan->G = 4 * d->H;
  plan->ldg = d->dirs * plan->G;
  plan->ldh = d->dirs * d->H;

  plan->sliced = d->N >= LSTM_SLICE_MIN;
  plan->can_split = !plan->sliced && tach_cpu_lstm_split_wanted (be, d);
  plan->block = plan->sliced ? block_for (d) : 0;
  /* dW_x as its transpose where dG has at least twice X's columns, as
   * dW_h always is (tach-cpu-lstm-bwd.c: part_dwh, with the figures). */
  plan->dwx_t = plan->ldg >= 2 * d->I;
  if (d->dirs == 2)
    plan->wx_both = tach_cpu_mem_alloc (be, (size_t) 2 * plan->G * d->I * sizeof (float));
  if (plan->sliced)
    {
      plan->wx_k = tach_cpu_mem_alloc (be, (size_t) d->I * plan->ldg * sizeof (float));
      plan->wh_k = tach_cpu_mem_alloc (be, (size_t) d->dirs * d->H * plan->G * sizeof (float));
    }
  if (d->training && plan->sliced)
    {
      int th = (int) MAX (be->threads, 1);

      plan->dg_block = tach_cpu_mem_alloc (be, (size_t) th * plan->block * d->T * plan->ldg
                                                 * sizeof (float));
      plan->dw_part = tach_cpu_mem_alloc (be, (size_t) tach_cpu_lstm_blocks (plan) * d->dirs
                                                * plan->dir_stride * sizeof (float));
      plan->dw_sum = tach_cpu_mem_alloc (be, (size_t) d->dirs * plan->dir_stride * sizeof (float));
      plan->repeat = d->rows_repeat;
      if (plan->repeat)
        tach_cpu_lstm_repeat_alloc (be, plan);
    }
  if (!d->training)
    plan->work = tach_cpu_mem_alloc (be, tach_cpu_lstm_reserve_floats (plan) * sizeof (float));
  else
    {
      if (!plan->sliced)
        plan->dgates = tach_cpu_mem_alloc (be, plan->rows * plan->ldg * sizeof (float));
      plan->dh = tach_cpu_mem_alloc (be, (size_t) d->dirs * d->N * d->H * sizeof (float));
      plan->dc = tach_cpu_mem_alloc (be, (size_t) d->dirs * d->N * d->H * sizeof (float));
      if (!plan->sliced)
        plan->ones = tach_cpu_mem_alloc (be, plan->rows * sizeof (float));
      if (plan->ones != NULL)
        for (size_t r = 0; r < plan->rows; r++)
          plan->ones[r] = 1.0f;
    }
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

/* Runs @func on slices of the batch, one per thread of the pool (at most
 * the threads the backend runs on now, every one called, an empty slice
 * too): whole blocks of plan->block samples, the same blocks whatever the
 * number of threads, so that it changes no result.  Only the engine thread records errors, so
 * the threads hand back a status. */
gboolean
tach_cpu_lstm_run_slices (TachBackend *be, const TachLstmPass *pass, TachLstmSliceFunc func)
{
  int N = pass->plan->desc.N, block = pass->plan->block;
  int blocks = tach_cpu_lstm_blocks (pass->plan);
  dnnl_status_t status = dnnl_success;

  tach_cpu_bind_threads (be);
#pragma omp parallel
  {
    int nth = omp_get_num_threads (), tid = omp_get_thread_num ();
    int b0 = (int) ((gint64) blocks * tid / nth), b1 = (int) ((gint64) blocks * (tid + 1) / nth);
    dnnl_status_t st = func (pass, MIN (b0 * block, N), MIN (b1 * block, N));

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

/* The rows of block @b's samples [b0, b0 + nb) at every time step: its
 * input GEMM, both directions at once, into the block's gates.  Batch-major
 * they are one run of nb * T rows; time-major, one run of nb rows per step. */
static dnnl_status_t
block_input_gemm (const TachLstmPass *pass, const float *wx, int b0, int nb)
{
  const TachLstmPlan *plan = pass->plan;
  const TachLstmDesc *d = &plan->desc;
  int I = d->I;
  size_t ldg = plan->ldg;

  if (!d->time_major)
    return tach_cpu_sgemm_local (FALSE, FALSE, (size_t) nb * d->T, ldg, I, 1.0f,
                                 pass->x + row_of (d, 0, b0) * I, I, wx, ldg, 0.0f,
                                 pass->gates + row_of (d, 0, b0) * ldg, ldg);
  for (int t = 0; t < d->T; t++)
    {
      dnnl_status_t st = tach_cpu_sgemm_local (FALSE, FALSE, nb, ldg, I, 1.0f,
                                               pass->x + row_of (d, t, b0) * I, I, wx, ldg, 0.0f,
                                               pass->gates + row_of (d, t, b0) * ldg, ldg);
      if (st != dnnl_success)
        return st;
    }
  return dnnl_success;
}

/* The weights of a sliced forward, K-major: every direction's W_x into
 * plan->wx_k [I, dirs * 4H] and each one's W_h into plan->wh_k [H, 4H],
 * so that the input side and the recurrent products read B untransposed
 * ('N', 'N'), which dnnl_sgemm runs 4-7% faster than the weights' own
 * rows as B^T ('N', 'T') at these sizes (one thread on the AMD EPYC of
 * bench/README.md: W1's block input side 640 x 320 x 300, 108.8 against
 * 115.3-116.8 GFLOP/s; its recurrent 64 x 160 x 40, 98.2 against 104.9;
 * W2's 128 x 400 x 100, 105.8-109.9 against 109.9-113.7).  Copied per
 * pass (0.5 MB for W1) by every thread of the pool, eight rows of W at a
 * time: element by element on the engine thread alone, W2's copy was 7% of
 * that thread's time in training (about 70 us a step on the Intel Xeon of
 * bench/README.md), the other thread waiting. */
static void
pack_k (TachBackend *be, TachLstmPlan *plan, const float *w)
{
  const size_t I = (size_t) plan->desc.I, H = (size_t) plan->desc.H, G = (size_t) plan->G;
  const size_t strips = (G + 7) / 8;
  const long tasks = (long) (2 * strips * (size_t) plan->desc.dirs);

  tach_cpu_bind_threads (be);
#pragma omp parallel for schedule (static)
  for (long task = 0; task < tasks; task++)
    {
      size_t dir = (size_t) task / (2 * strips), m = (size_t) task / strips % 2;
      size_t r0 = (size_t) task % strips * 8, r1 = MIN (r0 + 8, G);
      const float *wx = w + dir * plan->dir_stride;

      if (m == 0)
        tach_cpu_transpose_rows (r0, r1, I, wx, I, plan->wx_k + dir * G, (size_t) plan->ldg);
      else
        tach_cpu_transpose_rows (r0, r1, H, wx + G * I, H, plan->wh_k + dir * H * G, G);
    }
}

/* Every time step of samples [n0, n1) in every direction, on this thread,
 * in blocks of plan->block samples whose gates, cell states and outputs
 * stay in L2: the block's input side in one GEMM (every step, both
 * directions), then per direction and step the recurrent h_{t-1} W_h^T
 * added to it and the pointwise pass. */
static dnnl_status_t
forward_slice (const TachLstmPass *pass, int n0, int n1)
{
  const TachLstmPlan *plan = pass->plan;
  const TachLstmDesc *d = &plan->desc;
  int H = d->H, I = d->I, G = plan->G;
  size_t ldg = plan->ldg, ldh = plan->ldh, sr = step_rows (d);
  for (int b0 = n0; b0 < n1; b0 += plan->block)
    {
      int nb = MIN (plan->block, n1 - b0);
      dnnl_status_t st = plan->repeat
                           ? tach_cpu_lstm_repeat_input_side (pass, plan->wx_k, b0, nb)
                           : block_input_gemm (pass, plan->wx_k, b0, nb);

      if (st != dnnl_success)
        return st;
      for (int dir = 0; dir < d->dirs; dir++)
        {
          const float *wh_k = plan->wh_k + (size_t) dir * H * G;
          const float *b = pass->w + dir * plan->dir_stride + (size_t) G * (I + H);

          for (int k = 0; k < d->T; k++)
            {
              int t = time_at (d, dir, k);
              int tp = k > 0 ? time_at (d, dir, k - 1) : t;
              float *g_t = pass->gates + row_of (d, t, b0) * ldg + dir * G;
              float *c_t = pass->cells + row_of (d, t, b0) * ldh + dir * H;
              float *h_t = pass->h + row_of (d, t, b0) * ldh + dir * H;
              const float *c_p = pass->cells + row_of (d, tp, b0) * ldh + dir * H;
              const float *h_p = pass->h + row_of (d, tp, b0) * ldh + dir * H;

              if (k > 0)
                {
                  st = tach_cpu_sgemm_local (FALSE, FALSE, nb, G, H, 1.0f, h_p, sr * ldh, wh_k,
                                             G, 1.0f, g_t, sr * ldg);
                  if (st != dnnl_success)
                    return st;
                }
              for (int n = 0; n < nb; n++)
                {
                  if (n + TACH_CPU_LSTM_PREFETCH_AHEAD < nb)
                    {
                      size_t a = (size_t) (n + TACH_CPU_LSTM_PREFETCH_AHEAD) * sr;

                      tach_cpu_lstm_prefetch (g_t + a * ldg, (size_t) G * sizeof (float), FALSE);
                      if (k > 0)
                        tach_cpu_lstm_prefetch (c_p + a * ldh, (size_t) H * sizeof (float), FALSE);
                    }
                  tach_cpu_lstm_row_forward (H, g_t + n * sr * ldg, b,
                                           k > 0 ? c_p + n * sr * ldh : NULL, c_t + n * sr * ldh,
                                             h_t + n * sr * ldh);
                }
            }
        }
    }
  return dnnl_success;
}

/* The input side of every time step and direction: one GEMM, the two
 * directions' W_x packed side by side (96 K floats for W1, copied once per
 * pass) so that their gates come out of the same product. */
void
tach_cpu_lstm_pack_wx_both (TachLstmPlan *plan, const float *w)
{
  size_t gi = (size_t) plan->G * plan->desc.I;

  for (int dir = 0; dir < 2; dir++)
    memcpy (plan->wx_both + dir * gi, w + dir * plan->dir_stride, gi * sizeof (float));
}

static gboolean
input_gemm (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w, float *gates)
{
  const TachLstmDesc *d = &plan->desc;

  if (d->dirs == 1)
    return tach_cpu_lstm_sgemm (be, 'N', 'T', plan->rows, plan->G, d->I, 1.0f, x, d->I, w, d->I,
                                0.0f, gates, plan->ldg);
  tach_cpu_lstm_pack_wx_both (plan, w);
  return tach_cpu_lstm_sgemm (be, 'N', 'T', plan->rows, plan->ldg, d->I, 1.0f, x, d->I,
                              plan->wx_both, d->I, 0.0f, gates, plan->ldg);
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

  /* The split's spans on one thread would be the serial pass, slower:
   * while the machine leaves the backend one, the serial pass runs (the
   * same bits). */
  if (plan->gemm_mode == TACH_CPU_GEMM_SPLIT && tach_cpu_threads_now (be) >= 2)
    {
      if (tach_cpu_lstm_frozen_wanted (be, plan, w))
        tach_cpu_lstm_split_frozen_forward (be, plan, x, w, y, gates, cells);
      else
        tach_cpu_lstm_split_forward (be, d, x, w, y, gates, cells);
      return;
    }
  if (tach_cpu_lstm_frozen_wanted (be, plan, w))
    {
      tach_cpu_lstm_frozen_forward (be, plan, x, w, y, gates, cells);
      return;
    }
  if (plan->sliced)
    {
      TachLstmPass pass = { .plan = plan, .x = x, .w = w, .h = y, .gates = gates, .cells = cells };

      pack_k (be, plan, w);
      tach_cpu_lstm_run_slices (be, &pass, forward_slice);
      return;
    }
  if (!input_gemm (be, plan, x, w, gates))
    return;

  for (int dir = 0; dir < d->dirs; dir++)
    {
      const float *wh = w + dir * plan->dir_stride + (size_t) G * I;
      const float *b = wh + (size_t) G * H;

      for (int k = 0; k < d->T; k++)
        {
          TachLstmStep s = forward_step (d, dir, k, gates, cells, y);
          float *g_t = s.g, *c_t = s.c, *h_t = s.h;
          const float *c_p = s.c_prev, *h_p = s.h_prev;

          if (k > 0 && !tach_cpu_lstm_sgemm (be, 'N', 'T', N, G, H, 1.0f, h_p, sr * ldh, wh, H,
                                             1.0f, g_t, sr * ldg))
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
