/* test-ops-gpt.c: the Transformer ops (the gpt workload) against the
 * double-precision reference (tach-ref-gpt.c), the reference's backward
 * passes against finite differences, and the fused attention against the
 * naive one that the same device composes from its own ops.
 *
 * Tolerances, by NMSE against the reference: pointwise ops, copies and
 * one-row reductions TACH_OPS_NMSE_SIMPLE (1e-10); products, attention
 * and the parameter gradients summed over rows TACH_OPS_NMSE_DEEP (1e-8),
 * which also bounds fused against naive attention (fp32 both; only the
 * order of the sums differs, about 1e-13 seen).
 */
#include <math.h>
#include <string.h>

#include "test-ops-common.h"

/* A backend without the Transformer slots (all or none) skips. */
gboolean
gpt_has_transformer (TachBackend *be)
{
  if (be->ops->attention_fwd != NULL)
    return TRUE;
  g_test_skip_printf ("%s has no Transformer ops", be->device->id);
  return FALSE;
}

/* Normal values rounded to float, so that the reference sees the inputs a
 * float backend sees. */
double *
gpt_normal (size_t n, guint64 seed, double scale)
{
  double *x = g_new (double, MAX (n, 1));

  tach_ref_fill_normal (x, n, seed, 1, scale);
  tach_ref_round_to_float (x, n);
  return x;
}

void
gpt_check (TachBackend *be, const char *what, const float *dev, const double *want, size_t n,
           double limit)
{
  g_autofree float *got = tach_ops_download_f (be, dev, n);

  tach_ops_assert_nmse (what, got, want, n, limit);
}

/* ------------------------------------------------------ batched products */

static void
batched_case (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k, int batch)
{
  int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 1;
  size_t sa = (size_t) (ta ? k : m) * lda + 5, sb = (size_t) (tb ? n : k) * ldb + 7;
  size_t sc = (size_t) m * ldc + 4;
  g_autofree double *a = gpt_normal (sa * batch, 2000 + m, 1.0);
  g_autofree double *b = gpt_normal (sb * batch, 2001 + n, 1.0);
  g_autofree double *c = gpt_normal (sc * batch, 2002 + k, 1.0);
  g_autofree char *what = g_strdup_printf ("gemm_strided_batched %c%c %dx%dx%d x%d",
                                           ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, batch);
  float *d_a = tach_ops_upload_d (be, a, sa * batch);
  float *d_b = tach_ops_upload_d (be, b, sb * batch);
  float *d_c = tach_ops_upload_d (be, c, sc * batch);

  tach_op (be, gemm_strided_batched, ta, tb, m, n, k, 0.75f, d_a, lda, sa, d_b, ldb, sb, 0.5f,
           d_c, ldc, sc, batch);
  tach_ref_gemm_strided_batched (ta, tb, m, n, k, 0.75, a, lda, sa, b, ldb, sb, 0.5, c, ldc, sc,
                                 batch);
  gpt_check (be, what, d_c, c, sc * batch, TACH_OPS_NMSE_DEEP);
}

static void
test_gemm_strided_batched (TachBackend *be)
{
  if (!gpt_has_transformer (be))
    return;
  for (int t = 0; t < 4; t++)
    batched_case (be, t & 1, t >> 1, 5, 7, 9, 6);
  /* Attention's shapes: q k^T and p v per head, small; and products large
   * enough to run on the whole pool. */
  batched_case (be, FALSE, TRUE, 33, 33, 16, 12);
  batched_case (be, FALSE, FALSE, 33, 16, 33, 12);
  batched_case (be, TRUE, FALSE, 100, 96, 120, 2);
  batched_case (be, FALSE, FALSE, 3, 4, 5, 1);
  batched_case (be, TRUE, TRUE, 90, 80, 70, 1);
}

/* ------------------------------------------------------ add and scale */

static void
test_add_scale (TachBackend *be)
{
  static const size_t sizes[] = { 37, 40000 };

  if (!gpt_has_transformer (be))
    return;
  for (guint s = 0; s < G_N_ELEMENTS (sizes); s++)
    {
      size_t n = sizes[s];
      g_autofree double *a = gpt_normal (n, 2100, 1.0);
      g_autofree double *b = gpt_normal (n, 2101, 1.0);
      g_autofree double *y = g_new (double, n);
      float *d_a = tach_ops_upload_d (be, a, n);
      float *d_b = tach_ops_upload_d (be, b, n);
      float *d_y = tach_ops_alloc (be, n * sizeof (float));

      tach_op (be, add, d_a, d_b, d_y, n);
      for (size_t i = 0; i < n; i++)
        y[i] = a[i] + b[i];
      gpt_check (be, "add", d_y, y, n, TACH_OPS_NMSE_SIMPLE);
      /* In place, then scaled in place. */
      tach_op (be, add, d_a, d_b, d_a, n);
      tach_op (be, scale, d_a, -0.3f, n);
      for (size_t i = 0; i < n; i++)
        y[i] *= -0.3;
      gpt_check (be, "add in place, scale", d_a, y, n, TACH_OPS_NMSE_SIMPLE);
    }
}

/* ------------------------------------------------------------ LayerNorm */

/* @mode 0: no residual; 1: the residual with its own sum; 2: the sum
 * written over x.  The backward's dres absent (mode 0) or present, dx
 * written over it (mode 2). */
