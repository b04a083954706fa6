/* test-hints.c: every kind of engine error that concerns a knob carries
 * its hint (tach_error_get_hint): the knob, its value and the fix, and a
 * fix given as a value is the one the message says, in either wording:
 * the command line's options (--head gap) or the settings as the window
 * shows them (Classifier head “Global average pooling”, no option). */
#include <locale.h>
#include <string.h>

#include <gio/gio.h>

#include "tach-engine.h"
#include "tach-error-private.h"
#include "test-fault-backend.h"
#include "test-run-util.h"

/* Asserts that @error's hint names @knob with @value (NULL: any) and the
 * fix @fix_knob = @fix_value (NULL: no value), and that a fix value is
 * the one the message gives, "--KNOB VALUE" or "Title “Label”", where
 * @said; a message in the settings' wording names no option. */
static void
assert_hint (const GError *error, TachKnobId knob, const char *value, TachKnobId fix_knob,
             const char *fix_value, gboolean said)
{
  const TachErrorHint *hint;

  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  if (tach_get_wording () == TACH_WORDING_SETTINGS && strstr (error->message, "--") != NULL)
    g_error ("a message for the window names an option: %s", error->message);
  hint = tach_error_get_hint (error);
  g_assert_nonnull (hint);
  g_assert_cmpstr (tach_knob (hint->knob)->name, ==, tach_knob (knob)->name);
  if (value != NULL)
    g_assert_cmpstr (hint->value, ==, value);
  g_assert_cmpint (hint->fix_knob, ==, fix_knob);
  g_assert_cmpstr (hint->fix_value, ==, fix_value);
  if (fix_value != NULL)
    {
      /* The fix is a value the knob takes, and it is what the message says. */
      TachConfig c;
      g_autofree char *option = tach_knob_mention (fix_knob, fix_value);

      tach_config_init (&c, TACH_WORKLOAD_LSTM_LM);
      g_assert_true (tach_config_set (&c, tach_knob (fix_knob)->name, fix_value, NULL));
      tach_config_clear (&c);
      if (said && strstr (error->message, option) == NULL)
        g_error ("the message does not say the hint's fix '%s': %s", option, error->message);
    }
}

/* Validates @settings on @workload (on @device, or none) and checks the
 * failure's hint. */
static void
assert_validate_hint (TachWorkload workload, const char *settings, const char *device,
                      TachKnobId knob, const char *value, TachKnobId fix_knob,
                      const char *fix_value, gboolean said)
{
  g_autoptr(GError) error = NULL;
  TachConfig c;

  tach_config_init (&c, workload);
  test_apply (&c, settings);
  g_assert_false (tach_config_validate (&c, device, &error));
  assert_hint (error, knob, value, fix_knob, fix_value, said);
  tach_config_clear (&c);
}

static void
test_hint_validate (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *default_batch = NULL;
  TachConfig c;

  assert_validate_hint (TACH_WORKLOAD_CNN, "layout=misread", NULL,
                        TACH_KNOB_LAYOUT, "misread", TACH_KNOB_LAYOUT, "batch-major", TRUE);
  assert_validate_hint (TACH_WORKLOAD_LSTM_LM, "feed=host-f64", NULL,
                        TACH_KNOB_FEED, "host-f64", TACH_KNOB_FEED, "host-f32", TRUE);
  assert_validate_hint (TACH_WORKLOAD_LSTM_LM, "task=generate metrics=accuracy", NULL,
                        TACH_KNOB_METRICS, "accuracy", TACH_KNOB_METRICS, "none", TRUE);
  assert_validate_hint (TACH_WORKLOAD_LSTM_LM, "print-text=true", NULL,
                        TACH_KNOB_PRINT_TEXT, "true", TACH_KNOB_PRINT_TEXT, "false", FALSE);
  assert_validate_hint (TACH_WORKLOAD_BILSTM, "batch=64 samples=10", NULL,
                        TACH_KNOB_SAMPLES, "10", TACH_KNOB_SAMPLES, "64", FALSE);

  /* Settings that tach_config_set refuses, written into the struct. */
  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  c.task = TACH_TASK_GENERATE;
  g_assert_false (tach_config_validate (&c, NULL, &error));
  /* Another workload's knob set: the fix is its default, which this
   * workload leaves alone. */
  assert_hint (error, TACH_KNOB_TASK, "generate", TACH_KNOB_TASK, "train", FALSE);
  g_clear_error (&error);
  c.task = TACH_TASK_TRAIN;
  default_batch = g_strdup_printf ("%u", c.batch);
  c.batch = 0;
  g_assert_false (tach_config_validate (&c, NULL, &error));
  /* The fix is the workload's default batch. */
  assert_hint (error, TACH_KNOB_BATCH, "0", TACH_KNOB_BATCH, default_batch, FALSE);
  g_clear_error (&error);
  c.batch = 32;
  g_clear_pointer (&c.device, g_free);
  g_assert_false (tach_config_validate (&c, NULL, &error));
  assert_hint (error, TACH_KNOB_DEVICE, NULL, TACH_KNOB_DEVICE, "auto", TRUE);
  g_clear_error (&error);
  tach_config_clear (&c);
}

