/* test-ops-common.c: the runner and helpers of the numeric op tests. */
#include <math.h>
#include <string.h>

#include "test-ops-common.h"

typedef struct {
  char          *device_id;
  TachPrecision  precision;
  TachOpsFunc    func;
} OpsCase;

static const char *const precision_names[] = {
  [TACH_PRECISION_FP32] = "fp32", [TACH_PRECISION_TF32] = "tf32",
  [TACH_PRECISION_BF16] = "bf16", [TACH_PRECISION_FP16] = "fp16",
};

/* Device buffers of the running test, freed by run_case(). */
static GPtrArray *live_buffers;

static void
ops_case_free (gpointer data)
{
  OpsCase *c = data;

  g_free (c->device_id);
  g_free (c);
}

gboolean
tach_ops_device_present (const char *device_id)
{
  g_autoptr(GPtrArray) devices = tach_devices_list ();

  for (guint i = 0; i < devices->len; i++)
    {
      const TachDeviceInfo *info = g_ptr_array_index (devices, i);

      if (g_strcmp0 (info->id, device_id) == 0)
        return TRUE;
    }
  return FALSE;
}

static void
run_case (gconstpointer data)
{
  const OpsCase *c = data;
  g_autoptr(GError) error = NULL;
  TachBackend *be;

  if (!tach_ops_device_present (c->device_id))
    {
      g_test_skip_printf ("no device %s on this machine", c->device_id);
      return;
    }
  be = tach_backend_new (c->device_id, 2, c->precision, &error);
  if (be == NULL && g_error_matches (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED))
    {
      g_test_skip_printf ("%s at %s: %s", c->device_id, precision_names[c->precision],
                          error->message);
      return;
    }
  g_assert_no_error (error);
  g_assert_nonnull (be);

  live_buffers = g_ptr_array_new ();
  c->func (be);
  tach_ops_assert_ok (be);
  for (guint i = 0; i < live_buffers->len; i++)
    tach_backend_dealloc (be, g_ptr_array_index (live_buffers, i));
  g_clear_pointer (&live_buffers, g_ptr_array_unref);
  tach_backend_free (be);
}

double
tach_ops_nmse_limit (TachPrecision precision, gboolean deep)
{
  switch (precision)
    {
    case TACH_PRECISION_FP32: return deep ? TACH_OPS_NMSE_DEEP : TACH_OPS_NMSE_SIMPLE;
    case TACH_PRECISION_TF32: return 3e-4;
    case TACH_PRECISION_BF16:
    case TACH_PRECISION_FP16:
    default:                  return 1e-2;
    }
}

static void
add_case (const char *device_id, const char *path, TachPrecision precision, TachOpsFunc func)
{
  OpsCase *c = g_new0 (OpsCase, 1);
  g_autofree char *kind = g_strdup (device_id);
  g_autofree char *full = NULL;
  char *colon = strchr (kind, ':');

  /* "cuda:0" tests live under /engine/cuda/, "cpu" under /engine/cpu/. */
  if (colon != NULL)
    *colon = '\0';
  full = g_strdup_printf ("/engine/%s/%s", kind, path);
  c->device_id = g_strdup (device_id);
  c->precision = precision;
  c->func = func;
  g_test_add_data_func_full (full, c, run_case, ops_case_free);
}

void
tach_ops_add (const char *device_id, const char *path, TachOpsFunc func)
{
  add_case (device_id, path, TACH_PRECISION_FP32, func);
}

void
tach_ops_add_precisions (const char *device_id, const char *path, TachOpsFunc func)
{
  for (guint p = 0; p < G_N_ELEMENTS (precision_names); p++)
    {
      g_autofree char *full = NULL;

      /* Only what the backend offers: a CPU has no tf32, CUDA no bf16.  A
       * precision refused at run time (an ISA cap) skips in run_case(). */
      if (!tach_backend_supports (device_id, "precision", precision_names[p], NULL))
        continue;
      full = g_strdup_printf ("%s/%s", path, precision_names[p]);
      add_case (device_id, full, (TachPrecision) p, func);
    }
}

