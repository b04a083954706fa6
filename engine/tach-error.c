/* tach-error.c: the engine's error domain, whose errors can carry a hint:
 * the knob they concern, its value and the fix (tach_error_get_hint). */
#include "tach-error-private.h"

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
