/* tach-cpu-winograd-k.h: the kernels of the Winograd F(2x2, 5x5)
 * convolution (tach-cpu-winograd.c), written once against tach-cpu-vec.h
 * and included after each width's inclusion of it (TACH_VEC_FN makes
 * wino_forward_avx512 and wino_forward_avx2, ...).
 *
 * Every transform works on one vector of L = TACH_VEC_LANES channels: x,
 * the activations and their gradients are blocked by exactly L channels
 * ([N][C/L][H][W][L]), so one channel block of a tile is 36 vector loads.
 * With the points 0, 1, -1, 2, -2 and infinity, a 6x6 input tile d, a 5x5
 * filter g and the 2x2 output tile Y,
 *   Y = A^T [(G g G^T) . (B^T d B)] A,
 * where B^T is 6x6, G 6x5 and A^T 2x6; the sums over channels at each of
 * the 36 points are GEMMs (wino_gemm).  Backward runs the same algebra
 * transposed: the output gradient's tiles through A, the input gradient's
 * back through B (added into the overlapping input tiles), the filter
 * gradient's through G^T.
 */

/* ------------------------------------------------ one-dimensional steps */

/* out = B^T d (6 -> 6). */
TACH_VEC_INLINE void
TACH_VEC_FN (wino_bt) (const TachVec d[6], TachVec out[6])
{
  const TachVec four = tach_vec_set1 (4.0f), m4 = tach_vec_set1 (-4.0f);
  const TachVec m5 = tach_vec_set1 (-5.0f), two = tach_vec_set1 (2.0f);
  TachVec p = tach_vec_fma (m4, d[2], d[4]);              /* d4 - 4 d2 */
  TachVec q = tach_vec_fma (m4, d[1], d[3]);              /* d3 - 4 d1 */
  TachVec r = tach_vec_sub (d[4], d[2]);
  TachVec s = tach_vec_mul (two, tach_vec_sub (d[3], d[1]));

  out[0] = tach_vec_fma (four, d[0], tach_vec_fma (m5, d[2], d[4]));
  out[1] = tach_vec_add (p, q);
  out[2] = tach_vec_sub (p, q);
  out[3] = tach_vec_add (r, s);
  out[4] = tach_vec_sub (r, s);
  out[5] = tach_vec_fma (four, d[1], tach_vec_fma (m5, d[3], d[5]));
}

/* out = B v (6 -> 6): the input gradient's step. */
TACH_VEC_INLINE void
TACH_VEC_FN (wino_b) (const TachVec v[6], TachVec out[6])
{
  const TachVec two = tach_vec_set1 (2.0f), four = tach_vec_set1 (4.0f);
  const TachVec m4 = tach_vec_set1 (-4.0f), m5 = tach_vec_set1 (-5.0f);
  TachVec d12 = tach_vec_sub (v[2], v[1]), s12 = tach_vec_add (v[1], v[2]);
  TachVec d34 = tach_vec_sub (v[3], v[4]), s34 = tach_vec_add (v[3], v[4]);

  out[0] = tach_vec_mul (four, v[0]);
  out[1] = tach_vec_sub (tach_vec_mul (four, tach_vec_add (d12, v[5])), tach_vec_mul (two, d34));
  out[2] = tach_vec_fma (m5, v[0], tach_vec_fma (m4, s12, tach_vec_sub (tach_vec_zero (), s34)));
  out[3] = tach_vec_sub (tach_vec_fma (two, d34, tach_vec_mul (m5, v[5])), d12);
  out[4] = tach_vec_add (v[0], tach_vec_add (s12, s34));
  out[5] = v[5];
}

/* out = A^T m (6 -> 2). */
TACH_VEC_INLINE void
TACH_VEC_FN (wino_at) (const TachVec m[6], TachVec out[2])
{
  const TachVec two = tach_vec_set1 (2.0f);

  out[0] = tach_vec_add (tach_vec_add (m[0], tach_vec_add (m[1], m[2])),
                         tach_vec_add (m[3], m[4]));
  out[1] = tach_vec_add (tach_vec_fma (two, tach_vec_sub (m[3], m[4]), tach_vec_sub (m[1], m[2])),
                         m[5]);
}

