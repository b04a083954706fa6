/* tach-ref-gpt.c: the double-precision reference of the Transformer ops
 * (tach-ref.h), as naive as tach-ref.c's: the attention materialises its
 * [Tq, Tk] scores, and every backward pass is written from the chain rule
 * of its forward, so that the finite-difference checks (/ref/gpt/...)
 * hold it and it holds the backends.
 */
#include <math.h>
#include <string.h>

#include "tach-ref.h"

void
tach_ref_gemm_strided_batched (gboolean ta, gboolean tb, int m, int n, int k, double alpha,
                               const double *a, int lda, size_t stride_a, const double *b,
                               int ldb, size_t stride_b, double beta, double *c, int ldc,
                               size_t stride_c, int batch)
{
  for (int i = 0; i < batch; i++)
    tach_ref_gemm (ta, tb, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta,
                   c + i * stride_c, ldc);
}

void
tach_ref_layernorm_fwd (const double *x, const double *res, double *sum, const double *gamma,
                        const double *beta, double *y, double *mean, double *rstd, int rows,
                        int dim)
{
  for (int r = 0; r < rows; r++)
    {
      const double *xr = x + (size_t) r * dim;
      double *s = sum != NULL ? sum + (size_t) r * dim : NULL;
      double mu = 0.0, var = 0.0, rs;
      g_autofree double *v = g_new (double, dim);

      for (int j = 0; j < dim; j++)
        v[j] = xr[j] + (res != NULL ? res[(size_t) r * dim + j] : 0.0);
      for (int j = 0; j < dim; j++)
        mu += v[j];
      mu /= dim;
      for (int j = 0; j < dim; j++)
        var += (v[j] - mu) * (v[j] - mu);
      var /= dim;
      rs = 1.0 / sqrt (var + 1e-5);
      for (int j = 0; j < dim; j++)
        {
          if (s != NULL)
            s[j] = v[j];
          y[(size_t) r * dim + j] = (v[j] - mu) * rs * gamma[j] + beta[j];
        }
      if (mean != NULL)
        mean[r] = mu;
      if (rstd != NULL)
        rstd[r] = rs;
    }
}

void
tach_ref_layernorm_bwd (const double *x, const double *gamma, const double *dy,
                        const double *dres, double *dx, double *dgamma, double *dbeta,
                        int rows, int dim)
{
  memset (dgamma, 0, sizeof (double) * dim);
  memset (dbeta, 0, sizeof (double) * dim);
  for (int r = 0; r < rows; r++)
    {
      const double *xr = x + (size_t) r * dim, *dyr = dy + (size_t) r * dim;
      double mu = 0.0, var = 0.0, rs, a = 0.0, b = 0.0;

      for (int j = 0; j < dim; j++)
        mu += xr[j];
      mu /= dim;
      for (int j = 0; j < dim; j++)
        var += (xr[j] - mu) * (xr[j] - mu);
      rs = 1.0 / sqrt (var / dim + 1e-5);
      for (int j = 0; j < dim; j++)
        {
          double xhat = (xr[j] - mu) * rs;

          a += dyr[j] * gamma[j];
          b += dyr[j] * gamma[j] * xhat;
          dgamma[j] += dyr[j] * xhat;
          dbeta[j] += dyr[j];
        }
      for (int j = 0; j < dim; j++)
        {
          double xhat = (xr[j] - mu) * rs;

          dx[(size_t) r * dim + j] = rs * (dyr[j] * gamma[j] - a / dim - xhat * b / dim)
                                     + (dres != NULL ? dres[(size_t) r * dim + j] : 0.0);
        }
    }
}

static double
gelu_u (double x)
{
  return sqrt (2.0 / G_PI) * (x + 0.044715 * x * x * x);
}

void
tach_ref_gelu_fwd (const double *x, double *y, size_t n)
{
  for (size_t i = 0; i < n; i++)
    y[i] = 0.5 * x[i] * (1.0 + tanh (gelu_u (x[i])));
}

void
tach_ref_gelu_bwd (const double *x, const double *dy, double *dx, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      double t = tanh (gelu_u (x[i]));
      double du = sqrt (2.0 / G_PI) * (1.0 + 3.0 * 0.044715 * x[i] * x[i]);

      dx[i] = dy[i] * (0.5 * (1.0 + t) + 0.5 * x[i] * (1.0 - t * t) * du);
    }
}

void
tach_ref_heads_split (const double *x, int ldx, double *y, int B, int T, int H, int hd, int cap,
                      int pos)
{
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++)
      for (int h = 0; h < H; h++)
        for (int d = 0; d < hd; d++)
          y[(((size_t) b * H + h) * cap + pos + t) * hd + d]
            = x[((size_t) b * T + t) * ldx + (size_t) h * hd + d];
}

void
tach_ref_heads_merge (const double *y, double *x, int ldx, int B, int T, int H, int hd, int cap,
                      int pos)
{
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++)
      for (int h = 0; h < H; h++)
        for (int d = 0; d < hd; d++)
          x[((size_t) b * T + t) * ldx + (size_t) h * hd + d]
            = y[(((size_t) b * H + h) * cap + pos + t) * hd + d];
}

void
tach_ref_causal_softmax_fwd (double *s, int bh, int tq, int tk, int pos, double scale)
{
  for (int r = 0; r < bh * tq; r++)
    {
      double *row = s + (size_t) r * tk;
      int i = r % tq;
      double m = -INFINITY, sum = 0.0;

      for (int j = 0; j < tk; j++)
        if (j <= pos + i)
          m = fmax (m, scale * row[j]);
      for (int j = 0; j < tk; j++)
        {
          row[j] = j <= pos + i ? exp (scale * row[j] - m) : 0.0;
          sum += row[j];
        }
      for (int j = 0; j < tk; j++)
        row[j] /= sum;
    }
}

