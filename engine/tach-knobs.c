/* tach-knobs.c: the knob table, one row per knob, and the rules that read
 * and write the knobs whose values are more than a choice or a number.
 *
 * The command line's help and parser, the GUI's rows, tach_config_set/get,
 * validation messages and the CSV columns all read these rows; a knob is
 * added by adding its row (and its TachKnobId and TachConfig field).
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-config-private.h"

/* Each choice knob's values and, at the same index, their labels: what a
 * user interface shows, while the identifiers stay what tach_config_set(),
 * CSV files and the command line use. */
#define CHOICE_LIST(knob, ...) \
  static const char *const knob##_values[] = { __VA_ARGS__, NULL }
#define LABEL_LIST(knob, ...) \
  static const char *const knob##_labels[] = { __VA_ARGS__, NULL }; \
  G_STATIC_ASSERT (G_N_ELEMENTS (knob##_values) == G_N_ELEMENTS (knob##_labels))

CHOICE_LIST (workload, "bilstm", "lstm-lm", "cnn");
LABEL_LIST (workload, NC_("knob value", "BiLSTM classifier"), NC_("knob value", "LSTM language model"),
            NC_("knob value", "MNIST CNN"));
CHOICE_LIST (task, "train", "generate");
LABEL_LIST (task, NC_("knob value", "Train"), NC_("knob value", "Generate text"));
CHOICE_LIST (rnn, "fused", "unrolled");
LABEL_LIST (rnn, NC_("knob value", "Fused"), NC_("knob value", "Unrolled"));
CHOICE_LIST (layout, "batch-major", "misread");
LABEL_LIST (layout, NC_("knob value", "Batch-major"), NC_("knob value", "Misread"));
CHOICE_LIST (feed, "host-f64", "host-f32", "prefetch", "resident");
LABEL_LIST (feed, NC_("knob value", "Host float64"), NC_("knob value", "Host float32"),
            NC_("knob value", "Prefetch"), NC_("knob value", "Resident"));
CHOICE_LIST (metrics, "none", "accuracy");
LABEL_LIST (metrics, NC_("knob value", "None"), NC_("knob value", "Accuracy"));
CHOICE_LIST (launch, "eager", "graph");
LABEL_LIST (launch, NC_("knob value", "Eager"), NC_("knob value", "CUDA graph"));
CHOICE_LIST (call_setup, "persistent", "per-call");
LABEL_LIST (call_setup, NC_("knob value", "Persistent"), NC_("knob value", "Per call"));
CHOICE_LIST (sampling, "host", "device");
LABEL_LIST (sampling, NC_("knob value", "Host"), NC_("knob value", "Device"));
CHOICE_LIST (precision, "fp32", "tf32", "bf16", "fp16");
LABEL_LIST (precision, NC_("knob value", "FP32"), NC_("knob value", "TF32"),
            NC_("knob value", "BF16"), NC_("knob value", "FP16"));
CHOICE_LIST (labels, "teacher", "random");
LABEL_LIST (labels, NC_("knob value", "Teacher"), NC_("knob value", "Random"));
CHOICE_LIST (optimizer, "adam", "sgd");
LABEL_LIST (optimizer, NC_("knob value", "Adam"), NC_("knob value", "SGD"));
CHOICE_LIST (head, "flatten", "gap");
LABEL_LIST (head, NC_("knob value", "Flatten"), NC_("knob value", "Global average pooling"));
CHOICE_LIST (print_text, "false", "true");
LABEL_LIST (print_text, NC_("knob value", "No"), NC_("knob value", "Yes"));

/* ------------------------------------------------------------- the rules */

static gboolean
invalid (GError **error, const TachKnobInfo *knob, const char *value, const char *expected)
{
  return tach_knob_invalid (error, knob->name, value, expected);
}

gboolean
tach_knob_invalid (GError **error, const char *key, const char *value, const char *expected)
{
  g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
               _("invalid value '%s' for --%s: expected %s"), value, key, expected);
  return FALSE;
}

static gboolean
parse_workload (TachConfig *config, const TachKnobInfo *knob, const char *value, GError **error)
{
  TachWorkload workload;
  g_autofree char *device = NULL;
  guint64 seed = config->seed;
  guint threads = config->threads;

  if (!tach_workload_from_string (value, &workload, error))
    return FALSE;
  /* A new workload starts from its own defaults; where it runs, its seed
   * and its threads are the user's, not the workload's. */
  device = g_steal_pointer (&config->device);
  tach_config_clear (config);
  tach_config_init (config, workload);
  g_free (config->device);
  config->device = g_steal_pointer (&device);
  config->seed = seed;
  config->threads = threads;
  return TRUE;
}

/* A new task brings its own default batch: W2's generation loop runs one
 * stream. */
static gboolean
parse_task (TachConfig *config, const TachKnobInfo *knob, const char *value, GError **error)
{
  TachTask before = config->task;

  if (!tach_knob_parse_choice (config, knob, value, error))
    return FALSE;
  if (config->task != before)
    config->batch = tach_config_default_batch (config->workload, config->task);
  return TRUE;
}

static gboolean
parse_device (TachConfig *config, const TachKnobInfo *knob, const char *value, GError **error)
{
  if (*value == '\0')
    return invalid (error, knob, value, _("one of auto, cpu, cuda, cuda:N"));
  g_free (config->device);
  config->device = g_strdup (value);
  tach_config_reapply_preset_for_device (config);
  return TRUE;
}

static gboolean
parse_preset (TachConfig *config, const TachKnobInfo *knob, const char *value, GError **error)
{
  return tach_config_apply_preset (config, value, error);
}

/* The string fields: device, preset, data. */
static char *
format_string (const TachConfig *config, const TachKnobInfo *knob)
{
  const char *s = *(char *const *) ((const char *) config + knob->offset);

  if (s == NULL && knob->default_value != NULL)
    return g_strdup (knob->default_value);
  return g_strdup (s);
}

static gboolean
parse_sync (TachConfig *config, const TachKnobInfo *knob, const char *value, GError **error)
{
  guint64 n = 0;

  if (g_str_equal (value, "end"))
    {
      config->sync_every = 0;
      return TRUE;
    }
  if (!g_ascii_string_to_unsigned (value, 10, 1, G_MAXUINT, &n, NULL))
    return invalid (error, knob, value, _("a whole number of steps from 1, or 'end'"));
  config->sync_every = (guint) n;
  return TRUE;
}

static char *
format_sync (const TachConfig *config, const TachKnobInfo *knob)
{
  return config->sync_every == 0 ? g_strdup ("end") : g_strdup_printf ("%u", config->sync_every);
}

static gboolean
parse_samples (TachConfig *config, const TachKnobInfo *knob, const char *value, GError **error)
{
  guint64 n = 0;

  if (g_str_equal (value, "auto"))
    {
      config->samples = 0;
      return TRUE;
    }
  if (!tach_knob_parse_unsigned (knob->name, value, 1, G_MAXUINT64, &n, error))
    return FALSE;
  config->samples = n;
  return TRUE;
}

static char *
format_samples (const TachConfig *config, const TachKnobInfo *knob)
{
  return config->samples == 0 ? g_strdup ("auto")
                              : g_strdup_printf ("%" G_GUINT64_FORMAT, config->samples);
}

static gboolean
parse_lr (TachConfig *config, const TachKnobInfo *knob, const char *value, GError **error)
{
  char *end = NULL;
  double lr = g_ascii_strtod (value, &end);

  if (*value == '\0' || end == NULL || *end != '\0' || !isfinite (lr) || lr <= 0.0 || lr > 10.0)
    return invalid (error, knob, value, _("a number above 0 and at most 10, e.g. 0.001"));
  config->lr = lr;
  return TRUE;
}

static char *
format_lr (const TachConfig *config, const TachKnobInfo *knob)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  return g_strdup (g_ascii_dtostr (buf, sizeof buf, config->lr));
}

