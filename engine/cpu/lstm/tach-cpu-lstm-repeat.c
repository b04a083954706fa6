/* tach-cpu-lstm-repeat.c: sliced training on rows of x that repeat
 * (TachLstmDesc.rows_repeat: the lstm-lm's rows are words of a frozen
 * embedding).  A block's rows are found by a hash of their bits; the
 * input side is one product of the block's distinct rows with W_x, each
 * row's gates a copy of its distinct row's, and dW_x one product of the
 * distinct rows with the gate gradients of each one's rows added first,
 * in row order.  The same blocks whatever the number of threads, so the
 * same bits.
 *
 * lstm-lm training on its built-in text (batch 256, blocks of 128 windows
 * of 4 words: 512 rows a block) has 278-314 distinct rows a block, so the
 * input side runs about 300 x 400 x 100 and dW_x 100 x 400 x 300 where
 * they ran 512 rows; the hash, the gathers, the copies of the gates and
 * the sums of the gate gradients take part of that back (one thread, AMD
 * EPYC Zen 4: 1.03-1.09x less CPU time a training step).
 *
 * Threads: any thread of the pool, each on its own block and buffers.
 */
#include <string.h>

#include "tach-cpu-lstm-private.h"

/* Block-local row @j's row in the data: rows n * T + t batch-major, as
 * the block's gate gradients lie (tach-cpu-lstm-bwd.c), t * nb + n
 * time-major. */
static inline size_t
block_row (const TachLstmDesc *d, int b0, int nb, int j)
{
  return d->time_major ? row_of (d, j / nb, b0 + j % nb) : row_of (d, j % d->T, b0 + j / d->T);
}

void
tach_cpu_lstm_repeat_alloc (TachBackend *be, TachLstmPlan *plan)
{
  const TachLstmDesc *d = &plan->desc;
  size_t th = (size_t) MAX (be->threads, 1), rows = (size_t) plan->block * d->T;

  plan->rep_slots = 1;
  while (plan->rep_slots < 2 * rows)
    plan->rep_slots *= 2;
  plan->rep_map = tach_cpu_mem_alloc (be, plan->rows * sizeof (gint32));
  plan->rep_first = tach_cpu_mem_alloc (be, plan->rows * sizeof (gint32));
  plan->rep_count = tach_cpu_mem_alloc (be, (size_t) tach_cpu_lstm_blocks (plan)
                                              * sizeof (gint32));
  plan->rep_x = tach_cpu_mem_alloc (be, th * rows * d->I * sizeof (float));
  plan->rep_p = tach_cpu_mem_alloc (be, th * rows * plan->ldg * sizeof (float));
  plan->rep_slot = tach_cpu_mem_alloc (be, th * plan->rep_slots * sizeof (guint32));
}

/* This thread's copy of the block's distinct rows, gathered from x. */
static float *
gather (const TachLstmPass *pass, int b0, int nb)
{
  const TachLstmPlan *plan = pass->plan;
  const TachLstmDesc *d = &plan->desc;
  size_t I = (size_t) d->I, base = (size_t) b0 * d->T;
  float *ux = plan->rep_x + (size_t) omp_get_thread_num () * plan->block * d->T * I;
  int u = plan->rep_count[b0 / plan->block];

  for (int v = 0; v < u; v++)
    memcpy (ux + v * I, pass->x + block_row (d, b0, nb, plan->rep_first[base + v]) * I,
            I * sizeof (float));
  return ux;
}

dnnl_status_t
tach_cpu_lstm_repeat_input_side (const TachLstmPass *pass, const float *wx, int b0, int nb)
{
  const TachLstmPlan *plan = pass->plan;
  const TachLstmDesc *d = &plan->desc;
  size_t I = (size_t) d->I, ldg = (size_t) plan->ldg, rows = (size_t) nb * d->T;
  size_t base = (size_t) b0 * d->T, mask = plan->rep_slots - 1;
  int tid = omp_get_thread_num ();
  gint32 *map = plan->rep_map + base, *first = plan->rep_first + base;
  guint32 *slot = plan->rep_slot + (size_t) tid * plan->rep_slots;
  float *up = plan->rep_p + (size_t) tid * plan->block * d->T * ldg;
  const float *ux;
  int u = 0;
  dnnl_status_t st;

  /* The distinct rows, numbered by first appearance. */
  memset (slot, 0, plan->rep_slots * sizeof (guint32));
  for (size_t j = 0; j < rows; j++)
    {
      const float *xr = pass->x + block_row (d, b0, nb, (int) j) * I;
      size_t s = tach_cpu_lstm_row_hash (xr, I) & mask;

      while (slot[s] != 0
             && memcmp (pass->x + block_row (d, b0, nb, first[slot[s] - 1]) * I, xr,
                        I * sizeof (float)) != 0)
        s = (s + 1) & mask;
      if (slot[s] == 0)
        {
          first[u] = (gint32) j;
          slot[s] = (guint32) ++u;
        }
      map[j] = (gint32) slot[s] - 1;
    }
  plan->rep_count[b0 / plan->block] = u;

  ux = gather (pass, b0, nb);
  st = tach_cpu_sgemm_local (FALSE, FALSE, (size_t) u, ldg, I, 1.0f, ux, I, wx, ldg, 0.0f, up,
                             ldg);
  if (st != dnnl_success)
    return st;
  for (size_t j = 0; j < rows; j++)
    memcpy (pass->gates + block_row (d, b0, nb, (int) j) * ldg, up + (size_t) map[j] * ldg,
            ldg * sizeof (float));
  return dnnl_success;
}

dnnl_status_t
tach_cpu_lstm_repeat_dwx (const TachLstmPass *pass, const float *dg, int b0, int nb, float *part)
{
  const TachLstmPlan *plan = pass->plan;
  const TachLstmDesc *d = &plan->desc;
  size_t I = (size_t) d->I, ldg = (size_t) plan->ldg, rows = (size_t) nb * d->T;
  size_t base = (size_t) b0 * d->T;
  const gint32 *map = plan->rep_map + base, *first = plan->rep_first + base;
  float *sum = plan->rep_p + (size_t) omp_get_thread_num () * plan->block * d->T * ldg;
  size_t u = (size_t) plan->rep_count[b0 / plan->block];
  const float *ux = gather (pass, b0, nb);

  /* Each distinct row's gate gradients: its first row's, then the others'
   * added in row order. */
  for (size_t j = 0; j < rows; j++)
    {
      float *s = sum + (size_t) map[j] * ldg;
      const float *g = dg + j * ldg;

      if (first[map[j]] == (gint32) j)
        memcpy (s, g, ldg * sizeof (float));
      else
        {
#pragma omp simd
          for (size_t c = 0; c < ldg; c++)
            s[c] += g[c];
        }
    }
  if (plan->dwx_t)
    return tach_cpu_sgemm_local (TRUE, FALSE, I, ldg, u, 1.0f, ux, I, sum, ldg, 0.0f, part, ldg);
  return tach_cpu_sgemm_local (TRUE, FALSE, ldg, I, u, 1.0f, sum, ldg, ux, I, 0.0f, part, I);
}
