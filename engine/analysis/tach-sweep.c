/* tach-sweep.c: sweeps (tach-sweep.h): the values of an axis, the grid of
 * presets x values made and checked up front, and the loop that runs it in
 * its interleaved order, round after round. */
#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-analysis-private.h"
#include "tach-stats.h"
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

/* The same, naming the knob and its values as --vary takes them. */
static gboolean
bad_values (GError **error, const TachKnobInfo *knob, const char *values, const char *why)
{
  g_autofree char *spec = g_strdup_printf ("%s=%s", knob->name, values);

  return bad_spec (error, spec, why);
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
parse_range (const char *range, const TachKnobInfo *knob, GPtrArray *values,
             gboolean *geometric, GError **error)
{
  const char *dots = strstr (range, "..");
  const char *op;
  double a, b, step;

  if (knob->kind != TACH_KNOB_KIND_INTEGER)
    return bad_values (error, knob, range, _("ranges (A..BxF, A..B+S) are for whole-number knobs; "
                                    "list the values instead (V1,V2,...)"));
  op = strpbrk (dots + 2, "x+");
  if (op == NULL || !parse_number (range, (gsize) (dots - range), &a)
      || !parse_number (dots + 2, (gsize) (op - dots - 2), &b)
      || !parse_number (op + 1, strlen (op + 1), &step))
    return bad_values (error, knob, range, _("a range is A..BxF (geometric, e.g. 64..4096x2) or A..B+S "
                                    "(arithmetic, e.g. 1..4+1)"));
  *geometric = *op == 'x';
  if (a < 0 || b < a || (*geometric ? step <= 1.0 : step <= 0.0))
    return bad_values (error, knob, range, *geometric
                       ? _("a geometric range needs 0 <= A <= B and a factor F above 1")
                       : _("an arithmetic range needs 0 <= A <= B and a step S above 0"));
  if (*geometric && a == 0)
    return bad_values (error, knob, range, _("a geometric range cannot start at 0"));

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

          return bad_values (error, knob, range, why);
        }
      g_ptr_array_add (values, g_strdup (buf));
    }
  return TRUE;
}

TachSweepAxis *
tach_sweep_axis_new (const TachConfig *base, const TachKnobInfo *knob, const char *list,
                     GError **error)
{
  g_autoptr(TachSweepAxis) axis = g_new0 (TachSweepAxis, 1);
  g_autoptr(GPtrArray) values = g_ptr_array_new_with_free_func (g_free);

  g_return_val_if_fail (knob != NULL && list != NULL, NULL);
  axis->knob = knob;
  if (knob->id == TACH_KNOB_WORKLOAD || knob->id == TACH_KNOB_PRESET)
    {
      bad_values (error, knob, list, _("a sweep varies one knob across presets; the workload and "
                                       "the preset are not such knobs (use --presets for presets)"));
      return NULL;
    }
  if (*list == '\0')
    {
      g_autofree char *spec = g_strdup_printf ("%s=", knob->name);

      bad_spec (error, spec, _("expected KNOB=V1,V2,... or KNOB=A..BxF, e.g. batch=64..4096x2"));
      return NULL;
    }

  if (g_str_equal (list, "all") && knob->kind == TACH_KNOB_KIND_CHOICE)
    for (guint i = 0; knob->values[i] != NULL; i++)
      g_ptr_array_add (values, g_strdup (knob->values[i]));
  else if (strstr (list, "..") != NULL)
    {
      if (!parse_range (list, knob, values, &axis->geometric, error))
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
              bad_values (error, knob, list, _("an empty value in the list"));
              return NULL;
            }
          g_ptr_array_add (values, g_strdup (parts[i]));
        }
      if (values->len > SWEEP_MAX_VALUES)
        {
          g_autofree char *why = g_strdup_printf (_("more than %d values"), SWEEP_MAX_VALUES);

          bad_values (error, knob, list, why);
          return NULL;
        }
    }

  for (guint i = 0; i < values->len; i++)
    {
      TachConfig scratch;
      gboolean ok;

      tach_config_copy (&scratch, base);
      ok = tach_config_set (&scratch, knob->name, g_ptr_array_index (values, i), error);
      tach_config_clear (&scratch);
      if (!ok)
        return NULL;
      for (guint k = 0; k < i; k++)
        if (g_str_equal (g_ptr_array_index (values, k), g_ptr_array_index (values, i)))
          {
            g_autofree char *why = g_strdup_printf (_("'%s' is listed twice"),
                                                    (const char *) g_ptr_array_index (values, i));

            bad_values (error, knob, list, why);
            return NULL;
          }
    }
  g_ptr_array_add (values, NULL);
  axis->values = (GStrv) g_ptr_array_free (g_steal_pointer (&values), FALSE);
  return g_steal_pointer (&axis);
}

