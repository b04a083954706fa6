/* tach-cpu-vec.h: one vector width for the CPU backend's hand-written
 * kernels, so that a kernel is written once and compiled for AVX-512 and
 * for AVX2 (as ggml maps its SIMD macros per architecture).
 *
 * Define TACH_VEC to 512 (AVX-512F + FMA) or 256 (AVX2 + FMA) and include
 * this header, then the kernel file (written against the names below);
 * define the other width and include both again.  Each inclusion drops
 * the previous width's macros and defines them for the new one; the
 * functions it defines carry the width's suffix, so both widths live in
 * one translation unit.  x86-64 with GCC or clang only.
 *
 *   TACH_VEC_FN(name)    name with the width's suffix (_avx512, _avx2)
 *   TACH_VEC_TARGET      the attributes of a kernel function at this width
 *   TACH_VEC_INLINE      the same, always inlined (the kernels' helpers:
 *                        GCC inlines only into a caller of the same target)
 *   TACH_VEC_LANES       floats per vector (16, 8)
 *   TACH_VEC_CHUNK       vectors of one row of A that a dot-product kernel
 *                        holds in registers beside TACH_VEC_LANES sums (8 of
 *                        the 32 AVX-512 registers, 4 of AVX2's 16)
 *   TachVec, TachVecMask, TachVecHalfMask: a vector of floats, a lane mask,
 *                        a mask of the lower half's lanes
 *   tach_vec_zero(), _set1(x), _load(p), _store(p, v), _fma(a, b, c) (a b + c,
 *   one rounding), _mul(a, b), _add(a, b), _sub(a, b), _max(a, b)
 *   tach_vec_gt(a, b), _le(a, b), _eq(a, b): lane masks of a > b, a <= b,
 *                        a == b (ordered: false where either is NaN)
 *   tach_vec_blend(mask, a, b): b in the mask's lanes, a elsewhere
 *   tach_vec_load_u8(p), _store_u8(p, v): TACH_VEC_LANES bytes to floats,
 *                        and floats holding small whole numbers to bytes
 *   tach_vec_loadz(mask, p), _storem(p, mask, v): masked load (zeros in the
 *                        lanes left out, which are never read) and store
 *   tach_vec_mask_below(n), _mask_from(n): lanes < n, lanes >= n
 *                        (0 <= n < TACH_VEC_LANES)
 *   tach_vec_hsum(v[TACH_VEC_LANES]): lane o is the sum of v[o]'s lanes,
 *                        every lane by the same tree of adds; the same as
 *                        tach_vec_hsum_join(tach_vec_hsum_half(v),
 *                        tach_vec_hsum_half(v + TACH_VEC_LANES / 2))
 *   tach_vec_half_mask(mask, h): half h (0 lower, 1 upper) of @mask, as a
 *                        mask of a half vector
 *   tach_vec_load_halves(hmask, p0, p1): a vector whose lower half is the
 *                        half vector at p0 and upper half that at p1, masked
 *   tach_vec_store_halves(p0, p1, hmask, v): the halves of v to p0 and p1
 *   TACH_VEC_KEEP(v)     an empty asm that makes GCC hold v in a register
 *                        (so that a load feeding two FMAs happens once)
 *   TACH_VEC_LINES(nv)   the 64-byte lines that @nv vectors cover
 *   TACH_VEC_PREFETCH_AHEAD(ldb): how many floats past each cache line of a
 *                        row of B (@ldb floats apart) the pass that brings B
 *                        from L2 asks for
 */
#undef TACH_VEC_FN
#undef TACH_VEC_TARGET
#undef TACH_VEC_INLINE
#undef TACH_VEC_LANES
#undef TACH_VEC_CHUNK
#undef TachVec
#undef TachVecMask
#undef TachVecHalfMask
#undef tach_vec_zero
#undef tach_vec_set1
#undef tach_vec_load
#undef tach_vec_store
#undef tach_vec_fma
#undef tach_vec_mul
#undef tach_vec_add
#undef tach_vec_sub
#undef tach_vec_max
#undef tach_vec_loadz
#undef tach_vec_gt
#undef tach_vec_le
#undef tach_vec_eq
#undef tach_vec_blend
#undef tach_vec_load_u8
#undef tach_vec_store_u8
#undef tach_vec_storem
#undef tach_vec_mask_below
#undef tach_vec_mask_from
#undef tach_vec_hsum
#undef tach_vec_hsum_half
#undef tach_vec_hsum_join
#undef tach_vec_half_mask
#undef tach_vec_load_halves
#undef tach_vec_store_halves
#undef TACH_VEC_KEEP
#undef TACH_VEC_LINES
#undef TACH_VEC_PREFETCH_AHEAD

