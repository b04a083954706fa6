/* test-gpu-modes.c: modes change speed, not math, on the GPU.
 *
 * Each workload runs a few steps on the CUDA device under a baseline
 * setting and under each execution-mode variant; the per-step losses (or,
 * for generation, the generated words) must agree.  The same seed gives the
 * same data, initialisation and dropout masks whatever the mode.  Each
 * workload's graph-replayed run equals its eager run, and every feed mode
 * hands out the same bits.  NCCL's path without MPI: a communicator of one
 * (test-coll-one-rank.c).  (The ops themselves, graph replay of a step
 * included, are test-ops' /engine/cuda/... cases.)
 *
 * Without a usable CUDA device (no GPU, no driver, or a build without the
 * CUDA backend) the program exits 77 before registering anything, which
 * meson reports as skipped, never as passed.
 */
#include <math.h>
#include <string.h>

#include "tach-backend.h"
#include "tach-feeder.h"
#include "test-coll-one-rank.h"
#include "test-run-util.h"

static const char *gpu_id = NULL;   /* "cuda:0" once found */
static TestCollCase coll_case = { NULL, TRUE };

static TachBackend *
open_gpu (TachPrecision precision)
{
  g_autoptr(GError) error = NULL;
  TachBackend *be = tach_backend_new (gpu_id, 0, precision, &error);

  g_assert_no_error (error);
  g_assert_nonnull (be);
  return be;
}

/* Synchronises and fails the test if the backend holds an error. */
static void
assert_ok (TachBackend *be)
{
  g_autoptr(GError) error = NULL;

  tach_backend_synchronize (be);
  tach_backend_take_error (be, &error);
  g_assert_no_error (error);
}

#define MODE_STEPS 12

typedef struct {
  TachWorkload  workload;
  const char   *settings;   /* the baseline: "key=value key=value" */
  const char   *const *variants;
  double        tolerance;  /* relative, on each step's loss */
} ModeCase;

/* Runs @settings over the workload's baseline; returns the samples and,
 * when asked, the generated text. */
static GArray *
run_once (const ModeCase *mc, const char *variant, char **text)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TachRun) run = NULL;
  TachConfig config;
  GArray *samples;

  tach_config_init (&config, mc->workload);
  test_apply (&config, "device=cuda batch=64 warmup=2 steps=12 seed=7");
  test_apply (&config, mc->settings);
  test_apply (&config, variant);
  run = tach_run_new (&config, &error);
  tach_config_clear (&config);
  g_assert_no_error (error);
  tach_run_start (run, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  tach_run_wait (run, &error);
  g_assert_no_error (error);
  samples = tach_run_dup_samples (run);
  /* --steps counts the warm-up steps too. */
  g_assert_cmpuint (samples->len, ==, MODE_STEPS);
  if (text != NULL)
    *text = tach_run_dup_text (run);
  return samples;
}

static void
test_modes (gconstpointer data)
{
  const ModeCase *mc = data;
  g_autofree char *base_text = NULL;
  g_autoptr(GArray) base = run_once (mc, "", &base_text);
  gboolean generating = strstr (mc->settings, "task=generate") != NULL;

  if (generating)
    {
      g_assert_nonnull (base_text);
      g_assert_cmpuint (strlen (base_text), >, 0);
    }
  else
    {
      /* A trajectory that does not move would make the comparison empty. */
      g_assert_true (isfinite (g_array_index (base, TachSample, 0).loss));
    }

  for (guint v = 0; mc->variants[v] != NULL; v++)
    {
      g_autofree char *text = NULL;
      g_autoptr(GArray) other = run_once (mc, mc->variants[v], &text);

      g_test_message ("%s: %s", tach_workload_to_string (mc->workload), mc->variants[v]);
      if (generating)
        {
          g_assert_cmpstr (text, ==, base_text);
          continue;
        }
      for (guint i = 0; i < base->len; i++)
        {
          double a = g_array_index (base, TachSample, i).loss;
          double b = g_array_index (other, TachSample, i).loss;

          g_assert_true (isfinite (b));
          if (fabs (a - b) > mc->tolerance * fabs (a))
            g_error ("%s, %s: step %u loss %.9g, baseline %.9g",
                     tach_workload_to_string (mc->workload), mc->variants[v], i, b, a);
        }
    }
}

/* Fused and unrolled LSTMs differ in summation order only: a loose
 * tolerance for them, exact-looking ones for the others. */
