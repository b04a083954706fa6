/* tach-run.c: making a run, its engine thread and the sample hand-off (the
 * steps not yet published are tach-run-pending.c's; the run's id, its
 * references and its accessors, tach-run-query.c's).
 *
 * The engine thread ("tach-engine") creates the backend and the model, so
 * that every backend call happens on that one thread.  Each step's loss
 * (and accuracy) is written by the model into a device buffer that holds
 * one float per step since the last sync point; at each sync point the runner synchronises, reads the
 * pending losses back in one download and publishes those steps' samples.
 * So the loss curve is complete whatever the sync cadence, while the cost
 * of syncing is paid exactly as the mode says.
 *
 * Step times: on an asynchronous device from the device timeline, the
 * interval between consecutive end-of-step events, and the compute from
 * events around the model step (tach-run-timing.h).  They are read only at
 * sync points (or, when more steps are pending than the event ring holds,
 * the oldest one, which finished long ago), so reading them never adds a
 * synchronisation of its own.  The last warm-up step is a sync point, so
 * that the run's end-to-end rate (measured steps over the wall time from
 * there to the final synchronisation) counts no warm-up work.
 *
 * launch=graph: the first steps run eagerly (lazy initialisation, library
 * heuristics, allocations), then one step's compute is captured as a graph
 * (tach-model.h says what a model keeps out of it) and every later step
 * prepares its batch, replays the graph and queues a device copy of the
 * graph's fixed loss slot to the step's own, with no host wait.  The graph
 * ends by adding 1 to a device step offset that the counter-taking ops add
 * to the counter captured (TachBackend.step_offset), so each replay draws
 * its own dropout masks and tokens.  The events bracket the same work in
 * both modes: the step's feeding, its compute (launch or ops) and copies.
 * A capture that fails fails the run: there is no silent eager fallback.
 *
 * Gradient accumulation: a step is one update, of --accumulate
 * micro-batches of --batch each; the runner queues the model's step for
 * each micro-batch (TachBackend.micro says which), the parameters keep
 * the sum and update after the last (models/tach-params.c), each
 * micro-batch writes its loss to a slot of its own and a step's loss is
 * their mean.  So steps, their times and rates count updates, and a
 * step's items are all its micro-batches'.  Not under launch=graph
 * (validation refuses it): the graph would be one micro-batch's.
 *
 * Samples reach the main thread through a locked buffer; at most one
 * notification is pending on the target GMainContext at any time: the
 * engine sets an atomic flag when it schedules one, and the callback clears
 * it before draining, as libuv's uv_async_send coalesces wake-ups.
 */
#include <math.h>
#include <string.h>

#include <inttypes.h>

#include <glib/gi18n-lib.h>

#include "tach-config-private.h"
#include "tach-error-private.h"
#include "tach-model.h"
#include "tach-run-thread-private.h"

/* How often a run between sync points tells its front end it progresses. */
#define PROGRESS_NS (G_GINT64_CONSTANT (100) * 1000 * 1000)
/* The least time between two notifications of published samples, but for
 * the end of warm-up, the last step and a stop.  A step that syncs every
 * time (generation: 5-10 µs a token) published and woke the main thread at
 * every step: some 100 000 wake-ups a second, a third thread on two
 * processors beside the engine thread and its helper, which made the
 * rate of one build vary run to run by half (58-95 k tokens/s idle on the
 * AMD EPYC Zen 4).  A window redraws at most about 60 times a second. */
#define NOTIFY_NS (G_GINT64_CONSTANT (10) * 1000 * 1000)

/* The losses of a sync are read back this many at a time (1 MiB of host
 * staging with the accuracy), not into host copies of every slot. */
#define LOSS_PIECE 131072

