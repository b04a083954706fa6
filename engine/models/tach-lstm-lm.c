/* tach-lstm-lm.c: workload W2, the LSTM language model of the TF1
 * static_rnn vs TF2 Keras predict report.
 *
 *   context (N, 4) token ids -> frozen embedding 554 x 100 -> (N, 4, 100)
 *   -> LSTM, hidden 100 (batch-major) -> last h (N, 100)
 *   -> dense 100 -> 554 -> softmax
 *   191 754 parameters, 136 354 trainable (the embedding is frozen).
 * Those are the report's shapes and the defaults of --context, --embed,
 * --hidden and --layers (stacked LSTM layers, each above the first
 * reading the hidden outputs of the one below).
 *
 * task=train: next-word prediction over windows of the corpus, softmax
 * cross-entropy, Adam by default.
 * task=generate: one step generates one token for each of `batch` streams:
 * the 4-token context runs through the model, a token is drawn from the
 * softmax with u = tach_rand_uniform (seed, SAMPLE stream + step, row) by
 * inverse CDF, and the context shifts.  sampling=device keeps all this on
 * the backend (the sample_tokens op); sampling=host reads the logits back
 * and draws on the host with the CPU op's own arithmetic (tach-sample.h),
 * so a seed generates the same text either way.  The loss of a generation step is the mean
 * -log p of the sampled tokens, computed on the device from the same
 * logits and tokens in both modes (the sampling op computes it as it
 * draws where the backend can: tach_backend_sample_tokens).
 *
 * call-setup=per-call rebuilds, every call, what Keras predict rebuilds:
 * the LSTM plan and work buffers, the activation buffers and the input
 * tensor, and reports that time as host time.
 *
 * A step is prepare (per-call rebuild, the batch or the input tensor),
 * step (the device work, which launch=graph captures: fixed buffers, the
 * sampling counter offset by the backend's step offset) and finish (the
 * copy of the step's tokens into the history, at the step's own place).
 *
 * The history (print_text) keeps the last LM_TEXT_STEPS steps' tokens of
 * each stream (fewer when a batch is wide: at most LM_TEXT_TOKENS in all),
 * a ring in which step s has slot s % cap: a run of millions of steps keeps
 * the end of its text, and the text says how much it left out.
 */
#include <math.h>
#include <string.h>

#include <inttypes.h>
#include <glib/gi18n-lib.h>
#include <glib/gstdio.h>

#include "tach-feeder.h"
#include "tach-error-private.h"
#include "tach-lstm-stack.h"
#include "tach-layers.h"
#include "tach-params.h"
#include "tach-model.h"
#include "tach-rand.h"
#include "tach-sample.h"
#include "tach-corpus.h"

#define LM_VOCAB 554
/* What the generated text keeps (see the top of the file). */
#define LM_TEXT_STEPS 10000
#define LM_TEXT_TOKENS (1 << 20)
#define LM_DEFAULT_LR 0.001
/* The corpus the generate task draws its starting contexts from when no
 * --data is given. */
#define LM_GENERATE_CORPUS 4096

typedef struct {
  TachBackend    *be;          /* borrowed */
  TachTask        task;
  TachSampling    sampling;
  TachCallSetup   call_setup;
  TachRnn         rnn;
  int             batch;
  int             embed, hidden, context, layers;
  guint64         seed;
  TachCorpus     *corpus;
  TachLstmDesc    desc;
  TachParams     *params;
  guint           p_lstm, p_dense_w, p_dense_b, p_embed;
  guint           u_lstm, u_dense;  /* shard=all's units (the frozen embedding is none's) */
  TachLstmBlock  *block;       /* the LSTM weights' layout in p_lstm */

  /* train: windows of the corpus in a fixed seeded order */
  guint64         n_windows;
  guint64         stride;
  TachDataset     dataset;
  TachFeeder     *feeder;
  const int32_t  *x;           /* train: this step's batch (device, borrowed from the feeder) */
  const int32_t  *labels;

  /* Rebuilt on every call under per-call setup (device). */
  TachLstmStack  *lstm;
  float          *emb;         /* (N, context, embed) */
  float          *y;           /* (N, context, hidden) */
  float          *dy;          /* (N, context, hidden), zero but for the last step */
  float          *logits;      /* (N, 554) */
  float          *dlogits;
  int32_t        *input;       /* generate: the context handed to the model */

  /* generate state */
  int32_t        *ctx_dev;     /* (N, 4): the context, device sampling */
  int32_t        *tok;         /* (N): this step's tokens, device */
  float          *loss;        /* scratch loss when the runner wants none */
  int32_t        *ctx_host;    /* (N, 4): the context, host sampling */
  int32_t        *start_ctx;   /* (N, 4): each stream's first context, for the text */
  float          *logits_host; /* (N, 554) */
  int32_t        *tok_host;
  int32_t        *history;     /* device (cap, N): the last cap steps' tokens, print_text */
  guint64         history_cap;
  guint64         generated;
} TachLstmLm;

