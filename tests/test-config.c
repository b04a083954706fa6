/* test-config.c: knobs, parsing and its messages, presets, what applies
 * where, validation and device resolution. */
#include <locale.h>
#include <string.h>

#include "tach-backend.h"
#include "tach-config-private.h"
#include "tach-engine.h"
#include "test-config.h"

static void
assert_get (const TachConfig *config, const char *key, const char *expected)
{
  g_autofree char *value = tach_config_get (config, key);

  g_assert_cmpstr (value, ==, expected);
}

static void
test_defaults (void)
{
  TachConfig c;

  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  g_assert_cmpuint (c.batch, ==, 1024);
  g_assert_cmpint (c.optimizer, ==, TACH_OPTIMIZER_ADAM);
  g_assert_cmpfloat_with_epsilon (c.lr, 1e-3, 1e-12);
  assert_get (&c, "device", "auto");
  assert_get (&c, "samples", "auto");
  g_assert_cmpuint (tach_config_get_samples (&c), ==, 1024 * TACH_DEFAULT_BATCHES);
  tach_config_clear (&c);

  tach_config_init (&c, TACH_WORKLOAD_LSTM_LM);
  g_assert_cmpuint (c.batch, ==, 256);
  g_assert_true (tach_config_set (&c, "task", "generate", NULL));
  g_assert_cmpuint (c.batch, ==, 1);
  g_assert_true (tach_config_set (&c, "task", "train", NULL));
  g_assert_cmpuint (c.batch, ==, 256);
  /* A batch set to another value is the user's: it stays with either
   * task, before or after --task (it became 1, then 256). */
  g_assert_true (tach_config_set (&c, "batch", "4", NULL));
  g_assert_true (tach_config_set (&c, "task", "generate", NULL));
  g_assert_cmpuint (c.batch, ==, 4);
  g_assert_true (tach_config_set (&c, "task", "train", NULL));
  g_assert_cmpuint (c.batch, ==, 4);
  tach_config_clear (&c);

  tach_config_init (&c, TACH_WORKLOAD_CNN);
  g_assert_cmpuint (c.batch, ==, 256);
  g_assert_cmpint (c.optimizer, ==, TACH_OPTIMIZER_SGD);
  g_assert_cmpfloat_with_epsilon (c.lr, 1e-3, 1e-12);
  assert_get (&c, "input", "28x28x1");
  tach_config_clear (&c);
}

/* Every allowed value of every enumerated knob reads back as set. */
static void
test_set_roundtrip (void)
{
  guint n = 0;
  const TachKnobInfo *knobs = tach_knobs (&n);

  g_assert_cmpuint (n, >=, 26);
  for (guint i = 0; i < n; i++)
    {
      g_assert_nonnull (knobs[i].blurb);
      g_assert_true (tach_knob_lookup (knobs[i].name) == &knobs[i]);
      if (knobs[i].values == NULL || g_str_equal (knobs[i].name, "workload"))
        continue;
      for (guint v = 0; knobs[i].values[v] != NULL; v++)
        {
          TachConfig c;
          g_autoptr(GError) error = NULL;

          tach_config_init (&c, TACH_WORKLOAD_LSTM_LM);
          g_assert_true (tach_config_set (&c, knobs[i].name, knobs[i].values[v], &error));
          g_assert_no_error (error);
          assert_get (&c, knobs[i].name, knobs[i].values[v]);
          tach_config_clear (&c);
        }
    }
  g_assert_null (tach_knob_lookup ("no-such-knob"));
}

/* The knob table: rows in id order, each complete for its kind, and a
 * fresh configuration reads back every default the table names. */
