/* test-bilstm.c: the bilstm workload and the shared LSTM layer.
 *
 *   /engine/lstm-layer/fused-vs-unrolled   both paths give the same y, dx, dw
 *   /engine/lstm-layer/finite-differences  the unrolled gradients match central
 *                                          differences of sum (y * r)
 *   /engine/bilstm/modes                   every execution mode gives the same
 *                                          per-step losses (within 1e-4)
 *   /engine/bilstm/misread                 the layout misread changes the math
 *   /engine/bilstm/learns                  teacher labels: the loss falls on
 *                                          unseen batches; random labels: not
 */
#include <math.h>
#include <string.h>

#include "tach-backend.h"
#include "tach-rand.h"
#include "tach-lstm-layer.h"
#include "test-run-util.h"

#define LOSS_RTOL 1e-4

/* ---------------------------------------------------------------- layer */

typedef struct {
  TachLstmDesc desc;
  size_t n_x, n_y, n_w;
  float *x, *w, *r;        /* host inputs; r is dL/dy of L = sum (y * r) */
  float *dx_, *dy_, *dw_;  /* device */
  float *xd, *wd, *yd;
} LayerFixture;

static void
fill_normal (float *v, size_t n, guint64 seed, guint64 index, float scale)
{
  for (size_t e = 0; e < n; e++)
    v[e] = scale * (float) tach_rand_normal (seed, TACH_RAND_COUNTER (TACH_RAND_STREAM_DATA, index), e);
}

static void
fixture_init (LayerFixture *f, TachBackend *be, gboolean time_major, int dirs)
{
  f->desc = (TachLstmDesc) {
    .T = 5, .N = 3, .I = 6, .H = 4, .dirs = dirs,
    .time_major = time_major, .training = TRUE, .need_dx = TRUE,
    .precision = TACH_PRECISION_FP32,
  };
  f->n_x = (size_t) f->desc.T * f->desc.N * f->desc.I;
  f->n_y = (size_t) f->desc.T * f->desc.N * f->desc.H * dirs;
  f->n_w = tach_lstm_param_count (&f->desc);
  f->x = g_new (float, f->n_x);
  f->w = g_new (float, f->n_w);
  f->r = g_new (float, f->n_y);
  fill_normal (f->x, f->n_x, 11, 1, 1.0f);
  fill_normal (f->r, f->n_y, 11, 2, 1.0f);
  tach_lstm_init_params (&f->desc, 11, 0, f->w);
  /* Random biases too, so that their gradients are not trivially shaped. */
  for (int d = 0; d < dirs; d++)
    fill_normal (f->w + (d + 1) * f->n_w / dirs - 4 * f->desc.H, 4 * f->desc.H, 11, 3 + d, 0.5f);

  f->xd = tach_backend_alloc (be, f->n_x * sizeof (float));
  f->wd = tach_backend_alloc (be, f->n_w * sizeof (float));
  f->yd = tach_backend_alloc (be, f->n_y * sizeof (float));
  f->dy_ = tach_backend_alloc (be, f->n_y * sizeof (float));
  f->dx_ = tach_backend_alloc (be, f->n_x * sizeof (float));
  f->dw_ = tach_backend_alloc (be, f->n_w * sizeof (float));
  tach_backend_upload (be, f->xd, f->x, f->n_x * sizeof (float));
  tach_backend_upload (be, f->wd, f->w, f->n_w * sizeof (float));
  tach_backend_upload (be, f->dy_, f->r, f->n_y * sizeof (float));
  g_assert_true (tach_backend_ok (be));
}

static void
fixture_clear (LayerFixture *f, TachBackend *be)
{
  tach_backend_dealloc (be, f->xd);
  tach_backend_dealloc (be, f->wd);
  tach_backend_dealloc (be, f->yd);
  tach_backend_dealloc (be, f->dy_);
  tach_backend_dealloc (be, f->dx_);
  tach_backend_dealloc (be, f->dw_);
  g_free (f->x);
  g_free (f->w);
  g_free (f->r);
}

/* Runs forward and backward; y, dx, dw to host arrays (any may be NULL). */
static void
layer_run (LayerFixture *f, TachBackend *be, TachRnn rnn, TachCallSetup setup,
           float *y, float *dx, float *dw)
{
  g_autoptr (GError) error = NULL;
  TachLstmLayer *layer = tach_lstm_layer_new (be, &f->desc, rnn, setup);

  tach_lstm_layer_forward (layer, f->xd, f->wd, f->yd);
  tach_lstm_layer_backward (layer, f->xd, f->wd, f->yd, f->dy_, f->dx_, f->dw_);
  if (y != NULL)
    tach_backend_download (be, y, f->yd, f->n_y * sizeof (float));
  if (dx != NULL)
    tach_backend_download (be, dx, f->dx_, f->n_x * sizeof (float));
  if (dw != NULL)
    tach_backend_download (be, dw, f->dw_, f->n_w * sizeof (float));
  tach_lstm_layer_free (layer);
  tach_backend_take_error (be, &error);
  g_assert_no_error (error);
}

