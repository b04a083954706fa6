/* tach-cpu-gemm.c: the CPU backend's dense algebra: dnnl_sgemm on the
 * OpenMP pool for real products, and kernels on the calling thread for the
 * tiny ones (one stream's LSTM steps and output layer in generation), where
 * waking the pool would cost more than the work.
 *
 * The tiny products with a transposed B (x W^T with W [n, k] row-major, as
 * every layer of Tach stores its weights) are dot products of rows.  On
 * AVX-512 they run in a kernel of their own: sixteen rows of B at a time,
 * one accumulator vector each, the k tail by masked loads, and the sixteen
 * horizontal sums done together by a transpose-and-add tree, so that no
 * output pays a horizontal reduction of its own; on AVX2 the same with
 * eight rows and 256-bit vectors.  Each output's arithmetic
 * depends only on k, never on m or its place in C, so a product computed
 * whole or row by row (fused or unrolled LSTM) gives the same bits.
 *
 * Threads: the engine thread.
 */
#include <string.h>

#include "tach-cpu-private.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && defined(__ELF__)
#define TACH_CPU_AVX512_KERNELS 1
#include <immintrin.h>
#define TACH_AVX512 __attribute__ ((target ("avx512f,fma")))
#define TACH_AVX2 __attribute__ ((target ("avx2,fma")))
/* How far ahead of each row of B the AVX-512 kernel prefetches, in
 * bytes (measured on the Zen 5: 512 to 1536 about alike). */
#define TACH_GEMV_PREFETCH 1024
#endif

/* Products below this many multiply-adds (token-by-token generation, one
 * LSTM step of one stream) run on the calling thread in plain loops:
 * dnnl_sgemm would wake the thread pool for work of a few microseconds. */
#define TACH_CPU_SMALL_GEMM (256 * 1024)

static inline void
store_scaled (float *c, float sum, float alpha, float beta)
{
  *c = alpha * sum + (beta == 0.0f ? 0.0f : beta * *c);
}

/* C = alpha A B^T + beta C, A [m, k], B [n, k]: dot products of rows, four
 * rows of B at a time so that each load of A serves four outputs. */
TACH_CPU_SIMD_BODY void
small_gemm_nt_body (size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                    const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
  for (size_t i = 0; i < m; i++)
    {
      const float *ar = a + i * lda;
      float *cr = c + i * ldc;
      size_t j = 0;

      for (; j + 4 <= n; j += 4)
        {
          const float *b0 = b + j * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
          float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;

#pragma omp simd reduction(+:s0, s1, s2, s3)
          for (size_t p = 0; p < k; p++)
            {
              float x = ar[p];

              s0 += x * b0[p];
              s1 += x * b1[p];
              s2 += x * b2[p];
              s3 += x * b3[p];
            }
          store_scaled (cr + j, s0, alpha, beta);
          store_scaled (cr + j + 1, s1, alpha, beta);
          store_scaled (cr + j + 2, s2, alpha, beta);
          store_scaled (cr + j + 3, s3, alpha, beta);
        }
      for (; j < n; j++)
        {
          const float *br = b + j * ldb;
          float sum = 0.0f;

#pragma omp simd reduction(+:sum)
          for (size_t p = 0; p < k; p++)
            sum += ar[p] * br[p];
          store_scaled (cr + j, sum, alpha, beta);
        }
    }
}

TACH_CPU_SIMD_DISPATCH (static, small_gemm_nt,
                        (size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                         const float *b, size_t ldb, float beta, float *c, size_t ldc),
                        (m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))

/* C = alpha op(A) B + beta C, B [k, n]: rows of C as sums of rows of B. */
TACH_CPU_SIMD_BODY void
small_gemm_xn_body (gboolean ta, size_t m, size_t n, size_t k, float alpha, const float *a,
                    size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
  for (size_t i = 0; i < m; i++)
    {
      float *cr = c + i * ldc;

      if (beta == 0.0f)
        memset (cr, 0, n * sizeof (float));
      else if (beta != 1.0f)
        for (size_t j = 0; j < n; j++)
          cr[j] *= beta;
      for (size_t p = 0; p < k; p++)
        {
          float s = alpha * (ta ? a[p * lda + i] : a[i * lda + p]);
          const float *br = b + p * ldb;

#pragma omp simd
          for (size_t j = 0; j < n; j++)
            cr[j] += s * br[j];
        }
    }
}