TachRun *
tach_run_new (const TachConfig *config, GError **error)
{
  g_autoptr(TachDevice) device = NULL;
  TachRun *run;

  g_return_val_if_fail (config != NULL, NULL);

  device = tach_device_find (config->device, error);
  if (device == NULL)
    return NULL;
  if (!tach_config_validate_on (config, device, error))
    return NULL;
  if (!tach_run_check_ranks (config, &device, error))
    return NULL;

  run = g_new0 (TachRun, 1);
  run->ref_count = 1;
  run->id = tach_run_next_id ();
  tach_config_copy (&run->config, config);
  run->device = g_steal_pointer (&device);
  g_mutex_init (&run->lock);
  g_cond_init (&run->cond);
  run->samples = tach_sample_store_new ();
  run->state = TACH_RUN_STATE_READY;
  run->test_accuracy = NAN;
  run->eval_s = NAN;
  {
    const char *kind = NULL;

    tach_config_get_data_source (config, &kind, &run->data_path);
    run->data_kind = g_strdup (kind);
  }
  run->machine_busy = NAN;
  run->threads_asked = run->threads_fewest = run->threads_fewer_share = NAN;
  for (guint i = 0; i < G_N_ELEMENTS (run->memory_parts); i++)
    run->memory_parts[i] = NAN;
  for (guint i = 0; i < G_N_ELEMENTS (run->held); i++)
    run->held[i] = NAN;
  run->weak_scaling = run->strong_scaling = (TachInterval) { NAN, NAN, NAN };
  return run;
}

/* ------------------------------------------------------------- engine */

static void
thread_clear (TachRunThread *e)
{
  if (e->be != NULL)
    {
      tach_graph_free (e->be, e->graph);
      e->be->step_offset = NULL;
      tach_backend_dealloc (e->be, e->step_offset);
      tach_backend_dealloc (e->be, e->loss_fixed);
      tach_backend_dealloc (e->be, e->acc_fixed);
      tach_step_timer_clear (&e->timer);
      tach_backend_dealloc (e->be, e->loss_dev);
      tach_backend_dealloc (e->be, e->acc_dev);
    }
  if (e->model != NULL)
    e->klass->free (e->model);
  g_clear_pointer (&e->reducer, tach_grad_reducer_free);
  g_clear_pointer (&e->vote, tach_ranks_vote_free);
  tach_backend_free (e->be);
  g_free (e->loss_host);
  g_free (e->acc_host);
  tach_sample_store_free (e->held);
  if (e->pending != NULL)
    g_array_unref (e->pending);
}

