/* tach-ranks.c: data-parallel ranks over MPI (tach-ranks.h says what).
 *
 * The only file of the engine that includes mpi.h.  Every wait on other
 * ranks is a request polled with MPI_Test against a deadline (tach_ranks_wait),
 * never a blocking call that could hang on a dead rank.  Each rank sends
 * rank 0 a heartbeat, the number of the step it has reached, as it begins
 * a step's gradient synchronisation; rank 0 keeps a receive posted for
 * every other rank, so that when a wait times out it can name the ranks
 * that never reached the step.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <inttypes.h>
#include <glib/gi18n-lib.h>

#include "tach-config-private.h"
#include "tach-machine.h"
#include "tach-ranks-private.h"

/* Tags of the point-to-point messages beside the collectives (72 is the
 * clocks', 73 the stop notices'). */
#define TAG_HEARTBEAT 71
#define TAG_FAILED    74
/* How often a rank waiting on the others tells rank 0 it is alive. */
#define HEARTBEAT_MS 1000.0

static double timeout_first_s = 120.0;
static double timeout_later_s = 8.0;

void
tach_ranks_set_timeout (double first_s, double later_s)
{
  timeout_first_s = first_s;
  timeout_later_s = later_s;
}

#ifdef HAVE_MPI

/* ------------------------------------------------------------- the job */


static TachRanks *world;
static gboolean initialised;
static gint abandoned;   /* atomic: tach_ranks_abandon */

void
tach_ranks_abandon (void)
{
  g_atomic_int_set (&abandoned, 1);
}

gboolean
tach_ranks_abandoned (void)
{
  return g_atomic_int_get (&abandoned) != 0;
}

gboolean
tach_ranks_have_mpi (void)
{
  return TRUE;
}

/* The message of an MPI error code. */
static char *
mpi_error_string (int code)
{
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;

  if (MPI_Error_string (code, text, &len) != MPI_SUCCESS)
    return g_strdup_printf ("MPI error %d", code);
  return g_strndup (text, (gsize) len);
}

gboolean
tach_ranks_mpi_check (int code, const char *call, GError **error)
{
  g_autofree char *text = NULL;

  if (code == MPI_SUCCESS)
    return TRUE;
  text = mpi_error_string (code);
  g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY, _("MPI failed: %s: %s"), call, text);
  return FALSE;
}

static void
heartbeat_post (TachRanks *ranks, int peer)
{
  MPI_Irecv (&ranks->hb_buf[peer], 1, MPI_UINT64_T, peer, TAG_HEARTBEAT, ranks->comm,
             &ranks->hb_req[peer]);
}

