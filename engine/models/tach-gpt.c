/* tach-gpt.c: workload W4, gpt (tach-gpt.h draws the model): its knobs,
 * its checks, its memory, its parameters and its steps.
 *
 * Parameters, nanoGPT's (model.py, _init_weights): weights normal with
 * std 0.02, the residual projections' (attn c_proj, mlp c_proj) 0.02 /
 * sqrt (2 layers), biases zero, LayerNorms 1 and 0; the token embedding
 * is also the LM head.  The 2-D weights (the embeddings included, as
 * configure_optimizers decays every tensor of two dimensions) come first
 * in the flat buffer, so that AdamW's decay is one pass over its start.
 *
 * task=train: windows of context + 1 bytes of the corpus (nanoGPT's
 * get_batch: x the first context bytes, y the next one of each), in a
 * fixed seeded order; the loss is the mean cross-entropy over every
 * position.  task=generate: tach-gpt-generate.c.
 */
#include <math.h>
#include <string.h>

#include <inttypes.h>
#include <glib/gi18n-lib.h>
#include <glib/gstdio.h>

#include "tach-error-private.h"
#include "tach-feeder.h"
#include "tach-gpt.h"
#include "tach-layers.h"
#include "tach-rand.h"

/* The text the generate task draws its prompts from without --data. */
#define GPT_GENERATE_BYTES 65536

/* ------------------------------------------------------------- shapes */

/* The floats of each part of a model of @config: its parameters (and how
 * many of them decay), the activations of a step and the KV cache at its
 * longest.  alloc_work and generate_init allocate exactly these. */
typedef struct {
  guint64 params, decayed, activations, kv_cache;
} GptFloats;

static int
gpt_new_tokens (const TachConfig *config)
{
  return config->new_tokens > 0 ? (int) config->new_tokens
                                : (int) config->context - (int) config->prompt;
}

/* Rows of one pass per stream: the context when training or recomputing
 * the prefix, else the prompt's prefill. */
static guint64
gpt_pass_rows (const TachConfig *config)
{
  if (config->task == TACH_TASK_TRAIN || config->kv_cache == TACH_KV_CACHE_NONE)
    return config->context;
  return config->prompt;
}

static GptFloats
gpt_floats (const TachConfig *config)
{
  guint64 C = config->embed, L = config->layers, V = config->vocab, T = config->context;
  guint64 B = config->batch, H = config->heads;
  guint64 R = B * gpt_pass_rows (config), tq = gpt_pass_rows (config);
  gboolean train = config->task == TACH_TASK_TRAIN;
  gboolean naive = config->attention == TACH_ATTENTION_NAIVE;
  /* One block's activations: ln1, q, o, att, ln2 (R x C), qkv (3), fc and
   * gelu (4 each), the norms' statistics, the scores or the lse. */
  guint64 block = R * C * (5 + 3 + 8) + 4 * R + (naive ? B * H * tq * T : 0)
                  + (!naive && train ? B * H * tq : 0) + (train ? 2 * R * C : 0);
  GptFloats f;

  f.decayed = V * C + T * C + L * 12 * C * C;
  f.params = f.decayed + L * (4 * C + 3 * C + C + 4 * C + C) + 2 * C;
  f.activations = (train ? L : 1) * block
                  /* the stream, emb, proj, branch, xf, the final norm's statistics */
                  + (train ? (2 * L + 1) : 2) * R * C + 2 * R * C + (train ? R * C : 0)
                  + R * C + 2 * R
                  + (train ? R : B) * V;
  if (train)
    /* backward: dlogits, two stream gradients, dln, dqkv (3), dq, dk, dv,
     * dout, datt, dbranch, dfc (4), dscores */
    f.activations += R * V + R * C * (2 + 1 + 3 + 6 + 4) + (naive ? B * H * tq * T : 0);
  f.kv_cache = 0;
  if (!train && config->kv_cache == TACH_KV_CACHE_NONE)
    f.activations += 2 * B * H * T * (C / MAX (H, 1));
  else if (!train)
    f.kv_cache = 2 * L * B * T * C;
  return f;
}