void
tach_ops_add_ref (const char *path, TachOpsRefFunc func)
{
  g_autofree char *full = g_strdup_printf ("/ref/%s", path);

  g_test_add_func (full, func);
}

void *
tach_ops_alloc (TachBackend *be, size_t bytes)
{
  /* Zero-sized requests still get a distinct buffer. */
  void *p = tach_backend_alloc (be, MAX (bytes, 16));

  tach_ops_assert_ok (be);
  g_assert_nonnull (p);
  g_ptr_array_add (live_buffers, p);
  return p;
}

float *
tach_ops_upload_f (TachBackend *be, const float *host, size_t n)
{
  float *dev = tach_ops_alloc (be, n * sizeof (float));

  tach_backend_upload (be, dev, host, n * sizeof (float));
  return dev;
}

float *
tach_ops_upload_d (TachBackend *be, const double *host, size_t n)
{
  g_autofree float *f = tach_ref_to_float (host, n);

  return tach_ops_upload_f (be, f, n);
}

int32_t *
tach_ops_upload_i (TachBackend *be, const int32_t *host, size_t n)
{
  int32_t *dev = tach_ops_alloc (be, n * sizeof (int32_t));

  tach_backend_upload (be, dev, host, n * sizeof (int32_t));
  return dev;
}

float *
tach_ops_download_f (TachBackend *be, const float *dev, size_t n)
{
  float *host = g_new (float, MAX (n, 1));

  tach_backend_download (be, host, dev, n * sizeof (float));
  tach_ops_assert_ok (be);
  return host;
}

double *
tach_ops_download_d (TachBackend *be, const float *dev, size_t n)
{
  g_autofree float *f = tach_ops_download_f (be, dev, n);

  return tach_ref_to_double (f, n);
}

int32_t *
tach_ops_download_i (TachBackend *be, const int32_t *dev, size_t n)
{
  int32_t *host = g_new (int32_t, MAX (n, 1));

  tach_backend_download (be, host, dev, n * sizeof (int32_t));
  tach_ops_assert_ok (be);
  return host;
}

float
tach_ops_download_scalar (TachBackend *be, const float *dev)
{
  float v = NAN;

  tach_backend_download (be, &v, dev, sizeof v);
  tach_ops_assert_ok (be);
  return v;
}

void
tach_ops_assert_ok (TachBackend *be)
{
  g_autoptr(GError) error = NULL;

  tach_backend_take_error (be, &error);
  g_assert_no_error (error);
}

void
tach_ops_assert_nmse (const char *what, const float *got, const double *want, size_t n,
                      double threshold)
{
  double e = tach_ref_nmse (got, want, n);

  g_test_message ("%s: NMSE %.3g (threshold %.1g)", what, e, threshold);
  if (!(e <= threshold))
    {
      /* Name the worst element so that a failure says where to look. */
      size_t worst = 0;
      double wd = -1.0;

      for (size_t i = 0; i < n; i++)
        {
          double d = isfinite (got[i]) ? fabs (got[i] - want[i]) : INFINITY;

          if (d > wd)
            {
              wd = d;
              worst = i;
            }
        }
      g_test_fail_printf ("%s: NMSE %.3g > %.1g; worst element %zu: got %.9g, expected %.9g",
                          what, e, threshold, worst, (double) got[worst], want[worst]);
    }
}

double
tach_ops_fd_error (TachOpsLossFunc loss, gpointer data, double *param, size_t n,
                   const double *grad, double eps)
{
  double gmax = 0.0, emax = 0.0;

  for (size_t i = 0; i < n; i++)
    gmax = fmax (gmax, fabs (grad[i]));
  g_assert_cmpfloat (gmax, >, 0.0);
  for (size_t i = 0; i < n; i++)
    {
      double keep = param[i], lp, lm;

      param[i] = keep + eps;
      lp = loss (data);
      param[i] = keep - eps;
      lm = loss (data);
      param[i] = keep;
      /* fmax() drops NaN, so a non-finite difference must end the check. */
      if (!isfinite (lp) || !isfinite (lm) || !isfinite (grad[i]))
        return INFINITY;
      emax = fmax (emax, fabs ((lp - lm) / (2.0 * eps) - grad[i]));
    }
  return emax / gmax;
}
