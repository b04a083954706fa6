/* test-gui-notify.c: the desktop notification of a long run that ends
 * while the window is not focused. */
#include <string.h>
#include <adwaita.h>
#include <tach-engine.h>

#include "tach-run-object.h"
#include "test-gui.h"

static gboolean
run_done (gpointer data)
{
  TachWindow *window = data;

  return g_list_model_get_n_items (tach_window_get_runs (window)) > 0 && !tach_window_get_running (window);
}

/* A run that ends while the window is not focused sends a notification with
 * its result line, once it took longer than notify-after; one that ends in
 * a focused window, or sooner, sends none. */
void
test_notify_finished (Fixture       *fixture,
                      gconstpointer  data)
{
  TachWindow *window = fixture->window;
  g_autoptr(GError) error = NULL;
  const char *notice;

  /* Quicker than the default 30 s: no notification. */
  g_assert_true (tach_window_start_run (window, &error));
  g_assert_no_error (error);
  g_assert_true (iterate_until (run_done, window, 90));
  g_assert_null (tach_window_get_last_notice (window));

  g_object_set (window, "notify-after", 0.0, NULL);
  g_assert_true (tach_window_start_run (window, &error));
  g_assert_no_error (error);
  /* Still in view: no notification. */
  g_assert_true (iterate_until (run_done, window, 90));
  if (gtk_window_is_active (GTK_WINDOW (window)))
    g_assert_null (tach_window_get_last_notice (window));

  /* Out of view (hidden, as minimised or behind another window): the
   * notification, with the run's result line. */
  g_assert_true (tach_window_start_run (window, &error));
  g_assert_no_error (error);
  gtk_widget_set_visible (GTK_WIDGET (window), FALSE);
  g_assert_true (iterate_until (run_done, window, 90));
  notice = tach_window_get_last_notice (window);
  g_assert_nonnull (notice);
  g_test_message ("notification: %s", notice);
  {
    GListModel *runs = tach_window_get_runs (window);
    g_autoptr(TachRunObject) last = g_list_model_get_item (runs, g_list_model_get_n_items (runs) - 1);
    g_autofree char *start = g_strdup_printf ("Run Finished\n%s: ", tach_run_object_get_title (last));

    g_assert_true (g_str_has_prefix (notice, start));
  }
  g_assert_nonnull (strstr (notice, " steps/s, final loss 0."));
}
