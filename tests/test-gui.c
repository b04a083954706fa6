/* test-gui.c: the desktop app end to end, under xvfb-run.
 *
 * It starts the application and its window, sets a workload and knobs
 * through the panel's properties, runs a short CPU run to completion
 * through the window's action, checks the table row and the chart points,
 * exports CSV and charts and reads them back, runs a comparison of presets,
 * renders the window to a PNG artifact, and closes the window in the middle
 * of a run.  The checks of the charts' pictures are in test-gui-charts.c,
 * the helpers the files share in test-gui-util.c.
 */
#include <locale.h>
#include <math.h>
#include <adwaita.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <tach-engine.h>

#include "tach-run-object.h"
#include "tach-chart-draw.h"
#include "tach-compare-view.h"
#include "test-gui.h"

static void
fixture_setup (Fixture       *fixture,
               gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  TachConfigPanel *panel;

  /* The memory backend keeps settings for the whole process: each test
   * starts from the defaults. */
  test_settings_reset ();
  fixture->app = tach_application_new ();
  g_application_set_flags (G_APPLICATION (fixture->app),
                           g_application_get_flags (G_APPLICATION (fixture->app)) | G_APPLICATION_NON_UNIQUE);
  g_assert_true (g_application_register (G_APPLICATION (fixture->app), NULL, &error));
  g_assert_no_error (error);

  fixture->window = tach_window_new (GTK_APPLICATION (fixture->app));
  /* Two rounds and no time budget: Compare and Scaling pair their runs by
   * round, and how many rounds run does not depend on the clock. */
  tach_window_set_rounds (fixture->window, 2, 0, 0.05);
  gtk_window_present (GTK_WINDOW (fixture->window));
  g_assert_true (iterate_until (window_mapped, fixture->window, 60));

  /* A short CPU run: the properties the panel's rows are bound to. */
  panel = tach_window_get_config_panel (fixture->window);
  g_object_set (panel, "workload", "bilstm", "device", "cpu",
                "batch", 16, "steps", 30, "seed", (guint64) 7, NULL);
  g_assert_true (tach_config_panel_set_knob (panel, "warmup", "2", &error));
  g_assert_no_error (error);

  fixture->tmpdir = g_dir_make_tmp ("tach-gui-XXXXXX", &error);
  g_assert_no_error (error);
}

static void
remove_tree (const char *path)
{
  g_autoptr(GDir) dir = g_dir_open (path, 0, NULL);
  const char *name;

  while (dir && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);

      if (g_file_test (child, G_FILE_TEST_IS_DIR))
        remove_tree (child);
      else
        g_unlink (child);
    }
  g_rmdir (path);
}

static void
fixture_teardown (Fixture       *fixture,
                  gconstpointer  data)
{
  gtk_window_destroy (GTK_WINDOW (fixture->window));
  remove_tree (fixture->tmpdir);
  g_free (fixture->tmpdir);
  g_clear_object (&fixture->app);
}

/* The first label under @widget that is drawn ellipsised, or NULL. */
static GtkLabel *
find_ellipsised_label (GtkWidget *widget)
{
  if (!gtk_widget_get_mapped (widget))
    return NULL;
  if (GTK_IS_LABEL (widget) && pango_layout_is_ellipsized (gtk_label_get_layout (GTK_LABEL (widget))))
    return GTK_LABEL (widget);
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      GtkLabel *label = find_ellipsised_label (child);

      if (label != NULL)
        return label;
    }
  return NULL;
}

/* At the window's default size no value or title in the panel is cut
 * short, for every workload (each greys out other rows). */