TACH_CPU_SIMD_DISPATCH (static, small_gemm_xn,
                        (gboolean ta, size_t m, size_t n, size_t k, float alpha, const float *a,
                         size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc),
                        (ta, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))

#ifdef TACH_CPU_AVX512_KERNELS

/* Lane o of the result is the sum of v[o]'s sixteen lanes: four levels of
 * shuffle-and-add halve the vectors (16 -> 8 -> 4 -> 2 -> 1), then one
 * permute puts the sums in order.  Every output goes through the same
 * tree, whatever its lane. */
TACH_AVX512 static inline __attribute__ ((always_inline)) __m512
hsum16 (const __m512 v[16])
{
  __m512 r[8], s[4], u[2], f;

#pragma GCC unroll 8
  for (int i = 0; i < 8; i++)
    r[i] = _mm512_add_ps (_mm512_shuffle_f32x4 (v[2 * i], v[2 * i + 1], 0x44),
                          _mm512_shuffle_f32x4 (v[2 * i], v[2 * i + 1], 0xee));
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++)
    s[i] = _mm512_add_ps (_mm512_shuffle_f32x4 (r[2 * i], r[2 * i + 1], 0x88),
                          _mm512_shuffle_f32x4 (r[2 * i], r[2 * i + 1], 0xdd));
#pragma GCC unroll 2
  for (int i = 0; i < 2; i++)
    u[i] = _mm512_add_ps (_mm512_shuffle_ps (s[2 * i], s[2 * i + 1], 0x44),
                          _mm512_shuffle_ps (s[2 * i], s[2 * i + 1], 0xee));
  f = _mm512_add_ps (_mm512_shuffle_ps (u[0], u[1], 0x88),
                     _mm512_shuffle_ps (u[0], u[1], 0xdd));
  /* Lane 4 L + q of f holds the sum of v[4 q + L]. */
  return _mm512_permutexvar_ps (_mm512_set_epi32 (15, 11, 7, 3, 14, 10, 6, 2,
                                                  13, 9, 5, 1, 12, 8, 4, 0), f);
}

/* Adds to acc[r] the products of @nv whole vectors and a masked @tail
 * (0: none) of one row of A with row r of the sixteen from @b.  A is held
 * in registers and B read one row at a time: when ldb == k (a weight
 * matrix) that is one sequential stream rather than sixteen short ones.
 * With @prefetch (the first row of A, which brings B from L2) each row
 * also asks for the lines TACH_GEMV_PREFETCH bytes past its own: the
 * hardware prefetchers alone left a matrix-vector product at about 45
 * bytes per TSC tick from L2 on the Zen 5 (a 100-float row straddles
 * lines), with this about 65, the rate of a plain streaming read (past
 * the end of B a prefetch reads nothing and never faults).  @nv is
 * a constant wherever this is inlined, so the loops unroll to
 * straight-line code. */
TACH_AVX512 static inline __attribute__ ((always_inline)) void
dot16_chunk (__m512 acc[16], const float *ar, const float *b, size_t ldb, int nv,
             __mmask16 tail, gboolean prefetch)
{
  __m512 x[8], xt = _mm512_maskz_loadu_ps (tail, ar + nv * 16);

#pragma GCC unroll 8
  for (int v = 0; v < nv; v++)
    x[v] = _mm512_loadu_ps (ar + v * 16);
#pragma GCC unroll 16
  for (int r = 0; r < 16; r++)
    {
      const float *br = b + r * ldb;

      if (prefetch)
        {
#pragma GCC unroll 9
          for (int q = 0; q < nv + (tail != 0); q++)
            _mm_prefetch ((const char *) (br + q * 16) + TACH_GEMV_PREFETCH, _MM_HINT_T0);
        }
#pragma GCC unroll 8
      for (int v = 0; v < nv; v++)
        acc[r] = _mm512_fmadd_ps (x[v], _mm512_loadu_ps (br + v * 16), acc[r]);
      if (tail != 0)
        acc[r] = _mm512_fmadd_ps (xt, _mm512_maskz_loadu_ps (tail, br + nv * 16), acc[r]);
    }
}

/* The dot products of one row of A with the sixteen rows of B from @b
 * (@ldb apart), as a vector of sixteen sums: chunks of 128 floats, then
 * what is left.  Lane l of row r's accumulator sums the products at
 * p = l (mod 16) in increasing p, whatever the chunking. */
