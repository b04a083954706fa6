/* test-gui-explain.c: Explain in the Compare view, under xvfb-run (part
 * of test-gui): an explanation between two presets on the engine, its
 * waterfall's bars against the engine's numbers, its exports, and stop. */
#include <adwaita.h>
#include <math.h>
#include <string.h>

#include "tach-window.h"
#include "tach-explain-view.h"
#include "tach-phase-bar.h"
#include "test-gui.h"

static gboolean
explain_idle (gpointer data)
{
  return !tach_explain_view_get_running (data);
}

/* The chart shows the rounds so far, or the explanation has ended. */
static gboolean
explain_provisional (gpointer data)
{
  return tach_explain_chart_get_provisional (tach_explain_view_get_chart (data))
         || !tach_explain_view_get_running (data);
}

/* The bars walk from A's step time through each knob's share to B's, as
 * @explain's figures say, each bar's end inside its 95% interval. */
static void
check_bars (TachExplainChart *chart, TachExplain *explain)
{
  guint n = tach_explain_get_n_knobs (explain);
  TachExplainBar bar, ci;
  double total;

  g_assert_cmpuint (tach_explain_chart_get_n_bars (chart), ==, n + 2);
  g_assert_true (tach_explain_chart_get_bar (chart, 0, &bar));
  g_assert_cmpfloat (bar.start_ms, ==, 0);
  g_assert_cmpfloat (bar.end_ms, ==, tach_explain_get_cost (explain, FALSE)->step_ms);
  total = bar.end_ms;
  for (guint i = 0; i < n + 2; i++)
    {
      g_assert_true (tach_explain_chart_get_bar (chart, i, &bar));
      if (i > 0 && i <= n)
        {
          const TachExplainKnob *knob = tach_explain_get_knob (explain, i - 1);

          g_assert_cmpfloat_with_epsilon (bar.start_ms, total, 1e-9);
          g_assert_cmpfloat_with_epsilon (bar.end_ms - bar.start_ms, knob->share_ms, 1e-9);
          total = bar.end_ms;
        }
      /* Two rounds or more: every bar has its interval. */
      g_assert_true (tach_explain_chart_get_whisker (chart, i, &ci));
      g_assert_cmpfloat (ci.start_ms, <=, bar.end_ms + 1e-9);
      g_assert_cmpfloat (ci.end_ms, >=, bar.end_ms - 1e-9);
    }
  g_assert_cmpfloat_with_epsilon (total, bar.end_ms, 1e-9 * MAX (1, bar.end_ms));
}

static gboolean
explain_idle_window (gpointer data)
{
  return !tach_window_get_running (data);
}

/* Whether @widget lies whole inside every scrolled area above it. */
static gboolean
unclipped (GtkWidget *widget)
{
  for (GtkWidget *above = gtk_widget_get_ancestor (gtk_widget_get_parent (widget), GTK_TYPE_SCROLLED_WINDOW);
       above != NULL;
       above = gtk_widget_get_ancestor (gtk_widget_get_parent (above), GTK_TYPE_SCROLLED_WINDOW))
    {
      graphene_rect_t bounds;

      g_assert_true (gtk_widget_compute_bounds (widget, above, &bounds));
      if (bounds.origin.y < -0.5 || bounds.origin.y + bounds.size.height > gtk_widget_get_height (above) + 0.5)
        return FALSE;
    }
  return TRUE;
}

/* Scrolled to the end of its waterfall and text, the view keeps its row
 * of controls ("Explain the gap from A to B") whole, below the Compare
 * bars.  The waterfall is made taller than the view, as many knobs or a
 * short window make it, so that there is something to scroll. */