#include <immintrin.h>

#define TACH_VEC_INLINE TACH_VEC_TARGET static inline __attribute__ ((always_inline))

#if TACH_VEC == 512

#define TACH_VEC_FN(name) name##_avx512
#define TACH_VEC_TARGET __attribute__ ((target ("avx512f,fma")))
#define TACH_VEC_LANES 16
#define TACH_VEC_CHUNK 8
#define TachVec __m512
#define TachVecMask __mmask16
#define TachVecHalfMask __mmask16
#define tach_vec_zero() _mm512_setzero_ps ()
#define tach_vec_set1(x) _mm512_set1_ps (x)
#define tach_vec_load(p) _mm512_loadu_ps (p)
#define tach_vec_store(p, v) _mm512_storeu_ps ((p), (v))
#define tach_vec_fma(a, b, c) _mm512_fmadd_ps ((a), (b), (c))
#define tach_vec_mul(a, b) _mm512_mul_ps ((a), (b))
#define tach_vec_add(a, b) _mm512_add_ps ((a), (b))
#define tach_vec_sub(a, b) _mm512_sub_ps ((a), (b))
#define tach_vec_max(a, b) _mm512_max_ps ((a), (b))
#define tach_vec_loadz(mask, p) _mm512_maskz_loadu_ps ((mask), (p))
#define tach_vec_gt(a, b) _mm512_cmp_ps_mask ((a), (b), _CMP_GT_OQ)
#define tach_vec_le(a, b) _mm512_cmp_ps_mask ((a), (b), _CMP_LE_OQ)
#define tach_vec_eq(a, b) _mm512_cmp_ps_mask ((a), (b), _CMP_EQ_OQ)
#define tach_vec_blend(mask, a, b) _mm512_mask_blend_ps ((mask), (a), (b))
#define tach_vec_load_u8(p) \
  _mm512_cvtepi32_ps (_mm512_cvtepu8_epi32 (_mm_loadu_si128 ((const __m128i *) (p))))
#define tach_vec_store_u8(p, v) \
  _mm_storeu_si128 ((__m128i *) (p), _mm512_cvtepi32_epi8 (_mm512_cvttps_epi32 (v)))
#define tach_vec_storem(p, mask, v) _mm512_mask_storeu_ps ((p), (mask), (v))
#define tach_vec_mask_below(n) ((__mmask16) ((1u << (n)) - 1u))
#define tach_vec_mask_from(n) ((__mmask16) (0xffffu << (n)))
#define tach_vec_hsum tach_vec_hsum_avx512
#define tach_vec_hsum_half tach_vec_hsum_half_avx512
#define tach_vec_hsum_join tach_vec_hsum_join_avx512
#define tach_vec_half_mask(mask, h) ((__mmask16) (((mask) >> (8 * (h))) & 0xffu))
#define tach_vec_load_halves(hmask, p0, p1) \
  _mm512_shuffle_f32x4 (_mm512_maskz_loadu_ps ((hmask), (p0)), \
                        _mm512_maskz_loadu_ps ((hmask), (p1)), 0x44)
#define tach_vec_store_halves(p0, p1, hmask, v)                               \
  do {                                                                        \
    _mm512_mask_storeu_ps ((p0), (hmask), (v));                               \
    _mm512_mask_storeu_ps ((p1), (hmask), _mm512_shuffle_f32x4 ((v), (v), 0xee)); \
  } while (0)
