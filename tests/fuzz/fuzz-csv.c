/* fuzz-csv.c: the reading of an existing results folder before an append.
 * The input is the folder's runs.csv and samples.csv, separated by the
 * first NUL byte (no NUL: runs.csv alone).  tach_csv_append() either
 * accepts the folder and rewrites both files whole, each beginning with the
 * header it had, or refuses it with a TACH_ERROR_DATA naming the file and
 * leaves both files as they were.  Nothing else is ever left in the folder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

#include "fuzz-util.h"

static char *
read_or_empty (const char *path)
{
  char *text = NULL;

  if (!g_file_get_contents (path, &text, NULL, NULL))
    return g_strdup ("");
  return text;
}

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  g_autofree char *dir = g_build_filename (fuzz_tmp_dir (), "folder", NULL);
  g_autofree char *runs_path = g_build_filename (dir, "runs.csv", NULL);
  g_autofree char *samples_path = g_build_filename (dir, "samples.csv", NULL);
  g_autofree char *runs_before = NULL;
  g_autofree char *samples_before = NULL;
  g_autofree char *runs_after = NULL;
  g_autofree char *samples_after = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GDir) listing = NULL;
  const char *name;

  fuzz_write_folder (dir, runs_path, samples_path, data, size);
  runs_before = read_or_empty (runs_path);
  samples_before = read_or_empty (samples_path);

  if (!tach_csv_append (dir, NULL, &error))
    {
      fuzz_check_error (error, TACH_ERROR_DATA, NULL, "tach_csv_append");
      if (strstr (error->message, runs_path) == NULL && strstr (error->message, samples_path) == NULL)
        {
          fprintf (stderr, "fuzz: the message names neither file: %s\n", error->message);
          abort ();
        }
      runs_after = read_or_empty (runs_path);
      samples_after = read_or_empty (samples_path);
      if (strcmp (runs_before, runs_after) != 0 || strcmp (samples_before, samples_after) != 0)
        {
          fprintf (stderr, "fuzz: a refused folder was changed\n");
          abort ();
        }
    }
  else
    {
      runs_after = read_or_empty (runs_path);
      samples_after = read_or_empty (samples_path);
      if (strncmp (runs_after, "run_id,", 7) != 0 || strncmp (samples_after, "run_id,", 7) != 0)
        {
          fprintf (stderr, "fuzz: an accepted folder lost its header\n");
          abort ();
        }
    }

  /* No temporary file is left behind, whatever happened. */
  listing = g_dir_open (dir, 0, NULL);
  while (listing != NULL && (name = g_dir_read_name (listing)) != NULL)
    if (!g_str_equal (name, "runs.csv") && !g_str_equal (name, "samples.csv"))
      {
        fprintf (stderr, "fuzz: %s was left in the folder\n", name);
        abort ();
      }
  return 0;
}
