/* tach-cpu-lstm-frozen.c: the inference LSTM of a few streams whose
 * weights are frozen (tach_backend_freeze: a generation loop), on copies
 * of its weights packed for the small products and with the input side of
 * rows already seen kept.
 *
 * At batch 1 every product is a matrix-vector product that waits on
 * moving the weights from L2 (bench/README.md, the bounds).  Here:
 * - W_x and W_h are packed once per weight block (tach_cpu_pack_nt:
 *   blocks of a vector's rows, 16 or 8, read as one sequential stream of
 *   aligned vectors), so that no load of the products straddles cache
 *   lines;
 * - the input side x_t W_x^T of each row of x depends on that row alone,
 *   so it is kept for every row seen on these weights (up to MEMO_BYTES of
 *   rows, found by a hash of the row's bits and compared bit for bit) and
 *   copied instead of W_x being read again: a generation loop shifts its
 *   context by one token per call, so all rows but the newest were in the
 *   last call's input, and the newest is a token's embedding, seen before
 *   once the vocabulary's tokens have come up (554 of them for lstm-lm);
 * - the same shift means that the next calls' windows start at this
 *   call's later rows: each call advances them all by its newest row, so
 *   that a call runs one step (forward_windows), not T; and the newest
 *   window's first step, from a zero state, depends on its row alone, so
 *   its state is kept beside the row's input side (generation of one
 *   stream on the Intel Xeon model 167, four interleaved pairs: AVX2
 *   111-114 k -> 114-116 k tokens/s, AVX-512 127-132 k -> 132-140 k);
 * - the windows' next recurrent products depend only on the states this
 *   call leaves, not on the token the model draws from it: with two
 *   threads or more, the backend's helper thread (tach-cpu-ahead.c) runs
 *   them while the engine thread runs the output layer and the sampling,
 *   and the next call adds its input side to them (generation of one
 *   stream, Intel Xeon model 167, --threads 2, interleaved: AVX2 122-129 k
 *   -> 159-171 k tokens/s, AVX-512 141-148 k -> 180-189 k).  On one core they would only take
 *   turns: the split of the hidden units between the cores was measured
 *   slower (bench/README.md), as the fork and the exchange of states come
 *   every step there, where here one handoff each way overlaps.
 * The packed kernels give each output the bits of tach_cpu_sgemm_local's
 * small kernels, so the results are those of the plain pass, which runs
 * its products on the small kernels too (tach_cpu_lstm_forward_small) on
 * every GEMM path.
 *
 * Threads: the engine thread.
 */
#include <string.h>

#include "tach-cpu-lstm-private.h"

gboolean
tach_cpu_lstm_frozen_wanted (TachBackend *be, const TachLstmPlan *plan, const float *w)
{
  const TachLstmDesc *d = &plan->desc;

  /* An uncached plan (call-setup=per-call) lives for one call: packing
   * would cost it more than it saves. */
  if (d->training || d->uncached || plan->sliced || d->N > TACH_CPU_LSTM_SPLIT_MAX_N
      || !tach_cpu_packed_nt_usable ((size_t) plan->G)
      || tach_cpu_frozen_epoch (be, w, d->dirs * plan->dir_stride * sizeof (float)) == 0)
    return FALSE;
  /* The plain pass on the small kernels, which every GEMM path gives
   * these sizes. */
  return tach_cpu_lstm_forward_small (d);
}

/* Floats of one direction's packed W_x, then its packed W_h. */
static size_t
packed_wx_floats (const TachLstmPlan *plan)
{
  return tach_cpu_packed_nt_floats ((size_t) plan->G, (size_t) plan->desc.I);
}

static size_t
packed_dir_floats (const TachLstmPlan *plan)
{
  return packed_wx_floats (plan)
         + tach_cpu_packed_nt_floats ((size_t) plan->G, (size_t) plan->desc.H);
}

/* The most bytes of input rows and their input side kept (2 MiB: 1048
 * rows of lstm-lm's 100 inputs and 400 gates); at least a call's rows. */
#define MEMO_BYTES (2u << 20)

static void
memo_forget (TachLstmPlan *plan)
{
  plan->memo_rows = 0;
  if (plan->memo_slot != NULL)
    memset (plan->memo_slot, 0, plan->memo_slots * sizeof (guint32));
}

