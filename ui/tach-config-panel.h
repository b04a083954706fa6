/* tach-config-panel.h: every setting of a run, generated from the engine's
 * knob table, with the knobs that do not apply shown insensitive. */
#pragma once

#include <adwaita.h>
#include <tach-engine.h>

G_BEGIN_DECLS

#define TACH_TYPE_CONFIG_PANEL (tach_config_panel_get_type ())
G_DECLARE_FINAL_TYPE (TachConfigPanel, tach_config_panel, TACH, CONFIG_PANEL, GtkWidget)

const TachConfig *tach_config_panel_get_config (TachConfigPanel  *self);
gboolean          tach_config_panel_set_knob   (TachConfigPanel  *self,
                                                const char       *key,
                                                const char       *value,
                                                GError          **error);
char             *tach_config_panel_get_knob   (TachConfigPanel  *self,
                                                const char       *key);
GtkWidget        *tach_config_panel_get_row    (TachConfigPanel  *self,
                                                const char       *key);
char             *tach_config_panel_describe_options (TachConfigPanel *self,
                                                      const char      *message);

G_END_DECLS
