/* test-accum.c: gradient accumulation (the accumulate and accumulate-sync
 * knobs), on the CPU and on the asynchronous test double of a device.
 *
 *   /engine/accumulate/params      each training workload, driven step by
 *                                  step as the runner drives it: k = 4
 *                                  micro-batches of B give the parameters
 *                                  of one step of 4 B, to float summation
 *                                  order (bound below); accumulate-sync
 *                                  every and last give the same bits (one
 *                                  rank: the same folds in the same order);
 *                                  every reaches the ranks' hook once per
 *                                  micro-batch, last once per update, with
 *                                  the last micro-batch's announcements
 *                                  (overlap's buckets) and none before
 *   /engine/accumulate/runs        whole runs: per-step losses of k x B
 *                                  against 1 x k B, samples/s counting
 *                                  every micro-batch, one sample per update
 *   /engine/accumulate/bad-input   accumulate 0, launch=graph, and
 *                                  accumulate-sync without anything to defer
 *
 * The bound: after 3 updates every parameter is within 2e-6 of the big
 * batch's, plus 1e-5 of its magnitude (observed: 3e-8 bilstm, 6e-7
 * lstm-lm, 7e-9 cnn, the same on both devices; Adam at lr 1e-3 moves a
 * weight up to 3e-3 in 3 updates, so this is some 1000 times tighter
 * than the steps themselves).  The small cnn keeps the default filters:
 * with filters=4,8 the double crashes in oneDNN's convolution whether or
 * not anything accumulates (left alone here).
 */
#include <math.h>
#include <string.h>

#include "tach-async-device.h"
#include "tach-config-private.h"
#include "tach-model.h"
#include "test-run-util.h"

#define K 4
#define UPDATES 3

/* The ranks' hook of one process: counts what the parameters tell it and
 * keeps where they are; it averages nothing (one rank). */
typedef struct {
  TachGradSyncHook hook;   /* first */
  guint            readies;
  guint            reduces;
  guint            readies_before_last;  /* announced in micro-batches 0..k-2 */
  TachBackend     *be;
  const float     *params;
  size_t           total;
} CountHook;

static void
count_layout (TachGradSyncHook *hook, const size_t *offsets, const size_t *counts, guint n,
              size_t trainable)
{
  (void) hook, (void) offsets, (void) counts, (void) n, (void) trainable;
}

static void
count_ready (TachGradSyncHook *hook, float *grad, guint index)
{
  CountHook *self = (CountHook *) hook;

  (void) grad, (void) index;
  self->readies++;
  if (self->be->micro + 1 < MAX (self->be->accumulate, 1))
    self->readies_before_last++;
}

static void
count_reduce (TachGradSyncHook *hook, float *grad, const float *params, size_t total)
{
  CountHook *self = (CountHook *) hook;

  (void) grad;
  self->reduces++;
  self->params = params;
  self->total = total;
}

/* The smallest shapes of each workload, synthetic data (no test set). */
static const char *
base_settings (TachWorkload workload)
{
  switch (workload)
    {
    case TACH_WORKLOAD_BILSTM:
      return "seq-len=5 features=12 hidden=8";
    case TACH_WORKLOAD_LSTM_LM:
      return "hidden=16 embed=8 context=3";
    case TACH_WORKLOAD_GPT:
      return "layers=2 heads=2 embed=16 context=8";
    case TACH_WORKLOAD_CNN:
    default:
      return "input=16x16x1 dense=32";
    }
}

/* Trains @workload on @device for UPDATES steps of @k micro-batches of
 * @batch, as the runner does (TachBackend.micro set before each), and
 * returns its parameters; *hook_out gets the hook's counts. */
