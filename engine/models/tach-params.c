/* tach-params.c: a model's parameters: the flat buffer on the device, cut
 * into named slices, its initial values (counter-based host initialisers)
 * and the optimizer step.  The layers that read them are tach-layers.c's.
 *
 * Gradient accumulation (TachBackend.accumulate = k > 1): backward
 * overwrites the gradients, so each micro-batch's are folded into a second
 * buffer, sum += grad / k (the sgd op with a learning rate of -1/k: no op
 * of its own), and the optimizer runs on the sum after the last one: the
 * mean of k micro-batches' mean gradients, which is the gradient of one
 * batch k times larger.  The models call tach_params_update after every
 * micro-batch, as after every step, and this file decides what it does:
 *   accumulate-sync=every  each micro-batch's gradients are averaged over
 *                          the ranks (ready and reduce on the gradient
 *                          buffer, as without accumulation), then folded;
 *   accumulate-sync=last   each tensor is folded as backward announces it
 *                          and the ranks hear of nothing until the last
 *                          micro-batch, whose announcements go out with the
 *                          sum, so that grad-sync=overlap's buckets still
 *                          fly during its backward: DDP's no_sync, and the
 *                          hook fires inside the last backward, not after
 *                          it (baidu-baige/LoongForge PR 163's miss).
 * With one rank both fold the same numbers in the same order.
 *
 * Sharded updates (shard=grads, engine/run/tach-grad-shard.c): the reducer
 * reduce-scatters the gradients (or the sum) instead of all-reducing them,
 * and says which ranges of the flat buffer this rank owns, one per bucket;
 * the optimizer runs over those alone (unsharded, over one range: the
 * trainable prefix, so there is one optimizer path), with Adam's state for
 * their floats only (each range a step count of its own, all equal), and
 * the reducer's gather hands every rank every range's new values.  The
 * backend's held_* figures count what this file allocates (and the shard's
 * gradients), for the run's report of what a rank holds.
 *
 * Fully sharded (shard=all, tach-params-gather.c): the same ranges are
 * also the only copy of the parameters a rank keeps; the optimizer updates
 * them there, and the models' units are gathered into the flat buffer,
 * whose pages come and go, when they compute.
 */
#include <math.h>
#include <string.h>

#include <inttypes.h>
#include <glib/gi18n-lib.h>

#include "tach-params-private.h"
#include "tach-rand.h"

static void
slice_clear (gpointer p)
{
  TachParamSlice *slice = p;

  g_free (slice->name);
}

TachParams *
tach_params_new (void)
{
  TachParams *params = g_new0 (TachParams, 1);

  params->slices = g_array_new (FALSE, TRUE, sizeof (TachParamSlice));
  g_array_set_clear_func (params->slices, slice_clear);
  params->optimizer = TACH_OPTIMIZER_ADAM;
  params->lr = 0.001f;
  return params;
}

guint
tach_params_add (TachParams *params, const char *name, size_t count, gboolean trainable)
{
  return tach_params_add_aligned (params, name, count, trainable, sizeof (float));
}

guint
tach_params_add_aligned (TachParams *params, const char *name, size_t count, gboolean trainable,
                         size_t align)
{
  TachParamSlice slice = { g_strdup (name), 0, count, trainable, MAX (align, sizeof (float)),
                           .unit = params->unit };

  g_return_val_if_fail (params->data == NULL, G_MAXUINT);
  g_return_val_if_fail ((align & (align - 1)) == 0 && align % sizeof (float) == 0, G_MAXUINT);
  g_array_append_val (params->slices, slice);
  return params->slices->len - 1;
}

/* The ranges this rank updates and the optimizer state they need, once
 * the reducer has cut the buckets (tach_params_alloc). */
