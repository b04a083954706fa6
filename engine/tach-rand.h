/* tach-rand.h: counter-based random numbers shared by every backend.
 *
 * A value depends only on (seed, counter, element), never on the order in
 * which it is drawn, so CPU and GPU, fused and unrolled, prefetching and
 * resident feeds all see the same numbers.  Header-only so that .cu kernels
 * use the very same arithmetic.
 */
#pragma once

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define TACH_HD __host__ __device__ __forceinline__
#else
#define TACH_HD static inline
#endif

/* SplitMix64 finaliser: a bijective 64-bit mix with good avalanche. */
TACH_HD uint64_t
tach_rand_mix (uint64_t z)
{
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

TACH_HD uint64_t
tach_rand_bits (uint64_t seed, uint64_t counter, uint64_t element)
{
  return tach_rand_mix (tach_rand_mix (tach_rand_mix (seed) ^ counter) ^ element);
}

/* Uniform in [0, 1) with 24 random bits: exactly representable in float. */
TACH_HD float
tach_rand_uniform (uint64_t seed, uint64_t counter, uint64_t element)
{
  return (float) (tach_rand_bits (seed, counter, element) >> 40) * (1.0f / 16777216.0f);
}

/* Standard normal by Box-Muller over two independent uniforms (double). */
TACH_HD double
tach_rand_normal (uint64_t seed, uint64_t counter, uint64_t element)
{
  uint64_t a = tach_rand_bits (seed, counter, 2 * element);
  uint64_t b = tach_rand_bits (seed, counter, 2 * element + 1);
  double u1 = ((double) (a >> 11) + 1.0) * (1.0 / 9007199254740993.0); /* (0, 1] */
  double u2 = (double) (b >> 11) * (1.0 / 9007199254740992.0);
  return sqrt (-2.0 * log (u1)) * cos (6.283185307179586 * u2);
}

/* Streams (the "counter" argument) used by the engine, so that no two uses
 * of randomness collide. */
enum {
  TACH_RAND_STREAM_INIT    = 1,  /* parameter init: counter = STREAM<<32 | tensor index */
  TACH_RAND_STREAM_DATA    = 2,
  TACH_RAND_STREAM_LABELS  = 3,
  TACH_RAND_STREAM_ORDER   = 4,
  TACH_RAND_STREAM_DROPOUT = 5,
  TACH_RAND_STREAM_SAMPLE  = 6,
  TACH_RAND_STREAM_TEACHER = 7,
};

#define TACH_RAND_COUNTER(stream, index) (((uint64_t) (stream) << 48) ^ (uint64_t) (index))
