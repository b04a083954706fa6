/* test-shapes.c: the model-shape knobs (--seq-len, --features, --hidden,
 * --layers, --embed, --context, --filters, --dense) on the CPU.
 *
 *   /engine/shapes/lstm-stack/reference  a two-layer stack at a shape far
 *                                        from the reports' (T 7, I 33, H 64),
 *                                        uni- and bidirectional, batch- and
 *                                        time-major, fused and unrolled:
 *                                        y, dx and dw against the double
 *                                        reference layer by layer
 *   /engine/shapes/lstm-stack/one-layer  one layer is exactly the plain layer
 *   /engine/shapes/<workload>/modes      every execution mode gives the same
 *                                        losses at a non-default shape
 *   /engine/shapes/<workload>/defaults   the reports' shapes give today's
 *                                        losses (seed 7)
 *   /engine/shapes/knobs                 parsing, defaults, where they apply,
 *                                        memory messages naming the knob
 * The cnn's convolution blocks at --filters 12,20 are checked against the
 * double reference with the other blocks, on every backend (test-ops-conv.c).
 */
#include <math.h>
#include <string.h>

#include "tach-backend.h"
#include "tach-ref.h"
#include "tach-lstm-stack.h"
#include "tach-layers.h"
#include "test-run-util.h"

#define LOSS_RTOL 1e-4

static void
assert_nmse (const char *what, const float *got, const double *want, size_t n, double limit)
{
  double e = tach_ref_nmse (got, want, n);

  g_test_message ("%s: NMSE %.3g", what, e);
  if (!(e <= limit))
    g_error ("%s: NMSE %.3g above %.3g", what, e, limit);
}

/* ------------------------------------------------------------ the stack */

enum { ST = 7, SN = 3, SI = 33, SH = 64, SLAYERS = 2 };

