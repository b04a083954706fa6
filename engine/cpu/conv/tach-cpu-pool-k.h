/* tach-cpu-pool-k.h: the conv block's pool (tach-cpu-pool.c) over fp32
 * activations blocked by exactly one vector of channels, written once
 * against tach-cpu-vec.h and included after each width's inclusion of it
 * (block_pool_vec_avx512, block_pool_vec_avx2).  The same bits as
 * block_pool_unit's loops, which GCC left scalar at AVX2's 8 channels (the
 * codes' byte stores): the compare chain is blends on masks of "greater"
 * (false on NaN, as the scalar compare), the codes packed to bytes. */

/* One channel block (@kb) of image @n, forward or @backward, as
 * block_pool_unit with cb = TACH_VEC_LANES and fp32. */
TACH_VEC_TARGET static void
TACH_VEC_FN (block_pool_vec) (const TachCpuActLayout *l, gboolean backward, float *act,
                              float *y, guint8 *code, int n, int kb, int h, int w)
{
  const int cb = TACH_VEC_LANES, oh = h / 2, ow = w / 2;
  const size_t plane = (size_t) oh * ow;
  const size_t base = (size_t) n * l->sn + (size_t) kb * l->sc;
  const size_t ysc = l->y_blocked ? 1 : plane, yso = l->y_blocked ? (size_t) cb : 1;
  float *yb = y + ((size_t) n * l->k + (size_t) kb * cb) * plane;
  guint8 *cd = code + ((size_t) n * l->k + (size_t) kb * cb) * plane;
  const TachVec zero = tach_vec_zero (), one = tach_vec_set1 (1.0f);
  const TachVec two = tach_vec_set1 (2.0f), three = tach_vec_set1 (3.0f);
  const TachVec off = tach_vec_set1 ((float) TACH_CPU_POOL_RELU_OFF);
  float lanes[TACH_VEC_LANES];

  for (int i = 0; i < oh; i++)
    for (int j = 0; j < ow; j++)
      {
        float *a = act + base + (size_t) (2 * i) * l->sh + (size_t) (2 * j) * l->sw;
        size_t o = (size_t) i * ow + j;

        if (backward)
          {
            TachVec k = tach_vec_load_u8 (cd + o * cb), g;

            if (l->y_blocked)
              g = tach_vec_load (yb + o * yso);
            else
              {
                for (int c = 0; c < cb; c++)
                  lanes[c] = yb[(size_t) c * ysc + o];
                g = tach_vec_load (lanes);
              }
            /* The ReLU's derivative multiplied in (0 x NaN stays NaN). */
            g = tach_vec_mul (g, tach_vec_blend (tach_vec_gt (off, k), zero, one));
            k = tach_vec_blend (tach_vec_gt (off, k), tach_vec_sub (k, off), k);
            tach_vec_store (a, tach_vec_blend (tach_vec_eq (k, zero), zero, g));
            tach_vec_store (a + l->sw, tach_vec_blend (tach_vec_eq (k, one), zero, g));
            tach_vec_store (a + l->sh, tach_vec_blend (tach_vec_eq (k, two), zero, g));
            tach_vec_store (a + l->sh + l->sw, tach_vec_blend (tach_vec_eq (k, three), zero, g));
            continue;
          }
        {
          TachVec v = tach_vec_load (a), best = zero, u, c;
          TachVecMask m;

          /* Ties keep the first in row-major order, as maxpool_fwd. */
          u = tach_vec_load (a + l->sw);
          m = tach_vec_gt (u, v);
          best = tach_vec_blend (m, best, one);
          v = tach_vec_blend (m, v, u);
          u = tach_vec_load (a + l->sh);
          m = tach_vec_gt (u, v);
          best = tach_vec_blend (m, best, two);
          v = tach_vec_blend (m, v, u);
          u = tach_vec_load (a + l->sh + l->sw);
          m = tach_vec_gt (u, v);
          best = tach_vec_blend (m, best, three);
          v = tach_vec_blend (m, v, u);
          c = tach_vec_add (best, tach_vec_blend (tach_vec_le (v, zero), zero, off));
          tach_vec_store_u8 (cd + o * cb, c);
          if (l->y_blocked)
            tach_vec_store (yb + o * yso, v);
          else
            {
              tach_vec_store (lanes, v);
              for (int q = 0; q < cb; q++)
                yb[(size_t) q * ysc + o] = lanes[q];
            }
        }
      }
  /* Backward: the row and column an odd size leaves out of every window. */
  for (int r = 0; backward && r < h; r++)
    for (int q = (r < 2 * oh ? 2 * ow : 0); q < w; q++)
      tach_vec_store (act + base + (size_t) r * l->sh + (size_t) q * l->sw, zero);
}
