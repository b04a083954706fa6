/* test-graph.c: what launch=graph relies on, checked on the CPU, which
 * cannot capture graphs itself.
 *
 *   - the step offset: the counter-taking ops (dropout, sample_tokens) with
 *     counter c and an offset of k draw exactly what counter c + k draws
 *     without one, and counter_add's default advances the offset;
 *   - the prepare / step / finish split of every workload, in every feed
 *     mode, run as the runner runs a graph: eager steps, then every later
 *     step calls step with the context of the step "captured" (its step
 *     index and fixed loss slots: the same arguments a replay has), the
 *     offset advancing after each, the loss copied out of the fixed slot.
 *     The losses (and generated text) must equal an eager run's bit for
 *     bit: a per-step value that a graph would freeze shows up as a
 *     different loss.  A replayed step may make none of the host calls
 *     that a capture refuses (alloc, dealloc, upload, download,
 *     synchronize): the backend's table is swapped for one that counts
 *     them.  gpt's static-cache generation prefills in prepare under
 *     launch=graph, so its losses match eager's to a summation order;
 *   - which configurations each workload can capture, and why not.
 *
 *   - the same cases as whole runs through the runner on the asynchronous
 *     test device with graphs (tach_async_device_set_graphs): a real
 *     capture, whose replays repeat the jobs with the arguments they were
 *     queued with, so that a host value the step reads (gpt's position,
 *     say) would be frozen as a CUDA graph freezes it.
 *
 * The GPU half (real capture and replay against eager) is in
 * test-gpu-modes.c.
 */
#include <locale.h>
#include <math.h>
#include <string.h>

#include "tach-async-device.h"
#include "tach-model.h"
#include "tach-rand.h"
#include "test-run-util.h"

#define SEED 20260607u

static void
assert_ok (TachBackend *be)
{
  g_autoptr(GError) error = NULL;

  tach_backend_take_error (be, &error);
  g_assert_no_error (error);
}

static uint64_t *
new_offset (TachBackend *be, uint64_t value)
{
  uint64_t *offset = tach_backend_alloc (be, sizeof (uint64_t));

  tach_backend_upload (be, offset, &value, sizeof value);
  return offset;
}

/* ------------------------------------------------------------ the offset */

static void
test_offset_dropout (void)
{
  TachBackend *be = test_cpu_backend ();
  const size_t n = 4099;
  const guint64 c = TACH_RAND_COUNTER (TACH_RAND_STREAM_DROPOUT, 3);
  const uint64_t k = 11;
  g_autofree float *x = g_new (float, n);
  g_autofree float *want = g_new (float, n), *got = g_new (float, n);
  float *dx = tach_backend_alloc (be, n * sizeof (float));
  float *dy = tach_backend_alloc (be, n * sizeof (float));
  uint64_t *offset = new_offset (be, k);
  guint dropped = 0;

  for (size_t e = 0; e < n; e++)
    x[e] = 1.0f + (float) e / 64.0f;
  tach_backend_upload (be, dx, x, n * sizeof (float));

  /* The host counter of step 3 + k, no offset... */
  tach_op (be, dropout_fwd, dx, dy, n, 0.4f, SEED, c + k, 0);
  tach_backend_download (be, want, dy, n * sizeof (float));
  /* ... and the counter of step 3 with the offset k. */
  be->step_offset = offset;
  tach_op (be, dropout_fwd, dx, dy, n, 0.4f, SEED, c, 0);
  tach_backend_download (be, got, dy, n * sizeof (float));
  g_assert_cmpmem (want, n * sizeof (float), got, n * sizeof (float));
  tach_op (be, dropout_bwd, dx, dy, n, 0.4f, SEED, c, 0);
  tach_backend_download (be, got, dy, n * sizeof (float));
  g_assert_cmpmem (want, n * sizeof (float), got, n * sizeof (float));

  /* Without the offset the mask is step 3's: a different one. */
  be->step_offset = NULL;
  tach_op (be, dropout_fwd, dx, dy, n, 0.4f, SEED, c, 0);
  tach_backend_download (be, got, dy, n * sizeof (float));
  for (size_t e = 0; e < n; e++)
    dropped += (got[e] == 0.0f) != (want[e] == 0.0f);
  g_assert_cmpuint (dropped, >, n / 10);

  assert_ok (be);
  tach_backend_dealloc (be, dx);
  tach_backend_dealloc (be, dy);
  tach_backend_dealloc (be, offset);
  tach_backend_free (be);
}