void
tach_gpt_memory_floats (const TachConfig *config, guint64 *params, guint64 *activations,
                        guint64 *kv_cache)
{
  GptFloats f = gpt_floats (config);

  if (params != NULL)
    *params = f.params;
  if (activations != NULL)
    *activations = f.activations;
  if (kv_cache != NULL)
    *kv_cache = f.kv_cache;
}

/* ------------------------------------------------------------- checks */

static gboolean
gpt_fail (GError **error, TachKnobId knob, const char *fix_value, const char *message)
{
  g_set_error_literal (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG, message);
  tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE, knob, knob, fix_value, NULL);
  return FALSE;
}

static gboolean
gpt_check (const TachConfig *config, GError **error)
{
  gboolean generate = config->task == TACH_TASK_GENERATE;
  GptFloats f;
  double largest;

  if (config->feed == TACH_FEED_HOST_F64 && !generate)
    return gpt_fail (error, TACH_KNOB_FEED, "host-f32",
                     W_("{feed=host-f64} converts float64 features, and gpt's inputs are token "
                        "ids: use {feed=host-f32}, {feed=prefetch} or {feed=resident}"));
  if (config->heads == 0 || config->embed % config->heads != 0)
    {
      g_autofree char *message =
        g_strdup_printf (W_("gpt: {heads=%u} does not divide {embed=%u}: each head takes an "
                            "equal share of the width; pick heads that divide it"),
                         config->heads, config->embed);

      return gpt_fail (error, TACH_KNOB_HEADS, NULL, message);
    }
  if (generate && config->prompt > config->context)
    {
      g_autofree char *message =
        g_strdup_printf (W_("gpt: {prompt=%u} is longer than {context=%u}: the prompt must fit "
                            "the position table; lower {prompt} or raise {context}"),
                         config->prompt, config->context);

      return gpt_fail (error, TACH_KNOB_PROMPT, NULL, message);
    }
  if (generate && config->prompt + (guint64) gpt_new_tokens (config) > config->context)
    {
      g_autofree char *message =
        g_strdup_printf (W_("gpt: {prompt=%u} and {new-tokens=%u} take %" PRIu64
                            " positions, beyond the position table of {context=%u}: lower "
                            "{new-tokens} or raise {context}"),
                         config->prompt, config->new_tokens,
                         config->prompt + (guint64) config->new_tokens, config->context);

      return gpt_fail (error, TACH_KNOB_NEW_TOKENS, "0", message);
    }
  if (generate && config->prompt == config->context && config->new_tokens == 0)
    return gpt_fail (error, TACH_KNOB_PROMPT, NULL,
                     W_("gpt: {prompt} fills the whole {context}, which leaves no position for "
                        "a new token: lower {prompt} or raise {context}"));
  /* The ops take int sizes: the largest tensor must have fewer than 2^31
   * elements (memory is checked apart, from memory_needs). */
  f = gpt_floats (config);
  largest = (double) config->batch * gpt_pass_rows (config)
            * MAX ((double) config->vocab,
                   MAX (4.0 * config->embed, (double) config->heads * config->context));
  if ((double) f.params > G_MAXINT)
    {
      g_autofree char *message =
        g_strdup_printf (W_("gpt: {layers=%u} blocks {embed=%u} wide hold %.3g parameters, more "
                            "than 2^31 in one buffer: lower {layers} or {embed}"),
                         config->layers, config->embed, (double) f.params);

      return gpt_fail (error, TACH_KNOB_EMBED, NULL, message);
    }
  if (largest > G_MAXINT)
    {
      g_autofree char *message =
        g_strdup_printf (W_("gpt: {batch=%u} x {context=%u} x {vocab=%u} (or x 4 {embed=%u}) "
                            "is %.3g values in one tensor, more than 2^31: lower {batch} or "
                            "{context}"),
                         config->batch, config->context, config->vocab, config->embed, largest);

      return gpt_fail (error, TACH_KNOB_BATCH, NULL, message);
    }
  return TRUE;
}

