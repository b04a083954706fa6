/* test-gui-fault.c: the window when the backend fails in the middle of a
 * run (test-fault-backend.h): a dialog names the op and the cause, the
 * failed run stays in the table with the steps it measured beside the
 * earlier run, and the next run is normal. */
#include <string.h>

#include "test-fault-backend.h"
#include "test-gui.h"
#include "tach-config-panel.h"
#include "tach-run-object.h"

static TachRunObject *
run_at (TachWindow *window, guint i)
{
  g_autoptr(TachRunObject) run = g_list_model_get_item (tach_window_get_runs (window), i);

  return run;
}

void
test_run_fault (Fixture *fixture, gconstpointer data)
{
  TachConfigPanel *panel = tach_window_get_config_panel (fixture->window);
  AdwMessageDialog *dialog;
  TachRunObject *failed;
  g_autoptr(GArray) samples = NULL;
  guint calls;

  g_object_set (panel, "steps", 12, NULL);
  g_assert_true (tach_config_panel_set_knob (panel, "sync", "1", NULL));
  /* The first run counts the op's calls; the second fails half-way. */
  test_fault_install ("lstm_fwd", G_MAXUINT, TEST_FAULT_OUT_OF_MEMORY);
  run_and_wait (fixture->window, 1);
  calls = test_fault_calls ();
  g_assert_cmpuint (calls, >=, 4);
  g_assert_cmpint (tach_run_object_get_state (run_at (fixture->window, 0)), ==,
                   TACH_RUN_STATE_FINISHED);

  test_fault_install ("lstm_fwd", calls / 2, TEST_FAULT_OUT_OF_MEMORY);
  run_and_wait (fixture->window, 2);
  g_assert_true (test_fault_fired ());
  test_fault_remove ();

  /* Both runs stay; the failed one keeps what it measured. */
  g_assert_cmpuint (g_list_model_get_n_items (tach_window_get_runs (fixture->window)), ==, 2);
  g_assert_cmpint (tach_run_object_get_state (run_at (fixture->window, 0)), ==,
                   TACH_RUN_STATE_FINISHED);
  failed = run_at (fixture->window, 1);
  g_assert_cmpint (tach_run_object_get_state (failed), ==, TACH_RUN_STATE_FAILED);
  samples = tach_run_dup_samples (tach_run_object_get_run (failed));
  g_assert_cmpuint (samples->len, >, 0);
  g_assert_cmpuint (samples->len, <, 12);

  /* The dialog names the op and the cause. */
  dialog = find_message_dialog (fixture->window);
  g_assert_nonnull (dialog);
  g_assert_nonnull (strstr (adw_message_dialog_get_heading (dialog), "Failed"));
  g_assert_nonnull (strstr (adw_message_dialog_get_body (dialog), "lstm_fwd"));
  g_assert_nonnull (strstr (adw_message_dialog_get_body (dialog), "out of memory"));
  gtk_window_destroy (GTK_WINDOW (dialog));

  /* The next run is normal. */
  run_and_wait (fixture->window, 3);
  g_assert_cmpint (tach_run_object_get_state (run_at (fixture->window, 2)), ==,
                   TACH_RUN_STATE_FINISHED);
}
