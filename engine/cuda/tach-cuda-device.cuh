/* tach-cuda-device.cuh: device helpers that Tach's .cu files share. */
#pragma once

#include <stdint.h>

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
