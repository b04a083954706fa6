/* tach-error.c: the engine's error domain, whose errors can carry a hint:
 * the knob they concern, its value and the fix (tach_error_get_hint), and
 * the markup in which their messages name knobs, put into the wording of
 * the process (tach_set_wording) with the settings layer's words.
 *
 * Every folder of the engine reports its errors here, so it calls nothing
 * above it: a knob is a TachKnobId or its name in a message's markup, and
 * the knob table's words come from the namer the settings layer installs. */
#include "tach-error-private.h"

#include <string.h>

typedef struct {
  gboolean        has_hint;
  TachHintPending pending;
  TachErrorHint   hint;   /* its strings owned */
} TachErrorPrivate;

static void
tach_error_private_init (TachErrorPrivate *priv)
{
  priv->has_hint = FALSE;
  priv->pending = TACH_HINT_COMPLETE;
  priv->hint = (TachErrorHint) { TACH_KNOB_COUNT, NULL, TACH_KNOB_COUNT, NULL, NULL };
}

static void
tach_error_private_copy (const TachErrorPrivate *src, TachErrorPrivate *dest)
{
  dest->has_hint = src->has_hint;
  dest->pending = src->pending;
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
  return priv->has_hint && priv->pending == TACH_HINT_COMPLETE ? &priv->hint : NULL;
}

void
tach_error_add_pending_hint (GError         **error,
                             TachHintPending  pending,
                             TachKnobId       knob,
                             TachKnobId       fix_knob,
                             const char      *fix_value,
                             const char      *fix)
{
  TachErrorPrivate *priv;

  g_return_if_fail ((guint) knob < TACH_KNOB_COUNT || pending == TACH_HINT_ZERO_SHAPE);
  g_return_if_fail ((guint) fix_knob <= TACH_KNOB_COUNT);
  g_return_if_fail (fix_value == NULL || fix_knob != TACH_KNOB_COUNT);

  if (error == NULL || *error == NULL || (*error)->domain != TACH_ERROR)
    return;
  priv = tach_error_get_private (*error);
  /* The first hint stays: the innermost check knows the knob best. */
  if (priv->has_hint)
    return;
  priv->has_hint = TRUE;
  priv->pending = pending;
  priv->hint.knob = knob;
  priv->hint.fix_knob = fix_knob;
  priv->hint.fix_value = g_strdup (fix_value);
  priv->hint.fix = g_strdup (fix);
}

void
tach_error_add_hint (GError    **error,
                     TachKnobId  knob,
                     const char *value,
                     TachKnobId  fix_knob,
                     const char *fix_value,
                     const char *fix)
{
  g_return_if_fail ((guint) knob < TACH_KNOB_COUNT);

  if (error == NULL || *error == NULL || (*error)->domain != TACH_ERROR
      || tach_error_get_private (*error)->has_hint)
    return;
  tach_error_add_pending_hint (error, TACH_HINT_COMPLETE, knob, fix_knob, fix_value, fix);
  tach_error_get_private (*error)->hint.value = g_strdup (value);
}

TachHintPending
tach_error_get_pending (const GError *error, TachKnobId *knob)
{
  const TachErrorPrivate *priv;

  if (error == NULL || error->domain != TACH_ERROR)
    return TACH_HINT_COMPLETE;
  priv = tach_error_get_private (error);
  if (knob != NULL)
    *knob = priv->hint.knob;
  return priv->has_hint ? priv->pending : TACH_HINT_COMPLETE;
}

void
tach_error_complete_hint (GError *error, TachKnobId knob, const char *value, const char *fix_value)
{
  TachErrorPrivate *priv;

  g_return_if_fail ((guint) knob <= TACH_KNOB_COUNT);

  if (tach_error_get_pending (error, NULL) == TACH_HINT_COMPLETE)
    return;
  priv = tach_error_get_private (error);
  if (knob == TACH_KNOB_COUNT)
    {
      /* No knob fits: no hint, and room for the next one. */
      tach_error_private_clear (priv);
      return;
    }
  if (priv->pending == TACH_HINT_ZERO_SHAPE)
    priv->hint.fix_knob = knob;
  priv->hint.knob = knob;
  g_free ((char *) priv->hint.value);
  priv->hint.value = g_strdup (value);
  if (fix_value != NULL)
    {
      g_free ((char *) priv->hint.fix_value);
      priv->hint.fix_value = g_strdup (fix_value);
    }
  priv->pending = TACH_HINT_COMPLETE;
}

static gint wording = TACH_WORDING_OPTIONS;

void
tach_wording_set_mode (TachWording value)
{
  g_atomic_int_set (&wording, value);
}

TachWording
tach_get_wording (void)
{
  return g_atomic_int_get (&wording);
}

static gpointer namer;   /* TachWordingNamer, or NULL */

void
tach_wording_set_namer (TachWordingNamer fn)
{
  g_atomic_pointer_set (&namer, (gpointer) fn);
}

void
tach_wording_append_option (GString *out, const char *name, const char *value)
{
  g_string_append_printf (out, "--%s", name);
  if (value != NULL)
    {
      g_string_append_c (out, ' ');
      g_string_append (out, value);
    }
}

/* The words for knob @name with @value (NULL: none), through the settings
 * layer's namer once it is installed; FALSE when @name is no knob. */
static gboolean
append_knob (GString *out, const char *name, const char *value)
{
  TachWordingNamer fn = (TachWordingNamer) g_atomic_pointer_get (&namer);

  if (fn != NULL)
    return fn (out, name, value, TRUE);
  tach_wording_append_option (out, name, value);
  return TRUE;
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
      g_autofree char *value = NULL;

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
      value = eq != NULL ? g_strndup (eq + 1, end - eq - 1) : NULL;
      if (!append_knob (out, name, value))
        {
          g_string_append_c (out, *c++);
          continue;
        }
      c = end + 1;
    }
  return g_intern_string (out->str);
}
