/* tach-config.c: the knob table, workload defaults, and setting and
 * getting knobs by name.  Every front end goes through tach_config_set(),
 * so parsing and its messages live here and nowhere else.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-config-private.h"

static const char *const workload_values[] = { "bilstm", "lstm-lm", "cnn", NULL };
static const char *const task_values[] = { "train", "generate", NULL };
static const char *const rnn_values[] = { "fused", "unrolled", NULL };
static const char *const layout_values[] = { "batch-major", "misread", NULL };
static const char *const feed_values[] = { "host-f64", "host-f32", "prefetch", "resident", NULL };
static const char *const metrics_values[] = { "none", "accuracy", NULL };
static const char *const launch_values[] = { "eager", "graph", NULL };
static const char *const call_setup_values[] = { "persistent", "per-call", NULL };
static const char *const sampling_values[] = { "host", "device", NULL };
static const char *const precision_values[] = { "fp32", "tf32", "bf16", "fp16", NULL };
static const char *const labels_values[] = { "teacher", "random", NULL };
static const char *const optimizer_values[] = { "adam", "sgd", NULL };
static const char *const head_values[] = { "flatten", "gap", NULL };
static const char *const bool_values[] = { "false", "true", NULL };

/* The public descriptions and the private parse rules share one index. */
static const TachKnobInfo knob_infos[] = {
  { "workload", N_("Which of the three reported workloads to run"), workload_values, FALSE },
  { "task", N_("Train the model or generate text with it (lstm-lm)"), task_values, FALSE },
  { "device", N_("auto, cpu, cuda or cuda:N"), NULL, FALSE },
  { "preset", N_("A named combination of modes that reproduces a framework"), NULL, FALSE },
  { "rnn", N_("One fused library call over the sequence, or one cell per time step"), rnn_values, TRUE },
  { "layout", N_("Batch-major data, or the reported misread as time-major"), layout_values, TRUE },
  { "feed", N_("How each batch reaches the device"), feed_values, TRUE },
  { "sync", N_("Synchronise with the device every N steps, or only at the end"), NULL, TRUE },
  { "metrics", N_("Compute the accuracy metric every step"), metrics_values, TRUE },
  { "launch", N_("Launch each kernel from the host, or replay a captured graph"), launch_values, TRUE },
  { "call-setup", N_("Build descriptors and plans once, or on every call"), call_setup_values, TRUE },
  { "sampling", N_("Pick the next token on the host or on the device"), sampling_values, TRUE },
  { "precision", N_("Arithmetic precision of the device math"), precision_values, TRUE },
  { "batch", N_("Samples (or text streams) per step"), NULL, FALSE },
  { "steps", N_("Steps to run, warm-up included"), NULL, FALSE },
  { "warmup", N_("The first steps, left out of summaries (at most half of the steps)"), NULL, FALSE },
  { "samples", N_("Dataset size in samples (auto: 16 batches)"), NULL, FALSE },
  { "seed", N_("Seed of every random number"), NULL, FALSE },
  { "labels", N_("Learnable teacher labels, or the report's random ones"), labels_values, FALSE },
  { "threads", N_("CPU threads (0: all cores)"), NULL, FALSE },
  { "optimizer", N_("Optimiser of the training step"), optimizer_values, FALSE },
  { "lr", N_("Learning rate"), NULL, FALSE },
  { "data", N_("A data file or folder (text corpus or IDX images)"), NULL, FALSE },
  { "input", N_("Image size HxWxC of the cnn"), NULL, FALSE },
  { "head", N_("Flatten + dense 1024, or global average pooling"), head_values, FALSE },
  { "print-text", N_("Keep the generated words"), bool_values, FALSE },
};

typedef enum {
  KIND_ENUM,
  KIND_UINT,
  KIND_UINT64,
  KIND_SPECIAL,   /* parsed by its own code in tach_config_set */
} KnobKind;

typedef struct {
  KnobKind kind;
  size_t   offset;
  guint64  min, max;
} KnobRule;

#define ENUM(field) { KIND_ENUM, offsetof (TachConfig, field), 0, 0 }
#define UINT(field, lo, hi) { KIND_UINT, offsetof (TachConfig, field), lo, hi }
#define UINT64(field, lo, hi) { KIND_UINT64, offsetof (TachConfig, field), lo, hi }
#define SPECIAL { KIND_SPECIAL, 0, 0, 0 }