static GArray *
train_params (TachWorkload workload, const char *device, guint batch, guint k,
              TachAccumulateSync sync, CountHook *hook_out)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TachDevice) dev = tach_device_find (device, &error);
  g_autofree char *settings = g_strdup_printf ("device=%s threads=1 seed=5 feed=resident"
                                               " batch=%u accumulate=%u samples=%u",
                                               device, batch, k, batch * k * UPDATES);
  const TachModelClass *klass = tach_model_class_for (workload);
  CountHook hook = { { count_layout, count_ready, count_reduce } };
  TachConfig config;
  TachBackend *be;
  TachModel *model;
  GArray *params;

  g_assert_no_error (error);
  tach_config_init (&config, workload);
  test_apply (&config, base_settings (workload));
  test_apply (&config, settings);
  config.accumulate_sync = sync;
  g_assert_true (tach_config_validate_on (&config, dev, &error));
  g_assert_no_error (error);
  be = tach_backend_open (dev, 1, TACH_PRECISION_FP32, &error);
  g_assert_no_error (error);
  hook.be = be;
  be->accumulate = k;
  be->accumulate_sync = sync;
  be->grad_sync = &hook.hook;
  model = klass->create (be, &config, &error);
  g_assert_no_error (error);
  for (guint64 step = 0; step < UPDATES; step++)
    for (guint j = 0; j < k; j++)
      {
        TachStepCtx ctx = { .step = step };

        be->micro = j;
        g_assert_true (klass->prepare == NULL || klass->prepare (model, &ctx, &error));
        g_assert_true (klass->step (model, &ctx, &error));
        g_assert_true (klass->finish == NULL || klass->finish (model, &ctx, &error));
        g_assert_no_error (error);
      }
  g_assert_nonnull (hook.params);
  params = g_array_sized_new (FALSE, FALSE, sizeof (float), (guint) hook.total);
  g_array_set_size (params, (guint) hook.total);
  tach_backend_download (be, params->data, hook.params, hook.total * sizeof (float));
  tach_backend_synchronize (be);
  g_assert_true (tach_backend_ok (be));
  klass->free (model);
  be->grad_sync = NULL;
  tach_backend_free (be);
  tach_config_clear (&config);
  *hook_out = hook;
  return params;
}

static void
test_params (void)
{
  const char *devices[] = { "cpu", TACH_ASYNC_DEVICE_ID };

  for (guint d = 0; d < G_N_ELEMENTS (devices); d++)
    for (TachWorkload w = 0; w < TACH_WORKLOAD_COUNT; w++)
      {
        CountHook big_hook, every_hook, last_hook;
        g_autoptr(GArray) big = train_params (w, devices[d], 8 * K, 1, TACH_ACCUMULATE_SYNC_EVERY,
                                              &big_hook);
        g_autoptr(GArray) every = train_params (w, devices[d], 8, K, TACH_ACCUMULATE_SYNC_EVERY,
                                                &every_hook);
        g_autoptr(GArray) last = train_params (w, devices[d], 8, K, TACH_ACCUMULATE_SYNC_LAST,
                                               &last_hook);
        double worst = 0.0;

        g_test_message ("%s on %s", tach_workload_to_string (w), devices[d]);
        g_assert_cmpuint (big->len, ==, every->len);
        g_assert_cmpuint (every->len, ==, last->len);
        for (guint i = 0; i < big->len; i++)
          {
            float a = g_array_index (big, float, i), b = g_array_index (every, float, i);

            worst = MAX (worst, fabs ((double) a - b));
            if (fabs ((double) a - b) > 2e-6 + 1e-5 * fabs (a))
              g_error ("%s on %s: parameter %u is %.9g after %u updates of %u x 8, %.9g of"
                       " one x %u", tach_workload_to_string (w), devices[d], i, b, UPDATES, K,
                       a, 8 * K);
          }
        g_test_message ("largest difference from the big batch: %g", worst);
        /* One rank: every and last fold the same numbers in one order. */
        g_assert_cmpmem (every->data, every->len * sizeof (float), last->data,
                         last->len * sizeof (float));
        /* every: the ranks hear of each micro-batch; last: of the update's
         * sum once, its announcements in the last micro-batch only. */
        g_assert_cmpuint (big_hook.reduces, ==, UPDATES);
        g_assert_cmpuint (every_hook.reduces, ==, UPDATES * K);
        g_assert_cmpuint (last_hook.reduces, ==, UPDATES);
        g_assert_cmpuint (every_hook.readies, ==, K * big_hook.readies);
        g_assert_cmpuint (last_hook.readies, ==, big_hook.readies);
        g_assert_cmpuint (last_hook.readies_before_last, ==, 0);
        g_assert_cmpuint (big_hook.readies, >, 0);
      }
}

/* Validation's memory estimate counts accumulation's sum: the size of the
 * trainable parameters again, which a model's parameters bound. */
static void
test_memory_needs (void)
{
  for (TachWorkload w = 0; w < TACH_WORKLOAD_COUNT; w++)
    {
      const TachModelClass *klass = tach_model_class_for (w);
      CountHook hook;
      g_autoptr(GArray) params = train_params (w, "cpu", 8, 1, TACH_ACCUMULATE_SYNC_EVERY,
                                               &hook);
      guint64 dev[2], host;

      for (guint i = 0; i < 2; i++)
        {
          g_autofree char *settings = g_strdup_printf ("device=cpu batch=8 accumulate=%u",
                                                       i == 0 ? 1 : K);
          TachConfig config;

          tach_config_init (&config, w);
          test_apply (&config, base_settings (w));
          test_apply (&config, settings);
          klass->memory_needs (&config, &dev[i], &host);
          tach_config_clear (&config);
        }
      g_test_message ("%s: %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT " bytes, %u parameters",
                      tach_workload_to_string (w), dev[0], dev[1], params->len);
      g_assert_cmpuint (dev[1], >, dev[0]);
      g_assert_cmpuint (dev[1] - dev[0], <=, (guint64) params->len * sizeof (float));
    }
}

