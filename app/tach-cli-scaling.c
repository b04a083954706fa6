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
 * --scaling-ranks 1,2,4 measures other counts n of ranks beside (or
 * instead of) N, each with its own strong baseline (one process at n B):
 * a run of n < N ranks is the first n ranks', over a communicator of
 * theirs made up front (tach_ranks_prepare_first), while the others sit
 * it out asleep as they do for the baselines.
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

static int
compare_counts (gconstpointer a, gconstpointer b)
{
  guint x = *(const guint *) a, y = *(const guint *) b;

  return (x > y) - (x < y);
}

/* The counts of ranks measured: --scaling-ranks' (each 1 to N; 1 is the
 * baseline, measured anyway), ascending and once each, or N. */
static GArray *
parse_counts (const char *list, guint n_ranks, GError **error)
{
  g_autoptr(GArray) counts = g_array_new (FALSE, FALSE, sizeof (guint));
  g_auto(GStrv) words = g_strsplit (list != NULL ? list : "", ",", -1);

  if (list == NULL)
    {
      g_array_append_val (counts, n_ranks);
      return g_steal_pointer (&counts);
    }
  for (guint i = 0; words[i] != NULL; i++)
    {
      guint64 n = 0;
      gboolean seen = FALSE;

      if (!g_ascii_string_to_unsigned (g_strstrip (words[i]), 10, 1, n_ranks, &n, NULL))
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                       _("invalid count '%s' in --scaling-ranks: expected whole numbers from 1 "
                         "to %u (mpirun -np %u), such as 1,%u"),
                       words[i], n_ranks, n_ranks, n_ranks);
          return NULL;
        }
      for (guint j = 0; j < counts->len; j++)
        seen = seen || g_array_index (counts, guint, j) == (guint) n;
      if (n > 1 && !seen)
        {
          guint count = (guint) n;

          g_array_append_val (counts, count);
        }
    }
  if (counts->len == 0)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   _("--scaling-ranks %s measures no count of 2 ranks or more: add one, "
                     "such as 1,%u"), list, n_ranks);
      return NULL;
    }
  g_array_sort (counts, compare_counts);
  return g_steal_pointer (&counts);
}