static void
layernorm_case (TachBackend *be, int rows, int dim, int mode)
{
  size_t n = (size_t) rows * dim;
  g_autofree double *x = gpt_normal (n, 2200 + mode, 1.5);
  g_autofree double *res = gpt_normal (n, 2201, 1.0);
  g_autofree double *gamma = gpt_normal (dim, 2202, 1.0);
  g_autofree double *beta = gpt_normal (dim, 2203, 1.0);
  g_autofree double *dy = gpt_normal (n, 2204, 1.0);
  g_autofree double *dres = gpt_normal (n, 2205, 1.0);
  g_autofree double *sum = g_new (double, n);
  g_autofree double *y = g_new (double, n);
  g_autofree double *mean = g_new (double, rows);
  g_autofree double *rstd = g_new (double, rows);
  g_autofree double *dx = g_new (double, n);
  g_autofree double *dgamma = g_new (double, dim);
  g_autofree double *dbeta = g_new (double, dim);
  g_autofree char *what = g_strdup_printf ("layernorm %dx%d mode %d", rows, dim, mode);
  float *d_x, *d_res, *d_sum, *d_gamma, *d_beta, *d_y, *d_mean, *d_rstd, *d_dy, *d_dres, *d_dx;
  float *d_dgamma, *d_dbeta;

  /* A residual stream far from zero: the mean must not cancel. */
  for (size_t i = 0; i < n; i++)
    x[i] += 4.0;
  tach_ref_round_to_float (x, n);
  d_x = tach_ops_upload_d (be, x, n);
  d_res = mode > 0 ? tach_ops_upload_d (be, res, n) : NULL;
  d_sum = mode == 1 ? tach_ops_alloc (be, n * sizeof (float)) : mode == 2 ? d_x : NULL;
  d_gamma = tach_ops_upload_d (be, gamma, dim);
  d_beta = tach_ops_upload_d (be, beta, dim);
  d_y = tach_ops_alloc (be, n * sizeof (float));
  d_mean = tach_ops_alloc (be, rows * sizeof (float));
  d_rstd = tach_ops_alloc (be, rows * sizeof (float));
  tach_op (be, layernorm_fwd, d_x, d_res, d_sum, d_gamma, d_beta, d_y, d_mean, d_rstd, rows,
           dim);
  tach_ref_layernorm_fwd (x, mode > 0 ? res : NULL, sum, gamma, beta, y, mean, rstd, rows, dim);
  gpt_check (be, what, d_y, y, n, TACH_OPS_NMSE_SIMPLE);
  gpt_check (be, "layernorm mean", d_mean, mean, rows, TACH_OPS_NMSE_SIMPLE);
  gpt_check (be, "layernorm rstd", d_rstd, rstd, rows, TACH_OPS_NMSE_SIMPLE);
  if (mode > 0)
    gpt_check (be, "layernorm sum", d_sum, sum, n, TACH_OPS_NMSE_SIMPLE);

  d_dy = tach_ops_upload_d (be, dy, n);
  d_dres = mode > 0 ? tach_ops_upload_d (be, dres, n) : NULL;
  d_dx = mode == 2 ? d_dres : tach_ops_alloc (be, n * sizeof (float));
  d_dgamma = tach_ops_alloc (be, dim * sizeof (float));
  d_dbeta = tach_ops_alloc (be, dim * sizeof (float));
  tach_op (be, layernorm_bwd, mode > 0 ? d_sum : d_x, d_gamma, d_mean, d_rstd, d_dy, d_dres,
           d_dx, d_dgamma, d_dbeta, rows, dim);
  tach_ref_layernorm_bwd (mode > 0 ? sum : x, gamma, dy, mode > 0 ? dres : NULL, dx, dgamma,
                          dbeta, rows, dim);
  gpt_check (be, "layernorm dx", d_dx, dx, n, TACH_OPS_NMSE_SIMPLE);
  gpt_check (be, "layernorm dgamma", d_dgamma, dgamma, dim, TACH_OPS_NMSE_DEEP);
  gpt_check (be, "layernorm dbeta", d_dbeta, dbeta, dim, TACH_OPS_NMSE_DEEP);
}

static void
test_layernorm (TachBackend *be)
{
  if (!gpt_has_transformer (be))
    return;
  for (int mode = 0; mode < 3; mode++)
    {
      layernorm_case (be, 37, 50, mode);
      layernorm_case (be, 1, 384, mode);
      layernorm_case (be, 300, 72, mode);
    }
}

/* ----------------------------------------------------------------- GELU */