/* out = A y (2 -> 6): the output gradient's step. */
TACH_VEC_INLINE void
TACH_VEC_FN (wino_a) (const TachVec y[2], TachVec out[6])
{
  const TachVec two = tach_vec_set1 (2.0f), m2 = tach_vec_set1 (-2.0f);
  const TachVec y0 = y[0], y1 = y[1];

  out[0] = y0;
  out[1] = tach_vec_add (y0, y1);
  out[2] = tach_vec_sub (y0, y1);
  out[3] = tach_vec_fma (two, y1, y0);
  out[4] = tach_vec_fma (m2, y1, y0);
  out[5] = y1;
}

/* out = G g (5 -> 6): the filter's step. */
TACH_VEC_INLINE void
TACH_VEC_FN (wino_g) (const TachVec g[5], TachVec out[6])
{
  const TachVec m6 = tach_vec_set1 (-1.0f / 6.0f);
  TachVec even = tach_vec_add (tach_vec_add (g[0], g[2]), g[4]);
  TachVec odd = tach_vec_add (g[1], g[3]);
  TachVec e2 = tach_vec_fma (tach_vec_set1 (2.0f / 3.0f), g[4],
                             tach_vec_fma (tach_vec_set1 (1.0f / 6.0f), g[2],
                                           tach_vec_mul (tach_vec_set1 (1.0f / 24.0f), g[0])));
  TachVec o2 = tach_vec_fma (tach_vec_set1 (1.0f / 3.0f), g[3],
                             tach_vec_mul (tach_vec_set1 (1.0f / 12.0f), g[1]));

  out[0] = tach_vec_mul (tach_vec_set1 (1.0f / 4.0f), g[0]);
  out[1] = tach_vec_mul (m6, tach_vec_add (even, odd));
  out[2] = tach_vec_mul (m6, tach_vec_sub (even, odd));
  out[3] = tach_vec_add (e2, o2);
  out[4] = tach_vec_sub (e2, o2);
  out[5] = g[4];
}

/* out = G^T u (6 -> 5): the filter gradient's step. */
TACH_VEC_INLINE void
TACH_VEC_FN (wino_gt) (const TachVec u[6], TachVec out[5])
{
  const TachVec c6 = tach_vec_set1 (1.0f / 6.0f);
  TachVec s12 = tach_vec_mul (c6, tach_vec_add (u[1], u[2]));   /* (u1 + u2) / 6 */
  TachVec d12 = tach_vec_mul (c6, tach_vec_sub (u[2], u[1]));   /* (u2 - u1) / 6 */
  TachVec s34 = tach_vec_add (u[3], u[4]), d34 = tach_vec_sub (u[3], u[4]);

  out[0] = tach_vec_fma (tach_vec_set1 (1.0f / 4.0f), u[0],
                         tach_vec_fma (tach_vec_set1 (1.0f / 24.0f), s34, tach_vec_sub (tach_vec_zero (), s12)));
  out[1] = tach_vec_fma (tach_vec_set1 (1.0f / 12.0f), d34, d12);
  out[2] = tach_vec_fma (c6, s34, tach_vec_sub (tach_vec_zero (), s12));
  out[3] = tach_vec_fma (tach_vec_set1 (1.0f / 3.0f), d34, d12);
  out[4] = tach_vec_add (tach_vec_fma (tach_vec_set1 (2.0f / 3.0f), s34,
                                       tach_vec_sub (tach_vec_zero (), s12)), u[5]);
}

/* @out = S @in S'^T for a step S (@ri -> @ro values) and S' (@ci -> @co):
 * each column of @in (@ri x @ci) through @step, then each row of that
 * through it.  Inlined with the step: every shape is a constant. */
