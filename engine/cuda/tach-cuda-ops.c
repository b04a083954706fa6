/* tach-cuda-ops.c: the ops that run on Tach's own kernels
 * (tach-cuda-kernels.cu), each a thin wrapper that launches on the
 * backend's stream and records a failed launch in the sticky error.
 */
#include "tach-cuda-private.h"

#define STREAM(be) (TACH_CUDA (be)->stream)

/* Every launcher here returns from its op on failure. */
#define LAUNCH(be, call) TACH_CUDA_LAUNCH (be, call, return)

static void
cuda_bias_add (TachBackend *be, float *y, const float *bias, int m, int n)
{
  LAUNCH (be, tach_cuda_launch_bias_add (STREAM (be), y, bias, m, n));
}

static void
cuda_bias_grad (TachBackend *be, const float *dy, float *db, int m, int n, float beta)
{
  LAUNCH (be, tach_cuda_launch_bias_grad (STREAM (be), dy, db, m, n, beta));
}

static void
cuda_relu_fwd (TachBackend *be, const float *x, float *y, size_t n)
{
  LAUNCH (be, tach_cuda_launch_relu_fwd (STREAM (be), x, y, n));
}

static void
cuda_relu_bwd (TachBackend *be, const float *y, const float *dy, float *dx, size_t n)
{
  LAUNCH (be, tach_cuda_launch_relu_bwd (STREAM (be), y, dy, dx, n));
}

static void
cuda_lstm_cell_fwd (TachBackend *be, int n, int h, float *gates, const float *bias,
                    const float *c_prev, float *c, float *h_out, int ldh)
{
  LAUNCH (be, tach_cuda_launch_lstm_cell_fwd (STREAM (be), n, h, gates, bias, c_prev, c, h_out, ldh));
}

static void
cuda_lstm_cell_bwd (TachBackend *be, int n, int h, const float *gates, const float *c_prev,
                    const float *c, const float *dh, int lddh, const float *dc, float *dgates,
                    float *dc_prev)
{
  LAUNCH (be, tach_cuda_launch_lstm_cell_bwd (STREAM (be), n, h, gates, c_prev, c, dh, lddh, dc,
                                              dgates, dc_prev));
}

static void
cuda_max_over_time_fwd (TachBackend *be, const float *x, float *y, int32_t *idx, int n, int t, int c)
{
  LAUNCH (be, tach_cuda_launch_max_over_time_fwd (STREAM (be), x, y, idx, n, t, c));
}

static void
cuda_max_over_time_bwd (TachBackend *be, const float *dy, const int32_t *idx, float *dx, int n,
                        int t, int c)
{
  LAUNCH (be, tach_cuda_launch_max_over_time_bwd (STREAM (be), dy, idx, dx, n, t, c));
}

static void
cuda_sigmoid_bce (TachBackend *be, const float *logits, const float *labels, int n, float *loss,
                  float *dlogits)
{
  LAUNCH (be, tach_cuda_launch_sigmoid_bce (STREAM (be), logits, labels, n, loss, dlogits));
}

static void
cuda_softmax_ce (TachBackend *be, const float *logits, const int32_t *labels, int n, int classes,
                 float *loss, float *dlogits)
{
  LAUNCH (be, tach_cuda_launch_softmax_ce (STREAM (be), logits, labels, n, classes, loss, dlogits,
                                           TACH_CUDA (be)->fault_dev, TACH_CUDA (be)->rows_scratch));
}

static void
cuda_accuracy (TachBackend *be, const float *logits, const void *labels, int n, int classes,
               float *acc)
{
  LAUNCH (be, tach_cuda_launch_accuracy (STREAM (be), logits, labels, n, classes, acc));
}

static void
cuda_maxpool_fwd (TachBackend *be, const float *x, float *y, int32_t *idx, int n, int c, int h, int w)
{
  LAUNCH (be, tach_cuda_launch_maxpool_fwd (STREAM (be), x, y, idx, n, c, h, w));
}