static void
gelu_case (TachBackend *be, int rows, int dim, gboolean with_bias)
{
  size_t n = (size_t) rows * dim;
  g_autofree double *x = gpt_normal (n, 2300, 2.0);
  g_autofree double *bias = gpt_normal (dim, 2301, 1.0);
  g_autofree double *dy = gpt_normal (n, 2302, 1.0);
  g_autofree double *y = g_new (double, n);
  g_autofree double *dx = g_new (double, n);
  g_autofree char *what = g_strdup_printf ("gelu %dx%d%s", rows, dim,
                                           with_bias ? " with bias" : "");
  float *d_x, *d_bias, *d_y, *d_dy;

  /* Saturated inputs: tanh is -1 or 1 there, never NaN. */
  x[0] = -30.0;
  x[n - 1] = 25.0;
  x[n / 2] = 0.0;
  d_x = tach_ops_upload_d (be, x, n);
  d_bias = with_bias ? tach_ops_upload_d (be, bias, dim) : NULL;
  d_y = tach_ops_alloc (be, n * sizeof (float));
  tach_op (be, gelu_fwd, d_x, d_bias, d_y, rows, dim);
  if (with_bias)
    {
      for (size_t i = 0; i < n; i++)
        x[i] += bias[i % dim];
      /* x holds the pre-activation, as backward reads it. */
      gpt_check (be, "gelu's pre-activation", d_x, x, n, TACH_OPS_NMSE_SIMPLE);
      tach_ref_round_to_float (x, n);
    }
  tach_ref_gelu_fwd (x, y, n);
  gpt_check (be, what, d_y, y, n, TACH_OPS_NMSE_SIMPLE);

  /* In place: dx over dy. */
  d_dy = tach_ops_upload_d (be, dy, n);
  tach_op (be, gelu_bwd, d_x, d_dy, d_dy, n);
  tach_ref_gelu_bwd (x, dy, dx, n);
  gpt_check (be, "gelu dx", d_dy, dx, n, TACH_OPS_NMSE_SIMPLE);
}

static void
test_gelu (TachBackend *be)
{
  if (!gpt_has_transformer (be))
    return;
  gelu_case (be, 33, 70, FALSE);
  gelu_case (be, 33, 70, TRUE);
  gelu_case (be, 64, 1536, TRUE);
}

/* ---------------------------------------------------------------- heads */

/* The k view of a qkv projection [B*T, 3C] split into a cache at pos,
 * the cache's other positions untouched, and merged back into the
 * columns it came from, the others untouched: a round trip, bit for bit. */
static void
test_heads (TachBackend *be)
{
  enum { B = 2, T = 5, H = 3, HD = 4, C = H * HD, CAP = 9, POS = 3 };
  const float sentinel = -7.5f;
  size_t nx = (size_t) B * T * 3 * C, ny = (size_t) B * H * CAP * HD;
  g_autofree double *x = gpt_normal (nx, 2400, 1.0);
  g_autofree double *y = g_new (double, ny);
  g_autofree float *fill_y = g_new (float, ny);
  g_autofree float *fill_x = g_new (float, nx);
  g_autofree float *got_y = NULL;
  g_autofree float *got_x = NULL;
  g_autofree float *xf = tach_ref_to_float (x, nx);
  float *d_x, *d_y, *d_back;

  if (!gpt_has_transformer (be))
    return;
  for (size_t i = 0; i < ny; i++)
    y[i] = fill_y[i] = sentinel;
  for (size_t i = 0; i < nx; i++)
    fill_x[i] = sentinel;
  d_x = tach_ops_upload_d (be, x, nx);
  d_y = tach_ops_upload_f (be, fill_y, ny);
  d_back = tach_ops_upload_f (be, fill_x, nx);
  tach_op (be, heads_split, d_x + C, 3 * C, d_y, B, T, H, HD, CAP, POS);
  tach_ref_heads_split (x + C, 3 * C, y, B, T, H, HD, CAP, POS);
  got_y = tach_ops_download_f (be, d_y, ny);
  for (size_t i = 0; i < ny; i++)
    g_assert_cmpfloat (got_y[i], ==, (float) y[i]);

  tach_op (be, heads_merge, d_y, d_back + C, 3 * C, B, T, H, HD, CAP, POS);
  got_x = tach_ops_download_f (be, d_back, nx);
  for (size_t r = 0; r < (size_t) B * T; r++)
    for (int j = 0; j < 3 * C; j++)
      {
        size_t i = r * 3 * C + j;

        g_assert_cmpfloat (got_x[i], ==, j >= C && j < 2 * C ? xf[i] : sentinel);
      }
}

/* -------------------------------------------------------- causal softmax */

static void
softmax_case (TachBackend *be, int bh, int tq, int tk, int pos)
{
  size_t n = (size_t) bh * tq * tk;
  const double scale = 0.125;
  g_autofree double *s = gpt_normal (n, 2500 + pos, 3.0);
  g_autofree double *dp = gpt_normal (n, 2501, 1.0);
  g_autofree double *ds = g_new (double, n);
  g_autofree float *got = NULL;
  g_autofree char *what = g_strdup_printf ("causal_softmax %dx%dx%d at %d", bh, tq, tk, pos);
  float *d_s = tach_ops_upload_d (be, s, n);
  float *d_dp = tach_ops_upload_d (be, dp, n);

  tach_op (be, causal_softmax_fwd, d_s, bh, tq, tk, pos, (float) scale);
  tach_ref_causal_softmax_fwd (s, bh, tq, tk, pos, scale);
  got = tach_ops_download_f (be, d_s, n);
  tach_ops_assert_nmse (what, got, s, n, TACH_OPS_NMSE_SIMPLE);
  /* Masked keys: exactly zero. */
  for (size_t r = 0; r < (size_t) bh * tq; r++)
    for (int j = pos + (int) (r % tq) + 1; j < tk; j++)
      g_assert_cmpfloat (got[r * tk + j], ==, 0.0f);

  /* From the device's probabilities, ds over dp. */
  g_free (s);
  s = tach_ref_to_double (got, n);
  tach_op (be, causal_softmax_bwd, d_s, d_dp, d_dp, bh, tq, tk, (float) scale);
  tach_ref_causal_softmax_bwd (s, dp, ds, bh, tq, tk, scale);
  gpt_check (be, "causal_softmax ds", d_dp, ds, n, TACH_OPS_NMSE_SIMPLE);
}

