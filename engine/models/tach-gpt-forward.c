/* tach-gpt-forward.c: gpt's blocks, forward and backward, written once for
 * every mode: attention=naive materialises the scores ([B*H, Tq, Tk], a
 * strided batched product, the causal softmax, training's dropout over
 * them, another product) where fused calls attention_fwd/bwd, which drop
 * the same probabilities; fusion=none runs the softmax's scaling,
 * the residual adds and the MLP's bias as passes of their own where
 * elementwise hands them to the op beside them (softmax, LayerNorm,
 * GELU).  Each pair computes the same values in another order.
 */
#include <math.h>
#include <string.h>

#include "tach-feeder.h"
#include "tach-layers.h"
#include "tach-gpt.h"
#include "tach-rand.h"

/* ------------------------------------------------------------ buffers */

/* Allocates @floats floats of activations, counted. */
static float *
act_alloc (TachGpt *self, size_t floats)
{
  self->activation_bytes += floats * sizeof (float);
  return tach_backend_alloc (self->be, floats * sizeof (float));
}

gboolean
tach_gpt_alloc_work (TachGpt *self, GError **error)
{
  gboolean train = self->task == TACH_TASK_TRAIN;
  size_t B = (size_t) self->batch, C = (size_t) self->embed, H = (size_t) self->heads;
  size_t R = (size_t) self->rows_max, tq = R / B, V = (size_t) self->vocab;
  /* Keys per query: training's T; generation's longest cache. */
  size_t tk = train ? tq : (size_t) self->context;
  int L = self->layers;
  gboolean naive = self->attention == TACH_ATTENTION_NAIVE;

  self->act = g_new0 (TachGptAct, L);
  self->stream = g_new0 (float *, 2 * L + 1);
  for (int l = 0; l < L; l++)
    {
      TachGptAct *a = &self->act[l];

      /* Generation keeps one block's activations: the blocks run one after
       * the other and nothing goes back. */
      if (!train && l > 0)
        {
          float *k = a->k, *v = a->v;

          *a = self->act[0];
          a->k = k, a->v = v;
          continue;
        }
      a->ln1 = act_alloc (self, R * C);
      a->mean1 = act_alloc (self, R);
      a->rstd1 = act_alloc (self, R);
      a->qkv = act_alloc (self, R * 3 * C);
      a->q = act_alloc (self, R * C);
      if (train)
        {
          a->k = act_alloc (self, R * C);
          a->v = act_alloc (self, R * C);
        }
      if (naive)
        a->scores = act_alloc (self, B * H * tq * tk);
      a->o = act_alloc (self, R * C);
      if (!naive && train)
        a->lse = act_alloc (self, B * H * tq);
      a->att = act_alloc (self, R * C);
      a->ln2 = act_alloc (self, R * C);
      a->mean2 = act_alloc (self, R);
      a->rstd2 = act_alloc (self, R);
      a->fc = act_alloc (self, R * 4 * C);
      a->gelu = act_alloc (self, R * 4 * C);
    }
  /* The stream: every LayerNorm's input when training, two buffers in
   * turn when generating. */
  for (int s = 0; s < 2 * L + 1; s++)
    self->stream[s] = train || s < 2 ? act_alloc (self, R * C) : self->stream[s % 2];
  self->emb = act_alloc (self, R * C);
  self->proj = act_alloc (self, R * C);
  /* Without dropout a branch is its projection's output. */
  self->branch = self->dropout ? act_alloc (self, R * C) : self->proj;
  self->xf = act_alloc (self, R * C);
  self->meanf = act_alloc (self, R);
  self->rstdf = act_alloc (self, R);
  self->logits = act_alloc (self, (train ? R : B) * V);
  if (train)
    {
      self->dlogits = act_alloc (self, R * V);
      self->ds[0] = act_alloc (self, R * C);
      self->ds[1] = act_alloc (self, R * C);
      self->dln = act_alloc (self, R * C);
      self->dqkv = act_alloc (self, R * 3 * C);
      self->dq = act_alloc (self, R * C);
      self->dk = act_alloc (self, R * C);
      self->dv = act_alloc (self, R * C);
      self->dout = act_alloc (self, R * C);
      self->datt = act_alloc (self, R * C);
      self->dbranch = act_alloc (self, R * C);
      self->dfc = act_alloc (self, R * 4 * C);
      if (naive)
        self->dscores = act_alloc (self, B * H * tq * tk);
    }
  return tach_backend_take_error (self->be, error);
}

