/* tach-window-settings.c: what the window remembers between sessions, in
 * GSettings (io.github.tach.Tach): its size and maximised state, the
 * panel's visibility, the chart options, the last folder opened or
 * exported to, and the panel's workload, task, device, preset and the
 * knobs set on top of them.  The chart options and the panel's visibility
 * are bound, so they are saved as they change; the rest is saved when the
 * window closes.  Where the schema is not installed (Tach run from its
 * build folder) the window simply remembers nothing.
 *
 * TachWindow is one class written in parts by concern (tach-window.c and
 * its six tach-window-*.c, over tach-window-private.h): the parts call one
 * another as one unit, which tools/folder-arrows.py lists.  */
#include "tach-build-config.h"
#include "tach-window-private.h"

/* The panel's settings saved under their own keys, set in this order. */
static const char *const leading_keys[] = { "workload", "task", "device", "preset", NULL };

static GSettings *
settings_new (void)
{
  GSettingsSchemaSource *source = g_settings_schema_source_get_default ();
  g_autoptr(GSettingsSchema) schema = NULL;

  if (source == NULL)
    return NULL;
  schema = g_settings_schema_source_lookup (source, APPLICATION_ID, TRUE);
  if (schema == NULL)
    return NULL;
  return g_settings_new_full (schema, NULL, NULL);
}

/* The configuration that the leading keys alone give: the knobs that
 * differ from it are the ones the user set. */
static void
base_config (const TachConfig *config, TachConfig *base)
{
  tach_config_init (base, config->workload);
  for (guint i = 0; leading_keys[i] != NULL; i++)
    {
      g_autofree char *value = tach_config_get (config, leading_keys[i]);

      if (value != NULL && *value != '\0')
        tach_config_set (base, leading_keys[i], value, NULL);
    }
}

static void
restore_panel (TachWindow *self)
{
  TachConfigPanel *panel = self->config_panel;
  g_autoptr(GVariant) knobs = g_settings_get_value (self->settings, "knobs");
  GVariantIter iter;
  const char *key, *value;

  for (guint i = 0; leading_keys[i] != NULL; i++)
    {
      g_autofree char *saved = g_settings_get_string (self->settings, leading_keys[i]);
      g_autoptr(TachDeviceInfo) device = NULL;

      if (*saved == '\0')
        continue;
      /* A GPU that is not here today leaves the panel's own choice. */
      if (g_str_equal (leading_keys[i], "device")
          && (device = tach_device_resolve (saved, NULL)) == NULL)
        continue;
      /* A value this version does not take (a preset since renamed, say)
       * is skipped: remembered settings never stop the window. */
      tach_config_panel_set_knob (panel, leading_keys[i], saved, NULL);
    }
  g_variant_iter_init (&iter, knobs);
  while (g_variant_iter_next (&iter, "{&s&s}", &key, &value))
    if (tach_knob_lookup (key) != NULL && !g_strv_contains (leading_keys, key))
      tach_config_panel_set_knob (panel, key, value, NULL);
}

static void
save_panel (TachWindow *self)
{
  const TachConfig *config = tach_config_panel_get_config (self->config_panel);
  g_auto(GVariantBuilder) builder = G_VARIANT_BUILDER_INIT (G_VARIANT_TYPE ("a{ss}"));
  guint n_knobs = 0;
  const TachKnobInfo *knobs = tach_knobs (&n_knobs);
  TachConfig base;

  base_config (config, &base);
  for (guint i = 0; leading_keys[i] != NULL; i++)
    {
      g_autofree char *value = tach_config_get (config, leading_keys[i]);

      g_settings_set_string (self->settings, leading_keys[i], value != NULL ? value : "");
    }
  for (guint i = 0; i < n_knobs; i++)
    {
      g_autofree char *value = NULL;
      g_autofree char *default_value = NULL;

      if (g_strv_contains (leading_keys, knobs[i].name))
        continue;
      value = tach_config_get (config, knobs[i].name);
      default_value = tach_config_get (&base, knobs[i].name);
      if (value != NULL && g_strcmp0 (value, default_value) != 0)
        g_variant_builder_add (&builder, "{ss}", knobs[i].name, value);
    }
  tach_config_clear (&base);
  g_settings_set_value (self->settings, "knobs", g_variant_builder_end (&builder));
}

void
tach_window_settings_restore (TachWindow *self)
{
  g_autofree char *folder = NULL;

  self->settings = settings_new ();
  if (self->settings == NULL)
    return;

  gtk_window_set_default_size (GTK_WINDOW (self),
                               g_settings_get_int (self->settings, "window-width"),
                               g_settings_get_int (self->settings, "window-height"));
  if (g_settings_get_boolean (self->settings, "window-maximized"))
    gtk_window_maximize (GTK_WINDOW (self));

  g_settings_bind (self->settings, "show-config", self, "show-config", G_SETTINGS_BIND_DEFAULT);
  g_settings_bind (self->settings, "by-time", self, "by-time", G_SETTINGS_BIND_DEFAULT);
  g_settings_bind (self->settings, "log-scale", self, "log-scale", G_SETTINGS_BIND_DEFAULT);
  g_settings_bind (self->settings, "smoothing", self, "smoothing", G_SETTINGS_BIND_DEFAULT);

  folder = g_settings_get_string (self->settings, "last-folder");
  if (*folder != '\0')
    tach_window_remember_folder (self, folder);
  restore_panel (self);
}

void
tach_window_settings_save (TachWindow *self)
{
  int width = 0, height = 0;

  if (self->settings == NULL)
    return;
  /* The default size follows the window's own while it is not
   * maximised, so a maximised window keeps its size from before. */
  gtk_window_get_default_size (GTK_WINDOW (self), &width, &height);
  if (width > 0 && height > 0)
    {
      g_settings_set_int (self->settings, "window-width", width);
      g_settings_set_int (self->settings, "window-height", height);
    }
  g_settings_set_boolean (self->settings, "window-maximized", gtk_window_is_maximized (GTK_WINDOW (self)));
  g_settings_set_string (self->settings, "last-folder", self->last_folder != NULL ? self->last_folder : "");
  save_panel (self);
}