/* ------------------------------------------------------------------ data */

static void
fill_window (gpointer user, guint64 i, double *x, void *y)
{
  TachLstmLm *self = user;
  guint64 pos = (i % self->n_windows) * self->stride % self->n_windows;

  for (int k = 0; k < self->context; k++)
    x[k] = self->corpus->tokens[pos + k];
  *(int32_t *) y = self->corpus->tokens[pos + self->context];
}

/* Whether the shapes fit the ops' int sizes; the message names the knobs
 * to lower.  Memory is checked apart, by validation (memory_needs). */
static gboolean
lm_check_shape (const TachConfig *config, GError **error)
{
  double per_batch = (double) config->batch
                     * MAX ((double) config->context * MAX (config->embed, config->hidden),
                            (double) LM_VOCAB);
  double weights = 4.0 * config->hidden
                   * ((double) MAX (config->embed, config->hidden) + config->hidden + 1);

  /* The batch is checked once, by validation (tach-validate.c's
   * check_batch), before any model is made. */
  g_assert (config->batch > 0);
  if (config->embed == 0 || config->hidden == 0 || config->context == 0 || config->layers == 0)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("lstm-lm: {embed}, {hidden}, {context} and {layers} must each be at "
                     "least 1"));
      tach_error_add_pending_hint (error, TACH_HINT_ZERO_SHAPE, TACH_KNOB_COUNT, TACH_KNOB_COUNT,
                                   NULL, NULL);
      return FALSE;
    }
  if (per_batch > G_MAXINT)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("lstm-lm: {batch=%u} x {context=%u} x {embed=%u} (or {hidden=%u}) is "
                     "%.3g values in one tensor, more than 2^31: lower {batch}, {context}, "
                     "{embed} or {hidden}"),
                   config->batch, config->context, config->embed, config->hidden, per_batch);
      tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                   TACH_KNOB_BATCH, TACH_KNOB_BATCH, NULL, NULL);
      return FALSE;
    }
  if (weights > G_MAXINT || (double) LM_VOCAB * MAX (config->embed, config->hidden) > G_MAXINT)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("lstm-lm: {hidden=%u} with {embed=%u} gives more than 2^31 weights in "
                     "one layer: lower {hidden} or {embed}"),
                   config->hidden, config->embed);
      tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                   TACH_KNOB_HIDDEN, TACH_KNOB_HIDDEN, NULL, NULL);
      return FALSE;
    }
  return TRUE;
}

/* --------------------------------------------------------- work buffers */

static void
lm_release_work (TachLstmLm *self)
{
  TachBackend *be = self->be;

  g_clear_pointer (&self->lstm, tach_lstm_stack_free);
  tach_backend_dealloc (be, self->emb);
  tach_backend_dealloc (be, self->y);
  tach_backend_dealloc (be, self->dy);
  tach_backend_dealloc (be, self->logits);
  tach_backend_dealloc (be, self->dlogits);
  if (self->input != self->ctx_dev)
    tach_backend_dealloc (be, self->input);
  self->emb = self->y = self->dy = self->logits = self->dlogits = NULL;
  self->input = NULL;
}

/* Builds the LSTM (plan or unrolled buffers) and the activation buffers:
 * once for a persistent session, every call for per-call setup. */
