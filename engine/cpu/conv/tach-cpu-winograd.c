/* tach-cpu-winograd.c: the conv block's 5x5 convolution by Winograd's
 * F(4x4, 5x5), forward, backward data and backward weights, for fp32
 * blocks whose channels are multiples of the vector width, on x, dx and
 * activations blocked by it (tach-cpu-conv.c reorders a plain x and dx).
 *
 * A direct 5x5 convolution does 25 multiplies per output and channel pair;
 * F(4x4, 5x5) does 64 per 4x4 outputs, 4 per output: 6.25x fewer (4.8x on
 * the cnn's 14x14 outputs, whose 4x4 tiles overhang by two), in 64 GEMMs
 * per pass, plus the tiles' transforms (bench/README.md, "cnn").  oneDNN
 * 2.6 has no Winograd for 5x5 filters (its own is F(4x4, 3x3)), and the
 * cnn's conv2 ran at the FMA peak on its direct kernels, so fewer
 * multiplies was the one way left to speed it up.  In fp32 the results
 * differ from a direct convolution's by about 1e-6 relative (NMSE about
 * 1e-11 in /engine/cpu/conv-block/winograd, against the fp32 bound of
 * 1e-8); F(2x2, 5x5), with half the error, ran the cnn 15% slower.
 *
 * The work is split by images into as many parts as the backend has
 * threads, each with its own scratch, run on the threads it runs on now
 * (fewer on a busy machine: tach-cpu-threads.c); within an image, a chunk
 * of tile rows at a time, so that the chunk's transforms stay in L2
 * between the transform and its GEMMs.  Every thread count and width
 * computes each image the same way; the filter gradient's per-part sums
 * are added in part order, whichever thread ran each part.
 *
 * TACH_CPU_CONV=direct turns it off (oneDNN's direct convolution runs),
 * for measuring one against the other.
 *
 * Threads: the engine thread (OpenMP inside).
 */
#include <string.h>
#include <unistd.h>

#include "tach-cpu-private.h"

struct _TachCpuWino {
  int c, k, h, w, oh, ow, pad_h, pad_w;
  int tw, tiles;        /* tiles per row, per image */
  int chunk;            /* tiles per chunk: whole tile rows */
  int threads;          /* parts: the backend's threads */
  float *u, *ut;        /* [P][C][K], [P][K][C] */
  float *scratch;       /* per part: v [P][chunk][C], m [P][chunk][K], du [P][C][K], db [K] */
  size_t per_thread;    /* floats */
  float gather[25 * 16];
};

/* F(4x4, 5x5): 4x4 output tiles from 8x8 input tiles, 64 points. */
#define WINO_M 4
#define WINO_A 8
#define WINO_P (WINO_A * WINO_A)

/* The transforms by Toom-Cook at the points 0, 1, -1, 2, -2, 1/2, -1/2
 * and infinity (Lavin and Gray's construction): Y = A^T [(G g G^T) . (B^T
 * d B)] A for a 5x5 filter g and an 8x8 input tile d.  B^T is 8x8, G 8x5,
 * A^T 4x8, row-major. */
static const float wino_bt_mat[WINO_A * WINO_A] = {
  -1.0f, 0.0f, 5.25f, 0.0f, -5.25f, 0.0f, 1.0f, 0.0f,
  0.0f, 1.0f, 1.0f, -4.25f, -4.25f, 1.0f, 1.0f, 0.0f,
  0.0f, -1.0f, 1.0f, 4.25f, -4.25f, -1.0f, 1.0f, 0.0f,
  0.0f, 0.5f, 0.25f, -2.5f, -1.25f, 2.0f, 1.0f, 0.0f,
  0.0f, -0.5f, 0.25f, 2.5f, -1.25f, -2.0f, 1.0f, 0.0f,
  0.0f, 2.0f, 4.0f, -2.5f, -5.0f, 0.5f, 1.0f, 0.0f,
  0.0f, -2.0f, 4.0f, 2.5f, -5.0f, -0.5f, 1.0f, 0.0f,
  0.0f, -1.0f, 0.0f, 5.25f, 0.0f, -5.25f, 0.0f, 1.0f,
};
static const float wino_g_mat[WINO_A * 5] = {
  -1.0f, 0.0f, 0.0f, 0.0f, 0.0f,
  -2.0f / 9, -2.0f / 9, -2.0f / 9, -2.0f / 9, -2.0f / 9,
  -2.0f / 9, 2.0f / 9, -2.0f / 9, 2.0f / 9, -2.0f / 9,
  1.0f / 90, 1.0f / 45, 2.0f / 45, 4.0f / 45, 8.0f / 45,
  1.0f / 90, -1.0f / 45, 2.0f / 45, -4.0f / 45, 8.0f / 45,
  32.0f / 45, 16.0f / 45, 8.0f / 45, 4.0f / 45, 2.0f / 45,
  32.0f / 45, -16.0f / 45, 8.0f / 45, -4.0f / 45, 2.0f / 45,
  0.0f, 0.0f, 0.0f, 0.0f, 1.0f,
};
static const float wino_at_mat[WINO_M * WINO_A] = {
  1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f,
  0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f, -0.5f, 0.0f,
  0.0f, 1.0f, 1.0f, 4.0f, 4.0f, 0.25f, 0.25f, 0.0f,
  0.0f, 1.0f, -1.0f, 8.0f, -8.0f, 0.125f, -0.125f, 1.0f,
};

