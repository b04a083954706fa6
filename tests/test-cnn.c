/* test-cnn.c: the cnn workload through the public run API.
 *
 *   /engine/cnn/modes         feed, sync and metrics give the same per-step
 *                             losses, dropout included
 *   /engine/cnn/learns        Adam on a small MNIST-format folder: the loss
 *                             falls and the test accuracy is far above chance
 *   /engine/cnn/gap           64x96x3 synthetic images train with --head gap;
 *                             1080x1920x3 with the flatten head is rejected
 *                             with the memory it needs and --head gap
 *   /engine/cnn/evaluation    the test set is a phase of its own: progress
 *                             while it runs, its time in the wall time, and
 *                             a stop request ends it (no accuracy)
 *   /engine/cnn/data-source   which data a configuration reads, by kind and
 *                             path: a folder given, Fashion-MNIST by
 *                             default where installed, else synthetic
 *   /engine/cnn/synthetic     seeded synthetic images are learnable
 *   /engine/cnn/data-errors   bad IDX files and sizes fail clearly
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "tach-explain.h"
#include "tach-rand.h"

#include "test-run-util.h"

#define LOSS_RTOL 1e-4
#define CNN_DEFAULTS "device=cpu threads=2 warmup=0 seed=3"

static TestRunResult *
run_ok (const char *base, const char *settings)
{
  return test_run_ok (TACH_WORKLOAD_CNN, CNN_DEFAULTS, base, settings, NULL);
}

/* ---------------------------------------------------- a small data set */

static void
put_be32 (GByteArray *b, guint32 v)
{
  guint8 be[4] = { v >> 24, v >> 16, v >> 8, v };

  g_byte_array_append (b, be, 4);
}

/* 28x28 images whose class is where a bright bar lies and how it is
 * oriented, with seeded noise: easy to learn, impossible to learn by
 * accident. */
static void
write_split (const char *dir, const char *split, guint n, guint64 seed, guint n_labels)
{
  g_autoptr (GByteArray) images = g_byte_array_new ();
  g_autoptr (GByteArray) labels = g_byte_array_new ();
  g_autofree char *iname = g_strdup_printf ("%s-images-idx3-ubyte", split);
  g_autofree char *lname = g_strdup_printf ("%s-labels-idx1-ubyte", split);
  guint8 head[4] = { 0, 0, 0x08, 3 };

  g_byte_array_append (images, head, 4);
  put_be32 (images, n);
  put_be32 (images, 28);
  put_be32 (images, 28);
  head[3] = 1;
  g_byte_array_append (labels, head, 4);
  put_be32 (labels, n_labels);
  for (guint i = 0; i < n; i++)
    {
      guint8 label = (guint8) (tach_rand_bits (seed, 1, i) % 10);
      guint pos = 4 + (label % 5) * 4;
      gboolean vertical = label >= 5;

      for (guint y = 0; y < 28; y++)
        for (guint x = 0; x < 28; x++)
          {
            gboolean on = vertical ? (x >= pos && x < pos + 3) : (y >= pos && y < pos + 3);
            double v = (on ? 200 : 20) + 60 * tach_rand_uniform (seed, 2 + i, y * 28 + x);
            guint8 px = (guint8) MIN (v, 255.0);

            g_byte_array_append (images, &px, 1);
          }
      if (i < n_labels)
        g_byte_array_append (labels, &label, 1);
    }
  g_free (test_write_file (dir, iname, images->data, images->len));
  g_free (test_write_file (dir, lname, labels->data, labels->len));
}

static char *
make_folder (guint n_train, guint n_test, guint n_train_labels)
{
  char *dir = test_make_tmp_dir ("tach-test-cnn-XXXXXX");

  write_split (dir, "train", n_train, 11, n_train_labels);
  if (n_test > 0)
    write_split (dir, "t10k", n_test, 12, n_test);
  return dir;
}

/* -------------------------------------------------------------- tests */