static void
lm_build_work (TachLstmLm *self)
{
  TachBackend *be = self->be;
  size_t seq = (size_t) self->batch * self->context * self->hidden;
  size_t out = (size_t) self->batch * LM_VOCAB;

  self->lstm = tach_lstm_stack_new (be, &self->desc, self->layers, self->rnn,
                                    TACH_CALL_SETUP_PERSISTENT, self->block);
  self->emb = tach_backend_alloc (be, (size_t) self->batch * self->context * self->embed
                                      * sizeof (float));
  self->y = tach_backend_alloc (be, seq * sizeof (float));
  self->logits = tach_backend_alloc (be, out * sizeof (float));
  if (self->task == TACH_TASK_TRAIN)
    {
      self->dy = tach_backend_alloc (be, seq * sizeof (float));
      self->dlogits = tach_backend_alloc (be, out * sizeof (float));
      /* Only the last step's h feeds the head: the other steps' dy stay 0. */
      tach_backend_zero (be, self->dy, seq * sizeof (float));
    }
  else if (self->call_setup == TACH_CALL_SETUP_PER_CALL)
    self->input = tach_backend_alloc (be, (size_t) self->batch * self->context * sizeof (int32_t));
  else
    self->input = self->ctx_dev;
}

static void
lm_free (TachModel *model)
{
  TachLstmLm *self = (TachLstmLm *) model;
  TachBackend *be;

  if (self == NULL)
    return;
  be = self->be;
  lm_release_work (self);
  tach_backend_dealloc (be, self->ctx_dev);
  tach_backend_dealloc (be, self->tok);
  tach_backend_dealloc (be, self->loss);
  tach_backend_dealloc (be, self->history);
  tach_feeder_free (self->feeder);
  tach_params_free (self->params);
  tach_lstm_block_free (self->block);
  tach_corpus_free (self->corpus);
  g_free (self->ctx_host);
  g_free (self->start_ctx);
  g_free (self->logits_host);
  g_free (self->tok_host);
  g_free (self);
}

