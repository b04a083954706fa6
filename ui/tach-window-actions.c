/* tach-window-actions.c: the window's actions: run, stop, compare presets,
 * clear, and the CSV and chart exports with their file choosers.
 *
 * TachWindow is one class written in parts by concern (tach-window.c and
 * its six tach-window-*.c, over tach-window-private.h): the parts call one
 * another as one unit, which tools/folder-arrows.py lists.  */
#include "tach-window-private.h"

#include <glib/gi18n.h>

/* Alt+1..3: the view named by @parameter. */
static void
show_view_action (GtkWidget  *widget,
                  const char *action_name,
                  GVariant   *parameter)
{
  (void) action_name;
  adw_view_stack_set_visible_child_name (TACH_WINDOW (widget)->view_stack,
                                         g_variant_get_string (parameter, NULL));
}

static void
run_action (GtkWidget  *widget,
            const char *action_name,
            GVariant   *parameter)
{
  g_autoptr(GError) error = NULL;

  if (!tach_window_start_run (TACH_WINDOW (widget), &error))
    tach_window_show_error (TACH_WINDOW (widget), _("Cannot Start the Run"), error);
}

static void
stop_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *parameter)
{
  tach_window_stop (TACH_WINDOW (widget));
}

static void
compare_action (GtkWidget  *widget,
                const char *action_name,
                GVariant   *parameter)
{
  g_autoptr(GError) error = NULL;

  if (!tach_window_compare_presets (TACH_WINDOW (widget), &error))
    tach_window_show_error (TACH_WINDOW (widget), _("Cannot Compare the Presets"), error);
}

/* ---------------------------------------------------------------- explain */

TachExplainView *
tach_window_get_explain_view (TachWindow *self)
{
  g_return_val_if_fail (TACH_IS_WINDOW (self), NULL);
  return self->explain_view;
}

static const TachConfig *
explain_base (gpointer user_data)
{
  return tach_config_panel_get_config (TACH_WINDOW (user_data)->config_panel);
}

static void
on_explain_error (TachWindow *self, const char *heading, const GError *error)
{
  tach_window_show_error (self, heading, error);
}

void
tach_window_init_explain (TachWindow *self)
{
  tach_explain_view_set_base_func (self->explain_view, explain_base, self);
  /* The view can outlive the window: an explanation being stopped holds
   * it until its thread ends. */
  g_signal_connect_object (self->explain_view, "notify::running",
                           G_CALLBACK (tach_window_update_actions), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->explain_view, "error", G_CALLBACK (on_explain_error), self,
                           G_CONNECT_SWAPPED);
  /* The presets follow the panel's workload whenever the view is shown. */
  g_signal_connect_swapped (self->explain_view, "map",
                            G_CALLBACK (tach_explain_view_refresh_presets), self->explain_view);
}

/* ---------------------------------------------------------------- scaling */

TachScalingView *
tach_window_get_scaling_view (TachWindow *self)
{
  g_return_val_if_fail (TACH_IS_WINDOW (self), NULL);
  return self->scaling_view;
}