static guint
gpt_attention_head_dim (const TachConfig *config)
{
  if (config->attention != TACH_ATTENTION_FUSED || config->heads == 0)
    return 0;
  return config->embed / config->heads;
}

/* What takes the memory, where no shape knob was changed (validation
 * names those first): the activations of the batch's rows. */
static gboolean
gpt_memory_hint (const TachConfig *config, char **what, const char **fix, TachKnobId *knob,
                 const char **fix_value)
{
  GptFloats f = gpt_floats (config);
  g_autofree char *size = g_format_size (f.activations * sizeof (float));

  *what = g_strdup_printf (W_("gpt's activations (%s for {batch=%u} x %" PRIu64
                              " tokens)"), size, config->batch, gpt_pass_rows (config));
  *fix = W_("lower {batch} or {context}");
  *knob = TACH_KNOB_BATCH;
  return TRUE;
}

static void
gpt_memory_needs (const TachConfig *config, guint64 *device_bytes, guint64 *host_bytes)
{
  GptFloats f = gpt_floats (config);
  guint64 B = config->batch, T = config->context;
  gboolean train = config->task == TACH_TASK_TRAIN;
  guint64 text = train ? tach_config_get_samples (config) + T : GPT_GENERATE_BYTES;
  guint64 dev, host;
  GStatBuf st;

  if (config->data != NULL && g_stat (config->data, &st) == 0)
    text = (guint64) st.st_size;
  dev = tach_params_device_bytes (config, f.params, train ? f.params : 0)
        + (f.activations + f.kv_cache) * sizeof (float);
  /* The corpus as int32 tokens, and its text while it is made. */
  host = text * (sizeof (int32_t) + 2);
  if (train)
    {
      TachDataset dataset = { .n_samples = MAX (text, T + 1) - T, .x_elems = T,
                              .x_type = TACH_DTYPE_I32, .y_elems = T, .y_type = TACH_DTYPE_I32 };
      guint64 feed_dev, feed_host;

      if (config->samples > 0)
        dataset.n_samples = MIN (dataset.n_samples, config->samples);
      tach_feeder_memory_needs (&dataset, config->feed, config->batch,
                                config->launch == TACH_LAUNCH_GRAPH, &feed_dev, &feed_host);
      dev += feed_dev;
      host += feed_host;
    }
  else
    {
      dev += B * (T + 1) * sizeof (int32_t);
      host += B * (T + config->vocab) * sizeof (float);
    }
  if (device_bytes != NULL)
    *device_bytes = dev;
  if (host_bytes != NULL)
    *host_bytes = host;
}

/* ------------------------------------------------------------- create */

static void
fill_window (gpointer user, guint64 i, double *x, void *y)
{
  TachGpt *self = user;
  guint64 pos = (i % self->n_windows) * self->stride % self->n_windows;
  int32_t *labels = y;

  for (int t = 0; t < self->context; t++)
    {
      x[t] = self->corpus->tokens[pos + t];
      labels[t] = self->corpus->tokens[pos + t + 1];
    }
}

/* nanoGPT's normal (0, @std) initialisation, counter-based. */
static void
init_normal (TachParams *p, guint slice, float std, guint64 seed)
{
  size_t n = tach_params_count (p, slice);
  float *host = tach_params_host (p, slice);
  g_autofree double *draws = g_new (double, MAX (n, 1));

  tach_rand_normal_fill (seed, TACH_RAND_COUNTER (TACH_RAND_STREAM_INIT, slice), 0, n, draws);
  for (size_t i = 0; i < n; i++)
    host[i] = (float) (std * draws[i]);
}

static void
init_const (TachParams *p, guint slice, float value)
{
  float *host = tach_params_host (p, slice);

  for (size_t i = 0; i < tach_params_count (p, slice); i++)
    host[i] = value;
}

