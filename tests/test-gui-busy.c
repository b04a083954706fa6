/* test-gui-busy.c: the run table's "machine busy" caption (part of
 * test-gui).  A run's busy share is what the interference monitor
 * measured while it ran; on a shared machine that is whatever the others
 * did, so the runs here come from a results folder whose machine_busy
 * column says what each share was: tach-cli (the path in TACH_CLI) runs a
 * sweep into a folder, and two copies of it give each run a known share.
 * In one every run was idle: no speed-up says "machine busy".  In the
 * other one run took place while others took 38% of the machine: its
 * speed-up over an idle baseline says so (the value stays, as not
 * resolved), and the idle runs' do not. */
#include <string.h>
#include <adwaita.h>
#include <tach-engine.h>

#include "tach-run-object.h"
#include "test-gui.h"

/* The share of the machine others took while run @i ran: under the
 * threshold and within its spread of each other, but for run @busy_row
 * (none: G_MAXUINT), which ran while others took 38%. */
static double
share_of (guint i, guint busy_row)
{
  return i == busy_row ? 0.38 : 0.02 + 0.01 * (i % 3);
}

/* Copies @from/runs.csv and samples.csv into @to with the machine_busy
 * column replaced by share_of() each row: the measured column is renamed
 * (columns are found by name, the first one wins) and the shares appended
 * as a new last column, whatever the rows' quoted fields hold.  Returns
 * the rows. */
static guint
copy_with_busy (const char *from, const char *to, guint busy_row)
{
  g_autofree char *runs_from = g_build_filename (from, "runs.csv", NULL);
  g_autofree char *samples_from = g_build_filename (from, "samples.csv", NULL);
  g_autofree char *runs_to = g_build_filename (to, "runs.csv", NULL);
  g_autofree char *samples_to = g_build_filename (to, "samples.csv", NULL);
  g_autofree char *text = NULL;
  g_autofree char *samples = NULL;
  g_autoptr(GString) out = g_string_new (NULL);
  g_auto(GStrv) lines = NULL;
  gsize len = 0;
  guint row = 0;

  g_assert_cmpint (g_mkdir_with_parents (to, 0755), ==, 0);
  g_assert_true (g_file_get_contents (samples_from, &samples, &len, NULL));
  g_assert_true (g_file_set_contents (samples_to, samples, len, NULL));
  g_assert_true (g_file_get_contents (runs_from, &text, NULL, NULL));
  lines = g_strsplit (text, "\r\n", -1);
  g_assert_nonnull (strstr (lines[0], ",machine_busy,"));
  for (guint i = 0; lines[i] != NULL; i++)
    {
      if (lines[i][0] == '\0')
        continue;
      if (i == 0)
        {
          g_auto(GStrv) parts = g_strsplit (lines[0], ",machine_busy,", 2);

          g_string_append_printf (out, "%s,machine_busy_measured,%s,machine_busy\r\n",
                                  parts[0], parts[1]);
          continue;
        }
      g_string_append_printf (out, "%s,%.2f\r\n", lines[i], share_of (row, busy_row));
      row++;
    }
  g_assert_true (g_file_set_contents (runs_to, out->str, out->len, NULL));
  return row;
}

static void
open_folder (TachWindow *window, const char *dir)
{
  g_autoptr(GFile) folder = g_file_new_for_path (dir);
  g_autoptr(GError) error = NULL;
  GFile *folders[1] = { folder };

  g_object_set_data (G_OBJECT (window), "test-opened", NULL);
  tach_window_open_folders (window, folders, 1, on_opened, &error);
  g_assert_true (iterate_until (opened, window, 60));
  g_assert_no_error (error);
}

static gboolean
drawn (gpointer data)
{
  /* A few frames, so that the rows' bindings reach their labels. */
  return GPOINTER_TO_UINT (g_object_get_data (data, "test-frames")) >= 3;
}

static gboolean
count_frame (GtkWidget *widget, GdkFrameClock *clock, gpointer data)
{
  guint n = GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (widget), "test-frames"));

  g_object_set_data (G_OBJECT (widget), "test-frames", GUINT_TO_POINTER (n + 1));
  return G_SOURCE_CONTINUE;
}

/* Sets run @baseline as the baseline and waits for the table to show it. */
static void
show_against (TachWindow *window, guint baseline)
{
  TachRunTable *table = tach_window_get_run_table (window);

  tach_run_table_set_baseline (table, baseline);
  tach_run_table_update_speedups (table);
  g_object_set_data (G_OBJECT (table), "test-frames", NULL);
  gtk_widget_queue_draw (GTK_WIDGET (table));
  g_assert_true (iterate_until (drawn, table, 60));
}