/* Too much memory: the head where it is the cause, else the shape changed,
 * else the samples or the batch, with the fix in the message's words. */
static void
test_hint_memory (void)
{
  g_autoptr(GError) error = NULL;
  const TachErrorHint *hint;
  TachConfig c;

  assert_validate_hint (TACH_WORKLOAD_CNN, "device=cpu input=1080x1920x3 head=flatten batch=256",
                        "cpu", TACH_KNOB_HEAD, "flatten", TACH_KNOB_HEAD, "gap", TRUE);

  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  test_apply (&c, "device=cpu hidden=60000 seq-len=5000");
  g_assert_false (tach_config_validate (&c, "cpu", &error));
  assert_hint (error, TACH_KNOB_SEQ_LEN, "5000", TACH_KNOB_SEQ_LEN, NULL, FALSE);
  hint = tach_error_get_hint (error);
  g_assert_cmpstr (hint->fix, ==, tach_get_wording () == TACH_WORDING_OPTIONS
                                  ? "lower --seq-len, --hidden or --batch"
                                  : "lower Sequence length, Hidden units or Batch size");
  g_assert_nonnull (strstr (error->message, hint->fix));
  g_clear_error (&error);
  tach_config_clear (&c);

  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  test_apply (&c, "samples=100000000000 batch=1024");
  g_assert_false (tach_config_validate (&c, NULL, &error));
  assert_hint (error, TACH_KNOB_SAMPLES, "100000000000", TACH_KNOB_SAMPLES, NULL, FALSE);
  g_assert_cmpstr (tach_error_get_hint (error)->fix, ==,
                   tach_get_wording () == TACH_WORDING_OPTIONS ? "lower --samples"
                                                               : "lower Dataset size");
  g_clear_error (&error);
  tach_config_clear (&c);
}

/* What the device's backend cannot do: that knob, and the first value it
 * can do, as the message says. */
static void
test_hint_backend (void)
{
  assert_validate_hint (TACH_WORKLOAD_BILSTM, "precision=tf32", "cpu",
                        TACH_KNOB_PRECISION, "tf32", TACH_KNOB_PRECISION, "fp32", TRUE);
  assert_validate_hint (TACH_WORKLOAD_BILSTM, "launch=graph", "cpu",
                        TACH_KNOB_LAUNCH, "graph", TACH_KNOB_LAUNCH, "eager", TRUE);
}

/* A value a knob does not take, a preset the workload lacks, a device that
 * does not exist. */
static void
test_hint_set (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TachDeviceInfo) device = NULL;
  g_autoptr(GPtrArray) devices = NULL;
  TachWorkload workload;
  TachConfig c;

  tach_config_init (&c, TACH_WORKLOAD_CNN);
  g_assert_false (tach_config_set (&c, "rnn", "bogus", &error));
  assert_hint (error, TACH_KNOB_RNN, "bogus", TACH_KNOB_COUNT, NULL, FALSE);
  g_clear_error (&error);
  g_assert_false (tach_config_set (&c, "input", "12x", &error));
  assert_hint (error, TACH_KNOB_INPUT, "12x", TACH_KNOB_COUNT, NULL, FALSE);
  g_clear_error (&error);
  g_assert_false (tach_config_set (&c, "preset", "nope", &error));
  assert_hint (error, TACH_KNOB_PRESET, "nope", TACH_KNOB_COUNT, NULL, FALSE);
  g_clear_error (&error);
  g_assert_false (tach_config_apply_preset (&c, "keras-fit-typo", &error));
  assert_hint (error, TACH_KNOB_PRESET, "keras-fit-typo", TACH_KNOB_COUNT, NULL, FALSE);
  g_clear_error (&error);
  g_assert_false (tach_workload_from_string ("rnn", &workload, &error));
  assert_hint (error, TACH_KNOB_WORKLOAD, "rnn", TACH_KNOB_COUNT, NULL, FALSE);
  g_clear_error (&error);
  /* Not a knob: no hint. */
  g_assert_false (tach_config_set (&c, "colour", "red", &error));
  g_assert_null (tach_error_get_hint (error));
  g_clear_error (&error);
  tach_config_clear (&c);

  device = tach_device_resolve ("gpu7", &error);
  g_assert_null (device);
  assert_hint (error, TACH_KNOB_DEVICE, "gpu7", TACH_KNOB_COUNT, NULL, FALSE);
  g_clear_error (&error);
  /* A device that is absent: the fix is the best device there is, here
   * the CPU (this test runs without a GPU, or with fewer than 64). */
  device = tach_device_resolve ("cuda:63", &error);
  g_assert_null (device);
  devices = tach_devices_list ();
  assert_hint (error, TACH_KNOB_DEVICE, "cuda:63", TACH_KNOB_DEVICE,
               ((TachDeviceInfo *) g_ptr_array_index (devices, 0))->id, TRUE);
  g_clear_error (&error);
}