static void
cuda_maxpool_bwd (TachBackend *be, const float *dy, const int32_t *idx, float *dx, int n, int c,
                  int h, int w)
{
  LAUNCH (be, tach_cuda_launch_maxpool_bwd (STREAM (be), dy, idx, dx, n, c, h, w));
}

static void
cuda_avgpool_fwd (TachBackend *be, const float *x, float *y, int n, int c, int hw)
{
  LAUNCH (be, tach_cuda_launch_avgpool_fwd (STREAM (be), x, y, n, c, hw));
}

static void
cuda_avgpool_bwd (TachBackend *be, const float *dy, float *dx, int n, int c, int hw)
{
  LAUNCH (be, tach_cuda_launch_avgpool_bwd (STREAM (be), dy, dx, n, c, hw));
}

/* Backward applies the same mask (regenerated from the same counters) and
 * the same scale to dy, which is exactly the forward op applied to dy. */
static void
cuda_dropout_fwd (TachBackend *be, const float *x, float *y, size_t n, float p, guint64 seed,
                  guint64 counter, guint64 first)
{
  LAUNCH (be, tach_cuda_launch_dropout (STREAM (be), x, y, n, p, seed, counter, first,
                                        be->step_offset));
}

static void
cuda_dropout_bwd (TachBackend *be, const float *dy, float *dx, size_t n, float p, guint64 seed,
                  guint64 counter, guint64 first)
{
  LAUNCH (be, tach_cuda_launch_dropout (STREAM (be), dy, dx, n, p, seed, counter, first,
                                        be->step_offset));
}

static void
cuda_embedding (TachBackend *be, const float *table, const int32_t *idx, float *out, int n, int dim)
{
  LAUNCH (be, tach_cuda_launch_embedding (STREAM (be), table, idx, out, n, dim));
}

/* One warp-parallel kernel draws and, with @loss, computes the -log p of
 * the drawn tokens from the same sums (tach-cuda-softmax.cu).
 * TACH_CUDA_PLAIN=sampler keeps the block-per-row sampler with softmax_ce
 * after it, what tach_backend_sample_tokens runs for a backend without
 * this slot: the same tokens and the same loss, two launches. */
static void
cuda_sample_tokens_nll (TachBackend *be, const float *logits, int n, int vocab, guint64 seed,
                        guint64 counter, int32_t *tok, int32_t *ctx, int len, float *loss)
{
  if (TACH_CUDA_LEAN_ON (be, TACH_CUDA_LEAN_SAMPLER))
    {
      LAUNCH (be, tach_cuda_launch_sample_tokens_nll (STREAM (be), logits, n, vocab, seed, counter,
                                                      be->step_offset, tok, ctx, len, loss,
                                                      TACH_CUDA (be)->rows_scratch));
      return;
    }
  LAUNCH (be, tach_cuda_launch_sample_tokens (STREAM (be), logits, n, vocab, seed, counter,
                                              be->step_offset, tok, ctx, len));
  if (loss != NULL)
    cuda_softmax_ce (be, logits, tok, n, vocab, loss, NULL);
}

static void
cuda_sample_tokens (TachBackend *be, const float *logits, int n, int vocab, guint64 seed,
                    guint64 counter, int32_t *tok, int32_t *ctx, int len)
{
  cuda_sample_tokens_nll (be, logits, n, vocab, seed, counter, tok, ctx, len, NULL);
}

/* A graph node when captured: the runner's step offset advances with
 * every replay. */
static void
cuda_counter_add (TachBackend *be, uint64_t *counter, uint64_t delta)
{
  LAUNCH (be, tach_cuda_launch_counter_add (STREAM (be), counter, delta));
}

static void
cuda_adam (TachBackend *be, float *param, const float *grad, float *m, float *v, size_t n,
           float lr, float beta1, float beta2, float eps, float *t)
{
  LAUNCH (be, tach_cuda_launch_adam (STREAM (be), param, grad, m, v, n, lr, beta1, beta2, eps, t));
}

