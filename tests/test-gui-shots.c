/* test-gui-shots.c: the window in Chinese from the tree's own catalogue,
 * and the README's screenshots (part of test-gui). */
#include <locale.h>
#include <math.h>
#include <adwaita.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <tach-engine.h>

#include "tach-run-object.h"
#include "tach-chart-draw.h"
#include "test-gui.h"

/* With LANGUAGE=zh_CN the window and the engine's messages are Chinese,
 * from the catalogue built in this tree. */
void
test_i18n_zh_cn (Fixture       *fixture,
                 gconstpointer  data)
{
  g_autofree char *old = g_strdup (g_getenv ("LANGUAGE"));
  TachConfigPanel *panel;
  TachWindow *window;
  const char *why = NULL;
  TachConfig config;

  g_setenv ("LANGUAGE", "zh_CN", TRUE);
  /* textdomain() also drops gettext's cache of earlier lookups. */
  textdomain (GETTEXT_PACKAGE);
  window = tach_window_new (GTK_APPLICATION (fixture->app));
  g_assert_cmpstr (tach_chart_get_title (tach_window_get_rate_chart (window)), ==, "每秒步数");
  g_assert_cmpstr (tach_chart_get_title (tach_window_get_loss_chart (window)), ==, "损失");
  panel = tach_window_get_config_panel (window);
  g_assert_cmpstr (adw_preferences_row_get_title (ADW_PREFERENCES_ROW (tach_config_panel_get_row (panel, "batch"))),
                   ==, "批大小");

  g_assert_cmpstr (tach_knob_value_label ("rnn", "fused"), ==, "融合");
  g_assert_cmpstr (gtk_string_object_get_string (adw_combo_row_get_selected_item (ADW_COMBO_ROW (tach_config_panel_get_row (panel, "task")))),
                   ==, "训练");

  tach_config_init (&config, TACH_WORKLOAD_CNN);
  g_assert_false (tach_config_knob_applies (&config, "layout", &why));
  g_assert_cmpstr (why, ==, "布局误读是 bilstm 报告中的缺陷");
  tach_config_clear (&config);

  /* Chinese labels are no more cut short than English ones. */
  gtk_window_present (GTK_WINDOW (window));
  g_assert_true (iterate_until (window_mapped, window, 60));
  assert_panel_not_ellipsised (window);
  gtk_window_destroy (GTK_WINDOW (window));

  if (old)
    g_setenv ("LANGUAGE", old, TRUE);
  else
    g_unsetenv ("LANGUAGE");
  textdomain (GETTEXT_PACKAGE);
}

static gboolean
run_half_done (gpointer data)
{
  TachWindow *window = data;
  g_autoptr(TachRunObject) run = NULL;
  GListModel *runs = tach_window_get_runs (window);
  guint n = g_list_model_get_n_items (runs);

  if (n < 3)
    return FALSE;
  run = g_list_model_get_item (runs, n - 1);
  return tach_run_object_get_progress (run) >= 0.6;
}

/* The screenshots of resources/screenshots/, taken only when
 * TACH_SCREENSHOT_DIR is set: a live run next to two finished ones of one
 * preset (the run table's speed-ups with their intervals, and one within
 * noise), and a comparison in rounds, in the style TACH_SCREENSHOT_STYLE
 * (light or dark). */
void
test_screenshots (Fixture       *fixture,
                  gconstpointer  data)
{
  const char *dir = g_getenv ("TACH_SCREENSHOT_DIR");
  const char *style = g_getenv ("TACH_SCREENSHOT_STYLE");
  const char *name = g_getenv ("TACH_SCREENSHOT_NAME");
  TachConfigPanel *panel = tach_window_get_config_panel (fixture->window);
  g_autoptr(GError) error = NULL;
  g_autofree char *live = NULL;
  g_autofree char *compare = NULL;

  if (dir == NULL)
    {
      g_test_skip ("TACH_SCREENSHOT_DIR is not set");
      return;
    }
  adw_style_manager_set_color_scheme (adw_style_manager_get_default (),
                                      g_strcmp0 (style, "dark") == 0
                                      ? ADW_COLOR_SCHEME_FORCE_DARK : ADW_COLOR_SCHEME_FORCE_LIGHT);
  live = g_strdup_printf ("%s/live-%s.png", dir, name ? name : "light");
  compare = g_strdup_printf ("%s/compare-%s.png", dir, name ? name : "light");

  /* A batch large enough for the misread's cost to show as it does in
   * the report, small enough for a screenshot run.  The waits are long: a
   * shared machine can run these ten times slower than an idle one. */
  g_object_set (panel, "batch", 256, "steps", 120, "preset", "tf1-feed-dict", NULL);
  g_assert_true (tach_window_start_run (fixture->window, &error));
  g_assert_no_error (error);
  g_assert_true (iterate_until (window_idle, fixture->window, 900));
  /* The same preset again: a speed-up that the table must call within
   * noise (unless the machine changed between the two), beside the live
   * run's interval. */
  g_assert_true (tach_window_start_run (fixture->window, &error));
  g_assert_no_error (error);
  g_assert_true (iterate_until (window_idle, fixture->window, 900));
  g_object_set (panel, "preset", "keras-fit", "steps", 240, NULL);
  g_assert_true (tach_window_start_run (fixture->window, &error));
  g_assert_true (iterate_until (run_half_done, fixture->window, 900));
  /* The read-out, as a pointer over the chart shows it. */
  tach_chart_set_hover (tach_window_get_rate_chart (fixture->window),
                        0.45 * gtk_widget_get_width (GTK_WIDGET (tach_window_get_rate_chart (fixture->window))), 40);
  render_window (fixture->window, live);
  tach_window_stop (fixture->window);
  g_assert_true (iterate_until (window_idle, fixture->window, 60));

  g_object_set (panel, "steps", 60, NULL);
  g_assert_true (tach_window_compare_presets (fixture->window, &error));
  g_assert_no_error (error);
  g_assert_true (iterate_until (sweep_done, fixture->window, 1800));
  render_window (fixture->window, compare);
}
