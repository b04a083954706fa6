/* test-gui-a11y.c: what a screen reader finds in the window (part of
 * test-gui, run as test-gui-a11y with GTK's test accessibility backend):
 * after a run, a comparison, an explanation and a sweep, every control and
 * chart a person can reach on each view has a name, and each chart a
 * description that carries its figures, read back through GTK's own
 * accessible API.  With TACH_A11Y_LISTING set to a path, the role, type,
 * name and description of each of them is written there. */
#include <adwaita.h>
#include <string.h>

#include "tach-window.h"
#include "tach-compare-view.h"
#include "tach-explain-view.h"
#include "tach-scaling-view.h"
#include "tach-run-object.h"
#include "tach-chart.h"
#include "tach-chart-series.h"
#include "test-gui.h"

/* The string value of @property as GTK's accessibility layer holds it, or
 * NULL where it is unset: gtk_test_accessible_check_property() answers a
 * value that does not match with the one it holds. */
static char *
accessible_string (GtkWidget *widget, GtkAccessibleProperty property)
{
  char *value;

  if (!gtk_test_accessible_has_property (GTK_ACCESSIBLE (widget), property))
    return NULL;
  value = gtk_test_accessible_check_property (GTK_ACCESSIBLE (widget), property, "\x01");
  if (value != NULL && *value == '\0')
    g_clear_pointer (&value, g_free);
  return value;
}

/* Roles a person operates or reads, which a screen reader announces by
 * name.  Decorative images (a GtkImage in a button) take the button's. */
static gboolean
needs_name (GtkWidget *widget)
{
  switch ((int) gtk_accessible_get_accessible_role (GTK_ACCESSIBLE (widget)))
    {
    case GTK_ACCESSIBLE_ROLE_BUTTON:
    case GTK_ACCESSIBLE_ROLE_CHECKBOX:
    case GTK_ACCESSIBLE_ROLE_COMBO_BOX:
    case GTK_ACCESSIBLE_ROLE_LINK:
    case GTK_ACCESSIBLE_ROLE_RADIO:
    case GTK_ACCESSIBLE_ROLE_SEARCH_BOX:
    case GTK_ACCESSIBLE_ROLE_SLIDER:
    case GTK_ACCESSIBLE_ROLE_SPIN_BUTTON:
    case GTK_ACCESSIBLE_ROLE_SWITCH:
    case GTK_ACCESSIBLE_ROLE_TEXT_BOX:
      return TRUE;
    case GTK_ACCESSIBLE_ROLE_IMG:
      return !GTK_IS_IMAGE (widget) && !GTK_IS_PICTURE (widget);
    default:
      return FALSE;
    }
}

/* Whether @widget shows an icon and no text.  GTK 4.8 labels an icon
 * button by its image, which has no name: a screen reader says
 * "GtkImage".  Such a control needs a label of its own. */
static gboolean
shows_icon_only (GtkWidget *widget, gboolean *has_image)
{
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      if (GTK_IS_LABEL (child) && *gtk_label_get_text (GTK_LABEL (child)) != '\0')
        return FALSE;
      if (GTK_IS_IMAGE (child))
        *has_image = TRUE;
      if (!shows_icon_only (child, has_image))
        return FALSE;
    }
  return *has_image;
}

/* Every mapped widget at or below @widget that needs a name and has
 * neither a label nor a labelled-by relation, appended to @unnamed. */
static GString *listing;  /* with TACH_A11Y_LISTING: what a screen reader finds */

static void
list_widget (GtkWidget *widget, const char *label)
{
  g_autoptr(GEnumClass) roles = g_type_class_ref (GTK_TYPE_ACCESSIBLE_ROLE);
  GEnumValue *role = g_enum_get_value (roles, gtk_accessible_get_accessible_role (GTK_ACCESSIBLE (widget)));
  g_autofree char *description = accessible_string (widget, GTK_ACCESSIBLE_PROPERTY_DESCRIPTION);
  g_auto(GStrv) lines = g_strsplit (description ? description : "", "\n", -1);
  g_autofree char *one_line = g_strjoinv (" | ", lines);

  g_string_append_printf (listing, "%s\t%s\t%s\t%s\n", role ? role->value_nick : "?",
                          G_OBJECT_TYPE_NAME (widget), label ? label : "(labelled by a label)",
                          one_line);
}

