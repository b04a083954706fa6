/* tach-cpu-gemm-nt.h: the small products with a transposed B, written
 * once against tach-cpu-vec.h and included by tach-cpu-gemm.c after each
 * width's inclusion of it, which makes small_gemm_nt_avx512 and
 * small_gemm_nt_avx2 (TACH_VEC_FN).  With L = TACH_VEC_LANES (16 or 8) and
 * CH = TACH_VEC_CHUNK (8 or 4):
 *
 * - blocks of L rows of B, one accumulator vector per row, stay in L1
 *   while every row of A passes over them;
 * - one row of A: chunks of CH vectors of A held in registers (the L sums
 *   and the chunk fill the register file), B read one row at a time;
 * - two rows of A: L / 2 rows of B, chunks of CH / 2 vectors, each vector
 *   of B loaded once for both rows;
 * - the k tail by masked loads, and the L horizontal sums done together
 *   by tach_vec_hsum, so that no output pays a reduction of its own.
 *
 * Lane l of an accumulator sums the products at p = l (mod L) in
 * increasing p whatever the chunking, and every output goes through the
 * same tree, so each output's bits depend only on k and the width: a
 * product computed whole or row by row (fused or unrolled LSTM) agrees.
 * The helpers are always inlined with a constant @nv, so their loops
 * unroll to straight-line code.
 */

/* Asks for the lines TACH_VEC_PREFETCH_AHEAD floats past those of @nv
 * vectors of the row of B at @br: one prefetch per 64-byte line.  (A
 * macro: as an inline function GCC unrolls it less well.) */
#define TACH_VEC_PREFETCH_ROW(br, ldb, nv)                                                \
  do {                                                                                    \
    _Pragma ("GCC unroll 16")                                                             \
    for (int q_ = 0; q_ < TACH_VEC_LINES (nv); q_++)                                      \
      _mm_prefetch ((const char *) ((br) + q_ * 16 + TACH_VEC_PREFETCH_AHEAD (ldb)),      \
                    _MM_HINT_T0);                                                         \
  } while (0)

/* Adds to acc[r] the products of @nv whole vectors and, with @have_tail,
 * the masked @tail of one row of A with row r of the L from @b.  When ldb
 * == k (a weight matrix) reading B row by row is one sequential stream
 * rather than L short ones.  With @prefetch (the first row of A, which
 * brings B from L2) each row also asks for its lines
 * TACH_VEC_PREFETCH_AHEAD floats on: the hardware prefetchers alone left
 * a matrix-vector product at about 45 bytes per TSC tick from L2 on the
 * Zen 5 (a 100-float row straddles lines), with this about 65, the rate
 * of a plain streaming read (past the end of B a prefetch reads nothing
 * and never faults). */
TACH_VEC_INLINE void
TACH_VEC_FN (dot_chunk) (TachVec acc[TACH_VEC_LANES], const float *ar, const float *b,
                         size_t ldb, int nv, TachVecMask tail, gboolean have_tail,
                         gboolean prefetch)
{
  TachVec x[TACH_VEC_CHUNK], xt = tach_vec_loadz (tail, ar + nv * TACH_VEC_LANES);

#pragma GCC unroll 16
  for (int v = 0; v < nv; v++)
    x[v] = tach_vec_load (ar + v * TACH_VEC_LANES);
#pragma GCC unroll 16
  for (int r = 0; r < TACH_VEC_LANES; r++)
    {
      const float *br = b + r * ldb;

      if (prefetch)
        TACH_VEC_PREFETCH_ROW (br, ldb, nv + have_tail);
#pragma GCC unroll 16
      for (int v = 0; v < nv; v++)
        acc[r] = tach_vec_fma (x[v], tach_vec_load (br + v * TACH_VEC_LANES), acc[r]);
      if (have_tail)
        acc[r] = tach_vec_fma (xt, tach_vec_loadz (tail, br + nv * TACH_VEC_LANES), acc[r]);
    }
}

/* The dot products of one row of A with the L rows of B from @b (@ldb
 * apart), as a vector of L sums: chunks of CH vectors, then what is left. */
