/* tach-cuda-softmax.cu: the kernel over rows of a softmax, for softmax_ce
 * and for drawing tokens with their negative log-likelihood.
 *
 * One group of lanes (a power of two up to a warp) per row, sized to the
 * row: each lane owns a contiguous chunk of about eight classes.  The row's
 * maximum is read with the lanes interleaved (consecutive lanes,
 * consecutive floats: whole cache lines), which also brings the row into
 * L1 for the chunk sums.  The exponentials are summed in double, as the
 * CPU backend does (tach_cpu_sample_tokens, tach_cpu_softmax_ce without
 * dlogits), chunk by chunk and then by a scan over the lanes: only the
 * summation order differs from the host's, by a few ulps of a double, so
 * host and device draw the same token unless u lands within ~1e-16 of a
 * boundary.  The row's loss is the host's formula, zmax + log (sum) - z[t].
 *
 * Drawing and the cross-entropy of given labels are one kernel, one block:
 * the same geometry for the same shape, the same sums, rows added in the
 * same fixed order (each group its rows in order, then a fixed tree over
 * the groups), so sample_tokens_nll's loss is softmax_ce's loss of the
 * drawn tokens to the bit, and a step gives the same bits eagerly or
 * replayed from a CUDA graph.  Nothing allocates or waits: the launch is
 * capturable.
 */
#include <float.h>
#include <math.h>

#include "tach-cuda-kernels.h"
#include "tach-cuda-device.cuh"
#include "../tach-rand.h"

#define ROWS_MAX_THREADS 1024
#define ROWS_CHUNK 8   /* classes per lane, about */

/* The lanes per row: the smallest power of two that gives each lane at
 * most ROWS_CHUNK classes, at most a warp. */
static int
rows_group (int classes)
{
  int group = 1;

  while (group < 32 && group * ROWS_CHUNK < classes)
    group *= 2;
  return group;
}

/* The maximum over the @group lanes of this segment, in every lane.  fmaxf
 * is exact, so any order gives the same value. */
static __device__ __forceinline__ float
group_max (float v, int group)
{
  for (int o = group / 2; o > 0; o >>= 1)
    v = fmaxf (v, __shfl_xor_sync (TACH_WARP_FULL, v, o, group));
  return v;
}

/* The inclusive prefix sum over the @group lanes of this segment, in a
 * fixed order. */
static __device__ __forceinline__ double
group_scan (double v, int lane, int group)
{
  for (int d = 1; d < group; d <<= 1)
    {
      double t = __shfl_up_sync (TACH_WARP_FULL, v, d, group);

      if (lane >= d)
        v += t;
    }
  return v;
}

/* The sum of @v over the block, in a fixed tree (a butterfly in each warp,
 * then one over the warps' sums), valid in warp 0.  Every thread of the
 * block must call it. */
static __device__ double
block_sum_any (double v, double *part)
{
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;

  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync (TACH_WARP_FULL, v, o);
  if (lane == 0)
    part[warp] = v;
  __syncthreads ();
  if (warp == 0)
    {
      v = lane < warps ? part[lane] : 0.0;
      for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync (TACH_WARP_FULL, v, o);
    }
  return v;
}

/* Rows r < n of @logits [n, classes], @groups groups of @group lanes, the
 * block rounded up to whole warps (lanes past the groups only join the
 * warp-wide calls).  Every loop below that holds a warp-wide call runs the
 * same number of times in every lane.
 *   tok != NULL: draw tok[r] by inverse CDF with u = tach_rand_uniform
 *     (seed, counter + *offset, r), shift it into ctx[r, :len];
 *   else: the label is labels[r]; one out of [0, classes) makes the row's
 *     loss NaN and its dlogits zero, and the first is written to @fault.
 * loss (may be NULL): mean over the rows of zmax + log (sum) - z[label].
 * dlogits (may be NULL): (softmax - onehot (label)) / n.
 * The launch bounds keep it within the registers of a 1024-thread block. */