static gboolean
gpt_params (TachGpt *self, const TachConfig *config, GError **error)
{
  TachParams *p = self->params = tach_params_new ();
  size_t C = (size_t) self->embed;
  float std_proj = 0.02f / sqrtf (2.0f * self->layers);
  /* Generation trains nothing: no gradients, no optimiser state. */
  gboolean trains = self->task == TACH_TASK_TRAIN;
  char name[64];

  self->lp = g_new0 (TachGptLayerParams, self->layers);
  /* The decayed 2-D weights first; under shard=all each block is a unit
   * of two pieces, its 2-D weights and its 1-D ones. */
  self->u_root = tach_params_unit (p, TRUE);
  self->p_wte = tach_params_add (p, "wte", (size_t) self->vocab * C, trains);
  self->p_wpe = tach_params_add (p, "wpe", (size_t) self->context * C, trains);
  for (int l = 0; l < self->layers; l++)
    {
      TachGptLayerParams *w = &self->lp[l];

      w->unit = tach_params_unit (p, FALSE);
#define ADD(field, what, count) \
      g_snprintf (name, sizeof name, "h.%d." what, l), \
      w->field = tach_params_add (p, name, count, trains)
      ADD (qkv_w, "attn.c_attn.weight", 3 * C * C);
      ADD (proj_w, "attn.c_proj.weight", C * C);
      ADD (fc_w, "mlp.c_fc.weight", 4 * C * C);
      ADD (fc2_w, "mlp.c_proj.weight", 4 * C * C);
    }
  for (int l = 0; l < self->layers; l++)
    {
      TachGptLayerParams *w = &self->lp[l];

      tach_params_use_unit (p, w->unit);
      ADD (ln1_g, "ln_1.weight", C);
      ADD (ln1_b, "ln_1.bias", C);
      ADD (qkv_b, "attn.c_attn.bias", 3 * C);
      ADD (proj_b, "attn.c_proj.bias", C);
      ADD (ln2_g, "ln_2.weight", C);
      ADD (ln2_b, "ln_2.bias", C);
      ADD (fc_b, "mlp.c_fc.bias", 4 * C);
      ADD (fc2_b, "mlp.c_proj.bias", C);
#undef ADD
    }
  self->u_lnf = tach_params_unit (p, FALSE);
  self->p_lnf_g = tach_params_add (p, "ln_f.weight", C, trains);
  self->p_lnf_b = tach_params_add (p, "ln_f.bias", C, trains);
  if (!tach_params_alloc (p, self->be, error))
    return FALSE;
  self->decayed = tach_params_offset (p, self->lp[0].ln1_g);

  init_normal (p, self->p_wte, 0.02f, self->seed);
  init_normal (p, self->p_wpe, 0.02f, self->seed);
  for (int l = 0; l < self->layers; l++)
    {
      const TachGptLayerParams *w = &self->lp[l];

      init_normal (p, w->qkv_w, 0.02f, self->seed);
      init_normal (p, w->proj_w, std_proj, self->seed);
      init_normal (p, w->fc_w, 0.02f, self->seed);
      init_normal (p, w->fc2_w, std_proj, self->seed);
      init_const (p, w->ln1_g, 1.0f);
      init_const (p, w->ln2_g, 1.0f);
      /* The biases and the LayerNorms' shifts stay as allocated: zero. */
    }
  init_const (p, self->p_lnf_g, 1.0f);
  tach_params_upload (p);
  tach_params_set_optimizer (p, config->optimizer, config->lr > 0.0 ? config->lr : 1e-3);
  tach_params_set_adam (p, TACH_GPT_BETA1, TACH_GPT_BETA2, TACH_GPT_EPS);
  return TRUE;
}

