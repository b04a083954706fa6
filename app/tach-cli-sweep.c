/* tach-cli-sweep.c: sweep --vary KNOB=VALUES, the grid of presets x one
 * knob's values.
 *
 * Every point is built and validated (memory included) before the first
 * runs, and the points that cannot run are listed then, not discovered
 * halfway; the others run in the interleaved order of tach_sweep_point().
 * The table has one row per point, values in the order given, and each
 * preset's speed-up against the first preset at the same value.
 */
#include "tach-config.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>

#include <glib-unix.h>
#include <glib/gi18n.h>

#include "tach-cli-private.h"
#include "tach-sweep.h"

typedef struct {
  TachConfig  config;      /* owned; zero when it could not be made */
  gboolean    made;
  char       *problem;     /* owned: why it will not run (checked up front), or NULL */
  TachRun    *run;         /* owned, or NULL */
  const char *outcome;     /* borrowed, translated: NULL when it finished */
} TachCliPoint;

static void
tach_cli_point_clear (TachCliPoint *point)
{
  if (point->made)
    tach_config_clear (&point->config);
  g_clear_pointer (&point->problem, g_free);
  g_clear_pointer (&point->run, tach_run_unref);
}

/* The configuration of every point, and what stops any of them, before
 * anything runs.  Returns the number of points that cannot run. */
static guint
tach_cli_sweep_prepare (const TachCliOptions *options, GStrv names,
                        const TachSweepAxis *axis, TachCliPoint *points)
{
  guint n_names = g_strv_length (names), n_values = g_strv_length (axis->values);
  guint bad = 0;

  for (guint v = 0; v < n_values; v++)
    for (guint p = 0; p < n_names; p++)
      {
        TachCliPoint *point = &points[v * n_names + p];
        g_autoptr(GError) error = NULL;

        /* The varied knob is set last, over the preset and the knobs given. */
        point->made = tach_cli_build_config (options, names[p], &point->config, &error)
                      && tach_config_set (&point->config, axis->knob->name, axis->values[v],
                                          &error);
        if (point->made)
          tach_config_validate (&point->config, point->config.device, &error);
        if (error != NULL)
          {
            point->problem = g_strdup (error->message);
            bad++;
          }
      }
  return bad;
}

static void
tach_cli_print_vary_table (const TachSweepAxis *axis, GStrv names, TachCliPoint *points)
{
  g_autoptr(GString) line = g_string_new (NULL);
  guint n_names = g_strv_length (names), n_values = g_strv_length (axis->values);
  int value_width = (int) g_utf8_strlen (axis->knob->name, -1);
  int name_width = (int) g_utf8_strlen (_("preset"), -1);
  const char *unit = NULL;

  for (guint v = 0; v < n_values; v++)
    value_width = MAX (value_width, (int) g_utf8_strlen (axis->values[v], -1));
  for (guint p = 0; p < n_names; p++)
    name_width = MAX (name_width, (int) g_utf8_strlen (names[p], -1));
  for (guint i = 0; i < n_values * n_names && unit == NULL; i++)
    if (points[i].run != NULL && points[i].outcome == NULL)
      {
        TachSummary s;

        tach_run_get_summary (points[i].run, &s);
        unit = s.items_unit;
      }

  tach_cli_pad (line, axis->knob->name, value_width, FALSE);
  g_string_append (line, "  ");
  tach_cli_pad (line, _("preset"), name_width, FALSE);
  tach_cli_pad (line, unit != NULL ? unit : _("items/s"), 11, TRUE);
  tach_cli_pad (line, _("step ms"), 9, TRUE);
  tach_cli_pad (line, _("steps/s"), 8, TRUE);
  tach_cli_pad (line, _("final loss"), 10, TRUE);
  tach_cli_pad (line, _("speed-up"), 8, TRUE);
  printf ("\n%s\n", line->str);

  for (guint v = 0; v < n_values; v++)
    {
      double baseline = NAN;

      for (guint p = 0; p < n_names; p++)
        {
          TachCliPoint *point = &points[v * n_names + p];
          g_autofree char *items = NULL, *step = NULL, *rate = NULL, *loss = NULL;
          g_autofree char *speedup = NULL;
          TachSummary s;

          g_string_truncate (line, 0);
          tach_cli_pad (line, axis->values[v], value_width, FALSE);
          g_string_append (line, "  ");
          tach_cli_pad (line, names[p], name_width, FALSE);
          if (point->run == NULL || point->outcome != NULL)
            {
              g_string_append_printf (line, "  %s",
                                      point->outcome != NULL ? point->outcome : _("not run"));
              printf ("%s\n", line->str);
              continue;
            }
          tach_run_get_summary (point->run, &s);
          /* Each value's first preset that ran is the baseline of that value. */
          if (isnan (baseline))
            baseline = s.steps_per_s_median;
          items = tach_cli_format_number (s.items_per_s, "%.1f");
          step = tach_cli_format_number (1000.0 / s.steps_per_s_median, "%.3f");
          rate = tach_cli_format_number (s.steps_per_s_median, "%.2f");
          loss = tach_cli_format_number (s.final_loss, "%.4f");
          speedup = tach_cli_format_number (s.steps_per_s_median / baseline, "%.2fx");
          tach_cli_pad (line, items, 11, TRUE);
          tach_cli_pad (line, step, 9, TRUE);
          tach_cli_pad (line, rate, 8, TRUE);
          tach_cli_pad (line, loss, 10, TRUE);
          tach_cli_pad (line, speedup, 8, TRUE);
          if (tach_run_get_state (point->run) == TACH_RUN_STATE_CANCELLED)
            g_string_append_printf (line, "  %s", _("(stopped)"));
          printf ("%s\n", line->str);
        }
    }
  fflush (stdout);
}

