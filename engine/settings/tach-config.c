/* tach-config.c: workload defaults, and setting and getting knobs by name.
 * Every front end goes through tach_config_set(), so parsing and its
 * messages live here and in the knob table (tach-knobs.c), nowhere else.
 *
 * One unit with tach-knobs.c, tach-knob-words.c and tach-presets.c: the
 * knob table and the configuration it parses into (tach-knobs.c's opening
 * comment says why; tools/folder-arrows.py lists the four as one).
 */
#include <stddef.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-config-private.h"

/* --------------------------------------------------------------- workloads */

const char *
tach_workload_to_string (TachWorkload workload)
{
  if ((guint) workload >= TACH_WORKLOAD_COUNT)
    return "unknown";
  return tach_knob (TACH_KNOB_WORKLOAD)->values[workload];
}

char *
tach_config_values_joined (const char *const *values)
{
  return g_strjoinv (", ", (char **) values);
}

gboolean
tach_workload_from_string (const char *s, TachWorkload *out, GError **error)
{
  const char *const *values = tach_knob (TACH_KNOB_WORKLOAD)->values;
  g_autofree char *joined = NULL;
  g_autofree char *expected = NULL;

  for (guint i = 0; values[i] != NULL; i++)
    if (g_strcmp0 (s, values[i]) == 0)
      {
        *out = (TachWorkload) i;
        return TRUE;
      }
  joined = tach_config_values_joined (values);
  expected = g_strdup_printf (_("one of %s"), joined);
  return tach_knob_invalid (error, "workload", s != NULL ? s : "", expected);
}

/* ---------------------------------------------------------------- defaults */

/* The workloads' defaults, one row per line of TACH_WORKLOAD_LIST. */
typedef struct {
  guint         batch[TACH_TASK_GENERATE + 1];
  TachOptimizer optimizer;
  double        lr;
  const char   *shapes;  /* "key=value" settings of the shape knobs */
} WorkloadDefaults;

#define DEFAULTS(train, generate, optimizer, lr, shapes) \
  { { train, generate }, optimizer, lr, shapes }
#define WORKLOAD_DEFAULTS_(ID, klass, value, label, defaults) defaults,
static const WorkloadDefaults workload_defaults[] = { TACH_WORKLOAD_LIST (WORKLOAD_DEFAULTS_) };
#undef WORKLOAD_DEFAULTS_
#undef DEFAULTS

/* The workload's own default, or the training one for a task it does not
 * have. */
guint
tach_config_default_batch (TachWorkload workload, TachTask task)
{
  const WorkloadDefaults *d;

  if ((guint) workload >= TACH_WORKLOAD_COUNT)
    return 256;
  d = &workload_defaults[workload];
  return d->batch[task] > 0 ? d->batch[task] : d->batch[TACH_TASK_TRAIN];
}

/* Sets each knob of the table that has a default (all of them, or only
 * the execution modes) to it. */
static void
apply_defaults (TachConfig *config, gboolean modes_only)
{
  guint n = 0;
  const TachKnobInfo *knobs = tach_knobs (&n);

  for (guint i = 0; i < n; i++)
    if (knobs[i].default_value != NULL && (knobs[i].is_mode || !modes_only))
      {
        gboolean ok = tach_knob_parse (config, &knobs[i], knobs[i].default_value, NULL);

        g_assert (ok);
      }
}

void
tach_config_reset_modes (TachConfig *config)
{
  apply_defaults (config, TRUE);
}

