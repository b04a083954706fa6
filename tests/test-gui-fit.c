/* test-gui-fit.c: what a window of 1280 x 800 keeps inside it (part of
 * test-gui, issue 42): Explain's progress line wraps inside the view
 * instead of widening it; the run table's generation column is read
 * whole (issue 44). */
#include <adwaita.h>
#include <math.h>
#include <string.h>

#include "tach-window.h"
#include "tach-chart.h"
#include "tach-explain-chart.h"
#include "tach-explain-view.h"
#include "tach-ranks-job.h"
#include "tach-ranks-view.h"
#include "tach-run-object.h"
#include "tach-run-table.h"
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


/* How many rows of the run table are shown whole: inside its scrolled
 * area, below the column titles, inside the window. */
static guint
count_whole_rows (TachWindow *window)
{
  GtkWidget *table = GTK_WIDGET (tach_window_get_run_table (window));
  GtkWidget *view = find_widget_of_type (table, GTK_TYPE_COLUMN_VIEW);
  GtkWidget *scroller = gtk_widget_get_ancestor (view, GTK_TYPE_SCROLLED_WINDOW);
  GtkWidget *list = find_widget_with_css_name (view, "listview");
  GtkWidget *titles = find_widget_with_css_name (view, "header");
  graphene_rect_t area, head;
  guint whole = 0;

  g_assert_nonnull (list);
  g_assert_true (gtk_widget_compute_bounds (scroller, GTK_WIDGET (window), &area));
  g_assert_true (gtk_widget_compute_bounds (titles, GTK_WIDGET (window), &head));
  for (GtkWidget *row = gtk_widget_get_first_child (list); row != NULL;
       row = gtk_widget_get_next_sibling (row))
    {
      graphene_rect_t box;

      if (!gtk_widget_get_mapped (row) || !g_str_equal (gtk_widget_get_css_name (row), "row")
          || !gtk_widget_compute_bounds (row, GTK_WIDGET (window), &box))
        continue;
      if (box.origin.y >= head.origin.y + head.size.height - 0.5
          && box.origin.y + box.size.height <= area.origin.y + area.size.height + 0.5
          && box.origin.y + box.size.height <= gtk_widget_get_height (GTK_WIDGET (window)) + 0.5)
        whole++;
    }
  return whole;
}

/* Each rank's line is shown whole: not cut short, inside the window. */
static void
assert_ranks_whole (TachWindow *window, TachRanksView *ranks)
{
  GtkWidget *grid = find_widget_of_type (GTK_WIDGET (ranks), GTK_TYPE_GRID);
  guint lines = 0;

  for (GtkWidget *child = gtk_widget_get_first_child (grid); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      if (!GTK_IS_LABEL (child) || !g_str_has_prefix (gtk_label_get_text (GTK_LABEL (child)), "compute "))
        continue;
      lines++;
      if (pango_layout_is_ellipsized (gtk_label_get_layout (GTK_LABEL (child))))
        g_error ("a rank's line is cut: %s", gtk_label_get_text (GTK_LABEL (child)));
      g_assert_true (inside_window (window, child));
    }
  g_assert_cmpuint (lines, ==, tach_ranks_view_get_n_rows (ranks));
}

/* After a run of two ranks at 1280 x 800 beside the settings panel: the
 * run table shows its rows (four runs, each whole), each rank's line is
 * whole, and the runs are numbered as the table counts them, #1 to #4,
 * however many runs the process made elsewhere (Scaling's and Explain's
 * take engine ids too: the table read #12 then #121). */