static void
test_offset_sample_tokens (void)
{
  TachBackend *be = test_cpu_backend ();
  const int rows = 37, vocab = 50, len = 4;
  const guint64 c = TACH_RAND_COUNTER (TACH_RAND_STREAM_SAMPLE, 2);
  const uint64_t k = 5;
  g_autofree float *logits = g_new (float, rows * vocab);
  g_autofree int32_t *ctx0 = g_new0 (int32_t, rows * len);
  int32_t want_tok[37], got_tok[37], want_ctx[37 * 4], got_ctx[37 * 4];
  float want_loss = 0.0f, got_loss = 0.0f;
  float *d_logits = tach_backend_alloc (be, sizeof (float) * rows * vocab);
  int32_t *tok = tach_backend_alloc (be, sizeof (int32_t) * rows);
  int32_t *ctx = tach_backend_alloc (be, sizeof (int32_t) * rows * len);
  float *loss = tach_backend_alloc (be, sizeof (float));
  uint64_t *offset = new_offset (be, k);

  for (int e = 0; e < rows * vocab; e++)
    logits[e] = 3.0f * tach_rand_uniform (SEED, 99, (guint64) e);
  tach_backend_upload (be, d_logits, logits, sizeof (float) * rows * vocab);

  /* With and without the loss: sample_tokens_nll and sample_tokens. */
  for (int with_loss = 0; with_loss < 2; with_loss++)
    {
      tach_backend_upload (be, ctx, ctx0, sizeof (int32_t) * rows * len);
      be->step_offset = NULL;
      tach_backend_sample_tokens (be, d_logits, rows, vocab, SEED, c + k, tok, ctx, len,
                                  with_loss ? loss : NULL);
      tach_backend_download (be, want_tok, tok, sizeof want_tok);
      tach_backend_download (be, want_ctx, ctx, sizeof want_ctx);
      tach_backend_download (be, &want_loss, loss, sizeof want_loss);

      tach_backend_upload (be, ctx, ctx0, sizeof (int32_t) * rows * len);
      be->step_offset = offset;
      tach_backend_sample_tokens (be, d_logits, rows, vocab, SEED, c, tok, ctx, len,
                                  with_loss ? loss : NULL);
      be->step_offset = NULL;
      tach_backend_download (be, got_tok, tok, sizeof got_tok);
      tach_backend_download (be, got_ctx, ctx, sizeof got_ctx);
      tach_backend_download (be, &got_loss, loss, sizeof got_loss);
      assert_ok (be);
      g_assert_cmpmem (want_tok, sizeof want_tok, got_tok, sizeof got_tok);
      g_assert_cmpmem (want_ctx, sizeof want_ctx, got_ctx, sizeof got_ctx);
      if (with_loss)
        g_assert_cmpfloat (want_loss, ==, got_loss);
    }
  tach_backend_dealloc (be, d_logits);
  tach_backend_dealloc (be, tok);
  tach_backend_dealloc (be, ctx);
  tach_backend_dealloc (be, loss);
  tach_backend_dealloc (be, offset);
  tach_backend_free (be);
}

