/* tach-model.h: the interface between the runner and the workloads.
 *
 * A model is written once against the backend ops (tach-backend.h).  The
 * runner (tach-run.c) owns the step loop, timing, synchronisation and the
 * loss read-back; a model only queues one step's work.
 *
 * A step is up to three calls, in this order: prepare (optional: host work
 * and the batch's copies into the model's inputs), step (the compute) and
 * finish (optional: copies out of the step's results).  Eagerly the runner
 * makes all three for every step.  Under launch=graph it makes them
 * eagerly for the first step(s), then captures one call of step as a graph
 * and, for every later step, calls prepare, replays the graph and calls
 * finish.  So a model that supports graphs (supports_graph) must, when
 * created with config->launch == TACH_LAUNCH_GRAPH, keep everything that
 * changes from step to step out of step:
 *   - its inputs: prepare puts step i's batch into fixed device buffers
 *     that step reads (tach_feeder_next after tach_feeder_fix_batch);
 *   - ctx->step: step may pass it to the counter-taking ops (dropout,
 *     sample_tokens), whose backend adds the runner's step offset when
 *     they run (TachBackend.step_offset); it may not use it otherwise
 *     (no pointer arithmetic on it: that belongs in prepare or finish);
 *   - ctx->loss_slot and ctx->acc_slot: fixed slots during the capture,
 *     which the runner copies to the step's place after each replay;
 *   - no host work inside step: no synchronize, download, upload, alloc.
 *
 * Gradient accumulation (the accumulate knob) needs nothing of a model
 * beyond the above: the runner calls prepare, step and finish once per
 * micro-batch, with the same ctx->step for all of a step's micro-batches
 * and TachBackend.micro saying which one it is; the feeder picks the
 * micro-batch's samples from that (tach_feeder_next), and
 * tach_params_grad_ready / tach_params_update fold the gradients and
 * update after the last.  A model that draws per sample (dropout) keys
 * its draws by ctx->step and offsets them by the batch's place in the
 * step's global batch, tach_backend_batch_place (the cnn does), so that K
 * micro-batches of B draw what one batch of K B draws.
 *
 * Threads: every function here runs on the engine thread.
 */
#pragma once

#include "tach-backend.h"

G_BEGIN_DECLS

typedef struct _TachModel TachModel;

/* What the runner hands a model's evaluate: after each batch of the test
 * set, @progress with the test items done and in all, on the engine
 * thread; it returns FALSE when the run was asked to stop, and evaluate
 * then returns NaN at once, without an error. */
typedef struct {
  gboolean (*progress) (gpointer data, guint64 done, guint64 total);
  gpointer   data;
} TachEvalCtx;

typedef struct {
  guint64 step;       /* global step index, warm-up included, from 0; in a
                         captured step, the step of the capture */
  float  *loss_slot;  /* device float: the model writes this step's loss here (NULL: none) */
  float  *acc_slot;   /* device float for the accuracy metric, NULL unless metrics=accuracy */
  double  feed_ms;    /* out: host time spent getting the batch in place */
  double  host_ms;    /* out: host-side work the model did that is not feeding
                         (e.g. host sampling, per-call setup); compute is the rest */
} TachStepCtx;

/* A knob that one workload alone uses: why the other workloads leave it
 * unused (a msgid naming the workload) and, when not NULL, the error for
 * another workload whose config sets it away from its default. */
typedef struct {
  TachKnobId  knob;
  const char *why;
  const char *misuse;
} TachModelKnob;

