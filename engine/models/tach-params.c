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
 */
#include <math.h>
#include <string.h>

#include <inttypes.h>
#include <glib/gi18n-lib.h>

#include "tach-params.h"
#include "tach-rand.h"

typedef struct {
  char    *name;
  size_t   offset;      /* floats from the start of the flat buffer */
  size_t   count;
  gboolean trainable;
  size_t   align;       /* bytes the slice's start is aligned to */
  guint    sync_index;  /* among the trainable slices, for TachBackend.grad_sync */
  gboolean folded;      /* accumulate-sync=last: its gradient is in the sum already */
} TachParamSlice;

struct _TachParams {
  TachBackend   *be;         /* borrowed */
  GArray        *slices;     /* TachParamSlice */
  size_t         total;
  size_t         trainable;
  float         *data;       /* device: total floats, aligned as the slices ask */
  float         *grad;       /* device: trainable floats, aligned the same */
  float         *sum;        /* device: accumulation's sum, as grad (NULL: none) */
  void          *data_mem, *grad_mem, *sum_mem;  /* device: the allocations they lie in */
  float         *m, *v;      /* device: Adam moments (state_total floats) */
  float         *t;          /* device: Adam step count, one per range */
  /* What this rank updates: the ranges of the flat buffer (one, the
   * trainable prefix, unless sharded) and where each one's optimizer state
   * starts; with @shard (the reducer's, borrowed), its gradients are the
   * shard's. */
  guint          n_ranges;
  size_t        *range_offset, *range_count, *range_state;
  size_t         state_total;
  const TachGradShard *shard;
  gboolean       have_ranges;  /* tach_params_alloc has set them: the state can follow */
  guint64        held[3];    /* bytes counted in the backend's held_*: params, grads, state */
  float         *host;       /* staging copy, until upload */
  TachOptimizer  optimizer;
  float          lr;
  float          beta1, beta2, eps;  /* Adam's */
};

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
  TachParamSlice slice = { g_strdup (name), 0, count, trainable, MAX (align, sizeof (float)) };

  g_return_val_if_fail (params->data == NULL, G_MAXUINT);
  g_return_val_if_fail ((align & (align - 1)) == 0 && align % sizeof (float) == 0, G_MAXUINT);
  g_array_append_val (params->slices, slice);
  return params->slices->len - 1;
}

static TachParamSlice *
slice_at (TachParams *params, guint index)
{
  g_return_val_if_fail (index < params->slices->len, NULL);
  return &g_array_index (params->slices, TachParamSlice, index);
}

/* Counts @bytes of kind @kind (0 parameters, 1 gradients, 2 optimizer
 * state) in the backend's held figures; negative to give them back. */
static void
hold (TachParams *params, guint kind, gint64 bytes)
{
  TachBackend *be = params->be;
  guint64 *field[3] = { &be->held_params, &be->held_grads, &be->held_state };

  *field[kind] += (guint64) bytes;
  params->held[kind] += (guint64) bytes;
  be->held_peak = MAX (be->held_peak, be->held_params + be->held_grads + be->held_state);
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
      hold (params, 2, -(gint64) params->held[2]);
      return;
    }
  params->m = tach_backend_alloc (be, MAX (params->state_total, 1) * sizeof (float));
  params->v = tach_backend_alloc (be, MAX (params->state_total, 1) * sizeof (float));
  params->t = tach_backend_alloc (be, MAX (params->n_ranges, 1) * sizeof (float));
  tach_backend_zero (be, params->m, params->state_total * sizeof (float));
  tach_backend_zero (be, params->v, params->state_total * sizeof (float));
  tach_backend_zero (be, params->t, params->n_ranges * sizeof (float));
  hold (params, 2, (gint64) (floats * sizeof (float)));
}

guint64
tach_params_device_bytes (const TachConfig *config, size_t total, size_t trainable)
{
  /* Parameters, gradients, two Adam moments and the step count, and
   * accumulation's sum, the size of the gradients. */
  guint64 grads = tach_config_get_accumulate (config) > 1 ? 2 : 1;

  return ((guint64) total + (2 + grads) * (guint64) trainable + 1) * sizeof (float);
}