static const char *const bilstm_variants[] = {
  "feed=host-f32", "feed=prefetch", "feed=resident", "sync=end", "sync=5",
  "launch=graph", "call-setup=per-call", "rnn=unrolled", "metrics=accuracy", NULL
};
static const char *const lm_train_variants[] = {
  "rnn=unrolled", "launch=graph", "call-setup=per-call", "sync=end", NULL
};
static const char *const lm_generate_variants[] = {
  "sampling=device", "launch=graph sampling=device", "call-setup=per-call", NULL
};
static const char *const cnn_variants[] = {
  "feed=host-f32", "feed=prefetch", "feed=resident", "sync=end", "launch=graph",
  "metrics=accuracy", "call-setup=per-call", NULL
};

static const ModeCase mode_cases[] = {
  { TACH_WORKLOAD_BILSTM, "feed=host-f64 sync=1 rnn=fused", bilstm_variants, 1e-4 },
  { TACH_WORKLOAD_LSTM_LM, "task=train rnn=fused", lm_train_variants, 1e-4 },
  { TACH_WORKLOAD_LSTM_LM, "task=generate print-text=true sampling=host", lm_generate_variants, 0.0 },
  { TACH_WORKLOAD_CNN, "feed=host-f64 sync=1", cnn_variants, 1e-5 },
};

static const char *const mode_paths[] = {
  "/gpu/modes/bilstm", "/gpu/modes/lstm-lm/train", "/gpu/modes/lstm-lm/generate", "/gpu/modes/cnn",
};

/* ----------------------------------------------------- graph against eager */

/* Each runs eagerly and with launch=graph, the same settings otherwise:
 * the step captured once and replayed must give every step's loss (and
 * accuracy, and the generated text) of the eager run.  A run that fails
 * its capture fails the test. */
typedef struct {
  TachWorkload  workload;
  const char   *settings;
  double        tolerance;  /* relative, on each step's loss and accuracy */
} GraphCase;

static const GraphCase graph_cases[] = {
  { TACH_WORKLOAD_BILSTM, "feed=host-f64 sync=1", 1e-4 },
  { TACH_WORKLOAD_BILSTM, "feed=prefetch sync=3 metrics=accuracy", 1e-4 },
  { TACH_WORKLOAD_BILSTM, "feed=resident sync=end rnn=unrolled", 1e-4 },
  { TACH_WORKLOAD_BILSTM, "feed=resident layout=misread", 1e-4 },
  { TACH_WORKLOAD_LSTM_LM, "task=train feed=host-f32", 1e-4 },
  { TACH_WORKLOAD_LSTM_LM, "task=train feed=prefetch rnn=unrolled metrics=accuracy", 1e-4 },
  { TACH_WORKLOAD_LSTM_LM, "task=train feed=resident sync=end", 1e-4 },
  { TACH_WORKLOAD_LSTM_LM, "task=generate sampling=device print-text=true", 0.0 },
  { TACH_WORKLOAD_LSTM_LM, "task=generate sampling=device print-text=true rnn=unrolled", 0.0 },
  { TACH_WORKLOAD_CNN, "feed=host-f32 metrics=accuracy", 1e-5 },
  { TACH_WORKLOAD_CNN, "feed=prefetch sync=4", 1e-5 },
  { TACH_WORKLOAD_CNN, "feed=resident sync=end head=gap", 1e-5 },
  /* No warm-up and one step: captured at step 0, replayed once. */
  { TACH_WORKLOAD_CNN, "feed=resident steps=1 warmup=0", 1e-5 },
  { TACH_WORKLOAD_GPT, "task=train batch=8 layers=2 heads=2 embed=32 context=32 feed=resident",
    1e-4 },
  /* Requests of 4 steps around the capture at 2: under graph the prompt's
   * last token is decoded in the step (another summation order), every
   * decode at the device's position; the same text. */
  { TACH_WORKLOAD_GPT, "task=generate layers=2 heads=2 embed=32 context=32 prompt=4 "
    "new-tokens=4 kv-cache=static sampling=device print-text=true", 1e-4 },
};

static const char *const graph_paths[] = {
  "/gpu/graph/bilstm/host-f64", "/gpu/graph/bilstm/prefetch", "/gpu/graph/bilstm/unrolled",
  "/gpu/graph/bilstm/misread", "/gpu/graph/lstm-lm/host-f32", "/gpu/graph/lstm-lm/prefetch",
  "/gpu/graph/lstm-lm/resident", "/gpu/graph/lstm-lm/generate",
  "/gpu/graph/lstm-lm/generate-unrolled", "/gpu/graph/cnn/host-f32", "/gpu/graph/cnn/prefetch",
  "/gpu/graph/cnn/resident", "/gpu/graph/cnn/one-step", "/gpu/graph/gpt/train",
  "/gpu/graph/gpt/generate-static",
};