static void
test_modes (void)
{
  g_autofree char *dir = make_folder (64, 0, 64);
  g_autofree char *base = g_strdup_printf ("data=%s batch=8 steps=6 feed=host-f32 sync=1 "
                                           "metrics=none", dir);
  const char *modes[] = {
    "feed=host-f64", "feed=prefetch", "feed=resident", "sync=end", "sync=4",
    "metrics=accuracy", "feed=resident sync=end metrics=accuracy",
  };
  g_autoptr (TestRunResult) ref = run_ok (base, "");

  g_assert_cmpuint (ref->losses->len, ==, 6);
  for (guint s = 0; s < ref->losses->len; s++)
    g_assert_true (isfinite (g_array_index (ref->losses, double, s)));
  /* No test split in this folder: no test accuracy. */
  g_assert_true (isnan (ref->summary.test_accuracy));
  for (guint i = 0; i < G_N_ELEMENTS (modes); i++)
    {
      g_autoptr (TestRunResult) other = run_ok (base, modes[i]);

      test_assert_same_losses (ref->losses, other->losses, LOSS_RTOL, modes[i]);
    }
  test_remove_tree (dir);
}

static void
test_learns (void)
{
  g_autofree char *dir = make_folder (512, 100, 512);
  g_autofree char *base = g_strdup_printf ("data=%s batch=32 steps=30 optimizer=adam lr=0.001",
                                           dir);
  g_autoptr (TestRunResult) r = run_ok (base, "");
  double first = test_mean (r->losses, 0, 5), last = test_mean (r->losses, 25, 5);

  g_test_message ("loss %.3f -> %.3f, test accuracy %.3f", first, last, r->summary.test_accuracy);
  g_assert_cmpfloat (last, <, first * 0.5);
  g_assert_cmpfloat (r->summary.test_accuracy, >, 0.6);
  test_remove_tree (dir);
}

/* What the notify saw of a run's evaluation. */
typedef struct {
  GMainLoop *loop;
  gboolean   stop_in_evaluation;  /* ask the run to stop once it evaluates */
  guint      running_seen;        /* notifies during the evaluation */
  guint64    done_seen, total_seen;
} EvalWatch;

static void
on_eval_notify (TachRun *run, gpointer user_data)
{
  EvalWatch *watch = user_data;
  g_autoptr (GArray) scratch = g_array_new (FALSE, FALSE, sizeof (TachSample));
  guint64 done = 0, total = 0;

  while (tach_run_drain_samples (run, scratch) == TACH_RUN_DRAIN_MAX)
    g_array_set_size (scratch, 0);
  if (tach_run_get_evaluation (run, &done, &total) == TACH_EVALUATION_RUNNING)
    {
      watch->running_seen++;
      watch->done_seen = done;
      watch->total_seen = total;
      if (watch->stop_in_evaluation && total > 0)
        tach_run_stop (run);
    }
  if (tach_run_get_state (run) != TACH_RUN_STATE_RUNNING)
    g_main_loop_quit (watch->loop);
}

static TachRun *
run_watched (const char *settings, EvalWatch *watch)
{
  TachConfig config;
  g_autoptr (GError) error = NULL;
  TachRun *run;

  tach_config_init (&config, TACH_WORKLOAD_CNN);
  test_apply (&config, CNN_DEFAULTS);
  test_apply (&config, settings);
  run = tach_run_new (&config, &error);
  g_assert_no_error (error);
  tach_config_clear (&config);
  watch->loop = g_main_loop_new (NULL, FALSE);
  g_assert_true (tach_run_start (run, NULL, on_eval_notify, watch, &error));
  g_main_loop_run (watch->loop);
  g_clear_pointer (&watch->loop, g_main_loop_unref);
  tach_run_wait (run, NULL);
  return run;
}

