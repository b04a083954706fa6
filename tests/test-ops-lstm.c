/* test-ops-lstm.c: the fused LSTM and the single cell step.
 *
 * The fused op is checked in every layout the contract names: uni- and
 * bidirectional, time- and batch-major, with and without the input
 * gradient, and the "misread" plan (time_major over batch-major data).
 */
#include <math.h>
#include <string.h>

#include "tach-rand.h"
#include "test-ops-common.h"

typedef struct {
  const char *name;
  int         dirs;
  gboolean    time_major;
  gboolean    need_dx;
  int         n;            /* batch; 0: LN */
  gboolean    repeat;       /* rows of x repeat (TachLstmDesc.rows_repeat) */
} LstmVariant;

/* Small, all different, so that a swapped dimension cannot line up. */
enum { LT = 5, LN = 3, LI = 4, LH = 6 };

/* The wide variants give a batch that a backend may split between its
 * threads (the CPU backend does from 32 samples per thread); the "blocks"
 * ones several blocks (the CPU backend's are 64 samples or more, by shape), the
 * last one partial. */
static const LstmVariant variants[] = {
  { "uni batch-major dx",  1, FALSE, TRUE,  0 },
  { "bi batch-major dx",   2, FALSE, TRUE,  0 },
  { "uni time-major",      1, TRUE,  FALSE, 0 },
  { "bi time-major dx",    2, TRUE,  TRUE,  0 },
  { "bi batch-major",      2, FALSE, FALSE, 0 },
  { "bi batch-major wide", 2, FALSE, FALSE, 75 },
  { "bi batch-major wide dx", 2, FALSE, TRUE, 67 },
  { "uni time-major wide dx", 1, TRUE, TRUE, 71 },
  { "bi batch-major blocks dx", 2, FALSE, TRUE, 300 },
  { "bi time-major blocks", 2, TRUE, FALSE, 290 },
  /* Rows that repeat, as the lstm-lm's words do: most are copies of a few
   * rows, scattered over the blocks and steps. */
  { "uni batch-major blocks repeat", 1, FALSE, FALSE, 150, TRUE },
  { "bi time-major blocks repeat dx", 2, TRUE, TRUE, 140, TRUE },
};

static TachLstmDesc
lstm_desc (const LstmVariant *v, gboolean training)
{
  TachLstmDesc d = { LT, v->n > 0 ? v->n : LN, LI, LH, v->dirs, v->time_major, training,
                     v->need_dx, TACH_PRECISION_FP32 };

  d.rows_repeat = v->repeat;
  return d;
}

static size_t
lstm_x_len (const TachLstmDesc *d)
{
  return (size_t) d->T * d->N * d->I;
}

static size_t
lstm_y_len (const TachLstmDesc *d)
{
  return (size_t) d->T * d->N * d->dirs * d->H;
}

/* Inputs for one case, rounded to float so that backend and reference see
 * the same numbers: x, w and the output gradient dy (also the FD loss weights). */
typedef struct {
  TachLstmDesc d;
  double      *x, *w, *dy;
} LstmCase;

static void
lstm_case_init (LstmCase *c, const TachLstmDesc *d, guint64 seed)
{
  size_t nw = tach_ref_lstm_weights (d);

  c->d = *d;
  c->x = g_new (double, lstm_x_len (d));
  c->w = g_new (double, nw);
  c->dy = g_new (double, lstm_y_len (d));
  tach_ref_fill_normal (c->x, lstm_x_len (d), seed, 1, 1.0);
  tach_ref_fill_uniform (c->w, nw, seed, 2, -0.6, 0.6);
  tach_ref_fill_normal (c->dy, lstm_y_len (d), seed, 3, 1.0);
  /* Two rows in three a copy of one of 23 rows. */
  if (d->rows_repeat)
    for (size_t r = 0; r < (size_t) d->T * d->N; r++)
      if (r % 3 != 0)
        memcpy (c->x + r * d->I, c->x + (r * 7 % 23) * 3 * d->I, (size_t) d->I * sizeof (double));
  tach_ref_round_to_float (c->x, lstm_x_len (d));
  tach_ref_round_to_float (c->w, nw);
  tach_ref_round_to_float (c->dy, lstm_y_len (d));
}