static void
cuda_sgd (TachBackend *be, float *param, const float *grad, size_t n, float lr)
{
  LAUNCH (be, tach_cuda_launch_sgd (STREAM (be), param, grad, n, lr));
}

/* --------------------------------------------------------- Transformer */

static void
cuda_add (TachBackend *be, const float *a, const float *b, float *y, size_t n)
{
  LAUNCH (be, tach_cuda_launch_add (STREAM (be), a, b, y, n));
}

static void
cuda_scale (TachBackend *be, float *x, float alpha, size_t n)
{
  LAUNCH (be, tach_cuda_launch_scale (STREAM (be), x, alpha, n));
}

static void
cuda_layernorm_fwd (TachBackend *be, const float *x, const float *res, float *sum,
                    const float *gamma, const float *beta, float *y, float *mean, float *rstd,
                    int rows, int dim)
{
  LAUNCH (be, tach_cuda_launch_layernorm_fwd (STREAM (be), x, res, sum, gamma, beta, y, mean, rstd,
                                              rows, dim));
}

static void
cuda_layernorm_bwd (TachBackend *be, const float *x, const float *gamma, const float *mean,
                    const float *rstd, const float *dy, const float *dres, float *dx,
                    float *dgamma, float *dbeta, int rows, int dim)
{
  LAUNCH (be, tach_cuda_launch_layernorm_bwd (STREAM (be), x, gamma, mean, rstd, dy, dres, dx,
                                              dgamma, dbeta, rows, dim));
}

static void
cuda_gelu_fwd (TachBackend *be, float *x, const float *bias, float *y, int rows, int dim)
{
  LAUNCH (be, tach_cuda_launch_gelu_fwd (STREAM (be), x, bias, y, rows, dim));
}

static void
cuda_gelu_bwd (TachBackend *be, const float *x, const float *dy, float *dx, size_t n)
{
  LAUNCH (be, tach_cuda_launch_gelu_bwd (STREAM (be), x, dy, dx, n));
}

static void
cuda_heads_split (TachBackend *be, const float *x, int ldx, float *y, int B, int T, int H, int hd,
                  int cap, int pos)
{
  LAUNCH (be, tach_cuda_launch_heads (STREAM (be), (float *) x, ldx, y, B, T, H, hd, cap, pos,
                                      be->pos_offset, 1));
}

static void
cuda_heads_merge (TachBackend *be, const float *y, float *x, int ldx, int B, int T, int H, int hd,
                  int cap, int pos)
{
  LAUNCH (be, tach_cuda_launch_heads (STREAM (be), x, ldx, (float *) y, B, T, H, hd, cap, pos,
                                      be->pos_offset, 0));
}

static void
cuda_causal_softmax_fwd (TachBackend *be, float *s, int bh, int tq, int tk, int pos, float scale)
{
  LAUNCH (be, tach_cuda_launch_causal_softmax_fwd (STREAM (be), s, bh, tq, tk, pos,
                                                   be->pos_offset, scale));
}

static void
cuda_causal_softmax_bwd (TachBackend *be, const float *p, const float *dp, float *ds, int bh,
                         int tq, int tk, float scale)
{
  LAUNCH (be, tach_cuda_launch_causal_softmax_bwd (STREAM (be), p, dp, ds, bh, tq, tk, scale));
}

/* Tach's own tiled kernel (tach-cuda-transformer.cu) takes heads of up to
 * 128 dimensions (GPT-2's are 64): its launcher refuses more with
 * cudaErrorInvalidValue, which becomes the sticky error; validation is
 * where a run asking for more is refused with the fix. */
/* @drop for the kernels, with the step offset they add to its counter. */
static TachCudaAttnDrop
cuda_attn_drop (TachBackend *be, TachAttnDropout drop)
{
  return (TachCudaAttnDrop) { drop.p, drop.seed, drop.counter, drop.first, be->step_offset };
}

