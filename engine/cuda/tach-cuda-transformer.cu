/* tach-cuda-transformer.cu: the Transformer ops' kernels (the gpt
 * workload) but the batched product (cuBLAS, tach-cuda-backend.c).
 *
 * Rows (LayerNorm, the causal softmax) are a warp's each.  Sums over rows
 * (LayerNorm's parameter gradients) and the embedding's gradient run in a
 * fixed order, no atomics, so a step gives the same bits eagerly or
 * replayed from a graph.  The fused attention is Tach's own tiled kernel
 * (FlashAttention's algorithm in fp32): a warp per query row, tiles of
 * ATT_TILE keys in shared memory, each lane one key of the tile for the
 * scores and ATT_DPL of the row's dimensions for the output, the softmax
 * online; backward in two passes that need no atomics, dQ by query rows
 * and dK, dV by key rows, both recomputing P from the log-sum-exp.
 */
#include <float.h>
#include <math.h>

#include "tach-cuda-kernels.h"
#include "tach-cuda-device.cuh"
#include "tach-rand.h"

#define ROWS_PER_BLOCK (TACH_THREADS / 32)
#define LN_EPS 1e-5f
#define GELU_K 0.7978845608028654f
#define GELU_C 0.044715f
/* Keys (or queries) per tile of the attention kernels, one per lane; the
 * dimensions each lane holds, so hd <= 32 * ATT_DPL (validation refuses
 * wider heads: TACH_CUDA_ATTENTION_HEAD_DIM_MAX). */
#define ATT_TILE 32
#define ATT_HD_MAX TACH_CUDA_ATTENTION_HEAD_DIM_MAX
#define ATT_DPL (ATT_HD_MAX / 32)
/* Blocks of the embedding's gradient: each owns the table rows v with v %
 * EMB_GROUPS == its index and adds their rows of dout in order of i. */
#define EMB_GROUPS 128

static __device__ __forceinline__ float
warp_sum (float v)
{
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync (TACH_WARP_FULL, v, o);
  return v;
}

static __device__ __forceinline__ float
warp_max (float v)
{
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf (v, __shfl_xor_sync (TACH_WARP_FULL, v, o));
  return v;
}