static void
lstm_case_clear (LstmCase *c)
{
  g_free (c->x);
  g_free (c->w);
  g_free (c->dy);
}

/* The fused op reads its weights in the block layout its backend reports
 * (tach_lstm_weight_map): canonical weights go in through the layout's views,
 * and the weight gradient comes back out through them, its holes checked
 * to be zero (the contract, so that the optimiser keeps them zero). */
static void
upload_lstm_w_f (TachBackend *be, const TachLstmDesc *d, const TachLstmWeightMap *layout,
                 const float *canon, float *dev)
{
  g_autofree float *block = g_new (float, layout->floats);

  tach_lstm_weight_map_scatter (d, layout, canon, block);
  tach_backend_upload (be, dev, block, layout->floats * sizeof (float));
}

static float *
upload_lstm_w (TachBackend *be, const TachLstmDesc *d, const double *w, TachLstmWeightMap *layout)
{
  g_autofree float *canon = tach_ref_to_float (w, tach_ref_lstm_weights (d));
  float *dev;

  g_assert_true (tach_lstm_weight_map (be, d, layout));
  dev = tach_ops_alloc (be, layout->floats * sizeof (float));
  upload_lstm_w_f (be, d, layout, canon, dev);
  return dev;
}

static float *
download_lstm_dw (TachBackend *be, const TachLstmDesc *d, const TachLstmWeightMap *layout,
                  const float *dev)
{
  g_autofree float *block = tach_ops_download_f (be, dev, layout->floats);
  g_autoptr (GArray) holes = tach_lstm_weight_map_holes (d, layout);
  float *canon = g_new (float, tach_ref_lstm_weights (d));

  for (guint i = 0; i < holes->len; i++)
    {
      const TachLstmRange *h = &g_array_index (holes, TachLstmRange, i);

      for (size_t k = 0; k < h->count; k++)
        g_assert_cmpfloat (block[h->start + k], ==, 0.0f);
    }
  tach_lstm_weight_map_gather (d, layout, block, canon);
  return canon;
}

/* The backend side of one case: forward, and backward when @dx_out/@dw_out
 * are given.  Outputs are new host arrays. */
static void
backend_lstm (TachBackend *be, const LstmCase *c, float **y_out, float **dx_out, float **dw_out)
{
  size_t nx = lstm_x_len (&c->d), ny = lstm_y_len (&c->d), nw = tach_ref_lstm_weights (&c->d);
  TachLstmPlan *plan = tach_lstm_plan_new (be, &c->d);
  float *d_x, *d_w, *d_y, *d_dy, *d_dx = NULL, *d_dw;
  TachLstmWeightMap layout;
  void *reserve;

  tach_ops_assert_ok (be);
  g_assert_nonnull (plan);
  reserve = tach_ops_alloc (be, tach_lstm_reserve_bytes (be, plan));
  d_x = tach_ops_upload_d (be, c->x, nx);
  d_w = upload_lstm_w (be, &c->d, c->w, &layout);
  d_y = tach_ops_alloc (be, ny * sizeof (float));
  tach_op (be, lstm_fwd, plan, d_x, d_w, d_y, reserve);
  *y_out = tach_ops_download_f (be, d_y, ny);
  if (dw_out != NULL)
    {
      d_dy = tach_ops_upload_d (be, c->dy, ny);
      if (c->d.need_dx)
        d_dx = tach_ops_alloc (be, nx * sizeof (float));
      d_dw = tach_ops_alloc (be, layout.floats * sizeof (float));
      /* Stale gradients, holes included, must be overwritten. */
      {
        g_autofree float *stale = g_new (float, layout.floats);

        for (size_t i = 0; i < layout.floats; i++)
          stale[i] = 7.0f;
        tach_backend_upload (be, d_dw, stale, layout.floats * sizeof (float));
      }
      tach_op (be, lstm_bwd, plan, d_x, d_w, d_y, d_dy, reserve, d_dx, d_dw);
      *dw_out = download_lstm_dw (be, &c->d, &layout, d_dw);
      if (dx_out != NULL)
        *dx_out = c->d.need_dx ? tach_ops_download_f (be, d_dx, nx) : NULL;

      /* dw is overwritten, not accumulated: a second backward (after a
       * second forward, which refills the reserve) gives the same. */
      {
        g_autofree float *again = NULL;

        tach_op (be, lstm_fwd, plan, d_x, d_w, d_y, reserve);
        tach_op (be, lstm_bwd, plan, d_x, d_w, d_y, d_dy, reserve, d_dx, d_dw);
        again = download_lstm_dw (be, &c->d, &layout, d_dw);
        g_assert_cmpmem (again, nw * sizeof (float), *dw_out, nw * sizeof (float));
      }
    }
  tach_lstm_plan_free (be, plan);
  tach_ops_assert_ok (be);
}