void
tach_window_init_scaling (TachWindow *self)
{
  /* The same base, errors and running state as Explain's. */
  tach_scaling_view_set_base_func (self->scaling_view, explain_base, self);
  g_signal_connect_object (self->scaling_view, "notify::running",
                           G_CALLBACK (tach_window_update_actions), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->scaling_view, "error", G_CALLBACK (on_explain_error), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect_swapped (self->scaling_view, "map",
                            G_CALLBACK (tach_scaling_view_refresh), self->scaling_view);
  /* Its knobs are the workload's and the task's: the panel beside it may
   * change them while it shows. */
  g_signal_connect_object (self->config_panel, "notify::workload",
                           G_CALLBACK (tach_scaling_view_refresh), self->scaling_view,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (self->config_panel, "notify::task",
                           G_CALLBACK (tach_scaling_view_refresh), self->scaling_view,
                           G_CONNECT_SWAPPED);
}

/* Starts @start on @view in the page @page, as Compare: one thing on the
 * engine at a time. */
static void
start_in_page (TachWindow *self, const char *page, gboolean (*start) (gpointer, GError **),
               gpointer view, const char *heading)
{
  g_autoptr(GError) error = NULL;

  if (tach_window_get_running (self))
    g_set_error_literal (&error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                         _("A run is already in progress: stop it first"));
  else
    {
      adw_view_stack_set_visible_child_name (self->view_stack, page);
      start (view, &error);
    }
  if (error != NULL)
    tach_window_show_error (self, heading, error);
}

static gboolean
start_scaling (gpointer view, GError **error)
{
  return tach_scaling_view_start (view, error);
}

static gboolean
start_explain (gpointer view, GError **error)
{
  return tach_explain_view_start (view, error);
}

static void
scale_action (GtkWidget  *widget,
              const char *action_name,
              GVariant   *parameter)
{
  TachWindow *self = TACH_WINDOW (widget);

  start_in_page (self, "scaling", start_scaling, self->scaling_view, _("Cannot Run the Sweep"));
}

static void
explain_action (GtkWidget  *widget,
                const char *action_name,
                GVariant   *parameter)
{
  TachWindow *self = TACH_WINDOW (widget);

  start_in_page (self, "compare", start_explain, self->explain_view, _("Cannot Explain the Gap"));
}

/* The baseline of the run table (A) against the run selected in it (B). */
gboolean
tach_window_explain_runs (TachWindow  *self,
                          GError     **error)
{
  TachRunObject *a = tach_run_table_get_baseline (self->run_table);
  TachRunObject *b = tach_run_table_get_selected (self->run_table);

  g_return_val_if_fail (TACH_IS_WINDOW (self), FALSE);
  if (tach_window_get_running (self))
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                           _("A run is already in progress: stop it first"));
      return FALSE;
    }
  if (a == NULL || b == NULL || a == b)
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                           _("Pick a baseline in the run table and select another run to explain "
                             "the gap between them"));
      return FALSE;
    }
  adw_view_stack_set_visible_child_name (self->view_stack, "compare");
  return tach_explain_view_start_configs (self->explain_view,
                                          tach_run_get_config (tach_run_object_get_run (a)),
                                          tach_run_object_get_title (a),
                                          tach_run_get_config (tach_run_object_get_run (b)),
                                          tach_run_object_get_title (b), error);
}

static void
explain_runs_action (GtkWidget  *widget,
                     const char *action_name,
                     GVariant   *parameter)
{
  g_autoptr(GError) error = NULL;

  if (!tach_window_explain_runs (TACH_WINDOW (widget), &error))
    tach_window_show_error (TACH_WINDOW (widget), _("Cannot Explain the Gap"), error);
}

static void
clear_runs_action (GtkWidget  *widget,
                   const char *action_name,
                   GVariant   *parameter)
{
  TachWindow *self = TACH_WINDOW (widget);

  for (guint i = g_list_model_get_n_items (G_LIST_MODEL (self->runs)); i > 0; i--)
    {
      g_autoptr(TachRunObject) run = g_list_model_get_item (G_LIST_MODEL (self->runs), i - 1);
      guint position;

      if (tach_run_object_is_active (run))
        continue;
      tach_chart_remove_series (self->rate_chart, tach_run_object_get_rate_series (run));
      tach_chart_remove_series (self->loss_chart, tach_run_object_get_loss_series (run));
      if (g_list_store_find (self->sweep, run, &position))
        g_list_store_remove (self->sweep, position);
      g_list_store_remove (self->runs, i - 1);
    }
  self->next_color = 0;
}

/* ------------------------------------------------------------ CSV export */

static void
export_csv_thread (GTask        *task,
                   gpointer      source_object,
                   gpointer      task_data,
                   GCancellable *cancellable)
{
  GPtrArray *runs = task_data;
  const char *dir = g_object_get_data (G_OBJECT (task), "tach-dir");
  gboolean tensorboard = g_task_get_source_tag (task) == tach_window_export_tensorboard;
  GError *error = NULL;

  if (tensorboard ? tach_tensorboard_export (dir, runs, NULL, &error)
                  : tach_csv_append (dir, runs, &error))
    g_task_return_int (task, runs->len);
  else
    g_task_return_error (task, error);
}

/* Writes every finished or stopped run on a worker thread, as CSV or as
 * TensorBoard event files (@tag says which); the runs are done, so the
 * engine no longer touches them. */
