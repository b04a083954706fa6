/* tach-params.h: a model's parameters: one flat parameter buffer on the
 * device, cut into named slices, with its gradient and optimizer-state
 * buffers, so that one optimizer op updates every trainable parameter, and
 * counter-based host initialisers (the same numbers on every backend and
 * in every mode).  The layers are tach-layers.h's.
 *
 * Layout of the flat buffer: trainable slices first, in the order they were
 * added, then frozen ones.  The gradient, Adam m and v buffers cover the
 * trainable prefix only, so the optimizer never touches frozen weights.
 *
 * Typical use:
 *
 *   TachParams *p = tach_params_new ();
 *   guint w = tach_params_add (p, "dense.w", out * in, TRUE);
 *   guint b = tach_params_add (p, "dense.b", out, TRUE);
 *   if (!tach_params_alloc (p, be, error)) ...
 *   tach_init_glorot (tach_params_host (p, w), out, in, seed, w);
 *   memset (tach_params_host (p, b), 0, out * sizeof (float));
 *   tach_params_upload (p);               (frees the host copy)
 *   tach_params_set_optimizer (p, TACH_OPTIMIZER_ADAM, 0.001);
 *   ... per step: forward with tach_params_data (p, w), backward into
 *   tach_params_grad (p, w), then tach_params_update (p);
 *
 * Every function queues work through the sticky-error wrappers: nothing
 * happens while the backend has an error pending.
 *
 * Threads: the engine thread.
 */
#pragma once

#include "tach-backend.h"

G_BEGIN_DECLS

/* Keras' Adam defaults, which the reported workloads use. */
#define TACH_ADAM_BETA1 0.9f
#define TACH_ADAM_BETA2 0.999f
#define TACH_ADAM_EPS   1e-7f

typedef struct _TachParams TachParams;

TachParams   *tach_params_new (void);
/* Declares a slice of @count floats (before tach_params_alloc); returns its
 * index.  @name is copied. */
guint         tach_params_add (TachParams *params, const char *name, size_t count,
                               gboolean trainable);
/* The same with the slice's start aligned to @align bytes (a power of two,
 * a multiple of 4) in every buffer; the floats skipped before it are zeros
 * that no op reads and the optimizer keeps zero. */
guint         tach_params_add_aligned (TachParams *params, const char *name, size_t count,
                                       gboolean trainable, size_t align);
/* Allocates the device buffers (parameters and gradients, zeroed) and a
 * zeroed host staging copy of the parameters; the optimizer's state
 * follows with tach_params_set_optimizer. */
gboolean      tach_params_alloc (TachParams *params, TachBackend *be, GError **error);
/* The host staging copy of slice @index, to fill before tach_params_upload(). */
float        *tach_params_host (TachParams *params, guint index);
/* Uploads the staging copy to the device and frees it. */
void          tach_params_upload (TachParams *params);

/* Device pointers into the flat buffers.  grad is NULL for a frozen slice. */
float        *tach_params_data (TachParams *params, guint index);
float        *tach_params_grad (TachParams *params, guint index);
/* The whole buffers: all parameters, and the trainable prefix's gradients. */
float        *tach_params_all_data (TachParams *params);
float        *tach_params_all_grad (TachParams *params);
size_t        tach_params_count (TachParams *params, guint index);
const char   *tach_params_name (TachParams *params, guint index);
guint         tach_params_n_slices (TachParams *params);
size_t        tach_params_total (TachParams *params);       /* all floats */
size_t        tach_params_trainable (TachParams *params);   /* trainable floats */

/* Device bytes that tach_params_alloc() will allocate for @total floats of
 * which @trainable are trainable under @config (for memory_needs before
 * allocation): gradient accumulation adds its sum.  Sharding only lowers
 * what a rank holds, so this stays an upper bound there. */
guint64       tach_params_device_bytes (const TachConfig *config, size_t total,
                                        size_t trainable);

/* The optimizer used by tach_params_update(); @lr as given (the caller
 * resolves config->lr == 0 to its workload's default).  After
 * tach_params_alloc it allocates the optimizer's state (Adam's moments,
 * zeroed; none for SGD) for what this rank updates: every trainable
 * float, or under shard=grads its shard of them. */