static void
test_lstm_forward (TachBackend *be)
{
  for (guint v = 0; v < G_N_ELEMENTS (variants); v++)
    for (int training = 0; training < 2; training++)
      {
        TachLstmDesc d = lstm_desc (&variants[v], training);
        g_autofree char *what = g_strdup_printf ("lstm_fwd %s%s", variants[v].name,
                                                 training ? " training" : "");
        g_autofree double *y = g_new (double, lstm_y_len (&d));
        g_autofree float *got = NULL;
        LstmCase c;

        lstm_case_init (&c, &d, 800 + v);
        backend_lstm (be, &c, &got, NULL, NULL);
        tach_ref_lstm_fwd (&d, c.x, c.w, y);
        tach_ops_assert_nmse (what, got, y, lstm_y_len (&d), TACH_OPS_NMSE_DEEP);
        lstm_case_clear (&c);
      }
}

static void
test_lstm_backward (TachBackend *be)
{
  for (guint v = 0; v < G_N_ELEMENTS (variants); v++)
    {
      TachLstmDesc d = lstm_desc (&variants[v], TRUE);
      size_t nx = lstm_x_len (&d), nw = tach_ref_lstm_weights (&d);
      g_autofree char *what_x = g_strdup_printf ("lstm_bwd dx %s", variants[v].name);
      g_autofree char *what_w = g_strdup_printf ("lstm_bwd dw %s", variants[v].name);
      g_autofree double *dx = g_new (double, nx);
      g_autofree double *dw = g_new (double, nw);
      g_autofree float *y = NULL;
      g_autofree float *got_dx = NULL;
      g_autofree float *got_dw = NULL;
      LstmCase c;

      lstm_case_init (&c, &d, 810 + v);
      backend_lstm (be, &c, &y, &got_dx, &got_dw);
      tach_ref_lstm_bwd (&d, c.x, c.w, c.dy, dx, dw);
      tach_ops_assert_nmse (what_w, got_dw, dw, nw, TACH_OPS_NMSE_DEEP);
      if (d.need_dx)
        tach_ops_assert_nmse (what_x, got_dx, dx, nx, TACH_OPS_NMSE_DEEP);
      else
        g_assert_null (got_dx);
      lstm_case_clear (&c);
    }
}

/* W1's layer at a small batch (T 10, I 30, H 40, both directions), its
 * misread form and a unidirectional time-major one, at the backend's
 * precision: y, dx and dw twice, the second time over a dw full of junk
 * (dw is overwritten, never accumulated). */