static gboolean
parse_data (TachConfig *config, const TachKnobInfo *knob, const char *value, GError **error)
{
  g_free (config->data);
  config->data = *value != '\0' ? g_strdup (value) : NULL;
  return TRUE;
}

static gboolean
parse_input (TachConfig *config, const TachKnobInfo *knob, const char *value, GError **error)
{
  g_auto(GStrv) parts = g_strsplit (value, "x", -1);
  guint dims[3];

  if (g_strv_length (parts) != 3)
    return invalid (error, knob, value, _("HxWxC, e.g. 28x28x1 or 1080x1920x3"));
  for (guint i = 0; i < 3; i++)
    {
      guint64 n = 0;

      if (!g_ascii_string_to_unsigned (parts[i], 10, 1, 65536, &n, NULL))
        return invalid (error, knob, value,
                        _("HxWxC with each size from 1 to 65536, e.g. 28x28x1"));
      dims[i] = (guint) n;
    }
  config->input_h = dims[0];
  config->input_w = dims[1];
  config->input_c = dims[2];
  return TRUE;
}

static char *
format_input (const TachConfig *config, const TachKnobInfo *knob)
{
  return g_strdup_printf ("%ux%ux%u", config->input_h, config->input_w, config->input_c);
}

/* A yes/no knob also takes the usual spellings of yes and no. */
static gboolean
parse_bool (TachConfig *config, const TachKnobInfo *knob, const char *value, GError **error)
{
  static const char *const yes[] = { "true", "yes", "on", "1", NULL };
  static const char *const no[] = { "false", "no", "off", "0", NULL };
  gboolean *field = (gboolean *) ((char *) config + knob->offset);

  if (g_strv_contains (yes, value))
    *field = TRUE;
  else if (g_strv_contains (no, value))
    *field = FALSE;
  else
    return invalid (error, knob, value, _("one of true, false"));
  return TRUE;
}

