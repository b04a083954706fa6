/* tach-cli-explain.c: the explain command: the knobs in which two
 * configurations differ, each one's measured share of the gap, as a
 * waterfall table.
 *
 * The measurement blocks, so it runs on a worker thread (each of its runs
 * then makes its own engine thread); the main thread shows the live line,
 * turns Ctrl+C into a cancellation and prints the table once it is done.
 */
#include "tach-build-config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib/gi18n.h>

#include "tach-cli-private.h"
#include "tach-explain.h"

typedef struct {
  GMainLoop    *loop;
  TachExplain  *explain;       /* borrowed */
  GCancellable *cancellable;
  gboolean      ok;
  GError       *error;
  gint          done, total;   /* atomic: measurements done and in all */
  gboolean      live, live_shown;
  TachCliStop   stop;          /* SIGINT, SIGTERM, SIGHUP */
  gint64        start_us;      /* monotonic: the first run began */
  guint         runs, rounds;  /* of the given rounds */
  double        budget_s;
  gboolean      estimated;     /* worker's: the expected time said */
} ExplainSession;

/* A side of the explanation: a preset's name, or "k=v ..." settings on
 * the workload's defaults; then the knobs given to both. */
static gboolean
explain_build_side (const TachCliOptions *options, const char *side, TachConfig *config,
                    GError **error)
{
  gboolean is_settings = strchr (side, '=') != NULL;

  if (!tach_cli_build_config (options, is_settings ? NULL : side, config, error))
    return FALSE;
  if (!is_settings)
    return TRUE;
  /* The knobs given to both still have the last word. */
  return tach_config_apply_settings (config, side, error)
         && tach_cli_apply_knobs (options, config, error);
}

/* Worker thread. */
static void
on_progress (TachExplain *explain, guint done, guint total, gpointer user_data)
{
  ExplainSession *session = user_data;

  (void) explain;
  g_atomic_int_set (&session->total, (gint) total);
  g_atomic_int_set (&session->done, (gint) done);
  /* The expected time, once a run says how long one takes. */
  if (done >= 1 && !session->estimated)
    {
      session->estimated = TRUE;
      if (session->live)
        fputs ("\r\033[K", stderr);
      tach_cli_print_estimate ((g_get_monotonic_time () - session->start_us) / 1e6 / done,
                               session->runs, session->rounds, session->budget_s);
    }
}

static gboolean
on_finished (gpointer user_data)
{
  ExplainSession *session = user_data;

  g_main_loop_quit (session->loop);
  return G_SOURCE_REMOVE;
}

static gpointer
explain_thread (gpointer user_data)
{
  ExplainSession *session = user_data;

  session->ok = tach_explain_run (session->explain, session->cancellable, on_progress,
                                  session, &session->error);
  /* An idle source, never a direct call: g_main_context_invoke() would run
   * on_finished here when the main thread has not yet entered its loop. */
  g_idle_add (on_finished, session);
  return NULL;
}

/* Main thread, once a second. */
static gboolean
on_tick (gpointer user_data)
{
  ExplainSession *session = user_data;
  guint done = (guint) g_atomic_int_get (&session->done);
  guint total = (guint) g_atomic_int_get (&session->total);

  if (session->live)
    {
      fprintf (stderr, "\r\033[K");
      fprintf (stderr, _("explain: %u of %u configurations measured"), done,
               total > 0 ? total : tach_explain_get_n_configs (session->explain)
                                   * tach_explain_get_rounds (session->explain));
      fflush (stderr);
      session->live_shown = TRUE;
    }
  return G_SOURCE_CONTINUE;
}

static void
on_stop (gpointer user_data)
{
  ExplainSession *session = user_data;

  g_cancellable_cancel (session->cancellable);
}