__global__ void __launch_bounds__ (ROWS_MAX_THREADS)
softmax_rows_kernel (const float *__restrict__ logits, int n, int classes, int group, int groups,
                     const int32_t *__restrict__ labels, uint64_t seed, uint64_t counter,
                     const uint64_t *offset, int32_t *tok, int32_t *ctx, int len, float *loss,
                     float *dlogits, int32_t *fault)
{
  __shared__ double part[32];
  const int lane = (int) threadIdx.x % group;
  const int g = (int) threadIdx.x / group;
  const int seg_start = ((int) threadIdx.x & 31) & ~(group - 1);
  const unsigned seg_bits = group == 32 ? TACH_WARP_FULL : (1u << group) - 1u;
  const int chunk = (classes + group - 1) / group;
  const int lo = min (lane * chunk, classes), hi = min (lo + chunk, classes);
  const int iters = (n + groups - 1) / groups;
  const uint64_t c = tok != NULL ? effective_counter (counter, offset) : 0;
  double acc = 0.0;

  for (int it = 0; it < iters; it++)
    {
      const int r = it * groups + g;
      const bool valid = g < groups && r < n;
      const float *row = logits + (size_t) (valid ? r : 0) * classes;
      float mxf = -FLT_MAX;
      double mx, s = 0.0, incl, total;
      int label = 0;
      bool bad = false;

      if (valid)
        for (int k = lane; k < classes; k += group)
          mxf = fmaxf (mxf, row[k]);
      mxf = group_max (mxf, group);
      mx = (double) mxf;
      if (valid)
        for (int k = lo; k < hi; k++)
          s += exp ((double) row[k] - mx);
      incl = group_scan (s, lane, group);
      total = __shfl_sync (TACH_WARP_FULL, incl, group - 1, group);

      if (tok != NULL)
        {
          double up = __shfl_up_sync (TACH_WARP_FULL, incl, 1, group);
          double target = (double) tach_rand_uniform (seed, c, (uint64_t) r) * total;
          unsigned passed = __ballot_sync (TACH_WARP_FULL, valid && incl > target);
          unsigned mine = (passed >> seg_start) & seg_bits;
          /* The first lane whose running mass passes the target owns the
           * token; with none (rounding at u close to 1) the last lane,
           * whose chunk ends with the last token, as on the host. */
          int owner = mine != 0 ? __ffs ((int) mine) - 1 : group - 1;
          int pick = hi - 1;

          if (valid && lane == owner)
            {
              double cum = lane == 0 ? 0.0 : up;

              for (int k = lo; k < hi; k++)
                {
                  cum += exp ((double) row[k] - mx);
                  if (cum > target)
                    {
                      pick = k;
                      break;
                    }
                }
            }
          label = __shfl_sync (TACH_WARP_FULL, pick, owner, group);
          if (valid && lane == 0)
            {
              tok[r] = label;
              if (ctx != NULL && len > 0)
                {
                  int32_t *cr = ctx + (size_t) r * len;

                  for (int i = 0; i + 1 < len; i++)
                    cr[i] = cr[i + 1];
                  cr[len - 1] = label;
                }
            }
        }
      else if (valid)
        {
          label = labels[r];
          bad = label < 0 || label >= classes;
          if (bad && lane == 0 && fault != NULL && atomicCAS (&fault[0], 0, r + 1) == 0)
            {
              fault[1] = label;
              fault[2] = classes;
            }
        }

      if (!valid)
        continue;
      /* The same value in every lane of the group: mx, total and label are. */
      acc += bad ? (double) NAN : mx + log (total) - (double) row[label];
      if (dlogits != NULL)
        {
          float *d = dlogits + (size_t) r * classes;

          for (int k = lane; k < classes; k += group)
            d[k] = bad ? 0.0f
                       : (float) ((exp ((double) row[k] - mx) / total - (k == label ? 1.0 : 0.0))
                                  / n);
        }
    }

  acc = block_sum_any (lane == 0 && g < groups ? acc : 0.0, part);
  if (threadIdx.x == 0 && loss != NULL)
    *loss = (float) (acc / n);
}

/* One block for every shape, so that the loss is summed in one fixed
 * order; the rows beyond its groups loop. */
static cudaError_t
launch_rows (cudaStream_t stream, const float *logits, int n, int classes,
             const int32_t *labels, uint64_t seed, uint64_t counter, const uint64_t *offset,
             int32_t *tok, int32_t *ctx, int len, float *loss, float *dlogits, int32_t *fault)
{
  int group, groups, threads;

  if (n <= 0 || classes <= 0)
    return loss != NULL ? cudaMemsetAsync (loss, 0, sizeof (float), stream) : cudaSuccess;
  group = rows_group (classes);
  groups = min (n, ROWS_MAX_THREADS / group);
  threads = (groups * group + 31) / 32 * 32;
  softmax_rows_kernel<<<1, threads, 0, stream>>> (logits, n, classes, group, groups, labels, seed,
                                                 counter, offset, tok, ctx, len, loss, dlogits,
                                                 fault);
  return cudaGetLastError ();
}

extern "C" {

cudaError_t
tach_cuda_launch_softmax_ce (cudaStream_t stream, const float *logits, const int32_t *labels, int n,
                             int classes, float *loss, float *dlogits, int32_t *fault)
{
  return launch_rows (stream, logits, n, classes, labels, 0, 0, NULL, NULL, NULL, 0, loss, dlogits,
                      fault);
}

cudaError_t
tach_cuda_launch_sample_tokens_nll (cudaStream_t stream, const float *logits, int n, int vocab,
                                    uint64_t seed, uint64_t counter, const uint64_t *offset,
                                    int32_t *tok, int32_t *ctx, int len, float *loss)
{
  return launch_rows (stream, logits, n, vocab, NULL, seed, counter, offset, tok, ctx, len, loss,
                      NULL, NULL);
}

}