#define TACH_VEC 512
#include "tach-cpu-vec.h"
#include "tach-cpu-winograd-k.h"
#undef TACH_VEC
#define TACH_VEC 256
#include "tach-cpu-vec.h"
#include "tach-cpu-winograd-k.h"
#undef TACH_VEC

gboolean
tach_cpu_wino_applies (const TachConvDesc *d, const TachCpuActLayout *act)
{
  int l = tach_cpu_isa_lanes ();
  int oh = d->H + 2 * d->pad_h - 4, ow = d->W + 2 * d->pad_w - 4;

  return l > 0 && d->block
         && d->precision == TACH_PRECISION_FP32
         && d->R == 5 && d->S == 5 && d->pad_h <= 4 && d->pad_w <= 4 && oh > 0 && ow > 0
         && d->C % l == 0 && d->K % l == 0
         && act->cb == l && !act->bf16 && act->sw == (size_t) l
         && act->sh == (size_t) ow * l && act->sc == (size_t) oh * ow * l
         && act->sn == (size_t) d->K * oh * ow;
}

void
tach_cpu_wino_free (TachBackend *be, TachCpuWino *wg)
{
  if (wg == NULL)
    return;
  tach_cpu_mem_free (be, wg->u);
  tach_cpu_mem_free (be, wg->ut);
  tach_cpu_mem_free (be, wg->scratch);
  g_free (wg);
}

TachCpuWino *
tach_cpu_wino_new (TachBackend *be, const TachConvDesc *d)
{
  TachCpuWino *wg = g_new0 (TachCpuWino, 1);
  long l2 = sysconf (_SC_LEVEL2_CACHE_SIZE);
  size_t budget = (size_t) (l2 > 0 ? l2 : 1 << 20) * 3 / 8;
  size_t tile_bytes, ck;
  int th, rows;

  wg->c = d->C;
  wg->k = d->K;
  wg->h = d->H;
  wg->w = d->W;
  wg->pad_h = d->pad_h;
  wg->pad_w = d->pad_w;
  wg->oh = d->H + 2 * d->pad_h - 4;
  wg->ow = d->W + 2 * d->pad_w - 4;
  th = (wg->oh + WINO_M - 1) / WINO_M;
  wg->tw = (wg->ow + WINO_M - 1) / WINO_M;
  wg->tiles = th * wg->tw;
  /* As many tile rows a chunk as keep its two transforms in 3/8 of L2. */
  tile_bytes = (size_t) WINO_P * (d->C + d->K) * sizeof (float);
  rows = (int) CLAMP (budget / (tile_bytes * wg->tw), 1, (size_t) th);
  wg->chunk = rows * wg->tw;
  wg->threads = MAX ((int) be->threads, 1);
  ck = (size_t) d->C * d->K;
  wg->per_thread = (size_t) WINO_P * wg->chunk * (d->C + d->K) + WINO_P * ck + (size_t) d->K;
  /* Whole cache lines per thread. */
  wg->per_thread = (wg->per_thread + 15) / 16 * 16;
  wg->u = tach_cpu_mem_alloc (be, WINO_P * ck * sizeof (float));
  wg->ut = tach_cpu_mem_alloc (be, WINO_P * ck * sizeof (float));
  wg->scratch = tach_cpu_mem_alloc (be, wg->per_thread * wg->threads * sizeof (float));
  if (!tach_backend_ok (be))
    {
      tach_cpu_wino_free (be, wg);
      return NULL;
    }
  return wg;
}

