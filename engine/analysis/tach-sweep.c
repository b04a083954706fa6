/* tach-sweep.c: the values of a sweep's axis, and the order of its grid. */
#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-sweep.h"

/* More points than any sweep a person would wait for: a typo such as
 * 1..1000000+1 is refused instead of queued. */
#define SWEEP_MAX_VALUES 256

void
tach_sweep_axis_free (TachSweepAxis *axis)
{
  if (axis == NULL)
    return;
  g_strfreev (axis->values);
  g_free (axis);
}

static gboolean
bad_spec (GError **error, const char *spec, const char *why)
{
  g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
               _("invalid --vary '%s': %s"), spec, why);
  return FALSE;
}

static gboolean
parse_number (const char *s, gsize len, double *out)
{
  g_autofree char *copy = g_strndup (s, len);
  char *end = NULL;

  *out = g_ascii_strtod (copy, &end);
  return *copy != '\0' && end != NULL && *end == '\0' && isfinite (*out);
}

/* "A..BxF" or "A..B+S" of an integer knob into @values; FALSE with @error
 * on a malformed range. */
static gboolean
parse_range (const char *spec, const char *range, const TachKnobInfo *knob, GPtrArray *values,
             gboolean *geometric, GError **error)
{
  const char *dots = strstr (range, "..");
  const char *op;
  double a, b, step;

  if (knob->kind != TACH_KNOB_KIND_INTEGER)
    return bad_spec (error, spec, _("ranges (A..BxF, A..B+S) are for whole-number knobs; "
                                    "list the values instead (V1,V2,...)"));
  op = strpbrk (dots + 2, "x+");
  if (op == NULL || !parse_number (range, (gsize) (dots - range), &a)
      || !parse_number (dots + 2, (gsize) (op - dots - 2), &b)
      || !parse_number (op + 1, strlen (op + 1), &step))
    return bad_spec (error, spec, _("a range is A..BxF (geometric, e.g. 64..4096x2) or A..B+S "
                                    "(arithmetic, e.g. 1..4+1)"));
  *geometric = *op == 'x';
  if (a < 0 || b < a || (*geometric ? step <= 1.0 : step <= 0.0))
    return bad_spec (error, spec, *geometric
                       ? _("a geometric range needs 0 <= A <= B and a factor F above 1")
                       : _("an arithmetic range needs 0 <= A <= B and a step S above 0"));
  if (*geometric && a == 0)
    return bad_spec (error, spec, _("a geometric range cannot start at 0"));

  for (double v = a; v <= b * (1 + 1e-12); v = *geometric ? v * step : v + step)
    {
      char buf[32];
      guint64 n = (guint64) llround (v);

      g_snprintf (buf, sizeof buf, "%" G_GUINT64_FORMAT, n);
      if (values->len > 0 && g_str_equal (g_ptr_array_index (values, values->len - 1), buf))
        continue;
      if (values->len >= SWEEP_MAX_VALUES)
        {
          g_autofree char *why = g_strdup_printf (_("more than %d values"), SWEEP_MAX_VALUES);

          return bad_spec (error, spec, why);
        }
      g_ptr_array_add (values, g_strdup (buf));
    }
  return TRUE;
}

TachSweepAxis *
tach_sweep_axis_parse (const TachConfig *base, const char *spec, GError **error)
{
  g_autoptr(TachSweepAxis) axis = g_new0 (TachSweepAxis, 1);
  g_autoptr(GPtrArray) values = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *name = NULL;
  const char *eq = spec != NULL ? strchr (spec, '=') : NULL;
  const char *list;

  if (eq == NULL || eq == spec || eq[1] == '\0')
    {
      bad_spec (error, spec != NULL ? spec : "",
                _("expected KNOB=V1,V2,... or KNOB=A..BxF, e.g. batch=64..4096x2"));
      return NULL;
    }
  name = g_strndup (spec, (gsize) (eq - spec));
  list = eq + 1;
  axis->knob = tach_knob_lookup (name);
  if (axis->knob == NULL)
    {
      g_autofree char *why = g_strdup_printf (_("there is no knob '%s' (see tach-cli --help)"),
                                              name);

      bad_spec (error, spec, why);
      return NULL;
    }
  if (axis->knob->id == TACH_KNOB_WORKLOAD || axis->knob->id == TACH_KNOB_PRESET)
    {
      bad_spec (error, spec, _("a sweep varies one knob across presets; the workload and the "
                               "preset are not such knobs (use --presets for presets)"));
      return NULL;
    }

  if (g_str_equal (list, "all") && axis->knob->kind == TACH_KNOB_KIND_CHOICE)
    for (guint i = 0; axis->knob->values[i] != NULL; i++)
      g_ptr_array_add (values, g_strdup (axis->knob->values[i]));
  else if (strstr (list, "..") != NULL)
    {
      if (!parse_range (spec, list, axis->knob, values, &axis->geometric, error))
        return NULL;
    }
  else
    {
      /* A knob whose one value has commas (--filters 32,64) lists its
       * values with semicolons: filters=16,32;32,64. */
      g_auto(GStrv) parts = g_strsplit (list, strchr (list, ';') != NULL ? ";" : ",", -1);

      for (guint i = 0; parts[i] != NULL; i++)
        {
          g_strstrip (parts[i]);
          if (*parts[i] == '\0')
            {
              bad_spec (error, spec, _("an empty value in the list"));
              return NULL;
            }
          g_ptr_array_add (values, g_strdup (parts[i]));
        }
      if (values->len > SWEEP_MAX_VALUES)
        {
          g_autofree char *why = g_strdup_printf (_("more than %d values"), SWEEP_MAX_VALUES);

          bad_spec (error, spec, why);
          return NULL;
        }
    }

  for (guint i = 0; i < values->len; i++)
    {
      TachConfig scratch;
      gboolean ok;

      tach_config_copy (&scratch, base);
      ok = tach_config_set (&scratch, axis->knob->name, g_ptr_array_index (values, i), error);
      tach_config_clear (&scratch);
      if (!ok)
        return NULL;
      for (guint k = 0; k < i; k++)
        if (g_str_equal (g_ptr_array_index (values, k), g_ptr_array_index (values, i)))
          {
            g_autofree char *why = g_strdup_printf (_("'%s' is listed twice"),
                                                    (const char *) g_ptr_array_index (values, i));

            bad_spec (error, spec, why);
            return NULL;
          }
    }
  g_ptr_array_add (values, NULL);
  axis->values = (GStrv) g_ptr_array_free (g_steal_pointer (&values), FALSE);
  return g_steal_pointer (&axis);
}

void
tach_sweep_point (guint n_presets, guint n_values, guint k, guint *preset, guint *value)
{
  guint v = k / MAX (n_presets, 1), p = k % MAX (n_presets, 1);

  g_return_if_fail (k < n_presets * n_values);
  *value = v;
  *preset = v % 2 == 0 ? p : n_presets - 1 - p;
}