/* Largest |a - b| over the largest |b|. */
static double
rel_diff (const float *a, const float *b, size_t n)
{
  double num = 0.0, den = 1e-12;

  for (size_t i = 0; i < n; i++)
    {
      num = MAX (num, fabs ((double) a[i] - b[i]));
      den = MAX (den, fabs ((double) b[i]));
    }
  return num / den;
}

static void
test_layer_fused_vs_unrolled (void)
{
  TachBackend *be = test_cpu_backend ();

  for (int tm = 0; tm < 2; tm++)
    for (int dirs = 1; dirs <= 2; dirs++)
      {
        LayerFixture f;
        g_autofree float *y0 = NULL, *dx0 = NULL, *dw0 = NULL;
        g_autofree float *y1 = NULL, *dx1 = NULL, *dw1 = NULL;

        fixture_init (&f, be, tm, dirs);
        y0 = g_new (float, f.n_y); dx0 = g_new (float, f.n_x); dw0 = g_new (float, f.n_w);
        y1 = g_new (float, f.n_y); dx1 = g_new (float, f.n_x); dw1 = g_new (float, f.n_w);
        layer_run (&f, be, TACH_RNN_FUSED, TACH_CALL_SETUP_PERSISTENT, y0, dx0, dw0);
        layer_run (&f, be, TACH_RNN_UNROLLED, TACH_CALL_SETUP_PER_CALL, y1, dx1, dw1);
        g_test_message ("time_major=%d dirs=%d: y %.2g dx %.2g dw %.2g", tm, dirs,
                        rel_diff (y1, y0, f.n_y), rel_diff (dx1, dx0, f.n_x),
                        rel_diff (dw1, dw0, f.n_w));
        g_assert_cmpfloat (rel_diff (y1, y0, f.n_y), <, 1e-5);
        g_assert_cmpfloat (rel_diff (dx1, dx0, f.n_x), <, 1e-5);
        g_assert_cmpfloat (rel_diff (dw1, dw0, f.n_w), <, 1e-5);

        /* Per-call setup of the fused plan changes nothing either. */
        layer_run (&f, be, TACH_RNN_FUSED, TACH_CALL_SETUP_PER_CALL, y1, dx1, dw1);
        g_assert_cmpfloat (rel_diff (y1, y0, f.n_y), <, 1e-6);
        g_assert_cmpfloat (rel_diff (dw1, dw0, f.n_w), <, 1e-6);
        fixture_clear (&f, be);
      }
  tach_backend_free (be);
}

/* L = sum (y * r) for the current host x and w, in double. */
static double
layer_loss (LayerFixture *f, TachBackend *be, TachLstmLayer *layer, float *y)
{
  double loss = 0.0;

  tach_backend_upload (be, f->xd, f->x, f->n_x * sizeof (float));
  tach_backend_upload (be, f->wd, f->w, f->n_w * sizeof (float));
  tach_lstm_layer_forward (layer, f->xd, f->wd, f->yd);
  tach_backend_download (be, y, f->yd, f->n_y * sizeof (float));
  for (size_t i = 0; i < f->n_y; i++)
    loss += (double) y[i] * f->r[i];
  return loss;
}

static void
check_fd (LayerFixture *f, TachBackend *be, TachLstmLayer *layer, float *param, size_t n,
          const float *grad, const char *what)
{
  g_autofree float *y = g_new (float, f->n_y);
  const float eps = 1e-2f;

  /* About a dozen entries spread over the whole tensor (weights of both
   * directions, recurrent weights and biases included). */
  for (size_t i = 0; i < n; i += MAX (n / 13, 1))
    {
      float saved = param[i];
      double up, down, fd;

      param[i] = saved + eps;
      up = layer_loss (f, be, layer, y);
      param[i] = saved - eps;
      down = layer_loss (f, be, layer, y);
      param[i] = saved;
      fd = (up - down) / (2.0 * eps);
      if (fabs (fd - grad[i]) > 2e-3 * MAX (1.0, fabs (fd)))
        g_error ("%s[%" G_GSIZE_FORMAT "]: backward %g, finite differences %g", what, i,
                 grad[i], fd);
    }
}

static void
test_layer_finite_differences (void)
{
  TachBackend *be = test_cpu_backend ();

  for (int tm = 0; tm < 2; tm++)
    for (int dirs = 1; dirs <= 2; dirs++)
      {
        LayerFixture f;
        g_autofree float *dx = NULL, *dw = NULL;
        TachLstmLayer *layer;

        fixture_init (&f, be, tm, dirs);
        dx = g_new (float, f.n_x);
        dw = g_new (float, f.n_w);
        layer_run (&f, be, TACH_RNN_UNROLLED, TACH_CALL_SETUP_PERSISTENT, NULL, dx, dw);
        layer = tach_lstm_layer_new (be, &f.desc, TACH_RNN_UNROLLED, TACH_CALL_SETUP_PERSISTENT);
        check_fd (&f, be, layer, f.w, f.n_w, dw, "dw");
        check_fd (&f, be, layer, f.x, f.n_x, dx, "dx");
        g_assert_true (tach_backend_ok (be));
        tach_lstm_layer_free (layer);
        fixture_clear (&f, be);
      }
  tach_backend_free (be);
}

