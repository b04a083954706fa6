/* test-gui-ranks.c: runs of several ranks from the window (mpirun of this
 * build's tach-cli, tach-ranks-job.h): the ranks' rows while it runs and
 * after, the run landing in the table, Stop, and the message when mpirun
 * is missing. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test-gui.h"
#include "tach-config-panel.h"
#include "tach-ranks-job.h"
#include "tach-run-object.h"
#include "tach-scaling-view.h"

/* Every rank's row has had a progress line: a rate and its step. */
static gboolean
ranks_live (gpointer data)
{
  TachRanksView *view = tach_window_get_ranks_view (data);
  guint n = tach_ranks_view_get_n_rows (view);

  if (n == 0 || !gtk_widget_get_visible (GTK_WIDGET (view)))
    return FALSE;
  for (guint r = 0; r < n; r++)
    if (strstr (tach_ranks_view_get_row_text (view, r), "steps/s") == NULL)
      return FALSE;
  return TRUE;
}

/* The window holds the runs the test waits for (its "test-want-runs",
 * at least 1) and none is going. */
static gboolean
run_landed (gpointer data)
{
  guint want = MAX (1, GPOINTER_TO_UINT (g_object_get_data (data, "test-want-runs")));

  return g_list_model_get_n_items (tach_window_get_runs (data)) >= want
         && !tach_window_get_running (data);
}

static gboolean
set_up_ranks (Fixture *fixture, guint steps)
{
  TachConfigPanel *panel = tach_window_get_config_panel (fixture->window);
  g_autoptr(GError) error = NULL;
  g_autofree char *text = g_strdup_printf ("%u", steps);

  if (!tach_ranks_job_check (&error))
    {
      g_test_skip (error->message);
      return FALSE;
    }
  tach_ranks_job_set_root (fixture->tmpdir);
  g_assert_true (tach_config_panel_set_knob (panel, "ranks", "2", NULL));
  g_assert_true (tach_config_panel_set_knob (panel, "threads", "1", NULL));
  g_assert_true (tach_config_panel_set_knob (panel, "steps", text, NULL));
  return TRUE;
}

/* Rank 0 of the job has passed a third of its steps. */
static gboolean
ranks_third_done (gpointer data)
{
  TachRanksView *view = tach_window_get_ranks_view (data);
  const char *text = tach_ranks_view_get_row_text (view, 0);
  const char *step = text != NULL ? strstr (text, "step ") : NULL;
  guint64 done = 0, total = 0;

  return step != NULL && sscanf (step, "step %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT,
                                 &done, &total) == 2 && done * 3 >= total;
}

/* Two ranks of a short run: both ranks' rows live, then the run in the
 * table from its results folder, labelled with its ranks, and the rows
 * again from its samples with the imbalance split off.  With
 * TACH_SCREENSHOT_DIR, the README's screenshot of the ranks live. */
