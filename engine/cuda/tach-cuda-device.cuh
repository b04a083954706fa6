/* tach-cuda-device.cuh: device helpers that Tach's .cu files share. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Threads per block of the pointwise kernels, and a grid for @n elements:
 * grid-stride loops (GRID_STRIDE) cover whatever a capped grid leaves. */
#define TACH_THREADS 256

static inline unsigned int
grid_for (size_t n)
{
  size_t blocks = (n + TACH_THREADS - 1) / TACH_THREADS;

  if (blocks > 65535 * 8)
    blocks = 65535 * 8;
  return (unsigned int) (blocks == 0 ? 1 : blocks);
}

#define GRID_STRIDE(i, n) \
  for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (size_t) blockDim.x * gridDim.x)

/* Every lane of the warp: the warp-level intrinsics below are always
 * executed by all 32 lanes together. */
#define TACH_WARP_FULL 0xffffffffu

/* The counter of a counter-taking op: @counter plus the step offset
 * (NULL: 0), read when the kernel runs, so that a graph replay draws with
 * its own step's counter (see TachBackend.step_offset). */
static __device__ __forceinline__ uint64_t
effective_counter (uint64_t counter, const uint64_t *offset)
{
  return offset != NULL ? counter + *offset : counter;
}