static TachModel *
lm_create (TachBackend *be, const TachConfig *config, GError **error)
{
  TachLstmLm *self;
  TachParams *p;
  guint64 samples = tach_config_get_samples (config);
  gboolean train = config->task == TACH_TASK_TRAIN;
  size_t ctx_elems;

  if (!lm_check_shape (config, error))
    return NULL;

  self = g_new0 (TachLstmLm, 1);
  self->be = be;
  self->task = config->task;
  self->sampling = config->sampling;
  self->call_setup = config->call_setup;
  self->rnn = config->rnn;
  self->batch = (int) config->batch;
  self->seed = config->seed;
  self->embed = (int) config->embed;
  self->hidden = (int) config->hidden;
  self->context = (int) config->context;
  self->layers = (int) config->layers;
  self->desc = (TachLstmDesc) {
    .T = self->context, .N = self->batch, .I = self->embed, .H = self->hidden, .dirs = 1,
    .time_major = FALSE, .training = train,
    /* The embedding is frozen: nothing below the LSTM needs a gradient. */
    .need_dx = FALSE,
    .precision = config->precision,
    /* Per-call setup really rebuilds the plan: a library cache hit would
     * hide the cost the knob exists to show. */
    .uncached = config->call_setup == TACH_CALL_SETUP_PER_CALL,
    /* The rows are words: the vocabulary's rows of the embedding. */
    .rows_repeat = TRUE,
  };
  ctx_elems = (size_t) self->batch * self->context;

  self->corpus = tach_corpus_for_config (config, LM_VOCAB, train ? samples + self->context : LM_GENERATE_CORPUS, error);
  if (self->corpus == NULL)
    goto fail;

  if (train)
    {
      self->n_windows = self->corpus->n_tokens - self->context;
      if (config->samples > 0)
        self->n_windows = MIN (self->n_windows, config->samples);
      if (self->n_windows < config->batch)
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                       W_("The corpus gives %" PRIu64 " training windows, fewer than "
                         "one batch ({batch=%u}): lower {batch} or give a longer text"),
                       self->n_windows, config->batch);
          {
            g_autofree char *fits = g_strdup_printf ("%" PRIu64, (guint64) self->n_windows);

            /* The fix: the largest batch the corpus fills. */
            tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                         TACH_KNOB_BATCH, TACH_KNOB_BATCH,
                                         self->n_windows > 0 ? fits : NULL, NULL);
          }
          goto fail;
        }
      self->stride = tach_corpus_window_stride (self->n_windows);
      self->dataset = (TachDataset) {
        .n_samples = self->n_windows, .x_elems = self->context, .x_type = TACH_DTYPE_I32,
        .y_elems = 1, .y_type = TACH_DTYPE_I32, .fill = fill_window, .data = self,
      };
      self->feeder = tach_feeder_new (be, &self->dataset, config->feed, config->batch, error);
      if (self->feeder == NULL)
        goto fail;
      if (config->launch == TACH_LAUNCH_GRAPH && !tach_feeder_fix_batch (self->feeder, error))
        goto fail;
    }

  /* The LSTM weights live in the layout the backend's op reads, so that
   * Adam updates them in place. */
  self->block = tach_lstm_block_new (be, &self->desc, self->layers, self->rnn, error);
  if (self->block == NULL)
    goto fail;
  p = self->params = tach_params_new ();
  /* Generation never updates a weight: nothing trainable, so no gradients
   * and no optimiser state are allocated for it (as the gpt's). */
  self->u_lstm = tach_params_unit (p, FALSE);
  self->p_lstm = tach_params_add_aligned (p, "lstm.w", tach_lstm_block_floats (self->block), train,
                                          tach_lstm_block_align (self->block));
  self->u_dense = tach_params_unit (p, FALSE);
  self->p_dense_w = tach_params_add (p, "dense.w", (size_t) LM_VOCAB * self->hidden, train);
  self->p_dense_b = tach_params_add (p, "dense.b", LM_VOCAB, train);
  self->p_embed = tach_params_add (p, "embedding", (size_t) LM_VOCAB * self->embed, FALSE);
  if (!tach_params_alloc (p, be, error))
    goto fail;
  tach_lstm_block_init (self->block, config->seed, self->p_lstm, tach_params_host (p, self->p_lstm));
  tach_init_glorot (tach_params_host (p, self->p_dense_w), LM_VOCAB, self->hidden, config->seed,
                    self->p_dense_w);
  memset (tach_params_host (p, self->p_dense_b), 0, LM_VOCAB * sizeof (float));
  /* The "pretrained" embedding: seeded, frozen. */
  tach_init_uniform (tach_params_host (p, self->p_embed), (size_t) LM_VOCAB * self->embed, 1.0f,
                     config->seed, self->p_embed);
  tach_params_upload (p);
  tach_params_set_optimizer (p, config->optimizer, config->lr > 0.0 ? config->lr : LM_DEFAULT_LR);
  /* Generation never changes the weights: the backend may keep its own
   * copies of them (packed for its kernels) from one token to the next. */
  if (!train)
    for (guint i = 0; i < 2; i++)
      {
        guint slice = i == 0 ? self->p_lstm : self->p_dense_w;

        tach_backend_freeze (be, tach_params_data (p, slice),
                             tach_params_count (p, slice) * sizeof (float));
      }

  if (!train)
    {
      guint64 counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_DATA, 0x6c6d);
      gsize starts = self->corpus->n_tokens - self->context + 1;

      /* Each stream starts from a seeded window of the corpus. */
      self->start_ctx = g_new (int32_t, ctx_elems);
      for (int r = 0; r < self->batch; r++)
        {
          gsize at = tach_rand_bits (config->seed, counter, (guint64) r) % starts;

          memcpy (self->start_ctx + (size_t) r * self->context, self->corpus->tokens + at,
                  self->context * sizeof (int32_t));
        }
      self->ctx_host = g_memdup2 (self->start_ctx, ctx_elems * sizeof (int32_t));
      self->ctx_dev = tach_backend_alloc (be, ctx_elems * sizeof (int32_t));
      tach_backend_upload (be, self->ctx_dev, self->ctx_host, ctx_elems * sizeof (int32_t));
      self->tok = tach_backend_alloc (be, (size_t) self->batch * sizeof (int32_t));
      self->logits_host = g_new (float, (size_t) self->batch * LM_VOCAB);
      self->tok_host = g_new (int32_t, self->batch);
      if (config->print_text)
        {
          guint64 per_stream = MIN ((guint64) LM_TEXT_STEPS,
                                    (guint64) LM_TEXT_TOKENS / (guint64) self->batch);

          self->history_cap = MIN ((guint64) config->steps, MAX (per_stream, (guint64) 1));
          self->history = tach_backend_alloc (be, self->history_cap * self->batch
                                                  * sizeof (int32_t));
        }
    }
  self->loss = tach_backend_alloc (be, sizeof (float));

  /* A persistent session builds once; per-call setup builds in each step. */
  if (self->call_setup == TACH_CALL_SETUP_PERSISTENT)
    lm_build_work (self);
  if (!tach_backend_take_error (be, error))
    goto fail;
  return (TachModel *) self;