void
tach_gpt_free_work (TachGpt *self)
{
  TachBackend *be = self->be;
  int L = self->layers;
  gboolean train = self->task == TACH_TASK_TRAIN;

  for (int l = 0; self->act != NULL && l < (train ? L : MIN (L, 1)); l++)
    {
      TachGptAct *a = &self->act[l];
      float *bufs[] = { a->ln1, a->mean1, a->rstd1, a->qkv, a->q, train ? a->k : NULL,
                        train ? a->v : NULL, a->scores, a->o, a->lse, a->att, a->ln2, a->mean2,
                        a->rstd2, a->fc, a->gelu };

      for (guint i = 0; i < G_N_ELEMENTS (bufs); i++)
        tach_backend_dealloc (be, bufs[i]);
    }
  for (int s = 0; self->stream != NULL && s < (train ? 2 * L + 1 : 2); s++)
    tach_backend_dealloc (be, self->stream[s]);
  {
    float *bufs[] = { self->emb, self->proj, self->dropout ? self->branch : NULL, self->xf,
                      self->meanf,
                      self->rstdf, self->logits, self->dlogits, self->ds[0], self->ds[1],
                      self->dln, self->dqkv, self->dq, self->dk, self->dv, self->dout,
                      self->datt, self->dbranch, self->dfc, self->dscores };

    for (guint i = 0; i < G_N_ELEMENTS (bufs); i++)
      tach_backend_dealloc (be, bufs[i]);
  }
  g_clear_pointer (&self->act, g_free);
  g_clear_pointer (&self->stream, g_free);
}

/* ------------------------------------------------------------ dropout */

/* Where dropout site @site's mask starts for this rank: each site draws
 * the elements of the update's global batch (every rank's, every
 * micro-batch's), each rank and micro-batch its place in it
 * (tach_backend_batch_place), so that N ranks of k micro-batches draw
 * what one process at batch k N B draws. */
static guint64
dropout_first (const TachGpt *self, guint site, size_t per_rank)
{
  guint64 batches = (guint64) self->ranks * MAX (self->be->accumulate, 1);

  return ((guint64) site * batches + tach_backend_batch_place (self->be)) * per_rank;
}

static void
dropout_fwd (TachGpt *self, const float *x, float *y, size_t n, guint site, guint64 step)
{
  tach_op (self->be, dropout_fwd, x, y, n, TACH_GPT_DROPOUT, self->seed,
           TACH_RAND_COUNTER (TACH_RAND_STREAM_DROPOUT, step), dropout_first (self, site, n));
}

static void
dropout_bwd (TachGpt *self, const float *dy, float *dx, size_t n, guint site, guint64 step)
{
  tach_op (self->be, dropout_bwd, dy, dx, n, TACH_GPT_DROPOUT, self->seed,
           TACH_RAND_COUNTER (TACH_RAND_STREAM_DROPOUT, step), dropout_first (self, site, n));
}

/* Block @l's dropout of its attention probabilities ([B H, Tq, Tk] a pass,
 * on a stream of their own: their masks are not the branches' size), or
 * none when generating. */
static TachAttnDropout
attention_dropout (const TachGpt *self, int l, const TachGptPass *ps, guint64 step)
{
  size_t per_rank = (size_t) self->batch * self->heads * ps->tq * ps->tk;

  if (!(self->attn_dropout > 0.0f))
    return TACH_ATTN_NO_DROPOUT;
  return (TachAttnDropout) { self->attn_dropout, self->seed,
                             TACH_RAND_COUNTER (TACH_RAND_STREAM_ATTN_DROPOUT, step),
                             dropout_first (self, (guint) l, per_rank) };
}

