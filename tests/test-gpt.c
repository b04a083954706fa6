/* test-gpt.c: the gpt workload (engine/models/tach-gpt*.c).
 *
 *   /engine/gpt/grad/{cpu,async}   the whole model's gradient against central
 *                                  differences of its loss, in every attention x
 *                                  fusion mode, on a tiny shape
 *   /engine/gpt/train/attention-dropout/{cpu,async}
 *                                  attention's probabilities drop in training:
 *                                  the gradient without it is another; naive
 *                                  and fused drop the same ones
 *   /engine/gpt/train/modes        attention, fusion, feed and sync: the same
 *                                  per-step losses (within LOSS_RTOL), on the CPU
 *                                  and on the asynchronous test device
 *   /engine/gpt/train/learns       the loss falls on the seeded corpus
 *   /engine/gpt/generate/greedy    greedy decoding: the same tokens in every
 *                                  kv-cache (x attention, fusion) mode, logits
 *                                  within LOGIT_ATOL of kv-cache=none's
 *   /engine/gpt/generate/modes     whole runs: every kv-cache and sampling mode
 *                                  draws the same text, with the same losses, on
 *                                  both devices; the summary's prefill and decode
 *   /engine/gpt/generate/position  kv-cache=static's eager decoding uploads no
 *                                  position per token; launch=graph's does
 *   /engine/gpt/memory             what the model allocates is what validation
 *                                  counts beforehand
 *   /engine/gpt/memory/parts       the summary's memory parts (packed weights
 *                                  included) add up to what the run held
 *   /engine/gpt/summary/requests   prefill and decode apart: which steps are
 *                                  prefills, on the rate's clock
 *   /engine/gpt/knobs              which knobs apply where: gpt's own, the
 *                                  language models' shared ones, --data to
 *                                  generation (its prompts)
 *   /engine/gpt/summary/csv        runs.csv keeps them and the memory parts, and
 *                                  a results folder reads them back
 */
#include <math.h>
#include <string.h>

#include "tach-async-device.h"
#include "tach-gpt.h"
#include "tach-sample-store.h"
#include "test-run-util.h"

/* Modes sum in other orders: per-step losses of a few steps agree to this
 * (relative), and logits to LOGIT_ATOL (absolute; they are of order 1). */
#define LOSS_RTOL 1e-4
#define LOGIT_ATOL 1e-4
#define GPT_TINY "device=cpu threads=1 warmup=0 seed=7 layers=2 heads=2 embed=16 context=8"

static const char *const attention_fusion[] = {
  "attention=naive fusion=none", "attention=naive fusion=elementwise",
  "attention=fused fusion=none", "attention=fused fusion=elementwise",
};

static TachBackend *
open_backend (const char *device)
{
  g_autoptr(GError) error = NULL;
  TachBackend *be = tach_backend_new (device, 1, TACH_PRECISION_FP32, &error);

  g_assert_no_error (error);
  return be;
}

static void
config_for (TachConfig *config, const char *settings, const char *more)
{
  tach_config_init (config, TACH_WORKLOAD_GPT);
  test_apply (config, GPT_TINY);
  test_apply (config, settings);
  test_apply (config, more);
}

/* ------------------------------------------------------------- gradient */

/* The mean loss of one training batch at the parameters as they are now,
 * leaving the gradients in the model's buffer. */
static double
batch_loss (TachGpt *gpt, const int32_t *x, const int32_t *y, float *loss_dev)
{
  float loss = NAN;

  tach_gpt_train_forward_backward (gpt, x, y, loss_dev, NULL, 0);
  tach_backend_download (gpt->be, &loss, loss_dev, sizeof loss);
  g_assert_true (tach_backend_ok (gpt->be));
  return loss;
}

/* A tiny model in some modes on a device, with one batch of 2 x 8 tokens
 * and their labels on it. */
typedef struct {
  TachConfig   config;
  TachBackend *be;
  TachGpt     *gpt;
  int32_t     *x, *y;
  float       *loss_dev;
} TinyBatch;