static void
test_knob_table (void)
{
  guint n = 0;
  const TachKnobInfo *knobs = tach_knobs (&n);
  TachConfig c;

  g_assert_cmpuint (n, ==, TACH_KNOB_COUNT);
  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  for (guint i = 0; i < n; i++)
    {
      const TachKnobInfo *k = &knobs[i];

      g_assert_cmpuint (k->id, ==, i);
      g_assert_true (tach_knob (k->id) == k);
      g_assert_nonnull (k->title);
      g_assert_nonnull (k->blurb);
      g_assert_true ((k->kind == TACH_KNOB_KIND_CHOICE) == (k->values != NULL));
      for (guint v = 0; k->values != NULL && k->values[v] != NULL; v++)
        {
          g_assert_nonnull (k->labels[v]);
          g_assert_cmpstr (tach_knob_value_label (k->name, k->values[v]), !=, k->values[v]);
          /* A label per value, no more. */
          if (k->values[v + 1] == NULL)
            g_assert_null (k->labels[v + 1]);
          /* What each value does (explain's sentences): one per value too. */
          if (k->clauses != NULL)
            {
              g_assert_nonnull (k->clauses[v]);
              if (k->values[v + 1] == NULL)
                g_assert_null (k->clauses[v + 1]);
            }
        }
      /* A row words its values one way: a clause per value, or a rule. */
      g_assert_true (k->clauses == NULL || (k->values != NULL && k->clause == NULL));
      if (k->kind == TACH_KNOB_KIND_INTEGER)
        g_assert_cmpuint (k->min, <=, k->max);
      /* Only the modes that change the numbers say so (accumulate: the
       * update's batch grows). */
      g_assert_true (k->changes_results
                     == (k->id == TACH_KNOB_LAYOUT || k->id == TACH_KNOB_PRECISION
                         || k->id == TACH_KNOB_GRAD_COMPRESS || k->id == TACH_KNOB_ACCUMULATE));
      g_assert_true (k->is_mode == (k->group == TACH_KNOB_GROUP_MODE));
      g_assert_true (!k->is_shape || k->group == TACH_KNOB_GROUP_MODEL);
      if (k->is_mode)
        g_assert_nonnull (k->default_value);
      if (k->default_value != NULL)
        {
          g_autofree char *value = tach_config_get (&c, k->name);

          g_assert_cmpstr (value, ==, k->default_value);
        }
    }
  g_assert_cmpstr (tach_knob_value_label ("device", "auto"), ==, "Automatic");
  g_assert_cmpstr (tach_knob_value_label ("device", "cpu"), ==, "cpu");
  tach_config_clear (&c);
}

static void
test_set_numbers (void)
{
  TachConfig c, copy;

  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  g_assert_true (tach_config_set (&c, "batch", "256", NULL));
  g_assert_cmpuint (c.batch, ==, 256);
  g_assert_true (tach_config_set (&c, "sync", "end", NULL));
  g_assert_cmpuint (c.sync_every, ==, 0);
  assert_get (&c, "sync", "end");
  g_assert_true (tach_config_set (&c, "sync", "100", NULL));
  g_assert_cmpuint (c.sync_every, ==, 100);
  g_assert_true (tach_config_set (&c, "samples", "5000", NULL));
  g_assert_cmpuint (tach_config_get_samples (&c), ==, 5000);
  g_assert_true (tach_config_set (&c, "seed", "18446744073709551615", NULL));
  g_assert_cmpuint (c.seed, ==, G_MAXUINT64);
  g_assert_true (tach_config_set (&c, "lr", "0.01", NULL));
  assert_get (&c, "lr", "0.01");
  g_assert_true (tach_config_set (&c, "input", "1080x1920x3", NULL));
  g_assert_cmpuint (c.input_w, ==, 1920);
  g_assert_true (tach_config_set (&c, "print-text", "yes", NULL));
  g_assert_true (c.print_text);
  g_assert_true (tach_config_set (&c, "data", "/tmp/x", NULL));
  g_assert_true (tach_config_set (&c, "device", "cpu", NULL));

  tach_config_copy (&copy, &c);
  g_assert_true (copy.data != c.data);
  g_assert_cmpstr (copy.data, ==, c.data);
  g_assert_cmpstr (copy.device, ==, "cpu");
  tach_config_clear (&copy);
  tach_config_clear (&c);
  g_assert_null (c.data);
}