static gboolean
thread_setup (TachRunThread *e, guint64 total, GError **error)
{
  TachRun *run = e->run;
  const TachConfig *config = &run->config;
  double peak;

  e->be = tach_backend_open (run->device, config->threads, config->precision, error);
  if (e->be == NULL)
    return FALSE;
  /* The device's peak, where listing left it to be measured: here, on the
   * engine thread, before any step is timed. */
  peak = tach_device_fill_peak_flops (run->device, e->be->device);
  g_mutex_lock (&run->lock);
  run->device->info->peak_flops = peak;
  g_mutex_unlock (&run->lock);
  /* Data parallel: the feeder's shard, and the reducer that the model's
   * parameters reach through the backend, both before the model. */
  /* ranks=1 under mpirun -np N is rank 0 alone, a process of its own. */
  e->be->rank = config->ranks > 1 ? tach_ranks_world_rank () : 0;
  e->be->ranks = MAX (config->ranks, 1);
  e->be->accumulate = tach_config_get_accumulate (config);
  e->be->accumulate_sync = config->accumulate_sync;
  /* Its rows say whose they are, should this rank be the one that writes
   * them (rank 0 lost: tach_run_keep_own_flights). */
  g_mutex_lock (&run->lock);
  tach_sample_store_set_rank (run->samples, e->be->rank);
  g_mutex_unlock (&run->lock);
  /* (On a GPU, the one rank of mpirun -np 1 goes through NCCL too: so a
   * host with one GPU checks that path.  Not rank 0 alone in a larger
   * job: the others take no part in its collectives.) */
  if (config->ranks > 1
      || (tach_ranks_world () != NULL && tach_ranks_world_size () == 1
          && run->device->info->kind == TACH_DEVICE_KIND_GPU))
    {
      e->reducer = tach_grad_reducer_new (tach_ranks_for_count (config->ranks), e->be, config);
      e->vote = tach_ranks_vote_new (tach_ranks_for_count (config->ranks));
    }
  if (tach_config_preset_eager_for_ranks (config))
    tach_backend_note_algorithm (e->be, "launch",
                                 "eager: the preset's launch=graph is one process's (the ranks'"
                                 " all-reduces are not captured in a graph)");
  e->klass = tach_model_class_for (config->workload);
  if (e->klass == NULL)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                   W_("the %s workload is not built into this engine: choose another {workload}"),
                   tach_workload_to_string (config->workload));
      return FALSE;
    }
  e->model = e->klass->create (e->be, config, error);
  if (e->model == NULL)
    {
      if (error != NULL && *error == NULL)
        tach_backend_take_error (e->be, error);
      /* The model's hint names the knob; its value is the run's. */
      if (error != NULL)
        tach_error_fill_hint (*error, config);
      return FALSE;
    }

  g_mutex_lock (&run->lock);
  /* Samples of the whole job: every rank's batch, every micro-batch's. */
  run->items_per_step = e->klass->items_per_step (e->model) * MAX (config->ranks, 1)
                        * e->be->accumulate;
  run->flops_per_step = e->klass->flops_per_step (e->model) * e->be->accumulate;
  run->request_steps = e->klass->request_steps != NULL ? e->klass->request_steps (e->model) : 0;
  g_mutex_unlock (&run->lock);

  /* Generation has a loss too: the mean -log p of the sampled tokens.  At
   * most sync_every steps are pending at once (every multiple of it is a
   * sync point). */
  e->loss_slots = config->sync_every > 0 ? MIN (total, (guint64) config->sync_every) : total;
  e->loss_staging = MIN (e->loss_slots, LOSS_PIECE);
  /* Each slot is a step's: one float per micro-batch. */
  e->loss_dev = tach_backend_alloc (e->be, e->loss_slots * e->be->accumulate * sizeof (float));
  e->loss_host = g_try_new (float, e->loss_staging * e->be->accumulate);
  if (config->metrics == TACH_METRICS_ACCURACY)
    {
      e->acc_dev = tach_backend_alloc (e->be, e->loss_slots * e->be->accumulate * sizeof (float));
      e->acc_host = g_try_new (float, e->loss_staging * e->be->accumulate);
    }
  /* Where ops finish before they return, events would be host timestamps:
   * such a backend's steps use the runner's clock. */
  tach_step_timer_init (&e->timer, e->be, (e->be->caps & TACH_BACKEND_CAP_SYNC_OPS) != 0);
  e->capture_step = TACH_RUN_NO_CAPTURE;
  if (config->launch == TACH_LAUNCH_GRAPH)
    {
      /* At least one eager step first, when there is a second step to
       * capture: the first calls of a library may allocate or search. */
      e->capture_step = MIN ((guint64) MAX (tach_config_get_warmup (config), 2) - 1, total - 1);
      e->step_offset = tach_backend_alloc (e->be, sizeof (uint64_t));
      e->loss_fixed = tach_backend_alloc (e->be, sizeof (float));
      if (config->metrics == TACH_METRICS_ACCURACY)
        e->acc_fixed = tach_backend_alloc (e->be, sizeof (float));
    }
  if ((e->loss_dev != NULL && e->loss_host == NULL) || (e->acc_dev != NULL && e->acc_host == NULL))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_OUT_OF_MEMORY,
                   W_("out of host memory for the losses of %" PRIu64 " steps: lower {steps}"),
                   total);
      tach_error_add_config_hint (error, config, TACH_KNOB_STEPS, TACH_KNOB_STEPS, NULL, NULL);
      return FALSE;
    }
  return tach_backend_take_error (e->be, error);
}

