/* tach-cpu-pool.c: the 2x2 max pool and the global average pool over plain
 * NCHW data, and the conv block's max pool over its activations in
 * oneDNN's layout (tach-cpu-conv.c), as loops on the backend's OpenMP pool.
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

/* ------------------------------------------------- the conv block's pool */

/* The block's pool reads the activations where the convolution left them
 * (channel-blocked, fp32 or bf16) and writes the pooled output plain, so
 * that no reorder pass runs on either side; backward reads the plain
 * pooled gradient and writes every element of the activations' gradient
 * (the winner's gradient, zero elsewhere), so nothing is zeroed first.
 *
 * Each pooled element's code (one byte, in the activations' blocked order)
 * is the winner's place in its window, 0 to 3 in row-major order, plus
 * TACH_CPU_POOL_RELU_OFF when the pooled value is <= 0: the ReLU's
 * derivative from its output, 0 there and 1 elsewhere (NaN included),
 * multiplied into the gradient as oneDNN's ReLU backward does.  The max
 * pool's output is the activation at its winner, and the winner alone gets
 * a gradient, so applying the derivative to the pooled gradient gives the
 * bits of applying it after un-pooling; backward needs neither the
 * activations nor the pooled output. */
#define TACH_CPU_POOL_RELU_OFF 4

static inline float
act_load (const void *act, size_t i, gboolean bf16)
{
  if (bf16)
    {
      guint32 bits = (guint32) ((const guint16 *) act)[i] << 16;
      float v;

      memcpy (&v, &bits, sizeof v);
      return v;
    }
  return ((const float *) act)[i];
}

/* Round to nearest even, NaN kept quiet: as oneDNN's reorder to bf16. */
static inline void
act_store (void *act, size_t i, float v, gboolean bf16)
{
  if (bf16)
    {
      guint32 bits;

      memcpy (&bits, &v, sizeof bits);
      bits = (bits & 0x7fffffffu) > 0x7f800000u ? (bits | 0x00400000u)
                                                : bits + 0x7fffu + ((bits >> 16) & 1u);
      ((guint16 *) act)[i] = (guint16) (bits >> 16);
      return;
    }
  ((float *) act)[i] = v;
}

/* One channel block of one image, forward (@y the pooled output, @act the
 * activations) or backward (@y the pooled gradient, @act the activations'
 * gradient); @backward, @cb, @bf16 and @y_blocked are constants where it
 * is inlined, so the channel loop vectorises. */
static inline __attribute__ ((always_inline)) void
block_pool_unit (const TachCpuActLayout *l, const gboolean backward, void *restrict act,
                 float *restrict y, guint8 *restrict code, int n, int kb, int h, int w,
                 const int cb, const gboolean bf16, const gboolean y_blocked)
{
  int oh = h / 2, ow = w / 2;
  size_t plane = (size_t) oh * ow;
  size_t base = (size_t) n * l->sn + (size_t) kb * l->sc;
  /* y's element (c, o) of this block: plain, or blocked as act is. */
  size_t ysc = y_blocked ? 1 : plane, yso = y_blocked ? (size_t) cb : 1;
  float *yb = y + ((size_t) n * l->k + (size_t) kb * cb) * plane;
  guint8 *cd = code + ((size_t) n * l->k + (size_t) kb * cb) * plane;

  for (int i = 0; i < oh; i++)
    for (int j = 0; j < ow; j++)
      {
        size_t a = base + (size_t) (2 * i) * l->sh + (size_t) (2 * j) * l->sw;
        size_t o = (size_t) i * ow + j;

        if (backward)
          {
#pragma omp simd
            for (int c = 0; c < cb; c++)
              {
                int k = cd[o * cb + c];
                float g = yb[(size_t) c * ysc + o * yso]
                          * ((k & TACH_CPU_POOL_RELU_OFF) != 0 ? 0.0f : 1.0f);

                k &= 3;
                act_store (act, a + c, k == 0 ? g : 0.0f, bf16);
                act_store (act, a + l->sw + c, k == 1 ? g : 0.0f, bf16);
                act_store (act, a + l->sh + c, k == 2 ? g : 0.0f, bf16);
                act_store (act, a + l->sh + l->sw + c, k == 3 ? g : 0.0f, bf16);
              }
            continue;
          }
#pragma omp simd
        for (int c = 0; c < cb; c++)
          {
            float v = act_load (act, a + c, bf16);
            float v1 = act_load (act, a + l->sw + c, bf16);
            float v2 = act_load (act, a + l->sh + c, bf16);
            float v3 = act_load (act, a + l->sh + l->sw + c, bf16);
            int best = 0;

            /* Ties keep the first in row-major order, as maxpool_fwd. */
            best = v1 > v ? 1 : best;
            v = v1 > v ? v1 : v;
            best = v2 > v ? 2 : best;
            v = v2 > v ? v2 : v;
            best = v3 > v ? 3 : best;
            v = v3 > v ? v3 : v;
            yb[(size_t) c * ysc + o * yso] = v;
            cd[o * cb + c] = (guint8) (best | (v <= 0.0f ? TACH_CPU_POOL_RELU_OFF : 0));
          }
      }
  /* Backward: the row and column an odd size leaves out of every window. */
  for (int r = 0; backward && r < h; r++)
    for (int q = (r < 2 * oh ? 2 * ow : 0); q < w; q++)
      for (int c = 0; c < cb; c++)
        act_store (act, base + (size_t) r * l->sh + (size_t) q * l->sw + c, 0.0f, bf16);
}