static void
test_counter_add (void)
{
  TachBackend *be = test_cpu_backend ();
  uint64_t *counter = new_offset (be, G_GUINT64_CONSTANT (1) << 40);
  uint64_t value = 0;

  /* The CPU has no counter_add slot: the wrapper's default adds in order. */
  g_assert_null (be->ops->counter_add);
  tach_backend_counter_add (be, counter, 1);
  tach_backend_counter_add (be, counter, 6);
  tach_backend_download (be, &value, counter, sizeof value);
  assert_ok (be);
  g_assert_cmpuint (value, ==, (G_GUINT64_CONSTANT (1) << 40) + 7);
  /* A counter of step i plus k is the counter of step i + k. */
  g_assert_cmpuint (TACH_RAND_COUNTER (TACH_RAND_STREAM_DROPOUT, 1000) + 24, ==,
                    TACH_RAND_COUNTER (TACH_RAND_STREAM_DROPOUT, 1024));
  tach_backend_dealloc (be, counter);
  tach_backend_free (be);
}

/* --------------------------------------------------- the replayed split */

typedef struct {
  const char   *path;
  TachWorkload  workload;
  const char   *settings;
  double        rtol;     /* of the losses against eager's: 0, bit for bit */
} ReplayCase;

#define GPT_SHAPE "layers=2 heads=2 embed=16 "

#define REPLAY_BASE "device=cpu threads=1 batch=8 steps=9 warmup=3 seed=9"

static const ReplayCase replay_cases[] = {
  { "/engine/graph/replay/bilstm/host-f64", TACH_WORKLOAD_BILSTM, "samples=64 feed=host-f64" },
  { "/engine/graph/replay/bilstm/host-f32", TACH_WORKLOAD_BILSTM,
    "samples=64 feed=host-f32 metrics=accuracy" },
  { "/engine/graph/replay/bilstm/prefetch", TACH_WORKLOAD_BILSTM,
    "samples=64 feed=prefetch rnn=unrolled" },
  { "/engine/graph/replay/bilstm/resident", TACH_WORKLOAD_BILSTM,
    "samples=64 feed=resident layout=misread" },
  { "/engine/graph/replay/lstm-lm/host-f32", TACH_WORKLOAD_LSTM_LM,
    "task=train samples=64 feed=host-f32" },
  { "/engine/graph/replay/lstm-lm/prefetch", TACH_WORKLOAD_LSTM_LM,
    "task=train samples=64 feed=prefetch metrics=accuracy" },
  { "/engine/graph/replay/lstm-lm/resident", TACH_WORKLOAD_LSTM_LM,
    "task=train samples=64 feed=resident rnn=unrolled" },
  { "/engine/graph/replay/lstm-lm/generate", TACH_WORKLOAD_LSTM_LM,
    "task=generate sampling=device print-text=true" },
  { "/engine/graph/replay/cnn/host-f64", TACH_WORKLOAD_CNN,
    "input=12x12x1 samples=64 feed=host-f64" },
  { "/engine/graph/replay/cnn/host-f32", TACH_WORKLOAD_CNN,
    "input=12x12x1 samples=64 feed=host-f32 metrics=accuracy" },
  { "/engine/graph/replay/cnn/prefetch", TACH_WORKLOAD_CNN,
    "input=12x12x1 samples=64 feed=prefetch head=gap" },
  { "/engine/graph/replay/cnn/resident", TACH_WORKLOAD_CNN,
    "input=12x12x1 samples=64 feed=resident" },
  { "/engine/graph/replay/gpt/train", TACH_WORKLOAD_GPT,
    GPT_SHAPE "task=train context=8 feed=resident" },
  /* Requests of 4 steps: prefills at 0, 4 and 8 around the capture at 2,
   * each at the device's position; the prompt's last token is decoded in
   * the step (a different summation order from eager's prefill). */
  { "/engine/graph/replay/gpt/generate-static", TACH_WORKLOAD_GPT,
    GPT_SHAPE "task=generate context=12 prompt=3 new-tokens=4 kv-cache=static "
    "sampling=device print-text=true", 1e-4 },
  { "/engine/graph/replay/gpt/generate-static-naive", TACH_WORKLOAD_GPT,
    GPT_SHAPE "task=generate context=12 prompt=1 new-tokens=4 kv-cache=static "
    "attention=naive fusion=none sampling=device print-text=true", 1e-4 },
};

