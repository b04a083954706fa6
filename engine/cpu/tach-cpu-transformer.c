/* tach-cpu-transformer.c: the CPU backend's Transformer ops (the gpt
 * workload), but for the fused attention (tach-cpu-attention.c): the
 * strided batched product, the add and scale passes, LayerNorm, GPT-2's
 * GELU, the heads' split and merge, the naive attention's causal softmax
 * and the embedding's gradient.
 *
 * Every output element is computed by one thread, and the sums over rows
 * (LayerNorm's parameter gradients) run over fixed blocks of rows whose
 * partial sums are added in order, so that the thread count changes no
 * result.  Threads: the engine thread.
 */
#include <math.h>
#include <string.h>

#include "tach-cpu-private.h"

/* As tach-cpu-ops.c: the loops that call tach_cpu_fast_expf vectorise
 * only where GCC may assume that floating-point ops do not trap. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("no-trapping-math")
#endif

#define LAYERNORM_EPS 1e-5f

/* ------------------------------------------------------ batched products */

void
tach_cpu_gemm_strided_batched (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k,
                               float alpha, const float *a, int lda, size_t stride_a,
                               const float *b, int ldb, size_t stride_b, float beta, float *c,
                               int ldc, size_t stride_c, int batch)
{
  dnnl_status_t status = dnnl_success;

  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  /* A batch of at least one product per thread (attention's per-head
   * products) runs a whole product per thread, each on the small kernels
   * or a serial dnnl_sgemm, the same bits whichever thread runs it: no
   * product pays for waking the pool, nor splits into slivers.  Fewer,
   * large products thread themselves (dnnl_sgemm on the pool). */
  if (batch < (int) be->threads
      && !tach_cpu_sgemm_takes_small (ta, tb, (size_t) m, (size_t) n, (size_t) k))
    {
      for (int i = 0; i < batch; i++)
        if (!tach_cpu_sgemm (be, ta, tb, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b,
                             ldb, beta, c + i * stride_c, ldc))
          return;
      return;
    }
  tach_cpu_bind_threads (be);
#pragma omp parallel for schedule (static)
  for (int i = 0; i < batch; i++)
    {
      dnnl_status_t st = tach_cpu_sgemm_local (ta, tb, m, n, k, alpha, a + i * stride_a, lda,
                                               b + i * stride_b, ldb, beta, c + i * stride_c,
                                               ldc);

      if (st != dnnl_success)
        {
#pragma omp atomic write
          status = st;
        }
    }
  if (status != dnnl_success)
    tach_cpu_dnnl_fail (be, status, "dnnl_sgemm (a product of a batch)", __FILE__, __LINE__);
}

/* ------------------------------------------------------ add and scale */

void
tach_cpu_add (TachBackend *be, const float *a, const float *b, float *y, size_t n)
{
  /* A decoded token's residual (one row) stays out of the OpenMP runtime. */
  if (n < TACH_CPU_PARALLEL_MIN)
    {
#pragma omp simd
      for (size_t i = 0; i < n; i++)
        y[i] = a[i] + b[i];
      return;
    }
  tach_cpu_bind_threads (be);
#pragma omp parallel for simd
  for (size_t i = 0; i < n; i++)
    y[i] = a[i] + b[i];
}

void
tach_cpu_scale (TachBackend *be, float *x, float alpha, size_t n)
{
  if (n < TACH_CPU_PARALLEL_MIN)
    {
#pragma omp simd
      for (size_t i = 0; i < n; i++)
        x[i] *= alpha;
      return;
    }
  tach_cpu_bind_threads (be);
#pragma omp parallel for simd
  for (size_t i = 0; i < n; i++)
    x[i] *= alpha;
}

/* Runs @body for each row @i of [0, @rows), rows of @dim floats: on the
 * calling thread when the whole is small (a decoded token's rows), else
 * the rows split between the pool's threads. */
#define FOR_ROWS(be, rows, dim, i, body)                                \
  G_STMT_START {                                                        \
    if ((size_t) (rows) * (size_t) (dim) < TACH_CPU_PARALLEL_MIN)       \
      {                                                                 \
        for (int i = 0; i < (rows); i++)                                \
          body;                                                         \
      }                                                                 \
    else                                                                \
      {                                                                 \
        tach_cpu_bind_threads (be);                                     \
        _Pragma ("omp parallel for schedule (static)")                  \
        for (int i = 0; i < (rows); i++)                                \
          body;                                                         \
      }                                                                 \
  } G_STMT_END

/* ------------------------------------------------------------ LayerNorm */

/* One row: s = x (+ res, written to @sum, which may be @x), its mean and
 * reciprocal standard deviation by two passes (the mean first, so that a
 * residual stream far from zero loses nothing to cancellation), then y. */