void
tach_cpu_lstm_frozen_settle (TachLstmPlan *plan)
{
  if (plan->ahead_be != NULL)
    tach_cpu_ahead_cancel (plan->ahead_be, plan);
  plan->ahead_be = NULL;
  plan->ahead_ready = FALSE;
}

/* The products posted ahead will not be taken: dropped if the helper has
 * not started them (ahead_be stays: a started job may still read). */
static void
ahead_drop (TachLstmPlan *plan)
{
  if (plan->ahead_ready)
    tach_cpu_ahead_drop (plan->ahead_be, plan);
  plan->ahead_ready = FALSE;
}

void
tach_cpu_lstm_frozen_forget (TachLstmPlan *plan)
{
  memo_forget (plan);
  plan->win_kept = FALSE;
  ahead_drop (plan);
}

/* Whether the frozen pass of @d may run as windows (forward_windows): one
 * direction, more than one step. */
static gboolean
has_windows (const TachLstmDesc *d)
{
  return d->dirs == 1 && d->T > 1;
}

gboolean
tach_cpu_lstm_frozen_runs_ahead (TachBackend *be, const TachLstmPlan *plan)
{
  return has_windows (&plan->desc) && tach_cpu_ahead_running (be);
}

gboolean
tach_cpu_lstm_frozen_pack (TachBackend *be, TachLstmPlan *plan, const float *w)
{
  const TachLstmDesc *d = &plan->desc;
  size_t G = (size_t) plan->G;
  guint epoch = tach_cpu_frozen_epoch (be, w, d->dirs * plan->dir_stride * sizeof (float));

  if (plan->packed != NULL && plan->packed_for == w && plan->packed_epoch == epoch)
    return TRUE;
  /* New copies: no job ahead may be reading the old ones. */
  tach_cpu_lstm_frozen_settle (plan);
  if (plan->packed == NULL)
    {
      gboolean windows = has_windows (d);
      size_t row_bytes = ((size_t) d->I + plan->ldg + (windows ? 2 * (size_t) d->H : 0))
                         * sizeof (float) + (windows ? sizeof (guint8) : 0);

      plan->memo_cap = MAX (plan->rows, MEMO_BYTES / row_bytes);
      plan->memo_slots = 1;
      while (plan->memo_slots < 2 * plan->memo_cap)
        plan->memo_slots *= 2;
      plan->packed = tach_cpu_mem_alloc (be, d->dirs * packed_dir_floats (plan) * sizeof (float));
      plan->memo_x = tach_cpu_mem_alloc (be, plan->memo_cap * d->I * sizeof (float));
      plan->memo_g = tach_cpu_mem_alloc (be, plan->memo_cap * plan->ldg * sizeof (float));
      plan->memo_slot = tach_cpu_mem_alloc (be, plan->memo_slots * sizeof (guint32));
      if (windows)
        {
          plan->memo_start = tach_cpu_mem_alloc (be, plan->memo_cap * 2 * d->H * sizeof (float));
          plan->memo_start_ok = tach_cpu_mem_alloc (be, plan->memo_cap);
          plan->ahead_h = tach_cpu_mem_alloc (be, (size_t) d->N * (d->T - 1) * d->H
                                                  * sizeof (float));
          plan->ahead_g = tach_cpu_mem_alloc (be, (size_t) d->N * (d->T - 1) * G
                                                  * sizeof (float));
        }
      plan->win_x = tach_cpu_mem_alloc (be, plan->rows * d->I * sizeof (float));
      plan->win_h = tach_cpu_mem_alloc (be, plan->rows * d->T * d->H * sizeof (float));
      plan->win_c = tach_cpu_mem_alloc (be, plan->rows * d->T * d->H * sizeof (float));
      if (!tach_backend_ok (be))
        return FALSE;
      /* Defined bits for the first call's comparison (window_shifted). */
      memset (plan->win_x, 0, plan->rows * d->I * sizeof (float));
    }
  for (int dir = 0; dir < d->dirs; dir++)
    {
      const float *wx = w + dir * plan->dir_stride;
      float *px = plan->packed + dir * packed_dir_floats (plan);

      tach_cpu_pack_nt (G, (size_t) d->I, wx, (size_t) d->I, px);
      tach_cpu_pack_nt (G, (size_t) d->H, wx + G * d->I, (size_t) d->H,
                        px + packed_wx_floats (plan));
    }
  plan->packed_for = w;
  plan->packed_epoch = epoch;
  plan->spans_stale = TRUE;
  tach_cpu_lstm_frozen_forget (plan);
  return TRUE;
}

