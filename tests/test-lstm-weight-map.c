/* test-lstm-weight-map.c: the LSTM weight block's layouts (tach-lstm-weight-map.h)
 * and the models that keep their weights in them.
 *
 *   /engine/lstm-weight-map/canonical      the canonical layout: checked, no
 *                                      holes, scatter and gather are copies
 *   /engine/lstm-weight-map/cudnn-like     a layout as cuDNN's (a second bias,
 *                                      padded directions, 256-byte aligned):
 *                                      views, holes, round trip
 *   /engine/lstm-weight-map/strided        rows further apart than their length
 *   /engine/lstm-weight-map/bad            overlaps, overruns and bad alignments
 *                                      are refused, naming the problem
 *   /engine/lstm-weight-map/params-align   an aligned slice of the flat buffer;
 *                                      its padding stays zero under Adam
 *   /engine/lstm-weight-map/block-cpu      the CPU's block is the canonical one
 *   /engine/lstm-weight-map/models         bilstm and lstm-lm train to the same
 *                                      losses, bit for bit, on a CPU backend
 *                                      that reports a foreign layout (its
 *                                      fused op converts), as with the plain
 *                                      CPU: the model code goes through the
 *                                      views everywhere
 */
#include <math.h>
#include <string.h>

#include "tach-backend.h"
#include "tach-lstm-stack.h"
#include "tach-params.h"
#include "test-run-util.h"

static TachLstmDesc
small_desc (int dirs)
{
  TachLstmDesc d = { .T = 3, .N = 2, .I = 5, .H = 3, .dirs = dirs, .training = TRUE,
                     .precision = TACH_PRECISION_FP32 };
  return d;
}

/* Canonical weights whose every float is different (its index + 1). */
static float *
numbered_canon (const TachLstmDesc *d)
{
  size_t n = tach_lstm_param_count (d);
  float *w = g_new (float, n);

  for (size_t i = 0; i < n; i++)
    w[i] = (float) (i + 1);
  return w;
}

static size_t
holes_total (GArray *holes)
{
  size_t total = 0;

  for (guint i = 0; i < holes->len; i++)
    total += g_array_index (holes, TachLstmRange, i).count;
  return total;
}

/* Scatters numbered weights into a block filled with NaN first, checks that
 * every hole came out zero and every view float non-zero, and that gather
 * gives the weights back. */
static void
assert_round_trip (const TachLstmDesc *d, const TachLstmWeightMap *layout)
{
  size_t n = tach_lstm_param_count (d);
  g_autofree float *canon = numbered_canon (d);
  g_autofree float *block = g_new (float, layout->floats);
  g_autofree float *back = g_new0 (float, n);
  g_autoptr (GArray) holes = tach_lstm_weight_map_holes (d, layout);
  size_t zeros = 0;

  for (size_t i = 0; i < layout->floats; i++)
    block[i] = NAN;
  tach_lstm_weight_map_scatter (d, layout, canon, block);
  for (guint i = 0; i < holes->len; i++)
    {
      const TachLstmRange *h = &g_array_index (holes, TachLstmRange, i);

      for (size_t k = 0; k < h->count; k++)
        g_assert_cmpfloat (block[h->start + k], ==, 0.0f);
    }
  for (size_t i = 0; i < layout->floats; i++)
    zeros += block[i] == 0.0f;
  /* The views hold exactly the n weights, none of them zero. */
  g_assert_cmpuint (zeros, ==, holes_total (holes));
  g_assert_cmpuint (layout->floats - zeros, ==, n);
  tach_lstm_weight_map_gather (d, layout, block, back);
  g_assert_cmpmem (back, n * sizeof (float), canon, n * sizeof (float));
}

static void
test_canonical (void)
{
  for (int dirs = 1; dirs <= 2; dirs++)
    {
      TachLstmDesc d = small_desc (dirs);
      TachLstmWeightMap c;
      g_autoptr (GError) error = NULL;
      g_autoptr (GArray) holes = NULL;
      size_t n = tach_lstm_param_count (&d);
      g_autofree float *canon = numbered_canon (&d);
      g_autofree float *block = g_new (float, n);

      tach_lstm_weight_map_canonical (&d, &c);
      g_assert_cmpuint (c.floats, ==, n);
      g_assert_cmpuint (c.align, ==, sizeof (float));
      g_assert_true (tach_lstm_weight_map_check (&d, &c, &error));
      g_assert_no_error (error);
      holes = tach_lstm_weight_map_holes (&d, &c);
      g_assert_cmpuint (holes->len, ==, 0);
      g_assert_true (tach_lstm_weight_map_equal (&d, &c, &c));
      /* Scatter into the canonical layout is a plain copy. */
      tach_lstm_weight_map_scatter (&d, &c, canon, block);
      g_assert_cmpmem (block, n * sizeof (float), canon, n * sizeof (float));
      /* The gate f bias of the last direction: where TachLstmDesc says. */
      g_assert_cmpuint (c.b[dirs - 1][1].offset, ==,
                        (dirs - 1) * n / dirs + 4 * 3 * (5 + 3) + 3);
      assert_round_trip (&d, &c);
    }
}

