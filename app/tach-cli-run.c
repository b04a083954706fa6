/* tach-cli-run.c: the run command, and the summary's text that the sweeps
 * share with it.  One run's hand-off, its live line, the signals and the
 * CSV session are tach-cli-session.c's, below every command.
 *
 * One unit with tach-cli-scaling.c (tools/folder-arrows.py lists the two
 * as one): `run --scaling` is a mode of this command, which hands it the
 * configuration it built, and prints its summary with this file's text.
 */
#include "tach-build-config.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <inttypes.h>
#include <glib-unix.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>

#include "tach-cli-private.h"

/* ---------------------------------------------------------------- output */

static char *
tach_cli_format_percent (double share)
{
  if (isnan (share))
    return g_strdup ("–");
  return g_strdup_printf ("%.1f%%", share * 100.0);
}

char *
tach_cli_format_efficiency (double value, double lo, double hi)
{
  if (isnan (value))
    return g_strdup (_("not measured"));
  if (isnan (lo) || isnan (hi))
    return g_strdup_printf ("%.0f%% (–)", 100.0 * value);
  return g_strdup_printf ("%.0f%% (%.0f–%.0f%%)", 100.0 * value, 100.0 * lo, 100.0 * hi);
}

char *
tach_cli_format_number (double value, const char *format)
{
  if (isnan (value) || isinf (value))
    return g_strdup ("–");
  return g_strdup_printf (format, value);
}

void
tach_cli_summary_text_init (TachCliSummaryText *text, const TachSummary *s)
{
  text->median = tach_cli_format_number (s->steps_per_s_median, "%.2f");
  text->p10 = tach_cli_format_number (s->steps_per_s_p10, "%.2f");
  text->p90 = tach_cli_format_number (s->steps_per_s_p90, "%.2f");
  text->items = tach_cli_format_number (s->items_per_s, "%.1f");
  text->first = tach_cli_format_number (s->first_loss, "%.4f");
  text->final = tach_cli_format_number (s->final_loss, "%.4f");
  text->feed = tach_cli_format_percent (s->feed_share);
  text->compute = tach_cli_format_percent (s->compute_share);
  text->sync = tach_cli_format_percent (s->sync_share);
  text->host = tach_cli_format_percent (s->host_share);
  text->peak = tach_cli_format_percent (s->peak_share);
}

void
tach_cli_summary_text_clear (TachCliSummaryText *text)
{
  char **fields[] = {
    &text->median, &text->p10, &text->p90, &text->items, &text->first, &text->final,
    &text->feed, &text->compute, &text->sync, &text->host, &text->peak,
  };

  for (guint i = 0; i < G_N_ELEMENTS (fields); i++)
    g_clear_pointer (fields[i], g_free);
}

