/* test-ops-conv.c: convolution (with padding, with and without dx, fp32 and
 * bf16) and both poolings; the convolution block is in test-ops-conv-block.c. */
#include <math.h>
#include <string.h>

#include "test-ops-conv.h"

static const TachConvDesc conv_descs[] = {
  /* N  C  H  W  K  R  S  pad_h pad_w need_dx */
  {  2, 3, 6, 5, 4, 3, 3, 1, 1, TRUE,  TACH_PRECISION_FP32 },
  {  2, 2, 7, 6, 3, 5, 5, 2, 2, FALSE, TACH_PRECISION_FP32 },  /* W3's 5x5 "same" */
  {  1, 3, 5, 6, 2, 3, 2, 0, 1, TRUE,  TACH_PRECISION_FP32 },  /* uneven kernel and padding */
};


void
conv_case_init (ConvCase *c, const TachConvDesc *d, guint64 seed)
{
  c->d = *d;
  tach_ref_conv_out_size (d, &c->oh, &c->ow);
  c->nx = (size_t) d->N * d->C * d->H * d->W;
  c->nw = (size_t) d->K * d->C * d->R * d->S;
  c->ny = (size_t) d->N * d->K * c->oh * c->ow;
  c->x = g_new (double, c->nx);
  c->w = g_new (double, c->nw);
  c->b = g_new (double, d->K);
  c->dy = g_new (double, c->ny);
  tach_ref_fill_normal (c->x, c->nx, seed, 1, 1.0);
  tach_ref_fill_normal (c->w, c->nw, seed, 2, 0.5);
  tach_ref_fill_normal (c->b, d->K, seed, 3, 0.5);
  tach_ref_fill_normal (c->dy, c->ny, seed, 4, 1.0);
  tach_ref_round_to_float (c->x, c->nx);
  tach_ref_round_to_float (c->w, c->nw);
  tach_ref_round_to_float (c->b, d->K);
  tach_ref_round_to_float (c->dy, c->ny);
}

void
conv_case_clear (ConvCase *c)
{
  g_free (c->x);
  g_free (c->w);
  g_free (c->b);
  g_free (c->dy);
}

/* Outputs that the op overwrites start as garbage, to see that they are. */
void
fill_sentinel (TachBackend *be, float *dev, size_t n)
{
  g_autofree float *s = g_new (float, n);

  for (size_t i = 0; i < n; i++)
    s[i] = 7.0f;
  tach_backend_upload (be, dev, s, n * sizeof (float));
}

float *
upload_sentinel (TachBackend *be, size_t n)
{
  float *dev = tach_ops_alloc (be, n * sizeof (float));

  fill_sentinel (be, dev, n);
  return dev;
}

/* Whether @be can run @precision; a skip (with the backend's reason) if
 * not. */
gboolean
precision_or_skip (TachBackend *be, TachPrecision precision)
{
  const char *why = NULL;

  if (precision != TACH_PRECISION_BF16
      || tach_backend_supports (be->device->id, "precision", "bf16", &why))
    return TRUE;
  g_test_skip_printf ("bf16 on %s: %s", be->device->id, why != NULL ? why : "unsupported");
  return FALSE;
}

/* W3's first layer at a small batch: 5x5 "same" over 14x14, 8 filters. */
static const TachConvDesc wide_descs[] = {
  { 4, 3, 14, 14, 8, 5, 5, 2, 2, TRUE, TACH_PRECISION_FP32 },
};

/* bf16 rounds data and weights to 8 significant bits and accumulates in
 * fp32 (fp16 to 11; tf32 keeps 10 bits of the products): the thresholds
 * are the precision's (tach_ops_nmse_limit). */
