/* tach-ref.c: the double-precision reference of every backend op.
 *
 * Deliberately naive: loops in the order the contract describes them, no
 * blocking, no fusion, so that a reader can check each line against
 * tach-backend.h.  Speed does not matter; shapes in the tests are tiny.
 */
#include <math.h>
#include <string.h>

#include "tach-rand.h"
#include "tach-ref.h"

/* ---------------------------------------------------------------- helpers */

double
tach_ref_nmse (const float *a, const double *b, size_t n)
{
  double num = 0.0, den = 0.0;

  for (size_t i = 0; i < n; i++)
    {
      double d = (double) a[i] - b[i];

      if (!isfinite (a[i]) || !isfinite (b[i]))
        return INFINITY;
      num += d * d;
      den += b[i] * b[i];
    }
  /* An all-zero reference is compared absolutely, so that zero against zero
   * passes and anything else against zero does not. */
  return den > 0.0 ? num / den : num;
}

double
tach_ref_nmse_dd (const double *a, const double *b, size_t n)
{
  double num = 0.0, den = 0.0;

  for (size_t i = 0; i < n; i++)
    {
      double d = a[i] - b[i];

      if (!isfinite (a[i]) || !isfinite (b[i]))
        return INFINITY;
      num += d * d;
      den += b[i] * b[i];
    }
  return den > 0.0 ? num / den : num;
}

void
tach_ref_fill_normal (double *x, size_t n, guint64 seed, guint64 counter, double scale)
{
  for (size_t i = 0; i < n; i++)
    x[i] = scale * tach_rand_normal (seed, counter, i);
}

void
tach_ref_fill_uniform (double *x, size_t n, guint64 seed, guint64 counter, double lo, double hi)
{
  for (size_t i = 0; i < n; i++)
    x[i] = lo + (hi - lo) * (double) tach_rand_uniform (seed, counter, i);
}

float *
tach_ref_to_float (const double *x, size_t n)
{
  float *f = g_new (float, MAX (n, 1));

  for (size_t i = 0; i < n; i++)
    f[i] = (float) x[i];
  return f;
}

double *
tach_ref_to_double (const float *x, size_t n)
{
  double *d = g_new (double, MAX (n, 1));

  for (size_t i = 0; i < n; i++)
    d[i] = x[i];
  return d;
}

void
tach_ref_round_to_float (double *x, size_t n)
{
  for (size_t i = 0; i < n; i++)
    x[i] = (float) x[i];
}

/* ---------------------------------------------------------- dense algebra */

/* Element (i, j) of op(M) for a row-major M with leading dimension ld. */
static inline double
op_at (const double *m, int ld, gboolean t, int i, int j)
{
  return t ? m[(size_t) j * ld + i] : m[(size_t) i * ld + j];
}

void
tach_ref_gemm (gboolean ta, gboolean tb, int m, int n, int k, double alpha,
               const double *a, int lda, const double *b, int ldb,
               double beta, double *c, int ldc)
{
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++)
      {
        double s = 0.0;

        for (int p = 0; p < k; p++)
          s += op_at (a, lda, ta, i, p) * op_at (b, ldb, tb, p, j);
        /* BLAS rule: with beta = 0, C is not read (it may hold NaN). */
        c[(size_t) i * ldc + j] = alpha * s + (beta == 0.0 ? 0.0 : beta * c[(size_t) i * ldc + j]);
      }
}

void
tach_ref_gemm_bwd (gboolean ta, gboolean tb, int m, int n, int k,
                   const double *a, int lda, const double *b, int ldb,
                   const double *dc, int ldc, double *da, double *db)
{
  /* dop(A)[i,p] = sum_j dC[i,j] op(B)[p,j]; stored back through the transpose. */
  for (int i = 0; i < m; i++)
    for (int p = 0; p < k; p++)
      {
        double s = 0.0;

        for (int j = 0; j < n; j++)
          s += dc[(size_t) i * ldc + j] * op_at (b, ldb, tb, p, j);
        if (ta)
          da[(size_t) p * lda + i] = s;
        else
          da[(size_t) i * lda + p] = s;
      }
  /* dop(B)[p,j] = sum_i op(A)[i,p] dC[i,j]. */
  for (int p = 0; p < k; p++)
    for (int j = 0; j < n; j++)
      {
        double s = 0.0;

        for (int i = 0; i < m; i++)
          s += op_at (a, lda, ta, i, p) * dc[(size_t) i * ldc + j];
        if (tb)
          db[(size_t) j * ldb + p] = s;
        else
          db[(size_t) p * ldb + j] = s;
      }
}

