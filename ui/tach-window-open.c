/* tach-window-open.c: opening results folders (runs.csv + samples.csv,
 * written by tach-cli --csv or Export CSV, here or on another machine):
 * Open… (Ctrl+O), folders given on the command line and folders dropped on
 * the window.  The files are read on a worker thread; their runs join the
 * table, the charts and the comparison like runs made here.
 *
 * TachWindow is one class written in parts by concern (tach-window.c and
 * its six tach-window-*.c, over tach-window-private.h): the parts call one
 * another as one unit, which tools/folder-arrows.py lists.  */
#include "tach-window-private.h"

#include <glib/gi18n.h>

/* What the worker thread hands back. */
typedef struct {
  GPtrArray *paths;     /* char*: the folders asked for */
  GPtrArray *runs;      /* TachRun* loaded */
  GPtrArray *problems;  /* char*: folders that failed, rows skipped */
  GPtrArray *explains;  /* TachExplain* read from the folders' explain.csv */
  char      *explain_source;  /* the explain.csv of the last of them */
  gboolean   explain_shown;   /* the Explain view shows the last of them */
} OpenJob;

static void
open_job_free (OpenJob *job)
{
  g_ptr_array_unref (job->paths);
  g_ptr_array_unref (job->runs);
  g_ptr_array_unref (job->problems);
  g_ptr_array_unref (job->explains);
  g_free (job->explain_source);
  g_free (job);
}

static void
open_thread (GTask        *task,
             gpointer      source_object,
             gpointer      task_data,
             GCancellable *cancellable)
{
  OpenJob *job = task_data;

  for (guint i = 0; i < job->paths->len; i++)
    {
      g_autoptr(GError) error = NULL;

      guint n_explains = job->explains->len;

      if (!tach_results_load (job->paths->pdata[i], job->runs, job->problems, &error))
        g_ptr_array_add (job->problems, g_strdup (error->message));
      g_clear_error (&error);
      /* The explanations saved beside the runs, as the Explain view drew
       * them (issue 42: the folder opened without them, and without a word
       * about a damaged explain.csv). */
      if (!tach_explain_csv_load (job->paths->pdata[i], job->explains, job->problems, &error))
        g_ptr_array_add (job->problems, g_strdup (error->message));
      if (job->explains->len > n_explains)
        {
          g_free (job->explain_source);
          job->explain_source = g_build_filename (job->paths->pdata[i], "explain.csv", NULL);
        }
    }
  g_task_return_boolean (task, TRUE);
}

/* Main thread: the loaded runs join the window.  Those of the last folder
 * opened become the comparison, unless a comparison is running. */
static void
add_loaded_runs (TachWindow *self,
                 GPtrArray  *runs)
{
  gboolean to_sweep = runs->len > 0 && g_queue_is_empty (&self->queue)
                      && !tach_window_get_running (self);

  if (to_sweep)
    {
      g_list_store_remove_all (self->sweep);
      tach_compare_view_clear_rounds (self->compare_view);
    }
  for (guint i = 0; i < runs->len; i++)
    {
      g_autoptr(TachRunObject) object = tach_run_object_new (runs->pdata[i], ++self->next_number,
                                                                  self->next_color++);

      tach_chart_add_series (self->rate_chart, tach_run_object_get_rate_series (object));
      tach_chart_add_series (self->loss_chart, tach_run_object_get_loss_series (object));
      g_list_store_append (self->runs, object);
      if (to_sweep)
        g_list_store_append (self->sweep, object);
    }
  /* The live figures show the last run loaded, unless a run is going. */
  if (runs->len > 0 && !tach_window_get_running (self))
    {
      guint n = g_list_model_get_n_items (G_LIST_MODEL (self->runs));
      g_autoptr(TachRunObject) last = g_list_model_get_item (G_LIST_MODEL (self->runs), n - 1);

      g_set_object (&self->active_run, last);
      g_object_notify (G_OBJECT (self), "active-run");
    }
  tach_run_table_update_speedups (self->run_table);
  tach_chart_data_changed (self->rate_chart);
  tach_chart_data_changed (self->loss_chart);
}

/* Reads each folder's runs.csv and samples.csv on a worker thread and adds
 * their runs to the window.  _finish returns the number of runs added; when
 * a folder could not be read or rows were skipped it also sets @error
 * (TACH_ERROR_DATA), whose message lists each problem by file and line:
 * the runs that could be read are added all the same. */