static void
run_conv_descs (TachBackend *be, const TachConvDesc *descs, guint n_descs, gboolean backward,
                TachPrecision precision)
{
  double nmse = tach_ops_nmse_limit (precision, TRUE);

  if (!precision_or_skip (be, precision))
    return;
  for (guint k = 0; k < n_descs; k++)
    {
      ConvCase c;
      g_autofree double *y = NULL;
      g_autofree double *dx = NULL;
      g_autofree double *dw = NULL;
      g_autofree double *db = NULL;
      g_autofree float *got = NULL;
      g_autofree char *what = NULL;
      TachConvPlan *plan;
      float *d_x, *d_w, *d_b, *d_y, *d_dy, *d_dx = NULL, *d_dw, *d_db;

      conv_case_init (&c, &descs[k], 1000 + k);
      c.d.precision = precision;
      y = g_new (double, c.ny);
      dx = g_new (double, c.nx);
      dw = g_new (double, c.nw);
      db = g_new (double, c.d.K);
      plan = tach_conv_plan_new (be, &c.d);
      tach_ops_assert_ok (be);
      g_assert_nonnull (plan);
      d_x = tach_ops_upload_d (be, c.x, c.nx);
      d_w = tach_ops_upload_d (be, c.w, c.nw);
      d_b = tach_ops_upload_d (be, c.b, c.d.K);
      d_y = upload_sentinel (be, c.ny);
      d_dy = tach_ops_upload_d (be, c.dy, c.ny);
      if (c.d.need_dx)
        d_dx = upload_sentinel (be, c.nx);
      d_dw = upload_sentinel (be, c.nw);
      d_db = upload_sentinel (be, c.d.K);
      tach_op (be, conv_fwd, plan, d_x, d_w, d_b, d_y);
      tach_ref_conv_fwd (&c.d, c.x, c.w, c.b, y);
      what = g_strdup_printf ("conv %d: y", k);
      got = tach_ops_download_f (be, d_y, c.ny);
      tach_ops_assert_nmse (what, got, y, c.ny, nmse);
      g_clear_pointer (&got, g_free);
      g_clear_pointer (&what, g_free);
      if (!backward)
        {
          tach_conv_plan_free (be, plan);
          conv_case_clear (&c);
          continue;
        }

      tach_op (be, conv_bwd, plan, d_x, d_w, d_dy, d_dx, d_dw, d_db);
      tach_ref_conv_bwd (&c.d, c.x, c.w, c.dy, dx, dw, db);
      what = g_strdup_printf ("conv %d: dw", k);
      got = tach_ops_download_f (be, d_dw, c.nw);
      tach_ops_assert_nmse (what, got, dw, c.nw, nmse);
      g_free (got);
      g_free (what);
      what = g_strdup_printf ("conv %d: db", k);
      got = tach_ops_download_f (be, d_db, c.d.K);
      tach_ops_assert_nmse (what, got, db, c.d.K, nmse);
      g_clear_pointer (&got, g_free);
      if (c.d.need_dx)
        {
          g_free (what);
          what = g_strdup_printf ("conv %d: dx", k);
          got = tach_ops_download_f (be, d_dx, c.nx);
          tach_ops_assert_nmse (what, got, dx, c.nx, nmse);
        }
      tach_conv_plan_free (be, plan);
      conv_case_clear (&c);
    }
}

static void
run_conv (TachBackend *be, gboolean backward, TachPrecision precision)
{
  run_conv_descs (be, conv_descs, G_N_ELEMENTS (conv_descs), backward, precision);
}

/* At the backend's precision (the math mode pinned when it was opened). */
static void
test_conv_wide (TachBackend *be)
{
  run_conv_descs (be, wide_descs, G_N_ELEMENTS (wide_descs), TRUE, be->precision);
}

static void
test_conv_forward (TachBackend *be)
{
  run_conv (be, FALSE, TACH_PRECISION_FP32);
}

static void
test_conv_backward (TachBackend *be)
{
  run_conv (be, TRUE, TACH_PRECISION_FP32);
}

static void
test_conv_bf16 (TachBackend *be)
{
  run_conv (be, TRUE, TACH_PRECISION_BF16);
}

static double
conv_loss (gpointer data)
{
  ConvCase *c = data;
  g_autofree double *y = g_new (double, c->ny);
  double s = 0.0;

  tach_ref_conv_fwd (&c->d, c->x, c->w, c->b, y);
  for (size_t i = 0; i < c->ny; i++)
    s += y[i] * c->dy[i];
  return s;
}

static void
test_ref_conv_gradient (void)
{
  for (guint k = 0; k < G_N_ELEMENTS (conv_descs); k++)
    {
      ConvCase c;
      g_autofree double *dx = NULL;
      g_autofree double *dw = NULL;
      g_autofree double *db = NULL;

      conv_case_init (&c, &conv_descs[k], 1010 + k);
      dx = g_new (double, c.nx);
      dw = g_new (double, c.nw);
      db = g_new (double, c.d.K);
      tach_ref_conv_bwd (&c.d, c.x, c.w, c.dy, dx, dw, db);
      g_assert_cmpfloat (tach_ops_fd_error (conv_loss, &c, c.x, c.nx, dx, 1e-5), <, 1e-8);
      g_assert_cmpfloat (tach_ops_fd_error (conv_loss, &c, c.w, c.nw, dw, 1e-5), <, 1e-8);
      g_assert_cmpfloat (tach_ops_fd_error (conv_loss, &c, c.b, c.d.K, db, 1e-5), <, 1e-8);
      conv_case_clear (&c);
    }
}