/* The host calls that a capture refuses, counted while a replayed step is
 * queued (the_ops: the backend's own table). */
static const TachBackendOps *the_ops;
static guint host_calls;

static void *
guard_alloc (TachBackend *be, size_t bytes)
{
  host_calls++;
  return the_ops->alloc (be, bytes);
}

static void
guard_dealloc (TachBackend *be, void *ptr)
{
  host_calls++;
  the_ops->dealloc (be, ptr);
}

static void
guard_upload (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  host_calls++;
  the_ops->upload (be, dst, src, bytes);
}

static void
guard_download (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  host_calls++;
  the_ops->download (be, dst, src, bytes);
}

static void
guard_synchronize (TachBackend *be)
{
  host_calls++;
  the_ops->synchronize (be);
}

/* Queues a replayed step with @be's table swapped for @guard's. */
static void
guarded_step (const TachModelClass *klass, TachModel *model, TachBackend *be,
              TachBackendOps *guard, TachStepCtx *ctx)
{
  const TachBackendOps *own = be->ops;
  g_autoptr(GError) error = NULL;
  gboolean ok;

  the_ops = own;
  *guard = *own;
  guard->alloc = guard_alloc;
  guard->dealloc = guard_dealloc;
  guard->upload = guard_upload;
  guard->download = guard_download;
  guard->synchronize = guard_synchronize;
  host_calls = 0;
  be->ops = guard;
  ok = klass->step (model, ctx, &error);
  be->ops = own;
  g_assert_no_error (error);
  g_assert_true (ok);
  g_assert_cmpuint (host_calls, ==, 0);
}

/* The model's calls for one step, failing the test on an error. */
static void
call (gboolean (*fn) (TachModel *, TachStepCtx *, GError **), TachModel *model, TachStepCtx *ctx)
{
  g_autoptr(GError) error = NULL;

  if (fn != NULL)
    g_assert_true (fn (model, ctx, &error));
  g_assert_no_error (error);
}

/* Runs @rc as the runner runs launch=graph, with every call of step after
 * the capture step made with the captured context; returns the losses and
 * accuracies (doubles, one per step, NaN when none) and the text. */
