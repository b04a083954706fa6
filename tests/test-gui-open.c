/* test-gui-open.c: results folders opened in the window.  tach-cli (the
 * path in TACH_CLI) runs a sweep into a folder; the window opens it beside
 * a corrupted copy and must show what tach-cli printed (median steps/s,
 * final loss, phase shares, speed-ups against a loaded baseline), report
 * the corrupted rows by file and line, plot every step, and export loaded
 * and new runs together. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <adwaita.h>
#include <glib/gstdio.h>
#include <tach-engine.h>

#include "tach-run-object.h"
#include "test-gui.h"

typedef struct {
  char   *preset;
  double  rate, loss, compute, speedup;
} CliRow;

/* The table tach-cli sweep prints: one row per preset. */
static GArray *
parse_sweep_table (const char *out)
{
  g_auto(GStrv) lines = g_strsplit (out, "\n", -1);
  g_autoptr(GPtrArray) presets = tach_presets_for_workload (TACH_WORKLOAD_BILSTM);
  GArray *rows = g_array_new (FALSE, TRUE, sizeof (CliRow));

  for (guint i = 0; lines[i] != NULL; i++)
    for (guint p = 0; p < presets->len; p++)
      {
        const TachPreset *preset = g_ptr_array_index (presets, p);
        gsize n = strlen (preset->name);
        CliRow row = { 0 };
        char spread[64];
        double items, feed;

        if (strncmp (lines[i], preset->name, n) != 0 || lines[i][n] != ' ')
          continue;
        g_assert_cmpint (sscanf (lines[i] + n, "%lf %63s %lf %lf %lf%% %lf%%", &row.rate, spread,
                                 &items, &row.loss, &feed, &row.compute), ==, 6);
        g_assert_nonnull (strrchr (lines[i], 'x'));
        /* "1.00x", "1.52x (1.40–1.65)" or "~1.02x (0.95–1.10)": the
         * ratio is the word before the interval. */
        {
          g_auto(GStrv) words = g_strsplit_set (lines[i], " ~", -1);
          guint w = g_strv_length (words);

          while (w > 0 && strchr (words[w - 1], 'x') == NULL)
            w--;
          g_assert_cmpuint (w, >, 0);
          row.speedup = g_ascii_strtod (words[w - 1], NULL);
        }
        row.preset = g_strdup (preset->name);
        g_array_append_val (rows, row);
      }
  return rows;
}

static void
copy_file (const char *from_dir, const char *to_dir, const char *name, guint bad_line)
{
  g_autofree char *from = g_build_filename (from_dir, name, NULL);
  g_autofree char *to = g_build_filename (to_dir, name, NULL);
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;
  g_autofree char *joined = NULL;

  g_assert_true (g_file_get_contents (from, &text, NULL, NULL));
  lines = g_strsplit (text, "\r\n", -1);
  g_assert_cmpuint (g_strv_length (lines), >, bad_line);
  g_free (lines[bad_line - 1]);
  lines[bad_line - 1] = g_strdup ("\"this row was cut, short");
  joined = g_strjoinv ("\r\n", lines);
  g_assert_true (g_file_set_contents (to, joined, -1, NULL));
}

static gboolean
has_dialog (gpointer window)
{
  return find_message_dialog (window) != NULL;
}

static gboolean
window_not_running (gpointer data)
{
  return !tach_window_get_running (data);
}