static void
test_evaluation (void)
{
  /* 1600 test images in 400 batches, about 4 GFLOP: tenths of a second,
   * during which the notify sees the evaluation running and a stop asked
   * for at its start lands long before its end. */
  g_autofree char *dir = make_folder (64, 1600, 64);
  g_autofree char *settings = g_strdup_printf ("data=%s batch=4 steps=3 filters=16,32 dense=128",
                                               dir);
  TachSummary s;

  /* To its end: progress over the whole test set, an accuracy, and the
   * evaluation's time inside the wall time. */
  {
    EvalWatch watch = { 0 };
    g_autoptr (TachRun) run = run_watched (settings, &watch);
    guint64 done = 0, total = 0;

    g_assert_cmpint (tach_run_get_state (run), ==, TACH_RUN_STATE_FINISHED);
    g_assert_cmpint (tach_run_get_evaluation (run, &done, &total), ==, TACH_EVALUATION_DONE);
    g_assert_cmpuint (total, ==, 1600);
    g_assert_cmpuint (done, ==, 1600);
    g_assert_cmpuint (watch.running_seen, >, 0);
    g_assert_cmpuint (watch.total_seen, ==, 1600);
    tach_run_get_summary (run, &s);
    g_assert_true (isfinite (s.test_accuracy));
    g_assert_true (isfinite (s.eval_s) && s.eval_s > 0);
    g_assert_cmpfloat (s.wall_s, >=, s.eval_s);
    /* The data it read, by kind and path. */
    g_assert_cmpstr (tach_run_get_data_kind (run), ==, "IDX images");
    g_assert_cmpstr (tach_run_get_data_path (run), ==, dir);
  }

  /* Stopped once it evaluates: it ends without an accuracy, every step's
   * sample kept, and says the evaluation was stopped. */
  {
    EvalWatch watch = { .stop_in_evaluation = TRUE };
    g_autoptr (TachRun) run = run_watched (settings, &watch);
    guint64 done = 0, total = 0;

    g_assert_cmpint (tach_run_get_state (run), ==, TACH_RUN_STATE_CANCELLED);
    g_assert_cmpint (tach_run_get_evaluation (run, &done, &total), ==, TACH_EVALUATION_STOPPED);
    g_assert_cmpuint (done, <, total);
    g_assert_cmpuint (tach_run_get_n_samples (run), ==, 3);
    tach_run_get_summary (run, &s);
    g_assert_true (isnan (s.test_accuracy));
    g_assert_true (isfinite (s.eval_s));
  }

  /* Issue 42: explain compares the steps' rates only, so its runs skip
   * the test set (it took a quarter of a busy cnn explain). */
  {
    g_autofree char *sync_1 = g_strdup_printf ("%s %s sync=1", CNN_DEFAULTS, settings);
    g_autofree char *sync_end = g_strdup_printf ("%s %s sync=end", CNN_DEFAULTS, settings);
    g_autoptr (TachExplain) explain = NULL;
    g_autoptr (GError) error = NULL;
    TachConfig a, b;
    GPtrArray *runs;

    test_config_pair (TACH_WORKLOAD_CNN, &a, sync_1, &b, sync_end);
    explain = tach_explain_new (&a, &b, 3, &error);
    g_assert_no_error (error);
    g_assert_true (tach_explain_run (explain, NULL, NULL, NULL, &error));
    g_assert_no_error (error);
    runs = tach_explain_get_runs (explain);
    g_assert_cmpuint (runs->len, ==, 6);
    for (guint i = 0; i < runs->len; i++)
      {
        g_assert_cmpint (tach_run_get_evaluation (runs->pdata[i], NULL, NULL), !=,
                         TACH_EVALUATION_DONE);
        tach_run_get_summary (runs->pdata[i], &s);
        g_assert_true (isnan (s.eval_s));
        g_assert_true (isnan (s.test_accuracy));
      }
    tach_config_clear (&a);
    tach_config_clear (&b);
  }
  test_remove_tree (dir);
}

static void
test_data_source (void)
{
  const char *fashion = "/usr/share/datasets/fashion-mnist";
  g_autofree char *dir = make_folder (16, 0, 16);
  g_autofree char *with_dir = g_strdup_printf ("data=%s", dir);
  TachConfig config;
  const char *kind = NULL;
  char *path = NULL;

  tach_config_init (&config, TACH_WORKLOAD_CNN);
  test_apply (&config, with_dir);
  tach_config_get_data_source (&config, &kind, &path);
  g_assert_cmpstr (kind, ==, "IDX images");
  g_assert_cmpstr (path, ==, dir);
  g_clear_pointer (&path, g_free);

  /* The default: Debian's Fashion-MNIST where installed (28x28x1 only). */
  test_apply (&config, "data=");
  tach_config_get_data_source (&config, &kind, &path);
  if (g_file_test (fashion, G_FILE_TEST_IS_DIR))
    {
      g_assert_cmpstr (kind, ==, "Fashion-MNIST (IDX)");
      g_assert_cmpstr (path, ==, fashion);
    }
  else
    {
      g_assert_cmpstr (kind, ==, "synthetic images");
      g_assert_null (path);
    }
  g_clear_pointer (&path, g_free);
  test_apply (&config, "input=16x16x1");
  tach_config_get_data_source (&config, &kind, &path);
  g_assert_cmpstr (kind, ==, "synthetic images");
  g_assert_null (path);
  tach_config_clear (&config);

  /* The other workloads say what they generate. */
  tach_config_init (&config, TACH_WORKLOAD_BILSTM);
  tach_config_get_data_source (&config, &kind, &path);
  g_assert_cmpstr (kind, ==, "synthetic sequences");
  g_assert_null (path);
  tach_config_clear (&config);
  test_remove_tree (dir);
}

