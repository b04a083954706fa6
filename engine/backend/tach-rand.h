/* tach-rand.h: counter-based random numbers shared by every backend.
 *
 * A value depends only on (seed, counter, element), never on the order in
 * which it is drawn, so CPU and GPU, fused and unrolled, prefetching and
 * resident feeds all see the same numbers.  Header-only so that .cu kernels
 * use the very same arithmetic.
 */
#pragma once

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define TACH_HD __host__ __device__ __forceinline__
#else
/* Always inlined: also into the per-ISA kernels of the CPU backend, whose
 * options (target, no-trapping-math) differ from the includer's. */
#define TACH_HD static inline __attribute__ ((always_inline))
#endif

/* a * b modulo 2^64.  On the host it is built from 32-bit halves, the
 * same bits in a form that GCC vectorises on AVX2 (which has no 64-bit
 * lane multiply), so that a loop of draws (dropout) runs in vectors. */
TACH_HD uint64_t
tach_rand_mul (uint64_t a, uint64_t b)
{
#ifdef __CUDACC__
  return a * b;
#else
  uint64_t lo = (a & 0xffffffffu) * (b & 0xffffffffu);
  uint64_t cross = (a >> 32) * (b & 0xffffffffu) + (a & 0xffffffffu) * (b >> 32);

  return lo + (cross << 32);
#endif
}

/* SplitMix64 finaliser: a bijective 64-bit mix with good avalanche. */
TACH_HD uint64_t
tach_rand_mix (uint64_t z)
{
  z += 0x9e3779b97f4a7c15ULL;
  z = tach_rand_mul (z ^ (z >> 30), 0xbf58476d1ce4e5b9ULL);
  z = tach_rand_mul (z ^ (z >> 27), 0x94d049bb133111ebULL);
  return z ^ (z >> 31);
}

/* The part of tach_rand_bits that depends on the seed and counter only:
 * a loop over elements computes it once. */
TACH_HD uint64_t
tach_rand_key (uint64_t seed, uint64_t counter)
{
  return tach_rand_mix (tach_rand_mix (seed) ^ counter);
}

TACH_HD uint64_t
tach_rand_bits (uint64_t seed, uint64_t counter, uint64_t element)
{
  return tach_rand_mix (tach_rand_key (seed, counter) ^ element);
}

/* tach_rand_uniform with its key from tach_rand_key.  The 24 bits go
 * through int32_t (exact: they are below 2^24), which converts to float in
 * vectors on AVX2 as well. */
TACH_HD float
tach_rand_uniform_key (uint64_t key, uint64_t element)
{
  return (float) (int32_t) (tach_rand_mix (key ^ element) >> 40) * (1.0f / 16777216.0f);
}

/* Uniform in [0, 1) with 24 random bits: exactly representable in float. */
TACH_HD float
tach_rand_uniform (uint64_t seed, uint64_t counter, uint64_t element)
{
  return tach_rand_uniform_key (tach_rand_key (seed, counter), element);
}

/* Standard normals by Box-Muller: elements 2p and 2p + 1 are the cosine
 * and sine halves of one pair of uniforms, so a fill computes one log, one
 * square root and one sin/cos per two values, while each value stays a
 * pure function of (seed, counter, element). */
TACH_HD void
tach_rand_normal_pair (uint64_t seed, uint64_t counter, uint64_t pair, double *even, double *odd)
{
  uint64_t a = tach_rand_bits (seed, counter, 2 * pair);
  uint64_t b = tach_rand_bits (seed, counter, 2 * pair + 1);
  double u1 = ((double) (a >> 11) + 1.0) * (1.0 / 9007199254740993.0); /* (0, 1] */
  double u2 = (double) (b >> 11) * (1.0 / 9007199254740992.0);
  double r = sqrt (-2.0 * log (u1));
  double theta = 6.283185307179586 * u2;

  *even = r * cos (theta);
  *odd = r * sin (theta);
}

TACH_HD double
tach_rand_normal (uint64_t seed, uint64_t counter, uint64_t element)
{
  double even, odd;

  tach_rand_normal_pair (seed, counter, element >> 1, &even, &odd);
  return (element & 1) ? odd : even;
}

/* out[i] = tach_rand_normal (seed, counter, first + i) for i < n. */
TACH_HD void
tach_rand_normal_fill (uint64_t seed, uint64_t counter, uint64_t first, size_t n, double *out)
{
  size_t i = 0;

  if (n > 0 && (first & 1))
    out[i++] = tach_rand_normal (seed, counter, first);
  for (; i + 1 < n; i += 2)
    tach_rand_normal_pair (seed, counter, (first + i) >> 1, &out[i], &out[i + 1]);
  if (i < n)
    out[i] = tach_rand_normal (seed, counter, first + i);
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
  TACH_RAND_STREAM_ATTN_DROPOUT = 8, /* attention's probabilities (gpt) */
};

#define TACH_RAND_COUNTER(stream, index) (((uint64_t) (stream) << 48) ^ (uint64_t) (index))