void
assert_panel_not_ellipsised (TachWindow *window)
{
  static const char *workloads[] = { "bilstm", "lstm-lm", "cnn", "gpt" };
  TachConfigPanel *panel = tach_window_get_config_panel (window);
  g_autofree char *old = tach_config_panel_get_knob (panel, "workload");

  for (guint i = 0; i < G_N_ELEMENTS (workloads); i++)
    {
      GtkLabel *label;

      g_object_set (panel, "workload", workloads[i], NULL);
      gtk_widget_queue_allocate (GTK_WIDGET (window));
      g_assert_true (iterate_until (window_mapped, window, 60));
      g_main_context_iteration (NULL, FALSE);
      while (g_main_context_iteration (NULL, FALSE))
        ;
      label = find_ellipsised_label (GTK_WIDGET (panel));
      if (label != NULL)
        g_error ("%s: the label '%s' is ellipsised", workloads[i], gtk_label_get_label (label));
    }
  g_object_set (panel, "workload", old, NULL);
}

static void
test_config_knobs (Fixture       *fixture,
                   gconstpointer  data)
{
  TachConfigPanel *panel = tach_window_get_config_panel (fixture->window);
  g_autoptr(GError) error = NULL;
  g_autofree char *workload = NULL;
  g_autofree char *feed = NULL;
  GtkWidget *row;
  guint batch = 0;

  g_object_get (panel, "workload", &workload, "batch", &batch, NULL);
  g_assert_cmpstr (workload, ==, "bilstm");
  g_assert_cmpuint (batch, ==, 16);

  /* A knob set through the panel shows in its row. */
  g_assert_true (tach_config_panel_set_knob (panel, "feed", "prefetch", &error));
  g_assert_no_error (error);
  feed = tach_config_panel_get_knob (panel, "feed");
  g_assert_cmpstr (feed, ==, "prefetch");
  row = tach_config_panel_get_row (panel, "feed");
  g_assert_true (ADW_IS_COMBO_ROW (row));
  g_assert_cmpstr (tach_knob_lookup ("feed")->values[adw_combo_row_get_selected (ADW_COMBO_ROW (row))],
                   ==, "prefetch");
  /* The row shows the value's label, not its identifier. */
  g_assert_cmpstr (gtk_string_object_get_string (adw_combo_row_get_selected_item (ADW_COMBO_ROW (row))),
                   ==, "Prefetch");

  /* A bad value is refused with the engine's message and changes nothing. */
  g_assert_false (tach_config_panel_set_knob (panel, "feed", "teleport", &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  g_clear_pointer (&feed, g_free);
  feed = tach_config_panel_get_knob (panel, "feed");
  g_assert_cmpstr (feed, ==, "prefetch");

  /* A knob that does not apply is insensitive and says why. */
  g_object_set (panel, "workload", "cnn", NULL);
  row = tach_config_panel_get_row (panel, "layout");
  g_assert_false (gtk_widget_get_sensitive (row));
  g_assert_nonnull (gtk_widget_get_tooltip_text (row));
  g_object_set (panel, "workload", "bilstm", NULL);
  g_assert_true (gtk_widget_get_sensitive (tach_config_panel_get_row (panel, "layout")));

  /* Presets apply through the same property. */
  g_object_set (panel, "preset", "keras-fit", NULL);
  g_clear_pointer (&feed, g_free);
  feed = tach_config_panel_get_knob (panel, "feed");
  g_assert_cmpstr (feed, ==, "host-f64");
  /* The preset row's tooltip says where each of its values comes from. */
  g_assert_nonnull (strstr (gtk_widget_get_tooltip_text (tach_config_panel_get_row (panel, "preset")),
                            "feed=host-f64: Keras 2.2.2"));

  assert_panel_not_ellipsised (fixture->window);
}

/* Every value of every knob has a label of its own, distinct from the
 * other values' labels. */
static void
test_value_labels (void)
{
  const TachKnobInfo *knobs;
  guint n = 0;

  knobs = tach_knobs (&n);
  for (guint i = 0; i < n; i++)
    for (guint v = 0; knobs[i].values && knobs[i].values[v]; v++)
      {
        const char *label = tach_knob_value_label (knobs[i].name, knobs[i].values[v]);

        g_assert_cmpstr (label, !=, knobs[i].values[v]);
        for (guint w = 0; w < v; w++)
          g_assert_cmpstr (label, !=, tach_knob_value_label (knobs[i].name, knobs[i].values[w]));
      }
  g_assert_cmpstr (tach_knob_value_label ("rnn", "fused"), ==, "Fused");
  g_assert_cmpstr (tach_knob_value_label ("rnn", "no-such-value"), ==, "no-such-value");
  g_assert_cmpstr (tach_knob_value_label ("no-such-knob", "fused"), ==, "fused");
}

static void
test_run_export (Fixture       *fixture,
                 gconstpointer  data)
{
  TachWindow *window = fixture->window;
  GListModel *runs = tach_window_get_runs (window);
  TachChart *rate_chart = tach_window_get_rate_chart (window);
  TachChart *loss_chart = tach_window_get_loss_chart (window);
  g_autoptr(TachRunObject) run = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GFile) folder = g_file_new_for_path (fixture->tmpdir);
  g_autofree char *runs_csv = g_build_filename (fixture->tmpdir, "runs.csv", NULL);
  g_autofree char *samples_csv = g_build_filename (fixture->tmpdir, "samples.csv", NULL);
  g_autofree char *png_path = g_build_filename (fixture->tmpdir, "charts.png", NULL);
  g_autofree char *svg_path = g_build_filename (fixture->tmpdir, "charts.svg", NULL);
  g_autofree char *svg = NULL;
  g_autofree char *status = NULL;
  g_autofree char *speedup = NULL;
  GtkColumnView *view;
  double warmup_end = 0.0;

  /* Export with nothing finished is an error, not a crash. */
  tach_window_export_csv (window, folder, NULL, on_exported, &error);
  g_assert_true (iterate_until (exported, window, 60));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_IO);
  g_clear_error (&error);
  g_object_set_data (G_OBJECT (window), "test-exported", NULL);

  /* The live figures' captions show from the first run on, not empty. */
  g_assert_nonnull (find_label (GTK_WIDGET (window), "median steps/s"));
  g_assert_false (gtk_widget_is_visible (find_label (GTK_WIDGET (window), "median steps/s")));
  gtk_widget_activate_action (GTK_WIDGET (window), "win.run", NULL);
  g_assert_cmpuint (g_list_model_get_n_items (runs), ==, 1);
  g_assert_true (gtk_widget_is_visible (find_label (GTK_WIDGET (window), "median steps/s")));
  g_assert_true (iterate_until (window_idle, window, 90));

  run = g_list_model_get_item (runs, 0);
  g_assert_cmpint (tach_run_object_get_state (run), ==, TACH_RUN_STATE_FINISHED);
  /* Steps count the warm-up: 30 in all, 2 of them warm-up. */
  g_assert_cmpuint (tach_run_object_get_steps_done (run), ==, 30);
  g_assert_true (isfinite (tach_run_object_get_rate (run)) && tach_run_object_get_rate (run) > 0);
  g_object_get (run, "status", &status, "speedup-text", &speedup, NULL);
  g_assert_cmpstr (status, ==, "Finished");
  /* The first run is its own baseline. */
  g_assert_cmpfloat_with_epsilon (tach_run_object_get_speedup (run), 1.0, 1e-9);
  g_assert_cmpstr (speedup, ==, "1.00×");


  /* The table shows the row; the charts hold every step. */
  view = GTK_COLUMN_VIEW (find_widget_of_type (GTK_WIDGET (tach_window_get_run_table (window)),
                                             GTK_TYPE_COLUMN_VIEW));
  g_assert_true (GTK_IS_COLUMN_VIEW (view));
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (gtk_column_view_get_model (view))), ==, 1);
  g_assert_cmpuint (tach_chart_get_n_series (rate_chart), ==, 1);
  g_assert_cmpuint (tach_chart_series_get_n_points (tach_chart_get_series (rate_chart, 0)), ==, 30);
  g_assert_cmpuint (tach_chart_series_get_n_points (tach_chart_get_series (loss_chart, 0)), ==, 30);
  g_assert_true (tach_chart_series_get_warmup_end (tach_chart_get_series (rate_chart, 0), FALSE, &warmup_end));
  g_assert_cmpfloat (warmup_end, ==, 2.0);

  /* CSV, read back. */
  tach_window_export_csv (window, folder, NULL, on_exported, &error);
  g_assert_true (iterate_until (exported, window, 30));
  g_assert_no_error (error);
  g_assert_cmpuint (count_lines (runs_csv), ==, 2);
  g_assert_cmpuint (count_lines (samples_csv), ==, 1 + 30);

  /* The chart options follow the window: wall-time x axis by property, log
   * y axis by its action. */
  g_object_set (window, "by-time", TRUE, NULL);
  g_assert_true (tach_chart_get_by_time (rate_chart));
  g_assert_true (tach_chart_get_by_time (loss_chart));
  gtk_widget_activate_action (GTK_WIDGET (window), "win.log-scale", NULL);
  g_assert_true (tach_chart_get_log_scale (rate_chart));
  g_object_set (window, "smoothing", 0.9, NULL);
  g_assert_cmpfloat (tach_chart_get_smoothing (loss_chart), ==, 0.9);

  /* The charts, as PNG and SVG, with the run's legend under them. */
  check_export_legend (window, png_path);
  g_assert_true (tach_window_export_charts (window, svg_path, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (svg_path, &svg, NULL, NULL));
  g_assert_nonnull (strstr (svg, "<svg"));
  g_assert_nonnull (strstr (svg, "height=\"8"));
  /* A hidden run leaves the legend. */
  g_object_set (run, "visible", FALSE, NULL);
  check_export_legend (window, png_path);
  g_object_set (run, "visible", TRUE, NULL);

  render_window (window, "test-gui-window.png");
}

