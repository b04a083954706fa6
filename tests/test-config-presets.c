/* test-config-presets.c: the presets (part of test-config): each applies
 * cleanly to its own workload, sets what its framework's code sets, and
 * says why, with a row in the README. */
#include <string.h>

#include "tach-backend.h"
#include "tach-config-private.h"
#include "tach-engine.h"
#include "test-config.h"

static void
test_presets (void)
{
  guint n = 0;
  const TachPreset *all = tach_presets (&n);
  TachConfig c;

  g_assert_cmpuint (n, ==, 48);
  /* Every preset applies cleanly to its own workload. */
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(GError) error = NULL;

      tach_config_init (&c, all[i].workload);
      g_assert_true (tach_config_set (&c, "device", "cpu", NULL));
      g_assert_true (tach_config_apply_preset (&c, all[i].name, &error));
      g_assert_no_error (error);
      g_assert_cmpstr (c.preset, ==, all[i].name);
      /* A preset never sets launch=graph on a device that cannot do it. */
      g_assert_cmpint (c.launch, ==, TACH_LAUNCH_EAGER);
      tach_config_clear (&c);
    }

  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  g_assert_true (tach_config_set (&c, "device", "cpu", NULL));
  g_assert_true (tach_config_set (&c, "preset", "tf1-feed-dict", NULL));
  g_assert_cmpint (c.layout, ==, TACH_LAYOUT_MISREAD);
  g_assert_cmpint (c.feed, ==, TACH_FEED_HOST_F64);
  g_assert_cmpuint (c.sync_every, ==, 1);
  /* The next preset starts from the defaults, not from the last preset. */
  g_assert_true (tach_config_set (&c, "preset", "keras-fit", NULL));
  g_assert_cmpint (c.layout, ==, TACH_LAYOUT_BATCH_MAJOR);
  g_assert_true (tach_config_set (&c, "preset", "tuned", NULL));
  g_assert_cmpint (c.feed, ==, TACH_FEED_RESIDENT);
  g_assert_cmpuint (c.sync_every, ==, 0);
  /* Knobs stay settable after a preset. */
  g_assert_true (tach_config_set (&c, "feed", "prefetch", NULL));
  g_assert_cmpint (c.feed, ==, TACH_FEED_PREFETCH);
  tach_config_clear (&c);

  {
    g_autoptr(GPtrArray) lm = tach_presets_for_workload (TACH_WORKLOAD_LSTM_LM);
    g_autoptr(GPtrArray) cnn = tach_presets_for_workload (TACH_WORKLOAD_CNN);

    g_assert_cmpuint (lm->len, ==, 10);
    /* Alone, not the data-parallel presets; tuned last either way (the
     * explain view's "to"). */
    {
      g_autoptr(GPtrArray) alone = tach_presets_for_ranks (TACH_WORKLOAD_LSTM_LM, 1);
      g_autoptr(GPtrArray) two = tach_presets_for_ranks (TACH_WORKLOAD_LSTM_LM, 2);

      g_assert_cmpuint (alone->len, ==, 3);
      g_assert_cmpuint (two->len, ==, 10);
      g_assert_cmpstr (((const TachPreset *) alone->pdata[2])->name, ==, "tuned");
      g_assert_cmpstr (((const TachPreset *) two->pdata[9])->name, ==, "tuned");
    }
    g_assert_cmpstr (((const TachPreset *) lm->pdata[0])->name, ==, "static-rnn");
    g_assert_cmpstr (((const TachPreset *) cnn->pdata[0])->name, ==, "estimator");
  }

  /* gpt: the caches of Hugging Face's generate, and build-nanogpt's ladder,
   * whose GPU-only rung (TF32) runs as fp32 on the CPU. */
  tach_config_init (&c, TACH_WORKLOAD_GPT);
  g_assert_true (tach_config_set (&c, "device", "cpu", NULL));
  g_assert_true (tach_config_set (&c, "preset", "hf-dynamic", NULL));
  g_assert_cmpint (c.kv_cache, ==, TACH_KV_CACHE_DYNAMIC);
  g_assert_cmpint (c.fusion, ==, TACH_FUSION_NONE);
  g_assert_true (tach_config_set (&c, "preset", "hf-static-compiled", NULL));
  g_assert_cmpint (c.kv_cache, ==, TACH_KV_CACHE_STATIC);
  g_assert_cmpint (c.fusion, ==, TACH_FUSION_ELEMENTWISE);
  g_assert_true (tach_config_set (&c, "preset", "nanogpt-no-cache", NULL));
  g_assert_cmpint (c.kv_cache, ==, TACH_KV_CACHE_NONE);
  g_assert_true (tach_config_set (&c, "preset", "build-nanogpt-fp32", NULL));
  g_assert_cmpint (c.attention, ==, TACH_ATTENTION_NAIVE);
  g_assert_true (tach_config_set (&c, "preset", "build-nanogpt-tf32", NULL));
  g_assert_cmpint (c.precision, ==, TACH_PRECISION_FP32);
  g_assert_true (tach_config_set (&c, "preset", "build-nanogpt-flash", NULL));
  g_assert_cmpint (c.attention, ==, TACH_ATTENTION_FUSED);
  tach_config_clear (&c);

  /* The data-parallel presets: the synchronisation they cite, and tuned's
   * other modes, so that explain between them and tuned is about the
   * synchronisation alone. */
  for (int w = 0; w < TACH_WORKLOAD_COUNT; w++)
    {
      static const struct {
        const char *name; TachGradSync sync; guint mb; guint k; TachAccumulateSync when;
        TachShard shard; TachShardPrefetch prefetch;
      } dp[] = {
        { "horovod-no-overlap", TACH_GRAD_SYNC_PER_TENSOR, 64, 1, TACH_ACCUMULATE_SYNC_EVERY,
          TACH_SHARD_NONE },
        { "horovod", TACH_GRAD_SYNC_FUSED, 64, 1, TACH_ACCUMULATE_SYNC_EVERY, TACH_SHARD_NONE },
        { "ddp", TACH_GRAD_SYNC_OVERLAP, 25, 1, TACH_ACCUMULATE_SYNC_EVERY, TACH_SHARD_NONE },
        /* Accumulation with and without no_sync: DDP's otherwise. */
        { "ddp-accumulate", TACH_GRAD_SYNC_OVERLAP, 25, 4, TACH_ACCUMULATE_SYNC_EVERY,
          TACH_SHARD_NONE },
        { "ddp-no-sync", TACH_GRAD_SYNC_OVERLAP, 25, 4, TACH_ACCUMULATE_SYNC_LAST,
          TACH_SHARD_NONE },
        /* DeepSpeed's ZeRO-2: one reduce-scatter of 5e8 elements' bucket. */
        { "zero2", TACH_GRAD_SYNC_FUSED, 1907, 1, TACH_ACCUMULATE_SYNC_EVERY, TACH_SHARD_GRADS },
        /* PyTorch FSDP's FULL_SHARD with BACKWARD_PRE prefetch: the units
         * are the buckets, bucket-mb left at its default. */
        { "fsdp", TACH_GRAD_SYNC_OVERLAP, 25, 1, TACH_ACCUMULATE_SYNC_EVERY, TACH_SHARD_ALL,
          TACH_SHARD_PREFETCH_NEXT },
      };
      TachConfig tuned;

      tach_config_init (&tuned, (TachWorkload) w);
      g_assert_true (tach_config_set (&tuned, "device", "cpu", NULL));
      g_assert_true (tach_config_set (&tuned, "preset", "tuned", NULL));
      for (guint i = 0; i < G_N_ELEMENTS (dp); i++)
        {
          guint n_knobs = 0;
          const TachKnobInfo *knobs = tach_knobs (&n_knobs);

          tach_config_init (&c, (TachWorkload) w);
          g_assert_true (tach_config_set (&c, "device", "cpu", NULL));
          g_assert_true (tach_config_set (&c, "preset", dp[i].name, NULL));
          g_assert_cmpint (c.grad_sync, ==, dp[i].sync);
          g_assert_cmpuint (c.bucket_mb, ==, dp[i].mb);
          g_assert_cmpint (c.grad_compress, ==, TACH_GRAD_COMPRESS_NONE);
          g_assert_cmpuint (c.accumulate, ==, dp[i].k);
          g_assert_cmpint (c.accumulate_sync, ==, dp[i].when);
          g_assert_cmpint (c.shard, ==, dp[i].shard);
          g_assert_cmpint (c.shard_prefetch, ==, dp[i].prefetch);
          for (guint k = 0; k < n_knobs; k++)
            {
              g_autofree char *a = tach_config_get (&c, knobs[k].name);
              g_autofree char *b = tach_config_get (&tuned, knobs[k].name);

              if (knobs[k].is_mode && knobs[k].id != TACH_KNOB_GRAD_SYNC
                  && knobs[k].id != TACH_KNOB_BUCKET_MB && knobs[k].id != TACH_KNOB_ACCUMULATE
                  && knobs[k].id != TACH_KNOB_ACCUMULATE_SYNC && knobs[k].id != TACH_KNOB_SHARD
                  && knobs[k].id != TACH_KNOB_SHARD_PREFETCH)
                g_assert_cmpstr (a, ==, b);
            }
          /* Alone, their synchronisation does not apply. */
          g_assert_false (tach_config_knob_applies (&c, "grad-sync", NULL));
          tach_config_clear (&c);
        }
      tach_config_clear (&tuned);
    }

  tach_config_init (&c, TACH_WORKLOAD_LSTM_LM);
  g_assert_true (tach_config_set (&c, "preset", "keras-predict", NULL));
  g_assert_cmpint (c.call_setup, ==, TACH_CALL_SETUP_PER_CALL);
  g_assert_cmpint (c.sampling, ==, TACH_SAMPLING_HOST);
  g_assert_true (tach_config_set (&c, "preset", "static-rnn", NULL));
  g_assert_cmpint (c.rnn, ==, TACH_RNN_UNROLLED);
  g_assert_cmpint (c.call_setup, ==, TACH_CALL_SETUP_PERSISTENT);
  tach_config_clear (&c);
}