static void
test_ranks_launch (Fixture *fixture, gconstpointer data)
{
  TachRanksView *view = tach_window_get_ranks_view (fixture->window);
  TachConfigPanel *panel = tach_window_get_config_panel (fixture->window);
  const char *shots = g_getenv ("TACH_SCREENSHOT_DIR");
  guint steps = shots != NULL ? 300 : 600, n_runs = 1;
  g_autofree char *of_steps = g_strdup_printf ("/%u", steps);
  g_autoptr(TachRunObject) run = NULL;
  TachRun *engine_run;

  if (!set_up_ranks (fixture, steps))
    return;
  /* The screenshot's steps are longer (batch 256), so that they show. */
  if (shots != NULL)
    {
      g_object_set (fixture->window, "show-config", FALSE, NULL);
      g_object_set (panel, "batch", 256, NULL);
    }
  gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.run", NULL);
  g_assert_null (find_message_dialog (fixture->window));
  g_assert_true (tach_window_get_running (fixture->window));
  g_assert_true (iterate_until (ranks_live, fixture->window, 120));
  g_assert_cmpuint (tach_ranks_view_get_n_rows (view), ==, 2);
  /* Live: a rank's wait for the other counts as communication yet. */
  for (guint r = 0; r < 2; r++)
    {
      g_assert_nonnull (strstr (tach_ranks_view_get_row_text (view, r), "communication"));
      g_assert_nonnull (strstr (tach_ranks_view_get_row_text (view, r), of_steps));
    }
  if (shots != NULL && iterate_until (ranks_third_done, fixture->window, 300))
    {
      g_autofree char *png = g_build_filename (shots, "ranks-light.png", NULL);

      render_window (fixture->window, png);
    }

  g_object_set_data (G_OBJECT (fixture->window), "test-want-runs", GUINT_TO_POINTER (n_runs));
  g_assert_true (iterate_until (run_landed, fixture->window, 300));
  g_assert_null (find_message_dialog (fixture->window));
  g_assert_cmpuint (g_list_model_get_n_items (tach_window_get_runs (fixture->window)), ==, n_runs);
  run = g_list_model_get_item (tach_window_get_runs (fixture->window), n_runs - 1);
  engine_run = tach_run_object_get_run (run);
  g_assert_cmpuint (tach_run_get_config (engine_run)->ranks, ==, 2);
  g_assert_cmpuint (tach_run_get_n_ranks (engine_run), ==, 2);
  g_assert_cmpint (tach_run_object_get_state (run), ==, TACH_RUN_STATE_FINISHED);
  g_assert_nonnull (strstr (tach_run_object_get_title (run), "2 ranks"));
  g_assert_true (g_str_has_prefix (tach_run_get_source (engine_run), fixture->tmpdir));

  /* The final rows: each rank's median rate and its phases, imbalance
   * included. */
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (view)));
  g_assert_cmpuint (tach_ranks_view_get_n_rows (view), ==, 2);
  for (guint r = 0; r < 2; r++)
    {
      const char *text = tach_ranks_view_get_row_text (view, r);

      g_assert_nonnull (strstr (text, "steps/s"));
      g_assert_nonnull (strstr (text, "compute"));
      g_assert_nonnull (strstr (text, "communication"));
      g_assert_nonnull (strstr (text, "imbalance"));
    }
}

/* Stop stops the ranks (SIGINT to each): they stop after the same step
 * and the job ends as a finished one does, every rank's rows in the
 * table.  Open MPI's own end of a job (mpirun's SIGTERM to the ranks, or
 * its answer to a rank's abort or failure) is made to take 200 s here
 * (odls_base_sigkill_timeout 100, slept twice by mpirun whatever the
 * ranks do), past the 60 s this waits, a hang's bound: a stop takes a
 * step or two. */
static void
test_ranks_stop (Fixture *fixture, gconstpointer data)
{
  g_autoptr(TachRunObject) run = NULL;
  g_autoptr(GArray) samples = NULL, rank1 = NULL;
  TachRun *engine_run;

  if (!set_up_ranks (fixture, 10000000))
    return;
  g_setenv ("OMPI_MCA_odls_base_sigkill_timeout", "100", TRUE);
  gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.run", NULL);
  g_unsetenv ("OMPI_MCA_odls_base_sigkill_timeout");
  g_assert_true (iterate_until (ranks_live, fixture->window, 120));
  gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.stop", NULL);
  g_assert_true (iterate_until (run_landed, fixture->window, 60));
  /* A stop is no failure: cancelled, in the table and rank 0's runs.csv. */
  g_assert_null (find_message_dialog (fixture->window));
  run = g_list_model_get_item (tach_window_get_runs (fixture->window), 0);
  g_assert_cmpint (tach_run_object_get_state (run), ==, TACH_RUN_STATE_CANCELLED);
  engine_run = tach_run_object_get_run (run);
  samples = tach_run_dup_samples (engine_run);
  g_assert_cmpuint (samples->len, >, 0);
  g_assert_cmpuint (samples->len, <, 10000000);
  /* Both ranks' rows, up to the same step. */
  g_assert_cmpuint (tach_run_get_n_ranks (engine_run), ==, 2);
  rank1 = g_array_new (FALSE, FALSE, sizeof (TachSample));
  g_assert_cmpuint (tach_run_copy_rank_samples (engine_run, 1, 0, G_MAXUINT, rank1), ==,
                    samples->len);
}

/* Without mpirun on the PATH: a dialog that says how to install it, and
 * nothing runs. */