static void
test_causal_softmax (TachBackend *be)
{
  if (!gpt_has_transformer (be))
    return;
  softmax_case (be, 3, 17, 17, 0);     /* training */
  softmax_case (be, 3, 4, 11, 5);      /* a chunk at pos 5 of a longer cache */
  softmax_case (be, 2, 1, 40, 6);      /* a static cache: keys past 6 masked */
  softmax_case (be, 4, 70, 70, 0);
}

/* ------------------------------------------------------------- attention */

/* The cache's positions past @tk hold NaN, which no op may read; those
 * from pos + i + 1 to tk (a static cache's tail) hold large values, which
 * the mask must hide. */
static double *
cache (int bh, int tk, int cap, int hd, guint64 seed)
{
  double *k = gpt_normal ((size_t) bh * cap * hd, seed, 1.0);

  for (int p = 0; p < bh; p++)
    for (int j = tk; j < cap; j++)
      for (int d = 0; d < hd; d++)
        k[((size_t) p * cap + j) * hd + d] = NAN;
  return k;
}

static void
attention_fwd_case (TachBackend *be, int B, int H, int tq, int tk, int cap, int hd, int pos)
{
  int bh = B * H;
  size_t nq = (size_t) bh * tq * hd, nk = (size_t) bh * cap * hd;
  double scale = 1.0 / sqrt (hd);
  g_autofree double *q = gpt_normal (nq, 2600 + tq, 1.0);
  g_autofree double *k = cache (bh, tk, cap, hd, 2601);
  g_autofree double *v = cache (bh, tk, cap, hd, 2602);
  g_autofree double *o = g_new (double, nq);
  g_autofree double *lse = g_new (double, (size_t) bh * tq);
  g_autofree char *what = g_strdup_printf ("attention_fwd B%d H%d tq%d tk%d cap%d hd%d pos%d",
                                           B, H, tq, tk, cap, hd, pos);
  float *d_q, *d_k, *d_v, *d_o, *d_lse;

  /* Keys that a static cache holds past the last position: masked. */
  for (int p = 0; p < bh; p++)
    for (int j = pos + tq; j < tk; j++)
      for (int d = 0; d < hd; d++)
        k[((size_t) p * cap + j) * hd + d] = 50.0;
  d_q = tach_ops_upload_d (be, q, nq);
  d_k = tach_ops_upload_d (be, k, nk);
  d_v = tach_ops_upload_d (be, v, nk);
  d_o = tach_ops_alloc (be, nq * sizeof (float));
  d_lse = tach_ops_alloc (be, (size_t) bh * tq * sizeof (float));
  tach_op (be, attention_fwd, d_q, d_k, d_v, d_o, d_lse, B, H, tq, tk, cap, hd, pos,
           (float) scale, TACH_ATTN_NO_DROPOUT);
  tach_ref_attention_fwd (q, k, v, o, lse, B, H, tq, tk, cap, hd, pos, scale, NULL);
  gpt_check (be, what, d_o, o, nq, TACH_OPS_NMSE_DEEP);
  gpt_check (be, "attention lse", d_lse, lse, (size_t) bh * tq, TACH_OPS_NMSE_DEEP);
  /* Without lse (nothing trains): the same output. */
  tach_op (be, attention_fwd, d_q, d_k, d_v, d_o, NULL, B, H, tq, tk, cap, hd, pos,
           (float) scale, TACH_ATTN_NO_DROPOUT);
  gpt_check (be, what, d_o, o, nq, TACH_OPS_NMSE_DEEP);
}

static void
test_attention_fwd (TachBackend *be)
{
  if (!gpt_has_transformer (be))
    return;
  attention_fwd_case (be, 2, 3, 37, 37, 37, 16, 0);    /* training */
  attention_fwd_case (be, 2, 2, 1, 45, 64, 32, 44);    /* dynamic cache: a decode step */
  attention_fwd_case (be, 1, 3, 1, 40, 40, 64, 17);    /* static cache: tk = cap, masked */
  attention_fwd_case (be, 1, 2, 5, 15, 24, 8, 10);     /* a chunk at pos 10 */
  attention_fwd_case (be, 1, 2, 130, 130, 130, 64, 0); /* several tiles of keys */
  attention_fwd_case (be, 1, 1, 1, 300, 320, 64, 299); /* a long decode */
  attention_fwd_case (be, 1, 2, 20, 50, 64, 40, 30);   /* tiles: a chunk at pos 30 */
  attention_fwd_case (be, 2, 1, 9, 40, 40, 24, 10);    /* tiles: a static cache's tail */
}

