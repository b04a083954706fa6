/* tach-presets.c: the named combinations of modes that reproduce each
 * reported framework behaviour, plus "tuned", the fastest correct one.
 *
 * A preset's settings are plain "key=value" strings applied by
 * tach_config_apply_settings() (public: the tests write their settings the
 * same way), which parses each value with tach_config_set().  Settings that
 * only a GPU can do (CUDA graphs) live apart in gpu_settings and are applied
 * only where config->device can do them: a preset never asks a device for
 * what it cannot do.
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-backend.h"
#include "tach-config-private.h"

static const TachPreset presets[] = {
  /* W1: the order of the report, slowest first. */
  { "tf1-feed-dict", TACH_WORKLOAD_BILSTM,
    N_("TF1 CudnnLSTM fed with feed_dict: batch-major data misread as time-major, "
       "float64 converted and copied every step"),
    "layout=misread feed=host-f64 sync=1", NULL },
  { "tf1-constant", TACH_WORKLOAD_BILSTM,
    N_("TF1 CudnnLSTM with the batch embedded as a constant: still misread, no feeding"),
    "layout=misread feed=resident sync=1", NULL },
  { "keras-fit", TACH_WORKLOAD_BILSTM,
    N_("Keras CuDNNLSTM fit: the right layout, float32 copied every step, "
       "loss and accuracy read back every step"),
    "layout=batch-major rnn=fused feed=host-f32 sync=1 metrics=accuracy", NULL },
  { "tuned", TACH_WORKLOAD_BILSTM,
    N_("The fastest correct combination: resident data, fused RNN, one sync at the end"),
    "layout=batch-major rnn=fused feed=resident sync=end metrics=none", "launch=graph" },

  /* W2 */
  { "static-rnn", TACH_WORKLOAD_LSTM_LM,
    N_("TF1 static_rnn + BasicLSTMCell in a persistent session, sampled on the host"),
    "rnn=unrolled call-setup=persistent sampling=host", NULL },
  { "keras-predict", TACH_WORKLOAD_LSTM_LM,
    N_("TF2 Keras predict per token: setup rebuilt every call, distribution read back"),
    "rnn=fused call-setup=per-call sampling=host sync=1", NULL },
  { "tuned", TACH_WORKLOAD_LSTM_LM,
    N_("The fastest correct combination: fused, persistent, sampled on the device"),
    "rnn=fused call-setup=persistent sampling=device sync=end", "launch=graph" },

  /* W3 */
  { "estimator", TACH_WORKLOAD_CNN,
    N_("tf.estimator: a prefetching input pipeline, loss logged every 100 steps, no metric"),
    "sync=100 metrics=none feed=prefetch", NULL },
  { "keras-fit", TACH_WORKLOAD_CNN,
    N_("tf.keras fit: loss and accuracy read back every step for the progress bar"),
    "sync=1 metrics=accuracy feed=host-f32", NULL },
  { "tuned", TACH_WORKLOAD_CNN,
    N_("The fastest correct combination: resident data, one sync at the end"),
    "sync=end metrics=none feed=resident", "launch=graph" },
};

const TachPreset *
tach_presets (guint *n_presets)
{
  if (n_presets != NULL)
    *n_presets = G_N_ELEMENTS (presets);
  return presets;
}

GPtrArray *
tach_presets_for_workload (TachWorkload workload)
{
  GPtrArray *out = g_ptr_array_new ();

  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    if (presets[i].workload == workload)
      g_ptr_array_add (out, (gpointer) &presets[i]);
  return out;
}

static const TachPreset *
preset_lookup (TachWorkload workload, const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    if (presets[i].workload == workload && g_strcmp0 (presets[i].name, name) == 0)
      return &presets[i];
  return NULL;
}