/* --filters: one count per convolution block. */
static gboolean
parse_filters (TachConfig *config, const TachKnobInfo *knob, const char *value, GError **error)
{
  g_auto(GStrv) parts = g_strsplit (value, ",", -1);
  guint64 k[2] = { 0, 0 };

  if (g_strv_length (parts) != 2
      || !g_ascii_string_to_unsigned (parts[0], 10, 1, 65536, &k[0], NULL)
      || !g_ascii_string_to_unsigned (parts[1], 10, 1, 65536, &k[1], NULL))
    return invalid (error, knob, value,
                    _("two filter counts from 1 to 65536, one per convolution block, e.g. 32,64"));
  config->filters[0] = (guint) k[0];
  config->filters[1] = (guint) k[1];
  return TRUE;
}

static char *
format_filters (const TachConfig *config, const TachKnobInfo *knob)
{
  return g_strdup_printf ("%u,%u", config->filters[0], config->filters[1]);
}

/* ---------------------------------------------------------------- the table */

#define FIELD(f) .offset = offsetof (TachConfig, f), .size = sizeof (((TachConfig *) 0)->f)
#define CHOICES(knob) .kind = TACH_KNOB_KIND_CHOICE, .values = knob##_values, .labels = knob##_labels
#define INTEGER(lo, hi) .kind = TACH_KNOB_KIND_INTEGER, .min = (lo), .max = (hi)
#define TEXT(p, f) .kind = TACH_KNOB_KIND_TEXT, .parse = (p), .format = (f)