static void
test_attention_bwd (TachBackend *be)
{
  /* t = 150: three tiles of keys against blocks of query rows that do
   * not align with them, so that the CPU's backward trims rows and keys
   * in every way it can. */
  static const int shapes[][4] = { { 2, 3, 29, 16 }, { 1, 2, 70, 64 }, { 1, 1, 1, 8 },
                                   { 1, 2, 150, 64 } };

  if (!gpt_has_transformer (be))
    return;
  for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      int B = shapes[s][0], H = shapes[s][1], t = shapes[s][2], hd = shapes[s][3];
      size_t n = (size_t) B * H * t * hd;
      double scale = 1.0 / sqrt (hd);
      g_autofree double *q = gpt_normal (n, 2700, 1.0);
      g_autofree double *k = gpt_normal (n, 2701, 1.0);
      g_autofree double *v = gpt_normal (n, 2702, 1.0);
      g_autofree double *dout = gpt_normal (n, 2703, 1.0);
      g_autofree double *dq = g_new (double, n);
      g_autofree double *dk = g_new (double, n);
      g_autofree double *dv = g_new (double, n);
      g_autofree char *what = g_strdup_printf ("attention_bwd B%d H%d t%d hd%d", B, H, t, hd);
      float *d_q = tach_ops_upload_d (be, q, n), *d_k = tach_ops_upload_d (be, k, n);
      float *d_v = tach_ops_upload_d (be, v, n), *d_do = tach_ops_upload_d (be, dout, n);
      float *d_o = tach_ops_alloc (be, n * sizeof (float));
      float *d_lse = tach_ops_alloc (be, (size_t) B * H * t * sizeof (float));
      float *d_dq = tach_ops_alloc (be, n * sizeof (float));
      float *d_dk = tach_ops_alloc (be, n * sizeof (float));
      float *d_dv = tach_ops_alloc (be, n * sizeof (float));

      tach_op (be, attention_fwd, d_q, d_k, d_v, d_o, d_lse, B, H, t, t, t, hd, 0, (float) scale,
               TACH_ATTN_NO_DROPOUT);
      tach_op (be, attention_bwd, d_q, d_k, d_v, d_o, d_do, d_lse, d_dq, d_dk, d_dv, B, H, t, hd,
               (float) scale, TACH_ATTN_NO_DROPOUT);
      tach_ref_attention_bwd (q, k, v, dout, dq, dk, dv, B, H, t, hd, scale, NULL);
      g_test_message ("%s", what);
      gpt_check (be, "attention dq", d_dq, dq, n, TACH_OPS_NMSE_DEEP);
      gpt_check (be, "attention dk", d_dk, dk, n, TACH_OPS_NMSE_DEEP);
      gpt_check (be, "attention dv", d_dv, dv, n, TACH_OPS_NMSE_DEEP);
    }
}

/* The naive attention the model runs with attention=naive, from the
 * device's own ops: s = q k^T, p = causal softmax (scale s), o = p v; and
 * its backward.  @p is [bh, tq, tk]. */
static void
naive_fwd (TachBackend *be, const float *q, const float *k, const float *v, float *p, float *o,
           int bh, int tq, int tk, int cap, int hd, int pos, float scale)
{
  tach_op (be, gemm_strided_batched, FALSE, TRUE, tq, tk, hd, 1.0f, q, hd, (size_t) tq * hd, k,
           hd, (size_t) cap * hd, 0.0f, p, tk, (size_t) tq * tk, bh);
  tach_op (be, causal_softmax_fwd, p, bh, tq, tk, pos, scale);
  tach_op (be, gemm_strided_batched, FALSE, FALSE, tq, hd, tk, 1.0f, p, tk, (size_t) tq * tk, v,
           hd, (size_t) cap * hd, 0.0f, o, hd, (size_t) tq * hd, bh);
}

static void
test_attention_fused_naive (TachBackend *be)
{
  static const int shapes[][7] = {
    /* B, H, tq, tk, cap, hd, pos */
    { 2, 2, 33, 33, 33, 16, 0 }, { 1, 3, 1, 50, 64, 32, 49 }, { 1, 2, 6, 20, 32, 64, 14 },
  };

  if (!gpt_has_transformer (be))
    return;
  for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      int B = shapes[s][0], H = shapes[s][1], tq = shapes[s][2], tk = shapes[s][3];
      int cap = shapes[s][4], hd = shapes[s][5], pos = shapes[s][6], bh = B * H;
      size_t nq = (size_t) bh * tq * hd, nk = (size_t) bh * cap * hd, np = (size_t) bh * tq * tk;
      float scale = 1.0f / sqrtf ((float) hd);
      g_autofree double *q = gpt_normal (nq, 2800, 1.0);
      g_autofree double *k = gpt_normal (nk, 2801, 1.0);
      g_autofree double *v = gpt_normal (nk, 2802, 1.0);
      g_autofree double *dout = gpt_normal (nq, 2803, 1.0);
      g_autofree double *o_naive = NULL;
      g_autofree char *what = g_strdup_printf ("fused against naive attention, B%d H%d tq%d "
                                               "tk%d pos%d", B, H, tq, tk, pos);
      float *d_q = tach_ops_upload_d (be, q, nq), *d_k = tach_ops_upload_d (be, k, nk);
      float *d_v = tach_ops_upload_d (be, v, nk), *d_do = tach_ops_upload_d (be, dout, nq);
      float *d_p = tach_ops_alloc (be, np * sizeof (float));
      float *d_dp = tach_ops_alloc (be, np * sizeof (float));
      float *d_on = tach_ops_alloc (be, nq * sizeof (float));
      float *d_of = tach_ops_alloc (be, nq * sizeof (float));
      float *d_lse = tach_ops_alloc (be, (size_t) bh * tq * sizeof (float));
      float *d_grad[2][3];

      naive_fwd (be, d_q, d_k, d_v, d_p, d_on, bh, tq, tk, cap, hd, pos, scale);
      tach_op (be, attention_fwd, d_q, d_k, d_v, d_of, d_lse, B, H, tq, tk, cap, hd, pos, scale,
               TACH_ATTN_NO_DROPOUT);
      o_naive = tach_ops_download_d (be, d_on, nq);
      gpt_check (be, what, d_of, o_naive, nq, TACH_OPS_NMSE_DEEP);
      if (tq != tk || pos != 0)
        continue;

      /* Backward (training's shapes): dv = p^T do, dp = do v^T, ds, dq =
       * ds k, dk = ds^T q, against the fused op. */
      for (int w = 0; w < 2; w++)
        for (int g = 0; g < 3; g++)
          d_grad[w][g] = tach_ops_alloc (be, nq * sizeof (float));
      tach_op (be, gemm_strided_batched, TRUE, FALSE, tk, hd, tq, 1.0f, d_p, tk, np / bh, d_do, hd,
               nq / bh, 0.0f, d_grad[0][2], hd, nq / bh, bh);
      tach_op (be, gemm_strided_batched, FALSE, TRUE, tq, tk, hd, 1.0f, d_do, hd, nq / bh, d_v, hd,
               nk / bh, 0.0f, d_dp, tk, np / bh, bh);
      tach_op (be, causal_softmax_bwd, d_p, d_dp, d_dp, bh, tq, tk, scale);
      tach_op (be, gemm_strided_batched, FALSE, FALSE, tq, hd, tk, 1.0f, d_dp, tk, np / bh, d_k,
               hd, nk / bh, 0.0f, d_grad[0][0], hd, nq / bh, bh);
      tach_op (be, gemm_strided_batched, TRUE, FALSE, tk, hd, tq, 1.0f, d_dp, tk, np / bh, d_q,
               hd, nq / bh, 0.0f, d_grad[0][1], hd, nq / bh, bh);
      tach_op (be, attention_bwd, d_q, d_k, d_v, d_of, d_do, d_lse, d_grad[1][0], d_grad[1][1],
               d_grad[1][2], B, H, tq, hd, scale, TACH_ATTN_NO_DROPOUT);
      for (int g = 0; g < 3; g++)
        {
          g_autofree double *naive = tach_ops_download_d (be, d_grad[0][g], nq);

          gpt_check (be, g == 0 ? "fused against naive dq"
                         : g == 1 ? "fused against naive dk" : "fused against naive dv",
                     d_grad[1][g], naive, nq, TACH_OPS_NMSE_DEEP);
        }
    }
}