TachSweepAxis *
tach_sweep_axis_parse (const TachConfig *base, const char *spec, GError **error)
{
  g_autofree char *name = NULL;
  const char *eq = spec != NULL ? strchr (spec, '=') : NULL;
  const TachKnobInfo *knob;

  if (eq == NULL || eq == spec || eq[1] == '\0')
    {
      bad_spec (error, spec != NULL ? spec : "",
                _("expected KNOB=V1,V2,... or KNOB=A..BxF, e.g. batch=64..4096x2"));
      return NULL;
    }
  name = g_strndup (spec, (gsize) (eq - spec));
  knob = tach_knob_lookup (name);
  if (knob == NULL)
    {
      g_autofree char *why = g_strdup_printf (_("there is no knob '%s' (see tach-cli --help)"),
                                              name);

      bad_spec (error, spec, why);
      return NULL;
    }
  return tach_sweep_axis_new (base, knob, eq + 1, error);
}

TachSweepAxis *
tach_sweep_axis_copy (const TachSweepAxis *axis)
{
  TachSweepAxis *copy = g_new0 (TachSweepAxis, 1);

  *copy = *axis;
  copy->values = g_strdupv (axis->values);
  return copy;
}

void
tach_sweep_point (guint n_presets, guint n_values, guint k, guint *preset, guint *value)
{
  guint v = k / MAX (n_presets, 1), p = k % MAX (n_presets, 1);

  g_return_if_fail (k < n_presets * n_values);
  *value = v;
  *preset = v % 2 == 0 ? p : n_presets - 1 - p;
}

/* ------------------------------------------------------------------ grid */

struct _TachSweep {
  GStrv          presets;     /* owned */
  TachSweepAxis *axis;        /* owned, or NULL */
  guint          n_presets, n_values, n_points;
  TachConfig    *configs;     /* [index], owned where made[index] */
  gboolean      *made;
  char         **problems;    /* [index]: owned, or NULL */
  guint          n_problems;
  guint          rounds;      /* the rounds to run without funcs->round_done */
  guint          rounds_run;
  GRand         *shuffle;     /* owned, or NULL: every round in tach_sweep_point's order */
  GPtrArray     *runs;        /* TachRun* or NULL: [round * n_points + index] */
  gboolean       ran;
};

TachSweep *
tach_sweep_new (const TachConfig *base, const char *const *presets, const TachSweepAxis *axis,
                TachSweepConfigFunc make, gpointer make_data, gboolean validate)
{
  TachSweep *sweep = g_new0 (TachSweep, 1);

  g_return_val_if_fail (presets != NULL && presets[0] != NULL, NULL);
  g_return_val_if_fail (make != NULL || base != NULL, NULL);
  sweep->presets = g_strdupv ((GStrv) presets);
  sweep->axis = axis != NULL ? tach_sweep_axis_copy (axis) : NULL;
  sweep->n_presets = g_strv_length (sweep->presets);
  sweep->n_values = axis != NULL ? g_strv_length (axis->values) : 1;
  sweep->n_points = sweep->n_presets * sweep->n_values;
  sweep->configs = g_new0 (TachConfig, sweep->n_points);
  sweep->made = g_new0 (gboolean, sweep->n_points);
  sweep->problems = g_new0 (char *, sweep->n_points);
  sweep->rounds = 1;
  sweep->runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);

  /* Every point is made and checked (memory included) before any runs. */
  for (guint v = 0; v < sweep->n_values; v++)
    for (guint p = 0; p < sweep->n_presets; p++)
      {
        guint i = v * sweep->n_presets + p;
        TachConfig *config = &sweep->configs[i];
        g_autoptr(GError) error = NULL;

        if (make != NULL)
          sweep->made[i] = make (sweep->presets[p], config, make_data, &error);
        else
          {
            tach_config_copy (config, base);
            sweep->made[i] = TRUE;
            tach_config_apply_preset (config, sweep->presets[p], &error);
          }
        /* The varied knob is set last, over the preset and the knobs given. */
        if (error == NULL && axis != NULL)
          tach_config_set (config, axis->knob->name, axis->values[v], &error);
        if (error == NULL && validate)
          tach_config_validate (config, config->device, &error);
        if (error != NULL)
          {
            sweep->problems[i] = g_strdup (error->message);
            sweep->n_problems++;
          }
      }
  return sweep;
}