void
tach_cli_print_summary (TachRun *run)
{
  TachSummary s;
  const TachConfig *config = tach_run_get_config (run);
  g_auto(TachCliSummaryText) t = { 0 };

  tach_run_get_summary (run, &s);
  tach_cli_summary_text_init (&t, &s);

  printf (_("  steps/s      %s median [%s–%s p10–p90] over %" PRIu64 " steps, %s\n"),
          t.median, t.p10, t.p90, s.steps,
          g_strcmp0 (s.rate_clock, "device") == 0 ? _("device timeline") : _("host clock"));
  /* The median's own uncertainty, which a comparison of two runs uses;
   * the p10-p90 above is the spread of single steps. */
  if (isfinite (s.steps_per_s_lo))
    printf (_("               median's 95%% interval %.2f–%.2f steps/s, %.1f–%.1f %s\n"),
            s.steps_per_s_lo, s.steps_per_s_hi, s.items_per_s_lo, s.items_per_s_hi,
            s.items_unit != NULL ? s.items_unit : _("items/s"));
  else if (s.steps > 0)
    printf (_("               too few measured steps for a 95%% interval of the median\n"));
  if (!isnan (s.e2e_steps_per_s))
    printf (_("  end to end   %.2f steps/s (measured steps over the wall time after warm-up)\n"),
            s.e2e_steps_per_s);
  if (!isnan (s.api_calls_per_step))
    printf (_("  API calls    %.0f per step (median, the runner's own included)\n"),
            s.api_calls_per_step);
  printf ("  %-12s %s\n", s.items_unit != NULL ? s.items_unit : _("items/s"), t.items);
  if (!isnan (s.first_loss) || !isnan (s.final_loss))
    printf (ngettext ("  loss         %s first → %s final, each the mean of %u step\n",
                      "  loss         %s first → %s final, each the mean of %u steps\n",
                      s.loss_window_steps), t.first, t.final, s.loss_window_steps);
  printf (_("  phases       feed %s  compute %s  sync %s  host %s\n"),
          t.feed, t.compute, t.sync, t.host);
  if (!isnan (s.comm_share))
    {
      printf (_("  ranks        %u, mean shares of the step: exposed communication %.1f%%"
                "  packing %.1f%%  imbalance %.1f%%\n"),
              config->ranks, 100.0 * s.comm_share, 100.0 * s.pack_share,
              100.0 * s.imbalance_share);
      if (!isnan (s.slowest_rank))
        printf (_("               slowest rank %.0f, its compute %.1f%% above the quickest's\n"),
                s.slowest_rank, 100.0 * s.rank_compute_spread);
    }
  if (!isnan (s.weak_scaling))
    {
      g_autofree char *weak = tach_cli_format_efficiency (s.weak_scaling, s.weak_scaling_lo,
                                                          s.weak_scaling_hi);
      g_autofree char *strong = tach_cli_format_efficiency (s.strong_scaling,
                                                            s.strong_scaling_lo,
                                                            s.strong_scaling_hi);

      printf (_("  scaling      weak %s, strong %s of ideal, against one process (samples/s"
                " over %u times one process's at batch %u and at %u)\n"),
              weak, strong, config->ranks, config->batch, config->batch * config->ranks);
    }
  if (!isnan (s.achieved_flops) && s.achieved_flops > 0)
    {
      printf (_("  compute      %.1f GFLOP/s, %s of device peak\n"), s.achieved_flops / 1e9, t.peak);
      /* The count is the same for every backend and peer, so that rates
       * compare: a fast algorithm can beat the peak by it. */
      if (s.peak_share > 1.0)
        printf (_("               above the peak: FLOPs are counted as a direct algorithm does "
                  "them, and the backend does fewer (Winograd convolution)\n"));
    }
  {
    g_autofree char *generation_memory = tach_summary_dup_generation_memory (&s);
    g_autofree char *held = tach_summary_dup_held (&s);

    fputs (generation_memory, stdout);
    fputs (held, stdout);
  }
  if (tach_run_get_data_kind (run) != NULL)
    {
      const char *path = tach_run_get_data_path (run);

      if (path != NULL)
        /* Translators: the data a run read: its kind, then its file or folder. */
        printf (_("  data         %s from %s\n"), _(tach_run_get_data_kind (run)), path);
      else
        printf (_("  data         %s\n"), _(tach_run_get_data_kind (run)));
    }
  if (!isnan (s.test_accuracy))
    printf (_("  accuracy     %.2f%% on the test set\n"), s.test_accuracy * 100.0);
  else if (tach_run_get_evaluation (run, NULL, NULL) == TACH_EVALUATION_STOPPED)
    printf (_("  accuracy     not measured: the test-set evaluation was stopped\n"));
  /* What the wall time covers: the steps and the evaluation, not set-up. */
  if (!isnan (s.eval_s))
    printf (_("  wall time    %.2f s: steps %.2f s, test-set evaluation %.2f s (set-up not counted)\n"),
            s.wall_s, s.wall_s - s.eval_s, s.eval_s);
  else
    printf (_("  wall time    %.2f s from the first step (set-up not counted)\n"), s.wall_s);
  if (isfinite (s.machine_busy))
    printf (_("  machine busy %.0f%% of CPU time taken by other processes%s\n"),
            100.0 * s.machine_busy,
            s.machine_busy >= TACH_SUMMARY_BUSY_SHARE
            ? _(": the figures above are slower than on an idle machine") : "");
  {
    g_autofree char *algorithms = tach_run_dup_algorithms (run);

    if (algorithms != NULL)
      printf (_("  algorithms   %s\n"), algorithms);
  }

  if (config->task == TACH_TASK_GENERATE && config->print_text)
    {
      g_autofree char *text = tach_run_dup_text (run);

      if (text != NULL)
        printf (_("  text         %s\n"), text);
    }
  fflush (stdout);
}