/* Captures step @ctx->step's compute as the run's graph, with the fixed
 * loss slots and the step offset.  Nothing of it runs yet. */
static gboolean
thread_capture (TachRunThread *e, TachStepCtx *ctx, GError **error)
{
  TachStepCtx captured = *ctx;
  gboolean ok;

  if (!tach_backend_take_error (e->be, error))
    return FALSE;
  captured.loss_slot = e->loss_fixed;
  captured.acc_slot = e->acc_dev != NULL ? e->acc_fixed : NULL;
  /* Queued before the capture, so the first replay draws with offset 0:
   * the counters of the step captured. */
  tach_backend_zero (e->be, e->step_offset, sizeof (uint64_t));
  e->be->step_offset = e->step_offset;
  tach_graph_begin (e->be);
  ok = e->klass->step (e->model, &captured, error);
  tach_backend_counter_add (e->be, e->step_offset, 1);
  /* Also ends a capture that an error interrupted. */
  e->graph = tach_graph_end (e->be);
  e->be->step_offset = NULL;
  ctx->feed_ms = captured.feed_ms;
  ctx->host_ms = captured.host_ms;
  if (ok && e->graph != NULL)
    return TRUE;
  if (error != NULL && *error == NULL)
    tach_backend_take_error (e->be, error);
  g_prefix_error (error, W_("{launch=graph} could not capture the %s step (use {launch=eager}): "),
                  tach_workload_to_string (e->run->config.workload));
  tach_error_add_hint (error, TACH_KNOB_LAUNCH, "graph", TACH_KNOB_LAUNCH, "eager", NULL);
  return FALSE;
}

/* Queues step @i's micro-batch: prepare, the compute (eagerly, or the
 * graph's replay and the copies out of its fixed slots) and finish. */
static gboolean
thread_micro_step (TachRunThread *e, guint64 i, TachStepCtx *ctx, GError **error)
{
  const TachModelClass *klass = e->klass;
  guint64 slot = (i % e->loss_slots) * e->be->accumulate + e->be->micro;

  ctx->step = i;
  ctx->loss_slot = e->loss_dev != NULL ? e->loss_dev + slot : NULL;
  ctx->acc_slot = e->acc_dev != NULL ? e->acc_dev + slot : NULL;
  if (klass->prepare != NULL && !klass->prepare (e->model, ctx, error))
    return FALSE;
  if (i < e->capture_step)
    {
      if (!klass->step (e->model, ctx, error))
        return FALSE;
    }
  else
    {
      if (i == e->capture_step && !thread_capture (e, ctx, error))
        return FALSE;
      tach_graph_launch (e->be, e->graph);
      if (ctx->loss_slot != NULL)
        tach_backend_copy (e->be, ctx->loss_slot, e->loss_fixed, sizeof (float));
      if (ctx->acc_slot != NULL)
        tach_backend_copy (e->be, ctx->acc_slot, e->acc_fixed, sizeof (float));
    }
  return klass->finish == NULL || klass->finish (e->model, ctx, error);
}

/* Queues step @i: each of its micro-batches (one without accumulation),
 * their feeding and host times adding up in @ctx. */
static gboolean
thread_step (TachRunThread *e, guint64 i, TachStepCtx *ctx, GError **error)
{
  gboolean ok = TRUE;

  for (guint j = 0; ok && j < e->be->accumulate; j++)
    {
      e->be->micro = j;
      ok = thread_micro_step (e, i, ctx, error);
    }
  e->be->micro = 0;
  return ok;
}

/* Runs the steps; FALSE with @error on failure.  *cancelled says whether
 * a stop request ended it early.  The stop flag is polled after each step,
 * so that the step it interrupts becomes the last one and is still synced
 * and published. */