static void
test_runs (void)
{
  const char *devices[] = { "cpu", TACH_ASYNC_DEVICE_ID };

  for (guint d = 0; d < G_N_ELEMENTS (devices); d++)
    for (TachWorkload w = 0; w < TACH_WORKLOAD_COUNT; w++)
      {
        g_autofree char *device = g_strdup_printf ("device=%s threads=1 seed=9 steps=6 warmup=2"
                                                   " feed=prefetch metrics=accuracy",
                                                   devices[d]);
        g_autoptr(TestRunResult) big = test_run_ok (w, base_settings (w), device, "batch=16",
                                                    NULL);
        g_autoptr(TestRunResult) small = test_run_ok (w, base_settings (w), device,
                                                      "batch=4 accumulate=4", NULL);

        g_test_message ("%s on %s", tach_workload_to_string (w), devices[d]);
        /* A sample per update, its loss the mean of its micro-batches'. */
        g_assert_cmpuint (small->samples->len, ==, 6);
        test_assert_same_losses (big->losses, small->losses, 1e-5,
                                 "accumulate=4 at batch 4 against batch 16");
        for (guint i = 0; i < small->samples->len; i++)
          {
            const TachSample *a = &g_array_index (big->samples, TachSample, i);
            const TachSample *b = &g_array_index (small->samples, TachSample, i);

            g_assert_cmpfloat (fabs (a->accuracy - b->accuracy), <=, 1e-6);
          }
        /* Samples/s counts every micro-batch of a step (gpt's training
         * counts tokens: @per_sample a sample's, as the big batch counts
         * them). */
        double per_sample = big->summary.items_per_s / big->summary.steps_per_s_median / 16.0;

        g_assert_cmpfloat (per_sample, >=, 1.0);
        g_assert_cmpfloat (fabs (small->summary.items_per_s
                                 - 16.0 * per_sample * small->summary.steps_per_s_median),
                           <=, 1e-6 * small->summary.items_per_s);
      }
}

static void
test_bad_input (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TachDevice) async = NULL;
  TachConfig config;
  const char *why = NULL;

  tach_config_init (&config, TACH_WORKLOAD_BILSTM);
  /* No micro-batch at all. */
  g_assert_false (tach_config_set (&config, "accumulate", "0", &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "accumulate"));
  g_clear_error (&error);

  /* Deferring the sync with nothing to defer, alone or not: said, and
   * harmless. */
  test_apply (&config, "accumulate-sync=last ranks=2");
  g_assert_false (tach_config_knob_applies (&config, "accumulate-sync", &why));
  g_assert_nonnull (strstr (why, "accumulate=1"));
  test_apply (&config, "accumulate=4 ranks=1");
  g_assert_false (tach_config_knob_applies (&config, "accumulate-sync", &why));
  g_assert_nonnull (strstr (why, "ranks"));
  test_apply (&config, "ranks=2");
  g_assert_true (tach_config_knob_applies (&config, "accumulate-sync", NULL));
  g_assert_true (tach_config_knob_applies (&config, "accumulate", NULL));
  /* Generation has no gradients. */
  test_apply (&config, "workload=lstm-lm task=generate");
  g_assert_false (tach_config_knob_applies (&config, "accumulate", NULL));
  g_assert_cmpuint (tach_config_get_accumulate (&config), ==, 1);
  tach_config_clear (&config);

  /* A graph would be one micro-batch's: refused, on a device with graphs. */
  tach_async_device_set_graphs (TRUE);
  async = tach_device_find (TACH_ASYNC_DEVICE_ID, &error);
  g_assert_no_error (error);
  tach_config_init (&config, TACH_WORKLOAD_BILSTM);
  test_apply (&config, "device=async:0 launch=graph accumulate=2");
  g_assert_false (tach_config_validate_on (&config, async, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "eager"));
  g_assert_nonnull (strstr (error->message, "accumulate 2"));
  tach_async_device_set_graphs (FALSE);
  tach_config_clear (&config);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tach_async_device_register ();
  g_test_add_func ("/engine/accumulate/params", test_params);
  g_test_add_func ("/engine/accumulate/runs", test_runs);
  g_test_add_func ("/engine/accumulate/memory-needs", test_memory_needs);
  g_test_add_func ("/engine/accumulate/bad-input", test_bad_input);
  return g_test_run ();
}