/* Causal consistency: the last row of a prefill over T positions is a
 * decode step at pos T - 1 over a cache of T keys (longer storage). */
static void
test_attention_decode_matches_prefill (TachBackend *be)
{
  enum { H = 2, T = 23, CAP = 32, HD = 16 };
  float scale = 0.25f;
  g_autofree double *q = gpt_normal ((size_t) H * T * HD, 2900, 1.0);
  g_autofree double *kv = gpt_normal ((size_t) H * T * HD, 2901, 1.0);
  g_autofree double *cache_kv = g_new0 (double, (size_t) H * CAP * HD);
  g_autofree double *q_last = g_new (double, (size_t) H * HD);
  g_autofree double *o_full = NULL;
  float *d_q, *d_kv, *d_cache, *d_q_last, *d_o_full, *d_o_last;

  if (!gpt_has_transformer (be))
    return;
  for (int h = 0; h < H; h++)
    {
      memcpy (cache_kv + (size_t) h * CAP * HD, kv + (size_t) h * T * HD,
              sizeof (double) * T * HD);
      memcpy (q_last + (size_t) h * HD, q + ((size_t) h * T + T - 1) * HD, sizeof (double) * HD);
    }
  d_q = tach_ops_upload_d (be, q, (size_t) H * T * HD);
  d_kv = tach_ops_upload_d (be, kv, (size_t) H * T * HD);
  d_cache = tach_ops_upload_d (be, cache_kv, (size_t) H * CAP * HD);
  d_q_last = tach_ops_upload_d (be, q_last, (size_t) H * HD);
  d_o_full = tach_ops_alloc (be, sizeof (float) * H * T * HD);
  d_o_last = tach_ops_alloc (be, sizeof (float) * H * HD);
  tach_op (be, attention_fwd, d_q, d_kv, d_kv, d_o_full, NULL, 1, H, T, T, T, HD, 0, scale,
           TACH_ATTN_NO_DROPOUT);
  tach_op (be, attention_fwd, d_q_last, d_cache, d_cache, d_o_last, NULL, 1, H, 1, T, CAP, HD,
           T - 1, scale, TACH_ATTN_NO_DROPOUT);
  o_full = tach_ops_download_d (be, d_o_full, (size_t) H * T * HD);
  for (int h = 0; h < H; h++)
    memmove (o_full + (size_t) h * HD, o_full + ((size_t) h * T + T - 1) * HD,
             sizeof (double) * HD);
  gpt_check (be, "decode step against prefill's last row", d_o_last, o_full, (size_t) H * HD,
         TACH_OPS_NMSE_DEEP);
}

/* ------------------------------------------------- embedding's gradient */