/* The presets hold what the reported code did (see each rationale). */
static void
test_presets_faithful (void)
{
  TachConfig c;

  /* W1: Keras 2.2 casts each fed float64 batch (Function._call) and the
   * report compiled without metrics; it differs from tf1-feed-dict only in
   * the layout Keras gets right. */
  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  g_assert_true (tach_config_set (&c, "device", "cpu", NULL));
  g_assert_true (tach_config_set (&c, "preset", "keras-fit", NULL));
  g_assert_cmpint (c.layout, ==, TACH_LAYOUT_BATCH_MAJOR);
  g_assert_cmpint (c.rnn, ==, TACH_RNN_FUSED);
  g_assert_cmpint (c.feed, ==, TACH_FEED_HOST_F64);
  g_assert_cmpuint (c.sync_every, ==, 1);
  g_assert_cmpint (c.metrics, ==, TACH_METRICS_NONE);
  g_assert_true (tach_config_set (&c, "preset", "tf1-feed-dict", NULL));
  g_assert_cmpint (c.layout, ==, TACH_LAYOUT_MISREAD);
  g_assert_cmpint (c.rnn, ==, TACH_RNN_FUSED);
  g_assert_cmpint (c.feed, ==, TACH_FEED_HOST_F64);
  g_assert_cmpuint (c.sync_every, ==, 1);
  g_assert_cmpint (c.metrics, ==, TACH_METRICS_NONE);
  g_assert_true (tach_config_set (&c, "preset", "tf1-constant", NULL));
  g_assert_cmpint (c.layout, ==, TACH_LAYOUT_MISREAD);
  g_assert_cmpint (c.feed, ==, TACH_FEED_RESIDENT);
  g_assert_cmpuint (c.sync_every, ==, 1);
  tach_config_clear (&c);

  /* W3: both paths read the same input_fn (no prefetch) and run one session
   * call per step; only the accuracy metric tells them apart. */
  tach_config_init (&c, TACH_WORKLOAD_CNN);
  g_assert_true (tach_config_set (&c, "device", "cpu", NULL));
  g_assert_true (tach_config_set (&c, "preset", "estimator", NULL));
  g_assert_cmpint (c.feed, ==, TACH_FEED_HOST_F32);
  g_assert_cmpuint (c.sync_every, ==, 1);
  g_assert_cmpint (c.metrics, ==, TACH_METRICS_NONE);
  g_assert_true (tach_config_set (&c, "preset", "keras-fit", NULL));
  g_assert_cmpint (c.feed, ==, TACH_FEED_HOST_F32);
  g_assert_cmpuint (c.sync_every, ==, 1);
  g_assert_cmpint (c.metrics, ==, TACH_METRICS_ACCURACY);
  tach_config_clear (&c);

  /* W2: a TF1 session per token against Keras predict per token. */
  tach_config_init (&c, TACH_WORKLOAD_LSTM_LM);
  g_assert_true (tach_config_set (&c, "device", "cpu", NULL));
  g_assert_true (tach_config_set (&c, "preset", "static-rnn", NULL));
  g_assert_cmpint (c.rnn, ==, TACH_RNN_UNROLLED);
  g_assert_cmpint (c.call_setup, ==, TACH_CALL_SETUP_PERSISTENT);
  g_assert_cmpint (c.sampling, ==, TACH_SAMPLING_HOST);
  g_assert_cmpuint (c.sync_every, ==, 1);
  g_assert_true (tach_config_set (&c, "preset", "keras-predict", NULL));
  g_assert_cmpint (c.rnn, ==, TACH_RNN_FUSED);
  g_assert_cmpint (c.call_setup, ==, TACH_CALL_SETUP_PER_CALL);
  g_assert_cmpuint (c.sync_every, ==, 1);
  tach_config_clear (&c);
}

