/* tach-layers.h: the layers every model builds from the backend's ops.
 *
 *   dense        fully connected layer forward/backward (GEMM + bias)
 *   conv block   conv + bias + ReLU + max pool, fused where the backend can
 *
 * They queue work through the sticky-error wrappers: nothing happens while
 * the backend has an error pending.
 *
 * Threads: the engine thread.
 */
#pragma once

#include "tach-backend.h"

G_BEGIN_DECLS

/* Dense layer, PyTorch weight layout: x [m, in], w [out, in], b [out] (may be
 * NULL), y [m, out].  y = x w^T + b. */
void          tach_dense_forward (TachBackend *be, const float *x, const float *w, const float *b,
                                  float *y, int m, int in, int out);
/* dw = beta * dw + dy^T x and db = beta * db + sum_rows dy (db may be NULL;
 * beta 0 overwrites, 1 accumulates); dx = dy w when @dx is not NULL
 * (always overwritten). */
void          tach_dense_backward (TachBackend *be, const float *x, const float *w, const float *dy,
                                   float *dx, float *dw, float *db, int m, int in, int out,
                                   float beta);
/* The same in @precision: bf16 rounds x, w and dy to bf16 for the products
 * (fp32 sums, fp32 results and master weights) where the backend has
 * gemm_bf16; anything else runs in fp32. */
void          tach_dense_forward_prec (TachBackend *be, TachPrecision precision, const float *x,
                                       const float *w, const float *b, float *y, int m, int in,
                                       int out);
/* The same over rows of x @ldx floats apart (the last row of each
 * stream, say). */
void          tach_dense_forward_strided (TachBackend *be, TachPrecision precision,
                                          const float *x, int ldx, const float *w,
                                          const float *b, float *y, int m, int in, int out);
void          tach_dense_backward_prec (TachBackend *be, TachPrecision precision, const float *x,
                                        const float *w, const float *dy, float *dx, float *dw,
                                        float *db, int m, int in, int out, float beta);
/* FLOPs of one dense forward (2 m in out), plus backward when @backward
 * (dw, and dx when @need_dx). */
double        tach_dense_flops (int m, int in, int out, gboolean backward, gboolean need_dx);

/* A convolution block, y = maxpool2x2 (relu (conv (x, w) + b)), on a plan
 * made from @desc with block set: the backend's fused conv_block_fwd/bwd
 * where it has them, else conv_fwd, relu_fwd and maxpool_fwd (and their
 * backward ops) on the same buffers.  act (N*K*OH*OW floats) and idx
 * (N*K*(OH/2)*(OW/2) int32) carry what backward needs; dact (as big as
 * act) is backward's scratch; dx may be NULL unless desc->need_dx. */
void          tach_conv_block_forward (TachBackend *be, TachConvPlan *plan,
                                       const TachConvDesc *desc, const float *x, const float *w,
                                       const float *b, float *act, int32_t *idx, float *y);
void          tach_conv_block_backward (TachBackend *be, TachConvPlan *plan,
                                        const TachConvDesc *desc, const float *x, const float *w,
                                        const float *act, const int32_t *idx, const float *dy,
                                        float *dact, float *dx, float *dw, float *db);

/* Why a language model's generation under @config cannot be captured as a
 * graph because it samples on the host (translated), or NULL: the one
 * reason lstm-lm and gpt share. */
const char *tach_model_sampling_graph_why (const TachConfig *config);

G_END_DECLS
