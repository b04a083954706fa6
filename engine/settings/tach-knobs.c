/* tach-knobs.c: the knob table, one row per knob, and the rules that read
 * and write the knobs whose values are more than a choice or a number.
 *
 * The command line's help and parser, the GUI's rows, tach_config_set/get,
 * validation messages and the CSV columns all read these rows; a knob is
 * added by its line in tach-knob-list.h, which also gives its TachKnobId and
 * its TachConfig field.
 *
 * One unit with tach-config.c, tach-knob-words.c and tach-presets.c (they
 * call one another, and tools/folder-arrows.py lists them as one): the
 * knob table and the configuration it parses into.  tach_config_set/get
 * go through the rows; the rows' parsers write the configuration (the
 * workload re-initialises it, the preset applies its settings through
 * tach_config_set, the device re-applies the preset's GPU settings) and
 * word their errors with the rows' names.  Validation (tach-validate.c)
 * sits above them: nothing of the four calls it.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-backend.h"
#include "tach-error-private.h"
#include "tach-config-private.h"

/* The workload knob's values and labels: the workloads' list. */
#define WORKLOAD_VALUE_(ID, klass, value, label, ...) value,
#define WORKLOAD_LABEL_(ID, klass, value, label, ...) label,
static const char *const workload_values[] = { TACH_WORKLOAD_LIST (WORKLOAD_VALUE_) NULL };
static const char *const workload_labels[] = { TACH_WORKLOAD_LIST (WORKLOAD_LABEL_) NULL };

/* ------------------------------------------------------------- the rules */

static gboolean
invalid (GError **error, const TachKnobInfo *knob, const char *value, const char *expected)
{
  return tach_knob_invalid (error, knob->name, value, expected);
}

gboolean
tach_knob_invalid (GError **error, const char *key, const char *value, const char *expected)
{
  const TachKnobInfo *knob = tach_knob_lookup (key);
  g_autofree char *named = knob != NULL ? tach_knob_mention (knob->id, NULL)
                                        : g_strdup_printf ("--%s", key);

  g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
               _("invalid value '%s' for %s: expected %s"), value, named, expected);
  if (knob != NULL)
    tach_error_add_hint (error, knob->id, value, TACH_KNOB_COUNT, NULL, NULL);
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

/* A new task brings its own default batch (W2's generation loop runs one
 * stream) in place of the old task's default; a batch set to anything else
 * is the user's and stays, whatever the order of the settings (the window
 * showed a batch the user had typed replaced by 1 as the task changed, and
 * --batch 4 --task generate ran one stream). */
static gboolean
parse_task (TachConfig *config, const TachKnobInfo *knob, const char *value, GError **error)
{
  TachTask before = config->task;

  if (!tach_knob_parse_choice (config, knob, value, error))
    return FALSE;
  if (config->task != before
      && config->batch == tach_config_default_batch (config->workload, before))
    config->batch = tach_config_default_batch (config->workload, config->task);
  return TRUE;
}