/* A 1x1 image under a 3x3 kernel with padding 1 sees only the centre tap,
 * which pins the orientation (cross-correlation, not flipped). */
static void
test_ref_conv_by_hand (void)
{
  TachConvDesc d = { 1, 1, 2, 2, 1, 3, 3, 1, 1, TRUE, TACH_PRECISION_FP32 };
  double x[4] = { 1, 2, 3, 4 }, w[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, b = 0.5, y[4];

  tach_ref_conv_fwd (&d, x, w, &b, y);
  /* y[0,0] = x00*w11 + x01*w12 + x10*w21 + x11*w22 + b */
  g_assert_cmpfloat (y[0], ==, 1 * 5 + 2 * 6 + 3 * 8 + 4 * 9 + 0.5);
  /* y[1,1] = x00*w00 + x01*w01 + x10*w10 + x11*w11 + b */
  g_assert_cmpfloat (y[3], ==, 1 * 1 + 2 * 2 + 3 * 4 + 4 * 5 + 0.5);
}

enum { PN = 2, PC = 3, PH = 6, PW = 8, PHW = 10 };

/* 2x2 max pooling, also over an odd height (the last row is dropped). */
static void
test_maxpool (TachBackend *be)
{
  static const int shapes[][4] = { { PN, PC, PH, PW }, { 3, 4, 9, 12 } };

  for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      int n = shapes[s][0], c = shapes[s][1], h = shapes[s][2], w = shapes[s][3];
      size_t nx = (size_t) n * c * h * w, ny = (size_t) n * c * (h / 2) * (w / 2);
      g_autofree double *x = g_new (double, nx);
      g_autofree double *y = g_new (double, ny);
      g_autofree double *dy = g_new (double, ny);
      g_autofree double *dx = g_new (double, nx);
      g_autofree float *got = NULL;
      float *d_x, *d_y, *d_dy, *d_dx;
      int32_t *d_idx;

      tach_ref_fill_normal (x, nx, 1100 + s, 1, 1.0);
      tach_ref_fill_normal (dy, ny, 1100 + s, 2, 1.0);
      tach_ref_round_to_float (x, nx);
      tach_ref_round_to_float (dy, ny);
      d_x = tach_ops_upload_d (be, x, nx);
      d_y = upload_sentinel (be, ny);
      d_idx = tach_ops_alloc (be, ny * sizeof (int32_t));
      d_dy = tach_ops_upload_d (be, dy, ny);
      d_dx = upload_sentinel (be, nx);
      tach_op (be, maxpool_fwd, d_x, d_y, d_idx, n, c, h, w);
      tach_op (be, maxpool_bwd, d_dy, d_idx, d_dx, n, c, h, w);

      tach_ref_maxpool_fwd (x, y, n, c, h, w);
      tach_ref_maxpool_bwd (x, dy, dx, n, c, h, w);
      got = tach_ops_download_f (be, d_y, ny);
      tach_ops_assert_nmse ("maxpool_fwd", got, y, ny, TACH_OPS_NMSE_SIMPLE);
      g_free (got);
      got = tach_ops_download_f (be, d_dx, nx);
      tach_ops_assert_nmse ("maxpool_bwd", got, dx, nx, TACH_OPS_NMSE_SIMPLE);
    }
}

static void
test_avgpool (TachBackend *be)
{
  size_t nx = PN * PC * PHW, ny = PN * PC;
  g_autofree double *x = g_new (double, nx);
  g_autofree double *y = g_new (double, ny);
  g_autofree double *dy = g_new (double, ny);
  g_autofree double *dx = g_new (double, nx);
  g_autofree float *got = NULL;
  float *d_x, *d_y, *d_dy, *d_dx;

  tach_ref_fill_normal (x, nx, 1110, 1, 1.0);
  tach_ref_fill_normal (dy, ny, 1110, 2, 1.0);
  tach_ref_round_to_float (x, nx);
  tach_ref_round_to_float (dy, ny);
  d_x = tach_ops_upload_d (be, x, nx);
  d_y = upload_sentinel (be, ny);
  d_dy = tach_ops_upload_d (be, dy, ny);
  d_dx = upload_sentinel (be, nx);
  tach_op (be, avgpool_fwd, d_x, d_y, PN, PC, PHW);
  tach_op (be, avgpool_bwd, d_dy, d_dx, PN, PC, PHW);

  tach_ref_avgpool_fwd (x, y, PN, PC, PHW);
  tach_ref_avgpool_bwd (dy, dx, PN, PC, PHW);
  got = tach_ops_download_f (be, d_y, ny);
  tach_ops_assert_nmse ("avgpool_fwd", got, y, ny, TACH_OPS_NMSE_SIMPLE);
  g_free (got);
  got = tach_ops_download_f (be, d_dx, nx);
  tach_ops_assert_nmse ("avgpool_bwd", got, dx, nx, TACH_OPS_NMSE_SIMPLE);
}

