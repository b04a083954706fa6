/* tach-cpu-attention.c: the CPU backend's fused attention (the gpt
 * workload's attention=fused): o = softmax (scale q k^T, causal) v
 * without the [Tq, Tk] matrix in memory, and its backward from the
 * log-sum-exp of each row.
 *
 * At AVX2 and AVX-512 the kernels of tach-cpu-attention-k.h run: blocks of
 * query rows over tiles of keys with an online softmax (prefill, training,
 * kv-cache=none's steps), split between the threads by (batch, head,
 * block of rows); a decode step's few rows each against the whole cache,
 * split by (batch, head, row); backward one (batch, head) per thread.  At
 * the baseline, plain loops a row at a time.  Each output is one thread's
 * whatever the thread count, so the count changes no result.  Training's
 * dropout on the probabilities (TachAttnDropout) is applied to each tile's
 * probabilities after their sum joins the row's normaliser, before the
 * product with V, and regenerated in backward: the mask of the naive
 * attention's dropout_fwd, element by element.  Threads: the engine
 * thread.
 */
#include <math.h>
#include <string.h>

#include "tach-cpu-private.h"
#include "tach-rand.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("no-trapping-math")
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && defined(__ELF__)
#define TACH_CPU_VEC_KERNELS 1
#endif

/* Rows of a register block (tach-cpu-attention-k.h), query rows per block
 * of the tiled passes (eight register blocks), keys per tile; and the
 * fewest query rows that the tiled forward takes (fewer: a decode step,
 * each row against the cache as it is stored, K not transposed). */
#define ATT_RB 6
#define ATT_QB 48
#define ATT_KT 64
#define ATT_TILED_MIN_ROWS 8

/* One (batch, head) pair's dropout: the mask's key, the element of its
 * row 0, key 0 (first + pair Tq Tk), its rows' length Tk, p and 1/(1-p). */
typedef struct {
  uint64_t key, base, ld;
  float    p, inv;
} AttDrop;

/* @d for pair @pair of a pass of @tq rows over @tk keys; NULL where
 * nothing drops. */
static const AttDrop *
att_drop_pair (const AttDrop *d, AttDrop *pair_drop, int pair, int tq, int tk)
{
  if (d == NULL)
    return NULL;
  *pair_drop = *d;
  pair_drop->base = d->base + (uint64_t) pair * (uint64_t) tq * (uint64_t) tk;
  pair_drop->ld = (uint64_t) tk;
  return pair_drop;
}

/* Whether probability (@i, @j) of @d's pair is kept: its scale, else 0. */
static inline float
att_keep (const AttDrop *d, int i, int j)
{
  return tach_rand_uniform_key (d->key, d->base + (uint64_t) i * d->ld + (uint64_t) j) >= d->p
         ? d->inv : 0.0f;
}

/* Row @i's probabilities s[0, n) of the keys from @j0, each kept (times
 * 1/(1-p)) or dropped. */
static inline void
att_drop_row (const AttDrop *d, float *s, int i, int j0, int n)
{
  uint64_t e0 = d->base + (uint64_t) i * d->ld + (uint64_t) j0;

#pragma omp simd
  for (int j = 0; j < n; j++)
    s[j] = tach_rand_uniform_key (d->key, e0 + (uint64_t) j) >= d->p ? s[j] * d->inv : 0.0f;
}

#ifdef TACH_CPU_VEC_KERNELS
/* K [t, hd] to K^T [hd, ldt], eight keys at a time (in registers where
 * the CPU runs AVX): a plain loop, which read with a stride of hd, took
 * a tenth of training's forward. */
static void
att_transpose (const float *k, float *kt, int t, int hd, size_t ldt)
{
  for (size_t j0 = 0; j0 < (size_t) t; j0 += 8)
    tach_cpu_transpose_rows (j0, MIN ((size_t) t, j0 + 8), (size_t) hd, k, (size_t) hd, kt, ldt);
}

/* The fused attention's scratch (K^T of every head, each thread's tiles),
 * the backend's and kept between calls, counted in its memory: allocated
 * per call, a training step's K^T faulted its pages in every call.  NULL
 * (and the sticky error) when memory runs out. */