TACH_AVX512 static inline __attribute__ ((always_inline)) __m512
dot16 (const float *ar, const float *b, size_t ldb, size_t k, gboolean prefetch)
{
  __m512 acc[16];
  size_t p0 = 0;
  size_t left;
  __mmask16 tail;

#pragma GCC unroll 16
  for (int r = 0; r < 16; r++)
    acc[r] = _mm512_setzero_ps ();
  for (; p0 + 128 <= k; p0 += 128)
    dot16_chunk (acc, ar + p0, b + p0, ldb, 8, 0, prefetch);
  left = k - p0;
  tail = (__mmask16) ((1u << (left & 15)) - 1u);
  switch (left / 16)
    {
    case 0: dot16_chunk (acc, ar + p0, b + p0, ldb, 0, tail, prefetch); break;
    case 1: dot16_chunk (acc, ar + p0, b + p0, ldb, 1, tail, prefetch); break;
    case 2: dot16_chunk (acc, ar + p0, b + p0, ldb, 2, tail, prefetch); break;
    case 3: dot16_chunk (acc, ar + p0, b + p0, ldb, 3, tail, prefetch); break;
    case 4: dot16_chunk (acc, ar + p0, b + p0, ldb, 4, tail, prefetch); break;
    case 5: dot16_chunk (acc, ar + p0, b + p0, ldb, 5, tail, prefetch); break;
    case 6: dot16_chunk (acc, ar + p0, b + p0, ldb, 6, tail, prefetch); break;
    default: dot16_chunk (acc, ar + p0, b + p0, ldb, 7, tail, prefetch); break;
    }
  return hsum16 (acc);
}

/* Two rows of A (@a0, @a1) against eight rows of B: acc[r] for row a0
 * and acc[8 + r] for row a1 with B row r, each lane's products added in
 * dot16_chunk's order, so that hsum16 gives each output the bits of the
 * one-row path.  Each vector of B is loaded once for both rows (the empty
 * asm keeps GCC from folding the load into both FMAs, which would load it
 * twice): on the Zen 5 the product of W_x with the four steps' inputs of
 * generation (m = 4, B from L1 after the first pass, rows straddling
 * cache lines) takes about 0.75 of the one-row path's time. */
TACH_AVX512 static inline __attribute__ ((always_inline)) void
dot8x2_chunk (__m512 acc[16], const float *a0, const float *a1, const float *b, size_t ldb,
              int nv, __mmask16 tail, gboolean prefetch)
{
  __m512 x0[4], x1[4];
  __m512 xt0 = _mm512_maskz_loadu_ps (tail, a0 + nv * 16);
  __m512 xt1 = _mm512_maskz_loadu_ps (tail, a1 + nv * 16);

#pragma GCC unroll 4
  for (int v = 0; v < nv; v++)
    {
      x0[v] = _mm512_loadu_ps (a0 + v * 16);
      x1[v] = _mm512_loadu_ps (a1 + v * 16);
    }
#pragma GCC unroll 8
  for (int r = 0; r < 8; r++)
    {
      const float *br = b + r * ldb;

      if (prefetch)
        {
#pragma GCC unroll 5
          for (int q = 0; q < nv + (tail != 0); q++)
            _mm_prefetch ((const char *) (br + q * 16) + TACH_GEMV_PREFETCH, _MM_HINT_T0);
        }
#pragma GCC unroll 4
      for (int v = 0; v < nv; v++)
        {
          __m512 bv = _mm512_loadu_ps (br + v * 16);

          __asm__ ("" : "+v" (bv));
          acc[r] = _mm512_fmadd_ps (x0[v], bv, acc[r]);
          acc[r + 8] = _mm512_fmadd_ps (x1[v], bv, acc[r + 8]);
        }
      if (tail != 0)
        {
          __m512 bt = _mm512_maskz_loadu_ps (tail, br + nv * 16);

          __asm__ ("" : "+v" (bt));
          acc[r] = _mm512_fmadd_ps (xt0, bt, acc[r]);
          acc[r + 8] = _mm512_fmadd_ps (xt1, bt, acc[r + 8]);
        }
    }
}