/* Thread @t's scratch. */
static void
thread_scratch (const TachCpuWino *wg, int t, float **v, float **m, float **du, float **db)
{
  float *base = wg->scratch + (size_t) t * wg->per_thread;

  *v = base;
  *m = *v + (size_t) WINO_P * wg->chunk * wg->c;
  *du = *m + (size_t) WINO_P * wg->chunk * wg->k;
  *db = *du + (size_t) WINO_P * wg->c * wg->k;
}

/* Part @t's share of the images [0, count), one of wg->threads
 * contiguous runs (FALSE: none), and its scratch. */
static gboolean
thread_part (const TachCpuWino *wg, int t, int count, int *first, int *n, float **v,
             float **m, float **du, float **db)
{
  int base = count / wg->threads, extra = count % wg->threads;

  *first = t * base + MIN (t, extra);
  *n = base + (t < extra ? 1 : 0);
  thread_scratch (wg, t, v, m, du, db);
  return *n > 0;
}

void
tach_cpu_wino_filters (TachBackend *be, TachCpuWino *wg, const float *w)
{
  (void) be;
  if (tach_cpu_isa_lanes () == 16)
    wino_filters_avx512 (wg, w, wg->u, wg->ut, wg->gather);
  else
    wino_filters_avx2 (wg, w, wg->u, wg->ut, wg->gather);
}

void
tach_cpu_wino_forward (TachBackend *be, TachCpuWino *wg, const float *x, const float *b,
                       int n0, int count, float *act)
{
  const gboolean wide = tach_cpu_isa_lanes () == 16;

  tach_cpu_bind_threads (be);
#pragma omp parallel for schedule (static)
  for (int t = 0; t < wg->threads; t++)
    {
      int first, n;
      float *v, *m, *du, *db;

      if (thread_part (wg, t, count, &first, &n, &v, &m, &du, &db))
        (wide ? wino_forward_images_avx512 : wino_forward_images_avx2) (
          wg, x, b, n0 + first, n, act + (size_t) first * wg->k * wg->oh * wg->ow, v, m);
    }
}

void
tach_cpu_wino_backward (TachBackend *be, TachCpuWino *wg, const float *x, const float *dact,
                        int count, float *dx, float *dw, float *db)
{
  const gboolean wide = tach_cpu_isa_lanes () == 16;
  const size_t ck = (size_t) wg->c * wg->k;
  float *du0, *db0, *unused_v, *unused_m;

  tach_cpu_bind_threads (be);
#pragma omp parallel
  {
#pragma omp for schedule (static)
    for (int t = 0; t < wg->threads; t++)
      {
        int first, n;
        float *v, *m, *du, *dbt;
        gboolean some = thread_part (wg, t, count, &first, &n, &v, &m, &du, &dbt);

        memset (du, 0, WINO_P * ck * sizeof (float));
        memset (dbt, 0, (size_t) wg->k * sizeof (float));
        if (some)
          (wide ? wino_backward_images_avx512 : wino_backward_images_avx2) (
            wg, x, dact, first, n, dx, du, dbt, v, m);
      }
    /* (The loop's implied barrier.)  The parts' sums into part 0's, in
     * part order, each slice of the elements by one thread. */
#pragma omp for schedule (static)
    for (int t = 0; t < wg->threads; t++)
      {
        float *sum, *dbs, *sv, *sm;
        size_t total = WINO_P * ck, per = (total / wg->threads + 15) / 16 * 16;
        size_t lo = MIN (total, (size_t) t * per), hi = MIN (total, lo + per);

        thread_scratch (wg, 0, &sv, &sm, &sum, &dbs);
        for (int o = 1; o < wg->threads; o++)
          {
            float *other, *odb, *ov, *om;

            thread_scratch (wg, o, &ov, &om, &other, &odb);
            for (size_t i = lo; i < hi; i++)
              sum[i] += other[i];
          }
      }
  }
  thread_scratch (wg, 0, &unused_v, &unused_m, &du0, &db0);
  for (int o = 1; o < wg->threads; o++)
    {
      float *other, *odb, *ov, *om;

      thread_scratch (wg, o, &ov, &om, &other, &odb);
      for (int i = 0; i < wg->k; i++)
        db0[i] += odb[i];
    }
  memcpy (db, db0, (size_t) wg->k * sizeof (float));
  if (wide)
    wino_dfilters_avx512 (wg, du0, dw, wg->gather);
  else
    wino_dfilters_avx2 (wg, du0, dw, wg->gather);
}
