/* tach-task-view.c: the class parts and the task button that the Explain
 * and Scaling views share. */
#include "tach-task-view.h"
#include "tach-a11y.h"

#include <glib/gi18n.h>

GParamSpec *
tach_task_view_class_install (GObjectClass *klass, guint *signals)
{
  GParamSpec *running =
    g_param_spec_boolean ("running", NULL, NULL, FALSE,
                          G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);

  g_object_class_install_property (klass, 1, running);
  signals[TACH_TASK_VIEW_SIGNAL_ERROR] =
    g_signal_new ("error", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                  G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_ERROR);
  signals[TACH_TASK_VIEW_SIGNAL_FINISHED] =
    g_signal_new ("finished", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                  G_TYPE_NONE, 0);
  return running;
}

void
tach_task_button_update (GtkButton      *button,
                         GtkProgressBar *progress,
                         gboolean        running,
                         const char     *label,
                         const char     *action)
{
  GtkWidget *widget = GTK_WIDGET (button);

  gtk_button_set_label (button, running ? _("_Stop") : label);
  tach_a11y_name_by_mnemonic (widget);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (button), running ? "win.stop" : action);
  /* Stop keeps what was measured: not a destructive action's style. */
  if (running)
    gtk_widget_remove_css_class (widget, "suggested-action");
  else
    gtk_widget_add_css_class (widget, "suggested-action");
  gtk_widget_set_visible (GTK_WIDGET (progress), running);
}

GtkProgressBar *
tach_task_progress_new (void)
{
  GtkProgressBar *progress = GTK_PROGRESS_BAR (gtk_progress_bar_new ());

  gtk_progress_bar_set_show_text (progress, TRUE);
  gtk_widget_set_hexpand (GTK_WIDGET (progress), TRUE);
  gtk_widget_set_valign (GTK_WIDGET (progress), GTK_ALIGN_CENTER);
  return progress;
}