static const KnobRule knob_rules[] = {
  SPECIAL,                               /* workload */
  ENUM (task),
  SPECIAL,                               /* device */
  SPECIAL,                               /* preset */
  ENUM (rnn),
  ENUM (layout),
  ENUM (feed),
  SPECIAL,                               /* sync */
  ENUM (metrics),
  ENUM (launch),
  ENUM (call_setup),
  ENUM (sampling),
  ENUM (precision),
  UINT (batch, 1, G_MAXINT),
  UINT (steps, 1, G_MAXUINT),
  UINT (warmup, 0, G_MAXUINT),
  SPECIAL,                               /* samples */
  UINT64 (seed, 0, G_MAXUINT64),
  ENUM (labels),
  UINT (threads, 0, 4096),
  ENUM (optimizer),
  SPECIAL,                               /* lr */
  SPECIAL,                               /* data */
  SPECIAL,                               /* input */
  ENUM (head),
  SPECIAL,                               /* print-text */
};

G_STATIC_ASSERT (G_N_ELEMENTS (knob_infos) == G_N_ELEMENTS (knob_rules));

const TachKnobInfo *
tach_knobs (guint *n_knobs)
{
  if (n_knobs != NULL)
    *n_knobs = G_N_ELEMENTS (knob_infos);
  return knob_infos;
}

static int
knob_index (const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (knob_infos); i++)
    if (g_strcmp0 (knob_infos[i].name, name) == 0)
      return (int) i;
  return -1;
}

const TachKnobInfo *
tach_knob_lookup (const char *name)
{
  int i = knob_index (name);

  return i < 0 ? NULL : &knob_infos[i];
}

/* What a user interface shows for each value; the identifiers stay what
 * tach_config_set(), CSV files and the command line use. */
static const struct {
  const char *key;
  const char *value;
  const char *label;   /* msgid in the "knob value" context */
} value_labels[] = {
  { "workload", "bilstm", NC_("knob value", "BiLSTM classifier") },
  { "workload", "lstm-lm", NC_("knob value", "LSTM language model") },
  { "workload", "cnn", NC_("knob value", "MNIST CNN") },
  { "task", "train", NC_("knob value", "Train") },
  { "task", "generate", NC_("knob value", "Generate text") },
  { "device", "auto", NC_("knob value", "Automatic") },
  { "rnn", "fused", NC_("knob value", "Fused") },
  { "rnn", "unrolled", NC_("knob value", "Unrolled") },
  { "layout", "batch-major", NC_("knob value", "Batch-major") },
  { "layout", "misread", NC_("knob value", "Misread") },
  { "feed", "host-f64", NC_("knob value", "Host float64") },
  { "feed", "host-f32", NC_("knob value", "Host float32") },
  { "feed", "prefetch", NC_("knob value", "Prefetch") },
  { "feed", "resident", NC_("knob value", "Resident") },
  { "metrics", "none", NC_("knob value", "None") },
  { "metrics", "accuracy", NC_("knob value", "Accuracy") },
  { "launch", "eager", NC_("knob value", "Eager") },
  { "launch", "graph", NC_("knob value", "CUDA graph") },
  { "call-setup", "persistent", NC_("knob value", "Persistent") },
  { "call-setup", "per-call", NC_("knob value", "Per call") },
  { "sampling", "host", NC_("knob value", "Host") },
  { "sampling", "device", NC_("knob value", "Device") },
  { "precision", "fp32", NC_("knob value", "FP32") },
  { "precision", "tf32", NC_("knob value", "TF32") },
  { "precision", "bf16", NC_("knob value", "BF16") },
  { "precision", "fp16", NC_("knob value", "FP16") },
  { "labels", "teacher", NC_("knob value", "Teacher") },
  { "labels", "random", NC_("knob value", "Random") },
  { "optimizer", "adam", NC_("knob value", "Adam") },
  { "optimizer", "sgd", NC_("knob value", "SGD") },
  { "head", "flatten", NC_("knob value", "Flatten") },
  { "head", "gap", NC_("knob value", "Global average pooling") },
  { "print-text", "false", NC_("knob value", "No") },
  { "print-text", "true", NC_("knob value", "Yes") },
};

const char *
tach_knob_value_label (const char *key, const char *value)
{
  for (guint i = 0; i < G_N_ELEMENTS (value_labels); i++)
    if (g_strcmp0 (value_labels[i].key, key) == 0 && g_strcmp0 (value_labels[i].value, value) == 0)
      return g_dpgettext2 (GETTEXT_PACKAGE, "knob value", value_labels[i].label);
  return value;
}

