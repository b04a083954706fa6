/* test-run-util.c: helpers shared by the engine tests. */
#include <glib/gstdio.h>
#include <math.h>
#include <stdarg.h>

#include "tach-backend.h"
#include "test-run-util.h"

void
test_apply (TachConfig *config, const char *settings)
{
  g_autoptr(GError) error = NULL;

  tach_config_apply_settings (config, settings, &error);
  g_assert_no_error (error);
}

void
test_config_pair (TachWorkload workload, TachConfig *a, const char *a_settings,
                  TachConfig *b, const char *b_settings)
{
  tach_config_init (a, workload);
  tach_config_init (b, workload);
  test_apply (a, a_settings);
  test_apply (b, b_settings);
}

TachBackend *
test_cpu_backend (void)
{
  g_autoptr(GError) error = NULL;
  TachBackend *be = tach_backend_new ("cpu", 1, TACH_PRECISION_FP32, &error);

  g_assert_no_error (error);
  g_assert_nonnull (be);
  return be;
}

void
test_tiny_config (TachConfig *config, guint steps)
{
  g_autofree char *settings = g_strdup_printf ("device=cpu batch=8 steps=%u warmup=2 threads=1",
                                               steps);

  tach_config_init (config, TACH_WORKLOAD_BILSTM);
  test_apply (config, settings);
}

TachRun *
test_tiny_run_new (guint steps)
{
  g_autoptr(GError) error = NULL;
  TachConfig config;
  TachRun *run;

  test_tiny_config (&config, steps);
  run = tach_run_new (&config, &error);
  tach_config_clear (&config);
  g_assert_no_error (error);
  return run;
}

TachRun *
test_run_to_end (const TachConfig *config)
{
  g_autoptr(GError) error = NULL;
  TachRun *run = tach_run_new (config, &error);

  g_assert_no_error (error);
  g_assert_true (tach_run_start (run, NULL, NULL, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (tach_run_wait (run, &error));
  g_assert_no_error (error);
  return run;
}

void
test_run_result_free (TestRunResult *result)
{
  g_clear_pointer (&result->samples, g_array_unref);
  g_clear_pointer (&result->losses, g_array_unref);
  g_clear_pointer (&result->text, g_free);
  g_clear_pointer (&result->algorithms, g_free);
  g_free (result);
}

static TestRunResult *
run_valist (TachWorkload workload, GError **error, const char *settings, va_list args)
{
  g_autoptr(TachRun) run = NULL;
  TestRunResult *r;
  TachConfig config;

  tach_config_init (&config, workload);
  for (const char *s = settings; s != NULL; s = va_arg (args, const char *))
    test_apply (&config, s);
  run = tach_run_new (&config, error);
  tach_config_clear (&config);
  if (run == NULL)
    return NULL;
  if (!tach_run_start (run, NULL, NULL, NULL, error) || !tach_run_wait (run, error))
    return NULL;
  g_assert_cmpint (tach_run_get_state (run), ==, TACH_RUN_STATE_FINISHED);

  r = g_new0 (TestRunResult, 1);
  r->samples = tach_run_dup_samples (run);
  r->losses = g_array_sized_new (FALSE, FALSE, sizeof (double), r->samples->len);
  for (guint i = 0; i < r->samples->len; i++)
    g_array_append_val (r->losses, g_array_index (r->samples, TachSample, i).loss);
  r->text = tach_run_dup_text (run);
  r->algorithms = tach_run_dup_algorithms (run);
  tach_run_get_summary (run, &r->summary);
  return r;
}

TestRunResult *
test_run_try (TachWorkload workload, GError **error, const char *settings, ...)
{
  TestRunResult *r;
  va_list args;

  va_start (args, settings);
  r = run_valist (workload, error, settings, args);
  va_end (args);
  return r;
}

TestRunResult *
test_run_ok (TachWorkload workload, const char *settings, ...)
{
  g_autoptr(GError) error = NULL;
  TestRunResult *r;
  va_list args;

  va_start (args, settings);
  r = run_valist (workload, &error, settings, args);
  va_end (args);
  g_assert_no_error (error);
  g_assert_nonnull (r);
  return r;
}

double
test_mean (GArray *values, guint from, guint n)
{
  double sum = 0.0;

  for (guint i = from; i < from + n; i++)
    sum += g_array_index (values, double, i);
  return sum / n;
}

void
test_assert_same_losses (GArray *a, GArray *b, double rtol, const char *what)
{
  g_assert_cmpuint (a->len, ==, b->len);
  for (guint i = 0; i < a->len; i++)
    {
      double x = g_array_index (a, double, i), y = g_array_index (b, double, i);

      if (isnan (x) && isnan (y))
        continue;
      g_assert_true (isfinite (x));
      if (fabs (x - y) > rtol * MAX (1.0, fabs (x)))
        g_error ("%s: step %u loss %.9g differs from %.9g", what, i, y, x);
    }
}

char *
test_make_tmp_dir (const char *tmpl)
{
  g_autoptr(GError) error = NULL;
  char *dir = g_dir_make_tmp (tmpl, &error);

  g_assert_no_error (error);
  return dir;
}

char *
test_write_file (const char *dir, const char *name, const void *bytes, gssize n)
{
  g_autoptr(GError) error = NULL;
  char *path = g_build_filename (dir, name, NULL);

  g_file_set_contents (path, bytes, n, &error);
  g_assert_no_error (error);
  return path;
}

void
test_remove_tree (const char *dir)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;

  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);

      if (g_file_test (path, G_FILE_TEST_IS_DIR))
        test_remove_tree (path);
      else
        g_unlink (path);
    }
  g_rmdir (dir);
}