/* Lanes 0-7: the dot products of A row @a0 with the eight rows of B from
 * @b; lanes 8-15: of row @a1.  Chunks of 64 floats, so that both rows'
 * chunks and the sixteen sums fit the registers (the chunking changes no
 * lane's order). */
TACH_AVX512 static inline __attribute__ ((always_inline)) __m512
dot8x2 (const float *a0, const float *a1, const float *b, size_t ldb, size_t k,
        gboolean prefetch)
{
  __m512 acc[16];
  size_t p0 = 0;
  size_t left;
  __mmask16 tail;

#pragma GCC unroll 16
  for (int r = 0; r < 16; r++)
    acc[r] = _mm512_setzero_ps ();
  for (; p0 + 64 <= k; p0 += 64)
    dot8x2_chunk (acc, a0 + p0, a1 + p0, b + p0, ldb, 4, 0, prefetch);
  left = k - p0;
  tail = (__mmask16) ((1u << (left & 15)) - 1u);
  switch (left / 16)
    {
    case 0: dot8x2_chunk (acc, a0 + p0, a1 + p0, b + p0, ldb, 0, tail, prefetch); break;
    case 1: dot8x2_chunk (acc, a0 + p0, a1 + p0, b + p0, ldb, 1, tail, prefetch); break;
    case 2: dot8x2_chunk (acc, a0 + p0, a1 + p0, b + p0, ldb, 2, tail, prefetch); break;
    default: dot8x2_chunk (acc, a0 + p0, a1 + p0, b + p0, ldb, 3, tail, prefetch); break;
    }
  return hsum16 (acc);
}

/* small_gemm_nt's contract for n >= 16.  Blocks of sixteen rows of B
 * (6.4 KB at k = 100) stay in L1 while every row of A passes over them.
 * A partial last block is the last sixteen rows, storing only those not
 * yet stored: each output's value does not depend on its block. */
TACH_AVX512 static void
small_gemm_nt_avx512 (size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                      const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
  __m512 valpha = _mm512_set1_ps (alpha);
  __m512 vbeta = _mm512_set1_ps (beta);

  for (size_t done = 0; done < n; done += 16)
    {
      size_t j = MIN (done, n - 16);
      __mmask16 store = (__mmask16) (0xffffu << (done - j));
      size_t i = 0;

      /* Rows of A in pairs, each half of the block at a time: lanes 0-7
       * of C row i, then lanes 0-7 of row i + 1 (from the sums' lanes
       * 8-15), with the one-row path's alpha and beta arithmetic. */
      for (; i + 2 <= m; i += 2)
        for (int h = 0; h < 2; h++)
          {
            float *c0 = c + i * ldc + j + 8 * h, *c1 = c0 + ldc;
            __mmask16 s8 = (__mmask16) ((store >> (8 * h)) & 0xffu);
            __m512 sum = _mm512_mul_ps (valpha, dot8x2 (a + i * lda, a + (i + 1) * lda,
                                                        b + (j + 8 * h) * ldb, ldb, k, i == 0));

            if (beta != 0.0f)
              sum = _mm512_add_ps (sum, _mm512_mul_ps (
                                          vbeta, _mm512_shuffle_f32x4 (
                                                   _mm512_maskz_loadu_ps (s8, c0),
                                                   _mm512_maskz_loadu_ps (s8, c1), 0x44)));
            _mm512_mask_storeu_ps (c0, s8, sum);
            _mm512_mask_storeu_ps (c1, s8, _mm512_shuffle_f32x4 (sum, sum, 0xee));
          }
      for (; i < m; i++)
        {
          float *cr = c + i * ldc + j;
          __m512 sum = _mm512_mul_ps (valpha, dot16 (a + i * lda, b + j * ldb, ldb, k,
                                                      i == 0));

          /* beta == 0 never reads C, which may hold NaNs. */
          if (beta != 0.0f)
            sum = _mm512_add_ps (sum, _mm512_mul_ps (vbeta, _mm512_maskz_loadu_ps (store, cr)));
          _mm512_mask_storeu_ps (cr, store, sum);
        }
    }
}

/* The AVX2 kernel: eight rows of B at a time, chunks of 32 floats (eight
 * accumulators and four vectors of A fit the sixteen registers).  Lane o
 * of hsum8's result is the sum of v[o]'s eight lanes, by the same tree for
 * every output. */
