/* tach-async-coll.c: the asynchronous test double's collectives
 * (tach-async-device.h): a communicator of one rank, on the side stream. */
#include "tach-async-device-private.h"

/* -------------------------------------------------------- collectives */

/* A communicator of one rank: the in-place sum over the ranks leaves the
 * buffer as it is.  What the double checks is the order: each op is
 * queued on the compute stream or the side one, behind what is queued
 * there, and takes the simulated collective time. */
static double collective_us = 0.0;
/* tach_async_device_hang_collective(): which all-reduce never ends (0:
 * none), and how many were queued since it was set. */
static guint hang_at, allreduces;

void
tach_async_device_set_collective_cost (double us)
{
  collective_us = us;
}

void
tach_async_device_hang_collective (guint n)
{
  hang_at = n;
  allreduces = 0;
}

typedef struct {
  AsyncJob job;
  const guint16 *wire;
  float   *grad;
  size_t   n;
  float    divisor;
  gboolean sleep;
  AsyncBackend *hang;       /* never ends, until its communicator is aborted */
} CollJob;

static void
run_coll (TachBackend *cpu, AsyncJob *job)
{
  CollJob *j = (CollJob *) job;

  if (j->hang != NULL)
    {
      /* As an NCCL kernel waiting for a peer that never comes: only
       * ncclCommAbort ends it. */
      g_mutex_lock (&j->hang->lock);
      while (!j->hang->aborted)
        g_cond_wait (&j->hang->cond, &j->hang->lock);
      g_mutex_unlock (&j->hang->lock);
      return;
    }
  if (j->sleep && collective_us > 0.0)
    g_usleep ((gulong) collective_us);
  for (size_t i = 0; j->grad != NULL && i < j->n; i++)
    j->grad[i] /= j->divisor;
}

static AsyncStream *
stream_for (TachBackend *be, gboolean side)
{
  return side ? &ASYNC (be)->side : &ASYNC (be)->compute;
}

static void
async_coll_new_id (TachBackend *be, guint8 *id)
{
  for (guint i = 0; i < TACH_COLL_ID_BYTES; i++)
    id[i] = (guint8) i;
}

static void
async_coll_join (TachBackend *be, const guint8 *id, guint rank, guint size)
{
  for (guint i = 0; i < TACH_COLL_ID_BYTES; i++)
    if (id[i] != (guint8) i)
      {
        tach_backend_fail (be, TACH_ERROR_LIBRARY, "the test double got another id");
        return;
      }
  if (rank != 0 || size != 1)
    {
      tach_backend_fail (be, TACH_ERROR_UNSUPPORTED, "the test double sums over one rank only");
      return;
    }
  ASYNC (be)->joined = TRUE;
  ASYNC (be)->aborted = FALSE;
  tach_backend_note_algorithm (be, "collectives", "test double, rank 0 of 1");
}

/* As NCCL: an abort ends the collectives in flight; a destroy waits for
 * them (here, for everything queued). */
static void
async_coll_leave (TachBackend *be, gboolean abort)
{
  AsyncBackend *ab = ASYNC (be);

  ab->joined = FALSE;
  if (abort)
    {
      g_mutex_lock (&ab->lock);
      ab->aborted = TRUE;
      g_cond_broadcast (&ab->cond);
      g_mutex_unlock (&ab->lock);
    }
  else
    async_synchronize (be);
}

static void
async_coll_allreduce (TachBackend *be, void *buf, size_t count, TachGradCompress wire,
                      gboolean side)
{
  CollJob *j = JOB_NEW (CollJob);

  if (!ASYNC (be)->joined)
    {
      g_free (j);
      tach_backend_fail (be, TACH_ERROR_LIBRARY, "an all-reduce before coll_join");
      return;
    }
  j->sleep = TRUE;
  if (hang_at > 0 && ++allreduces == hang_at)
    {
      j->hang = ASYNC (be);
      async_fail_next_op ();
    }
  async_submit (be, stream_for (be, side), &j->job, run_coll);
}

static void
async_coll_pack (TachBackend *be, const float *grad, guint16 *wire, size_t n,
                 TachGradCompress compress, gboolean side)
{
  tach_backend_fail (be, TACH_ERROR_UNSUPPORTED, "the test double carries fp32 gradients only");
}

static void
async_coll_unpack (TachBackend *be, const guint16 *wire, float *grad, size_t n,
                   TachGradCompress compress, float divisor, gboolean side)
{
  CollJob *j = JOB_NEW (CollJob);

  if (wire != NULL)
    {
      g_free (j);
      async_coll_pack (be, NULL, NULL, 0, compress, side);
      return;
    }
  j->grad = grad;
  j->n = n;
  j->divisor = divisor;
  async_submit (be, stream_for (be, side), &j->job, run_coll);
}

static void
async_side_record (TachBackend *be, TachEvent *ev)
{
  async_queue_event_job (be, &ASYNC (be)->side, ev, TRUE);
}

static void
async_side_wait (TachBackend *be, TachEvent *ev)
{
  async_queue_event_job (be, &ASYNC (be)->side, ev, FALSE);
}

static gboolean
async_event_query (TachBackend *be, TachEvent *event)
{
  AsyncBackend *ab = ASYNC (be);
  AsyncEvent *ev = (AsyncEvent *) event;
  gboolean done;

  be->api_calls++;
  g_mutex_lock (&ab->lock);
  done = ev->reached >= ev->recorded;
  g_mutex_unlock (&ab->lock);
  return done;
}

void
async_fill_coll_ops (TachBackendOps *ops)
{
  ops->coll_new_id = async_coll_new_id;
  ops->coll_join = async_coll_join;
  ops->coll_leave = async_coll_leave;
  ops->coll_allreduce = async_coll_allreduce;
  ops->coll_pack = async_coll_pack;
  ops->coll_unpack = async_coll_unpack;
  ops->side_record = async_side_record;
  ops->side_wait = async_side_wait;
  ops->event_query = async_event_query;
}
