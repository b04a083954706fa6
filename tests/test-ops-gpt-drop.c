/* test-ops-gpt-drop.c: the fused attention's dropout on its probabilities
 * (part of test-ops, every device): attention_fwd and attention_bwd with
 * a TachAttnDropout against the double reference (whose backward
 * test-ops-gpt-ref.c checks by central differences) and against the naive
 * attention's ops, dropout_fwd over the probabilities, which must drop
 * the same ones; and the mask's rate. */
#include <math.h>
#include <string.h>

#include "test-ops-common.h"

#define DROP_P 0.2f

/* The shapes: the tiled kernels' tiles of keys and blocks of rows both
 * crossed (70 > 64 keys, 48 rows), a head of few rows. */
static const int drop_shapes[][4] = { { 2, 2, 70, 16 }, { 1, 3, 5, 8 } };

/* The probabilities of the naive attention (q k^T, the causal softmax)
 * into @p [bh, t, t], and P' (@p dropped as the model drops it) into
 * @kept. */
static void
naive_probs (TachBackend *be, const float *q, const float *k, float *p, float *kept, int bh,
             int t, int hd, float scale, const TachAttnDropout *drop)
{
  size_t per = (size_t) t * hd, sq = (size_t) t * t;

  tach_op (be, gemm_strided_batched, FALSE, TRUE, t, t, hd, 1.0f, q, hd, per, k, hd, per, 0.0f,
           p, t, sq, bh);
  tach_op (be, causal_softmax_fwd, p, bh, t, t, 0, scale);
  tach_op (be, dropout_fwd, p, kept, (size_t) bh * sq, drop->p, drop->seed, drop->counter,
           drop->first);
}

static void
test_attention_dropout (TachBackend *be)
{
  if (!gpt_has_transformer (be))
    return;
  for (guint s = 0; s < G_N_ELEMENTS (drop_shapes); s++)
    {
      int B = drop_shapes[s][0], H = drop_shapes[s][1], t = drop_shapes[s][2];
      int hd = drop_shapes[s][3], bh = B * H;
      size_t n = (size_t) bh * t * hd, sq = (size_t) t * t, per = (size_t) t * hd;
      float scale = 1.0f / sqrtf ((float) hd);
      /* Where a rank's or micro-batch's mask would start: not 0. */
      TachAttnDropout drop = { DROP_P, 31, 7, 1000 };
      g_autofree double *q = gpt_normal (n, 4100, 1.0), *k = gpt_normal (n, 4101, 1.0);
      g_autofree double *v = gpt_normal (n, 4102, 1.0), *dout = gpt_normal (n, 4103, 1.0);
      g_autofree double *o = g_new (double, n), *lse = g_new (double, (size_t) bh * t);
      g_autofree double *dq = g_new (double, n), *dk = g_new (double, n);
      g_autofree double *dv = g_new (double, n);
      double *grad[3] = { dq, dk, dv };
      g_autofree double *o_nodrop = NULL, *o_naive = NULL;
      g_autofree char *what = g_strdup_printf ("attention with dropout B%d H%d t%d hd%d", B, H, t,
                                               hd);
      float *d_q = tach_ops_upload_d (be, q, n), *d_k = tach_ops_upload_d (be, k, n);
      float *d_v = tach_ops_upload_d (be, v, n), *d_do = tach_ops_upload_d (be, dout, n);
      float *d_o = tach_ops_alloc (be, n * sizeof (float));
      float *d_on = tach_ops_alloc (be, n * sizeof (float));
      float *d_lse = tach_ops_alloc (be, (size_t) bh * t * sizeof (float));
      float *d_p = tach_ops_alloc (be, bh * sq * sizeof (float));
      float *d_kept = tach_ops_alloc (be, bh * sq * sizeof (float));
      float *d_g[2][3];

      for (int w = 0; w < 2; w++)
        for (int g = 0; g < 3; g++)
          d_g[w][g] = tach_ops_alloc (be, n * sizeof (float));

      /* Forward: the reference's, the naive ops', and not the undropped. */
      tach_op (be, attention_fwd, d_q, d_k, d_v, d_o, d_lse, B, H, t, t, t, hd, 0, scale, drop);
      tach_ref_attention_fwd (q, k, v, o, lse, B, H, t, t, t, hd, 0, scale, &drop);
      gpt_check (be, what, d_o, o, n, TACH_OPS_NMSE_DEEP);
      gpt_check (be, "the dropped attention's lse is the softmax's", d_lse, lse,
                 (size_t) bh * t, TACH_OPS_NMSE_DEEP);
      naive_probs (be, d_q, d_k, d_p, d_kept, bh, t, hd, scale, &drop);
      tach_op (be, gemm_strided_batched, FALSE, FALSE, t, hd, t, 1.0f, d_kept, t, sq, d_v, hd,
               per, 0.0f, d_on, hd, per, bh);
      o_naive = tach_ops_download_d (be, d_on, n);
      gpt_check (be, "fused against naive attention, both dropped", d_o, o_naive, n,
                 TACH_OPS_NMSE_DEEP);
      tach_op (be, attention_fwd, d_q, d_k, d_v, d_on, NULL, B, H, t, t, t, hd, 0, scale,
               TACH_ATTN_NO_DROPOUT);
      o_nodrop = tach_ops_download_d (be, d_on, n);
      {
        g_autofree float *got = tach_ops_download_f (be, d_o, n);
        double diff = 0.0, norm = 0.0;

        for (size_t i = 0; i < n; i++)
          {
            diff += (got[i] - o_nodrop[i]) * (got[i] - o_nodrop[i]);
            norm += o_nodrop[i] * o_nodrop[i];
          }
        /* A fifth of the probabilities gone: far from the undropped. */
        g_assert_cmpfloat (diff / norm, >, 1e-2);
      }

      /* Backward: the reference's, and the naive ops' (dv = P'^T dO; dP'
       * = dO V^T through the mask; the softmax's backward against the
       * undropped P). */
      tach_op (be, attention_bwd, d_q, d_k, d_v, d_o, d_do, d_lse, d_g[0][0], d_g[0][1],
               d_g[0][2], B, H, t, hd, scale, drop);
      tach_ref_attention_bwd (q, k, v, dout, grad[0], grad[1], grad[2], B, H, t, hd, scale,
                              &drop);
      tach_op (be, gemm_strided_batched, TRUE, FALSE, t, hd, t, 1.0f, d_kept, t, sq, d_do, hd,
               per, 0.0f, d_g[1][2], hd, per, bh);
      tach_op (be, gemm_strided_batched, FALSE, TRUE, t, t, hd, 1.0f, d_do, hd, per, d_v, hd, per,
               0.0f, d_kept, t, sq, bh);
      tach_op (be, dropout_bwd, d_kept, d_kept, (size_t) bh * sq, drop.p, drop.seed,
               drop.counter, drop.first);
      tach_op (be, causal_softmax_bwd, d_p, d_kept, d_kept, bh, t, t, scale);
      tach_op (be, gemm_strided_batched, FALSE, FALSE, t, hd, t, 1.0f, d_kept, t, sq, d_k, hd,
               per, 0.0f, d_g[1][0], hd, per, bh);
      tach_op (be, gemm_strided_batched, TRUE, FALSE, t, hd, t, 1.0f, d_kept, t, sq, d_q, hd, per,
               0.0f, d_g[1][1], hd, per, bh);
      for (int g = 0; g < 3; g++)
        {
          g_autofree double *naive = tach_ops_download_d (be, d_g[1][g], n);
          const char *name = g == 0 ? "dq" : g == 1 ? "dk" : "dv";
          g_autofree char *ref = g_strdup_printf ("%s: %s against the reference", what, name);
          g_autofree char *ops = g_strdup_printf ("%s: %s against the naive ops", what, name);

          gpt_check (be, ref, d_g[0][g], grad[g], n, TACH_OPS_NMSE_DEEP);
          gpt_check (be, ops, d_g[0][g], naive, n, TACH_OPS_NMSE_DEEP);
        }
    }
}

