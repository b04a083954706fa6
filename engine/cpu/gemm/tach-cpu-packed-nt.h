/* tach-cpu-packed-nt.h: the small x W^T product on a packed copy of W
 * (tach_cpu_pack_nt), written once against tach-cpu-vec.h and included by
 * tach-cpu-packed.c after each width's inclusion of it (TACH_VEC_FN makes
 * packed_nt_avx512 and packed_nt_avx2).  Every output gets the bits of
 * tach_cpu_sgemm_local at this width: lane l of an output's accumulator
 * sums the products at p = l (mod L) in increasing p (L =
 * TACH_VEC_LANES), the k tail adds zero (a masked 0 x 0 there, a padded
 * 0 x 0 or an add of zero here: the same bits), and the L lanes are added
 * in tach_vec_hsum's tree.
 *
 * The packed copy is "horizontal": blocks of L rows, each block the rows'
 * k values L at a time (vector v of the block: row 0's p = L v .. L v +
 * L - 1, then row 1's, ... row L - 1's; zeros past k and past n), one
 * sequential stream that the hardware prefetchers follow, every load one
 * aligned vector.  Each row of A is held a vector at a time and multiplies
 * the block's L rows into L accumulators (or, for 2-3 rows of A, half the
 * block at a time, each load of B serving every row), which hsum's tree
 * then adds.
 *
 * Until 2026-12-06 the copy was "vertical" (each block one vector per p,
 * the L rows' values at p; accumulator l the products at p = l mod L for
 * every row at once, added lane by lane without hsum's shuffles).  That
 * needs a broadcast of A's value per product, which bound it at AVX2
 * (shuffles on one port, or a second load per FMA).  On the Intel Xeon
 * model 167, one thread, B in L2, the horizontal form against the
 * vertical one:
 *   AVX2     one row by 554 x 100   1.99-2.01 against 2.31-2.36 us
 *            three rows by 400 x 100  2.80-2.81 against 3.86-3.88 us
 *   AVX-512  one row by 554 x 100   1.84-1.86 against 1.65-1.69 us
 *            three rows by 400 x 100  2.49-2.57 against 2.91 us
 * and generation of one stream 111-112 k against 89-95 k tokens/s at
 * AVX2, 120-125 k against 124-125 k at AVX-512 (alike: the last row's
 * shuffles are a larger share of 16 lanes by 7 vectors of k).
 */

/* One output vector of C: alpha @sum plus beta C, under @store's lanes. */
TACH_VEC_INLINE void
TACH_VEC_FN (packed_out) (TachVec sum, TachVec valpha, float beta, TachVec vbeta,
                          TachVecMask store, float *cr)
{
  sum = tach_vec_mul (valpha, sum);
  /* beta == 0 never reads C, which may hold NaNs. */
  if (beta != 0.0f)
    sum = tach_vec_add (sum, tach_vec_mul (vbeta, tach_vec_loadz (store, cr)));
  tach_vec_storem (cr, store, sum);
}

/* The last vector @v of the row of A at @ar, masked by @tail where k is
 * not a whole number of vectors (@ragged): lanes past k read as zero. */
#define PACKED_A_LAST(ar, v, tail, ragged)                                         \
  ((ragged) ? tach_vec_loadz ((tail), (ar) + (v) * TACH_VEC_LANES)                  \
            : tach_vec_load ((ar) + (v) * TACH_VEC_LANES))
/* Rows of B a pass of the several-row kernel takes: half a block. */
#define PACKED_HALF (TACH_VEC_LANES / 2)

/* acc[r] += the row of A's vector @x times B's vector @v of block row r. */
TACH_VEC_INLINE void
TACH_VEC_FN (packed_row_step) (TachVec acc[TACH_VEC_LANES], TachVec x, const float *pb, size_t v)
{
#pragma GCC unroll 16
  for (int r = 0; r < TACH_VEC_LANES; r++)
    acc[r] = tach_vec_fma (x, tach_vec_load (pb + (v * TACH_VEC_LANES + r) * TACH_VEC_LANES),
                           acc[r]);
}

/* How far ahead (floats) the one-row kernel asks for the packed copy's
 * lines: a decoding step reads each weight once, from memory, and the
 * hardware prefetchers alone do not keep one core's stream full. */
#define PACKED_ROW_AHEAD 2048

/* One row of A against a block of L rows of B: the L outputs. */
TACH_VEC_INLINE TachVec
TACH_VEC_FN (packed_row) (size_t kv, const float *ar, const float *pb, TachVecMask tail,
                          gboolean ragged)
{
  TachVec acc[TACH_VEC_LANES];
  size_t v = 0;

#pragma GCC unroll 16
  for (int r = 0; r < TACH_VEC_LANES; r++)
    acc[r] = tach_vec_zero ();
#pragma GCC unroll 2
  for (; v + 1 < kv; v++)
    {
      const float *ahead = pb + v * TACH_VEC_LANES * TACH_VEC_LANES + PACKED_ROW_AHEAD;

      /* A step reads L vectors of B: L * L floats, a line per 16. */
#pragma GCC unroll 16
      for (int q = 0; q < TACH_VEC_LANES * TACH_VEC_LANES / 16; q++)
        _mm_prefetch ((const char *) (ahead + 16 * q), _MM_HINT_T0);
      TACH_VEC_FN (packed_row_step) (acc, tach_vec_load (ar + v * TACH_VEC_LANES), pb, v);
    }
  TACH_VEC_FN (packed_row_step) (acc, PACKED_A_LAST (ar, v, tail, ragged), pb, v);
  return tach_vec_hsum (acc);
}