TACH_AVX2 static inline __attribute__ ((always_inline)) __m256
hsum8 (const __m256 v[8])
{
  __m256 u0 = _mm256_hadd_ps (_mm256_hadd_ps (v[0], v[1]), _mm256_hadd_ps (v[2], v[3]));
  __m256 u1 = _mm256_hadd_ps (_mm256_hadd_ps (v[4], v[5]), _mm256_hadd_ps (v[6], v[7]));

  return _mm256_add_ps (_mm256_permute2f128_ps (u0, u1, 0x20),
                        _mm256_permute2f128_ps (u0, u1, 0x31));
}

/* With @prefetch (the pass that brings B from L2), each row also asks for
 * the same lines of the next block's row (eight rows on): this kernel
 * reads a block chunk by chunk, eight short streams that the hardware
 * prefetchers follow less well (about 7% on the Zen 5 under the AVX2
 * cap; the AVX-512 kernel's distance, which reads rows whole, gained
 * nothing here). */
TACH_AVX2 static inline __attribute__ ((always_inline)) void
dot8_chunk (__m256 acc[8], const float *ar, const float *b, size_t ldb, int nv, __m256i tail,
            gboolean have_tail, gboolean prefetch)
{
  __m256 x[4], xt = _mm256_maskload_ps (ar + nv * 8, tail);

#pragma GCC unroll 4
  for (int v = 0; v < nv; v++)
    x[v] = _mm256_loadu_ps (ar + v * 8);
#pragma GCC unroll 8
  for (int r = 0; r < 8; r++)
    {
      const float *br = b + r * ldb;

      if (prefetch)
        {
#pragma GCC unroll 3
          for (int q = 0; q < (nv + have_tail + 1) / 2; q++)
            _mm_prefetch ((const char *) (br + 8 * ldb + q * 16), _MM_HINT_T0);
        }
#pragma GCC unroll 4
      for (int v = 0; v < nv; v++)
        acc[r] = _mm256_fmadd_ps (x[v], _mm256_loadu_ps (br + v * 8), acc[r]);
      if (have_tail)
        acc[r] = _mm256_fmadd_ps (xt, _mm256_maskload_ps (br + nv * 8, tail), acc[r]);
    }
}

TACH_AVX2 static inline __attribute__ ((always_inline)) __m256
dot8 (const float *ar, const float *b, size_t ldb, size_t k, gboolean prefetch)
{
  __m256 acc[8];
  size_t p0 = 0;
  size_t left;
  int rest;
  __m256i tail;
  gboolean have_tail;

#pragma GCC unroll 8
  for (int r = 0; r < 8; r++)
    acc[r] = _mm256_setzero_ps ();
  for (; p0 + 32 <= k; p0 += 32)
    dot8_chunk (acc, ar + p0, b + p0, ldb, 4, _mm256_setzero_si256 (), FALSE, prefetch);
  left = k - p0;
  rest = (int) (left & 7);
  /* Lane l loads when l < rest (maskload reads the sign bit). */
  tail = _mm256_cmpgt_epi32 (_mm256_set1_epi32 (rest), _mm256_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7));
  have_tail = rest != 0;
  switch (left / 8)
    {
    case 0: dot8_chunk (acc, ar + p0, b + p0, ldb, 0, tail, have_tail, prefetch); break;
    case 1: dot8_chunk (acc, ar + p0, b + p0, ldb, 1, tail, have_tail, prefetch); break;
    case 2: dot8_chunk (acc, ar + p0, b + p0, ldb, 2, tail, have_tail, prefetch); break;
    default: dot8_chunk (acc, ar + p0, b + p0, ldb, 3, tail, have_tail, prefetch); break;
    }
  return hsum8 (acc);
}

/* dot8x2's AVX2 counterpart: two rows of A against four rows of B,
 * acc[r] and acc[4 + r], chunks of 16 floats (the sixteen registers hold
 * both rows' chunk, the eight sums and B's vector); hsum8 then gives
 * lanes 0-3 for row @a0 and 4-7 for @a1, each with the one-row path's
 * bits.  About 0.7 of the one-row path's time for W_x's m = 4. */