/* The mask's rate: with V the identity (hd = t), o's row i is row i of
 * P', whose dropped probabilities are exactly 0 and kept ones P / (1-p):
 * about a fifth of the 2 x 2 x 40 x 41 / 2 visible ones dropped. */
static void
test_attention_dropout_rate (TachBackend *be)
{
  enum { B = 2, H = 2, T = 40 };
  size_t n = (size_t) B * H * T * T;
  TachAttnDropout drop = { DROP_P, 5, 3, 0 };
  g_autofree double *q = gpt_normal (n, 4200, 1.0), *k = gpt_normal (n, 4201, 1.0);
  g_autofree double *v = g_new0 (double, n), *p = g_new (double, n);
  g_autofree float *o = NULL;
  float *d_o;
  guint visible = 0, dropped = 0;
  double rate, worst = 0.0;

  if (!gpt_has_transformer (be))
    return;
  for (size_t h = 0; h < (size_t) B * H; h++)
    for (size_t e = h * T * T; e < (h + 1) * T * T; e += T + 1)
      v[e] = 1.0;
  d_o = tach_ops_alloc (be, n * sizeof (float));
  tach_op (be, attention_fwd, tach_ops_upload_d (be, q, n), tach_ops_upload_d (be, k, n),
           tach_ops_upload_d (be, v, n), d_o, NULL, B, H, T, T, T, T, 0, 0.5f, drop);
  o = tach_ops_download_f (be, d_o, n);
  /* The undropped probabilities, the reference's (V the identity). */
  tach_ref_attention_fwd (q, k, v, p, NULL, B, H, T, T, T, T, 0, 0.5, NULL);
  for (int h = 0; h < B * H; h++)
    for (int i = 0; i < T; i++)
      for (int j = 0; j <= i; j++)
        {
          size_t e = ((size_t) h * T + i) * T + j;

          visible++;
          if (o[e] == 0.0f)
            dropped++;
          else
            worst = MAX (worst, fabs (o[e] - p[e] / (1.0 - DROP_P)) / (p[e] / (1.0 - DROP_P)));
        }
  rate = (double) dropped / visible;
  g_test_message ("%s: %u of %u probabilities dropped (%.3f), kept ones within %.2g of P/(1-p)",
                  be->device->id, dropped, visible, rate, worst);
  /* 3280 draws at 0.2: a standard deviation of 0.007, so 5 of them. */
  g_assert_cmpfloat (fabs (rate - DROP_P), <, 0.035);
  g_assert_cmpfloat (worst, <, 1e-3);
}

void
tach_ops_register_gpt_dropout (const char *device_id)
{
  tach_ops_add (device_id, "gpt/attention/dropout", test_attention_dropout);
  tach_ops_add (device_id, "gpt/attention/dropout-rate", test_attention_dropout_rate);
}
