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
/* Marks the row of the knob that @error's hint names (the error style, an
 * icon whose tooltip gives the message and the fix, and a button that
 * applies the fix where it is a value) until a setting changes; FALSE when
 * @error names no knob with a row (nothing is marked then). */
gboolean          tach_config_panel_mark_error (TachConfigPanel *self,
                                                const GError    *error);
void              tach_config_panel_clear_error (TachConfigPanel *self);
/* The knob marked, or NULL. */
const char       *tach_config_panel_get_marked_knob (TachConfigPanel *self);
/* Sets the knob of the marked error's fix to the fix's value (nothing
 * where the fix is no value); the panel's "panel.apply-fix" action does
 * this. */
gboolean          tach_config_panel_apply_fix  (TachConfigPanel  *self,
                                                GError          **error);

G_END_DECLS
