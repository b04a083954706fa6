/* tach-grad-device.c: the gradient reducer's device path: a backend with
 * collectives (TachBackendOps' coll_* slots; the CUDA backend's NCCL)
 * sums its own device buffers, bucket by bucket, as the grad-sync knob
 * says (tach-ranks.h):
 *   per-tensor  each tensor's all-reduce on the compute stream, in order,
 *               after backward: each waited by what follows it
 *   fused       one all-reduce of the flat buffer on the compute stream
 *   overlap     each bucket, as backward completes it, on the side stream
 *               after an event of the compute stream; the compute stream
 *               waits for the last before the update
 * with grad-compress's casts and the division by the ranks beside each.
 *
 * Nothing here blocks the host on the device but the watchdog: at each
 * step's update the host waits, polling with the ranks' deadline, for the
 * previous step's collectives, and tach_grad_reducer_settle waits for
 * this step's before the runner blocks on the device; so a lost rank ends
 * the run with a message naming it instead of a hang in NCCL, and the
 * communicator is aborted.
 *
 * Timing from the device's events (a ring of DEVICE_RING steps, read when
 * they have passed): a step's arrival is its start to its first bucket's
 * launch; its exposed communication the time the compute stream waited
 * for the collectives (per-tensor and fused: their whole time, overlap:
 * from the update's start to the last bucket's end), less the widening
 * that ends it, which is packing; each all-reduce's flight (the trace)
 * its start and end on the device's clock, from the step's start.  Under
 * gradient accumulation with accumulate-sync=every a step synchronises
 * after each micro-batch, each with events of its own, and its figures
 * add them all up.
 *
 * Threads: the engine thread.
 */
#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-grad-reducer-private.h"

#ifdef HAVE_MPI

static gboolean
have_collectives (const TachBackend *be)
{
  const TachBackendOps *ops = be->ops;

  return ops->coll_new_id != NULL && ops->coll_join != NULL && ops->coll_leave != NULL
         && ops->coll_allreduce != NULL && ops->coll_pack != NULL && ops->coll_unpack != NULL
         && ops->side_record != NULL && ops->side_wait != NULL && ops->event_query != NULL
         && ops->stream_wait != NULL;
}

gboolean
tach_grad_device_join (TachGradReducer *self)
{
  TachBackend *be = self->be;
  guint8 id[TACH_COLL_ID_BYTES] = { 0 };
  GError *error = NULL;

  if (!have_collectives (be))
    {
      tach_backend_fail (be, TACH_ERROR_UNSUPPORTED,
                         _("data-parallel ranks on %s need NCCL, which this build lacks: install"
                           " NCCL's header (nccl.h: the CUDA toolkit's, or libnccl-dev) and"
                           " rebuild with meson setup -Dcuda=enabled, or use --device cpu"),
                         be->device->id);
      return FALSE;
    }
  /* NCCL's id from rank 0, over MPI, to every rank (the bootstrap). */
  if (tach_ranks_rank (self->ranks) == 0)
    be->ops->coll_new_id (be, id);
  /* A rank 0 that failed still takes part, with a zero id: every rank's
   * join then fails with NCCL's message rather than waiting. */
  if (!tach_ranks_bcast_bytes (self->ranks, id, sizeof id, "NCCL bootstrap", &error))
    {
      tach_backend_set_error (be, error);
      return FALSE;
    }
  if (!tach_backend_ok (be))
    return FALSE;
  be->ops->coll_join (be, id, tach_ranks_rank (self->ranks), tach_ranks_size (self->ranks));
  return tach_backend_ok (be);
}

static TachEvent **
new_events (TachBackend *be, guint n)
{
  TachEvent **events = g_new0 (TachEvent *, MAX (n, 1));

  for (guint i = 0; i < n; i++)
    events[i] = tach_event_new (be);
  return events;
}

static void
free_events (TachBackend *be, TachEvent **events, guint n)
{
  if (events == NULL)
    return;
  for (guint i = 0; i < n; i++)
    tach_event_free (be, events[i]);
  g_free (events);
}

void
tach_grad_device_layout (TachGradReducer *self)
{
  TachBackend *be = self->be;
  guint n;

  self->syncs = be->accumulate > 1 && be->accumulate_sync == TACH_ACCUMULATE_SYNC_EVERY
                ? be->accumulate : 1;
  n = self->buckets->len * self->syncs;
  for (guint k = 0; k < DEVICE_RING; k++)
    {
      DeviceSlot *slot = &self->slots[k];

      slot->step = G_MAXUINT64;
      slot->begin = tach_event_new (be);
      slot->sync = new_events (be, self->syncs);
      slot->after = new_events (be, self->syncs);
      slot->ready = new_events (be, n);
      slot->t0 = new_events (be, n);
      slot->t1 = new_events (be, n);
      slot->t2 = new_events (be, n);
      slot->t3 = new_events (be, n);
    }
}