static void
run_stack_case (TachBackend *be, int dirs, gboolean time_major, TachRnn rnn)
{
  TachLstmDesc desc = { .T = ST, .N = SN, .I = SI, .H = SH, .dirs = dirs,
                        .time_major = time_major, .training = TRUE, .need_dx = TRUE,
                        .precision = TACH_PRECISION_FP32 };
  TachLstmDesc d0, d1;
  size_t nx = (size_t) ST * SN * SI, ny = (size_t) ST * SN * dirs * SH;
  size_t nw = tach_lstm_stack_param_count (&desc, SLAYERS);
  size_t off1 = tach_lstm_stack_param_offset (&desc, 1);
  g_autofree double *x = g_new (double, nx), *w = g_new (double, nw), *dy = g_new (double, ny);
  g_autofree double *y0 = g_new (double, ny), *y = g_new (double, ny);
  g_autofree double *dy0 = g_new (double, ny), *dx = g_new (double, nx);
  g_autofree double *dw = g_new (double, nw);
  g_autofree float *xf = NULL, *wf = NULL, *dyf = NULL;
  g_autofree float *got_y = g_new (float, ny), *got_dx = g_new (float, nx);
  g_autofree float *got_dw = g_new (float, nw);
  g_autofree char *what = g_strdup_printf ("%s %s %s", dirs == 2 ? "bi" : "uni",
                                           time_major ? "time-major" : "batch-major",
                                           rnn == TACH_RNN_FUSED ? "fused" : "unrolled");
  g_autofree char *wy = NULL, *wx = NULL, *ww = NULL;
  float *xd, *wd, *yd, *dyd, *dxd, *dwd;
  TachLstmStack *stack;
  g_autoptr (TachLstmBlock) block = tach_lstm_block_new (be, &desc, SLAYERS, rnn, NULL);
  size_t nb = tach_lstm_block_floats (block);
  g_autofree float *wb = g_new (float, nb), *got_db = g_new (float, nb);

  tach_lstm_stack_layer_desc (&desc, 0, &d0);
  tach_lstm_stack_layer_desc (&desc, 1, &d1);
  g_assert_cmpint (d1.I, ==, dirs * SH);
  g_assert_true (d1.need_dx);
  g_assert_cmpuint (off1, ==, tach_lstm_param_count (&d0));
  g_assert_cmpuint (nw, ==, off1 + tach_lstm_param_count (&d1));

  tach_ref_fill_normal (x, nx, 5, 1, 1.0);
  tach_ref_fill_uniform (w, nw, 5, 2, -0.3, 0.3);
  tach_ref_fill_normal (dy, ny, 5, 3, 1.0);
  tach_ref_round_to_float (x, nx);
  tach_ref_round_to_float (w, nw);
  tach_ref_round_to_float (dy, ny);

  /* The reference, layer by layer: layer 1 reads layer 0's output, and
   * its input gradient is layer 0's output gradient. */
  tach_ref_lstm_fwd (&d0, x, w, y0);
  tach_ref_lstm_fwd (&d1, y0, w + off1, y);
  tach_ref_lstm_bwd (&d1, y0, w + off1, dy, dy0, dw + off1);
  tach_ref_lstm_bwd (&d0, x, w, dy0, dx, dw);

  xf = tach_ref_to_float (x, nx);
  wf = tach_ref_to_float (w, nw);
  dyf = tach_ref_to_float (dy, ny);
  xd = tach_backend_alloc (be, nx * sizeof (float));
  wd = tach_backend_alloc (be, nb * sizeof (float));
  yd = tach_backend_alloc (be, ny * sizeof (float));
  dyd = tach_backend_alloc (be, ny * sizeof (float));
  dxd = tach_backend_alloc (be, nx * sizeof (float));
  dwd = tach_backend_alloc (be, nb * sizeof (float));
  /* The weights go in through the block's views, as a model puts them. */
  tach_lstm_block_from_canonical (block, wf, wb);
  tach_backend_upload (be, xd, xf, nx * sizeof (float));
  tach_backend_upload (be, wd, wb, nb * sizeof (float));
  tach_backend_upload (be, dyd, dyf, ny * sizeof (float));
  /* Stale gradients must be overwritten, not added to. */
  tach_backend_upload (be, dwd, wb, nb * sizeof (float));

  stack = tach_lstm_stack_new (be, &desc, SLAYERS, rnn, TACH_CALL_SETUP_PERSISTENT, block);
  tach_lstm_stack_forward (stack, xd, wd, yd);
  tach_lstm_stack_backward (stack, xd, wd, yd, dyd, dxd, dwd);
  tach_backend_download (be, got_y, yd, ny * sizeof (float));
  tach_backend_download (be, got_dx, dxd, nx * sizeof (float));
  tach_backend_download (be, got_db, dwd, nb * sizeof (float));
  g_assert_true (tach_backend_ok (be));
  tach_lstm_block_to_canonical (block, got_db, got_dw);

  wy = g_strdup_printf ("stack %s y", what);
  wx = g_strdup_printf ("stack %s dx", what);
  ww = g_strdup_printf ("stack %s dw", what);
  assert_nmse (wy, got_y, y, ny, 1e-8);
  assert_nmse (wx, got_dx, dx, nx, 1e-8);
  assert_nmse (ww, got_dw, dw, nw, 1e-8);
  /* Both layers' blocks carry gradient (a wrong offset would leave one 0). */
  assert_nmse (ww, got_dw + off1, dw + off1, nw - off1, 1e-8);

  tach_lstm_stack_free (stack);
  tach_backend_dealloc (be, xd);
  tach_backend_dealloc (be, wd);
  tach_backend_dealloc (be, yd);
  tach_backend_dealloc (be, dyd);
  tach_backend_dealloc (be, dxd);
  tach_backend_dealloc (be, dwd);
}

static void
test_stack_reference (void)
{
  TachBackend *be = test_cpu_backend ();

  for (int dirs = 1; dirs <= 2; dirs++)
    for (int tm = 0; tm < 2; tm++)
      for (int rnn = TACH_RNN_FUSED; rnn <= TACH_RNN_UNROLLED; rnn++)
        run_stack_case (be, dirs, tm, (TachRnn) rnn);
  tach_backend_free (be);
}

