/* tach-cpu-attention-k.h: the fused attention's kernels, written once
 * against tach-cpu-vec.h and included by tach-cpu-attention.c after each
 * width's inclusion of it (att_*_avx512, att_*_avx2, TACH_VEC_FN).
 *
 * One product kernel serves every tile: C = alpha A B (+ C), A read
 * through two strides (so A^T costs nothing: P^T dO, dS^T Q), B and C
 * row-major.  Blocks of ATT_RB rows of C by ATT_NV vectors stay in
 * registers while the inner dimension passes, each step one broadcast of
 * A per row and one load of B per vector (the outer-product form of
 * packed GEMMs); the blocks' helpers are inlined with constant sizes, so
 * their loops unroll to straight-line code.  The scores' products read K
 * (and in backward V) transposed, packed once per head, so that B's rows
 * are contiguous keys.
 *
 * Forward over a block of query rows: tiles of ATT_KT keys up to the last
 * one the block's last row sees; per tile S = scale Q K^T, each row's
 * running maximum and sum updated (the online softmax: the accumulated
 * output rescaled when the maximum grows), the masked keys' probabilities
 * exactly 0, dropped by the mask (training) after their sum joins the
 * row's, then O += P V.  Backward per (batch, head), FlashAttention-2's
 * order: tiles of keys, and for each the query blocks that see them, P
 * recomputed from the log-sum-exp, dV += P^T dO, dS = P (dO V^T - D), dQ
 * += scale dS K, dK += scale dS^T Q, all in the outputs (one thread owns a
 * head).
 */
#undef ATT_NV
/* Rows by vectors of a register block: 6 x 4 of AVX-512's 32 registers
 * (24 sums, 4 of B, a broadcast), 6 x 2 of AVX2's 16. */
#if TACH_VEC == 512
#define ATT_NV 4
#else
#define ATT_NV 2
#endif

/* The maximum of s[0, n) (n >= 1) and the sum of s[0, n): vector loops
 * and one horizontal step per row (GCC's omp simd reductions ended in a
 * serial loop over the lanes, a quarter of training's forward). */
#if TACH_VEC == 512
TACH_VEC_INLINE float
TACH_VEC_FN (att_hmax) (TachVec v)
{
  return _mm512_reduce_max_ps (v);
}

TACH_VEC_INLINE float
TACH_VEC_FN (att_hsum) (TachVec v)
{
  return _mm512_reduce_add_ps (v);
}
#else
TACH_VEC_INLINE float
TACH_VEC_FN (att_hmax) (TachVec v)
{
  __m128 x = _mm_max_ps (_mm256_castps256_ps128 (v), _mm256_extractf128_ps (v, 1));

  x = _mm_max_ps (x, _mm_movehl_ps (x, x));
  return _mm_cvtss_f32 (_mm_max_ss (x, _mm_shuffle_ps (x, x, 1)));
}

TACH_VEC_INLINE float
TACH_VEC_FN (att_hsum) (TachVec v)
{
  __m128 x = _mm_add_ps (_mm256_castps256_ps128 (v), _mm256_extractf128_ps (v, 1));

  x = _mm_add_ps (x, _mm_movehl_ps (x, x));
  return _mm_cvtss_f32 (_mm_add_ss (x, _mm_shuffle_ps (x, x, 1)));
}
#endif

TACH_VEC_INLINE float
TACH_VEC_FN (att_max) (const float *s, int n)
{
  TachVec m = tach_vec_set1 (-INFINITY);
  int j = 0;

  for (; j + TACH_VEC_LANES <= n; j += TACH_VEC_LANES)
    m = tach_vec_max (m, tach_vec_load (s + j));
  if (j < n)
    {
      TachVecMask t = tach_vec_mask_below (n - j);

      m = tach_vec_max (m, tach_vec_blend (t, tach_vec_set1 (-INFINITY), tach_vec_loadz (t, s + j)));
    }
  return TACH_VEC_FN (att_hmax) (m);
}

TACH_VEC_INLINE float
TACH_VEC_FN (att_sum) (const float *s, int n)
{
  TachVec a = tach_vec_zero (), b = tach_vec_zero ();
  int j = 0;

  for (; j + 2 * TACH_VEC_LANES <= n; j += 2 * TACH_VEC_LANES)
    {
      a = tach_vec_add (a, tach_vec_load (s + j));
      b = tach_vec_add (b, tach_vec_load (s + j + TACH_VEC_LANES));
    }
  for (; j + TACH_VEC_LANES <= n; j += TACH_VEC_LANES)
    a = tach_vec_add (a, tach_vec_load (s + j));
  if (j < n)
    b = tach_vec_add (b, tach_vec_loadz (tach_vec_mask_below (n - j), s + j));
  return TACH_VEC_FN (att_hsum) (tach_vec_add (a, b));
}