static DeviceSlot *
slot_of (TachGradReducer *self, guint64 step)
{
  return &self->slots[step % DEVICE_RING];
}

static double
elapsed (TachGradReducer *self, TachEvent *a, TachEvent *b)
{
  return tach_event_elapsed_ms (self->be, a, b);
}

void
tach_grad_device_read (TachGradReducer *self, guint64 step)
{
  DeviceSlot *slot = slot_of (self, step);
  TachGradStepStats *st;
  guint n, last;
  double pack = 0.0;

  if (!slot->pending || slot->step != step || self->buckets == NULL || self->buckets->len == 0
      || slot->n_syncs == 0)
    return;
  slot->pending = FALSE;
  st = &g_array_index (self->steps, TachGradStepStats, step);
  /* After an abort, a step whose collectives had not ended is not waited
   * for (its events may never pass, and this runs under the run's lock):
   * its figures are not known. */
  if (self->aborted && !self->be->ops->event_query (self->be, slot->after[slot->n_syncs - 1]))
    {
      st->arrive_ms = st->comm_ms = st->pack_ms = NAN;
      return;
    }
  n = self->buckets->len;
  st->arrive_ms = elapsed (self, slot->begin, self->mode == TACH_GRAD_SYNC_OVERLAP
                                              ? slot->ready[0] : slot->sync[0]);
  st->comm_ms = st->pack_ms = 0.0;
  for (guint s = 0; s < slot->n_syncs; s++)
    {
      last = s * n + n - 1;
      pack = 0.0;
      for (guint i = 0; i < n; i++)
        {
          const Bucket *b = &g_array_index (self->buckets, Bucket, i);
          size_t wire = self->compress != TACH_GRAD_COMPRESS_NONE ? sizeof (guint16)
                                                                  : sizeof (float);
          guint e = s * n + i;
          TachGradFlight f = {
            .step = step, .bucket = i,
            .start_ms = elapsed (self, slot->begin, slot->t1[e]),
            .dur_ms = elapsed (self, slot->t1[e], slot->t2[e]),
            .bytes = (double) (b->end - b->start) * wire,
          };

          pack += elapsed (self, slot->t0[e], slot->t1[e])
                  + elapsed (self, slot->t2[e], slot->t3[e]);
          if (self->mode != TACH_GRAD_SYNC_OVERLAP)
            st->comm_ms += f.dur_ms;
          tach_grad_reducer_add_flight (self, &f);
        }
      if (self->mode != TACH_GRAD_SYNC_OVERLAP)
        st->pack_ms += pack;
      else
        {
          /* What the compute stream waited; its last widening is packing. */
          double exposed = MAX (0.0, elapsed (self, slot->sync[s], slot->after[s]));
          double tail = MIN (exposed, MAX (0.0, elapsed (self, slot->t2[last], slot->t3[last])));

          st->comm_ms += exposed - tail;
          st->pack_ms += tail;
        }
    }
}

void
tach_grad_device_begin_step (TachGradReducer *self)
{
  DeviceSlot *slot = slot_of (self, self->step);

  if (self->buckets == NULL)
    return;
  /* The step that used this slot passed long ago (the watchdog keeps the
   * host within a step of the device): its figures are read first. */
  if (slot->pending)
    tach_grad_device_read (self, slot->step);
  slot->step = self->step;
  slot->pending = FALSE;
  slot->n_syncs = 0;
  tach_event_record (self->be, slot->begin);
}

void
tach_grad_device_launch (TachGradReducer *self, guint i, float *grad)
{
  TachBackend *be = self->be;
  const TachBackendOps *ops = be->ops;
  DeviceSlot *slot = slot_of (self, self->step);
  Bucket *b = &g_array_index (self->buckets, Bucket, i);
  guint e = MIN (slot->n_syncs, self->syncs - 1) * self->buckets->len + i;
  gboolean side = self->mode == TACH_GRAD_SYNC_OVERLAP;
  size_t count = b->end - b->start;
  float *g = grad + b->start;
  guint16 *w = self->wire != NULL ? self->wire + b->start : NULL;
  TachGradStepStats *st = tach_grad_reducer_current (self);

  if (!tach_backend_ok (be))
    return;
#define RECORD(ev) (side ? ops->side_record (be, (ev)) : tach_event_record (be, (ev)))
  if (side)
    {
      /* Its gradients are written on the compute stream. */
      tach_event_record (be, slot->ready[e]);
      ops->side_wait (be, slot->ready[e]);
    }
  RECORD (slot->t0[e]);
  if (w != NULL)
    ops->coll_pack (be, g, w, count, self->compress, side);
  RECORD (slot->t1[e]);
  if (w != NULL)
    ops->coll_allreduce (be, w, count, self->compress, side);
  else
    ops->coll_allreduce (be, g, count, TACH_GRAD_COMPRESS_NONE, side);
  RECORD (slot->t2[e]);
  ops->coll_unpack (be, w, g, count, self->compress, (float) tach_ranks_size (self->ranks), side);
  RECORD (slot->t3[e]);
#undef RECORD
  b->launched = TRUE;
  st->collectives++;
  st->bytes += (double) count * (w != NULL ? sizeof (guint16) : sizeof (float));
}