static void
check_scrolled (TachWindow *window, TachExplainView *view)
{
  GtkWidget *row = gtk_widget_get_parent (find_label (GTK_WIDGET (view), "Explain the gap from"));
  GtkWidget *chart = GTK_WIDGET (tach_explain_view_get_chart (view));
  GtkWidget *scroller = gtk_widget_get_ancestor (chart, GTK_TYPE_SCROLLED_WINDOW);
  GtkAdjustment *adjustment = gtk_scrolled_window_get_vadjustment (GTK_SCROLLED_WINDOW (scroller));
  int height = gtk_widget_get_height (GTK_WIDGET (window));

  gtk_widget_set_size_request (chart, -1, height);
  render_window (window, "test-gui-explain-scrolled.png");
  g_assert_cmpfloat (gtk_adjustment_get_upper (adjustment), >, gtk_adjustment_get_page_size (adjustment));
  g_assert_true (unclipped (row));
  gtk_adjustment_set_value (adjustment, gtk_adjustment_get_upper (adjustment));
  render_window (window, "test-gui-explain-scrolled.png");
  g_assert_cmpfloat (gtk_adjustment_get_value (adjustment), >, 0);
  g_assert_true (unclipped (row));
  gtk_adjustment_set_value (adjustment, 0);
  gtk_widget_set_size_request (chart, -1, -1);
}