gboolean
sweep_done (gpointer data)
{
  TachWindow *window = data;
  GListModel *sweep = tach_window_get_sweep (window);
  g_autoptr(GPtrArray) presets = tach_presets_for_ranks (TACH_WORKLOAD_BILSTM, 1);

  return g_list_model_get_n_items (sweep) == presets->len && !tach_window_get_running (window);
}

/* A run waited for (the window waits for its active run as it closes)
 * keeps no reference on itself: no notification comes after the wait, and
 * the one the engine had queued is dropped, not run on the freed object
 * (GLib's "invalid (NULL) class pointer" after a test's window went). */
static void
test_run_wait_lets_go (void)
{
  static const char *const knobs[][2] = {
    { "device", "cpu" }, { "batch", "8" }, { "steps", "12" }, { "threads", "1" },
  };
  g_autoptr(GError) error = NULL;
  TachConfig config;
  TachRunObject *object;
  TachRun *run;

  tach_config_init (&config, TACH_WORKLOAD_BILSTM);
  for (guint i = 0; i < G_N_ELEMENTS (knobs); i++)
    g_assert_true (tach_config_set (&config, knobs[i][0], knobs[i][1], NULL));
  run = tach_run_new (&config, &error);
  tach_config_clear (&config);
  g_assert_no_error (error);
  object = tach_run_object_new (run, 1, 0);
  tach_run_unref (run);
  g_assert_true (tach_run_object_start (object, &error));
  g_assert_no_error (error);
  tach_run_object_wait (object);
  g_assert_cmpint (tach_run_object_get_state (object), ==, TACH_RUN_STATE_FINISHED);
  g_object_add_weak_pointer (G_OBJECT (object), (gpointer *) &object);
  g_object_unref (object);
  g_assert_null (object);
  while (g_main_context_iteration (NULL, FALSE))
    ;
}