void
tach_ref_bias_add (double *y, const double *bias, int m, int n)
{
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++)
      y[(size_t) i * n + j] += bias[j];
}

void
tach_ref_bias_grad (const double *dy, double *db, int m, int n, double beta)
{
  for (int j = 0; j < n; j++)
    {
      double s = 0.0;

      for (int i = 0; i < m; i++)
        s += dy[(size_t) i * n + j];
      db[j] = s + (beta == 0.0 ? 0.0 : beta * db[j]);
    }
}

void
tach_ref_relu_fwd (const double *x, double *y, size_t n)
{
  for (size_t i = 0; i < n; i++)
    y[i] = x[i] > 0.0 ? x[i] : 0.0;
}

void
tach_ref_relu_bwd (const double *y, const double *dy, double *dx, size_t n)
{
  for (size_t i = 0; i < n; i++)
    dx[i] = y[i] > 0.0 ? dy[i] : 0.0;
}

/* -------------------------------------------------------------- recurrent */

static inline double
sigm (double x)
{
  return 1.0 / (1.0 + exp (-x));
}

size_t
tach_ref_lstm_weights (const TachLstmDesc *d)
{
  return (size_t) d->dirs * 4 * d->H * (d->I + d->H + 1);
}

/* Offset of x (or y, with @features per step) at time t, sequence n. */
static inline size_t
seq_at (const TachLstmDesc *d, int t, int n, int features)
{
  return d->time_major ? ((size_t) t * d->N + n) * features
                       : ((size_t) n * d->T + t) * features;
}

/* The time index a direction visits at its step s. */
static inline int
dir_time (const TachLstmDesc *d, int dir, int s)
{
  return dir == 0 ? s : d->T - 1 - s;
}

/* Runs one direction over one sequence, keeping the activated gates [T,4H]
 * and the cell and hidden states [T,H] in processing order. */
static void
lstm_dir_fwd (const TachLstmDesc *d, int dir, int n, const double *x, const double *w,
              double *gates, double *cs, double *hs)
{
  int H = d->H, I = d->I;
  const double *wx = w + (size_t) dir * 4 * H * (I + H + 1);
  const double *wh = wx + (size_t) 4 * H * I;
  const double *b = wh + (size_t) 4 * H * H;

  for (int s = 0; s < d->T; s++)
    {
      const double *xt = x + seq_at (d, dir_time (d, dir, s), n, I);
      const double *hp = s > 0 ? hs + (size_t) (s - 1) * H : NULL;
      const double *cp = s > 0 ? cs + (size_t) (s - 1) * H : NULL;
      double *g = gates + (size_t) s * 4 * H;

      for (int r = 0; r < 4 * H; r++)
        {
          double a = b[r];

          for (int i = 0; i < I; i++)
            a += wx[(size_t) r * I + i] * xt[i];
          for (int j = 0; hp != NULL && j < H; j++)
            a += wh[(size_t) r * H + j] * hp[j];
          g[r] = a;
        }
      tach_ref_lstm_cell_fwd (1, H, g, NULL, cp, cs + (size_t) s * H, hs + (size_t) s * H, H);
    }
}

void
tach_ref_lstm_fwd (const TachLstmDesc *d, const double *x, const double *w, double *y)
{
  int H = d->H, F = d->dirs * d->H;
  g_autofree double *gates = g_new (double, (size_t) d->T * 4 * H);
  g_autofree double *cs = g_new (double, (size_t) d->T * H);
  g_autofree double *hs = g_new (double, (size_t) d->T * H);

  for (int dir = 0; dir < d->dirs; dir++)
    for (int n = 0; n < d->N; n++)
      {
        lstm_dir_fwd (d, dir, n, x, w, gates, cs, hs);
        for (int s = 0; s < d->T; s++)
          memcpy (y + seq_at (d, dir_time (d, dir, s), n, F) + (size_t) dir * H,
                  hs + (size_t) s * H, sizeof (double) * H);
      }
}