static void
test_stack_one_layer (void)
{
  TachLstmDesc desc = { .T = 10, .N = 4, .I = 300, .H = 40, .dirs = 2, .training = TRUE,
                        .precision = TACH_PRECISION_FP32 };
  size_t n = tach_lstm_param_count (&desc);
  g_autofree float *a = g_new (float, n), *b = g_new (float, n);

  /* --layers 1 is the model as it was: the same block, the same weights. */
  g_assert_cmpuint (tach_lstm_stack_param_count (&desc, 1), ==, n);
  g_assert_cmpfloat (tach_lstm_stack_flops (&desc, 1, TRUE), ==, tach_lstm_flops (&desc, TRUE));
  g_assert_cmpuint (tach_lstm_stack_between_bytes (&desc, 1), ==, 0);
  tach_lstm_init_params (&desc, 3, 9, a);
  tach_lstm_stack_init_params (&desc, 1, 3, 9, b);
  g_assert_cmpmem (a, n * sizeof (float), b, n * sizeof (float));
}


/* ------------------------------------------------------------ workloads */

#define CPU_BASE "device=cpu warmup=0 seed=7 threads=1 sync=1 metrics=none"

static TestRunResult *
run_ok (TachWorkload workload, const char *base, const char *settings)
{
  return test_run_ok (workload, CPU_BASE, base, settings, NULL);
}

/* Every mode in @modes gives the losses of the first run, at @base's shape. */
static void
assert_modes (TachWorkload workload, const char *base, const char *const *modes)
{
  g_autoptr (TestRunResult) ref = run_ok (workload, base, "");

  for (guint s = 0; s < ref->losses->len; s++)
    g_assert_true (isfinite (g_array_index (ref->losses, double, s)));
  for (guint i = 0; modes[i] != NULL; i++)
    {
      g_autoptr (TestRunResult) other = run_ok (workload, base, modes[i]);

      test_assert_same_losses (ref->losses, other->losses, LOSS_RTOL, modes[i]);
    }
}

#define BILSTM_SHAPE "seq-len=7 features=33 hidden=64 layers=2 batch=16 samples=128 steps=8 " \
                     "rnn=fused feed=resident call-setup=persistent"

static void
test_bilstm_modes (void)
{
  static const char *const modes[] = {
    "feed=host-f64", "feed=prefetch", "rnn=unrolled", "call-setup=per-call", "sync=end",
    "metrics=accuracy", "rnn=unrolled feed=host-f32 sync=3", NULL,
  };
  static const char *const misread[] = { "rnn=unrolled", "feed=prefetch sync=end", NULL };
  g_autoptr (TestRunResult) a = run_ok (TACH_WORKLOAD_BILSTM, BILSTM_SHAPE, "");
  g_autoptr (TestRunResult) b = run_ok (TACH_WORKLOAD_BILSTM, BILSTM_SHAPE, "layers=1");

  assert_modes (TACH_WORKLOAD_BILSTM, BILSTM_SHAPE, modes);
  /* The misread at this shape too: T' = batch, N' = seq-len, both layers. */
  assert_modes (TACH_WORKLOAD_BILSTM, BILSTM_SHAPE " layout=misread", misread);
  /* The shape is really used: a second layer changes the function. */
  g_assert_cmpfloat (fabs (g_array_index (a->losses, double, 0)
                           - g_array_index (b->losses, double, 0)), >, 1e-6);
  /* 2 layers of BiLSTM at T 7, I 33 then 128, H 64, N 16, trained. */
  {
    TachLstmDesc d = { .T = 7, .N = 16, .I = 33, .H = 64, .dirs = 2, .training = TRUE };

    g_assert_cmpfloat (fabs (a->summary.flops_per_step
                             - tach_lstm_stack_flops (&d, 2, TRUE)
                             - tach_dense_flops (16, 128, 1, TRUE, TRUE)), <, 1.0);
  }
}

#define LM_SHAPE "embed=33 hidden=64 context=7 layers=2"

