/* tach-ranks-first.c: the first n ranks of the job as a job of their own.
 *
 * `mpirun -np N tach-cli run --scaling --scaling-ranks 1,2,4` measures
 * counts of ranks between 1 and N in one command: a run of ranks=n < N is
 * the first n ranks' (tach_ranks_takes_part), while the others wait
 * asleep for the next run in tach_ranks_share, as they do for the
 * one-process baseline.  Its collectives must then reach those n ranks
 * alone: the run goes over a communicator of theirs (MPI_Comm_split of
 * the job's), with heartbeats and deadlines of its own, as the job's.
 * The split is collective over the whole job, so every rank makes the
 * sub-jobs up front, in the same order (tach_ranks_prepare_first), and
 * the runs find theirs by their count (tach_ranks_for_count).
 *
 * The job ends here too (tach_ranks_finish), after its sub-jobs.
 *
 * Threads: the main thread makes and frees them; the engine thread uses
 * them as it uses the job.
 */
#include <stdio.h>

#include "tach-config-private.h"
#include "tach-ranks-private.h"

#ifdef HAVE_MPI

/* The sub-jobs made so far, by count of ranks (NULL where not made, or
 * where this rank is not among the first n). */
static GPtrArray *firsts;
static GArray    *first_counts;   /* guint: the counts prepared */

void
tach_ranks_release (TachRanks *ranks)
{
  if (ranks->rank == 0)
    for (int peer = 1; peer < ranks->size; peer++)
      if (ranks->hb_req[peer] != MPI_REQUEST_NULL)
        {
          MPI_Cancel (&ranks->hb_req[peer]);
          MPI_Request_free (&ranks->hb_req[peer]);
        }
  if (ranks->hb_send != MPI_REQUEST_NULL)
    MPI_Wait (&ranks->hb_send, MPI_STATUS_IGNORE);
  MPI_Comm_free (&ranks->comm);
  g_free (ranks->hb_step);
  g_free (ranks->hb_time);
  g_free (ranks->hb_buf);
  g_free (ranks->hb_req);
  g_free (ranks->stop_silent);
  g_free (ranks);
}

gboolean
tach_ranks_prepare_first (guint n, GError **error)
{
  TachRanks *world = tach_ranks_world (), *sub;
  MPI_Comm comm;
  guint size = tach_ranks_size (world), me = tach_ranks_rank (world);

  /* One rank (no collectives) and the whole job need no sub-job. */
  if (world == NULL || n <= 1 || n >= size)
    return TRUE;
  for (guint i = 0; first_counts != NULL && i < first_counts->len; i++)
    if (g_array_index (first_counts, guint, i) == n)
      return TRUE;
  /* Blocking, once at the start, when every rank is here. */
  if (!MPI_TRY (MPI_Comm_split (world->comm, me < n ? 0 : MPI_UNDEFINED, (int) me, &comm), error))
    return FALSE;
  if (firsts == NULL)
    {
      firsts = g_ptr_array_new ();
      first_counts = g_array_new (FALSE, FALSE, sizeof (guint));
    }
  g_array_append_val (first_counts, n);
  if (comm == MPI_COMM_NULL)
    {
      g_ptr_array_add (firsts, NULL);
      return TRUE;
    }
  sub = g_new0 (TachRanks, 1);
  sub->comm = comm;
  MPI_Comm_set_errhandler (sub->comm, MPI_ERRORS_RETURN);
  sub->rank = (int) me;
  sub->size = (int) n;
  /* Each rank keeps its GPU: its place among the ranks of its machine. */
  sub->local_rank = world->local_rank;
  sub->local_size = world->local_size;
  tach_ranks_listen (sub);
  g_ptr_array_add (firsts, sub);
  return TRUE;
}

TachRanks *
tach_ranks_for_count (guint n)
{
  TachRanks *world = tach_ranks_world ();

  if (world == NULL || n == tach_ranks_size (world))
    return world;
  for (guint i = 0; first_counts != NULL && i < first_counts->len; i++)
    if (g_array_index (first_counts, guint, i) == n)
      return firsts->pdata[i];
  return NULL;
}

/* Releases the sub-jobs, before the job ends; TRUE (releasing nothing)
 * when one of them lost a rank. */
static gboolean
free_firsts (void)
{
  if (firsts == NULL)
    return FALSE;
  for (guint i = 0; i < firsts->len; i++)
    if (firsts->pdata[i] != NULL && ((TachRanks *) firsts->pdata[i])->broken)
      return TRUE;
  for (guint i = 0; i < firsts->len; i++)
    if (firsts->pdata[i] != NULL)
      tach_ranks_release (firsts->pdata[i]);
  g_clear_pointer (&firsts, g_ptr_array_unref);
  g_clear_pointer (&first_counts, g_array_unref);
  return FALSE;
}

/* Here, above the sub-jobs, so that they end before the job. */
void
tach_ranks_finish (int status)
{
  TachRanks *world = tach_ranks_world ();

  if (world == NULL)
    return;
  /* A sub-job's rank lost is the job's. */
  if (free_firsts ())
    world->broken = TRUE;
  /* This rank failed: the others may be waiting for it, in a run's
   * collectives while it waits in MPI_Finalize for them. */
  if (status != 0 && !world->broken)
    tach_ranks_tell_failed (world, status);
  if (world->broken)
    {
      /* A rank is dead or hung: a finalize would wait on it forever. */
      fflush (stdout);
      fflush (stderr);
      MPI_Abort (MPI_COMM_WORLD, status != 0 ? status : 1);
    }
  tach_ranks_release (tach_ranks_steal_world ());
  tach_presets_set_process_ranks (0);
  MPI_Finalize ();
}

#else /* !HAVE_MPI */

void
tach_ranks_finish (int status)
{
  (void) status;
}

gboolean
tach_ranks_prepare_first (guint n, GError **error)
{
  (void) n;
  (void) error;
  return TRUE;
}

TachRanks *
tach_ranks_for_count (guint n)
{
  (void) n;
  return NULL;
}

#endif /* HAVE_MPI */