static void
test_lstm_shapes (TachBackend *be)
{
  static const TachLstmDesc shapes[] = {
    { 10, 16, 30, 40, 2, FALSE, TRUE, TRUE, TACH_PRECISION_FP32 },
    { 16, 10, 30, 40, 2, TRUE,  TRUE, TRUE, TACH_PRECISION_FP32 },
    {  4,  8, 20, 24, 1, TRUE,  TRUE, TRUE, TACH_PRECISION_FP32 },
  };
  double limit = tach_ops_nmse_limit (be->precision, TRUE);

  for (guint k = 0; k < G_N_ELEMENTS (shapes); k++)
    {
      TachLstmDesc d = shapes[k];
      size_t nx, ny, nw;
      g_autofree double *y = NULL;
      g_autofree double *dx = NULL;
      g_autofree double *dw = NULL;
      g_autofree double *junk = NULL;
      TachLstmPlan *plan;
      TachLstmWeightMap layout;
      float *d_x, *d_w, *d_y, *d_dy, *d_dx, *d_dw;
      void *reserve;
      LstmCase c;

      d.precision = be->precision;
      nx = lstm_x_len (&d);
      ny = lstm_y_len (&d);
      nw = tach_ref_lstm_weights (&d);
      lstm_case_init (&c, &d, 850 + k);
      /* Weights in [-0.3, 0.3] (halving is exact): sixteen steps of fp16
       * stay well inside their threshold. */
      for (size_t i = 0; i < nw; i++)
        c.w[i] *= 0.5;
      y = g_new (double, ny);
      dx = g_new (double, nx);
      dw = g_new (double, nw);
      tach_ref_lstm_fwd (&d, c.x, c.w, y);
      tach_ref_lstm_bwd (&d, c.x, c.w, c.dy, dx, dw);
      plan = tach_lstm_plan_new (be, &d);
      {
        g_autoptr(GError) error = NULL;

        /* A backend may offer a precision for other ops only (the CPU's
         * LSTM is fp32 only): it says so, and the case is skipped. */
        if (!tach_backend_take_error (be, &error)
            && g_error_matches (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED))
          {
            g_test_skip_printf ("lstm at this precision: %s", error->message);
            tach_lstm_plan_free (be, plan);
            lstm_case_clear (&c);
            return;
          }
        g_assert_no_error (error);
      }
      g_assert_nonnull (plan);
      reserve = tach_ops_alloc (be, tach_lstm_reserve_bytes (be, plan));
      d_x = tach_ops_upload_d (be, c.x, nx);
      d_w = upload_lstm_w (be, &d, c.w, &layout);
      d_dy = tach_ops_upload_d (be, c.dy, ny);
      d_y = tach_ops_alloc (be, ny * sizeof (float));
      d_dx = tach_ops_alloc (be, nx * sizeof (float));
      /* The gradient block full of junk, holes included. */
      junk = g_new (double, layout.floats);
      tach_ref_fill_normal (junk, layout.floats, 850 + k, 9, 5.0);
      d_dw = tach_ops_upload_d (be, junk, layout.floats);
      for (int round = 0; round < 2; round++)
        {
          g_autofree char *what = g_strdup_printf ("lstm T=%d N=%d I=%d H=%d dirs=%d%s round %d",
                                                   d.T, d.N, d.I, d.H, d.dirs,
                                                   d.time_major ? " time-major" : "", round);
          g_autofree float *got_y = NULL;
          g_autofree float *got_dx = NULL;
          g_autofree float *got_dw = NULL;

          tach_op (be, lstm_fwd, plan, d_x, d_w, d_y, reserve);
          tach_op (be, lstm_bwd, plan, d_x, d_w, d_y, d_dy, reserve, d_dx, d_dw);
          got_y = tach_ops_download_f (be, d_y, ny);
          got_dx = tach_ops_download_f (be, d_dx, nx);
          got_dw = download_lstm_dw (be, &d, &layout, d_dw);
          tach_ops_assert_nmse (what, got_y, y, ny, limit);
          tach_ops_assert_nmse (what, got_dx, dx, nx, limit);
          tach_ops_assert_nmse (what, got_dw, dw, nw, limit);
        }
      tach_lstm_plan_free (be, plan);
      lstm_case_clear (&c);
    }
}

