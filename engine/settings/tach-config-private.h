/* tach-config-private.h: what config, presets and validation share. */
#pragma once

#include "tach-engine.h"
#include "tach-backend.h"
#include "tach-error-private.h"

G_BEGIN_DECLS

/* "a, b, c" from a NULL-terminated list (free with g_free). */
char    *tach_config_values_joined (const char *const *values);
/* Sets every execution-mode knob to its workload-independent default. */
void     tach_config_reset_modes (TachConfig *config);
/* After the device changed: re-applies the gpu_settings of config->preset
 * (or their plain values where the new device cannot do them). */
void     tach_config_reapply_preset_for_device (TachConfig *config);
/* Whether config->preset would launch graphs on config->device but, this
 * process being one of mpirun's ranks, left launch eager (tach-presets.c,
 * fits_ranks), and launch is still eager. */
gboolean tach_config_preset_eager_for_ranks (const TachConfig *config);
/* This process is one of mpirun's @ranks ranks from now on (0: it is not,
 * or no longer): presets then leave out what a rank cannot run (fits_ranks).
 * tach_ranks_init and tach_ranks_finish say so, on the main thread, before
 * and after any preset is applied. */
void     tach_presets_set_process_ranks (guint ranks);

/* tach_config_validate() on a device already resolved (NULL: no device
 * checks), so that a run resolves its device once. */
gboolean tach_config_validate_on (const TachConfig *config, const TachDevice *device,
                                  GError **error);

/* tach_backend_supports_knob() by a knob's name and value ("launch",
 * "graph"), read with the knob table (tach-presets.c). */
gboolean tach_backend_supports (const char *device_id, const char *key, const char *value,
                                const char **why);

/* The workload's default batch for @task. */
guint    tach_config_default_batch (TachWorkload workload, TachTask task);

/* The knob table's rules (tach-config.c, tach-knobs.c).  tach_knob_parse()
 * sets @knob from @value through its own rule or the one of its kind. */
gboolean tach_knob_parse (TachConfig *config, const TachKnobInfo *knob, const char *value,
                          GError **error);
gboolean tach_knob_parse_choice (TachConfig *config, const TachKnobInfo *knob,
                                 const char *value, GError **error);
gboolean tach_knob_parse_unsigned (const char *key, const char *value, guint64 min,
                                   guint64 max, guint64 *out, GError **error);
/* "invalid value 'V' for --KEY: expected EXPECTED" (always FALSE). */
gboolean tach_knob_invalid (GError **error, const char *key, const char *value,
                            const char *expected);

/* The knob table's words for a knob in messages (a TachWordingNamer,
 * tach-knob-words.c), installed with the table. */
gboolean tach_knob_words (GString *out, const char *name, const char *value, gboolean in_format);

/* Fills in what @error's hint left to the run's configuration (a knob's
 * value, its default, the knob at 0 of a shape check): where an error of a
 * lower layer (models, data) reaches the settings or the run. */
void tach_error_fill_hint (GError *error, const TachConfig *config);
/* tach_error_add_hint() with @knob's value read from @config. */
void tach_error_add_config_hint (GError **error, const TachConfig *config, TachKnobId knob,
                                 TachKnobId fix_knob, const char *fix_value, const char *fix);

G_END_DECLS