/* ------------------------------------------------------------ forward */

void
tach_gpt_embed (TachGpt *self, const int32_t *tokens, int ld, const TachGptPass *pass,
                guint64 step)
{
  TachBackend *be = self->be;
  TachParams *p = self->params;
  int C = self->embed, T = pass->tq;
  size_t n = (size_t) self->batch * T * C;

  /* Under shard=all the root unit is gathered here and kept through the
   * step, for the LM head and backward (tach-params.h). */
  tach_params_need (p, self->u_root, FALSE);
  if (ld == T)
    tach_op (be, embedding, tach_params_data (p, self->p_wte), tokens, self->emb,
             self->batch * T, C);
  else
    for (int b = 0; b < self->batch; b++)
      tach_op (be, embedding, tach_params_data (p, self->p_wte), tokens + (size_t) b * ld,
               self->emb + (size_t) b * T * C, T, C);
  /* The positions' rows pos .. pos+T-1 over each stream's T x C; a device
   * position's one row picked by the embedding op first. */
  if (pass->pos_dev != NULL)
    {
      g_assert (T == 1 && pass->pos == 0);
      tach_op (be, embedding, tach_params_data (p, self->p_wpe), pass->pos_dev, self->pos_row, 1,
               C);
      tach_op (be, bias_add, self->emb, self->pos_row, self->batch, C);
    }
  else
    tach_op (be, bias_add, self->emb,
             tach_params_data (p, self->p_wpe) + (size_t) pass->pos * C, self->batch, T * C);
  if (self->dropout)
    dropout_fwd (self, self->emb, self->stream[0], n, 0, step);
  else
    tach_backend_copy (be, self->stream[0], self->emb, n * sizeof (float));
}

/* stream[k + 1] = stream[k] + branch, and its LayerNorm into @y: one op
 * under fusion=elementwise, an add and the norm otherwise.  @k == -1: no
 * residual, the norm of stream[0]. */
static void
residual_norm (TachGpt *self, int k, const float *gamma, const float *beta, float *y,
               float *mean, float *rstd, int rows)
{
  TachBackend *be = self->be;
  int C = self->embed;
  float *x = self->stream[MAX (k, 0)];

  if (k < 0)
    tach_op (be, layernorm_fwd, x, NULL, NULL, gamma, beta, y, mean, rstd, rows, C);
  else if (self->fusion == TACH_FUSION_ELEMENTWISE)
    tach_op (be, layernorm_fwd, x, self->branch, self->stream[k + 1], gamma, beta, y, mean, rstd,
             rows, C);
  else
    {
      tach_op (be, add, x, self->branch, self->stream[k + 1], (size_t) rows * C);
      tach_op (be, layernorm_fwd, self->stream[k + 1], NULL, NULL, gamma, beta, y, mean, rstd,
               rows, C);
    }
}

static float
attention_scale (const TachGpt *self)
{
  return 1.0f / sqrtf ((float) self->hd);
}

/* Causal self-attention of the heads in @a (q, and the keys and values of
 * the cache), its probabilities dropped by @drop, into a->att. */
