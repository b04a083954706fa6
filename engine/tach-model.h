/* tach-model.h: the interface between the runner and the workloads.
 *
 * A model is written once against the backend ops (tach-backend.h).  The
 * runner (tach-run.c) owns the step loop, timing, synchronisation and the
 * loss read-back; a model only queues one step's work.
 *
 * Threads: every function here runs on the engine thread.
 */
#pragma once

#include "tach-backend.h"

G_BEGIN_DECLS

typedef struct _TachModel TachModel;

typedef struct {
  guint64 step;       /* global step index, warm-up included, from 0 */
  float  *loss_slot;  /* device float: the model writes this step's loss here (NULL: none) */
  float  *acc_slot;   /* device float for the accuracy metric, NULL unless metrics=accuracy */
  double  feed_ms;    /* out: host time spent getting the batch in place */
  double  host_ms;    /* out: host-side work the model did that is not feeding
                         (e.g. host sampling, per-call setup); compute is the rest */
} TachStepCtx;

typedef struct {
  TachWorkload workload;
  /* Builds the model, its data and its parameters for @config on @be. */
  TachModel *(*create)        (TachBackend *be, const TachConfig *config, GError **error);
  /* Queues one step (asynchronous on the GPU).  Errors: FALSE + @error, or
   * the backend's sticky error, which the runner also checks. */
  gboolean   (*step)          (TachModel *model, TachStepCtx *ctx, GError **error);
  /* Samples (or tokens) processed per step, for samples/s. */
  guint64    (*items_per_step)(TachModel *model);
  double     (*flops_per_step)(TachModel *model);
  /* Optional: after the last step, e.g. test-set accuracy (NaN if none). */
  double     (*evaluate)      (TachModel *model, GError **error);
  /* Optional: generated text, or NULL. */
  char      *(*dup_text)      (TachModel *model);
  /* Optional: bytes the model needs on the device and on the host for
   * @config, for validation before anything is allocated. */
  void       (*memory_needs)  (const TachConfig *config, guint64 *device_bytes, guint64 *host_bytes);
  void       (*free)          (TachModel *model);
} TachModelClass;

const TachModelClass *tach_model_class_for (TachWorkload workload);

extern const TachModelClass tach_bilstm_model_class;
extern const TachModelClass tach_lstm_lm_model_class;
extern const TachModelClass tach_cnn_model_class;

G_END_DECLS
