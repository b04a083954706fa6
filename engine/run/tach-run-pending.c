/* tach-run-pending.c: a run's steps between their execution and their
 * samples' publication (see tach-run.c's top for the scheme).
 *
 * A step executed but not synced waits as a TachRunPending record; its device
 * times are read when due (tach-run-timing.h), and with sync=end the timed
 * ones move in batches to a held sample store.  At a sync point the losses
 * come back through a staging buffer, and the held and pending steps join
 * the run's store under its lock, with one notification to the front end.
 *
 * Threads: the engine thread; the notification runs on the run's context.
 */
#include <math.h>

#include "tach-config-private.h"
#include "tach-run-thread-private.h"

/* Timed pending steps move to the held store in batches of at least this
 * many (at most that many records, 40 KiB, wait as TachRunPending). */
static guint hold_min = 1024;

guint
tach_run_set_hold_min (guint steps)
{
  guint previous = hold_min;

  hold_min = MAX (steps, 1);
  return previous;
}
/* ------------------------------------------------------------ hand-off */

static gboolean
notify_dispatch (gpointer data)
{
  TachRun *run = data;

  /* Cleared before the callback drains, so samples published while it
   * runs schedule a new call instead of being stranded. */
  g_atomic_int_set (&run->notify_pending, 0);
  /* A call queued before the wait (the thread's last, scheduled after a
   * callback had already seen the run end) comes after the front end has
   * let go of its data: it is dropped. */
  if (g_atomic_int_get (&run->notify_closed))
    return G_SOURCE_REMOVE;
  run->notify (run, run->user_data);
  return G_SOURCE_REMOVE;
}

/* The run's thread: schedules a notification unless one is pending. */
void
tach_run_schedule_notify (TachRun *run)
{
  GSource *source;

  if (run->notify == NULL || !g_atomic_int_compare_and_exchange (&run->notify_pending, 0, 1))
    return;
  source = g_idle_source_new ();
  g_source_set_priority (source, G_PRIORITY_DEFAULT);
  g_source_set_static_name (source, "[tach] run notify");
  g_source_set_callback (source, notify_dispatch, tach_run_ref (run),
                         (GDestroyNotify) tach_run_unref);
  g_source_attach (source, run->context);
  g_source_unref (source);
}

/* The steps held or pending, from the first held. */
static guint64
thread_first_waiting (const TachRunThread *e)
{
  return e->pending_first - tach_sample_store_get_length (e->held);
}

/* Notes the bytes kept for the steps not yet synced. */
void
tach_run_pending_note_bytes (TachRunThread *e)
{
  e->pending_peak = MAX (e->pending_peak,
                        e->held_bytes + e->pending->len * sizeof (TachRunPending));
}

/* The pending step @i's sample, with @sync_ms. */
static void
thread_sample (const TachRunThread *e, guint i, double sync_ms, TachSample *out)
{
  const TachRunPending *p = &g_array_index (e->pending, TachRunPending, i);
  guint64 step = e->pending_first + i;
  /* On the host clock the runner timed each step as it ran. */
  gboolean timed = e->timer.host_clock || i < e->n_timed;
  TachGradStepStats st;

  *out = (TachSample) {
    .step = step,
    /* The step captured pays for the capture: warm-up, whatever the
     * warm-up count. */
    .warmup = step < tach_config_get_warmup (&e->run->config) || step == e->capture_step,
    .wall_s = p->wall_s,
    .step_ms = p->step_ms,
    .feed_ms = p->feed_ms,
    .compute_ms = timed ? p->compute_ms : NAN,
    .sync_ms = sync_ms,
    .host_ms = p->host_ms,
    .loss = p->loss,
    .accuracy = p->accuracy,
    .device_step_ms = timed ? p->device_step_ms : NAN,
    .api_calls = p->api_calls,
    .comm_ms = NAN,
    .pack_ms = NAN,
    .imbalance_ms = NAN,
    .rank = e->be != NULL ? e->be->rank : 0,
  };
  if (e->reducer != NULL && tach_grad_reducer_step_stats (e->reducer, step, &st))
    {
      /* The polls between layers are communication the step paid for. */
      out->comm_ms = st.comm_ms + st.poll_ms;
      out->pack_ms = st.pack_ms;
      /* On a device the step's events enclose the collectives queued on
       * its compute stream: compute is the rest. */
      if (!e->timer.host_clock && timed)
        out->compute_ms = MAX (0.0, out->compute_ms - out->comm_ms - out->pack_ms);
    }
}

/* Between steps (every pending step has ended): moves the timed pending
 * steps to the held store once there are hold_min of them. */
void
tach_run_pending_hold (TachRunThread *e)
{
  guint n = e->timer.host_clock ? e->pending->len : e->n_timed;

  if (n < hold_min)
    return;
  for (guint i = 0; i < n; i++)
    {
      TachSample s;

      thread_sample (e, i, 0.0, &s);
      tach_sample_store_append (e->held, &s);
    }
  g_array_remove_range (e->pending, 0, n);
  e->pending_first += n;
  e->n_timed = e->n_timed > n ? e->n_timed - n : 0;
  e->held_bytes = tach_sample_store_get_bytes (e->held);
}