TACH_AVX2 static inline __attribute__ ((always_inline)) void
dot4x2_chunk (__m256 acc[8], const float *a0, const float *a1, const float *b, size_t ldb,
              int nv, __m256i tail, gboolean have_tail, gboolean prefetch)
{
  __m256 x0[2], x1[2];
  __m256 xt0 = _mm256_maskload_ps (a0 + nv * 8, tail);
  __m256 xt1 = _mm256_maskload_ps (a1 + nv * 8, tail);

#pragma GCC unroll 2
  for (int v = 0; v < nv; v++)
    {
      x0[v] = _mm256_loadu_ps (a0 + v * 8);
      x1[v] = _mm256_loadu_ps (a1 + v * 8);
    }
#pragma GCC unroll 4
  for (int r = 0; r < 4; r++)
    {
      const float *br = b + r * ldb;

      if (prefetch)
        _mm_prefetch ((const char *) (br + 8 * ldb), _MM_HINT_T0);
#pragma GCC unroll 2
      for (int v = 0; v < nv; v++)
        {
          __m256 bv = _mm256_loadu_ps (br + v * 8);

          __asm__ ("" : "+x" (bv));
          acc[r] = _mm256_fmadd_ps (x0[v], bv, acc[r]);
          acc[r + 4] = _mm256_fmadd_ps (x1[v], bv, acc[r + 4]);
        }
      if (have_tail)
        {
          __m256 bt = _mm256_maskload_ps (br + nv * 8, tail);

          __asm__ ("" : "+x" (bt));
          acc[r] = _mm256_fmadd_ps (xt0, bt, acc[r]);
          acc[r + 4] = _mm256_fmadd_ps (xt1, bt, acc[r + 4]);
        }
    }
}

TACH_AVX2 static inline __attribute__ ((always_inline)) __m256
dot4x2 (const float *a0, const float *a1, const float *b, size_t ldb, size_t k,
        gboolean prefetch)
{
  __m256 acc[8];
  size_t p0 = 0;
  int rest;
  __m256i tail;

#pragma GCC unroll 8
  for (int r = 0; r < 8; r++)
    acc[r] = _mm256_setzero_ps ();
  for (; p0 + 16 <= k; p0 += 16)
    dot4x2_chunk (acc, a0 + p0, a1 + p0, b + p0, ldb, 2, _mm256_setzero_si256 (), FALSE,
                  prefetch);
  rest = (int) ((k - p0) & 7);
  tail = _mm256_cmpgt_epi32 (_mm256_set1_epi32 (rest), _mm256_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7));
  if (k - p0 >= 8)
    dot4x2_chunk (acc, a0 + p0, a1 + p0, b + p0, ldb, 1, tail, rest != 0, prefetch);
  else
    dot4x2_chunk (acc, a0 + p0, a1 + p0, b + p0, ldb, 0, tail, rest != 0, prefetch);
  return hsum8 (acc);
}