gboolean
tach_config_apply_settings (TachConfig *config, const char *settings, GError **error)
{
  g_auto(GStrv) items = NULL;
  TachConfig scratch;

  g_return_val_if_fail (config != NULL, FALSE);
  if (settings == NULL)
    return TRUE;

  /* Apply to a copy so that a failure leaves the configuration untouched. */
  items = g_strsplit_set (settings, " \t\n", -1);
  tach_config_copy (&scratch, config);
  for (guint i = 0; items[i] != NULL; i++)
    {
      const char *eq = strchr (items[i], '=');
      g_autofree char *key = NULL;

      if (*items[i] == '\0')
        continue;
      if (eq == NULL)
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                       _("invalid setting '%s': expected key=value"), items[i]);
          tach_config_clear (&scratch);
          return FALSE;
        }
      key = g_strndup (items[i], eq - items[i]);
      if (!tach_config_set (&scratch, key, eq + 1, error))
        {
          tach_config_clear (&scratch);
          return FALSE;
        }
    }
  tach_config_clear (config);
  *config = scratch;
  return TRUE;
}

/* The id of the device config->device stands for ("auto" resolved), or
 * NULL when it resolves to nothing usable. */
static char *
device_id_for (const TachConfig *config)
{
  g_autoptr(TachDeviceInfo) info = NULL;

  if (config->device == NULL || g_str_equal (config->device, "auto"))
    {
      info = tach_device_resolve ("auto", NULL);
      return info != NULL ? g_strdup (info->id) : NULL;
    }
  if (g_str_equal (config->device, "cuda"))
    return g_strdup ("cuda:0");
  return g_strdup (config->device);
}

/* Each gpu setting goes in where the device is a GPU that supports it;
 * elsewhere the knob gets its plain default back (@reset), so that moving a
 * tuned configuration from a GPU to the CPU drops launch=graph. */
static void
apply_gpu_settings (TachConfig *config, const TachPreset *preset, gboolean reset)
{
  g_autofree char *id = NULL;
  g_auto(GStrv) items = NULL;
  TachConfig defaults;

  if (preset->gpu_settings == NULL)
    return;
  id = device_id_for (config);
  items = g_strsplit (preset->gpu_settings, " ", -1);
  tach_config_init (&defaults, config->workload);
  for (guint i = 0; items[i] != NULL; i++)
    {
      g_auto(GStrv) kv = g_strsplit (items[i], "=", 2);
      gboolean gpu = id != NULL && g_str_has_prefix (id, "cuda");

      if (g_strv_length (kv) != 2)
        continue;
      if (gpu && tach_backend_supports (id, kv[0], kv[1], NULL))
        tach_config_set (config, kv[0], kv[1], NULL);
      else if (reset)
        {
          g_autofree char *plain = tach_config_get (&defaults, kv[0]);

          tach_config_set (config, kv[0], plain, NULL);
        }
    }
  tach_config_clear (&defaults);
}

gboolean
tach_config_apply_preset (TachConfig *config, const char *name, GError **error)
{
  const TachPreset *preset = preset_lookup (config->workload, name);
  TachConfig scratch;

  if (preset == NULL)
    {
      g_autoptr(GPtrArray) mine = tach_presets_for_workload (config->workload);
      g_autoptr(GString) names = g_string_new (NULL);

      for (guint i = 0; i < mine->len; i++)
        g_string_append_printf (names, "%s%s", i > 0 ? ", " : "",
                                ((const TachPreset *) g_ptr_array_index (mine, i))->name);
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   _("invalid value '%s' for --preset: expected one of %s (the presets of %s)"),
                   name != NULL ? name : "", names->str,
                   tach_workload_to_string (config->workload));
      return FALSE;
    }

  /* Apply to a copy so that a failure leaves the configuration untouched. */
  tach_config_copy (&scratch, config);
  tach_config_reset_modes (&scratch);
  if (!tach_config_apply_settings (&scratch, preset->settings, error))
    {
      /* A broken built-in preset is a programming error, but it must still
       * surface as a message rather than a crash. */
      g_prefix_error (error, "preset %s: ", preset->name);
      tach_config_clear (&scratch);
      return FALSE;
    }
  apply_gpu_settings (&scratch, preset, TRUE);
  g_free (scratch.preset);
  scratch.preset = g_strdup (preset->name);

  tach_config_clear (config);
  *config = scratch;
  return TRUE;
}

void
tach_config_reapply_preset_for_device (TachConfig *config)
{
  const TachPreset *preset;

  if (config->preset == NULL)
    return;
  preset = preset_lookup (config->workload, config->preset);
  if (preset != NULL)
    apply_gpu_settings (config, preset, TRUE);
}
