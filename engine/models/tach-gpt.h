/* tach-gpt.h: workload W4, a decoder-only Transformer of GPT-2's
 * architecture, shared by its files (and its tests):
 *
 *   tach-gpt.c           the class: knobs, checks, memory, creation, steps
 *   tach-gpt-forward.c   the blocks' forward and backward passes
 *   tach-gpt-generate.c  prefill, decoding and the three KV caches
 *
 *   tokens (B, T) -> wte (V x C) + wpe (context x C) -> dropout
 *   -> L x [ x + dropout (proj (attn (LN1 x))); x + dropout (fc2 (gelu (fc (LN2 x)))) ]
 *   attn (x) = dropout (softmax (q k^T / sqrt (hd), causal)) v
 *   -> LNf -> logits = x wte^T (the LM head tied to the token embedding)
 *
 * as nanoGPT's model.py (GPT, Block, CausalSelfAttention, MLP) builds it:
 * pre-LayerNorm blocks, causal multi-head self-attention from one qkv
 * projection, a 4x GELU (tanh) MLP, dropout on the embeddings, on both
 * residual branches and on the attention's probabilities (model.py's
 * attn_dropout, or scaled_dot_product_attention's dropout_p): the naive
 * attention runs dropout_fwd over its probabilities, the fused op draws
 * the same mask inside (TachAttnDropout), so the modes keep the same
 * math.
 *
 * Threads: the engine thread (a test's thread in the tests).
 */
#pragma once

#include "tach-model.h"
#include "tach-params.h"
#include "tach-corpus.h"
#include "tach-feeder.h"

G_BEGIN_DECLS

/* nanoGPT's shakespeare-char dropout (config/train_shakespeare_char.py). */
#define TACH_GPT_DROPOUT 0.2f
/* AdamW as nanoGPT configures it for shakespeare-char: betas (0.9, 0.99),
 * torch's eps, weight decay 0.1 on the 2-D weights (configure_optimizers). */
#define TACH_GPT_BETA1 0.9f
#define TACH_GPT_BETA2 0.99f
#define TACH_GPT_EPS 1e-8f
#define TACH_GPT_WEIGHT_DECAY 0.1f

typedef struct {
  guint ln1_g, ln1_b, qkv_w, qkv_b, proj_w, proj_b;
  guint ln2_g, ln2_b, fc_w, fc_b, fc2_w, fc2_b;
  guint unit;                   /* shard=all: the block is a unit (tach-params.h) */
} TachGptLayerParams;

/* One block's activations, what backward reads.  Training gives each block
 * its own; generation shares one set but for the keys and values, which
 * are each block's cache.  R rows = B * Tq. */
typedef struct {
  float *ln1, *mean1, *rstd1;   /* [R, C], [R], [R] */
  float *qkv;                   /* [R, 3C] */
  float *q;                     /* [B, H, Tq, hd] */
  float *k, *v;                 /* [B, H, cap, hd]: the block's keys and values */
  float *scores;                /* naive: [B*H, Tq, Tk], the probabilities */
  float *o, *lse;               /* [B, H, Tq, hd], fused: [B*H*Tq] */
  float *att;                   /* [R, C]: the heads merged */
  float *ln2, *mean2, *rstd2;
  float *fc, *gelu;             /* [R, 4C]: the pre-activation and GELU's output */
} TachGptAct;

/* The shapes of one pass: Tq rows per stream at positions pos .. pos+Tq-1,
 * attending over Tk keys of a cache of cap positions.  @pos_dev, when not
 * NULL, is a device int32 added to @pos as the ops run
 * (TachBackend.pos_offset): kv-cache=static's decode under launch=graph
 * keeps its position there, so that its step has no host value that
 * changes per token. */
typedef struct {
  int tq, tk, cap, pos;
  const int32_t *pos_dev;
} TachGptPass;

