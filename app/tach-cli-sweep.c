/* tach-cli-sweep.c: the sweep command: every preset of a workload in
 * turn, one table row each, and sweep --vary KNOB=VALUES, the grid of
 * presets x one knob's values.
 *
 * Both drive the engine's sweep (tach-sweep.h) on the main thread, which
 * makes every point before the first runs and runs them in its interleaved
 * order; each run goes through tach_cli_run_one (the live line, the CSV
 * rows as they come).  With --vary every point is also validated (memory
 * included) up front, and the points that cannot run are listed then, not
 * discovered halfway.  The --vary table has one row per point, values in
 * the order given, and each preset's speed-up against the first preset at
 * the same value.
 */
#include "tach-build-config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <glib/gi18n.h>

#include "tach-cli-private.h"
#include "tach-sweep.h"

/* What a sweep command keeps while the engine's sweep runs it. */
typedef struct {
  const TachCliOptions *options;
  TachCliSession        session;
  GCancellable         *cancellable; /* owned: cancelled by Ctrl+C */
  GPtrArray            *runs;        /* TachRun*, owned: those with results, for the files */
  const char          **outcomes;    /* [point], borrowed, translated: NULL when it finished */
  int                   status;
  TachSweepRounds      *rounds;      /* owned: each point's rate by round, the verdicts */
  double                start_s;     /* when the first round began, monotonic seconds */
  GString              *busy_apart;  /* owned, NULL: the points whose speed-up the load
                                      * between runs measured apart leaves unresolved,
                                      * and those whose runs lost threads or ran busy */
  gboolean              any_unknown; /* a speed-up shown without an interval */
} TachCliSweep;

static void
tach_cli_sweep_init (TachCliSweep *cli, const TachCliOptions *options, TachSweep *sweep)
{
  cli->options = options;
  cli->cancellable = g_cancellable_new ();
  cli->runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  cli->outcomes = g_new0 (const char *, tach_sweep_get_n_points (sweep));
  cli->status = TACH_CLI_EXIT_OK;
  cli->busy_apart = NULL;
  tach_cli_session_init (&cli->session);
  cli->session.header = 2;
  /* The verdicts compare the steps' rates: no test-set evaluation. */
  cli->session.no_evaluation = TRUE;
  /* Each preset against the first at the same value, paired by round. */
  cli->rounds = tach_sweep_rounds_new_for_sweep (sweep, options->rounds, options->budget_s,
                                                 options->target);
}

static void
tach_cli_sweep_clear (TachCliSweep *cli)
{
  g_clear_object (&cli->cancellable);
  g_clear_pointer (&cli->runs, g_ptr_array_unref);
  g_clear_pointer (&cli->outcomes, g_free);
  g_clear_pointer (&cli->rounds, tach_sweep_rounds_free);
  if (cli->busy_apart != NULL)
    g_string_free (cli->busy_apart, TRUE);
  cli->busy_apart = NULL;
}

/* Main thread: Ctrl+C (or SIGTERM, SIGHUP) stops the run in progress, as
 * in a single run, and the sweep skips the points left. */
static void
tach_cli_sweep_on_stop (gpointer user_data)
{
  TachCliSweep *cli = user_data;

  g_cancellable_cancel (cli->cancellable);
  if (cli->session.run != NULL)
    tach_run_stop (cli->session.run);
}

/* TachSweepConfigFunc: a preset's configuration, the knobs given over it. */
static gboolean
tach_cli_sweep_make (const char *preset, TachConfig *config, gpointer user_data,
                     GError **error)
{
  if (tach_cli_build_config (user_data, preset, config, error))
    return TRUE;
  tach_config_clear (config);
  return FALSE;
}