static void
tiny_batch_open (TinyBatch *t, const char *device, const char *modes)
{
  g_autoptr(GError) error = NULL;
  int32_t x_host[16], y_host[16];

  t->be = open_backend (device);
  config_for (&t->config, modes, "batch=2 samples=64");
  t->gpt = tach_gpt_new (t->be, &t->config, &error);
  g_assert_no_error (error);
  for (int i = 0; i < 16; i++)
    {
      x_host[i] = (i * 37 + 11) % 256;
      y_host[i] = (i * 53 + 5) % 256;
    }
  t->x = tach_backend_alloc (t->be, sizeof x_host);
  t->y = tach_backend_alloc (t->be, sizeof y_host);
  t->loss_dev = tach_backend_alloc (t->be, sizeof (float));
  tach_backend_upload (t->be, t->x, x_host, sizeof x_host);
  tach_backend_upload (t->be, t->y, y_host, sizeof y_host);
}

static void
tiny_batch_close (TinyBatch *t)
{
  tach_backend_dealloc (t->be, t->x);
  tach_backend_dealloc (t->be, t->y);
  tach_backend_dealloc (t->be, t->loss_dev);
  tach_gpt_free (t->gpt);
  tach_backend_free (t->be);
  tach_config_clear (&t->config);
}

static void
check_gradient (const char *device, const char *modes)
{
  TinyBatch t;
  TachBackend *be;
  TachGpt *gpt;
  int32_t *x, *y;
  float *loss_dev;
  size_t n;
  g_autofree float *grad = NULL;
  guint checked = 0;
  double worst = 0.0;

  tiny_batch_open (&t, device, modes);
  be = t.be, gpt = t.gpt, x = t.x, y = t.y, loss_dev = t.loss_dev;
  n = tach_params_trainable (gpt->params);
  grad = g_new (float, n);
  batch_loss (gpt, x, y, loss_dev);
  tach_backend_download (be, grad, tach_params_all_grad (gpt->params), n * sizeof (float));

  /* A few floats of every slice (dropout on: the masks are the step's). */
  for (guint s = 0; s < tach_params_n_slices (gpt->params); s++)
    {
      size_t start = tach_params_offset (gpt->params, s);
      size_t count = tach_params_count (gpt->params, s);

      for (size_t j = 0; j < 3; j++)
        {
          size_t i = start + (j * 7919 + s * 31) % count;
          float *p = tach_params_all_data (gpt->params) + i;
          float w = 0.0f, h = 1e-2f, moved;
          double up, down, fd, err;

          tach_backend_download (be, &w, p, sizeof w);
          moved = w + h;
          tach_backend_upload (be, p, &moved, sizeof moved);
          up = batch_loss (gpt, x, y, loss_dev);
          moved = w - h;
          tach_backend_upload (be, p, &moved, sizeof moved);
          down = batch_loss (gpt, x, y, loss_dev);
          tach_backend_upload (be, p, &w, sizeof w);
          fd = (up - down) / (2.0 * h);
          /* fp32 losses of about 5.5 differ by ~1e-6 at best: 1e-4 absolute. */
          err = fabs (fd - grad[i]) - 1e-4 - 0.05 * fabs (grad[i]);
          if (err > worst)
            worst = err;
          if (err > 0.0)
            g_test_message ("%s %s: %s[%zu] backward %.6g, central difference %.6g", device,
                            modes, tach_params_name (gpt->params, s), i - start, grad[i], fd);
          checked++;
        }
    }
  g_test_message ("%s %s: %u floats checked", device, modes, checked);
  g_assert_cmpfloat (worst, <=, 0.0);
  tiny_batch_close (&t);
}

static void
test_grad (gconstpointer data)
{
  for (guint m = 0; m < G_N_ELEMENTS (attention_fusion); m++)
    check_gradient (data, attention_fusion[m]);
}

/* The gradient of one training batch of a tiny model in @modes, with
 * attention's dropout (@attn) or without it, into @grad; returns the loss. */