typedef struct {
  TachBackend     *be;            /* borrowed */
  TachTask         task;
  TachAttention    attention;
  TachKvCache      kv_cache;
  TachFusion       fusion;
  TachSampling     sampling;
  TachPrecision    precision;
  int              batch, layers, heads, embed, hd, context, vocab, prompt, new_tokens;
  guint64          seed;
  guint            rank, ranks;
  gboolean         dropout;       /* training: dropout on */
  float            attn_dropout;  /* on the attention's probabilities: training's
                                   * TACH_GPT_DROPOUT, 0 (none) when generating */
  TachCorpus      *corpus;        /* byte-level: a token is a byte */

  TachParams         *params;
  guint               p_wte, p_wpe, p_lnf_g, p_lnf_b;
  /* shard=all's units besides the blocks': the root (the embeddings, wte
   * tied to the LM head: used at both ends, kept through the step) and
   * the final LayerNorm. */
  guint               u_root, u_lnf;
  TachGptLayerParams *lp;         /* [layers] */
  size_t              decayed;    /* floats at the start of the flat buffer that decay */

  /* Activations: each block's (act[l]), the residual stream before each
   * LayerNorm (stream[2L + 1]: stream[2l] feeds block l's LN1,
   * stream[2l + 1] its LN2, stream[2L] the final LN). */
  int              rows_max;      /* B * the most rows of one pass per stream */
  TachGptAct      *act;
  float          **stream;
  float           *emb;           /* [R, C] embeddings before dropout */
  float           *proj;          /* [R, C] a branch's output before dropout */
  float           *branch;        /* [R, C] after dropout */
  float           *xf, *meanf, *rstdf;
  float           *logits;        /* train [R, V]; generate [B, V] */
  /* Backward's scratch (training only). */
  float           *dlogits, *ds[2], *dln, *dqkv, *dq, *dk, *dv, *dout, *datt, *dbranch;
  float           *dfc, *dscores;
  guint64          activation_bytes;
  guint64          kv_bytes;      /* the caches' bytes now (dynamic: they grow) */
  guint64          kv_bytes_peak;

  float           *loss_scratch;  /* device float: a step's loss when the runner takes none */

  /* Generation (tach-gpt-generate.c). */
  int32_t         *seq;           /* device [B, context]: the request's tokens */
  int32_t         *seq_host;
  int32_t         *next_tok;      /* device [B]: the token drawn last */
  int32_t         *tok_host;
  /* kv-cache=static under launch=graph (@graph), where every step is a
   * decode step and a request's prompt but its last token is prefilled in
   * prepare: the decode position on the device (prepare uploads it:
   * prepare is never captured) and the position embedding's row it picks;
   * NULL eagerly, where the position is the ops' argument. */
  int32_t         *pos_dev;
  int32_t          pos_host;
  float           *pos_row;
  gboolean         graph;
  float           *logits_host;
  float          **kv_mem;        /* [2L]: the caches' storage (k of block l, then v) */
  int              kv_cap;        /* positions the caches hold */
  guint64          request;       /* the prompt being generated from */
  int              len;           /* tokens of the request so far */
  guint64          generated;     /* steps finished */

  /* Training. */
  guint64          n_windows, stride;
  TachDataset      dataset;
  TachFeeder      *feeder;
  const int32_t   *x, *labels;    /* this step's batch (borrowed from the feeder) */
} TachGpt;

/* tach-gpt-forward.c */
/* Allocates the activations and backward's scratch for @self's task. */
gboolean tach_gpt_alloc_work (TachGpt *self, GError **error);
void     tach_gpt_free_work (TachGpt *self);
/* The blocks and the final LayerNorm over the embedded rows, leaving the
 * final LN's output in self->xf (R = B * pass->tq rows).  @step keys
 * dropout's masks. */
void     tach_gpt_blocks_forward (TachGpt *self, const TachGptPass *pass, guint64 step);
/* Embeds @tokens (B rows of pass->tq each, @ld apart) at positions
 * pass->pos .., with the embedding dropout when training. */
void     tach_gpt_embed (TachGpt *self, const int32_t *tokens, int ld, const TachGptPass *pass,
                         guint64 step);
/* Training: forward over the batch @x, the loss into @loss against
 * @labels (and the accuracy into @acc, when not NULL), and backward into
 * the parameters' gradients (no update). */
void     tach_gpt_train_forward_backward (TachGpt *self, const int32_t *x,
                                          const int32_t *labels, float *loss, float *acc,
                                          guint64 step);
/* One optimizer step: AdamW's decoupled decay over the decayed prefix,
 * then Adam (or SGD) over every trainable float. */
void     tach_gpt_update (TachGpt *self);
double   tach_gpt_flops (const TachGpt *self, int tq, int tk, gboolean train);

/* tach-gpt-generate.c */
gboolean tach_gpt_generate_init (TachGpt *self, GError **error);
void     tach_gpt_generate_free (TachGpt *self);
/* The steps of one request: its prefill, then its decoding steps. */
int      tach_gpt_request_steps (const TachGpt *self);
gboolean tach_gpt_generate_prepare (TachGpt *self, TachStepCtx *ctx, GError **error);
gboolean tach_gpt_generate_step (TachGpt *self, TachStepCtx *ctx, GError **error);
gboolean tach_gpt_generate_finish (TachGpt *self, TachStepCtx *ctx, GError **error);
char    *tach_gpt_generate_dup_text (TachGpt *self);

/* The floats of a model of @config (validation's count, before anything
 * is allocated): its parameters, a step's activations (backward's scratch
 * included) and the KV cache at its largest. */
void     tach_gpt_memory_floats (const TachConfig *config, guint64 *params,
                                 guint64 *activations, guint64 *kv_cache);

/* For the tests: the model of a run of @config on @be, and its pieces. */
TachGpt *tach_gpt_new (TachBackend *be, const TachConfig *config, GError **error);
void     tach_gpt_free (TachGpt *self);

G_END_DECLS
