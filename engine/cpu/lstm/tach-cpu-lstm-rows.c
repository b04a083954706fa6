/* tach-cpu-lstm-rows.c: the fused LSTM's pointwise math, one row (one
 * sample of one time step and direction) at a time: bias, activations,
 * cell and hidden state forward; gate and cell gradients backward.  The
 * exponential is a branch-free polynomial so that the loops vectorise;
 * the unrolled mode's cell op (tach-cpu-lstm-cell.c) keeps libm's.
 *
 * Threads: any; each call touches only its own row.
 */
#include "tach-cpu-private.h"

/* The pointwise loops clamp with comparisons, which GCC only if-converts
 * (and so vectorises) when it may assume floating-point ops do not trap;
 * Tach never enables FP traps, so this changes no result. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("no-trapping-math")
#endif

static inline float
fast_sigmoidf (float x)
{
  return 1.0f / (1.0f + tach_cpu_fast_expf (-x));
}

static inline float
fast_tanhf (float x)
{
  return 2.0f / (1.0f + tach_cpu_fast_expf (-2.0f * x)) - 1.0f;
}

/* One forward step of units [0, @units) of one row whose gates are @h
 * apart: bias, activations in place, c and h.  h = o tanh (c) runs as a
 * second loop: in one, each vector's chain (four activations, then c,
 * then tanh (c)) was too long for the out-of-order window to overlap
 * the next vector's (generation of one stream at AVX2 on the Intel Xeon
 * model 167: 106.8-108.8 k -> 110.0-110.8 k tokens/s).  The same
 * operations on each element, so the same bits. */
TACH_CPU_SIMD_BODY void
tach_cpu_lstm_span_forward_body (int units, int h, float *restrict g, const float *restrict b,
                                 const float *restrict cp, float *restrict c,
                                 float *restrict hy)
{
  if (cp != NULL)
    {
#pragma omp simd
      for (int j = 0; j < units; j++)
        {
          float i = fast_sigmoidf (g[j] + b[j]);
          float f = fast_sigmoidf (g[h + j] + b[h + j]);
          float z = fast_tanhf (g[2 * h + j] + b[2 * h + j]);
          float o = fast_sigmoidf (g[3 * h + j] + b[3 * h + j]);
          float cv = i * z + f * cp[j];

          g[j] = i;
          g[h + j] = f;
          g[2 * h + j] = z;
          g[3 * h + j] = o;
          c[j] = cv;
        }
    }
  else
    {
#pragma omp simd
      for (int j = 0; j < units; j++)
        {
          float i = fast_sigmoidf (g[j] + b[j]);
          float f = fast_sigmoidf (g[h + j] + b[h + j]);
          float z = fast_tanhf (g[2 * h + j] + b[2 * h + j]);
          float o = fast_sigmoidf (g[3 * h + j] + b[3 * h + j]);
          float cv = i * z;

          g[j] = i;
          g[h + j] = f;
          g[2 * h + j] = z;
          g[3 * h + j] = o;
          c[j] = cv;
        }
    }
#pragma omp simd
  for (int j = 0; j < units; j++)
    hy[j] = g[3 * h + j] * fast_tanhf (c[j]);
}

TACH_CPU_SIMD_DISPATCH (, tach_cpu_lstm_span_forward,
                        (int units, int h, float *restrict g, const float *restrict b,
                         const float *restrict cp, float *restrict c, float *restrict hy),
                        (units, h, g, b, cp, c, hy))

void
tach_cpu_lstm_row_forward (int h, float *restrict g, const float *restrict b,
                           const float *restrict cp, float *restrict c, float *restrict hy)
{
  tach_cpu_lstm_span_forward (h, h, g, b, cp, c, hy);
}

/* One backward step of one row, for one combination of the optional
 * inputs, each a constant once inlined: a loop that tests a NULL pointer
 * per element becomes a masked load (vmaskmovps at AVX2), and a masked
 * load from an unmapped address costs a microcode assist even when its
 * mask is all zero, as cp and dh_rec are on the first and last steps. */
static inline __attribute__ ((always_inline)) void
row_backward_k (int h, const float *restrict g, const float *restrict c,
                const float *restrict cp, const float *restrict dy,
                const float *restrict dh_rec, float *restrict dc, float *restrict dg,
                float *restrict db, const gboolean has_rec, const gboolean has_dc,
                const gboolean has_cp)
{
#pragma omp simd
  for (int j = 0; j < h; j++)
    {
      float i = g[j], f = g[h + j], z = g[2 * h + j], o = g[3 * h + j];
      float tc = fast_tanhf (c[j]);
      float dhv = has_rec ? dy[j] + dh_rec[j] : dy[j];
      float dct = (has_dc ? dc[j] : 0.0f) + dhv * o * (1.0f - tc * tc);
      float cpv = has_cp ? cp[j] : 0.0f;
      float di = dct * z * i * (1.0f - i);
      float df = dct * cpv * f * (1.0f - f);
      float dz = dct * i * (1.0f - z * z);
      float dout = dhv * tc * o * (1.0f - o);

      dg[j] = di;
      dg[h + j] = df;
      dg[2 * h + j] = dz;
      dg[3 * h + j] = dout;
      dc[j] = dct * f;
      if (db != NULL)
        {
          db[j] += di;
          db[h + j] += df;
          db[2 * h + j] += dz;
          db[3 * h + j] += dout;
        }
    }
}

/* One backward step of one row.  dh = dy + dh_rec (dh_rec may be NULL);
 * dc holds the incoming cell gradient (ignored when !have_dc) and receives
 * the outgoing one; cp NULL means c_{-1} = 0.  When @db is not NULL the
 * gate gradients are also added to it: the bias gradient summed while the
 * row is in registers, where a pass of its own reads all of dG again. */
TACH_CPU_SIMD_BODY void
tach_cpu_lstm_row_backward_body (int h, const float *restrict g, const float *restrict c,
                                 const float *restrict cp, const float *restrict dy,
                                 const float *restrict dh_rec, float *restrict dc, gboolean have_dc,
                                 float *restrict dg, float *restrict db)
{
#define ROW_BACKWARD(rec, dcin, cpin) \
  row_backward_k (h, g, c, cp, dy, dh_rec, dc, dg, db, rec, dcin, cpin)
  switch ((dh_rec != NULL) << 2 | (have_dc != FALSE) << 1 | (cp != NULL))
    {
    case 0: ROW_BACKWARD (FALSE, FALSE, FALSE); break;
    case 1: ROW_BACKWARD (FALSE, FALSE, TRUE); break;
    case 2: ROW_BACKWARD (FALSE, TRUE, FALSE); break;
    case 3: ROW_BACKWARD (FALSE, TRUE, TRUE); break;
    case 4: ROW_BACKWARD (TRUE, FALSE, FALSE); break;
    case 5: ROW_BACKWARD (TRUE, FALSE, TRUE); break;
    case 6: ROW_BACKWARD (TRUE, TRUE, FALSE); break;
    default: ROW_BACKWARD (TRUE, TRUE, TRUE); break;
    }
#undef ROW_BACKWARD
}

TACH_CPU_SIMD_DISPATCH (, tach_cpu_lstm_row_backward,
                        (int h, const float *restrict g, const float *restrict c,
                         const float *restrict cp,
                         const float *restrict dy, const float *restrict dh_rec,
                         float *restrict dc, gboolean have_dc, float *restrict dg,
                         float *restrict db),
                        (h, g, c, cp, dy, dh_rec, dc, have_dc, dg, db))