static void
assert_set_fails (const char *key, const char *value, const char *message_part)
{
  TachConfig c;
  g_autoptr(GError) error = NULL;
  TachConfig before;

  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  tach_config_copy (&before, &c);
  g_assert_false (tach_config_set (&c, key, value, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  if (strstr (error->message, message_part) == NULL)
    g_error ("message for %s=%s lacks '%s': %s", key, value, message_part, error->message);
  /* A rejected value leaves the setting as it was. */
  g_assert_cmpuint (c.batch, ==, before.batch);
  g_assert_cmpint (c.rnn, ==, before.rnn);
  tach_config_clear (&before);
  tach_config_clear (&c);
}

static void
test_set_errors (void)
{
  assert_set_fails ("rnn", "x", "invalid value 'x' for --rnn: expected one of fused, unrolled");
  assert_set_fails ("feed", "gpu", "host-f64, host-f32, prefetch, resident");
  assert_set_fails ("batch", "0", "invalid value '0' for --batch");
  assert_set_fails ("batch", "-1", "'-1' for --batch");
  assert_set_fails ("batch", "abc", "whole number");
  assert_set_fails ("batch", "12abc", "'12abc'");
  assert_set_fails ("batch", "", "--batch");
  assert_set_fails ("batch", "99999999999999999999", "--batch");
  assert_set_fails ("steps", "0", "--steps");
  assert_set_fails ("sync", "0", "'end'");
  assert_set_fails ("sync", "often", "--sync");
  assert_set_fails ("lr", "fast", "--lr");
  assert_set_fails ("lr", "-0.1", "--lr");
  assert_set_fails ("lr", "nan", "--lr");
  assert_set_fails ("input", "28x28", "HxWxC");
  assert_set_fails ("input", "28x0x1", "HxWxC");
  assert_set_fails ("workload", "resnet", "bilstm, lstm-lm, cnn");
  assert_set_fails ("print-text", "maybe", "--print-text");
  assert_set_fails ("bogus", "1", "unknown setting 'bogus'");
  assert_set_fails ("preset", "estimator", "tf1-feed-dict");
}

/* Several settings in one string: applied in order, or not at all. */
static void
test_apply_settings (void)
{
  static const char *const bad[][2] = {
    { "rnn=unrolled batch", "expected key=value" },
    { "rnn=unrolled batch=0", "--batch" },
    { "rnn=unrolled bogus=1", "unknown setting 'bogus'" },
  };
  g_autoptr(GError) error = NULL;
  TachConfig c;

  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  g_assert_true (tach_config_apply_settings (&c, NULL, &error));
  g_assert_true (tach_config_apply_settings (&c, "", &error));
  g_assert_true (tach_config_apply_settings (&c, " rnn=unrolled  batch=3\tdata=a=b ", &error));
  g_assert_no_error (error);
  g_assert_cmpint (c.rnn, ==, TACH_RNN_UNROLLED);
  g_assert_cmpuint (c.batch, ==, 3);
  /* Only the first '=' splits: the value may hold more. */
  g_assert_cmpstr (c.data, ==, "a=b");
  /* Order counts: "workload" resets what came before it. */
  g_assert_true (tach_config_apply_settings (&c, "batch=5 workload=cnn", &error));
  g_assert_cmpint (c.workload, ==, TACH_WORKLOAD_CNN);
  g_assert_cmpuint (c.batch, ==, 256);
  g_assert_true (tach_config_apply_settings (&c, "workload=bilstm batch=5", &error));
  g_assert_cmpuint (c.batch, ==, 5);

  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_assert_false (tach_config_apply_settings (&c, bad[i][0], &error));
      g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
      g_assert_nonnull (strstr (error->message, bad[i][1]));
      g_clear_error (&error);
      /* A rejected string leaves every setting as it was. */
      g_assert_cmpint (c.rnn, ==, TACH_RNN_FUSED);
      g_assert_cmpuint (c.batch, ==, 5);
    }
  tach_config_clear (&c);
}

static void
test_workload_reset (void)
{
  TachConfig c;

  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  g_assert_true (tach_config_set (&c, "device", "cpu", NULL));
  g_assert_true (tach_config_set (&c, "seed", "7", NULL));
  g_assert_true (tach_config_set (&c, "rnn", "unrolled", NULL));
  g_assert_true (tach_config_set (&c, "batch", "3", NULL));
  g_assert_true (tach_config_set (&c, "workload", "cnn", NULL));
  g_assert_cmpint (c.workload, ==, TACH_WORKLOAD_CNN);
  g_assert_cmpint (c.rnn, ==, TACH_RNN_FUSED);
  g_assert_cmpuint (c.batch, ==, 256);
  g_assert_cmpstr (c.device, ==, "cpu");
  g_assert_cmpuint (c.seed, ==, 7);
  tach_config_clear (&c);
}

static void
test_applies (void)
{
  TachConfig c;
  const char *why = NULL;

  tach_config_init (&c, TACH_WORKLOAD_CNN);
  g_assert_false (tach_config_knob_applies (&c, "layout", &why));
  g_assert_nonnull (why);
  g_assert_false (tach_config_knob_applies (&c, "rnn", &why));
  g_assert_false (tach_config_knob_applies (&c, "labels", &why));
  g_assert_true (tach_config_knob_applies (&c, "feed", &why));
  g_assert_null (why);
  g_assert_true (tach_config_knob_applies (&c, "head", NULL));
  tach_config_clear (&c);

  tach_config_init (&c, TACH_WORKLOAD_LSTM_LM);
  g_assert_false (tach_config_knob_applies (&c, "sampling", &why));
  g_assert_true (tach_config_set (&c, "task", "generate", NULL));
  g_assert_true (tach_config_knob_applies (&c, "sampling", NULL));
  g_assert_true (tach_config_knob_applies (&c, "print-text", NULL));
  g_assert_false (tach_config_knob_applies (&c, "metrics", NULL));
  g_assert_false (tach_config_knob_applies (&c, "labels", NULL));
  tach_config_clear (&c);

  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  g_assert_true (tach_config_knob_applies (&c, "labels", NULL));
  g_assert_true (tach_config_knob_applies (&c, "layout", NULL));
  g_assert_false (tach_config_knob_applies (&c, "task", NULL));
  g_assert_true (tach_config_set (&c, "device", "cpu", NULL));
  g_assert_false (tach_config_knob_applies (&c, "launch", &why));
  g_assert_nonnull (why);
  tach_config_clear (&c);
}

static void
assert_invalid (TachConfig *c, const char *device, int code, const char *part)
{
  g_autoptr(GError) error = NULL;

  g_assert_false (tach_config_validate (c, device, &error));
  g_assert_error (error, TACH_ERROR, code);
  if (strstr (error->message, part) == NULL)
    g_error ("validation message lacks '%s': %s", part, error->message);
}

static void
test_validate (void)
{
  TachConfig c;
  g_autoptr(GError) error = NULL;

  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  g_assert_true (tach_config_set (&c, "batch", "64", NULL));
  g_assert_true (tach_config_validate (&c, "cpu", &error));
  g_assert_no_error (error);

  c.task = TACH_TASK_GENERATE;
  assert_invalid (&c, NULL, TACH_ERROR_INVALID_CONFIG, "--task generate needs --workload lstm-lm");
  c.task = TACH_TASK_TRAIN;

  g_assert_true (tach_config_set (&c, "samples", "100000000000", NULL));
  g_assert_true (tach_config_set (&c, "batch", "1024", NULL));
  assert_invalid (&c, "cpu", TACH_ERROR_INVALID_CONFIG, "of host memory; this machine has");
  assert_invalid (&c, NULL, TACH_ERROR_INVALID_CONFIG, "--samples 100000000000 with --batch 1024");
  g_assert_true (tach_config_set (&c, "samples", "10", NULL));
  assert_invalid (&c, NULL, TACH_ERROR_INVALID_CONFIG, "less than one batch");
  g_assert_true (tach_config_set (&c, "samples", "auto", NULL));

  /* The CPU cannot capture graphs: the message names the knob, the value,
   * the device and what to use instead. */
  g_assert_true (tach_config_set (&c, "device", "auto", NULL));
  c.launch = TACH_LAUNCH_GRAPH;
  assert_invalid (&c, "cpu", TACH_ERROR_UNSUPPORTED, "--launch graph is not supported on cpu");
  assert_invalid (&c, "cpu", TACH_ERROR_UNSUPPORTED, "use --launch eager");
  g_assert_true (tach_config_set (&c, "device", "cpu", NULL));
  assert_invalid (&c, "cpu", TACH_ERROR_UNSUPPORTED, "--launch graph is not supported on cpu");
  c.launch = TACH_LAUNCH_EAGER;
  tach_config_clear (&c);

  tach_config_init (&c, TACH_WORKLOAD_CNN);
  c.layout = TACH_LAYOUT_MISREAD;
  assert_invalid (&c, NULL, TACH_ERROR_INVALID_CONFIG, "--layout misread needs --workload bilstm");
  tach_config_clear (&c);

  tach_config_init (&c, TACH_WORKLOAD_LSTM_LM);
  g_assert_true (tach_config_set (&c, "task", "generate", NULL));
  c.metrics = TACH_METRICS_ACCURACY;
  assert_invalid (&c, NULL, TACH_ERROR_INVALID_CONFIG, "--metrics accuracy");
  tach_config_clear (&c);
}

static void
test_devices (void)
{
  g_autoptr(GPtrArray) devices = tach_devices_list ();
  g_autoptr(TachDeviceInfo) cpu = NULL;
  g_autoptr(TachDeviceInfo) best = NULL;
  g_autoptr(TachDeviceInfo) none = NULL;
  g_autoptr(GError) error = NULL;
  const TachDeviceInfo *last;

  /* The CPU is always there, and always last. */
  g_assert_cmpuint (devices->len, >=, 1);
  last = g_ptr_array_index (devices, devices->len - 1);
  g_assert_cmpstr (last->id, ==, "cpu");
  g_assert_cmpint (last->kind, ==, TACH_DEVICE_KIND_CPU);

  cpu = tach_device_resolve ("cpu", &error);
  g_assert_no_error (error);
  g_assert_cmpstr (cpu->id, ==, "cpu");
  g_assert_nonnull (cpu->name);
  best = tach_device_resolve ("auto", &error);
  g_assert_no_error (error);
  g_assert_cmpstr (best->id, ==, ((TachDeviceInfo *) devices->pdata[0])->id);

  none = tach_device_resolve ("gpu7", &error);
  g_assert_null (none);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  g_assert_nonnull (strstr (error->message, "auto, cpu, cuda, cuda:N"));
  g_clear_error (&error);

  /* No machine here has 1000 GPUs: whatever the build, the message says
   * what to do. */
  none = tach_device_resolve ("cuda:999", &error);
  g_assert_null (none);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DEVICE_UNAVAILABLE);
  g_assert_true (strstr (error->message, "--device cpu") != NULL
                 || strstr (error->message, "-Dcuda=enabled") != NULL);
}