static char *
format_ms (double ms, gboolean sign)
{
  if (!isfinite (ms))
    return g_strdup ("–");
  /* Three decimals below 10 ms: a generation step takes a tenth of one. */
  if (fabs (ms) < 10)
    return g_strdup_printf (sign ? "%+.3f" : "%.3f", ms);
  return g_strdup_printf (sign ? "%+.2f" : "%.2f", ms);
}

/* An interval's half-width (Student's t over rounds: symmetric). */
static char *
format_spread (const TachInterval *ci)
{
  if (!tach_interval_is_known (ci))
    return g_strdup ("–");
  return g_strdup_printf (fabs (ci->hi - ci->lo) < 20 ? "±%.3f" : "±%.2f", (ci->hi - ci->lo) / 2);
}

/* The phases' columns: a process's four, and under mpirun the ranks'
 * three (TachExplainPhase's order).
 * TRANSLATORS: column heads of at most 8 characters (imbalance: 10): the
 * step's time feeding data, computing, waiting on sync, on the host, in
 * exposed communication between ranks, packing gradients for it, and
 * waiting for the slowest rank. */
static const TachCliCell phase_cells[TACH_EXPLAIN_N_PHASES] = {
  { N_("feed"), 8, TRUE }, { N_("compute"), 8, TRUE }, { N_("sync"), 8, TRUE },
  { N_("host"), 8, TRUE }, { N_("comm"), 8, TRUE }, { N_("pack"), 8, TRUE },
  { N_("imbalance"), 10, TRUE },
};

/* One line of the table: a label, the values change, ms, share, spread and
 * the @n_phases phases. */
static void
print_row (const char *label, const char *change, const char *ms, const char *share,
           const char *spread, const double *phase, int n_phases, gboolean sign,
           const char *note, int label_width, int change_width)
{
  g_autoptr(GString) line = g_string_new (NULL);

  tach_cli_pad (line, label, label_width, FALSE);
  g_string_append (line, "  ");
  tach_cli_pad (line, change, change_width, FALSE);
  tach_cli_pad (line, ms, 9, TRUE);
  tach_cli_pad (line, share, 7, TRUE);
  tach_cli_pad (line, spread, 7, TRUE);
  for (int p = 0; p < n_phases; p++)
    {
      g_autofree char *text = phase != NULL ? format_ms (phase[p], sign) : g_strdup ("");

      tach_cli_pad (line, text, phase_cells[p].width, TRUE);
    }
  if (note != NULL)
    g_string_append_printf (line, "  %s", note);
  printf ("%s\n", line->str);
}

/* The comparison's verdict: B's speed-up with its interval, `~` when it
 * is within noise, and how busy the machine was beside it. */
static void
print_verdict (TachExplain *explain)
{
  g_autofree char *verdict = tach_explain_dup_verdict (explain);
  g_autofree char *unresolved = NULL;

  printf ("%s\n", verdict);
  unresolved = tach_explain_dup_unresolved (explain);
  if (unresolved != NULL)
    printf ("%s\n", unresolved);
}