/* C[r, 0:nv L) = alpha sum_p A(r, p) B[p, 0:nv L) (+ C when @acc) for r
 * < @rows, A(r, p) = a[r sai + p sap]; with @masked, the last vector's
 * lanes are those of @tail. */
TACH_VEC_INLINE void
TACH_VEC_FN (att_block) (int rows, int nv, gboolean masked, TachVecMask tail, int k,
                         const float *a, size_t sai, size_t sap, const float *b, size_t ldb,
                         float *c, size_t ldc, float alpha, gboolean acc)
{
  TachVec s[ATT_RB][ATT_NV];

#pragma GCC unroll 8
  for (int r = 0; r < ATT_RB; r++)
#pragma GCC unroll 8
    for (int v = 0; v < ATT_NV; v++)
      s[r][v] = tach_vec_zero ();
  for (int p = 0; p < k; p++)
    {
      const float *bp = b + (size_t) p * ldb;
      const float *ap = a + (size_t) p * sap;
      TachVec bv[ATT_NV];

#pragma GCC unroll 8
      for (int v = 0; v < ATT_NV; v++)
        if (v < nv)
          bv[v] = masked && v == nv - 1 ? tach_vec_loadz (tail, bp + v * TACH_VEC_LANES)
                                        : tach_vec_load (bp + v * TACH_VEC_LANES);
#pragma GCC unroll 8
      for (int r = 0; r < ATT_RB; r++)
        if (r < rows)
          {
            TachVec x = tach_vec_set1 (ap[(size_t) r * sai]);

#pragma GCC unroll 8
            for (int v = 0; v < ATT_NV; v++)
              if (v < nv)
                s[r][v] = tach_vec_fma (x, bv[v], s[r][v]);
          }
    }
#pragma GCC unroll 8
  for (int r = 0; r < ATT_RB; r++)
    if (r < rows)
#pragma GCC unroll 8
      for (int v = 0; v < ATT_NV; v++)
        if (v < nv)
          {
            float *cp = c + (size_t) r * ldc + v * TACH_VEC_LANES;
            gboolean part = masked && v == nv - 1;
            TachVec y = tach_vec_mul (tach_vec_set1 (alpha), s[r][v]);

            if (acc)
              y = tach_vec_add (y, part ? tach_vec_loadz (tail, cp) : tach_vec_load (cp));
            if (part)
              tach_vec_storem (cp, tail, y);
            else
              tach_vec_store (cp, y);
          }
}

/* att_block for each count of rows, a constant in each case. */
#define ATT_BY_ROWS(rows, nv, masked, tail)                                           \
  switch (rows)                                                                       \
    {                                                                                 \
    case 1: ATT_BLOCK_CALL (1, nv, masked, tail); break;                              \
    case 2: ATT_BLOCK_CALL (2, nv, masked, tail); break;                              \
    case 3: ATT_BLOCK_CALL (3, nv, masked, tail); break;                              \
    case 4: ATT_BLOCK_CALL (4, nv, masked, tail); break;                              \
    case 5: ATT_BLOCK_CALL (5, nv, masked, tail); break;                              \
    default: ATT_BLOCK_CALL (6, nv, masked, tail); break;                             \
    }
#define ATT_BLOCK_CALL(r, nv, masked, tail)                                           \
  TACH_VEC_FN (att_block) ((r), (nv), (masked), (tail), k, ai, sai, sap, b + c0, ldb, \
                           ci + c0, ldc, alpha, acc)

/* C [m, n] = alpha A B (+ C when @acc), A(i, p) = a[i sai + p sap], B [k,
 * n] row-major (@ldb), C row-major (@ldc). */
TACH_VEC_TARGET static void
TACH_VEC_FN (att_gemm) (int m, int n, int k, const float *a, size_t sai, size_t sap,
                        const float *b, size_t ldb, float *c, size_t ldc, float alpha,
                        gboolean acc)
{
  const int wide = ATT_NV * TACH_VEC_LANES;

  for (int i0 = 0; i0 < m; i0 += ATT_RB)
    {
      int rows = MIN (ATT_RB, m - i0);
      const float *ai = a + (size_t) i0 * sai;
      float *ci = c + (size_t) i0 * ldc;
      int c0 = 0;

      for (; c0 + wide <= n; c0 += wide)
        ATT_BY_ROWS (rows, ATT_NV, FALSE, tach_vec_mask_from (0));
      /* The columns left, as many vectors as they need (a partial tile of
       * keys keeps its register block), the last one masked. */
      if (c0 < n)
        {
          int nv = (n - c0 + TACH_VEC_LANES - 1) / TACH_VEC_LANES;
          int last = n - c0 - (nv - 1) * TACH_VEC_LANES;
          TachVecMask tail = last == TACH_VEC_LANES ? tach_vec_mask_from (0)
                                                    : tach_vec_mask_below (last);

          switch (nv)
            {
#if ATT_NV > 2
            case 4: ATT_BY_ROWS (rows, 4, TRUE, tail); break;
            case 3: ATT_BY_ROWS (rows, 3, TRUE, tail); break;
#endif
            case 2: ATT_BY_ROWS (rows, 2, TRUE, tail); break;
            case 1: ATT_BY_ROWS (rows, 1, TRUE, tail); break;
            default: g_assert_not_reached ();
            }
        }
    }
}
#undef ATT_BY_ROWS
#undef ATT_BLOCK_CALL