/* The backend registry: listing is cheap (the CPU's peak waits to be
 * measured), each backend's capabilities come from its row, and a backend
 * is asked about a knob by id and value number. */
static void
test_backend_registry (void)
{
  g_autoptr(GPtrArray) devices = tach_devices_list ();
  TachDeviceInfo *cpu = g_ptr_array_index (devices, devices->len - 1);
  const char *why = NULL;
  g_autofree char *cuda = tach_backend_canonical_id ("cuda");
  g_autofree char *plain = tach_backend_canonical_id ("cpu");
  g_autofree char *bad = tach_backend_canonical_id ("cuda:x");

  g_assert_cmpstr (cpu->id, ==, "cpu");
  g_assert_cmpfloat (cpu->peak_flops, ==, 0.0);
  g_assert_cmpfloat (tach_device_measure_peak_flops (cpu), >, 0.0);
  g_assert_cmpfloat (cpu->peak_flops, >, 0.0);

  g_assert_cmpint (tach_backend_caps_for ("cpu"), ==,
                   TACH_BACKEND_CAP_SYNC_OPS | TACH_BACKEND_CAP_HOST_MEMORY
                   | TACH_BACKEND_CAP_THREADS | TACH_BACKEND_CAP_LSTM_FP32_ONLY);
  g_assert_cmpint (tach_backend_caps_for ("cuda:3"), ==, TACH_BACKEND_CAP_GRAPHS);
  g_assert_cmpint (tach_backend_caps_for ("gpu7"), ==, 0);
  g_assert_cmpint (tach_backend_kind_for ("cuda"), ==, TACH_DEVICE_KIND_GPU);
  g_assert_cmpint (tach_backend_kind_for ("cpu"), ==, TACH_DEVICE_KIND_CPU);

  g_assert_false (tach_backend_supports_knob ("cpu", TACH_KNOB_LAUNCH, TACH_LAUNCH_GRAPH, &why));
  g_assert_nonnull (strstr (why, "--launch eager"));
  g_assert_true (tach_backend_supports_knob ("cpu", TACH_KNOB_RNN, TACH_RNN_UNROLLED, &why));
  g_assert_null (why);
  g_assert_false (tach_backend_supports_knob ("cpu", TACH_KNOB_PRECISION, TACH_PRECISION_TF32, NULL));
  g_assert_false (tach_backend_supports ("cpu", "launch", "graph", NULL));
  g_assert_false (tach_backend_supports ("gpu7", "rnn", "fused", &why));
  g_assert_nonnull (why);

  /* Resolved once: the device keeps its row, and what it can do is asked
   * of that row, not of its id again. */
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(TachDevice) found = tach_device_find ("cpu", &error);

    g_assert_no_error (error);
    g_assert_cmpstr (found->info->id, ==, "cpu");
    g_assert_cmpuint (found->ordinal, ==, 0);
    g_assert_cmpint (tach_device_caps (found), ==, tach_backend_caps_for ("cpu"));
    g_assert_false (tach_device_supports_knob (found, TACH_KNOB_LAUNCH, TACH_LAUNCH_GRAPH, NULL));
  }

  g_assert_cmpstr (cuda, ==, "cuda:0");
  g_assert_cmpstr (plain, ==, "cpu");
  g_assert_null (bad);
  g_assert_cmpstr (tach_backend_host_device_id (), ==, "cpu");
  {
    g_auto(GStrv) ids = tach_backend_device_ids ();
    g_autofree char *joined = g_strjoinv (" ", ids);

    /* "auto", then the backends' id forms by name, built or not. */
    g_assert_cmpstr (joined, ==, "auto cpu cuda cuda:N");
  }
}