void
test_open_results (Fixture       *fixture,
                   gconstpointer  data)
{
  const char *cli = g_getenv ("TACH_CLI");
  TachWindow *window = fixture->window;
  GListModel *runs = tach_window_get_runs (window);
  GListModel *sweep = tach_window_get_sweep (window);
  g_autofree char *good = g_build_filename (fixture->tmpdir, "sweep-out", NULL);
  g_autofree char *bad = g_build_filename (fixture->tmpdir, "cut-short", NULL);
  g_autofree char *out_dir = g_build_filename (fixture->tmpdir, "all", NULL);
  g_autofree char *out_runs = g_build_filename (out_dir, "runs.csv", NULL);
  g_autofree char *bad_runs = g_build_filename (bad, "runs.csv", NULL);
  g_autofree char *bad_samples = g_build_filename (bad, "samples.csv", NULL);
  g_autofree char *cli_out = NULL;
  g_autofree char *where = NULL;
  g_autoptr(GArray) table = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GFile) out_folder = NULL;
  g_auto(GStrv) problems = NULL;
  GFile *folders[2];
  gboolean shot = g_getenv ("TACH_SCREENSHOT_DIR") != NULL;
  int status = 0;
  guint n_sweep;

  if (cli == NULL)
    {
      g_test_skip ("TACH_CLI is not set");
      return;
    }
  {
    /* Larger runs for the screenshot of resources/screenshots/. */
    const char *argv[] = { cli, "sweep", "--workload", "bilstm", "--presets", "all", "--device", "cpu",
                           "--batch", shot ? "128" : "8", "--steps", shot ? "80" : "12",
                           "--warmup", "2", "--threads", "1", "--rounds", "1", "--budget", "0",
                           "--csv", good, NULL };

    g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                                 &cli_out, NULL, &status, &error));
    g_assert_no_error (error);
    g_assert_true (g_spawn_check_wait_status (status, NULL));
  }
  table = parse_sweep_table (cli_out);
  n_sweep = table->len;
  g_assert_cmpuint (n_sweep, >=, 3);

  /* The copy: its second run's row and one of its samples cut short. */
  g_assert_cmpint (g_mkdir (bad, 0755), ==, 0);
  copy_file (good, bad, "runs.csv", 3);
  copy_file (good, bad, "samples.csv", 5);

  folders[0] = g_file_new_for_path (good);
  folders[1] = g_file_new_for_path (bad);
  tach_window_open_folders (window, folders, 2, on_opened, &error);
  g_assert_true (iterate_until (opened, window, 30));
  g_object_unref (folders[0]);
  g_object_unref (folders[1]);

  /* Everything readable loaded; the rest is named by file and line. */
  g_assert_cmpuint (GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (window), "test-opened")) - 1,
                    ==, 2 * n_sweep - 1);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  problems = g_strsplit (error->message, "\n", -1);
  where = g_strdup_printf ("%s:3: ", bad_runs);
  g_assert_nonnull (strstr (error->message, where));
  g_clear_pointer (&where, g_free);
  where = g_strdup_printf ("%s:5: ", bad_samples);
  g_assert_nonnull (strstr (error->message, where));
  g_clear_error (&error);
  g_assert_cmpuint (g_list_model_get_n_items (runs), ==, 2 * n_sweep - 1);
  g_assert_cmpuint (g_list_model_get_n_items (sweep), ==, 2 * n_sweep - 1);
  g_assert_cmpuint (tach_chart_get_n_series (tach_window_get_rate_chart (window)), ==, 2 * n_sweep - 1);

  /* The first folder's runs show what tach-cli printed, against the
   * first of them as the baseline, as tach-cli's speed-ups are. */
  tach_run_table_set_baseline (tach_window_get_run_table (window), 0);
  tach_run_table_update_speedups (tach_window_get_run_table (window));
  for (guint i = 0; i < n_sweep; i++)
    {
      g_autoptr(TachRunObject) run = g_list_model_get_item (runs, i);
      const CliRow *row = &g_array_index (table, CliRow, i);
      TachChartSeries *series = tach_run_object_get_rate_series (run);
      g_autofree char *loss_text = NULL;
      g_autofree char *status_text = NULL;
      g_autofree char *expect_loss = g_strdup_printf ("%.4f", row->loss);

      g_object_get (run, "loss-text", &loss_text, "status", &status_text, NULL);
      g_assert_cmpstr (tach_run_object_get_preset (run), ==, row->preset);
      g_assert_nonnull (strstr (tach_run_object_get_title (run), "sweep-out"));
      g_assert_nonnull (strstr (tach_run_object_get_title (run), tach_run_get_device (tach_run_object_get_run (run))->name));
      g_assert_cmpfloat_with_epsilon (tach_run_object_get_rate (run), row->rate, 0.006);
      g_assert_cmpstr (loss_text, ==, expect_loss);
      g_assert_cmpstr (status_text, ==, "Finished");
      g_assert_cmpfloat_with_epsilon (100 * tach_run_object_get_share (run, 1), row->compute, 0.051);
      g_assert_cmpfloat_with_epsilon (tach_run_object_get_speedup (run), row->speedup, 0.006);
      g_assert_cmpuint (tach_chart_series_get_n_points (series), ==, shot ? 80 : 12);
      g_assert_false (tach_run_object_is_active (run));
    }

  if (shot)
    {
      g_autofree char *png = g_build_filename (g_getenv ("TACH_SCREENSHOT_DIR"), "open-light.png", NULL);

      render_window (window, png);
    }
  else
    render_window (window, "test-gui-open.png");

  /* A new run joins them, and Export CSV writes loaded and new runs. */
  gtk_widget_activate_action (GTK_WIDGET (window), "win.run", NULL);
  g_assert_true (iterate_until (window_not_running, window, 90));
  g_assert_cmpuint (g_list_model_get_n_items (runs), ==, 2 * n_sweep);
  out_folder = g_file_new_for_path (out_dir);
  tach_window_export_csv (window, out_folder, NULL, on_exported, &error);
  g_assert_true (iterate_until (exported, window, 30));
  g_assert_no_error (error);
  /* The corrupted copy's runs are the same runs as the good folder's (the
   * same run ids), so they are written once. */
  g_assert_cmpuint (count_lines (out_runs), ==, 1 + n_sweep + 1);

  /* And Export for TensorBoard writes one folder per run. */
  {
    g_autofree char *tb = g_build_filename (fixture->tmpdir, "tb", NULL);
    g_autoptr(GFile) tb_folder = g_file_new_for_path (tb);
    g_autoptr(GDir) d = NULL;
    guint n = 0;

    g_object_set_data (G_OBJECT (window), "test-exported", NULL);
    tach_window_export_tensorboard (window, tb_folder, NULL, on_exported, &error);
    g_assert_true (iterate_until (exported, window, 30));
    g_assert_no_error (error);
    d = g_dir_open (tb, 0, NULL);
    g_assert_nonnull (d);
    while (g_dir_read_name (d) != NULL)
      n++;
    g_assert_cmpuint (n, ==, n_sweep + 1);
  }

  /* The window's own opening lists the problems in its dialog one a line,
   * left-aligned, in a scrolled area, not in the centred body. */
  {
    g_autoptr(GFile) cut = g_file_new_for_path (bad);
    AdwMessageDialog *dialog;
    GtkWidget *scroller, *label;
    guint k = 0;

    tach_window_open (window, &cut, 1);
    g_assert_true (iterate_until (has_dialog, window, 30));
    dialog = find_message_dialog (window);
    g_assert_cmpstr (adw_message_dialog_get_heading (dialog), ==, "Some Results Could Not Be Read");
    g_assert_null (strstr (adw_message_dialog_get_body (dialog), bad_runs));
    scroller = adw_message_dialog_get_extra_child (dialog);
    g_assert_true (GTK_IS_SCROLLED_WINDOW (scroller));
    label = gtk_widget_get_first_child (scrolled_child (scroller));
    for (; label != NULL; label = gtk_widget_get_next_sibling (label), k++)
      {
        g_assert_true (GTK_IS_LABEL (label));
        g_assert_cmpstr (gtk_label_get_label (GTK_LABEL (label)), ==, problems[k]);
        g_assert_cmpfloat (gtk_label_get_xalign (GTK_LABEL (label)), ==, 0);
      }
    g_assert_cmpuint (k, ==, g_strv_length (problems));
    /* Tall enough for every problem, up to its limit, and not a line and a
     * half of them behind a scroll bar. */
    {
      int natural = 0, height;

      for (guint spins = 0; spins < 200 && gtk_widget_get_height (scroller) == 0; spins++)
        g_main_context_iteration (NULL, TRUE);
      gtk_widget_measure (scrolled_child (scroller), GTK_ORIENTATION_VERTICAL,
                          gtk_widget_get_width (scroller), NULL, &natural, NULL, NULL);
      height = gtk_widget_get_height (scroller);
      g_test_message ("problem list: %d px tall, its lines %d px", height, natural);
      g_assert_cmpint (height, >=, MIN (natural, 320));
    }
    gtk_window_destroy (GTK_WINDOW (dialog));
  }


  for (guint i = 0; i < table->len; i++)
    g_free (g_array_index (table, CliRow, i).preset);
}

