/* test-gui-layout.c: the window at a desktop's width, at a tiled half of a
 * small laptop's and at a phone's (part of test-gui): at each the window
 * takes the size asked of it (its content's minimum fits), every view's
 * content lies inside it, below the phone's width the settings panel folds
 * away and the run table keeps its narrow columns only.  With
 * TACH_SCREENSHOT_DIR set, each view at each width is kept as a PNG there. */
#include <adwaita.h>

#include "tach-window.h"
#include "tach-run-table.h"
#include "test-gui.h"

/* @widget lies inside the window's width and height. */
static void
assert_inside (TachWindow *window, GtkWidget *widget, const char *what)
{
  graphene_rect_t bounds;

  g_assert_true (gtk_widget_compute_bounds (widget, GTK_WIDGET (window), &bounds));
  if (bounds.origin.x < -0.5 || bounds.origin.y < -0.5
      || bounds.origin.x + bounds.size.width > gtk_widget_get_width (GTK_WIDGET (window)) + 0.5
      || bounds.origin.y + bounds.size.height > gtk_widget_get_height (GTK_WIDGET (window)) + 0.5)
    g_error ("%s at %dx%d: %s is at %.0f,%.0f %.0fx%.0f, past the window's edge", what,
             gtk_widget_get_width (GTK_WIDGET (window)), gtk_widget_get_height (GTK_WIDGET (window)),
             G_OBJECT_TYPE_NAME (widget), bounds.origin.x, bounds.origin.y, bounds.size.width,
             bounds.size.height);
}

/* No mapped widget at or below @widget is given less than its minimum:
 * GTK draws such a widget cut (a paned's side that may shrink lost the
 * chart toolbar off its top at 800 x 600). */
static void
assert_not_squeezed (GtkWidget *widget, const char *what)
{
  graphene_rect_t box;
  int width, height, min_width, min_height;

  if (!gtk_widget_get_mapped (widget) || !gtk_widget_compute_bounds (widget, widget, &box))
    return;
  /* What a scroller holds may be larger than the scroller: it scrolls. */
  if (GTK_IS_VIEWPORT (widget) || GTK_IS_VIEWPORT (gtk_widget_get_parent (widget)))
    goto children;
  /* What measuring counts: the border box and the margins. */
  width = (int) box.size.width + gtk_widget_get_margin_start (widget)
          + gtk_widget_get_margin_end (widget);
  height = (int) box.size.height + gtk_widget_get_margin_top (widget)
           + gtk_widget_get_margin_bottom (widget);
  gtk_widget_measure (widget, GTK_ORIENTATION_HORIZONTAL, -1, &min_width, NULL, NULL, NULL);
  gtk_widget_measure (widget, GTK_ORIENTATION_VERTICAL, width, &min_height, NULL, NULL, NULL);
  /* Nor is it placed past its parent's edge (a paned's side pushed the
   * chart toolbar up off its top at 800 x 600). */
  {
    GtkWidget *parent = gtk_widget_get_parent (widget);
    graphene_rect_t in_parent, parent_box;

    if (gtk_widget_compute_bounds (widget, parent, &in_parent)
        && gtk_widget_compute_bounds (parent, parent, &parent_box)
        && (in_parent.origin.y < parent_box.origin.y - 1
            || in_parent.origin.x < parent_box.origin.x - 1
            || in_parent.origin.y + in_parent.size.height
               > parent_box.origin.y + parent_box.size.height + 1
            || in_parent.origin.x + in_parent.size.width
               > parent_box.origin.x + parent_box.size.width + 1))
      g_error ("%s: %s (in %s) is at %.0f,%.0f %.0fx%.0f, past its parent's %.0fx%.0f", what,
               G_OBJECT_TYPE_NAME (widget), G_OBJECT_TYPE_NAME (parent), in_parent.origin.x,
               in_parent.origin.y, in_parent.size.width, in_parent.size.height,
               parent_box.size.width, parent_box.size.height);
  }
  if (width < min_width || height < min_height)
    g_error ("%s: %s (in %s) has %dx%d, less than its minimum %dx%d", what,
             G_OBJECT_TYPE_NAME (widget), G_OBJECT_TYPE_NAME (gtk_widget_get_parent (widget)),
             width, height, min_width, min_height);
children:
  /* Into the window's own layout, not into GTK's controls, whose parts
   * (a scale's value) GTK sizes its own way. */
  if (!GTK_IS_BOX (widget) && !GTK_IS_PANED (widget) && !GTK_IS_FLOW_BOX (widget)
      && !GTK_IS_FLOW_BOX_CHILD (widget) && !GTK_IS_STACK (widget)
      && !GTK_IS_SCROLLED_WINDOW (widget) && !GTK_IS_VIEWPORT (widget)
      && !g_str_has_prefix (G_OBJECT_TYPE_NAME (widget), "Tach"))
    return;
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    assert_not_squeezed (child, what);
}

/* Alt+1..3 show the three views: the window's key bindings, and what
 * their action does. */