int
tach_cli_command_sweep_vary (const TachCliOptions *options)
{
  TachCliSession session;
  TachWorkload workload;
  TachConfig base = { 0 };
  g_autoptr(GError) error = NULL;
  g_autoptr(TachSweepAxis) axis = NULL;
  g_auto(GStrv) names = NULL;
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autofree TachCliPoint *points = NULL;
  guint n_names, n_values, n_points, bad, sigint_id, done = 0;
  gboolean csv_ok;
  int status = tach_cli_sweep_start (options, &workload, &names);

  if (status != TACH_CLI_EXIT_OK)
    return status;
  /* The values are read against the first preset's configuration. */
  if (!tach_cli_build_config (options, names[0], &base, &error))
    {
      tach_cli_usage_error ("%s", error->message);
      return tach_cli_exit_code_for_error (error);
    }
  axis = tach_sweep_axis_parse (&base, options->vary, &error);
  tach_config_clear (&base);
  if (axis == NULL)
    {
      tach_cli_usage_error ("%s", error->message);
      return TACH_CLI_EXIT_USAGE;
    }
  n_names = g_strv_length (names);
  n_values = g_strv_length (axis->values);
  n_points = n_names * n_values;
  points = g_new0 (TachCliPoint, n_points);
  bad = tach_cli_sweep_prepare (options, names, axis, points);
  if (bad > 0)
    {
      fprintf (stderr, ngettext ("tach-cli: %u of %u points will not run:\n",
                                 "tach-cli: %u of %u points will not run:\n", bad),
               bad, n_points);
      for (guint i = 0; i < n_points; i++)
        if (points[i].problem != NULL)
          fprintf (stderr, "  %s %s=%s: %s\n", names[i % n_names], axis->knob->name,
                   axis->values[i / n_names], points[i].problem);
      status = TACH_CLI_EXIT_USAGE;
    }

  tach_cli_session_init (&session);
  sigint_id = g_unix_signal_add (SIGINT, tach_cli_on_sigint, &session);
  session.header = 2;
  /* A refused folder: nothing runs. */
  csv_ok = tach_cli_session_open_csv (&session, options->csv_dir);
  if (!csv_ok)
    status = TACH_CLI_EXIT_FAILURE;

  for (guint k = 0; csv_ok && k < n_points; k++)
    {
      guint p, v;
      TachCliPoint *point;
      g_autoptr(GError) run_error = NULL;
      g_autofree char *label = NULL;

      tach_sweep_point (n_names, n_values, k, &p, &v);
      point = &points[v * n_names + p];
      if (point->problem != NULL)
        {
          point->outcome = _("will not run (see above)");
          continue;
        }
      if (session.interrupted)
        {
          point->outcome = _("not run (interrupted)");
          continue;
        }
      label = g_strdup_printf ("%s %s=%s %u/%u", names[p], axis->knob->name, axis->values[v],
                               ++done, n_points - bad);
      session.label = label;
      point->run = tach_cli_run_one (&session, &point->config, &run_error);
      session.label = NULL;
      if (point->run != NULL)
        tach_run_set_varied (point->run, axis->knob->name);
      if (point->run == NULL || tach_run_get_state (point->run) == TACH_RUN_STATE_FAILED)
        {
          fprintf (stderr, _("tach-cli: preset %s, %s=%s: %s\n"), names[p], axis->knob->name,
                   axis->values[v], run_error != NULL ? run_error->message : _("the run failed"));
          point->outcome = _("failed (see above)");
          status = MAX (status, point->run == NULL ? tach_cli_exit_code_for_error (run_error)
                                                   : TACH_CLI_EXIT_FAILURE);
        }
      else if (!session.live)
        fprintf (stderr, _("tach-cli: preset %s, %s=%s done (%u/%u)\n"), names[p],
                 axis->knob->name, axis->values[v], done, n_points - bad);
      if (point->run != NULL && tach_cli_run_has_results (point->run))
        g_ptr_array_add (runs, tach_run_ref (point->run));
    }

  if (csv_ok)
    tach_cli_print_vary_table (axis, names, points);
  status = tach_cli_sweep_finish (options, &session, sigint_id, runs, status);
  for (guint i = 0; i < n_points; i++)
    tach_cli_point_clear (&points[i]);
  return status;
}