/* A backend's reason that names the fix is not followed by the same fix
 * again. */
static void
test_validate_advice_once (void)
{
  TachConfig c;
  g_autoptr(GError) error = NULL;
  const char *first, *again;

  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  g_assert_true (tach_config_set (&c, "precision", "tf32", NULL));
  g_assert_false (tach_config_validate (&c, "cpu", &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED);
  first = strstr (error->message, "use --precision fp32");
  g_assert_nonnull (first);
  again = strstr (first + 1, "use --precision fp32");
  g_assert_null (again);
  tach_config_clear (&c);
}

/* The CPU's LSTM runs in fp32 only: bf16 on an LSTM workload is refused by
 * validation (it failed once the run had begun, on a CPU with AVX-512
 * BF16), naming the fix; the cnn is left to the backend's own answer. */
static void
test_validate_lstm_precision (void)
{
  static const TachWorkload lstms[] = { TACH_WORKLOAD_BILSTM, TACH_WORKLOAD_LSTM_LM };

  for (guint i = 0; i < G_N_ELEMENTS (lstms); i++)
    {
      TachConfig c;
      g_autoptr(GError) error = NULL;

      tach_config_init (&c, lstms[i]);
      g_assert_true (tach_config_set (&c, "precision", "bf16", NULL));
      g_assert_false (tach_config_validate (&c, "cpu", &error));
      g_assert_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED);
      /* Where the CPU has no bf16 at all, the backend says so first. */
      if (strstr (error->message, "LSTM") != NULL)
        g_assert_nonnull (strstr (error->message, "--precision bf16 is not supported on cpu"));
      g_assert_nonnull (strstr (error->message, "use --precision fp32"));
      g_clear_error (&error);
      g_assert_true (tach_config_set (&c, "precision", "fp32", NULL));
      g_assert_true (tach_config_validate (&c, "cpu", &error));
      g_assert_no_error (error);
      tach_config_clear (&c);
    }
  {
    TachConfig c;
    g_autoptr(GError) error = NULL;

    tach_config_init (&c, TACH_WORKLOAD_CNN);
    g_assert_true (tach_config_set (&c, "precision", "bf16", NULL));
    if (!tach_config_validate (&c, "cpu", &error))
      g_assert_null (strstr (error->message, "LSTM"));
    tach_config_clear (&c);
  }
}

