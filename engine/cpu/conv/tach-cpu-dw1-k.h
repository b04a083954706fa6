/* tach-cpu-dw1-k.h: the kernel of tach-cpu-dw1.c, written once against
 * tach-cpu-vec.h and included after each width's inclusion of it
 * (TACH_VEC_FN makes dw1_chunk_avx512 and dw1_chunk_avx2).
 *
 * Each vector holds L = TACH_VEC_LANES output channels of one block of the
 * activations' layout; for one filter row kh, the S = 5 taps of that row
 * for two channel blocks at a time are ten accumulators, and each output
 * position loads its two gradient vectors once and each input pixel of
 * the row once (a broadcast) for five FMAs apiece.  A lane's sums run over
 * the images, rows and columns in that order whatever L is, so both widths
 * give the same bits.
 */

#define DW1_S 5

/* Adds, for channel blocks [kb, kb + NB) and filter row @kh, the images
 * [0, count) of @dact (image n at dact + n sn, its padded input at xp + n
 * ph pw) into acc[NB][DW1_S], and with @with_db their gradients into
 * dbacc[NB]. */
#define DW1_ROW(NB, with_db)                                                         \
  do {                                                                               \
    for (int n = 0; n < count; n++)                                                  \
      for (int oh = 0; oh < s->oh; oh++)                                             \
        {                                                                            \
          const float *xr = xp + ((size_t) n * s->ph + oh + kh) * s->pw;             \
          const float *dr = dact + (size_t) n * l->sn + (size_t) kb * l->sc          \
                            + (size_t) oh * l->sh;                                   \
                                                                                     \
          for (int ow = 0; ow < s->ow; ow++)                                         \
            {                                                                        \
              TachVec dyv[NB];                                                       \
                                                                                     \
              _Pragma ("GCC unroll 2")                                               \
              for (int b = 0; b < (NB); b++)                                         \
                {                                                                    \
                  dyv[b] = tach_vec_load (dr + (size_t) b * l->sc + (size_t) ow * TACH_VEC_LANES); \
                  if (with_db)                                                       \
                    dbacc[b] = tach_vec_add (dbacc[b], dyv[b]);                      \
                }                                                                    \
              _Pragma ("GCC unroll 5")                                               \
              for (int kw = 0; kw < DW1_S; kw++)                                     \
                {                                                                    \
                  TachVec xv = tach_vec_set1 (xr[ow + kw]);                          \
                                                                                     \
                  _Pragma ("GCC unroll 2")                                           \
                  for (int b = 0; b < (NB); b++)                                     \
                    acc[b][kw] = tach_vec_fma (dyv[b], xv, acc[b][kw]);              \
                }                                                                \
            }                                                                        \
        }                                                                            \
  } while (0)

/* Writes accumulators of @nb channel blocks from kb into @part ([K][R][S],
 * then the bias gradient [K]). */
TACH_VEC_INLINE void
TACH_VEC_FN (dw1_store) (const TachCpuDw1Shape *s, int kb, int nb, int kh,
                         TachVec acc[2][DW1_S], TachVec dbacc[2], gboolean with_db,
                         float *part)
{
  float lanes[TACH_VEC_LANES];

  for (int b = 0; b < nb; b++)
    {
      int k0 = (kb + b) * TACH_VEC_LANES;

      for (int kw = 0; kw < DW1_S; kw++)
        {
          tach_vec_store (lanes, acc[b][kw]);
          for (int i = 0; i < TACH_VEC_LANES; i++)
            part[((size_t) (k0 + i) * s->r + kh) * DW1_S + kw] = lanes[i];
        }
      if (with_db)
        {
          tach_vec_store (lanes, dbacc[b]);
          for (int i = 0; i < TACH_VEC_LANES; i++)
            part[(size_t) s->k * s->r * DW1_S + k0 + i] = lanes[i];
        }
    }
}

/* One chunk's gradients into @part: @count images of @dact (layout @l) on
 * their zero-padded inputs at @xp. */
TACH_VEC_TARGET static void
TACH_VEC_FN (dw1_chunk) (const TachCpuDw1Shape *s, const TachCpuActLayout *l, const float *xp,
                         const float *dact, int count, float *part)
{
  int blocks = s->k / TACH_VEC_LANES;

  for (int kb = 0; kb < blocks; kb += 2)
    for (int kh = 0; kh < s->r; kh++)
      {
        TachVec acc[2][DW1_S], dbacc[2];
        gboolean with_db = kh == 0;

        for (int b = 0; b < 2; b++)
          {
            dbacc[b] = tach_vec_zero ();
            for (int kw = 0; kw < DW1_S; kw++)
              acc[b][kw] = tach_vec_zero ();
          }
        if (kb + 1 < blocks)
          {
            if (with_db)
              DW1_ROW (2, TRUE);
            else
              DW1_ROW (2, FALSE);
          }
        else if (with_db)
          DW1_ROW (1, TRUE);
        else
          DW1_ROW (1, FALSE);
        TACH_VEC_FN (dw1_store) (s, kb, MIN (2, blocks - kb), kh, acc, dbacc, with_db, part);
      }
}

#undef DW1_ROW
#undef DW1_S
