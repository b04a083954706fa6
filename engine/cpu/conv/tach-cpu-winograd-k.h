/* tach-cpu-winograd-k.h: the kernels of the Winograd convolution
 * (tach-cpu-winograd.c, which defines the tile size WINO_M, the input
 * tile's WINO_A and the points WINO_P = WINO_A^2, and the transforms'
 * tables), written once against tach-cpu-vec.h and included after each
 * width's inclusion of it (TACH_VEC_FN makes wino_forward_images_avx512
 * and wino_forward_images_avx2, ...).
 *
 * Every transform works on one vector of L = TACH_VEC_LANES channels: x,
 * the activations and their gradients are blocked by exactly L channels
 * ([N][C/L][H][W][L]), so one channel block of a tile is WINO_P vector
 * loads.  With d an input tile, g a 5x5 filter and Y the output tile,
 *   Y = A^T [(G g G^T) . (B^T d B)] A,
 * and the sums over channels at each of the WINO_P points are GEMMs
 * (wino_gemm).  Backward runs the same algebra transposed: the output
 * gradient's tiles through A, the input gradient's back through B (added
 * into the overlapping input tiles), the filter gradient's through G^T.
 */

/* ------------------------------------------------------ the transforms */

/* out[i] = sum_k S(i, k) in[k] for i < @ro, k < @ri, where S(i, k) is
 * mat[i][k] (mat @ro x @ri, row length @ld) or, @transposed, mat[k][i]
 * (mat @ri x @ro): the matrices are constant tables and every index a
 * constant once inlined and unrolled, so the zeros drop out and the ones
 * become adds. */
TACH_VEC_INLINE void
TACH_VEC_FN (wino_step) (const float *mat, int ld, gboolean transposed, int ri, int ro,
                         const TachVec *in, TachVec *out)
{
#pragma GCC unroll 8
  for (int i = 0; i < ro; i++)
    {
      TachVec acc = tach_vec_zero ();
      gboolean first = TRUE;

#pragma GCC unroll 8
      for (int k = 0; k < ri; k++)
        {
          float c = transposed ? mat[k * ld + i] : mat[i * ld + k];

          if (c == 0.0f)
            continue;
          if (first)
            acc = c == 1.0f ? in[k] : tach_vec_mul (tach_vec_set1 (c), in[k]);
          else
            acc = c == 1.0f ? tach_vec_add (acc, in[k])
                            : tach_vec_fma (tach_vec_set1 (c), in[k], acc);
          first = FALSE;
        }
      out[i] = acc;
    }
}

/* @out = S @in S^T for the step S above (@ri -> @ro values): each column
 * of @in (@ri x @ri) through it, then each row of that. */
#define WINO_2D(mat, ld, transposed, ri, ro, in, out)                             \
  do {                                                                            \
    TachVec col_[WINO_A], res_[WINO_A], mid_[WINO_A][WINO_A];                     \
    _Pragma ("GCC unroll 8")                                                      \
    for (int j_ = 0; j_ < (ri); j_++)                                             \
      {                                                                           \
        _Pragma ("GCC unroll 8")                                                  \
        for (int i_ = 0; i_ < (ri); i_++)                                         \
          col_[i_] = (in)[i_][j_];                                                \
        TACH_VEC_FN (wino_step) ((mat), (ld), (transposed), (ri), (ro), col_, res_); \
        _Pragma ("GCC unroll 8")                                                  \
        for (int i_ = 0; i_ < (ro); i_++)                                         \
          mid_[i_][j_] = res_[i_];                                                \
      }                                                                           \
    _Pragma ("GCC unroll 8")                                                      \
    for (int i_ = 0; i_ < (ro); i_++)                                             \
      {                                                                           \
        TACH_VEC_FN (wino_step) ((mat), (ld), (transposed), (ri), (ro), mid_[i_], res_); \
        _Pragma ("GCC unroll 8")                                                  \
        for (int j_ = 0; j_ < (ro); j_++)                                         \
          (out)[i_][j_] = res_[j_];                                               \
      }                                                                           \
  } while (0)

/* ---------------------------------------------------------------- GEMM */

#if TACH_VEC_LANES == 16
#define WINO_NV 4   /* vectors of a row of C in registers: 6 x 4 of 32 */
#else
#define WINO_NV 2   /* 6 x 2 of 16 */
#endif

/* C[i][0, nv L) (+)= sum_p A(i, p) B[p][0, nv L) for i < rb, where A(i, p)
 * is a[i sai + p sap]: rb x nv sums in registers over all kd. */