static void
test_fit_ranks (Fixture *fixture, gconstpointer data)
{
  TachWindow *window = fixture->window;
  TachConfigPanel *panel = tach_window_get_config_panel (window);
  TachRanksView *ranks = tach_window_get_ranks_view (window);
  GListModel *runs = tach_window_get_runs (window);
  g_autoptr(GError) error = NULL;
  TachConfig other;

  (void) data;
  if (!tach_ranks_job_check (&error))
    {
      g_test_skip (error->message);
      return;
    }
  tach_ranks_job_set_root (fixture->tmpdir);
  /* A window made at that size, as a laptop's screen makes it. */
  gtk_window_destroy (GTK_WINDOW (window));
  window = fixture->window = tach_window_new (GTK_APPLICATION (fixture->app));
  gtk_window_set_default_size (GTK_WINDOW (window), 1280, 800);
  gtk_window_present (GTK_WINDOW (window));
  set_size (window, 1280, 800);
  panel = tach_window_get_config_panel (window);
  ranks = tach_window_get_ranks_view (window);
  runs = tach_window_get_runs (window);
  g_object_set (window, "show-config", TRUE, NULL);
  g_object_set (panel, "workload", "bilstm", "device", "cpu", "batch", 16, "steps", 6,
                "seed", (guint64) 7, NULL);
  for (guint i = 1; i <= 10; i++)
    run_and_wait (window, i);
  /* Runs that the window's table never shows, as a sweep's or an
   * explanation's. */
  tach_config_init (&other, TACH_WORKLOAD_BILSTM);
  for (guint i = 0; i < 100; i++)
    tach_run_unref (tach_run_new (&other, NULL));
  tach_config_clear (&other);
  run_and_wait (window, 11);
  g_assert_true (tach_config_panel_set_knob (panel, "ranks", "2", NULL));
  g_assert_true (tach_config_panel_set_knob (panel, "threads", "1", NULL));
  g_assert_true (tach_config_panel_set_knob (panel, "steps", "40", NULL));
  run_and_wait (window, 12);
  g_assert_cmpuint (g_list_model_get_n_items (runs), ==, 12);
  iterate_for (0.5);
  render_window (window, "test-gui-fit-ranks.png");

  for (guint i = 0; i < 12; i++)
    {
      g_autoptr(TachRunObject) run = g_list_model_get_item (runs, i);
      g_autofree char *number = g_strdup_printf ("#%u ", i + 1);

      g_assert_true (g_str_has_prefix (tach_run_object_get_title (run), number));
    }
  g_assert_cmpuint (tach_ranks_view_get_n_rows (ranks), ==, 2);
  g_assert_nonnull (find_label (GTK_WIDGET (ranks), "2 ranks, run #12"));
  /* Four rows whole at least, below the table's titles. */
  g_assert_cmpuint (count_whole_rows (window), >=, 4);
  assert_ranks_whole (window, ranks);
  /* Narrower (the panel folds away), the rank lines wrap rather than
   * lose their end. */
  set_size (window, 800, 800);
  render_window (window, "test-gui-fit-ranks-800.png");
  assert_ranks_whole (window, ranks);
  g_assert_cmpuint (count_whole_rows (window), >=, 4);
}


/* @box (in @widget's coordinates) lies inside @widget's visible part
 * (tach_chart_get_visible_area) and inside the window. */
static void
assert_readout_inside (TachWindow *window, GtkWidget *widget, const graphene_rect_t *box,
                       const char *what)
{
  graphene_rect_t visible, in_window;

  tach_chart_get_visible_area (widget, &visible);
  g_assert_true (gtk_widget_compute_bounds (widget, GTK_WIDGET (window), &in_window));
  in_window.origin.x += box->origin.x;
  in_window.origin.y += box->origin.y;
  in_window.size = box->size;
  if (box->origin.x < visible.origin.x - 0.5 || box->origin.y < visible.origin.y - 0.5
      || box->origin.x + box->size.width > visible.origin.x + visible.size.width + 0.5
      || box->origin.y + box->size.height > visible.origin.y + visible.size.height + 0.5
      || in_window.origin.x < -0.5 || in_window.origin.y < -0.5
      || in_window.origin.x + in_window.size.width > gtk_widget_get_width (GTK_WIDGET (window)) + 0.5
      || in_window.origin.y + in_window.size.height > gtk_widget_get_height (GTK_WIDGET (window)) + 0.5)
    g_error ("%s: the read-out at %.0f,%.0f %.0fx%.0f is past the shown part %.0f,%.0f %.0fx%.0f "
             "or the window's edge", what, box->origin.x, box->origin.y, box->size.width,
             box->size.height, visible.origin.x, visible.origin.y, visible.size.width,
             visible.size.height);
}