void
tach_ref_causal_softmax_bwd (const double *p, const double *dp, double *ds, int bh, int tq,
                             int tk, double scale)
{
  for (int r = 0; r < bh * tq; r++)
    {
      const double *pr = p + (size_t) r * tk, *dpr = dp + (size_t) r * tk;
      double dot = 0.0;

      for (int j = 0; j < tk; j++)
        dot += pr[j] * dpr[j];
      for (int j = 0; j < tk; j++)
        ds[(size_t) r * tk + j] = scale * pr[j] * (dpr[j] - dot);
    }
}

/* The probabilities of one (batch, head) pair, [tq, tk], and each row's
 * log-sum-exp: the scores materialised, then the causal softmax. */
static void
attention_probs (const double *q, const double *k, int tq, int tk, int hd, int pos,
                 double scale, double *p, double *lse)
{
  for (int i = 0; i < tq; i++)
    {
      double m = -INFINITY, sum = 0.0;

      for (int j = 0; j < tk; j++)
        {
          double s = 0.0;

          for (int d = 0; d < hd; d++)
            s += q[(size_t) i * hd + d] * k[(size_t) j * hd + d];
          p[(size_t) i * tk + j] = scale * s;
          if (j <= pos + i)
            m = fmax (m, scale * s);
        }
      for (int j = 0; j < tk; j++)
        {
          double *pij = p + (size_t) i * tk + j;

          *pij = j <= pos + i ? exp (*pij - m) : 0.0;
          sum += *pij;
        }
      for (int j = 0; j < tk; j++)
        p[(size_t) i * tk + j] /= sum;
      if (lse != NULL)
        lse[i] = m + log (sum);
    }
}

/* The probabilities p [tq, tk] of pair @bh times @drop's mask (kept
 * ones scaled by 1/(1-p), the others 0): the dropped probabilities, or
 * with @p a gradient, the gradient through the mask. */
static void
attention_drop (const TachAttnDropout *drop, double *p, int bh, int tq, int tk)
{
  double scale = 1.0 / (1.0 - (double) drop->p);

  for (size_t e = 0; e < (size_t) tq * tk; e++)
    if (tach_ref_dropout_keep (drop->p, drop->seed, drop->counter,
                               drop->first + (size_t) bh * tq * tk + e))
      p[e] *= scale;
    else
      p[e] = 0.0;
}

void
tach_ref_attention_fwd (const double *q, const double *k, const double *v, double *o,
                        double *lse, int B, int H, int tq, int tk, int cap, int hd, int pos,
                        double scale, const TachAttnDropout *drop)
{
  g_autofree double *p = g_new (double, (size_t) tq * tk);

  for (int bh = 0; bh < B * H; bh++)
    {
      const double *kb = k + (size_t) bh * cap * hd, *vb = v + (size_t) bh * cap * hd;
      double *ob = o + (size_t) bh * tq * hd;

      attention_probs (q + (size_t) bh * tq * hd, kb, tq, tk, hd, pos, scale, p,
                       lse != NULL ? lse + (size_t) bh * tq : NULL);
      if (drop != NULL)
        attention_drop (drop, p, bh, tq, tk);
      for (int i = 0; i < tq; i++)
        for (int d = 0; d < hd; d++)
          {
            double s = 0.0;

            for (int j = 0; j < tk; j++)
              s += p[(size_t) i * tk + j] * vb[(size_t) j * hd + d];
            ob[(size_t) i * hd + d] = s;
          }
    }
}

void
tach_ref_attention_bwd (const double *q, const double *k, const double *v, const double *dout,
                        double *dq, double *dk, double *dv, int B, int H, int t, int hd,
                        double scale, const TachAttnDropout *drop)
{
  size_t tt = (size_t) t * t;
  g_autofree double *p = g_new (double, tt);
  g_autofree double *kept = g_new (double, tt);
  g_autofree double *dp = g_new (double, tt);
  g_autofree double *ds = g_new (double, tt);

  for (int bh = 0; bh < B * H; bh++)
    {
      size_t off = (size_t) bh * t * hd;
      const double *qb = q + off, *kb = k + off, *vb = v + off, *dob = dout + off;

      attention_probs (qb, kb, t, t, hd, 0, scale, p, NULL);
      /* o = p' v (p' = p dropped): dv = p'^T do, dp' = do v^T, and dp its
       * gradient through the mask. */
      memcpy (kept, p, tt * sizeof (double));
      if (drop != NULL)
        attention_drop (drop, kept, bh, t, t);
      tach_ref_gemm (TRUE, FALSE, t, hd, t, 1.0, kept, t, dob, hd, 0.0, dv + off, hd);
      tach_ref_gemm (FALSE, TRUE, t, t, hd, 1.0, dob, hd, vb, hd, 0.0, dp, t);
      if (drop != NULL)
        attention_drop (drop, dp, bh, t, t);
      tach_ref_causal_softmax_bwd (p, dp, ds, 1, t, t, scale);
      /* The scores (before the scale, which ds carries) are q k^T. */
      tach_ref_gemm (FALSE, FALSE, t, hd, t, 1.0, ds, t, kb, hd, 0.0, dq + off, hd);
      tach_ref_gemm (TRUE, FALSE, t, hd, t, 1.0, ds, t, qb, hd, 0.0, dk + off, hd);
    }
}

void
tach_ref_embedding_bwd (const double *dout, const int32_t *idx, double *dtable, int n, int dim)
{
  for (int i = 0; i < n; i++)
    for (int j = 0; j < dim; j++)
      dtable[(size_t) idx[i] * dim + j] += dout[(size_t) i * dim + j];
}