typedef struct {
  TachBackend *be;
  TachEvent   *ev;
} EventPoll;

static int
poll_event (gpointer data, GError **error)
{
  EventPoll *p = data;
  gboolean done = p->be->ops->event_query (p->be, p->ev);

  if (!tach_backend_take_error (p->be, error))
    return -1;
  return done ? 1 : 0;
}

/* Waits for the collectives of step @step (its "after" event) within the
 * ranks' deadline; on a timeout the communicator is aborted, so that
 * nothing waits on the lost rank. */
static gboolean
wait_step (TachGradReducer *self, guint64 step, GError **error)
{
  DeviceSlot *slot = slot_of (self, step);
  EventPoll p = { self->be, NULL };

  if (slot->step != step || !slot->pending || slot->n_syncs == 0)
    return TRUE;
  p.ev = slot->after[slot->n_syncs - 1];
  if (tach_ranks_wait_for (self->ranks, poll_event, &p, "gradient all-reduce", step, NULL, error))
    return TRUE;
  tach_grad_device_abort (self);
  return FALSE;
}

void
tach_grad_device_reduce (TachGradReducer *self, float *grad)
{
  TachBackend *be = self->be;
  DeviceSlot *slot = slot_of (self, self->step);
  guint s = MIN (slot->n_syncs, self->syncs - 1), n = self->buckets->len;
  GError *error = NULL;

  if (n == 0)
    return;
  tach_event_record (be, slot->sync[s]);
  for (guint i = self->next_launch; i < n; i++)
    tach_grad_device_launch (self, i, grad);
  self->next_launch = n;
  if (self->mode == TACH_GRAD_SYNC_OVERLAP)
    /* The side stream runs the buckets in order: its last is the last. */
    tach_backend_stream_wait (be, slot->t3[s * n + n - 1]);
  tach_event_record (be, slot->after[s]);
  if (!tach_backend_ok (be))
    return;
  slot->n_syncs = s + 1;
  slot->pending = TRUE;
  self->unsettled = TRUE;
  /* The watchdog: the host stays within a step of the collectives. */
  if (self->step > 0 && !wait_step (self, self->step - 1, &error))
    tach_backend_set_error (be, error);
}

gboolean
tach_grad_device_settle (TachGradReducer *self, GError **error)
{
  if (self->buckets == NULL || !self->joined)
    return TRUE;
  if (!wait_step (self, self->step, error))
    return FALSE;
  self->unsettled = FALSE;
  return TRUE;
}

void
tach_grad_device_abort (TachGradReducer *self)
{
  if (self->joined)
    self->be->ops->coll_leave (self->be, TRUE);
  self->joined = FALSE;
  self->aborted = TRUE;
}

void
tach_grad_device_clear (TachGradReducer *self)
{
  TachBackend *be = self->be;
  guint n = self->buckets != NULL ? self->buckets->len * self->syncs : 0;

  /* A communicator is destroyed (which waits for its collectives) only
   * when all of them were waited for; otherwise, and after any failure
   * (whose error the runner may have taken already), aborted. */
  if (self->joined)
    be->ops->coll_leave (be, !tach_backend_ok (be) || self->ranks->broken || self->unsettled);
  self->joined = FALSE;
  for (guint k = 0; k < DEVICE_RING; k++)
    {
      DeviceSlot *slot = &self->slots[k];

      tach_event_free (be, slot->begin);
      free_events (be, slot->sync, self->syncs);
      free_events (be, slot->after, self->syncs);
      free_events (be, slot->ready, n);
      free_events (be, slot->t0, n);
      free_events (be, slot->t1, n);
      free_events (be, slot->t2, n);
      free_events (be, slot->t3, n);
    }
}

#endif /* HAVE_MPI */