fail:
  lm_free ((TachModel *) self);
  return NULL;
}

/* ----------------------------------------------------------------- step */

static double
elapsed_ms (gint64 since)
{
  return (g_get_monotonic_time () - since) / 1000.0;
}

/* Embedding -> LSTM -> dense on the last step's h.  Returns the host time
 * the LSTM layer spent rebuilding its plan (per-call setup). */
static double
lm_forward (TachLstmLm *self, const int32_t *ctx)
{
  TachBackend *be = self->be;
  TachParams *p = self->params;
  int n = self->batch;

  tach_op (be, embedding, tach_params_data (p, self->p_embed), ctx, self->emb, n * self->context,
           self->embed);
  /* Under shard=all each unit is gathered before it computes and given
   * back after (tach-params.h); otherwise these do nothing. */
  tach_params_need (p, self->u_lstm, FALSE);
  tach_lstm_stack_forward (self->lstm, self->emb, tach_params_data (p, self->p_lstm), self->y);
  tach_params_done (p, self->u_lstm, FALSE);
  /* The last step's h rows are context * hidden apart in (N, context, hidden). */
  tach_params_need (p, self->u_dense, FALSE);
  tach_op (be, gemm, FALSE, TRUE, n, LM_VOCAB, self->hidden, 1.0f,
           self->y + (self->context - 1) * self->hidden, self->context * self->hidden,
           tach_params_data (p, self->p_dense_w), self->hidden, 0.0f, self->logits, LM_VOCAB);
  tach_op (be, bias_add, self->logits, tach_params_data (p, self->p_dense_b), n, LM_VOCAB);
  tach_params_done (p, self->u_dense, FALSE);
  return tach_lstm_stack_setup_ms (self->lstm);
}

static gboolean
lm_train_step (TachLstmLm *self, TachStepCtx *ctx, GError **error)
{
  TachBackend *be = self->be;
  TachParams *p = self->params;
  float *h_last_grad;
  int n = self->batch;

  ctx->host_ms += lm_forward (self, self->x);
  tach_op (be, softmax_ce, self->logits, self->labels, n, LM_VOCAB,
           ctx->loss_slot != NULL ? ctx->loss_slot : self->loss, self->dlogits);
  if (ctx->acc_slot != NULL)
    tach_op (be, accuracy, self->logits, self->labels, n, LM_VOCAB, ctx->acc_slot);

  /* The head: dW = dlogits^T h_last, db = sum dlogits, dh_last = dlogits W. */
  h_last_grad = self->dy + (self->context - 1) * self->hidden;
  tach_params_need (p, self->u_dense, TRUE);
  tach_op (be, gemm, TRUE, FALSE, LM_VOCAB, self->hidden, n, 1.0f, self->dlogits, LM_VOCAB,
           self->y + (self->context - 1) * self->hidden, self->context * self->hidden, 0.0f,
           tach_params_grad (p, self->p_dense_w), self->hidden);
  tach_op (be, bias_grad, self->dlogits, tach_params_grad (p, self->p_dense_b), n, LM_VOCAB, 0.0f);
  tach_op (be, gemm, FALSE, FALSE, n, self->hidden, LM_VOCAB, 1.0f, self->dlogits, LM_VOCAB,
           tach_params_data (p, self->p_dense_w), self->hidden, 0.0f, h_last_grad,
           self->context * self->hidden);
  tach_params_grad_ready (p, self->p_dense_b);
  tach_params_grad_ready (p, self->p_dense_w);
  tach_params_done (p, self->u_dense, TRUE);
  tach_params_need (p, self->u_lstm, TRUE);
  tach_lstm_stack_backward (self->lstm, self->emb, tach_params_data (p, self->p_lstm), self->y,
                            self->dy, NULL, tach_params_grad (p, self->p_lstm));
  tach_params_grad_ready (p, self->p_lstm);
  tach_params_done (p, self->u_lstm, TRUE);
  tach_params_update (p);
  return tach_backend_take_error (be, error);
}

