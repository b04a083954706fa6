/* test-gui-scaling.c: the Scaling view under xvfb-run (part of test-gui):
 * a small sweep of one knob across the workload's presets on the engine,
 * the plotted points against the engine's summaries, show/hide, hover,
 * the exports, a bad spec, and stop; a sweep beside a spinning process,
 * whose rounds line says so; and a synthetic grid whose points ran apart
 * on a busy machine. */
#include <adwaita.h>
#include <math.h>
#include <string.h>

#include "tach-window.h"
#include "tach-scaling-view.h"
#include "test-gui.h"
#include "test-spinners.h"

static gboolean
scaling_idle (gpointer data)
{
  return !tach_scaling_view_get_running (data);
}

/* Reads a plotted point back through the chart's axis: the pixel it is
 * drawn at, unmapped, is the engine's number. */
static void
check_point (TachScalingChart *chart, TachScalingPanel panel, guint p, guint v, double expected)
{
  double px, py;

  g_assert_true (tach_scaling_chart_get_point (chart, panel, p, v, 900, 560, &px, &py));
  g_assert_cmpfloat (px, >=, 0);
  g_assert_cmpfloat (px, <=, 900);
  g_assert_cmpfloat (py, >=, 0);
  g_assert_cmpfloat (py, <=, 560);
  g_assert_cmpfloat_with_epsilon (tach_scaling_chart_unmap_y (chart, panel, 900, 560, py),
                                  expected, 1e-9 * MAX (1.0, expected));
}

/* Two presets at one value, measured apart (no rounds paired them), their
 * rates 20% apart and each known to +-1%: a finding on an idle machine,
 * within noise where the machine was busy during either run
 * (tach_summary_busy_apart, the run table's decision too). */
void
test_scaling_busy_apart (void)
{
  char *presets[] = { "a", "b", NULL }, *values[] = { "32", NULL };
  double x[] = { 32 }, rate[] = { 100, 120 }, lo[] = { 99, 118.8 }, hi[] = { 101, 121.2 };
  double busy[] = { 0.02, 0.03 };
  TachScalingGrid grid = {
    .knob = "batch", .unit = "samples/s", .presets = presets, .values = values, .x = x,
    .rate = rate, .rate_lo = lo, .rate_hi = hi, .busy = busy,
  };
  TachInterval iv;

  g_assert_cmpint (tach_scaling_grid_interval (&grid, TACH_SCALING_SPEEDUP, 1, 0, &iv), ==,
                   TACH_VERDICT_SIGNIFICANT);
  g_assert_cmpfloat_with_epsilon (iv.value, 1.2, 1e-9);
  busy[1] = 0.30;
  g_assert_cmpint (tach_scaling_grid_interval (&grid, TACH_SCALING_SPEEDUP, 1, 0, &iv), ==,
                   TACH_VERDICT_WITHIN_NOISE);
  g_assert_cmpfloat (iv.lo, >, 1);
  /* Unknown loads: the runs' intervals stand. */
  grid.busy = NULL;
  g_assert_cmpint (tach_scaling_grid_interval (&grid, TACH_SCALING_SPEEDUP, 1, 0, &iv), ==,
                   TACH_VERDICT_SIGNIFICANT);
}