static gboolean
parse_device (TachConfig *config, const TachKnobInfo *knob, const char *value, GError **error)
{
  if (*value == '\0')
    {
      g_auto(GStrv) ids = tach_backend_device_ids ();
      g_autofree char *joined = g_strjoinv (", ", ids);
      g_autofree char *expected = g_strdup_printf (_("one of %s"), joined);

      return invalid (error, knob, value, expected);
    }
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

/* ------------------------------------------------ what each value does */

/* The layout's clause names the run's recurrent steps (its --seq-len)
 * and batch; without a run, the bilstm's defaults. */
static char *
clause_layout (const TachConfig *config, const TachKnobInfo *knob, const char *value)
{
  TachConfig defaults;
  guint steps, batch;

  (void) knob;
  if (config == NULL)
    {
      tach_config_init (&defaults, TACH_WORKLOAD_BILSTM);
      config = &defaults;
    }
  steps = config->seq_len;
  batch = config->batch;
  if (config == &defaults)
    tach_config_clear (&defaults);
  if (g_str_equal (value, "misread"))
    return g_strdup_printf (_("the time-major misread turns %u recurrent steps of batch %u "
                              "into %u steps of batch %u"), steps, batch, batch, steps);
  return g_strdup_printf (_("batch-major data runs %u recurrent steps of batch %u"), steps, batch);
}

static char *
clause_sync (const TachConfig *config, const TachKnobInfo *knob, const char *value)
{
  (void) config;
  (void) knob;
  if (g_str_equal (value, "end"))
    return g_strdup (_("the loss is read back only at the end"));
  if (g_str_equal (value, "1"))
    return g_strdup (_("the loss is read back every step, as Keras fit's progress bar does"));
  return g_strdup_printf (_("the loss is read back every %s steps"), value);
}

static char *
clause_bucket_mb (const TachConfig *config, const TachKnobInfo *knob, const char *value)
{
  (void) config;
  (void) knob;
  return g_strdup_printf (_("overlapped all-reduces carry at most %s MB of gradients each"),
                          value);
}

static char *
clause_accumulate (const TachConfig *config, const TachKnobInfo *knob, const char *value)
{
  (void) knob;
  if (g_strcmp0 (value, "1") == 0)
    return g_strdup (_("each update takes the gradients of one batch"));
  return g_strdup_printf (_("the gradients of %s micro-batches of %u are summed into each update"),
                          value, config->batch);
}

static char *
clause_precision (const TachConfig *config, const TachKnobInfo *knob, const char *value)
{
  (void) config;
  (void) knob;
  return g_strdup_printf (_("the math runs in %s"), value);
}

/* ---------------------------------------------------------------- the table */

/* The rows, out of tach-knob-list.h.  A choice knob's values and labels
 * (and clauses) are compound literals (static, as at file scope); the
 * knob-table test holds them to the same length. */
#define FIELD(f) .offset = offsetof (TachConfig, f), .size = sizeof (((TachConfig *) 0)->f)
#define CHOICES(v, l) .kind = TACH_KNOB_KIND_CHOICE, \
  .values = (const char *const[]) { TACH_KNOB_UNPAREN_ v, NULL }, \
  .labels = (const char *const[]) { TACH_KNOB_UNPAREN_ l, NULL }
#define WORKLOADS .kind = TACH_KNOB_KIND_CHOICE, .values = workload_values, .labels = workload_labels
#define INTEGER(lo, hi) .kind = TACH_KNOB_KIND_INTEGER, .min = (lo), .max = (hi)
#define TEXT(p, f) .kind = TACH_KNOB_KIND_TEXT, .parse = (p), .format = (f)
#define CLAUSES(...) .clauses = (const char *const[]) { __VA_ARGS__, NULL }
#define ROW_(ID, decl, field, name, title, blurb, group, ...) \
  [TACH_KNOB_##ID] = { TACH_KNOB_##ID, name, title, blurb, group, FIELD (field), __VA_ARGS__ },

static TachKnobInfo knobs[TACH_KNOB_COUNT] = {
  TACH_KNOB_LIST (ROW_)
};

/* The device knob's blurb lists the device ids the backends take
 * ("auto, cpu, cuda or cuda:N"), made once, translated, before any row
 * is handed out; the rows are read-only from then on. */
static void
ensure_rows (void)
{
  static gsize done = 0;

  if (g_once_init_enter (&done))
    {
      g_auto(GStrv) ids = tach_backend_device_ids ();
      guint n = g_strv_length (ids);
      char *last = ids[n - 1];
      g_autofree char *head = NULL;

      ids[n - 1] = NULL;
      head = g_strjoinv (", ", ids);
      ids[n - 1] = last;
      /* Kept for the life of the process, as the table is. */
      knobs[TACH_KNOB_DEVICE].blurb = g_strdup_printf (_("%s or %s"), head, last);
      /* Messages name knobs in the table's words from now on. */
      tach_wording_set_namer (tach_knob_words);
      g_once_init_leave (&done, 1);
    }
}

const TachKnobInfo *
tach_knobs (guint *n_knobs)
{
  ensure_rows ();
  if (n_knobs != NULL)
    *n_knobs = G_N_ELEMENTS (knobs);
  return knobs;
}

const TachKnobInfo *
tach_knob (TachKnobId id)
{
  g_return_val_if_fail ((guint) id < TACH_KNOB_COUNT, NULL);
  ensure_rows ();
  return &knobs[id];
}

const TachKnobInfo *
tach_knob_lookup (const char *name)
{
  ensure_rows ();
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

char *
tach_knob_dup_clause (const char *key, const TachConfig *config, const char *value)
{
  const TachKnobInfo *knob = tach_knob_lookup (key);

  if (knob != NULL && knob->clause != NULL)
    return knob->clause (config, knob, value);
  for (guint i = 0; knob != NULL && knob->clauses != NULL && knob->values[i] != NULL; i++)
    if (g_str_equal (knob->values[i], value))
      return g_strdup (_(knob->clauses[i]));
  return g_strdup_printf ("%s=%s", key, value);
}
