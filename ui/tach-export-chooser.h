/* tach-export-chooser.h: the file chooser of a view's export menu
 * (Explain, Scaling): a file for PNG and SVG, a folder for CSV, then the
 * view's export; a failure goes to the view's "error" signal
 * (heading, GError).  Main thread only. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* Writes @format ("png", "svg" or "csv") of @view to @path. */
typedef gboolean (*TachExportFunc) (GtkWidget *view, const char *format, const char *path,
                                    GError **error);

typedef struct {
  const char     *file_title;    /* the chooser's title for an image */
  const char     *folder_title;  /* and for CSV's folder */
  const char     *basename;      /* "tach-explain": the file's suggested name, less ".png" */
  const char     *error_heading; /* the dialog's heading when the export fails */
  TachExportFunc  export;
} TachExportChooser;

/* Asks where to put @format and exports there; the chooser lives as data
 * of @view until it answers (or @view goes). */
void tach_export_chooser_show (GtkWidget *view, const TachExportChooser *chooser,
                               const char *format);

/* The export menu's button: PNG, SVG and CSV items calling @action
 * ("explain.export") with the format. */
GtkWidget *tach_export_menu_button_new (const char *action, const char *tooltip);

G_END_DECLS
