/* tach-ranks-stop.c: a stop, told apart from a lost rank.
 *
 * mpirun ends a job the same way whether it was asked to stop (Escape in
 * the window, kill -TERM, Ctrl+C) or one of its ranks exited or was
 * killed: it sends every remaining rank SIGTERM, and SIGKILL a second
 * later.  A rank cannot tell the two apart from the signal, and a stopped
 * run must end as cancelled, a lost rank as a failure that names it.  So
 * when a rank's wait finds mpirun ending the job, it tells every other
 * rank it is stopping and listens for theirs, briefly: a stop reaches
 * every rank, and each answers; a rank that exited or was killed never
 * does.  All answered: the job was stopped.  Silent ones: they are named.
 *
 * The answers come from the ranks' engine threads, as they reach a wait
 * (MPI is called from one thread at a time): a rank deep in a step longer
 * than the time listened counts as silent, and the run fails as before.
 *
 * A stop asked of the ranks themselves (SIGINT to each, as the window's
 * Stop sends) is tach-ranks-vote.c's.
 *
 * Threads: the engine thread, as the rest of a run's collectives.
 */
#include "tach-ranks-private.h"

/* Tag of the stop notices. */
#define TAG_STOP 73
/* How long a rank listens for the others' notices: well within the second
 * mpirun leaves before its SIGKILL, so that rank 0 still writes its rows. */
#define STOP_LISTEN_MS 400.0

#ifdef HAVE_MPI

/* What every notice carries (a send buffer that outlives the sends). */
static const guint64 stopping = 1;

gboolean
tach_ranks_all_stopping (TachRanks *ranks, GString *silent, guint *n_silent)
{
  int n = ranks->size;
  g_autofree MPI_Request *sends = NULL, *recvs = NULL;
  g_autofree guint64 *heard = NULL;
  double t0 = tach_ranks_now_ms ();
  int left = n - 1;

  /* Once per job: later waits of the same run reuse the verdict. */
  if (ranks->stop_silent == NULL)
    {
      GString *names = g_string_new (NULL);

      sends = g_new (MPI_Request, n);
      recvs = g_new (MPI_Request, n);
      heard = g_new0 (guint64, n);
      for (int peer = 0; peer < n; peer++)
        {
          sends[peer] = recvs[peer] = MPI_REQUEST_NULL;
          if (peer == ranks->rank)
            continue;
          MPI_Isend (&stopping, 1, MPI_UINT64_T, peer, TAG_STOP, ranks->comm, &sends[peer]);
          MPI_Irecv (&heard[peer], 1, MPI_UINT64_T, peer, TAG_STOP, ranks->comm, &recvs[peer]);
        }
      while (left > 0 && tach_ranks_now_ms () - t0 < STOP_LISTEN_MS)
        {
          left = 0;
          for (int peer = 0; peer < n; peer++)
            {
              int done = 0;

              if (recvs[peer] == MPI_REQUEST_NULL)
                continue;
              if (MPI_Test (&recvs[peer], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || !done)
                left++;
            }
          if (left > 0)
            g_usleep (1000);
        }
      ranks->n_stop_silent = 0;
      for (int peer = 0; peer < n; peer++)
        {
          if (recvs[peer] != MPI_REQUEST_NULL)
            {
              /* Cancelled, or it arrived meanwhile: either way done
               * before its buffer goes. */
              MPI_Cancel (&recvs[peer]);
              MPI_Wait (&recvs[peer], MPI_STATUS_IGNORE);
              g_string_append_printf (names, "%s%d", names->len > 0 ? ", " : "", peer);
              ranks->n_stop_silent++;
            }
          /* A notice to a dead rank may never leave: let MPI drop it. */
          if (sends[peer] != MPI_REQUEST_NULL)
            MPI_Request_free (&sends[peer]);
        }
      ranks->stop_silent = g_string_free (names, FALSE);
    }
  g_string_append (silent, ranks->stop_silent);
  *n_silent = ranks->n_stop_silent;
  return ranks->n_stop_silent == 0;
}

#endif
