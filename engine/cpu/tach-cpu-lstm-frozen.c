/* tach-cpu-lstm-frozen.c: the inference LSTM of a few streams whose
 * weights are frozen (tach_backend_freeze: a generation loop), on copies
 * of its weights packed for the small products and with the input side of
 * rows already seen kept.
 *
 * At batch 1 every product is a matrix-vector product that waits on
 * moving the weights from L2 (bench/README.md, the bounds).  Here:
 * - W_x and W_h are packed once per weight block (tach_cpu_pack_nt, one
 *   vector's rows, 16 or 8, to a vector per input), so that no load of the
 *   products straddles cache lines and no output pays a horizontal sum;
 * - the input side x_t W_x^T of each row of x depends on that row alone,
 *   so it is kept for every row seen on these weights (up to MEMO_BYTES of
 *   rows, found by a hash of the row's bits and compared bit for bit) and
 *   copied instead of W_x being read again: a generation loop shifts its
 *   context by one token per call, so all rows but the newest were in the
 *   last call's input, and the newest is a token's embedding, seen before
 *   once the vocabulary's tokens have come up (554 of them for lstm-lm).
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

void
tach_cpu_lstm_frozen_forget (TachLstmPlan *plan)
{
  plan->memo_rows = 0;
  if (plan->memo_slot != NULL)
    memset (plan->memo_slot, 0, plan->memo_slots * sizeof (guint32));
}

gboolean
tach_cpu_lstm_frozen_pack (TachBackend *be, TachLstmPlan *plan, const float *w)
{
  const TachLstmDesc *d = &plan->desc;
  size_t G = (size_t) plan->G;
  guint epoch = tach_cpu_frozen_epoch (be, w, d->dirs * plan->dir_stride * sizeof (float));

  if (plan->packed != NULL && plan->packed_for == w && plan->packed_epoch == epoch)
    return TRUE;
  if (plan->packed == NULL)
    {
      size_t row_bytes = ((size_t) d->I + plan->ldg) * sizeof (float);

      plan->memo_cap = MAX (plan->rows, MEMO_BYTES / row_bytes);
      plan->memo_slots = 1;
      while (plan->memo_slots < 2 * plan->memo_cap)
        plan->memo_slots *= 2;
      plan->packed = tach_cpu_mem_alloc (be, d->dirs * packed_dir_floats (plan) * sizeof (float));
      plan->memo_x = tach_cpu_mem_alloc (be, plan->memo_cap * d->I * sizeof (float));
      plan->memo_g = tach_cpu_mem_alloc (be, plan->memo_cap * plan->ldg * sizeof (float));
      plan->memo_slot = tach_cpu_mem_alloc (be, plan->memo_slots * sizeof (guint32));
      if (!tach_backend_ok (be))
        return FALSE;
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
static guint32
row_hash (const float *x, size_t n)
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
  size_t slot = row_hash (x, I) & mask;

  while (plan->memo_slot[slot] != 0
         && memcmp (plan->memo_x + (plan->memo_slot[slot] - 1) * I, x, I * sizeof (float)) != 0)
    slot = (slot + 1) & mask;
  return slot;
}

/* Rows kept are copied, the others computed on the packed W_x and kept
 * (all forgotten first when the table is full). */
void
tach_cpu_lstm_frozen_input_side (TachLstmPlan *plan, const float *x, float *gates)
{
  const TachLstmDesc *d = &plan->desc;
  size_t I = (size_t) d->I, ldg = (size_t) plan->ldg;

  for (size_t r = 0; r < plan->rows; r++)
    {
      const float *xr = x + r * I;
      float *gr = gates + r * ldg;
      size_t slot = memo_slot_of (plan, xr);

      if (plan->memo_slot[slot] != 0)
        {
          memcpy (gr, plan->memo_g + (plan->memo_slot[slot] - 1) * ldg, ldg * sizeof (float));
          continue;
        }
      for (int dir = 0; dir < d->dirs; dir++)
        tach_cpu_packed_nt (1, (size_t) plan->G, I, 1.0f, xr, I,
                            plan->packed + dir * packed_dir_floats (plan), 0.0f,
                            gr + dir * plan->G, ldg);
      if (plan->memo_rows == plan->memo_cap)
        {
          tach_cpu_lstm_frozen_forget (plan);
          slot = memo_slot_of (plan, xr);
        }
      memcpy (plan->memo_x + plan->memo_rows * I, xr, I * sizeof (float));
      memcpy (plan->memo_g + plan->memo_rows * ldg, gr, ldg * sizeof (float));
      plan->memo_slot[slot] = (guint32) ++plan->memo_rows;
    }
}

void
tach_cpu_lstm_frozen_forward (TachBackend *be, TachLstmPlan *plan, const float *x,
                              const float *w, float *y, float *gates, float *cells)
{
  const TachLstmDesc *d = &plan->desc;
  int N = d->N, H = d->H, I = d->I, G = plan->G;
  size_t ldg = plan->ldg, ldh = plan->ldh, sr = step_rows (d);

  if (!tach_cpu_lstm_frozen_pack (be, plan, w))
    return;
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