/* ------------------------------------------------------------------- run */

/* @path with ".rank@rank" before its extension ("t.json" -> "t.rank1.json"). */
static char *
tach_cli_rank_path (const char *path, guint rank)
{
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  const char *dot = strrchr (base, '.');
  g_autofree char *stem = g_strndup (base, dot != NULL && dot != base ? (gsize) (dot - base)
                                                                     : strlen (base));
  g_autofree char *name = g_strdup_printf ("%s.rank%u%s", stem, rank,
                                           dot != NULL && dot != base ? dot : "");

  return g_build_filename (dir, name, NULL);
}

/* Under mpirun, a rank other than 0 whose run lost another rank: rank 0
 * may be the one lost, and with it every output, so this rank writes what
 * it has beside rank 0's (@given's): DIR/rank<r>/ and the trace's name
 * with .rank<r>.  The exit status, worse if a write failed. */
static int
tach_cli_write_survivor (const TachCliOptions *given, TachRun *run, int status)
{
  guint rank = tach_ranks_world_rank ();
  g_autoptr(GPtrArray) runs = g_ptr_array_new ();
  g_autofree char *dir = NULL, *trace = NULL;
  g_autoptr(GError) error = NULL;

  g_ptr_array_add (runs, run);
  if (given->csv_dir != NULL)
    {
      g_autofree char *sub = g_strdup_printf ("rank%u", rank);

      dir = g_build_filename (given->csv_dir, sub, NULL);
      if (!tach_cli_write_csv (dir, runs))
        status = MAX (status, TACH_CLI_EXIT_FAILURE);
    }
  if (given->trace_path != NULL)
    {
      trace = tach_cli_rank_path (given->trace_path, rank);
      if (!tach_run_write_trace (run, trace, &error))
        {
          fprintf (stderr, "tach-cli: %s\n", error->message);
          status = MAX (status, TACH_CLI_EXIT_FAILURE);
          g_clear_pointer (&trace, g_free);
        }
    }
  if (dir != NULL || trace != NULL)
    fprintf (stderr, _("tach-cli: rank %u wrote the %u steps it has to %s%s%s, in case rank 0 is"
                       " the rank lost\n"),
             rank, tach_run_get_n_samples (run), dir != NULL ? dir : "",
             dir != NULL && trace != NULL ? _(" and ") : "", trace != NULL ? trace : "");
  return status;
}

