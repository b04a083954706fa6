/* tach-grad-shard-all.c: fully sharded data parallelism over MPI,
 * shard=all (PyTorch FSDP's FULL_SHARD, DeepSpeed's ZeRO stage 3), on
 * top of shard=grads (tach-grad-shard.c).
 *
 * The models group their parameters into units (a layer each, as FSDP
 * wraps a model's blocks: models/tach-params.h), and the parameters cut
 * the buckets themselves: one per piece of a unit (a run of its
 * consecutive tensors in the flat buffer), in the order backward completes
 * them, the last unit's first.  The reducer takes them as they come
 * (TachGradSyncHook.units); grad-sync then says only when they launch
 * (overlap: each as backward completes it; per-tensor and fused: after
 * backward), and bucket-mb does not apply.  Each bucket is reduce-scattered
 * as under shard=grads, and this rank's chunk of it is also its shard of
 * those parameters, the only copy it keeps between uses: the optimizer
 * updates it there and nothing is gathered after the update.
 *
 * Before a unit's forward and again before its backward the parameters
 * (models/tach-params-gather.c) ask for its buckets' all-gathers
 * (MPI_Iallgatherv from the shard into the unit's place in the flat
 * buffer, each rank's own count, so the padding never travels) and wait
 * for them; with shard-prefetch=next they launch the next unit's before
 * this one computes, and wait for it when it is reached.  Each all-gather
 * is a flight of its step, from its launch to the end of its wait, its
 * blocked time the step's exposed communication; the trace draws them on
 * the all-gather tracks, a bucket's forward and backward one after the
 * other.
 *
 * All-gathers and reduce-scatters go out in the program's order, which is
 * every rank's: MPI's rule for nonblocking collectives on one
 * communicator.  Under grad-progress=thread the engine thread makes its
 * MPI calls under the reducer's lock, as the ready hook does.
 *
 * Threads: the engine thread.
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-grad-reducer-private.h"

static void
hook_units (TachGradSyncHook *hook, const TachGradUnits *units)
{
  TachGradReducer *self = (TachGradReducer *) hook;
  guint n = units->n_buckets;

  g_free (self->unit_ranges);
  g_free (self->unit_tensor_bucket);
  self->unit_ranges = g_new0 (size_t, 2 * MAX (n, 1));
  memcpy (self->unit_ranges, units->start, n * sizeof (size_t));
  memcpy (self->unit_ranges + n, units->end, n * sizeof (size_t));
  self->unit_tensor_bucket = g_memdup2 (units->tensor_bucket,
                                        MAX (units->n_tensors, 1) * sizeof (guint));
  self->n_unit_buckets = n;
  self->n_unit_tensors = units->n_tensors;
  self->n_units = units->n_units;
  self->n_kept = units->n_kept;
  self->n_gathers = units->n_gathers;
}

void
tach_grad_shard_all_cut (TachGradReducer *self)
{
  guint n = self->n_unit_buckets;

  if (self->unit_ranges == NULL)
    return;
  /* The parameters count the tensors for both. */
  g_return_if_fail (self->n_unit_tensors == self->n_tensors);
  g_array_set_size (self->buckets, 0);
  for (guint i = 0; i < n; i++)
    {
      Bucket b = { .start = self->unit_ranges[i], .end = self->unit_ranges[n + i] };

      for (guint j = 0; j < self->n_tensors; j++)
        b.n_tensors += self->unit_tensor_bucket[j] == i;
      g_array_append_val (self->buckets, b);
    }
  memcpy (self->tensor_bucket, self->unit_tensor_bucket, self->n_tensors * sizeof (guint));
}

/* The bucket sizes, what each rank keeps and the padding, for the
 * algorithms line of either shard stage (tach-grad-shard.c's too: this
 * file is below it). */
void
tach_grad_shard_append_layout (TachGradReducer *self, GString *text, const char *keeps,
                               const char *extra, guint size, guint padded)
{
  for (guint i = 0; i < self->buckets->len && i < 8; i++)
    {
      const Bucket *b = &g_array_index (self->buckets, Bucket, i);

      g_string_append_printf (text, " %.2f", (double) (b->end - b->start) * sizeof (float) / 1e6);
    }
  g_string_append_printf (text, "%s MB, %s", self->buckets->len > 8 ? " ..." : "", keeps);
  if (extra != NULL)
    g_string_append_printf (text, "; %s", extra);
  if (padded > 0)
    {
      g_string_append (text, "; ");
      /* Translators: how many of the buckets were padded, and to what. */
      g_string_append_printf (text,
                              g_dngettext (GETTEXT_PACKAGE,
                                           "%u of them padded to a multiple of %u floats",
                                           "%u of them padded to a multiple of %u floats", padded),
                              padded, size);
    }
}