void
tach_ref_lstm_bwd (const TachLstmDesc *d, const double *x, const double *w,
                   const double *dy, double *dx, double *dw)
{
  int H = d->H, I = d->I, F = d->dirs * d->H;
  size_t block = (size_t) 4 * H * (I + H + 1);
  g_autofree double *gates = g_new (double, (size_t) d->T * 4 * H);
  g_autofree double *cs = g_new (double, (size_t) d->T * H);
  g_autofree double *hs = g_new (double, (size_t) d->T * H);
  g_autofree double *dpre = g_new (double, (size_t) 4 * H);
  g_autofree double *dh = g_new (double, H);
  g_autofree double *dc = g_new0 (double, H);
  g_autofree double *dh_next = g_new0 (double, H);
  g_autofree double *dc_next = g_new0 (double, H);

  memset (dw, 0, sizeof (double) * tach_ref_lstm_weights (d));
  if (dx != NULL)
    memset (dx, 0, sizeof (double) * d->T * d->N * I);

  for (int dir = 0; dir < d->dirs; dir++)
    {
      const double *wx = w + dir * block;
      const double *wh = wx + (size_t) 4 * H * I;
      double *dwx = dw + dir * block;
      double *dwh = dwx + (size_t) 4 * H * I;
      double *db = dwh + (size_t) 4 * H * H;

      for (int n = 0; n < d->N; n++)
        {
          lstm_dir_fwd (d, dir, n, x, w, gates, cs, hs);
          memset (dh_next, 0, sizeof (double) * H);
          memset (dc_next, 0, sizeof (double) * H);
          for (int s = d->T - 1; s >= 0; s--)
            {
              int t = dir_time (d, dir, s);
              const double *xt = x + seq_at (d, t, n, I);
              const double *dyt = dy + seq_at (d, t, n, F) + (size_t) dir * H;
              const double *hp = s > 0 ? hs + (size_t) (s - 1) * H : NULL;
              const double *cp = s > 0 ? cs + (size_t) (s - 1) * H : NULL;

              for (int j = 0; j < H; j++)
                dh[j] = dyt[j] + dh_next[j];
              memcpy (dc, dc_next, sizeof (double) * H);
              tach_ref_lstm_cell_bwd (1, H, gates + (size_t) s * 4 * H, cp, cs + (size_t) s * H,
                                      dh, H, dc, dpre, dc_next);
              memset (dh_next, 0, sizeof (double) * H);
              for (int r = 0; r < 4 * H; r++)
                {
                  for (int i = 0; i < I; i++)
                    {
                      dwx[(size_t) r * I + i] += dpre[r] * xt[i];
                      if (dx != NULL)
                        dx[seq_at (d, t, n, I) + i] += wx[(size_t) r * I + i] * dpre[r];
                    }
                  for (int j = 0; hp != NULL && j < H; j++)
                    {
                      dwh[(size_t) r * H + j] += dpre[r] * hp[j];
                      dh_next[j] += wh[(size_t) r * H + j] * dpre[r];
                    }
                  db[r] += dpre[r];
                }
            }
        }
    }
}

void
tach_ref_lstm_cell_fwd (int n, int h, double *gates, const double *bias,
                        const double *c_prev, double *c, double *h_out, int ldh)
{
  for (int r = 0; r < n; r++)
    {
      double *g = gates + (size_t) r * 4 * h;

      for (int q = 0; q < 4 * h; q++)
        {
          double a = g[q] + (bias != NULL ? bias[q] : 0.0);

          g[q] = q >= 2 * h && q < 3 * h ? tanh (a) : sigm (a);
        }
      for (int j = 0; j < h; j++)
        {
          double i = g[j], f = g[h + j], gg = g[2 * h + j], o = g[3 * h + j];
          double cp = c_prev != NULL ? c_prev[(size_t) r * h + j] : 0.0;
          double cc = f * cp + i * gg;

          c[(size_t) r * h + j] = cc;
          h_out[(size_t) r * ldh + j] = o * tanh (cc);
        }
    }
}

