/* test-ops-lstm-wspace.c: on the CUDA backend, training steps of stacked
 * fused LSTMs whose weights live in cuDNN's weight space (views into the
 * flat parameter buffer, nothing copied per step) against the same steps
 * on the copying path (TACH_CUDA_PLAIN=wspace: the canonical block copied
 * into the plan's own weight space every forward, the gradient out every
 * backward).  Same weights, outputs, gradients and updated weights; the
 * recurrent biases, which only cuDNN's layout has, stay zero; the views
 * make fewer API calls a step; the algorithm notes say which path ran.
 */
#include <math.h>
#include <string.h>

#include "tach-lstm-stack.h"
#include "tach-params.h"
#include "test-ops-common.h"

typedef struct {
  const char *name;
  int         dirs, layers;
  gboolean    time_major;
} WspaceCase;

static const WspaceCase wspace_cases[] = {
  { "bi x2 batch-major", 2, 2, FALSE },
  { "uni x1 time-major", 1, 1, TRUE },
  { "bi x1 time-major",  2, 1, TRUE },
};

enum { WT = 6, WN = 5, WI = 7, WH = 12, WSTEPS = 3 };

/* What a few steps leave, in canonical order, on one backend. */
typedef struct {
  float  *y;       /* the last forward's output */
  float  *dw;      /* the last backward's weight gradient */
  float  *w;       /* the weights after the last update */
  guint64 calls;   /* API calls of the last step */
  char   *algorithms;
} WspaceResult;

static void
wspace_result_clear (WspaceResult *r)
{
  g_free (r->y);
  g_free (r->dw);
  g_free (r->w);
  g_free (r->algorithms);
}

/* Fails unless every float of @block outside its layouts' views is zero. */
static void
assert_holes_zero (const TachLstmBlock *block, const TachLstmDesc *desc, int layers,
                   const float *host, const char *what)
{
  for (int l = 0; l < layers; l++)
    {
      TachLstmDesc d;
      g_autoptr (GArray) holes = NULL;

      tach_lstm_stack_layer_desc (desc, l, &d);
      holes = tach_lstm_weight_map_holes (&d, tach_lstm_block_weight_map (block, l));
      for (guint i = 0; i < holes->len; i++)
        {
          const TachLstmRange *h = &g_array_index (holes, TachLstmRange, i);

          for (size_t k = 0; k < h->count; k++)
            if (host[tach_lstm_block_offset (block, l) + h->start + k] != 0.0f)
              g_error ("%s: layer %d's float %zu, which no view covers, is %g", what, l,
                       h->start + k, host[tach_lstm_block_offset (block, l) + h->start + k]);
        }
    }
}

static void
wspace_run (TachBackend *be, const TachLstmDesc *desc, int layers, WspaceResult *r)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TachLstmBlock) block = tach_lstm_block_new (be, desc, layers, TACH_RNN_FUSED, &error);
  TachParams *p = tach_params_new ();
  size_t nx = (size_t) WT * WN * desc->I, ny = (size_t) WT * WN * desc->dirs * desc->H;
  size_t nc = tach_lstm_stack_param_count (desc, layers), nb;
  g_autofree double *x = g_new (double, nx), *dy = g_new (double, ny);
  g_autofree float *host = NULL;
  float *d_x, *d_y, *d_dy;
  TachLstmStack *stack;
  guint w;

  g_assert_no_error (error);
  nb = tach_lstm_block_floats (block);
  w = tach_params_add_aligned (p, "lstm.w", nb, TRUE, tach_lstm_block_align (block));
  g_assert_true (tach_params_alloc (p, be, &error));
  g_assert_no_error (error);
  tach_lstm_block_init (block, 17, w, tach_params_host (p, w));
  tach_params_upload (p);
  tach_params_set_optimizer (p, TACH_OPTIMIZER_ADAM, 1e-2);

  tach_ref_fill_normal (x, nx, 950, 1, 1.0);
  tach_ref_fill_normal (dy, ny, 950, 2, 1.0);
  d_x = tach_ops_upload_d (be, x, nx);
  d_dy = tach_ops_upload_d (be, dy, ny);
  d_y = tach_ops_alloc (be, ny * sizeof (float));
  stack = tach_lstm_stack_new (be, desc, layers, TACH_RNN_FUSED, TACH_CALL_SETUP_PERSISTENT, block);
  for (int step = 0; step < WSTEPS; step++)
    {
      guint64 before;

      tach_backend_synchronize (be);
      before = be->api_calls;
      tach_lstm_stack_forward (stack, d_x, tach_params_data (p, w), d_y);
      tach_lstm_stack_backward (stack, d_x, tach_params_data (p, w), d_y, d_dy, NULL,
                                tach_params_grad (p, w));
      tach_params_update (p);
      r->calls = be->api_calls - before;
    }
  tach_ops_assert_ok (be);

  r->y = tach_ops_download_f (be, d_y, ny);
  host = tach_ops_download_f (be, tach_params_grad (p, w), nb);
  assert_holes_zero (block, desc, layers, host, "the weight gradient");
  r->dw = g_new (float, nc);
  tach_lstm_block_to_canonical (block, host, r->dw);
  g_free (host);
  host = tach_ops_download_f (be, tach_params_data (p, w), nb);
  assert_holes_zero (block, desc, layers, host, "the weights after Adam");
  r->w = g_new (float, nc);
  tach_lstm_block_to_canonical (block, host, r->w);
  r->algorithms = tach_backend_dup_algorithms (be);

  tach_lstm_stack_free (stack);
  tach_params_free (p);
}

