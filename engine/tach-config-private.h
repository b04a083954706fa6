/* tach-config-private.h: what config, presets and validation share. */
#pragma once

#include "tach-engine.h"

G_BEGIN_DECLS

/* "a, b, c" from a NULL-terminated list (free with g_free). */
char    *tach_config_values_joined (const char *const *values);
/* Sets every execution-mode knob to its workload-independent default. */
void     tach_config_reset_modes (TachConfig *config);
/* After the device changed: re-applies the gpu_settings of config->preset
 * (or their plain values where the new device cannot do them). */
void     tach_config_reapply_preset_for_device (TachConfig *config);

G_END_DECLS