static gboolean
thread_loop (TachRunThread *e, guint64 total, gboolean *cancelled, GError **error)
{
  TachRun *run = e->run;
  guint sync_every = run->config.sync_every;
  guint64 warmup = tach_config_get_warmup (&run->config);

  /* (Ranks stop by their vote, at a step they agree on.) */
  if (e->vote == NULL && g_atomic_int_get (&run->stop))
    {
      *cancelled = TRUE;
      return TRUE;
    }

  gint64 t_prev = tach_now_ns ();  /* a step starts where the last one ended */

  tach_machine_mark (&e->measure_mark);

  for (guint64 i = 0; i < total; i++)
    {
      TachStepCtx ctx = { 0 };
      TachStepMarks marks;
      TachRunPending p = { 0 };
      TachRunPending *self;
      gint64 t_start, t_model, t_end;
      double sync_ms = 0.0, step_ms, model_ms;
      double comm_ms = 0.0;  /* data parallel: the gradients' all-reduces */
      gboolean last, stopping, sync_point;
      guint64 due, calls0 = e->be->api_calls;

      /* The step whose events this one is about to record over is read
       * now: it finished long ago in practice.  TachRunPending holds consecutive
       * steps, so it is found by its distance from the first (a scan of
       * the list would make a long unsynced run quadratic). */
      if (tach_step_timer_due (i, &due) && e->pending->len > 0 && e->pending_first <= due)
        tach_run_pending_time (e, (guint) (due - e->pending_first));
      tach_run_pending_hold (e);

      t_start = t_prev;
      if (e->reducer != NULL)
        tach_grad_reducer_begin_step (e->reducer, i, (double) t_start / 1e6);
      if (e->vote != NULL
          && !tach_ranks_vote_cast (e->vote, g_atomic_int_get (&run->stop) != 0, error))
        return FALSE;
      tach_step_timer_begin (&e->timer, i, &marks);
      if (!thread_step (e, i, &ctx, error))
        {
          if (error != NULL && *error == NULL)
            tach_backend_take_error (e->be, error);
          return FALSE;
        }
      tach_step_timer_end (&e->timer, &marks);
      t_model = tach_now_ns ();
      if (!tach_backend_take_error (e->be, error))
        return FALSE;

      p.feed_ms = (float) ctx.feed_ms;
      if (e->reducer != NULL && e->timer.host_clock)
        {
          TachGradStepStats st;

          /* (A device's figures wait for its events: tach-run-pending.c.) */
          if (tach_grad_reducer_step_stats (e->reducer, i, &st))
            comm_ms = st.comm_ms + st.poll_ms + st.pack_ms;
        }
      p.compute_ms = NAN;
      p.device_step_ms = NAN;
      p.api_calls = NAN;
      p.loss = NAN;
      p.accuracy = NAN;
      if (e->timer.host_clock)
        {
          /* On the host clock (a backend whose ops finish before they
           * return, TACH_BACKEND_CAP_SYNC_OPS) compute is the model's
           * calls less their feeding and host work. */
          p.compute_ms = (float) MAX (0.0, (double) (t_model - t_start) / 1e6
                                           - ctx.feed_ms - ctx.host_ms - comm_ms);
        }
      if (e->pending->len == 0)
        e->pending_first = i;
      g_array_append_val (e->pending, p);
      tach_run_pending_note_bytes (e);

      last = i + 1 == total;
      /* Ranks stop together, at the step their vote says (tach-ranks-stop.c):
       * one stopping alone would leave the others in an all-reduce it
       * never joins. */
      if (e->vote == NULL)
        stopping = g_atomic_int_get (&run->stop) != 0;
      else if (!tach_ranks_vote_count (e->vote, &stopping, error))
        return FALSE;
      /* And the end of warm-up, where the end-to-end clock starts. */
      sync_point = last || stopping || (sync_every > 0 && (i + 1) % sync_every == 0)
                   || i + 1 == warmup || i == e->capture_step;
      /* The device's collectives first, within the ranks' deadline: a
       * lost rank must not hang the sync. */
      if (sync_point && e->reducer != NULL && !tach_grad_reducer_settle (e->reducer, error))
        return FALSE;
      if (sync_point && !tach_run_pending_sync (e, &sync_ms))
        {
          tach_backend_take_error (e->be, error);
          return FALSE;
        }

      /* Whatever the step did outside the model and the sync (bookkeeping,
       * the loss read-back set-up) is host overhead too. */
      t_end = t_prev = tach_now_ns ();
      step_ms = (double) (t_end - t_start) / 1e6;
      model_ms = (double) (t_model - t_start) / 1e6;
      self = &g_array_index (e->pending, TachRunPending, e->pending->len - 1);
      self->step_ms = (float) step_ms;
      self->host_ms = (float) (ctx.host_ms + MAX (0.0, step_ms - model_ms - sync_ms));
      self->wall_s = (double) (t_end - e->t0) / 1e9;
      if (e->be->counts_api_calls)
        self->api_calls = (float) (e->be->api_calls - calls0);

      /* How busy the machine is counts over the measured steps. */
      if (i + 1 == warmup)
        tach_machine_mark (&e->measure_mark);
      g_atomic_int_set (&run->steps_done, (gint) MIN (i + 1, (guint64) G_MAXINT));
      if (sync_point)
        tach_run_pending_publish (e, sync_ms);
      /* Published samples are told at most every NOTIFY_NS; between sync
       * points there is only progress to tell, every PROGRESS_NS. */
      if (last || stopping || i + 1 == warmup
          || t_end - e->t_notify >= (sync_point ? NOTIFY_NS : PROGRESS_NS))
        {
          tach_run_schedule_notify (run);
          e->t_notify = t_end;
        }
      if (stopping && !last)
        {
          *cancelled = TRUE;
          break;
        }
    }
  /* The votes still in flight, before the collectives that follow. */
  return e->vote == NULL || tach_ranks_vote_settle (e->vote, error);
}