void
test_scaling (Fixture *fixture, gconstpointer data)
{
  TachScalingView *view = tach_window_get_scaling_view (fixture->window);
  TachScalingChart *chart = tach_scaling_view_get_chart (view);
  TachConfigPanel *panel = tach_window_get_config_panel (fixture->window);
  const char *shots = g_getenv ("TACH_SCREENSHOT_DIR");
  g_autoptr(GError) error = NULL;
  const TachScalingGrid *grid;
  guint np, nv;

  (void) data;
  g_object_set (panel, "steps", shots != NULL ? 40 : 6, NULL);
  g_object_set (fixture->window, "show-config", FALSE, NULL);

  /* A spec the parser refuses is shown, and nothing starts. */
  g_assert_true (tach_scaling_view_set_spec (view, "batch", "64..8x2"));
  g_assert_false (tach_scaling_view_start (view, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  g_assert_nonnull (strstr (error->message, "batch"));
  g_clear_error (&error);
  g_assert_false (tach_scaling_view_set_spec (view, "no-such-knob", "1,2"));

  g_assert_true (tach_scaling_view_set_spec (view, "batch",
                                             shots != NULL ? "32..512x2" : "4..16x2"));
  gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.scale", NULL);
  g_assert_true (tach_scaling_view_get_running (view));
  /* Compare's rule: one thing on the engine at a time. */
  g_assert_true (tach_window_get_running (fixture->window));
  g_assert_false (tach_window_start_run (fixture->window, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  g_clear_error (&error);
  g_assert_true (iterate_until (scaling_idle, view, shots != NULL ? 1800 : 300));

  grid = tach_scaling_view_get_grid (view);
  g_assert_nonnull (grid);
  g_assert_true (grid->geometric);
  np = g_strv_length (grid->presets);
  nv = g_strv_length (grid->values);
  g_assert_cmpuint (np, >=, 2);
  /* One process: none of the data-parallel presets, which would run as
   * tuned (three duplicate lines). */
  {
    g_autoptr(GPtrArray) alone = tach_presets_for_ranks (
      tach_run_get_config (tach_scaling_view_get_run (view, 0, 0))->workload, 1);

    g_assert_cmpuint (np, ==, alone->len);
  }
  g_assert_cmpuint (nv, ==, shots != NULL ? 5 : 3);
  g_assert_cmpstr (grid->values[0], ==, shots != NULL ? "32" : "4");
  for (guint v = 0; v < nv; v++)
    for (guint p = 0; p < np; p++)
      {
        TachRun *run = tach_scaling_view_get_run (view, p, v);
        TachRun *base = tach_scaling_view_get_run (view, 0, v);
        TachSummary s, b;

        g_assert_nonnull (run);
        g_assert_cmpint (tach_run_get_state (run), ==, TACH_RUN_STATE_FINISHED);
        /* Each point ran its preset at its value. */
        g_assert_cmpstr (tach_run_get_config (run)->preset, ==, grid->presets[p]);
        g_assert_cmpuint (tach_run_get_config (run)->batch, ==,
                          g_ascii_strtoull (grid->values[v], NULL, 10));
        tach_run_get_summary (run, &s);
        tach_run_get_summary (base, &b);
        g_assert_cmpfloat (s.items_per_s, >, 0);
        check_point (chart, TACH_SCALING_RATE, p, v, s.items_per_s);
        /* The speed-up is paired by round (the fixture runs two): the
         * geometric mean of the rounds' ratios, inside its interval. */
        if (p > 0)
          {
            TachInterval iv;

            g_assert_cmpint (tach_scaling_grid_interval (grid, TACH_SCALING_SPEEDUP, p, v, &iv),
                             !=, TACH_VERDICT_UNKNOWN);
            g_assert_cmpfloat (iv.value, ==, grid->ratio[v * np + p]);
            g_assert_cmpfloat (iv.lo, <=, iv.value);
            g_assert_cmpfloat (iv.hi, >=, iv.value);
            check_point (chart, TACH_SCALING_SPEEDUP, p, v, iv.value);
          }
        else
          check_point (chart, TACH_SCALING_SPEEDUP, p, v, 1.0);
        g_assert_cmpstr (grid->unit, ==, s.items_unit);
      }
  /* The in-chart legend shows every preset, on more rows where they do
   * not fit beside the title (it showed 3 of 7 and dropped the rest). */
  {
    cairo_surface_t *surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, 420, 560);
    cairo_t *cr = cairo_create (surface);

    tach_scaling_chart_draw (chart, cr, 420, 560);
    g_assert_cmpuint (tach_scaling_chart_get_n_legend (chart), ==, np);
    cairo_destroy (cr);
    cairo_surface_destroy (surface);
  }
  /* What stayed unresolved scrolls past a few lines: seventeen lines
   * leave the chart where it was, give or take the scrolled area. */
  {
    GtkWidget *label = find_label (GTK_WIDGET (view), tach_scaling_view_get_rounds_text (view));
    g_autofree char *kept = g_strdup (gtk_label_get_text (GTK_LABEL (label)));
    g_autoptr(GString) many = g_string_new ("Unresolved:");
    int one = 0, seventeen = 0;

    for (guint i = 0; i < 17; i++)
      g_string_append_printf (many, "\npreset %u at batch 4: within noise", i);
    gtk_widget_measure (GTK_WIDGET (view), GTK_ORIENTATION_VERTICAL, 900, &one, NULL, NULL, NULL);
    gtk_label_set_text (GTK_LABEL (label), many->str);
    gtk_widget_measure (GTK_WIDGET (view), GTK_ORIENTATION_VERTICAL, 900, &seventeen, NULL, NULL,
                        NULL);
    g_test_message ("the view's height: %d px with the rounds' line, %d with 17 more lines", one,
                    seventeen);
    g_assert_cmpint (seventeen - one, <=, 120);
    gtk_label_set_text (GTK_LABEL (label), kept);
  }
  /* The rounds run, said under the controls. */
  g_assert_true (g_str_has_prefix (tach_scaling_view_get_rounds_text (view), "2 rounds."));
  /* Larger values sit further right, on a log axis. */
  {
    double x0, x1, x2, y;

    g_assert_true (tach_scaling_chart_get_point (chart, TACH_SCALING_RATE, 0, 0, 900, 560, &x0, &y));
    g_assert_true (tach_scaling_chart_get_point (chart, TACH_SCALING_RATE, 0, 1, 900, 560, &x1, &y));
    g_assert_true (tach_scaling_chart_get_point (chart, TACH_SCALING_RATE, 0, 2, 900, 560, &x2, &y));
    g_assert_cmpfloat (x0, <, x1);
    g_assert_cmpfloat_with_epsilon (x1 - x0, x2 - x1, 1e-6);
  }

  {
    g_autofree char *shot = shots != NULL ? g_build_filename (shots, "scaling-light.png", NULL)
                                          : g_strdup ("test-gui-scaling.png");

    render_window (fixture->window, shot);
  }

  /* Hover: one line per shown preset, with its figures. */
  {
    g_autofree char *tip = tach_scaling_chart_dup_tooltip (chart, 1);
    g_auto(GStrv) lines = g_strsplit (tip, "\n", -1);

    g_assert_cmpuint (g_strv_length (lines), ==, 1 + np);
    g_assert_nonnull (strstr (lines[0], grid->values[1]));
    g_assert_nonnull (strstr (lines[1], grid->presets[0]));
    g_assert_nonnull (strstr (lines[1], "1.00×"));
    tach_scaling_view_set_preset_visible (view, 1, FALSE);
    g_clear_pointer (&tip, g_free);
    tip = tach_scaling_chart_dup_tooltip (chart, 1);
    g_assert_null (strstr (tip, grid->presets[1]));
    {
      double x, y;

      g_assert_false (tach_scaling_chart_get_point (chart, TACH_SCALING_RATE, 1, 0, 900, 560, &x, &y));
    }
    tach_scaling_view_set_preset_visible (view, 1, TRUE);
  }

  /* The exports: PNG, SVG, and the runs with the varied knob's column. */
  {
    g_autofree char *png_path = g_build_filename (fixture->tmpdir, "scaling.png", NULL);
    g_autofree char *svg_path = g_build_filename (fixture->tmpdir, "scaling.svg", NULL);
    g_autofree char *csv_dir = g_build_filename (fixture->tmpdir, "scaling-csv", NULL);
    g_autofree char *runs_path = g_build_filename (csv_dir, "runs.csv", NULL);
    g_autofree char *svg = NULL;
    g_autofree char *csv = NULL;
    g_autoptr(GdkTexture) png = NULL;
    GdkRGBA color;

    g_assert_true (tach_scaling_view_export_image (view, png_path, &error));
    g_assert_no_error (error);
    png = gdk_texture_new_from_filename (png_path, &error);
    g_assert_no_error (error);
    g_assert_cmpint (gdk_texture_get_width (png), ==, 1000);
    tach_chart_get_run_color (1, adw_style_manager_get_dark (adw_style_manager_get_default ()),
                              &color);
    g_assert_cmpuint (count_color (png, 0, &color), >, 100);
    g_assert_true (tach_scaling_view_export_image (view, svg_path, &error));
    g_assert_no_error (error);
    g_assert_true (g_file_get_contents (svg_path, &svg, NULL, NULL));
    g_assert_nonnull (strstr (svg, "<svg"));
    g_assert_true (tach_scaling_view_export_csv (view, csv_dir, &error));
    g_assert_no_error (error);
    g_assert_true (g_file_get_contents (runs_path, &csv, NULL, NULL));
    /* Every round's run, as tach-cli sweep --csv writes them. */
    g_assert_cmpuint (count_lines (runs_path), ==, 1 + 2 * np * nv);
    g_assert_nonnull (strstr (csv, ",varied,varied_value"));
    g_assert_nonnull (strstr (csv, ",batch,"));
  }

  /* Stop: the sweep ends without an error, its points so far kept. */
  g_assert_true (tach_scaling_view_start (view, &error));
  g_assert_no_error (error);
  gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.stop", NULL);
  g_assert_true (iterate_until (scaling_idle, view, 60));
  g_assert_false (tach_window_get_running (fixture->window));
  g_assert_null (find_message_dialog (fixture->window));
  g_assert_true (g_str_has_prefix (tach_scaling_view_get_rounds_text (view), "Stopped in round 1"));
}

/* A sweep while another process spins on a processor: its runs are of a
 * busy machine (and may lose a thread), and the rounds line under the
 * controls says so for each point against its value's first preset, in
 * the words of Compare and the CLI's table (tach_summary_dup_load_caveat
 * of the runs shown). */
void
test_scaling_busy (Fixture *fixture, gconstpointer data)
{
  TachScalingView *view = tach_window_get_scaling_view (fixture->window);
  TachConfigPanel *panel = tach_window_get_config_panel (fixture->window);
  g_autoptr(GError) error = NULL;
  const TachScalingGrid *grid;
  const char *text;
  pid_t spinner;
  guint n_spinners, np, nv, n_caveats = 0;

  (void) data;
  /* Runs long enough for the load to be measured (a run of a few ticks
   * has no figure for it). */
  g_object_set (panel, "steps", 20, NULL);
  g_object_set (fixture->window, "show-config", FALSE, NULL);
  g_assert_true (tach_scaling_view_set_spec (view, "batch", "4,8"));
  n_spinners = test_spinners_start (&spinner, 1);
  g_assert_true (tach_scaling_view_start (view, &error));
  g_assert_no_error (error);
  g_assert_true (iterate_until (scaling_idle, view, 300));
  test_spinners_stop (&spinner, n_spinners);

  grid = tach_scaling_view_get_grid (view);
  np = g_strv_length (grid->presets);
  nv = g_strv_length (grid->values);
  g_assert_cmpuint (np, >=, 2);
  text = tach_scaling_view_get_rounds_text (view);
  g_test_message ("%s", text);
  g_assert_true (g_str_has_prefix (text, "2 rounds."));
  for (guint v = 0; v < nv; v++)
    for (guint p = 1; p < np; p++)
      {
        g_autofree char *name_a = g_strdup_printf ("%s batch=%s", grid->presets[0], grid->values[v]);
        g_autofree char *name_b = g_strdup_printf ("%s batch=%s", grid->presets[p], grid->values[v]);
        g_autofree char *caveat = NULL;
        TachSummary a, b;

        tach_run_get_summary (tach_scaling_view_get_run (view, 0, v), &a);
        tach_run_get_summary (tach_scaling_view_get_run (view, p, v), &b);
        caveat = tach_summary_dup_load_caveat (name_a, &a, name_b, &b);
        if (caveat == NULL)
          continue;
        g_assert_nonnull (strstr (caveat, "this speed-up is for a busy machine; rerun idle"));
        g_assert_nonnull (strstr (text, caveat));
        n_caveats++;
      }
  /* The spinner took a processor of the machine's: some runs saw it. */
  g_assert_cmpuint (n_caveats, >, 0);
  /* One line for each, under the rounds' line. */
  {
    g_auto(GStrv) lines = g_strsplit (text, "\n", -1);
    guint n_lines = 0;

    for (guint i = 0; lines[i] != NULL; i++)
      n_lines += strstr (lines[i], "rerun idle to compare") != NULL;
    g_assert_cmpuint (n_lines, ==, n_caveats);
  }
}

/* The knob chosen in the view's drop-down. */
static const char *
chosen_knob (TachScalingView *view)
{
  GtkDropDown *choice = GTK_DROP_DOWN (find_widget_of_type (GTK_WIDGET (view), GTK_TYPE_DROP_DOWN));

  return gtk_string_object_get_string (gtk_drop_down_get_selected_item (choice));
}

/* The Scaling view's knobs follow the task as well as the workload: gpt's
 * generation has its own (kv-cache, prompt, new-tokens), which stayed
 * missing after the panel switched training to generation (the list was
 * made again for another workload only); the knob chosen stays where it
 * still applies ("Scaling over --context" of issue 44 keeps context). */
void
test_scaling_task_knobs (Fixture *fixture, gconstpointer data)
{
  TachConfigPanel *panel = tach_window_get_config_panel (fixture->window);
  TachScalingView *view = tach_window_get_scaling_view (fixture->window);
  g_autoptr(GError) error = NULL;

  (void) data;
  g_object_set (panel, "workload", "gpt", NULL);
  tach_scaling_view_refresh (view);
  g_assert_false (tach_scaling_view_set_spec (view, "kv-cache", "none,static"));
  g_assert_true (tach_scaling_view_set_spec (view, "context", "64,128"));
  g_assert_true (tach_config_panel_set_knob (panel, "task", "generate", &error));
  g_assert_no_error (error);
  g_assert_cmpstr (chosen_knob (view), ==, "context");
  g_assert_true (tach_scaling_view_set_spec (view, "prompt", "8,16"));
  g_assert_true (tach_scaling_view_set_spec (view, "kv-cache", "none,static"));
  /* Back to training: generation's knobs go, and the view falls back to
   * the batch, the knob the reports scale with. */
  g_assert_true (tach_config_panel_set_knob (panel, "task", "train", &error));
  g_assert_no_error (error);
  g_assert_cmpstr (chosen_knob (view), ==, "batch");
  g_assert_false (tach_scaling_view_set_spec (view, "kv-cache", "none,static"));
}