static void
assert_same (const char *what, const WspaceCase *c, const float *views, const float *copies,
             size_t n)
{
  g_autofree double *want = g_new (double, n);
  double e;

  for (size_t i = 0; i < n; i++)
    want[i] = copies[i];
  e = tach_ref_nmse (views, want, n);
  g_test_message ("wspace %s %s: NMSE %.3g%s", c->name, what, e,
                  memcmp (views, copies, n * sizeof (float)) == 0 ? " (bit for bit)" : "");
  /* The same cuDNN calls on the same numbers: only where the weights
   * live differs. */
  if (!(e <= 1e-12))
    g_error ("wspace %s %s: the views give NMSE %.3g against the copying path", c->name, what, e);
}

static void
test_lstm_wspace (TachBackend *be)
{
  g_autoptr (GError) error = NULL;
  TachBackend *plain;

  g_setenv ("TACH_CUDA_PLAIN", "wspace", TRUE);
  plain = tach_backend_new (be->device->id, be->threads, be->precision, &error);
  g_unsetenv ("TACH_CUDA_PLAIN");
  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (wspace_cases); i++)
    {
      const WspaceCase *c = &wspace_cases[i];
      TachLstmDesc d = { WT, WN, WI, WH, c->dirs, c->time_major, TRUE, FALSE, be->precision };
      TachLstmWeightMap lean, canon;
      WspaceResult v = { 0 }, k = { 0 };
      size_t ny = (size_t) WT * WN * c->dirs * WH, nc = tach_lstm_stack_param_count (&d, c->layers);

      /* The views are cuDNN's layout, not the canonical one (it has a
       * second bias), and the copying path's block is the canonical one. */
      g_assert_true (tach_lstm_weight_map (be, &d, &lean));
      g_assert_true (tach_lstm_weight_map (plain, &d, &canon));
      g_assert_cmpuint (lean.floats, >, tach_lstm_param_count (&d));
      g_assert_cmpuint (lean.align % 256, ==, 0);
      g_assert_cmpuint (canon.floats, ==, tach_lstm_param_count (&d));

      wspace_run (be, &d, c->layers, &v);
      wspace_run (plain, &d, c->layers, &k);
      assert_same ("y", c, v.y, k.y, ny);
      assert_same ("dw", c, v.dw, k.dw, nc);
      assert_same ("w after Adam", c, v.w, k.w, nc);
      g_test_message ("wspace %s: %" G_GUINT64_FORMAT " API calls a step in place, %"
                      G_GUINT64_FORMAT " copying", c->name, v.calls, k.calls);
      g_assert_cmpuint (v.calls, <, k.calls);
      g_assert_nonnull (strstr (v.algorithms, "weights in place"));
      g_assert_null (strstr (v.algorithms, "weights copied per step"));
      g_assert_nonnull (strstr (k.algorithms, "weights copied per step"));
      wspace_result_clear (&v);
      wspace_result_clear (&k);
    }
  tach_backend_free (plain);
}

void
tach_ops_register_lstm_wspace (const char *device_id)
{
  /* The copying path it compares against is the CUDA backend's. */
  if (device_id != NULL && g_str_has_prefix (device_id, "cuda"))
    tach_ops_add (device_id, "lstm/weight-space-views", test_lstm_wspace);
}
