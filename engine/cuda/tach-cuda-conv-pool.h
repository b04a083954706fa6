/* tach-cuda-conv-pool.h: the per-element arithmetic of the convolution
 * block's epilogue kernels (tach-cuda-conv-kernels.cu), shared with the
 * host so that a test without a GPU runs exactly this index math
 * (tests/test-cuda-host.c).  Plain C that nvcc also compiles as device code.
 *
 * Layouts, all NCHW as the cnn hands them over: act [N, K, H, W] (the
 * convolution's output), the pooled y and its idx [N, K, H/2, W/2] (a 2x2
 * window, stride 2, an odd last row or column belonging to no window).
 * idx is the block's own: the winner's offset inside its H x W plane when
 * the window's maximum is positive, else -1, which is the ReLU's mask
 * folded in (relu (max (v)) == max (relu (v)), and a window whose maximum
 * is not positive passes no gradient).  The winner is the first maximum in
 * the order (0,0) (0,1) (1,0) (1,1), as the plain max pool and the
 * reference take it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define TACH_CONV_POOL_FN static __host__ __device__ __forceinline__
#else
#define TACH_CONV_POOL_FN static inline
#endif

/* The block size of the backward kernel, one block per plane: whole warps,
 * at least one, at most 256 threads, about one thread per element of a
 * plane up to that. */
TACH_CONV_POOL_FN int
tach_conv_pool_bwd_threads (int h, int w)
{
  long plane = (long) h * w;
  long warps = (plane + 31) / 32;

  if (warps < 1)
    warps = 1;
  if (warps > 8)
    warps = 8;
  return (int) (warps * 32);
}

/* Pooled output @e (a flat index into y): reads its window of act (plus
 * bias[k] when @bias is not NULL, i.e. when the convolution did not add
 * it), writes y[e] = relu (max) and idx[e]. */
TACH_CONV_POOL_FN void
tach_conv_pool_fwd_at (const float *act, const float *bias, float *y, int32_t *idx, size_t e,
                       int k, int h, int w)
{
  int ph = h / 2, pw = w / 2;
  size_t plane = e / ((size_t) ph * pw);
  int oy = (int) (e / (size_t) pw % (size_t) ph), ox = (int) (e % (size_t) pw);
  const float *p = act + plane * (size_t) h * (size_t) w;
  float b = bias != NULL ? bias[plane % (size_t) k] : 0.0f;
  int best_i = 2 * oy * w + 2 * ox;
  float best = p[best_i] + b;

  for (int r = 0; r < 2; r++)
    for (int s = 0; s < 2; s++)
      {
        int i = (2 * oy + r) * w + 2 * ox + s;
        float v = p[i] + b;

        if (v > best)
          {
            best = v;
            best_i = i;
          }
      }
  y[e] = best > 0.0f ? best : 0.0f;
  idx[e] = best > 0.0f ? best_i : -1;
}

/* The gradient at offset @pos of plane @plane of act: dy where @pos won
 * its window (and passed the ReLU), else 0. */
TACH_CONV_POOL_FN float
tach_conv_pool_bwd_at (const float *dy, const int32_t *idx, size_t plane, int pos, int h, int w)
{
  int ph = h / 2, pw = w / 2;
  int py = pos / w / 2, px = pos % w / 2;
  size_t j;

  if (py >= ph || px >= pw)
    return 0.0f;
  j = plane * (size_t) ph * (size_t) pw + (size_t) py * (size_t) pw + (size_t) px;
  return idx[j] == pos ? dy[j] : 0.0f;
}

/* Pooled output @j's share of its channel's bias gradient: the gradient
 * that reached act through it. */
TACH_CONV_POOL_FN float
tach_conv_pool_bias_term (const float *dy, const int32_t *idx, size_t j)
{
  return idx[j] >= 0 ? dy[j] : 0.0f;
}