#define WINO_2D(step, ri, ci, ro, co, in, out)                \
  do {                                                        \
    TachVec col_[6], res_[6], mid_[6][6];                     \
    _Pragma ("GCC unroll 6")                                  \
    for (int j_ = 0; j_ < (ci); j_++)                         \
      {                                                       \
        _Pragma ("GCC unroll 6")                              \
        for (int i_ = 0; i_ < (ri); i_++)                     \
          col_[i_] = (in)[i_][j_];                            \
        step (col_, res_);                                    \
        _Pragma ("GCC unroll 6")                              \
        for (int i_ = 0; i_ < (ro); i_++)                     \
          mid_[i_][j_] = res_[i_];                            \
      }                                                       \
    _Pragma ("GCC unroll 6")                                  \
    for (int i_ = 0; i_ < (ro); i_++)                         \
      {                                                       \
        step (mid_[i_], res_);                                \
        _Pragma ("GCC unroll 6")                              \
        for (int j_ = 0; j_ < (co); j_++)                     \
          (out)[i_][j_] = res_[j_];                           \
      }                                                       \
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

/* The 36 points of input tile (ty, tx) of one channel block (@plane:
 * [H][W][L]) to @v, point q at v + q vstride. */
TACH_VEC_INLINE void
TACH_VEC_FN (wino_in_tile) (const TachCpuWino *wg, const float *plane, int ty, int tx, float *v,
                            size_t vstride)
{
  const int oy = 2 * ty - wg->pad_h, ox = 2 * tx - wg->pad_w;
  TachVec d[6][6], out[6][6];

#pragma GCC unroll 6
  for (int i = 0; i < 6; i++)
#pragma GCC unroll 6
    for (int j = 0; j < 6; j++)
      {
        int y = oy + i, x = ox + j;

        d[i][j] = (unsigned) y < (unsigned) wg->h && (unsigned) x < (unsigned) wg->w
                  ? tach_vec_load (plane + ((size_t) y * wg->w + x) * TACH_VEC_LANES)
                  : tach_vec_zero ();
      }
  WINO_2D (TACH_VEC_FN (wino_bt), 6, 6, 6, 6, d, out);
#pragma GCC unroll 6
  for (int i = 0; i < 6; i++)
#pragma GCC unroll 6
    for (int j = 0; j < 6; j++)
      tach_vec_store (v + (size_t) (i * 6 + j) * vstride, out[i][j]);
}

/* Input tiles [t0, t0 + nt) of one image (@x: [C/L][H][W][L]) to @v
 * ([36][nt][C]). */
TACH_VEC_TARGET static void
TACH_VEC_FN (wino_in_tiles) (const TachCpuWino *wg, const float *x, int t0, int nt, float *v)
{
  for (int t = 0; t < nt; t++)
    for (int cb = 0; cb < wg->c; cb += TACH_VEC_LANES)
      TACH_VEC_FN (wino_in_tile) (wg, x + (size_t) cb * wg->h * wg->w, (t0 + t) / wg->tw,
                                  (t0 + t) % wg->tw, v + (size_t) t * wg->c + cb,
                                  (size_t) nt * wg->c);
}

/* Output tiles [t0, t0 + nt) from @m ([36][nt][K]) into one image of the
 * activations (@act: [K/L][OH][OW][L]), bias added and ReLU applied. */
TACH_VEC_TARGET static void
TACH_VEC_FN (wino_out_tiles) (const TachCpuWino *wg, const float *m, const float *bias, int t0,
                              int nt, float *act)
{
  const size_t mstride = (size_t) nt * wg->k;

  for (int t = 0; t < nt; t++)
    for (int kb = 0; kb < wg->k; kb += TACH_VEC_LANES)
      {
        const float *mp = m + (size_t) t * wg->k + kb;
        float *plane = act + (size_t) kb * wg->oh * wg->ow;
        const int y0 = 2 * ((t0 + t) / wg->tw), x0 = 2 * ((t0 + t) % wg->tw);
        TachVec in[6][6], out[2][2], vb = tach_vec_load (bias + kb);

#pragma GCC unroll 6
        for (int i = 0; i < 6; i++)
#pragma GCC unroll 6
          for (int j = 0; j < 6; j++)
            in[i][j] = tach_vec_load (mp + (size_t) (i * 6 + j) * mstride);
        WINO_2D (TACH_VEC_FN (wino_at), 6, 6, 2, 2, in, out);
#pragma GCC unroll 2
        for (int i = 0; i < 2; i++)
#pragma GCC unroll 2
          for (int j = 0; j < 2; j++)
            if (y0 + i < wg->oh && x0 + j < wg->ow)
              tach_vec_store (plane + ((size_t) (y0 + i) * wg->ow + x0 + j) * TACH_VEC_LANES,
                              tach_vec_max (tach_vec_add (out[i][j], vb), tach_vec_zero ()));
      }
}

/* The output gradient's tiles [t0, t0 + nt) of one image (@dact: [K/L]
 * [OH][OW][L]) through A to @m ([36][nt][K]); their sums into @db (K). */
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
          const int y0 = 2 * ((t0 + t) / wg->tw), x0 = 2 * ((t0 + t) % wg->tw);
          float *mp = m + (size_t) t * wg->k + kb;
          TachVec dy[2][2], out[6][6];

#pragma GCC unroll 2
          for (int i = 0; i < 2; i++)
#pragma GCC unroll 2
            for (int j = 0; j < 2; j++)
              {
                dy[i][j] = y0 + i < wg->oh && x0 + j < wg->ow
                           ? tach_vec_load (plane + ((size_t) (y0 + i) * wg->ow + x0 + j)
                                                    * TACH_VEC_LANES)
                           : tach_vec_zero ();
                sum = tach_vec_add (sum, dy[i][j]);
              }
          /* M = A dY A^T */
          WINO_2D (TACH_VEC_FN (wino_a), 2, 2, 6, 6, dy, out);
#pragma GCC unroll 6
          for (int i = 0; i < 6; i++)
#pragma GCC unroll 6
            for (int j = 0; j < 6; j++)
              tach_vec_store (mp + (size_t) (i * 6 + j) * mstride, out[i][j]);
        }
      tach_vec_store (db + kb, sum);
    }
}

