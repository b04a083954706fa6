/* tach-bilstm.c: workload W1, the bidirectional LSTM classifier of the
 * TF1 CudnnLSTM vs Keras CuDNNLSTM report.
 *
 *   x (N, T=10, F=300) -> BiLSTM, H=40 per direction, sequences (N, 10, 80)
 *   -> max over time (N, 80) -> dense 80 -> 1 -> sigmoid + BCE (mean)
 *   Adam (lr 0.001, 0.9, 0.999, 1e-7) over one flat parameter buffer.
 * Those are the report's shapes and the defaults of --seq-len (T),
 * --features (F), --hidden (H) and --layers (stacked BiLSTM layers, each
 * above the first reading the 2H outputs of the one below).
 *
 * layout=misread hands the same batch-major buffer to a time-major LSTM
 * (T' = N, N' = 10), exactly the reported bug: state flows across samples
 * and the RNN makes N sequential steps instead of 10.  The max then runs
 * over axis 1 of the (N, 10, 80) tensor, as the user code did.
 *
 * launch=graph: prepare gets the batch (the feeder hands out fixed
 * buffers), step is all device work on fixed buffers.
 */
#include <math.h>
#include <string.h>

#include <inttypes.h>
#include <glib/gi18n-lib.h>

#include "tach-feeder.h"
#include "tach-error-private.h"
#include "tach-lstm-stack.h"
#include "tach-layers.h"
#include "tach-params.h"
#include "tach-model.h"
#include "tach-synthetic.h"

#define BILSTM_DIRS 2
#define BILSTM_DEFAULT_LR 0.001

typedef struct {
  TachBackend      *be;          /* borrowed */
  int               batch;
  int               T, F, layers;
  int               features;    /* 2H: the LSTM's output width */
  TachLstmDesc      desc;
  TachSyntheticSeq *seq;
  TachDataset       dataset;
  TachFeeder       *feeder;
  const float      *x;           /* this step's batch (device, borrowed from the feeder) */
  const float      *labels;
  TachParams       *params;
  guint             p_lstm, p_dense_w, p_dense_b;
  guint             u_lstm, u_dense;  /* shard=all's units: the LSTM, the dense head */
  TachLstmBlock    *block;       /* the LSTM weights' layout in p_lstm */
  TachLstmStack    *lstm;

  /* device activations and gradients */
  float            *y;           /* (N, T, 2H) */
  float            *dy;
  float            *pooled;      /* (N, 2H) */
  float            *dpooled;
  int32_t          *argmax;      /* (N, 2H) */
  float            *logits;      /* (N) */
  float            *dlogits;
  float            *loss;        /* scratch when the runner wants no loss */
} TachBilstm;

/* The LSTM as the configuration asks for it: the reported bug swaps the
 * meaning of T and N and nothing else. */
static void
bilstm_desc (const TachConfig *config, TachLstmDesc *desc)
{
  gboolean misread = config->layout == TACH_LAYOUT_MISREAD;

  *desc = (TachLstmDesc) {
    .T = misread ? (int) config->batch : (int) config->seq_len,
    .N = misread ? (int) config->seq_len : (int) config->batch,
    .I = (int) config->features,
    .H = (int) config->hidden,
    .dirs = BILSTM_DIRS,
    .time_major = misread,
    .training = TRUE,
    /* The input layer needs no input gradient. */
    .need_dx = FALSE,
    .precision = config->precision,
  };
}

/* Whether the shapes fit the ops' int sizes; the message names the knobs
 * to lower.  Memory is checked apart, by validation (memory_needs). */