static void
test_embedding_bwd (TachBackend *be)
{
  enum { V = 11, D = 70, N = 40 };
  g_autofree double *table = gpt_normal (V * D, 3000, 1.0);
  g_autofree double *dout = gpt_normal (N * D, 3001, 1.0);
  int32_t idx[N];
  int32_t bad[2] = { 3, -1 };
  g_autoptr(GError) error = NULL;
  float *d_table, *d_dout;
  int32_t *d_idx, *d_bad;

  if (!gpt_has_transformer (be))
    return;
  /* Repeated tokens accumulate, onto what the table's gradient holds
   * (a tied LM head's). */
  for (int i = 0; i < N; i++)
    idx[i] = (i * 7) % V;
  d_table = tach_ops_upload_d (be, table, V * D);
  d_dout = tach_ops_upload_d (be, dout, N * D);
  d_idx = tach_ops_upload_i (be, idx, N);
  tach_op (be, embedding_bwd, d_dout, d_idx, d_table, N, D);
  tach_ref_embedding_bwd (dout, idx, table, N, D);
  gpt_check (be, "embedding_bwd", d_table, table, V * D, TACH_OPS_NMSE_SIMPLE);

  /* A negative token is the data's error on the CPU, as the embedding's
   * (a CUDA kernel cannot stop the stream: it skips the row). */
  if (g_str_has_prefix (be->device->id, "cuda"))
    return;
  d_bad = tach_ops_upload_i (be, bad, 2);
  tach_op (be, embedding_bwd, d_dout, d_bad, d_table, 2, D);
  tach_backend_synchronize (be);
  g_assert_false (tach_backend_take_error (be, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
}

/* ------------------------------------------------------- thread counts */

/* The ops whose work is split between threads, on a backend of two
 * threads that runs them on @adapt of them (TACH_CPU_THREADS_ADAPT):
 * their outputs, one after the other. */
static float *
run_split_ops (const char *device_id, const char *adapt, size_t *n_out)
{
  enum { B = 2, H = 3, T = 70, HD = 32, N = B * H * T * HD, NS = B * H * T * T };
  enum { ROWS = 200, DIM = 96, NR = ROWS * DIM };
  /* Outputs: o, dq, dk, dv, a decode step's o, the scores, dx, dgamma and dbeta. */
  const size_t sizes[] = { N, N, N, N, B * H * HD, NS, NR, 2 * DIM };
  g_autoptr(GError) error = NULL;
  g_autofree float *x = NULL;
  g_autofree float *rows = NULL;
  float *out, *d_in, *d_rows, *d_lse, *d_mean, *d_out[G_N_ELEMENTS (sizes)];
  size_t total = 0;
  TachBackend *be;

  g_setenv ("TACH_CPU_THREADS_ADAPT", adapt, TRUE);
  be = tach_backend_new (device_id, 2, TACH_PRECISION_FP32, &error);
  g_unsetenv ("TACH_CPU_THREADS_ADAPT");
  g_assert_no_error (error);
  {
    g_autofree double *xd = gpt_normal (N, 3500, 1.0);

    g_autofree double *rd = gpt_normal (NR + 2 * DIM, 3501, 1.0);

    x = tach_ref_to_float (xd, N);
    rows = tach_ref_to_float (rd, NR + 2 * DIM);
  }
  /* q = k = v = dO: one input. */
  d_in = tach_backend_alloc (be, N * sizeof (float));
  tach_backend_upload (be, d_in, x, N * sizeof (float));
  d_rows = tach_backend_alloc (be, (NR + 2 * DIM) * sizeof (float));
  tach_backend_upload (be, d_rows, rows, (NR + 2 * DIM) * sizeof (float));
  d_lse = tach_backend_alloc (be, B * H * T * sizeof (float));
  d_mean = tach_backend_alloc (be, 2 * ROWS * sizeof (float));
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      d_out[i] = tach_backend_alloc (be, sizes[i] * sizeof (float));
      total += sizes[i];
    }
  tach_op (be, attention_fwd, d_in, d_in, d_in, d_out[0], d_lse, B, H, T, T, T, HD, 0, 0.2f,
           TACH_ATTN_NO_DROPOUT);
  tach_op (be, attention_bwd, d_in, d_in, d_in, d_out[0], d_in, d_lse, d_out[1], d_out[2],
           d_out[3], B, H, T, HD, 0.2f, TACH_ATTN_NO_DROPOUT);
  tach_op (be, attention_fwd, d_in, d_in, d_in, d_out[4], NULL, B, H, 1, T, T, HD, T - 1, 0.2f,
           TACH_ATTN_NO_DROPOUT);
  tach_op (be, gemm_strided_batched, FALSE, TRUE, T, T, HD, 1.0f, d_in, HD, (size_t) T * HD,
           d_in, HD, (size_t) T * HD, 0.0f, d_out[5], T, (size_t) T * T, B * H);
  /* LayerNorm over NR floats, gamma and beta the next ones. */
  tach_op (be, layernorm_fwd, d_rows, NULL, NULL, d_rows + NR, d_rows + NR + DIM, d_out[6],
           d_mean, d_mean + ROWS, ROWS, DIM);
  tach_op (be, layernorm_bwd, d_rows, d_rows + NR, d_mean, d_mean + ROWS, d_out[6], NULL,
           d_out[6], d_out[7], d_out[7] + DIM, ROWS, DIM);
  out = g_new (float, total);
  total = 0;
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      tach_backend_download (be, out + total, d_out[i], sizes[i] * sizeof (float));
      total += sizes[i];
      tach_backend_dealloc (be, d_out[i]);
    }
  tach_ops_assert_ok (be);
  tach_backend_dealloc (be, d_in);
  tach_backend_dealloc (be, d_rows);
  tach_backend_dealloc (be, d_lse);
  tach_backend_dealloc (be, d_mean);
  tach_backend_free (be);
  *n_out = total;
  return out;
}

/* Which threads run a part changes no result: the same bits on one of a
 * backend's two threads as on both. */