static float *
att_scratch (TachBackend *be, size_t floats)
{
  TachCpuBackend *cpu = TACH_CPU (be);

  if (cpu->att_scratch_floats < floats)
    {
      if (cpu->att_scratch != NULL)
        tach_cpu_mem_free (be, cpu->att_scratch);
      cpu->att_scratch = tach_cpu_mem_alloc (be, floats * sizeof (float));
      cpu->att_scratch_floats = cpu->att_scratch != NULL ? floats : 0;
    }
  return cpu->att_scratch;
}

#define TACH_VEC 512
#include "tach-cpu-vec.h"
#include "tach-cpu-attention-k.h"
#undef TACH_VEC
#define TACH_VEC 256
#include "tach-cpu-vec.h"
#include "tach-cpu-attention-k.h"
#undef TACH_VEC

typedef void (*AttFwdRows) (const float *q, const float *kt, size_t ldkt, const float *v,
                            float *o, float *lse, int i0, int rows, int tk, int hd, int pos,
                            float scale, const AttDrop *drop, float *sc, float *oacc, float *m,
                            float *l);
typedef float (*AttFwdRow) (const float *q, const float *k, const float *v, float *o, int valid,
                            int hd, float scale, float *s);

typedef void (*AttBwdHead) (const float *q, const float *k, const float *v, const float *o,
                            const float *dout, const float *lse, float *dq, float *dk,
                            float *dv, int t, int hd, float scale, const AttDrop *drop,
                            float *kt, float *vt, size_t ldt, float *dd, float *sc, float *dp);

/* The kernels of the CPU's level; NULL at the baseline. */
typedef struct {
  AttFwdRows fwd_rows;
  AttFwdRow  fwd_row;
  AttBwdHead bwd_head;
} AttKernels;

static const AttKernels *
att_kernels (void)
{
  static const AttKernels avx512 = { att_fwd_rows_avx512, att_fwd_row_avx512,
                                     att_bwd_head_avx512 };
  static const AttKernels avx2 = { att_fwd_rows_avx2, att_fwd_row_avx2, att_bwd_head_avx2 };

  switch (tach_cpu_isa ())
    {
    case TACH_CPU_ISA_AVX512: return &avx512;
    case TACH_CPU_ISA_AVX2: return &avx2;
    case TACH_CPU_ISA_BASELINE:
    default: return NULL;
    }
}
#endif

/* The keys that query row @i of a block at @pos sees. */
static inline int
attention_valid (int i, int tk, int pos)
{
  return MIN (tk, pos + i + 1);
}

TACH_CPU_SIMD_BODY float
dot_body (const float *restrict a, const float *restrict b, int n)
{
  float s = 0.0f;

#pragma omp simd reduction(+:s)
  for (int d = 0; d < n; d++)
    s += a[d] * b[d];
  return s;
}

/* y += alpha x */
TACH_CPU_SIMD_BODY void
axpy_body (float *restrict y, float alpha, const float *restrict x, int n)
{
#pragma omp simd
  for (int d = 0; d < n; d++)
    y[d] += alpha * x[d];
}

/* One query row (row @i of its pair) against its @valid keys: the scores
 * into @s, their softmax, dropped by @drop (NULL: none), o = p v and the
 * row's log-sum-exp. */
TACH_CPU_SIMD_BODY float
attention_row_body (const float *restrict q, const float *restrict k, const float *restrict v,
                    float *restrict o, float *restrict s, int valid, int hd, float scale,
                    const AttDrop *drop, int i)
{
  float m = -INFINITY, sum = 0.0f, inv;

  for (int j = 0; j < valid; j++)
    {
      s[j] = scale * dot_body (q, k + (size_t) j * hd, hd);
      m = MAX (m, s[j]);
    }
#pragma omp simd reduction(+:sum)
  for (int j = 0; j < valid; j++)
    {
      float e = tach_cpu_fast_expf (s[j] - m);

      s[j] = e;
      sum += e;
    }
  memset (o, 0, sizeof (float) * (size_t) hd);
  inv = 1.0f / sum;
  if (drop != NULL)
    att_drop_row (drop, s, i, 0, valid);
  for (int j = 0; j < valid; j++)
    axpy_body (o, s[j] * inv, v + (size_t) j * hd, hd);
  return m + logf (sum);
}

