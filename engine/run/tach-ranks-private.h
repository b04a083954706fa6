/* tach-ranks-private.h: what the job (tach-ranks.c) shares with the
 * gradient reducer (tach-grad-reducer.c).  The only header that includes
 * mpi.h.
 *
 * Threads: as tach-ranks.h.
 */
#pragma once

#include "tach-ranks.h"

/* Milliseconds on the monotonic clock. */
static inline double
tach_ranks_now_ms (void)
{
  return (double) g_get_monotonic_time () / 1000.0;
}

/* FNV-1a of @n bytes: what ranks compare instead of the bytes. */
static inline guint64
tach_ranks_hash (const void *data, gsize n)
{
  guint64 hash = 14695981039346656037ull;
  const guchar *p = data;

  for (gsize i = 0; i < n; i++)
    hash = (hash ^ p[i]) * 1099511628211ull;
  return hash;
}

#ifdef HAVE_MPI
#include <mpi.h>

G_BEGIN_DECLS

struct _TachRanks {
  MPI_Comm comm;
  int      rank;
  int      size;
  int      local_rank;   /* among the ranks on this machine */
  int      local_size;
  gboolean broken;   /* a wait timed out: finish aborts */
  /* rank 0: the last step each rank announced, and the receives posted */
  guint64     *hb_step;
  double      *hb_time;     /* ms: when each rank was last heard from */
  guint64     *hb_buf;
  MPI_Request *hb_req;
  /* other ranks: the heartbeat in flight */
  guint64      hb_out;
  MPI_Request  hb_send;
  double       hb_sent;     /* ms: the last heartbeat sent */
  /* mpirun ending the job: the ranks that never said they were stopping
   * ("1, 3"), NULL until asked (tach_ranks_all_stopping) */
  char        *stop_silent;
  guint        n_stop_silent;
};

/* FALSE + @error with MPI's message for @code, unless it is MPI_SUCCESS. */
gboolean tach_ranks_mpi_check (int code, const char *call, GError **error);
#define MPI_TRY(call, error) tach_ranks_mpi_check ((call), #call, (error))
/* Waits for @req within the timeout of step @step (the first step's for
 * step 0), taking in heartbeats meanwhile; on a timeout the error names
 * the ranks that never reached the step (on rank 0), and tach_ranks_finish
 * aborts.  Adds the time spent to *blocked_ms (may be NULL). */
gboolean tach_ranks_wait (TachRanks *ranks, MPI_Request *req, const char *what, guint64 step,
                          double *blocked_ms, GError **error);
/* The same wait for what @poll tells: 1 done, 0 not yet, -1 failed (with
 * @error set). */
typedef int (*TachRanksPoll) (gpointer data, GError **error);
gboolean tach_ranks_wait_for (TachRanks *ranks, TachRanksPoll poll, gpointer data,
                              const char *what, guint64 step, double *blocked_ms,
                              GError **error);
/* Rank 0's @n bytes at @buf to every rank, within the first step's
 * timeout.  Collective. */
gboolean tach_ranks_bcast_bytes (TachRanks *ranks, void *buf, int n, const char *what,
                                 GError **error);
/* Once mpirun is ending the job: whether every other rank says it is
 * stopping too (a stop, not a lost rank), else the silent ones appended
 * to @silent and counted (tach-ranks-stop.c).  Asked of the others once;
 * later calls give the same answer. */
gboolean tach_ranks_all_stopping (TachRanks *ranks, GString *silent, guint *n_silent);
/* Announces to rank 0 that this rank has reached step @step's
 * synchronisation (the heartbeat). */
void     tach_ranks_heartbeat (TachRanks *ranks, guint64 step);
/* A rank that ends in failure (@status, not 0) that its ranks did not
 * share tells every other rank, so that their waits on it end now
 * (tach_ranks_finish). */
void     tach_ranks_tell_failed (TachRanks *ranks, int status);
/* Whether another rank said it failed (tach_ranks_tell_failed): TRUE
 * and its rank in *peer. */
gboolean tach_ranks_peer_failed (TachRanks *ranks, int *peer);
/* FALSE + @error naming the rank, once another rank said it failed;
 * this rank's waits then end (@step and @what: where it waited). */
gboolean tach_ranks_check_peers (TachRanks *ranks, guint64 step, const char *what,
                                 GError **error);
/* Whether mpirun is ending the job (tach_ranks_abandon was called). */
gboolean tach_ranks_abandoned (void);
/* Rank 0 of @ranks: posts a receive for every other rank's heartbeat;
 * the others: no heartbeat in flight yet.  Once its comm, rank and size
 * are set. */
void     tach_ranks_listen (TachRanks *ranks);
/* Cancels @ranks' receives, waits for its heartbeat in flight, frees its
 * communicator and @ranks (tach-ranks-first.c). */
void     tach_ranks_release (TachRanks *ranks);
/* The job, which the caller now owns (tach_ranks_world() is NULL after):
 * tach_ranks_finish (tach-ranks-first.c) ends it. */
TachRanks *tach_ranks_steal_world (void);

G_END_DECLS

#endif
