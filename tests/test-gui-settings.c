/* test-gui-settings.c: the settings a window remembers (GSettings, the
 * memory backend, the schema compiled in the build folder): a new window
 * restores them, and closing one saves them. */
#include <adwaita.h>
#include <tach-engine.h>

#include "tach-build-config.h"
#include "test-gui.h"

static GSettings *
test_settings (void)
{
  GSettingsSchemaSource *source = g_settings_schema_source_get_default ();
  g_autoptr(GSettingsSchema) schema = source ? g_settings_schema_source_lookup (source, APPLICATION_ID, TRUE)
                                             : NULL;

  return schema != NULL ? g_settings_new_full (schema, NULL, NULL) : NULL;
}

void
test_settings_reset (void)
{
  g_autoptr(GSettings) settings = test_settings ();
  g_autoptr(GSettingsSchema) schema = NULL;
  g_auto(GStrv) keys = NULL;

  if (settings == NULL)
    return;
  g_object_get (settings, "settings-schema", &schema, NULL);
  keys = g_settings_schema_list_keys (schema);
  for (guint i = 0; keys[i] != NULL; i++)
    g_settings_reset (settings, keys[i]);
}

static gboolean
window_gone (gpointer data)
{
  return *(gpointer *) data == NULL;
}

void
test_settings_restore (Fixture       *fixture,
                       gconstpointer  data)
{
  g_autoptr(GSettings) settings = test_settings ();
  g_autoptr(GVariant) knobs = NULL;
  g_auto(GVariantBuilder) dict = G_VARIANT_BUILDER_INIT (G_VARIANT_TYPE ("a{ss}"));
  g_autofree char *folder = NULL;
  g_autofree char *batch = NULL;
  TachWindow *window;
  TachConfigPanel *panel;
  const TachConfig *config;
  gboolean by_time = FALSE, log_scale = FALSE, show_config = TRUE;
  double smoothing = 0;
  int width = 0, height = 0;

  if (settings == NULL)
    {
      g_test_skip ("the schema io.github.tach.Tach is not compiled (GSETTINGS_SCHEMA_DIR)");
      return;
    }

  /* What an earlier session left. */
  g_settings_set_int (settings, "window-width", 1100);
  g_settings_set_int (settings, "window-height", 720);
  g_settings_set_boolean (settings, "show-config", FALSE);
  g_settings_set_boolean (settings, "by-time", TRUE);
  g_settings_set_boolean (settings, "log-scale", TRUE);
  g_settings_set_double (settings, "smoothing", 0.3);
  g_settings_set_string (settings, "workload", "cnn");
  g_settings_set_string (settings, "task", "train");
  g_settings_set_string (settings, "device", "cpu");
  g_settings_set_string (settings, "preset", "estimator");
  g_settings_set_string (settings, "last-folder", fixture->tmpdir);
  g_variant_builder_add (&dict, "{ss}", "batch", "32");
  g_variant_builder_add (&dict, "{ss}", "steps", "17");
  g_variant_builder_add (&dict, "{ss}", "seed", "9");
  /* Knobs this version does not know, or values it refuses, are skipped. */
  g_variant_builder_add (&dict, "{ss}", "no-such-knob", "1");
  g_variant_builder_add (&dict, "{ss}", "head", "no-such-head");
  g_settings_set_value (settings, "knobs", g_variant_builder_end (&dict));

  window = tach_window_new (GTK_APPLICATION (fixture->app));
  g_object_add_weak_pointer (G_OBJECT (window), (gpointer *) &window);
  gtk_window_get_default_size (GTK_WINDOW (window), &width, &height);
  g_assert_cmpint (width, ==, 1100);
  g_assert_cmpint (height, ==, 720);
  g_object_get (window, "by-time", &by_time, "log-scale", &log_scale, "show-config", &show_config,
                "smoothing", &smoothing, NULL);
  g_assert_true (by_time);
  g_assert_true (log_scale);
  g_assert_false (show_config);
  g_assert_cmpfloat (smoothing, ==, 0.3);
  g_assert_true (tach_chart_get_by_time (tach_window_get_rate_chart (window)));
  g_assert_true (tach_chart_get_log_scale (tach_window_get_loss_chart (window)));
  panel = tach_window_get_config_panel (window);
  config = tach_config_panel_get_config (panel);
  g_assert_cmpint (config->workload, ==, TACH_WORKLOAD_CNN);
  g_assert_cmpstr (config->preset, ==, "estimator");
  g_assert_cmpstr (config->device, ==, "cpu");
  g_assert_cmpuint (config->batch, ==, 32);
  g_assert_cmpuint (config->steps, ==, 17);
  g_assert_cmpuint (config->seed, ==, 9);
  g_assert_cmpint (config->head, ==, TACH_HEAD_FLATTEN);

  /* This session's changes are saved as the window closes. */
  gtk_window_present (GTK_WINDOW (window));
  g_assert_true (tach_config_panel_set_knob (panel, "batch", "64", NULL));
  g_object_set (window, "by-time", FALSE, NULL);
  /* Bound: saved at once. */
  g_assert_false (g_settings_get_boolean (settings, "by-time"));
  gtk_window_close (GTK_WINDOW (window));
  g_assert_true (iterate_until (window_gone, &window, 60));

  knobs = g_settings_get_value (settings, "knobs");
  g_assert_true (g_variant_lookup (knobs, "batch", "s", &batch));
  g_assert_cmpstr (batch, ==, "64");
  /* Only what differs from the preset is kept. */
  g_assert_false (g_variant_lookup (knobs, "rnn", "&s", NULL));
  g_assert_false (g_variant_lookup (knobs, "no-such-knob", "&s", NULL));
  g_assert_cmpint (g_settings_get_int (settings, "window-width"), >, 0);
  g_assert_false (g_settings_get_boolean (settings, "window-maximized"));
  folder = g_settings_get_string (settings, "last-folder");
  g_assert_cmpstr (folder, ==, fixture->tmpdir);
  {
    g_autofree char *workload = g_settings_get_string (settings, "workload");
    g_autofree char *preset = g_settings_get_string (settings, "preset");

    g_assert_cmpstr (workload, ==, "cnn");
    g_assert_cmpstr (preset, ==, "estimator");
  }
}