TACH_VEC_INLINE void
TACH_VEC_FN (wino_micro) (int rb, int nv, int kd, const float *a, size_t sai, size_t sap,
                          const float *b, size_t ldb, float *c, size_t ldc, gboolean add)
{
  TachVec s[6][WINO_NV], bv[WINO_NV];

#pragma GCC unroll 6
  for (int i = 0; i < rb; i++)
#pragma GCC unroll 4
    for (int j = 0; j < nv; j++)
      s[i][j] = add ? tach_vec_load (c + i * ldc + j * TACH_VEC_LANES) : tach_vec_zero ();
  for (int p = 0; p < kd; p++)
    {
      const float *ap = a + p * sap;

#pragma GCC unroll 4
      for (int j = 0; j < nv; j++)
        bv[j] = tach_vec_load (b + p * ldb + j * TACH_VEC_LANES);
#pragma GCC unroll 6
      for (int i = 0; i < rb; i++)
        {
          TachVec av = tach_vec_set1 (ap[i * sai]);

#pragma GCC unroll 4
          for (int j = 0; j < nv; j++)
            s[i][j] = tach_vec_fma (av, bv[j], s[i][j]);
        }
    }
#pragma GCC unroll 6
  for (int i = 0; i < rb; i++)
#pragma GCC unroll 4
    for (int j = 0; j < nv; j++)
      tach_vec_store (c + i * ldc + j * TACH_VEC_LANES, s[i][j]);
}

/* C [m][n] (+)= A B, A(i, p) = a[i sai + p sap] (m x kd), B [kd][n] (ldb),
 * n a multiple of L: blocks of 6 rows by WINO_NV vectors, each with a
 * micro-kernel of constant shape. */
TACH_VEC_TARGET static void
TACH_VEC_FN (wino_gemm) (int m, int n, int kd, const float *a, size_t sai, size_t sap,
                         const float *b, size_t ldb, float *c, size_t ldc, gboolean add)
{
  for (int j = 0; j < n; j += WINO_NV * TACH_VEC_LANES)
    {
      int nv = MIN (WINO_NV, (n - j) / TACH_VEC_LANES);

      for (int i = 0; i < m; i += 6)
        {
          int rb = MIN (6, m - i);
          const float *ai = a + i * sai;
          const float *bj = b + j;
          float *cij = c + i * ldc + j;

#define WINO_CASE(r, v)                                                              \
  case (r) * 8 + (v):                                                                \
    TACH_VEC_FN (wino_micro) ((r), (v), kd, ai, sai, sap, bj, ldb, cij, ldc, add); \
    break;
          switch (rb * 8 + nv)
            {
#if WINO_NV == 4
              WINO_CASE (6, 4) WINO_CASE (5, 4) WINO_CASE (4, 4) WINO_CASE (3, 4)
              WINO_CASE (2, 4) WINO_CASE (1, 4) WINO_CASE (6, 3) WINO_CASE (5, 3)
              WINO_CASE (4, 3) WINO_CASE (3, 3) WINO_CASE (2, 3) WINO_CASE (1, 3)
#endif
              WINO_CASE (6, 2) WINO_CASE (5, 2) WINO_CASE (4, 2) WINO_CASE (3, 2)
              WINO_CASE (2, 2) WINO_CASE (1, 2) WINO_CASE (6, 1) WINO_CASE (5, 1)
              WINO_CASE (4, 1) WINO_CASE (3, 1) WINO_CASE (2, 1) WINO_CASE (1, 1)
            default: g_assert_not_reached ();
            }
#undef WINO_CASE
        }
    }
}

/* ------------------------------------------------------------ the tiles */

/* Loads the points of one tile's vector from @p (point q at p + q
 * stride) into @g. */
#define WINO_LOAD_POINTS(g, p, stride)                                     \
  do {                                                                     \
    _Pragma ("GCC unroll 8")                                               \
    for (int i_ = 0; i_ < WINO_A; i_++)                                    \
      _Pragma ("GCC unroll 8")                                             \
      for (int j_ = 0; j_ < WINO_A; j_++)                                  \
        (g)[i_][j_] = tach_vec_load ((p) + (size_t) (i_ * WINO_A + j_) * (stride)); \
  } while (0)

/* Stores @g's points of one tile's vector to @p (point q at p + q
 * stride). */
#define WINO_STORE_POINTS(p, stride, g)                                     \
  do {                                                                     \
    _Pragma ("GCC unroll 8")                                               \
    for (int i_ = 0; i_ < WINO_A; i_++)                                    \
      _Pragma ("GCC unroll 8")                                             \
      for (int j_ = 0; j_ < WINO_A; j_++)                                  \
        tach_vec_store ((p) + (size_t) (i_ * WINO_A + j_) * (stride), (g)[i_][j_]); \
  } while (0)