static void
export_runs (TachWindow          *self,
             gpointer             tag,
             GFile               *folder,
             GCancellable        *cancellable,
             GAsyncReadyCallback  callback,
             gpointer             user_data)
{
  g_autoptr(GTask) task = g_task_new (self, cancellable, callback, user_data);
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  guint n = g_list_model_get_n_items (G_LIST_MODEL (self->runs));

  g_task_set_source_tag (task, tag);
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(TachRunObject) run = g_list_model_get_item (G_LIST_MODEL (self->runs), i);
      TachRunState state = tach_run_object_get_state (run);

      if (!tach_run_object_is_active (run)
          && (state == TACH_RUN_STATE_FINISHED || state == TACH_RUN_STATE_CANCELLED))
        g_ptr_array_add (runs, tach_run_ref (tach_run_object_get_run (run)));
    }
  if (runs->len == 0)
    {
      g_task_return_new_error (task, TACH_ERROR, TACH_ERROR_IO, "%s",
                               _("There are no finished runs to export yet"));
      return;
    }

  g_object_set_data_full (G_OBJECT (task), "tach-dir", g_file_get_path (folder), g_free);
  g_task_set_task_data (task, g_steal_pointer (&runs), (GDestroyNotify) g_ptr_array_unref);
  tach_window_set_busy (self, TRUE);
  g_task_run_in_thread (task, export_csv_thread);
}

/* Appends every finished or stopped run to FOLDER/runs.csv and
 * FOLDER/samples.csv. */
void
tach_window_export_csv (TachWindow          *self,
                        GFile               *folder,
                        GCancellable        *cancellable,
                        GAsyncReadyCallback  callback,
                        gpointer             user_data)
{
  export_runs (self, tach_window_export_csv, folder, cancellable, callback, user_data);
}

/* Writes every finished or stopped run as a TensorBoard event file under
 * FOLDER; _finish is tach_window_export_csv_finish. */
void
tach_window_export_tensorboard (TachWindow          *self,
                                GFile               *folder,
                                GCancellable        *cancellable,
                                GAsyncReadyCallback  callback,
                                gpointer             user_data)
{
  export_runs (self, tach_window_export_tensorboard, folder, cancellable, callback, user_data);
}

gboolean
tach_window_export_csv_finish (TachWindow    *self,
                               GAsyncResult  *result,
                               GError       **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);

  if (g_task_get_task_data (G_TASK (result)) != NULL)
    tach_window_set_busy (self, FALSE);
  return g_task_propagate_int (G_TASK (result), error) > 0;
}

static void
on_csv_exported (GObject      *source,
                 GAsyncResult *result,
                 gpointer      user_data)
{
  TachWindow *self = TACH_WINDOW (source);
  g_autoptr(GFile) folder = user_data;
  g_autoptr(GError) error = NULL;

  if (!tach_window_export_csv_finish (self, result, &error))
    tach_window_show_error (self, _("Cannot Export the Runs"), error);
  else
    {
      g_autofree char *name = g_file_get_parse_name (folder);
      g_autofree char *text = g_strdup_printf (_("Runs exported to %s"), name);

      adw_toast_overlay_add_toast (self->toast_overlay, adw_toast_new (text));
    }
}

static void
on_csv_folder_chosen (GtkNativeDialog *dialog,
                      int              response,
                      TachWindow      *self)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      GFile *folder = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));

      if (folder != NULL && g_file_peek_path (folder) != NULL)
        tach_window_remember_folder (self, g_file_peek_path (folder));
      if (folder != NULL && g_object_get_data (G_OBJECT (dialog), "tach-tensorboard") != NULL)
        tach_window_export_tensorboard (self, folder, NULL, on_csv_exported, folder);
      else if (folder != NULL)
        tach_window_export_csv (self, folder, NULL, on_csv_exported, folder);
    }
  g_clear_object (&self->chooser);
}

static void
export_csv_action (GtkWidget  *widget,
                   const char *action_name,
                   GVariant   *parameter)
{
  TachWindow *self = TACH_WINDOW (widget);
  gboolean tensorboard = g_str_equal (action_name, "win.export-tensorboard");

  g_clear_object (&self->chooser);
  self->chooser = gtk_file_chooser_native_new (tensorboard ? _("Export Runs for TensorBoard")
                                                           : _("Export Runs to a Folder"),
                                               GTK_WINDOW (self),
                                               GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER,
                                               _("_Export"), _("_Cancel"));
  if (tensorboard)
    g_object_set_data (G_OBJECT (self->chooser), "tach-tensorboard", GINT_TO_POINTER (1));
  tach_window_chooser_set_last_folder (self, GTK_FILE_CHOOSER (self->chooser));
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (self->chooser), TRUE);
  g_signal_connect (self->chooser, "response", G_CALLBACK (on_csv_folder_chosen), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (self->chooser));
}

void
tach_window_remember_folder (TachWindow *self,
                             const char *path)
{
  if (g_strcmp0 (self->last_folder, path) == 0)
    return;
  g_free (self->last_folder);
  self->last_folder = g_strdup (path);
  if (self->settings != NULL)
    g_settings_set_string (self->settings, "last-folder", path);
}

