/* tach-cpu-transpose.c: the transposition of row-major blocks that the
 * CPU backend's rooms share: the LSTM's K-major weights and gradient
 * blocks, the fused attention's K^T and V^T.  Threads: any.
 */
#include "tach-cpu-private.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TACH_CPU_AVX_TRANSPOSE 1

/* The 8 x 8 floats at @src (@lds apart) transposed into @dst (@ldd
 * apart): each pair of rows interleaved, then pairs of pairs, then the
 * 128-bit halves swapped, eight loads and eight stores of whole rows. */
__attribute__ ((target ("avx"))) static void
transpose8 (const float *src, size_t lds, float *dst, size_t ldd)
{
  __m256 r[8], t[8], u[8];

  for (int i = 0; i < 8; i++)
    r[i] = _mm256_loadu_ps (src + (size_t) i * lds);
  for (int i = 0; i < 8; i += 2)
    {
      t[i] = _mm256_unpacklo_ps (r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps (r[i], r[i + 1]);
    }
  for (int i = 0; i < 8; i += 4)
    {
      u[i] = _mm256_shuffle_ps (t[i], t[i + 2], 0x44);
      u[i + 1] = _mm256_shuffle_ps (t[i], t[i + 2], 0xee);
      u[i + 2] = _mm256_shuffle_ps (t[i + 1], t[i + 3], 0x44);
      u[i + 3] = _mm256_shuffle_ps (t[i + 1], t[i + 3], 0xee);
    }
  for (int i = 0; i < 4; i++)
    {
      _mm256_storeu_ps (dst + (size_t) i * ldd, _mm256_permute2f128_ps (u[i], u[i + 4], 0x20));
      _mm256_storeu_ps (dst + (size_t) (i + 4) * ldd,
                        _mm256_permute2f128_ps (u[i], u[i + 4], 0x31));
    }
}
#endif

/* Rows [@r0, @r1) of @src (@cols of them, @lds apart) transposed into the
 * same columns of @dst (@ldd apart): by 8 x 8 blocks where the CPU runs
 * AVX, the rest element by element. */
void
tach_cpu_transpose_rows (size_t r0, size_t r1, size_t cols, const float *src, size_t lds,
                         float *dst, size_t ldd)
{
  size_t c0 = 0;

#ifdef TACH_CPU_AVX_TRANSPOSE
  if (r1 - r0 == 8 && tach_cpu_isa () != TACH_CPU_ISA_BASELINE)
    for (; c0 + 8 <= cols; c0 += 8)
      transpose8 (src + r0 * lds + c0, lds, dst + c0 * ldd + r0, ldd);
#endif
  for (size_t c = c0; c < cols; c++)
    for (size_t r = r0; r < r1; r++)
      dst[c * ldd + r] = src[r * lds + c];
}