TACH_CPU_SIMD_DISPATCH_RET (static, float, attention_row,
                            (const float *restrict q, const float *restrict k,
                             const float *restrict v, float *restrict o, float *restrict s,
                             int valid, int hd, float scale, const AttDrop *drop, int i),
                            (q, k, v, o, s, valid, hd, scale, drop, i))

/* The baseline's forward: a row at a time, each (batch, head) pair a
 * thread's. */
static void
att_fwd_plain (TachBackend *be, const float *q, const float *k, const float *v, float *o,
               float *lse, int bh, int tq, int tk, int cap, int hd, int pos, float scale,
               const AttDrop *drop)
{
  tach_cpu_bind_threads (be);
#pragma omp parallel if ((size_t) bh * tq * tk * hd >= TACH_CPU_PARALLEL_MIN)
  {
    float *s = g_new (float, MAX (tk, 1));

#pragma omp for schedule (static)
    for (int p = 0; p < bh; p++)
      for (int i = 0; i < tq; i++)
        {
          size_t qo = ((size_t) p * tq + i) * hd;
          AttDrop pd;
          float l = attention_row (q + qo, k + (size_t) p * cap * hd, v + (size_t) p * cap * hd,
                                   o + qo, s, attention_valid (i, tk, pos), hd, scale,
                                   att_drop_pair (drop, &pd, p, tq, tk), i);

          if (lse != NULL)
            lse[(size_t) p * tq + i] = l;
        }
    g_free (s);
  }
}

#ifdef TACH_CPU_VEC_KERNELS
/* Prefill and training: K^T of every (batch, head) pair packed first,
 * then the blocks of query rows, the costlier (later, under the causal
 * mask) taken as threads come free. */
static void
att_fwd_tiled (TachBackend *be, AttFwdRows rows_fn, const float *q, const float *k,
               const float *v, float *o, float *lse, int bh, int tq, int tk, int cap, int hd,
               int pos, float scale, const AttDrop *drop)
{
  int kend = MIN (tk, pos + tq), blocks = (tq + ATT_QB - 1) / ATT_QB;
  size_t ldkt = ((size_t) kend + 15) / 16 * 16, heads = (size_t) bh * hd * ldkt;
  size_t each = (size_t) ATT_QB * ATT_KT + (size_t) ATT_QB * hd + 2 * ATT_QB;
  float *kt = att_scratch (be, heads + be->threads * each);

  if (kt == NULL)
    return;
  tach_cpu_bind_threads (be);
#pragma omp parallel if ((size_t) bh * tq * kend * hd >= TACH_CPU_PARALLEL_MIN)
  {
    float *sc = kt + heads + (size_t) omp_get_thread_num () * each;
    float *oacc = sc + (size_t) ATT_QB * ATT_KT, *m = oacc + (size_t) ATT_QB * hd;

#pragma omp for schedule (static)
    for (int p = 0; p < bh; p++)
      att_transpose (k + (size_t) p * cap * hd, kt + (size_t) p * hd * ldkt, kend, hd, ldkt);
#pragma omp for schedule (dynamic)
    for (int it = 0; it < bh * blocks; it++)
      {
        int p = it / blocks, i0 = it % blocks * ATT_QB;
        size_t qo = (size_t) p * tq * hd;
        AttDrop pd;

        rows_fn (q + qo, kt + (size_t) p * hd * ldkt, ldkt, v + (size_t) p * cap * hd, o + qo,
                 lse != NULL ? lse + (size_t) p * tq : NULL, i0, MIN (ATT_QB, tq - i0), tk, hd,
                 pos, scale, att_drop_pair (drop, &pd, p, tq, tk), sc, oacc, m, m + ATT_QB);
      }
  }
}