static void
collect_unnamed (GtkWidget *widget, GString *unnamed)
{
  if (!gtk_widget_get_mapped (widget))
    return;
  /* A drop-down's own button, GTK's inside it, takes the focus: it is
   * checked as any other. */
  if (needs_name (widget))
    {
      g_autofree char *label = accessible_string (widget, GTK_ACCESSIBLE_PROPERTY_LABEL);
      gboolean has_image = FALSE;

      if (listing != NULL)
        list_widget (widget, label);
      /* GTK 4.8 names a button by its text, mnemonic underscore and all. */
      if (label != NULL && GTK_IS_BUTTON (widget) && strchr (label, '_') != NULL
          && gtk_button_get_use_underline (GTK_BUTTON (widget)))
        g_string_append_printf (unnamed, "\n  %s named “%s”", G_OBJECT_TYPE_NAME (widget), label);
      /* GTK 4.8's AT-SPI name joins the label to the label of what labels
       * it, the mnemonic label of a button or the menu button around its
       * button: a screen reader hears "Explain Explain". */
      if (label != NULL
          && gtk_test_accessible_has_relation (GTK_ACCESSIBLE (widget),
                                               GTK_ACCESSIBLE_RELATION_LABELLED_BY)
          && (GTK_IS_MENU_BUTTON (gtk_widget_get_parent (widget))
              || (GTK_IS_BUTTON (widget) && gtk_button_get_use_underline (GTK_BUTTON (widget)))))
        g_string_append_printf (unnamed, "\n  %s named twice, “%s” and by a label",
                                G_OBJECT_TYPE_NAME (widget), label);
      /* A menu button labels the button inside it, the one that takes the
       * focus: named where the menu button is. */
      if (label == NULL && GTK_IS_MENU_BUTTON (gtk_widget_get_parent (widget)))
        {
          g_autofree char *outer = accessible_string (gtk_widget_get_parent (widget),
                                                      GTK_ACCESSIBLE_PROPERTY_LABEL);

          if (outer == NULL)
            g_string_append_printf (unnamed, "\n  %s in an unnamed GtkMenuButton",
                                    G_OBJECT_TYPE_NAME (widget));
        }
      else if (label == NULL
          && (!gtk_test_accessible_has_relation (GTK_ACCESSIBLE (widget),
                                                 GTK_ACCESSIBLE_RELATION_LABELLED_BY)
              || shows_icon_only (widget, &has_image)))
        {
          g_string_append_printf (unnamed, "\n  %s", G_OBJECT_TYPE_NAME (widget));
          for (GtkWidget *up = gtk_widget_get_parent (widget); up != NULL;
               up = gtk_widget_get_parent (up))
            g_string_append_printf (unnamed, " < %s", G_OBJECT_TYPE_NAME (up));
          if (gtk_widget_get_tooltip_text (widget) != NULL)
            g_string_append_printf (unnamed, " (tooltip “%s”)", gtk_widget_get_tooltip_text (widget));
        }
    }
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    collect_unnamed (child, unnamed);
}

static void
assert_all_named (TachWindow *window, const char *view)
{
  g_autoptr(GString) unnamed = g_string_new (NULL);

  adw_view_stack_set_visible_child_name (
    ADW_VIEW_STACK (find_widget_of_type (GTK_WIDGET (window), ADW_TYPE_VIEW_STACK)), view);
  /* A frame or two: the page maps, its charts describe themselves. */
  iterate_for (0.3);
  if (listing != NULL)
    g_string_append_printf (listing, "# %s view\n", view);
  collect_unnamed (GTK_WIDGET (window), unnamed);
  if (unnamed->len > 0)
    g_error ("%s view: reachable without a name:%s", view, unnamed->str);
}

/* @widget's description, checked to be the one GTK holds, with each of
 * the NULL-terminated @parts in it. */
static void
assert_described (GtkWidget *widget, ...)
{
  g_autofree char *description = accessible_string (widget, GTK_ACCESSIBLE_PROPERTY_DESCRIPTION);
  va_list args;

  if (description == NULL)
    g_error ("%s has no description (%d, kept “%s”)", G_OBJECT_TYPE_NAME (widget),
             gtk_test_accessible_has_property (GTK_ACCESSIBLE (widget), GTK_ACCESSIBLE_PROPERTY_DESCRIPTION),
             (char *) g_object_get_data (G_OBJECT (widget), "tach-a11y-description"));
  va_start (args, widget);
  for (const char *part = va_arg (args, const char *); part != NULL;
       part = va_arg (args, const char *))
    if (strstr (description, part) == NULL)
      g_error ("%s: “%s” is not in its description “%s”", G_OBJECT_TYPE_NAME (widget), part,
               description);
  va_end (args);
}

/* Beside @chart, its figures as text that the keyboard reaches: the same
 * as its description. */
static void
assert_figures_beside (GtkWidget *chart)
{
  g_autofree char *description = accessible_string (chart, GTK_ACCESSIBLE_PROPERTY_DESCRIPTION);
  GtkWidget *expander = find_widget_of_type (gtk_widget_get_parent (chart), GTK_TYPE_EXPANDER);
  GtkWidget *figures;

  /* Folded, an expander holds its child out of the widget tree. */
  g_assert_nonnull (expander);
  gtk_expander_set_expanded (GTK_EXPANDER (expander), TRUE);
  figures = find_widget_with_class (expander, "figures-text");
  g_assert_nonnull (figures);
  g_assert_true (gtk_label_get_selectable (GTK_LABEL (figures)));
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (figures)), ==, description);
}