static void
cuda_attention_fwd (TachBackend *be, const float *q, const float *k, const float *v, float *o,
                    float *lse, int B, int H, int tq, int tk, int cap, int hd, int pos,
                    float scale, TachAttnDropout drop)
{
  LAUNCH (be, tach_cuda_launch_attention_fwd (STREAM (be), q, k, v, o, lse, B, H, tq, tk, cap,
                                                hd, pos, be->pos_offset, scale,
                                                cuda_attn_drop (be, drop)));
}

static void
cuda_attention_bwd (TachBackend *be, const float *q, const float *k, const float *v,
                    const float *o, const float *dout, const float *lse, float *dq, float *dk,
                    float *dv, int B, int H, int t, int hd, float scale, TachAttnDropout drop)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  size_t need = (size_t) B * H * t;

  /* The rows' D, kept between steps: a graph captures a step whose
   * scratch an eager step before it made. */
  if (cb->att_scratch_floats < need)
    {
      if (!tach_cuda_not_capturing (be, "growing the fused attention's scratch"))
        return;
      tach_cuda_free_internal (be, cb->att_scratch);
      cb->att_scratch = tach_cuda_alloc_internal (be, need * sizeof (float));
      cb->att_scratch_floats = cb->att_scratch != NULL ? need : 0;
      if (cb->att_scratch == NULL)
        return;
    }
  LAUNCH (be, tach_cuda_launch_attention_bwd (STREAM (be), q, k, v, o, dout, lse, cb->att_scratch,
                                              dq, dk, dv, B, H, t, hd, scale,
                                              cuda_attn_drop (be, drop)));
}

static void
cuda_embedding_bwd (TachBackend *be, const float *dout, const int32_t *idx, float *dtable, int n,
                    int dim)
{
  LAUNCH (be, tach_cuda_launch_embedding_bwd (STREAM (be), dout, idx, dtable, n, dim));
}

void
tach_cuda_ops_fill_kernels (TachBackendOps *ops)
{
  ops->bias_add = cuda_bias_add;
  ops->bias_grad = cuda_bias_grad;
  ops->relu_fwd = cuda_relu_fwd;
  ops->relu_bwd = cuda_relu_bwd;
  ops->lstm_cell_fwd = cuda_lstm_cell_fwd;
  ops->lstm_cell_bwd = cuda_lstm_cell_bwd;
  ops->max_over_time_fwd = cuda_max_over_time_fwd;
  ops->max_over_time_bwd = cuda_max_over_time_bwd;
  ops->sigmoid_bce = cuda_sigmoid_bce;
  ops->softmax_ce = cuda_softmax_ce;
  ops->accuracy = cuda_accuracy;
  ops->maxpool_fwd = cuda_maxpool_fwd;
  ops->maxpool_bwd = cuda_maxpool_bwd;
  ops->avgpool_fwd = cuda_avgpool_fwd;
  ops->avgpool_bwd = cuda_avgpool_bwd;
  ops->dropout_fwd = cuda_dropout_fwd;
  ops->dropout_bwd = cuda_dropout_bwd;
  ops->embedding = cuda_embedding;
  ops->sample_tokens = cuda_sample_tokens;
  ops->sample_tokens_nll = cuda_sample_tokens_nll;
  ops->counter_add = cuda_counter_add;
  ops->adam = cuda_adam;
  ops->sgd = cuda_sgd;
  ops->add = cuda_add;
  ops->scale = cuda_scale;
  ops->layernorm_fwd = cuda_layernorm_fwd;
  ops->layernorm_bwd = cuda_layernorm_bwd;
  ops->gelu_fwd = cuda_gelu_fwd;
  ops->gelu_bwd = cuda_gelu_bwd;
  ops->heads_split = cuda_heads_split;
  ops->heads_merge = cuda_heads_merge;
  ops->causal_softmax_fwd = cuda_causal_softmax_fwd;
  ops->causal_softmax_bwd = cuda_causal_softmax_bwd;
  ops->attention_fwd = cuda_attention_fwd;
  ops->attention_bwd = cuda_attention_bwd;
  ops->embedding_bwd = cuda_embedding_bwd;
}