static gboolean
gpt_train_data (TachGpt *self, const TachConfig *config, GError **error)
{
  TachBackend *be = self->be;
  guint64 samples = tach_config_get_samples (config);

  self->corpus = tach_corpus_bytes_for_config (config, samples + self->context,
                                               (gsize) self->context + 1, error);
  if (self->corpus == NULL)
    return FALSE;
  self->n_windows = self->corpus->n_tokens - self->context;
  if (config->samples > 0)
    self->n_windows = MIN (self->n_windows, config->samples);
  if (self->n_windows < config->batch)
    {
      g_autofree char *fits = g_strdup_printf ("%" PRIu64, self->n_windows);

      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   W_("The text gives %" PRIu64 " training windows of {context=%u} + 1 bytes, "
                      "fewer than one batch ({batch=%u}): lower {batch} or give a longer text"),
                   self->n_windows, config->context, config->batch);
      tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE, TACH_KNOB_BATCH,
                                   TACH_KNOB_BATCH, fits, NULL);
      return FALSE;
    }
  self->stride = tach_corpus_window_stride (self->n_windows);
  self->dataset = (TachDataset) {
    .n_samples = self->n_windows, .x_elems = self->context, .x_type = TACH_DTYPE_I32,
    .y_elems = self->context, .y_type = TACH_DTYPE_I32, .fill = fill_window, .data = self,
  };
  self->feeder = tach_feeder_new (be, &self->dataset, config->feed, config->batch, error);
  if (self->feeder == NULL)
    return FALSE;
  return config->launch != TACH_LAUNCH_GRAPH || tach_feeder_fix_batch (self->feeder, error);
}

void
tach_gpt_free (TachGpt *self)
{
  if (self == NULL)
    return;
  if (self->task == TACH_TASK_GENERATE)
    tach_gpt_generate_free (self);
  tach_gpt_free_work (self);
  tach_backend_dealloc (self->be, self->loss_scratch);
  tach_feeder_free (self->feeder);
  tach_params_free (self->params);
  tach_corpus_free (self->corpus);
  g_free (self->lp);
  g_free (self);
}

TachGpt *
tach_gpt_new (TachBackend *be, const TachConfig *config, GError **error)
{
  TachGpt *self;
  gboolean train = config->task == TACH_TASK_TRAIN;

  if (!gpt_check (config, error))
    return NULL;
  self = g_new0 (TachGpt, 1);
  self->be = be;
  self->task = config->task;
  self->attention = config->attention;
  self->kv_cache = config->kv_cache;
  self->fusion = config->fusion;
  self->sampling = config->sampling;
  self->graph = config->launch == TACH_LAUNCH_GRAPH && config->task == TACH_TASK_GENERATE
                && config->kv_cache == TACH_KV_CACHE_STATIC;
  self->precision = config->precision;
  self->batch = (int) config->batch;
  self->layers = (int) config->layers;
  self->heads = (int) config->heads;
  self->embed = (int) config->embed;
  self->hd = self->embed / self->heads;
  self->context = (int) config->context;
  self->vocab = (int) config->vocab;
  self->prompt = (int) config->prompt;
  self->new_tokens = gpt_new_tokens (config);
  self->seed = config->seed;
  self->rank = be->rank;
  self->ranks = MAX (be->ranks, 1);
  self->dropout = train;
  self->attn_dropout = train ? TACH_GPT_DROPOUT : 0.0f;
  self->rows_max = self->batch * (int) gpt_pass_rows (config);

  if (train ? !gpt_train_data (self, config, error)
            : (self->corpus = tach_corpus_bytes_for_config (config, GPT_GENERATE_BYTES,
                                                            (gsize) self->prompt, error)) == NULL)
    goto fail;
  if (!gpt_params (self, config, error) || !tach_gpt_alloc_work (self, error))
    goto fail;
  /* Where a step's loss goes when the runner asks for none. */
  self->loss_scratch = tach_backend_alloc (be, sizeof (float));
  if (!train)
    {
      /* Generation never changes the weights: the backend may keep packed
       * copies of them from one token to the next. */
      tach_backend_freeze (be, tach_params_all_data (self->params),
                           tach_params_total (self->params) * sizeof (float));
      if (!tach_gpt_generate_init (self, error))
        goto fail;
    }
  if (!tach_backend_take_error (be, error))
    goto fail;
  return self;

fail:
  tach_gpt_free (self);
  return NULL;
}