/* The charts' read-outs, for a pointer at the right and bottom edges of
 * what the window shows of them, lie inside the window (issue 42: they
 * were cut there): the Live loss chart's, and the Explain waterfall's,
 * which was a GTK tooltip running past the window. */
static void
test_fit_readouts (Fixture *fixture, gconstpointer data)
{
  TachWindow *window = fixture->window;
  TachExplainView *view = tach_window_get_explain_view (window);
  TachChart *loss = tach_window_get_loss_chart (window);
  GtkWidget *explain_chart = GTK_WIDGET (tach_explain_view_get_chart (view));
  AdwViewStack *stack = ADW_VIEW_STACK (find_widget_of_type (GTK_WIDGET (window), ADW_TYPE_VIEW_STACK));
  graphene_rect_t box, visible;

  (void) data;
  set_size (window, 1280, 800);
  g_object_set (tach_window_get_config_panel (window), "steps", 6, NULL);
  run_and_wait (window, 1);

  /* The Live loss chart, its plot's bottom-right corner, at 1280 x 800
   * and at 800 x 600. */
  for (guint i = 0; i < 2; i++)
    {
      graphene_rect_t plot;

      if (i == 1)
        set_size (window, 800, 600);
      adw_view_stack_set_visible_child_name (stack, "live");
      iterate_for (0.3);
      tach_chart_get_plot_area (loss, gtk_widget_get_width (GTK_WIDGET (loss)),
                                gtk_widget_get_height (GTK_WIDGET (loss)), &plot);
      tach_chart_set_hover (loss, plot.origin.x + plot.size.width - 2,
                            plot.origin.y + plot.size.height - 2);
      render_window (window, i == 0 ? "test-gui-fit-readout-live.png"
                                    : "test-gui-fit-readout-live-800.png");
      g_assert_true (tach_chart_get_hover_box (loss, &box));
      assert_readout_inside (window, GTK_WIDGET (loss), &box, "the loss chart");
    }

  /* The waterfall: a bar at the bottom-right corner of what shows of it. */
  set_size (window, 1280, 800);
  g_assert_true (tach_explain_view_set_presets (view, "tf1-feed-dict", "tuned"));
  tach_explain_view_set_rounds (view, 3, 0, 0.05);
  gtk_widget_activate_action (GTK_WIDGET (window), "win.explain", NULL);
  g_assert_true (iterate_until (explain_idle, view, 300));
  g_assert_nonnull (tach_explain_view_get_explain (view));
  adw_view_stack_set_visible_child_name (stack, "compare");
  iterate_for (0.3);
  tach_chart_get_visible_area (explain_chart, &visible);
  g_assert_cmpfloat (visible.size.height, >, 0);
  tach_explain_chart_set_hover (TACH_EXPLAIN_CHART (explain_chart),
                                visible.origin.x + visible.size.width - 2,
                                visible.origin.y + visible.size.height - 2);
  render_window (window, "test-gui-fit-readout-explain.png");
  if (!tach_explain_chart_get_hover_box (TACH_EXPLAIN_CHART (explain_chart), &box))
    {
      /* The corner fell between bars or past the last one: the last bar's
       * row, at the right edge. */
      tach_explain_chart_set_hover (TACH_EXPLAIN_CHART (explain_chart),
                                    visible.origin.x + visible.size.width - 2,
                                    tach_explain_chart_get_height (TACH_EXPLAIN_CHART (explain_chart))
                                    - 36 - 10);
      render_window (window, "test-gui-fit-readout-explain.png");
    }
  g_assert_true (tach_explain_chart_get_hover_box (TACH_EXPLAIN_CHART (explain_chart), &box));
  assert_readout_inside (window, explain_chart, &box, "the waterfall");
}

/* The run table's label @text shown whole: mapped, as wide as it asks,
 * inside the table's scrolled area (not cut at its edge) and the window. */