TACH_VEC_INLINE TachVec
TACH_VEC_FN (dot) (const float *ar, const float *b, size_t ldb, size_t k, gboolean prefetch)
{
  TachVec acc[TACH_VEC_LANES];
  size_t p0 = 0;
  size_t left;
  int rest;
  TachVecMask tail;

#pragma GCC unroll 16
  for (int r = 0; r < TACH_VEC_LANES; r++)
    acc[r] = tach_vec_zero ();
  for (; p0 + TACH_VEC_CHUNK * TACH_VEC_LANES <= k; p0 += TACH_VEC_CHUNK * TACH_VEC_LANES)
    TACH_VEC_FN (dot_chunk) (acc, ar + p0, b + p0, ldb, TACH_VEC_CHUNK, tach_vec_mask_below (0),
                             FALSE, prefetch);
  left = k - p0;
  rest = (int) (left % TACH_VEC_LANES);
  tail = tach_vec_mask_below (rest);
#define TACH_VEC_DOT_TAIL(nv) \
  TACH_VEC_FN (dot_chunk) (acc, ar + p0, b + p0, ldb, (nv), tail, rest != 0, prefetch)
  switch (left / TACH_VEC_LANES)
    {
    case 0: TACH_VEC_DOT_TAIL (0); break;
    case 1: TACH_VEC_DOT_TAIL (1); break;
    case 2: TACH_VEC_DOT_TAIL (2); break;
#if TACH_VEC_CHUNK > 4
    case 3: TACH_VEC_DOT_TAIL (3); break;
    case 4: TACH_VEC_DOT_TAIL (4); break;
    case 5: TACH_VEC_DOT_TAIL (5); break;
    case 6: TACH_VEC_DOT_TAIL (6); break;
#endif
    default: TACH_VEC_DOT_TAIL (TACH_VEC_CHUNK - 1); break;
    }
#undef TACH_VEC_DOT_TAIL
  return tach_vec_hsum (acc);
}

/* Two rows of A (@a0, @a1) against L / 2 rows of B: acc[r] for row a0 and
 * acc[L / 2 + r] for row a1 with B row r, each lane's products added in
 * dot_chunk's order, so that tach_vec_hsum gives each output the bits of
 * the one-row path.  Each vector of B is loaded once for both rows
 * (TACH_VEC_KEEP keeps GCC from folding the load into both FMAs, which
 * would load it twice): on the Zen 5 the product of W_x with the four
 * steps' inputs of generation (m = 4, B from L1 after the first pass, rows
 * straddling cache lines) takes about 0.7 of the one-row path's time. */
TACH_VEC_INLINE void
TACH_VEC_FN (dot_pair_chunk) (TachVec acc[TACH_VEC_LANES], const float *a0, const float *a1,
                              const float *b, size_t ldb, int nv, TachVecMask tail,
                              gboolean have_tail, gboolean prefetch)
{
  TachVec x0[TACH_VEC_CHUNK / 2], x1[TACH_VEC_CHUNK / 2];
  TachVec xt0 = tach_vec_loadz (tail, a0 + nv * TACH_VEC_LANES);
  TachVec xt1 = tach_vec_loadz (tail, a1 + nv * TACH_VEC_LANES);

#pragma GCC unroll 16
  for (int v = 0; v < nv; v++)
    {
      x0[v] = tach_vec_load (a0 + v * TACH_VEC_LANES);
      x1[v] = tach_vec_load (a1 + v * TACH_VEC_LANES);
    }
#pragma GCC unroll 16
  for (int r = 0; r < TACH_VEC_LANES / 2; r++)
    {
      const float *br = b + r * ldb;

      if (prefetch)
        TACH_VEC_PREFETCH_ROW (br, ldb, nv + have_tail);
#pragma GCC unroll 16
      for (int v = 0; v < nv; v++)
        {
          TachVec bv = tach_vec_load (br + v * TACH_VEC_LANES);

          TACH_VEC_KEEP (bv);
          acc[r] = tach_vec_fma (x0[v], bv, acc[r]);
          acc[r + TACH_VEC_LANES / 2] = tach_vec_fma (x1[v], bv, acc[r + TACH_VEC_LANES / 2]);
        }
      if (have_tail)
        {
          TachVec bt = tach_vec_loadz (tail, br + nv * TACH_VEC_LANES);

          TACH_VEC_KEEP (bt);
          acc[r] = tach_vec_fma (xt0, bt, acc[r]);
          acc[r + TACH_VEC_LANES / 2] = tach_vec_fma (xt1, bt, acc[r + TACH_VEC_LANES / 2]);
        }
    }
}