/* A hash of the @n floats' bits: FNV-1a over 32-bit words in eight
 * independent lanes (one chain of multiplies would take ~1600 cycles for
 * a generation step's four rows of 100), then the lanes folded. */
guint32
tach_cpu_lstm_row_hash (const float *x, size_t n)
{
  guint32 lane[8] = { 2166136261u, 2166136261u, 2166136261u, 2166136261u,
                      2166136261u, 2166136261u, 2166136261u, 2166136261u };
  guint32 h = (guint32) n, u[8];
  size_t i = 0;

  for (; i + 8 <= n; i += 8)
    {
      memcpy (u, x + i, sizeof u);
      for (guint l = 0; l < 8; l++)
        lane[l] = (lane[l] ^ u[l]) * 16777619u;
    }
  for (; i < n; i++)
    {
      memcpy (u, x + i, sizeof u[0]);
      lane[i % 8] = (lane[i % 8] ^ u[0]) * 16777619u;
    }
  for (guint l = 0; l < 8; l++)
    h = (h ^ lane[l]) * 16777619u;
  return h ^ (h >> 15);
}

/* The slot of row @x: the one that holds it, or the free one where it
 * goes. */
static size_t
memo_slot_of (const TachLstmPlan *plan, const float *x)
{
  size_t I = (size_t) plan->desc.I, mask = plan->memo_slots - 1;
  size_t slot = tach_cpu_lstm_row_hash (x, I) & mask;

  while (plan->memo_slot[slot] != 0
         && memcmp (plan->memo_x + (plan->memo_slot[slot] - 1) * I, x, I * sizeof (float)) != 0)
    slot = (slot + 1) & mask;
  return slot;
}

/* The input side of row @xr into @gr: a copy if the row is kept, else
 * computed on the packed W_x and kept (all forgotten first when the
 * table is full).  Returns the row's index in the table. */
static size_t
input_row (TachLstmPlan *plan, const float *xr, float *gr)
{
  const TachLstmDesc *d = &plan->desc;
  size_t I = (size_t) d->I, ldg = (size_t) plan->ldg;
  size_t slot = memo_slot_of (plan, xr);

  if (plan->memo_slot[slot] != 0)
    {
      memcpy (gr, plan->memo_g + (plan->memo_slot[slot] - 1) * ldg, ldg * sizeof (float));
      return plan->memo_slot[slot] - 1;
    }
  for (int dir = 0; dir < d->dirs; dir++)
    tach_cpu_packed_nt (1, (size_t) plan->G, I, 1.0f, xr, I,
                        plan->packed + dir * packed_dir_floats (plan), 0.0f, gr + dir * plan->G,
                        ldg);
  if (plan->memo_rows == plan->memo_cap)
    {
      memo_forget (plan);
      slot = memo_slot_of (plan, xr);
    }
  memcpy (plan->memo_x + plan->memo_rows * I, xr, I * sizeof (float));
  memcpy (plan->memo_g + plan->memo_rows * ldg, gr, ldg * sizeof (float));
  if (plan->memo_start_ok != NULL)
    plan->memo_start_ok[plan->memo_rows] = FALSE;
  plan->memo_slot[slot] = (guint32) ++plan->memo_rows;
  return plan->memo_rows - 1;
}

void
tach_cpu_lstm_frozen_input_side (TachLstmPlan *plan, const float *x, float *gates)
{
  for (size_t r = 0; r < plan->rows; r++)
    input_row (plan, x + r * plan->desc.I, gates + r * plan->ldg);
}

/* Whether every stream's rows 0..T-2 of @x are its rows 1..T-1 of the
 * last call's (plan->win_x): a generation loop's context, shifted by the
 * token it drew. */
static gboolean
window_shifted (const TachLstmPlan *plan, const float *x)
{
  const TachLstmDesc *d = &plan->desc;
  size_t I = (size_t) d->I;

  for (int n = 0; n < d->N; n++)
    for (int t = 0; t + 1 < d->T; t++)
      if (memcmp (x + row_of (d, t, n) * I, plan->win_x + ((size_t) n * d->T + t + 1) * I,
                  I * sizeof (float))
          != 0)
        return FALSE;
  return TRUE;
}

/* How long a call waits for products the helper started but has not
 * finished (it was preempted, say) before it computes them itself: a
 * few times the products' time (3 us at AVX2 for lstm-lm's windows). */