void
tach_window_chooser_set_last_folder (TachWindow     *self,
                                     GtkFileChooser *chooser)
{
  g_autoptr(GFile) folder = NULL;

  if (self->last_folder == NULL || !g_file_test (self->last_folder, G_FILE_TEST_IS_DIR))
    return;
  folder = g_file_new_for_path (self->last_folder);
  gtk_file_chooser_set_current_folder (chooser, folder, NULL);
}

/* ---------------------------------------------------------- chart export */

gboolean
tach_window_export_charts (TachWindow  *self,
                           const char  *path,
                           GError     **error)
{
  TachChart *charts[] = { self->rate_chart, self->loss_chart };

  g_return_val_if_fail (TACH_IS_WINDOW (self), FALSE);
  return tach_chart_export (charts, G_N_ELEMENTS (charts), path, 1200, 420, error);
}

static void
on_chart_file_chosen (GtkNativeDialog *dialog,
                      int              response,
                      TachWindow      *self)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));
      g_autofree char *path = file ? g_file_get_path (file) : NULL;
      g_autoptr(GError) error = NULL;

      if (path == NULL)
        return;
      if (!tach_window_export_charts (self, path, &error))
        tach_window_show_error (self, _("Cannot Save the Charts"), error);
      else
        {
          g_autofree char *name = g_file_get_parse_name (file);
          g_autofree char *text = g_strdup_printf (_("Charts saved to %s"), name);

          adw_toast_overlay_add_toast (self->toast_overlay, adw_toast_new (text));
        }
    }
  g_clear_object (&self->chooser);
}

static void
export_chart_action (GtkWidget  *widget,
                     const char *action_name,
                     GVariant   *parameter)
{
  TachWindow *self = TACH_WINDOW (widget);
  const char *format = g_variant_get_string (parameter, NULL);
  gboolean svg = g_str_equal (format, "svg");
  g_autoptr(GtkFileFilter) filter = gtk_file_filter_new ();

  g_clear_object (&self->chooser);
  self->chooser = gtk_file_chooser_native_new (svg ? _("Export Charts as SVG") : _("Export Charts as PNG"),
                                               GTK_WINDOW (self), GTK_FILE_CHOOSER_ACTION_SAVE,
                                               _("_Save"), _("_Cancel"));
  gtk_file_filter_set_name (filter, svg ? _("SVG images") : _("PNG images"));
  gtk_file_filter_add_mime_type (filter, svg ? "image/svg+xml" : "image/png");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (self->chooser), filter);
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (self->chooser),
                                     svg ? "tach-charts.svg" : "tach-charts.png");
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (self->chooser), TRUE);
  g_signal_connect (self->chooser, "response", G_CALLBACK (on_chart_file_chosen), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (self->chooser));
}

void
tach_window_class_init_actions (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "win.run", NULL, run_action);
  gtk_widget_class_install_action (widget_class, "win.stop", NULL, stop_action);
  gtk_widget_class_install_action (widget_class, "win.compare", NULL, compare_action);
  gtk_widget_class_install_action (widget_class, "win.explain", NULL, explain_action);
  gtk_widget_class_install_action (widget_class, "win.scale", NULL, scale_action);
  gtk_widget_class_install_action (widget_class, "win.explain-runs", NULL, explain_runs_action);
  gtk_widget_class_install_action (widget_class, "win.clear-runs", NULL, clear_runs_action);
  gtk_widget_class_install_action (widget_class, "win.export-csv", NULL, export_csv_action);
  gtk_widget_class_install_action (widget_class, "win.export-tensorboard", NULL, export_csv_action);
  gtk_widget_class_install_action (widget_class, "win.export-chart", "s", export_chart_action);
  gtk_widget_class_install_property_action (widget_class, "win.log-scale", "log-scale");
  gtk_widget_class_install_property_action (widget_class, "win.by-time", "by-time");
  gtk_widget_class_install_property_action (widget_class, "win.toggle-config", "show-config");
  gtk_widget_class_install_action (widget_class, "win.show-view", "s", show_view_action);

  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_r, GDK_CONTROL_MASK, "win.run", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Escape, 0, "win.stop", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_e, GDK_CONTROL_MASK, "win.export-csv", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_r, GDK_CONTROL_MASK | GDK_SHIFT_MASK,
                                       "win.compare", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_F9, 0, "win.toggle-config", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_1, GDK_ALT_MASK, "win.show-view", "s", "live");
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_2, GDK_ALT_MASK, "win.show-view", "s", "compare");
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_3, GDK_ALT_MASK, "win.show-view", "s", "scaling");
}
