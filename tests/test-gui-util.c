/* test-gui-util.c: what the files of test-gui share besides the
 * fixture: iterating the main loop until something happens (bounded, to
 * catch a hang), finding widgets and labels in the window, rendering it to
 * a PNG, waiting for an export, and the window's message dialog.
 */
#include <math.h>
#include <string.h>
#include <adwaita.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <tach-engine.h>

#include "tach-run-object.h"
#include "tach-chart-draw.h"
#include "tach-compare-view.h"
#include "test-gui.h"

/* Iterates the main loop until @done says so or @seconds pass. */
gboolean
iterate_until (gboolean (*done) (gpointer),
               gpointer   data,
               double     seconds)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) (seconds * G_USEC_PER_SEC);

  while (!done (data))
    {
      if (g_get_monotonic_time () > deadline)
        return FALSE;
      g_main_context_iteration (NULL, FALSE);
      g_usleep (1000);
    }
  return TRUE;
}

gboolean
window_idle (gpointer data)
{
  TachWindow *window = data;
  GListModel *runs = tach_window_get_runs (window);

  return g_list_model_get_n_items (runs) > 0 && !tach_window_get_running (window);
}

static gboolean
never (gpointer data)
{
  (void) data;
  return FALSE;
}

void
iterate_for (double seconds)
{
  iterate_until (never, NULL, seconds);
}

GtkWidget *
find_widget_of_type (GtkWidget *widget,
                     GType      type)
{
  if (G_TYPE_CHECK_INSTANCE_TYPE (widget, type))
    return widget;
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *found = find_widget_of_type (child, type);

      if (found != NULL)
        return found;
    }
  return NULL;
}

void
on_opened (GObject      *source,
           GAsyncResult *result,
           gpointer      user_data)
{
  GError **error = user_data;
  guint n = tach_window_open_folders_finish (TACH_WINDOW (source), result, error);

  g_object_set_data (source, "test-opened", GUINT_TO_POINTER (n + 1));
}

gboolean
opened (gpointer data)
{
  return g_object_get_data (data, "test-opened") != NULL;
}

gboolean
window_has_runs (gpointer data)
{
  TachWindow *window = data;
  guint want = GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (window), "test-want-runs"));

  return g_list_model_get_n_items (tach_window_get_runs (window)) >= want
         && !tach_window_get_running (window);
}

void
run_and_wait (TachWindow *window, guint want)
{
  g_object_set_data (G_OBJECT (window), "test-want-runs", GUINT_TO_POINTER (want));
  gtk_widget_activate_action (GTK_WIDGET (window), "win.run", NULL);
  g_assert_true (iterate_until (window_has_runs, window, 120));
}

/* The window is the size asked, less its client-side decorations' edge
 * (10 px under Xvfb without a window manager), no larger. */
gboolean
window_has_size (gpointer data)
{
  const WindowSize *size = data;
  int width = gtk_widget_get_width (GTK_WIDGET (size->window));
  int height = gtk_widget_get_height (GTK_WIDGET (size->window));

  return width <= size->width && width >= size->width - 20
         && height <= size->height && height >= size->height - 20;
}

gboolean
window_mapped (gpointer data)
{
  return gtk_widget_get_mapped (data) && gtk_widget_get_width (data) > 0;
}

void
on_exported (GObject      *source,
             GAsyncResult *result,
             gpointer      user_data)
{
  GError **error = user_data;
  gboolean ok = tach_window_export_csv_finish (TACH_WINDOW (source), result, error);

  g_assert_true (ok == (*error == NULL));
  g_object_set_data (source, "test-exported", GINT_TO_POINTER (1));
}

gboolean
exported (gpointer data)
{
  return g_object_get_data (data, "test-exported") != NULL;
}

guint
count_lines (const char *path)
{
  g_autofree char *contents = NULL;
  g_autoptr(GError) error = NULL;
  guint n = 0;

  g_assert_true (g_file_get_contents (path, &contents, NULL, &error));
  g_assert_no_error (error);
  for (const char *p = contents; *p; p++)
    n += *p == '\n';
  return n;
}

static void
mark_drawn (gboolean *drawn)
{
  *drawn = TRUE;
}

static gboolean
is_drawn (gpointer data)
{
  return *(gboolean *) data;
}

