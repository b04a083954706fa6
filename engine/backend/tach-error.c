/* tach-error.c: the engine's error domain, whose errors can carry a hint:
 * the knob they concern, its value and the fix (tach_error_get_hint), and
 * the wording in which their messages name knobs (tach_set_wording). */
#include "tach-error-private.h"

#include <glib/gi18n-lib.h>

typedef struct {
  gboolean      has_hint;
  TachErrorHint hint;   /* its strings owned */
} TachErrorPrivate;

static void
tach_error_private_init (TachErrorPrivate *priv)
{
  priv->has_hint = FALSE;
  priv->hint = (TachErrorHint) { TACH_KNOB_COUNT, NULL, TACH_KNOB_COUNT, NULL, NULL };
}

static void
tach_error_private_copy (const TachErrorPrivate *src, TachErrorPrivate *dest)
{
  dest->has_hint = src->has_hint;
  dest->hint.knob = src->hint.knob;
  dest->hint.value = g_strdup (src->hint.value);
  dest->hint.fix_knob = src->hint.fix_knob;
  dest->hint.fix_value = g_strdup (src->hint.fix_value);
  dest->hint.fix = g_strdup (src->hint.fix);
}

static void
tach_error_private_clear (TachErrorPrivate *priv)
{
  g_free ((char *) priv->hint.value);
  g_free ((char *) priv->hint.fix_value);
  g_free ((char *) priv->hint.fix);
  tach_error_private_init (priv);
}

G_DEFINE_EXTENDED_ERROR (TachError, tach_error)

const TachErrorHint *
tach_error_get_hint (const GError *error)
{
  const TachErrorPrivate *priv;

  if (error == NULL || error->domain != TACH_ERROR)
    return NULL;
  priv = tach_error_get_private (error);
  return priv->has_hint ? &priv->hint : NULL;
}

void
tach_error_add_hint (GError    **error,
                     TachKnobId  knob,
                     const char *value,
                     TachKnobId  fix_knob,
                     const char *fix_value,
                     const char *fix)
{
  TachErrorPrivate *priv;

  g_return_if_fail ((guint) knob < TACH_KNOB_COUNT);
  g_return_if_fail ((guint) fix_knob <= TACH_KNOB_COUNT);
  g_return_if_fail (fix_value == NULL || fix_knob != TACH_KNOB_COUNT);

  if (error == NULL || *error == NULL || (*error)->domain != TACH_ERROR)
    return;
  priv = tach_error_get_private (*error);
  /* The first hint stays: the innermost check knows the knob best. */
  if (priv->has_hint)
    return;
  priv->has_hint = TRUE;
  priv->hint.knob = knob;
  priv->hint.value = g_strdup (value);
  priv->hint.fix_knob = fix_knob;
  priv->hint.fix_value = g_strdup (fix_value);
  priv->hint.fix = g_strdup (fix);
}

void
tach_error_add_config_hint (GError           **error,
                            const TachConfig  *config,
                            TachKnobId         knob,
                            TachKnobId         fix_knob,
                            const char        *fix_value,
                            const char        *fix)
{
  g_autofree char *value = NULL;

  if (error == NULL || *error == NULL)
    return;
  value = tach_config_get (config, tach_knob (knob)->name);
  tach_error_add_hint (error, knob, value, fix_knob, fix_value, fix);
}

void
tach_error_add_zero_hint (GError **error, const TachConfig *config)
{
  guint n = 0;
  const TachKnobInfo *knobs = tach_knobs (&n);
  TachConfig defaults;

  tach_config_init (&defaults, config->workload);
  for (guint i = 0; i < n; i++)
    {
      g_autofree char *value = NULL;

      if (!knobs[i].is_shape && knobs[i].id != TACH_KNOB_BATCH)
        continue;
      value = tach_config_get (config, knobs[i].name);
      if (g_strcmp0 (value, "0") == 0)
        {
          g_autofree char *fix = tach_config_get (&defaults, knobs[i].name);

          tach_error_add_hint (error, knobs[i].id, value, knobs[i].id, fix, NULL);
          break;
        }
    }
  tach_config_clear (&defaults);
}

static gint wording = TACH_WORDING_OPTIONS;

void
tach_set_wording (TachWording value)
{
  g_atomic_int_set (&wording, value);
}

TachWording
tach_get_wording (void)
{
  return g_atomic_int_get (&wording);
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

/* Appends @knob's mention with @value (NULL: none; @len bytes of it), as
 * text of a format string when @in_format (a value holding a conversion
 * such as %u is kept as it is, for printf to fill in). */
static void
append_mention (GString            *out,
                const TachKnobInfo *knob,
                const char         *value,
                gsize               len,
                gboolean            in_format)
{
  g_autofree char *v = value != NULL ? g_strndup (value, len) : NULL;
  gboolean spec = in_format && v != NULL && strchr (v, '%') != NULL;
  /* A conversion other than %s stands for a number. */
  gboolean number = spec && strstr (v, "%s") == NULL;

  if (tach_get_wording () == TACH_WORDING_OPTIONS)
    {
      g_string_append_printf (out, "--%s", knob->name);
      if (v != NULL)
        {
          g_string_append_c (out, ' ');
          append_text (out, v, FALSE);
        }
      return;
    }
  if (v == NULL)
    {
      append_text (out, _(knob->title), in_format);
      return;
    }
  {
    g_autofree char *label_s = g_strdup (spec ? v : tach_knob_value_label (knob->name, v));
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
  append_mention (out, tach_knob (knob), value, value != NULL ? strlen (value) : 0, FALSE);
  return g_string_free (out, FALSE);
}

const char *
tach_wording_format (const char *format)
{
  g_autoptr(GString) out = g_string_new (NULL);
  const char *c = format;

  while (*c != '\0')
    {
      const char *end = *c == '{' ? strchr (c, '}') : NULL;
      const char *bar, *eq;
      g_autofree char *name = NULL;
      const TachKnobInfo *knob;

      if (end == NULL)
        {
          g_string_append_c (out, *c++);
          continue;
        }
      bar = memchr (c, '|', end - c);
      eq = memchr (c, '=', end - c);
      if (bar != NULL)
        {
          /* {the command line's words|the window's words} */
          if (tach_get_wording () == TACH_WORDING_OPTIONS)
            g_string_append_len (out, c + 1, bar - c - 1);
          else
            g_string_append_len (out, bar + 1, end - bar - 1);
          c = end + 1;
          continue;
        }
      name = g_strndup (c + 1, (eq != NULL ? eq : end) - c - 1);
      knob = tach_knob_lookup (name);
      if (knob == NULL)
        {
          g_string_append_c (out, *c++);
          continue;
        }
      append_mention (out, knob, eq != NULL ? eq + 1 : NULL, eq != NULL ? (gsize) (end - eq - 1) : 0,
                      TRUE);
      c = end + 1;
    }
  return g_intern_string (out->str);
}
