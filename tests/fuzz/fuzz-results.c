/* fuzz-results.c: the reading of a results folder into ended runs (the
 * window's Open…, `tach DIR`).  The input is the folder's runs.csv and
 * samples.csv, separated by the first NUL byte (no NUL: runs.csv alone).
 * tach_results_load() either refuses the folder with a TACH_ERROR_DATA
 * naming runs.csv, or loads its readable rows (the others described, each
 * by file and line); every run loaded answers every query, and exports
 * again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

#include "fuzz-util.h"

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  g_autofree char *dir = g_build_filename (fuzz_tmp_dir (), "results", NULL);
  g_autofree char *out = g_build_filename (fuzz_tmp_dir (), "export", NULL);
  g_autofree char *runs_path = g_build_filename (dir, "runs.csv", NULL);
  g_autofree char *samples_path = g_build_filename (dir, "samples.csv", NULL);
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GError) error = NULL;

  fuzz_write_folder (dir, runs_path, samples_path, data, size);

  if (!tach_results_load (dir, runs, problems, &error))
    {
      fuzz_check_error (error, TACH_ERROR_DATA, runs_path, "tach_results_load");
      return 0;
    }
  for (guint i = 0; i < problems->len; i++)
    {
      const char *problem = g_ptr_array_index (problems, i);

      if (!g_str_has_prefix (problem, runs_path) && !g_str_has_prefix (problem, samples_path))
        {
          fprintf (stderr, "fuzz: a problem that names no file: %s\n", problem);
          abort ();
        }
    }
  for (guint i = 0; i < runs->len; i++)
    {
      TachRun *run = g_ptr_array_index (runs, i);
      TachSummary summary;
      TachRunState state = tach_run_get_state (run);

      if (state == TACH_RUN_STATE_READY || state == TACH_RUN_STATE_RUNNING)
        {
          fprintf (stderr, "fuzz: a loaded run that has not ended\n");
          abort ();
        }
      tach_run_get_summary (run, &summary);
      g_array_unref (tach_run_dup_samples (run));
      g_free (tach_run_dup_text (run));
      if (tach_run_get_record_id (run) == NULL || tach_run_get_source (run) == NULL)
        abort ();
      g_free (tach_config_get (tach_run_get_config (run), "workload"));
    }
  /* What was loaded exports again. */
  if (runs->len > 0)
    {
      g_autofree char *out_runs = g_build_filename (out, "runs.csv", NULL);
      g_autofree char *out_samples = g_build_filename (out, "samples.csv", NULL);

      g_unlink (out_runs);
      g_unlink (out_samples);
      if (!tach_csv_append (out, runs, &error))
        {
          fprintf (stderr, "fuzz: loaded runs do not export: %s\n", error->message);
          abort ();
        }
    }
  return 0;
}