/* The points of input tile (ty, tx) of one channel block (@plane:
 * [H][W][L]) to @v, point q at v + q vstride. */
TACH_VEC_INLINE void
TACH_VEC_FN (wino_in_tile) (const TachCpuWino *wg, const float *plane, int ty, int tx, float *v,
                            size_t vstride)
{
  const int oy = WINO_M * ty - wg->pad_h, ox = WINO_M * tx - wg->pad_w;
  TachVec d[WINO_A][WINO_A], out[WINO_A][WINO_A];

#pragma GCC unroll 8
  for (int i = 0; i < WINO_A; i++)
#pragma GCC unroll 8
    for (int j = 0; j < WINO_A; j++)
      {
        int y = oy + i, x = ox + j;

        d[i][j] = (unsigned) y < (unsigned) wg->h && (unsigned) x < (unsigned) wg->w
                  ? tach_vec_load (plane + ((size_t) y * wg->w + x) * TACH_VEC_LANES)
                  : tach_vec_zero ();
      }
  WINO_2D (wino_bt_mat, WINO_A, FALSE, WINO_A, WINO_A, d, out);
  WINO_STORE_POINTS (v, vstride, out);
}

/* Input tiles [t0, t0 + nt) of one image (@x: [C/L][H][W][L]) to @v
 * ([P][nt][C]). */
TACH_VEC_TARGET static void
TACH_VEC_FN (wino_in_tiles) (const TachCpuWino *wg, const float *x, int t0, int nt, float *v)
{
  for (int t = 0; t < nt; t++)
    for (int cb = 0; cb < wg->c; cb += TACH_VEC_LANES)
      TACH_VEC_FN (wino_in_tile) (wg, x + (size_t) cb * wg->h * wg->w, (t0 + t) / wg->tw,
                                  (t0 + t) % wg->tw, v + (size_t) t * wg->c + cb,
                                  (size_t) nt * wg->c);
}

/* Output tiles [t0, t0 + nt) from @m ([P][nt][K]) into one image of the
 * activations (@act: [K/L][OH][OW][L]), bias added and ReLU applied. */
TACH_VEC_TARGET static void
TACH_VEC_FN (wino_out_tiles) (const TachCpuWino *wg, const float *m, const float *bias, int t0,
                              int nt, float *act)
{
  for (int t = 0; t < nt; t++)
    for (int kb = 0; kb < wg->k; kb += TACH_VEC_LANES)
      {
        float *plane = act + (size_t) kb * wg->oh * wg->ow;
        const int y0 = WINO_M * ((t0 + t) / wg->tw), x0 = WINO_M * ((t0 + t) % wg->tw);
        TachVec in[WINO_A][WINO_A], out[WINO_A][WINO_A], vb = tach_vec_load (bias + kb);

        WINO_LOAD_POINTS (in, m + (size_t) t * wg->k + kb, (size_t) nt * wg->k);
        WINO_2D (wino_at_mat, WINO_A, FALSE, WINO_A, WINO_M, in, out);
#pragma GCC unroll 4
        for (int i = 0; i < WINO_M; i++)
#pragma GCC unroll 4
          for (int j = 0; j < WINO_M; j++)
            if (y0 + i < wg->oh && x0 + j < wg->ow)
              tach_vec_store (plane + ((size_t) (y0 + i) * wg->ow + x0 + j) * TACH_VEC_LANES,
                              tach_vec_max (tach_vec_add (out[i][j], vb), tach_vec_zero ()));
      }
}

/* The output gradient's tiles [t0, t0 + nt) of one image (@dact: [K/L]
 * [OH][OW][L]) through A to @m ([P][nt][K]); their sums into @db (K). */
