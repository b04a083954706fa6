/* tach-run-ranks.c: a data-parallel run's figures, gathered on rank 0.
 *
 * Each rank times its own steps as any run does; the reducer adds what
 * the gradients' all-reduces cost it (comm, pack) and when it reached each
 * step's synchronisation.  A rank cannot tell, from inside an all-reduce,
 * how much of its wait was for the slowest rank to arrive and how much was
 * the transfer: that needs every rank's arrival.  So after the last step
 * rank 0 gathers every rank's samples and, step by step, takes as rank r's
 * imbalance the time from its arrival to the last rank's (at most what it
 * was blocked), and as its exposed communication the rest of its blocked
 * time.  Their wall times move onto rank 0's clock (each rank's counts
 * from its own first step; tach_ranks_clock_offset relates the clocks),
 * so that a trace or samples.csv shows the ranks' steps side by side.  Steps begin together on every rank (each ends in the same
 * all-reduce), so the arrivals, measured from each rank's own step start,
 * compare across ranks and machines without a shared clock.
 *
 * Threads: the engine thread.
 */
#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-run-thread-private.h"
#include "tach-stats.h"

enum {
  F_WALL, F_STEP, F_FEED, F_COMPUTE, F_SYNC, F_HOST, F_LOSS, F_ACCURACY,
  F_COMM, F_PACK, F_ARRIVE, F_WARMUP, F_DEVICE_STEP, F_API_CALLS,
  N_FIELDS
};

TachSampleStore *
tach_run_rank_samples (TachRun *run, guint rank)
{
  if (rank == 0)
    return run->samples;
  if (run->rank_samples == NULL || rank > run->rank_samples->len)
    return NULL;
  return run->rank_samples->pdata[rank - 1];
}

guint
tach_run_get_rank_of (TachRun *run, guint i)
{
  TachSampleStore *store;
  guint rank = i;

  g_mutex_lock (&run->lock);
  store = tach_run_rank_samples (run, i);
  if (store != NULL)
    rank = tach_sample_store_get_rank (store);
  g_mutex_unlock (&run->lock);
  return rank;
}

guint
tach_run_get_n_ranks (TachRun *run)
{
  guint n;

  g_mutex_lock (&run->lock);
  n = run->rank_samples != NULL ? run->rank_samples->len + 1 : 1;
  g_mutex_unlock (&run->lock);
  return n;
}

guint
tach_run_copy_rank_samples (TachRun *run, guint rank, guint from, guint n, GArray *out)
{
  TachSampleStore *store;
  guint copied = 0;

  g_mutex_lock (&run->lock);
  store = tach_run_rank_samples (run, rank);
  if (store != NULL)
    copied = tach_sample_store_copy (store, from, n, out);
  g_mutex_unlock (&run->lock);
  return copied;
}

guint
tach_run_copy_rank_flights (TachRun *run, guint rank, GArray *out)
{
  guint n = 0;

  g_mutex_lock (&run->lock);
  if (run->rank_flights != NULL && rank < run->rank_flights->len)
    {
      GArray *flights = run->rank_flights->pdata[rank];

      g_array_append_vals (out, flights->data, flights->len);
      n = flights->len;
    }
  g_mutex_unlock (&run->lock);
  return n;
}

/* Keeps @flights (a GArray of TachGradFlight per store, the run's own
 * first) as the run's. */
static void
set_flights (TachRun *run, GPtrArray *flights)
{
  g_mutex_lock (&run->lock);
  g_clear_pointer (&run->rank_flights, g_ptr_array_unref);
  run->rank_flights = flights;
  g_mutex_unlock (&run->lock);
}

void
tach_run_keep_own_flights (TachRunThread *e)
{
  GArray *mine = tach_grad_reducer_get_flights (e->reducer);
  GPtrArray *flights = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  GArray *copy = g_array_sized_new (FALSE, FALSE, sizeof (TachGradFlight), mine->len);

  g_array_append_vals (copy, mine->data, mine->len);
  g_ptr_array_add (flights, copy);
  set_flights (e->run, flights);
}