/* Runs tach-cli with @argv, quietly, and checks that it succeeded. */
static void
run_cli (const char **argv)
{
  g_autoptr(GError) error = NULL;
  int status = 0;

  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                               NULL, NULL, NULL, NULL, &status, &error));
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
}

static gboolean
has_loaded (gpointer data)
{
  return g_list_model_get_n_items (tach_window_get_runs (data)) > 0;
}

/* `tach DIR`: the application's open opens the folder in its window. */
void
test_open_command_line (Fixture       *fixture,
                        gconstpointer  data)
{
  const char *cli = g_getenv ("TACH_CLI");
  g_autofree char *dir = g_build_filename (fixture->tmpdir, "from-cli", NULL);
  g_autoptr(GFile) folder = g_file_new_for_path (dir);
  g_autoptr(GError) error = NULL;
  g_autoptr(TachRunObject) run = NULL;
  GListModel *runs = tach_window_get_runs (fixture->window);
  const char *argv[] = { cli, "run", "--workload", "lstm-lm", "--device", "cpu", "--batch", "4",
                         "--steps", "6", "--warmup", "1", "--threads", "1", "--csv", dir, NULL };

  if (cli == NULL)
    {
      g_test_skip ("TACH_CLI is not set");
      return;
    }
  run_cli (argv);

  g_application_open (G_APPLICATION (fixture->app), &folder, 1, "");
  g_assert_true (iterate_until (has_loaded, fixture->window, 30));
  g_assert_cmpuint (g_list_model_get_n_items (runs), ==, 1);
  run = g_list_model_get_item (runs, 0);
  g_assert_nonnull (strstr (tach_run_object_get_title (run), "lstm-lm"));
  g_assert_nonnull (strstr (tach_run_object_get_title (run), "from-cli"));
  g_assert_cmpuint (tach_chart_series_get_n_points (tach_run_object_get_rate_series (run)), ==, 6);
}

