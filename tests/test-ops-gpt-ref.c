/* test-ops-gpt-ref.c: the Transformer reference's backward passes
 * (tach-ref-gpt.c) against central differences of its forward passes,
 * so that the reference can hold the backends (test-ops-gpt.c). */
#include <math.h>
#include <string.h>

#include "test-ops-common.h"

static double *
normal (size_t n, guint64 seed, double scale)
{
  double *x = g_new (double, MAX (n, 1));

  tach_ref_fill_normal (x, n, seed, 1, scale);
  return x;
}

typedef struct {
  int rows, dim;
  double *x, *gamma, *beta, *w;
} LnData;

static double
ln_loss (gpointer data)
{
  LnData *d = data;
  size_t n = (size_t) d->rows * d->dim;
  g_autofree double *y = g_new (double, n);
  double loss = 0.0;

  tach_ref_layernorm_fwd (d->x, NULL, NULL, d->gamma, d->beta, y, NULL, NULL, d->rows, d->dim);
  for (size_t i = 0; i < n; i++)
    loss += d->w[i] * y[i];
  return loss;
}

static void
test_ref_layernorm_gradient (void)
{
  enum { R = 3, D = 9 };
  g_autofree double *x = normal (R * D, 3100, 1.0);
  g_autofree double *gamma = normal (D, 3101, 1.0);
  g_autofree double *beta = normal (D, 3102, 1.0);
  g_autofree double *w = normal (R * D, 3103, 1.0);
  double dx[R * D], dgamma[D], dbeta[D];
  LnData d = { R, D, x, gamma, beta, w };

  tach_ref_layernorm_bwd (x, gamma, w, NULL, dx, dgamma, dbeta, R, D);
  g_assert_cmpfloat (tach_ops_fd_error (ln_loss, &d, x, R * D, dx, 1e-5), <, 1e-6);
  g_assert_cmpfloat (tach_ops_fd_error (ln_loss, &d, gamma, D, dgamma, 1e-5), <, 1e-6);
  g_assert_cmpfloat (tach_ops_fd_error (ln_loss, &d, beta, D, dbeta, 1e-5), <, 1e-6);
}

typedef struct {
  size_t n;
  double *x, *w;
} GeluData;

static double
gelu_loss (gpointer data)
{
  GeluData *d = data;
  g_autofree double *y = g_new (double, d->n);
  double loss = 0.0;

  tach_ref_gelu_fwd (d->x, y, d->n);
  for (size_t i = 0; i < d->n; i++)
    loss += d->w[i] * y[i];
  return loss;
}

static void
test_ref_gelu_gradient (void)
{
  enum { N = 41 };
  g_autofree double *x = normal (N, 3200, 2.5);
  g_autofree double *w = normal (N, 3201, 1.0);
  double dx[N];
  GeluData d = { N, x, w };

  tach_ref_gelu_bwd (x, w, dx, N);
  g_assert_cmpfloat (tach_ops_fd_error (gelu_loss, &d, x, N, dx, 1e-6), <, 1e-6);
}

typedef struct {
  int bh, tq, tk, pos;
  double scale;
  double *s, *w;
} SoftmaxData;

static double
softmax_loss (gpointer data)
{
  SoftmaxData *d = data;
  size_t n = (size_t) d->bh * d->tq * d->tk;
  g_autofree double *p = g_memdup2 (d->s, n * sizeof (double));
  double loss = 0.0;

  tach_ref_causal_softmax_fwd (p, d->bh, d->tq, d->tk, d->pos, d->scale);
  for (size_t i = 0; i < n; i++)
    loss += d->w[i] * p[i];
  return loss;
}

static void
test_ref_softmax_gradient (void)
{
  enum { BH = 2, TQ = 3, TK = 7, POS = 2, N = BH * TQ * TK };
  g_autofree double *s = normal (N, 3300, 2.0);
  g_autofree double *w = normal (N, 3301, 1.0);
  double p[N], ds[N];
  SoftmaxData d = { BH, TQ, TK, POS, 0.7, s, w };

  memcpy (p, s, sizeof p);
  tach_ref_causal_softmax_fwd (p, BH, TQ, TK, POS, 0.7);
  tach_ref_causal_softmax_bwd (p, w, ds, BH, TQ, TK, 0.7);
  g_assert_cmpfloat (tach_ops_fd_error (softmax_loss, &d, s, N, ds, 1e-6), <, 1e-6);
}

typedef struct {
  int B, H, t, hd;
  double scale;
  double *q, *k, *v, *w;
  const TachAttnDropout *drop;
} AttnData;

static double
attn_loss (gpointer data)
{
  AttnData *d = data;
  size_t n = (size_t) d->B * d->H * d->t * d->hd;
  g_autofree double *o = g_new (double, n);
  double loss = 0.0;

  tach_ref_attention_fwd (d->q, d->k, d->v, o, NULL, d->B, d->H, d->t, d->t, d->t, d->hd, 0,
                          d->scale, d->drop);
  for (size_t i = 0; i < n; i++)
    loss += d->w[i] * o[i];
  return loss;
}

static void
test_ref_attention_gradient (void)
{
  enum { B = 2, H = 2, T = 5, HD = 3, N = B * H * T * HD };
  g_autofree double *q = normal (N, 3400, 1.0);
  g_autofree double *k = normal (N, 3401, 1.0);
  g_autofree double *v = normal (N, 3402, 1.0);
  g_autofree double *w = normal (N, 3403, 1.0);
  double dq[N], dk[N], dv[N];
  /* Without dropout, and with a third of the probabilities dropped (the
   * mask is fixed by its counters: the loss stays differentiable). */
  TachAttnDropout drop = { 0.3f, 17, 5, 40 };
  const TachAttnDropout *drops[] = { NULL, &drop };

  for (guint i = 0; i < G_N_ELEMENTS (drops); i++)
    {
      AttnData d = { B, H, T, HD, 0.6, q, k, v, w, drops[i] };

      tach_ref_attention_bwd (q, k, v, w, dq, dk, dv, B, H, T, HD, 0.6, drops[i]);
      g_assert_cmpfloat (tach_ops_fd_error (attn_loss, &d, q, N, dq, 1e-6), <, 1e-6);
      g_assert_cmpfloat (tach_ops_fd_error (attn_loss, &d, k, N, dk, 1e-6), <, 1e-6);
      g_assert_cmpfloat (tach_ops_fd_error (attn_loss, &d, v, N, dv, 1e-6), <, 1e-6);
    }
}

void
tach_ops_register_gpt_ref (void)
{
  tach_ops_add_ref ("gpt/layernorm/gradient", test_ref_layernorm_gradient);
  tach_ops_add_ref ("gpt/gelu/gradient", test_ref_gelu_gradient);
  tach_ops_add_ref ("gpt/causal-softmax/gradient", test_ref_softmax_gradient);
  tach_ops_add_ref ("gpt/attention/gradient", test_ref_attention_gradient);
}