static void
test_lstm_lm_modes (void)
{
  static const char *const train[] = {
    "rnn=unrolled", "feed=prefetch", "feed=resident", "sync=end", "call-setup=per-call",
    "rnn=unrolled call-setup=per-call feed=resident sync=4", NULL,
  };
  static const char *const generate[] = {
    "sampling=device", "call-setup=per-call", "rnn=unrolled",
    "sampling=device call-setup=per-call rnn=unrolled sync=end", NULL,
  };
  const char *gen_base = LM_SHAPE " task=generate batch=3 steps=10 print-text=true "
                         "rnn=fused sampling=host call-setup=persistent";
  g_autoptr (TestRunResult) text = run_ok (TACH_WORKLOAD_LSTM_LM, gen_base, "");

  assert_modes (TACH_WORKLOAD_LSTM_LM, LM_SHAPE " task=train batch=16 samples=512 steps=8 "
                "rnn=fused feed=host-f32 call-setup=persistent", train);
  assert_modes (TACH_WORKLOAD_LSTM_LM, gen_base, generate);
  /* Each stream's line: its 7-word context, then the 10 words generated. */
  {
    g_auto (GStrv) lines = g_strsplit (text->text, "\n", -1);
    g_auto (GStrv) words = g_strsplit (lines[0], " ", -1);

    g_assert_cmpuint (g_strv_length (words), ==, 7 + 10);
  }
  for (guint i = 0; generate[i] != NULL; i++)
    {
      g_autoptr (TestRunResult) other = run_ok (TACH_WORKLOAD_LSTM_LM, gen_base, generate[i]);

      g_assert_cmpstr (other->text, ==, text->text);
    }
}

#define CNN_SHAPE "filters=12,20 dense=48 input=16x16x1 batch=8 samples=64 steps=6 " \
                  "feed=host-f32"

static void
test_cnn_modes (void)
{
  static const char *const modes[] = {
    "feed=host-f64", "feed=prefetch", "feed=resident", "sync=end", "metrics=accuracy",
    "feed=resident sync=end metrics=accuracy", NULL,
  };
  static const char *const gap[] = { "feed=prefetch sync=end", NULL };
  g_autoptr (TestRunResult) r = run_ok (TACH_WORKLOAD_CNN, CNN_SHAPE, "");
  /* conv 1 -> 12 and 12 -> 20 (5x5) at 16x16 and 8x8, dense 320 -> 48 -> 10. */
  double n = 8, c1 = 2.0 * n * 12 * 1 * 25 * 256, c2 = 2.0 * n * 20 * 12 * 25 * 64;

  assert_modes (TACH_WORKLOAD_CNN, CNN_SHAPE, modes);
  assert_modes (TACH_WORKLOAD_CNN, CNN_SHAPE " head=gap", gap);
  g_test_message ("flops/step %.6g (convolutions %.6g)", r->summary.flops_per_step, c1 + c2);
  g_assert_cmpfloat (r->summary.flops_per_step, >, c1 + c2);
  g_assert_cmpfloat (r->summary.flops_per_step, <, 4.0 * (c1 + c2 + 2.0 * n * 320 * 48));
}

/* The reports' shapes give the losses the engine gave before the shapes
 * became knobs (commit ab1fb09, same settings, seed 7, one thread): the
 * defaults change nothing. */
static void
assert_losses (TachWorkload workload, const char *settings, const double *want, guint n)
{
  g_autoptr (TestRunResult) r = run_ok (workload, settings, "steps=6");

  g_assert_cmpuint (r->losses->len, ==, n);
  for (guint i = 0; i < n; i++)
    {
      double got = g_array_index (r->losses, double, i);

      if (fabs (got - want[i]) > 2e-5 * fabs (want[i]))
        g_error ("%s: step %u loss %.10g, before the shape knobs %.10g", settings, i, got,
                 want[i]);
    }
}

static void
test_defaults (void)
{
  static const double bilstm[] = { 0.6763192415, 0.6735543013, 0.7093484402, 0.7105591297,
                                   0.692884326, 0.6958327293 };
  static const double lm_train[] = { 6.321125031, 6.308553696, 6.323250771, 6.318162441,
                                     6.319595337, 6.307811737 };
  static const double lm_generate[] = { 6.317927361, 6.331600666, 6.324078083, 6.320272446,
                                        6.324677467, 6.338735104 };
  static const double cnn[] = { 2.350573301, 2.294434071, 2.313643932, 2.300059795,
                                2.317844152, 2.288058043 };

  assert_losses (TACH_WORKLOAD_BILSTM, "batch=32 samples=256", bilstm, 6);
  assert_losses (TACH_WORKLOAD_LSTM_LM, "batch=32", lm_train, 6);
  assert_losses (TACH_WORKLOAD_LSTM_LM, "task=generate batch=8", lm_generate, 6);
  if (!g_file_test ("/usr/share/datasets/fashion-mnist", G_FILE_TEST_IS_DIR))
    {
      g_test_message ("cnn: Fashion-MNIST is not installed (dataset-fashion-mnist); "
                      "its default run reads it, so its losses are not checked here");
      return;
    }
  assert_losses (TACH_WORKLOAD_CNN, "batch=16 samples=256", cnn, 6);
}

