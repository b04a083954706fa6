/* test-gpu.c: the CUDA backend against the double-precision reference,
 * graph replay against eager execution, and each workload's losses across
 * execution modes on the GPU.
 *
 * Without a usable CUDA device (no GPU, no driver, or a build without the
 * CUDA backend) the program exits 77 before registering anything, which
 * meson reports as skipped, never as passed.
 *
 * Thresholds on the normalised error (tach_ref_nmse), per precision, as
 * ../shared/gpu.md states them: fp32 well under 1e-5, tf32 about 3e-4,
 * fp16 under 1e-2; NaN and infinity never pass.
 */
#include <math.h>
#include <string.h>

#include "test-gpu.h"

const char *gpu_id = NULL;   /* "cuda:0" once found */

/* --------------------------------------------------------------- helpers */

double
nmse_limit (TachPrecision precision, gboolean deep)
{
  switch (precision)
    {
    case TACH_PRECISION_FP32: return deep ? 1e-8 : 1e-10;
    case TACH_PRECISION_TF32: return 3e-4;
    case TACH_PRECISION_FP16:
    case TACH_PRECISION_BF16:
    default:                  return 1e-2;
    }
}

TachBackend *
open_gpu (TachPrecision precision)
{
  g_autoptr(GError) error = NULL;
  TachBackend *be = tach_backend_new (gpu_id, 0, precision, &error);

  g_assert_no_error (error);
  g_assert_nonnull (be);
  return be;
}

void
assert_ok (TachBackend *be)
{
  g_autoptr(GError) error = NULL;

  tach_backend_synchronize (be);
  tach_backend_take_error (be, &error);
  g_assert_no_error (error);
}

/* A device copy of @n doubles, as float; freed with the backend. */
float *
up (TachBackend *be, const double *host, size_t n)
{
  g_autofree float *f = tach_ref_to_float (host, n);
  float *dev = tach_backend_alloc (be, sizeof (float) * MAX (n, 1));

  tach_backend_upload (be, dev, f, sizeof (float) * n);
  return dev;
}

double *
down (TachBackend *be, const float *dev, size_t n)
{
  g_autofree float *f = g_new (float, MAX (n, 1));

  tach_backend_download (be, f, dev, sizeof (float) * n);
  return tach_ref_to_double (f, n);
}

double *
random_doubles (size_t n, guint64 counter, double scale)
{
  double *x = g_new (double, n);

  tach_ref_fill_normal (x, n, SEED, counter, scale);
  tach_ref_round_to_float (x, n);
  return x;
}

void
check (const char *what, const float *dev_got, TachBackend *be, const double *want, size_t n,
       double limit)
{
  g_autofree double *got = down (be, dev_got, n);
  g_autofree float *gotf = tach_ref_to_float (got, n);
  double e = tach_ref_nmse (gotf, want, n);

  if (!(e <= limit))
    g_error ("%s: NMSE %.3g exceeds %.3g", what, e, limit);
}

/* ------------------------------------------------------------ the device */

static void
test_device (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TachDeviceInfo) info = tach_device_resolve (gpu_id, &error);

  g_assert_no_error (error);
  g_assert_cmpint (info->kind, ==, TACH_DEVICE_KIND_GPU);
  g_assert_cmpstr (info->name, !=, "");
  g_assert_cmpuint (info->memory_bytes, >, 1u << 30);
  g_assert_cmpfloat (info->peak_flops, >, 1e12);
  g_assert_nonnull (strstr (info->versions, "cuDNN 9."));
  g_assert_nonnull (strstr (info->versions, "cuBLAS"));
  g_test_message ("%s: %s, %s", info->id, info->name, info->versions);
}

/* ---------------------------------------------------------------- GEMM */

static void
test_gemm (gconstpointer data)
{
  TachPrecision precision = GPOINTER_TO_INT (data);
  TachBackend *be = open_gpu (precision);
  const int m = 37, n = 53, k = 129;

  for (int t = 0; t < 4; t++)
    {
      gboolean ta = t & 1, tb = t & 2;
      int lda = ta ? m : k, ldb = tb ? k : n;
      g_autofree double *a = random_doubles ((size_t) m * k, t * 10 + 1, 1.0);
      g_autofree double *b = random_doubles ((size_t) k * n, t * 10 + 2, 1.0);
      g_autofree double *c = random_doubles ((size_t) m * n, t * 10 + 3, 1.0);
      float *da = up (be, a, (size_t) m * k), *db = up (be, b, (size_t) k * n);
      float *dc = up (be, c, (size_t) m * n);

      tach_op (be, gemm, ta, tb, m, n, k, 0.5f, da, lda, db, ldb, 0.25f, dc, n);
      tach_ref_gemm (ta, tb, m, n, k, 0.5, a, lda, b, ldb, 0.25, c, n);
      check ("gemm", dc, be, c, (size_t) m * n, nmse_limit (precision, TRUE));
      tach_backend_dealloc (be, da);
      tach_backend_dealloc (be, db);
      tach_backend_dealloc (be, dc);
    }
  assert_ok (be);
  tach_backend_free (be);
}