typedef struct {
  TachWorkload workload;
  /* Which knobs apply (tach_config_knob_applies): @owns, the knobs only
   * this workload uses (ended by a row of knob TACH_KNOB_COUNT; NULL:
   * none), apply to no other workload; optional @knob_unused says why this
   * workload leaves @knob unused for @config in its own words (a msgid), or
   * NULL where the knob applies as far as it knows.  Knobs nobody owns and
   * this workload does not refuse apply. */
  const TachModelKnob *owns;
  const char *(*knob_unused) (const TachConfig *config, TachKnobId knob);
  /* Optional: the workload's own checks of @config, after those of the
   * other workloads' knobs (validation). */
  gboolean   (*check)         (const TachConfig *config, GError **error);
  /* Optional: what takes the memory in @config (*what, owned) and the fix
   * (*fix, static, translated), when the workload knows better than the
   * batch and the dataset size; FALSE otherwise.  *knob is the knob to
   * change (the error's hint), and *fix_value its value that fixes it, or
   * NULL (both preset to the batch and NULL). */
  gboolean   (*memory_hint)   (const TachConfig *config, char **what, const char **fix,
                               TachKnobId *knob, const char **fix_value);
  /* Whether a training step's items are tokens (every position of a
   * sequence predicts one), not samples. */
  gboolean      trains_on_tokens;
  /* Whether its step runs the backend's LSTM ops (a backend with
   * TACH_BACKEND_CAP_LSTM_FP32_ONLY then takes fp32 only). */
  gboolean      has_lstm;
  /* Optional: the width of one head of the fused attention a run of
   * @config runs, 0 where it runs none (validation holds it to the
   * device's limit, TachBackendRow's attention_head_dim_max). */
  guint      (*attention_head_dim) (const TachConfig *config);
  /* Builds the model, its data and its parameters for @config on @be. */
  TachModel *(*create)        (TachBackend *be, const TachConfig *config, GError **error);
  /* Optional: before step, never captured: host work and the copies of
   * step ctx->step's batch into the model's input buffers (it may block,
   * upload, allocate).  Adds its host time to ctx->feed_ms / host_ms. */
  gboolean   (*prepare)       (TachModel *model, TachStepCtx *ctx, GError **error);
  /* Queues one step (asynchronous on the GPU).  Errors: FALSE + @error, or
   * the backend's sticky error, which the runner also checks.  Under
   * launch=graph one call is captured: see the top of the file. */
  gboolean   (*step)          (TachModel *model, TachStepCtx *ctx, GError **error);
  /* Optional: after step (or its replay), never captured: per-step copies
   * out of the step's fixed buffers (e.g. the tokens generated). */
  gboolean   (*finish)        (TachModel *model, TachStepCtx *ctx, GError **error);
  /* Optional: whether the step for @config can be captured as a graph
   * (launch=graph); if not, *why (may be NULL) gets a translated reason
   * that names the knob to change.  NULL: the workload has no graph
   * support, and validation rejects launch=graph for it. */
  gboolean   (*supports_graph) (const TachConfig *config, const char **why);
  /* Samples (or tokens) processed per step, for samples/s. */
  guint64    (*items_per_step)(TachModel *model);
  double     (*flops_per_step)(TachModel *model);
  /* Optional: the data a run of @config reads (tach_config_get_data_source);
   * NULL: generated, "synthetic data". */
  void       (*data_source)   (const TachConfig *config, const char **kind, char **path);
  /* Optional: after the last step, e.g. test-set accuracy (NaN if none,
   * or when @ctx's progress asked it to stop); a front end shows the run
   * as evaluating meanwhile (tach_run_get_evaluation()). */
  double     (*evaluate)      (TachModel *model, TachEvalCtx *ctx, GError **error);
  /* Optional: generated text, or NULL. */
  char      *(*dup_text)      (TachModel *model);
  /* Optional: bytes the model needs on the device and on the host for
   * @config, for validation before anything is allocated. */
  void       (*memory_needs)  (const TachConfig *config, guint64 *device_bytes, guint64 *host_bytes);
  /* Optional: generation in requests of this many steps, a prefill then
   * decoding (the summary reports the two apart); 0 or NULL: none. */
  guint64    (*request_steps) (TachModel *model);
  /* Optional: the bytes of its parameters, the optimiser's state, a
   * step's activations, its KV cache (at its largest so far) and the
   * backend's packed copies of its weights (at their largest so far), in
   * @bytes[0..4]; after the last step. */
  void       (*memory_parts)  (TachModel *model, double *bytes);
  void       (*free)          (TachModel *model);
} TachModelClass;

/* The rows of the knobs both language models (lstm-lm and gpt) own: the
 * generate task and what belongs to it, the embedded context of tokens. */
#define TACH_MODEL_LANGUAGE_KNOBS \
  { TACH_KNOB_TASK, N_("only the language models (lstm-lm, gpt) have a generate task"), \
    N_("{task=generate} needs {workload=lstm-lm} or {workload=gpt}: only the language models " \
       "generate text") }, \
  { TACH_KNOB_SAMPLING, N_("only the language models' text generation samples tokens") }, \
  { TACH_KNOB_PRINT_TEXT, N_("only the language models' text generation produces text") }, \
  { TACH_KNOB_EMBED, N_("only the language models embed a context of tokens") }, \
  { TACH_KNOB_CONTEXT, N_("only the language models embed a context of tokens") }

const TachModelClass *tach_model_class_for (TachWorkload workload);

/* Why @config's workload leaves @knob unused (a msgid), or NULL: its own
 * words first, else those of the workload that owns the knob. */
const char          *tach_model_knob_unused (const TachConfig *config, TachKnobId knob);
/* The row of the first workload that owns @knob (and that workload), or
 * NULL.  A knob may have several owners (TACH_MODEL_LANGUAGE_KNOBS): it
 * applies to each of them. */
const TachModelKnob *tach_model_knob_owner (TachKnobId knob, const TachModelClass **owner);
/* The reason @klass's own row for @knob gives, or NULL: read from the
 * class itself, so a model asks it of its own class without going through
 * the registry (tach-models.c), which lists the models. */
static inline const char *
tach_model_owned_why (const TachModelClass *klass, TachKnobId knob)
{
  for (const TachModelKnob *k = klass->owns; k != NULL && k->knob != TACH_KNOB_COUNT; k++)
    if (k->knob == knob)
      return k->why;
  return NULL;
}

/* Whether @klass's own rows list @knob. */
static inline gboolean
tach_model_class_owns (const TachModelClass *klass, TachKnobId knob)
{
  return tach_model_owned_why (klass, knob) != NULL;
}

/* The language models' own rule: sampling and the generated text belong
 * to the generate task (the reason @klass's row gives), else NULL.  Inline,
 * as the rows' reader above, so that a model asks it without the registry. */
static inline const char *
tach_model_generate_knob_unused (const TachModelClass *klass, const TachConfig *config,
                                 TachKnobId knob)
{
  if (config->task != TACH_TASK_GENERATE
      && (knob == TACH_KNOB_SAMPLING || knob == TACH_KNOB_PRINT_TEXT))
    return tach_model_owned_why (klass, knob);
  return NULL;
}

/* Each workload's class, tach_<model class>_model_class, as
 * TACH_WORKLOAD_LIST (tach-knob-list.h) names it. */
#define TACH_MODEL_CLASS_DECLARE_(ID, klass, ...) extern const TachModelClass tach_##klass##_model_class;
TACH_WORKLOAD_LIST (TACH_MODEL_CLASS_DECLARE_)
#undef TACH_MODEL_CLASS_DECLARE_

G_END_DECLS