/* Rank 0: takes in the heartbeats that arrived. */
static void
heartbeat_drain (TachRanks *ranks)
{
  if (ranks->rank != 0)
    return;
  for (int peer = 1; peer < ranks->size; peer++)
    {
      int done = 0;

      while (ranks->hb_req[peer] != MPI_REQUEST_NULL
             && MPI_Test (&ranks->hb_req[peer], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS
             && done)
        {
          ranks->hb_step[peer] = MAX (ranks->hb_step[peer], ranks->hb_buf[peer] + 1);
          ranks->hb_time[peer] = tach_ranks_now_ms ();
          heartbeat_post (ranks, peer);
        }
    }
}

/* Announces that this rank has reached step @step's synchronisation. */
void
tach_ranks_heartbeat (TachRanks *ranks, guint64 step)
{
  if (ranks->rank == 0)
    {
      ranks->hb_step[0] = step + 1;
      heartbeat_drain (ranks);
      return;
    }
  if (ranks->hb_send != MPI_REQUEST_NULL)
    {
      int done = 0;

      /* The last one is still in flight: rank 0 is behind.  Keep it. */
      MPI_Test (&ranks->hb_send, &done, MPI_STATUS_IGNORE);
      if (!done)
        return;
    }
  ranks->hb_out = step;
  ranks->hb_sent = tach_ranks_now_ms ();
  MPI_Isend (&ranks->hb_out, 1, MPI_UINT64_T, 0, TAG_HEARTBEAT, ranks->comm, &ranks->hb_send);
}

/* The error of a wait that ran out of time at step @step (@waited_s), or
 * that mpirun ended (@waited_s < 0: tach_ranks_abandon): rank 0 names the
 * ranks that never announced the step; where mpirun ended it, every rank
 * names the ones that did not say they were stopping, and when all did,
 * it is TACH_ERROR_CANCELLED: a stop. */
static void
set_timeout_error (TachRanks *ranks, const char *what, guint64 step, double waited_s,
                   GError **error)
{
  g_autoptr(GString) missing = g_string_new (NULL);
  guint n_missing = 0;

  ranks->broken = TRUE;
  if (ranks->rank == 0)
    {
      heartbeat_drain (ranks);
      double now = tach_ranks_now_ms ();

      /* Behind (never reached the step), or silent (stopped or hung
       * inside it: a waiting rank speaks every HEARTBEAT_MS). */
      for (int peer = 1; peer < ranks->size; peer++)
        if (ranks->hb_step[peer] <= step || now - ranks->hb_time[peer] > 3 * HEARTBEAT_MS)
          {
            g_string_append_printf (missing, "%s%d", missing->len > 0 ? ", " : "", peer);
            n_missing++;
          }
    }
  /* mpirun ends the job for a stop as for a lost rank: the ranks that
   * say they are stopping tell the two apart, and the others are the
   * lost ones (tach-ranks-stop.c). */
  if (waited_s < 0)
    {
      g_autoptr(GString) silent = g_string_new (NULL);
      guint n_silent = 0;

      if (tach_ranks_all_stopping (ranks, silent, &n_silent))
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_CANCELLED,
                       _("stopped in step %" PRIu64 "'s %s: mpirun passed a stop on to every"
                         " rank"), step, what);
          return;
        }
      g_string_assign (missing, silent->str);
      n_missing = n_silent;
    }
  /* Of two ranks, the other is the one lost: named, though rank 0 hears
   * no heartbeats. */
  if (waited_s >= 0 && ranks->size == 2 && ranks->rank != 0)
    g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
                 _("rank 0, the other rank, did not finish step %" PRIu64 "'s %s within %.0f s:"
                   " it died, hangs or failed; the run stops with the rows it has"),
                 step, what, waited_s);
  else if (waited_s < 0 && n_missing > 0)
    g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
                 g_dngettext (GETTEXT_PACKAGE,
                              "mpirun is ending the job in step %" PRIu64 "'s %s, and rank %s"
                              " did not answer the others' stop: it exited, was killed or failed"
                              " (its own message, if any, is above); the run stops with the rows"
                              " it has",
                              "mpirun is ending the job in step %" PRIu64 "'s %s, and ranks %s"
                              " did not answer the others' stop: they exited, were killed or"
                              " failed (their own messages, if any, are above); the run stops"
                              " with the rows it has", n_missing),
                 step, what, missing->str);
  else if (waited_s < 0)
    g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
                 _("mpirun is ending the job in step %" PRIu64 "'s %s: a rank exited, was"
                   " killed or failed (mpirun's message names it); the run stops with the"
                   " rows it has"), step, what);
  else if (n_missing > 0)
    g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
                 g_dngettext (GETTEXT_PACKAGE,
                              "rank %s did not reach step %" PRIu64 "'s %s within %.0f s: it"
                              " died, hangs or failed (its own message, if any, is above);"
                              " the run stops with the rows it has",
                              "ranks %s did not reach step %" PRIu64 "'s %s within %.0f s:"
                              " they died, hang or failed (their own messages, if any, are"
                              " above); the run stops with the rows it has", n_missing),
                 missing->str, step, what, waited_s);
  else
    g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
                 _("rank %d waited %.0f s on the other ranks in step %" PRIu64 "'s %s: another"
                   " rank died, hangs or failed (rank 0's message names it, unless it is rank"
                   " 0); the run stops with the rows it has"),
                 ranks->rank, waited_s, step, what);
}

void
tach_ranks_tell_failed (TachRanks *ranks, int status)
{
  for (int peer = 0; peer < ranks->size; peer++)
    {
      MPI_Request req;

      if (peer == ranks->rank)
        continue;
      /* A small message leaves at once; one to a rank gone is dropped. */
      if (MPI_Isend (&status, 0, MPI_INT, peer, TAG_FAILED, ranks->comm, &req) == MPI_SUCCESS)
        MPI_Request_free (&req);
    }
}

/* (The job's communicator carries the notices: the ranks of a sub-job
 * have the same numbers.) */