static double
dropout_gradient (const char *device, const char *modes, gboolean attn, float **grad)
{
  TinyBatch t;
  double loss;
  size_t n;

  tiny_batch_open (&t, device, modes);
  /* Training drops attention's probabilities as it drops the rest. */
  g_assert_cmpfloat (t.gpt->attn_dropout, ==, TACH_GPT_DROPOUT);
  if (!attn)
    t.gpt->attn_dropout = 0.0f;
  loss = batch_loss (t.gpt, t.x, t.y, t.loss_dev);
  n = tach_params_trainable (t.gpt->params);
  *grad = g_new (float, n);
  tach_backend_download (t.be, *grad, tach_params_all_grad (t.gpt->params), n * sizeof (float));
  tiny_batch_close (&t);
  return loss;
}

/* The largest relative difference of a slice of @a from the same slice of
 * @b (the slices of the tiny model in @modes). */
static double
slice_difference (const char *modes, const float *a, const float *b)
{
  TinyBatch t;
  double most = 0.0;

  tiny_batch_open (&t, "cpu", modes);
  for (guint s = 0; s < tach_params_n_slices (t.gpt->params); s++)
    {
      size_t start = tach_params_offset (t.gpt->params, s);
      double diff = 0.0, norm = 0.0;

      for (size_t i = start; i < start + tach_params_count (t.gpt->params, s); i++)
        {
          diff += ((double) a[i] - b[i]) * ((double) a[i] - b[i]);
          norm += (double) b[i] * b[i];
        }
      if (norm > 0.0)
        most = MAX (most, sqrt (diff / norm));
    }
  tiny_batch_close (&t);
  return most;
}

/* Attention's probabilities drop in training (GPT-2's attn_dropout): a
 * batch's gradient without that dropout is another one, by far, in both
 * attention modes; with it the two modes give the same loss and gradient
 * (the fused op draws the naive dropout's mask); on the CPU and the
 * asynchronous test device. */
static void
test_attention_dropout (gconstpointer data)
{
  const char *modes[] = { "attention=naive", "attention=fused" };
  float *grad[2][2];
  double loss[2][2];

  for (guint m = 0; m < 2; m++)
    for (guint attn = 0; attn < 2; attn++)
      loss[m][attn] = dropout_gradient (data, modes[m], attn, &grad[m][attn]);
  for (guint m = 0; m < 2; m++)
    {
      double apart = slice_difference (modes[m], grad[m][1], grad[m][0]);

      g_test_message ("%s %s: loss %.6f with attention's dropout, %.6f without; gradients "
                      "%.3f apart (the most of a slice)", (const char *) data, modes[m],
                      loss[m][1], loss[m][0], apart);
      g_assert_cmpfloat (loss[m][1], !=, loss[m][0]);
      g_assert_cmpfloat (apart, >, 0.05);
    }
  g_assert_cmpfloat (fabs (loss[1][1] - loss[0][1]), <=, LOSS_RTOL * fabs (loss[0][1]));
  g_assert_cmpfloat (slice_difference (modes[0], grad[1][1], grad[0][1]), <, 1e-3);
  for (guint m = 0; m < 2; m++)
    for (guint attn = 0; attn < 2; attn++)
      g_free (grad[m][attn]);
}

/* ------------------------------------------------------------- training */

static TestRunResult *
run_ok (const char *settings, const char *more)
{
  return test_run_ok (TACH_WORKLOAD_GPT, GPT_TINY, settings, more, NULL);
}

static void
test_train_modes (void)
{
  const char *base = "task=train batch=4 samples=256 steps=8 feed=host-f32 sync=1";
  const char *others[] = {
    "attention=fused", "fusion=elementwise", "attention=fused fusion=elementwise",
    "feed=prefetch", "feed=resident sync=end", "device=async:0",
    "device=async:0 attention=fused fusion=elementwise feed=prefetch",
  };
  g_autoptr(TestRunResult) ref = run_ok (base, "attention=naive fusion=none");

  g_assert_cmpuint (ref->losses->len, ==, 8);
  /* A fresh model predicts about uniformly over 256 bytes. */
  g_assert_cmpfloat (fabs (g_array_index (ref->losses, double, 0) - log (256.0)), <, 0.3);
  for (guint i = 0; i < G_N_ELEMENTS (others); i++)
    {
      g_autoptr(TestRunResult) other = run_ok (base, others[i]);

      test_assert_same_losses (ref->losses, other->losses, LOSS_RTOL, others[i]);
      g_assert_cmpstr (other->summary.items_unit, ==, "tokens/s");
      g_assert_true (isnan (other->summary.prefill_ms));
      g_assert_cmpfloat (other->summary.activation_bytes, >, 0.0);
      g_assert_cmpfloat (other->summary.optimizer_bytes, ==, 3.0 * other->summary.param_bytes);
    }
}