TACH_VEC_TARGET static void
TACH_VEC_FN (wino_dy_tiles) (const TachCpuWino *wg, const float *dact, int t0, int nt, float *m,
                             float *db)
{
  const size_t mstride = (size_t) nt * wg->k;

  for (int kb = 0; kb < wg->k; kb += TACH_VEC_LANES)
    {
      const float *plane = dact + (size_t) kb * wg->oh * wg->ow;
      TachVec sum = tach_vec_load (db + kb);

      for (int t = 0; t < nt; t++)
        {
          const int y0 = WINO_M * ((t0 + t) / wg->tw), x0 = WINO_M * ((t0 + t) % wg->tw);
          float *mp = m + (size_t) t * wg->k + kb;
          TachVec dy[WINO_A][WINO_A], out[WINO_A][WINO_A];

#pragma GCC unroll 4
          for (int i = 0; i < WINO_M; i++)
#pragma GCC unroll 4
            for (int j = 0; j < WINO_M; j++)
              {
                dy[i][j] = y0 + i < wg->oh && x0 + j < wg->ow
                           ? tach_vec_load (plane + ((size_t) (y0 + i) * wg->ow + x0 + j)
                                                    * TACH_VEC_LANES)
                           : tach_vec_zero ();
                sum = tach_vec_add (sum, dy[i][j]);
              }
          /* M = A dY A^T */
          WINO_2D (wino_at_mat, WINO_A, TRUE, WINO_M, WINO_A, dy, out);
          WINO_STORE_POINTS (mp, mstride, out);
        }
      tach_vec_store (db + kb, sum);
    }
}

/* The input gradient's tiles [t0, t0 + nt) from @v ([P][nt][C]) through
 * B, added into one image of @dx ([C/L][H][W][L]) where they fall inside. */
TACH_VEC_TARGET static void
TACH_VEC_FN (wino_dx_tiles) (const TachCpuWino *wg, const float *v, int t0, int nt, float *dx)
{
  for (int t = 0; t < nt; t++)
    for (int cb = 0; cb < wg->c; cb += TACH_VEC_LANES)
      {
        float *plane = dx + (size_t) cb * wg->h * wg->w;
        const int oy = WINO_M * ((t0 + t) / wg->tw) - wg->pad_h;
        const int ox = WINO_M * ((t0 + t) % wg->tw) - wg->pad_w;
        TachVec in[WINO_A][WINO_A], out[WINO_A][WINO_A];

        WINO_LOAD_POINTS (in, v + (size_t) t * wg->c + cb, (size_t) nt * wg->c);
        WINO_2D (wino_bt_mat, WINO_A, TRUE, WINO_A, WINO_A, in, out);
#pragma GCC unroll 8
        for (int i = 0; i < WINO_A; i++)
#pragma GCC unroll 8
          for (int j = 0; j < WINO_A; j++)
            {
              int y = oy + i, x = ox + j;
              float *p = plane + ((size_t) y * wg->w + x) * TACH_VEC_LANES;

              if ((unsigned) y < (unsigned) wg->h && (unsigned) x < (unsigned) wg->w)
                tach_vec_store (p, tach_vec_add (tach_vec_load (p), out[i][j]));
            }
      }
}

/* ------------------------------------------------------------ filters */

/* The filters @w (K x C x 5 x 5, plain) to U ([P][C][K]) and U^T
 * ([P][K][C]); @gather: scratch of 25 L floats. */
TACH_VEC_TARGET static void
TACH_VEC_FN (wino_filters) (const TachCpuWino *wg, const float *w, float *u, float *ut,
                            float *gather)
{
  const size_t ck = (size_t) wg->c * wg->k;

  for (int c = 0; c < wg->c; c++)
    for (int kb = 0; kb < wg->k; kb += TACH_VEC_LANES)
      {
        TachVec g[5][5], out[WINO_A][WINO_A];

        for (int l = 0; l < TACH_VEC_LANES; l++)
          for (int q = 0; q < 25; q++)
            gather[q * TACH_VEC_LANES + l] = w[((size_t) (kb + l) * wg->c + c) * 25 + q];
#pragma GCC unroll 5
        for (int i = 0; i < 5; i++)
#pragma GCC unroll 5
          for (int j = 0; j < 5; j++)
            g[i][j] = tach_vec_load (gather + (i * 5 + j) * TACH_VEC_LANES);
        WINO_2D (wino_g_mat, 5, FALSE, 5, WINO_A, g, out);
        WINO_STORE_POINTS (u + (size_t) c * wg->k + kb, ck, out);
      }
  for (int q = 0; q < WINO_P; q++)
    for (int c = 0; c < wg->c; c++)
      for (int k = 0; k < wg->k; k++)
        ut[q * ck + (size_t) k * wg->c + c] = u[q * ck + (size_t) c * wg->k + k];
}

/* The filter gradient from its transform @du ([P][C][K]) into @dw (K x C
 * x 5 x 5, plain); @gather: scratch of 25 L floats. */