static void
run_finish (TachRun *run, TachRunState state, GError *error)
{
  g_mutex_lock (&run->lock);
  run->state = state;
  if (error != NULL)
    run->error = error;
  g_cond_broadcast (&run->cond);
  g_mutex_unlock (&run->lock);
  /* The last notification: the callback sees the final state. */
  tach_run_schedule_notify (run);
}

/* The test-set evaluation's progress (TachEvalCtx), on the engine thread. */
typedef struct {
  TachRunThread *e;
  gboolean       stopped;  /* a stop request ended it */
} EvalProgress;

static gboolean
eval_progress (gpointer data, guint64 done, guint64 total)
{
  EvalProgress *progress = data;
  TachRun *run = progress->e->run;
  gint64 now = tach_now_ns ();

  g_mutex_lock (&run->lock);
  run->eval_done = done;
  run->eval_total = total;
  g_mutex_unlock (&run->lock);
  if (now - progress->e->t_notify >= PROGRESS_NS || done == 0)
    {
      tach_run_schedule_notify (run);
      progress->e->t_notify = now;
    }
  progress->stopped = g_atomic_int_get (&run->stop) != 0;
  return !progress->stopped;
}

/* Evaluates the test set after the last step: its own phase, timed into
 * the run's wall time, reporting progress and ended by a stop request
 * within a batch (*stopped: no accuracy then). */
static double
run_evaluate (TachRunThread *e, gboolean *stopped, GError **error)
{
  TachRun *run = e->run;
  EvalProgress progress = { e, FALSE };
  TachEvalCtx ctx = { eval_progress, &progress };
  gint64 t0 = tach_now_ns ();
  double accuracy;

  g_mutex_lock (&run->lock);
  run->evaluation = TACH_EVALUATION_RUNNING;
  g_mutex_unlock (&run->lock);
  accuracy = e->klass->evaluate (e->model, &ctx, error);
  if (error == NULL || *error == NULL)
    tach_backend_take_error (e->be, error);
  *stopped = progress.stopped;
  g_mutex_lock (&run->lock);
  run->evaluation = progress.stopped ? TACH_EVALUATION_STOPPED : TACH_EVALUATION_DONE;
  run->eval_s = (double) (tach_now_ns () - t0) / 1e9;
  g_mutex_unlock (&run->lock);
  return progress.stopped ? NAN : accuracy;
}