/* Rows [i0, i0 + rows) of one (batch, head) pair's forward, from K^T
 * (@kt, hd rows @ldkt apart), dropped by @drop (NULL: none); @sc [ATT_QB,
 * ATT_KT], @oacc [ATT_QB, hd], @m and @l [ATT_QB] are the thread's
 * scratch. */
TACH_VEC_TARGET static void
TACH_VEC_FN (att_fwd_rows) (const float *q, const float *kt, size_t ldkt, const float *v,
                            float *o, float *lse, int i0, int rows, int tk, int hd, int pos,
                            float scale, const AttDrop *drop, float *sc, float *oacc, float *m,
                            float *l)
{
  int kend = MIN (tk, pos + i0 + rows);

  for (int r = 0; r < rows; r++)
    {
      m[r] = -INFINITY;
      l[r] = 0.0f;
    }
  memset (oacc, 0, sizeof (float) * (size_t) rows * hd);
  for (int j0 = 0; j0 < kend; j0 += ATT_KT)
    {
      int jn = MIN (ATT_KT, kend - j0);

      TACH_VEC_FN (att_gemm) (rows, jn, hd, q + (size_t) i0 * hd, hd, 1, kt + j0, ldkt, sc,
                              ATT_KT, scale, FALSE);
      for (int r = 0; r < rows; r++)
        {
          float *restrict sr = sc + (size_t) r * ATT_KT;
          int vis = CLAMP (pos + i0 + r + 1 - j0, 0, jn);
          float sum, mnew;

          if (vis == 0)
            {
              memset (sr, 0, sizeof (float) * (size_t) jn);
              continue;
            }
          mnew = MAX (m[r], TACH_VEC_FN (att_max) (sr, vis));
#pragma omp simd
          for (int j = 0; j < jn; j++)
            sr[j] = j < vis ? tach_cpu_fast_expf (sr[j] - mnew) : 0.0f;
          sum = TACH_VEC_FN (att_sum) (sr, jn);
          if (mnew > m[r] && l[r] > 0.0f)
            {
              float corr = expf (m[r] - mnew);
              float *restrict orow = oacc + (size_t) r * hd;

#pragma omp simd
              for (int d = 0; d < hd; d++)
                orow[d] *= corr;
              l[r] *= corr;
            }
          l[r] += sum;
          m[r] = mnew;
          if (drop != NULL)
            att_drop_row (drop, sr, i0 + r, j0, vis);
        }
      TACH_VEC_FN (att_gemm) (rows, hd, jn, sc, ATT_KT, 1, v + (size_t) j0 * hd, hd, oacc, hd,
                              1.0f, TRUE);
    }
  for (int r = 0; r < rows; r++)
    {
      float inv = 1.0f / l[r];
      const float *restrict orow = oacc + (size_t) r * hd;
      float *restrict out = o + (size_t) (i0 + r) * hd;

#pragma omp simd
      for (int d = 0; d < hd; d++)
        out[d] = orow[d] * inv;
      if (lse != NULL)
        lse[i0 + r] = m[r] + logf (l[r]);
    }
}

/* One query row of a decode step against its @valid keys: the scores
 * (small_gemm_nt's dot products, K read as it is stored), their softmax,
 * then o = p V.  @s is the thread's scratch of @valid floats.  Returns
 * the row's log-sum-exp, or NAN where the scores' product failed. */
TACH_VEC_TARGET static float
TACH_VEC_FN (att_fwd_row) (const float *q, const float *k, const float *v, float *o, int valid,
                           int hd, float scale, float *s)
{
  float mx, sum;

  if (tach_cpu_sgemm_local (FALSE, TRUE, 1, (size_t) valid, (size_t) hd, scale, q, hd, k, hd,
                            0.0f, s, (size_t) valid) != dnnl_success)
    return NAN;
  mx = TACH_VEC_FN (att_max) (s, valid);
#pragma omp simd
  for (int j = 0; j < valid; j++)
    s[j] = tach_cpu_fast_expf (s[j] - mx);
  sum = TACH_VEC_FN (att_sum) (s, valid);
  TACH_VEC_FN (att_gemm) (1, hd, valid, s, 0, 1, v, hd, o, hd, 1.0f / sum, FALSE);
  return mx + logf (sum);
}

