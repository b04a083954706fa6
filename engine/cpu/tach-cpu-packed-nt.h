/* tach-cpu-packed-nt.h: the small x W^T product on a packed copy of W
 * (tach_cpu_pack_nt), written once against tach-cpu-vec.h and included by
 * tach-cpu-packed.c after each width's inclusion of it (TACH_VEC_FN makes
 * packed_nt_avx512 and packed_nt_avx2).
 *
 * The packed copy holds W in blocks of L = TACH_VEC_LANES rows, each block
 * one vector per p: the L rows' values at p (a 64-byte line at AVX-512, two
 * p a line at AVX2).  So the product is "vertical": accumulator l (of L)
 * holds, for the L rows of a block (one per lane), the products at p = l
 * (mod L) in increasing p, which is
 * what lane l of each row's accumulator holds in the row-by-row kernels of
 * tach-cpu-gemm-nt.h (the k tail there adds a masked 0 x 0 to the lanes
 * past it, here an add of zero: the same bits); the L accumulators are
 * then added lane by lane in the tree by which tach_vec_hsum adds the
 * lanes of one vector.  Every output gets the bits of tach_cpu_sgemm_local
 * at this width, without the horizontal sums' shuffles, and every load is
 * one whole aligned line: on the Intel Xeon of bench/README.md a 100-float
 * row of W straddles lines, and the row-by-row kernel's loads split.
 */

/* The sum of acc[0..L) lane by lane, in tach_vec_hsum's tree. */
TACH_VEC_INLINE TachVec
TACH_VEC_FN (vsum) (const TachVec a[TACH_VEC_LANES])
{
#if TACH_VEC_LANES == 16
  /* hsum16 pairs lanes l and l + 8, then + 4, + 2, + 1. */
  TachVec e = tach_vec_add (tach_vec_add (tach_vec_add (a[0], a[8]), tach_vec_add (a[4], a[12])),
                            tach_vec_add (tach_vec_add (a[2], a[10]), tach_vec_add (a[6], a[14])));
  TachVec o = tach_vec_add (tach_vec_add (tach_vec_add (a[1], a[9]), tach_vec_add (a[5], a[13])),
                            tach_vec_add (tach_vec_add (a[3], a[11]), tach_vec_add (a[7], a[15])));
#else
  /* hsum8 pairs lanes l and l + 1, then + 2, then the halves. */
  TachVec e = tach_vec_add (tach_vec_add (a[0], a[1]), tach_vec_add (a[2], a[3]));
  TachVec o = tach_vec_add (tach_vec_add (a[4], a[5]), tach_vec_add (a[6], a[7]));
#endif
  return tach_vec_add (e, o);
}

/* One output vector of C: alpha times the lane sums of @acc, plus beta
 * C, under @store's lanes. */
TACH_VEC_INLINE void
TACH_VEC_FN (packed_out) (const TachVec acc[TACH_VEC_LANES], TachVec valpha, float beta,
                          TachVec vbeta, TachVecMask store, float *cr)
{
  TachVec sum = tach_vec_mul (valpha, TACH_VEC_FN (vsum) (acc));

  /* beta == 0 never reads C, which may hold NaNs. */
  if (beta != 0.0f)
    sum = tach_vec_add (sum, tach_vec_mul (vbeta, tach_vec_loadz (store, cr)));
  tach_vec_storem (cr, store, sum);
}

#if TACH_VEC_LANES == 8
/* Residues of p a pass of the several-row kernel below takes at once:
 * three rows' accumulators of them fill 12 of AVX2's 16 registers. */
#define PACKED_Q 4

/* AVX2: the accumulators of @R rows of A (R at most 3) against one block
 * of B, into acc[r][l], with the bits of the one-row kernel below:
 * accumulator l of each row still takes the products at p = l (mod L) in
 * increasing p, but PACKED_Q residues at a time, so that each load of B
 * serves every row (the one-row kernel keeps all L accumulators of its
 * row in registers, which R rows would overflow): a generation loop's
 * windows (tach-cpu-lstm-frozen.c) and its streams. */
