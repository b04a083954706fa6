/* tach-cpu-packed-nt.h: the small x W^T product on a packed copy of W
 * (tach_cpu_pack_nt), written once against tach-cpu-vec.h and included by
 * tach-cpu-packed.c after each width's inclusion of it (TACH_VEC_FN makes
 * packed_nt_avx512 and packed_nt_avx2).  Every output gets the bits of
 * tach_cpu_sgemm_local at this width: lane l of an output's accumulator
 * sums the products at p = l (mod L) in increasing p (L =
 * TACH_VEC_LANES), the k tail adds zero (a masked 0 x 0 there, a padded
 * 0 x 0 or an add of zero here: the same bits), and the L lanes are added
 * in tach_vec_hsum's tree.  The two widths pack W differently.
 *
 * AVX-512, "vertical": blocks of 16 rows, each block one vector per p: the
 * 16 rows' values at p (a 64-byte line).  Accumulator l (of 16) holds, for
 * the block's rows (one per lane), the products at p = l (mod 16), and the
 * 16 accumulators are added lane by lane in hsum's tree, without its
 * shuffles.  Every load is one whole aligned line: on the Intel Xeon of
 * bench/README.md a 100-float row of W straddles lines, and the row-by-row
 * kernel's loads split.
 *
 * AVX2, "horizontal": blocks of 8 rows, each block the rows' k values
 * eight at a time (vector v of the block: row 0's p = 8v..8v+7, then row
 * 1's, ... row 7's, zeros past k), one sequential stream.  Each row of A
 * is held a vector at a time and multiplies the block's 8 rows into 8
 * accumulators (or, for 2-3 rows of A, 4 rows of B at a time), which
 * hsum's tree then adds.  The vertical form needs a broadcast of A's
 * values per product, which bound it at AVX2 (shuffles on one port or a
 * second load per FMA): on the Intel Xeon model 167 under the AVX2 cap
 * this form takes 1.99-2.01 us against 2.31-2.36 for one row by 554 x 100
 * and 2.80-2.81 against 3.86-3.88 for three rows by 400 x 100 (B in L2;
 * one thread), and generation of one stream runs at 111-112 k tokens/s
 * against 89-95 k.
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

#if TACH_VEC_LANES == 16
/* The sum of acc[0..16) lane by lane, in tach_vec_hsum's tree: pairs
 * lanes l and l + 8, then + 4, + 2, + 1. */
TACH_VEC_INLINE TachVec
TACH_VEC_FN (vsum) (const TachVec a[TACH_VEC_LANES])
{
  TachVec e = tach_vec_add (tach_vec_add (tach_vec_add (a[0], a[8]), tach_vec_add (a[4], a[12])),
                            tach_vec_add (tach_vec_add (a[2], a[10]), tach_vec_add (a[6], a[14])));
  TachVec o = tach_vec_add (tach_vec_add (tach_vec_add (a[1], a[9]), tach_vec_add (a[5], a[13])),
                            tach_vec_add (tach_vec_add (a[3], a[11]), tach_vec_add (a[7], a[15])));

  return tach_vec_add (e, o);
}

/* C = alpha A B^T + beta C, B [n, k] packed vertically.  Blocks of 16
 * rows of B (k vectors) stay in L1 while every row of A passes over them
 * (faster here than several rows of A per load of B: 3 rows of W_h at
 * n = 400, k = 100, 3.1-3.2 us against 3.4-3.6).  The packed copy is one
 * sequential stream, which the hardware prefetchers follow: asking for
 * each line 1 KB ahead cost about 10% on the Intel Xeon (55 against 50
 * bytes per TSC tick from L2 at n = 400, k = 100; 64 from L1). */
TACH_VEC_TARGET static void
TACH_VEC_FN (packed_nt) (size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                         const float *packed, float beta, float *c, size_t ldc)
{
  const TachVec valpha = tach_vec_set1 (alpha), vbeta = tach_vec_set1 (beta);
  const size_t rest = k % TACH_VEC_LANES;

  for (size_t j = 0; j < n; j += TACH_VEC_LANES)
    {
      const float *pb = packed + j * k;
      TachVecMask store = n - j >= TACH_VEC_LANES ? tach_vec_mask_from (0)
                                                  : tach_vec_mask_below ((int) (n - j));

      for (size_t i = 0; i < m; i++)
        {
          const float *ar = a + i * lda;
          TachVec acc[TACH_VEC_LANES];
          size_t p = 0;

#pragma GCC unroll 16
          for (int l = 0; l < TACH_VEC_LANES; l++)
            acc[l] = tach_vec_zero ();
          for (; p + TACH_VEC_LANES <= k; p += TACH_VEC_LANES)
            {
#pragma GCC unroll 16
              for (int l = 0; l < TACH_VEC_LANES; l++)
                acc[l] = tach_vec_fma (tach_vec_set1 (ar[p + l]),
                                       tach_vec_load (pb + (p + l) * TACH_VEC_LANES), acc[l]);
            }
          if (rest != 0)
            {
#pragma GCC unroll 16
              for (int l = 0; l < TACH_VEC_LANES; l++)
                acc[l] = (size_t) l < rest
                           ? tach_vec_fma (tach_vec_set1 (ar[p + l]),
                                           tach_vec_load (pb + (p + l) * TACH_VEC_LANES), acc[l])
                           : tach_vec_add (acc[l], tach_vec_zero ());
            }
          TACH_VEC_FN (packed_out) (TACH_VEC_FN (vsum) (acc), valpha, beta, vbeta, store,
                                    c + i * ldc + j);
        }
    }
}

