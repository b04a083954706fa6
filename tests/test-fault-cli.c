/* test-fault-cli.c: tach-cli when the backend fails in the middle of a run
 * (test-fault-backend.h): `run` exits 1 and still exports what was
 * measured; `sweep` reports the failed preset and runs the rest.
 *
 * tach-cli.c is compiled in with its main() renamed, so that the wrapper
 * is installed in the same process. */
#include <string.h>

#include "test-fault-backend.h"
#include "test-run-util.h"

#define main tach_cli_main
#include "tach-cli.c"
#undef main

static int
cli (const char *first, ...)
{
  g_autoptr(GPtrArray) args = g_ptr_array_new ();
  va_list ap;

  g_ptr_array_add (args, (gpointer) "tach-cli");
  va_start (ap, first);
  for (const char *a = first; a != NULL; a = va_arg (ap, const char *))
    g_ptr_array_add (args, (gpointer) a);
  va_end (ap);
  g_ptr_array_add (args, NULL);
  return tach_cli_main ((int) args->len - 1, (char **) args->pdata);
}

/* Lines of @path after the header that contain @needle. */
static guint
count_rows (const char *path, const char *needle)
{
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;
  guint n = 0;

  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  lines = g_strsplit (text, "\r\n", -1);
  for (guint i = 1; lines[i] != NULL; i++)
    if (*lines[i] != '\0' && (needle == NULL || strstr (lines[i], needle) != NULL))
      n++;
  return n;
}

#define RUN_ARGS "--workload", "bilstm", "--device", "cpu", "--batch", "8", "--steps", "12", \
                 "--warmup", "2", "--threads", "1", "--sync", "1"

static void
test_run_fails (void)
{
  g_autofree char *dir = test_make_tmp_dir ("tach-fault-cli-XXXXXX");
  g_autofree char *runs = g_build_filename (dir, "runs.csv", NULL);
  g_autofree char *samples = g_build_filename (dir, "samples.csv", NULL);
  guint calls;

  test_fault_install ("gemm", G_MAXUINT, TEST_FAULT_DEVICE_LOST);
  g_assert_cmpint (cli ("run", RUN_ARGS, NULL), ==, 0);
  calls = test_fault_calls ();

  test_fault_install ("gemm", calls / 2, TEST_FAULT_DEVICE_LOST);
  g_assert_cmpint (cli ("run", RUN_ARGS, "--csv", dir, NULL), ==, TACH_CLI_EXIT_FAILURE);
  g_assert_true (test_fault_fired ());
  test_fault_remove ();
  g_assert_cmpuint (count_rows (runs, ",failed,"), ==, 1);
  g_assert_cmpuint (count_rows (runs, "the device was lost"), ==, 1);
  g_assert_cmpuint (count_rows (samples, NULL), >, 0);
  g_assert_cmpuint (count_rows (samples, NULL), <, 12);

  /* The next run, into the same folder, is normal. */
  g_assert_cmpint (cli ("run", RUN_ARGS, "--csv", dir, NULL), ==, 0);
  g_assert_cmpuint (count_rows (runs, ",finished,"), ==, 1);
  test_remove_tree (dir);
}

static void
test_sweep_goes_on (void)
{
  g_autofree char *dir = test_make_tmp_dir ("tach-fault-cli-XXXXXX");
  g_autofree char *runs = g_build_filename (dir, "runs.csv", NULL);
  /* --presets all, alone: not the data-parallel ones. */
  g_autoptr(GPtrArray) presets = tach_presets_for_ranks (TACH_WORKLOAD_BILSTM, 1);
  guint calls;

  /* The first preset's run meets the failure half-way; the others run
   * (one pass in the order given: the first preset first). */
  test_fault_install ("lstm_fwd", G_MAXUINT, TEST_FAULT_LIBRARY);
  g_assert_cmpint (cli ("run", RUN_ARGS, "--preset", "tf1-feed-dict", NULL), ==, 0);
  calls = test_fault_calls ();
  test_fault_install ("lstm_fwd", calls / 2, TEST_FAULT_LIBRARY);
  g_assert_cmpint (cli ("sweep", "--workload", "bilstm", "--device", "cpu", "--batch", "8",
                        "--steps", "12", "--warmup", "2", "--threads", "1",
                        "--presets", "all", "--rounds", "1", "--budget", "0", "--csv", dir,
                        NULL),
                   ==, TACH_CLI_EXIT_FAILURE);
  g_assert_true (test_fault_fired ());
  test_fault_remove ();
  g_assert_cmpuint (count_rows (runs, ",failed,"), ==, 1);
  g_assert_cmpuint (count_rows (runs, "tf1-feed-dict"), >=, 1);
  g_assert_cmpuint (count_rows (runs, "library error"), ==, 1);
  g_assert_cmpuint (count_rows (runs, ",finished,"), ==, presets->len - 1);
  test_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cli/fault/run", test_run_fails);
  g_test_add_func ("/cli/fault/sweep", test_sweep_goes_on);
  return g_test_run ();
}