/* --------------------------------------------------------------- workloads */

const char *
tach_workload_to_string (TachWorkload workload)
{
  if ((guint) workload >= TACH_WORKLOAD_COUNT)
    return "unknown";
  return workload_values[workload];
}

char *
tach_config_values_joined (const char *const *values)
{
  return g_strjoinv (", ", (char **) values);
}

gboolean
tach_workload_from_string (const char *s, TachWorkload *out, GError **error)
{
  for (guint i = 0; workload_values[i] != NULL; i++)
    if (g_strcmp0 (s, workload_values[i]) == 0)
      {
        *out = (TachWorkload) i;
        return TRUE;
      }
  g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
               _("invalid value '%s' for --workload: expected one of bilstm, lstm-lm, cnn"),
               s != NULL ? s : "");
  return FALSE;
}

/* ---------------------------------------------------------------- defaults */

/* The task defaults: W2's generation loop runs one stream. */
static guint
default_batch (TachWorkload workload, TachTask task)
{
  switch (workload)
    {
    case TACH_WORKLOAD_BILSTM:
      return 1024;
    case TACH_WORKLOAD_LSTM_LM:
      return task == TACH_TASK_GENERATE ? 1 : 256;
    case TACH_WORKLOAD_CNN:
    case TACH_WORKLOAD_COUNT:
    default:
      return 256;
    }
}

void
tach_config_reset_modes (TachConfig *config)
{
  config->rnn = TACH_RNN_FUSED;
  config->layout = TACH_LAYOUT_BATCH_MAJOR;
  config->feed = TACH_FEED_HOST_F32;
  config->sync_every = 1;
  config->metrics = TACH_METRICS_NONE;
  config->launch = TACH_LAUNCH_EAGER;
  config->call_setup = TACH_CALL_SETUP_PERSISTENT;
  config->sampling = TACH_SAMPLING_HOST;
  config->precision = TACH_PRECISION_FP32;
}

void
tach_config_init (TachConfig *config, TachWorkload workload)
{
  memset (config, 0, sizeof *config);
  if ((guint) workload >= TACH_WORKLOAD_COUNT)
    workload = TACH_WORKLOAD_BILSTM;
  config->workload = workload;
  config->task = TACH_TASK_TRAIN;
  config->device = g_strdup ("auto");
  config->preset = NULL;
  tach_config_reset_modes (config);
  config->batch = default_batch (workload, TACH_TASK_TRAIN);
  config->steps = 100;
  config->warmup = 5;
  config->samples = 0;
  config->seed = 1;
  config->labels = TACH_LABELS_TEACHER;
  config->threads = 0;
  /* W1 and W2 train with Adam at 1e-3; W3 with plain SGD at 1e-3, as reported. */
  config->optimizer = workload == TACH_WORKLOAD_CNN ? TACH_OPTIMIZER_SGD : TACH_OPTIMIZER_ADAM;
  config->lr = 1e-3;
  config->data = NULL;
  config->input_h = 28;
  config->input_w = 28;
  config->input_c = 1;
  config->head = TACH_HEAD_FLATTEN;
  config->print_text = FALSE;
}

void
tach_config_copy (TachConfig *dest, const TachConfig *src)
{
  if (dest == src)
    return;
  *dest = *src;
  dest->device = g_strdup (src->device);
  dest->preset = g_strdup (src->preset);
  dest->data = g_strdup (src->data);
}

void
tach_config_clear (TachConfig *config)
{
  g_clear_pointer (&config->device, g_free);
  g_clear_pointer (&config->preset, g_free);
  g_clear_pointer (&config->data, g_free);
}

guint64
tach_config_get_samples (const TachConfig *config)
{
  if (config->samples > 0)
    return config->samples;
  return (guint64) TACH_DEFAULT_BATCHES * MAX (config->batch, 1);
}

guint
tach_config_get_warmup (const TachConfig *config)
{
  return MIN (config->warmup, config->steps / 2);
}

/* ----------------------------------------------------------------- setting */

static gboolean
invalid (GError **error, const char *key, const char *value, const char *expected)
{
  g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
               _("invalid value '%s' for --%s: expected %s"), value, key, expected);
  return FALSE;
}

static gboolean
parse_enum (const char *key, const char *const *values, const char *value, int *out,
            GError **error)
{
  g_autofree char *joined = NULL;
  g_autofree char *expected = NULL;

  for (int i = 0; values[i] != NULL; i++)
    if (g_strcmp0 (values[i], value) == 0)
      {
        *out = i;
        return TRUE;
      }
  joined = tach_config_values_joined (values);
  expected = g_strdup_printf (_("one of %s"), joined);
  return invalid (error, key, value, expected);
}