static void
attention_forward (TachGpt *self, TachGptAct *a, const TachGptPass *ps, TachAttnDropout drop)
{
  TachBackend *be = self->be;
  int B = self->batch, H = self->heads, hd = self->hd, C = self->embed;
  int bh = B * H;
  float scale = attention_scale (self);

  /* The ops at the cache's positions follow the device's position. */
  be->pos_offset = ps->pos_dev;
  if (self->attention == TACH_ATTENTION_FUSED)
    tach_op (be, attention_fwd, a->q, a->k, a->v, a->o, a->lse, B, H, ps->tq, ps->tk, ps->cap,
             hd, ps->pos, scale, drop);
  else
    {
      gboolean fused_scale = self->fusion == TACH_FUSION_ELEMENTWISE;
      const float *probs = a->scores;

      /* scores = q k^T per head, [Tq, Tk] of keys cap * hd apart. */
      tach_op (be, gemm_strided_batched, FALSE, TRUE, ps->tq, ps->tk, hd, 1.0f, a->q, hd,
               (size_t) ps->tq * hd, a->k, hd, (size_t) ps->cap * hd, 0.0f, a->scores, ps->tk,
               (size_t) ps->tq * ps->tk, bh);
      if (!fused_scale)
        tach_op (be, scale, a->scores, scale, (size_t) bh * ps->tq * ps->tk);
      tach_op (be, causal_softmax_fwd, a->scores, bh, ps->tq, ps->tk, ps->pos,
               fused_scale ? scale : 1.0f);
      /* Training keeps the probabilities for backward; the dropped ones
       * go to backward's scratch of their size, unused until then. */
      if (drop.p > 0.0f)
        {
          tach_op (be, dropout_fwd, a->scores, self->dscores, (size_t) bh * ps->tq * ps->tk,
                   drop.p, drop.seed, drop.counter, drop.first);
          probs = self->dscores;
        }
      tach_op (be, gemm_strided_batched, FALSE, FALSE, ps->tq, hd, ps->tk, 1.0f, probs,
               ps->tk, (size_t) ps->tq * ps->tk, a->v, hd, (size_t) ps->cap * hd, 0.0f, a->o, hd,
               (size_t) ps->tq * hd, bh);
    }
  be->pos_offset = NULL;
  tach_op (be, heads_merge, a->o, a->att, C, B, ps->tq, H, hd, ps->tq, 0);
}

/* Site numbers of the dropout masks: 0 the embeddings, then two a block. */
#define SITE_ATTN(l) (1 + 2 * (guint) (l))
#define SITE_MLP(l) (2 + 2 * (guint) (l))

void
tach_gpt_blocks_forward (TachGpt *self, const TachGptPass *ps, guint64 step)
{
  TachBackend *be = self->be;
  TachParams *p = self->params;
  TachPrecision prec = self->precision;
  int B = self->batch, H = self->heads, hd = self->hd, C = self->embed;
  int R = B * ps->tq;
  size_t n = (size_t) R * C;

  for (int l = 0; l < self->layers; l++)
    {
      TachGptAct *a = &self->act[l];
      const TachGptLayerParams *w = &self->lp[l];

      tach_params_need (p, w->unit, FALSE);
      residual_norm (self, 2 * l - 1, tach_params_data (p, w->ln1_g),
                     tach_params_data (p, w->ln1_b), a->ln1, a->mean1, a->rstd1, R);
      tach_dense_forward_prec (be, prec, a->ln1, tach_params_data (p, w->qkv_w),
                               tach_params_data (p, w->qkv_b), a->qkv, R, C, 3 * C);
      /* q, and this pass's keys and values into the cache at its position. */
      tach_op (be, heads_split, a->qkv, 3 * C, a->q, B, ps->tq, H, hd, ps->tq, 0);
      be->pos_offset = ps->pos_dev;
      tach_op (be, heads_split, a->qkv + C, 3 * C, a->k, B, ps->tq, H, hd, ps->cap, ps->pos);
      tach_op (be, heads_split, a->qkv + 2 * C, 3 * C, a->v, B, ps->tq, H, hd, ps->cap, ps->pos);
      be->pos_offset = NULL;
      attention_forward (self, a, ps, attention_dropout (self, l, ps, step));
      tach_dense_forward_prec (be, prec, a->att, tach_params_data (p, w->proj_w),
                               tach_params_data (p, w->proj_b), self->proj, R, C, C);
      if (self->dropout)
        dropout_fwd (self, self->proj, self->branch, n, SITE_ATTN (l), step);

      residual_norm (self, 2 * l, tach_params_data (p, w->ln2_g), tach_params_data (p, w->ln2_b),
                     a->ln2, a->mean2, a->rstd2, R);
      if (self->fusion == TACH_FUSION_ELEMENTWISE)
        {
          tach_dense_forward_prec (be, prec, a->ln2, tach_params_data (p, w->fc_w), NULL, a->fc,
                                   R, C, 4 * C);
          tach_op (be, gelu_fwd, a->fc, tach_params_data (p, w->fc_b), a->gelu, R, 4 * C);
        }
      else
        {
          tach_dense_forward_prec (be, prec, a->ln2, tach_params_data (p, w->fc_w),
                                   tach_params_data (p, w->fc_b), a->fc, R, C, 4 * C);
          tach_op (be, gelu_fwd, a->fc, NULL, a->gelu, R, 4 * C);
        }
      tach_dense_forward_prec (be, prec, a->gelu, tach_params_data (p, w->fc2_w),
                               tach_params_data (p, w->fc2_b), self->proj, R, 4 * C, C);
      if (self->dropout)
        dropout_fwd (self, self->proj, self->branch, n, SITE_MLP (l), step);
      tach_params_done (p, w->unit, FALSE);
    }
  tach_params_need (p, self->u_lnf, FALSE);
  residual_norm (self, 2 * self->layers - 1, tach_params_data (p, self->p_lnf_g),
                 tach_params_data (p, self->p_lnf_b), self->xf, self->meanf, self->rstdf, R);
  tach_params_done (p, self->u_lnf, FALSE);
}