/* A run of other work than the baseline's has no speed-up over it: a
 * dash, not 0.00×; picked as the baseline, it is its own 1.00×. */
static void
test_speedup_other_work (Fixture       *fixture,
                         gconstpointer  data)
{
  TachWindow *window = fixture->window;
  GListModel *runs = tach_window_get_runs (window);
  TachConfigPanel *panel = tach_window_get_config_panel (window);
  TachRunTable *table = tach_window_get_run_table (window);
  g_autoptr(TachRunObject) first = NULL;
  g_autoptr(TachRunObject) other = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *first_text = NULL;
  g_autofree char *other_text = NULL;

  gtk_widget_activate_action (GTK_WIDGET (window), "win.run", NULL);
  g_assert_true (iterate_until (window_idle, window, 90));
  g_object_set (panel, "workload", "lstm-lm", NULL);
  g_assert_true (tach_config_panel_set_knob (panel, "task", "generate", &error));
  g_assert_no_error (error);
  g_object_set (panel, "steps", 30, NULL);
  gtk_widget_activate_action (GTK_WIDGET (window), "win.run", NULL);
  g_assert_true (iterate_until (window_idle, window, 90));
  g_assert_cmpuint (g_list_model_get_n_items (runs), ==, 2);
  first = g_list_model_get_item (runs, 0);
  other = g_list_model_get_item (runs, 1);
  g_assert_cmpint (tach_run_object_get_state (other), ==, TACH_RUN_STATE_FINISHED);

  g_assert_cmpfloat_with_epsilon (tach_run_object_get_speedup (first), 1.0, 1e-9);
  g_object_get (first, "speedup-text", &first_text, NULL);
  g_assert_cmpstr (first_text, ==, "1.00×");
  g_object_get (other, "speedup-text", &other_text, NULL);
  g_assert_cmpstr (other_text, ==, "—");
  g_assert_true (isnan (tach_run_object_get_speedup (other)));

  tach_run_table_set_baseline (table, 1);
  g_assert_cmpfloat_with_epsilon (tach_run_object_get_speedup (other), 1.0, 1e-9);
  g_assert_true (isnan (tach_run_object_get_speedup (first)));
}