static gboolean
parse_unsigned (const char *key, const char *value, guint64 min, guint64 max, guint64 *out,
                GError **error)
{
  g_autofree char *expected = NULL;

  /* g_ascii_string_to_unsigned rejects signs, spaces, trailing junk and
   * overflow, which is exactly the strictness a benchmark setting needs. */
  if (g_ascii_string_to_unsigned (value, 10, min, max, out, NULL))
    return TRUE;
  {
    /* Numbers go in as strings: xgettext cannot read G_GUINT64_FORMAT. */
    g_autofree char *lo = g_strdup_printf ("%" G_GUINT64_FORMAT, min);
    g_autofree char *hi = g_strdup_printf ("%" G_GUINT64_FORMAT, max);

    expected = g_strdup_printf (_("a whole number from %s to %s"), lo, hi);
  }
  return invalid (error, key, value, expected);
}

static gboolean
parse_input (const char *value, guint dims[3], GError **error)
{
  g_auto(GStrv) parts = g_strsplit (value, "x", -1);

  if (g_strv_length (parts) != 3)
    return invalid (error, "input", value, _("HxWxC, e.g. 28x28x1 or 1080x1920x3"));
  for (guint i = 0; i < 3; i++)
    {
      guint64 n = 0;

      if (!g_ascii_string_to_unsigned (parts[i], 10, 1, 65536, &n, NULL))
        return invalid (error, "input", value,
                        _("HxWxC with each size from 1 to 65536, e.g. 28x28x1"));
      dims[i] = (guint) n;
    }
  return TRUE;
}

static gboolean
parse_bool (const char *value, gboolean *out)
{
  static const char *const yes[] = { "true", "yes", "on", "1", NULL };
  static const char *const no[] = { "false", "no", "off", "0", NULL };

  if (g_strv_contains (yes, value))
    *out = TRUE;
  else if (g_strv_contains (no, value))
    *out = FALSE;
  else
    return FALSE;
  return TRUE;
}

static gboolean
set_workload (TachConfig *config, const char *value, GError **error)
{
  TachWorkload workload;
  g_autofree char *device = NULL;
  guint64 seed = config->seed;
  guint threads = config->threads;

  if (!tach_workload_from_string (value, &workload, error))
    return FALSE;
  device = g_steal_pointer (&config->device);
  tach_config_clear (config);
  tach_config_init (config, workload);
  g_free (config->device);
  config->device = g_steal_pointer (&device);
  config->seed = seed;
  config->threads = threads;
  return TRUE;
}