static GArray *
run_graph_case (const GraphCase *gc, const char *launch, char **text)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TachRun) run = NULL;
  TachConfig config;

  tach_config_init (&config, gc->workload);
  test_apply (&config, "device=cuda batch=64 warmup=3 steps=12 seed=11");
  test_apply (&config, gc->settings);
  test_apply (&config, launch);
  run = tach_run_new (&config, &error);
  tach_config_clear (&config);
  g_assert_no_error (error);
  tach_run_start (run, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  tach_run_wait (run, &error);
  g_assert_no_error (error);
  *text = tach_run_dup_text (run);
  return tach_run_dup_samples (run);
}

static void
assert_close (const GraphCase *gc, const char *what, guint step, double eager, double graph,
              double *worst)
{
  double diff = fabs (eager - graph);

  if (isnan (eager) && isnan (graph))
    return;
  g_assert_true (isfinite (eager));
  *worst = MAX (*worst, diff / MAX (fabs (eager), 1e-30));
  if (!(diff <= gc->tolerance * fabs (eager)))
    g_error ("%s %s: step %u %s %.9g under launch=graph, %.9g eager",
             tach_workload_to_string (gc->workload), gc->settings, step, what, graph, eager);
}

static void
test_graph_equals_eager (gconstpointer data)
{
  const GraphCase *gc = data;
  g_autofree char *eager_text = NULL, *graph_text = NULL;
  g_autoptr(GArray) eager = run_graph_case (gc, "launch=eager", &eager_text);
  g_autoptr(GArray) graph = run_graph_case (gc, "launch=graph", &graph_text);
  double worst = 0.0;

  g_assert_cmpuint (eager->len, ==, graph->len);
  g_assert_cmpuint (graph->len, >, 0);
  for (guint i = 0; i < eager->len; i++)
    {
      const TachSample *a = &g_array_index (eager, TachSample, i);
      const TachSample *b = &g_array_index (graph, TachSample, i);

      assert_close (gc, "loss", i, a->loss, b->loss, &worst);
      assert_close (gc, "accuracy", i, a->accuracy, b->accuracy, &worst);
      g_assert_true (isfinite (b->compute_ms) && b->compute_ms >= 0.0);
    }
  g_assert_cmpstr (graph_text, ==, eager_text);
  if (strstr (gc->settings, "task=generate") != NULL)
    g_assert_true (graph_text != NULL && graph_text[0] != '\0');
  else if (eager->len > 1)
    /* The losses moved: the replays really trained. */
    g_assert_cmpfloat (g_array_index (graph, TachSample, 0).loss, !=,
                       g_array_index (graph, TachSample, graph->len - 1).loss);
  g_test_message ("%s %s: worst relative difference %.3g%s", tach_workload_to_string (gc->workload),
                  gc->settings, worst, worst == 0.0 ? " (bit for bit)" : "");
}

/* What cannot be captured is refused before the run, with the knob to
 * change, and never silently run eagerly. */
static void
test_graph_refused (void)
{
  static const char *const refused[] = {
    "task=generate sampling=host", "task=generate sampling=device call-setup=per-call",
    "task=train call-setup=per-call",
  };

  for (guint i = 0; i < G_N_ELEMENTS (refused); i++)
    {
      g_autoptr(GError) error = NULL;
      TachConfig config;
      TachRun *run;

      tach_config_init (&config, TACH_WORKLOAD_LSTM_LM);
      test_apply (&config, "device=cuda batch=8 steps=2 launch=graph");
      test_apply (&config, refused[i]);
      run = tach_run_new (&config, &error);
      tach_config_clear (&config);
      g_assert_null (run);
      g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
      g_assert_nonnull (strstr (error->message, "--launch graph cannot capture"));
      g_assert_nonnull (strstr (error->message, "--launch eager"));
    }
}

/* ---------------------------------------------------------------- feeder */

#define FEED_X_ELEMS 4096
#define FEED_BATCH   256
#define FEED_BATCHES 6

static void
feed_fill (gpointer data, guint64 i, double *x, void *y)
{
  /* Not exact in float32, so the f64 -> f32 path matters. */
  for (guint e = 0; e < FEED_X_ELEMS; e++)
    x[e] = (double) i + (double) e / 7.0;
  ((float *) y)[0] = (float) (i % 3);
}

/* Every feed mode hands out the same bits, also when each step reads its
 * batch only at its end, after a burst of compute: under prefetch the copy
 * of batch i+1 must wait for step i-1 to have read the slot, and step i
 * for its own copy, both on the device.  Nothing synchronises between
 * steps, so the host runs ahead as in a sync=end run. */
