/* bench-open.c: opens a results folder as the window's Open does
 * (tach_results_load) and says what it loaded, for bench/memory.sh to
 * measure the peak RSS of (samples.csv is read a block at a time into each
 * run's compact store).
 *
 * Usage: bench-open DIR */
#include <stdio.h>

#include "tach-engine.h"

int
main (int argc, char **argv)
{
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GError) error = NULL;
  guint64 samples = 0;

  if (argc != 2)
    {
      fprintf (stderr, "usage: bench-open DIR\n");
      return 2;
    }
  if (!tach_results_load (argv[1], runs, problems, &error))
    {
      fprintf (stderr, "bench-open: %s\n", error->message);
      return 1;
    }
  for (guint i = 0; i < problems->len; i++)
    fprintf (stderr, "bench-open: %s\n", (char *) problems->pdata[i]);
  for (guint i = 0; i < runs->len; i++)
    samples += tach_run_get_n_samples (runs->pdata[i]);
  printf ("runs %u samples %" G_GUINT64_FORMAT "\n", runs->len, samples);
  return problems->len == 0 ? 0 : 1;
}