static gboolean
window_is_1280x800 (gpointer data)
{
  /* The default size counts the frame's shadow, a few pixels. */
  return gtk_widget_get_width (data) > 1260 && gtk_widget_get_width (data) <= 1280
         && gtk_widget_get_height (data) > 780 && gtk_widget_get_height (data) <= 800;
}

/* The y of @widget's top and bottom in @window's coordinates. */
static void
widget_span (GtkWidget *widget, TachWindow *window, double *top, double *bottom)
{
  graphene_rect_t bounds;

  g_assert_true (gtk_widget_compute_bounds (widget, GTK_WIDGET (window), &bounds));
  *top = bounds.origin.y;
  *bottom = bounds.origin.y + bounds.size.height;
}

/* Fifty loaded runs (a sweep of two presets over 25 batch sizes) in a
 * 1280x800 window: the Live view's toolbar stays on screen above a legend
 * that wraps and scrolls within a few rows, whose chips name each run
 * briefly and in full in their tooltips, and the charts keep their room. */
void
test_open_many_runs (Fixture       *fixture,
                     gconstpointer  data)
{
  const char *cli = g_getenv ("TACH_CLI");
  TachWindow *window = fixture->window;
  GListModel *runs = tach_window_get_runs (window);
  g_autofree char *dir = g_build_filename (fixture->tmpdir, "fifty-runs", NULL);
  g_autoptr(GFile) folder = g_file_new_for_path (dir);
  g_autoptr(GError) error = NULL;
  GtkWidget *toolbar, *legend, *flow, *chart;
  GtkAdjustment *scroll;
  double toolbar_top, toolbar_bottom, legend_top, legend_bottom, chart_top, chart_bottom;
  guint n_chips = 0;
  const char *argv[] = { cli, "sweep", "--workload", "bilstm", "--presets", "tf1-constant,tuned",
                         "--vary", "batch=1..25+1", "--device", "cpu", "--steps", "3",
                         "--warmup", "1", "--threads", "1", "--rounds", "1", "--budget", "0",
                         "--csv", dir, NULL };

  if (cli == NULL)
    {
      g_test_skip ("TACH_CLI is not set");
      return;
    }
  run_cli (argv);

  /* A window made at that size: a shown one keeps its size. */
  gtk_window_destroy (GTK_WINDOW (window));
  window = fixture->window = tach_window_new (GTK_APPLICATION (fixture->app));
  runs = tach_window_get_runs (window);
  gtk_window_set_default_size (GTK_WINDOW (window), 1280, 800);
  gtk_window_present (GTK_WINDOW (window));
  if (!iterate_until (window_is_1280x800, window, 60))
    g_error ("the window is %dx%d, not 1280x800", gtk_widget_get_width (GTK_WIDGET (window)),
             gtk_widget_get_height (GTK_WIDGET (window)));
  /* With no run, the legend takes no room. */
  g_assert_false (gtk_widget_get_visible (find_widget_with_class (GTK_WIDGET (window), "run-legend")));
  tach_window_open_folders (window, &folder, 1, on_opened, &error);
  g_assert_true (iterate_until (opened, window, 30));
  g_assert_no_error (error);
  g_assert_cmpuint (g_list_model_get_n_items (runs), ==, 50);
  /* The layout of the window with them in it. */
  render_window (window, "test-gui-many-runs.png");

  toolbar = find_widget_with_class (GTK_WIDGET (window), "chart-toolbar");
  legend = find_widget_with_class (GTK_WIDGET (window), "run-legend");
  chart = GTK_WIDGET (tach_window_get_rate_chart (window));
  g_assert_nonnull (toolbar);
  widget_span (toolbar, window, &toolbar_top, &toolbar_bottom);
  /* Top to bottom, in the window and not overlapping: the toolbar, the
   * legend (a few rows of chips: it scrolls the rest), the chart. */
  g_assert_cmpfloat (toolbar_top, >=, 0.0);
  g_assert_true (GTK_IS_SCROLLED_WINDOW (legend));
  widget_span (legend, window, &legend_top, &legend_bottom);
  widget_span (chart, window, &chart_top, &chart_bottom);
  g_assert_cmpfloat (toolbar_bottom, <=, legend_top + 0.5);
  g_assert_cmpfloat (legend_bottom - legend_top, <=, 120.0);
  g_assert_cmpfloat (legend_bottom, <=, chart_top + 0.5);
  g_assert_cmpfloat (chart_bottom - chart_top, >=, 150.0);
  g_assert_cmpfloat (chart_bottom, <=, gtk_widget_get_height (GTK_WIDGET (window)));
  scroll = gtk_scrolled_window_get_vadjustment (GTK_SCROLLED_WINDOW (legend));
  g_assert_cmpfloat (gtk_adjustment_get_upper (scroll), >, gtk_adjustment_get_page_size (scroll));

  /* A chip per run: its number, workload and name (its preset and the
   * sweep's value); the folder and the device are in its tooltip, with the
   * rest of the title. */
  flow = scrolled_child (legend);
  g_assert_true (GTK_IS_FLOW_BOX (flow));
  for (guint i = 0; i < 50; i++)
    {
      g_autoptr(TachRunObject) run = g_list_model_get_item (runs, i);
      GtkFlowBoxChild *child = gtk_flow_box_get_child_at_index (GTK_FLOW_BOX (flow), (int) i);
      GtkWidget *button = gtk_flow_box_child_get_child (child);
      GtkWidget *label = gtk_widget_get_last_child (gtk_button_get_child (GTK_BUTTON (button)));
      const char *text = gtk_label_get_label (GTK_LABEL (label));
      /* A sweep's point is named by its preset and value ("tf1-constant
       * batch=64"). */
      g_autofree char *name = tach_run_dup_name (tach_run_object_get_run (run), "custom");
      g_autofree char *expect = g_strdup_printf ("#%u bilstm · %s", i + 1, name);

      g_assert_cmpstr (text, ==, expect);
      g_assert_null (strstr (text, "fifty-runs"));
      g_assert_nonnull (strstr (tach_run_object_get_title (run), "fifty-runs"));
      g_assert_nonnull (strstr (gtk_widget_get_tooltip_text (button), tach_run_object_get_title (run)));
      n_chips++;
    }
  g_assert_cmpuint (n_chips, ==, 50);
}