/* A decode step: each of the few rows against the cache as stored. */
static void
att_fwd_rows_each (TachBackend *be, AttFwdRow row_fn, const float *q, const float *k,
                   const float *v, float *o, float *lse, int bh, int tq, int tk, int cap,
                   int hd, int pos, float scale)
{
  int failed = 0;

  tach_cpu_bind_threads (be);
#pragma omp parallel if ((size_t) bh * tq * tk * hd >= TACH_CPU_PARALLEL_MIN)
  {
    float *s = g_new (float, MAX (tk, 1));

#pragma omp for schedule (static)
    for (int it = 0; it < bh * tq; it++)
      {
        int p = it / tq, i = it % tq;
        float l = row_fn (q + (size_t) it * hd, k + (size_t) p * cap * hd,
                          v + (size_t) p * cap * hd, o + (size_t) it * hd,
                          attention_valid (i, tk, pos), hd, scale, s);

        if (isnan (l))
          {
#pragma omp atomic write
            failed = 1;
          }
        if (lse != NULL)
          lse[it] = l;
      }
    g_free (s);
  }
  if (failed)
    tach_cpu_dnnl_fail (be, dnnl_runtime_error, "dnnl_sgemm (attention's scores)", __FILE__,
                        __LINE__);
}
#endif

/* @drop as the kernels take it: NULL where nothing drops. */
static const AttDrop *
att_drop_init (TachBackend *be, const TachAttnDropout *drop, AttDrop *d)
{
  if (!(drop->p > 0.0f))
    return NULL;
  d->key = tach_rand_key (drop->seed, tach_backend_host_counter (be, drop->counter));
  d->base = drop->first;
  d->ld = 0;
  d->p = drop->p;
  d->inv = 1.0f / (1.0f - drop->p);
  return d;
}

void
tach_cpu_attention_fwd (TachBackend *be, const float *q, const float *k, const float *v,
                        float *o, float *lse, int B, int H, int tq, int tk, int cap, int hd,
                        int pos, float scale, TachAttnDropout drop)
{
  int bh = B * H;
  AttDrop d;
  const AttDrop *dp = att_drop_init (be, &drop, &d);
#ifdef TACH_CPU_VEC_KERNELS
  const AttKernels *kn = att_kernels ();
#endif

  pos = tach_backend_host_pos (be, pos);
  if (bh <= 0 || tq <= 0 || hd <= 0)
    return;
#ifdef TACH_CPU_VEC_KERNELS
  /* A decode step's rows never drop (generation has no dropout): a
   * training pass of few rows takes the tiled kernel, which does. */
  if (kn != NULL && (tq >= ATT_TILED_MIN_ROWS || dp != NULL))
    {
      att_fwd_tiled (be, kn->fwd_rows, q, k, v, o, lse, bh, tq, tk, cap, hd, pos, scale, dp);
      return;
    }
  if (kn != NULL)
    {
      att_fwd_rows_each (be, kn->fwd_row, q, k, v, o, lse, bh, tq, tk, cap, hd, pos, scale);
      return;
    }
#endif
  att_fwd_plain (be, q, k, v, o, lse, bh, tq, tk, cap, hd, pos, scale, dp);
}

/* One (batch, head) pair's backward over t positions: p recomputed from
 * the log-sum-exp, and with @drop its kept value p' (p times the kept
 * scale, or 0): dv = p'^T do, ds = p (m (do v^T) - rowsum (do o)) with m
 * the kept scale, dq = scale ds k, dk = scale ds^T q.  rowsum (do o) is
 * sum_j p_j dp_j whether or not o was dropped. */