/* -------------------------------------------------------------- class */

static TachModel *
gpt_create (TachBackend *be, const TachConfig *config, GError **error)
{
  return (TachModel *) tach_gpt_new (be, config, error);
}

static void
gpt_model_free (TachModel *model)
{
  tach_gpt_free ((TachGpt *) model);
}

static gboolean
gpt_prepare (TachModel *model, TachStepCtx *ctx, GError **error)
{
  TachGpt *self = (TachGpt *) model;
  const void *xv = NULL, *yv = NULL;

  if (self->task == TACH_TASK_GENERATE)
    return tach_gpt_generate_prepare (self, ctx, error);
  if (!tach_feeder_next (self->feeder, ctx->step, &xv, &yv, &ctx->feed_ms, error))
    return FALSE;
  self->x = xv;
  self->labels = yv;
  return TRUE;
}

static gboolean
gpt_step (TachModel *model, TachStepCtx *ctx, GError **error)
{
  TachGpt *self = (TachGpt *) model;

  if (self->task == TACH_TASK_GENERATE)
    return tach_gpt_generate_step (self, ctx, error);
  tach_gpt_train_forward_backward (self, self->x, self->labels,
                                   ctx->loss_slot != NULL ? ctx->loss_slot : self->loss_scratch,
                                   ctx->acc_slot, ctx->step);
  tach_gpt_update (self);
  return tach_backend_take_error (self->be, error);
}

static gboolean
gpt_finish (TachModel *model, TachStepCtx *ctx, GError **error)
{
  TachGpt *self = (TachGpt *) model;

  return self->task != TACH_TASK_GENERATE || tach_gpt_generate_finish (self, ctx, error);
}

static gboolean
gpt_supports_graph (const TachConfig *config, const char **why)
{
  const char *reason = NULL;

  if (config->task == TACH_TASK_GENERATE && config->kv_cache == TACH_KV_CACHE_NONE)
    reason = W_("{kv-cache=none} runs a longer prefix at every token, new shapes that a "
                "replayed graph cannot follow; use {kv-cache=static}");
  else if (config->task == TACH_TASK_GENERATE && config->kv_cache == TACH_KV_CACHE_DYNAMIC)
    reason = W_("{kv-cache=dynamic} reallocates its cache at every token, which a replayed "
                "graph cannot do; use {kv-cache=static}");
  else
    reason = tach_model_sampling_graph_why (config);
  if (why != NULL)
    *why = reason;
  return reason == NULL;
}

static guint64
gpt_items_per_step (TachModel *model)
{
  TachGpt *self = (TachGpt *) model;

  /* Training: tokens predicted; generation: tokens drawn. */
  return (guint64) self->batch * (self->task == TACH_TASK_TRAIN ? self->context : 1);
}

static double
gpt_flops_per_step (TachModel *model)
{
  TachGpt *self = (TachGpt *) model;
  int n = tach_gpt_request_steps (self);
  double sum = 0.0;

  if (self->task == TACH_TASK_TRAIN)
    return tach_gpt_flops (self, self->context, self->context, TRUE);
  /* Generation: the mean over a request's steps. */
  for (int k = 0; k < n; k++)
    {
      int done = k == 0 ? 0 : self->prompt + k - 1;
      int tq = k == 0 ? self->prompt : self->kv_cache == TACH_KV_CACHE_NONE ? done + 1 : 1;
      int tk = self->kv_cache == TACH_KV_CACHE_STATIC ? self->context : k == 0 ? tq : done + 1;

      sum += tach_gpt_flops (self, tq, tk, FALSE);
    }
  return sum / MAX (n, 1);
}