void
tach_ref_lstm_cell_bwd (int n, int h, const double *gates, const double *c_prev,
                        const double *c, const double *dh, int lddh, const double *dc,
                        double *dgates, double *dc_prev)
{
  for (int r = 0; r < n; r++)
    {
      const double *g = gates + (size_t) r * 4 * h;
      double *dg = dgates + (size_t) r * 4 * h;

      for (int j = 0; j < h; j++)
        {
          double i = g[j], f = g[h + j], gg = g[2 * h + j], o = g[3 * h + j];
          double cc = c[(size_t) r * h + j];
          double cp = c_prev != NULL ? c_prev[(size_t) r * h + j] : 0.0;
          double dhh = dh != NULL ? dh[(size_t) r * lddh + j] : 0.0;
          double tc = tanh (cc);
          double dct = (dc != NULL ? dc[(size_t) r * h + j] : 0.0) + dhh * o * (1.0 - tc * tc);

          dg[j] = dct * gg * i * (1.0 - i);
          dg[h + j] = dct * cp * f * (1.0 - f);
          dg[2 * h + j] = dct * i * (1.0 - gg * gg);
          dg[3 * h + j] = dhh * tc * o * (1.0 - o);
          if (dc_prev != NULL)
            dc_prev[(size_t) r * h + j] = dct * f;
        }
    }
}

/* --------------------------------------------------- reductions and losses */

static int
argmax_over_time (const double *x, int n, int t, int c, int ch)
{
  int best = 0;

  for (int s = 1; s < t; s++)
    if (x[((size_t) n * t + s) * c + ch] > x[((size_t) n * t + best) * c + ch])
      best = s;
  return best;
}

void
tach_ref_max_over_time_fwd (const double *x, double *y, int n, int t, int c)
{
  for (int i = 0; i < n; i++)
    for (int ch = 0; ch < c; ch++)
      y[(size_t) i * c + ch] = x[((size_t) i * t + argmax_over_time (x, i, t, c, ch)) * c + ch];
}

void
tach_ref_max_over_time_bwd (const double *x, const double *dy, double *dx, int n, int t, int c)
{
  memset (dx, 0, sizeof (double) * n * t * c);
  for (int i = 0; i < n; i++)
    for (int ch = 0; ch < c; ch++)
      dx[((size_t) i * t + argmax_over_time (x, i, t, c, ch)) * c + ch] = dy[(size_t) i * c + ch];
}

double
tach_ref_sigmoid_bce (const double *logits, const double *labels, int n, double *dlogits)
{
  double sum = 0.0;

  for (int i = 0; i < n; i++)
    {
      double z = logits[i], y = labels[i];

      /* -y log s(z) - (1-y) log(1-s(z)), written to stay finite for any z. */
      sum += fmax (z, 0.0) - z * y + log1p (exp (-fabs (z)));
      if (dlogits != NULL)
        dlogits[i] = (sigm (z) - y) / n;
    }
  return sum / n;
}

double
tach_ref_softmax_ce (const double *logits, const int32_t *labels, int n, int classes,
                     double *dlogits)
{
  double sum = 0.0;

  for (int i = 0; i < n; i++)
    {
      const double *z = logits + (size_t) i * classes;
      double mx = z[0], se = 0.0;

      for (int k = 1; k < classes; k++)
        mx = fmax (mx, z[k]);
      for (int k = 0; k < classes; k++)
        se += exp (z[k] - mx);
      sum += log (se) + mx - z[labels[i]];
      for (int k = 0; dlogits != NULL && k < classes; k++)
        dlogits[(size_t) i * classes + k] = (exp (z[k] - mx) / se - (k == labels[i])) / n;
    }
  return sum / n;
}