/* acc[r][q] += row r of A's vector x[r] times B's vector @v of block row
 * PACKED_HALF @half + q, for @R rows of A: each load of B serves every
 * row. */
TACH_VEC_INLINE void
TACH_VEC_FN (packed_rows_step) (const int R, TachVec acc[3][PACKED_HALF], const TachVec x[3],
                                const float *pb, size_t v, int half)
{
#pragma GCC unroll 8
  for (int q = 0; q < PACKED_HALF; q++)
    {
      TachVec bv = tach_vec_load (pb + (v * TACH_VEC_LANES + PACKED_HALF * half + q)
                                       * TACH_VEC_LANES);

      /* One load of B for every row: GCC would fold it into each FMA as a
       * memory operand, a load per row. */
      TACH_VEC_KEEP (bv);
#pragma GCC unroll 3
      for (int r = 0; r < R; r++)
        acc[r][q] = tach_vec_fma (x[r], bv, acc[r][q]);
    }
}

/* @R rows of A (2 or 3) against half @half of a block (PACKED_HALF rows
 * of B): three rows' accumulators, their vectors of A and one of B fill
 * the registers (12 + 3 + 1 of AVX2's 16, 24 + 3 + 1 of AVX-512's 32).
 * u[r] gets row r's half of hsum's tree (tach_vec_hsum_half). */
TACH_VEC_INLINE void
TACH_VEC_FN (packed_rows_half) (const int R, size_t kv, const float *a, size_t lda,
                                const float *pb, int half, TachVecMask tail, gboolean ragged,
                                TachVec u[3])
{
  TachVec acc[3][PACKED_HALF], x[3];
  size_t v = 0;

#pragma GCC unroll 3
  for (int r = 0; r < R; r++)
#pragma GCC unroll 8
    for (int q = 0; q < PACKED_HALF; q++)
      acc[r][q] = tach_vec_zero ();
#pragma GCC unroll 2
  for (; v + 1 < kv; v++)
    {
#pragma GCC unroll 3
      for (int r = 0; r < R; r++)
        x[r] = tach_vec_load (a + r * lda + v * TACH_VEC_LANES);
      TACH_VEC_FN (packed_rows_step) (R, acc, x, pb, v, half);
    }
#pragma GCC unroll 3
  for (int r = 0; r < R; r++)
    x[r] = PACKED_A_LAST (a + r * lda, v, tail, ragged);
  TACH_VEC_FN (packed_rows_step) (R, acc, x, pb, v, half);
#pragma GCC unroll 3
  for (int r = 0; r < R; r++)
    u[r] = tach_vec_hsum_half (acc[r]);
}

/* C = alpha A B^T + beta C, B [n, k] packed.  Each block of B stays in L1
 * while the rows of A pass over it, three at a time (then two, or one).
 * (The loops over k unrolled twice: three rows by 400 x 100 2.94-2.99 ->
 * 2.76-2.93 us at AVX2, 2.23-2.28 -> 2.16-2.22 at AVX-512; one row by
 * 554 x 100 1.99-2.06 -> 1.93-1.98 and 1.74-1.84 -> 1.72-1.76.) */
TACH_VEC_TARGET static void
TACH_VEC_FN (packed_nt) (size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                         const float *packed, float beta, float *c, size_t ldc)
{
  const TachVec valpha = tach_vec_set1 (alpha), vbeta = tach_vec_set1 (beta);
  const size_t kv = (k + TACH_VEC_LANES - 1) / TACH_VEC_LANES;
  const gboolean ragged = k % TACH_VEC_LANES != 0;
  const TachVecMask tail = tach_vec_mask_below ((int) (k % TACH_VEC_LANES));

  for (size_t j = 0; j < n; j += TACH_VEC_LANES)
    {
      const float *pb = packed + j * kv * TACH_VEC_LANES;
      TachVecMask store = n - j >= TACH_VEC_LANES ? tach_vec_mask_from (0)
                                                  : tach_vec_mask_below ((int) (n - j));
      size_t i = 0;

      for (; m - i >= 2; i += m - i >= 3 ? 3 : 2)
        {
          TachVec u0[3], u1[3];
          int R = m - i >= 3 ? 3 : 2;

          if (R == 3)
            {
              TACH_VEC_FN (packed_rows_half) (3, kv, a + i * lda, lda, pb, 0, tail, ragged, u0);
              TACH_VEC_FN (packed_rows_half) (3, kv, a + i * lda, lda, pb, 1, tail, ragged, u1);
            }
          else
            {
              TACH_VEC_FN (packed_rows_half) (2, kv, a + i * lda, lda, pb, 0, tail, ragged, u0);
              TACH_VEC_FN (packed_rows_half) (2, kv, a + i * lda, lda, pb, 1, tail, ragged, u1);
            }
          for (int r = 0; r < R; r++)
            TACH_VEC_FN (packed_out) (tach_vec_hsum_join (u0[r], u1[r]), valpha, beta, vbeta,
                                      store, c + (i + r) * ldc + j);
        }
      if (i < m)
        TACH_VEC_FN (packed_out) (TACH_VEC_FN (packed_row) (kv, a + i * lda, pb, tail, ragged),
                                  valpha, beta, vbeta, store, c + i * ldc + j);
    }
}

#undef PACKED_A_LAST
#undef PACKED_HALF
#undef PACKED_ROW_AHEAD