static gboolean
bilstm_check_shape (const TachConfig *config, GError **error)
{
  double per_batch = (double) config->batch * config->seq_len
                     * MAX (config->features, BILSTM_DIRS * (double) config->hidden);
  double weights = 4.0 * config->hidden
                   * ((double) MAX (config->features, BILSTM_DIRS * config->hidden)
                      + config->hidden + 1) * BILSTM_DIRS;

  /* The batch is checked once, by validation (tach-validate.c's
   * check_batch), before any model is made. */
  g_assert (config->batch > 0);
  if (config->seq_len == 0 || config->features == 0 || config->hidden == 0
      || config->layers == 0)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("bilstm: {seq-len}, {features}, {hidden} and {layers} must each be at "
                     "least 1"));
      tach_error_add_pending_hint (error, TACH_HINT_ZERO_SHAPE, TACH_KNOB_COUNT, TACH_KNOB_COUNT,
                                   NULL, NULL);
      return FALSE;
    }
  if (per_batch > G_MAXINT)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("bilstm: {batch=%u} x {seq-len=%u} x {features=%u} (or 2 x {hidden=%u}) "
                     "is %.3g values in one tensor, more than 2^31: lower {batch}, {seq-len}, "
                     "{features} or {hidden}"),
                   config->batch, config->seq_len, config->features, config->hidden, per_batch);
      tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                   TACH_KNOB_BATCH, TACH_KNOB_BATCH, NULL, NULL);
      return FALSE;
    }
  if (weights > G_MAXINT)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("bilstm: {hidden=%u} with {features=%u} gives %.3g weights in one "
                     "LSTM layer, more than 2^31: lower {hidden} or {features}"),
                   config->hidden, config->features, weights);
      tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                   TACH_KNOB_HIDDEN, TACH_KNOB_HIDDEN, NULL, NULL);
      return FALSE;
    }
  return TRUE;
}

static void
bilstm_free (TachModel *model)
{
  TachBilstm *self = (TachBilstm *) model;
  TachBackend *be;

  if (self == NULL)
    return;
  be = self->be;
  tach_lstm_stack_free (self->lstm);
  tach_lstm_block_free (self->block);
  tach_params_free (self->params);
  tach_feeder_free (self->feeder);
  tach_synthetic_seq_free (self->seq);
  tach_backend_dealloc (be, self->y);
  tach_backend_dealloc (be, self->dy);
  tach_backend_dealloc (be, self->pooled);
  tach_backend_dealloc (be, self->dpooled);
  tach_backend_dealloc (be, self->argmax);
  tach_backend_dealloc (be, self->logits);
  tach_backend_dealloc (be, self->dlogits);
  tach_backend_dealloc (be, self->loss);
  g_free (self);
}

static TachModel *
bilstm_create (TachBackend *be, const TachConfig *config, GError **error)
{
  TachBilstm *self;
  guint64 samples = tach_config_get_samples (config);
  size_t seq_elems, pooled_elems;

  if (!bilstm_check_shape (config, error))
    return NULL;

  self = g_new0 (TachBilstm, 1);
  self->be = be;
  self->batch = (int) config->batch;
  self->T = (int) config->seq_len;
  self->F = (int) config->features;
  self->layers = (int) config->layers;
  self->features = BILSTM_DIRS * (int) config->hidden;
  bilstm_desc (config, &self->desc);

  self->seq = tach_synthetic_seq_new (config->seed, self->T, self->F, config->labels);
  tach_synthetic_seq_dataset (self->seq, samples, &self->dataset);
  self->feeder = tach_feeder_new (be, &self->dataset, config->feed, config->batch, error);
  if (self->feeder == NULL)
    goto fail;
  if (config->launch == TACH_LAUNCH_GRAPH && !tach_feeder_fix_batch (self->feeder, error))
    goto fail;

  /* The LSTM weights live in the layout the backend's op reads, so that
   * Adam updates them in place. */
  self->block = tach_lstm_block_new (be, &self->desc, self->layers, config->rnn, error);
  if (self->block == NULL)
    goto fail;
  self->params = tach_params_new ();
  self->u_lstm = tach_params_unit (self->params, FALSE);
  self->p_lstm = tach_params_add_aligned (self->params, "bilstm.w",
                                          tach_lstm_block_floats (self->block), TRUE,
                                          tach_lstm_block_align (self->block));
  self->u_dense = tach_params_unit (self->params, FALSE);
  self->p_dense_w = tach_params_add (self->params, "dense.w", self->features, TRUE);
  self->p_dense_b = tach_params_add (self->params, "dense.b", 1, TRUE);
  if (!tach_params_alloc (self->params, be, error))
    goto fail;
  tach_lstm_block_init (self->block, config->seed, self->p_lstm,
                        tach_params_host (self->params, self->p_lstm));
  tach_init_glorot (tach_params_host (self->params, self->p_dense_w), 1, self->features,
                    config->seed, self->p_dense_w);
  tach_params_host (self->params, self->p_dense_b)[0] = 0.0f;
  tach_params_upload (self->params);
  tach_params_set_optimizer (self->params, config->optimizer,
                             config->lr > 0.0 ? config->lr : BILSTM_DEFAULT_LR);

  seq_elems = (size_t) self->batch * self->T * self->features;
  pooled_elems = (size_t) self->batch * self->features;
  self->y = tach_backend_alloc (be, seq_elems * sizeof (float));
  self->dy = tach_backend_alloc (be, seq_elems * sizeof (float));
  self->pooled = tach_backend_alloc (be, pooled_elems * sizeof (float));
  self->dpooled = tach_backend_alloc (be, pooled_elems * sizeof (float));
  self->argmax = tach_backend_alloc (be, pooled_elems * sizeof (int32_t));
  self->logits = tach_backend_alloc (be, (size_t) self->batch * sizeof (float));
  self->dlogits = tach_backend_alloc (be, (size_t) self->batch * sizeof (float));
  self->loss = tach_backend_alloc (be, sizeof (float));
  self->lstm = tach_lstm_stack_new (be, &self->desc, self->layers, config->rnn,
                                    config->call_setup, self->block);
  if (!tach_backend_take_error (be, error))
    goto fail;
  return (TachModel *) self;

fail:
  bilstm_free ((TachModel *) self);
  return NULL;
}

