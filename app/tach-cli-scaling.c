/* tach-cli-scaling.c: `mpirun -np N tach-cli run ... --scaling`, scaling
 * efficiency against one process, measured side by side in one command.
 *
 * Three configurations, round after round, each round in a new shuffled
 * order (drawn from the run's seed, the same on every rank, so every rank
 * takes the same turns): the N ranks at batch B each; one process at batch
 * B (ranks=1: rank 0 alone, while the other ranks sleep in
 * tach_ranks_share and take no processor from it), the weak-scaling
 * baseline; and one process at batch N B, the N ranks' global batch, the
 * strong-scaling baseline.  Each efficiency is the N ranks' samples/s over
 * N times the process's, paired by round (tach_scaling_efficiency), and
 * goes into the N-rank runs' summaries (runs.csv's weak_scaling and
 * strong_scaling); every run is written, the baselines with ranks 1.
 *
 * One unit with tach-cli-run.c: a mode of the run command, which calls it
 * with the configuration it built; its runs go through that file's session.
 */
#include "tach-build-config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <glib/gi18n.h>

#include "tach-cli-private.h"

enum { POINT_RANKS, POINT_WEAK, POINT_STRONG, N_POINTS };

/* Rank 0's stop (a signal came) for every rank, between two runs. */
static gboolean
shared_stop (const TachCliSession *session)
{
  guchar stop = session->stop.signo != 0;

  if (!tach_ranks_share (&stop, 1, NULL))
    return TRUE;
  return stop != 0;
}

typedef struct {
  double rate;
  guint  round;
} RoundRate;

static int
compare_rates (const void *a, const void *b)
{
  double x = ((const RoundRate *) a)->rate, y = ((const RoundRate *) b)->rate;

  return (x > y) - (x < y);
}

/* The run among @runs whose items/s is the median of theirs (the one
 * whose summary is printed), or NULL when none measured. */
static TachRun *
median_run (TachRun *const *runs, guint n_rounds)
{
  g_autofree RoundRate *rates = g_new (RoundRate, MAX (n_rounds, 1));
  guint n = 0;

  for (guint k = 0; k < n_rounds; k++)
    if (runs[k] != NULL && tach_cli_run_has_results (runs[k]))
      {
        TachSummary s;

        tach_run_get_summary (runs[k], &s);
        rates[n++] = (RoundRate) { s.items_per_s, k };
      }
  if (n == 0)
    return NULL;
  qsort (rates, n, sizeof *rates, compare_rates);
  return runs[rates[(n - 1) / 2].round];
}

/* "2 ranks at batch 16 each", "1 process at batch 32". */
static char *
point_label (const TachConfig *config)
{
  if (config->ranks > 1)
    return g_strdup_printf (_("%u ranks at batch %u each"), config->ranks, config->batch);
  return g_strdup_printf (_("1 process at batch %u"), config->batch);
}