static gboolean
lm_generate_step (TachLstmLm *self, TachStepCtx *ctx, GError **error)
{
  TachBackend *be = self->be;
  guint64 counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_SAMPLE, ctx->step);
  gint64 t0;

  ctx->host_ms += lm_forward (self, self->input);

  /* On the device, the op that draws also computes the -log p of what it
   * drew, when the runner wants it, from the same exponentials. */
  if (self->sampling == TACH_SAMPLING_DEVICE)
    tach_backend_sample_tokens (be, self->logits, self->batch, LM_VOCAB, self->seed, counter,
                                self->tok, self->ctx_dev, self->context, ctx->loss_slot);
  else
    {
      size_t out = (size_t) self->batch * LM_VOCAB;

      /* Wait for the forward pass first, so that the round trip below is
       * timed apart from the device compute. */
      tach_backend_synchronize (be);
      t0 = g_get_monotonic_time ();
      tach_backend_download (be, self->logits_host, self->logits, out * sizeof (float));
      if (tach_backend_ok (be))
        for (int r = 0; r < self->batch; r++)
          {
            int32_t *row = self->ctx_host + (size_t) r * self->context;
            int32_t t = tach_sample_row (self->logits_host + (size_t) r * LM_VOCAB, LM_VOCAB,
                                         tach_rand_uniform (self->seed, counter, (guint64) r),
                                         NULL);

            self->tok_host[r] = t;
            memmove (row, row + 1, (self->context - 1) * sizeof (int32_t));
            row[self->context - 1] = t;
          }
      tach_backend_upload (be, self->tok, self->tok_host, (size_t) self->batch * sizeof (int32_t));
      ctx->host_ms += elapsed_ms (t0);
      /* -log p of the drawn tokens, from the same logits as on the device. */
      if (ctx->loss_slot != NULL)
        tach_op (be, softmax_ce, self->logits, self->tok, self->batch, LM_VOCAB,
                 ctx->loss_slot, NULL);
    }

  return tach_backend_take_error (be, error);
}

/* Outside any graph: the per-call rebuild, then the step's input (the
 * batch, or the context tensor of generation). */
static gboolean
lm_prepare (TachModel *model, TachStepCtx *ctx, GError **error)
{
  TachLstmLm *self = (TachLstmLm *) model;
  TachBackend *be = self->be;
  size_t ctx_bytes = (size_t) self->batch * self->context * sizeof (int32_t);
  gint64 t0;

  if (self->call_setup == TACH_CALL_SETUP_PER_CALL)
    {
      t0 = g_get_monotonic_time ();
      /* What Keras predict rebuilds on every call: plan, buffers, input. */
      lm_release_work (self);
      lm_build_work (self);
      ctx->host_ms += elapsed_ms (t0);
    }
  if (self->task == TACH_TASK_TRAIN)
    {
      const void *xv = NULL, *yv = NULL;

      if (!tach_feeder_next (self->feeder, ctx->step, &xv, &yv, &ctx->feed_ms, error))
        return FALSE;
      self->x = xv;
      self->labels = yv;
      return TRUE;
    }

  /* The input tensor: from the host context when sampling there, copied
   * from the device context into a fresh tensor under per-call setup. */
  t0 = g_get_monotonic_time ();
  if (self->sampling == TACH_SAMPLING_HOST)
    tach_backend_upload (be, self->input, self->ctx_host, ctx_bytes);
  else if (self->input != self->ctx_dev)
    tach_backend_copy (be, self->input, self->ctx_dev, ctx_bytes);
  ctx->feed_ms += elapsed_ms (t0);
  return tach_backend_take_error (be, error);
}

static gboolean
lm_step (TachModel *model, TachStepCtx *ctx, GError **error)
{
  TachLstmLm *self = (TachLstmLm *) model;

  if (self->task == TACH_TASK_TRAIN)
    return lm_train_step (self, ctx, error);
  return lm_generate_step (self, ctx, error);
}