static GtkWidget *
assert_table_label_whole (TachWindow *window, const char *text)
{
  GtkWidget *view = find_widget_of_type (GTK_WIDGET (tach_window_get_run_table (window)),
                                         GTK_TYPE_COLUMN_VIEW);
  GtkWidget *scroller = gtk_widget_get_ancestor (view, GTK_TYPE_SCROLLED_WINDOW);
  GtkWidget *label = find_label (view, text);
  graphene_rect_t area, box;
  int natural = 0;

  if (label == NULL || !gtk_widget_get_mapped (label))
    g_error ("the run table shows no '%s'", text);
  gtk_widget_measure (label, GTK_ORIENTATION_HORIZONTAL, -1, NULL, &natural, NULL, NULL);
  if (gtk_widget_get_width (label) < natural)
    g_error ("'%s' is %d px wide of the %d it needs", text, gtk_widget_get_width (label), natural);
  g_assert_true (gtk_widget_compute_bounds (scroller, GTK_WIDGET (window), &area));
  g_assert_true (gtk_widget_compute_bounds (label, GTK_WIDGET (window), &box));
  if (box.origin.x < area.origin.x - 0.5
      || box.origin.x + box.size.width > area.origin.x + area.size.width + 0.5)
    g_error ("'%s' at x %.0f-%.0f is past the table's %.0f-%.0f", text, box.origin.x,
             box.origin.x + box.size.width, area.origin.x, area.origin.x + area.size.width);
  g_assert_true (inside_window (window, label));
  return label;
}

/* @text ("41.2 ms", "1234 tok/s") is @value to its shown precision (half
 * its last digit: the table shows 3 decimals below 10, 1 below 1000, none
 * above), in @unit. */
static void
assert_figure (const char *text, double value, const char *unit)
{
  char *end = NULL;
  double shown = g_ascii_strtod (text, &end);
  const char *point = strchr (text, '.');
  int decimals = point != NULL && point < end ? (int) (end - point - 1) : 0;

  g_assert_true (end != text);
  g_assert_cmpstr (end, ==, unit);
  g_assert_cmpfloat (fabs (shown - value), <=, 0.5 * pow (10.0, -decimals) * 1.0001);
}

/* A generation's prefill and decoding have a column of the run table
 * (issue 44: they showed only in the details under it), shown while the
 * table holds a generation (a bilstm's training has none), read whole at
 * 1280 x 800 beside the settings panel and at 1000 x 800 with the panel
 * closed, without scrolling the table sideways; its tooltip says them in
 * words; a training run's cell is a dash whose tooltip says why.  At 800
 * px the table keeps its narrow columns. */