/* small_gemm_nt's contract for n >= 8, as small_gemm_nt_avx512 does it. */
TACH_AVX2 static void
small_gemm_nt_avx2 (size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                    const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
  static const int32_t lanes[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  __m256 valpha = _mm256_set1_ps (alpha);
  __m256 vbeta = _mm256_set1_ps (beta);

  for (size_t done = 0; done < n; done += 8)
    {
      size_t j = MIN (done, n - 8);
      /* Lanes from done - j on are not stored yet. */
      __m256i store = _mm256_cmpgt_epi32 (_mm256_loadu_si256 ((const __m256i *) lanes),
                                          _mm256_set1_epi32 ((int) (done - j) - 1));
      size_t i = 0;

      /* Rows of A in pairs, half a block at a time, as the AVX-512 kernel. */
      for (; i + 2 <= m; i += 2)
        for (int h = 0; h < 2; h++)
          {
            float *c0 = c + i * ldc + j + 4 * h, *c1 = c0 + ldc;
            __m128i s4 = h ? _mm256_extracti128_si256 (store, 1) : _mm256_castsi256_si128 (store);
            __m256 sum = _mm256_mul_ps (valpha, dot4x2 (a + i * lda, a + (i + 1) * lda,
                                                        b + (j + 4 * h) * ldb, ldb, k, i == 0));

            if (beta != 0.0f)
              sum = _mm256_add_ps (sum, _mm256_mul_ps (vbeta,
                                                       _mm256_set_m128 (_mm_maskload_ps (c1, s4),
                                                                        _mm_maskload_ps (c0, s4))));
            _mm_maskstore_ps (c0, s4, _mm256_castps256_ps128 (sum));
            _mm_maskstore_ps (c1, s4, _mm256_extractf128_ps (sum, 1));
          }
      for (; i < m; i++)
        {
          float *cr = c + i * ldc + j;
          __m256 sum = _mm256_mul_ps (valpha, dot8 (a + i * lda, b + j * ldb, ldb, k,
                                                    i == 0));

          if (beta != 0.0f)
            sum = _mm256_add_ps (sum, _mm256_mul_ps (vbeta, _mm256_maskload_ps (cr, store)));
          _mm256_maskstore_ps (cr, store, sum);
        }
    }
}

#endif

gboolean
tach_cpu_sgemm (TachBackend *be, gboolean ta, gboolean tb, size_t m, size_t n, size_t k,
                float alpha, const float *a, size_t lda, const float *b, size_t ldb,
                float beta, float *c, size_t ldc)
{
  return tach_cpu_sgemm_mode (be, TACH_CPU_GEMM_AUTO, ta, tb, m, n, k, alpha, a, lda, b, ldb,
                              beta, c, ldc);
}

/* The small kernels for C = alpha op(A) op(B) + beta C; FALSE when they
 * do not cover the transposes (both transposed). */
static gboolean
small_gemm (gboolean ta, gboolean tb, size_t m, size_t n, size_t k, float alpha,
            const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c,
            size_t ldc)
{
  if (ta && tb)
    return FALSE;
  if (tb)
    {
#ifdef TACH_CPU_AVX512_KERNELS
      TachCpuIsa isa = tach_cpu_isa ();

      if (n >= 16 && isa == TACH_CPU_ISA_AVX512)
        {
          small_gemm_nt_avx512 (m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
          return TRUE;
        }
      if (n >= 8 && isa >= TACH_CPU_ISA_AVX2)
        {
          small_gemm_nt_avx2 (m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
          return TRUE;
        }
#endif
      small_gemm_nt (m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
  else
    small_gemm_xn (ta, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  return TRUE;
}

dnnl_status_t
tach_cpu_sgemm_local (gboolean ta, gboolean tb, size_t m, size_t n, size_t k, float alpha,
                      const float *a, size_t lda, const float *b, size_t ldb, float beta,
                      float *c, size_t ldc)
{
  if (m == 0 || n == 0)
    return dnnl_success;
  if ((double) m * (double) n * (double) k <= TACH_CPU_SMALL_GEMM
      && small_gemm (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
    return dnnl_success;
  /* Inside a parallel region oneDNN runs the product on this thread. */
  return dnnl_sgemm (ta ? 'T' : 'N', tb ? 'T' : 'N', (dnnl_dim_t) m, (dnnl_dim_t) n,
                     (dnnl_dim_t) k, alpha, a, (dnnl_dim_t) lda, b, (dnnl_dim_t) ldb, beta, c,
                     (dnnl_dim_t) ldc);
}

gboolean
tach_cpu_sgemm_mode (TachBackend *be, TachCpuGemmMode mode, gboolean ta, gboolean tb,
                     size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                     const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
  gboolean serial;

  if (m == 0 || n == 0)
    return TRUE;
  if (mode == TACH_CPU_GEMM_AUTO)
    serial = (double) m * (double) n * (double) k <= TACH_CPU_SMALL_GEMM;
  else
    serial = mode == TACH_CPU_GEMM_SERIAL || mode == TACH_CPU_GEMM_SPLIT;
  if (serial && small_gemm (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
    return TRUE;
  tach_cpu_bind_threads (be);
  /* dnnl_sgemm is row-major, like Tach's contract. */
  TACH_DNNL_TRY (be, dnnl_sgemm (ta ? 'T' : 'N', tb ? 'T' : 'N', (dnnl_dim_t) m, (dnnl_dim_t) n,
                                 (dnnl_dim_t) k, alpha, a, (dnnl_dim_t) lda, b, (dnnl_dim_t) ldb,
                                 beta, c, (dnnl_dim_t) ldc), fail);
  return TRUE;
fail:
  return FALSE;
}

void
tach_cpu_gemm (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k,
               float alpha, const float *a, int lda, const float *b, int ldb,
               float beta, float *c, int ldc)
{
  if (m <= 0 || n <= 0)
    return;
  tach_cpu_sgemm (be, ta, tb, m, n, MAX (k, 0), alpha, a, lda, b, ldb, beta, c, ldc);
}