/* TachSweepFuncs.run: one point through the session (live line, CSV). */
static TachRun *
tach_cli_sweep_run_point (TachSweep *sweep, const TachSweepPoint *point,
                          const TachConfig *config, gpointer user_data, GError **error)
{
  TachCliSweep *cli = user_data;
  const TachSweepAxis *axis = tach_sweep_get_axis (sweep);
  const char *name = tach_sweep_get_preset (sweep, point->preset);
  g_autofree char *label = NULL;
  TachRun *run;

  if (axis != NULL)
    label = g_strdup_printf ("%s %s=%s %u/%u", name, axis->knob->name,
                             axis->values[point->value], point->ordinal,
                             tach_sweep_get_n_points (sweep) - tach_sweep_get_n_problems (sweep));
  else
    /* Progress through the round (its order is shuffled): not the
     * preset's place in the list. */
    label = g_strdup_printf ("%s %u/%u", name, point->ordinal,
                             tach_sweep_get_n_points (sweep) - tach_sweep_get_n_problems (sweep));
  cli->session.label = label;
  run = tach_cli_run_one (&cli->session, config, error);
  cli->session.label = NULL;
  if (run != NULL && axis != NULL)
    tach_run_set_varied (run, axis->knob->name);
  /* The expected time, once the first run says how long one takes. */
  if (point->round == 0 && point->ordinal == 1)
    tach_cli_print_estimate (g_get_monotonic_time () / 1e6 - cli->start_s,
                             (tach_sweep_get_n_points (sweep) - tach_sweep_get_n_problems (sweep))
                             * MAX (cli->options->rounds, 1),
                             MAX (cli->options->rounds, 1), cli->options->budget_s);
  return run;
}

/* TachSweepFuncs.round_done: the round's rates into the verdicts, and
 * another round while a speed-up misses the target and time is left. */
static gboolean
tach_cli_sweep_round_done (TachSweep *sweep, guint round, gpointer user_data)
{
  TachCliSweep *cli = user_data;

  tach_sweep_rounds_record_round (cli->rounds, sweep, round);
  return tach_sweep_rounds_want_more (cli->rounds, round + 1,
                                      g_get_monotonic_time () / 1e6 - cli->start_s);
}

/* The run of point @index to show: the round whose rate is nearest the
 * point's median over rounds (the others are in runs.csv). */
static TachRun *
sweep_point_run (TachCliSweep *cli, TachSweep *sweep, guint index)
{
  return tach_sweep_rounds_pick_run (cli->rounds, sweep, index);
}

/* Runs @sweep with @done reporting each point; FALSE (nothing run) when
 * --csv's folder is refused. */
static gboolean
tach_cli_sweep_run (TachCliSweep *cli, TachSweep *sweep,
                    void (*done) (TachSweep *, const TachSweepPoint *, TachSweepOutcome,
                                  TachRun *, const GError *, gpointer))
{
  const TachSweepFuncs funcs = { tach_cli_sweep_run_point, done, tach_cli_sweep_round_done };
  const TachConfig *first = tach_sweep_get_config (sweep, 0);

  /* Rounds to pair: each in a new shuffled order.  One pass without a
   * budget keeps the order given (nothing to pair, nothing to spread). */
  if (cli->options->rounds > 1 || cli->options->budget_s > 0)
    tach_sweep_set_shuffle (sweep, first != NULL ? first->seed : 0);
  cli->start_s = g_get_monotonic_time () / 1e6;
  tach_cli_stop_watch (&cli->session.stop, tach_cli_sweep_on_stop, cli);
  /* A refused folder: nothing runs. */
  if (!tach_cli_session_open_csv (&cli->session, cli->options->csv_dir))
    {
      cli->status = TACH_CLI_EXIT_FAILURE;
      return FALSE;
    }
  tach_sweep_run (sweep, &funcs, cli, cli->cancellable, NULL);
  return TRUE;
}

/* The varied knob's values as the header shows them: every one up to
 * eight, else the first and the last and how many. */
static char *
tach_cli_sweep_values_text (const TachSweepAxis *axis)
{
  guint n = g_strv_length (axis->values);
  gboolean commas = FALSE;

  for (guint i = 0; i < n; i++)
    commas = commas || strchr (axis->values[i], ',') != NULL;
  if (n <= 8)
    return g_strjoinv (commas ? "; " : ", ", axis->values);
  return g_strdup_printf (ngettext ("%s to %s, %u value", "%s to %s, %u values", n),
                          axis->values[0], axis->values[n - 1], n);
}

/* The speed-up column: @s against @base with its 95% interval, "~" in
 * front when the interval holds 1 (within noise, no finding), "*" behind
 * when it compares items/s (the batches differ).  *@busy grows with the
 * machine's busy share of either run. */