static gboolean
bilstm_prepare (TachModel *model, TachStepCtx *ctx, GError **error)
{
  TachBilstm *self = (TachBilstm *) model;
  const void *xv = NULL, *yv = NULL;

  if (!tach_feeder_next (self->feeder, ctx->step, &xv, &yv, &ctx->feed_ms, error))
    return FALSE;
  self->x = xv;
  self->labels = yv;
  return TRUE;
}

static gboolean
bilstm_step (TachModel *model, TachStepCtx *ctx, GError **error)
{
  TachBilstm *self = (TachBilstm *) model;
  TachBackend *be = self->be;
  TachParams *p = self->params;
  const float *x = self->x, *labels = self->labels;
  const float *w_lstm = tach_params_data (p, self->p_lstm);
  const float *w_dense = tach_params_data (p, self->p_dense_w);
  int n = self->batch;

  /* Forward.  Under the misread the (T', N', 2H) output occupies the same
   * memory as (N, T, 2H) and is pooled as such, as the user code did.
   * Under shard=all each unit is gathered before it computes and given
   * back after (tach-params.h). */
  tach_params_need (p, self->u_lstm, FALSE);
  tach_lstm_stack_forward (self->lstm, x, w_lstm, self->y);
  tach_params_done (p, self->u_lstm, FALSE);
  ctx->host_ms += tach_lstm_stack_setup_ms (self->lstm);
  tach_op (be, max_over_time_fwd, self->y, self->pooled, self->argmax, n, self->T,
           self->features);
  tach_params_need (p, self->u_dense, FALSE);
  tach_dense_forward (be, self->pooled, w_dense, tach_params_data (p, self->p_dense_b),
                      self->logits, n, self->features, 1);
  tach_params_done (p, self->u_dense, FALSE);
  tach_op (be, sigmoid_bce, self->logits, labels, n,
           ctx->loss_slot != NULL ? ctx->loss_slot : self->loss, self->dlogits);
  if (ctx->acc_slot != NULL)
    tach_op (be, accuracy, self->logits, labels, n, 1, ctx->acc_slot);

  /* Backward; every gradient is overwritten, so no zeroing is needed. */
  tach_params_need (p, self->u_dense, TRUE);
  tach_dense_backward (be, self->pooled, w_dense, self->dlogits, self->dpooled,
                       tach_params_grad (p, self->p_dense_w),
                       tach_params_grad (p, self->p_dense_b), n, self->features, 1, 0.0f);
  tach_params_grad_ready (p, self->p_dense_b);
  tach_params_grad_ready (p, self->p_dense_w);
  tach_params_done (p, self->u_dense, TRUE);
  tach_op (be, max_over_time_bwd, self->dpooled, self->argmax, self->dy, n, self->T,
           self->features);
  tach_params_need (p, self->u_lstm, TRUE);
  tach_lstm_stack_backward (self->lstm, x, w_lstm, self->y, self->dy, NULL,
                            tach_params_grad (p, self->p_lstm));
  tach_params_grad_ready (p, self->p_lstm);
  tach_params_done (p, self->u_lstm, TRUE);
  tach_params_update (p);

  return tach_backend_take_error (be, error);
}

static guint64
bilstm_items_per_step (TachModel *model)
{
  return (guint64) ((TachBilstm *) model)->batch;
}