static char *
detail_of (GListModel *runs, guint i)
{
  g_autoptr(TachRunObject) run = g_list_model_get_item (runs, i);
  char *detail = NULL;

  g_object_get (run, "speedup-detail-text", &detail, NULL);
  return detail;
}

void
test_run_busy (Fixture *fixture, gconstpointer data)
{
  const char *cli = g_getenv ("TACH_CLI");
  TachWindow *window = fixture->window;
  GListModel *runs = tach_window_get_runs (window);
  GtkWidget *table = GTK_WIDGET (tach_window_get_run_table (window));
  g_autofree char *sweep = g_build_filename (fixture->tmpdir, "sweep", NULL);
  g_autofree char *idle = g_build_filename (fixture->tmpdir, "idle", NULL);
  g_autofree char *busy = g_build_filename (fixture->tmpdir, "busy", NULL);
  g_autoptr(GError) error = NULL;
  int status = 0;
  guint n;

  (void) data;
  if (cli == NULL)
    {
      g_test_skip ("TACH_CLI is not set");
      return;
    }
  {
    /* Steps enough for every run's median to have an interval (a speed-up
     * without one has no verdict to qualify) whatever their correlation. */
    const char *argv[] = { cli, "sweep", "--workload", "bilstm", "--presets", "all", "--device", "cpu",
                           "--batch", "8", "--steps", "80", "--warmup", "2", "--threads", "1",
                           "--rounds", "1", "--budget", "0", "--csv", sweep, NULL };

    g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL,
                                 G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                                 NULL, NULL, &status, &error));
    g_assert_no_error (error);
    g_assert_true (g_spawn_check_wait_status (status, NULL));
  }
  n = copy_with_busy (sweep, idle, G_MAXUINT);
  g_assert_cmpuint (n, >=, 3);
  g_assert_cmpuint (copy_with_busy (sweep, busy, 2), ==, n);
  gtk_widget_add_tick_callback (table, count_frame, NULL, NULL);

  /* Every run idle: no caption, whatever the speed-ups. */
  open_folder (window, idle);
  g_assert_cmpuint (g_list_model_get_n_items (runs), ==, n);
  show_against (window, 0);
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(TachRunObject) run = g_list_model_get_item (runs, i);
      TachSummary summary;
      g_autofree char *detail = detail_of (runs, i);

      tach_run_get_summary (tach_run_object_get_run (run), &summary);
      g_assert_cmpfloat_with_epsilon (summary.machine_busy, share_of (i, G_MAXUINT), 1e-9);
      g_assert_cmpstr (detail, !=, "machine busy");
    }
  g_assert_null (find_label (table, "machine busy"));

  /* One run measured on a busy machine: its speed-up says so, in the
   * table, with the shares in its tooltip; the idle ones' do not. */
  open_folder (window, busy);
  g_assert_cmpuint (g_list_model_get_n_items (runs), ==, 2 * n);
  show_against (window, n);
  for (guint i = 0; i < 2 * n; i++)
    {
      g_autofree char *detail = detail_of (runs, i);

      if (i == n + 2)
        g_assert_cmpstr (detail, ==, "machine busy");
      else
        g_assert_cmpstr (detail, !=, "machine busy");
    }
  {
    g_autoptr(TachRunObject) run = g_list_model_get_item (runs, n + 2);
    g_autofree char *tooltip = NULL;

    g_assert_nonnull (find_label (table, "machine busy"));
    g_object_get (run, "speedup-text", &tooltip, NULL);
    g_assert_nonnull (strstr (tooltip, "measured apart while the machine was busy (2% vs 38%)"));
  }
  /* On screen, scrolled down to the busy run's row. */
  {
    GtkWidget *scroller = gtk_widget_get_parent (find_widget_of_type (table, GTK_TYPE_COLUMN_VIEW));
    GtkAdjustment *adjustment;

    g_assert_true (GTK_IS_SCROLLED_WINDOW (scroller));
    adjustment = gtk_scrolled_window_get_vadjustment (GTK_SCROLLED_WINDOW (scroller));
    gtk_adjustment_set_value (adjustment, gtk_adjustment_get_upper (adjustment));
    g_object_set_data (G_OBJECT (table), "test-frames", NULL);
    g_assert_true (iterate_until (drawn, table, 60));
    render_window (window, "test-gui-busy.png");
    g_assert_true (gtk_widget_get_mapped (find_label (table, "machine busy")));
  }
}