/* The shape of cuDNN's weight space for an LSTM with two biases: per
 * direction the input matrices of gates i, f, g, o, the recurrent ones,
 * then the input biases and the recurrent biases; each direction padded to
 * 64 floats; aligned to 256 bytes. */
static void
cudnn_like (const TachLstmDesc *d, TachLstmWeightMap *l)
{
  size_t H = d->H, I = d->I, at = 0;

  memset (l, 0, sizeof *l);
  l->align = 256;
  for (int dir = 0; dir < d->dirs; dir++)
    {
      for (int g = 0; g < 4; g++, at += H * I)
        l->wx[dir][g] = (TachLstmView) { at, I };
      for (int g = 0; g < 4; g++, at += H * H)
        l->wh[dir][g] = (TachLstmView) { at, H };
      for (int g = 0; g < 4; g++, at += H)
        l->b[dir][g] = (TachLstmView) { at, 1 };
      at += 4 * H;      /* the recurrent biases: no view */
      at = (at + 63) / 64 * 64;
    }
  l->floats = at;
}

static void
test_cudnn_like (void)
{
  for (int dirs = 1; dirs <= 2; dirs++)
    {
      TachLstmDesc d = small_desc (dirs);
      TachLstmWeightMap l, c;
      g_autoptr (GError) error = NULL;
      g_autoptr (GArray) holes = NULL;
      size_t per_dir = 4 * 3 * (5 + 3 + 2);   /* matrices and both biases */

      cudnn_like (&d, &l);
      tach_lstm_weight_map_canonical (&d, &c);
      g_assert_true (tach_lstm_weight_map_check (&d, &l, &error));
      g_assert_no_error (error);
      g_assert_false (tach_lstm_weight_map_equal (&d, &l, &c));
      holes = tach_lstm_weight_map_holes (&d, &l);
      /* Per direction one hole: the recurrent biases and the padding after
       * them, merged. */
      g_assert_cmpuint (holes->len, ==, dirs);
      g_assert_cmpuint (g_array_index (holes, TachLstmRange, 0).start, ==, per_dir - 4 * 3);
      g_assert_cmpuint (g_array_index (holes, TachLstmRange, 0).count, ==, 4 * 3 + 128 - per_dir);
      g_assert_cmpuint (holes_total (holes), ==, l.floats - tach_lstm_param_count (&d));
      assert_round_trip (&d, &l);
    }
}

static void
test_strided (void)
{
  TachLstmDesc d = small_desc (2);
  TachLstmWeightMap l;
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) holes = NULL;
  size_t at = 0;

  /* Gates in reverse order, rows two floats longer than the matrix's,
   * the bias first. */
  memset (&l, 0, sizeof l);
  l.align = 16;
  for (int dir = 0; dir < 2; dir++)
    for (int g = 3; g >= 0; g--)
      {
        l.b[dir][g] = (TachLstmView) { at, 1 };
        at += d.H;
        l.wx[dir][g] = (TachLstmView) { at, (size_t) d.I + 2 };
        at += (size_t) d.H * (d.I + 2);
        l.wh[dir][g] = (TachLstmView) { at, (size_t) d.H + 2 };
        at += (size_t) d.H * (d.H + 2);
      }
  l.floats = at;
  g_assert_true (tach_lstm_weight_map_check (&d, &l, &error));
  g_assert_no_error (error);
  holes = tach_lstm_weight_map_holes (&d, &l);
  /* Two floats after every row of every matrix. */
  g_assert_cmpuint (holes->len, ==, 2 * 4 * 2 * d.H);
  g_assert_cmpuint (holes_total (holes), ==, 2 * holes->len);
  assert_round_trip (&d, &l);
}