static gboolean
window_stopped (gpointer data)
{
  return !tach_window_get_running (data);
}

static gboolean
explain_stopped (gpointer data)
{
  return !tach_explain_view_get_running (data);
}

static gboolean
scaling_stopped (gpointer data)
{
  return !tach_scaling_view_get_running (data);
}

/* Activates @action and waits, generously, for what it started on @view
 * to end. */
static void
run_to_end (TachWindow *window, const char *action, gboolean (*stopped) (gpointer),
            gpointer view)
{
  gtk_widget_activate_action (GTK_WIDGET (window), action, NULL);
  g_assert_false (stopped (view));
  g_assert_true (iterate_until (stopped, view, 300));
}

void
test_a11y (Fixture *fixture, gconstpointer data)
{
  TachWindow *window = fixture->window;
  TachConfigPanel *panel = tach_window_get_config_panel (window);
  TachExplainView *explain = tach_window_get_explain_view (window);
  TachScalingView *scaling = tach_window_get_scaling_view (window);
  GListModel *sweep = tach_window_get_sweep (window);
  GtkWidget *compare;

  (void) data;
  if (g_strcmp0 (g_getenv ("GTK_A11Y"), "test") != 0)
    {
      g_test_skip ("GTK keeps no accessible properties without GTK_A11Y=test");
      return;
    }
  g_object_set (panel, "steps", 6, NULL);
  if (g_getenv ("TACH_A11Y_LISTING") != NULL)
    listing = g_string_new ("# role\ttype\tname\tdescription\n");

  /* The Live view after one run: its charts say the run's latest figures. */
  gtk_widget_activate_action (GTK_WIDGET (window), "win.run", NULL);
  g_assert_true (iterate_until (window_idle, window, 120));
  assert_all_named (window, "live");
  {
    g_autoptr(TachRunObject) run = g_list_model_get_item (tach_window_get_runs (window), 0);

    assert_described (GTK_WIDGET (tach_window_get_rate_chart (window)),
                      tach_chart_series_get_label (tach_run_object_get_rate_series (run)),
                      "at step", NULL);
  }

  /* Compare: each preset's figures and speed-up, and its phases. */
  run_to_end (window, "win.compare", window_stopped, window);
  assert_all_named (window, "compare");
  compare = find_widget_of_type (GTK_WIDGET (window), TACH_TYPE_COMPARE_VIEW);
  g_assert_nonnull (compare);
  for (guint i = 0; i < g_list_model_get_n_items (sweep); i++)
    {
      g_autoptr(TachRunObject) run = g_list_model_get_item (sweep, i);
      g_autofree char *mode = NULL;

      g_object_get (run, "mode", &mode, NULL);
      assert_described (compare, mode, "×", "ms per step", "Compute: ", NULL);
    }
  /* It follows the figures: the rounds line is read too. */
  tach_compare_view_set_rounds_text (TACH_COMPARE_VIEW (compare), "A rounds line");
  iterate_for (0.3);
  assert_described (compare, "A rounds line", NULL);
  assert_figures_beside (compare);

  /* Explain: each knob's share of the gap. */
  g_assert_true (tach_explain_view_set_presets (explain, "tf1-feed-dict", "tuned"));
  tach_explain_view_set_rounds (explain, 2, 0, 0.05);
  run_to_end (window, "win.explain", explain_stopped, explain);
  g_assert_nonnull (tach_explain_view_get_explain (explain));
  assert_all_named (window, "compare");
  assert_described (GTK_WIDGET (tach_explain_view_get_chart (explain)), "tf1-feed-dict",
                    "tuned", " ms", "95% interval", NULL);
  assert_figures_beside (GTK_WIDGET (tach_explain_view_get_chart (explain)));

  /* Scaling: each preset's speed-up at each value. */
  g_assert_true (tach_scaling_view_set_spec (scaling, "batch", "4..8x2"));
  run_to_end (window, "win.scale", scaling_stopped, scaling);
  g_assert_nonnull (tach_scaling_view_get_grid (scaling));
  assert_all_named (window, "scaling");
  assert_described (GTK_WIDGET (tach_scaling_view_get_chart (scaling)), "batch = 4",
                    "batch = 8", "×", NULL);
  assert_figures_beside (GTK_WIDGET (tach_scaling_view_get_chart (scaling)));
  if (listing != NULL)
    {
      g_autoptr(GError) error = NULL;

      g_assert_true (g_file_set_contents (g_getenv ("TACH_A11Y_LISTING"), listing->str, -1, &error));
      g_string_free (g_steal_pointer (&listing), TRUE);
    }
}