gboolean
tach_ranks_peer_failed (TachRanks *ranks, int *peer)
{
  MPI_Comm comm = world != NULL ? world->comm : ranks->comm;
  MPI_Status status;
  int flag = 0;

  if (MPI_Iprobe (MPI_ANY_SOURCE, TAG_FAILED, comm, &flag, &status) != MPI_SUCCESS || !flag)
    return FALSE;
  *peer = status.MPI_SOURCE;
  return TRUE;
}

gboolean
tach_ranks_check_peers (TachRanks *ranks, guint64 step, const char *what, GError **error)
{
  int peer = -1;

  if (!tach_ranks_peer_failed (ranks, &peer))
    return TRUE;
  ranks->broken = TRUE;
  g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
               _("rank %d failed (its own message is above) while this rank waited for it in"
                 " step %" PRIu64 "'s %s; the run stops with the rows it has"),
               peer, step, what);
  return FALSE;
}

/* Waits until @poll says done, within the timeout of step @step, taking in
 * heartbeats meanwhile.  *blocked_ms gets the time spent. */
gboolean
tach_ranks_wait_for (TachRanks *ranks, TachRanksPoll poll, gpointer data, const char *what,
                     guint64 step, double *blocked_ms, GError **error)
{
  double limit_s = step == 0 ? timeout_first_s : timeout_later_s;
  double t0 = tach_ranks_now_ms (), t;
  guint spins = 0;

  for (;;)
    {
      int done = poll (data, error);

      if (done < 0)
        {
          ranks->broken = TRUE;
          return FALSE;
        }
      t = tach_ranks_now_ms ();
      if (done)
        break;
      if ((++spins & 63) == 0)
        {
          heartbeat_drain (ranks);
          /* A rank that failed on its own says so as it ends: waiting for
           * it to the deadline (the first step's is minutes) helps no one. */
          if (!tach_ranks_check_peers (ranks, step, what, error))
            {
              if (blocked_ms != NULL)
                *blocked_ms += t - t0;
              return FALSE;
            }
        }
      if (ranks->rank != 0 && t - ranks->hb_sent > HEARTBEAT_MS)
        tach_ranks_heartbeat (ranks, step);
      if (tach_ranks_abandoned ())
        {
          if (blocked_ms != NULL)
            *blocked_ms += t - t0;
          set_timeout_error (ranks, what, step, -1.0, error);
          return FALSE;
        }
      if (t - t0 > limit_s * 1000.0)
        {
          if (blocked_ms != NULL)
            *blocked_ms += t - t0;
          set_timeout_error (ranks, what, step, limit_s, error);
          return FALSE;
        }
      /* Open MPI moves a large message on only inside MPI calls, on both
       * sides: a sleep between tests would throttle the transfer (a 13 MB
       * all-reduce between two ranks took several times longer with 20 us
       * sleeps).  So the wait keeps testing, and only yields the core to
       * whatever else is runnable (two ranks share two cores in CI). */
      if (t - t0 > 1.0)
        g_thread_yield ();
    }
  if (blocked_ms != NULL)
    *blocked_ms += t - t0;
  return TRUE;
}

typedef struct {
  MPI_Request *req;
  const char  *what;
} RequestPoll;

static int
poll_request (gpointer data, GError **error)
{
  RequestPoll *p = data;
  int done = 0;
  int code = MPI_Test (p->req, &done, MPI_STATUS_IGNORE);

  if (code != MPI_SUCCESS)
    {
      tach_ranks_mpi_check (code, p->what, error);
      return -1;
    }
  return done != 0;
}

gboolean
tach_ranks_wait (TachRanks *ranks, MPI_Request *req, const char *what, guint64 step,
                 double *blocked_ms, GError **error)
{
  RequestPoll p = { req, what };

  return tach_ranks_wait_for (ranks, poll_request, &p, what, step, blocked_ms, error);
}