/* "all, overlap: 4 units (1 kept through the step), 5 reduce-scatters and
 * 9 all-gathers a step: 0.01 0.43 ... MB, each rank holding 1/2 of each",
 * the run's note. */
char *
tach_grad_shard_all_dup_layout (TachGradReducer *self, guint size, guint padded)
{
  GString *text = g_string_new (NULL);
  g_autofree char *keeps = g_strdup_printf (_("each rank holding 1/%u of each"), size);

  g_string_append_printf (text, "all, %s: ", tach_knob (TACH_KNOB_GRAD_SYNC)->values[self->mode]);
  g_string_append_printf (text, g_dngettext (GETTEXT_PACKAGE, "%u unit", "%u units",
                                             self->n_units), self->n_units);
  if (self->n_kept > 0)
    /* Translators: units whose parameters stay gathered from their
     * forward to the end of their backward (FSDP's root unit). */
    g_string_append_printf (text, _(" (%u kept through the step)"), self->n_kept);
  g_string_append (text, ", ");
  /* Translators: the reduce-scatters and all-gathers of one step. */
  g_string_append_printf (text, _("%u reduce-scatters and %u all-gathers a step:"),
                          self->buckets->len, self->n_gathers);
  tach_grad_shard_append_layout (self, text, keeps,
                                 self->hook.prefetch ? _("the next unit's all-gather prefetched")
                                                     : NULL, size, padded);
  return g_string_free (text, FALSE);
}

#ifdef HAVE_MPI

/* The engine thread's MPI calls while the progress thread may test the
 * buckets in flight. */
static void
lock (TachGradReducer *self)
{
  if (self->progress != NULL)
    g_mutex_lock (&self->lock);
}

static void
unlock (TachGradReducer *self)
{
  if (self->progress != NULL)
    g_mutex_unlock (&self->lock);
}

static int
start_gather (TachGradReducer *self, const Bucket *b, const float *shard, float *params,
              MPI_Request *req)
{
  guint size = tach_ranks_size (self->ranks), rank = tach_ranks_rank (self->ranks);

  return MPI_Iallgatherv (shard + b->state, b->gather_counts[rank], MPI_FLOAT, params + b->start,
                          b->gather_counts, b->gather_counts + size, MPI_FLOAT,
                          self->ranks->comm, req);
}

static void
hook_gather_launch (TachGradSyncHook *hook, guint bucket, const float *shard, float *params,
                    gboolean ahead)
{
  TachGradReducer *self = (TachGradReducer *) hook;
  GError *error = NULL;
  Bucket *b;
  double t0;

  if (!tach_backend_ok (self->be) || self->buckets == NULL || bucket >= self->buckets->len)
    return;
  b = &g_array_index (self->buckets, Bucket, bucket);
  self->shard_params = shard;
  lock (self);
  t0 = tach_ranks_now_ms ();
  tach_ranks_mpi_check (start_gather (self, b, shard, params, &b->gather), "MPI_Iallgatherv",
                        &error);
  b->t_gather = t0;
  b->gather_ahead = ahead;
  b->gathering = error == NULL;
  /* The progress thread moves it on while this rank computes. */
  if (self->progress != NULL && b->gathering)
    {
      self->flying = TRUE;
      g_cond_signal (&self->wake);
    }
  if (!self->ended)
    {
      TachGradStepStats *st = tach_grad_reducer_current (self);

      st->comm_ms += tach_ranks_now_ms () - t0;
      st->bytes += (double) (b->end - b->start) * sizeof (float);
      st->collectives++;
    }
  unlock (self);
  if (error != NULL)
    tach_backend_set_error (self->be, error);
}