static void
test_ranks_missing_mpirun (Fixture *fixture, gconstpointer data)
{
  TachConfigPanel *panel = tach_window_get_config_panel (fixture->window);
  g_autofree char *path = g_strdup (g_getenv ("PATH"));
  AdwMessageDialog *dialog;

  g_assert_true (tach_config_panel_set_knob (panel, "ranks", "2", NULL));
  g_setenv ("PATH", fixture->tmpdir, TRUE);
  gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.run", NULL);
  g_setenv ("PATH", path, TRUE);
  dialog = find_message_dialog (fixture->window);
  g_assert_nonnull (dialog);
  g_assert_cmpstr (adw_message_dialog_get_heading (dialog), ==, "Cannot Start the Run");
  g_assert_nonnull (strstr (adw_message_dialog_get_body (dialog),
                            "apt-get install openmpi-bin libopenmpi-dev"));
  g_assert_false (tach_window_get_running (fixture->window));
  g_assert_cmpuint (g_list_model_get_n_items (tach_window_get_runs (fixture->window)), ==, 0);
  gtk_window_destroy (GTK_WINDOW (dialog));
}

static gboolean
scaling_idle (gpointer data)
{
  return !tach_scaling_view_get_running (data);
}

/* The Scaling view over ranks 1 and 2: the 2-rank points run through
 * mpirun, and the chart draws each preset's ideal scaling, twice its
 * one-rank items/s at 2 ranks. */
static void
test_ranks_scaling (Fixture *fixture, gconstpointer data)
{
  TachScalingView *view = tach_window_get_scaling_view (fixture->window);
  const TachScalingGrid *grid;
  guint np, measured = 0;

  if (!set_up_ranks (fixture, 12))
    return;
  g_assert_true (tach_config_panel_set_knob (tach_window_get_config_panel (fixture->window),
                                             "ranks", "1", NULL));
  g_assert_true (tach_scaling_view_set_spec (view, "ranks", "1,2"));
  gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.scale", NULL);
  g_assert_true (tach_scaling_view_get_running (view));
  g_assert_true (iterate_until (scaling_idle, view, 300));
  g_assert_null (find_message_dialog (fixture->window));

  grid = tach_scaling_view_get_grid (view);
  g_assert_nonnull (grid);
  g_assert_true (grid->ideal);
  np = g_strv_length (grid->presets);
  for (guint p = 0; p < np; p++)
    {
      TachRun *one = tach_scaling_view_get_run (view, p, 0);
      TachRun *two = tach_scaling_view_get_run (view, p, 1);
      double base = tach_scaling_grid_value (grid, TACH_SCALING_RATE, p, 0);

      if (one == NULL || two == NULL || !isfinite (base))
        continue;
      g_assert_cmpuint (tach_run_get_config (one)->ranks, ==, 1);
      g_assert_cmpuint (tach_run_get_config (two)->ranks, ==, 2);
      g_assert_cmpuint (tach_run_get_n_ranks (two), ==, 2);
      g_assert_cmpstr (tach_run_get_varied (two), ==, "ranks");
      g_assert_true (isfinite (tach_scaling_grid_value (grid, TACH_SCALING_RATE, p, 1)));
      g_assert_cmpfloat_with_epsilon (tach_scaling_grid_ideal (grid, p, 1), 2 * base,
                                      1e-9 * base);
      measured++;
    }
  g_assert_cmpuint (measured, >, 0);
  render_window (fixture->window, "ranks-scaling-light.png");
}

void
test_gui_ranks_add (void (*setup) (Fixture *, gconstpointer),
                    void (*teardown) (Fixture *, gconstpointer))
{
  g_test_add ("/gui/ranks/launch", Fixture, NULL, setup, test_ranks_launch, teardown);
  g_test_add ("/gui/ranks/stop", Fixture, NULL, setup, test_ranks_stop, teardown);
  g_test_add ("/gui/ranks/scaling", Fixture, NULL, setup, test_ranks_scaling, teardown);
  g_test_add ("/gui/ranks/missing-mpirun", Fixture, NULL, setup, test_ranks_missing_mpirun,
              teardown);
}