static void
set_ranges (TachParams *params)
{
  TachGradSyncHook *hook = params->be->grad_sync;
  const TachGradShard *shard = hook != NULL && hook->shard != NULL ? hook->shard (hook) : NULL;
  guint n = shard != NULL ? shard->n : 1;

  params->shard = shard;
  params->n_ranges = n;
  params->range_offset = g_new0 (size_t, MAX (n, 1));
  params->range_count = g_new0 (size_t, MAX (n, 1));
  params->range_state = g_new0 (size_t, MAX (n, 1));
  if (shard == NULL)
    {
      params->range_count[0] = params->trainable;
      params->state_total = params->trainable;
      return;
    }
  memcpy (params->range_offset, shard->offset, n * sizeof (size_t));
  memcpy (params->range_count, shard->count, n * sizeof (size_t));
  memcpy (params->range_state, shard->state, n * sizeof (size_t));
  params->state_total = shard->state_total;
}

/* The optimizer's state, for what this rank updates (all of it, or its
 * shard's: the memory that sharding saves): Adam's moments and step
 * counts, zeroed; none for SGD.  Allocated when the optimizer is chosen
 * (after tach_params_alloc), so that SGD never holds Adam's. */
static void
alloc_state (TachParams *params)
{
  TachBackend *be = params->be;
  gboolean adam = params->optimizer == TACH_OPTIMIZER_ADAM;
  size_t floats = 2 * params->state_total + params->n_ranges;

  if ((params->m != NULL) == adam)
    return;
  if (!adam)
    {
      tach_backend_dealloc (be, params->m);
      tach_backend_dealloc (be, params->v);
      tach_backend_dealloc (be, params->t);
      params->m = params->v = params->t = NULL;
      tach_params_hold (params, 2, -(gint64) params->held[2]);
      return;
    }
  params->m = tach_backend_alloc (be, MAX (params->state_total, 1) * sizeof (float));
  params->v = tach_backend_alloc (be, MAX (params->state_total, 1) * sizeof (float));
  params->t = tach_backend_alloc (be, MAX (params->n_ranges, 1) * sizeof (float));
  tach_backend_zero (be, params->m, params->state_total * sizeof (float));
  tach_backend_zero (be, params->v, params->state_total * sizeof (float));
  tach_backend_zero (be, params->t, params->n_ranges * sizeof (float));
  tach_params_hold (params, 2, (gint64) (floats * sizeof (float)));
}

guint64
tach_params_device_bytes (const TachConfig *config, size_t total, size_t trainable)
{
  /* Parameters, gradients, two Adam moments and the step count, and
   * accumulation's sum, the size of the gradients. */
  guint64 grads = tach_config_get_accumulate (config) > 1 ? 2 : 1;

  return ((guint64) total + (2 + grads) * (guint64) trainable + 1) * sizeof (float);
}

/* @mem (@floats and room to align its start to @align bytes) and the
 * aligned address in it; pointer arithmetic on a device address is fine,
 * only the device dereferences it. */
static float *
alloc_aligned (TachBackend *be, size_t floats, size_t align, void **mem)
{
  *mem = tach_backend_alloc (be, floats * sizeof (float) + align - sizeof (float));
  if (*mem == NULL)
    return NULL;
  return (float *) (void *) ((char *) *mem + (align - (uintptr_t) *mem % align) % align);
}

/* The trainable slices, in the order they were declared, for the ranks'
 * gradient buckets. */
static void
hand_layout (TachParams *params)
{
  TachGradSyncHook *hook = params->be->grad_sync;
  g_autofree size_t *offsets = g_new0 (size_t, MAX (params->slices->len, 1));
  g_autofree size_t *counts = g_new0 (size_t, MAX (params->slices->len, 1));
  guint n = 0;

  for (guint i = 0; i < params->slices->len; i++)
    {
      TachParamSlice *slice = tach_params_slice (params, i);

      if (!slice->trainable)
        continue;
      slice->sync_index = n;
      offsets[n] = slice->offset;
      counts[n++] = slice->count;
    }
  /* Fully sharded, the units cut the buckets. */
  if (params->fully)
    tach_params_gather_units (params);
  hook->layout (hook, offsets, counts, n, params->trainable);
}