TACH_CPU_SIMD_BODY void
layernorm_row_body (int dim, const float *x, const float *res, float *sum,
                    const float *restrict gamma, const float *restrict beta, float *y,
                    float *restrict mean, float *restrict rstd)
{
  const float *s = x;
  float total = 0.0f, var = 0.0f, mu, r;

  if (res != NULL)
    {
#pragma omp simd
      for (int j = 0; j < dim; j++)
        sum[j] = x[j] + res[j];
      s = sum;
    }
#pragma omp simd reduction(+:total)
  for (int j = 0; j < dim; j++)
    total += s[j];
  mu = total / (float) dim;
#pragma omp simd reduction(+:var)
  for (int j = 0; j < dim; j++)
    {
      float d = s[j] - mu;

      var += d * d;
    }
  r = 1.0f / sqrtf (var / (float) dim + LAYERNORM_EPS);
#pragma omp simd
  for (int j = 0; j < dim; j++)
    y[j] = (s[j] - mu) * r * gamma[j] + beta[j];
  *mean = mu;
  *rstd = r;
}

TACH_CPU_SIMD_DISPATCH (static, layernorm_row,
                        (int dim, const float *x, const float *res, float *sum,
                         const float *restrict gamma, const float *restrict beta, float *y,
                         float *restrict mean, float *restrict rstd),
                        (dim, x, res, sum, gamma, beta, y, mean, rstd))

void
tach_cpu_layernorm_fwd (TachBackend *be, const float *x, const float *res, float *sum,
                        const float *gamma, const float *beta, float *y, float *mean,
                        float *rstd, int rows, int dim)
{
  FOR_ROWS (be, rows, dim, i,
            layernorm_row (dim, x + (size_t) i * dim,
                           res != NULL ? res + (size_t) i * dim : NULL,
                           res != NULL ? sum + (size_t) i * dim : NULL, gamma, beta,
                           y + (size_t) i * dim, mean + i, rstd + i));
}

/* Rows per block of LayerNorm's backward: each block's parameter
 * gradients are summed apart and the blocks' added in order, so the
 * split between threads changes no bit. */
#define LAYERNORM_BWD_ROWS 32

/* One row's input gradient, and its terms of dgamma and dbeta added to
 * @dg and @db.  dx = rstd (g - mean (g) - xhat mean (g xhat)) + dres, with
 * g = dy gamma; @dx may be @dres. */
TACH_CPU_SIMD_BODY void
layernorm_bwd_row_body (int dim, const float *restrict x, const float *restrict gamma,
                        float mean, float rstd, const float *restrict dy, const float *dres,
                        float *dx, float *restrict dg, float *restrict db)
{
  float sg = 0.0f, sgx = 0.0f, a, b;

#pragma omp simd reduction(+:sg, sgx)
  for (int j = 0; j < dim; j++)
    {
      float xhat = (x[j] - mean) * rstd;
      float g = dy[j] * gamma[j];

      sg += g;
      sgx += g * xhat;
      dg[j] += dy[j] * xhat;
      db[j] += dy[j];
    }
  a = sg / (float) dim;
  b = sgx / (float) dim;
  if (dres != NULL)
    {
#pragma omp simd
      for (int j = 0; j < dim; j++)
        {
          float xhat = (x[j] - mean) * rstd;

          dx[j] = rstd * (dy[j] * gamma[j] - a - xhat * b) + dres[j];
        }
    }
  else
    {
#pragma omp simd
      for (int j = 0; j < dim; j++)
        {
          float xhat = (x[j] - mean) * rstd;

          dx[j] = rstd * (dy[j] * gamma[j] - a - xhat * b);
        }
    }
}

TACH_CPU_SIMD_DISPATCH (static, layernorm_bwd_row,
                        (int dim, const float *restrict x, const float *restrict gamma,
                         float mean, float rstd, const float *restrict dy, const float *dres,
                         float *dx, float *restrict dg, float *restrict db),
                        (dim, x, gamma, mean, rstd, dy, dres, dx, dg, db))

static void
layernorm_bwd_block (int blk, const float *x, const float *gamma, const float *mean,
                     const float *rstd, const float *dy, const float *dres, float *dx,
                     float *part, int rows, int dim)
{
  float *dg = part + (size_t) blk * 2 * dim;
  float *db = dg + dim;
  int r1 = MIN (rows, (blk + 1) * LAYERNORM_BWD_ROWS);

  memset (dg, 0, sizeof (float) * 2 * (size_t) dim);
  for (int r = blk * LAYERNORM_BWD_ROWS; r < r1; r++)
    {
      size_t o = (size_t) r * dim;

      layernorm_bwd_row (dim, x + o, gamma, mean[r], rstd[r], dy + o,
                         dres != NULL ? dres + o : NULL, dx + o, dg, db);
    }
}