/* Outside any graph: this step's tokens go to its own place in the
 * history. */
static gboolean
lm_finish (TachModel *model, TachStepCtx *ctx, GError **error)
{
  TachLstmLm *self = (TachLstmLm *) model;

  if (self->history == NULL)
    return TRUE;
  tach_backend_copy (self->be, self->history + (ctx->step % self->history_cap) * self->batch,
                     self->tok,
                     (size_t) self->batch * sizeof (int32_t));
  self->generated = MAX (self->generated, ctx->step + 1);
  return tach_backend_take_error (self->be, error);
}

static gboolean
lm_supports_graph (const TachConfig *config, const char **why)
{
  const char *reason = NULL;

  if (config->call_setup == TACH_CALL_SETUP_PER_CALL)
    reason = W_("{call-setup=per-call} rebuilds the LSTM and its buffers in every step, which a "
               "replayed graph cannot do; use {call-setup=persistent}");
  else
    reason = tach_model_sampling_graph_why (config);
  if (why != NULL)
    *why = reason;
  return reason == NULL;
}

/* ----------------------------------------------------------- reporting */

static guint64
lm_items_per_step (TachModel *model)
{
  return (guint64) ((TachLstmLm *) model)->batch;
}

static double
lm_flops_per_step (TachModel *model)
{
  TachLstmLm *self = (TachLstmLm *) model;
  gboolean train = self->task == TACH_TASK_TRAIN;

  return tach_lstm_stack_flops (&self->desc, self->layers, train)
         + tach_dense_flops (self->batch, self->hidden, LM_VOCAB, train, train);
}

static char *
lm_dup_text (TachModel *model)
{
  TachLstmLm *self = (TachLstmLm *) model;
  g_autofree int32_t *tokens = NULL;
  guint64 kept, first;
  GString *text;

  if (self->history == NULL)
    return NULL;
  kept = MIN (self->generated, self->history_cap);
  first = self->generated - kept;
  tokens = g_new (int32_t, MAX (kept * self->batch, 1));
  tach_backend_download (self->be, tokens, self->history, kept * self->batch * sizeof (int32_t));
  if (!tach_backend_ok (self->be))
    return NULL;

  /* One line per stream: its starting context, then what it generated
   * (after "…" when the start of it was not kept). */
  text = g_string_new (NULL);
  if (first > 0)
    {
      g_string_append_printf (text, _("(the last %" PRIu64 " of %" PRIu64
                                      " words of each stream)"), kept, self->generated);
      g_string_append_c (text, '\n');
    }
  for (int r = 0; r < self->batch; r++)
    {
      g_autofree char *start = tach_corpus_detokenize (self->corpus,
                                                       self->start_ctx + (size_t) r * self->context,
                                                       self->context);

      g_string_append (text, start);
      if (first > 0)
        g_string_append (text, " \u2026");
      for (guint64 s = first; s < self->generated; s++)
        {
          int32_t t = tokens[(s % self->history_cap) * self->batch + r];

          g_string_append_c (text, ' ');
          g_string_append (text, t >= 0 && t < LM_VOCAB ? self->corpus->words[t] : "<unk>");
        }
      g_string_append_c (text, '\n');
    }
  return g_string_free (text, FALSE);
}