#define TACH_VEC_KEEP(v) __asm__ ("" : "+v" (v))
#define TACH_VEC_LINES(nv) (nv)
/* A row of B is read whole, one line per vector: 1 KB ahead in its own
 * stream (measured on the Zen 5: 512 to 1536 bytes about alike). */
#define TACH_VEC_PREFETCH_AHEAD(ldb) 256

#ifndef TACH_CPU_VEC_512_DONE
#define TACH_CPU_VEC_512_DONE
/* Four levels of shuffle-and-add halve the vectors (16 -> 8 -> 4 -> 2 ->
 * 1), then one permute puts the sums in order.  In two parts, so that a
 * kernel can reduce its first eight vectors before it computes the
 * others: tach_vec_hsum_half_avx512 takes eight to one (the first three
 * levels), tach_vec_hsum_join_avx512 the two halves' to the sums. */
TACH_VEC_INLINE __m512
tach_vec_hsum_half_avx512 (const __m512 v[8])
{
  __m512 r[4], s[2];

#pragma GCC unroll 4
  for (int i = 0; i < 4; i++)
    r[i] = _mm512_add_ps (_mm512_shuffle_f32x4 (v[2 * i], v[2 * i + 1], 0x44),
                          _mm512_shuffle_f32x4 (v[2 * i], v[2 * i + 1], 0xee));
#pragma GCC unroll 2
  for (int i = 0; i < 2; i++)
    s[i] = _mm512_add_ps (_mm512_shuffle_f32x4 (r[2 * i], r[2 * i + 1], 0x88),
                          _mm512_shuffle_f32x4 (r[2 * i], r[2 * i + 1], 0xdd));
  return _mm512_add_ps (_mm512_shuffle_ps (s[0], s[1], 0x44), _mm512_shuffle_ps (s[0], s[1], 0xee));
}

TACH_VEC_INLINE __m512
tach_vec_hsum_join_avx512 (__m512 u0, __m512 u1)
{
  __m512 f = _mm512_add_ps (_mm512_shuffle_ps (u0, u1, 0x88), _mm512_shuffle_ps (u0, u1, 0xdd));

  /* Lane 4 L + q of f holds the sum of v[4 q + L]. */
  return _mm512_permutexvar_ps (_mm512_set_epi32 (15, 11, 7, 3, 14, 10, 6, 2,
                                                  13, 9, 5, 1, 12, 8, 4, 0), f);
}

TACH_VEC_INLINE __m512
tach_vec_hsum_avx512 (const __m512 v[16])
{
  return tach_vec_hsum_join_avx512 (tach_vec_hsum_half_avx512 (v),
                                    tach_vec_hsum_half_avx512 (v + 8));
}
#endif

#elif TACH_VEC == 256

#define TACH_VEC_FN(name) name##_avx2
#define TACH_VEC_TARGET __attribute__ ((target ("avx2,fma")))
#define TACH_VEC_LANES 8
#define TACH_VEC_CHUNK 4
#define TachVec __m256
#define TachVecMask __m256i
#define TachVecHalfMask __m128i
#define tach_vec_zero() _mm256_setzero_ps ()
#define tach_vec_set1(x) _mm256_set1_ps (x)
#define tach_vec_load(p) _mm256_loadu_ps (p)
#define tach_vec_store(p, v) _mm256_storeu_ps ((p), (v))
#define tach_vec_fma(a, b, c) _mm256_fmadd_ps ((a), (b), (c))
#define tach_vec_mul(a, b) _mm256_mul_ps ((a), (b))
#define tach_vec_add(a, b) _mm256_add_ps ((a), (b))
#define tach_vec_sub(a, b) _mm256_sub_ps ((a), (b))
#define tach_vec_max(a, b) _mm256_max_ps ((a), (b))
/* maskload and maskstore read each lane's sign bit. */
#define tach_vec_loadz(mask, p) _mm256_maskload_ps ((p), (mask))
#define tach_vec_gt(a, b) _mm256_castps_si256 (_mm256_cmp_ps ((a), (b), _CMP_GT_OQ))
#define tach_vec_le(a, b) _mm256_castps_si256 (_mm256_cmp_ps ((a), (b), _CMP_LE_OQ))
#define tach_vec_eq(a, b) _mm256_castps_si256 (_mm256_cmp_ps ((a), (b), _CMP_EQ_OQ))
#define tach_vec_blend(mask, a, b) _mm256_blendv_ps ((a), (b), _mm256_castsi256_ps (mask))
#define tach_vec_load_u8(p) \
  _mm256_cvtepi32_ps (_mm256_cvtepu8_epi32 (_mm_loadl_epi64 ((const __m128i *) (p))))
