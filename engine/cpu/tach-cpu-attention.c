/* tach-cpu-attention.c: the CPU backend's fused attention (the gpt
 * workload's attention=fused): o = softmax (scale q k^T, causal) v
 * without the [Tq, Tk] matrix in memory, and its backward from the
 * log-sum-exp of each row.
 *
 * Each (batch, head) pair is one thread's, so the thread count changes no
 * result.  Threads: the engine thread.
 */
#include <math.h>
#include <string.h>

#include "tach-cpu-private.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("no-trapping-math")
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

/* One query row against its @valid keys: the scores into @s, their
 * softmax, o = p v and the row's log-sum-exp. */
TACH_CPU_SIMD_BODY float
attention_row_body (const float *restrict q, const float *restrict k, const float *restrict v,
                    float *restrict o, float *restrict s, int valid, int hd, float scale)
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
  for (int j = 0; j < valid; j++)
    axpy_body (o, s[j] * inv, v + (size_t) j * hd, hd);
  return m + logf (sum);
}

TACH_CPU_SIMD_DISPATCH_RET (static, float, attention_row,
                            (const float *restrict q, const float *restrict k,
                             const float *restrict v, float *restrict o, float *restrict s,
                             int valid, int hd, float scale),
                            (q, k, v, o, s, valid, hd, scale))

void
tach_cpu_attention_fwd (TachBackend *be, const float *q, const float *k, const float *v,
                        float *o, float *lse, int B, int H, int tq, int tk, int cap, int hd,
                        int pos, float scale)
{
  int bh = B * H;

  tach_cpu_bind_threads (be);
#pragma omp parallel if ((size_t) bh * tq * tk * hd >= TACH_CPU_PARALLEL_MIN)
  {
    float *s = g_new (float, MAX (tk, 1));

#pragma omp for schedule (static)
    for (int p = 0; p < bh; p++)
      for (int i = 0; i < tq; i++)
        {
          size_t qo = ((size_t) p * tq + i) * hd;
          float l = attention_row (q + qo, k + (size_t) p * cap * hd, v + (size_t) p * cap * hd,
                                   o + qo, s, attention_valid (i, tk, pos), hd, scale);

          if (lse != NULL)
            lse[(size_t) p * tq + i] = l;
        }
    g_free (s);
  }
}

/* One (batch, head) pair's backward over t positions: p recomputed from
 * the log-sum-exp, dv = p^T do, ds = p (do v^T - rowsum (do o)), dq = scale
 * ds k, dk = scale ds^T q. */
TACH_CPU_SIMD_BODY void
attention_bwd_head_body (const float *restrict q, const float *restrict k,
                         const float *restrict v, const float *restrict o,
                         const float *restrict dout, const float *restrict lse,
                         float *restrict dq, float *restrict dk, float *restrict dv, int t,
                         int hd, float scale)
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
          float ds = p * (dot_body (doi, vj, hd) - di);

          axpy_body (dv + (size_t) j * hd, p, doi, hd);
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
                         int hd, float scale),
                        (q, k, v, o, dout, lse, dq, dk, dv, t, hd, scale))

void
tach_cpu_attention_bwd (TachBackend *be, const float *q, const float *k, const float *v,
                        const float *o, const float *dout, const float *lse, float *dq,
                        float *dk, float *dv, int B, int H, int t, int hd, float scale)
{
  int bh = B * H;

  tach_cpu_bind_threads (be);
#pragma omp parallel for schedule (static) if ((size_t) bh * t * t * hd >= TACH_CPU_PARALLEL_MIN)
  for (int p = 0; p < bh; p++)
    {
      size_t off = (size_t) p * t * hd;

      attention_bwd_head (q + off, k + off, v + off, o + off, dout + off, lse + (size_t) p * t,
                          dq + off, dk + off, dv + off, t, hd, scale);
    }
}