void          tach_params_set_optimizer (TachParams *params, TachOptimizer optimizer, double lr);
void          tach_params_zero_grad (TachParams *params);
/* Backward has written slice @index's gradient (and will not touch it
 * again this step): with data-parallel ranks, its bucket's all-reduce may
 * start while backward goes on (grad-sync=overlap); under accumulation
 * with accumulate-sync=last it is folded into the sum at once (and its
 * bucket waits for the last micro-batch).  Models call it as each layer's
 * backward ends; nothing happens in a process of its own. */
void          tach_params_grad_ready (TachParams *params, guint index);
/* One optimizer step over the trainable prefix, after the ranks' gradients
 * are averaged (TachBackend.grad_sync): Adam (TACH_ADAM_*; its step
 * count lives on the device) or plain SGD.  Under shard=grads
 * (TachGradSyncHook.shard) over this rank's ranges of it alone, whose
 * averaged gradients the reducer's shard holds, and the ranks then
 * all-gather the updated parameters.  Models call it at the end of
 * every step; with gradient accumulation (TachBackend.accumulate > 1)
 * that is every micro-batch (TachBackend.micro), and only the last one's
 * updates, with the mean of the micro-batches' gradients. */
void          tach_params_update (TachParams *params);
/* The same with decoupled weight decay (AdamW's): the first @decayed
 * floats of the buffer are scaled by 1 - lr * @weight_decay first. */
void          tach_params_update_decoupled (TachParams *params, float weight_decay,
                                            size_t decayed);
/* Adam's betas and epsilon (TACH_ADAM_* until set; after
 * tach_params_set_optimizer, which resets them). */
void          tach_params_set_adam (TachParams *params, float beta1, float beta2, float eps);
/* Fully sharded data parallelism (shard=all, FSDP's FULL_SHARD;
 * tach-params-gather.c).  A unit is a group of trainable slices that is
 * all-gathered as one: each layer's, as FSDP wraps a model's blocks.  The
 * slices added after tach_params_unit (or after tach_params_use_unit)
 * belong to that unit; slices added before any call, to unit 0.  A @keep
 * unit (the root's: parameters used at both ends of the step, gpt's tied
 * embedding) stays gathered from its first forward to the end of its
 * backward, as FSDP's root unit is not resharded after forward.  Frozen
 * slices belong to no unit: every rank keeps them whole.
 *
 * Under shard=all each rank keeps only its shard of the trainable
 * parameters between uses; the models call tach_params_need before a
 * unit's forward (@backward FALSE) and again before its backward (TRUE),
 * and tach_params_done after each, and every pointer from
 * tach_params_data stays valid (the unit's pages are filled by the
 * all-gather and given back to the system after).  Unsharded both do
 * nothing.  tach_params_gather_all (@gather TRUE) gathers every unit
 * and keeps them until it is called with FALSE (or the next update): for
 * an evaluation after training, whose ranks must not depend on one
 * another batch by batch. */
guint         tach_params_unit (TachParams *params, gboolean keep);
void          tach_params_use_unit (TachParams *params, guint unit);
void          tach_params_need (TachParams *params, guint unit, gboolean backward);
void          tach_params_done (TachParams *params, guint unit, gboolean backward);
void          tach_params_gather_all (TachParams *params, gboolean gather);
/* Where slice @index starts in the flat buffer, in floats. */
size_t        tach_params_offset (TachParams *params, guint index);
void          tach_params_free (TachParams *params);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachParams, tach_params_free)

/* Host initialisers keyed by (@seed, @tensor_index) on the INIT stream. */
void          tach_init_uniform (float *host, size_t n, float limit, guint64 seed,
                                 guint64 tensor_index);
/* Glorot (Xavier) uniform, Keras' default kernel init: limit
 * sqrt (6 / (fan_in + fan_out)). */
void          tach_init_glorot (float *host, int fan_out, int fan_in, guint64 seed,
                                guint64 tensor_index);

G_END_DECLS