/* ------------------------------------------------------------ workload */

#define BILSTM_BASE "device=cpu batch=32 samples=256 warmup=0 seed=7 threads=1 rnn=fused " \
                    "layout=batch-major feed=resident sync=1 call-setup=persistent metrics=none"

/* Runs bilstm on the CPU with the small test shape plus @settings
 * ("key=value" words) and returns its per-step losses. */
static GArray *
run_losses (const char *settings, guint steps)
{
  g_autofree char *steps_s = g_strdup_printf ("steps=%u", steps);
  g_autoptr (TestRunResult) r = test_run_ok (TACH_WORKLOAD_BILSTM, BILSTM_BASE, steps_s, settings,
                                             NULL);

  g_assert_cmpuint (r->samples->len, ==, steps);
  for (guint i = 0; i < r->samples->len; i++)
    {
      const TachSample *s = &g_array_index (r->samples, TachSample, i);

      g_assert_cmpuint (s->step, ==, i);
      g_assert_true (isfinite (s->loss));
      if (strstr (settings, "metrics=accuracy") != NULL)
        g_assert_true (s->accuracy >= 0.0 && s->accuracy <= 1.0);
    }
  return g_steal_pointer (&r->losses);
}

static double
max_rel_loss_diff (GArray *a, GArray *b)
{
  double worst = 0.0;

  g_assert_cmpuint (a->len, ==, b->len);
  for (guint i = 0; i < a->len; i++)
    {
      double x = g_array_index (a, double, i), y = g_array_index (b, double, i);

      worst = MAX (worst, fabs (x - y) / MAX (fabs (y), 1e-12));
    }
  return worst;
}

static void
test_bilstm_modes (void)
{
  const char *modes[] = {
    "feed=host-f64", "feed=host-f32", "feed=prefetch",
    "rnn=unrolled", "rnn=unrolled call-setup=per-call", "call-setup=per-call",
    "sync=5", "sync=end", "metrics=accuracy",
    "feed=prefetch rnn=unrolled sync=end",
  };
  g_autoptr (GArray) ref = run_losses ("", 20);

  for (guint i = 0; i < G_N_ELEMENTS (modes); i++)
    {
      g_autoptr (GArray) other = run_losses (modes[i], 20);
      double diff = max_rel_loss_diff (other, ref);

      g_test_message ("%s: largest relative loss difference %.3g", modes[i], diff);
      if (diff >= LOSS_RTOL)
        g_error ("%s changes the losses: relative difference %.3g (limit %g)", modes[i], diff,
                 LOSS_RTOL);
    }
}

static void
test_bilstm_misread (void)
{
  g_autoptr (GArray) ref = run_losses ("", 5);
  g_autoptr (GArray) fused = run_losses ("layout=misread", 5);
  g_autoptr (GArray) unrolled = run_losses ("layout=misread rnn=unrolled", 5);

  /* The reported bug computes another function... */
  g_assert_cmpfloat (max_rel_loss_diff (fused, ref), >, 1e-3);
  /* ...but the same one whichever way the RNN runs. */
  g_assert_cmpfloat (max_rel_loss_diff (unrolled, fused), <, LOSS_RTOL);
}

static void
test_bilstm_learns (void)
{
  /* Every batch is new (80 steps of 64 over 5120 samples), so a falling
   * loss means the model generalises, not that it memorised its batches. */
  const char *shape = "batch=64 samples=5120";
  g_autofree char *teacher_s = g_strdup_printf ("%s labels=teacher", shape);
  g_autofree char *random_s = g_strdup_printf ("%s labels=random", shape);
  g_autoptr (GArray) teacher = run_losses (teacher_s, 80);
  g_autoptr (GArray) random = run_losses (random_s, 80);
  double t_first = test_mean (teacher, 0, 10), t_last = test_mean (teacher, 70, 10);
  double r_first = test_mean (random, 0, 10), r_last = test_mean (random, 70, 10);

  g_test_message ("mean loss of the first and last 10 steps: teacher %.4f -> %.4f, "
                  "random %.4f -> %.4f", t_first, t_last, r_first, r_last);
  g_assert_cmpfloat (t_last, <, t_first - 0.04);
  /* Random labels hold nothing to learn from unseen samples. */
  g_assert_cmpfloat (r_last, >, r_first - 0.02);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/lstm-layer/fused-vs-unrolled", test_layer_fused_vs_unrolled);
  g_test_add_func ("/engine/lstm-layer/finite-differences", test_layer_finite_differences);
  g_test_add_func ("/engine/bilstm/modes", test_bilstm_modes);
  g_test_add_func ("/engine/bilstm/misread", test_bilstm_misread);
  g_test_add_func ("/engine/bilstm/learns", test_bilstm_learns);
  return g_test_run ();
}