gboolean
tach_ranks_init (int *argc, char ***argv, GError **error)
{
  int provided = 0, size = 1, rank = 0;

  if (initialised)
    return TRUE;
  initialised = TRUE;
  /* Alone (not started by a launcher): no MPI at all, so that a plain
   * `tach-cli run` never pays for it or depends on its daemons. */
  if (g_getenv ("OMPI_COMM_WORLD_SIZE") == NULL && g_getenv ("PMI_SIZE") == NULL
      && g_getenv ("PMIX_RANK") == NULL && g_getenv ("PMI_RANK") == NULL)
    return TRUE;
  if (!MPI_TRY (MPI_Init_thread (argc, argv, MPI_THREAD_SERIALIZED, &provided), error))
    return FALSE;
  if (provided < MPI_THREAD_SERIALIZED)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
                   _("this MPI gives no MPI_THREAD_SERIALIZED support, which Tach's engine"
                     " thread needs: use Open MPI from Debian (openmpi-bin)"));
      MPI_Finalize ();
      return FALSE;
    }
  MPI_Comm_size (MPI_COMM_WORLD, &size);
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  world = g_new0 (TachRanks, 1);
  MPI_Comm_dup (MPI_COMM_WORLD, &world->comm);
  /* Errors come back as codes, which become messages, instead of
   * MPI's abort without one. */
  MPI_Comm_set_errhandler (world->comm, MPI_ERRORS_RETURN);
  world->rank = rank;
  world->size = size;
  world->local_rank = 0;
  world->local_size = 1;
  {
    /* The ranks on this machine: each takes the GPU of its place among
     * them (tach_ranks_local). */
    MPI_Comm local;

    if (MPI_Comm_split_type (world->comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local)
        == MPI_SUCCESS)
      {
        g_autofree int *pids = NULL;
        int pid = (int) getpid ();

        MPI_Comm_rank (local, &world->local_rank);
        MPI_Comm_size (local, &world->local_size);
        /* The ranks on this machine are the job: their CPU time is not
         * "other processes" in a run's machine-busy figure. */
        pids = g_new0 (int, world->local_size);
        if (MPI_Allgather (&pid, 1, MPI_INT, pids, 1, MPI_INT, local) == MPI_SUCCESS)
          tach_machine_set_job_pids (pids, (guint) world->local_size);
        MPI_Comm_free (&local);
      }
  }
  tach_ranks_listen (world);
  tach_presets_set_process_ranks ((guint) size);
  return TRUE;
}

void
tach_ranks_listen (TachRanks *ranks)
{
  ranks->hb_send = MPI_REQUEST_NULL;
  if (ranks->rank != 0)
    return;
  ranks->hb_step = g_new0 (guint64, ranks->size);
  ranks->hb_time = g_new0 (double, ranks->size);
  ranks->hb_buf = g_new0 (guint64, ranks->size);
  ranks->hb_req = g_new (MPI_Request, ranks->size);
  ranks->hb_req[0] = MPI_REQUEST_NULL;
  for (int peer = 1; peer < ranks->size; peer++)
    {
      ranks->hb_time[peer] = tach_ranks_now_ms ();
      heartbeat_post (ranks, peer);
    }
}

TachRanks *
tach_ranks_world (void)
{
  return world;
}

TachRanks *
tach_ranks_steal_world (void)
{
  return g_steal_pointer (&world);
}

/* A blocking collective as a request with a deadline. */
static gboolean
ranks_barrier_wait (TachRanks *ranks, MPI_Request *req, const char *what, GError **error)
{
  return tach_ranks_wait (ranks, req, what, 0, NULL, error);
}

gboolean
tach_ranks_gather (TachRanks *ranks, const double *values, guint n, double *out,
                   GError **error)
{
  MPI_Request req;

  if (ranks == NULL)
    {
      memcpy (out, values, n * sizeof (double));
      return TRUE;
    }
  if (!MPI_TRY (MPI_Igather (values, (int) n, MPI_DOUBLE, out, (int) n, MPI_DOUBLE, 0,
                             ranks->comm, &req), error))
    return FALSE;
  return ranks_barrier_wait (ranks, &req, "gather", error);
}

