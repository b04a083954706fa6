/* test-ops-lstm-ref.c: proves the reference LSTM right before any backend
 * is compared with it: gradients by central differences, layouts and
 * directions against each other, and one step worked out by hand. */
#include <math.h>
#include <string.h>

#include "test-ops-common.h"

typedef struct {
  const TachLstmDesc *d;
  double             *x, *w, *r;
} RefLstmLoss;

static double
ref_lstm_loss (gpointer data)
{
  RefLstmLoss *l = data;
  size_t ny = (size_t) l->d->T * l->d->N * l->d->dirs * l->d->H;
  g_autofree double *y = g_new (double, ny);
  double s = 0.0;

  tach_ref_lstm_fwd (l->d, l->x, l->w, y);
  for (size_t i = 0; i < ny; i++)
    s += y[i] * l->r[i];
  return s;
}

static void
test_ref_lstm_gradient (void)
{
  static const TachLstmDesc descs[] = {
    { 4, 3, 2, 5, 1, FALSE, TRUE, TRUE, TACH_PRECISION_FP32 },
    { 4, 3, 2, 5, 2, FALSE, TRUE, TRUE, TACH_PRECISION_FP32 },
    { 4, 3, 2, 5, 2, TRUE,  TRUE, TRUE, TACH_PRECISION_FP32 },
    { 3, 4, 2, 5, 2, TRUE,  TRUE, TRUE, TACH_PRECISION_FP32 },
  };

  for (guint k = 0; k < G_N_ELEMENTS (descs); k++)
    {
      const TachLstmDesc *d = &descs[k];
      size_t nx = (size_t) d->T * d->N * d->I, nw = tach_ref_lstm_weights (d);
      size_t ny = (size_t) d->T * d->N * d->dirs * d->H;
      g_autofree double *x = g_new (double, nx);
      g_autofree double *w = g_new (double, nw);
      g_autofree double *r = g_new (double, ny);
      g_autofree double *dx = g_new (double, nx);
      g_autofree double *dw = g_new (double, nw);
      RefLstmLoss l = { d, x, w, r };

      tach_ref_fill_normal (x, nx, 900 + k, 1, 1.0);
      tach_ref_fill_uniform (w, nw, 900 + k, 2, -0.7, 0.7);
      tach_ref_fill_normal (r, ny, 900 + k, 3, 1.0);
      tach_ref_lstm_bwd (d, x, w, r, dx, dw);
      g_assert_cmpfloat (tach_ops_fd_error (ref_lstm_loss, &l, w, nw, dw, 1e-5), <, 1e-7);
      g_assert_cmpfloat (tach_ops_fd_error (ref_lstm_loss, &l, x, nx, dx, 1e-5), <, 1e-7);
    }
}

/* Layout and direction are bookkeeping: time-major over transposed data is
 * batch-major over the original, and the backward direction is a forward
 * LSTM (with the second weight block) over the time-reversed sequence. */
static void
test_ref_lstm_layouts (void)
{
  enum { T = 4, N = 3, I = 2, H = 3 };
  TachLstmDesc bm = { T, N, I, H, 2, FALSE, TRUE, TRUE, TACH_PRECISION_FP32 };
  TachLstmDesc tm = bm, uni = bm;
  size_t block = (size_t) 4 * H * (I + H + 1);
  double x[T * N * I], xt[T * N * I], xr[N * T * I];
  double w[2 * 4 * H * (I + H + 1)];
  double y[N * T * 2 * H], yt[T * N * 2 * H], yf[N * T * H], yb[N * T * H];

  tm.time_major = TRUE;
  uni.dirs = 1;
  tach_ref_fill_normal (x, T * N * I, 910, 1, 1.0);
  tach_ref_fill_uniform (w, 2 * block, 910, 2, -0.7, 0.7);
  for (int n = 0; n < N; n++)
    for (int t = 0; t < T; t++)
      for (int i = 0; i < I; i++)
        {
          xt[(t * N + n) * I + i] = x[(n * T + t) * I + i];
          xr[(n * T + (T - 1 - t)) * I + i] = x[(n * T + t) * I + i];
        }
  tach_ref_lstm_fwd (&bm, x, w, y);
  tach_ref_lstm_fwd (&tm, xt, w, yt);
  tach_ref_lstm_fwd (&uni, x, w, yf);
  tach_ref_lstm_fwd (&uni, xr, w + block, yb);
  for (int n = 0; n < N; n++)
    for (int t = 0; t < T; t++)
      for (int j = 0; j < H; j++)
        {
          double fwd = y[(n * T + t) * 2 * H + j], bwd = y[(n * T + t) * 2 * H + H + j];

          g_assert_cmpfloat (fwd, ==, yt[(t * N + n) * 2 * H + j]);
          g_assert_cmpfloat (bwd, ==, yt[(t * N + n) * 2 * H + H + j]);
          g_assert_cmpfloat (fwd, ==, yf[(n * T + t) * H + j]);
          g_assert_cmpfloat_with_epsilon (bwd, yb[(n * T + (T - 1 - t)) * H + j], 1e-15);
        }
}