static char *
format_ratio (const TachInterval *iv, TachVerdict verdict, gboolean by_items)
{
  const TachInterval ratio = *iv;

  if (!isfinite (ratio.value))
    return g_strdup ("–");
  /* Too few steps for an interval: the ratio, and a dash for its interval. */
  if (verdict == TACH_VERDICT_UNKNOWN)
    return g_strdup_printf ("%.2fx (–)%s", ratio.value, by_items ? "*" : "");
  return g_strdup_printf ("%s%.2fx (%.2f–%.2f)%s", verdict == TACH_VERDICT_WITHIN_NOISE ? "~" : "",
                          ratio.value, ratio.lo, ratio.hi, by_items ? "*" : "");
}

/* Point @index's speed-up over @base (its value's first preset, point
 * @base_index): paired by round where rounds ran, else from the two runs'
 * intervals. */
static char *
format_speedup (TachCliSweep *cli, TachSweep *sweep, guint base_index, guint index,
                const TachSummary *base, const TachSummary *s, gboolean *any_items,
                double *busy)
{
  int c = tach_sweep_rounds_point_comparison (sweep, index);
  TachInterval ratio;
  gboolean by_items = FALSE;
  TachVerdict verdict;

  if (isfinite (s->machine_busy))
    *busy = isfinite (*busy) ? MAX (*busy, s->machine_busy) : s->machine_busy;
  if (index == base_index)
    return g_strdup ("1.00x");
  verdict = tach_summary_compare (base, s, &ratio, &by_items);
  *any_items |= by_items;
  /* Runs that lost threads to other processes, or a busy machine: the
   * figure is of another machine, whatever its interval says. */
  {
    g_autofree char *caveat = tach_sweep_dup_load_caveat (sweep, base_index, base, index, s);

    if (caveat != NULL)
      {
        if (cli->busy_apart == NULL)
          cli->busy_apart = g_string_new (NULL);
        /* "note: " first: a line of the table starts with a preset. */
        g_string_append_printf (cli->busy_apart, _("note: %s\n"), caveat);
      }
  }
  /* Against the value's first preset, paired by round. */
  if (tach_sweep_get_rounds_run (sweep) >= 2 && c >= 0
      && base_index == index - index % tach_sweep_get_n_presets (sweep))
    verdict = tach_sweep_rounds_get_ratio (cli->rounds, c, &ratio);
  /* Measured apart: the load between the two runs may be the difference. */
  else if (verdict != TACH_VERDICT_UNKNOWN)
    {
      g_autofree char *why = tach_summary_dup_busy_apart (base->machine_busy, s->machine_busy);
      const TachSweepAxis *axis = tach_sweep_get_axis (sweep);
      guint n_presets = tach_sweep_get_n_presets (sweep);

      if (why != NULL)
        {
          if (cli->busy_apart == NULL)
            cli->busy_apart = g_string_new (NULL);
          g_string_append_printf (cli->busy_apart, "~ %s%s%s: %s\n",
                                  axis != NULL ? axis->values[index / n_presets] : "",
                                  axis != NULL ? " " : "",
                                  tach_sweep_get_preset (sweep, index % n_presets), why);
        }
    }
  cli->any_unknown |= verdict == TACH_VERDICT_UNKNOWN && isfinite (ratio.value);
  return format_ratio (&ratio, verdict, by_items);
}

/* What the speed-up column means, below the table, and each comparison
 * that missed the target. */
static void
print_speedup_notes (TachCliSweep *cli, TachSweep *sweep, gboolean any_items, double busy)
{
  guint rounds = tach_sweep_get_rounds_run (sweep);

  if (rounds >= 2)
    printf (_("speed-up: against the first preset, paired by round over %u interleaved rounds, "
              "with its 95%% interval; ~ within noise (the interval holds 1x)\n"), rounds);
  else
    printf (_("speed-up: against the first preset, with its 95%% interval; ~ within noise "
              "(the interval holds 1x)\n"));
  if (any_items)
    printf (_("*: items per second compared, the batch sizes differ\n"));
  if (cli->any_unknown)
    /* Why a speed-up came without its interval, and what gives one. */
    printf (rounds >= 2 ? _("(–): no interval: a run of the pair failed or measured no step in "
                            "some round\n")
                        : _("(–): no interval: a single round gives nothing to pair, and a run of "
                            "fewer than about 8 measured steps gives its median none; --rounds 2 "
                            "or more (or more --steps) gives one\n"));
  if (isfinite (busy) && busy >= TACH_SUMMARY_BUSY_SHARE)
    printf (_("measured while the machine was busy: up to %.0f%% of CPU time taken by other "
              "processes\n"), 100.0 * busy);
  if (cli->busy_apart != NULL)
    {
      printf ("%s", cli->busy_apart->str);
      g_string_free (cli->busy_apart, TRUE);
      cli->busy_apart = NULL;
    }
  {
    g_autofree char *unresolved = tach_sweep_rounds_dup_unresolved (cli->rounds, sweep);

    if (unresolved != NULL)
      printf ("%s\n", unresolved);
  }
}