/* ----------------------------------------------------------- backward */

/* The gradient of LayerNorm @k's input stream[k] from the gradient of its
 * output (self->dln), plus the residual's, @dres (NULL: none, the final
 * LN), into @ds. */
static void
norm_backward (TachGpt *self, int k, const float *gamma, const float *mean, const float *rstd,
               guint g_slice, guint b_slice, const float *dres, float *ds, int rows)
{
  TachBackend *be = self->be;
  TachParams *p = self->params;
  int C = self->embed;

  if (dres == NULL || self->fusion == TACH_FUSION_ELEMENTWISE)
    tach_op (be, layernorm_bwd, self->stream[k], gamma, mean, rstd, self->dln, dres, ds,
             tach_params_grad (p, g_slice), tach_params_grad (p, b_slice), rows, C);
  else
    {
      tach_op (be, layernorm_bwd, self->stream[k], gamma, mean, rstd, self->dln, NULL, ds,
               tach_params_grad (p, g_slice), tach_params_grad (p, b_slice), rows, C);
      tach_op (be, add, ds, dres, ds, (size_t) rows * C);
    }
  tach_params_grad_ready (p, g_slice);
  tach_params_grad_ready (p, b_slice);
}

static void
attention_backward (TachGpt *self, TachGptAct *a, int T, TachAttnDropout drop)
{
  TachBackend *be = self->be;
  int B = self->batch, H = self->heads, hd = self->hd, C = self->embed;
  int bh = B * H;
  size_t per_head = (size_t) T * hd, sq = (size_t) T * T;
  float scale = attention_scale (self);

  tach_op (be, heads_split, self->datt, C, self->dout, B, T, H, hd, T, 0);
  if (self->attention == TACH_ATTENTION_FUSED)
    tach_op (be, attention_bwd, a->q, a->k, a->v, a->o, self->dout, a->lse, self->dq, self->dk,
             self->dv, B, H, T, hd, scale, drop);
  else
    {
      gboolean fused_scale = self->fusion == TACH_FUSION_ELEMENTWISE;

      /* dP = dO v^T, dv = P^T dO, dS = softmax' (dP), dq = dS k, dk = dS^T q;
       * with dropout, P' (the mask regenerated) in dv = P'^T dO, and dP
       * the dropped probabilities' gradient through the mask. */
      if (drop.p > 0.0f)
        {
          tach_op (be, dropout_fwd, a->scores, self->dscores, (size_t) bh * sq, drop.p,
                   drop.seed, drop.counter, drop.first);
          tach_op (be, gemm_strided_batched, TRUE, FALSE, T, hd, T, 1.0f, self->dscores, T, sq,
                   self->dout, hd, per_head, 0.0f, self->dv, hd, per_head, bh);
        }
      else
        tach_op (be, gemm_strided_batched, TRUE, FALSE, T, hd, T, 1.0f, a->scores, T, sq,
                 self->dout, hd, per_head, 0.0f, self->dv, hd, per_head, bh);
      tach_op (be, gemm_strided_batched, FALSE, TRUE, T, T, hd, 1.0f, self->dout, hd, per_head,
               a->v, hd, per_head, 0.0f, self->dscores, T, sq, bh);
      if (drop.p > 0.0f)
        tach_op (be, dropout_bwd, self->dscores, self->dscores, (size_t) bh * sq, drop.p,
                 drop.seed, drop.counter, drop.first);
      tach_op (be, causal_softmax_bwd, a->scores, self->dscores, self->dscores, bh, T, T,
               fused_scale ? scale : 1.0f);
      if (!fused_scale)
        tach_op (be, scale, self->dscores, scale, (size_t) bh * sq);
      tach_op (be, gemm_strided_batched, FALSE, FALSE, T, hd, T, 1.0f, self->dscores, T, sq,
               a->k, hd, per_head, 0.0f, self->dq, hd, per_head, bh);
      tach_op (be, gemm_strided_batched, TRUE, FALSE, T, hd, T, 1.0f, self->dscores, T, sq, a->q,
               hd, per_head, 0.0f, self->dk, hd, per_head, bh);
    }
  tach_op (be, heads_merge, self->dq, self->dqkv, 3 * C, B, T, H, hd, T, 0);
  tach_op (be, heads_merge, self->dk, self->dqkv + C, 3 * C, B, T, H, hd, T, 0);
  tach_op (be, heads_merge, self->dv, self->dqkv + 2 * C, 3 * C, B, T, H, hd, T, 0);
}