static double
sig (double v)
{
  return 1.0 / (1.0 + exp (-v));
}

/* Two steps of a one-unit LSTM written out with the textbook formulas,
 * which pins the gate order (i, f, g, o) and the weight layout
 * (W_x, then W_h, then b). */
static void
test_ref_lstm_by_hand (void)
{
  TachLstmDesc d = { 2, 1, 1, 1, 1, FALSE, TRUE, TRUE, TACH_PRECISION_FP32 };
  /* W_x = (i, f, g, o), W_h = (i, f, g, o), b = (i, f, g, o) */
  double w[12] = { 0.5, -0.3, 0.8, 0.2,   0.1, 0.4, -0.6, 0.7,   0.05, 1.0, -0.1, 0.3 };
  double x[2] = { 1.5, -0.7 }, y[2];
  double h = 0.0, c = 0.0;

  tach_ref_lstm_fwd (&d, x, w, y);
  for (int t = 0; t < 2; t++)
    {
      double i = sig (w[0] * x[t] + w[4] * h + w[8]);
      double f = sig (w[1] * x[t] + w[5] * h + w[9]);
      double g = tanh (w[2] * x[t] + w[6] * h + w[10]);
      double o = sig (w[3] * x[t] + w[7] * h + w[11]);

      c = f * c + i * g;
      h = o * tanh (c);
      g_assert_cmpfloat_with_epsilon (y[t], h, 1e-15);
    }
}

typedef struct {
  double *pre, *bias, *c_prev, *rh, *rc;
} CellLoss;

enum { CN = 2, CH = 3 };

static double
cell_loss (gpointer data)
{
  CellLoss *l = data;
  double g[CN * 4 * CH], c[CN * CH], h[CN * CH], s = 0.0;

  memcpy (g, l->pre, sizeof g);
  tach_ref_lstm_cell_fwd (CN, CH, g, l->bias, l->c_prev, c, h, CH);
  for (int i = 0; i < CN * CH; i++)
    s += h[i] * l->rh[i] + c[i] * l->rc[i];
  return s;
}

/* The cell's backward: dgates is the gradient of the pre-activations (and
 * so of the bias), dc_prev that of the previous cell state. */
static void
test_ref_lstm_cell_gradient (void)
{
  double pre[CN * 4 * CH], bias[4 * CH], c_prev[CN * CH], rh[CN * CH], rc[CN * CH];
  double g[CN * 4 * CH], c[CN * CH], h[CN * CH], dgates[CN * 4 * CH], dc_prev[CN * CH];
  double dbias[4 * CH] = { 0 };
  CellLoss l = { pre, bias, c_prev, rh, rc };

  tach_ref_fill_normal (pre, CN * 4 * CH, 920, 1, 1.0);
  tach_ref_fill_normal (bias, 4 * CH, 920, 2, 0.5);
  tach_ref_fill_normal (c_prev, CN * CH, 920, 3, 1.0);
  tach_ref_fill_normal (rh, CN * CH, 920, 4, 1.0);
  tach_ref_fill_normal (rc, CN * CH, 920, 5, 1.0);
  memcpy (g, pre, sizeof g);
  tach_ref_lstm_cell_fwd (CN, CH, g, bias, c_prev, c, h, CH);
  tach_ref_lstm_cell_bwd (CN, CH, g, c_prev, c, rh, CH, rc, dgates, dc_prev);
  for (int r = 0; r < CN; r++)
    for (int q = 0; q < 4 * CH; q++)
      dbias[q] += dgates[r * 4 * CH + q];
  g_assert_cmpfloat (tach_ops_fd_error (cell_loss, &l, pre, CN * 4 * CH, dgates, 1e-5), <, 1e-8);
  g_assert_cmpfloat (tach_ops_fd_error (cell_loss, &l, bias, 4 * CH, dbias, 1e-5), <, 1e-8);
  g_assert_cmpfloat (tach_ops_fd_error (cell_loss, &l, c_prev, CN * CH, dc_prev, 1e-5), <, 1e-8);
}

void
tach_ops_register_lstm_ref (void)
{
  tach_ops_add_ref ("lstm/gradient", test_ref_lstm_gradient);
  tach_ops_add_ref ("lstm/layouts", test_ref_lstm_layouts);
  tach_ops_add_ref ("lstm/by-hand", test_ref_lstm_by_hand);
  tach_ops_add_ref ("lstm-cell/gradient", test_ref_lstm_cell_gradient);
}
