/* bench-window.c: one long run in the desktop app's window, started the way
 * its tests start one (the panel's properties, then the window's "run"
 * action), for bench/memory.sh to measure the window's peak memory with
 * /usr/bin/time -v under xvfb-run.
 *
 * Usage: bench-window STEPS [CSV_DIR]
 *   lstm-lm generate, batch 1, on the CPU, STEPS steps; then, with
 *   CSV_DIR, the window's Export CSV of the finished run into CSV_DIR.
 * It prints the run's state, steps and median steps/s, the window's
 * resident memory (VmRSS, /proc/self/status) at its idle start and after
 * the run, and the renderer that drew it (the app's choice unless
 * GSK_RENDERER says otherwise: tach_application_choose_renderer); exits 1
 * if the run or the export fails.  Idle is the window drawn and settled
 * (its first frames bring in the renderer's surfaces, glyphs and icons).
 * With BENCH_WINDOW_SMAPS=PREFIX it also copies /proc/self/smaps to
 * PREFIX.idle and PREFIX.end, to see by mapping where the memory went.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <adwaita.h>
#include <tach-engine.h>

#include "tach-application.h"
#include "tach-run-object.h"
#include "tach-window.h"

static double
rss_mb (void)
{
  g_autofree char *status = NULL;
  const char *line;

  if (!g_file_get_contents ("/proc/self/status", &status, NULL, NULL)
      || (line = strstr (status, "VmRSS:")) == NULL)
    return -1.0;
  return g_ascii_strtod (line + 6, NULL) / 1024.0;
}

static void
dump_smaps (const char *what)
{
  const char *prefix = g_getenv ("BENCH_WINDOW_SMAPS");
  g_autofree char *text = NULL, *path = NULL;
  gsize len;

  if (prefix == NULL || !g_file_get_contents ("/proc/self/smaps", &text, &len, NULL))
    return;
  path = g_strconcat (prefix, ".", what, NULL);
  g_file_set_contents (path, text, len, NULL);
}

static gboolean
is_mapped (gpointer window)
{
  return gtk_widget_get_mapped (window) && gtk_widget_get_width (window) > 0;
}

/* Drawn and settled: a few frames painted since it was mapped (the first
 * frames bring in the renderer's surfaces, glyph caches and icons), and
 * nothing left to dispatch. */
static gboolean
has_settled (gpointer window)
{
  GdkFrameClock *clock = gtk_widget_get_frame_clock (window);
  gint64 *first = g_object_get_data (window, "bench-first-frame");

  if (first == NULL)
    {
      first = g_new (gint64, 1);
      *first = gdk_frame_clock_get_frame_counter (clock);
      g_object_set_data_full (window, "bench-first-frame", first, g_free);
    }
  return gdk_frame_clock_get_frame_counter (clock) >= *first + 3
         && !g_main_context_pending (NULL);
}

static gboolean
is_idle (gpointer window)
{
  return g_list_model_get_n_items (tach_window_get_runs (window)) > 0
         && !tach_window_get_running (window);
}

static gboolean
has_exported (gpointer window)
{
  return g_object_get_data (window, "bench-exported") != NULL;
}

static void
iterate_until (gboolean (*done) (gpointer), gpointer data)
{
  while (!done (data))
    g_main_context_iteration (NULL, TRUE);
}

static void
on_exported (GObject *source, GAsyncResult *result, gpointer user_data)
{
  GError **error = user_data;

  tach_window_export_csv_finish (TACH_WINDOW (source), result, error);
  g_object_set_data (source, "bench-exported", GINT_TO_POINTER (1));
}

int
main (int argc, char *argv[])
{
  g_autoptr(TachApplication) app = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(TachRunObject) run = NULL;
  TachWindow *window;
  TachConfigPanel *panel;
  guint64 steps;
  double idle_mb;
  TachSummary summary;

  if (argc < 2 || (steps = g_ascii_strtoull (argv[1], NULL, 10)) == 0)
    {
      fprintf (stderr, "usage: bench-window STEPS [CSV_DIR]\n");
      return 2;
    }
  tach_application_choose_renderer ();   /* as main() does */
  gtk_init ();
  adw_init ();
  app = tach_application_new ();
  g_application_set_flags (G_APPLICATION (app),
                           g_application_get_flags (G_APPLICATION (app)) | G_APPLICATION_NON_UNIQUE);
  if (!g_application_register (G_APPLICATION (app), NULL, &error))
    {
      fprintf (stderr, "bench-window: %s\n", error->message);
      return 1;
    }
  window = tach_window_new (GTK_APPLICATION (app));
  gtk_window_present (GTK_WINDOW (window));
  iterate_until (is_mapped, window);

  panel = tach_window_get_config_panel (window);
  g_object_set (panel, "workload", "lstm-lm", "device", "cpu", NULL);
  if (!tach_config_panel_set_knob (panel, "task", "generate", &error))
    {
      fprintf (stderr, "bench-window: %s\n", error->message);
      return 1;
    }
  g_object_set (panel, "batch", 1, "steps", steps, NULL);
  iterate_until (has_settled, window);
  idle_mb = rss_mb ();
  dump_smaps ("idle");

  gtk_widget_activate_action (GTK_WIDGET (window), "win.run", NULL);
  iterate_until (is_idle, window);
  run = g_list_model_get_item (tach_window_get_runs (window), 0);
  tach_run_get_summary (tach_run_object_get_run (run), &summary);
  dump_smaps ("end");
  printf ("window: %s, %u steps, %.1f steps/s median; RSS idle %.1f MB, after the run %.1f MB; "
          "drawn by %s\n",
          tach_run_object_get_state (run) == TACH_RUN_STATE_FINISHED ? "finished" : "not finished",
          tach_run_get_n_samples (tach_run_object_get_run (run)), summary.steps_per_s_median,
          idle_mb, rss_mb (), G_OBJECT_TYPE_NAME (gtk_native_get_renderer (GTK_NATIVE (window))));
  if (tach_run_object_get_state (run) != TACH_RUN_STATE_FINISHED)
    return 1;

  if (argc > 2)
    {
      g_autoptr(GFile) folder = g_file_new_for_path (argv[2]);

      tach_window_export_csv (window, folder, NULL, on_exported, &error);
      iterate_until (has_exported, window);
      if (error != NULL)
        {
          fprintf (stderr, "bench-window: %s\n", error->message);
          return 1;
        }
      printf ("window: exported to %s; RSS %.1f MB\n", argv[2], rss_mb ());
    }
  gtk_window_destroy (GTK_WINDOW (window));
  return 0;
}