/* Every rank's flights onto rank 0 (run->rank_flights).  Collective. */
static gboolean
gather_flights (TachRunThread *e, GError **error)
{
  GArray *mine = tach_grad_reducer_get_flights (e->reducer);
  g_autoptr(GPtrArray) all = NULL;
  GPtrArray *flights;

  if (!tach_ranks_gather_bytes (tach_ranks_for_count (e->run->config.ranks), mine->data,
                                (gsize) mine->len * sizeof (TachGradFlight), &all, error))
    return FALSE;
  if (all == NULL)
    return TRUE;
  flights = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  for (guint r = 0; r < all->len; r++)
    {
      gsize n = 0;
      const void *data = g_bytes_get_data (all->pdata[r], &n);
      GArray *one = g_array_sized_new (FALSE, FALSE, sizeof (TachGradFlight),
                                       (guint) (n / sizeof (TachGradFlight)));

      g_array_append_vals (one, data, (guint) (n / sizeof (TachGradFlight)));
      g_ptr_array_add (flights, one);
    }
  set_flights (e->run, flights);
  return TRUE;
}

void
tach_run_summarise_ranks (TachRun *run, TachSummary *summary)
{
  guint n_ranks = run->rank_samples != NULL ? run->rank_samples->len + 1 : 1;
  double first = 0.0, final = 0.0, compute = 0.0, comm = 0.0, pack_share = 0.0;
  double imbalance = 0.0, slowest = -1.0, quickest = G_MAXDOUBLE;

  if (n_ranks == 1)
    return;
  for (guint r = 0; r < n_ranks; r++)
    {
      TachSummary s;

      if (r == 0)
        s = *summary;
      else
        tach_summary_compute_store (run->rank_samples->pdata[r - 1], run->items_per_step,
                                    run->flops_per_step, run->device->info->peak_flops, &s);
      first += s.first_loss;
      final += s.final_loss;
      compute += s.compute_share;
      comm += s.comm_share;
      pack_share += s.pack_share;
      imbalance += s.imbalance_share;
      if (s.compute_share > slowest)
        {
          slowest = s.compute_share;
          summary->slowest_rank = r;
        }
      quickest = MIN (quickest, s.compute_share);
    }
  summary->first_loss = first / n_ranks;
  summary->final_loss = final / n_ranks;
  summary->compute_share = compute / n_ranks;
  summary->comm_share = comm / n_ranks;
  summary->pack_share = pack_share / n_ranks;
  summary->imbalance_share = imbalance / n_ranks;
  summary->rank_compute_spread = quickest > 0.0 ? slowest / quickest - 1.0 : NAN;
}

static void
pack (const TachSample *s, double arrive, double *row)
{
  row[F_WALL] = s->wall_s;
  row[F_STEP] = s->step_ms;
  row[F_FEED] = s->feed_ms;
  row[F_COMPUTE] = s->compute_ms;
  row[F_SYNC] = s->sync_ms;
  row[F_HOST] = s->host_ms;
  row[F_LOSS] = s->loss;
  row[F_ACCURACY] = s->accuracy;
  row[F_COMM] = s->comm_ms;
  row[F_PACK] = s->pack_ms;
  row[F_ARRIVE] = arrive;
  row[F_WARMUP] = s->warmup ? 1.0 : 0.0;
  row[F_DEVICE_STEP] = s->device_step_ms;
  row[F_API_CALLS] = s->api_calls;
}

static void
unpack (const double *row, guint64 step, guint rank, double imbalance, TachSample *s)
{
  *s = (TachSample) {
    .step = step,
    .warmup = row[F_WARMUP] != 0.0,
    .rank = rank,
    .wall_s = row[F_WALL],
    .step_ms = row[F_STEP],
    .feed_ms = row[F_FEED],
    .compute_ms = row[F_COMPUTE],
    .sync_ms = row[F_SYNC],
    .host_ms = row[F_HOST],
    .loss = row[F_LOSS],
    .accuracy = row[F_ACCURACY],
    .device_step_ms = row[F_DEVICE_STEP],
    .api_calls = row[F_API_CALLS],
    .comm_ms = MAX (0.0, row[F_COMM] - imbalance),
    .pack_ms = row[F_PACK],
    .imbalance_ms = imbalance,
  };
}