/* 8 whole numbers 0..255: to 32-bit, then two unsigned-saturating packs. */
#define tach_vec_store_u8(p, v)                                                      \
  do {                                                                               \
    __m256i i_ = _mm256_cvttps_epi32 (v);                                            \
    __m128i w_ = _mm_packus_epi32 (_mm256_castsi256_si128 (i_),                      \
                                   _mm256_extracti128_si256 (i_, 1));                \
    _mm_storel_epi64 ((__m128i *) (p), _mm_packus_epi16 (w_, w_));                   \
  } while (0)
#define tach_vec_storem(p, mask, v) _mm256_maskstore_ps ((p), (mask), (v))
#define tach_vec_mask_below(n) \
  _mm256_cmpgt_epi32 (_mm256_set1_epi32 (n), _mm256_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7))
#define tach_vec_mask_from(n) \
  _mm256_cmpgt_epi32 (_mm256_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32 ((n) - 1))
#define tach_vec_hsum tach_vec_hsum_avx2
#define tach_vec_hsum_half tach_vec_hsum_half_avx2
#define tach_vec_hsum_join tach_vec_hsum_join_avx2
#define tach_vec_half_mask(mask, h) \
  ((h) ? _mm256_extracti128_si256 ((mask), 1) : _mm256_castsi256_si128 (mask))
#define tach_vec_load_halves(hmask, p0, p1) \
  _mm256_set_m128 (_mm_maskload_ps ((p1), (hmask)), _mm_maskload_ps ((p0), (hmask)))
#define tach_vec_store_halves(p0, p1, hmask, v)                    \
  do {                                                             \
    _mm_maskstore_ps ((p0), (hmask), _mm256_castps256_ps128 (v));  \
    _mm_maskstore_ps ((p1), (hmask), _mm256_extractf128_ps ((v), 1)); \
  } while (0)
#define TACH_VEC_KEEP(v) __asm__ ("" : "+x" (v))
#define TACH_VEC_LINES(nv) (((nv) + 1) / 2)
/* A block of B is read chunk by chunk, eight short streams that the
 * hardware prefetchers follow less well: each row asks for the same lines
 * of the next block's row (about 7% on the Zen 5 under the AVX2 cap; the
 * AVX-512 distance gained nothing here). */
#define TACH_VEC_PREFETCH_AHEAD(ldb) (8 * (ldb))

#ifndef TACH_CPU_VEC_256_DONE
#define TACH_CPU_VEC_256_DONE
/* The tree in two parts, so that a kernel can reduce its first four
 * vectors before it computes the other four: tach_vec_hsum_half_avx2 adds
 * lanes l and l + 1, then + 2, within each 128-bit half (vector q's sums
 * in lanes q and 4 + q); tach_vec_hsum_join_avx2 adds the halves. */
TACH_VEC_INLINE __m256
tach_vec_hsum_half_avx2 (const __m256 v[4])
{
  return _mm256_hadd_ps (_mm256_hadd_ps (v[0], v[1]), _mm256_hadd_ps (v[2], v[3]));
}

TACH_VEC_INLINE __m256
tach_vec_hsum_join_avx2 (__m256 u0, __m256 u1)
{
  return _mm256_add_ps (_mm256_permute2f128_ps (u0, u1, 0x20),
                        _mm256_permute2f128_ps (u0, u1, 0x31));
}

TACH_VEC_INLINE __m256
tach_vec_hsum_avx2 (const __m256 v[8])
{
  return tach_vec_hsum_join_avx2 (tach_vec_hsum_half_avx2 (v), tach_vec_hsum_half_avx2 (v + 4));
}
#endif

#else
#error "tach-cpu-vec.h: define TACH_VEC to 512 or 256"
#endif