/* ---------------------------------------------------------------- LSTM */

typedef struct {
  const char   *name;
  int           T, N, I, H, dirs;
  gboolean      time_major;
  TachPrecision precision;
} LstmCase;

static const LstmCase lstm_cases[] = {
  { "bidirectional/batch-major/fp32", 10, 16, 30, 40, 2, FALSE, TACH_PRECISION_FP32 },
  { "bidirectional/misread/fp32",     16, 10, 30, 40, 2, TRUE,  TACH_PRECISION_FP32 },
  { "unidirectional/time-major/fp32",  4,  8, 20, 24, 1, TRUE,  TACH_PRECISION_FP32 },
  { "bidirectional/batch-major/tf32", 10, 16, 30, 40, 2, FALSE, TACH_PRECISION_TF32 },
  { "bidirectional/batch-major/fp16", 10, 16, 30, 40, 2, FALSE, TACH_PRECISION_FP16 },
};

static void
test_lstm (gconstpointer data)
{
  const LstmCase *lc = data;
  TachBackend *be = open_gpu (lc->precision);
  TachLstmDesc d = { lc->T, lc->N, lc->I, lc->H, lc->dirs, lc->time_major, TRUE, TRUE, lc->precision };
  size_t nx = (size_t) d.T * d.N * d.I, ny = (size_t) d.T * d.N * d.dirs * d.H;
  size_t nw = tach_ref_lstm_weights (&d);
  g_autofree double *x = random_doubles (nx, 101, 1.0);
  g_autofree double *w = random_doubles (nw, 102, 0.2);
  g_autofree double *dy = random_doubles (ny, 103, 1.0);
  g_autofree double *y = g_new (double, ny);
  g_autofree double *dx = g_new (double, nx);
  g_autofree double *dw = g_new (double, nw);
  g_autofree double *junk = random_doubles (nw, 104, 5.0);
  TachLstmPlan *plan = tach_lstm_plan_new (be, &d);
  float *dev_x = up (be, x, nx), *dev_w = up (be, w, nw), *dev_dy = up (be, dy, ny);
  float *dev_y = tach_backend_alloc (be, sizeof (float) * ny);
  float *dev_dx = tach_backend_alloc (be, sizeof (float) * nx);
  float *dev_dw = up (be, junk, nw);
  void *reserve;

  assert_ok (be);
  reserve = tach_backend_alloc (be, MAX (tach_lstm_reserve_bytes (be, plan), 1));
  tach_ref_lstm_fwd (&d, x, w, y);
  tach_ref_lstm_bwd (&d, x, w, dy, dx, dw);

  /* Twice, over a gradient buffer full of junk: dw must be overwritten,
   * never accumulated. */
  for (int round = 0; round < 2; round++)
    {
      tach_op (be, lstm_fwd, plan, dev_x, dev_w, dev_y, reserve);
      tach_op (be, lstm_bwd, plan, dev_x, dev_w, dev_y, dev_dy, reserve, dev_dx, dev_dw);
      check ("lstm y", dev_y, be, y, ny, nmse_limit (lc->precision, TRUE));
      check ("lstm dx", dev_dx, be, dx, nx, nmse_limit (lc->precision, TRUE));
      check ("lstm dw", dev_dw, be, dw, nw, nmse_limit (lc->precision, TRUE));
    }
  assert_ok (be);
  tach_lstm_plan_free (be, plan);
  tach_backend_free (be);
}