static void
test_train_learns (void)
{
  g_autoptr(TestRunResult) r = run_ok ("task=train batch=16 samples=4096 steps=120 lr=0.003",
                                       "attention=fused fusion=elementwise");
  double first = test_mean (r->losses, 0, 10), last = test_mean (r->losses, 110, 10);

  g_test_message ("loss %.3f -> %.3f", first, last);
  g_assert_cmpfloat (last, <, first - 1.0);
}

/* ----------------------------------------------------------- generation */

/* Greedy decoding of one request step by step through the model's own
 * generate functions, the argmax of each step's logits replacing the drawn
 * token: the tokens into @tokens, the logits into @logits. */
static void
greedy_decode (const char *device, const char *modes, int steps, int32_t *tokens, float *logits)
{
  TachConfig config;
  g_autoptr(GError) error = NULL;
  TachBackend *be = open_backend (device);
  TachGpt *gpt;
  int V;

  config_for (&config, modes, "task=generate batch=2 prompt=3 context=12 new-tokens=9");
  gpt = tach_gpt_new (be, &config, &error);
  g_assert_no_error (error);
  V = gpt->vocab;
  for (int s = 0; s < steps; s++)
    {
      TachStepCtx ctx = { .step = (guint64) s };

      g_assert_true (tach_gpt_generate_prepare (gpt, &ctx, &error));
      g_assert_true (tach_gpt_generate_step (gpt, &ctx, &error));
      g_assert_no_error (error);
      tach_backend_download (be, logits + (size_t) s * 2 * V, gpt->logits,
                             2 * V * sizeof (float));
      for (int b = 0; b < 2; b++)
        {
          const float *row = logits + ((size_t) s * 2 + b) * V;
          int best = 0;

          for (int v = 1; v < V; v++)
            if (row[v] > row[best])
              best = v;
          tokens[s * 2 + b] = best;
        }
      tach_backend_upload (be, gpt->next_tok, tokens + s * 2, 2 * sizeof (int32_t));
      g_assert_true (tach_gpt_generate_finish (gpt, &ctx, &error));
    }
  tach_gpt_free (gpt);
  tach_backend_free (be);
  tach_config_clear (&config);
}

static void
test_generate_greedy (gconstpointer data)
{
  /* Two requests of 9 steps: the caches start over at step 9. */
  enum { STEPS = 14, V = 256 };
  /* launch=graph's static cache: the prompt but its last token prefilled
   * in prepare, every step a decode at the device's position. */
  const char *caches[] = { "kv-cache=dynamic", "kv-cache=static", "kv-cache=static launch=graph" };
  g_autofree int32_t *ref_tokens = g_new (int32_t, STEPS * 2);
  g_autofree float *ref_logits = g_new (float, STEPS * 2 * V);
  g_autofree int32_t *tokens = g_new (int32_t, STEPS * 2);
  g_autofree float *logits = g_new (float, STEPS * 2 * V);

  for (guint m = 0; m < G_N_ELEMENTS (attention_fusion); m++)
    {
      g_autofree char *none = g_strdup_printf ("%s kv-cache=none", attention_fusion[m]);

      greedy_decode (data, none, STEPS, ref_tokens, ref_logits);
      for (guint c = 0; c < G_N_ELEMENTS (caches); c++)
        {
          g_autofree char *modes = g_strdup_printf ("%s %s", attention_fusion[m], caches[c]);
          double worst = 0.0;

          greedy_decode (data, modes, STEPS, tokens, logits);
          for (guint i = 0; i < STEPS * 2 * V; i++)
            worst = MAX (worst, fabs (logits[i] - ref_logits[i]));
          g_test_message ("%s: logits within %.3g of kv-cache=none's", modes, worst);
          g_assert_cmpfloat (worst, <=, LOGIT_ATOL);
          g_assert_cmpmem (tokens, STEPS * 2 * sizeof (int32_t), ref_tokens,
                           STEPS * 2 * sizeof (int32_t));
        }
    }
}