gboolean
tach_params_alloc (TachParams *params, TachBackend *be, GError **error)
{
  size_t offset = 0, align = sizeof (float);
  size_t slack = be->grad_sync != NULL ? be->grad_sync->slack : 0;
  size_t grad_floats;

  g_return_val_if_fail (params->data == NULL, FALSE);
  params->be = be;

  /* Trainable slices first, so that the optimizer covers one prefix. */
  for (int pass = 0; pass < 2; pass++)
    for (guint i = 0; i < params->slices->len; i++)
      {
        TachParamSlice *slice = slice_at (params, i);

        if (slice->trainable != (pass == 0))
          continue;
        /* The floats skipped for alignment are trainable zeros whose
         * gradient stays zero, so the optimizer leaves them zero. */
        offset = (offset + slice->align / sizeof (float) - 1)
                 / (slice->align / sizeof (float)) * (slice->align / sizeof (float));
        slice->offset = offset;
        offset += slice->count;
        if (pass == 0)
          params->trainable = offset;
      }
  params->total = offset;
  /* A padded reduce-scatter reads the slack past the gradients (zeros). */
  grad_floats = MAX (params->trainable, 1) + slack;

  for (guint i = 0; i < params->slices->len; i++)
    align = MAX (align, slice_at (params, i)->align);
  /* Room to align the start; pointer arithmetic on a device address is
   * fine, only the device dereferences it. */
  params->data_mem = tach_backend_alloc (be, MAX (params->total, 1) * sizeof (float)
                                             + align - sizeof (float));
  params->grad_mem = tach_backend_alloc (be, grad_floats * sizeof (float) + align - sizeof (float));
  if (params->data_mem != NULL)
    params->data = (float *) (void *) ((char *) params->data_mem
                                       + (align - (uintptr_t) params->data_mem % align) % align);
  if (params->grad_mem != NULL)
    params->grad = (float *) (void *) ((char *) params->grad_mem
                                       + (align - (uintptr_t) params->grad_mem % align) % align);
  if (be->accumulate > 1)
    {
      /* The sum has the gradients' layout, which the ranks' buckets cut. */
      params->sum_mem = tach_backend_alloc (be, grad_floats * sizeof (float)
                                                + align - sizeof (float));
      if (params->sum_mem != NULL)
        params->sum = (float *) (void *) ((char *) params->sum_mem
                                          + (align - (uintptr_t) params->sum_mem % align) % align);
      tach_backend_zero (be, params->sum, grad_floats * sizeof (float));
    }
  tach_backend_zero (be, params->grad, grad_floats * sizeof (float));
  if (!tach_backend_take_error (be, error))
    return FALSE;
  hold (params, 0, (gint64) (params->total * sizeof (float)));
  hold (params, 1, (gint64) (grad_floats * sizeof (float) * (params->sum != NULL ? 2 : 1)));

  if (be->grad_sync != NULL)
    {
      /* The trainable slices, in the order they were declared, for the
       * ranks' gradient buckets. */
      g_autofree size_t *offsets = g_new0 (size_t, MAX (params->slices->len, 1));
      g_autofree size_t *counts = g_new0 (size_t, MAX (params->slices->len, 1));
      guint n = 0;

      for (guint i = 0; i < params->slices->len; i++)
        {
          TachParamSlice *slice = slice_at (params, i);

          if (!slice->trainable)
            continue;
          slice->sync_index = n;
          offsets[n] = slice->offset;
          counts[n++] = slice->count;
        }
      be->grad_sync->layout (be->grad_sync, offsets, counts, n, params->trainable);
      if (!tach_backend_take_error (be, error))
        return FALSE;
    }
  set_ranges (params);
  /* The shard's gradients are the reducer's memory, held for this. */
  if (params->shard != NULL)
    hold (params, 1, (gint64) (params->state_total * sizeof (float)));
  params->have_ranges = TRUE;

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
  return params->host + slice_at (params, index)->offset;
}

void
tach_params_upload (TachParams *params)
{
  g_return_if_fail (params->be != NULL);
  tach_backend_upload (params->be, params->data, params->host, params->total * sizeof (float));
  /* The copy must finish before the staging memory goes away. */
  tach_backend_synchronize (params->be);
  g_clear_pointer (&params->host, g_free);
}

float *
tach_params_data (TachParams *params, guint index)
{
  return params->data + slice_at (params, index)->offset;
}

float *
tach_params_grad (TachParams *params, guint index)
{
  TachParamSlice *slice = slice_at (params, index);

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
  return slice_at (params, index)->count;
}

const char *
tach_params_name (TachParams *params, guint index)
{
  return slice_at (params, index)->name;
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
  TachParamSlice *slice = slice_at (params, index);

  if (slice == NULL || !slice->trainable)
    return;
  if (sync_each (params))
    {
      if (be->grad_sync != NULL)
        be->grad_sync->ready (be->grad_sync, params->grad, slice->sync_index);
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
 * the averaged gradients, and the ranks all-gather the results). */
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
      float *data = params->data + offset;
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
  if (params->shard != NULL)
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
  if (params->sum == NULL)
    {
      if (be->grad_sync != NULL)
        be->grad_sync->reduce (be->grad_sync, params->grad, params->data, params->total);
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
        TachParamSlice *slice = slice_at (params, i);

        if (slice->trainable && !slice->folded)
          fold (params, slice->offset, slice->count);
        slice->folded = FALSE;
      }
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
      tach_backend_dealloc (params->be, params->data_mem);
      tach_backend_dealloc (params->be, params->grad_mem);
      tach_backend_dealloc (params->be, params->sum_mem);
      tach_backend_dealloc (params->be, params->m);
      tach_backend_dealloc (params->be, params->v);
      tach_backend_dealloc (params->be, params->t);
      for (guint kind = 0; kind < 3; kind++)
        hold (params, kind, -(gint64) params->held[kind]);
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
