/* tach-cuda-kernels.h: launchers of Tach's own CUDA kernels.
 *
 * Shared by the C sources of the backend and tach-cuda-kernels.cu, so it
 * includes nothing but the CUDA runtime API and plain C types.  Every
 * launcher queues its kernel(s) on @stream and returns cudaGetLastError(),
 * so that a bad launch configuration is reported where it happened.
 * Pointers are device pointers; shapes follow tach-backend.h.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The widest head the fused attention takes (tach-cuda-transformer.cu: a
 * lane holds 4 of a query row's dimensions in registers); validation
 * refuses wider ones through the registry's row (tach-backends.c). */
#define TACH_CUDA_ATTENTION_HEAD_DIM_MAX 128

cudaError_t tach_cuda_launch_bias_add (cudaStream_t stream, float *y, const float *bias, int m, int n);
cudaError_t tach_cuda_launch_bias_grad (cudaStream_t stream, const float *dy, float *db, int m, int n,
                                        float beta);
cudaError_t tach_cuda_launch_relu_fwd (cudaStream_t stream, const float *x, float *y, size_t n);
cudaError_t tach_cuda_launch_relu_bwd (cudaStream_t stream, const float *y, const float *dy, float *dx,
                                       size_t n);

/* Data-parallel gradients on the wire (tach-cuda-nccl.c): wire[i] =
 * grad[i] in fp16 (bf16: bfloat16), rounded to nearest even; and grad[i] =
 * (wire[i] widened, or grad[i] itself when @wire is NULL) / divisor. */
cudaError_t tach_cuda_launch_grad_pack (cudaStream_t stream, const float *grad, unsigned short *wire,
                                        size_t n, int bf16);
cudaError_t tach_cuda_launch_grad_unpack (cudaStream_t stream, const unsigned short *wire,
                                          float *grad, size_t n, int bf16, float divisor);

cudaError_t tach_cuda_launch_lstm_cell_fwd (cudaStream_t stream, int n, int h, float *gates,
                                            const float *bias, const float *c_prev, float *c,
                                            float *h_out, int ldh);
cudaError_t tach_cuda_launch_lstm_cell_bwd (cudaStream_t stream, int n, int h, const float *gates,
                                            const float *c_prev, const float *c, const float *dh,
                                            int lddh, const float *dc, float *dgates, float *dc_prev);

/* dst[j][i][:] = src[i][j][:] for src [a][b][w] (not in place): the
 * fused LSTM's batch-major data to the time-major layout cuDNN reads
 * without rearranging, and back. */
cudaError_t tach_cuda_launch_swap_outer (cudaStream_t stream, const float *src, float *dst, int a,
                                         int b, int w);

cudaError_t tach_cuda_launch_max_over_time_fwd (cudaStream_t stream, const float *x, float *y,
                                                int32_t *idx, int n, int t, int c);
cudaError_t tach_cuda_launch_max_over_time_bwd (cudaStream_t stream, const float *dy,
                                                const int32_t *idx, float *dx, int n, int t, int c);

cudaError_t tach_cuda_launch_sigmoid_bce (cudaStream_t stream, const float *logits, const float *labels,
                                          int n, float *loss, float *dlogits);
/* tach-cuda-softmax.cu.  A label out of [0, classes) makes its row's loss
 * NaN and its dlogits zero, and the first one is written to @fault (row + 1,
 * label, classes): the CPU backend's error, reported when the host next
 * waits.  @scratch: TACH_CUDA_ROWS_SCRATCH_BYTES of device memory, zeroed
 * once before the first launch, through which a launch of several blocks
 * sums its loss in a fixed order; it is left zeroed again for the next
 * launch, which must not run at the same time (one stream). */
#define TACH_CUDA_ROWS_BLOCKS_MAX 1024
#define TACH_CUDA_ROWS_SCRATCH_BYTES ((TACH_CUDA_ROWS_BLOCKS_MAX + 1) * sizeof (double))
cudaError_t tach_cuda_launch_softmax_ce (cudaStream_t stream, const float *logits, const int32_t *labels,
                                         int n, int classes, float *loss, float *dlogits,
                                         int32_t *fault, void *scratch);
cudaError_t tach_cuda_launch_accuracy (cudaStream_t stream, const float *logits, const void *labels,
                                       int n, int classes, float *acc);

cudaError_t tach_cuda_launch_maxpool_fwd (cudaStream_t stream, const float *x, float *y, int32_t *idx,
                                          int n, int c, int h, int w);
cudaError_t tach_cuda_launch_maxpool_bwd (cudaStream_t stream, const float *dy, const int32_t *idx,
                                          float *dx, int n, int c, int h, int w);
cudaError_t tach_cuda_launch_avgpool_fwd (cudaStream_t stream, const float *x, float *y, int n, int c,
                                          int hw);
cudaError_t tach_cuda_launch_avgpool_bwd (cudaStream_t stream, const float *dy, float *dx, int n, int c,
                                          int hw);

/* tach-cuda-conv-kernels.cu: the convolution block's epilogue, in the
 * layouts of tach-cuda-conv-pool.h.  conv_pool_fwd: y, idx from act (+
 * bias[k] unless @bias is NULL), ReLU and 2x2 max pool in one pass.
 * conv_pool_bwd: the whole of dact from dy and idx and, unless @partial is
 * NULL, partial[n * K + k] = plane (n, k)'s share of db[k]. */
cudaError_t tach_cuda_launch_conv_pool_fwd (cudaStream_t stream, const float *act, const float *bias,
                                            float *y, int32_t *idx, int n, int k, int h, int w);