static void
test_feeder (void)
{
  static const TachFeed modes[] = { TACH_FEED_HOST_F64, TACH_FEED_HOST_F32, TACH_FEED_PREFETCH,
                                    TACH_FEED_RESIDENT };
  /* In order across an epoch's end, a skip, and back. */
  static const guint64 order[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 15, 16, 3, 4 };
  TachDataset ds = { .n_samples = FEED_BATCH * FEED_BATCHES + 5, .x_elems = FEED_X_ELEMS,
                     .x_type = TACH_DTYPE_F32, .y_elems = 1, .y_type = TACH_DTYPE_F32,
                     .fill = feed_fill };
  const size_t x_bytes = sizeof (float) * FEED_BATCH * FEED_X_ELEMS;
  const size_t y_bytes = sizeof (float) * FEED_BATCH;
  const int busy = 1024;
  g_autofree float *x = g_malloc (x_bytes);
  g_autofree float *y = g_malloc (y_bytes);

  for (guint m = 0; m < G_N_ELEMENTS (modes); m++)
    {
      g_autoptr(GError) error = NULL;
      TachBackend *be = open_gpu (TACH_PRECISION_FP32);
      TachFeeder *feeder = tach_feeder_new (be, &ds, modes[m], FEED_BATCH, &error);
      float *out_x = tach_backend_alloc (be, x_bytes * G_N_ELEMENTS (order));
      float *out_y = tach_backend_alloc (be, y_bytes * G_N_ELEMENTS (order));
      float *a = tach_backend_alloc (be, sizeof (float) * busy * busy);
      float *c = tach_backend_alloc (be, sizeof (float) * busy * busy);
      double feed_ms = 0.0;

      g_assert_no_error (error);
      tach_backend_zero (be, a, sizeof (float) * busy * busy);
      for (guint k = 0; k < G_N_ELEMENTS (order); k++)
        {
          const void *dx = NULL, *dy = NULL;

          g_assert_true (tach_feeder_next (feeder, order[k], &dx, &dy, &feed_ms, &error));
          g_assert_no_error (error);
          for (int r = 0; r < 8; r++)
            tach_op (be, gemm, FALSE, FALSE, busy, busy, busy, 1.0f, a, busy, a, busy, 0.0f, c,
                     busy);
          tach_backend_copy (be, (char *) out_x + k * x_bytes, dx, x_bytes);
          tach_backend_copy (be, (char *) out_y + k * y_bytes, dy, y_bytes);
        }
      assert_ok (be);
      for (guint k = 0; k < G_N_ELEMENTS (order); k++)
        {
          tach_backend_download (be, x, (char *) out_x + k * x_bytes, x_bytes);
          tach_backend_download (be, y, (char *) out_y + k * y_bytes, y_bytes);
          assert_ok (be);
          for (guint r = 0; r < FEED_BATCH; r++)
            {
              guint64 i = (order[k] % FEED_BATCHES) * FEED_BATCH + r;

              for (guint e = 0; e < FEED_X_ELEMS; e++)
                if (x[r * FEED_X_ELEMS + e] != (float) ((double) i + (double) e / 7.0))
                  g_error ("feed mode %u, step %u: sample %u element %u is %.9g", m, k, r, e,
                           x[r * FEED_X_ELEMS + e]);
              g_assert_cmpfloat (y[r], ==, (float) (i % 3));
            }
        }
      tach_feeder_free (feeder);
      tach_backend_dealloc (be, out_x);
      tach_backend_dealloc (be, out_y);
      tach_backend_dealloc (be, a);
      tach_backend_dealloc (be, c);
      assert_ok (be);
      tach_backend_free (be);
    }
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
  g_test_add_func ("/gpu/feeder/modes-overlap", test_feeder);
  for (guint i = 0; i < G_N_ELEMENTS (mode_cases); i++)
    g_test_add_data_func (mode_paths[i], &mode_cases[i], test_modes);
  G_STATIC_ASSERT (G_N_ELEMENTS (graph_cases) == G_N_ELEMENTS (graph_paths));
  for (guint i = 0; i < G_N_ELEMENTS (graph_cases); i++)
    g_test_add_data_func (graph_paths[i], &graph_cases[i], test_graph_equals_eager);
  g_test_add_func ("/gpu/graph/refused", test_graph_refused);
  /* NCCL without MPI: a communicator of one (test-coll-one-rank.c). */
  coll_case.device_id = gpu_id;
  g_test_add_data_func ("/gpu/nccl/one-rank", &coll_case, test_coll_one_rank);
  return g_test_run ();
}