static unsigned int
blocks_for_rows (int rows)
{
  return (unsigned int) ((rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
}

/* ------------------------------------------------------ add and scale */

__global__ void
add_kernel (const float *a, const float *b, float *y, size_t n)
{
  GRID_STRIDE (i, n)
    y[i] = a[i] + b[i];
}

__global__ void
scale_kernel (float *x, float alpha, size_t n)
{
  GRID_STRIDE (i, n)
    x[i] *= alpha;
}

/* ------------------------------------------------------------ LayerNorm */

/* A warp per row: s = x (+ res, to @sum, which may be x), its mean, then
 * the variance about it (two passes, as the CPU's), then y. */
__global__ void
layernorm_fwd_kernel (const float *x, const float *res, float *sum, const float *gamma,
                      const float *beta, float *y, float *mean, float *rstd, int rows, int dim)
{
  int r = (int) blockIdx.x * ROWS_PER_BLOCK + (int) threadIdx.x / 32, lane = threadIdx.x % 32;
  const float *s;
  float t = 0.0f, v = 0.0f, mu, rs;

  if (r >= rows)
    return;
  s = x + (size_t) r * dim;
  if (res != NULL)
    {
      float *sr = sum + (size_t) r * dim;

      for (int j = lane; j < dim; j += 32)
        sr[j] = s[j] + res[(size_t) r * dim + j];
      s = sr;
    }
  for (int j = lane; j < dim; j += 32)
    t += s[j];
  mu = warp_sum (t) / (float) dim;
  for (int j = lane; j < dim; j += 32)
    v += (s[j] - mu) * (s[j] - mu);
  rs = 1.0f / sqrtf (warp_sum (v) / (float) dim + LN_EPS);
  for (int j = lane; j < dim; j += 32)
    y[(size_t) r * dim + j] = (s[j] - mu) * rs * gamma[j] + beta[j];
  if (lane == 0)
    {
      mean[r] = mu;
      rstd[r] = rs;
    }
}

/* A warp per row: dx = rstd (g - mean (g) - xhat mean (g xhat)) + dres,
 * g = dy gamma (dx may be dres). */
__global__ void
layernorm_dx_kernel (const float *x, const float *gamma, const float *mean, const float *rstd,
                     const float *dy, const float *dres, float *dx, int rows, int dim)
{
  int r = (int) blockIdx.x * ROWS_PER_BLOCK + (int) threadIdx.x / 32, lane = threadIdx.x % 32;
  const float *xr, *dyr;
  float sg = 0.0f, sgx = 0.0f, a, b, mu, rs;

  if (r >= rows)
    return;
  xr = x + (size_t) r * dim;
  dyr = dy + (size_t) r * dim;
  mu = mean[r];
  rs = rstd[r];
  for (int j = lane; j < dim; j += 32)
    {
      float g = dyr[j] * gamma[j];

      sg += g;
      sgx += g * (xr[j] - mu) * rs;
    }
  a = warp_sum (sg) / (float) dim;
  b = warp_sum (sgx) / (float) dim;
  for (int j = lane; j < dim; j += 32)
    {
      size_t e = (size_t) r * dim + j;

      dx[e] = rs * (dyr[j] * gamma[j] - a - (xr[j] - mu) * rs * b)
              + (dres != NULL ? dres[e] : 0.0f);
    }
}

/* dgamma and dbeta: 32 columns a block, its 8 warps' lanes each summing
 * every 8th row of a column in double, then the 8 sums in a fixed tree. */
__global__ void
layernorm_params_kernel (const float *x, const float *mean, const float *rstd, const float *dy,
                         float *dgamma, float *dbeta, int rows, int dim)
{
  __shared__ double part[2][ROWS_PER_BLOCK][32];
  int tx = threadIdx.x % 32, ty = threadIdx.x / 32, col = (int) blockIdx.x * 32 + tx;
  double g = 0.0, b = 0.0;

  if (col < dim)
    for (int r = ty; r < rows; r += ROWS_PER_BLOCK)
      {
        size_t e = (size_t) r * dim + col;

        g += (double) (dy[e] * (x[e] - mean[r]) * rstd[r]);
        b += (double) dy[e];
      }
  part[0][ty][tx] = g;
  part[1][ty][tx] = b;
  __syncthreads ();
  for (int s = ROWS_PER_BLOCK / 2; s > 0; s >>= 1)
    {
      if (ty < s)
        {
          part[0][ty][tx] += part[0][ty + s][tx];
          part[1][ty][tx] += part[1][ty + s][tx];
        }
      __syncthreads ();
    }
  if (ty == 0 && col < dim)
    {
      dgamma[col] = (float) part[0][0][tx];
      dbeta[col] = (float) part[1][0][tx];
    }
}

/* ----------------------------------------------------------------- GELU */

static __device__ __forceinline__ float
gelu_t (float v)
{
  return tanhf (GELU_K * (v + GELU_C * v * v * v));
}

__global__ void
gelu_fwd_kernel (float *x, const float *bias, float *y, size_t n, int dim)
{
  GRID_STRIDE (i, n)
    {
      float v = x[i];

      if (bias != NULL)
        {
          v += bias[i % dim];
          x[i] = v;
        }
      y[i] = 0.5f * v * (1.0f + gelu_t (v));
    }
}

__global__ void
gelu_bwd_kernel (const float *x, const float *dy, float *dx, size_t n)
{
  GRID_STRIDE (i, n)
    {
      float v = x[i], t = gelu_t (v);

      dx[i] = dy[i] * (0.5f * (1.0f + t)
                       + 0.5f * v * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * GELU_C * v * v));
    }
}

/* ---------------------------------------------------------------- heads */

/* Element e of the B*T*H*hd that move: x[b*T + t, h*hd + d] and y[b, h,
 * pos + t, d], one way (split) or the other.  Every position-taking kernel
 * adds *pos_dev (TachBackend.pos_offset) when it is not NULL: read as the
 * kernel runs, so that a replayed graph follows the device's position. */
__global__ void
heads_kernel (float *x, int ldx, float *y, int T, int H, int hd, int cap, int pos,
              const int32_t *pos_dev, size_t n, int split)
{
  if (pos_dev != NULL)
    pos += *pos_dev;
  GRID_STRIDE (e, n)
    {
      int d = (int) (e % hd), h = (int) (e / hd % H);
      size_t r = e / ((size_t) hd * H), b = r / T, t = r % T;
      float *xe = x + r * ldx + (size_t) h * hd + d;
      float *ye = y + ((b * H + h) * cap + pos + t) * hd + d;

      if (split)
        *ye = *xe;
      else
        *xe = *ye;
    }
}

/* -------------------------------------------------------- causal softmax */

__global__ void
causal_softmax_fwd_kernel (float *s, int rows, int tq, int tk, int pos, const int32_t *pos_dev,
                           float scale)
{
  int r = (int) blockIdx.x * ROWS_PER_BLOCK + (int) threadIdx.x / 32, lane = threadIdx.x % 32;
  float *row, m = -FLT_MAX, sum = 0.0f, inv;
  int valid;

  if (pos_dev != NULL)
    pos += *pos_dev;
  if (r >= rows)
    return;
  row = s + (size_t) r * tk;
  valid = min (tk, pos + r % tq + 1);
  for (int j = lane; j < valid; j += 32)
    m = fmaxf (m, scale * row[j]);
  m = warp_max (m);
  for (int j = lane; j < valid; j += 32)
    {
      float e = expf (scale * row[j] - m);

      row[j] = e;
      sum += e;
    }
  inv = 1.0f / warp_sum (sum);
  for (int j = lane; j < tk; j += 32)
    row[j] = j < valid ? row[j] * inv : 0.0f;
}

__global__ void
causal_softmax_bwd_kernel (const float *p, const float *dp, float *ds, int rows, int tk,
                           float scale)
{
  int r = (int) blockIdx.x * ROWS_PER_BLOCK + (int) threadIdx.x / 32, lane = threadIdx.x % 32;
  size_t o = (size_t) r * tk;
  float dot = 0.0f;

  if (r >= rows)
    return;
  for (int j = lane; j < tk; j += 32)
    dot += p[o + j] * dp[o + j];
  dot = warp_sum (dot);
  for (int j = lane; j < tk; j += 32)
    ds[o + j] = scale * p[o + j] * (dp[o + j] - dot);
}

/* ------------------------------------------------- embedding's gradient */

__global__ void
embedding_bwd_kernel (const float *dout, const int32_t *idx, float *dtable, int n, int dim)
{
  for (int i = 0; i < n; i++)
    {
      int v = idx[i];

      if (v < 0 || v % EMB_GROUPS != (int) blockIdx.x)
        continue;
      for (int j = threadIdx.x; j < dim; j += blockDim.x)
        dtable[(size_t) v * dim + j] += dout[(size_t) i * dim + j];
    }
}

/* ------------------------------------------------------------- attention */

/* Rows [@j0, @j0 + ATT_TILE) of the [.., hd] matrix @src to @dst (rows
 * hd + 1 apart: a lane per row reads without bank conflicts), zero from
 * row @end on; every thread of the block takes part. */
static __device__ __forceinline__ void
load_tile (float *dst, const float *src, int j0, int end, int hd)
{
  for (int e = threadIdx.x; e < ATT_TILE * hd; e += blockDim.x)
    {
      int r = e / hd, d = e % hd;

      dst[r * (hd + 1) + d] = j0 + r < end ? src[(size_t) (j0 + r) * hd + d] : 0.0f;
    }
}

/* @n rows from @row0 of [.., hd] @src to @dst (rows hd apart), zero past
 * @rows. */
static __device__ __forceinline__ void
load_rows (float *dst, const float *src, int row0, int n, int rows, int hd)
{
  for (int e = threadIdx.x; e < n * hd; e += blockDim.x)
    dst[e] = row0 + e / hd < rows ? src[(size_t) row0 * hd + e] : 0.0f;
}

static __device__ __forceinline__ float
dot_rows (const float *a, const float *b, int hd)
{
  float s = 0.0f;

  for (int d = 0; d < hd; d++)
    s += a[d] * b[d];
  return s;
}

/* The key of @d's mask as the kernel runs (its counter with the step
 * offset), 0 without dropout. */
static __device__ __forceinline__ uint64_t
attention_drop_key (const TachCudaAttnDrop &d)
{
  return d.p > 0.0f ? tach_rand_key (d.seed, effective_counter (d.counter, d.offset)) : 0;
}

/* Probability (@i, @j) of pair @bh (rows of @tk keys, @tq a pair) kept:
 * its scale, 1/(1-p), else 0; 1 without dropout. */
static __device__ __forceinline__ float
attention_keep (const TachCudaAttnDrop &d, uint64_t key, int bh, int tq, int tk, int i, int j)
{
  uint64_t e;

  if (!(d.p > 0.0f))
    return 1.0f;
  e = d.first + ((uint64_t) bh * (uint64_t) tq + (uint64_t) i) * (uint64_t) tk + (uint64_t) j;
  return tach_rand_uniform_key (key, e) >= d.p ? 1.0f / (1.0f - d.p) : 0.0f;
}

/* Forward: block (x, bh) holds query rows [x ROWS_PER_BLOCK, +
 * ROWS_PER_BLOCK) of head bh, a warp each; shared memory: K and V tiles
 * [ATT_TILE][hd + 1], the block's q rows [ROWS_PER_BLOCK][hd]. */
__global__ void
attention_fwd_kernel (const float *q, const float *k, const float *v, float *o, float *lse,
                      int tq, int tk, int cap, int hd, int pos0, const int32_t *pos_dev,
                      float scale, TachCudaAttnDrop drop)
{
  extern __shared__ float smem[];
  float *ks = smem, *vs = ks + ATT_TILE * (hd + 1), *qs = vs + ATT_TILE * (hd + 1);
  int pos = pos0 + (pos_dev != NULL ? *pos_dev : 0);
  int bh = blockIdx.y, row0 = (int) blockIdx.x * ROWS_PER_BLOCK;
  int w = threadIdx.x / 32, lane = threadIdx.x % 32, i = row0 + w;
  int kend = min (tk, pos + min (tq, row0 + ROWS_PER_BLOCK));
  int valid = min (tk, pos + i + 1);
  const float *kb = k + (size_t) bh * cap * hd, *vb = v + (size_t) bh * cap * hd;
  float m = -INFINITY, l = 0.0f, acc[ATT_DPL];
  uint64_t key = attention_drop_key (drop);

  for (int c = 0; c < ATT_DPL; c++)
    acc[c] = 0.0f;
  load_rows (qs, q + (size_t) bh * tq * hd, row0, ROWS_PER_BLOCK, tq, hd);
  for (int j0 = 0; j0 < kend; j0 += ATT_TILE)
    {
      __syncthreads ();
      load_tile (ks, kb, j0, kend, hd);
      load_tile (vs, vb, j0, kend, hd);
      __syncthreads ();
      if (i < tq && j0 < valid)
        {
          int j = j0 + lane;
          float s = j < valid ? scale * dot_rows (qs + w * hd, ks + lane * (hd + 1), hd)
                              : -INFINITY;
          float mnew = fmaxf (m, warp_max (s));
          float p = j < valid ? expf (s - mnew) : 0.0f, corr = expf (m - mnew);

          l = l * corr + warp_sum (p);
          /* The normaliser is the undropped softmax's; V takes the kept. */
          if (j < valid)
            p *= attention_keep (drop, key, bh, tq, tk, i, j);
          for (int c = 0; c < ATT_DPL; c++)
            acc[c] *= corr;
          for (int jj = 0; jj < ATT_TILE; jj++)
            {
              float pj = __shfl_sync (TACH_WARP_FULL, p, jj);

              for (int c = 0; c < ATT_DPL; c++)
                if (lane + 32 * c < hd)
                  acc[c] += pj * vs[jj * (hd + 1) + lane + 32 * c];
            }
          m = mnew;
        }
    }
  if (i >= tq)
    return;
  for (int c = 0; c < ATT_DPL; c++)
    if (lane + 32 * c < hd)
      o[((size_t) bh * tq + i) * hd + lane + 32 * c] = acc[c] / l;
  if (lse != NULL && lane == 0)
    lse[(size_t) bh * tq + i] = m + logf (l);
}

/* D = rowsum (dO O), a warp per row. */
__global__ void
attention_d_kernel (const float *o, const float *dout, float *dd, int rows, int hd)
{
  int r = (int) blockIdx.x * ROWS_PER_BLOCK + (int) threadIdx.x / 32, lane = threadIdx.x % 32;
  float s = 0.0f;

  if (r >= rows)
    return;
  for (int d = lane; d < hd; d += 32)
    s += o[(size_t) r * hd + d] * dout[(size_t) r * hd + d];
  s = warp_sum (s);
  if (lane == 0)
    dd[r] = s;
}

/* The kept probability and dS of query row @i against key @j (scores from
 * the rows at @qi, @kj; dP from @doi, @vj), @keep the dropout's scale of
 * the pair (1 without): 0 where masked. */
static __device__ __forceinline__ float
attention_ds (const float *qi, const float *kj, const float *doi, const float *vj, int hd,
              float scale, float lse_i, float d_i, int masked, float keep, float *p_out)
{
  float p = masked ? 0.0f : expf (scale * dot_rows (qi, kj, hd) - lse_i);

  *p_out = p * keep;
  return masked ? 0.0f : p * (keep * dot_rows (doi, vj, hd) - d_i);
}

/* dQ: as the forward, a warp per query row over tiles of keys j <= i:
 * dq = scale sum_j dS_ij k_j.  Shared: K and V tiles, the block's q and
 * dO rows. */
__global__ void
attention_dq_kernel (const float *q, const float *k, const float *v, const float *dout,
                     const float *lse, const float *dd, float *dq, int t, int hd, float scale,
                     TachCudaAttnDrop drop)
{
  extern __shared__ float smem[];
  float *ks = smem, *vs = ks + ATT_TILE * (hd + 1), *qs = vs + ATT_TILE * (hd + 1);
  float *dos = qs + ROWS_PER_BLOCK * hd;
  int bh = blockIdx.y, row0 = (int) blockIdx.x * ROWS_PER_BLOCK;
  int w = threadIdx.x / 32, lane = threadIdx.x % 32, i = row0 + w;
  int kend = min (t, row0 + ROWS_PER_BLOCK);
  size_t off = (size_t) bh * t * hd;
  float acc[ATT_DPL], li = 0.0f, di = 0.0f;
  uint64_t key = attention_drop_key (drop);

  for (int c = 0; c < ATT_DPL; c++)
    acc[c] = 0.0f;
  if (i < t)
    {
      li = lse[(size_t) bh * t + i];
      di = dd[(size_t) bh * t + i];
    }
  load_rows (qs, q + off, row0, ROWS_PER_BLOCK, t, hd);
  load_rows (dos, dout + off, row0, ROWS_PER_BLOCK, t, hd);
  for (int j0 = 0; j0 < kend; j0 += ATT_TILE)
    {
      __syncthreads ();
      load_tile (ks, k + off, j0, kend, hd);
      load_tile (vs, v + off, j0, kend, hd);
      __syncthreads ();
      if (i < t && j0 <= i)
        {
          int j = j0 + lane;
          float keep = j <= i ? attention_keep (drop, key, bh, t, t, i, j) : 0.0f;
          float p, ds = attention_ds (qs + w * hd, ks + lane * (hd + 1), dos + w * hd,
                                      vs + lane * (hd + 1), hd, scale, li, di, j > i, keep, &p);

          for (int jj = 0; jj < ATT_TILE; jj++)
            {
              float dsj = __shfl_sync (TACH_WARP_FULL, ds, jj);

              for (int c = 0; c < ATT_DPL; c++)
                if (lane + 32 * c < hd)
                  acc[c] += dsj * ks[jj * (hd + 1) + lane + 32 * c];
            }
        }
    }
  if (i >= t)
    return;
  for (int c = 0; c < ATT_DPL; c++)
    if (lane + 32 * c < hd)
      dq[off + (size_t) i * hd + lane + 32 * c] = scale * acc[c];
}

/* dK and dV: a warp per key row j over tiles of queries i >= j: dv =
 * sum_i P_ij dO_i, dk = scale sum_i dS_ij q_i.  Shared: q and dO tiles,
 * their lse and D, the block's k and v rows. */
__global__ void
attention_dkv_kernel (const float *q, const float *k, const float *v, const float *dout,
                      const float *lse, const float *dd, float *dk, float *dv, int t, int hd,
                      float scale, TachCudaAttnDrop drop)
{
  extern __shared__ float smem[];
  float *qs = smem, *dos = qs + ATT_TILE * (hd + 1), *ks = dos + ATT_TILE * (hd + 1);
  float *vs = ks + ROWS_PER_BLOCK * hd, *ls = vs + ROWS_PER_BLOCK * hd, *ds_ = ls + ATT_TILE;
  int bh = blockIdx.y, row0 = (int) blockIdx.x * ROWS_PER_BLOCK;
  int w = threadIdx.x / 32, lane = threadIdx.x % 32, j = row0 + w;
  size_t off = (size_t) bh * t * hd;
  float gk[ATT_DPL], gv[ATT_DPL];
  uint64_t key = attention_drop_key (drop);

  for (int c = 0; c < ATT_DPL; c++)
    gk[c] = gv[c] = 0.0f;
  load_rows (ks, k + off, row0, ROWS_PER_BLOCK, t, hd);
  load_rows (vs, v + off, row0, ROWS_PER_BLOCK, t, hd);
  /* The first tile holds the block's first key row's query. */
  for (int i0 = row0 / ATT_TILE * ATT_TILE; i0 < t; i0 += ATT_TILE)
    {
      __syncthreads ();
      load_tile (qs, q + off, i0, t, hd);
      load_tile (dos, dout + off, i0, t, hd);
      for (int e = threadIdx.x; e < ATT_TILE; e += blockDim.x)
        {
          ls[e] = i0 + e < t ? lse[(size_t) bh * t + i0 + e] : 0.0f;
          ds_[e] = i0 + e < t ? dd[(size_t) bh * t + i0 + e] : 0.0f;
        }
      __syncthreads ();
      if (j < t && i0 + ATT_TILE > j)
        {
          int i = i0 + lane;
          float keep = i >= j && i < t ? attention_keep (drop, key, bh, t, t, i, j) : 0.0f;
          float p, ds = attention_ds (qs + lane * (hd + 1), ks + w * hd, dos + lane * (hd + 1),
                                      vs + w * hd, hd, scale, ls[lane], ds_[lane],
                                      i < j || i >= t, keep, &p);

          for (int ii = 0; ii < ATT_TILE; ii++)
            {
              float pi = __shfl_sync (TACH_WARP_FULL, p, ii);
              float dsi = __shfl_sync (TACH_WARP_FULL, ds, ii);

              for (int c = 0; c < ATT_DPL; c++)
                if (lane + 32 * c < hd)
                  {
                    gv[c] += pi * dos[ii * (hd + 1) + lane + 32 * c];
                    gk[c] += dsi * qs[ii * (hd + 1) + lane + 32 * c];
                  }
            }
        }
    }
  if (j >= t)
    return;
  for (int c = 0; c < ATT_DPL; c++)
    if (lane + 32 * c < hd)
      {
        dk[off + (size_t) j * hd + lane + 32 * c] = scale * gk[c];
        dv[off + (size_t) j * hd + lane + 32 * c] = gv[c];
      }
}

/* ------------------------------------------------------------ launchers */

cudaError_t
tach_cuda_launch_add (cudaStream_t stream, const float *a, const float *b, float *y, size_t n)
{
  add_kernel<<<grid_for (n), TACH_THREADS, 0, stream>>> (a, b, y, n);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_scale (cudaStream_t stream, float *x, float alpha, size_t n)
{
  scale_kernel<<<grid_for (n), TACH_THREADS, 0, stream>>> (x, alpha, n);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_layernorm_fwd (cudaStream_t stream, const float *x, const float *res, float *sum,
                                const float *gamma, const float *beta, float *y, float *mean,
                                float *rstd, int rows, int dim)
{
  if (rows <= 0)
    return cudaSuccess;
  layernorm_fwd_kernel<<<blocks_for_rows (rows), TACH_THREADS, 0, stream>>> (
    x, res, sum, gamma, beta, y, mean, rstd, rows, dim);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_layernorm_bwd (cudaStream_t stream, const float *x, const float *gamma,
                                const float *mean, const float *rstd, const float *dy,
                                const float *dres, float *dx, float *dgamma, float *dbeta,
                                int rows, int dim)
{
  cudaError_t err;

  if (rows <= 0 || dim <= 0)
    return cudaSuccess;
  /* The parameters' gradients first: dx may be written over dres only. */
  layernorm_params_kernel<<<(dim + 31) / 32, TACH_THREADS, 0, stream>>> (x, mean, rstd, dy, dgamma,
                                                                        dbeta, rows, dim);
  if ((err = cudaGetLastError ()) != cudaSuccess)
    return err;
  layernorm_dx_kernel<<<blocks_for_rows (rows), TACH_THREADS, 0, stream>>> (
    x, gamma, mean, rstd, dy, dres, dx, rows, dim);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_gelu_fwd (cudaStream_t stream, float *x, const float *bias, float *y, int rows,
                           int dim)
{
  size_t n = (size_t) rows * dim;

  gelu_fwd_kernel<<<grid_for (n), TACH_THREADS, 0, stream>>> (x, bias, y, n, dim);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_gelu_bwd (cudaStream_t stream, const float *x, const float *dy, float *dx,
                           size_t n)
{
  gelu_bwd_kernel<<<grid_for (n), TACH_THREADS, 0, stream>>> (x, dy, dx, n);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_heads (cudaStream_t stream, float *x, int ldx, float *y, int B, int T, int H,
                        int hd, int cap, int pos, const int32_t *pos_dev, int split)
{
  size_t n = (size_t) B * T * H * hd;

  heads_kernel<<<grid_for (n), TACH_THREADS, 0, stream>>> (x, ldx, y, T, H, hd, cap, pos, pos_dev,
                                                           n, split);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_causal_softmax_fwd (cudaStream_t stream, float *s, int bh, int tq, int tk,
                                     int pos, const int32_t *pos_dev, float scale)
{
  if (bh * tq <= 0)
    return cudaSuccess;
  causal_softmax_fwd_kernel<<<blocks_for_rows (bh * tq), TACH_THREADS, 0, stream>>> (
    s, bh * tq, tq, tk, pos, pos_dev, scale);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_causal_softmax_bwd (cudaStream_t stream, const float *p, const float *dp,
                                     float *ds, int bh, int tq, int tk, float scale)
{
  if (bh * tq <= 0)
    return cudaSuccess;
  causal_softmax_bwd_kernel<<<blocks_for_rows (bh * tq), TACH_THREADS, 0, stream>>> (
    p, dp, ds, bh * tq, tk, scale);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_embedding_bwd (cudaStream_t stream, const float *dout, const int32_t *idx,
                                float *dtable, int n, int dim)
{
  if (n <= 0 || dim <= 0)
    return cudaSuccess;
  embedding_bwd_kernel<<<EMB_GROUPS, dim < TACH_THREADS ? dim : TACH_THREADS, 0, stream>>> (
    dout, idx, dtable, n, dim);
  return cudaGetLastError ();
}

/* Shared memory of the attention kernels: two tiles and rows of the block. */
static size_t
attention_smem (int hd, int tiles, int rows, int extra)
{
  return sizeof (float) * ((size_t) tiles * ATT_TILE * (hd + 1) + (size_t) rows * hd + extra);
}

cudaError_t
tach_cuda_launch_attention_fwd (cudaStream_t stream, const float *q, const float *k,
                                const float *v, float *o, float *lse, int B, int H, int tq,
                                int tk, int cap, int hd, int pos, const int32_t *pos_dev,
                                float scale, TachCudaAttnDrop drop)
{
  dim3 grid ((unsigned int) ((tq + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK), (unsigned int) (B * H));

  if (hd > ATT_HD_MAX)
    return cudaErrorInvalidValue;
  if (B * H <= 0 || tq <= 0)
    return cudaSuccess;
  attention_fwd_kernel<<<grid, TACH_THREADS, attention_smem (hd, 2, ROWS_PER_BLOCK, 0), stream>>> (
    q, k, v, o, lse, tq, tk, cap, hd, pos, pos_dev, scale, drop);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_attention_bwd (cudaStream_t stream, const float *q, const float *k,
                                const float *v, const float *o, const float *dout,
                                const float *lse, float *dd, float *dq, float *dk, float *dv,
                                int B, int H, int t, int hd, float scale, TachCudaAttnDrop drop)
{
  dim3 grid ((unsigned int) ((t + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK), (unsigned int) (B * H));
  cudaError_t err;

  if (hd > ATT_HD_MAX)
    return cudaErrorInvalidValue;
  if (B * H <= 0 || t <= 0)
    return cudaSuccess;
  attention_d_kernel<<<blocks_for_rows (B * H * t), TACH_THREADS, 0, stream>>> (o, dout, dd,
                                                                                B * H * t, hd);
  if ((err = cudaGetLastError ()) != cudaSuccess)
    return err;
  attention_dq_kernel<<<grid, TACH_THREADS, attention_smem (hd, 2, 2 * ROWS_PER_BLOCK, 0),
                        stream>>> (q, k, v, dout, lse, dd, dq, t, hd, scale, drop);
  if ((err = cudaGetLastError ()) != cudaSuccess)
    return err;
  attention_dkv_kernel<<<grid, TACH_THREADS,
                         attention_smem (hd, 2, 2 * ROWS_PER_BLOCK, 2 * ATT_TILE), stream>>> (
    q, k, v, dout, lse, dd, dk, dv, t, hd, scale, drop);
  return cudaGetLastError ();
}