/* The input gradient's tiles [t0, t0 + nt) from @v ([36][nt][C]) through
 * B, added into one image of @dx ([C/L][H][W][L]) where they fall inside. */
TACH_VEC_TARGET static void
TACH_VEC_FN (wino_dx_tiles) (const TachCpuWino *wg, const float *v, int t0, int nt, float *dx)
{
  const size_t vstride = (size_t) nt * wg->c;

  for (int t = 0; t < nt; t++)
    for (int cb = 0; cb < wg->c; cb += TACH_VEC_LANES)
      {
        const float *vp = v + (size_t) t * wg->c + cb;
        float *plane = dx + (size_t) cb * wg->h * wg->w;
        const int oy = 2 * ((t0 + t) / wg->tw) - wg->pad_h;
        const int ox = 2 * ((t0 + t) % wg->tw) - wg->pad_w;
        TachVec in[6][6], out[6][6];

#pragma GCC unroll 6
        for (int i = 0; i < 6; i++)
#pragma GCC unroll 6
          for (int j = 0; j < 6; j++)
            in[i][j] = tach_vec_load (vp + (size_t) (i * 6 + j) * vstride);
        WINO_2D (TACH_VEC_FN (wino_b), 6, 6, 6, 6, in, out);
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++)
#pragma GCC unroll 6
          for (int j = 0; j < 6; j++)
            {
              int y = oy + i, x = ox + j;
              float *p = plane + ((size_t) y * wg->w + x) * TACH_VEC_LANES;

              if ((unsigned) y < (unsigned) wg->h && (unsigned) x < (unsigned) wg->w)
                tach_vec_store (p, tach_vec_add (tach_vec_load (p), out[i][j]));
            }
      }
}

/* ------------------------------------------------------------ filters */

/* The filters @w (K x C x 5 x 5, plain) to U ([36][C][K]) and U^T
 * ([36][K][C]); @gather: scratch of 25 L floats. */