void
tach_sweep_free (TachSweep *sweep)
{
  if (sweep == NULL)
    return;
  for (guint i = 0; i < sweep->n_points; i++)
    {
      if (sweep->made[i])
        tach_config_clear (&sweep->configs[i]);
      g_free (sweep->problems[i]);
    }
  g_free (sweep->configs);
  g_free (sweep->made);
  g_free (sweep->problems);
  g_ptr_array_unref (sweep->runs);
  g_clear_pointer (&sweep->shuffle, g_rand_free);
  g_strfreev (sweep->presets);
  tach_sweep_axis_free (sweep->axis);
  g_free (sweep);
}

guint
tach_sweep_get_n_presets (TachSweep *sweep)
{
  return sweep->n_presets;
}

guint
tach_sweep_get_n_values (TachSweep *sweep)
{
  return sweep->n_values;
}

guint
tach_sweep_get_n_points (TachSweep *sweep)
{
  return sweep->n_points;
}

const char *
tach_sweep_get_preset (TachSweep *sweep, guint preset)
{
  g_return_val_if_fail (preset < sweep->n_presets, NULL);
  return sweep->presets[preset];
}

const TachSweepAxis *
tach_sweep_get_axis (TachSweep *sweep)
{
  return sweep->axis;
}

const char *
tach_sweep_get_value (TachSweep *sweep, guint value)
{
  g_return_val_if_fail (value < sweep->n_values, NULL);
  return sweep->axis != NULL ? sweep->axis->values[value] : NULL;
}

const char *
tach_sweep_get_problem (TachSweep *sweep, guint index)
{
  g_return_val_if_fail (index < sweep->n_points, NULL);
  return sweep->problems[index];
}

void
tach_sweep_check_ranks (TachSweep *sweep)
{
  for (guint i = 0; i < sweep->n_points; i++)
    {
      g_autoptr(GError) error = NULL;

      if (sweep->problems[i] == NULL && !tach_ranks_check_count (&sweep->configs[i], &error))
        {
          sweep->problems[i] = g_strdup (error->message);
          sweep->n_problems++;
        }
    }
}

guint
tach_sweep_get_n_problems (TachSweep *sweep)
{
  return sweep->n_problems;
}

const TachConfig *
tach_sweep_get_config (TachSweep *sweep, guint index)
{
  g_return_val_if_fail (index < sweep->n_points, NULL);
  return sweep->made[index] ? &sweep->configs[index] : NULL;
}

void
tach_sweep_set_shuffle (TachSweep *sweep, guint64 seed)
{
  g_return_if_fail (!sweep->ran);
  g_clear_pointer (&sweep->shuffle, g_rand_free);
  sweep->shuffle = g_rand_new_with_seed_array ((const guint32[]) { (guint32) seed,
                                                                   (guint32) (seed >> 32),
                                                                   0x5eeb }, 3);
}

void
tach_sweep_set_rounds (TachSweep *sweep, guint rounds)
{
  g_return_if_fail (rounds >= 1 && !sweep->ran);
  sweep->rounds = rounds;
}

void
tach_sweep_next_order (TachSweep *sweep, guint *order)
{
  /* Shuffled rounds: a busy spell falls on no point more than another. */
  for (guint k = 0; k < sweep->n_points; k++)
    order[k] = k;
  if (sweep->shuffle != NULL)
    tach_stats_shuffle (sweep->shuffle, order, sweep->n_points);
}

void
tach_sweep_set_run (TachSweep *sweep, guint index, guint round, TachRun *run)
{
  guint i = round * sweep->n_points + index;

  g_return_if_fail (index < sweep->n_points && round < TACH_SWEEP_MAX_ROUNDS);
  if (sweep->runs->len <= i)
    g_ptr_array_set_size (sweep->runs, (round + 1) * sweep->n_points);
  sweep->rounds_run = MAX (sweep->rounds_run, round + 1);
  if (sweep->runs->pdata[i] != NULL)
    tach_run_unref (sweep->runs->pdata[i]);
  sweep->runs->pdata[i] = run != NULL ? tach_run_ref (run) : NULL;
}

guint
tach_sweep_get_rounds_run (TachSweep *sweep)
{
  return sweep->rounds_run;
}

TachRun *
tach_sweep_get_run (TachSweep *sweep, guint index, guint round)
{
  guint i = round * sweep->n_points + index;

  g_return_val_if_fail (index < sweep->n_points, NULL);
  return i < sweep->runs->len ? g_ptr_array_index (sweep->runs, i) : NULL;
}

/* ------------------------------------------------------------------ loop */

static void
on_cancelled (GCancellable *cancellable, gpointer run)
{
  (void) cancellable;
  tach_run_stop (run);
}