TACH_CPU_SIMD_BODY void
attention_bwd_head_body (const float *restrict q, const float *restrict k,
                         const float *restrict v, const float *restrict o,
                         const float *restrict dout, const float *restrict lse,
                         float *restrict dq, float *restrict dk, float *restrict dv, int t,
                         int hd, float scale, const AttDrop *drop)
{
  size_t n = (size_t) t * hd;

  memset (dq, 0, sizeof (float) * n);
  memset (dk, 0, sizeof (float) * n);
  memset (dv, 0, sizeof (float) * n);
  for (int i = 0; i < t; i++)
    {
      const float *qi = q + (size_t) i * hd, *doi = dout + (size_t) i * hd;
      float di = dot_body (doi, o + (size_t) i * hd, hd);
      float *dqi = dq + (size_t) i * hd;

      for (int j = 0; j <= i; j++)
        {
          const float *kj = k + (size_t) j * hd, *vj = v + (size_t) j * hd;
          float p = tach_cpu_fast_expf (scale * dot_body (qi, kj, hd) - lse[i]);
          float keep = drop != NULL ? att_keep (drop, i, j) : 1.0f;
          float ds = p * (keep * dot_body (doi, vj, hd) - di);

          axpy_body (dv + (size_t) j * hd, p * keep, doi, hd);
          axpy_body (dqi, scale * ds, kj, hd);
          axpy_body (dk + (size_t) j * hd, scale * ds, qi, hd);
        }
    }
}

TACH_CPU_SIMD_DISPATCH (static, attention_bwd_head,
                        (const float *restrict q, const float *restrict k,
                         const float *restrict v, const float *restrict o,
                         const float *restrict dout, const float *restrict lse,
                         float *restrict dq, float *restrict dk, float *restrict dv, int t,
                         int hd, float scale, const AttDrop *drop),
                        (q, k, v, o, dout, lse, dq, dk, dv, t, hd, scale, drop))

#ifdef TACH_CPU_VEC_KERNELS
static void
att_bwd_tiled (TachBackend *be, AttBwdHead head_fn, const float *q, const float *k,
               const float *v, const float *o, const float *dout, const float *lse, float *dq,
               float *dk, float *dv, int bh, int t, int hd, float scale, const AttDrop *drop)
{
  size_t ldt = ((size_t) t + 15) / 16 * 16, tile = (size_t) ATT_QB * ATT_KT;
  size_t each = 2 * hd * ldt + (size_t) t + 2 * tile;
  float *scratch = att_scratch (be, be->threads * each);

  if (scratch == NULL)
    return;
  tach_cpu_bind_threads (be);
#pragma omp parallel if ((size_t) bh * t * t * hd >= TACH_CPU_PARALLEL_MIN)
  {
    float *kt = scratch + (size_t) omp_get_thread_num () * each;
    float *vt = kt + hd * ldt, *dd = vt + hd * ldt, *sc = dd + t;

#pragma omp for schedule (dynamic)
    for (int p = 0; p < bh; p++)
      {
        size_t off = (size_t) p * t * hd;
        AttDrop pd;

        head_fn (q + off, k + off, v + off, o + off, dout + off, lse + (size_t) p * t, dq + off,
                 dk + off, dv + off, t, hd, scale, att_drop_pair (drop, &pd, p, t, t), kt, vt,
                 ldt, dd, sc, sc + tile);
      }
  }
}
#endif

void
tach_cpu_attention_bwd (TachBackend *be, const float *q, const float *k, const float *v,
                        const float *o, const float *dout, const float *lse, float *dq,
                        float *dk, float *dv, int B, int H, int t, int hd, float scale,
                        TachAttnDropout drop)
{
  int bh = B * H;
  AttDrop d;
  const AttDrop *dp = att_drop_init (be, &drop, &d);

  if (bh <= 0 || t <= 0 || hd <= 0)
    return;
#ifdef TACH_CPU_VEC_KERNELS
  if (att_kernels () != NULL)
    {
      att_bwd_tiled (be, att_kernels ()->bwd_head, q, k, v, o, dout, lse, dq, dk, dv, bh, t, hd,
                     scale, dp);
      return;
    }
#endif
  tach_cpu_bind_threads (be);
#pragma omp parallel for schedule (static) if ((size_t) bh * t * t * hd >= TACH_CPU_PARALLEL_MIN)
  for (int p = 0; p < bh; p++)
    {
      size_t off = (size_t) p * t * hd;
      AttDrop pd;

      attention_bwd_head (q + off, k + off, v + off, o + off, dout + off, lse + (size_t) p * t,
                          dq + off, dk + off, dv + off, t, hd, scale,
                          att_drop_pair (dp, &pd, p, t, t));
    }
}