int
tach_cli_run_scaling (const TachCliOptions *options, const TachConfig *config)
{
  guint n_ranks = config->ranks, n_rounds = options->rounds;
  g_autoptr(GArray) counts = NULL;
  /* Point 0: one process at B (the weak baseline); then per count i,
   * point 1 + 2i: the count's ranks at B, point 2 + 2i: one process at
   * the count's global batch (its strong baseline). */
  guint n_points;
  g_autofree TachConfig *points = NULL;
  g_autofree char **labels = NULL;
  g_autofree gboolean *fits = NULL;
  g_autofree TachRun **runs = NULL;
  g_autoptr(GPtrArray) done = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autoptr(GRand) rand = g_rand_new_with_seed_array ((const guint32[]) {
      (guint32) config->seed, (guint32) (config->seed >> 32), 0x5ca1e }, 3);
  g_autoptr(GError) count_error = NULL;
  g_autoptr(GPtrArray) unfit = g_ptr_array_new_with_free_func (g_free);
  g_autofree guint *order = NULL;
  TachCliSession session;
  gboolean stopped = FALSE;
  int status = TACH_CLI_EXIT_OK;

  counts = parse_counts (options->scaling_ranks, n_ranks, &count_error);
  if (counts == NULL)
    {
      /* Said by rank 0 alone, not once per rank. */
      if (tach_ranks_world_rank () == 0)
        tach_cli_usage_error ("%s", count_error->message);
      return TACH_CLI_EXIT_USAGE;
    }
  n_points = 1 + 2 * counts->len;
  points = g_new0 (TachConfig, n_points);
  labels = g_new0 (char *, n_points);
  fits = g_new0 (gboolean, n_points);
  runs = g_new0 (TachRun *, (gsize) n_points * n_rounds);
  order = g_new (guint, n_points);
  for (guint p = 0; p < n_points; p++)
    tach_config_copy (&points[p], config);
  points[0].ranks = 1;
  fits[0] = TRUE;
  for (guint i = 0; i < counts->len; i++)
    {
      guint n = g_array_index (counts, guint, i);
      TachConfig *strong = &points[2 + 2 * i];
      g_autoptr(GError) error = NULL;

      points[1 + 2 * i].ranks = n;
      fits[1 + 2 * i] = TRUE;
      strong->ranks = 1;
      strong->batch = config->batch * n;
      /* The global batch may not fit one process (memory): weak scaling
       * is still measured, and the command says why strong is not. */
      fits[2 + 2 * i] = tach_config_validate (strong, strong->device, &error);
      if (!fits[2 + 2 * i])
        g_ptr_array_add (unfit, g_strdup (error->message));
      g_clear_error (&error);
      /* The first n ranks as a job of their own: every rank, in order. */
      if (!tach_ranks_prepare_first (n, &error))
        {
          fprintf (stderr, "tach-cli: %s\n", error->message);
          status = tach_cli_exit_code_for_error (error);
        }
    }
  for (guint p = 0; p < n_points; p++)
    labels[p] = point_label (&points[p]);

  {
    g_autoptr(TachDeviceInfo) device = tach_device_resolve (config->device, NULL);

    tach_cli_print_header (config, device, TRUE, NULL, NULL);
  }
  if (counts->len == 1)
    printf (ngettext ("scaling: %s against one process, %u round of %s, %s and %s in shuffled "
                      "order\n",
                      "scaling: %s against one process, %u rounds of %s, %s and %s in shuffled "
                      "order\n", n_rounds),
            labels[1], n_rounds, labels[1], labels[0], labels[2]);
  else
    printf (ngettext ("scaling: %u counts of ranks against one process, %u round of %u runs in "
                      "shuffled order\n",
                      "scaling: %u counts of ranks against one process, %u rounds of %u runs in "
                      "shuffled order\n", n_rounds),
            counts->len, n_rounds, n_points);
  for (guint i = 0; i < unfit->len; i++)
    printf (_("  strong scaling not measured: %s\n"), (const char *) unfit->pdata[i]);
  fflush (stdout);

  tach_cli_session_init (&session);
  tach_cli_session_watch_signals (&session);
  if (status == TACH_CLI_EXIT_OK && !tach_cli_session_open_csv (&session, options->csv_dir))
    status = TACH_CLI_EXIT_FAILURE;
  session.header = 0;

  for (guint r = 0; r < n_rounds && status == TACH_CLI_EXIT_OK && !stopped; r++)
    {
      for (guint p = 0; p < n_points; p++)
        order[p] = p;
      for (guint j = n_points - 1; j > 0; j--)
        {
          guint k = (guint) g_rand_int_range (rand, 0, (gint32) j + 1), t = order[j];

          order[j] = order[k];
          order[k] = t;
        }
      for (guint j = 0; j < n_points && !stopped; j++)
        {
          guint p = order[j];
          g_autoptr(GError) error = NULL;
          TachRun *run;

          if (!fits[p])
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
    for (guint i = 0; i < counts->len; i++)
      {
        TachInterval weak, strong = { NAN, NAN, NAN };
        TachRun *const *ranked = runs + (gsize) (1 + 2 * i) * n_rounds;
        TachRun *shown;

        tach_scaling_efficiency (ranked, runs, n_rounds, &weak);
        if (fits[2 + 2 * i])
          tach_scaling_efficiency (ranked, runs + (gsize) (2 + 2 * i) * n_rounds, n_rounds,
                                   &strong);
        for (guint r = 0; r < n_rounds; r++)
          if (ranked[r] != NULL)
            tach_run_set_scaling (ranked[r], &weak, &strong);
        shown = median_run (ranked, n_rounds);
        if (shown != NULL)
          {
            printf (_("%s, the round of the median rate:\n"), labels[1 + 2 * i]);
            tach_cli_print_summary (shown);
          }
      }

  status = tach_cli_session_finish (options, &session, done, status);
  for (guint i = 0; i < n_points * n_rounds; i++)
    g_clear_pointer (&runs[i], tach_run_unref);
  for (guint p = 0; p < n_points; p++)
    {
      tach_config_clear (&points[p]);
      g_free (labels[p]);
    }
  return status;
}