TachRun *
tach_analysis_run (const TachConfig *config, const char *varied, GCancellable *cancellable,
                   GError **error)
{
  g_autoptr(TachRun) run = tach_run_new (config, error);
  gulong handler = 0;

  if (run == NULL)
    return NULL;
  if (varied != NULL)
    tach_run_set_varied (run, varied);
  /* Explain and sweep compare the steps' rates: no test set. */
  tach_run_set_evaluate (run, FALSE);
  if (cancellable != NULL)
    handler = g_cancellable_connect (cancellable, G_CALLBACK (on_cancelled),
                                     tach_run_ref (run), (GDestroyNotify) tach_run_unref);
  if (tach_run_start (run, NULL, NULL, NULL, error))
    tach_run_wait (run, error);
  if (handler != 0)
    g_cancellable_disconnect (cancellable, handler);
  return g_steal_pointer (&run);
}

TachRun *
tach_sweep_run_point (TachSweep *sweep, const TachConfig *config, GCancellable *cancellable,
                      GError **error)
{
  return tach_analysis_run (config, sweep->axis != NULL ? sweep->axis->knob->name : NULL,
                            cancellable, error);
}

/* Rank 0's @flag on every rank (tach_ranks_share); FALSE when the ranks
 * lost each other.  TRUE at once alone. */
static gboolean
share_flag (gboolean *flag)
{
  guchar byte = *flag ? 1 : 0;

  if (tach_ranks_world_size () == 1)
    return TRUE;
  if (!tach_ranks_share (&byte, 1, NULL))
    return FALSE;
  *flag = byte != 0;
  return TRUE;
}

gboolean
tach_sweep_run (TachSweep *sweep, const TachSweepFuncs *funcs, gpointer user_data,
                GCancellable *cancellable, GError **error)
{
  static const TachSweepFuncs none = { NULL, NULL, NULL };
  g_autofree guint *order = NULL;
  gboolean stopped = FALSE;

  g_return_val_if_fail (!sweep->ran, FALSE);
  sweep->ran = TRUE;
  if (funcs == NULL)
    funcs = &none;

  order = g_new (guint, MAX (sweep->n_points, 1));
  for (guint round = 0; !stopped; round++)
    {
      guint started = 0;

      sweep->rounds_run = round + 1;
      g_ptr_array_set_size (sweep->runs, (round + 1) * sweep->n_points);
      tach_sweep_next_order (sweep, order);
      for (guint j = 0; j < sweep->n_points; j++)
        {
          TachSweepPoint point = { 0 };
          TachSweepOutcome outcome;
          g_autoptr(GError) point_error = NULL;
          TachRun *run = NULL;

          tach_sweep_point (sweep->n_presets, sweep->n_values, order[j], &point.preset,
                            &point.value);
          point.index = point.value * sweep->n_presets + point.preset;
          point.round = round;
          stopped = stopped || g_cancellable_is_cancelled (cancellable);
          /* Under mpirun every rank runs the same points in the same
           * order (the shuffle's seed is the same on every rank): rank 0
           * says whether to stop, and a rank with no part in the point
           * (ranks=1: rank 0's alone) waits here, asleep, for the next. */
          if (!share_flag (&stopped))
            stopped = TRUE;
          if (stopped)
            outcome = TACH_SWEEP_STOPPED;
          else if (sweep->problems[point.index] != NULL)
            outcome = TACH_SWEEP_UNRUNNABLE;
          else if (!tach_ranks_takes_part (&sweep->configs[point.index]))
            continue;
          else
            {
              const TachConfig *config = &sweep->configs[point.index];

              outcome = TACH_SWEEP_RAN;
              point.ordinal = ++started;
              run = funcs->run != NULL
                    ? funcs->run (sweep, &point, config, user_data, &point_error)
                    : tach_sweep_run_point (sweep, config, cancellable, &point_error);
              sweep->runs->pdata[round * sweep->n_points + point.index] = run;
            }
          if (funcs->done != NULL)
            funcs->done (sweep, &point, outcome, run, point_error, user_data);
        }
      stopped = stopped || g_cancellable_is_cancelled (cancellable);
      {
        gboolean last = stopped
                        || (funcs->round_done != NULL ? !funcs->round_done (sweep, round, user_data)
                                                      : round + 1 >= sweep->rounds);

        /* Rank 0's clock and figures decide for every rank. */
        if (!share_flag (&last) || last)
          break;
      }
    }
  if (stopped)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_CANCELLED, _("the sweep was stopped"));
      return FALSE;
    }
  return TRUE;
}