gboolean
tach_params_alloc (TachParams *params, TachBackend *be, GError **error)
{
  size_t offset = 0, align = sizeof (float);
  size_t slack = be->grad_sync != NULL ? be->grad_sync->slack : 0;
  size_t grad_floats;
  const TachParamSlice *prev = NULL;

  g_return_val_if_fail (params->data == NULL, FALSE);
  params->be = be;
  params->fully = tach_params_gather_wanted (params, be);

  /* Trainable slices first, so that the optimizer covers one prefix. */
  for (int pass = 0; pass < 2; pass++)
    for (guint i = 0; i < params->slices->len; i++)
      {
        TachParamSlice *slice = tach_params_slice (params, i);
        size_t floats;

        if (slice->trainable != (pass == 0))
          continue;
        /* The floats skipped for alignment are trainable zeros whose
         * gradient stays zero, so the optimizer leaves them zero. */
        floats = tach_params_gather_align (params, slice, prev) / sizeof (float);
        offset = (offset + floats - 1) / floats * floats;
        slice->offset = offset;
        offset += slice->count;
        if (pass == 0)
          params->trainable = offset;
        prev = slice;
      }
  params->total = offset;
  /* A padded reduce-scatter reads the slack past the gradients (zeros). */
  grad_floats = MAX (params->trainable, 1) + slack;

  for (guint i = 0; i < params->slices->len; i++)
    align = MAX (align, tach_params_slice (params, i)->align);
  if (params->fully)
    {
      if (!tach_params_gather_map (params, grad_floats, error))
        return FALSE;
    }
  else
    {
      params->data = alloc_aligned (be, MAX (params->total, 1), align, &params->data_mem);
      params->grad = alloc_aligned (be, grad_floats, align, &params->grad_mem);
      tach_backend_zero (be, params->grad, grad_floats * sizeof (float));
      tach_params_hold (params, 0, (gint64) (params->total * sizeof (float)));
      tach_params_hold (params, 1, (gint64) (grad_floats * sizeof (float)));
    }
  if (be->accumulate > 1)
    {
      /* The sum has the gradients' layout, which the ranks' buckets cut. */
      params->sum = alloc_aligned (be, grad_floats, align, &params->sum_mem);
      tach_backend_zero (be, params->sum, grad_floats * sizeof (float));
      tach_params_hold (params, 1, (gint64) (grad_floats * sizeof (float)));
    }
  if (!tach_backend_take_error (be, error))
    return FALSE;

  if (be->grad_sync != NULL)
    {
      hand_layout (params);
      if (!tach_backend_take_error (be, error))
        return FALSE;
    }
  set_ranges (params);
  /* The shard's gradients are the reducer's memory, held for this. */
  if (params->shard != NULL)
    tach_params_hold (params, 1, (gint64) (params->state_total * sizeof (float)));
  params->have_ranges = TRUE;
  if (params->fully && !tach_params_gather_shard (params, error))
    return FALSE;

  params->host = g_try_malloc0 (MAX (params->total, 1) * sizeof (float));
  if (params->host == NULL)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_OUT_OF_MEMORY,
                   _("out of host memory: could not allocate %zu"
                     " bytes for the parameters"),
                   (gsize) (params->total * sizeof (float)));
      return FALSE;
    }
  return TRUE;
}

float *
tach_params_host (TachParams *params, guint index)
{
  g_return_val_if_fail (params->host != NULL, NULL);
  return params->host + tach_params_slice (params, index)->offset;
}

void
tach_params_upload (TachParams *params)
{
  g_return_if_fail (params->be != NULL);
  if (params->fully)
    tach_params_gather_upload (params);
  else
    tach_backend_upload (params->be, params->data, params->host,
                         params->total * sizeof (float));
  /* The copy must finish before the staging memory goes away. */
  tach_backend_synchronize (params->be);
  g_clear_pointer (&params->host, g_free);
}

float *
tach_params_data (TachParams *params, guint index)
{
  return params->data + tach_params_slice (params, index)->offset;
}