static void
run_as_graph (const ReplayCase *rc, GArray **losses, GArray **accs, char **text)
{
  g_autoptr(GError) error = NULL;
  const TachModelClass *klass = tach_model_class_for (rc->workload);
  TachConfig config;
  TachBackend *be = test_cpu_backend ();
  TachModel *model;
  TachStepCtx captured = { 0 };
  TachBackendOps guard;
  guint64 total, capture;
  float *loss_dev, *acc_dev, *loss_fixed, *acc_fixed;
  uint64_t *offset;
  g_autofree float *loss_host = NULL, *acc_host = NULL;
  gboolean metrics;

  tach_config_init (&config, rc->workload);
  test_apply (&config, REPLAY_BASE);
  test_apply (&config, rc->settings);
  /* Validation would refuse the CPU; the model only needs the knob. */
  config.launch = TACH_LAUNCH_GRAPH;
  g_assert_nonnull (klass->supports_graph);
  g_assert_true (klass->supports_graph (&config, NULL));
  g_assert_nonnull (klass->prepare);
  metrics = config.metrics == TACH_METRICS_ACCURACY;
  total = config.steps;
  /* The runner's choice: warm-up minus one, at least one eager step. */
  capture = MIN ((guint64) MAX (tach_config_get_warmup (&config), 2) - 1, total - 1);
  g_assert_cmpuint (capture, ==, 2);

  model = klass->create (be, &config, &error);
  g_assert_no_error (error);
  loss_dev = tach_backend_alloc (be, total * sizeof (float));
  acc_dev = tach_backend_alloc (be, total * sizeof (float));
  loss_fixed = tach_backend_alloc (be, sizeof (float));
  acc_fixed = tach_backend_alloc (be, sizeof (float));
  offset = tach_backend_alloc (be, sizeof (uint64_t));
  assert_ok (be);

  for (guint64 i = 0; i < total; i++)
    {
      TachStepCtx ctx = { .step = i, .loss_slot = loss_dev + i,
                          .acc_slot = metrics ? acc_dev + i : NULL };

      call (klass->prepare, model, &ctx);
      if (i < capture)
        call (klass->step, model, &ctx);
      else
        {
          /* A replay has exactly the captured call's arguments. */
          TachStepCtx replay;

          if (i == capture)
            {
              captured = ctx;
              captured.loss_slot = loss_fixed;
              captured.acc_slot = metrics ? acc_fixed : NULL;
              tach_backend_zero (be, offset, sizeof (uint64_t));
            }
          replay = captured;
          be->step_offset = offset;
          guarded_step (klass, model, be, &guard, &replay);
          tach_backend_counter_add (be, offset, 1);
          be->step_offset = NULL;
          tach_backend_copy (be, ctx.loss_slot, loss_fixed, sizeof (float));
          if (metrics)
            tach_backend_copy (be, ctx.acc_slot, acc_fixed, sizeof (float));
        }
      call (klass->finish, model, &ctx);
      assert_ok (be);
    }

  loss_host = g_new (float, total);
  acc_host = g_new (float, total);
  tach_backend_download (be, loss_host, loss_dev, total * sizeof (float));
  tach_backend_download (be, acc_host, acc_dev, total * sizeof (float));
  assert_ok (be);
  *losses = g_array_new (FALSE, FALSE, sizeof (double));
  *accs = g_array_new (FALSE, FALSE, sizeof (double));
  for (guint64 i = 0; i < total; i++)
    {
      double l = loss_host[i], a = metrics ? acc_host[i] : NAN;

      g_array_append_val (*losses, l);
      g_array_append_val (*accs, a);
    }
  *text = klass->dup_text != NULL ? klass->dup_text (model) : NULL;

  tach_backend_dealloc (be, loss_dev);
  tach_backend_dealloc (be, acc_dev);
  tach_backend_dealloc (be, loss_fixed);
  tach_backend_dealloc (be, acc_fixed);
  tach_backend_dealloc (be, offset);
  klass->free (model);
  tach_config_clear (&config);
  tach_backend_free (be);
}

static void
test_replay (gconstpointer data)
{
  const ReplayCase *rc = data;
  g_autoptr(TestRunResult) eager = test_run_ok (rc->workload, REPLAY_BASE, rc->settings, NULL);
  g_autoptr(GArray) losses = NULL, accs = NULL, eager_accs = NULL;
  g_autofree char *text = NULL;

  run_as_graph (rc, &losses, &accs, &text);
  eager_accs = g_array_new (FALSE, FALSE, sizeof (double));
  for (guint i = 0; i < eager->samples->len; i++)
    g_array_append_val (eager_accs, g_array_index (eager->samples, TachSample, i).accuracy);

  /* Bit for bit: the same ops on the same data in the same order. */
  test_assert_same_losses (eager->losses, losses, rc->rtol, rc->path);
  test_assert_same_losses (eager_accs, accs, 0.0, rc->path);
  g_assert_cmpstr (eager->text, ==, text);
  if (strstr (rc->settings, "task=generate") != NULL)
    {
      g_assert_nonnull (text);
      g_assert_cmpuint (strlen (text), >, 0);
    }
  else
    /* A loss that never moved would make the comparison empty. */
    g_assert_cmpfloat (g_array_index (losses, double, 0), !=,
                       g_array_index (losses, double, losses->len - 1));
}

/* The case on the asynchronous test device, through the runner: captured
 * and replayed against eager. */
static void
test_async_replay (gconstpointer data)
{
  const ReplayCase *rc = data;
  g_autoptr(TestRunResult) eager = NULL, graph = NULL;

  eager = test_run_ok (rc->workload, REPLAY_BASE, rc->settings, "device=async:0", NULL);
  tach_async_device_set_graphs (TRUE);
  graph = test_run_ok (rc->workload, REPLAY_BASE, rc->settings, "device=async:0 launch=graph",
                       NULL);
  tach_async_device_set_graphs (FALSE);
  test_assert_same_losses (eager->losses, graph->losses, rc->rtol, rc->path);
  g_assert_cmpstr (eager->text, ==, graph->text);
}

