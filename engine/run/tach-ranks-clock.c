/* tach-ranks-clock.c: one clock for every rank of a job.
 *
 * Each rank times its steps on its own monotonic clock, from its own
 * first step; the ranks start their first steps when their set-up ends,
 * which differs by tens or hundreds of milliseconds, and on two machines
 * their clocks share no origin at all.  A trace that puts the ranks side
 * by side needs them on one clock, as distributed tracers do it: each
 * rank asks rank 0 for the time a few times (a ping, then rank 0's
 * reading), and takes the exchange with the shortest round trip, whose
 * midpoint is the closest to rank 0's reading (Cristian's algorithm, as
 * NTP's offset).  On one machine the clocks are the same and the offset
 * comes out within the round trip, a few microseconds.
 *
 * Threads: the engine thread, as the rest of a run's collectives.
 */
#include "tach-ranks-private.h"

/* Tag of the clock exchange's messages. */
#define TAG_CLOCK 72
/* Exchanges a rank makes; the shortest round trip wins. */
#define CLOCK_PINGS 8

#ifdef HAVE_MPI

/* Sends @value to @peer and waits for it to leave, within the first
 * step's deadline. */
static gboolean
clock_send (TachRanks *ranks, double *value, int peer, GError **error)
{
  MPI_Request req;

  return MPI_TRY (MPI_Isend (value, 1, MPI_DOUBLE, peer, TAG_CLOCK, ranks->comm, &req), error)
         && tach_ranks_wait (ranks, &req, "clock exchange", 0, NULL, error);
}

static gboolean
clock_recv (TachRanks *ranks, double *value, int peer, GError **error)
{
  MPI_Request req;

  return MPI_TRY (MPI_Irecv (value, 1, MPI_DOUBLE, peer, TAG_CLOCK, ranks->comm, &req), error)
         && tach_ranks_wait (ranks, &req, "clock exchange", 0, NULL, error);
}

#endif

gboolean
tach_ranks_clock_offset (TachRanks *ranks, double *offset_ms, GError **error)
{
  *offset_ms = 0.0;
#ifdef HAVE_MPI
  if (ranks == NULL || ranks->size == 1)
    return TRUE;
  if (ranks->rank == 0)
    {
      /* Answers each rank's pings in turn with its reading. */
      for (int peer = 1; peer < ranks->size; peer++)
        for (guint i = 0; i < CLOCK_PINGS; i++)
          {
            double ping = 0.0, now;

            if (!clock_recv (ranks, &ping, peer, error))
              return FALSE;
            now = tach_ranks_now_ms ();
            if (!clock_send (ranks, &now, peer, error))
              return FALSE;
          }
      return TRUE;
    }
  {
    double best_rtt = G_MAXDOUBLE;

    for (guint i = 0; i < CLOCK_PINGS; i++)
      {
        double sent = tach_ranks_now_ms (), theirs = 0.0, back;

        if (!clock_send (ranks, &sent, 0, error) || !clock_recv (ranks, &theirs, 0, error))
          return FALSE;
        back = tach_ranks_now_ms ();
        if (back - sent < best_rtt)
          {
            best_rtt = back - sent;
            *offset_ms = theirs - (sent + back) / 2.0;
          }
      }
  }
#else
  (void) ranks;
  (void) error;
#endif
  return TRUE;
}
