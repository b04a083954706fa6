/* tach-export-chooser.c: see tach-export-chooser.h. */
#include "tach-export-chooser.h"
#include "tach-a11y.h"

#include <glib/gi18n.h>

static void
on_export_chosen (GtkNativeDialog *dialog, int response, GtkWidget *view)
{
  const TachExportChooser *chooser = g_object_get_data (G_OBJECT (dialog), "tach-chooser");
  const char *format = g_object_get_data (G_OBJECT (dialog), "tach-format");

  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));
      g_autofree char *path = file != NULL ? g_file_get_path (file) : NULL;
      g_autoptr(GError) error = NULL;

      if (path != NULL && !chooser->export (view, format, path, &error))
        g_signal_emit_by_name (view, "error", chooser->error_heading, error);
    }
  g_object_set_data (G_OBJECT (view), "tach-export-chooser", NULL);
}

void
tach_export_chooser_show (GtkWidget *view, const TachExportChooser *chooser, const char *format)
{
  gboolean csv = g_str_equal (format, "csv");
  GtkRoot *root = gtk_widget_get_root (view);
  GtkFileChooserNative *dialog;

  dialog = gtk_file_chooser_native_new (csv ? chooser->folder_title : chooser->file_title,
                                        GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                        csv ? GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER
                                            : GTK_FILE_CHOOSER_ACTION_SAVE,
                                        _("_Export"), _("_Cancel"));
  if (!csv)
    {
      g_autofree char *name = g_strdup_printf ("%s.%s", chooser->basename, format);

      gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (dialog), name);
    }
  g_object_set_data (G_OBJECT (dialog), "tach-chooser", (gpointer) chooser);
  g_object_set_data_full (G_OBJECT (dialog), "tach-format", g_strdup (format), g_free);
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  g_signal_connect (dialog, "response", G_CALLBACK (on_export_chosen), view);
  /* Replaces (and so drops) an earlier chooser still open. */
  g_object_set_data_full (G_OBJECT (view), "tach-export-chooser", dialog, g_object_unref);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

GtkWidget *
tach_export_menu_button_new (const char *action, const char *tooltip)
{
  g_autoptr(GMenu) menu = g_menu_new ();
  g_autofree char *png = g_strdup_printf ("%s::png", action);
  g_autofree char *svg = g_strdup_printf ("%s::svg", action);
  g_autofree char *csv = g_strdup_printf ("%s::csv", action);
  GtkWidget *button = gtk_menu_button_new ();

  g_menu_append (menu, _("Export as _PNG…"), png);
  g_menu_append (menu, _("Export as _SVG…"), svg);
  g_menu_append (menu, _("Export _CSV…"), csv);
  gtk_menu_button_set_icon_name (GTK_MENU_BUTTON (button), "document-save-symbolic");
  gtk_widget_set_tooltip_text (button, tooltip);
  /* An icon alone names nothing, and GTK 4.8 reads no tooltip. */
  tach_a11y_set_label (button, tooltip);
  gtk_menu_button_set_menu_model (GTK_MENU_BUTTON (button), G_MENU_MODEL (menu));
  return button;
}