float *
tach_params_grad (TachParams *params, guint index)
{
  TachParamSlice *slice = tach_params_slice (params, index);

  return slice->trainable ? params->grad + slice->offset : NULL;
}

float *
tach_params_all_data (TachParams *params)
{
  return params->data;
}

float *
tach_params_all_grad (TachParams *params)
{
  return params->grad;
}

size_t
tach_params_count (TachParams *params, guint index)
{
  return tach_params_slice (params, index)->count;
}

const char *
tach_params_name (TachParams *params, guint index)
{
  return tach_params_slice (params, index)->name;
}

guint
tach_params_n_slices (TachParams *params)
{
  return params->slices->len;
}

size_t
tach_params_total (TachParams *params)
{
  return params->total;
}

size_t
tach_params_trainable (TachParams *params)
{
  return params->trainable;
}

void
tach_params_set_optimizer (TachParams *params, TachOptimizer optimizer, double lr)
{
  params->optimizer = optimizer;
  params->lr = (float) lr;
  params->beta1 = TACH_ADAM_BETA1;
  params->beta2 = TACH_ADAM_BETA2;
  params->eps = TACH_ADAM_EPS;
  /* The optimizer's state follows the optimizer (none for SGD), once
   * tach_params_alloc has said what this rank updates. */
  if (params->have_ranges)
    alloc_state (params);
}

void
tach_params_set_adam (TachParams *params, float beta1, float beta2, float eps)
{
  params->beta1 = beta1;
  params->beta2 = beta2;
  params->eps = eps;
}

void
tach_params_zero_grad (TachParams *params)
{
  /* Fully sharded, the pages given back read as zeros. */
  if (params->fully)
    tach_params_gather_release_grads (params, TRUE);
  else
    tach_backend_zero (params->be, params->grad, params->trainable * sizeof (float));
}

/* Whether the ranks hear of each micro-batch (accumulate-sync=every, or
 * no accumulation). */
static gboolean
sync_each (TachParams *params)
{
  return params->sum == NULL || params->be->accumulate_sync == TACH_ACCUMULATE_SYNC_EVERY;
}

/* sum += grad / k over @count floats from @offset. */
static void
fold (TachParams *params, size_t offset, size_t count)
{
  tach_op (params->be, sgd, params->sum + offset, params->grad + offset, count,
           -1.0f / (float) params->be->accumulate);
}

void
tach_params_grad_ready (TachParams *params, guint index)
{
  TachBackend *be = params->be;
  TachParamSlice *slice = tach_params_slice (params, index);

  if (slice == NULL || !slice->trainable)
    return;
  if (sync_each (params))
    {
      if (be->grad_sync != NULL)
        be->grad_sync->ready (be->grad_sync, params->grad, slice->sync_index);
      /* The reduce-scatters that have completed leave their gradients
       * free to go. */
      tach_params_gather_release_grads (params, FALSE);
      return;
    }
  fold (params, slice->offset, slice->count);
  slice->folded = TRUE;
  if (be->grad_sync != NULL && be->micro + 1 >= be->accumulate)
    be->grad_sync->ready (be->grad_sync, params->sum, slice->sync_index);
}

/* The optimizer step on @grad, after AdamW's decoupled decay of the
 * first @decayed floats when @weight_decay > 0: over each range this rank
 * updates (one, the trainable prefix, unless sharded: then its shard of
 * the averaged gradients, and the ranks all-gather the results; fully
 * sharded, the shard's parameters, which nobody gathers until they are
 * needed). */