static void
test_compare (Fixture       *fixture,
              gconstpointer  data)
{
  GListModel *sweep = tach_window_get_sweep (fixture->window);
  g_autoptr(GPtrArray) presets = tach_presets_for_ranks (TACH_WORKLOAD_BILSTM, 1);

  gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.compare", NULL);
  g_assert_true (iterate_until (sweep_done, fixture->window, 120));
  for (guint i = 0; i < presets->len; i++)
    {
      g_autoptr(TachRunObject) run = g_list_model_get_item (sweep, i);
      const TachPreset *preset = g_ptr_array_index (presets, i);

      g_assert_cmpstr (tach_run_object_get_preset (run), ==, preset->name);
      g_assert_cmpint (tach_run_object_get_state (run), ==, TACH_RUN_STATE_FINISHED);
      g_assert_true (tach_run_object_get_rate (run) > 0);
    }
  /* Two rounds of every preset: every run in the table, one row each in
   * the comparison, and the rounds said above the bars. */
  g_assert_cmpuint (g_list_model_get_n_items (tach_window_get_runs (fixture->window)), ==,
                    2 * presets->len);
  {
    const char *line = tach_compare_view_get_rounds_text (
      TACH_COMPARE_VIEW (find_widget_with_css_name (GTK_WIDGET (fixture->window),
                                                    "tach-compare-view")));

    g_assert_nonnull (line);
    g_assert_true (g_str_has_prefix (line, "2 rounds."));
  }
  /* One verdict per comparison (issue 42): a row's figure paired by round
   * is the run table's too, never "machine busy" (that is for runs
   * measured apart), and the figure tach_run_object_compare gives. */
  {
    g_autoptr(TachRunObject) base = g_list_model_get_item (sweep, 0);
    g_autoptr(TachRunObject) row = g_list_model_get_item (sweep, 1);
    const TachInterval paired = { 1.5, 1.4, 1.6 };
    TachInterval got;
    g_autofree char *text = NULL;

    tach_run_object_set_paired (row, base, &paired);
    tach_run_object_set_baseline (row, base);
    g_assert_cmpint (tach_run_object_compare (row, base, &got, NULL), ==, TACH_VERDICT_SIGNIFICANT);
    g_assert_cmpfloat (got.value, ==, 1.5);
    g_assert_cmpfloat (tach_run_object_get_speedup (row), ==, 1.5);
    g_object_get (row, "speedup-text", &text, NULL);
    g_assert_cmpstr (text, ==, "1.50× (1.40–1.60)");
    g_assert_null (tach_run_object_dup_busy_apart (row, base));
  }
  render_window (fixture->window, "test-gui-compare.png");

  /* The exported charts tell the runs apart: one legend entry per visible
   * run, in its colour; a run hidden in the window is left out. */
  {
    g_autofree char *png_path = g_build_filename (fixture->tmpdir, "compare.png", NULL);
    g_autoptr(TachRunObject) first = g_list_model_get_item (sweep, 0);

    check_export_legend (fixture->window, png_path);
    g_object_set (first, "visible", FALSE, NULL);
    check_export_legend (fixture->window, png_path);
    g_free (png_path);
    /* Kept beside the window's renders, as an artifact. */
    png_path = g_test_build_filename (G_TEST_BUILT, "test-gui-export.png", NULL);
    check_export_legend (fixture->window, png_path);
  }
}