static double
bilstm_flops_per_step (TachModel *model)
{
  TachBilstm *self = (TachBilstm *) model;

  /* The LSTM forward and backward dominate; the dense head adds its GEMMs
   * (dx is needed there, to reach the LSTM). */
  return tach_lstm_stack_flops (&self->desc, self->layers, TRUE)
         + tach_dense_flops (self->batch, self->features, 1, TRUE, TRUE);
}

static gboolean
bilstm_supports_graph (const TachConfig *config, const char **why)
{
  if (config->call_setup == TACH_CALL_SETUP_PER_CALL)
    {
      if (why != NULL)
        *why = W_("{call-setup=per-call} rebuilds the LSTM in every step, which a replayed graph "
                 "cannot do; use {call-setup=persistent}");
      return FALSE;
    }
  return TRUE;
}

static void
bilstm_memory_needs (const TachConfig *config, guint64 *device_bytes, guint64 *host_bytes)
{
  TachLstmDesc desc;
  TachDataset dataset = {
    .n_samples = tach_config_get_samples (config),
    .x_elems = (size_t) config->seq_len * config->features,
    .x_type = TACH_DTYPE_F32,
    .y_elems = 1,
    .y_type = TACH_DTYPE_F32,
  };
  guint64 batch = config->batch;
  guint64 width = BILSTM_DIRS * (guint64) config->hidden;
  guint64 seq = batch * config->seq_len * width * sizeof (float);
  guint64 params, dev, feed_dev, feed_host;

  bilstm_desc (config, &desc);
  params = tach_lstm_stack_param_count (&desc, (int) config->layers) + width + 1;
  dev = tach_params_device_bytes (config, params, params);
  /* The batches, as the feeder allocates them for this feed. */
  tach_feeder_memory_needs (&dataset, config->feed, config->batch,
                            config->launch == TACH_LAUNCH_GRAPH, &feed_dev, &feed_host);
  dev += feed_dev;
  /* y and dy, and the recurrent work space: the fused plan's reserve or the
   * unrolled gates, cell states and dh, about six sequences' worth. */
  dev += 2 * seq + 6 * seq / 2;
  /* Stacked layers keep every layer's work space, and the outputs and
   * gradients between layers. */
  if (config->layers > 1)
    dev += (guint64) (config->layers - 1) * (6 * seq / 2);
  dev += tach_lstm_stack_between_bytes (&desc, (int) config->layers);
  dev += batch * width * (2 * sizeof (float) + sizeof (int32_t));
  dev += 2 * batch * sizeof (float) + sizeof (float);

  if (device_bytes != NULL)
    *device_bytes = dev;
  if (host_bytes != NULL)
    *host_bytes = feed_host;
}

/* The knobs only the bilstm uses. */
static const TachModelKnob bilstm_owns[] = {
  { TACH_KNOB_LAYOUT, N_("the layout misread is the bilstm report's bug"),
    N_("{layout=misread} needs {workload=bilstm}: use {layout=batch-major}") },
  { TACH_KNOB_LABELS, N_("only the bilstm has synthetic labels to choose") },
  { TACH_KNOB_SEQ_LEN, N_("only the bilstm reads sequences of feature vectors") },
  { TACH_KNOB_FEATURES, N_("only the bilstm reads sequences of feature vectors") },
  { TACH_KNOB_COUNT },
};

static const char *
bilstm_knob_unused (const TachConfig *config, TachKnobId knob)
{
  return knob == TACH_KNOB_DATA ? N_("the bilstm data is always synthetic") : NULL;
}

static void
bilstm_data_source (const TachConfig *config, const char **kind, char **path)
{
  (void) config;
  *kind = N_("synthetic sequences");
  *path = NULL;
}

const TachModelClass tach_bilstm_model_class = {
  .workload = TACH_WORKLOAD_BILSTM,
  .owns = bilstm_owns,
  .knob_unused = bilstm_knob_unused,
  .has_lstm = TRUE,
  .create = bilstm_create,
  .prepare = bilstm_prepare,
  .step = bilstm_step,
  .finish = NULL,
  .supports_graph = bilstm_supports_graph,
  .items_per_step = bilstm_items_per_step,
  .flops_per_step = bilstm_flops_per_step,
  .data_source = bilstm_data_source,
  .evaluate = NULL,
  .dup_text = NULL,
  .memory_needs = bilstm_memory_needs,
  .free = bilstm_free,
};
