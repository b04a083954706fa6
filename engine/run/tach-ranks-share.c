/* tach-ranks-share.c: the ranks agree on what runs next.
 *
 * A sweep, an explanation or a scaling measurement runs many runs in a row,
 * and every rank must start the same ones in the same order: the order
 * comes from the seed every rank shares, and whatever rank 0 decides from
 * its clock or its figures (another round, a stop) it hands the others
 * here.  Between runs a rank may have nothing to do for long: a run of
 * ranks=1 is rank 0's alone, the one-process baseline of scaling.  So this
 * wait sleeps between its tests, instead of the spinning waits of a step's
 * all-reduces: an idle rank must not take a processor from the run it
 * waits for.  It has no deadline (a run of one process may take as long as
 * it likes), but it gives up when mpirun ends the job (tach_ranks_abandon),
 * which mpirun does when a rank exits or is killed.
 *
 * Threads: as tach-ranks.h: whichever thread drives the runs, between them.
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-error-private.h"
#include "tach-ranks-private.h"

/* How long an idle rank sleeps between two looks at the broadcast: short
 * beside any run, long enough to cost no processor. */
#define SHARE_SLEEP_US 2000

gboolean
tach_ranks_share (gpointer data, gsize size, GError **error)
{
#ifdef HAVE_MPI
  TachRanks *ranks = tach_ranks_world ();
  MPI_Request req;
  int peer = -1;

  if (ranks == NULL)
    return TRUE;
  if (ranks->broken)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
                   _("the ranks lost each other in the last run; nothing more runs"));
      return FALSE;
    }
  if (!MPI_TRY (MPI_Ibcast (data, (int) size, MPI_BYTE, 0, ranks->comm, &req), error))
    return FALSE;
  for (;;)
    {
      int done = 0;
      int code = MPI_Test (&req, &done, MPI_STATUS_IGNORE);

      if (code != MPI_SUCCESS)
        {
          ranks->broken = TRUE;
          return tach_ranks_mpi_check (code, "MPI_Ibcast", error);
        }
      if (done)
        return TRUE;
      if (tach_ranks_peer_failed (ranks, &peer))
        {
          ranks->broken = TRUE;
          g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
                       _("rank %d failed between two runs (its own message is above); nothing"
                         " more runs"), peer);
          return FALSE;
        }
      if (tach_ranks_abandoned ())
        {
          ranks->broken = TRUE;
          g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
                       _("mpirun is ending the job between two runs: a rank exited, was"
                         " killed or failed (mpirun's message names it)"));
          return FALSE;
        }
      g_usleep (SHARE_SLEEP_US);
    }
#else
  (void) data;
  (void) size;
  (void) error;
  return TRUE;
#endif
}

gboolean
tach_ranks_takes_part (const TachConfig *config)
{
  return tach_ranks_world_rank () < MAX (config->ranks, 1);
}

gboolean
tach_ranks_check_count (const TachConfig *config, GError **error)
{
  guint world = tach_ranks_world_size ();
  g_autofree char *ranks = NULL, *fix = NULL;

  /* Under mpirun -np N: the N ranks, or rank 0 alone (ranks=1: the
   * one-process baseline of a scaling measurement, the others idle), or
   * the first ranks=n of them, made a job of their own beforehand (run
   * --scaling-ranks). */
  if (config->ranks == world || config->ranks <= 1
      || tach_ranks_for_count (config->ranks) != NULL)
    return TRUE;
  if (world == 1)
    g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                 W_("{ranks=%u} but this process runs alone: start it as"
                    " mpirun -np %u tach-cli run ..., or use {ranks=1}"),
                 config->ranks, config->ranks);
  else
    g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                 W_("{ranks=%u} but mpirun started %u ranks: leave {ranks} out, use"
                    " {ranks=1} for rank 0 alone, or start mpirun -np %u"),
                 config->ranks, world, config->ranks);
  ranks = g_strdup_printf ("%u", config->ranks);
  fix = g_strdup_printf ("%u", world);
  tach_error_add_hint (error, TACH_KNOB_RANKS, ranks, TACH_KNOB_RANKS, fix, NULL);
  return FALSE;
}

gboolean
tach_ranks_same_as_rank_0 (const void *data, gsize n)
{
#ifdef HAVE_MPI
  TachRanks *ranks = tach_ranks_world ();
  guint64 hash = tach_ranks_hash (data, n);
  g_autofree guint64 *all = NULL;
  MPI_Request req;

  if (ranks == NULL)
    return TRUE;
  all = g_new0 (guint64, ranks->size);
  if (MPI_Iallgather (&hash, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, ranks->comm, &req)
      != MPI_SUCCESS
      || !tach_ranks_wait (ranks, &req, "argument check", 0, NULL, NULL))
    return FALSE;
  return all[0] == hash;
#else
  (void) data;
  (void) n;
  return TRUE;
#endif
}