/* ---------------------------------------------------------------- knobs */

static void
test_knobs (void)
{
  static const struct { TachWorkload w; const char *key, *value; } defaults[] = {
    { TACH_WORKLOAD_BILSTM, "seq-len", "10" }, { TACH_WORKLOAD_BILSTM, "features", "300" },
    { TACH_WORKLOAD_BILSTM, "hidden", "40" }, { TACH_WORKLOAD_BILSTM, "layers", "1" },
    { TACH_WORKLOAD_LSTM_LM, "embed", "100" }, { TACH_WORKLOAD_LSTM_LM, "hidden", "100" },
    { TACH_WORKLOAD_LSTM_LM, "context", "4" }, { TACH_WORKLOAD_LSTM_LM, "layers", "1" },
    { TACH_WORKLOAD_CNN, "filters", "32,64" }, { TACH_WORKLOAD_CNN, "dense", "1024" },
  };
  static const char *const bad_filters[] = { "32", "32,64,128", "0,64", "32,", "a,b", NULL };
  g_autoptr (GError) error = NULL;
  TachConfig c;

  for (guint i = 0; i < G_N_ELEMENTS (defaults); i++)
    {
      g_autofree char *v = NULL;

      tach_config_init (&c, defaults[i].w);
      v = tach_config_get (&c, defaults[i].key);
      g_assert_cmpstr (v, ==, defaults[i].value);
      g_assert_true (tach_config_knob_applies (&c, defaults[i].key, NULL));
      tach_config_clear (&c);
    }

  tach_config_init (&c, TACH_WORKLOAD_CNN);
  g_assert_false (tach_config_knob_applies (&c, "hidden", NULL));
  g_assert_false (tach_config_knob_applies (&c, "seq-len", NULL));
  test_apply (&c, "filters=8,16");
  g_assert_cmpuint (c.filters[0], ==, 8);
  g_assert_cmpuint (c.filters[1], ==, 16);
  for (guint i = 0; bad_filters[i] != NULL; i++)
    {
      g_assert_false (tach_config_set (&c, "filters", bad_filters[i], &error));
      g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
      g_assert_nonnull (strstr (error->message, "--filters"));
      g_clear_error (&error);
    }
  /* Changing the workload takes that workload's shapes. */
  test_apply (&c, "workload=lstm-lm");
  g_assert_cmpuint (c.hidden, ==, 100);
  test_apply (&c, "workload=bilstm");
  g_assert_cmpuint (c.hidden, ==, 40);
  g_assert_false (tach_config_set (&c, "layers", "0", &error));
  g_assert_nonnull (strstr (error->message, "--layers"));
  g_clear_error (&error);

  /* A shape too big for memory is refused before anything is allocated,
   * naming the knob. */
  test_apply (&c, "device=cpu hidden=60000 seq-len=5000");
  g_assert_false (tach_config_validate (&c, "cpu", &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "--seq-len 5000 --hidden 60000"));
  g_assert_nonnull (strstr (error->message, "lower --seq-len, --hidden or --batch"));
  g_clear_error (&error);
  tach_config_clear (&c);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/shapes/lstm-stack/reference", test_stack_reference);
  g_test_add_func ("/engine/shapes/lstm-stack/one-layer", test_stack_one_layer);
  g_test_add_func ("/engine/shapes/bilstm/modes", test_bilstm_modes);
  g_test_add_func ("/engine/shapes/lstm-lm/modes", test_lstm_lm_modes);
  g_test_add_func ("/engine/shapes/cnn/modes", test_cnn_modes);
  g_test_add_func ("/engine/shapes/defaults", test_defaults);
  g_test_add_func ("/engine/shapes/knobs", test_knobs);
  return g_test_run ();
}