#else

/* Vector @v of row @r of A (@kv vectors, the last masked by @tail where
 * k is not a whole number of vectors): lanes past k read as zero. */
#define PACKED_A(ar, v, kv, tail, ragged)                                      \
  ((ragged) && (v) + 1 == (kv) ? tach_vec_loadz ((tail), (ar) + (v) * TACH_VEC_LANES) \
                               : tach_vec_load ((ar) + (v) * TACH_VEC_LANES))

/* One row of A against a block of 8 rows of B: the 8 outputs. */
TACH_VEC_INLINE TachVec
TACH_VEC_FN (packed_row) (size_t kv, const float *ar, const float *pb, TachVecMask tail,
                          gboolean ragged)
{
  TachVec acc[TACH_VEC_LANES];
  size_t v = 0;

#pragma GCC unroll 8
  for (int r = 0; r < TACH_VEC_LANES; r++)
    acc[r] = tach_vec_zero ();
  for (; v + 1 < kv; v++)
    {
      TachVec x = tach_vec_load (ar + v * TACH_VEC_LANES);

#pragma GCC unroll 8
      for (int r = 0; r < TACH_VEC_LANES; r++)
        acc[r] = tach_vec_fma (x, tach_vec_load (pb + (v * TACH_VEC_LANES + r) * TACH_VEC_LANES),
                               acc[r]);
    }
  {
    TachVec x = PACKED_A (ar, v, kv, tail, ragged);

#pragma GCC unroll 8
    for (int r = 0; r < TACH_VEC_LANES; r++)
      acc[r] = tach_vec_fma (x, tach_vec_load (pb + (v * TACH_VEC_LANES + r) * TACH_VEC_LANES),
                             acc[r]);
  }
  return tach_vec_hsum (acc);
}

/* acc[r][q] += row r of A's vector x[r] times B's vector @v of block row
 * 4 @half + q, for @R rows of A: each load of B serves every row. */
TACH_VEC_INLINE void
TACH_VEC_FN (packed_rows_step) (const int R, TachVec acc[3][4], const TachVec x[3],
                                const float *pb, size_t v, int half)
{
#pragma GCC unroll 4
  for (int q = 0; q < 4; q++)
    {
      TachVec bv = tach_vec_load (pb + (v * TACH_VEC_LANES + 4 * half + q) * TACH_VEC_LANES);

      /* One load of B for every row: GCC would fold it into each FMA as a
       * memory operand, a load per row. */
      TACH_VEC_KEEP (bv);
#pragma GCC unroll 3
      for (int r = 0; r < R; r++)
        acc[r][q] = tach_vec_fma (x[r], bv, acc[r][q]);
    }
}

/* @R rows of A (2 or 3) against rows 4 @half .. 4 @half + 3 of a block:
 * the 12 accumulators of three rows fill AVX2's registers with A's
 * vectors and B's.  u[r] gets row r's first step of hsum's tree
 * (tach_vec_hsum4_avx2). */
TACH_VEC_INLINE void
TACH_VEC_FN (packed_rows_half) (const int R, size_t kv, const float *a, size_t lda,
                                const float *pb, int half, TachVecMask tail, gboolean ragged,
                                TachVec u[3])
{
  TachVec acc[3][4], x[3];
  size_t v = 0;

#pragma GCC unroll 3
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++)
      acc[r][q] = tach_vec_zero ();
  for (; v + 1 < kv; v++)
    {
#pragma GCC unroll 3
      for (int r = 0; r < R; r++)
        x[r] = tach_vec_load (a + r * lda + v * TACH_VEC_LANES);
      TACH_VEC_FN (packed_rows_step) (R, acc, x, pb, v, half);
    }
#pragma GCC unroll 3
  for (int r = 0; r < R; r++)
    x[r] = PACKED_A (a + r * lda, v, kv, tail, ragged);
  TACH_VEC_FN (packed_rows_step) (R, acc, x, pb, v, half);
#pragma GCC unroll 3
  for (int r = 0; r < R; r++)
    u[r] = tach_vec_hsum4_avx2 (acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
}

/* C = alpha A B^T + beta C, B [n, k] packed horizontally.  Each block of
 * B stays in L1 while the rows of A pass over it, three at a time (then
 * two, or one). */
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
            TACH_VEC_FN (packed_out) (tach_vec_hsum_join_avx2 (u0[r], u1[r]), valpha, beta, vbeta,
                                      store, c + (i + r) * ldc + j);
        }
      if (i < m)
        TACH_VEC_FN (packed_out) (TACH_VEC_FN (packed_row) (kv, a + i * lda, pb, tail, ragged),
                                  valpha, beta, vbeta, store, c + i * ldc + j);
    }
}

#undef PACKED_A
#endif
