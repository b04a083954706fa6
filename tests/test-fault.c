/* test-fault.c: runs whose backend fails in the middle (test-fault-backend.h):
 * a library error, running out of memory and a lost device, at set-up and
 * in the middle of each workload.  The run ends failed with a message that
 * names the op and the cause; the samples measured before the failure are
 * kept and exported (runs.csv says state=failed and the error); the next
 * run is normal. */
#include <string.h>

#include "test-fault-backend.h"
#include "test-run-util.h"

typedef struct {
  const char   *name;
  TachWorkload  workload;
  const char   *settings;
  const char   *op;
} FaultCase;

static const FaultCase cases[] = {
  { "bilstm", TACH_WORKLOAD_BILSTM, "device=cpu batch=8 steps=12 warmup=2 threads=1 sync=1", "gemm" },
  { "bilstm-sync-end", TACH_WORKLOAD_BILSTM,
    "device=cpu batch=8 steps=12 warmup=2 threads=1 sync=end", "lstm_bwd" },
  { "lstm-lm-generate", TACH_WORKLOAD_LSTM_LM,
    "device=cpu task=generate batch=1 steps=40 warmup=2 threads=1 sampling=host", "download" },
  { "lstm-lm-train", TACH_WORKLOAD_LSTM_LM, "device=cpu batch=8 steps=12 warmup=2 threads=1", "adam" },
  { "cnn", TACH_WORKLOAD_CNN,
    "device=cpu batch=4 steps=8 warmup=2 threads=1 samples=64 input=8x8x1 sync=1", "softmax_ce" },
};

typedef struct {
  const FaultCase *c;
  TestFaultKind    kind;
  gboolean         at_setup;   /* the first alloc fails */
} FaultTest;

static TachRun *
run_case (const FaultCase *c)
{
  g_autoptr(GError) error = NULL;
  TachConfig config;
  TachRun *run;

  tach_config_init (&config, c->workload);
  test_apply (&config, c->settings);
  run = tach_run_new (&config, &error);
  tach_config_clear (&config);
  g_assert_no_error (error);
  g_assert_true (tach_run_start (run, NULL, NULL, NULL, &error));
  g_assert_no_error (error);
  tach_run_wait (run, NULL);
  return run;
}

static void
test_fault (gconstpointer data)
{
  const FaultTest *t = data;
  const FaultCase *c = t->c;
  const char *op = t->at_setup ? "alloc" : c->op;
  g_autofree char *dir = test_make_tmp_dir ("tach-fault-XXXXXX");
  g_autofree char *runs_csv = NULL;
  g_autofree char *samples_csv = NULL;
  g_autofree char *runs_path = g_build_filename (dir, "runs.csv", NULL);
  g_autofree char *samples_path = g_build_filename (dir, "samples.csv", NULL);
  g_autoptr(TachRun) clean = NULL;
  g_autoptr(TachRun) failed = NULL;
  g_autoptr(TachRun) after = NULL;
  g_autoptr(GArray) samples = NULL;
  g_autoptr(GPtrArray) runs = g_ptr_array_new ();
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) rows = NULL;
  const GError *run_error;
  guint calls, nth, steps;
  guint sample_rows = 0;

  /* A clean run counts the op's calls; the failure comes half-way. */
  test_fault_install (op, G_MAXUINT, t->kind);
  clean = run_case (c);
  g_assert_cmpint (tach_run_get_state (clean), ==, TACH_RUN_STATE_FINISHED);
  calls = test_fault_calls ();
  g_assert_cmpuint (calls, >=, 2);
  steps = tach_run_get_config (clean)->steps;
  nth = t->at_setup ? 1 : calls / 2 + 1;

  test_fault_install (op, nth, t->kind);
  failed = run_case (c);
  g_assert_true (test_fault_fired ());
  g_assert_cmpint (tach_run_get_state (failed), ==, TACH_RUN_STATE_FAILED);
  run_error = tach_run_get_error (failed);
  g_assert_nonnull (run_error);
  g_assert_error ((GError *) run_error, TACH_ERROR, test_fault_code (t->kind));
  g_assert_nonnull (strstr (run_error->message, op));
  g_assert_nonnull (strstr (run_error->message, test_fault_cause (t->kind)));

  /* Every step measured before the failing one is kept, and none after. */
  samples = tach_run_dup_samples (failed);
  if (t->at_setup)
    g_assert_cmpuint (samples->len, ==, 0);
  else
    {
      g_assert_cmpuint (samples->len, >, 0);
      g_assert_cmpuint (samples->len, <, steps);
      for (guint i = 0; i < samples->len; i++)
        {
          TachSample *s = &g_array_index (samples, TachSample, i);

          g_assert_cmpuint (s->step, ==, i);
          g_assert_true (s->step_ms > 0.0);
        }
    }
  test_fault_remove ();

  /* Exported: the failed run's row says so, with the error, and its samples. */
  g_ptr_array_add (runs, failed);
  g_assert_true (tach_csv_append (dir, runs, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (runs_path, &runs_csv, NULL, NULL));
  g_assert_nonnull (strstr (runs_csv, ",failed,"));
  g_assert_nonnull (strstr (runs_csv, test_fault_cause (t->kind)));
  g_assert_true (g_file_get_contents (samples_path, &samples_csv, NULL, NULL));
  rows = g_strsplit (samples_csv, "\r\n", -1);
  for (guint i = 1; rows[i] != NULL; i++)
    if (*rows[i] != '\0')
      sample_rows++;
  g_assert_cmpuint (sample_rows, ==, samples->len);

  /* The engine runs the next run normally. */
  after = run_case (c);
  g_assert_cmpint (tach_run_get_state (after), ==, TACH_RUN_STATE_FINISHED);
  g_assert_null (tach_run_get_error (after));
  {
    g_autoptr(GArray) all = tach_run_dup_samples (after);

    g_assert_cmpuint (all->len, ==, steps);
  }
  test_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  static const TestFaultKind kinds[] = {
    TEST_FAULT_LIBRARY, TEST_FAULT_OUT_OF_MEMORY, TEST_FAULT_DEVICE_LOST
  };
  g_autoptr(GPtrArray) tests = g_ptr_array_new_with_free_func (g_free);

  g_test_init (&argc, &argv, NULL);
  for (guint k = 0; k < G_N_ELEMENTS (kinds); k++)
    for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
      for (int at_setup = 0; at_setup <= 1; at_setup++)
        {
          FaultTest *t = g_new0 (FaultTest, 1);
          g_autofree char *path = NULL;

          /* Set-up failures once per kind are enough. */
          if (at_setup && i > 0)
            continue;
          t->c = &cases[i];
          t->kind = kinds[k];
          t->at_setup = at_setup;
          path = g_strdup_printf ("/engine/fault/%s/%s/%s", test_fault_kind_name (kinds[k]),
                                  cases[i].name, at_setup ? "setup" : "mid-run");
          g_test_add_data_func (path, t, test_fault);
          g_ptr_array_add (tests, t);
        }
  return g_test_run ();
}