gboolean
tach_config_set (TachConfig *config, const char *key, const char *value, GError **error)
{
  int i = knob_index (key);
  const KnobRule *rule;
  guint64 n = 0;

  g_return_val_if_fail (config != NULL, FALSE);

  if (i < 0)
    {
      g_autofree char *names = NULL;
      g_autoptr(GStrvBuilder) builder = g_strv_builder_new ();
      g_auto(GStrv) all = NULL;

      for (guint k = 0; k < G_N_ELEMENTS (knob_infos); k++)
        g_strv_builder_add (builder, knob_infos[k].name);
      all = g_strv_builder_end (builder);
      names = g_strjoinv (", ", all);
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   _("unknown setting '%s': expected one of %s"), key != NULL ? key : "", names);
      return FALSE;
    }
  if (value == NULL)
    value = "";

  rule = &knob_rules[i];
  switch (rule->kind)
    {
    case KIND_ENUM:
      {
        int v = 0;

        if (!parse_enum (key, knob_infos[i].values, value, &v, error))
          return FALSE;
        if (g_str_equal (key, "task") && (TachTask) v != config->task)
          config->batch = default_batch (config->workload, (TachTask) v);
        /* Every enum field is an int-sized enum with small non-negative values. */
        *(int *) ((char *) config + rule->offset) = v;
        return TRUE;
      }
    case KIND_UINT:
      if (!parse_unsigned (key, value, rule->min, rule->max, &n, error))
        return FALSE;
      *(guint *) ((char *) config + rule->offset) = (guint) n;
      return TRUE;
    case KIND_UINT64:
      if (!parse_unsigned (key, value, rule->min, rule->max, &n, error))
        return FALSE;
      *(guint64 *) ((char *) config + rule->offset) = n;
      return TRUE;
    case KIND_SPECIAL:
    default:
      break;
    }

  if (g_str_equal (key, "workload"))
    return set_workload (config, value, error);

  if (g_str_equal (key, "device"))
    {
      if (*value == '\0')
        return invalid (error, key, value, _("one of auto, cpu, cuda, cuda:N"));
      g_free (config->device);
      config->device = g_strdup (value);
      tach_config_reapply_preset_for_device (config);
      return TRUE;
    }

  if (g_str_equal (key, "preset"))
    return tach_config_apply_preset (config, value, error);

  if (g_str_equal (key, "sync"))
    {
      if (g_str_equal (value, "end"))
        {
          config->sync_every = 0;
          return TRUE;
        }
      if (!g_ascii_string_to_unsigned (value, 10, 1, G_MAXUINT, &n, NULL))
        return invalid (error, key, value, _("a whole number of steps from 1, or 'end'"));
      config->sync_every = (guint) n;
      return TRUE;
    }

  if (g_str_equal (key, "samples"))
    {
      if (g_str_equal (value, "auto"))
        {
          config->samples = 0;
          return TRUE;
        }
      if (!parse_unsigned (key, value, 1, G_MAXUINT64, &n, error))
        return FALSE;
      config->samples = n;
      return TRUE;
    }

  if (g_str_equal (key, "lr"))
    {
      char *end = NULL;
      double lr = g_ascii_strtod (value, &end);

      if (*value == '\0' || end == NULL || *end != '\0' || !isfinite (lr) || lr <= 0.0 || lr > 10.0)
        return invalid (error, key, value, _("a number above 0 and at most 10, e.g. 0.001"));
      config->lr = lr;
      return TRUE;
    }

  if (g_str_equal (key, "data"))
    {
      g_free (config->data);
      config->data = *value != '\0' ? g_strdup (value) : NULL;
      return TRUE;
    }

  if (g_str_equal (key, "input"))
    {
      guint dims[3];

      if (!parse_input (value, dims, error))
        return FALSE;
      config->input_h = dims[0];
      config->input_w = dims[1];
      config->input_c = dims[2];
      return TRUE;
    }

  if (g_str_equal (key, "print-text"))
    {
      if (!parse_bool (value, &config->print_text))
        return invalid (error, key, value, _("one of true, false"));
      return TRUE;
    }

  g_return_val_if_reached (FALSE);
}

char *
tach_config_get (const TachConfig *config, const char *key)
{
  int i = knob_index (key);
  const KnobRule *rule;

  if (i < 0)
    return NULL;
  rule = &knob_rules[i];
  switch (rule->kind)
    {
    case KIND_ENUM:
      {
        int v = *(const int *) ((const char *) config + rule->offset);
        const char *const *values = knob_infos[i].values;

        for (int k = 0; values[k] != NULL; k++)
          if (k == v)
            return g_strdup (values[k]);
        return NULL;
      }
    case KIND_UINT:
      return g_strdup_printf ("%u", *(const guint *) ((const char *) config + rule->offset));
    case KIND_UINT64:
      return g_strdup_printf ("%" G_GUINT64_FORMAT,
                              *(const guint64 *) ((const char *) config + rule->offset));
    case KIND_SPECIAL:
    default:
      break;
    }

  if (g_str_equal (key, "workload"))
    return g_strdup (tach_workload_to_string (config->workload));
  if (g_str_equal (key, "device"))
    return g_strdup (config->device != NULL ? config->device : "auto");
  if (g_str_equal (key, "preset"))
    return g_strdup (config->preset);
  if (g_str_equal (key, "sync"))
    return config->sync_every == 0 ? g_strdup ("end") : g_strdup_printf ("%u", config->sync_every);
  if (g_str_equal (key, "samples"))
    return config->samples == 0 ? g_strdup ("auto")
                                : g_strdup_printf ("%" G_GUINT64_FORMAT, config->samples);
  if (g_str_equal (key, "lr"))
    {
      char buf[G_ASCII_DTOSTR_BUF_SIZE];

      return g_strdup (g_ascii_dtostr (buf, sizeof buf, config->lr));
    }
  if (g_str_equal (key, "data"))
    return g_strdup (config->data);
  if (g_str_equal (key, "input"))
    return g_strdup_printf ("%ux%ux%u", config->input_h, config->input_w, config->input_c);
  if (g_str_equal (key, "print-text"))
    return g_strdup (config->print_text ? "true" : "false");
  return NULL;
}
