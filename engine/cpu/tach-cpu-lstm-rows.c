/* tach-cpu-lstm-rows.c: the fused LSTM's pointwise math, one row (one
 * sample of one time step and direction) at a time: bias, activations,
 * cell and hidden state forward; gate and cell gradients backward.  The
 * exponential is a branch-free polynomial so that the loops vectorise;
 * the unrolled mode's cell op (tach-cpu-lstm-cell.c) keeps libm's.
 *
 * Threads: any; each call touches only its own row.
 */
#include <string.h>

#include "tach-cpu-private.h"

/* The pointwise loops clamp with comparisons, which GCC only if-converts
 * (and so vectorises) when it may assume floating-point ops do not trap;
 * Tach never enables FP traps, so this changes no result. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("no-trapping-math")
#endif

/* exp on [-87, 88] (clamped) by Cody-Waite reduction and Cephes' degree-6
 * polynomial: about 1 ulp, branch-free, so that the loops vectorise. */
static inline float
fast_expf (float x)
{
  float t, n, r, p, scale;
  int32_t bits;

  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  /* Round to nearest by the 1.5 * 2^23 trick. */
  t = x * 1.44269504088896341f + 12582912.0f;
  n = t - 12582912.0f;
  r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  bits = ((int32_t) n + 127) << 23;
  memcpy (&scale, &bits, sizeof scale);
  return p * scale;
}

static inline float
fast_sigmoidf (float x)
{
  return 1.0f / (1.0f + fast_expf (-x));
}

static inline float
fast_tanhf (float x)
{
  return 2.0f / (1.0f + fast_expf (-2.0f * x)) - 1.0f;
}

/* One forward step of one row: bias, activations in place, c and h. */
TACH_CPU_SIMD_CLONES void
tach_cpu_lstm_row_forward (int h, float *restrict g, const float *restrict b,
                           const float *restrict cp, float *restrict c, float *restrict hy)
{
  if (cp != NULL)
    {
#pragma omp simd
      for (int j = 0; j < h; j++)
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
          hy[j] = o * fast_tanhf (cv);
        }
    }
  else
    {
#pragma omp simd
      for (int j = 0; j < h; j++)
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
          hy[j] = o * fast_tanhf (cv);
        }
    }
}

/* One backward step of one row.  dh = dy + dh_rec (dh_rec may be NULL);
 * dc holds the incoming cell gradient (ignored when !have_dc) and receives
 * the outgoing one; cp NULL means c_{-1} = 0.  When @db is not NULL the
 * gate gradients are also added to it: the bias gradient summed while the
 * row is in registers, where a pass of its own reads all of dG again. */
TACH_CPU_SIMD_CLONES void
tach_cpu_lstm_row_backward (int h, const float *restrict g, const float *restrict c,
                            const float *restrict cp, const float *restrict dy,
                            const float *restrict dh_rec, float *restrict dc, gboolean have_dc,
                            float *restrict dg, float *restrict db)
{
#pragma omp simd
  for (int j = 0; j < h; j++)
    {
      float i = g[j], f = g[h + j], z = g[2 * h + j], o = g[3 * h + j];
      float tc = fast_tanhf (c[j]);
      float dhv = dy[j] + (dh_rec != NULL ? dh_rec[j] : 0.0f);
      float dct = (have_dc ? dc[j] : 0.0f) + dhv * o * (1.0f - tc * tc);
      float cpv = cp != NULL ? cp[j] : 0.0f;
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