static void
tach_cli_print_vary_table (TachCliSweep *cli, TachSweep *sweep, const char *const *outcomes)
{
  g_autoptr(GString) line = g_string_new (NULL);
  const TachSweepAxis *axis = tach_sweep_get_axis (sweep);
  guint n_names = tach_sweep_get_n_presets (sweep), n_values = tach_sweep_get_n_values (sweep);
  int value_width = (int) g_utf8_strlen (axis->knob->name, -1);
  int name_width = (int) g_utf8_strlen (_("preset"), -1);
  const char *unit = NULL;
  gboolean any_items = FALSE;
  double busy = NAN;

  for (guint v = 0; v < n_values; v++)
    value_width = MAX (value_width, (int) g_utf8_strlen (axis->values[v], -1));
  for (guint p = 0; p < n_names; p++)
    name_width = MAX (name_width, (int) g_utf8_strlen (tach_sweep_get_preset (sweep, p), -1));
  for (guint i = 0; i < n_values * n_names && unit == NULL; i++)
    if (sweep_point_run (cli, sweep, i) != NULL && outcomes[i] == NULL)
      {
        TachSummary s;

        tach_run_get_summary (sweep_point_run (cli, sweep, i), &s);
        unit = s.items_unit;
      }

  tach_cli_pad (line, axis->knob->name, value_width, FALSE);
  g_string_append (line, "  ");
  tach_cli_pad (line, _("preset"), name_width, FALSE);
  tach_cli_pad (line, unit != NULL ? unit : _("items/s"), 11, TRUE);
  tach_cli_pad (line, _("step ms"), 9, TRUE);
  tach_cli_pad (line, _("steps/s"), 8, TRUE);
  tach_cli_pad (line, _("final loss"), 10, TRUE);
  tach_cli_pad (line, _("speed-up"), 22, TRUE);
  printf ("\n%s\n", line->str);

  for (guint v = 0; v < n_values; v++)
    {
      TachSummary baseline;
      guint base_index = G_MAXUINT;

      for (guint p = 0; p < n_names; p++)
        {
          guint i = v * n_names + p;
          TachRun *run = sweep_point_run (cli, sweep, i);
          g_autofree char *items = NULL, *step = NULL, *rate = NULL, *loss = NULL;
          g_autofree char *speedup = NULL;
          TachSummary s;

          g_string_truncate (line, 0);
          tach_cli_pad (line, axis->values[v], value_width, FALSE);
          g_string_append (line, "  ");
          tach_cli_pad (line, tach_sweep_get_preset (sweep, p), name_width, FALSE);
          if (run == NULL || outcomes[i] != NULL)
            {
              g_string_append_printf (line, "  %s",
                                      outcomes[i] != NULL ? outcomes[i] : _("not run"));
              printf ("%s\n", line->str);
              continue;
            }
          tach_run_get_summary (run, &s);
          /* Each value's first preset that ran is the baseline of that value. */
          if (base_index == G_MAXUINT)
            {
              baseline = s;
              base_index = i;
            }
          speedup = format_speedup (cli, sweep, base_index, i, &baseline, &s, &any_items, &busy);
          items = tach_cli_format_number (s.items_per_s, "%.1f");
          step = tach_cli_format_number (1000.0 / s.steps_per_s_median, "%.3f");
          rate = tach_cli_format_number (s.steps_per_s_median, "%.2f");
          loss = tach_cli_format_number (s.final_loss, "%.4f");
          tach_cli_pad (line, items, 11, TRUE);
          tach_cli_pad (line, step, 9, TRUE);
          tach_cli_pad (line, rate, 8, TRUE);
          tach_cli_pad (line, loss, 10, TRUE);
          tach_cli_pad (line, speedup, 22, TRUE);
          if (tach_run_get_state (run) == TACH_RUN_STATE_CANCELLED)
            g_string_append_printf (line, "  %s", _("(stopped)"));
          printf ("%s\n", line->str);
        }
    }
  print_speedup_notes (cli, sweep, any_items, busy);
  fflush (stdout);
}