void
tach_config_init (TachConfig *config, TachWorkload workload)
{
  memset (config, 0, sizeof *config);
  if ((guint) workload >= TACH_WORKLOAD_COUNT)
    workload = (TachWorkload) 0;
  config->workload = workload;
  apply_defaults (config, FALSE);
  /* The workload's own defaults (TACH_WORKLOAD_LIST). */
  config->batch = tach_config_default_batch (workload, TACH_TASK_TRAIN);
  config->optimizer = workload_defaults[workload].optimizer;
  config->lr = workload_defaults[workload].lr;
  {
    gboolean ok = tach_config_apply_settings (config, workload_defaults[workload].shapes, NULL);

    /* The list's own words: a typo there is the program's bug. */
    g_assert (ok);
  }
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

guint
tach_config_get_warmup (const TachConfig *config)
{
  return MIN (config->warmup, config->steps / 2);
}

/* ----------------------------------------------------------------- setting */

gboolean
tach_knob_parse_choice (TachConfig *config, const TachKnobInfo *knob, const char *value,
                        GError **error)
{
  g_autofree char *joined = NULL;
  g_autofree char *expected = NULL;

  for (int i = 0; knob->values[i] != NULL; i++)
    if (g_strcmp0 (knob->values[i], value) == 0)
      {
        /* Every choice field is an int-sized enum or a gboolean. */
        G_STATIC_ASSERT (sizeof (TachRnn) == sizeof (int) && sizeof (gboolean) == sizeof (int));
        *(int *) ((char *) config + knob->offset) = i;
        return TRUE;
      }
  joined = tach_config_values_joined (knob->values);
  expected = g_strdup_printf (_("one of %s"), joined);
  return tach_knob_invalid (error, knob->name, value, expected);
}

gboolean
tach_knob_parse_unsigned (const char *key, const char *value, guint64 min, guint64 max,
                          guint64 *out, GError **error)
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
  return tach_knob_invalid (error, key, value, expected);
}

gboolean
tach_knob_parse (TachConfig *config, const TachKnobInfo *knob, const char *value, GError **error)
{
  guint64 n = 0;

  if (knob->parse != NULL)
    return knob->parse (config, knob, value, error);
  switch (knob->kind)
    {
    case TACH_KNOB_KIND_CHOICE:
      return tach_knob_parse_choice (config, knob, value, error);
    case TACH_KNOB_KIND_INTEGER:
      if (!tach_knob_parse_unsigned (knob->name, value, knob->min, knob->max, &n, error))
        return FALSE;
      if (knob->size == sizeof (guint64))
        *(guint64 *) ((char *) config + knob->offset) = n;
      else
        *(guint *) ((char *) config + knob->offset) = (guint) n;
      return TRUE;
    case TACH_KNOB_KIND_TEXT:
    default:
      g_return_val_if_reached (FALSE);
    }
}

gboolean
tach_config_set (TachConfig *config, const char *key, const char *value, GError **error)
{
  const TachKnobInfo *knob = tach_knob_lookup (key);

  g_return_val_if_fail (config != NULL, FALSE);

  if (knob == NULL)
    {
      g_autofree char *names = NULL;
      g_autoptr(GStrvBuilder) builder = g_strv_builder_new ();
      g_auto(GStrv) all = NULL;
      guint n = 0;
      const TachKnobInfo *knobs = tach_knobs (&n);

      for (guint k = 0; k < n; k++)
        g_strv_builder_add (builder, knobs[k].name);
      all = g_strv_builder_end (builder);
      names = g_strjoinv (", ", all);
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   _("unknown setting '%s': expected one of %s"), key != NULL ? key : "", names);
      return FALSE;
    }
  return tach_knob_parse (config, knob, value != NULL ? value : "", error);
}

char *
tach_config_get (const TachConfig *config, const char *key)
{
  const TachKnobInfo *knob = tach_knob_lookup (key);
  const char *field;

  if (knob == NULL)
    return NULL;
  if (knob->format != NULL)
    return knob->format (config, knob);
  field = (const char *) config + knob->offset;
  switch (knob->kind)
    {
    case TACH_KNOB_KIND_CHOICE:
      {
        int v = *(const int *) field;

        for (int k = 0; knob->values[k] != NULL; k++)
          if (k == v)
            return g_strdup (knob->values[k]);
        return NULL;
      }
    case TACH_KNOB_KIND_INTEGER:
      if (knob->size == sizeof (guint64))
        return g_strdup_printf ("%" G_GUINT64_FORMAT, *(const guint64 *) field);
      return g_strdup_printf ("%u", *(const guint *) field);
    case TACH_KNOB_KIND_TEXT:
    default:
      return NULL;
    }
}