static void
lm_memory_needs (const TachConfig *config, guint64 *device_bytes, guint64 *host_bytes)
{
  TachLstmDesc desc = { .T = (int) config->context, .N = (int) MIN (config->batch, G_MAXINT),
                        .I = (int) config->embed, .H = (int) config->hidden, .dirs = 1,
                        .training = config->task == TACH_TASK_TRAIN };
  guint64 batch = config->batch;
  guint64 weights = tach_lstm_stack_param_count (&desc, (int) config->layers)
                    + (guint64) LM_VOCAB * (config->hidden + 1);
  guint64 trainable = config->task == TACH_TASK_TRAIN ? weights : 0;
  guint64 total = weights + (guint64) LM_VOCAB * config->embed;
  guint64 seq = batch * config->context * config->hidden * sizeof (float);
  guint64 emb = batch * config->context * config->embed * sizeof (float);
  guint64 out = batch * LM_VOCAB * sizeof (float);
  guint64 tokens = tach_config_get_samples (config) + config->context;
  guint64 dev, host;
  TachDataset dataset = { .x_elems = config->context, .x_type = TACH_DTYPE_I32,
                          .y_elems = 1, .y_type = TACH_DTYPE_I32 };
  GStatBuf st;

  /* A text of S bytes has at most S / 2 + 1 words. */
  if (config->data != NULL && g_stat (config->data, &st) == 0)
    tokens = (guint64) st.st_size / 2 + 1;
  if (config->task == TACH_TASK_GENERATE && config->data == NULL)
    tokens = LM_GENERATE_CORPUS;
  dataset.n_samples = config->samples > 0 ? MIN (config->samples, tokens) : tokens;

  dev = tach_params_device_bytes (config, total, trainable);
  /* emb, y, dy; the recurrent work space (gates, cell states, their
   * gradients: about six sequences); logits and dlogits. */
  dev += emb + 8 * seq + 2 * out;
  /* Stacked layers: each layer's work space, the outputs between them. */
  if (config->layers > 1)
    dev += (guint64) (config->layers - 1) * 6 * seq;
  dev += tach_lstm_stack_between_bytes (&desc, (int) config->layers);
  dev += batch * (config->context * 2 + 1) * sizeof (int32_t);
  if (config->print_text)
    dev += (guint64) config->steps * batch * sizeof (int32_t);
  host = tokens * sizeof (int32_t) + batch * LM_VOCAB * sizeof (float);
  if (config->task == TACH_TASK_TRAIN)
    {
      guint64 feed_dev, feed_host;

      /* The batches and their host copies, as the feeder allocates them. */
      tach_feeder_memory_needs (&dataset, config->feed, config->batch,
                                config->launch == TACH_LAUNCH_GRAPH, &feed_dev, &feed_host);
      dev += feed_dev;
      host += feed_host;
    }
  if (device_bytes != NULL)
    *device_bytes = dev;
  if (host_bytes != NULL)
    *host_bytes = host;
}

/* The knobs only the language models use, and lstm-lm's own. */
static const TachModelKnob lm_owns[] = {
  TACH_MODEL_LANGUAGE_KNOBS,
  { TACH_KNOB_CALL_SETUP, N_("per-call setup is the Keras predict loop of lstm-lm") },
  { TACH_KNOB_COUNT },
};

static const char *
lm_knob_unused (const TachConfig *config, TachKnobId knob)
{
  return tach_model_generate_knob_unused (&tach_lstm_lm_model_class, config, knob);
}

static void
lm_data_source (const TachConfig *config, const char **kind, char **path)
{
  gboolean given = config->data != NULL && config->data[0] != '\0';

  *kind = given ? N_("text") : N_("synthetic text");
  *path = given ? g_strdup (config->data) : NULL;
}

static gboolean
lm_check (const TachConfig *config, GError **error)
{
  const char *message = NULL;

  if (config->feed == TACH_FEED_HOST_F64 && config->task == TACH_TASK_TRAIN)
    message = W_("{feed=host-f64} converts float64 features, and lstm-lm's inputs are token ids: "
                "use {feed=host-f32}, {feed=prefetch} or {feed=resident}");

  if (message != NULL)
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG, message);
      tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                   TACH_KNOB_FEED, TACH_KNOB_FEED, "host-f32", NULL);
      return FALSE;
    }
  return TRUE;
}

const TachModelClass tach_lstm_lm_model_class = {
  .workload = TACH_WORKLOAD_LSTM_LM,
  .owns = lm_owns,
  .knob_unused = lm_knob_unused,
  .check = lm_check,
  .has_lstm = TRUE,
  .create = lm_create,
  .prepare = lm_prepare,
  .step = lm_step,
  .finish = lm_finish,
  .supports_graph = lm_supports_graph,
  .items_per_step = lm_items_per_step,
  .flops_per_step = lm_flops_per_step,
  .data_source = lm_data_source,
  .evaluate = NULL,
  .dup_text = lm_dup_text,
  .memory_needs = lm_memory_needs,
  .free = lm_free,
};