TACH_VEC_INLINE void
TACH_VEC_FN (packed_rows) (const int R, size_t k, const float *a, size_t lda, const float *pb,
                           TachVec acc[3][TACH_VEC_LANES])
{
  const size_t full = k - k % TACH_VEC_LANES, rest = k % TACH_VEC_LANES;

#pragma GCC unroll 4
  for (int l0 = 0; l0 < TACH_VEC_LANES; l0 += PACKED_Q)
    {
      TachVec part[3][PACKED_Q];

#pragma GCC unroll 3
      for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int q = 0; q < PACKED_Q; q++)
          part[r][q] = tach_vec_zero ();
      for (size_t p0 = l0; p0 < full; p0 += TACH_VEC_LANES)
#pragma GCC unroll 8
        for (int q = 0; q < PACKED_Q; q++)
          {
            TachVec bv = tach_vec_load (pb + (p0 + q) * TACH_VEC_LANES);

            /* One load of B for every row: GCC would fold it into each
             * FMA as a memory operand, a load per row. */
            __asm__ ("" : "+v" (bv));
#pragma GCC unroll 3
            for (int r = 0; r < R; r++)
              part[r][q] = tach_vec_fma (tach_vec_set1 (a[r * lda + p0 + q]), bv, part[r][q]);
          }
#pragma GCC unroll 8
      for (int q = 0; q < PACKED_Q; q++)
        {
          size_t l = (size_t) (l0 + q);

          if (l < rest)
            {
              TachVec bv = tach_vec_load (pb + (full + l) * TACH_VEC_LANES);

              for (int r = 0; r < R; r++)
                part[r][q] = tach_vec_fma (tach_vec_set1 (a[r * lda + full + l]), bv, part[r][q]);
            }
          else if (rest != 0)
            for (int r = 0; r < R; r++)
              part[r][q] = tach_vec_add (part[r][q], tach_vec_zero ());
          for (int r = 0; r < R; r++)
            acc[r][l] = part[r][q];
        }
    }
}
#endif

/* C = alpha A B^T + beta C, B [n, k] packed.  Blocks of L rows of B (k
 * vectors) stay in L1 while every row of A passes over them.  The packed
 * copy is one sequential stream, which the hardware prefetchers follow:
 * asking for each line 1 KB ahead cost about 10% on the Intel Xeon (55
 * against 50 bytes per TSC tick from L2 at n = 400, k = 100; 64 from L1). */
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
      size_t i = 0;

#if TACH_VEC_LANES == 8
      /* AVX2: rows three (or two) at a time, each load of B serving them
       * all.  At AVX-512 the row-by-row loop below, its rows after the
       * first on the block in L1, is faster (3 rows of W_h at n = 400,
       * k = 100: 3.1-3.2 us against 3.4-3.6, where AVX2 gains 5.3 -> 4.6 us
       * on the Intel Xeon model 167). */
      for (; m - i >= 2; i += m - i >= 3 ? 3 : 2)
        {
          TachVec acc[3][TACH_VEC_LANES];
          int R = m - i >= 3 ? 3 : 2;

          if (R == 3)
            TACH_VEC_FN (packed_rows) (3, k, a + i * lda, lda, pb, acc);
          else
            TACH_VEC_FN (packed_rows) (2, k, a + i * lda, lda, pb, acc);
          for (int r = 0; r < R; r++)
            TACH_VEC_FN (packed_out) (acc[r], valpha, beta, vbeta, store, c + (i + r) * ldc + j);
        }
#endif
      for (; i < m; i++)
        {
          const float *ar = a + i * lda;
          float *cr = c + i * ldc + j;
          TachVec acc[TACH_VEC_LANES];
          size_t p = 0;

#pragma GCC unroll 16
          for (int l = 0; l < TACH_VEC_LANES; l++)
            acc[l] = tach_vec_zero ();
#if TACH_VEC_LANES == 8
          /* AVX2: the eight inputs in one load, each spread to every lane by
           * shuffles, where a broadcast per input was a second load per FMA
           * and the loads bound the kernel (two a cycle). */
          for (; p + 8 <= k; p += 8)
            {
              __m256 av = _mm256_loadu_ps (ar + p);
              __m256 half[2] = { _mm256_permute2f128_ps (av, av, 0x00),
                                 _mm256_permute2f128_ps (av, av, 0x11) };

#define PACKED_LANE(l, imm)                                                        \
              acc[l] = tach_vec_fma (_mm256_permute_ps (half[(l) / 4], (imm)),         \
                                     tach_vec_load (pb + (p + (l)) * 8), acc[l])
              PACKED_LANE (0, 0x00); PACKED_LANE (1, 0x55); PACKED_LANE (2, 0xaa);
              PACKED_LANE (3, 0xff); PACKED_LANE (4, 0x00); PACKED_LANE (5, 0x55);
              PACKED_LANE (6, 0xaa); PACKED_LANE (7, 0xff);
#undef PACKED_LANE
            }
#else
          for (; p + TACH_VEC_LANES <= k; p += TACH_VEC_LANES)
            {
#pragma GCC unroll 16
              for (int l = 0; l < TACH_VEC_LANES; l++)
                acc[l] = tach_vec_fma (tach_vec_set1 (ar[p + l]),
                                       tach_vec_load (pb + (p + l) * TACH_VEC_LANES), acc[l]);
            }
#endif
          if (rest != 0)
            {
#pragma GCC unroll 16
              for (int l = 0; l < TACH_VEC_LANES; l++)
                acc[l] = (size_t) l < rest
                           ? tach_vec_fma (tach_vec_set1 (ar[p + l]),
                                           tach_vec_load (pb + (p + l) * TACH_VEC_LANES), acc[l])
                           : tach_vec_add (acc[l], tach_vec_zero ());
            }
          TACH_VEC_FN (packed_out) (acc, valpha, beta, vbeta, store, cr);
        }
    }
}

#if TACH_VEC_LANES == 8
#undef PACKED_Q
#endif