static void
test_close_stops_run (Fixture       *fixture,
                      gconstpointer  data)
{
  TachConfigPanel *panel = tach_window_get_config_panel (fixture->window);
  g_autoptr(TachRunObject) run = NULL;
  g_autoptr(GError) error = NULL;

  g_object_set (panel, "steps", 1000000, NULL);
  g_assert_true (tach_window_start_run (fixture->window, &error));
  g_assert_no_error (error);
  run = g_list_model_get_item (tach_window_get_runs (fixture->window), 0);
  g_assert_true (tach_window_get_running (fixture->window));

  /* Closing joins the engine thread: the run is over when close returns. */
  gtk_window_close (GTK_WINDOW (fixture->window));
  g_assert_false (tach_run_object_is_active (run));
  g_assert_cmpint (tach_run_object_get_state (run), ==, TACH_RUN_STATE_CANCELLED);
  g_assert_true (tach_run_object_get_steps_done (run) < 1000000);

  /* A fresh window for the fixture's teardown. */
  fixture->window = tach_window_new (GTK_APPLICATION (fixture->app));
}

/* A setting the engine refuses becomes a message; no run starts and the
 * window stays usable for the next one. */
static void
test_run_error (Fixture       *fixture,
                gconstpointer  data)
{
  TachConfigPanel *panel = tach_window_get_config_panel (fixture->window);
  GListModel *runs = tach_window_get_runs (fixture->window);
  g_autoptr(GError) error = NULL;
  AdwMessageDialog *dialog;
  GtkWidget *row;
  TachConfig bad;
  g_autofree char *head = NULL;

  g_object_set (panel, "workload", "cnn", NULL);
  g_assert_true (tach_config_panel_set_knob (panel, "input", "1080x1920x3", &error));
  g_assert_false (tach_window_start_run (fixture->window, &error));
  g_assert_nonnull (error);
  g_assert_true (error->domain == TACH_ERROR);
  /* The message names the settings as the panel shows them, not the
   * command line's options. */
  g_assert_nonnull (strstr (error->message, "use Classifier head “Global average pooling”"));
  g_assert_nonnull (strstr (error->message, "Input size 1080x1920x3"));
  g_assert_null (strstr (error->message, "--"));
  g_clear_error (&error);

  /* Through the action, a dialog says what failed, the row and the fix
   * (from the error's hint, not read out of the message); the row is
   * marked, with the fix as a button, and the dialog offers it too. */
  gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.run", NULL);
  g_assert_cmpuint (g_list_model_get_n_items (runs), ==, 0);
  g_assert_false (tach_window_get_running (fixture->window));
  dialog = find_message_dialog (fixture->window);
  g_assert_nonnull (dialog);
  g_assert_cmpstr (adw_message_dialog_get_heading (dialog), ==, "Cannot Start the Run");
  g_assert_nonnull (strstr (adw_message_dialog_get_body (dialog),
                            "use Classifier head “Global average pooling”"));
  g_assert_null (strstr (adw_message_dialog_get_body (dialog), "--"));
  g_assert_nonnull (strstr (adw_message_dialog_get_body (dialog),
                            "In the settings:\nClassifier head → Global average pooling"));
  g_assert_cmpstr (tach_config_panel_get_marked_knob (panel), ==, "head");
  row = tach_config_panel_get_row (panel, "head");
  g_assert_true (gtk_widget_has_css_class (row, "error"));
  g_assert_nonnull (strstr (gtk_widget_get_tooltip_text (row),
                            "use Classifier head “Global average pooling”"));
  g_assert_true (adw_message_dialog_has_response (dialog, "apply"));
  g_assert_cmpstr (adw_message_dialog_get_response_label (dialog, "apply"), ==,
                   "Use Global average pooling");
  render_window (fixture->window, "gui-hint-marked.png");

  /* The dialog's button applies the fix: the row is unmarked, and the next
   * refusal (the images' memory at that batch) marks its own row. */
  adw_message_dialog_response (dialog, "apply");
  gtk_window_destroy (GTK_WINDOW (dialog));
  head = tach_config_panel_get_knob (panel, "head");
  g_assert_cmpstr (head, ==, "gap");
  g_assert_null (tach_config_panel_get_marked_knob (panel));
  g_assert_false (gtk_widget_has_css_class (row, "error"));
  g_assert_false (tach_window_start_run (fixture->window, &error));
  g_assert_true (tach_config_panel_mark_error (panel, error));
  g_assert_cmpstr (tach_config_panel_get_marked_knob (panel), !=, "head");
  g_assert_true (gtk_widget_has_css_class (tach_config_panel_get_row (
                   panel, tach_config_panel_get_marked_knob (panel)), "error"));
  g_clear_error (&error);

  /* The row's own button is the panel's action: a refused layout on the
   * cnn, fixed from the row. */
  g_assert_true (tach_config_panel_set_knob (panel, "input", "28x28x1", NULL));
  g_assert_null (tach_config_panel_get_marked_knob (panel));
  tach_config_init (&bad, TACH_WORKLOAD_CNN);
  bad.layout = TACH_LAYOUT_MISREAD;
  g_assert_false (tach_config_validate (&bad, NULL, &error));
  tach_config_clear (&bad);
  g_assert_true (tach_config_panel_mark_error (panel, error));
  g_clear_error (&error);
  g_assert_cmpstr (tach_config_panel_get_marked_knob (panel), ==, "layout");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (panel), "panel.apply-fix", NULL));
  g_assert_null (tach_config_panel_get_marked_knob (panel));

  /* An error that names no knob marks nothing. */
  g_set_error_literal (&error, TACH_ERROR, TACH_ERROR_IO, "choose another --csv folder");
  g_assert_false (tach_config_panel_mark_error (panel, error));
  g_assert_null (tach_config_panel_get_marked_knob (panel));
  g_clear_error (&error);

  g_object_set (panel, "workload", "bilstm", "batch", 16, "steps", 10, NULL);
  gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.run", NULL);
  g_assert_true (iterate_until (window_idle, fixture->window, 60));
  g_assert_cmpuint (g_list_model_get_n_items (runs), ==, 1);
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *podir = NULL;

  gtk_test_init (&argc, &argv, NULL);
  adw_init ();
  /* gtk_test_init() leaves the C locale, in which gettext ignores
   * LANGUAGE; the environment's (C.UTF-8 under meson test) honours it. */
  setlocale (LC_ALL, "");

  /* The catalogues built in this tree, not the installed ones. */
  podir = g_test_build_filename (G_TEST_BUILT, "..", "po", NULL);
  bindtextdomain (GETTEXT_PACKAGE, podir);
  bind_textdomain_codeset (GETTEXT_PACKAGE, "UTF-8");
  textdomain (GETTEXT_PACKAGE);

  g_test_add_func ("/gui/config/value-labels", test_value_labels);
  g_test_add ("/gui/config/knobs", Fixture, NULL, fixture_setup, test_config_knobs, fixture_teardown);
  g_test_add ("/gui/run/export", Fixture, NULL, fixture_setup, test_run_export, fixture_teardown);
  g_test_add_func ("/gui/run/wait-lets-go", test_run_wait_lets_go);
  g_test_add ("/gui/run/speedup-other-work", Fixture, NULL, fixture_setup, test_speedup_other_work,
              fixture_teardown);
  g_test_add ("/gui/gpt/panel", Fixture, NULL, fixture_setup, test_gpt_panel, fixture_teardown);
  g_test_add ("/gui/gpt/task-batch", Fixture, NULL, fixture_setup, test_gpt_task_batch,
              fixture_teardown);
  g_test_add ("/gui/gpt/generate", Fixture, NULL, fixture_setup, test_gpt_generate, fixture_teardown);
  g_test_add ("/gui/gpt/compare", Fixture, NULL, fixture_setup, test_gpt_compare, fixture_teardown);
  g_test_add_func ("/gui/compare/rounds-wrap", test_compare_rounds_wrap);
  g_test_add ("/gui/compare", Fixture, NULL, fixture_setup, test_compare, fixture_teardown);
  g_test_add ("/gui/close-stops-run", Fixture, NULL, fixture_setup, test_close_stops_run, fixture_teardown);
  g_test_add ("/gui/run/error", Fixture, NULL, fixture_setup, test_run_error, fixture_teardown);
  g_test_add ("/gui/run/fault", Fixture, NULL, fixture_setup, test_run_fault, fixture_teardown);
  g_test_add ("/gui/run/machine-busy", Fixture, NULL, fixture_setup, test_run_busy, fixture_teardown);
  g_test_add ("/gui/settings/restore", Fixture, NULL, fixture_setup, test_settings_restore, fixture_teardown);
  g_test_add ("/gui/notify/finished", Fixture, NULL, fixture_setup, test_notify_finished, fixture_teardown);
  g_test_add ("/gui/open/command-line", Fixture, NULL, fixture_setup, test_open_command_line, fixture_teardown);
  g_test_add ("/gui/open/results", Fixture, NULL, fixture_setup, test_open_results, fixture_teardown);
  g_test_add ("/gui/open/explain", Fixture, NULL, fixture_setup, test_open_explain, fixture_teardown);
  g_test_add ("/gui/open/many-runs", Fixture, NULL, fixture_setup, test_open_many_runs, fixture_teardown);
  g_test_add ("/gui/chart/aligned", Fixture, NULL, fixture_setup, test_charts_aligned, fixture_teardown);
  g_test_add ("/gui/compare/explain", Fixture, NULL, fixture_setup, test_explain, fixture_teardown);
  g_test_add ("/gui/scaling", Fixture, NULL, fixture_setup, test_scaling, fixture_teardown);
  g_test_add ("/gui/scaling/task-knobs", Fixture, NULL, fixture_setup, test_scaling_task_knobs,
              fixture_teardown);
  g_test_add_func ("/gui/scaling/busy-apart", test_scaling_busy_apart);
  g_test_add ("/gui/scaling/busy", Fixture, NULL, fixture_setup, test_scaling_busy, fixture_teardown);
  test_gui_ranks_add (fixture_setup, fixture_teardown);
  test_gui_fit_add (fixture_setup, fixture_teardown);
  g_test_add ("/gui/i18n/zh_CN", Fixture, NULL, fixture_setup, test_i18n_zh_cn, fixture_teardown);
  g_test_add ("/gui/screenshots", Fixture, NULL, fixture_setup, test_screenshots, fixture_teardown);
  g_test_add ("/gui/layout", Fixture, NULL, fixture_setup, test_layout, fixture_teardown);
  g_test_add ("/gui/layout/gpt", Fixture, "gpt", fixture_setup, test_layout, fixture_teardown);
  g_test_add ("/gui/a11y", Fixture, NULL, fixture_setup, test_a11y, fixture_teardown);
  return g_test_run ();
}
