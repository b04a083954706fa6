/* tach-cuda-kernels.cu: the few kernels cuDNN and cuBLAS lack.
 *
 * Each kernel computes exactly what its slot in tach-backend.h documents.
 * Reductions use a fixed order (no atomics), so a step gives the same bits
 * every time it runs, eagerly or replayed from a CUDA graph.
 */
#include <float.h>
#include <math.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "tach-cuda-kernels.h"
#include "tach-cuda-device.cuh"
#include "tach-adam.h"
#include "tach-rand.h"

#define TACH_BIAS_THREADS 1024

__device__ __forceinline__ float
sigmoidf_ (float x)
{
  return 1.0f / (1.0f + expf (-x));
}

/* Sums @v over the block (blockDim.x == TACH_THREADS) in a fixed order;
 * every thread gets the total. */
__device__ double
block_sum (double v)
{
  __shared__ double partial[TACH_THREADS];

  partial[threadIdx.x] = v;
  __syncthreads ();
  for (int s = TACH_THREADS / 2; s > 0; s >>= 1)
    {
      if ((int) threadIdx.x < s)
        partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads ();
    }
  v = partial[0];
  __syncthreads ();
  return v;
}

__device__ float
block_max (float v)
{
  __shared__ float partial[TACH_THREADS];

  partial[threadIdx.x] = v;
  __syncthreads ();
  for (int s = TACH_THREADS / 2; s > 0; s >>= 1)
    {
      if ((int) threadIdx.x < s)
        partial[threadIdx.x] = fmaxf (partial[threadIdx.x], partial[threadIdx.x + s]);
      __syncthreads ();
    }
  v = partial[0];
  __syncthreads ();
  return v;
}

/* ------------------------------------------------------------- dense */

__global__ void
bias_add_kernel (float *y, const float *bias, int m, int n)
{
  GRID_STRIDE (i, (size_t) m * n)
    y[i] += bias[i % n];
}

/* Column sums of dy [m, n] along contiguous memory.  A block covers @w
 * columns (all n when n < 32, else 32) with blockDim.x / @w row groups:
 * thread t is column t % w of row group t / w, so consecutive threads read
 * consecutive floats (whole rows when w = n, 128 bytes of one row when
 * w = 32), each thread sums its column over its rows in row order, and the
 * row groups are added in a fixed tree: the same bits on every run. */
__global__ void __launch_bounds__ (TACH_BIAS_THREADS)
bias_grad_kernel (const float *dy, float *db, int m, int n, int w, float beta)
{
  __shared__ double part[TACH_BIAS_THREADS];
  int tx = (int) threadIdx.x % w, ty = (int) threadIdx.x / w, groups = (int) blockDim.x / w;
  int col = (int) blockIdx.x * w + tx;
  double acc = 0.0;

  if (col < n)
    for (int r = ty; r < m; r += groups)
      acc += dy[(size_t) r * n + col];
  part[threadIdx.x] = acc;
  __syncthreads ();
  for (int s = 1; s < groups; s <<= 1)
    {
      if (ty % (2 * s) == 0 && ty + s < groups)
        part[threadIdx.x] += part[threadIdx.x + s * w];
      __syncthreads ();
    }
  if (ty == 0 && col < n)
    db[col] = (beta == 0.0f ? 0.0f : beta * db[col]) + (float) part[tx];
}