void
tach_window_open_folders (TachWindow          *self,
                          GFile              **folders,
                          guint                n_folders,
                          GAsyncReadyCallback  callback,
                          gpointer             user_data)
{
  g_autoptr(GTask) task = g_task_new (self, NULL, callback, user_data);
  OpenJob *job = g_new0 (OpenJob, 1);

  g_return_if_fail (TACH_IS_WINDOW (self));

  job->paths = g_ptr_array_new_with_free_func (g_free);
  job->runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  job->problems = g_ptr_array_new_with_free_func (g_free);
  job->explains = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_explain_free);
  for (guint i = 0; i < n_folders; i++)
    {
      char *path = g_file_get_path (folders[i]);

      if (path != NULL)
        g_ptr_array_add (job->paths, path);
      else
        {
          g_autofree char *uri = g_file_get_uri (folders[i]);

          g_ptr_array_add (job->problems,
                           g_strdup_printf (_("%s is not a local folder: copy it to this computer first"), uri));
        }
    }
  g_task_set_source_tag (task, tach_window_open_folders);
  g_task_set_task_data (task, job, (GDestroyNotify) open_job_free);
  if (job->paths->len > 0)
    tach_window_remember_folder (self, job->paths->pdata[job->paths->len - 1]);
  tach_window_set_busy (self, TRUE);
  g_task_run_in_thread (task, open_thread);
}

guint
tach_window_open_folders_finish (TachWindow    *self,
                                 GAsyncResult  *result,
                                 GError       **error)
{
  OpenJob *job;

  g_return_val_if_fail (g_task_is_valid (result, self), 0);

  job = g_task_get_task_data (G_TASK (result));
  tach_window_set_busy (self, FALSE);
  if (!g_task_propagate_boolean (G_TASK (result), error))
    return 0;
  add_loaded_runs (self, job->runs);
  /* The last explanation read, the newest of the last folder's. */
  if (job->explains->len > 0)
    job->explain_shown =
      tach_explain_view_show_loaded (self->explain_view,
                                     g_ptr_array_steal_index (job->explains, job->explains->len - 1),
                                     job->explain_source);
  if (job->problems->len > 0)
    {
      g_autoptr(GString) text = g_string_new (NULL);
      guint shown = MIN (job->problems->len, 8);

      for (guint i = 0; i < shown; i++)
        g_string_append_printf (text, "%s%s", i > 0 ? "\n" : "", (char *) job->problems->pdata[i]);
      if (job->problems->len > shown)
        {
          g_string_append_c (text, '\n');
          g_string_append_printf (text, g_dngettext (NULL, "and %u more problem",
                                                     "and %u more problems",
                                                     job->problems->len - shown),
                                  job->problems->len - shown);
        }
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_DATA, text->str);
    }
  return job->runs->len;
}

/* The problem list's width, and the height past which it scrolls. */
#define LIST_WIDTH 560
#define LIST_HEIGHT 320

/* A dialog that lists what could not be read, one problem a line ("file:
 * line: reason"), left-aligned and scrolled when there are many: in the
 * body of a message dialog they ran together in one centred block. */
static void
show_problems (TachWindow *self,
               guint       n_opened,
               GPtrArray  *problems)
{
  g_autofree char *body = NULL;
  GtkWidget *dialog, *scroller, *list;

  if (self->closing)
    return;
  body = n_opened > 0
         ? g_strdup_printf (g_dngettext (NULL, "%u run opened. These parts were skipped:",
                                         "%u runs opened. These parts were skipped:", n_opened),
                            n_opened)
         : g_strdup (_("No run could be read:"));
  dialog = adw_message_dialog_new (GTK_WINDOW (self),
                                   n_opened > 0 ? _("Some Results Could Not Be Read")
                                                : _("Cannot Open the Results"),
                                   body);
  list = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
  for (guint i = 0; i < problems->len; i++)
    {
      GtkWidget *label = gtk_label_new (problems->pdata[i]);

      gtk_label_set_xalign (GTK_LABEL (label), 0);
      gtk_label_set_wrap (GTK_LABEL (label), TRUE);
      gtk_label_set_wrap_mode (GTK_LABEL (label), PANGO_WRAP_WORD_CHAR);
      gtk_label_set_selectable (GTK_LABEL (label), TRUE);
      gtk_box_append (GTK_BOX (list), label);
    }
  scroller = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (scroller), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_propagate_natural_height (GTK_SCROLLED_WINDOW (scroller), TRUE);
  gtk_scrolled_window_set_max_content_height (GTK_SCROLLED_WINDOW (scroller), LIST_HEIGHT);
  gtk_widget_set_size_request (scroller, LIST_WIDTH, -1);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), list);
  gtk_widget_add_css_class (scroller, "card");
  gtk_widget_set_margin_top (list, 8);
  gtk_widget_set_margin_bottom (list, 8);
  gtk_widget_set_margin_start (list, 12);
  gtk_widget_set_margin_end (list, 12);
  /* The natural height it propagates is the wrapped lines' at their
   * narrowest (a line and a half of them): as tall as they are at the
   * list's width, up to the limit. */
  {
    int natural = 0;

    gtk_widget_measure (list, GTK_ORIENTATION_VERTICAL, LIST_WIDTH, NULL, &natural, NULL, NULL);
    gtk_scrolled_window_set_min_content_height (GTK_SCROLLED_WINDOW (scroller),
                                                MIN (natural, LIST_HEIGHT));
  }
  adw_message_dialog_set_extra_child (ADW_MESSAGE_DIALOG (dialog), scroller);
  adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (dialog), "close", _("_Close"));
  gtk_window_present (GTK_WINDOW (dialog));
}