void
test_explain (Fixture *fixture, gconstpointer data)
{
  TachExplainView *view = tach_window_get_explain_view (fixture->window);
  TachExplainChart *chart = tach_explain_view_get_chart (view);
  TachConfigPanel *panel = tach_window_get_config_panel (fixture->window);
  const char *shots = g_getenv ("TACH_SCREENSHOT_DIR");
  g_autoptr(GError) error = NULL;
  TachExplain *explain;
  TachExplainBar bar;
  double total;
  guint n;

  (void) data;
  /* A screenshot wants the report's batch; the test a short run. */
  if (shots != NULL)
    {
      g_object_set (panel, "batch", 256, "steps", 30, NULL);
      /* The chart gets the window's width. */
      g_object_set (fixture->window, "show-config", FALSE, NULL);
    }
  else
    g_object_set (panel, "steps", 6, NULL);
  g_assert_true (tach_explain_view_set_presets (view, "tf1-feed-dict", "tuned"));
  /* Four rounds: the chart shows the second's and the third's figures
   * while the rounds after them run. */
  tach_explain_view_set_rounds (view, 4, 0, 0.05);
  gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.explain", NULL);
  g_assert_true (tach_explain_view_get_running (view));
  g_assert_null (tach_explain_view_get_live (view));
  /* Compare's rule: one thing on the engine at a time. */
  g_assert_false (tach_window_start_run (fixture->window, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  g_clear_error (&error);

  /* Before the end: the rounds so far, drawn with their intervals and
   * said to be provisional. */
  g_assert_true (iterate_until (explain_provisional, view, shots != NULL ? 1800 : 300));
  g_assert_true (tach_explain_view_get_running (view));
  g_assert_true (tach_explain_chart_get_provisional (chart));
  {
    TachExplain *live = tach_explain_view_get_live (view);
    guint rounds = live != NULL ? tach_explain_get_rounds (live) : 0;
    g_autofree char *caption = NULL;
    g_autofree char *so_far = g_strdup_printf ("provisional: %u rounds so far", rounds);

    g_assert_nonnull (live);
    g_assert_cmpuint (rounds, >=, 2);
    g_assert_cmpuint (rounds, <, 4);
    caption = tach_explain_chart_dup_caption (chart);
    g_assert_nonnull (strstr (caption, so_far));
    g_assert_cmpuint (tach_explain_get_n_knobs (live), ==, 3);
    check_bars (chart, live);
    g_assert_nonnull (strstr (gtk_label_get_text (GTK_LABEL (find_label_prefix (GTK_WIDGET (view), "The shares sum"))),
                              "Provisional"));
    render_window (fixture->window, "test-gui-explain-provisional.png");
  }
  g_assert_true (iterate_until (explain_idle, view, shots != NULL ? 1800 : 300));

  /* The end: the final figures, no longer provisional. */
  g_assert_false (tach_explain_chart_get_provisional (chart));
  g_assert_null (tach_explain_view_get_live (view));
  explain = tach_explain_view_get_explain (view);
  g_assert_nonnull (explain);
  g_assert_cmpuint (tach_explain_get_rounds (explain), ==, 4);
  {
    g_autofree char *caption = tach_explain_chart_dup_caption (chart);

    g_assert_null (strstr (caption, "provisional"));
  }
  n = tach_explain_get_n_knobs (explain);
  g_assert_cmpuint (n, ==, 3);
  check_bars (chart, explain);

  /* The bars walk from A's step time to B's by the engine's shares. */
  g_assert_true (tach_explain_chart_get_bar (chart, 0, &bar));
  g_assert_cmpfloat (bar.start_ms, ==, 0);
  g_assert_cmpfloat (bar.end_ms, ==, tach_explain_get_cost (explain, FALSE)->step_ms);
  total = bar.end_ms;
  for (guint i = 0; i < n; i++)
    {
      const TachExplainKnob *knob = tach_explain_get_knob (explain, i);
      g_autofree char *label = tach_explain_chart_dup_label (chart, i + 1);
      g_autofree char *tooltip = tach_explain_chart_dup_tooltip (chart, i + 1);
      g_autofree char *ms = g_strdup_printf ("%+.1f", knob->share_ms);

      g_assert_true (tach_explain_chart_get_bar (chart, i + 1, &bar));
      g_assert_cmpfloat_with_epsilon (bar.start_ms, total, 1e-9);
      g_assert_cmpfloat_with_epsilon (bar.end_ms - bar.start_ms, knob->share_ms, 1e-9);
      total = bar.end_ms;
      g_assert_true (g_str_has_prefix (label, knob->title));
      g_assert_nonnull (strstr (label, ms));
      g_assert_nonnull (strstr (label, " -> "));
      g_assert_nonnull (strstr (tooltip, "±"));
      /* A bar within noise says so on the bar (issue 42), and only then. */
      g_assert_true ((strstr (label, "within noise") != NULL)
                     == (knob->verdict == TACH_VERDICT_WITHIN_NOISE));
    }
  g_assert_true (tach_explain_chart_get_bar (chart, n + 1, &bar));
  g_assert_cmpfloat_with_epsilon (total, bar.end_ms, 1e-9 * MAX (1, bar.end_ms));
  g_assert_cmpfloat (bar.end_ms, ==, tach_explain_get_cost (explain, TRUE)->step_ms);
  g_assert_cmpstr (tach_explain_get_knob (explain, 0)->key, ==, "layout");
  g_assert_true (tach_explain_get_knob (explain, 0)->changes_results);

  {
    g_autofree char *shot = shots != NULL ? g_build_filename (shots, "explain-light.png", NULL)
                                          : g_strdup ("test-gui-explain.png");

    render_window (fixture->window, shot);
  }
  check_scrolled (fixture->window, view);

  /* The exports: a PNG that shows the phase colours of the bars, an SVG,
   * and explain.csv with runs.csv beside it. */
  {
    g_autofree char *png_path = g_build_filename (fixture->tmpdir, "explain.png", NULL);
    g_autofree char *svg_path = g_build_filename (fixture->tmpdir, "explain.svg", NULL);
    g_autofree char *csv_dir = g_build_filename (fixture->tmpdir, "csv", NULL);
    g_autofree char *csv_path = g_build_filename (csv_dir, "explain.csv", NULL);
    g_autofree char *runs_path = g_build_filename (csv_dir, "runs.csv", NULL);
    g_autofree char *svg = NULL;
    g_autofree char *csv = NULL;
    g_auto(GStrv) lines = NULL;
    g_autoptr(GdkTexture) png = NULL;

    g_assert_true (tach_explain_view_export_image (view, png_path, &error));
    g_assert_no_error (error);
    png = gdk_texture_new_from_filename (png_path, &error);
    g_assert_no_error (error);
    g_assert_cmpint (gdk_texture_get_width (png), ==, 1100);
    g_assert_cmpint (gdk_texture_get_height (png), >, 200);
    {
      GdkRGBA compute;

      tach_phase_get_color (TACH_PHASE_COMPUTE,
                            adw_style_manager_get_dark (adw_style_manager_get_default ()), &compute);
      g_assert_cmpuint (count_color (png, 0, &compute), >, 500);
    }

    g_assert_true (tach_explain_view_export_image (view, svg_path, &error));
    g_assert_no_error (error);
    g_assert_true (g_file_get_contents (svg_path, &svg, NULL, NULL));
    g_assert_nonnull (strstr (svg, "<svg"));

    g_assert_true (tach_explain_view_export_csv (view, csv_dir, &error));
    g_assert_no_error (error);
    g_assert_true (g_file_get_contents (csv_path, &csv, NULL, NULL));
    lines = g_strsplit (csv, "\r\n", -1);
    g_assert_cmpuint (g_strv_length (lines), ==, 1 + n + 2 + 1);
    g_assert_true (g_file_test (runs_path, G_FILE_TEST_EXISTS));
  }

  /* Two runs from the run table: the baseline against the selected run. */
  {
    TachRunTable *table = tach_window_get_run_table (fixture->window);

    /* Without two runs there is nothing to pick. */
    g_assert_false (tach_window_explain_runs (fixture->window, &error));
    g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
    g_clear_error (&error);

    g_object_set (panel, "preset", "keras-fit", NULL);
    g_assert_true (tach_window_start_run (fixture->window, &error));
    g_assert_no_error (error);
    g_assert_true (iterate_until (explain_idle_window, fixture->window, 120));
    g_object_set (panel, "preset", "tuned", NULL);
    g_assert_true (tach_window_start_run (fixture->window, &error));
    g_assert_no_error (error);
    g_assert_true (iterate_until (explain_idle_window, fixture->window, 120));
    tach_run_table_set_baseline (table, 0);
    tach_run_table_select (table, 1);
    g_assert_true (tach_window_explain_runs (fixture->window, &error));
    g_assert_no_error (error);
    g_assert_true (iterate_until (explain_idle, view, shots != NULL ? 1800 : 300));
    explain = tach_explain_view_get_explain (view);
    g_assert_nonnull (explain);
    /* Each knob goes from the baseline run's value to the selected run's. */
    {
      const TachConfig *ca = tach_run_get_config (tach_run_object_get_run (tach_run_table_get_baseline (table)));
      const TachConfig *cb = tach_run_get_config (tach_run_object_get_run (tach_run_table_get_selected (table)));

      g_assert_cmpuint (tach_explain_get_n_knobs (explain), >=, 1);
      for (guint i = 0; i < tach_explain_get_n_knobs (explain); i++)
        {
          const TachExplainKnob *knob = tach_explain_get_knob (explain, i);
          g_autofree char *va = tach_config_get (ca, knob->key);
          g_autofree char *vb = tach_config_get (cb, knob->key);

          g_assert_cmpstr (knob->from, ==, va);
          g_assert_cmpstr (knob->to, ==, vb);
        }
    }
    g_assert_cmpstr (tach_explain_get_label (explain, FALSE), ==,
                     tach_run_object_get_title (tach_run_table_get_baseline (table)));
    g_assert_cmpuint (tach_explain_chart_get_n_bars (chart), ==,
                      tach_explain_get_n_knobs (explain) + 2);
  }

  /* Stop: the explanation ends without an error and the last result stays. */
  g_assert_true (tach_explain_view_start (view, &error));
  g_assert_no_error (error);
  gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.stop", NULL);
  g_assert_true (iterate_until (explain_idle, view, 60));
  g_assert_true (tach_explain_view_get_explain (view) == explain);
  /* A stop the user asked for is no failure: no dialog says it was one
   * (GTask's own "Operation was cancelled" came up here). */
  g_assert_null (find_message_dialog (fixture->window));
}