gboolean
tach_ranks_gather_bytes (TachRanks *ranks, const void *data, gsize n, GPtrArray **all,
                         GError **error)
{
  int len = (int) n;
  g_autofree int *lens = NULL, *displs = NULL;
  g_autofree char *buf = NULL;
  MPI_Request req;
  int total = 0;

  *all = NULL;
  if (ranks == NULL)
    {
      *all = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
      g_ptr_array_add (*all, g_bytes_new (data, n));
      return TRUE;
    }
  if (n > G_MAXINT)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                   _("%zu bytes are more than one MPI gather takes"), (size_t) n);
      return FALSE;
    }
  if (ranks->rank == 0)
    lens = g_new0 (int, ranks->size);
  if (!MPI_TRY (MPI_Igather (&len, 1, MPI_INT, lens, 1, MPI_INT, 0, ranks->comm, &req), error)
      || !ranks_barrier_wait (ranks, &req, "gather", error))
    return FALSE;
  if (ranks->rank == 0)
    {
      displs = g_new0 (int, ranks->size);
      for (int r = 0; r < ranks->size; r++)
        {
          if (lens[r] > G_MAXINT - total)
            {
              g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                           _("the ranks' figures are more than one MPI gather takes"));
              /* The others wait in the gather below: let them fail too. */
              ranks->broken = TRUE;
              return FALSE;
            }
          displs[r] = total;
          total += lens[r];
        }
      buf = g_malloc (MAX (total, 1));
    }
  if (!MPI_TRY (MPI_Igatherv (data, len, MPI_BYTE, buf, lens, displs, MPI_BYTE, 0,
                              ranks->comm, &req), error)
      || !ranks_barrier_wait (ranks, &req, "gather", error))
    return FALSE;
  if (ranks->rank == 0)
    {
      *all = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
      for (int r = 0; r < ranks->size; r++)
        g_ptr_array_add (*all, g_bytes_new (buf + displs[r], (gsize) lens[r]));
    }
  return TRUE;
}

gboolean
tach_ranks_bcast_bytes (TachRanks *ranks, void *buf, int n, const char *what, GError **error)
{
  MPI_Request req;

  return MPI_TRY (MPI_Ibcast (buf, n, MPI_BYTE, 0, ranks->comm, &req), error)
         && ranks_barrier_wait (ranks, &req, what, error);
}

guint
tach_ranks_rank (const TachRanks *ranks)
{
  return ranks != NULL ? (guint) ranks->rank : 0;
}

guint
tach_ranks_size (const TachRanks *ranks)
{
  return ranks != NULL ? (guint) ranks->size : 1;
}

void
tach_ranks_local (const TachRanks *ranks, guint *local_rank, guint *local_size)
{
  *local_rank = ranks != NULL ? (guint) ranks->local_rank : 0;
  *local_size = ranks != NULL ? (guint) ranks->local_size : 1;
}

#else /* !HAVE_MPI */

void
tach_ranks_abandon (void)
{
}

struct _TachRanks {
  int unused;
};

gboolean
tach_ranks_have_mpi (void)
{
  return FALSE;
}

/* The size of the job a launcher started this process in, from the
 * variables Open MPI, MPICH and PMIx set; 1 when none. */
static int
launcher_size (void)
{
  const char *names[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS" };

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      const char *value = g_getenv (names[i]);

      if (value != NULL && atoi (value) > 1)
        return atoi (value);
    }
  return 1;
}

gboolean
tach_ranks_init (int *argc, char ***argv, GError **error)
{
  int size = launcher_size ();

  (void) argc;
  (void) argv;
  if (size > 1)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                   _("started as one of %d ranks, but this Tach was built without MPI, so"
                     " each rank would train alone: install libopenmpi-dev (tools/install-deps.sh)"
                     " and rebuild with meson setup -Dmpi=enabled, or run without mpirun"),
                   size);
      return FALSE;
    }
  return TRUE;
}

TachRanks *
tach_ranks_world (void)
{
  return NULL;
}

guint
tach_ranks_rank (const TachRanks *ranks)
{
  (void) ranks;
  return 0;
}

guint
tach_ranks_size (const TachRanks *ranks)
{
  (void) ranks;
  return 1;
}

gboolean
tach_ranks_gather (TachRanks *ranks, const double *values, guint n, double *out,
                   GError **error)
{
  (void) ranks;
  (void) error;
  memcpy (out, values, n * sizeof (double));
  return TRUE;
}

gboolean
tach_ranks_gather_bytes (TachRanks *ranks, const void *data, gsize n, GPtrArray **all,
                         GError **error)
{
  (void) ranks;
  (void) error;
  *all = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  g_ptr_array_add (*all, g_bytes_new (data, n));
  return TRUE;
}

void
tach_ranks_local (const TachRanks *ranks, guint *local_rank, guint *local_size)
{
  (void) ranks;
  *local_rank = 0;
  *local_size = 1;
}

#endif /* HAVE_MPI */

guint
tach_ranks_world_rank (void)
{
  return tach_ranks_rank (tach_ranks_world ());
}

guint
tach_ranks_world_size (void)
{
  return tach_ranks_size (tach_ranks_world ());
}