typedef struct {
  double *x, *r;
  int     max;
} PoolLoss;

static double
pool_loss (gpointer data)
{
  PoolLoss *l = data;
  double y[PN * PC * (PH / 2) * (PW / 2)], s = 0.0;
  size_t ny = l->max ? G_N_ELEMENTS (y) : PN * PC;

  if (l->max)
    tach_ref_maxpool_fwd (l->x, y, PN, PC, PH, PW);
  else
    tach_ref_avgpool_fwd (l->x, y, PN, PC, PHW);
  for (size_t i = 0; i < ny; i++)
    s += y[i] * l->r[i];
  return s;
}

static void
test_ref_pool_gradient (void)
{
  double x[PN * PC * PH * PW], r[PN * PC * (PH / 2) * (PW / 2)], dx[PN * PC * PH * PW];
  PoolLoss l = { x, r, 1 };

  tach_ref_fill_normal (x, G_N_ELEMENTS (x), 1120, 1, 1.0);
  tach_ref_fill_normal (r, G_N_ELEMENTS (r), 1120, 2, 1.0);
  tach_ref_maxpool_bwd (x, r, dx, PN, PC, PH, PW);
  g_assert_cmpfloat (tach_ops_fd_error (pool_loss, &l, x, G_N_ELEMENTS (x), dx, 1e-6), <, 1e-8);
  l.max = 0;
  tach_ref_avgpool_bwd (r, dx, PN, PC, PHW);
  g_assert_cmpfloat (tach_ops_fd_error (pool_loss, &l, x, PN * PC * PHW, dx, 1e-6), <, 1e-8);
}

/* A processor without AVX-512 BF16 (here: oneDNN capped below it, in a
 * child process, as the cap is read once) reports bf16 as unavailable, with
 * a reason, and refuses a bf16 backend instead of running it slowly in
 * emulation. */
static void
test_bf16_unavailable (TachBackend *be)
{
  g_autoptr(GError) error = NULL;
  const char *why = NULL;
  TachBackend *capped;

  if (g_test_subprocess ())
    {
      g_assert_false (tach_backend_supports ("cpu", "precision", "bf16", &why));
      g_assert_nonnull (why);
      g_assert_nonnull (strstr (why, "AVX-512 BF16"));
      capped = tach_backend_new ("cpu", 1, TACH_PRECISION_BF16, &error);
      g_assert_null (capped);
      g_assert_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED);
      return;
    }
  g_setenv ("ONEDNN_MAX_CPU_ISA", "AVX512_CORE", TRUE);
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_unsetenv ("ONEDNN_MAX_CPU_ISA");
  g_test_trap_assert_passed ();
}

void
tach_ops_register_conv (const char *device_id)
{
  if (device_id == NULL)
    {
      tach_ops_add_ref ("conv/gradient", test_ref_conv_gradient);
      tach_ops_add_ref ("conv/by-hand", test_ref_conv_by_hand);
      tach_ops_add_ref ("pool/gradient", test_ref_pool_gradient);
      return;
    }
  tach_ops_add (device_id, "conv/forward", test_conv_forward);
  tach_ops_add (device_id, "conv/backward", test_conv_backward);
  tach_ops_add (device_id, "conv/bf16", test_conv_bf16);
  tach_ops_add_precisions (device_id, "conv/wide", test_conv_wide);
  tach_ops_register_conv_block (device_id);
  if (g_strcmp0 (device_id, "cpu") == 0)
    tach_ops_add (device_id, "precision/bf16-unavailable", test_bf16_unavailable);
  tach_ops_add (device_id, "maxpool/forward-backward", test_maxpool);
  tach_ops_add (device_id, "avgpool/forward-backward", test_avgpool);
}