static gpointer
run_main (gpointer data)
{
  TachRun *run = data;
  TachRunThread e = { 0 };
  g_autoptr(GError) error = NULL;
  guint64 total = run->config.steps;
  gboolean cancelled = FALSE;
  gboolean ok;

  e.run = run;
  e.pending = g_array_new (FALSE, FALSE, sizeof (TachRunPending));
  e.held = tach_sample_store_new ();

  ok = thread_setup (&e, total, &error);
  /* The ranks' clocks against rank 0's, before the steps that they time. */
  if (ok && e.reducer != NULL)
    ok = tach_ranks_clock_offset (tach_ranks_for_count (run->config.ranks), &e.clock_offset_ms,
                                  &error);
  /* Wall time counts from the first step: building the model and its data
   * is not a step, and would shift every point of a chart by wall time. */
  e.t0 = tach_now_ns ();
  e.t_notify = e.t0;
  if (ok && e.vote == NULL && g_atomic_int_get (&run->stop))
    cancelled = TRUE;
  else if (ok)
    {
      ok = thread_loop (&e, total, &cancelled, &error);
      /* The communicator aborted first: the steps' figures are read next,
       * under the run's lock, and collectives that will never end (this
       * rank's failure) must not hold them. */
      if (!ok && e.reducer != NULL)
        tach_grad_reducer_abort (e.reducer);
      if (!ok)
        tach_run_pending_publish_ended (&e);
      /* Every rank's parameters the same, and their figures on rank 0. */
      else if (e.reducer != NULL)
        ok = tach_grad_reducer_check_params (e.reducer, &error)
             && tach_run_gather_ranks (&e, &error);
      /* A rank lost: whoever survives keeps what it has, its all-reduces
       * too. */
      if (!ok && e.reducer != NULL)
        tach_run_keep_own_flights (&e);
    }
  /* mpirun passed a stop on to every rank (tach-ranks-stop.c): a stop,
   * with the rows each rank has, as a single process's. */
  if (!ok && g_error_matches (error, TACH_ERROR, TACH_ERROR_CANCELLED))
    {
      g_clear_error (&error);
      ok = cancelled = TRUE;
    }

  if (ok)
    {
      TachMachineMark end;
      TachMachineLoad load;

      tach_machine_mark (&end);
      if (e.measure_mark.wall_us > 0 && tach_machine_load_between (&e.measure_mark, &end, &load)
          && load.others_share >= 0)
        {
          g_mutex_lock (&run->lock);
          run->machine_busy = MIN (1.0, load.others_share + MAX (load.steal_share, 0.0));
          g_mutex_unlock (&run->lock);
        }
    }
  if (ok && !cancelled)
    {
      double accuracy = NAN;
      char *text = NULL;

      if (e.klass->evaluate != NULL && !run->no_evaluation)
        {
          accuracy = run_evaluate (&e, &cancelled, &error);
          ok = error == NULL;
        }
      if (ok && e.klass->dup_text != NULL && run->config.print_text)
        text = e.klass->dup_text (e.model);
      g_mutex_lock (&run->lock);
      if (e.klass->memory_parts != NULL)
        e.klass->memory_parts (e.model, run->memory_parts);
      run->test_accuracy = accuracy;
      run->text = text;
      g_mutex_unlock (&run->lock);
    }
  if (e.be != NULL)
    {
      guint64 peak = tach_backend_peak_memory (e.be);
      char *algorithms = tach_backend_dup_algorithms (e.be);
      /* The loss (and accuracy) slots and their host staging. */
      gsize slots = ((e.loss_dev != NULL) + (e.acc_dev != NULL))
                    * (e.loss_slots + e.loss_staging) * MAX (e.be->accumulate, 1)
                    * sizeof (float);

      g_mutex_lock (&run->lock);
      run->peak_memory = peak;
      if (e.be->held_peak > 0)
        {
          run->held[0] = (double) e.be->held_params;
          run->held[1] = (double) e.be->held_grads;
          run->held[2] = (double) e.be->held_state;
          run->held[3] = (double) e.be->held_peak;
        }
      run->pending_bytes = e.pending_peak + slots;
      run->algorithms = algorithms;
      /* A CPU backend's threads: how many the run had, and kept. */
      if (e.be->threads_fewest > 0)
        {
          run->threads_asked = e.be->threads;
          run->threads_fewest = e.be->threads_fewest;
          run->threads_fewer_share = e.be->threads_fewer_share;
        }
      g_mutex_unlock (&run->lock);
    }
  /* Any failure (the check of the parameters, the evaluation): freeing
   * device memory waits for the device, which must not wait on collectives
   * that will never end. */
  if (!ok && e.reducer != NULL)
    tach_grad_reducer_abort (e.reducer);
  thread_clear (&e);

  if (!ok && error == NULL)
    g_set_error (&error, TACH_ERROR, TACH_ERROR_LIBRARY, _("the run failed without a message"));
  if (!ok)
    run_finish (run, TACH_RUN_STATE_FAILED, g_steal_pointer (&error));
  else
    run_finish (run, cancelled ? TACH_RUN_STATE_CANCELLED : TACH_RUN_STATE_FINISHED, NULL);
  tach_run_unref (run);
  return NULL;
}

