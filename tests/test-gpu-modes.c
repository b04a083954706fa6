/* test-gpu-modes.c: modes change speed, not math, on the GPU.
 *
 * Each workload runs a few steps on the CUDA device under a baseline
 * setting and under each execution-mode variant; the per-step losses (or,
 * for generation, the generated words) must agree.  The same seed gives the
 * same data, initialisation and dropout masks whatever the mode.
 */
#include <math.h>
#include <string.h>

#include "test-gpu.h"

#define MODE_STEPS 12

typedef struct {
  TachWorkload  workload;
  const char   *settings;   /* the baseline: "key=value key=value" */
  const char   *const *variants;
  double        tolerance;  /* relative, on each step's loss */
} ModeCase;

static void
apply (TachConfig *config, const char *settings)
{
  g_auto(GStrv) pairs = g_strsplit (settings, " ", -1);

  for (guint i = 0; pairs[i] != NULL; i++)
    {
      g_auto(GStrv) kv = g_strsplit (pairs[i], "=", 2);
      g_autoptr(GError) error = NULL;

      if (kv[0] == NULL || kv[0][0] == '\0')
        continue;
      g_assert_nonnull (kv[1]);
      tach_config_set (config, kv[0], kv[1], &error);
      g_assert_no_error (error);
    }
}

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
  apply (&config, "device=cuda batch=64 warmup=2 steps=12 seed=7");
  apply (&config, mc->settings);
  apply (&config, variant);
  run = tach_run_new (&config, &error);
  tach_config_clear (&config);
  g_assert_no_error (error);
  tach_run_start (run, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  tach_run_wait (run, &error);
  g_assert_no_error (error);
  samples = tach_run_dup_samples (run);
  g_assert_cmpuint (samples->len, ==, MODE_STEPS + 2);
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

void
gpu_add_mode_tests (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (mode_cases); i++)
    g_test_add_data_func (mode_paths[i], &mode_cases[i], test_modes);
}