static void
test_generate_modes (void)
{
  const char *base = "task=generate batch=2 prompt=4 steps=20 print-text=true "
                     "kv-cache=none sampling=device sync=1";
  const char *others[] = {
    "kv-cache=dynamic", "kv-cache=static", "kv-cache=static attention=fused",
    "kv-cache=dynamic fusion=elementwise sampling=host", "sync=end",
    "device=async:0 kv-cache=static", "device=async:0 kv-cache=dynamic sampling=host",
  };
  g_autoptr(TestRunResult) ref = run_ok (base, "");

  g_assert_nonnull (ref->text);
  g_assert_cmpuint (ref->losses->len, ==, 20);
  /* context 8, prompt 4: requests of 4 steps, prefills at 0, 4, 8 ... */
  g_assert_true (isfinite (ref->summary.prefill_ms) && ref->summary.prefill_ms > 0.0);
  g_assert_true (isfinite (ref->summary.decode_tokens_per_s)
                 && ref->summary.decode_tokens_per_s > 0.0);
  g_assert_cmpstr (ref->summary.items_unit, ==, "tokens/s");
  g_assert_cmpfloat (ref->summary.kv_cache_bytes, ==, 0.0);
  for (guint i = 0; i < G_N_ELEMENTS (others); i++)
    {
      g_autoptr(TestRunResult) other = run_ok (base, others[i]);

      test_assert_same_losses (ref->losses, other->losses, LOSS_RTOL, others[i]);
      g_assert_cmpstr (other->text, ==, ref->text);
      g_assert_true (isfinite (other->summary.prefill_ms));
      if (strstr (others[i], "kv-cache=static") != NULL)
        /* 2 layers x keys and values x batch 2 x 8 positions x 16 wide. */
        g_assert_cmpfloat (other->summary.kv_cache_bytes, ==, 2.0 * 2 * 2 * 8 * 16 * 4);
    }
}

/* Uploads a backend makes, counted by a copy of its table whose upload
 * forwards to the real one (one counted backend at a time). */
static const TachBackendOps *uploads_real;
static TachBackendOps uploads_ops;
static guint uploads_made;

static void
counting_upload (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  uploads_made++;
  uploads_real->upload (be, dst, src, bytes);
}

/* kv-cache=static's eager decoding takes its position as the ops'
 * argument: no upload per token (a copy to the device, on a GPU from
 * pageable memory, which waits), only a request's prompt at its prefill;
 * launch=graph's decode step reads it from the device, uploaded before
 * each step.  Sampling on the device, so that no token goes up. */
static void
test_generate_position (gconstpointer data)
{
  const char *launches[] = { "launch=eager", "launch=graph" };

  for (guint l = 0; l < G_N_ELEMENTS (launches); l++)
    {
      TachConfig config;
      g_autoptr(GError) error = NULL;
      TachBackend *be = open_backend (data);
      gboolean graph = l == 1;
      TachGpt *gpt;

      config_for (&config, launches[l],
                  "task=generate batch=2 prompt=3 context=12 new-tokens=4 kv-cache=static "
                  "sampling=device");
      gpt = tach_gpt_new (be, &config, &error);
      g_assert_no_error (error);
      uploads_real = be->ops;
      uploads_ops = *be->ops;
      uploads_ops.upload = counting_upload;
      be->ops = &uploads_ops;
      for (int s = 0; s < 10; s++)
        {
          TachStepCtx ctx = { .step = (guint64) s };
          gboolean prefill = s % tach_gpt_request_steps (gpt) == 0;

          uploads_made = 0;
          g_assert_true (tach_gpt_generate_prepare (gpt, &ctx, &error));
          g_assert_true (tach_gpt_generate_step (gpt, &ctx, &error));
          g_assert_true (tach_gpt_generate_finish (gpt, &ctx, &error));
          g_assert_no_error (error);
          /* The prompt at a prefill; the position before every graph step. */
          g_assert_cmpuint (uploads_made, ==, (prefill ? 1 : 0) + (graph ? 1 : 0));
        }
      be->ops = uploads_real;
      tach_gpt_free (gpt);
      tach_backend_free (be);
      tach_config_clear (&config);
    }
}