/* TachSweepFuncs.done of sweep --vary. */
static void
tach_cli_vary_done (TachSweep *sweep, const TachSweepPoint *point, TachSweepOutcome outcome,
                    TachRun *run, const GError *run_error, gpointer user_data)
{
  TachCliSweep *cli = user_data;
  const char *name = tach_sweep_get_preset (sweep, point->preset);
  const char *knob = tach_sweep_get_axis (sweep)->knob->name;
  const char *value = tach_sweep_get_value (sweep, point->value);

  if (outcome != TACH_SWEEP_RAN)
    {
      cli->outcomes[point->index] = tach_sweep_get_problem (sweep, point->index) != NULL
                                    ? _("will not run (see above)") : _("not run (interrupted)");
      return;
    }
  if (run == NULL || tach_run_get_state (run) == TACH_RUN_STATE_FAILED)
    {
      fprintf (stderr, _("tach-cli: preset %s, %s=%s: %s\n"), name, knob, value,
               run_error != NULL ? run_error->message : _("the run failed"));
      cli->outcomes[point->index] = _("failed (see above)");
      cli->status = MAX (cli->status, run == NULL ? tach_cli_exit_code_for_error (run_error)
                                                  : TACH_CLI_EXIT_FAILURE);
    }
  else if (!cli->session.live && tach_ranks_world_rank () == 0)
    fprintf (stderr, _("tach-cli: preset %s, %s=%s done (%u/%u)\n"), name, knob, value,
             point->ordinal, tach_sweep_get_n_points (sweep) - tach_sweep_get_n_problems (sweep));
  if (run != NULL && tach_cli_run_has_results (run))
    g_ptr_array_add (cli->runs, tach_run_ref (run));
}

int
tach_cli_command_sweep_vary (const TachCliOptions *options)
{
  TachCliSweep cli;
  TachWorkload workload;
  TachConfig base = { 0 };
  g_autoptr(GError) error = NULL;
  g_autoptr(TachSweepAxis) axis = NULL;
  g_autoptr(TachSweep) sweep = NULL;
  g_auto(GStrv) names = NULL;
  g_autofree char *values_text = NULL;
  guint n_names, n_points, bad;
  TachCliOptions quiet;
  int status = tach_cli_sweep_start (&options, &quiet, &workload, &names);

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
  sweep = tach_sweep_new (NULL, (const char *const *) names, axis, tach_cli_sweep_make,
                          (gpointer) options, TRUE);
  /* --vary ranks=1,2 without mpirun: said once, not at every round. */
  tach_sweep_check_ranks (sweep);
  n_names = tach_sweep_get_n_presets (sweep);
  n_points = tach_sweep_get_n_points (sweep);
  bad = tach_sweep_get_n_problems (sweep);
  tach_cli_sweep_init (&cli, options, sweep);
  if (bad > 0)
    {
      fprintf (stderr, ngettext ("tach-cli: %u of %u points will not run:\n",
                                 "tach-cli: %u of %u points will not run:\n", bad),
               bad, n_points);
      for (guint i = 0; i < n_points; i++)
        if (tach_sweep_get_problem (sweep, i) != NULL)
          fprintf (stderr, "  %s %s=%s: %s\n", names[i % n_names], axis->knob->name,
                   axis->values[i / n_names], tach_sweep_get_problem (sweep, i));
      cli.status = TACH_CLI_EXIT_USAGE;
    }

  /* The header names the varied knob's values, not the first point's. */
  values_text = tach_cli_sweep_values_text (axis);
  cli.session.varied = axis->knob->name;
  cli.session.varied_values = values_text;
  if (tach_cli_sweep_run (&cli, sweep, tach_cli_vary_done))
    tach_cli_print_vary_table (&cli, sweep, cli.outcomes);
  status = tach_cli_session_finish (options, &cli.session, cli.runs, cli.status);
  tach_cli_sweep_clear (&cli);
  return status;
}