/* Central differences on the GPU op itself: L = sum(y * r). */
static void
test_lstm_fd (void)
{
  TachBackend *be = open_gpu (TACH_PRECISION_FP32);
  TachLstmDesc d = { 5, 3, 4, 6, 2, FALSE, TRUE, TRUE, TACH_PRECISION_FP32 };
  size_t nx = (size_t) d.T * d.N * d.I, ny = (size_t) d.T * d.N * d.dirs * d.H;
  size_t nw = tach_ref_lstm_weights (&d);
  g_autofree double *x = random_doubles (nx, 201, 1.0);
  g_autofree double *w = random_doubles (nw, 202, 0.3);
  g_autofree double *r = random_doubles (ny, 203, 1.0);
  TachLstmPlan *plan = tach_lstm_plan_new (be, &d);
  float *dev_x = up (be, x, nx), *dev_w = up (be, w, nw), *dev_r = up (be, r, ny);
  float *dev_y = tach_backend_alloc (be, sizeof (float) * ny);
  float *dev_dw = tach_backend_alloc (be, sizeof (float) * nw);
  void *reserve = tach_backend_alloc (be, MAX (tach_lstm_reserve_bytes (be, plan), 1));
  g_autofree double *grad = NULL;
  double worst = 0.0, scale = 0.0;

  tach_op (be, lstm_fwd, plan, dev_x, dev_w, dev_y, reserve);
  tach_op (be, lstm_bwd, plan, dev_x, dev_w, dev_y, dev_r, reserve, NULL, dev_dw);
  grad = down (be, dev_dw, nw);
  for (size_t i = 0; i < nw; i += 7)
    {
      double loss[2];

      for (int s = 0; s < 2; s++)
        {
          double saved = w[i];
          g_autofree double *y = NULL;

          w[i] = saved + (s == 0 ? 1e-2 : -1e-2);
          tach_backend_dealloc (be, dev_w);
          dev_w = up (be, w, nw);
          tach_op (be, lstm_fwd, plan, dev_x, dev_w, dev_y, reserve);
          y = down (be, dev_y, ny);
          loss[s] = 0.0;
          for (size_t j = 0; j < ny; j++)
            loss[s] += y[j] * r[j];
          w[i] = saved;
        }
      worst = MAX (worst, fabs ((loss[0] - loss[1]) / 2e-2 - grad[i]));
      scale = MAX (scale, fabs (grad[i]));
    }
  assert_ok (be);
  g_assert_cmpfloat (scale, >, 0.0);
  g_assert_cmpfloat (worst / scale, <, 2e-2);
  tach_lstm_plan_free (be, plan);
  tach_backend_free (be);
}

static void
test_lstm_cell (void)
{
  TachBackend *be = open_gpu (TACH_PRECISION_FP32);
  const int n = 9, h = 13, ldh = 2 * h;
  size_t ng = (size_t) n * 4 * h, ns = (size_t) n * h;
  g_autofree double *gates = random_doubles (ng, 301, 1.0);
  g_autofree double *bias = random_doubles (4 * h, 302, 0.5);
  g_autofree double *c_prev = random_doubles (ns, 303, 1.0);
  g_autofree double *dh = random_doubles ((size_t) n * ldh, 304, 1.0);
  g_autofree double *dc = random_doubles (ns, 305, 1.0);
  g_autofree double *c = g_new0 (double, ns), *hout = g_new0 (double, (size_t) n * ldh);
  g_autofree double *dgates = g_new (double, ng), *dc_prev = g_new (double, ns);
  float *dev_g = up (be, gates, ng), *dev_b = up (be, bias, 4 * h), *dev_cp = up (be, c_prev, ns);
  float *dev_c = up (be, c, ns), *dev_h = up (be, hout, (size_t) n * ldh);
  float *dev_dh = up (be, dh, (size_t) n * ldh), *dev_dc = up (be, dc, ns);
  float *dev_dg = tach_backend_alloc (be, sizeof (float) * ng);
  float *dev_dcp = tach_backend_alloc (be, sizeof (float) * ns);

  tach_ref_lstm_cell_fwd (n, h, gates, bias, c_prev, c, hout, ldh);
  tach_op (be, lstm_cell_fwd, n, h, dev_g, dev_b, dev_cp, dev_c, dev_h, ldh);
  check ("cell gates", dev_g, be, gates, ng, 1e-10);
  check ("cell c", dev_c, be, c, ns, 1e-10);
  check ("cell h", dev_h, be, hout, (size_t) n * ldh, 1e-10);
  tach_ref_lstm_cell_bwd (n, h, gates, c_prev, c, dh, ldh, dc, dgates, dc_prev);
  tach_op (be, lstm_cell_bwd, n, h, dev_g, dev_cp, dev_c, dev_dh, ldh, dev_dc, dev_dg, dev_dcp);
  check ("cell dgates", dev_dg, be, dgates, ng, 1e-10);
  check ("cell dc_prev", dev_dcp, be, dc_prev, ns, 1e-10);
  assert_ok (be);
  tach_backend_free (be);
}

/* ------------------------------------------------------- convolution */