/* Backward of one dense layer's weights and bias, then ready for the
 * ranks' reduction. */
static void
dense_backward (TachGpt *self, const float *x, guint w_slice, guint b_slice, const float *dy,
                float *dx, int rows, int in, int out)
{
  TachParams *p = self->params;

  tach_dense_backward_prec (self->be, self->precision, x, tach_params_data (p, w_slice), dy, dx,
                            tach_params_grad (p, w_slice), tach_params_grad (p, b_slice), rows,
                            in, out, 0.0f);
  tach_params_grad_ready (p, b_slice);
  tach_params_grad_ready (p, w_slice);
}

void
tach_gpt_train_forward_backward (TachGpt *self, const int32_t *x, const int32_t *labels,
                                 float *loss, float *acc, guint64 step)
{
  TachBackend *be = self->be;
  TachParams *p = self->params;
  int B = self->batch, T = self->context, C = self->embed, V = self->vocab, L = self->layers;
  int R = B * T;
  size_t n = (size_t) R * C;
  TachGptPass pass = { .tq = T, .tk = T, .cap = T, .pos = 0 };
  float *ds, *dnext;

  tach_gpt_embed (self, x, T, &pass, step);
  tach_gpt_blocks_forward (self, &pass, step);
  /* The LM head, tied: logits = xf wte^T. */
  tach_dense_forward_prec (be, self->precision, self->xf, tach_params_data (p, self->p_wte), NULL,
                           self->logits, R, C, V);
  tach_op (be, softmax_ce, self->logits, labels, R, V, loss, self->dlogits);
  if (acc != NULL)
    tach_op (be, accuracy, self->logits, labels, R, V, acc);

  /* The head's share of wte's gradient first (overwritten), the
   * embedding's is added last. */
  tach_params_need (p, self->u_root, TRUE);
  tach_dense_backward_prec (be, self->precision, self->xf, tach_params_data (p, self->p_wte),
                            self->dlogits, self->dln, tach_params_grad (p, self->p_wte), NULL, R,
                            C, V, 0.0f);
  ds = self->ds[0];
  dnext = self->ds[1];
  tach_params_need (p, self->u_lnf, TRUE);
  norm_backward (self, 2 * L, tach_params_data (p, self->p_lnf_g), self->meanf, self->rstdf,
                 self->p_lnf_g, self->p_lnf_b, NULL, ds, R);
  tach_params_done (p, self->u_lnf, TRUE);
  for (int l = L - 1; l >= 0; l--)
    {
      TachGptAct *a = &self->act[l];
      const TachGptLayerParams *w = &self->lp[l];
      float *swap;

      tach_params_need (p, w->unit, TRUE);
      /* The MLP branch: ds is stream[2l + 2]'s gradient, the branch's. */
      if (self->dropout)
        dropout_bwd (self, ds, self->dbranch, n, SITE_MLP (l), step);
      dense_backward (self, a->gelu, w->fc2_w, w->fc2_b, self->dropout ? self->dbranch : ds,
                      self->dfc, R, 4 * C, C);
      tach_op (be, gelu_bwd, a->fc, self->dfc, self->dfc, (size_t) R * 4 * C);
      dense_backward (self, a->ln2, w->fc_w, w->fc_b, self->dfc, self->dln, R, C, 4 * C);
      norm_backward (self, 2 * l + 1, tach_params_data (p, w->ln2_g), a->mean2, a->rstd2,
                     w->ln2_g, w->ln2_b, ds, dnext, R);
      swap = ds, ds = dnext, dnext = swap;

      /* The attention branch: ds is stream[2l + 1]'s gradient. */
      if (self->dropout)
        dropout_bwd (self, ds, self->dbranch, n, SITE_ATTN (l), step);
      dense_backward (self, a->att, w->proj_w, w->proj_b, self->dropout ? self->dbranch : ds,
                      self->datt, R, C, C);
      attention_backward (self, a, T, attention_dropout (self, l, &pass, step));
      dense_backward (self, a->ln1, w->qkv_w, w->qkv_b, self->dqkv, self->dln, R, C, 3 * C);
      norm_backward (self, 2 * l, tach_params_data (p, w->ln1_g), a->mean1, a->rstd1, w->ln1_g,
                     w->ln1_b, ds, dnext, R);
      swap = ds, ds = dnext, dnext = swap;
      tach_params_done (p, w->unit, TRUE);
    }

  /* ds is stream[0]'s gradient: the embeddings'. */
  if (self->dropout)
    {
      dropout_bwd (self, ds, dnext, n, 0, step);
      ds = dnext;
    }
  tach_op (be, bias_grad, ds, tach_params_grad (p, self->p_wpe), B, T * C, 0.0f);
  tach_params_grad_ready (p, self->p_wpe);
  tach_op (be, embedding_bwd, ds, x, tach_params_grad (p, self->p_wte), R, C);
  tach_params_grad_ready (p, self->p_wte);
  tach_params_done (p, self->u_root, TRUE);
}

void
tach_gpt_update (TachGpt *self)
{
  TachParams *p = self->params;

  /* AdamW (torch.optim.AdamW): param *= 1 - lr * wd before the Adam step,
   * over the 2-D weights, which lie first in the flat buffer. */
  tach_params_update_decoupled (p, TACH_GPT_WEIGHT_DECAY, self->decayed);
}

/* ------------------------------------------------------------- FLOPs */

double
tach_gpt_flops (const TachGpt *self, int tq, int tk, gboolean train)
{
  double B = self->batch, C = self->embed, V = self->vocab, L = self->layers;
  double rows = B * tq;
  /* qkv, proj, fc, fc2: 12 C^2 multiply-adds a row; attention q k^T and
   * p v: 2 tq tk C a stream (the naive product over all Tk keys). */
  double block = 2.0 * rows * 12.0 * C * C + 2.0 * 2.0 * B * tq * tk * C;
  /* The LM head: every row when training, the last one when generating. */
  double head = 2.0 * (train ? rows : B) * C * V;
  double fwd = L * block + head;

  return train ? 3.0 * fwd : fwd;
}