static void
test_thread_counts (TachBackend *be)
{
  size_t n1, n2;
  g_autofree float *one = NULL;
  g_autofree float *both = NULL;

  if (!gpt_has_transformer (be))
    return;
  one = run_split_ops (be->device->id, "1", &n1);
  both = run_split_ops (be->device->id, "never", &n2);
  g_assert_cmpuint (n1, ==, n2);
  g_assert_cmpmem (one, n1 * sizeof (float), both, n2 * sizeof (float));
}

/* ------------------------------------------------------ position offset */

/* Each position-taking op with pos = 0 and the position P in device memory
 * (TachBackend.pos_offset), against the same op with pos = P: bit for bit,
 * as a replayed graph's decode step must see.  The offset is changed
 * between two ops that read it, on the stream: each sees its own. */
static void
test_pos_offset (TachBackend *be)
{
  enum { B = 2, H = 2, HD = 8, C = H * HD, CAP = 12, P = 7, P2 = 9 };
  size_t nx = (size_t) B * 3 * C, nk = (size_t) B * H * CAP * HD, nq = (size_t) B * H * HD;
  size_t ns = (size_t) B * H * CAP;
  g_autofree double *x = gpt_normal (nx, 2900, 1.0), *k = gpt_normal (nk, 2901, 1.0);
  g_autofree double *v = gpt_normal (nk, 2902, 1.0), *s = gpt_normal (ns, 2903, 2.0);
  float *d_x, *d_q, *d_k[2], *d_v, *d_s[2], *d_o[2], *d_back[2];
  int32_t *d_pos;
  const int32_t at[2] = { P, P2 };

  if (!gpt_has_transformer (be))
    return;
  d_x = tach_ops_upload_d (be, x, nx);
  d_q = tach_ops_upload_d (be, x, nq);
  d_v = tach_ops_upload_d (be, v, nk);
  d_pos = tach_ops_alloc (be, sizeof (int32_t));
  for (int i = 0; i < 2; i++)
    {
      d_k[i] = tach_ops_upload_d (be, k, nk);
      d_s[i] = tach_ops_upload_d (be, s, ns);
      d_o[i] = tach_ops_alloc (be, nq * sizeof (float));
      d_back[i] = tach_ops_alloc (be, nx * sizeof (float));
      tach_backend_zero (be, d_back[i], nx * sizeof (float));
    }
  for (int r = 0; r < 2; r++)
    {
      /* i = 0: the host's position; 1: the device's. */
      for (int i = 0; i < 2; i++)
        {
          int pos = i == 0 ? at[r] : 0;

          if (i == 1)
            tach_backend_upload (be, d_pos, &at[r], sizeof (int32_t));
          be->pos_offset = i == 1 ? d_pos : NULL;
          tach_op (be, heads_split, d_x + C, 3 * C, d_k[i], B, 1, H, HD, CAP, pos);
          tach_op (be, heads_merge, d_k[i], d_back[i] + 2 * C, 3 * C, B, 1, H, HD, CAP, pos);
          tach_op (be, causal_softmax_fwd, d_s[i], B * H, 1, CAP, pos, 0.5f);
          tach_op (be, attention_fwd, d_q, d_k[i], d_v, d_o[i], NULL, B, H, 1, CAP, CAP, HD, pos,
                   0.25f, TACH_ATTN_NO_DROPOUT);
          be->pos_offset = NULL;
        }
      {
        const float *pairs[][2] = { { d_k[0], d_k[1] }, { d_back[0], d_back[1] },
                                    { d_s[0], d_s[1] }, { d_o[0], d_o[1] } };
        const size_t sizes[] = { nk, nx, ns, nq };

        for (guint j = 0; j < G_N_ELEMENTS (sizes); j++)
          {
            g_autofree float *host = tach_ops_download_f (be, pairs[j][0], sizes[j]);
            g_autofree float *dev = tach_ops_download_f (be, pairs[j][1], sizes[j]);

            g_assert_cmpmem (host, sizes[j] * sizeof (float), dev, sizes[j] * sizeof (float));
          }
      }
    }
}

void
tach_ops_register_gpt (const char *device_id)
{
  if (device_id == NULL)
    {
      tach_ops_register_gpt_ref ();
      return;
    }
  tach_ops_add (device_id, "gpt/gemm-strided-batched", test_gemm_strided_batched);
  tach_ops_add (device_id, "gpt/add-scale", test_add_scale);
  tach_ops_add (device_id, "gpt/layernorm", test_layernorm);
  tach_ops_add (device_id, "gpt/gelu", test_gelu);
  tach_ops_add (device_id, "gpt/heads", test_heads);
  tach_ops_add (device_id, "gpt/causal-softmax", test_causal_softmax);
  tach_ops_add (device_id, "gpt/attention/forward", test_attention_fwd);
  tach_ops_add (device_id, "gpt/attention/backward", test_attention_bwd);
  tach_ops_add (device_id, "gpt/attention/fused-naive", test_attention_fused_naive);
  tach_ops_add (device_id, "gpt/attention/decode-prefill", test_attention_decode_matches_prefill);
  tach_ops_add (device_id, "gpt/embedding-backward", test_embedding_bwd);
  tach_ops_add (device_id, "gpt/position-offset", test_pos_offset);
  tach_ops_register_gpt_dropout (device_id);
  if (g_strcmp0 (device_id, "cpu") == 0)
    tach_ops_add (device_id, "gpt/thread-counts", test_thread_counts);
}