/* col[(c, r, s)][(n, y, x)]: x's patches under each output position of a
 * stride-1 convolution, tap by tap, zero in the padding (row-major,
 * [C*R*S][N*OH*OW]): the weight gradient as one GEMM (tach-cuda-conv.c). */
cudaError_t tach_cuda_launch_im2col (cudaStream_t stream, const float *x, float *col, int n, int c,
                                     int h, int w, int r, int s, int pad_h, int pad_w, int oh, int ow);
cudaError_t tach_cuda_launch_conv_pool_bwd (cudaStream_t stream, const float *dy, const int32_t *idx,
                                            float *dact, float *partial, int n, int k, int h, int w);

/* The counter-taking kernels add *@offset (NULL: 0) to @counter when they
 * run: TachBackend.step_offset. */
cudaError_t tach_cuda_launch_dropout (cudaStream_t stream, const float *x, float *y, size_t n, float p,
                                      uint64_t seed, uint64_t counter, uint64_t first,
                                      const uint64_t *offset);
/* *@counter += @delta: one tiny kernel, so a graph capture records it. */
cudaError_t tach_cuda_launch_counter_add (cudaStream_t stream, uint64_t *counter, uint64_t delta);

cudaError_t tach_cuda_launch_embedding (cudaStream_t stream, const float *table, const int32_t *idx,
                                        float *out, int n, int dim);
/* The block-per-row sampler (TACH_CUDA_PLAIN=sampler keeps it). */
cudaError_t tach_cuda_launch_sample_tokens (cudaStream_t stream, const float *logits, int n, int vocab,
                                            uint64_t seed, uint64_t counter, const uint64_t *offset,
                                            int32_t *tok, int32_t *ctx, int len);
/* tach-cuda-softmax.cu: one warp-parallel kernel that draws the tokens and,
 * with @loss (may be NULL), writes the mean -log p of them: softmax_ce's
 * loss of the drawn tokens, to the bit (@scratch as there). */
cudaError_t tach_cuda_launch_sample_tokens_nll (cudaStream_t stream, const float *logits, int n,
                                                int vocab, uint64_t seed, uint64_t counter,
                                                const uint64_t *offset, int32_t *tok, int32_t *ctx,
                                                int len, float *loss, void *scratch);

cudaError_t tach_cuda_launch_adam (cudaStream_t stream, float *param, const float *grad, float *m,
                                   float *v, size_t n, float lr, float beta1, float beta2, float eps,
                                   float *t);
cudaError_t tach_cuda_launch_sgd (cudaStream_t stream, float *param, const float *grad, size_t n,
                                  float lr);

/* tach-cuda-transformer.cu: the Transformer ops, as their slots in
 * tach-backend-ops.h say.  heads: split (@split) or merge.  The attention
 * takes hd <= 128 (cudaErrorInvalidValue beyond); its backward's @dd is
 * B*H*t floats of scratch (the rows' D = rowsum (dO O)). */
cudaError_t tach_cuda_launch_add (cudaStream_t stream, const float *a, const float *b, float *y,
                                  size_t n);
cudaError_t tach_cuda_launch_scale (cudaStream_t stream, float *x, float alpha, size_t n);
cudaError_t tach_cuda_launch_layernorm_fwd (cudaStream_t stream, const float *x, const float *res,
                                            float *sum, const float *gamma, const float *beta,
                                            float *y, float *mean, float *rstd, int rows, int dim);
cudaError_t tach_cuda_launch_layernorm_bwd (cudaStream_t stream, const float *x, const float *gamma,
                                            const float *mean, const float *rstd, const float *dy,
                                            const float *dres, float *dx, float *dgamma,
                                            float *dbeta, int rows, int dim);
cudaError_t tach_cuda_launch_gelu_fwd (cudaStream_t stream, float *x, const float *bias, float *y,
                                       int rows, int dim);
cudaError_t tach_cuda_launch_gelu_bwd (cudaStream_t stream, const float *x, const float *dy,
                                       float *dx, size_t n);
cudaError_t tach_cuda_launch_heads (cudaStream_t stream, float *x, int ldx, float *y, int B, int T,
                                    int H, int hd, int cap, int pos, const int32_t *pos_dev,
                                    int split);
cudaError_t tach_cuda_launch_causal_softmax_fwd (cudaStream_t stream, float *s, int bh, int tq,
                                                 int tk, int pos, const int32_t *pos_dev,
                                                 float scale);
cudaError_t tach_cuda_launch_causal_softmax_bwd (cudaStream_t stream, const float *p,
                                                 const float *dp, float *ds, int bh, int tq,
                                                 int tk, float scale);
cudaError_t tach_cuda_launch_embedding_bwd (cudaStream_t stream, const float *dout,
                                            const int32_t *idx, float *dtable, int n, int dim);
/* The attention's dropout on its probabilities, TachAttnDropout's fields
 * (tach-backend-ops.h says the mask), with the step offset its counter
 * takes when the kernel runs (NULL: 0); p = 0: none. */
typedef struct {
  float           p;
  uint64_t        seed, counter, first;
  const uint64_t *offset;
} TachCudaAttnDrop;

cudaError_t tach_cuda_launch_attention_fwd (cudaStream_t stream, const float *q, const float *k,
                                            const float *v, float *o, float *lse, int B, int H,
                                            int tq, int tk, int cap, int hd, int pos,
                                            const int32_t *pos_dev, float scale,
                                            TachCudaAttnDrop drop);
cudaError_t tach_cuda_launch_attention_bwd (cudaStream_t stream, const float *q, const float *k,
                                            const float *v, const float *o, const float *dout,
                                            const float *lse, float *dd, float *dq, float *dk,
                                            float *dv, int B, int H, int t, int hd, float scale,
                                            TachCudaAttnDrop drop);

#ifdef __cplusplus
}
#endif