static void
test_gap (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TestRunResult) gap = run_ok ("input=64x96x3 head=gap batch=4 samples=16 steps=3", "");
  TachConfig config;

  g_assert_cmpuint (gap->losses->len, ==, 3);
  for (guint i = 0; i < 3; i++)
    g_assert_true (isfinite (g_array_index (gap->losses, double, i)));

  tach_config_init (&config, TACH_WORKLOAD_CNN);
  test_apply (&config, "device=cpu input=1080x1920x3 head=flatten batch=256");
  g_assert_false (tach_config_validate (&config, "cpu", &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "--head gap"));
  g_assert_nonnull (strstr (error->message, "GB"));
  g_clear_error (&error);

  /* The same size with the pooling head and a small batch fits. */
  test_apply (&config, "head=gap batch=1 samples=1");
  g_assert_true (tach_config_validate (&config, "cpu", &error));
  g_assert_no_error (error);
  tach_config_clear (&config);
}

static void
test_synthetic (void)
{
  g_autoptr (TestRunResult) r = run_ok ("input=16x16x1 batch=32 samples=512 steps=30 "
                                    "optimizer=adam lr=0.002", "");

  g_test_message ("loss %.3f -> %.3f", test_mean (r->losses, 0, 5), test_mean (r->losses, 25, 5));
  g_assert_cmpfloat (test_mean (r->losses, 25, 5), <, test_mean (r->losses, 0, 5) * 0.6);
  g_assert_true (isnan (r->summary.test_accuracy));
}

/* A short run with the setting that @format makes must fail with @code and
 * a message that holds @needle. */
static void G_GNUC_PRINTF (3, 4)
expect_error (int code, const char *needle, const char *format, ...)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TestRunResult) r = NULL;
  g_autofree char *settings = NULL;
  va_list args;

  va_start (args, format);
  settings = g_strdup_vprintf (format, args);
  va_end (args);
  r = test_run_try (TACH_WORKLOAD_CNN, &error, CNN_DEFAULTS, "batch=4 steps=1", settings, NULL);

  g_assert_null (r);
  g_assert_error (error, TACH_ERROR, code);
  g_test_message ("%s: %s", settings, error->message);
  g_assert_nonnull (strstr (error->message, needle));
}

static void
test_data_errors (void)
{
  g_autofree char *mismatch = make_folder (20, 0, 19);
  g_autofree char *truncated = make_folder (20, 0, 20);
  g_autofree char *empty = test_make_tmp_dir ("tach-test-cnn-XXXXXX");
  g_autofree char *images = NULL, *contents = NULL;
  g_autoptr (GError) error = NULL;
  gsize length = 0;

  expect_error (TACH_ERROR_DATA, "20 images but", "data=%s", mismatch);

  images = g_build_filename (truncated, "train-images-idx3-ubyte", NULL);
  g_file_get_contents (images, &contents, &length, &error);
  g_assert_no_error (error);
  g_file_set_contents (images, contents, length - 100, &error);
  g_assert_no_error (error);
  expect_error (TACH_ERROR_DATA, "truncated", "data=%s", truncated);

  /* An images file named directly, its labels beside it. */
  expect_error (TACH_ERROR_DATA, "19 labels", "data=%s/train-images-idx3-ubyte", mismatch);
  expect_error (TACH_ERROR_DATA, "no MNIST-format training files", "data=%s", empty);
  expect_error (TACH_ERROR_DATA, "does not exist", "data=%s/nothing-here", empty);
  expect_error (TACH_ERROR_INVALID_CONFIG, "too small", "input=3x3x1");

  test_remove_tree (mismatch);
  test_remove_tree (truncated);
  test_remove_tree (empty);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/engine/cnn/modes", test_modes);
  g_test_add_func ("/engine/cnn/learns", test_learns);
  g_test_add_func ("/engine/cnn/evaluation", test_evaluation);
  g_test_add_func ("/engine/cnn/data-source", test_data_source);
  g_test_add_func ("/engine/cnn/gap", test_gap);
  g_test_add_func ("/engine/cnn/synthetic", test_synthetic);
  g_test_add_func ("/engine/cnn/data-errors", test_data_errors);

  return g_test_run ();
}