int
tach_cli_run_scaling (const TachCliOptions *options, const TachConfig *config)
{
  guint n_ranks = config->ranks, n_rounds = options->rounds;
  TachConfig points[N_POINTS];
  char *labels[N_POINTS];
  g_autofree TachRun **runs = g_new0 (TachRun *, (gsize) N_POINTS * n_rounds);
  g_autoptr(GPtrArray) done = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autoptr(GRand) rand = g_rand_new_with_seed_array ((const guint32[]) {
      (guint32) config->seed, (guint32) (config->seed >> 32), 0x5ca1e }, 3);
  g_autoptr(GError) strong_error = NULL;
  TachCliSession session;
  gboolean stopped = FALSE, strong_ok;
  int status = TACH_CLI_EXIT_OK;

  for (guint p = 0; p < N_POINTS; p++)
    tach_config_copy (&points[p], config);
  points[POINT_WEAK].ranks = points[POINT_STRONG].ranks = 1;
  points[POINT_STRONG].batch = config->batch * n_ranks;
  /* The global batch may not fit one process (memory): weak scaling is
   * still measured, and the command says why strong is not. */
  strong_ok = tach_config_validate (&points[POINT_STRONG], points[POINT_STRONG].device,
                                    &strong_error);
  for (guint p = 0; p < N_POINTS; p++)
    labels[p] = point_label (&points[p]);

  {
    g_autoptr(TachDeviceInfo) device = tach_device_resolve (config->device, NULL);

    tach_cli_print_header (config, device, TRUE, NULL, NULL);
  }
  printf (ngettext ("scaling: %s against one process, %u round of %s, %s and %s in shuffled "
                    "order\n",
                    "scaling: %s against one process, %u rounds of %s, %s and %s in shuffled "
                    "order\n", n_rounds),
          labels[POINT_RANKS], n_rounds, labels[POINT_RANKS], labels[POINT_WEAK],
          labels[POINT_STRONG]);
  if (!strong_ok)
    printf (_("  strong scaling not measured: %s\n"), strong_error->message);
  fflush (stdout);

  tach_cli_session_init (&session);
  tach_cli_session_watch_signals (&session);
  if (!tach_cli_session_open_csv (&session, options->csv_dir))
    status = TACH_CLI_EXIT_FAILURE;
  session.header = 0;

  for (guint r = 0; r < n_rounds && status == TACH_CLI_EXIT_OK && !stopped; r++)
    {
      guint order[N_POINTS] = { POINT_RANKS, POINT_WEAK, POINT_STRONG };

      for (guint j = N_POINTS - 1; j > 0; j--)
        {
          guint k = (guint) g_rand_int_range (rand, 0, (gint32) j + 1), t = order[j];

          order[j] = order[k];
          order[k] = t;
        }
      for (guint j = 0; j < N_POINTS && !stopped; j++)
        {
          guint p = order[j];
          g_autoptr(GError) error = NULL;
          TachRun *run;

          if (p == POINT_STRONG && !strong_ok)
            continue;
          /* Every rank here, rank 0's word on stopping: the ranks that sit
           * the last run out waited for it asleep. */
          stopped = shared_stop (&session);
          if (stopped || !tach_ranks_takes_part (&points[p]))
            continue;
          printf (_("round %u/%u: %s\n"), r + 1, n_rounds, labels[p]);
          fflush (stdout);
          run = tach_cli_run_one (&session, &points[p], &error);
          if (run == NULL || tach_run_get_state (run) == TACH_RUN_STATE_FAILED)
            {
              fprintf (stderr, "tach-cli: %s: %s\n", labels[p],
                       error != NULL ? error->message : _("the run failed"));
              status = tach_cli_exit_code_for_error (error);
            }
          if (run == NULL)
            continue;
          tach_run_set_label (run, labels[p]);
          runs[(gsize) p * n_rounds + r] = run;
          if (tach_cli_run_has_results (run))
            g_ptr_array_add (done, tach_run_ref (run));
          stopped = stopped || tach_run_get_state (run) == TACH_RUN_STATE_CANCELLED;
        }
    }
  /* The last turn: the ranks that sat the last run out wait for it. */
  if (!stopped)
    shared_stop (&session);

  if (tach_ranks_world_rank () == 0)
    {
      TachInterval weak, strong = { NAN, NAN, NAN };
      TachRun *const *ranked = runs + (gsize) POINT_RANKS * n_rounds;
      TachRun *shown;

      tach_scaling_efficiency (ranked, runs + (gsize) POINT_WEAK * n_rounds, n_rounds, &weak);
      if (strong_ok)
        tach_scaling_efficiency (ranked, runs + (gsize) POINT_STRONG * n_rounds, n_rounds,
                                 &strong);
      for (guint r = 0; r < n_rounds; r++)
        if (ranked[r] != NULL)
          tach_run_set_scaling (ranked[r], &weak, &strong);
      shown = median_run (ranked, n_rounds);
      if (shown != NULL)
        {
          printf (_("%s, the round of the median rate:\n"), labels[POINT_RANKS]);
          tach_cli_print_summary (shown);
        }
    }

  status = tach_cli_session_finish (options, &session, done, status);
  for (guint i = 0; i < (guint) N_POINTS * n_rounds; i++)
    g_clear_pointer (&runs[i], tach_run_unref);
  for (guint p = 0; p < N_POINTS; p++)
    {
      tach_config_clear (&points[p]);
      g_free (labels[p]);
    }
  return status;
}