static void
optimize (TachParams *params, const float *grad, float weight_decay, size_t decayed)
{
  TachBackend *be = params->be;

  /* A model that never chose its optimizer updates with the default's. */
  alloc_state (params);
  for (guint i = 0; i < params->n_ranges; i++)
    {
      size_t offset = params->range_offset[i], count = params->range_count[i];
      size_t state = params->range_state[i];
      float *data = params->fully ? params->shard_data + state : params->data + offset;
      const float *g = params->shard != NULL ? params->shard->grad + state : grad + offset;

      if (count == 0)
        continue;
      /* torch.optim.AdamW decays before its Adam step: param *= 1 - lr wd. */
      if (weight_decay > 0.0f && decayed > offset)
        tach_op (be, scale, data, 1.0f - params->lr * weight_decay, MIN (decayed - offset, count));
      if (params->optimizer == TACH_OPTIMIZER_SGD)
        tach_op (be, sgd, data, g, count, params->lr);
      else
        tach_op (be, adam, data, g, params->m + state, params->v + state, count, params->lr,
                 params->beta1, params->beta2, params->eps, params->t + i);
    }
  if (params->shard != NULL && !params->fully)
    be->grad_sync->gather (be->grad_sync, params->data);
}

void
tach_params_update (TachParams *params)
{
  tach_params_update_decoupled (params, 0.0f, 0);
}

void
tach_params_update_decoupled (TachParams *params, float weight_decay, size_t decayed)
{
  TachBackend *be = params->be;
  gboolean last = be->micro + 1 >= be->accumulate;

  if (params->trainable == 0)
    return;
  tach_params_gather_settle (params);
  if (params->sum == NULL)
    {
      if (be->grad_sync != NULL)
        be->grad_sync->reduce (be->grad_sync, params->grad, params->data, params->total);
      tach_params_gather_release_grads (params, TRUE);
      optimize (params, params->grad, weight_decay, decayed);
      return;
    }
  if (sync_each (params))
    {
      if (be->grad_sync != NULL)
        be->grad_sync->reduce (be->grad_sync, params->grad, params->data, params->total);
      fold (params, 0, params->trainable);
    }
  else
    /* What backward did not announce is folded now. */
    for (guint i = 0; i < params->slices->len; i++)
      {
        TachParamSlice *slice = tach_params_slice (params, i);

        if (slice->trainable && !slice->folded)
          fold (params, slice->offset, slice->count);
        slice->folded = FALSE;
      }
  /* Folded: the micro-batch's gradients may go. */
  tach_params_gather_release_grads (params, TRUE);
  if (!last)
    return;
  if (!sync_each (params) && be->grad_sync != NULL)
    be->grad_sync->reduce (be->grad_sync, params->sum, params->data, params->total);
  optimize (params, params->sum, weight_decay, decayed);
  tach_backend_zero (be, params->sum, params->trainable * sizeof (float));
}

size_t
tach_params_offset (TachParams *params, guint index)
{
  return (size_t) (tach_params_data (params, index) - params->data);
}

void
tach_params_free (TachParams *params)
{
  if (params == NULL)
    return;
  if (params->be != NULL)
    {
      tach_params_gather_free (params);
      tach_backend_dealloc (params->be, params->data_mem);
      tach_backend_dealloc (params->be, params->grad_mem);
      tach_backend_dealloc (params->be, params->sum_mem);
      tach_backend_dealloc (params->be, params->m);
      tach_backend_dealloc (params->be, params->v);
      tach_backend_dealloc (params->be, params->t);
      for (guint kind = 0; kind < 3; kind++)
        tach_params_hold (params, kind, -(gint64) params->held[kind]);
    }
  g_free (params->range_offset);
  g_free (params->range_count);
  g_free (params->range_state);
  g_free (params->host);
  g_array_unref (params->slices);
  g_free (params);
}

/* ----------------------------------------------------------------- init */

void
tach_init_uniform (float *host, size_t n, float limit, guint64 seed, guint64 tensor_index)
{
  guint64 counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_INIT, tensor_index);

  for (size_t e = 0; e < n; e++)
    host[e] = (2.0f * tach_rand_uniform (seed, counter, e) - 1.0f) * limit;
}

void
tach_init_glorot (float *host, int fan_out, int fan_in, guint64 seed, guint64 tensor_index)
{
  float limit = (float) sqrt (6.0 / ((double) fan_in + fan_out));

  tach_init_uniform (host, (size_t) fan_out * fan_in, limit, seed, tensor_index);
}