gboolean
tach_run_gather_ranks (TachRunThread *e, GError **error)
{
  TachRun *run = e->run;
  TachRanks *ranks = tach_ranks_for_count (e->run->config.ranks);
  guint size = tach_ranks_size (ranks), me = tach_ranks_rank (ranks);
  g_autoptr(GArray) mine = g_array_new (FALSE, FALSE, sizeof (TachSample));
  g_autofree double *table = NULL, *all = NULL, *starts = NULL;
  double start;
  g_autoptr(GPtrArray) stores = NULL;
  guint64 first_step = 0;
  guint n;

  g_mutex_lock (&run->lock);
  n = tach_sample_store_copy (run->samples, 0, G_MAXUINT, mine);
  g_mutex_unlock (&run->lock);
  /* Every rank ran the same steps (each ends in a collective); a
   * difference would make the gather below wrong, so it is checked. */
  if (!tach_ranks_check_same_bytes (ranks, &n, sizeof n, _("step counts"), error))
    return FALSE;
  if (n > 0)
    first_step = g_array_index (mine, TachSample, 0).step;

  table = g_new (double, (gsize) MAX (n, 1) * N_FIELDS);
  for (guint i = 0; i < n; i++)
    {
      const TachSample *s = &g_array_index (mine, TachSample, i);
      TachGradStepStats st;

      pack (s, tach_grad_reducer_step_stats (e->reducer, s->step, &st) ? st.arrive_ms : NAN,
            table + (gsize) i * N_FIELDS);
    }
  if (me == 0)
    {
      all = g_new (double, (gsize) MAX (n, 1) * N_FIELDS * size);
      starts = g_new (double, size);
    }
  /* Where this rank's clock started (its first step), on rank 0's clock. */
  start = (double) e->t0 / 1e6 + e->clock_offset_ms;
  if (!tach_ranks_gather (ranks, table, n * N_FIELDS, all, error)
      || !tach_ranks_gather (ranks, &start, 1, starts, error)
      || !gather_flights (e, error))
    return FALSE;
  if (me != 0)
    return TRUE;

  stores = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_sample_store_free);
  for (guint r = 0; r < size; r++)
    {
      TachSampleStore *store = tach_sample_store_new ();

      tach_sample_store_set_rank (store, r);
      g_ptr_array_add (stores, store);
    }
  for (guint i = 0; i < n; i++)
    {
      double last = -G_MAXDOUBLE;

      for (guint r = 0; r < size; r++)
        last = MAX (last, all[((gsize) r * n + i) * N_FIELDS + F_ARRIVE]);
      for (guint r = 0; r < size; r++)
        {
          const double *row = all + ((gsize) r * n + i) * N_FIELDS;
          double imbalance = isfinite (row[F_ARRIVE]) && isfinite (row[F_COMM])
                               ? CLAMP (last - row[F_ARRIVE], 0.0, row[F_COMM]) : NAN;
          TachSample s;

          unpack (row, first_step + i, r, imbalance, &s);
          /* On rank 0's clock: each rank's wall time counts from its own
           * first step, which began when its set-up ended. */
          s.wall_s += (starts[r] - starts[0]) / 1000.0;
          tach_sample_store_append (stores->pdata[r], &s);
        }
    }

  g_mutex_lock (&run->lock);
  tach_sample_store_free (run->samples);
  run->samples = g_ptr_array_steal_index (stores, 0);
  g_clear_pointer (&run->rank_samples, g_ptr_array_unref);
  run->rank_samples = g_steal_pointer (&stores);
  g_mutex_unlock (&run->lock);
  return TRUE;
}
