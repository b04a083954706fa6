/* tach-knob-words.c: the words in which messages name knobs, out of the
 * knob table (the command line's option names, or the settings panel's
 * titles and value labels: tach_set_wording), and the hints' facts that
 * only the run's configuration knows (a knob's value, a default), filled
 * in where an error of a lower layer reaches the settings.
 *
 * The markup and the error domain are backend/tach-error.c's; this file
 * installs the knob table's words there (tach_wording_set_namer).
 *
 * One unit with tach-config.c, tach-knobs.c and tach-presets.c: the knob
 * table and the configuration it parses into (tach-knobs.c's opening
 * comment says why; tools/folder-arrows.py lists the four as one).
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-config-private.h"

void
tach_error_add_config_hint (GError           **error,
                            const TachConfig  *config,
                            TachKnobId         knob,
                            TachKnobId         fix_knob,
                            const char        *fix_value,
                            const char        *fix)
{
  if (error == NULL || *error == NULL)
    return;
  tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE, knob, fix_knob, fix_value, fix);
  tach_error_fill_hint (*error, config);
}

/* The first model-shape knob of @config that is 0, with
 * its value and the workload's default; FALSE when none is. */
static gboolean
first_zero_knob (const TachConfig *config, TachKnobId *knob, char **value, char **fix)
{
  guint n = 0;
  const TachKnobInfo *knobs = tach_knobs (&n);
  TachConfig defaults;
  gboolean found = FALSE;

  tach_config_init (&defaults, config->workload);
  for (guint i = 0; i < n && !found; i++)
    {
      g_autofree char *v = NULL;

      if (!knobs[i].is_shape)
        continue;
      v = tach_config_get (config, knobs[i].name);
      if (g_strcmp0 (v, "0") == 0)
        {
          *knob = knobs[i].id;
          *value = g_steal_pointer (&v);
          *fix = tach_config_get (&defaults, knobs[i].name);
          found = TRUE;
        }
    }
  tach_config_clear (&defaults);
  return found;
}

void
tach_error_fill_hint (GError *error, const TachConfig *config)
{
  TachKnobId knob = TACH_KNOB_COUNT;
  g_autofree char *value = NULL;
  g_autofree char *fix = NULL;

  switch (tach_error_get_pending (error, &knob))
    {
    case TACH_HINT_COMPLETE:
      return;
    case TACH_HINT_CONFIG_VALUE:
      value = tach_config_get (config, tach_knob (knob)->name);
      break;
    case TACH_HINT_CONFIG_DEFAULT:
      value = tach_config_get (config, tach_knob (knob)->name);
      fix = g_strdup (tach_knob (knob)->default_value);
      break;
    case TACH_HINT_ZERO_SHAPE:
      /* No knob at 0 (the check refused another size): no hint. */
      if (!first_zero_knob (config, &knob, &value, &fix))
        knob = TACH_KNOB_COUNT;
      break;
    }
  tach_error_complete_hint (error, knob, value, fix);
}

/* Appends @text to @out with its percent signs doubled when @escape, so
 * that a title or a label put into a format string stays text. */
static void
append_text (GString *out, const char *text, gboolean escape)
{
  for (const char *c = text; *c != '\0'; c++)
    {
      if (*c == '%' && escape)
        g_string_append_c (out, '%');
      g_string_append_c (out, *c);
    }
}

/* Appends @knob's mention with @value (NULL: none), as text of a format
 * string when @in_format (a value holding a conversion such as %u is kept
 * as it is, for printf to fill in). */
static void
append_mention (GString            *out,
                const TachKnobInfo *knob,
                const char         *value,
                gboolean            in_format)
{
  gboolean spec = in_format && value != NULL && strchr (value, '%') != NULL;
  /* A conversion other than %s stands for a number. */
  gboolean number = spec && strstr (value, "%s") == NULL;

  if (tach_get_wording () == TACH_WORDING_OPTIONS)
    {
      tach_wording_append_option (out, knob->name, value);
      return;
    }
  if (value == NULL)
    {
      append_text (out, _(knob->title), in_format);
      return;
    }
  {
    g_autofree char *label_s = g_strdup (spec ? value : tach_knob_value_label (knob->name, value));
    g_autofree char *mention = NULL;

    if (in_format && !spec)
      {
        g_autoptr(GString) escaped = g_string_new (NULL);

        append_text (escaped, label_s, TRUE);
        g_free (label_s);
        label_s = g_string_free (g_steal_pointer (&escaped), FALSE);
      }
    /* A number stands as it is ("Batch size 64"), a word is quoted. */
    if (number || (!spec && g_ascii_isdigit (*label_s)))
      /* Translators: a setting and its value that is a number, in a
       * message: "Batch size 64". */
      mention = g_strdup_printf (C_("knob mention", "%s %s"), _(knob->title), label_s);
    else
      /* Translators: a setting and its value, in a message, as the
       * settings panel shows them: "Classifier head “Global average
       * pooling”". */
      mention = g_strdup_printf (C_("knob mention", "%s “%s”"), _(knob->title), label_s);
    g_string_append (out, mention);
  }
}

char *
tach_knob_mention (TachKnobId knob, const char *value)
{
  GString *out = g_string_new (NULL);

  g_return_val_if_fail ((guint) knob < TACH_KNOB_COUNT, NULL);
  append_mention (out, tach_knob (knob), value, FALSE);
  return g_string_free (out, FALSE);
}

gboolean
tach_knob_words (GString *out, const char *name, const char *value, gboolean in_format)
{
  const TachKnobInfo *knob = tach_knob_lookup (name);

  if (knob == NULL)
    return FALSE;
  append_mention (out, knob, value, in_format);
  return TRUE;
}

void
tach_set_wording (TachWording value)
{
  /* The table's words before the wording that needs them. */
  tach_wording_set_namer (tach_knob_words);
  tach_wording_set_mode (value);
}