TACH_VEC_TARGET static void
TACH_VEC_FN (wino_dfilters) (const TachCpuWino *wg, const float *du, float *dw, float *gather)
{
  const size_t ck = (size_t) wg->c * wg->k;

  for (int c = 0; c < wg->c; c++)
    for (int kb = 0; kb < wg->k; kb += TACH_VEC_LANES)
      {
        TachVec in[WINO_A][WINO_A], out[WINO_A][WINO_A];

        WINO_LOAD_POINTS (in, du + (size_t) c * wg->k + kb, ck);
        WINO_2D (wino_g_mat, 5, TRUE, WINO_A, 5, in, out);
#pragma GCC unroll 5
        for (int i = 0; i < 5; i++)
#pragma GCC unroll 5
          for (int j = 0; j < 5; j++)
            tach_vec_store (gather + (i * 5 + j) * TACH_VEC_LANES, out[i][j]);
        for (int l = 0; l < TACH_VEC_LANES; l++)
          for (int q = 0; q < 25; q++)
            dw[((size_t) (kb + l) * wg->c + c) * 25 + q] = gather[q * TACH_VEC_LANES + l];
      }
}

/* ------------------------------------------------------------ the passes */

/* Forward over images [n0, n0 + count) of @x into @act (image n0 first),
 * on the filters' transform in wg->u; this thread's scratch @v, @m. */
TACH_VEC_TARGET static void
TACH_VEC_FN (wino_forward_images) (const TachCpuWino *wg, const float *x, const float *bias,
                                   int n0, int count, float *act, float *v, float *m)
{
  const size_t x_image = (size_t) wg->c * wg->h * wg->w;
  const size_t act_image = (size_t) wg->k * wg->oh * wg->ow;
  const size_t ck = (size_t) wg->c * wg->k;

  for (int n = n0; n < n0 + count; n++)
    for (int t0 = 0; t0 < wg->tiles; t0 += wg->chunk)
      {
        int nt = MIN (wg->chunk, wg->tiles - t0);

        TACH_VEC_FN (wino_in_tiles) (wg, x + (size_t) n * x_image, t0, nt, v);
        for (int q = 0; q < WINO_P; q++)
          TACH_VEC_FN (wino_gemm) (nt, wg->k, wg->c, v + (size_t) q * nt * wg->c, wg->c, 1,
                                   wg->u + q * ck, wg->k, m + (size_t) q * nt * wg->k, wg->k,
                                   FALSE);
        TACH_VEC_FN (wino_out_tiles) (wg, m, bias, t0, nt, act + (size_t) (n - n0) * act_image);
      }
}

/* Backward over images [n0, n0 + count): the input gradient into @dx
 * (NULL: none; the images' part is overwritten), the filter gradient's
 * transform added into @du ([P][C][K]) and the bias gradient into @db
 * (K), all this thread's; scratch @v, @m. */
TACH_VEC_TARGET static void
TACH_VEC_FN (wino_backward_images) (const TachCpuWino *wg, const float *x, const float *dact,
                                    int n0, int count, float *dx, float *du, float *db, float *v,
                                    float *m)
{
  const size_t x_image = (size_t) wg->c * wg->h * wg->w;
  const size_t act_image = (size_t) wg->k * wg->oh * wg->ow;
  const size_t ck = (size_t) wg->c * wg->k;

  for (int n = n0; n < n0 + count; n++)
    {
      if (dx != NULL)
        memset (dx + (size_t) n * x_image, 0, x_image * sizeof (float));
      for (int t0 = 0; t0 < wg->tiles; t0 += wg->chunk)
        {
          int nt = MIN (wg->chunk, wg->tiles - t0);

          TACH_VEC_FN (wino_dy_tiles) (wg, dact + (size_t) n * act_image, t0, nt, m, db);
          if (dx != NULL)
            {
              for (int q = 0; q < WINO_P; q++)
                TACH_VEC_FN (wino_gemm) (nt, wg->c, wg->k, m + (size_t) q * nt * wg->k, wg->k, 1,
                                         wg->ut + q * ck, wg->c, v + (size_t) q * nt * wg->c,
                                         wg->c, FALSE);
              TACH_VEC_FN (wino_dx_tiles) (wg, v, t0, nt, dx + (size_t) n * x_image);
            }
          TACH_VEC_FN (wino_in_tiles) (wg, x + (size_t) n * x_image, t0, nt, v);
          /* dU[q] (C x K) += V[q]^T (C x nt) M[q] (nt x K) */
          for (int q = 0; q < WINO_P; q++)
            TACH_VEC_FN (wino_gemm) (wg->c, wg->k, nt, v + (size_t) q * nt * wg->c, 1, wg->c,
                                     m + (size_t) q * nt * wg->k, wg->k, du + q * ck, wg->k,
                                     TRUE);
        }
    }
}

#undef WINO_NV
#undef WINO_2D
#undef WINO_LOAD_POINTS
#undef WINO_STORE_POINTS