TACH_VEC_TARGET static void
TACH_VEC_FN (wino_filters) (const TachCpuWino *wg, const float *w, float *u, float *ut,
                            float *gather)
{
  const size_t ck = (size_t) wg->c * wg->k;

  for (int c = 0; c < wg->c; c++)
    for (int kb = 0; kb < wg->k; kb += TACH_VEC_LANES)
      {
        TachVec g[5][5], out[6][6];

        for (int l = 0; l < TACH_VEC_LANES; l++)
          for (int q = 0; q < 25; q++)
            gather[q * TACH_VEC_LANES + l] = w[((size_t) (kb + l) * wg->c + c) * 25 + q];
#pragma GCC unroll 5
        for (int i = 0; i < 5; i++)
#pragma GCC unroll 5
          for (int j = 0; j < 5; j++)
            g[i][j] = tach_vec_load (gather + (i * 5 + j) * TACH_VEC_LANES);
        WINO_2D (TACH_VEC_FN (wino_g), 5, 5, 6, 6, g, out);
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++)
#pragma GCC unroll 6
          for (int j = 0; j < 6; j++)
            tach_vec_store (u + (size_t) (i * 6 + j) * ck + (size_t) c * wg->k + kb, out[i][j]);
      }
  for (int q = 0; q < 36; q++)
    for (int c = 0; c < wg->c; c++)
      for (int k = 0; k < wg->k; k++)
        ut[q * ck + (size_t) k * wg->c + c] = u[q * ck + (size_t) c * wg->k + k];
}

/* The filter gradient from its transform @du ([36][C][K]) into @dw (K x C
 * x 5 x 5, plain); @gather: scratch of 25 L floats. */
TACH_VEC_TARGET static void
TACH_VEC_FN (wino_dfilters) (const TachCpuWino *wg, const float *du, float *dw, float *gather)
{
  const size_t ck = (size_t) wg->c * wg->k;

  for (int c = 0; c < wg->c; c++)
    for (int kb = 0; kb < wg->k; kb += TACH_VEC_LANES)
      {
        TachVec in[6][6], out[5][5];

#pragma GCC unroll 6
        for (int i = 0; i < 6; i++)
#pragma GCC unroll 6
          for (int j = 0; j < 6; j++)
            in[i][j] = tach_vec_load (du + (size_t) (i * 6 + j) * ck + (size_t) c * wg->k + kb);
        WINO_2D (TACH_VEC_FN (wino_gt), 6, 6, 5, 5, in, out);
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
        for (int q = 0; q < 36; q++)
          TACH_VEC_FN (wino_gemm) (nt, wg->k, wg->c, v + (size_t) q * nt * wg->c, wg->c, 1,
                                   wg->u + q * ck, wg->k, m + (size_t) q * nt * wg->k, wg->k,
                                   FALSE);
        TACH_VEC_FN (wino_out_tiles) (wg, m, bias, t0, nt, act + (size_t) (n - n0) * act_image);
      }
}

/* Backward over images [n0, n0 + count): the input gradient into @dx
 * (NULL: none; the images' part is overwritten), the filter gradient's
 * transform added into @du ([36][C][K]) and the bias gradient into @db
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
              for (int q = 0; q < 36; q++)
                TACH_VEC_FN (wino_gemm) (nt, wg->c, wg->k, m + (size_t) q * nt * wg->k, wg->k, 1,
                                         wg->ut + q * ck, wg->c, v + (size_t) q * nt * wg->c,
                                         wg->c, FALSE);
              TACH_VEC_FN (wino_dx_tiles) (wg, v, t0, nt, dx + (size_t) n * x_image);
            }
          TACH_VEC_FN (wino_in_tiles) (wg, x + (size_t) n * x_image, t0, nt, v);
          /* dU[q] (C x K) += V[q]^T (C x nt) M[q] (nt x K) */
          for (int q = 0; q < 36; q++)
            TACH_VEC_FN (wino_gemm) (wg->c, wg->k, nt, v + (size_t) q * nt * wg->c, 1, wg->c,
                                     m + (size_t) q * nt * wg->k, wg->k, du + q * ck, wg->k,
                                     TRUE);
        }
    }
}

#undef WINO_NV
#undef WINO_2D