static void
on_opened (GObject      *source,
           GAsyncResult *result,
           gpointer      user_data)
{
  TachWindow *self = TACH_WINDOW (source);
  g_autoptr(GError) error = NULL;
  guint n = tach_window_open_folders_finish (self, result, &error);
  OpenJob *job = g_task_get_task_data (G_TASK (result));

  /* The error's message lists the first problems; the dialog, all. */
  if (error != NULL)
    show_problems (self, n, job->problems);
  else
    {
      g_autofree char *text =
        g_strdup_printf (job->explain_shown
                         ? g_dngettext (NULL, "Opened %u run and its explanation, under Compare",
                                        "Opened %u runs and their explanation, under Compare", n)
                         : g_dngettext (NULL, "Opened %u run", "Opened %u runs", n), n);

      adw_toast_overlay_add_toast (self->toast_overlay, adw_toast_new (text));
    }
}

/* The window's own opening: the outcome is a toast or a dialog. */
void
tach_window_open (TachWindow  *self,
                  GFile      **folders,
                  guint        n_folders)
{
  tach_window_open_folders (self, folders, n_folders, on_opened, NULL);
}

static void
on_open_chosen (GtkNativeDialog *dialog,
                int              response,
                TachWindow      *self)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GListModel) files = gtk_file_chooser_get_files (GTK_FILE_CHOOSER (dialog));
      g_autoptr(GPtrArray) folders = g_ptr_array_new_with_free_func (g_object_unref);

      for (guint i = 0; i < g_list_model_get_n_items (files); i++)
        g_ptr_array_add (folders, g_list_model_get_item (files, i));
      if (folders->len > 0)
        tach_window_open (self, (GFile **) folders->pdata, folders->len);
    }
  g_clear_object (&self->chooser);
}

static void
open_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *parameter)
{
  TachWindow *self = TACH_WINDOW (widget);

  g_clear_object (&self->chooser);
  self->chooser = gtk_file_chooser_native_new (_("Open Results Folders"), GTK_WINDOW (self),
                                               GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER,
                                               _("_Open"), _("_Cancel"));
  gtk_file_chooser_set_select_multiple (GTK_FILE_CHOOSER (self->chooser), TRUE);
  tach_window_chooser_set_last_folder (self, GTK_FILE_CHOOSER (self->chooser));
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (self->chooser), TRUE);
  g_signal_connect (self->chooser, "response", G_CALLBACK (on_open_chosen), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (self->chooser));
}

/* Folders dropped on the window open like Open… ones. */
static gboolean
on_drop (GtkDropTarget *target,
         const GValue  *value,
         double         x,
         double         y,
         TachWindow    *self)
{
  GSList *list;
  g_autoptr(GPtrArray) folders = g_ptr_array_new ();

  if (!G_VALUE_HOLDS (value, GDK_TYPE_FILE_LIST))
    return FALSE;
  list = g_value_get_boxed (value);
  for (GSList *l = list; l != NULL; l = l->next)
    g_ptr_array_add (folders, l->data);
  if (folders->len == 0)
    return FALSE;
  tach_window_open (self, (GFile **) folders->pdata, folders->len);
  return TRUE;
}

void
tach_window_init_open (TachWindow *self)
{
  GtkDropTarget *target = gtk_drop_target_new (GDK_TYPE_FILE_LIST, GDK_ACTION_COPY);

  g_signal_connect (target, "drop", G_CALLBACK (on_drop), self);
  gtk_widget_add_controller (GTK_WIDGET (self), GTK_EVENT_CONTROLLER (target));
}

void
tach_window_class_init_open (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "win.open", NULL, open_action);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_o, GDK_CONTROL_MASK, "win.open", NULL);
}