/* ----------------------------------------------------------------- sweep */

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
tach_cli_print_sweep_table (TachCliSweep *cli, TachSweep *sweep, const char *const *outcomes)
{
  g_autoptr(GString) line = g_string_new (NULL);
  const char *unit = NULL;
  TachSummary baseline;
  guint base_row = G_MAXUINT;
  gboolean any_items = FALSE;
  double busy = NAN;
  int name_width = (int) g_utf8_strlen (_("preset"), -1);

  guint n_rows = tach_sweep_get_n_presets (sweep);

  for (guint i = 0; i < n_rows; i++)
    {
      name_width = MAX (name_width, (int) g_utf8_strlen (tach_sweep_get_preset (sweep, i), -1));
      if (outcomes[i] == NULL && base_row == G_MAXUINT)
        {
          tach_run_get_summary (sweep_point_run (cli, sweep, i), &baseline);
          base_row = i;
          unit = baseline.items_unit;
        }
    }

  {
    const TachCliCell head[] = {
      { _("preset"), name_width, FALSE }, { _("steps/s"), 8, TRUE },
      { "p10–p90", 15, TRUE }, { unit != NULL ? unit : _("items/s"), 10, TRUE },
      { _("final loss"), 10, TRUE }, { _("feed"), 6, TRUE }, { _("compute"), 7, TRUE },
      { _("sync"), 6, TRUE }, { _("host"), 6, TRUE }, { _("speed-up"), 22, TRUE },
    };

    tach_cli_pad_cells (line, head, G_N_ELEMENTS (head));
  }
  printf ("\n%s\n", line->str);

  for (guint i = 0; i < n_rows; i++)
    {
      TachRun *run = sweep_point_run (cli, sweep, i);
      TachSummary s;
      g_auto(TachCliSummaryText) t = { 0 };
      g_autofree char *spread = NULL, *speedup = NULL;

      g_string_truncate (line, 0);
      tach_cli_pad (line, tach_sweep_get_preset (sweep, i), name_width, FALSE);
      if (outcomes[i] != NULL)
        {
          g_string_append_printf (line, "  %s", outcomes[i]);
          printf ("%s\n", line->str);
          continue;
        }

      tach_run_get_summary (run, &s);
      tach_cli_summary_text_init (&t, &s);
      spread = g_strdup_printf ("%s–%s", t.p10, t.p90);
      speedup = format_speedup (cli, sweep, base_row, i, &baseline, &s, &any_items, &busy);

      tach_cli_pad (line, t.median, 8, TRUE);
      tach_cli_pad (line, spread, 15, TRUE);
      tach_cli_pad (line, t.items, 10, TRUE);
      tach_cli_pad (line, t.final, 10, TRUE);
      tach_cli_pad (line, t.feed, 6, TRUE);
      tach_cli_pad (line, t.compute, 7, TRUE);
      tach_cli_pad (line, t.sync, 6, TRUE);
      tach_cli_pad (line, t.host, 6, TRUE);
      tach_cli_pad (line, speedup, 22, TRUE);
      if (tach_run_get_state (run) == TACH_RUN_STATE_CANCELLED)
        g_string_append_printf (line, "  %s", _("(stopped)"));
      printf ("%s\n", line->str);
    }
  if (base_row != G_MAXUINT)
    print_speedup_notes (cli, sweep, any_items, busy);
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
      /* Alone, a data-parallel preset would run as tuned does. */
      g_autoptr(GPtrArray) presets = tach_presets_for_ranks (workload, tach_ranks_world_size ());

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
tach_cli_sweep_start (const TachCliOptions **options, TachCliOptions *quiet,
                      TachWorkload *workload, GStrv *names)
{
  g_autoptr(GError) error = NULL;
  TachConfig first = { 0 };
  gboolean made;

  if (!tach_workload_from_string ((*options)->workload, workload, &error))
    {
      tach_cli_usage_error ("%s", error->message);
      return tach_cli_exit_code_for_error (error);
    }
  *names = tach_cli_sweep_preset_names ((*options)->presets, *workload);
  if (*names == NULL)
    return TACH_CLI_EXIT_USAGE;
  /* Under mpirun: every rank started alike, and the outputs rank 0's. */
  made = tach_cli_build_config (*options, (*names)[0], &first, NULL);
  if (made && !tach_cli_join_ranks (&first, options, quiet))
    {
      tach_config_clear (&first);
      g_clear_pointer (names, g_strfreev);
      return TACH_CLI_EXIT_USAGE;
    }
  if (!tach_cli_check_outputs (*options, &error))
    {
      fprintf (stderr, "tach-cli: %s\n", error->message);
      tach_config_clear (&first);
      g_clear_pointer (names, g_strfreev);
      return TACH_CLI_EXIT_FAILURE;
    }
  /* The knobs given are the same for every preset: said once, from the
   * first (a configuration that cannot be made is reported later). */
  if (made)
    tach_cli_print_notices (*options, &first);
  tach_config_clear (&first);
  return TACH_CLI_EXIT_OK;
}

/* TachSweepFuncs.done of sweep --presets: one preset's error is reported
 * as its turn comes; the sweep goes on and the command fails at the end. */
static void
tach_cli_presets_done (TachSweep *sweep, const TachSweepPoint *point, TachSweepOutcome outcome,
                       TachRun *run, const GError *run_error, gpointer user_data)
{
  TachCliSweep *cli = user_data;
  const char *name = tach_sweep_get_preset (sweep, point->preset);
  int row_status = TACH_CLI_EXIT_OK;
  const char *why = run_error != NULL ? run_error->message : _("the run failed");

  if (outcome == TACH_SWEEP_STOPPED)
    {
      cli->outcomes[point->index] = _("not run (interrupted)");
      return;
    }
  if (outcome == TACH_SWEEP_UNRUNNABLE)
    {
      row_status = TACH_CLI_EXIT_USAGE;
      why = tach_sweep_get_problem (sweep, point->index);
    }
  else if (run == NULL)
    row_status = tach_cli_exit_code_for_error (run_error);
  else if (tach_run_get_state (run) == TACH_RUN_STATE_FAILED)
    row_status = TACH_CLI_EXIT_FAILURE;
  if (run != NULL && tach_cli_run_has_results (run))
    g_ptr_array_add (cli->runs, tach_run_ref (run));

  if (row_status != TACH_CLI_EXIT_OK)
    {
      fprintf (stderr, _("tach-cli: preset %s: %s\n"), name, why);
      cli->outcomes[point->index] = row_status == TACH_CLI_EXIT_USAGE ? _("invalid (see above)")
                                                                      : _("failed (see above)");
      cli->status = MAX (cli->status, row_status);
    }
  else if (!cli->session.live && tach_ranks_world_rank () == 0)
    {
      /* Without a live line, say where a long sweep is: how far through
       * the round (shuffled), not the preset's place in the list. */
      fprintf (stderr, _("tach-cli: preset %s done (%u/%u)\n"), name, point->ordinal,
               tach_sweep_get_n_points (sweep) - tach_sweep_get_n_problems (sweep));
    }
}

int
tach_cli_command_sweep (const TachCliOptions *options)
{
  TachCliSweep cli;
  TachWorkload workload;
  g_auto(GStrv) names = NULL;
  g_autoptr(TachSweep) sweep = NULL;
  TachCliOptions quiet;
  int status = tach_cli_sweep_start (&options, &quiet, &workload, &names);

  if (status != TACH_CLI_EXIT_OK)
    return status;

  /* Checked only by the runs themselves: a preset that cannot run is
   * reported as its turn comes. */
  sweep = tach_sweep_new (NULL, (const char *const *) names, NULL, tach_cli_sweep_make,
                          (gpointer) options, FALSE);
  tach_cli_sweep_init (&cli, options, sweep);
  if (tach_cli_sweep_run (&cli, sweep, tach_cli_presets_done))
    tach_cli_print_sweep_table (&cli, sweep, cli.outcomes);
  status = tach_cli_session_finish (options, &cli.session, cli.runs, cli.status);
  tach_cli_sweep_clear (&cli);
  return status;
}