#define BLOCK_POOL_UNIT(cb, bf16, yb)                                                      \
  (backward ? block_pool_unit (l, TRUE, act, y, code, n, kb, h, w, (cb), (bf16), (yb))     \
            : block_pool_unit (l, FALSE, act, y, code, n, kb, h, w, (cb), (bf16), (yb)))

TACH_CPU_SIMD_BODY void
block_pool_one_body (const TachCpuActLayout *l, gboolean backward, void *act, float *y,
                     guint8 *code, int n, int kb, int h, int w)
{
  if (l->cb == 16 && !l->bf16 && l->y_blocked)
    BLOCK_POOL_UNIT (16, FALSE, TRUE);
  else if (l->cb == 16 && !l->bf16)
    BLOCK_POOL_UNIT (16, FALSE, FALSE);
  else if (l->cb == 16)
    BLOCK_POOL_UNIT (16, TRUE, l->y_blocked);
  else if (l->cb == 8 && !l->bf16 && l->y_blocked)
    BLOCK_POOL_UNIT (8, FALSE, TRUE);
  else if (l->cb == 8 && !l->bf16)
    BLOCK_POOL_UNIT (8, FALSE, FALSE);
  else
    BLOCK_POOL_UNIT (l->cb, l->bf16, l->y_blocked);
}

TACH_CPU_SIMD_DISPATCH (static, block_pool_one,
                        (const TachCpuActLayout *l, gboolean backward, void *act, float *y,
                         guint8 *code, int n, int kb, int h, int w),
                        (l, backward, act, y, code, n, kb, h, w))

#if defined(__x86_64__) && defined(__GNUC__)
#define TACH_VEC 512
#include "tach-cpu-vec.h"
#include "tach-cpu-pool-k.h"
#undef TACH_VEC
#define TACH_VEC 256
#include "tach-cpu-vec.h"
#include "tach-cpu-pool-k.h"
#undef TACH_VEC
#define BLOCK_POOL_VEC 1
#endif

static void
block_pool (TachBackend *be, const TachCpuActLayout *l, gboolean backward, void *act, float *y,
            guint8 *code, int n, int h, int w)
{
  int blocks = l->k / l->cb;
  int units = n * blocks;
  /* fp32 blocked by the vector width: the explicit vector kernel. */
  void (*vec) (const TachCpuActLayout *, gboolean, float *, float *, guint8 *, int, int, int,
               int) = NULL;

#ifdef BLOCK_POOL_VEC
  if (!l->bf16 && l->cb == 16 && tach_cpu_isa () == TACH_CPU_ISA_AVX512)
    vec = block_pool_vec_avx512;
  else if (!l->bf16 && l->cb == 8 && tach_cpu_isa () >= TACH_CPU_ISA_AVX2)
    vec = block_pool_vec_avx2;
#endif
  tach_cpu_bind_threads (be);
#pragma omp parallel for if ((size_t) units * l->cb * h * w >= TACH_CPU_PARALLEL_MIN)
  for (int u = 0; u < units; u++)
    if (vec != NULL)
      vec (l, backward, act, y, code, u / blocks, u % blocks, h, w);
    else
      block_pool_one (l, backward, act, y, code, u / blocks, u % blocks, h, w);
}

void
tach_cpu_block_pool_fwd (TachBackend *be, const TachCpuActLayout *l, const void *act, float *y,
                         guint8 *code, int n, int h, int w)
{
  block_pool (be, l, FALSE, (void *) act, y, code, n, h, w);
}

/* The forward's writes are backward's reads and the other way round: one
 * driver serves both, the casts only for its shared signature. */
void
tach_cpu_block_pool_bwd (TachBackend *be, const TachCpuActLayout *l, const float *dy,
                         const guint8 *code, void *dact, int n, int h, int w)
{
  block_pool (be, l, TRUE, dact, (float *) dy, (guint8 *) code, n, h, w);
}