#define AHEAD_WAIT_US 20

/* The next call's recurrent products of every stream's windows (the
 * helper's job, tach-cpu-ahead.c): those forward_windows runs on resuming,
 * from the copy of the states the call that posted it left (ahead_h),
 * without the input side (beta 0).  forward_windows adds that, which
 * gives the bits of the product onto it: the packed kernel's output is
 * alpha sum + beta C, with alpha and beta 1 sum + C. */
static void
ahead_products (gpointer data)
{
  TachLstmPlan *plan = data;
  const TachLstmDesc *d = &plan->desc;
  const size_t T = (size_t) d->T, H = (size_t) d->H, G = (size_t) plan->G;
  const float *pwh = plan->packed + packed_wx_floats (plan);

  for (int n = 0; n < d->N; n++)
    tach_cpu_packed_nt (T - 1, G, H, 1.0f, plan->ahead_h + n * (T - 1) * H, H, pwh, 0.0f,
                        plan->ahead_g + n * (T - 1) * G, G);
}

/* Posts the next call's products (ahead_products): every stream's states
 * that a resuming call multiplies, copied, so that the engine thread may
 * go on with the windows. */
static void
ahead_post (TachBackend *be, TachLstmPlan *plan)
{
  const TachLstmDesc *d = &plan->desc;
  const size_t T = (size_t) d->T, H = (size_t) d->H, win = T * H;

  if (!tach_cpu_ahead_can_post (be))
    return;
  for (int n = 0; n < d->N; n++)
    for (size_t j = 0; j + 1 < T; j++)
      memcpy (plan->ahead_h + (n * (T - 1) + j) * H,
              plan->win_h + n * T * win + j * win + (T - 2 - j) * H, H * sizeof (float));
  tach_cpu_ahead_post (be, ahead_products, plan);
  plan->ahead_ready = TRUE;
  plan->ahead_be = be;
}

/* One direction's pass as windows: each stream's window of this call
 * (window 0) and the windows that start at its later rows (window j at
 * row j), which the next calls of a generation loop will be, the context
 * shifted by a token each call.  Window j's state after its step s is
 * plan->win_h/win_c [n][j][s]; the states of window j + 1 become window
 * j's for the next call.  So a call that resumes (plan->win_kept and
 * the rows shifted) runs one step: the newest row into every window at
 * once, its input side looked up once and the recurrent products of the
 * windows in one call of the packed kernel (rows of h_prev (T - 1) * H
 * apart), where the plain pass runs T steps, each reading W_h from L2.
 * Every state gets the bits of the plain pass: the same input side, the
 * product of the same row (the packed kernel's outputs do not depend on
 * the rows beside them) and the same pointwise math.  A call that resumes
 * takes the products the last one posted (ahead_products) where it can,
 * and posts the next call's. */
