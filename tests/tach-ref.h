/* tach-ref.h: a plain double-precision reference of every backend op.
 *
 * Each function mirrors one slot of TachBackendOps (tach-backend.h) with the
 * same shapes and layouts, written as the most obvious loops so that it can
 * be read against the contract line by line.  The numeric tests check these
 * functions by finite differences, then compare each backend against them.
 *
 * Randomness (dropout masks, token sampling) uses tach-rand.h exactly as the
 * backends must, so masks and tokens compare element by element.
 */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "tach-backend.h"

G_BEGIN_DECLS

/* ---------------------------------------------------------------- helpers */

/* Normalised error sum((a-b)^2) / sum(b^2); +inf when @a holds a NaN or an
 * infinity, so that a comparison against a threshold can never let one pass. */
double  tach_ref_nmse (const float *a, const double *b, size_t n);
double  tach_ref_nmse_dd (const double *a, const double *b, size_t n);
/* Standard normal values from the counter-based generator (never all zero). */
void    tach_ref_fill_normal (double *x, size_t n, guint64 seed, guint64 counter, double scale);
void    tach_ref_fill_uniform (double *x, size_t n, guint64 seed, guint64 counter, double lo, double hi);
/* Float copies of double arrays and back (new allocations, g_free them). */
float  *tach_ref_to_float (const double *x, size_t n);
double *tach_ref_to_double (const float *x, size_t n);
/* Rounds a double array to float precision in place, so that the reference
 * sees exactly the inputs a float backend sees. */
void    tach_ref_round_to_float (double *x, size_t n);

/* ---------------------------------------------------------- dense algebra */

void tach_ref_gemm (gboolean ta, gboolean tb, int m, int n, int k, double alpha,
                    const double *a, int lda, const double *b, int ldb,
                    double beta, double *c, int ldc);
/* Gradients of C = op(A) op(B) (alpha = 1) given dC: dA in A's storage
 * (with @lda), dB in B's storage (with @ldb); both overwritten. */
void tach_ref_gemm_bwd (gboolean ta, gboolean tb, int m, int n, int k,
                        const double *a, int lda, const double *b, int ldb,
                        const double *dc, int ldc, double *da, double *db);
void tach_ref_bias_add (double *y, const double *bias, int m, int n);
void tach_ref_bias_grad (const double *dy, double *db, int m, int n, double beta);
void tach_ref_relu_fwd (const double *x, double *y, size_t n);
void tach_ref_relu_bwd (const double *y, const double *dy, double *dx, size_t n);

/* -------------------------------------------------------------- recurrent */

size_t tach_ref_lstm_weights (const TachLstmDesc *desc);
/* y as in the contract: same layout as x, dirs * H features. */
void   tach_ref_lstm_fwd (const TachLstmDesc *desc, const double *x, const double *w, double *y);
/* From dy (same shape as y): dx (may be NULL) and dw, both overwritten.
 * Recomputes the forward pass itself. */
void   tach_ref_lstm_bwd (const TachLstmDesc *desc, const double *x, const double *w,
                          const double *dy, double *dx, double *dw);
void   tach_ref_lstm_cell_fwd (int n, int h, double *gates, const double *bias,
                               const double *c_prev, double *c, double *h_out, int ldh);
void   tach_ref_lstm_cell_bwd (int n, int h, const double *gates, const double *c_prev,
                               const double *c, const double *dh, int lddh, const double *dc,
                               double *dgates, double *dc_prev);

/* --------------------------------------------------- reductions and losses */

void   tach_ref_max_over_time_fwd (const double *x, double *y, int n, int t, int c);
void   tach_ref_max_over_time_bwd (const double *x, const double *dy, double *dx, int n, int t, int c);
/* Mean losses; dlogits may be NULL. */
double tach_ref_sigmoid_bce (const double *logits, const double *labels, int n, double *dlogits);
double tach_ref_softmax_ce (const double *logits, const int32_t *labels, int n, int classes,
                            double *dlogits);
/* classes == 1: @labels_f (0/1), logit > 0 predicts 1; else argmax against @labels_i. */
double tach_ref_accuracy (const double *logits, const double *labels_f, const int32_t *labels_i,
                          int n, int classes);

/* ---------------------------------------------------------- convolutional */

