/* test-gui-fit.c: what a window of 1280 x 800 keeps inside it (part of
 * test-gui, issue 42): Explain's progress line wraps inside the view
 * instead of widening it. */
#include <adwaita.h>
#include <string.h>

#include "tach-window.h"
#include "tach-explain-view.h"
#include "test-gui.h"

static void
set_size (TachWindow *window, int width, int height)
{
  WindowSize size = { window, width, height };

  gtk_window_set_default_size (GTK_WINDOW (window), width, height);
  if (!iterate_until (window_has_size, &size, 10))
    g_error ("asked for %dx%d, the window is %dx%d", width, height,
             gtk_widget_get_width (GTK_WIDGET (window)), gtk_widget_get_height (GTK_WIDGET (window)));
  iterate_for (0.3);
}

/* @widget lies inside the window. */
static gboolean
inside_window (TachWindow *window, GtkWidget *widget)
{
  graphene_rect_t bounds;

  return gtk_widget_compute_bounds (widget, GTK_WIDGET (window), &bounds)
         && bounds.origin.x >= -0.5 && bounds.origin.y >= -0.5
         && bounds.origin.x + bounds.size.width <= gtk_widget_get_width (GTK_WIDGET (window)) + 0.5
         && bounds.origin.y + bounds.size.height <= gtk_widget_get_height (GTK_WIDGET (window)) + 0.5;
}

/* The label that shows the explanation's progress says how many
 * configurations are measured. */
static gboolean
progress_counted (gpointer data)
{
  TachExplainView *view = tach_window_get_explain_view (data);

  return !tach_explain_view_get_running (view)
         || find_label_prefix (GTK_WIDGET (view), "round ") != NULL;
}

static gboolean
explain_idle (gpointer data)
{
  return !tach_explain_view_get_running (data);
}

/* Explain's progress line, however long (the rounds, the speed-ups'
 * interval so far, the configurations measured), is read whole inside the
 * view at 1280 x 800 beside the settings panel: it wraps; it neither
 * scrolls the row of controls sideways nor folds the panel away. */
static void
test_fit_explain_progress (Fixture *fixture, gconstpointer data)
{
  TachWindow *window = fixture->window;
  TachExplainView *view = tach_window_get_explain_view (window);
  AdwFlap *flap = ADW_FLAP (find_widget_of_type (GTK_WIDGET (window), ADW_TYPE_FLAP));
  AdwViewStack *stack = ADW_VIEW_STACK (find_widget_of_type (GTK_WIDGET (window), ADW_TYPE_VIEW_STACK));
  GtkWidget *label, *row_scroller;
  GtkAdjustment *sideways;
  const char *text;

  (void) data;
  set_size (window, 1280, 800);
  g_object_set (window, "show-config", TRUE, NULL);
  adw_view_stack_set_visible_child_name (stack, "compare");
  g_object_set (tach_window_get_config_panel (window), "steps", 400, NULL);

  g_assert_true (tach_explain_view_set_presets (view, "tf1-feed-dict", "tuned"));
  /* A budget: the line says the rounds it may add and how well the
   * speed-ups are known so far, its longest form. */
  tach_explain_view_set_rounds (view, 3, 600, 0.01);
  gtk_widget_activate_action (GTK_WIDGET (window), "win.explain", NULL);
  g_assert_true (tach_explain_view_get_running (view));
  g_assert_true (iterate_until (progress_counted, window, 120));
  g_assert_true (tach_explain_view_get_running (view));
  label = find_label_prefix (GTK_WIDGET (view), "round ");
  /* Its longest form, so that the check does not hang on the machine's
   * pace. */
  text = "round 3 of up to 1000, speed-ups known to ±123.4% (target ±1%) · "
         "12 of 24 configurations measured, and more words to make it longer still";
  gtk_label_set_text (GTK_LABEL (label), text);
  iterate_for (0.5);
  render_window (window, "test-gui-fit-explain-progress.png");

  g_assert_true (gtk_widget_get_mapped (label));
  g_assert_false (pango_layout_is_ellipsized (gtk_label_get_layout (GTK_LABEL (label))));
  g_assert_true (inside_window (window, label));
  g_assert_true (inside_window (window, GTK_WIDGET (view)));
  g_assert_false (adw_flap_get_folded (flap));
  g_assert_true (adw_flap_get_reveal_flap (flap));
  {
    WindowSize size = { window, 1280, 800 };

    g_assert_true (window_has_size (&size));
  }
  /* The row of controls fits: it scrolls sideways only where the view is
   * narrower than its controls (a phone's). */
  row_scroller = gtk_widget_get_ancestor (find_label (GTK_WIDGET (view), "Explain the gap from"),
                                          GTK_TYPE_SCROLLED_WINDOW);
  sideways = gtk_scrolled_window_get_hadjustment (GTK_SCROLLED_WINDOW (row_scroller));
  g_assert_cmpfloat (gtk_adjustment_get_upper (sideways), <=,
                     gtk_adjustment_get_page_size (sideways) + 0.5);

  gtk_widget_activate_action (GTK_WIDGET (window), "win.stop", NULL);
  g_assert_true (iterate_until (explain_idle, view, 60));
}

void
test_gui_fit_add (void (*setup) (Fixture *, gconstpointer),
                  void (*teardown) (Fixture *, gconstpointer))
{
  g_test_add ("/gui/fit/explain-progress", Fixture, NULL, setup, test_fit_explain_progress,
              teardown);
}