/* Every knob value a preset sets has its line in the rationale, and every
 * line of a reported framework's preset names the file it comes from. */
static void
test_presets_rationale (void)
{
  guint n = 0;
  const TachPreset *all = tach_presets (&n);
  g_autofree char *readme_path = g_test_build_filename (G_TEST_DIST, "..", "README.md", NULL);
  g_autofree char *readme = NULL;

  g_assert_true (g_file_get_contents (readme_path, &readme, NULL, NULL));
  for (guint i = 0; i < n; i++)
    {
      /* The README's preset table holds the same settings. */
      g_autofree char *row = g_strdup_printf ("| `%s` | `%s` | `%s` |",
                                              tach_workload_to_string (all[i].workload),
                                              all[i].name, all[i].settings);
      g_autofree char *joined = g_strjoin (" ", all[i].settings,
                                           all[i].gpu_settings ? all[i].gpu_settings : "", NULL);
      g_auto(GStrv) items = g_strsplit (joined, " ", -1);
      g_auto(GStrv) lines = NULL;
      gboolean tuned = g_str_equal (all[i].name, "tuned");
      guint n_files = 0;

      if (strstr (readme, row) == NULL)
        g_error ("README.md has no preset row starting %s", row);
      g_assert_nonnull (all[i].rationale);
      lines = g_strsplit (all[i].rationale, "\n", -1);
      for (guint k = 0; items[k] != NULL; k++)
        {
          g_autofree char *prefix = g_strconcat (items[k], ": ", NULL);
          gboolean found = FALSE;

          if (*items[k] == '\0')
            continue;
          for (guint l = 0; lines[l] != NULL; l++)
            found = found || g_str_has_prefix (lines[l], prefix)
                    /* A data-parallel preset's other modes are tuned's
                     * (test_presets holds them equal), in one line. */
                    || (all[i].between_ranks && !g_str_has_prefix (items[k], "grad-")
                        && !g_str_has_prefix (items[k], "bucket-mb=")
                        && g_str_has_prefix (lines[l], "the other modes as tuned"));
          if (!found)
            g_error ("preset %s: no rationale line for %s", all[i].name, items[k]);
        }
      for (guint l = 0; lines[l] != NULL; l++)
        if (strstr (lines[l], ".py") != NULL || strstr (lines[l], ".cc") != NULL)
          n_files++;
      /* A framework's preset cites its code; tuned stands for no framework. */
      if (tuned)
        g_assert_cmpuint (n_files, ==, 0);
      else
        g_assert_cmpuint (n_files, >=, 1);
    }
}


void
test_config_presets_add (void)
{
  g_test_add_func ("/engine/config/presets", test_presets);
  g_test_add_func ("/engine/config/presets/faithful", test_presets_faithful);
  g_test_add_func ("/engine/config/presets/rationale", test_presets_rationale);
}