/* ---------------------------------------------------------------- memory */

static void
test_memory (void)
{
  const char *configs[] = {
    "task=train batch=3 attention=naive", "task=train batch=3 attention=fused",
    "task=generate batch=2 prompt=3 kv-cache=none", "task=generate batch=2 prompt=3 kv-cache=static",
    "task=generate batch=2 prompt=3 kv-cache=dynamic attention=fused",
  };

  for (guint i = 0; i < G_N_ELEMENTS (configs); i++)
    {
      TachConfig config;
      g_autoptr(GError) error = NULL;
      TachBackend *be = open_backend ("cpu");
      TachGpt *gpt;
      guint64 activations = 0, kv = 0;

      config_for (&config, configs[i], "samples=64");
      tach_gpt_memory_floats (&config, NULL, &activations, &kv);
      gpt = tach_gpt_new (be, &config, &error);
      g_assert_no_error (error);
      g_test_message ("%s: %" G_GUINT64_FORMAT " activation bytes", configs[i],
                      gpt->activation_bytes);
      g_assert_cmpuint (gpt->activation_bytes, ==, activations * sizeof (float));
      if (config.kv_cache == TACH_KV_CACHE_STATIC && config.task == TACH_TASK_GENERATE)
        g_assert_cmpuint (gpt->kv_bytes, ==, kv * sizeof (float));
      tach_gpt_free (gpt);
      tach_backend_free (be);
      tach_config_clear (&config);
    }
}

/* The summary's memory parts add up to what the run held: on the CPU,
 * decoding runs its products from packed copies of the frozen weights,
 * as large as the weights themselves (GPT-2's shape: 51.7 MiB of parts
 * against 88.8 MiB held before they were counted), and the parts say so;
 * what the run holds beyond its parts (tokens, a step's logits) is a
 * small share of the peak.  Training, and the asynchronous device, pack
 * nothing. */
static void
test_memory_parts (void)
{
  const char *configs[] = {
    "task=generate batch=2 prompt=3 steps=12 kv-cache=static",
    "task=generate batch=2 prompt=3 steps=12 kv-cache=dynamic",
    "task=generate batch=2 prompt=3 steps=12 kv-cache=static device=async:0",
    "task=train batch=2 steps=3",
  };

  for (guint i = 0; i < G_N_ELEMENTS (configs); i++)
    {
      g_autoptr(TestRunResult) r = run_ok (configs[i], "embed=64 heads=4");
      const TachSummary *s = &r->summary;
      double parts = s->param_bytes + s->optimizer_bytes + s->activation_bytes
                     + s->kv_cache_bytes + s->packed_weight_bytes;
      gboolean packs = i < 2;

      g_test_message ("%s: parts %.0f (packed %.0f) of %.0f bytes held", configs[i], parts,
                      s->packed_weight_bytes, (double) s->peak_memory_bytes);
      if (!packs)
        {
          g_assert_cmpfloat (s->packed_weight_bytes, ==, 0.0);
          continue;
        }
#ifdef __x86_64__
      /* Every 2-D weight but the position table, packed whole (by the
       * AVX2 and AVX-512 kernels: 64 is a whole number of vectors). */
      g_assert_cmpfloat (s->packed_weight_bytes, ==, (256.0 * 64 + 2 * 12 * 64 * 64) * 4);
#endif
      g_assert_cmpfloat (parts, <=, (double) s->peak_memory_bytes);
      g_assert_cmpfloat (parts, >=, 0.9 * (double) s->peak_memory_bytes);
    }
}