/* A hint lives as long as its error: copies, prefixes and propagation keep
 * it; the first hint attached stays; other domains have none. */
static void
test_hint_lifetime (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GError) copy = NULL;
  g_autoptr(GError) io = NULL;
  GError *moved = NULL;
  TachConfig c;

  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  g_assert_false (tach_config_set (&c, "layout", "sideways", &error));
  g_prefix_error (&error, "Layout: ");
  assert_hint (error, TACH_KNOB_LAYOUT, "sideways", TACH_KNOB_COUNT, NULL, FALSE);
  tach_error_add_hint (&error, TACH_KNOB_RNN, "fused", TACH_KNOB_RNN, "unrolled", NULL);
  assert_hint (error, TACH_KNOB_LAYOUT, "sideways", TACH_KNOB_COUNT, NULL, FALSE);

  copy = g_error_copy (error);
  g_clear_error (&error);
  assert_hint (copy, TACH_KNOB_LAYOUT, "sideways", TACH_KNOB_COUNT, NULL, FALSE);
  g_propagate_error (&moved, g_steal_pointer (&copy));
  assert_hint (moved, TACH_KNOB_LAYOUT, "sideways", TACH_KNOB_COUNT, NULL, FALSE);
  g_error_free (moved);

  g_set_error_literal (&error, TACH_ERROR, TACH_ERROR_IO, "disk full");
  g_assert_null (tach_error_get_hint (error));
  io = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_FAILED, "no");
  tach_error_add_hint (&io, TACH_KNOB_RNN, NULL, TACH_KNOB_COUNT, NULL, NULL);
  g_assert_null (tach_error_get_hint (io));
  g_assert_null (tach_error_get_hint (NULL));
  tach_config_clear (&c);
}

/* A run that fails for want of memory on its device says the batch. */
static void
test_hint_run_failure (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TachRun) run = NULL;
  TachConfig c;

  test_tiny_config (&c, 3);
  test_fault_install ("alloc", 1, TEST_FAULT_OUT_OF_MEMORY);
  run = tach_run_new (&c, &error);
  g_assert_no_error (error);
  g_assert_true (tach_run_start (run, NULL, NULL, NULL, &error));
  g_assert_false (tach_run_wait (run, &error));
  test_fault_remove ();
  g_assert_error (error, TACH_ERROR, TACH_ERROR_OUT_OF_MEMORY);
  assert_hint (error, TACH_KNOB_BATCH, NULL, TACH_KNOB_BATCH, NULL, FALSE);
  assert_hint (tach_run_get_error (run), TACH_KNOB_BATCH, NULL, TACH_KNOB_BATCH, NULL, FALSE);

  /* A run that cannot be made carries the validation's hint. */
  g_clear_error (&error);
  g_clear_pointer (&run, tach_run_unref);
  test_apply (&c, "launch=graph");
  run = tach_run_new (&c, &error);
  g_assert_null (run);
  assert_hint (error, TACH_KNOB_LAUNCH, "graph", TACH_KNOB_LAUNCH, "eager", TRUE);
  tach_config_clear (&c);
}

/* Runs @config on the CPU and returns why it failed. */
static GError *
run_error (const TachConfig *config)
{
  g_autoptr(TachRun) run = NULL;
  GError *error = NULL;

  run = tach_run_new (config, &error);
  if (run == NULL)
    return error;
  g_assert_true (tach_run_start (run, NULL, NULL, NULL, &error));
  g_assert_false (tach_run_wait (run, &error));
  return error;
}

/* A model's own refusals at run time concern a knob too: a corpus too
 * short for one window (the data file), or for one batch (the batch, with
 * the largest that fits, which then runs). */
