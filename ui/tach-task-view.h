/* tach-task-view.h: what the views that run a long task in a worker
 * (Explain, Scaling) share: the "running" property and the "error" and
 * "finished" signals of their class, and the task button that turns into
 * Stop while the task runs.  Main thread only. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

enum { TACH_TASK_VIEW_SIGNAL_ERROR, TACH_TASK_VIEW_SIGNAL_FINISHED, TACH_TASK_VIEW_N_SIGNALS };

/* Installs on @klass the read-only boolean property "running" (property
 * id 1; the class's get_property answers it) and fills @signals with
 * "error" (main thread: heading or NULL for a toast, GError) and
 * "finished" (main thread: the task ended, finished, stopped or failed).
 * Returns the property's spec, for notifications. */
GParamSpec *tach_task_view_class_install (GObjectClass *klass, guint *signals);

/* Sets the view's task @button and @progress for @running: "_Stop" on
 * win.stop in the plain style (stopping keeps the figures measured), else
 * @label on @action (through the window's actions: one task on the engine
 * at a time, and Stop stops whatever runs) in the suggested style; the progress shows while it runs. */
void tach_task_button_update (GtkButton *button, GtkProgressBar *progress, gboolean running,
                              const char *label, const char *action);

/* A progress bar for the task's row: with its text, filling the row. */
GtkProgressBar *tach_task_progress_new (void);

G_END_DECLS