/* Requests of 5 steps, 2 tokens a step: prefills (steps 0, 5, 10, 15) take
 * 20, 30 and 40 ms (the first is warm-up), decoding steps 4 ms on the
 * host clock and 2 ms on the device's, where the device has one. */
static void
test_summary_requests (void)
{
  for (int device = 0; device < 2; device++)
    {
      TachSampleStore *store = tach_sample_store_new ();
      TachSummary s;

      for (guint64 i = 0; i < 20; i++)
        {
          gboolean prefill = i % 5 == 0;
          TachSample sample = {
            .step = i, .warmup = i == 0, .wall_s = (double) i, .loss = NAN, .accuracy = NAN,
            .step_ms = prefill ? 10.0 * (double) (i / 5 + 1) : 4.0,
            .compute_ms = NAN, .api_calls = NAN, .comm_ms = NAN, .pack_ms = NAN,
            .imbalance_ms = NAN,
          };

          sample.device_step_ms = device ? (prefill ? 10.0 * (double) (i / 5 + 1) : 2.0) : NAN;
          tach_sample_store_append (store, &sample);
        }
      tach_summary_compute_store (store, 2, 0.0, 0.0, &s);
      g_assert_cmpstr (s.rate_clock, ==, device ? "device" : "host");
      tach_summary_add_requests (store, 5, 2, &s);
      g_assert_cmpfloat_with_epsilon (s.prefill_ms, 30.0, 1e-3);
      g_assert_cmpfloat_with_epsilon (s.decode_tokens_per_s, 2.0 / (device ? 2.0 : 4.0) * 1000.0,
                                      0.5);
      /* Without requests, nothing. */
      tach_summary_compute_store (store, 2, 0.0, 0.0, &s);
      tach_summary_add_requests (store, 0, 2, &s);
      g_assert_true (isnan (s.prefill_ms) && isnan (s.decode_tokens_per_s));
      tach_sample_store_free (store);
    }
}