static void
test_hint_model (void)
{
  g_autofree char *dir = test_make_tmp_dir ("tach-hints-XXXXXX");
  g_autofree char *text = test_write_file (dir, "short.txt", "the cat sat on the mat and the dog sat too\n", -1);
  g_autofree char *settings = g_strdup_printf ("device=cpu threads=1 steps=3 warmup=1 data=%s", text);
  g_autoptr(GError) error = NULL;
  const TachErrorHint *hint;
  TachConfig c;

  /* A data file that is not there. */
  tach_config_init (&c, TACH_WORKLOAD_LSTM_LM);
  test_apply (&c, "device=cpu threads=1 steps=3 warmup=1 data=/nonexistent/tach.txt");
  error = run_error (&c);
  assert_hint (error, TACH_KNOB_DATA, "/nonexistent/tach.txt", TACH_KNOB_DATA, NULL, FALSE);
  g_clear_error (&error);
  tach_config_clear (&c);

  tach_config_init (&c, TACH_WORKLOAD_LSTM_LM);
  test_apply (&c, settings);
  test_apply (&c, "context=35 batch=4");
  error = run_error (&c);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  assert_hint (error, TACH_KNOB_DATA, text, TACH_KNOB_DATA, NULL, FALSE);
  g_clear_error (&error);

  test_apply (&c, "context=4 batch=64");
  error = run_error (&c);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  hint = tach_error_get_hint (error);
  g_assert_nonnull (hint);
  g_assert_nonnull (hint->fix_value);
  assert_hint (error, TACH_KNOB_BATCH, "64", TACH_KNOB_BATCH, hint->fix_value, FALSE);
  g_assert_cmpuint (g_ascii_strtoull (hint->fix_value, NULL, 10), <, 64);
  /* The fix runs. */
  g_assert_true (tach_config_set (&c, "batch", hint->fix_value, NULL));
  g_clear_error (&error);
  {
    g_autoptr(TachRun) run = tach_run_new (&c, &error);

    g_assert_no_error (error);
    g_assert_true (tach_run_start (run, NULL, NULL, NULL, &error));
    g_assert_true (tach_run_wait (run, &error));
    g_assert_no_error (error);
  }
  tach_config_clear (&c);
  test_remove_tree (dir);
}

static void
run_in_options (gconstpointer data)
{
  tach_set_wording (TACH_WORDING_OPTIONS);
  ((GTestFunc) data) ();
}

static void
run_in_settings (gconstpointer data)
{
  tach_set_wording (TACH_WORDING_SETTINGS);
  ((GTestFunc) data) ();
  tach_set_wording (TACH_WORDING_OPTIONS);
}

/* The mentions themselves, in each wording. */
static void
test_hint_mention (void)
{
  g_autofree char *option = NULL, *setting = NULL, *named = NULL, *typed = NULL;

  tach_set_wording (TACH_WORDING_OPTIONS);
  option = tach_knob_mention (TACH_KNOB_HEAD, "gap");
  g_assert_cmpstr (option, ==, "--head gap");
  tach_set_wording (TACH_WORDING_SETTINGS);
  setting = tach_knob_mention (TACH_KNOB_HEAD, "gap");
  g_assert_cmpstr (setting, ==, "Classifier head “Global average pooling”");
  named = tach_knob_mention (TACH_KNOB_BATCH, NULL);
  g_assert_cmpstr (named, ==, "Batch size");
  typed = tach_knob_mention (TACH_KNOB_INPUT, "28x28x1");
  g_assert_cmpstr (typed, ==, "Input size 28x28x1");
  /* A format's own knobs, alternatives and a title with a conversion. */
  g_assert_cmpstr (tach_wording_format ("{batch=%u} {--csv folder|folder} {nope} {x|y}%%"), ==,
                   "Batch size %u folder {nope} y%%");
  tach_set_wording (TACH_WORDING_OPTIONS);
  g_assert_cmpstr (tach_wording_format ("{batch=%u} {--csv folder|folder} {nope} {x|y}%%"), ==,
                   "--batch %u --csv folder {nope} x%%");
}

/* Adds @func twice: in the options' wording and in the settings'. */
static void
add_test (const char *name, GTestFunc func)
{
  g_autofree char *options = g_strdup_printf ("/engine/hints/%s", name);
  g_autofree char *settings = g_strdup_printf ("/engine/hints/settings/%s", name);

  g_test_add_data_func (options, func, run_in_options);
  g_test_add_data_func (settings, func, run_in_settings);
}

int
main (int argc, char **argv)
{
  setlocale (LC_ALL, "");
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/engine/hints/mention", test_hint_mention);
  add_test ("validate", test_hint_validate);
  add_test ("memory", test_hint_memory);
  add_test ("backend", test_hint_backend);
  add_test ("set", test_hint_set);
  add_test ("lifetime", test_hint_lifetime);
  add_test ("run-failure", test_hint_run_failure);
  add_test ("model", test_hint_model);
  return g_test_run ();
}