/* The bug of the BiLSTM report: a batch-major [N, T, I] tensor handed to a
 * time-major plan, so that T and N swap meaning.  The backend must compute
 * exactly that (different) function, forward and backward. */
static void
test_lstm_misread (TachBackend *be)
{
  TachLstmDesc right = { LT, LN, LI, LH, 2, FALSE, TRUE, TRUE, TACH_PRECISION_FP32 };
  TachLstmDesc misread = { LN, LT, LI, LH, 2, TRUE, TRUE, TRUE, TACH_PRECISION_FP32 };
  size_t nx = lstm_x_len (&right), ny = lstm_y_len (&right), nw = tach_ref_lstm_weights (&right);
  g_autofree double *y_right = g_new (double, ny);
  g_autofree double *y = g_new (double, ny);
  g_autofree double *dx = g_new (double, nx);
  g_autofree double *dw = g_new (double, nw);
  g_autofree float *got_y = NULL;
  g_autofree float *got_dx = NULL;
  g_autofree float *got_dw = NULL;
  LstmCase c;

  lstm_case_init (&c, &right, 820);
  c.d = misread;
  backend_lstm (be, &c, &got_y, &got_dx, &got_dw);
  tach_ref_lstm_fwd (&misread, c.x, c.w, y);
  tach_ref_lstm_bwd (&misread, c.x, c.w, c.dy, dx, dw);
  tach_ops_assert_nmse ("lstm misread y", got_y, y, ny, TACH_OPS_NMSE_DEEP);
  tach_ops_assert_nmse ("lstm misread dx", got_dx, dx, nx, TACH_OPS_NMSE_DEEP);
  tach_ops_assert_nmse ("lstm misread dw", got_dw, dw, nw, TACH_OPS_NMSE_DEEP);
  /* And it is a different function from the right reading. */
  tach_ref_lstm_fwd (&right, c.x, c.w, y_right);
  g_assert_cmpfloat (tach_ref_nmse (got_y, y_right, ny), >, 1e-2);
  lstm_case_clear (&c);
}

/* L = sum(y * dy) from the backend's own float forward, in double. */
static double
backend_lstm_loss (TachBackend *be, TachLstmPlan *plan, const LstmCase *c, float *d_x,
                   float *d_w, float *d_y, void *reserve)
{
  size_t ny = lstm_y_len (&c->d);
  g_autofree float *y = NULL;
  double s = 0.0;

  tach_op (be, lstm_fwd, plan, d_x, d_w, d_y, reserve);
  y = tach_ops_download_f (be, d_y, ny);
  for (size_t i = 0; i < ny; i++)
    s += (double) y[i] * c->dy[i];
  return s;
}

/* Uploads the probed weights (@which 0, through the layout) or input. */
static void
upload_probe (TachBackend *be, const TachLstmDesc *d, const TachLstmWeightMap *layout, int which,
              const float *host, float *dev, size_t n)
{
  if (which == 0)
    upload_lstm_w_f (be, d, layout, host, dev);
  else
    tach_backend_upload (be, dev, host, n * sizeof (float));
}

/* Central differences on the backend's float loss, so that a wrong backend
 * gradient cannot hide behind a wrong reference.  float rounding limits the
 * step to eps = 5e-3, so the tolerance is loose and stated:
 * |fd - g| <= 1e-3 * max|g| + 1e-2 * |g|. */