/* One (batch, head) pair's backward over t positions (pos 0), the
 * probabilities dropped by @drop (NULL: none): @kt and @vt [hd, ldt] take
 * K^T and V^T, @dd [t] the rows' D = rowsum (dO O), @sc and @dp [ATT_QB,
 * ATT_KT] the tiles' P (kept: P') and dS: the thread's scratch. */
TACH_VEC_TARGET static void
TACH_VEC_FN (att_bwd_head) (const float *q, const float *k, const float *v, const float *o,
                            const float *dout, const float *lse, float *dq, float *dk,
                            float *dv, int t, int hd, float scale, const AttDrop *drop,
                            float *kt, float *vt, size_t ldt, float *dd, float *sc, float *dp)
{
  size_t n = (size_t) t * hd;

  att_transpose (k, kt, t, hd, ldt);
  att_transpose (v, vt, t, hd, ldt);
  for (int i = 0; i < t; i++)
    {
      const float *restrict a = dout + (size_t) i * hd, *restrict b = o + (size_t) i * hd;
      float s = 0.0f;

#pragma omp simd reduction(+:s)
      for (int d = 0; d < hd; d++)
        s += a[d] * b[d];
      dd[i] = s;
    }
  memset (dq, 0, sizeof (float) * n);
  memset (dk, 0, sizeof (float) * n);
  memset (dv, 0, sizeof (float) * n);
  for (int j0 = 0; j0 < t; j0 += ATT_KT)
    {
      int jn = MIN (ATT_KT, t - j0);

      for (int b0 = j0 / ATT_QB * ATT_QB; b0 < t; b0 += ATT_QB)
        {
          /* The block's rows from the tile's first key on, against the
           * keys up to its last row: the rows above see none of the tile
           * and the keys past it are masked for every row, so their P and
           * dS are exactly 0 and their terms of the products add nothing
           * (the same bits without them; 14% of training's backward
           * products at context 256, whose tiles and blocks do not
           * align). */
          int i0 = MAX (b0, j0), rows = MIN (b0 + ATT_QB, t) - i0;
          int kn = MIN (jn, i0 + rows - j0);
          const float *qi = q + (size_t) i0 * hd, *doi = dout + (size_t) i0 * hd;

          TACH_VEC_FN (att_gemm) (rows, kn, hd, qi, hd, 1, kt + j0, ldt, sc, ATT_KT, scale,
                                  FALSE);
          TACH_VEC_FN (att_gemm) (rows, kn, hd, doi, hd, 1, vt + j0, ldt, dp, ATT_KT, 1.0f,
                                  FALSE);
          for (int r = 0; r < rows; r++)
            {
              float *restrict sr = sc + (size_t) r * ATT_KT, *restrict dr = dp + (size_t) r * ATT_KT;
              int vis = CLAMP (i0 + r + 1 - j0, 0, kn);
              float li = lse[i0 + r], di = dd[i0 + r];

              if (drop == NULL)
                {
#pragma omp simd
                  for (int j = 0; j < kn; j++)
                    {
                      float p = j < vis ? tach_cpu_fast_expf (sr[j] - li) : 0.0f;

                      sr[j] = p;
                      dr[j] = scale * p * (dr[j] - di);
                    }
                  continue;
                }
              /* dV takes the kept P'; dS the kept dP = m dP' (m the kept
               * scale or 0) against the undropped P. */
              {
                uint64_t e0 = drop->base + (uint64_t) (i0 + r) * drop->ld + (uint64_t) j0;

#pragma omp simd
                for (int j = 0; j < kn; j++)
                  {
                    float p = j < vis ? tach_cpu_fast_expf (sr[j] - li) : 0.0f;
                    float keep = tach_rand_uniform_key (drop->key, e0 + (uint64_t) j) >= drop->p
                                 ? drop->inv : 0.0f;

                    sr[j] = p * keep;
                    dr[j] = scale * p * (keep * dr[j] - di);
                  }
              }
            }
          /* dV += P^T dO, dQ += dS K, dK += dS^T Q. */
          TACH_VEC_FN (att_gemm) (kn, hd, rows, sc, 1, ATT_KT, doi, hd, dv + (size_t) j0 * hd,
                                  hd, 1.0f, TRUE);
          TACH_VEC_FN (att_gemm) (rows, hd, kn, dp, ATT_KT, 1, k + (size_t) j0 * hd, hd,
                                  dq + (size_t) i0 * hd, hd, 1.0f, TRUE);
          TACH_VEC_FN (att_gemm) (kn, hd, rows, dp, 1, ATT_KT, qi, hd, dk + (size_t) j0 * hd, hd,
                                  1.0f, TRUE);
        }
    }
}