static void
hook_gather_wait (TachGradSyncHook *hook, guint bucket)
{
  TachGradReducer *self = (TachGradReducer *) hook;
  GError *error = NULL;
  Bucket *b;

  if (!tach_backend_ok (self->be) || self->buckets == NULL || bucket >= self->buckets->len)
    return;
  b = &g_array_index (self->buckets, Bucket, bucket);
  lock (self);
  b->gathering = FALSE;
  if (tach_ranks_wait (self->ranks, &b->gather, "parameter all-gather", self->step,
                       self->ended ? NULL : &tach_grad_reducer_current (self)->comm_ms, &error)
      && !self->ended)
    {
      TachGradFlight f = {
        .step = self->step, .bucket = bucket, .kind = TACH_GRAD_FLIGHT_ALL_GATHER,
        .ahead = b->gather_ahead, .start_ms = b->t_gather - self->t_begin,
        .dur_ms = MAX (0.0, tach_ranks_now_ms () - b->t_gather),
        .bytes = (double) (b->end - b->start) * sizeof (float),
      };

      tach_grad_reducer_add_flight (self, &f);
    }
  unlock (self);
  if (error != NULL)
    tach_backend_set_error (self->be, error);
}

int
tach_grad_shard_all_test (TachGradReducer *self)
{
  int left = 0;

  for (guint i = 0; self->buckets != NULL && i < self->buckets->len; i++)
    {
      Bucket *b = &g_array_index (self->buckets, Bucket, i);
      int done = 0;

      if (!b->gathering)
        continue;
      /* A failure is the engine thread's wait's to report. */
      if (MPI_Test (&b->gather, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done)
        b->gathering = FALSE;
      else
        left++;
    }
  return left;
}

static gboolean
hook_reduced (TachGradSyncHook *hook, guint bucket)
{
  TachGradReducer *self = (TachGradReducer *) hook;
  gboolean done;

  if (self->buckets == NULL || bucket >= self->buckets->len)
    return FALSE;
  lock (self);
  done = g_array_index (self->buckets, Bucket, bucket).done;
  unlock (self);
  return done;
}

gboolean
tach_grad_shard_all_fill (TachGradReducer *self, float *host, GError **error)
{
  if (self->unit_ranges == NULL)
    return TRUE;
  /* From here on an all-gather is no step's (an evaluation's). */
  self->ended = TRUE;
  /* The frozen slices came from the buffer (what no unit holds there
   * reads as zeros); every unit's come from the shards.  The gathered
   * floats are alike on every rank by construction; the check still
   * covers the rest and says that every rank reached the end with the
   * same layout. */
  for (guint i = 0; i < self->buckets->len && self->shard_params != NULL; i++)
    {
      Bucket *b = &g_array_index (self->buckets, Bucket, i);

      if (!tach_ranks_mpi_check (start_gather (self, b, self->shard_params, host, &b->gather),
                                 "MPI_Iallgatherv", error)
          || !tach_ranks_wait (self->ranks, &b->gather, "parameter all-gather", self->step,
                               NULL, error))
        return FALSE;
    }
  return TRUE;
}

#else

static void
hook_gather_launch (TachGradSyncHook *hook, guint bucket, const float *shard, float *params,
                    gboolean ahead)
{
  (void) hook;
  (void) bucket;
  (void) shard;
  (void) params;
  (void) ahead;
}

static void
hook_gather_wait (TachGradSyncHook *hook, guint bucket)
{
  (void) hook;
  (void) bucket;
}

static gboolean
hook_reduced (TachGradSyncHook *hook, guint bucket)
{
  (void) hook;
  (void) bucket;
  return FALSE;
}

gboolean
tach_grad_shard_all_fill (TachGradReducer *self, float *host, GError **error)
{
  (void) self;
  (void) host;
  (void) error;
  return TRUE;
}

int
tach_grad_shard_all_test (TachGradReducer *self)
{
  (void) self;
  return 0;
}

#endif /* HAVE_MPI */

void
tach_grad_shard_all_init (TachGradReducer *self, const TachConfig *config)
{
  self->hook.units = hook_units;
  self->hook.gather_launch = hook_gather_launch;
  self->hook.gather_wait = hook_gather_wait;
  self->hook.reduced = hook_reduced;
  self->hook.prefetch = config->shard_prefetch == TACH_SHARD_PREFETCH_NEXT;
}

void
tach_grad_shard_all_clear (TachGradReducer *self)
{
  g_clear_pointer (&self->unit_ranges, g_free);
  g_clear_pointer (&self->unit_tensor_bucket, g_free);
}
