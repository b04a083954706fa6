/* tach-cpu-pool.c: the 2x2 max pool and the global average pool over plain
 * NCHW data, as loops on the backend's OpenMP pool (the conv block of
 * tach-cpu-conv.c pools blocked data with oneDNN instead).
 *
 * Threads: the engine thread.
 */
#include <string.h>

#include "tach-cpu-private.h"

/* The pool's comparisons become selects (no mispredicted branches on
 * random signs) only when GCC may assume floating-point ops do not trap;
 * Tach never enables FP traps, so this changes no result. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("no-trapping-math")
#endif

/* --------------------------------------------------------------- pooling */

void
tach_cpu_maxpool_fwd (TachBackend *be, const float *x, float *y, int32_t *idx,
                      int n, int c, int h, int w)
{
  int oh = h / 2, ow = w / 2;
  int planes = n * c;

  tach_cpu_bind_threads (be);
  /* idx holds the winner's offset within its own (n, c) plane, which stays
   * within int32 even for very large batches of large images. */
#pragma omp parallel for if ((size_t) planes * (size_t) h * (size_t) w >= TACH_CPU_PARALLEL_MIN)
  for (int p = 0; p < planes; p++)
    {
      const float *xp = x + (size_t) p * (size_t) h * (size_t) w;
      float *yp = y + (size_t) p * (size_t) oh * (size_t) ow;
      int32_t *ip = idx + (size_t) p * (size_t) oh * (size_t) ow;

      for (int i = 0; i < oh; i++)
        for (int j = 0; j < ow; j++)
          {
            int o = 2 * i * w + 2 * j;
            float v = xp[o], v1 = xp[o + 1], v2 = xp[o + w], v3 = xp[o + w + 1];
            int best = o;

            /* Ties keep the first in row-major order; selects, not
             * branches. */
            best = v1 > v ? o + 1 : best;
            v = v1 > v ? v1 : v;
            best = v2 > v ? o + w : best;
            v = v2 > v ? v2 : v;
            best = v3 > v ? o + w + 1 : best;
            v = v3 > v ? v3 : v;
            yp[i * ow + j] = v;
            ip[i * ow + j] = best;
          }
    }
}

void
tach_cpu_maxpool_bwd (TachBackend *be, const float *dy, const int32_t *idx, float *dx,
                      int n, int c, int h, int w)
{
  int oh = h / 2, ow = w / 2;
  int planes = n * c;

  tach_cpu_bind_threads (be);
  /* Windows do not overlap, so each input gets at most one gradient; the
   * rows and columns an odd size leaves out get zero. */
#pragma omp parallel for if ((size_t) planes * (size_t) h * (size_t) w >= TACH_CPU_PARALLEL_MIN)
  for (int p = 0; p < planes; p++)
    {
      float *dxp = dx + (size_t) p * (size_t) h * (size_t) w;
      const float *dyp = dy + (size_t) p * (size_t) oh * (size_t) ow;
      const int32_t *ip = idx + (size_t) p * (size_t) oh * (size_t) ow;

      memset (dxp, 0, sizeof (float) * (size_t) h * (size_t) w);
      for (int o = 0; o < oh * ow; o++)
        dxp[ip[o]] = dyp[o];
    }
}

void
tach_cpu_avgpool_fwd (TachBackend *be, const float *x, float *y, int n, int c, int hw)
{
  int planes = n * c;

  tach_cpu_bind_threads (be);
#pragma omp parallel for if ((size_t) planes * (size_t) hw >= TACH_CPU_PARALLEL_MIN)
  for (int p = 0; p < planes; p++)
    {
      const float *xp = x + (size_t) p * (size_t) hw;
      double sum = 0.0;

      for (int i = 0; i < hw; i++)
        sum += xp[i];
      y[p] = hw > 0 ? (float) (sum / hw) : 0.0f;
    }
}

void
tach_cpu_avgpool_bwd (TachBackend *be, const float *dy, float *dx, int n, int c, int hw)
{
  int planes = n * c;

  tach_cpu_bind_threads (be);
#pragma omp parallel for if ((size_t) planes * (size_t) hw >= TACH_CPU_PARALLEL_MIN)
  for (int p = 0; p < planes; p++)
    {
      float g = hw > 0 ? dy[p] / (float) hw : 0.0f;
      float *dxp = dx + (size_t) p * (size_t) hw;

      for (int i = 0; i < hw; i++)
        dxp[i] = g;
    }
}
