/* fuzz-replay.c: runs a harness over files and folders of inputs, for the
 * normal test suite (where libFuzzer is not linked).  Each argument is a
 * file or a folder whose files are all run; an input that breaks the
 * parser's contract aborts, so the test fails naming it. */
#include <stdio.h>

#include "fuzz-util.h"

static int
compare_paths (gconstpointer a, gconstpointer b)
{
  return g_strcmp0 (*(char *const *) a, *(char *const *) b);
}

static int
replay_file (const char *path)
{
  g_autofree char *data = NULL;
  g_autoptr(GError) error = NULL;
  gsize len = 0;

  if (!g_file_get_contents (path, &data, &len, &error))
    {
      fprintf (stderr, "fuzz-replay: %s\n", error->message);
      return 1;
    }
  fprintf (stderr, "fuzz-replay: %s (%zu bytes)\n", path, (size_t) len);
  LLVMFuzzerTestOneInput ((const guint8 *) data, len);
  return 0;
}

int
main (int argc, char **argv)
{
  int failed = 0, count = 0;

  for (int i = 1; i < argc; i++)
    {
      if (g_file_test (argv[i], G_FILE_TEST_IS_DIR))
        {
          g_autoptr(GError) error = NULL;
          g_autoptr(GDir) dir = g_dir_open (argv[i], 0, &error);
          g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
          const char *name;

          if (dir == NULL)
            {
              fprintf (stderr, "fuzz-replay: %s\n", error->message);
              return 1;
            }
          while ((name = g_dir_read_name (dir)) != NULL)
            g_ptr_array_add (names, g_build_filename (argv[i], name, NULL));
          /* In name order, so that a failure is found the same way each time. */
          g_ptr_array_sort (names, compare_paths);
          for (guint k = 0; k < names->len; k++)
            {
              failed |= replay_file (g_ptr_array_index (names, k));
              count++;
            }
        }
      else
        {
          failed |= replay_file (argv[i]);
          count++;
        }
    }
  if (count == 0)
    {
      fprintf (stderr, "fuzz-replay: no inputs given\n");
      return 1;
    }
  fprintf (stderr, "fuzz-replay: %d inputs, every one handled\n", count);
  return failed;
}