static void
test_fit_generation (Fixture *fixture, gconstpointer data)
{
  TachWindow *window = fixture->window;
  TachConfigPanel *panel = tach_window_get_config_panel (window);
  TachRunTable *table = tach_window_get_run_table (window);
  GtkWidget *view = find_widget_of_type (GTK_WIDGET (table), GTK_TYPE_COLUMN_VIEW);
  GtkAdjustment *sideways;
  g_autoptr(TachRunObject) generation = NULL, training = NULL;
  g_autofree char *prefill = NULL, *decode = NULL, *tip = NULL, *dash = NULL, *why = NULL;
  g_autoptr(GtkColumnViewColumn) column = NULL;
  g_autoptr(GError) error = NULL;
  GListModel *columns = gtk_column_view_get_columns (GTK_COLUMN_VIEW (view));
  static const int widths[] = { 1280, 1000 };
  static const gboolean with_panel[] = { TRUE, FALSE };
  TachSummary s;

  (void) data;
  for (guint i = 0; i < g_list_model_get_n_items (columns) && column == NULL; i++)
    {
      g_autoptr(GtkColumnViewColumn) c = g_list_model_get_item (columns, i);

      if (g_strcmp0 (gtk_column_view_column_get_title (c), "Generation") == 0)
        column = g_steal_pointer (&c);
    }
  g_assert_nonnull (column);
  set_size (window, 1280, 800);
  g_object_set (window, "show-config", TRUE, NULL);
  /* Training alone has no such column. */
  g_object_set (panel, "steps", 4, NULL);
  run_and_wait (window, 1);
  iterate_for (0.2);
  g_assert_false (gtk_column_view_column_get_visible (column));
  gpt_small_generation (panel);
  g_object_set (panel, "steps", 24, NULL);
  run_and_wait (window, 2);
  g_assert_true (tach_config_panel_set_knob (panel, "task", "train", &error));
  g_assert_no_error (error);
  g_object_set (panel, "steps", 6, NULL);
  run_and_wait (window, 3);
  generation = g_list_model_get_item (tach_window_get_runs (window), 1);
  training = g_list_model_get_item (tach_window_get_runs (window), 2);
  tach_run_get_summary (tach_run_object_get_run (generation), &s);
  g_assert_true (isfinite (s.prefill_ms) && isfinite (s.decode_tokens_per_s));

  g_object_get (generation, "prefill-text", &prefill, "decode-text", &decode,
                "generation-text", &tip, NULL);
  assert_figure (prefill, s.prefill_ms, " ms");
  assert_figure (decode, s.decode_tokens_per_s, " tok/s");
  g_assert_nonnull (strstr (tip, "to the first token"));
  g_assert_nonnull (strstr (tip, "tokens/s"));
  g_object_get (training, "prefill-text", &dash, "generation-text", &why, NULL);
  g_assert_cmpstr (dash, ==, "—");
  g_assert_cmpstr (why, ==, "Only a generation has a prefill and decoding");

  sideways = gtk_scrolled_window_get_hadjustment (
    GTK_SCROLLED_WINDOW (gtk_widget_get_ancestor (view, GTK_TYPE_SCROLLED_WINDOW)));
  for (guint i = 0; i < G_N_ELEMENTS (widths); i++)
    {
      GtkWidget *label;
      g_autofree char *name = g_strdup_printf ("test-gui-fit-generation-%d.png", widths[i]);

      set_size (window, widths[i], 800);
      g_object_set (window, "show-config", with_panel[i], NULL);
      iterate_for (0.5);
      render_window (window, name);
      g_assert_false (tach_run_table_get_compact (table));
      g_assert_true (gtk_column_view_column_get_visible (column));
      {
        int least = 0;

        gtk_widget_measure (view, GTK_ORIENTATION_HORIZONTAL, -1, &least, NULL, NULL, NULL);
        g_test_message ("%d px: the columns take %d px at least, the table is %.0f px wide",
                        widths[i], least, gtk_adjustment_get_page_size (sideways));
      }
      if (gtk_adjustment_get_upper (sideways) > gtk_adjustment_get_page_size (sideways) + 0.5)
        g_error ("at %d px the run table scrolls sideways: %.0f px of columns in %.0f",
                 widths[i], gtk_adjustment_get_upper (sideways),
                 gtk_adjustment_get_page_size (sideways));
      assert_table_label_whole (window, "Generation");
      label = assert_table_label_whole (window, prefill);
      g_assert_cmpstr (gtk_widget_get_tooltip_text (gtk_widget_get_parent (label)), ==, tip);
      assert_table_label_whole (window, decode);
    }
  /* Narrower (the panel folded away): the run, its rate and speed-up;
   * the details under the table still give the prefill and decoding. */
  set_size (window, 800, 600);
  iterate_for (0.5);
  g_assert_true (tach_run_table_get_compact (table));
  g_assert_false (gtk_column_view_column_get_visible (column));
}

void
test_gui_fit_add (void (*setup) (Fixture *, gconstpointer),
                  void (*teardown) (Fixture *, gconstpointer))
{
  g_test_add ("/gui/fit/explain-progress", Fixture, NULL, setup, test_fit_explain_progress,
              teardown);
  g_test_add ("/gui/fit/ranks", Fixture, NULL, setup, test_fit_ranks, teardown);
  g_test_add ("/gui/fit/read-outs", Fixture, NULL, setup, test_fit_readouts, teardown);
  g_test_add ("/gui/fit/generation", Fixture, NULL, setup, test_fit_generation, teardown);
}