__global__ void
relu_fwd_kernel (const float *x, float *y, size_t n)
{
  GRID_STRIDE (i, n)
    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void
relu_bwd_kernel (const float *y, const float *dy, float *dx, size_t n)
{
  GRID_STRIDE (i, n)
    dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

/* --------------------------------------------- gradients on the wire */

/* Data-parallel gradients (tach-cuda-nccl.c): to the wire's halves, and
 * back widened and divided by the ranks.  Round to nearest even, as the
 * CPU reducer's casts. */
__global__ void
grad_pack_kernel (const float *grad, unsigned short *wire, size_t n, int bf16)
{
  GRID_STRIDE (i, n)
    wire[i] = bf16 ? __bfloat16_as_ushort (__float2bfloat16_rn (grad[i]))
                   : __half_as_ushort (__float2half_rn (grad[i]));
}

__global__ void
grad_unpack_kernel (const unsigned short *wire, float *grad, size_t n, int bf16, float divisor)
{
  GRID_STRIDE (i, n)
    {
      float v = wire == NULL ? grad[i]
                : bf16 ? __bfloat162float (__ushort_as_bfloat16 (wire[i]))
                       : __half2float (__ushort_as_half (wire[i]));

      grad[i] = v / divisor;
    }
}

/* -------------------------------------------------------------- LSTM */

__global__ void
lstm_cell_fwd_kernel (int n, int h, float *gates, const float *bias, const float *c_prev,
                      float *c, float *h_out, int ldh)
{
  GRID_STRIDE (e, (size_t) n * h)
    {
      size_t r = e / h, j = e % h;
      float *g = gates + r * 4 * h;
      float gi = sigmoidf_ (g[j] + bias[j]);
      float gf = sigmoidf_ (g[h + j] + bias[h + j]);
      float gg = tanhf (g[2 * h + j] + bias[2 * h + j]);
      float go = sigmoidf_ (g[3 * h + j] + bias[3 * h + j]);
      float cp = c_prev != NULL ? c_prev[e] : 0.0f;
      float cn = gf * cp + gi * gg;

      g[j] = gi;
      g[h + j] = gf;
      g[2 * h + j] = gg;
      g[3 * h + j] = go;
      c[e] = cn;
      h_out[r * ldh + j] = go * tanhf (cn);
    }
}

/* dc and dc_prev may be the same buffer: each element is read before it
 * is written, by the same thread. */
__global__ void
lstm_cell_bwd_kernel (int n, int h, const float *gates, const float *c_prev, const float *c,
                      const float *dh, int lddh, const float *dc, float *dgates, float *dc_prev)
{
  GRID_STRIDE (e, (size_t) n * h)
    {
      size_t r = e / h, j = e % h;
      const float *g = gates + r * 4 * h;
      float *dg = dgates + r * 4 * h;
      float gi = g[j], gf = g[h + j], gg = g[2 * h + j], go = g[3 * h + j];
      float cp = c_prev != NULL ? c_prev[e] : 0.0f;
      float tc = tanhf (c[e]);
      float dhv = dh != NULL ? dh[r * lddh + j] : 0.0f;
      float dct = dhv * go * (1.0f - tc * tc) + (dc != NULL ? dc[e] : 0.0f);

      dg[j] = dct * gg * gi * (1.0f - gi);
      dg[h + j] = dct * cp * gf * (1.0f - gf);
      dg[2 * h + j] = dct * gi * (1.0f - gg * gg);
      dg[3 * h + j] = dhv * tc * go * (1.0f - go);
      if (dc_prev != NULL)
        dc_prev[e] = dct * gf;
    }
}

/* --------------------------------------------- swapping the outer axes */

/* dst[j][i][:] = src[i][j][:] for src [a][b][w]: batch-major sequences to
 * time-major and back.  T is float4 where the rows allow it. */
template <typename T>
__global__ void
swap_outer_kernel (const T *src, T *dst, int a, int b, int w)
{
  GRID_STRIDE (e, (size_t) a * b * w)
    {
      size_t k = e % w, row = e / w;
      size_t i = row / b, j = row % b;

      dst[((size_t) j * a + i) * w + k] = src[e];
    }
}

/* ------------------------------------------------------ max over time */

__global__ void
max_over_time_fwd_kernel (const float *x, float *y, int32_t *idx, int n, int t, int c)
{
  GRID_STRIDE (e, (size_t) n * c)
    {
      size_t b = e / c, k = e % c;
      const float *col = x + b * (size_t) t * c + k;
      float best = col[0];
      int32_t arg = 0;

      /* The first maximum wins, as in a sequential scan. */
      for (int s = 1; s < t; s++)
        if (col[(size_t) s * c] > best)
          {
            best = col[(size_t) s * c];
            arg = s;
          }
      y[e] = best;
      idx[e] = arg;
    }
}

__global__ void
max_over_time_bwd_kernel (const float *dy, const int32_t *idx, float *dx, int n, int t, int c)
{
  GRID_STRIDE (e, (size_t) n * c)
    {
      size_t b = e / c, k = e % c;
      float *col = dx + b * (size_t) t * c + k;

      for (int s = 0; s < t; s++)
        col[(size_t) s * c] = s == idx[e] ? dy[e] : 0.0f;
    }
}

/* ------------------------------------------------------------ losses */

/* One block: the mean in a fixed order, so the loss is bit-reproducible. */
__global__ void
sigmoid_bce_kernel (const float *logits, const float *labels, int n, float *loss, float *dlogits)
{
  double acc = 0.0;

  for (int i = threadIdx.x; i < n; i += blockDim.x)
    {
      float x = logits[i], y = labels[i];

      /* The stable form: max(x, 0) - x y + log(1 + exp(-|x|)). */
      acc += (double) (fmaxf (x, 0.0f) - x * y + log1pf (expf (-fabsf (x))));
      if (dlogits != NULL)
        dlogits[i] = (sigmoidf_ (x) - y) / (float) n;
    }
  acc = block_sum (acc);
  if (threadIdx.x == 0)
    *loss = (float) (acc / n);
}

__global__ void
accuracy_kernel (const float *logits, const void *labels, int n, int classes, float *acc)
{
  double hits = 0.0;

  for (int r = threadIdx.x; r < n; r += blockDim.x)
    {
      if (classes == 1)
        {
          float y = ((const float *) labels)[r];
          hits += (logits[r] > 0.0f) == (y > 0.5f) ? 1.0 : 0.0;
        }
      else
        {
          const float *row = logits + (size_t) r * classes;
          int arg = 0;

          for (int k = 1; k < classes; k++)
            if (row[k] > row[arg])
              arg = k;
          hits += arg == ((const int32_t *) labels)[r] ? 1.0 : 0.0;
        }
    }
  hits = block_sum (hits);
  if (threadIdx.x == 0)
    *acc = (float) (hits / n);
}

/* ----------------------------------------------------------- pooling */

__global__ void
maxpool_fwd_kernel (const float *x, float *y, int32_t *idx, int n, int c, int h, int w)
{
  int oh = h / 2, ow = w / 2;

  GRID_STRIDE (e, (size_t) n * c * oh * ow)
    {
      size_t plane = e / ((size_t) oh * ow);
      int oy = (int) (e / ow % oh), ox = (int) (e % ow);
      size_t base = plane * h * w;
      size_t best_i = base + (size_t) (2 * oy) * w + 2 * ox;
      float best = x[best_i];

      for (int dy = 0; dy < 2; dy++)
        for (int dx = 0; dx < 2; dx++)
          {
            size_t i = base + (size_t) (2 * oy + dy) * w + 2 * ox + dx;
            if (x[i] > best)
              {
                best = x[i];
                best_i = i;
              }
          }
      y[e] = best;
      idx[e] = (int32_t) (best_i - base);
    }
}

/* dx was zeroed by the launcher; windows do not overlap, so one writer
 * per element. */
__global__ void
maxpool_bwd_kernel (const float *dy, const int32_t *idx, float *dx, int n, int c, int h, int w)
{
  int oh = h / 2, ow = w / 2;

  GRID_STRIDE (e, (size_t) n * c * oh * ow)
    {
      size_t plane = e / ((size_t) oh * ow);
      dx[plane * h * w + idx[e]] = dy[e];
    }
}

__global__ void
avgpool_fwd_kernel (const float *x, float *y, int hw)
{
  const float *plane = x + (size_t) blockIdx.x * hw;
  double acc = 0.0;

  for (int i = threadIdx.x; i < hw; i += blockDim.x)
    acc += plane[i];
  acc = block_sum (acc);
  if (threadIdx.x == 0)
    y[blockIdx.x] = (float) (acc / hw);
}

__global__ void
avgpool_bwd_kernel (const float *dy, float *dx, size_t total, int hw)
{
  GRID_STRIDE (i, total)
    dx[i] = dy[i / hw] / (float) hw;
}

/* ----------------------------------------------------------- dropout */

__global__ void
dropout_kernel (const float *x, float *y, size_t n, float p, float scale, uint64_t seed,
                uint64_t counter, uint64_t first, const uint64_t *offset)
{
  uint64_t c = effective_counter (counter, offset);

  GRID_STRIDE (e, n)
    y[e] = tach_rand_uniform (seed, c, first + e) >= p ? x[e] * scale : 0.0f;
}

__global__ void
counter_add_kernel (uint64_t *counter, uint64_t delta)
{
  *counter += delta;
}

/* ------------------------------------------------- embedding, sampling */

__global__ void
embedding_kernel (const float *table, const int32_t *idx, float *out, int n, int dim)
{
  GRID_STRIDE (e, (size_t) n * dim)
    out[e] = table[(size_t) idx[e / dim] * dim + e % dim];
}

/* One block per row.  Each thread owns a contiguous chunk of the
 * vocabulary, so the inverse CDF needs one scan over chunk sums and one
 * scan inside the chosen chunk.
 *
 * The arithmetic is the host's (tach_cpu_sample_tokens and lstm-lm's
 * sampling=host): exp (z - zmax) in double, target = u * sum in double,
 * the first token whose cumulative mass passes the target.  Only the
 * summation order differs, by a few ulps of a double, so device and host
 * sampling pick the same token unless u lands within ~1e-16 of a boundary;
 * in float the sums would differ by ~1e-7 and the choice would flip every
 * few thousand tokens, changing the generated text between the modes. */
__global__ void
sample_tokens_kernel (const float *logits, int vocab, uint64_t seed, uint64_t counter,
                      const uint64_t *offset, int32_t *tok, int32_t *ctx, int len)
{
  __shared__ double chunk_sum[TACH_THREADS];
  const float *row = logits + (size_t) blockIdx.x * vocab;
  int chunk = (vocab + TACH_THREADS - 1) / TACH_THREADS;
  int lo = min ((int) threadIdx.x * chunk, vocab), hi = min (lo + chunk, vocab);
  float mxf = -FLT_MAX;
  double mx, sum = 0.0;

  for (int k = threadIdx.x; k < vocab; k += blockDim.x)
    mxf = fmaxf (mxf, row[k]);
  mx = (double) block_max (mxf);
  for (int k = lo; k < hi; k++)
    sum += exp ((double) row[k] - mx);
  chunk_sum[threadIdx.x] = sum;
  __syncthreads ();

  if (threadIdx.x == 0)
    {
      double total = 0.0, target, cum = 0.0;
      int owner = TACH_THREADS - 1, chosen;

      for (int i = 0; i < TACH_THREADS; i++)
        total += chunk_sum[i];
      target = (double) tach_rand_uniform (seed, effective_counter (counter, offset),
                                           blockIdx.x) * total;
      for (int i = 0; i < TACH_THREADS; i++)
        {
          if (cum + chunk_sum[i] > target && chunk_sum[i] > 0.0)
            {
              owner = i;
              break;
            }
          cum += chunk_sum[i];
        }
      /* Rounding can leave the target past the chosen chunk's end: take
       * its last token (with no owner, that is the last token, as on the
       * host). */
      {
        int olo = min (owner * chunk, vocab), ohi = min (olo + chunk, vocab);
        int pick = ohi - 1;

        for (int k = olo; k < ohi; k++)
          {
            cum += exp ((double) row[k] - mx);
            if (cum > target)
              {
                pick = k;
                break;
              }
          }
        chosen = pick < 0 ? 0 : pick;
      }
      tok[blockIdx.x] = chosen;
      if (ctx != NULL && len > 0)
        {
          int32_t *c = ctx + (size_t) blockIdx.x * len;
          for (int i = 0; i + 1 < len; i++)
            c[i] = c[i + 1];
          c[len - 1] = chosen;
        }
    }
}

/* -------------------------------------------------------- optimisers */

/* Adam in Kingma & Ba's form, as tach-backend.h states it: bias-corrected
 * moments, eps added to the corrected sqrt(v).  The step count is read from
 * device memory so that a replayed graph takes the right step; a second
 * launch increments it once every thread has read it. */
__global__ void
adam_kernel (float *param, const float *grad, float *m, float *v, size_t n, float lr,
             float beta1, float beta2, float eps, const float *t)
{
  float inv_c1, inv_sqrt_c2;

  /* The CPU's corrections, in double (tach-adam.h): every thread computes
   * the same two numbers, once. */
  tach_adam_corrections (beta1, beta2, *t + 1.0f, &inv_c1, &inv_sqrt_c2);

  GRID_STRIDE (i, n)
    {
      float g = grad[i];
      float mi = beta1 * m[i] + (1.0f - beta1) * g;
      float vi = beta2 * v[i] + (1.0f - beta2) * g * g;

      m[i] = mi;
      v[i] = vi;
      param[i] -= lr * (mi * inv_c1) / (sqrtf (vi) * inv_sqrt_c2 + eps);
    }
}

__global__ void
increment_kernel (float *t)
{
  *t += 1.0f;
}

__global__ void
sgd_kernel (float *param, const float *grad, size_t n, float lr)
{
  GRID_STRIDE (i, n)
    param[i] -= lr * grad[i];
}

/* --------------------------------------------------------- launchers */

extern "C" {

cudaError_t
tach_cuda_launch_bias_add (cudaStream_t stream, float *y, const float *bias, int m, int n)
{
  bias_add_kernel<<<grid_for ((size_t) m * n), TACH_THREADS, 0, stream>>> (y, bias, m, n);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_bias_grad (cudaStream_t stream, const float *dy, float *db, int m, int n, float beta)
{
  int w, groups;

  if (n <= 0)
    return cudaSuccess;
  w = n < 32 ? n : 32;
  groups = TACH_BIAS_THREADS / w;
  /* No more row groups than rows (at least one). */
  if (groups > m)
    groups = m > 0 ? m : 1;
  bias_grad_kernel<<<(n + w - 1) / w, w * groups, 0, stream>>> (dy, db, m, n, w, beta);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_relu_fwd (cudaStream_t stream, const float *x, float *y, size_t n)
{
  relu_fwd_kernel<<<grid_for (n), TACH_THREADS, 0, stream>>> (x, y, n);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_grad_pack (cudaStream_t stream, const float *grad, unsigned short *wire,
                            size_t n, int bf16)
{
  grad_pack_kernel<<<grid_for (n), TACH_THREADS, 0, stream>>> (grad, wire, n, bf16);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_grad_unpack (cudaStream_t stream, const unsigned short *wire, float *grad,
                              size_t n, int bf16, float divisor)
{
  grad_unpack_kernel<<<grid_for (n), TACH_THREADS, 0, stream>>> (wire, grad, n, bf16, divisor);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_relu_bwd (cudaStream_t stream, const float *y, const float *dy, float *dx, size_t n)
{
  relu_bwd_kernel<<<grid_for (n), TACH_THREADS, 0, stream>>> (y, dy, dx, n);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_lstm_cell_fwd (cudaStream_t stream, int n, int h, float *gates, const float *bias,
                                const float *c_prev, float *c, float *h_out, int ldh)
{
  lstm_cell_fwd_kernel<<<grid_for ((size_t) n * h), TACH_THREADS, 0, stream>>>
    (n, h, gates, bias, c_prev, c, h_out, ldh);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_lstm_cell_bwd (cudaStream_t stream, int n, int h, const float *gates,
                                const float *c_prev, const float *c, const float *dh, int lddh,
                                const float *dc, float *dgates, float *dc_prev)
{
  lstm_cell_bwd_kernel<<<grid_for ((size_t) n * h), TACH_THREADS, 0, stream>>>
    (n, h, gates, c_prev, c, dh, lddh, dc, dgates, dc_prev);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_swap_outer (cudaStream_t stream, const float *src, float *dst, int a, int b, int w)
{
  size_t rows = (size_t) a * b;

  if (w % 4 == 0 && ((uintptr_t) src | (uintptr_t) dst) % 16 == 0)
    swap_outer_kernel<float4><<<grid_for (rows * (w / 4)), TACH_THREADS, 0, stream>>> (
      (const float4 *) src, (float4 *) dst, a, b, w / 4);
  else
    swap_outer_kernel<float><<<grid_for (rows * w), TACH_THREADS, 0, stream>>> (src, dst, a, b, w);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_max_over_time_fwd (cudaStream_t stream, const float *x, float *y, int32_t *idx,
                                    int n, int t, int c)
{
  max_over_time_fwd_kernel<<<grid_for ((size_t) n * c), TACH_THREADS, 0, stream>>> (x, y, idx, n, t, c);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_max_over_time_bwd (cudaStream_t stream, const float *dy, const int32_t *idx,
                                    float *dx, int n, int t, int c)
{
  max_over_time_bwd_kernel<<<grid_for ((size_t) n * c), TACH_THREADS, 0, stream>>> (dy, idx, dx, n, t, c);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_sigmoid_bce (cudaStream_t stream, const float *logits, const float *labels, int n,
                              float *loss, float *dlogits)
{
  sigmoid_bce_kernel<<<1, TACH_THREADS, 0, stream>>> (logits, labels, n, loss, dlogits);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_accuracy (cudaStream_t stream, const float *logits, const void *labels, int n,
                           int classes, float *acc)
{
  accuracy_kernel<<<1, TACH_THREADS, 0, stream>>> (logits, labels, n, classes, acc);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_maxpool_fwd (cudaStream_t stream, const float *x, float *y, int32_t *idx, int n,
                              int c, int h, int w)
{
  size_t outs = (size_t) n * c * (h / 2) * (w / 2);

  maxpool_fwd_kernel<<<grid_for (outs), TACH_THREADS, 0, stream>>> (x, y, idx, n, c, h, w);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_maxpool_bwd (cudaStream_t stream, const float *dy, const int32_t *idx, float *dx,
                              int n, int c, int h, int w)
{
  size_t outs = (size_t) n * c * (h / 2) * (w / 2);
  cudaError_t status = cudaMemsetAsync (dx, 0, sizeof (float) * (size_t) n * c * h * w, stream);

  if (status != cudaSuccess)
    return status;
  maxpool_bwd_kernel<<<grid_for (outs), TACH_THREADS, 0, stream>>> (dy, idx, dx, n, c, h, w);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_avgpool_fwd (cudaStream_t stream, const float *x, float *y, int n, int c, int hw)
{
  if (n * c <= 0)
    return cudaSuccess;
  avgpool_fwd_kernel<<<n * c, TACH_THREADS, 0, stream>>> (x, y, hw);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_avgpool_bwd (cudaStream_t stream, const float *dy, float *dx, int n, int c, int hw)
{
  size_t total = (size_t) n * c * hw;

  avgpool_bwd_kernel<<<grid_for (total), TACH_THREADS, 0, stream>>> (dy, dx, total, hw);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_dropout (cudaStream_t stream, const float *x, float *y, size_t n, float p,
                          uint64_t seed, uint64_t counter, uint64_t first, const uint64_t *offset)
{
  float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;

  dropout_kernel<<<grid_for (n), TACH_THREADS, 0, stream>>> (x, y, n, p, scale, seed, counter,
                                                             first, offset);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_counter_add (cudaStream_t stream, uint64_t *counter, uint64_t delta)
{
  counter_add_kernel<<<1, 1, 0, stream>>> (counter, delta);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_embedding (cudaStream_t stream, const float *table, const int32_t *idx, float *out,
                            int n, int dim)
{
  embedding_kernel<<<grid_for ((size_t) n * dim), TACH_THREADS, 0, stream>>> (table, idx, out, n, dim);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_sample_tokens (cudaStream_t stream, const float *logits, int n, int vocab,
                                uint64_t seed, uint64_t counter, const uint64_t *offset,
                                int32_t *tok, int32_t *ctx, int len)
{
  if (n <= 0)
    return cudaSuccess;
  sample_tokens_kernel<<<n, TACH_THREADS, 0, stream>>> (logits, vocab, seed, counter, offset, tok,
                                                        ctx, len);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_adam (cudaStream_t stream, float *param, const float *grad, float *m, float *v,
                       size_t n, float lr, float beta1, float beta2, float eps, float *t)
{
  cudaError_t status;

  adam_kernel<<<grid_for (n), TACH_THREADS, 0, stream>>> (param, grad, m, v, n, lr, beta1, beta2, eps, t);
  status = cudaGetLastError ();
  if (status != cudaSuccess)
    return status;
  increment_kernel<<<1, 1, 0, stream>>> (t);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_sgd (cudaStream_t stream, float *param, const float *grad, size_t n, float lr)
{
  sgd_kernel<<<grid_for (n), TACH_THREADS, 0, stream>>> (param, grad, n, lr);
  return cudaGetLastError ();
}

}