static const TachKnobInfo knobs[TACH_KNOB_COUNT] = {
  [TACH_KNOB_WORKLOAD] = { TACH_KNOB_WORKLOAD, "workload", N_("Workload"),
    N_("Which of the three reported workloads to run"),
    TACH_KNOB_GROUP_SETUP, CHOICES (workload), FIELD (workload), .parse = parse_workload },
  [TACH_KNOB_TASK] = { TACH_KNOB_TASK, "task", N_("Task"),
    N_("Train the model or generate text with it (lstm-lm)"),
    TACH_KNOB_GROUP_SETUP, CHOICES (task), FIELD (task), .default_value = "train",
    .parse = parse_task },
  [TACH_KNOB_DEVICE] = { TACH_KNOB_DEVICE, "device", N_("Device"),
    N_("auto, cpu, cuda or cuda:N"),
    TACH_KNOB_GROUP_SETUP, TEXT (parse_device, format_string), FIELD (device),
    .default_value = "auto", .default_label = NC_("knob value", "Automatic") },
  [TACH_KNOB_PRESET] = { TACH_KNOB_PRESET, "preset", N_("Preset"),
    N_("A named combination of modes that reproduces a framework"),
    TACH_KNOB_GROUP_SETUP, TEXT (parse_preset, format_string), FIELD (preset) },

  [TACH_KNOB_RNN] = { TACH_KNOB_RNN, "rnn", N_("RNN"),
    N_("One fused library call over the sequence, or one cell per time step"),
    TACH_KNOB_GROUP_MODE, CHOICES (rnn), FIELD (rnn), .default_value = "fused", .is_mode = TRUE },
  [TACH_KNOB_LAYOUT] = { TACH_KNOB_LAYOUT, "layout", N_("Layout"),
    N_("Batch-major data, or the reported misread as time-major"),
    TACH_KNOB_GROUP_MODE, CHOICES (layout), FIELD (layout), .default_value = "batch-major",
    .is_mode = TRUE, .changes_results = TRUE },
  [TACH_KNOB_FEED] = { TACH_KNOB_FEED, "feed", N_("Feeding"),
    N_("How each batch reaches the device"),
    TACH_KNOB_GROUP_MODE, CHOICES (feed), FIELD (feed), .default_value = "host-f32",
    .is_mode = TRUE },
  [TACH_KNOB_SYNC] = { TACH_KNOB_SYNC, "sync", N_("Sync every"),
    N_("Synchronise with the device every N steps, or only at the end"),
    TACH_KNOB_GROUP_MODE, TEXT (parse_sync, format_sync), FIELD (sync_every),
    .default_value = "1", .is_mode = TRUE },
  [TACH_KNOB_METRICS] = { TACH_KNOB_METRICS, "metrics", N_("Metrics"),
    N_("Compute the accuracy metric every step"),
    TACH_KNOB_GROUP_MODE, CHOICES (metrics), FIELD (metrics), .default_value = "none",
    .is_mode = TRUE },
  [TACH_KNOB_LAUNCH] = { TACH_KNOB_LAUNCH, "launch", N_("Kernel launch"),
    N_("Launch each kernel from the host, or replay a captured graph"),
    TACH_KNOB_GROUP_MODE, CHOICES (launch), FIELD (launch), .default_value = "eager",
    .is_mode = TRUE },
  [TACH_KNOB_CALL_SETUP] = { TACH_KNOB_CALL_SETUP, "call-setup", N_("Call setup"),
    N_("Build descriptors and plans once, or on every call"),
    TACH_KNOB_GROUP_MODE, CHOICES (call_setup), FIELD (call_setup),
    .default_value = "persistent", .is_mode = TRUE },
  [TACH_KNOB_SAMPLING] = { TACH_KNOB_SAMPLING, "sampling", N_("Sampling"),
    N_("Pick the next token on the host or on the device"),
    TACH_KNOB_GROUP_MODE, CHOICES (sampling), FIELD (sampling), .default_value = "host",
    .is_mode = TRUE },
  [TACH_KNOB_PRECISION] = { TACH_KNOB_PRECISION, "precision", N_("Precision"),
    N_("Arithmetic precision of the device math"),
    TACH_KNOB_GROUP_MODE, CHOICES (precision), FIELD (precision), .default_value = "fp32",
    .is_mode = TRUE, .changes_results = TRUE },

  [TACH_KNOB_BATCH] = { TACH_KNOB_BATCH, "batch", N_("Batch size"),
    N_("Samples (or text streams) per step"),
    TACH_KNOB_GROUP_RUN, INTEGER (1, G_MAXINT), FIELD (batch) },
  [TACH_KNOB_STEPS] = { TACH_KNOB_STEPS, "steps", N_("Steps"),
    N_("Steps to run, warm-up included"),
    TACH_KNOB_GROUP_RUN, INTEGER (1, G_MAXUINT), FIELD (steps), .default_value = "100" },
  [TACH_KNOB_WARMUP] = { TACH_KNOB_WARMUP, "warmup", N_("Warm-up steps"),
    N_("The first steps, left out of summaries (at most half of the steps)"),
    TACH_KNOB_GROUP_RUN, INTEGER (0, G_MAXUINT), FIELD (warmup), .default_value = "5" },
  [TACH_KNOB_SAMPLES] = { TACH_KNOB_SAMPLES, "samples", N_("Dataset size"),
    N_("Dataset size in samples (auto: 16 batches)"),
    TACH_KNOB_GROUP_RUN, TEXT (parse_samples, format_samples), FIELD (samples),
    .default_value = "auto" },
  [TACH_KNOB_SEED] = { TACH_KNOB_SEED, "seed", N_("Seed"),
    N_("Seed of every random number"),
    TACH_KNOB_GROUP_RUN, INTEGER (0, G_MAXUINT64), FIELD (seed), .default_value = "1" },
  [TACH_KNOB_LABELS] = { TACH_KNOB_LABELS, "labels", N_("Labels"),
    N_("Learnable teacher labels, or the report's random ones"),
    TACH_KNOB_GROUP_MODEL, CHOICES (labels), FIELD (labels), .default_value = "teacher" },
  [TACH_KNOB_THREADS] = { TACH_KNOB_THREADS, "threads", N_("CPU threads"),
    N_("CPU threads (0: all cores)"),
    TACH_KNOB_GROUP_RUN, INTEGER (0, 4096), FIELD (threads), .default_value = "0" },
  [TACH_KNOB_OPTIMIZER] = { TACH_KNOB_OPTIMIZER, "optimizer", N_("Optimiser"),
    N_("Optimiser of the training step"),
    TACH_KNOB_GROUP_MODEL, CHOICES (optimizer), FIELD (optimizer) },
  [TACH_KNOB_LR] = { TACH_KNOB_LR, "lr", N_("Learning rate"),
    N_("Learning rate"),
    TACH_KNOB_GROUP_MODEL, TEXT (parse_lr, format_lr), FIELD (lr) },
  [TACH_KNOB_DATA] = { TACH_KNOB_DATA, "data", N_("Data file"),
    N_("A data file or folder (text corpus or IDX images)"),
    TACH_KNOB_GROUP_MODEL, TEXT (parse_data, format_string), FIELD (data) },
  [TACH_KNOB_INPUT] = { TACH_KNOB_INPUT, "input", N_("Input size"),
    N_("Image size HxWxC of the cnn"),
    TACH_KNOB_GROUP_MODEL, TEXT (parse_input, format_input), FIELD (input_h),
    .default_value = "28x28x1" },
  [TACH_KNOB_HEAD] = { TACH_KNOB_HEAD, "head", N_("Classifier head"),
    N_("Flatten + dense 1024, or global average pooling"),
    TACH_KNOB_GROUP_MODEL, CHOICES (head), FIELD (head), .default_value = "flatten" },
  [TACH_KNOB_PRINT_TEXT] = { TACH_KNOB_PRINT_TEXT, "print-text", N_("Keep generated text"),
    N_("Keep the generated words"),
    TACH_KNOB_GROUP_MODEL, CHOICES (print_text), FIELD (print_text), .default_value = "false",
    .parse = parse_bool },

  /* The model's shapes; the defaults are the reports' (workloads.md). */
  [TACH_KNOB_SEQ_LEN] = { TACH_KNOB_SEQ_LEN, "seq-len", N_("Sequence length"),
    N_("Time steps per sample of the bilstm"),
    TACH_KNOB_GROUP_MODEL, INTEGER (1, 65536), FIELD (seq_len), .default_value = "10" },
  [TACH_KNOB_FEATURES] = { TACH_KNOB_FEATURES, "features", N_("Features"),
    N_("Features per time step of the bilstm"),
    TACH_KNOB_GROUP_MODEL, INTEGER (1, 65536), FIELD (features), .default_value = "300" },
  /* Its default is the workload's (tach_config_init): 40 or 100. */
  [TACH_KNOB_HIDDEN] = { TACH_KNOB_HIDDEN, "hidden", N_("Hidden units"),
    N_("LSTM units per direction"),
    TACH_KNOB_GROUP_MODEL, INTEGER (1, 65536), FIELD (hidden) },
  [TACH_KNOB_LAYERS] = { TACH_KNOB_LAYERS, "layers", N_("LSTM layers"),
    N_("Stacked LSTM layers"),
    TACH_KNOB_GROUP_MODEL, INTEGER (1, 64), FIELD (layers), .default_value = "1" },
  [TACH_KNOB_EMBED] = { TACH_KNOB_EMBED, "embed", N_("Embedding width"),
    N_("Embedding width of the lstm-lm"),
    TACH_KNOB_GROUP_MODEL, INTEGER (1, 65536), FIELD (embed), .default_value = "100" },
  [TACH_KNOB_CONTEXT] = { TACH_KNOB_CONTEXT, "context", N_("Context tokens"),
    N_("Context tokens of the lstm-lm"),
    TACH_KNOB_GROUP_MODEL, INTEGER (1, 4096), FIELD (context), .default_value = "4" },
  [TACH_KNOB_FILTERS] = { TACH_KNOB_FILTERS, "filters", N_("Conv filters"),
    N_("Filters of the cnn's two convolution blocks, e.g. 32,64"),
    TACH_KNOB_GROUP_MODEL, TEXT (parse_filters, format_filters), FIELD (filters),
    .default_value = "32,64" },
  [TACH_KNOB_DENSE] = { TACH_KNOB_DENSE, "dense", N_("Dense units"),
    N_("Units of the cnn's hidden dense layer"),
    TACH_KNOB_GROUP_MODEL, INTEGER (1, 1048576), FIELD (dense), .default_value = "1024" },
};

const TachKnobInfo *
tach_knobs (guint *n_knobs)
{
  if (n_knobs != NULL)
    *n_knobs = G_N_ELEMENTS (knobs);
  return knobs;
}

const TachKnobInfo *
tach_knob (TachKnobId id)
{
  g_return_val_if_fail ((guint) id < TACH_KNOB_COUNT, NULL);
  return &knobs[id];
}

const TachKnobInfo *
tach_knob_lookup (const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (knobs); i++)
    if (g_strcmp0 (knobs[i].name, name) == 0)
      return &knobs[i];
  return NULL;
}

const char *
tach_knob_value_label (const char *key, const char *value)
{
  const TachKnobInfo *knob = tach_knob_lookup (key);

  if (knob == NULL || value == NULL)
    return value;
  for (guint i = 0; knob->values != NULL && knob->values[i] != NULL; i++)
    if (g_str_equal (knob->values[i], value))
      return g_dpgettext2 (GETTEXT_PACKAGE, "knob value", knob->labels[i]);
  if (knob->default_label != NULL && g_strcmp0 (knob->default_value, value) == 0)
    return g_dpgettext2 (GETTEXT_PACKAGE, "knob value", knob->default_label);
  return value;
}
