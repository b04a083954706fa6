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
 * The grid comes from the shape alone (rows_grid): rows that fit one block
 * of ROWS_THREADS lanes (W2's batch-1 token: one warp) run in that block;
 * more rows spread over blocks of ROWS_THREADS, at most
 * TACH_CUDA_ROWS_BLOCKS_MAX of them, each looping over its share.  The loss
 * is summed in a fixed order for a given shape: each group its rows in
 * order, a fixed tree over the block's groups, and with several blocks each
 * block's sum goes to the backend's scratch, whose last block (found by a
 * ticket that wraps back to 0 for the next launch) adds them in index
 * order.  Drawing and the cross-entropy of given labels are one kernel with
 * the same geometry for the same shape, so sample_tokens_nll's loss is
 * softmax_ce's loss of the drawn tokens to the bit, and a step gives the
 * same bits eagerly or replayed from a CUDA graph.  Nothing allocates or
 * waits: the launch is capturable.  The backend queues every launch on one
 * stream, so one scratch serves them all.
 */
#include <float.h>
#include <math.h>

#include "tach-cuda-kernels.h"
#include "tach-cuda-device.cuh"
#include "tach-rand.h"

#define ROWS_THREADS 256   /* a block's lanes */
#define ROWS_CHUNK 8       /* classes per lane, about */

/* The scratch (TACH_CUDA_ROWS_SCRATCH_BYTES): the ticket, then the blocks'
 * sums. */
#define ROWS_TICKET(scratch) ((unsigned int *) (scratch))
#define ROWS_PARTIAL(scratch) ((double *) (scratch) + 1)

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

/* Block b's rows: r = (it * blocks + b) * groups + g, it < @iters, for
 * its @groups groups of @group lanes, the block rounded up to whole warps
 * (lanes past the groups only join the warp-wide calls).  Every loop below
 * that holds a warp-wide call runs the same number of times in every lane
 * of the grid.
 *   tok != NULL: draw tok[r] by inverse CDF with u = tach_rand_uniform
 *     (seed, counter + *offset, r), shift it into ctx[r, :len];
 *   else: the label is labels[r]; one out of [0, classes) makes the row's
 *     loss NaN and its dlogits zero, and the first is written to @fault.
 * loss (may be NULL): mean over the rows of zmax + log (sum) - z[label];
 *   with more than one block through @scratch, whose ticket is 0 between
 *   launches.
 * dlogits (may be NULL): (softmax - onehot (label)) / n.
 * The launch bounds keep three blocks an SM at least (ptxas -v: 56
 * registers on sm_90, 55 on sm_80, no spills: four fit). */
__global__ void __launch_bounds__ (ROWS_THREADS, 3)
softmax_rows_kernel (const float *__restrict__ logits, int n, int classes, int group, int groups,
                     int iters, const int32_t *__restrict__ labels, uint64_t seed, uint64_t counter,
                     const uint64_t *offset, int32_t *tok, int32_t *ctx, int len, float *loss,
                     float *dlogits, int32_t *fault, void *scratch)
{
  __shared__ double part[ROWS_THREADS / 32];
  __shared__ bool last;
  const int lane = (int) threadIdx.x % group;
  const int g = (int) threadIdx.x / group;
  const int seg_start = ((int) threadIdx.x & 31) & ~(group - 1);
  const unsigned seg_bits = group == 32 ? TACH_WARP_FULL : (1u << group) - 1u;
  const int chunk = (classes + group - 1) / group;
  const int lo = min (lane * chunk, classes), hi = min (lo + chunk, classes);
  const int blocks = (int) gridDim.x;
  const uint64_t c = tok != NULL ? effective_counter (counter, offset) : 0;
  double acc = 0.0;

  for (int it = 0; it < iters; it++)
    {
      const int r = (it * blocks + (int) blockIdx.x) * groups + g;
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

  if (loss == NULL)
    return;
  acc = block_sum_any (lane == 0 && g < groups ? acc : 0.0, part);
  if (blocks == 1)
    {
      if (threadIdx.x == 0)
        *loss = (float) (acc / n);
      return;
    }

  /* Block sums to the scratch; the block that takes the last ticket adds
   * them.  The fence makes this block's sum visible to every block before
   * its ticket is; atomicInc wraps the ticket back to 0 for the next
   * launch (and graph replay). */
  if (threadIdx.x == 0)
    {
      ROWS_PARTIAL (scratch)[blockIdx.x] = acc;
      __threadfence ();
      last = atomicInc (ROWS_TICKET (scratch), (unsigned) blocks - 1) == (unsigned) blocks - 1;
    }
  __syncthreads ();
  if (!last)
    return;
  __threadfence ();
  acc = 0.0;
  for (int b = (int) threadIdx.x; b < blocks; b += (int) blockDim.x)
    acc += __ldcg (&ROWS_PARTIAL (scratch)[b]);
  acc = block_sum_any (acc, part);
  if (threadIdx.x == 0)
    *loss = (float) (acc / n);
}

/* The launch geometry, from the shape alone (so that the same shape sums
 * its loss in the same order on any GPU). */
typedef struct {
  int group, groups, blocks, threads, iters;
} RowsGrid;

static RowsGrid
rows_grid (int n, int classes)
{
  RowsGrid grid;
  int per_block;
  int64_t per_grid;

  grid.group = rows_group (classes);
  per_block = ROWS_THREADS / grid.group;
  grid.blocks = min (n / per_block + (n % per_block != 0), TACH_CUDA_ROWS_BLOCKS_MAX);
  grid.groups = grid.blocks == 1 ? n : per_block;
  grid.threads = (grid.groups * grid.group + 31) / 32 * 32;
  per_grid = (int64_t) grid.groups * grid.blocks;
  grid.iters = (int) ((n + per_grid - 1) / per_grid);
  return grid;
}

static cudaError_t
launch_rows (cudaStream_t stream, const float *logits, int n, int classes,
             const int32_t *labels, uint64_t seed, uint64_t counter, const uint64_t *offset,
             int32_t *tok, int32_t *ctx, int len, float *loss, float *dlogits, int32_t *fault,
             void *scratch)
{
  RowsGrid grid;

  if (n <= 0 || classes <= 0)
    return loss != NULL ? cudaMemsetAsync (loss, 0, sizeof (float), stream) : cudaSuccess;
  grid = rows_grid (n, classes);
  softmax_rows_kernel<<<grid.blocks, grid.threads, 0, stream>>> (
    logits, n, classes, grid.group, grid.groups, grid.iters, labels, seed, counter, offset, tok,
    ctx, len, loss, dlogits, fault, scratch);
  return cudaGetLastError ();
}

extern "C" {

cudaError_t
tach_cuda_launch_softmax_ce (cudaStream_t stream, const float *logits, const int32_t *labels, int n,
                             int classes, float *loss, float *dlogits, int32_t *fault,
                             void *scratch)
{
  return launch_rows (stream, logits, n, classes, labels, 0, 0, NULL, NULL, NULL, 0, loss, dlogits,
                      fault, scratch);
}

cudaError_t
tach_cuda_launch_sample_tokens_nll (cudaStream_t stream, const float *logits, int n, int vocab,
                                    uint64_t seed, uint64_t counter, const uint64_t *offset,
                                    int32_t *tok, int32_t *ctx, int len, float *loss,
                                    void *scratch)
{
  return launch_rows (stream, logits, n, vocab, NULL, seed, counter, offset, tok, ctx, len, loss,
                      NULL, NULL, scratch);
}

}