static void
test_lstm_finite_difference (TachBackend *be)
{
  TachLstmDesc d = { LT, LN, LI, LH, 2, FALSE, TRUE, TRUE, TACH_PRECISION_FP32 };
  size_t nx = lstm_x_len (&d), ny = lstm_y_len (&d), nw = tach_ref_lstm_weights (&d);
  const float eps = 5e-3f;
  g_autofree float *y = NULL;
  g_autofree float *dx = NULL;
  g_autofree float *dw = NULL;
  g_autofree float *host = NULL;
  TachLstmPlan *plan;
  TachLstmWeightMap layout;
  float *d_x, *d_w, *d_y;
  void *reserve;
  LstmCase c;

  lstm_case_init (&c, &d, 830);
  backend_lstm (be, &c, &y, &dx, &dw);
  plan = tach_lstm_plan_new (be, &d);
  reserve = tach_ops_alloc (be, tach_lstm_reserve_bytes (be, plan));
  d_x = tach_ops_upload_d (be, c.x, nx);
  d_w = upload_lstm_w (be, &d, c.w, &layout);
  d_y = tach_ops_alloc (be, ny * sizeof (float));

  for (int which = 0; which < 2; which++)
    {
      float *grad = which == 0 ? dw : dx, *dev = which == 0 ? d_w : d_x;
      const double *base = which == 0 ? c.w : c.x;
      size_t n = which == 0 ? nw : nx;
      double gmax = 0.0;

      host = tach_ref_to_float (base, n);
      for (size_t i = 0; i < n; i++)
        gmax = fmax (gmax, fabs (grad[i]));
      g_assert_cmpfloat (gmax, >, 0.0);
      for (int probe = 0; probe < 12; probe++)
        {
          size_t i = tach_rand_bits (831, which, probe) % n;
          float keep = host[i];
          double lp, lm, fd;

          host[i] = keep + eps;
          upload_probe (be, &d, &layout, which, host, dev, n);
          lp = backend_lstm_loss (be, plan, &c, d_x, d_w, d_y, reserve);
          host[i] = keep - eps;
          upload_probe (be, &d, &layout, which, host, dev, n);
          lm = backend_lstm_loss (be, plan, &c, d_x, d_w, d_y, reserve);
          host[i] = keep;
          upload_probe (be, &d, &layout, which, host, dev, n);
          fd = (lp - lm) / (2.0 * ((double) (keep + eps) - (double) keep));
          g_test_message ("lstm fd %s[%zu]: fd %.6g backend %.6g", which == 0 ? "w" : "x",
                          i, fd, (double) grad[i]);
          g_assert_true (isfinite (fd));
          g_assert_cmpfloat (fabs (fd - grad[i]), <=, 1e-3 * gmax + 1e-2 * fabs (grad[i]));
        }
      g_clear_pointer (&host, g_free);
    }
  tach_lstm_plan_free (be, plan);
  lstm_case_clear (&c);
}

/* One cell step; h is written into a wider buffer (row stride ldh), as the
 * unrolled layer writes one direction's half of y. */