static void
print_table (TachExplain *explain)
{
  const TachExplainCost *a = tach_explain_get_cost (explain, FALSE);
  const TachExplainCost *b = tach_explain_get_cost (explain, TRUE);
  const char *la = tach_explain_get_label (explain, FALSE);
  const char *lb = tach_explain_get_label (explain, TRUE);
  guint n = tach_explain_get_n_knobs (explain);
  int label_width = MAX ((int) g_utf8_strlen (la, -1), (int) g_utf8_strlen (lb, -1));
  int change_width = (int) g_utf8_strlen (_("from -> to"), -1);
  double lo, hi, sum = 0, gap = b->step_ms - a->step_ms;
  GArray *failures = tach_explain_get_failures (explain);
  gboolean any_flag = FALSE;
  guint used = 0, drawn = 0;
  /* Under mpirun the ranks' phases too: where a gap in synchronisation goes. */
  int n_phases = tach_explain_has_rank_phases (explain) ? TACH_EXPLAIN_N_PHASES
                                                        : TACH_EXPLAIN_N_SINGLE_PHASES;

  for (guint i = 0; i < n; i++)
    {
      const TachExplainKnob *k = tach_explain_get_knob (explain, i);
      g_autofree char *change = g_strdup_printf ("%s -> %s", k->from, k->to);

      label_width = MAX (label_width, (int) g_utf8_strlen (k->title, -1) + 2);
      change_width = MAX (change_width, (int) g_utf8_strlen (change, -1));
    }

  {
    g_autoptr(GString) line = g_string_new (NULL);

    tach_cli_pad (line, "", label_width, FALSE);
    g_string_append (line, "  ");
    {
      TachCliCell head[4 + TACH_EXPLAIN_N_PHASES] = {
        { _("from -> to"), change_width, FALSE }, { _("ms/step"), 9, TRUE },
        { _("share"), 7, TRUE }, { _("±95%"), 7, TRUE },
      };

      for (int p = 0; p < n_phases; p++)
        {
          head[4 + p] = phase_cells[p];
          head[4 + p].text = _(phase_cells[p].text);
        }
      tach_cli_pad_cells (line, head, 4 + n_phases);
    }
    printf ("\n%s\n", line->str);
  }

  {
    g_autofree char *ms = format_ms (a->step_ms, FALSE);
    g_autofree char *spread = NULL;
    TachInterval ci;

    tach_explain_get_cost_ci (explain, FALSE, &ci);
    spread = format_spread (&ci);
    print_row (la, "", ms, "", spread, a->phase_ms, n_phases, FALSE, NULL, label_width,
               change_width);
  }
  for (guint i = 0; i < n; i++)
    {
      const TachExplainKnob *k = tach_explain_get_knob (explain, i);
      g_autofree char *label = g_strdup_printf ("  %s", k->title);
      g_autofree char *change = g_strdup_printf ("%s -> %s", k->from, k->to);
      g_autofree char *ms = format_ms (k->share_ms, TRUE);
      /* "~": the share's interval holds 0; "–": the gap is within noise,
       * so a share is no fraction of it (see the note below the table). */
      g_autofree char *share = k->verdict == TACH_VERDICT_WITHIN_NOISE ? g_strdup ("~")
                               : isnan (k->fraction) ? g_strdup ("–")
                               : g_strdup_printf ("%.0f%%", 100.0 * k->fraction);
      g_autofree char *spread = format_spread (&k->share_ci);

      sum += k->share_ms;
      any_flag |= k->changes_results;
      print_row (label, change, ms, share, spread, k->phase_ms, n_phases, TRUE,
                 k->changes_results ? _("* changes results") : NULL, label_width, change_width);
    }
  {
    g_autofree char *ms = format_ms (b->step_ms, FALSE);
    g_autofree char *spread = NULL;
    TachInterval ci;

    tach_explain_get_cost_ci (explain, TRUE, &ci);
    spread = format_spread (&ci);
    print_row (lb, "", ms, "", spread, b->phase_ms, n_phases, FALSE, NULL, label_width,
               change_width);
  }

  /* The check: the shares against the measured difference. */
  tach_explain_get_gap_range (explain, &lo, &hi);
  printf ("\n");
  printf (_("check: the shares sum to %+.3f ms; the measured gap %s - %s is %+.3f ms "
            "(rounds %+.3f to %+.3f): %s\n"),
          sum, lb, la, gap, lo, hi,
          fabs (sum - gap) <= MAX ((hi - lo) / 2, 1e-6 * MAX (1.0, fabs (gap)))
          ? _("within the spread") : _("OUTSIDE the spread"));
  print_verdict (explain);

  tach_explain_get_orderings (explain, &used, &drawn);
  if (tach_explain_is_exact (explain))
    printf (ngettext ("method: exact Shapley values over the %u configuration, %u rounds in "
                      "shuffled order",
                      "method: exact Shapley values over the %u configurations, %u rounds in "
                      "shuffled order", tach_explain_get_n_configs (explain)),
            tach_explain_get_n_configs (explain), tach_explain_get_rounds (explain));
  else
    printf (_("method: SAMPLED Shapley values: %u random orderings (in reversed pairs) of %u knobs, "
              "%u configurations, %u rounds in shuffled order"),
            drawn, n, tach_explain_get_n_configs (explain), tach_explain_get_rounds (explain));
  if (used < drawn)
    printf (_("; %u of %u orderings run at every step"), used, drawn);
  printf ("\n");
  if (any_flag)
    printf (_("* changes results: this knob gives different losses, not only other speeds\n"));
  for (guint i = 0; i < failures->len; i++)
    {
      const TachExplainFailure *f = &g_array_index (failures, TachExplainFailure, i);

      printf (_("could not run: %s: %s\n"), f->name, f->reason);
    }

  /* What the large shares mean. */
  {
    gboolean first = TRUE;

    for (guint i = 0; i < n; i++)
      {
        const TachExplainKnob *k = tach_explain_get_knob (explain, i);
        g_autofree char *sentence = NULL;

        /* Findings only: a share within noise is no finding, and a share
         * of a gap within noise is no fraction. */
        if (k->verdict != TACH_VERDICT_SIGNIFICANT || isnan (k->fraction)
            || fabs (k->fraction) <= 0.10)
          continue;
        sentence = tach_explain_dup_sentence (explain, i);
        printf ("%s%s\n", first ? "\n" : "", sentence);
        first = FALSE;
      }
  }
  fflush (stdout);
}