/* The lower half of the lanes: the dot products of A row @a0 with the
 * L / 2 rows of B from @b; the upper half: of row @a1.  Chunks of CH / 2
 * vectors, so that both rows' chunks and the L sums fit the registers (the
 * chunking changes no lane's order). */
TACH_VEC_INLINE TachVec
TACH_VEC_FN (dot_pair) (const float *a0, const float *a1, const float *b, size_t ldb, size_t k,
                        gboolean prefetch)
{
  TachVec acc[TACH_VEC_LANES];
  size_t p0 = 0;
  size_t left;
  int rest;
  TachVecMask tail;

#pragma GCC unroll 16
  for (int r = 0; r < TACH_VEC_LANES; r++)
    acc[r] = tach_vec_zero ();
  for (; p0 + TACH_VEC_CHUNK / 2 * TACH_VEC_LANES <= k; p0 += TACH_VEC_CHUNK / 2 * TACH_VEC_LANES)
    TACH_VEC_FN (dot_pair_chunk) (acc, a0 + p0, a1 + p0, b + p0, ldb, TACH_VEC_CHUNK / 2,
                                  tach_vec_mask_below (0), FALSE, prefetch);
  left = k - p0;
  rest = (int) (left % TACH_VEC_LANES);
  tail = tach_vec_mask_below (rest);
#define TACH_VEC_PAIR_TAIL(nv) \
  TACH_VEC_FN (dot_pair_chunk) (acc, a0 + p0, a1 + p0, b + p0, ldb, (nv), tail, rest != 0, \
                                prefetch)
  switch (left / TACH_VEC_LANES)
    {
    case 0: TACH_VEC_PAIR_TAIL (0); break;
#if TACH_VEC_CHUNK > 4
    case 1: TACH_VEC_PAIR_TAIL (1); break;
    case 2: TACH_VEC_PAIR_TAIL (2); break;
#endif
    default: TACH_VEC_PAIR_TAIL (TACH_VEC_CHUNK / 2 - 1); break;
    }
#undef TACH_VEC_PAIR_TAIL
  return tach_vec_hsum (acc);
}

/* small_gemm_nt's contract for n >= L.  A partial last block is the last
 * L rows, storing only those not yet stored: each output's value does not
 * depend on its block. */
TACH_VEC_TARGET static void
TACH_VEC_FN (small_gemm_nt) (size_t m, size_t n, size_t k, float alpha, const float *a,
                             size_t lda, const float *b, size_t ldb, float beta, float *c,
                             size_t ldc)
{
  const size_t half = TACH_VEC_LANES / 2;
  TachVec valpha = tach_vec_set1 (alpha);
  TachVec vbeta = tach_vec_set1 (beta);

  for (size_t done = 0; done < n; done += TACH_VEC_LANES)
    {
      size_t j = MIN (done, n - TACH_VEC_LANES);
      /* Lanes from done - j on are not stored yet. */
      TachVecMask store = tach_vec_mask_from ((int) (done - j));
      size_t i = 0;

      /* Rows of A in pairs, each half of the block at a time: the lower
       * half of C row i, then of row i + 1 (from the sums' upper half),
       * with the one-row path's alpha and beta arithmetic. */
      for (; i + 2 <= m; i += 2)
        for (int h = 0; h < 2; h++)
          {
            float *c0 = c + i * ldc + j + half * h, *c1 = c0 + ldc;
            TachVecHalfMask hm = tach_vec_half_mask (store, h);
            TachVec sum = tach_vec_mul (valpha,
                                        TACH_VEC_FN (dot_pair) (a + i * lda, a + (i + 1) * lda,
                                                                b + (j + half * h) * ldb, ldb,
                                                                k, i == 0));

            if (beta != 0.0f)
              sum = tach_vec_add (sum, tach_vec_mul (vbeta, tach_vec_load_halves (hm, c0, c1)));
            tach_vec_store_halves (c0, c1, hm, sum);
          }
      for (; i < m; i++)
        {
          float *cr = c + i * ldc + j;
          TachVec sum = tach_vec_mul (valpha, TACH_VEC_FN (dot) (a + i * lda, b + j * ldb, ldb,
                                                                 k, i == 0));

          /* beta == 0 never reads C, which may hold NaNs. */
          if (beta != 0.0f)
            sum = tach_vec_add (sum, tach_vec_mul (vbeta, tach_vec_loadz (store, cr)));
          tach_vec_storem (cr, store, sum);
        }
    }
}

#undef TACH_VEC_PREFETCH_ROW