static void
test_summary_csv (void)
{
  TachConfig config;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autoptr(GPtrArray) loaded = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autofree char *dir = test_make_tmp_dir ("gpt-csv-XXXXXX");
  TachSummary made, read;

  config_for (&config, "task=generate batch=2 prompt=3 steps=12 kv-cache=static", "");
  g_ptr_array_add (runs, test_run_to_end (&config));
  g_assert_true (tach_csv_append (dir, runs, &error));
  g_assert_no_error (error);
  g_assert_true (tach_results_load (dir, loaded, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (loaded->len, ==, 1);
  tach_run_get_summary (runs->pdata[0], &made);
  tach_run_get_summary (loaded->pdata[0], &read);
  g_assert_true (isfinite (made.prefill_ms) && isfinite (made.decode_tokens_per_s));
  g_assert_cmpfloat_with_epsilon (read.prefill_ms, made.prefill_ms, 1e-6 * made.prefill_ms);
  g_assert_cmpfloat_with_epsilon (read.decode_tokens_per_s, made.decode_tokens_per_s,
                                  1e-6 * made.decode_tokens_per_s);
  g_assert_cmpfloat (read.param_bytes, ==, made.param_bytes);
  g_assert_cmpfloat (read.optimizer_bytes, ==, 0.0);
  g_assert_cmpfloat (read.activation_bytes, ==, made.activation_bytes);
  g_assert_cmpfloat (read.kv_cache_bytes, ==, 2.0 * 2 * 2 * 8 * 16 * 4);
  g_assert_cmpfloat (made.packed_weight_bytes, >, 0.0);
  g_assert_cmpfloat (read.packed_weight_bytes, ==, made.packed_weight_bytes);
  test_remove_tree (dir);
  tach_config_clear (&config);
}

static void
test_knobs (void)
{
  static const struct {
    TachWorkload workload;
    const char  *settings, *knob;
    gboolean     applies;
  } cases[] = {
    { TACH_WORKLOAD_GPT, "task=generate", "data", TRUE },
    { TACH_WORKLOAD_LSTM_LM, "task=generate", "data", TRUE },
    { TACH_WORKLOAD_GPT, "task=generate", "kv-cache", TRUE },
    { TACH_WORKLOAD_GPT, "task=train", "kv-cache", FALSE },
    { TACH_WORKLOAD_GPT, "task=train", "prompt", FALSE },
    { TACH_WORKLOAD_GPT, "task=train", "sampling", FALSE },
    { TACH_WORKLOAD_GPT, "task=generate", "sampling", TRUE },
    { TACH_WORKLOAD_GPT, "task=train", "attention", TRUE },
    { TACH_WORKLOAD_GPT, "task=train", "context", TRUE },
    { TACH_WORKLOAD_GPT, "task=train", "hidden", FALSE },
    { TACH_WORKLOAD_GPT, "task=train", "call-setup", FALSE },
    { TACH_WORKLOAD_LSTM_LM, "task=train", "context", TRUE },
    { TACH_WORKLOAD_LSTM_LM, "task=train", "attention", FALSE },
    { TACH_WORKLOAD_BILSTM, "task=train", "heads", FALSE },
    { TACH_WORKLOAD_CNN, "task=train", "context", FALSE },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      TachConfig config;
      const char *why = NULL;

      tach_config_init (&config, cases[i].workload);
      test_apply (&config, cases[i].settings);
      g_test_message ("%s %s %s", tach_workload_to_string (cases[i].workload),
                      cases[i].settings, cases[i].knob);
      g_assert_cmpint (tach_config_knob_applies (&config, cases[i].knob, &why), ==,
                       cases[i].applies);
      g_assert_true ((why == NULL) == cases[i].applies);
      tach_config_clear (&config);
    }
  {
    TachConfig config;

    /* gpt's own defaults, from the workload's row; lstm-lm keeps its. */
    tach_config_init (&config, TACH_WORKLOAD_GPT);
    g_assert_cmpuint (config.layers, ==, 6);
    g_assert_cmpuint (config.embed, ==, 384);
    g_assert_cmpuint (config.context, ==, 256);
    g_assert_cmpuint (config.heads, ==, 6);
    g_assert_cmpuint (config.vocab, ==, 256);
    g_assert_cmpuint (config.batch, ==, 64);
    tach_config_clear (&config);
    tach_config_init (&config, TACH_WORKLOAD_LSTM_LM);
    g_assert_cmpuint (config.layers, ==, 1);
    g_assert_cmpuint (config.embed, ==, 100);
    g_assert_cmpuint (config.context, ==, 4);
    tach_config_clear (&config);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tach_async_device_register ();
  g_test_add_data_func ("/engine/gpt/grad/cpu", "cpu", test_grad);
  g_test_add_data_func ("/engine/gpt/grad/async", TACH_ASYNC_DEVICE_ID, test_grad);
  g_test_add_data_func ("/engine/gpt/train/attention-dropout/cpu", "cpu", test_attention_dropout);
  g_test_add_data_func ("/engine/gpt/train/attention-dropout/async", TACH_ASYNC_DEVICE_ID,
                        test_attention_dropout);
  g_test_add_func ("/engine/gpt/train/modes", test_train_modes);
  g_test_add_func ("/engine/gpt/train/learns", test_train_learns);
  g_test_add_data_func ("/engine/gpt/generate/greedy/cpu", "cpu", test_generate_greedy);
  g_test_add_data_func ("/engine/gpt/generate/greedy/async", TACH_ASYNC_DEVICE_ID,
                        test_generate_greedy);
  g_test_add_func ("/engine/gpt/generate/modes", test_generate_modes);
  g_test_add_data_func ("/engine/gpt/generate/position/cpu", "cpu", test_generate_position);
  g_test_add_data_func ("/engine/gpt/generate/position/async", TACH_ASYNC_DEVICE_ID,
                        test_generate_position);
  g_test_add_func ("/engine/gpt/memory", test_memory);
  g_test_add_func ("/engine/gpt/memory/parts", test_memory_parts);
  g_test_add_func ("/engine/gpt/summary/requests", test_summary_requests);
  g_test_add_func ("/engine/gpt/summary/csv", test_summary_csv);
  g_test_add_func ("/engine/gpt/knobs", test_knobs);
  return g_test_run ();
}