void
render_window (TachWindow *window,
               const char *name)
{
  /* The window's content: a toplevel's own paintable draws nothing. */
  GtkWidget *content = adw_application_window_get_content (ADW_APPLICATION_WINDOW (window));
  g_autoptr(GdkPaintable) paintable = gtk_widget_paintable_new (content);
  g_autoptr(GtkSnapshot) snapshot = gtk_snapshot_new ();
  g_autoptr(GskRenderNode) node = NULL;
  g_autoptr(GdkTexture) texture = NULL;
  g_autofree char *path = g_path_is_absolute (name) ? g_strdup (name)
                                                    : g_test_build_filename (G_TEST_BUILT, name, NULL);
  GskRenderer *renderer = gtk_native_get_renderer (GTK_NATIVE (window));
  gboolean drawn = FALSE;
  GdkRGBA background;
  int width = gtk_widget_get_width (content);
  int height = gtk_widget_get_height (content);

  /* The paintable takes the widget's picture at its next frame. */
  g_signal_connect_swapped (paintable, "invalidate-contents", G_CALLBACK (mark_drawn), &drawn);
  gtk_widget_queue_draw (content);
  g_assert_true (iterate_until (is_drawn, &drawn, 60));
  /* One more frame, so that style changes queued by that one show too. */
  drawn = FALSE;
  gtk_widget_queue_draw (content);
  g_assert_true (iterate_until (is_drawn, &drawn, 60));
  /* The window, not its content, paints the background. */
  gdk_rgba_parse (&background, adw_style_manager_get_dark (adw_style_manager_get_default ())
                               ? "#242424" : "#fafafa");
  gtk_snapshot_append_color (snapshot, &background, &GRAPHENE_RECT_INIT (0, 0, width, height));
  gdk_paintable_snapshot (paintable, snapshot, width, height);
  node = gtk_snapshot_free_to_node (g_steal_pointer (&snapshot));
  g_assert_nonnull (node);
  texture = gsk_renderer_render_texture (renderer, node, &GRAPHENE_RECT_INIT (0, 0, width, height));
  g_assert_cmpint (gdk_texture_get_width (texture), ==, width);
  g_assert_true (gdk_texture_save_to_png (texture, path));
  g_test_message ("window rendered to %s", path);
}

/* The first widget at or below @widget that @match accepts, or NULL. */
static GtkWidget *
find_widget (GtkWidget  *widget,
             gboolean  (*match) (GtkWidget *, const char *),
             const char *data)
{
  if (match (widget, data))
    return widget;
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *found = find_widget (child, match, data);

      if (found != NULL)
        return found;
    }
  return NULL;
}

static gboolean
has_class (GtkWidget *widget, const char *css_class)
{
  return gtk_widget_has_css_class (widget, css_class);
}

static gboolean
has_css_name (GtkWidget *widget, const char *name)
{
  return g_str_equal (gtk_widget_get_css_name (widget), name);
}

GtkWidget *
find_widget_with_class (GtkWidget  *widget,
                        const char *css_class)
{
  return find_widget (widget, has_class, css_class);
}

GtkWidget *
find_widget_with_css_name (GtkWidget  *widget,
                           const char *name)
{
  return find_widget (widget, has_css_name, name);
}

GtkWidget *
scrolled_child (GtkWidget *scroller)
{
  GtkWidget *child = gtk_scrolled_window_get_child (GTK_SCROLLED_WINDOW (scroller));

  return GTK_IS_VIEWPORT (child) ? gtk_viewport_get_child (GTK_VIEWPORT (child)) : child;
}

static gboolean
is_label (GtkWidget *widget, const char *text)
{
  return GTK_IS_LABEL (widget) && g_strcmp0 (gtk_label_get_label (GTK_LABEL (widget)), text) == 0;
}

GtkWidget *
find_label (GtkWidget *widget, const char *text)
{
  return find_widget (widget, is_label, text);
}

static gboolean
is_label_prefix (GtkWidget *widget, const char *prefix)
{
  return GTK_IS_LABEL (widget) && g_str_has_prefix (gtk_label_get_label (GTK_LABEL (widget)), prefix);
}

GtkWidget *
find_label_prefix (GtkWidget *widget, const char *prefix)
{
  return find_widget (widget, is_label_prefix, prefix);
}

static gboolean
is_label_holding (GtkWidget *widget, const char *text)
{
  return GTK_IS_LABEL (widget) && gtk_widget_get_mapped (widget)
         && strstr (gtk_label_get_text (GTK_LABEL (widget)), text) != NULL;
}

GtkWidget *
find_label_holding (GtkWidget *widget, const char *text)
{
  return find_widget (widget, is_label_holding, text);
}

AdwMessageDialog *
find_message_dialog (TachWindow *window)
{
  GListModel *toplevels = gtk_window_get_toplevels ();

  for (guint i = 0; i < g_list_model_get_n_items (toplevels); i++)
    {
      g_autoptr(GtkWindow) toplevel = g_list_model_get_item (toplevels, i);

      if (ADW_IS_MESSAGE_DIALOG (toplevel)
          && gtk_window_get_transient_for (toplevel) == GTK_WINDOW (window))
        return ADW_MESSAGE_DIALOG (toplevel);
    }
  return NULL;
}