static void
test_lstm_cell (TachBackend *be)
{
  enum { N = 3, H = 5, LD = 2 * H + 1 };
  for (int variant = 0; variant < 4; variant++)
    {
      gboolean has_prev = variant & 1, has_grads = (variant >> 1) & 1;
      g_autofree char *what = g_strdup_printf ("lstm_cell c_prev=%d dh/dc=%d", has_prev, has_grads);
      double gates[N * 4 * H], bias[4 * H], c_prev[N * H], c[N * H], h[N * LD];
      double dh[N * LD], dc[N * H], dgates[N * 4 * H], dc_prev[N * H];
      g_autofree float *got = NULL;
      g_autofree float *h_before = NULL;
      float *d_gates, *d_bias, *d_cprev = NULL, *d_c, *d_h, *d_dh = NULL, *d_dc = NULL;
      float *d_dgates, *d_dcprev;

      tach_ref_fill_normal (gates, N * 4 * H, 840 + variant, 1, 1.0);
      tach_ref_fill_normal (bias, 4 * H, 840 + variant, 2, 0.5);
      tach_ref_fill_normal (c_prev, N * H, 840 + variant, 3, 1.0);
      tach_ref_fill_normal (h, N * LD, 840 + variant, 4, 1.0);
      tach_ref_fill_normal (dh, N * LD, 840 + variant, 5, 1.0);
      tach_ref_fill_normal (dc, N * H, 840 + variant, 6, 1.0);
      tach_ref_round_to_float (gates, N * 4 * H);
      tach_ref_round_to_float (bias, 4 * H);
      tach_ref_round_to_float (c_prev, N * H);
      tach_ref_round_to_float (h, N * LD);
      tach_ref_round_to_float (dh, N * LD);
      tach_ref_round_to_float (dc, N * H);
      h_before = tach_ref_to_float (h, N * LD);

      d_gates = tach_ops_upload_d (be, gates, N * 4 * H);
      d_bias = tach_ops_upload_d (be, bias, 4 * H);
      if (has_prev)
        d_cprev = tach_ops_upload_d (be, c_prev, N * H);
      d_c = tach_ops_alloc (be, N * H * sizeof (float));
      d_h = tach_ops_upload_d (be, h, N * LD);
      if (has_grads)
        {
          d_dh = tach_ops_upload_d (be, dh, N * LD);
          d_dc = tach_ops_upload_d (be, dc, N * H);
        }
      d_dgates = tach_ops_alloc (be, N * 4 * H * sizeof (float));
      d_dcprev = tach_ops_alloc (be, N * H * sizeof (float));
      tach_op (be, lstm_cell_fwd, N, H, d_gates, d_bias, d_cprev, d_c, d_h, LD);
      /* dc_prev is optional: the first step of a sequence has no use for it. */
      tach_op (be, lstm_cell_bwd, N, H, d_gates, d_cprev, d_c, d_dh, LD, d_dc, d_dgates,
               has_prev ? d_dcprev : NULL);

      tach_ref_lstm_cell_fwd (N, H, gates, bias, has_prev ? c_prev : NULL, c, h, LD);
      /* With dh and dc both absent, the cell's output has no gradient at all;
       * the variant then checks that the op writes zeros, not garbage. */
      tach_ref_lstm_cell_bwd (N, H, gates, has_prev ? c_prev : NULL, c, has_grads ? dh : NULL, LD,
                              has_grads ? dc : NULL, dgates, dc_prev);

      got = tach_ops_download_f (be, d_gates, N * 4 * H);
      tach_ops_assert_nmse (what, got, gates, N * 4 * H, TACH_OPS_NMSE_SIMPLE);
      g_free (got);
      got = tach_ops_download_f (be, d_c, N * H);
      tach_ops_assert_nmse ("lstm_cell_fwd c", got, c, N * H, TACH_OPS_NMSE_SIMPLE);
      g_free (got);
      got = tach_ops_download_f (be, d_h, N * LD);
      tach_ops_assert_nmse ("lstm_cell_fwd h", got, h, N * LD, TACH_OPS_NMSE_SIMPLE);
      for (int r = 0; r < N; r++)
        for (int j = H; j < LD; j++)
          g_assert_cmpfloat (got[r * LD + j], ==, h_before[r * LD + j]);
      g_free (got);
      got = tach_ops_download_f (be, d_dgates, N * 4 * H);
      tach_ops_assert_nmse ("lstm_cell_bwd dgates", got, dgates, N * 4 * H, TACH_OPS_NMSE_SIMPLE);
      g_clear_pointer (&got, g_free);
      if (has_prev)
        {
          got = tach_ops_download_f (be, d_dcprev, N * H);
          tach_ops_assert_nmse ("lstm_cell_bwd dc_prev", got, dc_prev, N * H, TACH_OPS_NMSE_SIMPLE);
        }
    }
}

/* The forward pass of @c's inference plan on @run, a second CPU backend,
 * over buffers of the test's backend @be (host memory on both). */