void
tach_cpu_layernorm_bwd (TachBackend *be, const float *x, const float *gamma, const float *mean,
                        const float *rstd, const float *dy, const float *dres, float *dx,
                        float *dgamma, float *dbeta, int rows, int dim)
{
  int blocks = (rows + LAYERNORM_BWD_ROWS - 1) / LAYERNORM_BWD_ROWS;
  g_autofree float *part = g_new (float, (size_t) MAX (blocks, 1) * 2 * MAX (dim, 1));
  g_autofree double *acc = g_new0 (double, (size_t) 2 * MAX (dim, 1));

  FOR_ROWS (be, blocks, (size_t) dim * LAYERNORM_BWD_ROWS, blk,
            layernorm_bwd_block (blk, x, gamma, mean, rstd, dy, dres, dx, part, rows, dim));
  for (int blk = 0; blk < blocks; blk++)
    {
      const float *p = part + (size_t) blk * 2 * dim;

      for (int j = 0; j < 2 * dim; j++)
        acc[j] += p[j];
    }
  for (int j = 0; j < dim; j++)
    {
      dgamma[j] = (float) acc[j];
      dbeta[j] = (float) acc[dim + j];
    }
}

/* ----------------------------------------------------------------- GELU */

/* GPT-2's GELU, 0.5 x (1 + tanh (u)) with u = sqrt (2/pi) (x + 0.044715
 * x^3), and its derivative; tanh (u) = 1 - 2 / (exp (2u) + 1) on the
 * branch-free exponential (clamped, so saturated inputs give -1 and 1),
 * so that the loops vectorise. */
#define GELU_K 0.7978845608028654f
#define GELU_C 0.044715f

static inline float
gelu_tanh (float x)
{
  float u = GELU_K * (x + GELU_C * x * x * x);

  return 1.0f - 2.0f / (tach_cpu_fast_expf (2.0f * u) + 1.0f);
}

TACH_CPU_SIMD_BODY void
gelu_row_body (int dim, float *x, const float *restrict bias, float *y)
{
  if (bias != NULL)
    {
#pragma omp simd
      for (int j = 0; j < dim; j++)
        {
          float v = x[j] + bias[j];

          x[j] = v;
          y[j] = 0.5f * v * (1.0f + gelu_tanh (v));
        }
    }
  else
    {
#pragma omp simd
      for (int j = 0; j < dim; j++)
        {
          float v = x[j];

          y[j] = 0.5f * v * (1.0f + gelu_tanh (v));
        }
    }
}

TACH_CPU_SIMD_DISPATCH (static, gelu_row,
                        (int dim, float *x, const float *restrict bias, float *y),
                        (dim, x, bias, y))

void
tach_cpu_gelu_fwd (TachBackend *be, float *x, const float *bias, float *y, int rows, int dim)
{
  FOR_ROWS (be, rows, dim, i,
            gelu_row (dim, x + (size_t) i * dim, bias, y + (size_t) i * dim));
}

TACH_CPU_SIMD_BODY void
gelu_bwd_span_body (size_t n, const float *x, const float *dy, float *dx)
{
#pragma omp simd
  for (size_t i = 0; i < n; i++)
    {
      float v = x[i], t = gelu_tanh (v);
      float du = GELU_K * (1.0f + 3.0f * GELU_C * v * v);

      dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
    }
}

TACH_CPU_SIMD_DISPATCH (static, gelu_bwd_span,
                        (size_t n, const float *x, const float *dy, float *dx),
                        (n, x, dy, dx))

/* Elements per span of the pointwise passes over flat arrays. */
#define SPAN 4096

void
tach_cpu_gelu_bwd (TachBackend *be, const float *x, const float *dy, float *dx, size_t n)
{
  size_t spans = (n + SPAN - 1) / SPAN;

  FOR_ROWS (be, (int) spans, SPAN, s,
            gelu_bwd_span (MIN (SPAN, n - (size_t) s * SPAN), x + (size_t) s * SPAN,
                           dy + (size_t) s * SPAN, dx + (size_t) s * SPAN));
}

/* ---------------------------------------------------------------- heads */

/* Row @r = b T + t of x [B*T, ldx] and its H heads in y [B, H, cap, hd] at
 * position pos + t: copied one way or the other. */
static inline void
heads_row (float *x, int ldx, float *y, int r, int T, int H, int hd, int cap, int pos,
           gboolean split)
{
  int b = r / T, t = r % T;
  size_t bytes = sizeof (float) * (size_t) hd;

  for (int h = 0; h < H; h++)
    {
      float *xr = x + (size_t) r * ldx + (size_t) h * hd;
      float *yr = y + (((size_t) b * H + h) * cap + pos + t) * hd;

      if (split)
        memcpy (yr, xr, bytes);
      else
        memcpy (xr, yr, bytes);
    }
}