/* Reads the device times of the pending steps up to index @upto (see
 * tach-run-timing.h), those not read yet, in order. */
void
tach_run_pending_time (TachRunThread *e, guint upto)
{
  for (; e->n_timed <= upto && e->n_timed < e->pending->len; e->n_timed++)
    {
      TachRunPending *p = &g_array_index (e->pending, TachRunPending, e->n_timed);
      TachStepMarks marks;
      double compute_ms, device_step_ms;

      if (e->timer.host_clock)
        continue;   /* the runner's clock timed it already */
      tach_step_marks_for (e->pending_first + e->n_timed, &marks);
      tach_step_timer_read (&e->timer, &marks, &compute_ms, &device_step_ms);
      p->compute_ms = (float) compute_ms;
      p->device_step_ms = (float) device_step_ms;
    }
}

/* A step's loss (or accuracy) from its @k micro-batches' in @values: the
 * mean of each run of @k, into the first @n floats (in place: run j
 * starts at j k >= j). */
static void
mean_of_micro (float *values, guint64 n, guint k)
{
  for (guint64 j = 0; k > 1 && j < n; j++)
    {
      double sum = 0.0;

      for (guint q = 0; q < k; q++)
        sum += values[j * k + q];
      values[j] = (float) (sum / k);
    }
}

/* Synchronises and reads the waiting steps' losses back, a staging
 * buffer at a time (one download each for a sync every N steps), into the
 * held store and the pending records.  Returns the time spent, in ms. */
gboolean
tach_run_pending_sync (TachRunThread *e, double *sync_ms)
{
  gint64 t = tach_now_ns ();
  guint64 first = thread_first_waiting (e);
  guint64 count = e->pending_first + e->pending->len - first;
  guint64 held = tach_sample_store_get_length (e->held);
  guint micro = MAX (e->be->accumulate, 1);

  *sync_ms = 0.0;
  if (count == 0)
    return tach_backend_ok (e->be);

  tach_backend_synchronize (e->be);
  for (guint64 done = 0; e->loss_dev != NULL && done < count && tach_backend_ok (e->be);)
    {
      /* A piece of consecutive slots: up to the staging size and the end
       * of the ring. */
      guint64 slot = (first + done) % e->loss_slots;
      guint64 n = MIN (MIN (count - done, e->loss_staging), e->loss_slots - slot);

      tach_backend_download (e->be, e->loss_host, e->loss_dev + slot * micro,
                             n * micro * sizeof (float));
      if (e->acc_dev != NULL)
        tach_backend_download (e->be, e->acc_host, e->acc_dev + slot * micro,
                               n * micro * sizeof (float));
      if (!tach_backend_ok (e->be))
        break;
      mean_of_micro (e->loss_host, n, micro);
      if (e->acc_dev != NULL)
        mean_of_micro (e->acc_host, n, micro);
      for (guint64 j = 0; j < n; j++)
        {
          guint64 k = done + j;

          if (k < held)
            continue;
          g_array_index (e->pending, TachRunPending, k - held).loss = e->loss_host[j];
          if (e->acc_dev != NULL)
            g_array_index (e->pending, TachRunPending, k - held).accuracy = e->acc_host[j];
        }
      if (done < held)
        tach_sample_store_set_losses (e->held, (guint) done, (guint) MIN (n, held - done),
                                      e->loss_host, e->acc_dev != NULL ? e->acc_host : NULL);
      done += n;
    }
  *sync_ms = (double) (tach_now_ns () - t) / 1e6;
  if (!tach_backend_ok (e->be))
    return FALSE;

  if (e->pending->len > 0)
    tach_run_pending_time (e, e->pending->len - 1);
  return tach_backend_ok (e->be);
}

/* Publishes the waiting steps' samples; the last one synced for
 * @last_sync_ms.  The caller tells the main thread (schedule_notify) when
 * it should look. */
void
tach_run_pending_publish (TachRunThread *e, double last_sync_ms)
{
  TachRun *run = e->run;

  g_mutex_lock (&run->lock);
  tach_sample_store_move (run->samples, e->held);
  for (guint i = 0; i < e->pending->len; i++)
    {
      TachSample s;

      thread_sample (e, i, i + 1 == e->pending->len ? last_sync_ms : 0.0, &s);
      tach_sample_store_append (run->samples, &s);
    }
  g_mutex_unlock (&run->lock);
  g_array_set_size (e->pending, 0);
  e->n_timed = 0;
  e->held_bytes = 0;
}

/* After a failure: publishes the steps that ended before it (their times
 * were measured; losses never read back stay missing), not the one that
 * failed. */
void
tach_run_pending_publish_ended (TachRunThread *e)
{
  while (e->pending->len > 0
         && g_array_index (e->pending, TachRunPending, e->pending->len - 1).step_ms <= 0.0f)
    g_array_set_size (e->pending, e->pending->len - 1);
  e->n_timed = MIN (e->n_timed, e->pending->len);
  tach_run_pending_publish (e, 0.0);
  tach_run_schedule_notify (e->run);
}
