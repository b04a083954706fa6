/* tach-cli-sweep.c: the sweep command: every preset of a workload in
 * turn, one table row each, and sweep --vary KNOB=VALUES, the grid of
 * presets x one knob's values.
 *
 * Every point is built and validated (memory included) before the first
 * runs, and the points that cannot run are listed then, not discovered
 * halfway; the others run in the interleaved order of tach_sweep_point().
 * The table has one row per point, values in the order given, and each
 * preset's speed-up against the first preset at the same value.
 */
#include "tach-build-config.h"

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
  status = tach_cli_session_finish (options, &session, sigint_id, runs, status);
  for (guint i = 0; i < n_points; i++)
    tach_cli_point_clear (&points[i]);
  return status;
}

/* ----------------------------------------------------------------- sweep */

typedef struct {
  char    *name;       /* owned */
  TachRun *run;        /* owned, or NULL when it did not start */
  const char *outcome; /* borrowed, translated: NULL when it finished */
} TachCliSweepRow;

static void
tach_cli_sweep_row_clear (gpointer data)
{
  TachCliSweepRow *row = data;

  g_clear_pointer (&row->name, g_free);
  g_clear_pointer (&row->run, tach_run_unref);
}

/* Appends @text to @line padded to @width characters (not bytes); a
 * right-aligned column also gets a two-space gutter before it. */
void
tach_cli_pad (GString *line, const char *text, int width, gboolean right)
{
  int len = (int) g_utf8_strlen (text, -1);
  int pad = MAX (width - len, 0);

  if (right)
    g_string_append_printf (line, "  %*s%s", pad, "", text);
  else
    g_string_append_printf (line, "%s%*s", text, pad, "");
}

void
tach_cli_pad_cells (GString *line, const TachCliCell *cells, guint n_cells)
{
  for (guint i = 0; i < n_cells; i++)
    tach_cli_pad (line, cells[i].text, cells[i].width, cells[i].right);
}

static void
tach_cli_print_sweep_table (GArray *rows)
{
  g_autoptr(GString) line = g_string_new (NULL);
  const char *unit = NULL;
  double baseline = NAN;
  int name_width = (int) g_utf8_strlen (_("preset"), -1);

  for (guint i = 0; i < rows->len; i++)
    {
      const TachCliSweepRow *row = &g_array_index (rows, TachCliSweepRow, i);

      name_width = MAX (name_width, (int) g_utf8_strlen (row->name, -1));
      if (row->outcome == NULL && isnan (baseline))
        {
          TachSummary s;

          tach_run_get_summary (row->run, &s);
          baseline = s.steps_per_s_median;
          unit = s.items_unit;
        }
    }

  {
    const TachCliCell head[] = {
      { _("preset"), name_width, FALSE }, { _("steps/s"), 8, TRUE },
      { "p10–p90", 15, TRUE }, { unit != NULL ? unit : _("items/s"), 10, TRUE },
      { _("final loss"), 10, TRUE }, { _("feed"), 6, TRUE }, { _("compute"), 7, TRUE },
      { _("sync"), 6, TRUE }, { _("host"), 6, TRUE }, { _("speed-up"), 8, TRUE },
    };

    tach_cli_pad_cells (line, head, G_N_ELEMENTS (head));
  }
  printf ("\n%s\n", line->str);

  for (guint i = 0; i < rows->len; i++)
    {
      const TachCliSweepRow *row = &g_array_index (rows, TachCliSweepRow, i);
      TachSummary s;
      g_auto(TachCliSummaryText) t = { 0 };
      g_autofree char *spread = NULL, *speedup = NULL;

      g_string_truncate (line, 0);
      tach_cli_pad (line, row->name, name_width, FALSE);
      if (row->outcome != NULL)
        {
          g_string_append_printf (line, "  %s", row->outcome);
          printf ("%s\n", line->str);
          continue;
        }

      tach_run_get_summary (row->run, &s);
      tach_cli_summary_text_init (&t, &s);
      spread = g_strdup_printf ("%s–%s", t.p10, t.p90);
      speedup = tach_cli_format_number (s.steps_per_s_median / baseline, "%.2fx");

      tach_cli_pad (line, t.median, 8, TRUE);
      tach_cli_pad (line, spread, 15, TRUE);
      tach_cli_pad (line, t.items, 10, TRUE);
      tach_cli_pad (line, t.final, 10, TRUE);
      tach_cli_pad (line, t.feed, 6, TRUE);
      tach_cli_pad (line, t.compute, 7, TRUE);
      tach_cli_pad (line, t.sync, 6, TRUE);
      tach_cli_pad (line, t.host, 6, TRUE);
      tach_cli_pad (line, speedup, 8, TRUE);
      if (tach_run_get_state (row->run) == TACH_RUN_STATE_CANCELLED)
        g_string_append_printf (line, "  %s", _("(stopped)"));
      printf ("%s\n", line->str);
    }
  fflush (stdout);
}

/* The preset names of a sweep: the workload's own for "all", else the
 * comma-separated list.  NULL after printing a usage error. */