int
tach_cli_command_run (const TachCliOptions *options)
{
  TachConfig config = { 0 };
  TachCliOptions quiet;
  const TachCliOptions *given = options;   /* before the ranks' quieting */
  TachCliSession session;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autoptr(TachRun) run = NULL;
  int status = TACH_CLI_EXIT_OK;

  if (!tach_cli_build_config (options, options->preset, &config, &error))
    {
      tach_cli_usage_error ("%s", error->message);
      tach_config_clear (&config);
      return tach_cli_exit_code_for_error (error);
    }
  if (options->scaling && (tach_ranks_world_size () == 1 || config.ranks == 1))
    {
      /* Said by rank 0 alone, not once per rank. */
      if (tach_ranks_world_rank () == 0)
        tach_cli_usage_error (_("--scaling compares N ranks with one process: start it as"
                                " mpirun -np N tach-cli run ... --scaling (N of 2 or more),"
                                " without --ranks 1"));
      tach_config_clear (&config);
      return TACH_CLI_EXIT_USAGE;
    }
  /* Under mpirun: the job's ranks, the same settings on every rank (rank
   * 0 names a difference), and the outputs rank 0's alone, since it holds
   * every rank's figures once the run has ended. */
  if (!tach_cli_join_ranks (&config, &options, &quiet))
    {
      tach_config_clear (&config);
      return TACH_CLI_EXIT_USAGE;
    }
  if (!tach_cli_check_outputs (options, &error))
    {
      fprintf (stderr, "tach-cli: %s\n", error->message);
      tach_config_clear (&config);
      return TACH_CLI_EXIT_FAILURE;
    }
  /* --ranks 1 under mpirun: rank 0 runs alone, the others wait for it
   * (asleep) and print nothing. */
  if (!tach_ranks_takes_part (&config))
    {
      guchar done = 0;

      tach_config_clear (&config);
      return tach_ranks_share (&done, 1, NULL) ? TACH_CLI_EXIT_OK : TACH_CLI_EXIT_FAILURE;
    }
  tach_cli_print_notices (options, &config);
  if (options->scaling)
    {
      status = tach_cli_run_scaling (options, &config);
      tach_config_clear (&config);
      return status;
    }

  tach_cli_session_init (&session);
  session.progress_on = options->progress;
  /* Before the folder is opened: a Ctrl-C while the folder's rows are
   * copied stops the run as it starts, instead of killing the command. */
  tach_cli_session_watch_signals (&session);
  if (!tach_cli_session_open_csv (&session, options->csv_dir))
    {
      tach_cli_stop_unwatch (&session.stop);
      tach_cli_session_clear (&session);
      tach_config_clear (&config);
      return TACH_CLI_EXIT_FAILURE;
    }
  session.header = 1;

  run = tach_cli_run_one (&session, &config, &error);
  if (run == NULL)
    {
      /* It never started: a bad configuration (including one whose data
       * cannot fit in memory) is a usage error; the rest are failures. */
      if (g_error_matches (error, TACH_ERROR, TACH_ERROR_OUT_OF_MEMORY))
        status = TACH_CLI_EXIT_USAGE;
      else
        status = tach_cli_exit_code_for_error (error);
      if (status == TACH_CLI_EXIT_USAGE)
        tach_cli_usage_error ("%s", error->message);
      else
        fprintf (stderr, "tach-cli: %s\n", error->message);
    }
  else
    {
      if (tach_run_get_state (run) == TACH_RUN_STATE_FAILED)
        {
          fprintf (stderr, "tach-cli: %s\n",
                   error != NULL ? error->message : _("the run failed"));
          status = TACH_CLI_EXIT_FAILURE;
          /* What was measured before the failure is still shown. */
          if (tach_cli_run_has_results (run))
            {
              printf (_("  (failed after %u steps)\n"), tach_run_get_n_samples (run));
              tach_cli_print_summary (run);
              if (given != options && config.ranks > 1)
                status = tach_cli_write_survivor (given, run, status);
            }
        }
      else
        {
          if (tach_run_get_evaluation (run, NULL, NULL) == TACH_EVALUATION_STOPPED)
            printf (_("  (stopped during the test-set evaluation, after all %" PRIu64 " steps)\n"),
                    session.done_steps);
          else if (tach_run_get_state (run) == TACH_RUN_STATE_CANCELLED)
            printf (_("  (stopped after %" PRIu64 " steps)\n"), session.done_steps);
          tach_cli_print_summary (run);
        }
      if (tach_cli_run_has_results (run))
        g_ptr_array_add (runs, tach_run_ref (run));
      if (options->trace_path != NULL && tach_cli_run_has_results (run))
        {
          g_autoptr(GError) trace_error = NULL;

          if (!tach_run_write_trace (run, options->trace_path, &trace_error))
            {
              fprintf (stderr, "tach-cli: %s\n", trace_error->message);
              status = MAX (status, TACH_CLI_EXIT_FAILURE);
            }
        }
    }

  status = tach_cli_session_finish (options, &session, runs, status);
  if (tach_ranks_world_size () > 1 && config.ranks == 1)
    {
      guchar done = 1;

      /* Releases the ranks that sat this run out. */
      tach_ranks_share (&done, 1, NULL);
    }
  tach_config_clear (&config);
  return status;
}
