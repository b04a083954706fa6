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
}