static char *
gpt_dup_text (TachModel *model)
{
  TachGpt *self = (TachGpt *) model;

  return self->task == TACH_TASK_GENERATE ? tach_gpt_generate_dup_text (self) : NULL;
}

static void
gpt_data_source (const TachConfig *config, const char **kind, char **path)
{
  gboolean given = config->data != NULL && config->data[0] != '\0';

  *kind = given ? N_("text") : N_("synthetic text");
  *path = given ? g_strdup (config->data) : NULL;
}

static guint64
gpt_request_steps (TachModel *model)
{
  TachGpt *self = (TachGpt *) model;

  return self->task == TACH_TASK_GENERATE ? (guint64) tach_gpt_request_steps (self) : 0;
}

static void
gpt_memory_parts (TachModel *model, double *bytes)
{
  TachGpt *self = (TachGpt *) model;
  double params = (double) tach_params_total (self->params) * sizeof (float);
  double trainable = (double) tach_params_trainable (self->params) * sizeof (float);

  bytes[0] = params;
  /* Gradients and Adam's two moments (none when generating). */
  bytes[1] = 3.0 * trainable;
  bytes[2] = (double) self->activation_bytes;
  bytes[3] = (double) self->kv_bytes_peak;
  /* Generation's products on frozen weights run from copies that the
   * backend keeps (the CPU's: packed for decoding, and reordered for
   * oneDNN's matmul for the prefill; each as large as the weights). */
  bytes[4] = (double) tach_backend_frozen_copies_peak (self->be);
}

/* The language models' knobs, and gpt's own. */
static const TachModelKnob gpt_owns[] = {
  TACH_MODEL_LANGUAGE_KNOBS,
  { TACH_KNOB_ATTENTION, N_("only gpt has attention") },
  { TACH_KNOB_KV_CACHE, N_("only gpt's generation caches keys and values") },
  { TACH_KNOB_FUSION, N_("only gpt fuses its elementwise ops") },
  { TACH_KNOB_HEADS, N_("only gpt has attention") },
  { TACH_KNOB_VOCAB, N_("only gpt's vocabulary has a size to choose") },
  { TACH_KNOB_PROMPT, N_("only gpt's generation prefills a prompt") },
  { TACH_KNOB_NEW_TOKENS, N_("only gpt's generation prefills a prompt") },
  { TACH_KNOB_COUNT },
};

static const char *
gpt_knob_unused (const TachConfig *config, TachKnobId knob)
{
  const char *why = tach_model_generate_knob_unused (&tach_gpt_model_class, config, knob);

  if (why != NULL)
    return why;
  if (config->task == TACH_TASK_TRAIN
      && (knob == TACH_KNOB_KV_CACHE || knob == TACH_KNOB_PROMPT || knob == TACH_KNOB_NEW_TOKENS))
    return N_("training has no KV cache and no prompt: they are gpt's generation's");
  if (knob == TACH_KNOB_RNN || knob == TACH_KNOB_HIDDEN)
    return N_("gpt has no LSTM: its blocks are attention and a 4 x embed MLP");
  return NULL;
}

const TachModelClass tach_gpt_model_class = {
  .workload = TACH_WORKLOAD_GPT,
  .owns = gpt_owns,
  .knob_unused = gpt_knob_unused,
  .check = gpt_check,
  .memory_hint = gpt_memory_hint,
  .has_lstm = FALSE,
  .attention_head_dim = gpt_attention_head_dim,
  .trains_on_tokens = TRUE,
  .create = gpt_create,
  .prepare = gpt_prepare,
  .step = gpt_step,
  .finish = gpt_finish,
  .supports_graph = gpt_supports_graph,
  .items_per_step = gpt_items_per_step,
  .flops_per_step = gpt_flops_per_step,
  .data_source = gpt_data_source,
  .evaluate = NULL,
  .dup_text = gpt_dup_text,
  .memory_needs = gpt_memory_needs,
  .request_steps = gpt_request_steps,
  .memory_parts = gpt_memory_parts,
  .free = gpt_model_free,
};