void tach_ref_conv_out_size (const TachConvDesc *desc, int *oh, int *ow);
void tach_ref_conv_fwd (const TachConvDesc *desc, const double *x, const double *w,
                        const double *b, double *y);
/* dx may be NULL; all outputs overwritten. */
void tach_ref_conv_bwd (const TachConvDesc *desc, const double *x, const double *w,
                        const double *dy, double *dx, double *dw, double *db);
void tach_ref_maxpool_fwd (const double *x, double *y, int n, int c, int h, int w);
void tach_ref_maxpool_bwd (const double *x, const double *dy, double *dx, int n, int c, int h, int w);
void tach_ref_avgpool_fwd (const double *x, double *y, int n, int c, int hw);
void tach_ref_avgpool_bwd (const double *dy, double *dx, int n, int c, int hw);

/* ------------------------------------------------------ dropout and tokens */

gboolean tach_ref_dropout_keep (float p, guint64 seed, guint64 counter, size_t e);
void     tach_ref_dropout (const double *x, double *y, size_t n, float p, guint64 seed,
                           guint64 counter);
void     tach_ref_embedding (const double *table, const int32_t *idx, double *out, int n, int dim);
/* The token of one row by inverse CDF; *margin is the distance from u to
 * the nearest CDF boundary, to know when float rounding may pick a neighbour. */
int32_t  tach_ref_sample_row (const double *logits, int vocab, double u, double *margin);

/* -------------------------------------------------------------- optimisers */

/* One Adam step; *t is incremented first, bias-corrected as in Kingma & Ba. */
void tach_ref_adam (double *param, const double *grad, double *m, double *v, size_t n,
                    double lr, double beta1, double beta2, double eps, double *t);
void tach_ref_sgd (double *param, const double *grad, size_t n, double lr);

/* ------------------------------------- Transformer (tach-ref-gpt.c) */

void tach_ref_gemm_strided_batched (gboolean ta, gboolean tb, int m, int n, int k, double alpha,
                                    const double *a, int lda, size_t stride_a, const double *b,
                                    int ldb, size_t stride_b, double beta, double *c, int ldc,
                                    size_t stride_c, int batch);
/* As the op; @sum, @mean and @rstd may be NULL. */
void tach_ref_layernorm_fwd (const double *x, const double *res, double *sum,
                             const double *gamma, const double *beta, double *y, double *mean,
                             double *rstd, int rows, int dim);
/* From the norm's input @x (the forward's s): its mean and rstd are
 * recomputed; @dres may be NULL. */
void tach_ref_layernorm_bwd (const double *x, const double *gamma, const double *dy,
                             const double *dres, double *dx, double *dgamma, double *dbeta,
                             int rows, int dim);
void tach_ref_gelu_fwd (const double *x, double *y, size_t n);
void tach_ref_gelu_bwd (const double *x, const double *dy, double *dx, size_t n);
void tach_ref_heads_split (const double *x, int ldx, double *y, int B, int T, int H, int hd,
                           int cap, int pos);
void tach_ref_heads_merge (const double *y, double *x, int ldx, int B, int T, int H, int hd,
                           int cap, int pos);
void tach_ref_causal_softmax_fwd (double *s, int bh, int tq, int tk, int pos, double scale);
void tach_ref_causal_softmax_bwd (const double *p, const double *dp, double *ds, int bh, int tq,
                                  int tk, double scale);
/* Naive attention: the scores materialised, the probabilities dropped by
 * @drop (NULL: none; its counter taken as it is); @lse may be NULL. */
void tach_ref_attention_fwd (const double *q, const double *k, const double *v, double *o,
                             double *lse, int B, int H, int tq, int tk, int cap, int hd,
                             int pos, double scale, const TachAttnDropout *drop);
/* Its backward (pos 0, tq = tk = cap = t), the probabilities and the mask
 * recomputed. */
void tach_ref_attention_bwd (const double *q, const double *k, const double *v,
                             const double *dout, double *dq, double *dk, double *dv, int B,
                             int H, int t, int hd, double scale, const TachAttnDropout *drop);
void tach_ref_embedding_bwd (const double *dout, const int32_t *idx, double *dtable, int n,
                             int dim);

G_END_DECLS
