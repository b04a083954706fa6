/* tach-window-notify.c: a desktop notification (GNotification) when a run
 * or a comparison that took longer than notify-after seconds (30 by
 * default) ends while the window is not focused, with its result line.
 *
 * TachWindow is one class written in parts by concern (tach-window.c and
 * its six tach-window-*.c, over tach-window-private.h): the parts call one
 * another as one unit, which tools/folder-arrows.py lists.  */
#include "tach-window-private.h"

#include <glib/gi18n.h>

void
tach_window_job_started (TachWindow *self,
                         gboolean    is_sweep)
{
  self->job_start = g_get_monotonic_time ();
  self->job_is_sweep = is_sweep;
}

/* The line a notification shows: the run's figures, or the comparison's
 * fastest run. */
static char *
result_line (TachWindow    *self,
             TachRunObject *last)
{
  g_autofree char *rate = NULL;
  g_autofree char *loss = NULL;

  if (self->job_is_sweep)
    {
      GListModel *sweep = G_LIST_MODEL (self->sweep);
      g_autoptr(TachRunObject) fastest = NULL;
      guint n = g_list_model_get_n_items (sweep);

      for (guint i = 0; i < n; i++)
        {
          g_autoptr(TachRunObject) run = g_list_model_get_item (sweep, i);
          double r = tach_run_object_get_rate (run);

          if (r > 0 && (fastest == NULL || r > tach_run_object_get_rate (fastest)))
            g_set_object (&fastest, run);
        }
      if (fastest == NULL)
        /* Translators: a comparison ended and none of its runs measured a step. */
        return g_strdup_printf (g_dngettext (NULL, "%u run, none measured", "%u runs, none measured", n), n);
      g_object_get (fastest, "rate-text", &rate, NULL);
      /* Translators: "4 runs; fastest: #3 bilstm · tuned, 2192 ± 30 steps/s". */
      return g_strdup_printf (g_dngettext (NULL, "%u run; fastest: %s, %s steps/s",
                                           "%u runs; fastest: %s, %s steps/s", n),
                              n, tach_run_object_get_title (fastest), rate);
    }

  if (tach_run_object_get_state (last) == TACH_RUN_STATE_FAILED && tach_run_object_get_error (last))
    return g_strdup_printf ("%s: %s", tach_run_object_get_title (last),
                            tach_run_object_get_error (last)->message);
  g_object_get (last, "rate-text", &rate, "loss-text", &loss, NULL);
  /* Translators: "#3 bilstm · tuned: 2192 ± 30 steps/s, final loss 0.6931". */
  return g_strdup_printf (_("%s: %s steps/s, final loss %s"), tach_run_object_get_title (last), rate, loss);
}

/* Whether the user is looking at the window: it has the focus and is
 * neither hidden nor minimised. */
static gboolean
window_in_view (TachWindow *self)
{
  GdkSurface *surface = gtk_native_get_surface (GTK_NATIVE (self));

  if (!gtk_window_is_active (GTK_WINDOW (self)) || !gtk_widget_get_visible (GTK_WIDGET (self)))
    return FALSE;
  return surface == NULL || !GDK_IS_TOPLEVEL (surface)
         || !(gdk_toplevel_get_state (GDK_TOPLEVEL (surface)) & GDK_TOPLEVEL_STATE_MINIMIZED);
}

/* Called when the last run of a run or comparison has ended. */
void
tach_window_job_ended (TachWindow    *self,
                       TachRunObject *last)
{
  double elapsed = (g_get_monotonic_time () - self->job_start) / (double) G_USEC_PER_SEC;
  GApplication *app = G_APPLICATION (gtk_window_get_application (GTK_WINDOW (self)));
  g_autoptr(GNotification) notification = NULL;
  g_autofree char *body = NULL;
  const char *title;

  if (self->job_start == 0 || self->closing || elapsed < self->notify_after
      || window_in_view (self))
    return;
  self->job_start = 0;

  if (self->job_is_sweep)
    title = _("Comparison Finished");
  else if (tach_run_object_get_state (last) == TACH_RUN_STATE_FAILED)
    title = _("Run Failed");
  else if (tach_run_object_get_state (last) == TACH_RUN_STATE_CANCELLED)
    title = _("Run Stopped");
  else
    title = _("Run Finished");
  body = result_line (self, last);

  g_free (self->last_notice);
  self->last_notice = g_strdup_printf ("%s\n%s", title, body);
  /* Without a session bus there is no one to show it (and GLib's
   * notification backends need one). */
  if (app == NULL || g_application_get_dbus_connection (app) == NULL)
    return;
  notification = g_notification_new (title);
  g_notification_set_body (notification, body);
  g_application_send_notification (app, "tach-finished", notification);
}

const char *
tach_window_get_last_notice (TachWindow *self)
{
  g_return_val_if_fail (TACH_IS_WINDOW (self), NULL);
  return self->last_notice;
}