/* ------------------------------------------------------------ control */

gboolean
tach_run_start (TachRun *run, GMainContext *context, TachRunNotify notify, gpointer user_data,
                GError **error)
{
  GThread *thread;

  g_mutex_lock (&run->lock);
  if (run->started)
    {
      g_mutex_unlock (&run->lock);
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   _("run %u was already started: create a new run"), run->id);
      return FALSE;
    }
  run->started = TRUE;
  run->state = TACH_RUN_STATE_RUNNING;
  run->start_time = g_get_real_time ();
  g_mutex_unlock (&run->lock);

  run->notify = notify;
  run->user_data = user_data;
  if (notify != NULL)
    run->context = context != NULL ? g_main_context_ref (context)
                                   : g_main_context_ref_thread_default ();

  thread = g_thread_try_new ("tach-engine", run_main, tach_run_ref (run), error);
  if (thread == NULL)
    {
      g_prefix_error (error, _("could not start the engine thread: "));
      tach_run_unref (run);
      g_mutex_lock (&run->lock);
      run->state = TACH_RUN_STATE_FAILED;
      g_mutex_unlock (&run->lock);
      return FALSE;
    }
  g_mutex_lock (&run->lock);
  run->thread = thread;
  g_mutex_unlock (&run->lock);
  return TRUE;
}

void
tach_run_stop (TachRun *run)
{
  g_atomic_int_set (&run->stop, 1);
}

gboolean
tach_run_wait (TachRun *run, GError **error)
{
  GThread *thread;
  gboolean ok;

  g_mutex_lock (&run->lock);
  while (run->state == TACH_RUN_STATE_RUNNING)
    g_cond_wait (&run->cond, &run->lock);
  thread = g_steal_pointer (&run->thread);
  ok = run->state != TACH_RUN_STATE_FAILED;
  if (!ok && run->error != NULL)
    g_propagate_error (error, g_error_copy (run->error));
  g_mutex_unlock (&run->lock);

  /* The state changes just before the thread ends: join so that nothing
   * of the run outlives the wait. */
  if (thread != NULL)
    g_thread_join (thread);
  g_atomic_int_set (&run->notify_closed, 1);
  return ok;
}