static void
test_conv (gconstpointer data)
{
  TachPrecision precision = GPOINTER_TO_INT (data);
  TachBackend *be = open_gpu (precision);
  TachConvDesc d = { 4, 3, 14, 14, 8, 5, 5, 2, 2, TRUE, precision };
  int oh, ow;
  size_t nx = (size_t) d.N * d.C * d.H * d.W, nw = (size_t) d.K * d.C * d.R * d.S, ny;
  g_autofree double *x = random_doubles (nx, 401, 1.0), *w = random_doubles (nw, 402, 0.2);
  g_autofree double *b = random_doubles (d.K, 403, 0.5);
  g_autofree double *y = NULL, *dy = NULL, *dx = g_new (double, nx), *dw = g_new (double, nw);
  g_autofree double *db = g_new (double, d.K);
  TachConvPlan *plan = tach_conv_plan_new (be, &d);
  float *dev_x = up (be, x, nx), *dev_w = up (be, w, nw), *dev_b = up (be, b, d.K);
  float *dev_y, *dev_dy, *dev_dx, *dev_dw, *dev_db;

  tach_ref_conv_out_size (&d, &oh, &ow);
  ny = (size_t) d.N * d.K * oh * ow;
  y = g_new (double, ny);
  dy = random_doubles (ny, 404, 1.0);
  dev_y = tach_backend_alloc (be, sizeof (float) * ny);
  dev_dy = up (be, dy, ny);
  dev_dx = tach_backend_alloc (be, sizeof (float) * nx);
  dev_dw = tach_backend_alloc (be, sizeof (float) * nw);
  dev_db = tach_backend_alloc (be, sizeof (float) * d.K);
  tach_ref_conv_fwd (&d, x, w, b, y);
  tach_ref_conv_bwd (&d, x, w, dy, dx, dw, db);
  tach_op (be, conv_fwd, plan, dev_x, dev_w, dev_b, dev_y);
  tach_op (be, conv_bwd, plan, dev_x, dev_w, dev_dy, dev_dx, dev_dw, dev_db);
  check ("conv y", dev_y, be, y, ny, nmse_limit (precision, TRUE));
  check ("conv dx", dev_dx, be, dx, nx, nmse_limit (precision, TRUE));
  check ("conv dw", dev_dw, be, dw, nw, nmse_limit (precision, TRUE));
  check ("conv db", dev_db, be, db, d.K, nmse_limit (precision, TRUE));
  assert_ok (be);
  tach_conv_plan_free (be, plan);
  tach_backend_free (be);
}

int
main (int argc, char **argv)
{
  g_autoptr(GPtrArray) devices = NULL;
  static char id[32];

  g_test_init (&argc, &argv, NULL);

  devices = tach_devices_list ();
  for (guint i = 0; i < devices->len && gpu_id == NULL; i++)
    {
      const TachDeviceInfo *info = g_ptr_array_index (devices, i);

      if (info->kind == TACH_DEVICE_KIND_GPU)
        {
          g_strlcpy (id, info->id, sizeof id);
          gpu_id = id;
        }
    }
  if (gpu_id == NULL)
    {
      g_print ("1..0 # SKIP no CUDA device (no GPU, no driver, or a build without CUDA)\n");
      return 77;
    }

  g_test_add_func ("/gpu/device", test_device);
  g_test_add_data_func ("/gpu/ops/gemm/fp32", GINT_TO_POINTER (TACH_PRECISION_FP32), test_gemm);
  g_test_add_data_func ("/gpu/ops/gemm/tf32", GINT_TO_POINTER (TACH_PRECISION_TF32), test_gemm);
  g_test_add_data_func ("/gpu/ops/gemm/fp16", GINT_TO_POINTER (TACH_PRECISION_FP16), test_gemm);
  for (guint i = 0; i < G_N_ELEMENTS (lstm_cases); i++)
    {
      g_autofree char *path = g_strconcat ("/gpu/ops/lstm/", lstm_cases[i].name, NULL);

      g_test_add_data_func (path, &lstm_cases[i], test_lstm);
    }
  g_test_add_func ("/gpu/ops/lstm/finite-differences", test_lstm_fd);
  g_test_add_func ("/gpu/ops/lstm-cell", test_lstm_cell);
  g_test_add_data_func ("/gpu/ops/conv/fp32", GINT_TO_POINTER (TACH_PRECISION_FP32), test_conv);
  g_test_add_data_func ("/gpu/ops/conv/tf32", GINT_TO_POINTER (TACH_PRECISION_TF32), test_conv);
  g_test_add_data_func ("/gpu/ops/conv/fp16", GINT_TO_POINTER (TACH_PRECISION_FP16), test_conv);
  gpu_add_kernel_tests ();
  gpu_add_mode_tests ();
  return g_test_run ();
}