/* ----------------------------------------------------- what can capture */

static void
test_supports (void)
{
  static const struct {
    TachWorkload workload;
    const char  *settings;
    const char  *refused;   /* a word of the reason, NULL: capturable */
  } cases[] = {
    { TACH_WORKLOAD_BILSTM, "feed=host-f64 layout=misread rnn=unrolled", NULL },
    { TACH_WORKLOAD_BILSTM, "call-setup=per-call", "per-call" },
    { TACH_WORKLOAD_LSTM_LM, "task=train feed=prefetch", NULL },
    { TACH_WORKLOAD_LSTM_LM, "task=generate sampling=device", NULL },
    { TACH_WORKLOAD_LSTM_LM, "task=generate sampling=host", "--sampling device" },
    { TACH_WORKLOAD_LSTM_LM, "task=generate sampling=device call-setup=per-call", "per-call" },
    { TACH_WORKLOAD_CNN, "feed=prefetch metrics=accuracy head=gap", NULL },
    { TACH_WORKLOAD_GPT, "task=train", NULL },
    { TACH_WORKLOAD_GPT, "task=generate kv-cache=static sampling=device", NULL },
    { TACH_WORKLOAD_GPT, "task=generate kv-cache=static sampling=host", "--sampling device" },
    { TACH_WORKLOAD_GPT, "task=generate kv-cache=dynamic", "reallocates" },
    { TACH_WORKLOAD_GPT, "task=generate kv-cache=none", "longer prefix" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const TachModelClass *klass = tach_model_class_for (cases[i].workload);
      const char *why = NULL;
      TachConfig config;
      gboolean ok;

      tach_config_init (&config, cases[i].workload);
      test_apply (&config, cases[i].settings);
      ok = klass->supports_graph (&config, &why);
      tach_config_clear (&config);
      g_test_message ("%s: %s", cases[i].settings, why != NULL ? why : "capturable");
      g_assert_cmpint (ok, ==, cases[i].refused == NULL);
      if (cases[i].refused != NULL)
        {
          g_assert_nonnull (why);
          g_assert_nonnull (strstr (why, cases[i].refused));
        }
    }
}

/* The CPU still refuses launch=graph, for the device's reason first. */
static void
test_cpu_refuses (void)
{
  g_autoptr(GError) error = NULL;
  TachConfig config;

  tach_config_init (&config, TACH_WORKLOAD_CNN);
  test_apply (&config, "device=cpu");
  config.launch = TACH_LAUNCH_GRAPH;
  g_assert_false (tach_config_validate (&config, "cpu", &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "--launch graph is not supported on cpu"));
  tach_config_clear (&config);
}

int
main (int argc, char **argv)
{
  setlocale (LC_ALL, "");
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/engine/graph/offset/dropout", test_offset_dropout);
  g_test_add_func ("/engine/graph/offset/sample-tokens", test_offset_sample_tokens);
  g_test_add_func ("/engine/graph/offset/counter-add", test_counter_add);
  g_test_add_func ("/engine/graph/supports", test_supports);
  g_test_add_func ("/engine/graph/cpu-refuses", test_cpu_refuses);
  tach_async_device_register ();
  for (guint i = 0; i < G_N_ELEMENTS (replay_cases); i++)
    {
      g_autofree char *async = g_strconcat ("/engine/graph/async",
                                            replay_cases[i].path + strlen ("/engine/graph/replay"),
                                            NULL);

      g_test_add_data_func (replay_cases[i].path, &replay_cases[i], test_replay);
      /* The double has no fused LSTM nor convolutions (lstm_fwd, conv_fwd). */
      if (replay_cases[i].workload == TACH_WORKLOAD_GPT)
        g_test_add_data_func (async, &replay_cases[i], test_async_replay);
    }
  return g_test_run ();
}
