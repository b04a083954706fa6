/* tach-ranks-vote.c: a stop asked of the ranks themselves.
 *
 * A stop asked of the ranks themselves (SIGINT to each, as the window's
 * Stop sends; tach_run_stop) is not mpirun's end of a job (that is
 * tach-ranks-stop.c's): nothing is ending the job,
 * so the ranks take the time to agree on the step to stop after, and the
 * run ends as a whole run ends: every rank's collectives complete, rank 0
 * gathers every rank's figures, and the job finishes (MPI_Finalize), with
 * no deadline on any of it.  Each rank votes at the start of every step
 * (whether it was asked to stop: a one-int MPI_Iallreduce of the maximum)
 * and counts that vote at the end of the next step, when it has long
 * completed (the step in between synchronised every rank); so every rank
 * learns of a stop at the same step and stops after it.  Stopping each at
 * its own step, as a process alone does, would leave one rank in an
 * all-reduce that the other never joins.
 *
 * Threads: the engine thread, as the rest of a run's collectives.
 */
#include "tach-ranks-private.h"

/* Votes in flight at once: the one cast this step, and the last step's
 * until it is counted. */
#define VOTES 2

struct _TachRanksVote {
  TachRanks   *ranks;   /* borrowed */
  guint64      cast;    /* votes cast (one a step) */
  guint64      counted; /* of them, counted */
#ifdef HAVE_MPI
  MPI_Request  req[VOTES];
  int          mine[VOTES];
  int          any[VOTES];
#endif
};

#ifdef HAVE_MPI

/* Waits for vote @k (cast at step @k) and says whether any rank voted to
 * stop.  Within step @k's deadline: vote 0 gets the first step's, which
 * waits for the slowest rank's set-up (a host that queues its steps on a
 * device reaches the count before the others may have begun). */
static gboolean
vote_wait (TachRanksVote *vote, guint64 k, gboolean *stop, GError **error)
{
  guint slot = (guint) (k % VOTES);

  if (!tach_ranks_wait (vote->ranks, &vote->req[slot], "stop vote", k, NULL, error))
    return FALSE;
  vote->counted = k + 1;
  *stop = vote->any[slot] != 0;
  return TRUE;
}

#endif

TachRanksVote *
tach_ranks_vote_new (TachRanks *ranks)
{
  TachRanksVote *vote;

  if (ranks == NULL || tach_ranks_size (ranks) < 2)
    return NULL;
  vote = g_new0 (TachRanksVote, 1);
  vote->ranks = ranks;
#ifdef HAVE_MPI
  for (guint i = 0; i < VOTES; i++)
    vote->req[i] = MPI_REQUEST_NULL;
#endif
  return vote;
}

gboolean
tach_ranks_vote_cast (TachRanksVote *vote, gboolean stop, GError **error)
{
#ifdef HAVE_MPI
  guint slot = (guint) (vote->cast % VOTES);

  /* The slot's last vote was counted at the end of the last step. */
  g_return_val_if_fail (vote->req[slot] == MPI_REQUEST_NULL, FALSE);
  vote->mine[slot] = stop ? 1 : 0;
  if (!MPI_TRY (MPI_Iallreduce (&vote->mine[slot], &vote->any[slot], 1, MPI_INT, MPI_MAX,
                                vote->ranks->comm, &vote->req[slot]), error))
    return FALSE;
#else
  (void) stop;
  (void) error;
#endif
  vote->cast++;
  return TRUE;
}

gboolean
tach_ranks_vote_count (TachRanksVote *vote, gboolean *stop, GError **error)
{
  *stop = FALSE;
#ifdef HAVE_MPI
  /* The vote before this step's: this step's own stays in flight. */
  if (vote->cast >= 2 && vote->counted < vote->cast - 1)
    return vote_wait (vote, vote->cast - 2, stop, error);
#else
  (void) vote;
  (void) error;
#endif
  return TRUE;
}

gboolean
tach_ranks_vote_settle (TachRanksVote *vote, GError **error)
{
#ifdef HAVE_MPI
  gboolean stop;

  while (vote->counted < vote->cast)
    if (!vote_wait (vote, vote->counted, &stop, error))
      return FALSE;
#else
  (void) vote;
  (void) error;
#endif
  return TRUE;
}

void
tach_ranks_vote_free (TachRanksVote *vote)
{
  if (vote == NULL)
    return;
#ifdef HAVE_MPI
  /* A vote still in flight (the ranks lost each other: the job aborts)
   * keeps its buffers: MPI may still write them, and a collective's
   * request cannot be freed or cancelled. */
  if (vote->counted < vote->cast)
    return;
#endif
  g_free (vote);
}