static void
check_view_keys (TachWindow *window, AdwViewStack *stack)
{
  static const char *names[] = { "live", "compare", "scaling" };
  g_autoptr(GListModel) controllers = gtk_widget_observe_controllers (GTK_WIDGET (window));
  guint found = 0;

  for (guint c = 0; c < g_list_model_get_n_items (controllers); c++)
    {
      g_autoptr(GObject) controller = g_list_model_get_item (controllers, c);

      if (!GTK_IS_SHORTCUT_CONTROLLER (controller))
        continue;
      for (guint s = 0; s < g_list_model_get_n_items (G_LIST_MODEL (controller)); s++)
        {
          g_autoptr(GtkShortcut) shortcut = g_list_model_get_item (G_LIST_MODEL (controller), s);
          GtkShortcutAction *action = gtk_shortcut_get_action (shortcut);
          GVariant *args = gtk_shortcut_get_arguments (shortcut);
          g_autofree char *trigger = gtk_shortcut_trigger_to_string (gtk_shortcut_get_trigger (shortcut));

          if (!GTK_IS_NAMED_ACTION (action)
              || g_strcmp0 (gtk_named_action_get_action_name (GTK_NAMED_ACTION (action)),
                            "win.show-view") != 0 || args == NULL)
            continue;
          for (guint i = 0; i < G_N_ELEMENTS (names); i++)
            {
              g_autofree char *key = g_strdup_printf ("<Alt>%u", i + 1);

              if (g_str_equal (trigger, key)
                  && g_str_equal (g_variant_get_string (args, NULL), names[i]))
                {
                  found |= 1u << i;
                  gtk_widget_activate_action_variant (GTK_WIDGET (window), "win.show-view", args);
                  g_assert_cmpstr (adw_view_stack_get_visible_child_name (stack), ==, names[i]);
                }
            }
        }
    }
  g_assert_cmpuint (found, ==, 7);
}

void
test_layout (Fixture *fixture, gconstpointer data)
{
  static const WindowSize sizes[] = { { NULL, 1280, 800 }, { NULL, 800, 600 }, { NULL, 360, 640 } };
  static const char *views[] = { "live", "compare", "scaling" };
  const char *dir = g_getenv ("TACH_SCREENSHOT_DIR");
  TachWindow *window = fixture->window;
  GtkWidget *stack = find_widget_of_type (GTK_WIDGET (window), ADW_TYPE_VIEW_STACK);
  AdwFlap *flap = ADW_FLAP (find_widget_of_type (GTK_WIDGET (window), ADW_TYPE_FLAP));

  const char *workload = data;

  /* A gpt generation of three requests, so that its prefill shows. */
  if (g_strcmp0 (workload, "gpt") == 0)
    {
      gpt_small_generation (tach_window_get_config_panel (window));
      g_object_set (tach_window_get_config_panel (window), "steps", 24, NULL);
    }
  else
    g_object_set (tach_window_get_config_panel (window), "steps", 6, NULL);
  gtk_widget_activate_action (GTK_WIDGET (window), "win.run", NULL);
  g_assert_true (iterate_until (window_idle, window, 120));
  check_view_keys (window, ADW_VIEW_STACK (stack));

  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      WindowSize size = sizes[i];

      size.window = window;
      /* Open beside the views: folding closes it (opened while folded,
       * it covers them until closed, as asked). */
      if (!adw_flap_get_folded (flap))
        g_object_set (window, "show-config", TRUE, NULL);
      gtk_window_set_default_size (GTK_WINDOW (window), size.width, size.height);
      /* A window whose content cannot be that small is left larger. */
      if (!iterate_until (window_has_size, &size, 10))
        g_error ("asked for %dx%d, the window is %dx%d", size.width, size.height,
                 gtk_widget_get_width (GTK_WIDGET (window)), gtk_widget_get_height (GTK_WIDGET (window)));
      iterate_for (0.3);

      /* Narrower than a desktop's window (a tiled half of a laptop's
       * screen, a phone) the panel folds over the views, out of the way
       * until asked for; wider, it sits beside them, and the run table
       * shows all its columns. */
      g_assert_cmpint (adw_flap_get_folded (flap), ==, size.width < 1000);
      if (size.width < 1000)
        g_assert_false (adw_flap_get_reveal_flap (flap));
      g_assert_cmpint (tach_run_table_get_compact (tach_window_get_run_table (window)), ==,
                       size.width < 1000);

      for (guint v = 0; v < G_N_ELEMENTS (views); v++)
        {
          adw_view_stack_set_visible_child_name (ADW_VIEW_STACK (stack), views[v]);
          iterate_for (0.3);
          assert_inside (window, adw_view_stack_get_visible_child (ADW_VIEW_STACK (stack)),
                         views[v]);
          assert_not_squeezed (adw_view_stack_get_visible_child (ADW_VIEW_STACK (stack)),
                               views[v]);
          if (dir != NULL)
            {
              g_autofree char *path = g_strdup_printf ("%s/width-%d-%s%s%s.png", dir, size.width,
                                                       views[v], workload ? "-" : "",
                                                       workload ? workload : "");

              render_window (window, path);
            }
        }
      adw_view_stack_set_visible_child_name (ADW_VIEW_STACK (stack), "live");
    }
}