static float *
cpu_lstm_forward_on (TachBackend *be, TachBackend *run, const LstmCase *c)
{
  size_t nx = lstm_x_len (&c->d), ny = lstm_y_len (&c->d), nw = tach_ref_lstm_weights (&c->d);
  TachLstmPlan *plan = tach_lstm_plan_new (run, &c->d);
  float *d_x = tach_ops_upload_d (be, c->x, nx);
  float *d_w = tach_ops_upload_d (be, c->w, nw);
  float *d_y = tach_ops_alloc (be, ny * sizeof (float));

  tach_ops_assert_ok (run);
  g_assert_nonnull (plan);
  tach_op (run, lstm_fwd, plan, d_x, d_w, d_y, NULL);
  tach_lstm_plan_free (run, plan);
  tach_ops_assert_ok (run);
  return tach_ops_download_f (be, d_y, ny);
}

/* Inference of a few streams with H >= 32 may split its hidden units
 * between the CPU backend's threads (forced here, TACH_CPU_LSTM_SPLIT:
 * where it runs is measured): against the reference, and bit for bit
 * against one thread (the serial pass), in both directions and layouts,
 * with a span of units that is not a whole number of vectors (H = 40). */
static void
test_lstm_split (TachBackend *be)
{
  static const int hs[] = { 40, 100 };
  static const int ns[] = { 1, 3 };
  g_autoptr(GError) error = NULL;
  TachBackend *one = tach_backend_new ("cpu", 1, TACH_PRECISION_FP32, &error);

  g_assert_no_error (error);
  g_setenv ("TACH_CPU_LSTM_SPLIT", "always", TRUE);
  for (guint hi = 0; hi < G_N_ELEMENTS (hs); hi++)
    for (guint ni = 0; ni < G_N_ELEMENTS (ns); ni++)
      for (int dirs = 1; dirs <= 2; dirs++)
        for (int time_major = 0; time_major < 2; time_major++)
          {
            TachLstmDesc d = { 4, ns[ni], 24, hs[hi], dirs, time_major, FALSE, FALSE,
                               TACH_PRECISION_FP32 };
            g_autofree char *what = g_strdup_printf ("lstm_fwd split H=%d N=%d dirs=%d%s",
                                                     d.H, d.N, dirs,
                                                     time_major ? " time-major" : "");
            g_autofree double *y = g_new (double, lstm_y_len (&d));
            g_autofree float *got = NULL;
            g_autofree float *serial = NULL;
            LstmCase c;

            lstm_case_init (&c, &d, 900 + hi * 8 + ni * 4 + dirs * 2 + time_major);
            backend_lstm (be, &c, &got, NULL, NULL);
            serial = cpu_lstm_forward_on (be, one, &c);
            tach_ref_lstm_fwd (&d, c.x, c.w, y);
            tach_ops_assert_nmse (what, got, y, lstm_y_len (&d), TACH_OPS_NMSE_DEEP);
            g_assert_cmpmem (got, lstm_y_len (&d) * sizeof (float), serial,
                             lstm_y_len (&d) * sizeof (float));
            lstm_case_clear (&c);
          }
  g_unsetenv ("TACH_CPU_LSTM_SPLIT");
  tach_backend_free (one);
}

void
tach_ops_register_lstm (const char *device_id)
{
  if (device_id == NULL)
    {
      tach_ops_register_lstm_ref ();
      return;
    }
  tach_ops_add (device_id, "lstm/forward", test_lstm_forward);
  tach_ops_add (device_id, "lstm/backward", test_lstm_backward);
  tach_ops_add (device_id, "lstm/misread", test_lstm_misread);
  tach_ops_add_precisions (device_id, "lstm/shapes", test_lstm_shapes);
  tach_ops_add (device_id, "lstm/finite-difference", test_lstm_finite_difference);
  tach_ops_add (device_id, "lstm-cell/forward-backward", test_lstm_cell);
  if (g_strcmp0 (device_id, "cpu") == 0)
    tach_ops_add (device_id, "lstm/split", test_lstm_split);
  tach_ops_register_lstm_wspace (device_id);
}
