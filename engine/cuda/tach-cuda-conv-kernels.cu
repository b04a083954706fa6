/* tach-cuda-conv-kernels.cu: the convolution block's epilogue kernels
 * (see tach-cuda-conv-pool.h for the layouts and the arithmetic).
 *
 * Forward: one pass over act that adds the bias when the convolution did
 * not, applies the ReLU, max-pools 2x2 and records the winner with the
 * ReLU's mask.  Backward: one pass that writes the whole gradient of act
 * (the pool's scatter and the ReLU's mask together, zeros included, so
 * nothing needs clearing first) and each plane's share of the bias
 * gradient; bias_grad then sums the shares over the batch.  Both are
 * deterministic (a fixed reduction order, no atomics), so eager and
 * replayed steps give the same bits.
 */
#include "tach-cuda-kernels.h"
#include "tach-cuda-conv-pool.h"

#define POOL_THREADS 256
#define MAX_WARPS 8   /* tach_conv_pool_bwd_threads is at most 256 */

__global__ void
conv_pool_fwd_kernel (const float *act, const float *bias, float *y, int32_t *idx, size_t outs,
                      int k, int h, int w)
{
  size_t e = (size_t) blockIdx.x * blockDim.x + threadIdx.x;

  if (e < outs)
    tach_conv_pool_fwd_at (act, bias, y, idx, e, k, h, w);
}

/* One block per plane (blockIdx.x = n * K + k); blockDim.x a multiple of
 * 32, at most 32 * MAX_WARPS. */
__global__ void
conv_pool_bwd_kernel (const float *dy, const int32_t *idx, float *dact, float *partial, int h,
                      int w)
{
  __shared__ float warp_sums[MAX_WARPS];
  size_t plane = blockIdx.x;
  int hw = h * w, pooled = (h / 2) * (w / 2);
  float *d = dact + plane * (size_t) hw;

  for (int pos = threadIdx.x; pos < hw; pos += blockDim.x)
    d[pos] = tach_conv_pool_bwd_at (dy, idx, plane, pos, h, w);
  if (partial == NULL)
    return;

  {
    float s = 0.0f;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

    for (int j = threadIdx.x; j < pooled; j += blockDim.x)
      s += tach_conv_pool_bias_term (dy, idx, plane * (size_t) pooled + (size_t) j);
    for (int off = 16; off > 0; off >>= 1)
      s += __shfl_down_sync (0xffffffffu, s, off);
    if (lane == 0)
      warp_sums[warp] = s;
    __syncthreads ();
    if (threadIdx.x == 0)
      {
        float t = 0.0f;

        for (int i = 0; i < (int) (blockDim.x / 32); i++)
          t += warp_sums[i];
        partial[plane] = t;
      }
  }
}

cudaError_t
tach_cuda_launch_conv_pool_fwd (cudaStream_t stream, const float *act, const float *bias, float *y,
                                int32_t *idx, int n, int k, int h, int w)
{
  size_t outs = (size_t) n * k * (h / 2) * (w / 2);
  size_t blocks = (outs + POOL_THREADS - 1) / POOL_THREADS;

  if (outs == 0)
    return cudaSuccess;
  /* One thread per pooled output; gridDim.x goes to 2^31 - 1. */
  if (blocks > 0x7fffffffu)
    return cudaErrorInvalidConfiguration;
  conv_pool_fwd_kernel<<<(unsigned int) blocks, POOL_THREADS, 0, stream>>> (act, bias, y, idx,
                                                                             outs, k, h, w);
  return cudaGetLastError ();
}

cudaError_t
tach_cuda_launch_conv_pool_bwd (cudaStream_t stream, const float *dy, const int32_t *idx,
                                float *dact, float *partial, int n, int k, int h, int w)
{
  size_t planes = (size_t) n * k;

  if (planes == 0 || (size_t) h * w == 0)
    return cudaSuccess;
  if (planes > 0x7fffffffu)
    return cudaErrorInvalidConfiguration;
  conv_pool_bwd_kernel<<<(unsigned int) planes, tach_conv_pool_bwd_threads (h, w), 0, stream>>>
    (dy, idx, dact, partial, h, w);
  return cudaGetLastError ();
}

/* col[(c, r, s)][(n, y, x)] = x[n][c][y + r - pad_h][x + s - pad_w], zero
 * outside the image: a stride-1 cross-correlation's patches, tap by tap,
 * one thread per element of col (neighbouring threads read neighbouring
 * pixels and write neighbouring floats). */
__global__ void
im2col_kernel (const float *x, float *col, size_t total, int c, int h, int w, int r, int s,
               int pad_h, int pad_w, int oh, int ow, size_t rows)
{
  for (size_t e = (size_t) blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (size_t) blockDim.x * gridDim.x)
    {
      int q = (int) (e / rows);
      size_t row = e % rows;
      int ox = (int) (row % ow), oy = (int) ((row / ow) % oh);
      size_t n = row / ((size_t) oh * ow);
      int ci = q / (r * s), ry = (q / s) % r, sx = q % s;
      int iy = oy + ry - pad_h, ix = ox + sx - pad_w;

      col[e] = iy >= 0 && iy < h && ix >= 0 && ix < w
               ? x[((n * c + ci) * h + iy) * (size_t) w + ix] : 0.0f;
    }
}

cudaError_t
tach_cuda_launch_im2col (cudaStream_t stream, const float *x, float *col, int n, int c, int h, int w,
                         int r, int s, int pad_h, int pad_w, int oh, int ow)
{
  size_t rows = (size_t) n * oh * ow, total = rows * c * r * s;
  size_t blocks = (total + POOL_THREADS - 1) / POOL_THREADS;

  if (total == 0)
    return cudaSuccess;
  /* The loop strides over whatever a capped grid leaves. */
  if (blocks > 65535u * 16u)
    blocks = 65535u * 16u;
  im2col_kernel<<<(unsigned int) blocks, POOL_THREADS, 0, stream>>> (x, col, total, c, h, w, r, s,
                                                                     pad_h, pad_w, oh, ow, rows);
  return cudaGetLastError ();
}