static GStrv
tach_cli_sweep_preset_names (const char *list, TachWorkload workload)
{
  g_autoptr(GStrvBuilder) builder = g_strv_builder_new ();
  g_auto(GStrv) names = NULL;
  guint n = 0;

  if (g_str_equal (list, "all"))
    {
      g_autoptr(GPtrArray) presets = tach_presets_for_workload (workload);

      for (guint i = 0; i < presets->len; i++)
        {
          const TachPreset *preset = g_ptr_array_index (presets, i);

          g_strv_builder_add (builder, preset->name);
          n++;
        }
    }
  else
    {
      g_auto(GStrv) parts = g_strsplit (list, ",", -1);

      for (guint i = 0; parts[i] != NULL; i++)
        {
          g_strstrip (parts[i]);
          if (*parts[i] == '\0')
            continue;
          g_strv_builder_add (builder, parts[i]);
          n++;
        }
    }

  if (n == 0)
    {
      tach_cli_usage_error (_("'--presets %s' names no preset of %s"), list,
                            tach_workload_to_string (workload));
      return NULL;
    }
  names = g_strv_builder_end (builder);
  /* A name that is no preset of the workload is bad input: said before
   * anything runs, in the engine's words (the name and the valid ones). */
  for (guint i = 0; names[i] != NULL; i++)
    {
      g_autoptr(GError) error = NULL;
      TachConfig config;
      gboolean ok;

      tach_config_init (&config, workload);
      ok = tach_config_apply_preset (&config, names[i], &error);
      tach_config_clear (&config);
      if (!ok)
        {
          tach_cli_usage_error ("%s", error->message);
          return NULL;
        }
    }
  return g_steal_pointer (&names);
}

int
tach_cli_sweep_start (const TachCliOptions *options, TachWorkload *workload, GStrv *names)
{
  g_autoptr(GError) error = NULL;

  if (!tach_workload_from_string (options->workload, workload, &error))
    {
      tach_cli_usage_error ("%s", error->message);
      return tach_cli_exit_code_for_error (error);
    }
  *names = tach_cli_sweep_preset_names (options->presets, *workload);
  if (*names == NULL)
    return TACH_CLI_EXIT_USAGE;
  if (options->csv_dir != NULL && !tach_cli_check_csv_dir (options->csv_dir, &error))
    {
      fprintf (stderr, "tach-cli: %s\n", error->message);
      g_clear_pointer (names, g_strfreev);
      return TACH_CLI_EXIT_FAILURE;
    }
  return TACH_CLI_EXIT_OK;
}

int
tach_cli_command_sweep (const TachCliOptions *options)
{
  TachCliSession session;
  TachWorkload workload;
  g_auto(GStrv) names = NULL;
  g_autoptr(GArray) rows = NULL;
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  guint n_names, sigint_id;
  int status = tach_cli_sweep_start (options, &workload, &names);

  if (status != TACH_CLI_EXIT_OK)
    return status;

  n_names = g_strv_length (names);
  rows = g_array_sized_new (FALSE, TRUE, sizeof (TachCliSweepRow), n_names);
  g_array_set_clear_func (rows, tach_cli_sweep_row_clear);

  tach_cli_session_init (&session);
  sigint_id = g_unix_signal_add (SIGINT, tach_cli_on_sigint, &session);
  session.header = 2;
  if (!tach_cli_session_open_csv (&session, options->csv_dir))
    return tach_cli_session_finish (options, &session, sigint_id, runs, TACH_CLI_EXIT_FAILURE);

  for (guint i = 0; i < n_names; i++)
    {
      TachCliSweepRow row = { g_strdup (names[i]), NULL, NULL };
      TachConfig config = { 0 };
      g_autoptr(GError) run_error = NULL;
      g_autofree char *label = g_strdup_printf ("%s %u/%u", names[i], i + 1, n_names);
      int row_status = TACH_CLI_EXIT_OK;

      if (session.interrupted)
        row.outcome = _("not run (interrupted)");
      else if (!tach_cli_build_config (options, names[i], &config, &run_error))
        row_status = TACH_CLI_EXIT_USAGE;
      else
        {
          session.label = label;
          row.run = tach_cli_run_one (&session, &config, &run_error);
          session.label = NULL;
          if (row.run == NULL)
            row_status = tach_cli_exit_code_for_error (run_error);
          else if (tach_run_get_state (row.run) == TACH_RUN_STATE_FAILED)
            row_status = TACH_CLI_EXIT_FAILURE;
          if (row.run != NULL && tach_cli_run_has_results (row.run))
            g_ptr_array_add (runs, tach_run_ref (row.run));
        }

      if (row_status != TACH_CLI_EXIT_OK)
        {
          /* One preset's error is reported now; the sweep goes on and the
           * command fails at the end. */
          fprintf (stderr, _("tach-cli: preset %s: %s\n"), names[i],
                   run_error != NULL ? run_error->message : _("the run failed"));
          row.outcome = row_status == TACH_CLI_EXIT_USAGE ? _("invalid (see above)")
                                                          : _("failed (see above)");
          status = MAX (status, row_status);
        }
      else if (row.outcome == NULL && !session.live)
        {
          /* Without a live line, say where a long sweep is. */
          fprintf (stderr, _("tach-cli: preset %s done (%u/%u)\n"), names[i], i + 1, n_names);
        }

      g_array_append_val (rows, row);
      tach_config_clear (&config);
    }

  tach_cli_print_sweep_table (rows);
  return tach_cli_session_finish (options, &session, sigint_id, runs, status);
}