/* CUDA's fused attention holds heads at most 128 wide: a wider head there
 * is refused by validation, before any step, naming both ways out; naive
 * attention there, and fused attention on the CPU, take it.  The device
 * is the CUDA row's without a GPU (a record's). */
static void
test_validate_attention_heads (void)
{
  TachDeviceInfo *info = g_new0 (TachDeviceInfo, 1);
  g_autoptr(TachDevice) cuda = NULL;
  g_autoptr(TachDevice) cpu = NULL;
  g_autoptr(GError) error = NULL;
  TachConfig c;

  info->id = g_strdup ("cuda:0");
  cuda = tach_device_for_record (info);
  if (cuda->row == NULL || cuda->row->open == NULL)
    {
      g_test_skip ("this build has no CUDA backend");
      return;
    }
  tach_config_init (&c, TACH_WORKLOAD_GPT);
  g_assert_true (tach_config_set (&c, "attention", "fused", NULL));
  g_assert_true (tach_config_set (&c, "embed", "768", NULL));
  g_assert_true (tach_config_set (&c, "heads", "4", NULL));
  g_assert_false (tach_config_validate_on (&c, cuda, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "at most 128 wide"));
  g_assert_nonnull (strstr (error->message, "makes them 192"));
  g_assert_nonnull (strstr (error->message, "raise --heads"));
  g_assert_nonnull (strstr (error->message, "--attention naive"));
  g_clear_error (&error);

  g_assert_true (tach_config_set (&c, "heads", "6", NULL));
  g_assert_true (tach_config_validate_on (&c, cuda, &error));
  g_assert_no_error (error);
  g_assert_true (tach_config_set (&c, "heads", "4", NULL));
  g_assert_true (tach_config_set (&c, "attention", "naive", NULL));
  g_assert_true (tach_config_validate_on (&c, cuda, &error));
  g_assert_no_error (error);

  g_assert_true (tach_config_set (&c, "attention", "fused", NULL));
  cpu = tach_device_find ("cpu", &error);
  g_assert_no_error (error);
  g_assert_true (tach_config_validate_on (&c, cpu, &error));
  g_assert_no_error (error);
  tach_config_clear (&c);
}

int
main (int argc, char **argv)
{
  setlocale (LC_ALL, "");
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/engine/config/defaults", test_defaults);
  g_test_add_func ("/engine/config/validate/attention-heads", test_validate_attention_heads);
  g_test_add_func ("/engine/config/knob-table", test_knob_table);
  g_test_add_func ("/engine/config/set/roundtrip", test_set_roundtrip);
  g_test_add_func ("/engine/config/set/numbers", test_set_numbers);
  g_test_add_func ("/engine/config/set/errors", test_set_errors);
  g_test_add_func ("/engine/config/apply-settings", test_apply_settings);
  g_test_add_func ("/engine/config/workload-reset", test_workload_reset);
  test_config_presets_add ();
  g_test_add_func ("/engine/config/applies", test_applies);
  g_test_add_func ("/engine/config/validate", test_validate);
  g_test_add_func ("/engine/devices/resolve", test_devices);
  g_test_add_func ("/engine/devices/registry", test_backend_registry);
  g_test_add_func ("/engine/config/validate/advice-once", test_validate_advice_once);
  g_test_add_func ("/engine/config/validate/lstm-precision", test_validate_lstm_precision);
  return g_test_run ();
}