static void
forward_windows (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w, float *y,
                 float *gates, gboolean resume)
{
  const TachLstmDesc *d = &plan->desc;
  const int N = d->N, T = d->T, H = d->H, I = d->I, G = plan->G;
  const size_t ldg = plan->ldg, win = (size_t) T * H, stream = (size_t) T * win;
  const float *b = w + (size_t) G * (I + H);
  const float *pwh = plan->packed + packed_wx_floats (plan);
  /* The products the last call posted, when this one resumes its
   * windows: the helper's, or computed here (take) before it started. */
  gboolean ahead = resume && plan->ahead_ready && tach_cpu_ahead_take (be, plan, AHEAD_WAIT_US);

  if (ahead)
    {
      plan->ahead_be = NULL;
      plan->ahead_ready = FALSE;
    }
  else
    ahead_drop (plan);
  for (int k = resume ? T - 1 : 0; k < T; k++)
    for (int n = 0; n < N; n++)
      {
        float *hh = plan->win_h + n * stream, *hc = plan->win_c + n * stream;
        float *g = gates + (size_t) n * T * ldg;

        /* Window j takes row k as its step k - j. */
        size_t id = input_row (plan, x + row_of (d, k, n) * I, g + (size_t) k * ldg);
        float *start = plan->memo_start + id * 2 * H;

        if (ahead)
          {
            const float *pa = plan->ahead_g + (size_t) n * k * G, *gk = g + (size_t) k * ldg;

            for (int j = 0; j < k; j++)
              {
                float *gj = g + (size_t) j * ldg;

#pragma omp simd
                for (int i = 0; i < G; i++)
                  gj[i] = pa[(size_t) j * G + i] + gk[i];
              }
          }
        else
          {
            for (int j = 0; j < k; j++)
              memcpy (g + (size_t) j * ldg, g + (size_t) k * ldg, (size_t) G * sizeof (float));
            if (k > 0)
              tach_cpu_packed_nt ((size_t) k, (size_t) G, (size_t) H, 1.0f,
                                  hh + (size_t) (k - 1) * H, (size_t) (T - 1) * H, pwh, 1.0f, g,
                                  ldg);
          }
        for (int j = 0; j < k; j++)
          {
            size_t at = (size_t) j * win + (size_t) (k - j) * H;

            tach_cpu_lstm_row_forward (H, g + (size_t) j * ldg, b, hc + at - H, hc + at, hh + at);
          }
        /* Window k's first step, from a zero state, depends on row k
         * alone: kept beside its input side. */
        if (!plan->memo_start_ok[id])
          {
            tach_cpu_lstm_row_forward (H, g + (size_t) k * ldg, b, NULL, start, start + H);
            plan->memo_start_ok[id] = TRUE;
          }
        memcpy (hc + (size_t) k * win, start, (size_t) H * sizeof (float));
        memcpy (hh + (size_t) k * win, start + H, (size_t) H * sizeof (float));
      }
  for (int n = 0; n < N; n++)
    {
      float *hh = plan->win_h + n * stream, *hc = plan->win_c + n * stream;

      for (int t = 0; t < T; t++)
        memcpy (y + row_of (d, t, n) * plan->ldh, hh + (size_t) t * H, (size_t) H * sizeof (float));
      memmove (hh, hh + win, (stream - win) * sizeof (float));
      memmove (hc, hc + win, (stream - win) * sizeof (float));
    }
  plan->win_kept = TRUE;
  plan->win_resumed += resume;
  plan->win_ahead += ahead;
  /* The next call's products, from these states, while the ops between
   * the calls run (a generation loop's output layer and sampling). */
  ahead_post (be, plan);
}

void
tach_cpu_lstm_frozen_forward (TachBackend *be, TachLstmPlan *plan, const float *x,
                              const float *w, float *y, float *gates, float *cells)
{
  const TachLstmDesc *d = &plan->desc;
  int N = d->N, H = d->H, I = d->I, G = plan->G;
  size_t ldg = plan->ldg, ldh = plan->ldh, sr = step_rows (d);
  gboolean shifted;

  if (!tach_cpu_lstm_frozen_pack (be, plan, w))
    return;
  /* One direction whose rows shifted since the last call: windows (the
   * first such call computes them all, 1 + 2 + ... + T steps; the next
   * ones resume).  Otherwise the plain pass, on the packed copies. */
  if (has_windows (d))
    {
      shifted = window_shifted (plan, x);
      for (int n = 0; n < N; n++)
        for (int t = 0; t < d->T; t++)
          memcpy (plan->win_x + ((size_t) n * d->T + t) * I, x + row_of (d, t, n) * I,
                  (size_t) I * sizeof (float));
    }
  else
    shifted = FALSE;
  if (shifted)
    {
      forward_windows (be, plan, x, w, y, gates, plan->win_kept);
      return;
    }
  plan->win_kept = FALSE;
  ahead_drop (plan);
  tach_cpu_lstm_frozen_input_side (plan, x, gates);
  for (int dir = 0; dir < d->dirs; dir++)
    {
      const float *b = w + dir * plan->dir_stride + (size_t) G * (I + H);
      const float *pwh = plan->packed + dir * packed_dir_floats (plan) + packed_wx_floats (plan);

      for (int k = 0; k < d->T; k++)
        {
          TachLstmStep s = forward_step (d, dir, k, gates, cells, y);
          float *g_t = s.g, *c_t = s.c, *h_t = s.h;
          const float *c_p = s.c_prev, *h_p = s.h_prev;

          if (k > 0)
            tach_cpu_packed_nt ((size_t) N, (size_t) G, (size_t) H, 1.0f, h_p, sr * ldh, pwh,
                                1.0f, g_t, sr * ldg);
          for (int n = 0; n < N; n++)
            tach_cpu_lstm_row_forward (H, g_t + n * sr * ldg, b,
                                       k > 0 ? c_p + n * sr * ldh : NULL, c_t + n * sr * ldh,
                                       h_t + n * sr * ldh);
        }
    }
}