void
tach_cpu_heads_split (TachBackend *be, const float *x, int ldx, float *y, int B, int T, int H,
                      int hd, int cap, int pos)
{
  pos = tach_backend_host_pos (be, pos);
  FOR_ROWS (be, B * T, H * hd, r,
            heads_row ((float *) x, ldx, y, r, T, H, hd, cap, pos, TRUE));
}

void
tach_cpu_heads_merge (TachBackend *be, const float *y, float *x, int ldx, int B, int T, int H,
                      int hd, int cap, int pos)
{
  pos = tach_backend_host_pos (be, pos);
  FOR_ROWS (be, B * T, H * hd, r,
            heads_row (x, ldx, (float *) y, r, T, H, hd, cap, pos, FALSE));
}

/* -------------------------------------------------------- causal softmax */

/* Row i of a [Tq, Tk] block: softmax (scale s) over its first @valid keys
 * (the causal mask), zero past them. */
TACH_CPU_SIMD_BODY void
causal_softmax_row_body (float *restrict s, int valid, int tk, float scale)
{
  float m = -INFINITY, sum = 0.0f, inv;

#pragma omp simd reduction(max:m)
  for (int j = 0; j < valid; j++)
    m = MAX (m, scale * s[j]);
#pragma omp simd reduction(+:sum)
  for (int j = 0; j < valid; j++)
    {
      float e = tach_cpu_fast_expf (scale * s[j] - m);

      s[j] = e;
      sum += e;
    }
  inv = 1.0f / sum;
#pragma omp simd
  for (int j = 0; j < valid; j++)
    s[j] *= inv;
  for (int j = valid; j < tk; j++)
    s[j] = 0.0f;
}

TACH_CPU_SIMD_DISPATCH (static, causal_softmax_row,
                        (float *restrict s, int valid, int tk, float scale),
                        (s, valid, tk, scale))

/* The keys that query row @i of a block at @pos sees. */
static inline int
causal_valid (int i, int tk, int pos)
{
  return MIN (tk, pos + i + 1);
}

void
tach_cpu_causal_softmax_fwd (TachBackend *be, float *s, int bh, int tq, int tk, int pos,
                             float scale)
{
  pos = tach_backend_host_pos (be, pos);
  FOR_ROWS (be, bh * tq, tk, r,
            causal_softmax_row (s + (size_t) r * tk, causal_valid (r % tq, tk, pos), tk, scale));
}

TACH_CPU_SIMD_BODY void
causal_softmax_bwd_row_body (const float *restrict p, const float *dp, float *ds, int tk,
                             float scale)
{
  float dot = 0.0f;

#pragma omp simd reduction(+:dot)
  for (int j = 0; j < tk; j++)
    dot += p[j] * dp[j];
#pragma omp simd
  for (int j = 0; j < tk; j++)
    ds[j] = scale * p[j] * (dp[j] - dot);
}

TACH_CPU_SIMD_DISPATCH (static, causal_softmax_bwd_row,
                        (const float *restrict p, const float *dp, float *ds, int tk,
                         float scale),
                        (p, dp, ds, tk, scale))

void
tach_cpu_causal_softmax_bwd (TachBackend *be, const float *p, const float *dp, float *ds,
                             int bh, int tq, int tk, float scale)
{
  FOR_ROWS (be, bh * tq, tk, r,
            causal_softmax_bwd_row (p + (size_t) r * tk, dp + (size_t) r * tk,
                                    ds + (size_t) r * tk, tk, scale));
}

/* ------------------------------------------------- embedding's gradient */

/* Columns per part of embedding_bwd: each part adds its columns of every
 * row in the order of the rows, so repeated tokens add in order whatever
 * thread runs the part. */
#define EMBEDDING_BWD_COLS 64

static void
embedding_bwd_cols (const float *dout, const int32_t *idx, float *dtable, int n, int dim,
                    int c0, int c1)
{
  for (int i = 0; i < n; i++)
    {
      const float *restrict src = dout + (size_t) i * dim;
      float *restrict dst = dtable + (size_t) idx[i] * dim;

#pragma omp simd
      for (int j = c0; j < c1; j++)
        dst[j] += src[j];
    }
}

void
tach_cpu_embedding_bwd (TachBackend *be, const float *dout, const int32_t *idx, float *dtable,
                        int n, int dim)
{
  int parts = (dim + EMBEDDING_BWD_COLS - 1) / EMBEDDING_BWD_COLS;

  if (!tach_cpu_tokens_valid (be, idx, n))
    return;
  FOR_ROWS (be, parts, (size_t) n * EMBEDDING_BWD_COLS, p,
            embedding_bwd_cols (dout, idx, dtable, n, dim, p * EMBEDDING_BWD_COLS,
                                MIN (dim, (p + 1) * EMBEDDING_BWD_COLS)));
}