double
tach_ref_accuracy (const double *logits, const double *labels_f, const int32_t *labels_i,
                   int n, int classes)
{
  int correct = 0;

  for (int i = 0; i < n; i++)
    {
      if (classes == 1)
        correct += (logits[i] > 0.0) == (labels_f[i] > 0.5);
      else
        {
          const double *z = logits + (size_t) i * classes;
          int best = 0;

          for (int k = 1; k < classes; k++)
            if (z[k] > z[best])
              best = k;
          correct += best == labels_i[i];
        }
    }
  return (double) correct / n;
}

/* ---------------------------------------------------------- convolutional */

void
tach_ref_conv_out_size (const TachConvDesc *d, int *oh, int *ow)
{
  *oh = d->H + 2 * d->pad_h - d->R + 1;
  *ow = d->W + 2 * d->pad_w - d->S + 1;
}

/* Input element under output (y, x) and filter tap (r, s), or -1 in the padding. */
static inline ptrdiff_t
conv_src (const TachConvDesc *d, int n, int ch, int y, int x, int r, int s)
{
  int iy = y + r - d->pad_h, ix = x + s - d->pad_w;

  if (iy < 0 || iy >= d->H || ix < 0 || ix >= d->W)
    return -1;
  return (((ptrdiff_t) n * d->C + ch) * d->H + iy) * d->W + ix;
}

void
tach_ref_conv_fwd (const TachConvDesc *d, const double *x, const double *w,
                   const double *b, double *y)
{
  int oh, ow;

  tach_ref_conv_out_size (d, &oh, &ow);
  for (int n = 0; n < d->N; n++)
    for (int k = 0; k < d->K; k++)
      for (int oy = 0; oy < oh; oy++)
        for (int ox = 0; ox < ow; ox++)
          {
            double s = b[k];

            for (int ch = 0; ch < d->C; ch++)
              for (int r = 0; r < d->R; r++)
                for (int q = 0; q < d->S; q++)
                  {
                    ptrdiff_t src = conv_src (d, n, ch, oy, ox, r, q);

                    if (src >= 0)
                      s += x[src] * w[(((size_t) k * d->C + ch) * d->R + r) * d->S + q];
                  }
            y[(((size_t) n * d->K + k) * oh + oy) * ow + ox] = s;
          }
}

void
tach_ref_conv_bwd (const TachConvDesc *d, const double *x, const double *w,
                   const double *dy, double *dx, double *dw, double *db)
{
  int oh, ow;

  tach_ref_conv_out_size (d, &oh, &ow);
  memset (dw, 0, sizeof (double) * d->K * d->C * d->R * d->S);
  memset (db, 0, sizeof (double) * d->K);
  if (dx != NULL)
    memset (dx, 0, sizeof (double) * d->N * d->C * d->H * d->W);
  for (int n = 0; n < d->N; n++)
    for (int k = 0; k < d->K; k++)
      for (int oy = 0; oy < oh; oy++)
        for (int ox = 0; ox < ow; ox++)
          {
            double g = dy[(((size_t) n * d->K + k) * oh + oy) * ow + ox];

            db[k] += g;
            for (int ch = 0; ch < d->C; ch++)
              for (int r = 0; r < d->R; r++)
                for (int q = 0; q < d->S; q++)
                  {
                    ptrdiff_t src = conv_src (d, n, ch, oy, ox, r, q);
                    size_t wi = (((size_t) k * d->C + ch) * d->R + r) * d->S + q;

                    if (src < 0)
                      continue;
                    dw[wi] += g * x[src];
                    if (dx != NULL)
                      dx[src] += g * w[wi];
                  }
          }
}

/* Flat index of the winner of the 2x2 window under output (oy, ox). */
static size_t
pool_winner (const double *x, int h, int w, size_t plane, int oy, int ox)
{
  size_t best = plane + (size_t) (2 * oy) * w + 2 * ox;

  for (int r = 0; r < 2; r++)
    for (int s = 0; s < 2; s++)
      {
        size_t at = plane + (size_t) (2 * oy + r) * w + 2 * ox + s;

        if (x[at] > x[best])
          best = at;
      }
  return best;
}