static void
assert_refused (const TachLstmDesc *d, const TachLstmWeightMap *l, const char *part)
{
  g_autoptr (GError) error = NULL;

  g_assert_false (tach_lstm_weight_map_check (d, l, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_LIBRARY);
  if (strstr (error->message, part) == NULL)
    g_error ("expected \"%s\" in: %s", part, error->message);
}

static void
test_bad (void)
{
  TachLstmDesc d = small_desc (2);
  TachLstmWeightMap good, l;

  cudnn_like (&d, &good);
  l = good;
  l.wh[1][2] = l.wh[1][1];
  assert_refused (&d, &l, "overlap");
  l = good;
  l.b[0][3].offset = l.floats - 1;
  assert_refused (&d, &l, "past its end");
  l = good;
  l.wx[1][0].offset = l.floats + 7;
  assert_refused (&d, &l, "W_x of gate 0, direction 1");
  l = good;
  l.wh[0][1].ld = d.H - 1;
  assert_refused (&d, &l, "W_h of gate 1, direction 0");
  l = good;
  l.align = 96;
  assert_refused (&d, &l, "alignment of 96 bytes");
  l = good;
  l.align = 2;
  assert_refused (&d, &l, "alignment of 2 bytes");
}

static void
test_params_align (void)
{
  TachBackend *be = test_cpu_backend ();
  g_autoptr (GError) error = NULL;
  g_autoptr (TachParams) p = tach_params_new ();
  guint a = tach_params_add (p, "a", 3, TRUE);
  guint b = tach_params_add_aligned (p, "b", 5, TRUE, 256);
  guint c = tach_params_add (p, "c", 2, FALSE);
  size_t total;
  g_autofree float *host = NULL, *grad = NULL;

  g_assert_true (tach_params_alloc (p, be, &error));
  g_assert_no_error (error);
  /* b starts 256 bytes in, after a and 61 floats of padding; c, frozen,
   * after the trainable prefix. */
  g_assert_true (tach_params_data (p, b) == tach_params_data (p, a) + 64);
  g_assert_cmpuint ((uintptr_t) tach_params_data (p, b) % 256, ==, 0);
  g_assert_cmpuint (tach_params_trainable (p), ==, 69);
  g_assert_true (tach_params_data (p, c) == tach_params_data (p, a) + 69);
  total = tach_params_total (p);
  for (int i = 0; i < 3; i++)
    tach_params_host (p, a)[i] = 1.0f + i;
  for (int i = 0; i < 5; i++)
    tach_params_host (p, b)[i] = -1.0f - i;
  tach_params_upload (p);

  /* A step with every real gradient non-zero: the padding's stays zero,
   * and so do its parameters. */
  grad = g_new0 (float, 69);
  for (int i = 0; i < 3; i++)
    grad[i] = 0.5f;
  for (int i = 0; i < 5; i++)
    grad[64 + i] = -0.25f;
  tach_backend_upload (be, tach_params_all_grad (p), grad, 69 * sizeof (float));
  tach_params_set_optimizer (p, TACH_OPTIMIZER_ADAM, 0.01);
  tach_params_update (p);
  tach_params_update (p);
  host = g_new (float, total);
  tach_backend_download (be, host, tach_params_all_data (p), total * sizeof (float));
  g_assert_true (tach_backend_ok (be));
  for (int i = 3; i < 64; i++)
    g_assert_cmpfloat (host[i], ==, 0.0f);
  g_assert_cmpfloat (host[0], <, 1.0f);
  g_assert_cmpfloat (host[64], >, -1.0f);
  g_clear_pointer (&p, tach_params_free);
  tach_backend_free (be);
}

static void
test_block_cpu (void)
{
  TachBackend *be = test_cpu_backend ();
  TachLstmDesc d = small_desc (2);

  for (int rnn = 0; rnn < 2; rnn++)
    {
      TachRnn mode = rnn == 0 ? TACH_RNN_FUSED : TACH_RNN_UNROLLED;
      g_autoptr (GError) error = NULL;
      g_autoptr (TachLstmBlock) block = tach_lstm_block_new (be, &d, 3, mode, &error);
      TachLstmWeightMap c;

      g_assert_no_error (error);
      g_assert_cmpuint (tach_lstm_block_floats (block), ==, tach_lstm_stack_param_count (&d, 3));
      g_assert_cmpuint (tach_lstm_block_align (block), ==, sizeof (float));
      for (int l = 0; l < 3; l++)
        {
          TachLstmDesc dl;

          tach_lstm_stack_layer_desc (&d, l, &dl);
          tach_lstm_weight_map_canonical (&dl, &c);
          g_assert_cmpuint (tach_lstm_block_offset (block, l), ==,
                            tach_lstm_stack_param_offset (&d, l));
          g_assert_true (tach_lstm_weight_map_equal (&dl, tach_lstm_block_weight_map (block, l),
                                                     &c));
        }
    }
  tach_backend_free (be);
}

/* ------------------------------------------- a backend with another layout */

/* The CPU backend with a cuDNN-like layout (cudnn_like()) for its fused
 * op, which converts to and from the CPU's canonical weights on every call
 * (the CPU's memory is the host's).  Plans are mapped to their descs. */
static TachBackendOps real_ops, foreign_ops;
static GHashTable *plan_descs;   /* TachLstmPlan* -> TachLstmDesc* (owned) */

static gboolean
foreign_layout (TachBackend *be, const TachLstmDesc *desc, TachLstmWeightMap *layout)
{
  cudnn_like (desc, layout);
  return TRUE;
}

static TachLstmPlan *
foreign_plan_new (TachBackend *be, const TachLstmDesc *desc)
{
  TachLstmPlan *plan = real_ops.lstm_plan_new (be, desc);

  if (plan != NULL)
    g_hash_table_insert (plan_descs, plan, g_memdup2 (desc, sizeof *desc));
  return plan;
}

static void
foreign_plan_free (TachBackend *be, TachLstmPlan *plan)
{
  g_hash_table_remove (plan_descs, plan);
  real_ops.lstm_plan_free (be, plan);
}

static void
foreign_fwd (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w, float *y,
             void *reserve)
{
  const TachLstmDesc *d = g_hash_table_lookup (plan_descs, plan);
  TachLstmWeightMap l;
  g_autofree float *canon = g_new (float, tach_lstm_param_count (d));

  cudnn_like (d, &l);
  tach_lstm_weight_map_gather (d, &l, w, canon);
  real_ops.lstm_fwd (be, plan, x, canon, y, reserve);
}

static void
foreign_bwd (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w, const float *y,
             const float *dy, void *reserve, float *dx, float *dw)
{
  const TachLstmDesc *d = g_hash_table_lookup (plan_descs, plan);
  TachLstmWeightMap l;
  g_autofree float *canon = g_new (float, tach_lstm_param_count (d));
  g_autofree float *dcanon = g_new (float, tach_lstm_param_count (d));

  cudnn_like (d, &l);
  tach_lstm_weight_map_gather (d, &l, w, canon);
  real_ops.lstm_bwd (be, plan, x, canon, y, dy, reserve, dx, dcanon);
  tach_lstm_weight_map_scatter (d, &l, dcanon, dw);
}

static void
foreign_open_hook (TachBackend *be, gpointer user_data)
{
  g_assert_true (be->caps & TACH_BACKEND_CAP_HOST_MEMORY);
  real_ops = *be->ops;
  foreign_ops = real_ops;
  foreign_ops.lstm_weight_map = foreign_layout;
  foreign_ops.lstm_plan_new = foreign_plan_new;
  foreign_ops.lstm_plan_free = foreign_plan_free;
  foreign_ops.lstm_fwd = foreign_fwd;
  foreign_ops.lstm_bwd = foreign_bwd;
  be->ops = &foreign_ops;
}

static void
test_models (void)
{
  static const struct {
    TachWorkload workload;
    const char  *settings;
  } runs[] = {
    { TACH_WORKLOAD_BILSTM, "device=cpu threads=1 batch=8 steps=6 warmup=0 rnn=fused layers=2 "
                            "hidden=6 features=7 seq-len=4" },
    { TACH_WORKLOAD_BILSTM, "device=cpu threads=1 batch=8 steps=4 warmup=0 rnn=fused "
                            "call-setup=per-call hidden=5 features=3 seq-len=3" },
    { TACH_WORKLOAD_LSTM_LM, "device=cpu threads=1 batch=4 steps=4 warmup=0 rnn=fused layers=2 "
                             "hidden=8 embed=6 context=5" },
  };

  plan_descs = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  for (guint i = 0; i < G_N_ELEMENTS (runs); i++)
    {
      g_autoptr (TestRunResult) plain = test_run_ok (runs[i].workload, runs[i].settings, NULL);
      g_autoptr (TestRunResult) foreign = NULL;

      tach_backend_set_open_hook (foreign_open_hook, NULL);
      foreign = test_run_ok (runs[i].workload, runs[i].settings, NULL);
      tach_backend_set_open_hook (NULL, NULL);
      test_assert_same_losses (plain->losses, foreign->losses, 0.0, runs[i].settings);
      g_assert_cmpuint (g_hash_table_size (plan_descs), ==, 0);
    }
  g_hash_table_unref (plan_descs);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/lstm-weight-map/canonical", test_canonical);
  g_test_add_func ("/engine/lstm-weight-map/cudnn-like", test_cudnn_like);
  g_test_add_func ("/engine/lstm-weight-map/strided", test_strided);
  g_test_add_func ("/engine/lstm-weight-map/bad", test_bad);
  g_test_add_func ("/engine/lstm-weight-map/params-align", test_params_align);
  g_test_add_func ("/engine/lstm-weight-map/block-cpu", test_block_cpu);
  g_test_add_func ("/engine/lstm-weight-map/models", test_models);
  return g_test_run ();
}