int
tach_cli_command_explain (const TachCliOptions *options)
{
  TachConfig from = { 0 }, to = { 0 };
  TachCliOptions quiet;
  g_autoptr(GError) error = NULL;
  g_autoptr(TachExplain) explain = NULL;
  g_autoptr(TachDeviceInfo) device = NULL;
  ExplainSession session = { 0 };
  GThread *thread;
  guint tick_id;
  int status = TACH_CLI_EXIT_OK;

  if (!explain_build_side (options, options->from, &from, &error)
      || !explain_build_side (options, options->to, &to, &error)
      || (explain = tach_explain_new (&from, &to, options->rounds, &error)) == NULL)
    {
      tach_cli_usage_error ("%s", error->message);
      tach_config_clear (&from);
      tach_config_clear (&to);
      return tach_cli_exit_code_for_error (error);
    }
  /* Under mpirun: every rank started alike, and the outputs rank 0's. */
  if (!tach_cli_join_ranks (&from, &options, &quiet))
    {
      tach_config_clear (&from);
      tach_config_clear (&to);
      return TACH_CLI_EXIT_USAGE;
    }
  tach_explain_set_labels (explain, options->from, options->to);
  tach_explain_set_budget (explain, options->budget_s, options->target);
  tach_cli_print_notices (options, &from);
  /* A damaged explain.csv, runs.csv or samples.csv is found before the
   * first round, not after every run was measured. */
  if (!tach_cli_check_outputs (options, &error)
      || (options->csv_dir != NULL && tach_ranks_world_rank () == 0
          && g_file_test (options->csv_dir, G_FILE_TEST_IS_DIR)
          && !tach_explain_csv_check (options->csv_dir, &error)))
    {
      fprintf (stderr, "tach-cli: %s\n", error->message);
      tach_config_clear (&from);
      tach_config_clear (&to);
      return TACH_CLI_EXIT_FAILURE;
    }

  device = tach_device_resolve (from.device != NULL ? from.device : "auto", NULL);
  tach_cli_print_header (&from, device, FALSE, NULL, NULL);
  {
    guint n_knobs = tach_explain_get_n_knobs (explain);
    guint n_configs = tach_explain_get_n_configs (explain);
    guint rounds = tach_explain_get_rounds (explain);
    g_autofree char *knobs = g_strdup_printf (ngettext ("%u knob differs", "%u knobs differ",
                                                        n_knobs), n_knobs);
    g_autofree char *runs = g_strdup_printf (ngettext ("%u run", "%u runs", n_configs * rounds),
                                             n_configs * rounds);

    /* TRANSLATORS: "explain A -> B: 3 knobs differ, 8 configurations x 3
     * rounds = 24 runs". */
    printf (ngettext ("explain %s -> %s: %s, %u configuration x %u rounds = %s\n",
                      "explain %s -> %s: %s, %u configurations x %u rounds = %s\n", n_configs),
            options->from, options->to, knobs, n_configs, rounds, runs);
  }
  if (options->budget_s > 0)
    printf (_("  then more rounds while the speed-up is not known to ±%.0f%% or a share to "
              "±%.0f%% of the gap, for at most %.0f s more (--budget)\n"),
            100.0 * options->target, 200.0 * options->target, options->budget_s);
  fflush (stdout);

  session.loop = g_main_loop_new (NULL, FALSE);
  session.explain = explain;
  session.cancellable = g_cancellable_new ();
  session.live = isatty (STDERR_FILENO);
  session.rounds = tach_explain_get_rounds (explain);
  session.runs = tach_explain_get_n_configs (explain) * session.rounds;
  session.budget_s = options->budget_s;
  session.start_us = g_get_monotonic_time ();
  tach_cli_stop_watch (&session.stop, on_stop, &session);
  tick_id = g_timeout_add_seconds (1, on_tick, &session);
  thread = g_thread_new ("tach-explain", explain_thread, &session);
  g_main_loop_run (session.loop);
  g_thread_join (thread);
  g_source_remove (tick_id);
  tach_cli_stop_unwatch (&session.stop);
  if (session.live_shown)
    fputs ("\r\033[K", stderr);

  if (session.ok || tach_explain_is_partial (explain))
    print_table (explain);
  if (session.ok)
    status = TACH_CLI_EXIT_OK;
  else if (tach_explain_is_partial (explain))
    /* Stop keeps the whole rounds measured: the table is theirs. */
    printf (ngettext ("  (stopped: the table is the %u whole round measured before the stop)\n",
                      "  (stopped: the table is the %u whole rounds measured before the stop)\n",
                      tach_explain_get_rounds (explain)),
            tach_explain_get_rounds (explain));
  else if (g_error_matches (session.error, TACH_ERROR, TACH_ERROR_CANCELLED))
    printf (_("  (stopped: no explanation; the runs that ended go to the CSV)\n"));
  else
    {
      fprintf (stderr, "tach-cli: %s\n", session.error->message);
      status = tach_cli_exit_code_for_error (session.error);
    }

  if (options->csv_dir != NULL)
    {
      g_autoptr(GError) csv_error = NULL;
      gboolean written = session.ok || tach_explain_is_partial (explain)
                         ? tach_explain_csv_append (explain, options->csv_dir, &csv_error)
                         : tach_cli_write_csv (options->csv_dir, tach_explain_get_runs (explain));

      if (!written)
        {
          if (csv_error != NULL)
            fprintf (stderr, "tach-cli: %s\n", csv_error->message);
          status = MAX (status, TACH_CLI_EXIT_FAILURE);
        }
    }
  /* Every measured run, as `run` writes its one. */
  if (!tach_cli_write_tensorboard (options->tensorboard_dir, tach_explain_get_runs (explain)))
    status = MAX (status, TACH_CLI_EXIT_FAILURE);
  status = tach_cli_stop_exit_status (&session.stop, status);

  g_clear_error (&session.error);
  g_clear_object (&session.cancellable);
  g_main_loop_unref (session.loop);
  tach_config_clear (&from);
  tach_config_clear (&to);
  return status;
}