void
tach_ref_maxpool_fwd (const double *x, double *y, int n, int c, int h, int w)
{
  int oh = h / 2, ow = w / 2;

  for (int p = 0; p < n * c; p++)
    for (int oy = 0; oy < oh; oy++)
      for (int ox = 0; ox < ow; ox++)
        y[((size_t) p * oh + oy) * ow + ox] = x[pool_winner (x, h, w, (size_t) p * h * w, oy, ox)];
}

void
tach_ref_maxpool_bwd (const double *x, const double *dy, double *dx, int n, int c, int h, int w)
{
  int oh = h / 2, ow = w / 2;

  memset (dx, 0, sizeof (double) * n * c * h * w);
  for (int p = 0; p < n * c; p++)
    for (int oy = 0; oy < oh; oy++)
      for (int ox = 0; ox < ow; ox++)
        dx[pool_winner (x, h, w, (size_t) p * h * w, oy, ox)] += dy[((size_t) p * oh + oy) * ow + ox];
}

void
tach_ref_avgpool_fwd (const double *x, double *y, int n, int c, int hw)
{
  for (int p = 0; p < n * c; p++)
    {
      double s = 0.0;

      for (int i = 0; i < hw; i++)
        s += x[(size_t) p * hw + i];
      y[p] = s / hw;
    }
}

void
tach_ref_avgpool_bwd (const double *dy, double *dx, int n, int c, int hw)
{
  for (int p = 0; p < n * c; p++)
    for (int i = 0; i < hw; i++)
      dx[(size_t) p * hw + i] = dy[p] / hw;
}

/* ------------------------------------------------------ dropout and tokens */

gboolean
tach_ref_dropout_keep (float p, guint64 seed, guint64 counter, size_t e)
{
  return tach_rand_uniform (seed, counter, e) >= p;
}

void
tach_ref_dropout (const double *x, double *y, size_t n, float p, guint64 seed, guint64 counter)
{
  double scale = 1.0 / (1.0 - (double) p);

  for (size_t i = 0; i < n; i++)
    y[i] = tach_ref_dropout_keep (p, seed, counter, i) ? x[i] * scale : 0.0;
}

void
tach_ref_embedding (const double *table, const int32_t *idx, double *out, int n, int dim)
{
  for (int i = 0; i < n; i++)
    memcpy (out + (size_t) i * dim, table + (size_t) idx[i] * dim, sizeof (double) * dim);
}

int32_t
tach_ref_sample_row (const double *logits, int vocab, double u, double *margin)
{
  double mx = logits[0], se = 0.0, cum = 0.0, prev = 0.0;

  for (int k = 1; k < vocab; k++)
    mx = fmax (mx, logits[k]);
  for (int k = 0; k < vocab; k++)
    se += exp (logits[k] - mx);
  for (int k = 0; k < vocab; k++)
    {
      prev = cum;
      cum += exp (logits[k] - mx) / se;
      if (u < cum)
        {
          if (margin != NULL)
            *margin = fmin (u - prev, cum - u);
          return k;
        }
    }
  /* u just below 1 against a sum that rounded below it: the last token. */
  if (margin != NULL)
    *margin = 0.0;
  return vocab - 1;
}

/* -------------------------------------------------------------- optimisers */

void
tach_ref_adam (double *param, const double *grad, double *m, double *v, size_t n,
               double lr, double beta1, double beta2, double eps, double *t)
{
  double c1, c2;

  *t += 1.0;
  c1 = 1.0 - pow (beta1, *t);
  c2 = 1.0 - pow (beta2, *t);
  for (size_t i = 0; i < n; i++)
    {
      m[i] = beta1 * m[i] + (1.0 - beta1) * grad[i];
      v[i] = beta2 * v[i] + (1.0 - beta2) * grad[i] * grad[i];
      param[i] -= lr * (m[i] / c1) / (sqrt (v[i] / c2) + eps);
    }
}

void
tach_ref_sgd (double *param, const double *grad, size_t n, double lr)
{
  for (size_t i = 0; i < n; i++)
    param[i] -= lr * grad[i];
}
