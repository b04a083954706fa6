/* tach-layers.c: the layers every model builds from the backend's ops: a
 * dense layer (GEMM + bias, in fp32 or bf16) and a convolution block (conv
 * + bias + ReLU + max pool, fused where the backend can).
 */
#include <glib/gi18n-lib.h>

#include "tach-layers.h"

/* ---------------------------------------------------------------- dense */

/* A dense layer's product: in bf16 (fp32 sums) when asked for and the
 * backend has gemm_bf16, else in fp32. */
static void
dense_gemm (TachBackend *be, TachPrecision precision, gboolean ta, gboolean tb, int m, int n,
            int k, const float *a, int lda, const float *b, int ldb, float beta, float *c,
            int ldc)
{
  if (precision == TACH_PRECISION_BF16 && be->ops->gemm_bf16 != NULL)
    tach_op (be, gemm_bf16, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  else
    tach_op (be, gemm, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}

void
tach_dense_forward_prec (TachBackend *be, TachPrecision precision, const float *x,
                         const float *w, const float *b, float *y, int m, int in, int out)
{
  tach_dense_forward_strided (be, precision, x, in, w, b, y, m, in, out);
}

void
tach_dense_forward_strided (TachBackend *be, TachPrecision precision, const float *x, int ldx,
                            const float *w, const float *b, float *y, int m, int in, int out)
{
  /* y[m, out] = x[m, in] w[out, in]^T */
  dense_gemm (be, precision, FALSE, TRUE, m, out, in, x, ldx, w, in, 0.0f, y, out);
  if (b != NULL)
    tach_op (be, bias_add, y, b, m, out);
}

void
tach_dense_forward (TachBackend *be, const float *x, const float *w, const float *b,
                    float *y, int m, int in, int out)
{
  tach_dense_forward_prec (be, TACH_PRECISION_FP32, x, w, b, y, m, in, out);
}

void
tach_dense_backward_prec (TachBackend *be, TachPrecision precision, const float *x,
                          const float *w, const float *dy, float *dx, float *dw, float *db,
                          int m, int in, int out, float beta)
{
  /* dw[out, in] = beta dw + dy[m, out]^T x[m, in] */
  dense_gemm (be, precision, TRUE, FALSE, out, in, m, dy, out, x, in, beta, dw, in);
  if (db != NULL)
    tach_op (be, bias_grad, dy, db, m, out, beta);
  /* dx[m, in] = dy[m, out] w[out, in] */
  if (dx != NULL)
    dense_gemm (be, precision, FALSE, FALSE, m, in, out, dy, out, w, in, 0.0f, dx, in);
}

void
tach_dense_backward (TachBackend *be, const float *x, const float *w, const float *dy,
                     float *dx, float *dw, float *db, int m, int in, int out, float beta)
{
  tach_dense_backward_prec (be, TACH_PRECISION_FP32, x, w, dy, dx, dw, db, m, in, out, beta);
}

double
tach_dense_flops (int m, int in, int out, gboolean backward, gboolean need_dx)
{
  double one = 2.0 * m * (double) in * out;
  double flops = one;

  if (backward)
    flops += one + (need_dx ? one : 0.0);
  return flops;
}

/* ----------------------------------------------------------- conv block */

static size_t
conv_block_act_count (const TachConvDesc *d, int *oh, int *ow)
{
  *oh = d->H + 2 * d->pad_h - d->R + 1;
  *ow = d->W + 2 * d->pad_w - d->S + 1;
  return (size_t) d->N * (size_t) d->K * (size_t) *oh * (size_t) *ow;
}

void
tach_conv_block_forward (TachBackend *be, TachConvPlan *plan, const TachConvDesc *desc,
                         const float *x, const float *w, const float *b, float *act,
                         int32_t *idx, float *y)
{
  int oh, ow;
  size_t count = conv_block_act_count (desc, &oh, &ow);

  if (be->ops->conv_block_fwd != NULL)
    {
      tach_op (be, conv_block_fwd, plan, x, w, b, act, idx, y);
      return;
    }
  tach_op (be, conv_fwd, plan, x, w, b, act);
  tach_op (be, relu_fwd, act, act, count);
  tach_op (be, maxpool_fwd, act, y, idx, desc->N, desc->K, oh, ow);
}

void
tach_conv_block_backward (TachBackend *be, TachConvPlan *plan, const TachConvDesc *desc,
                          const float *x, const float *w, const float *act,
                          const int32_t *idx, const float *dy, float *dact, float *dx,
                          float *dw, float *db)
{
  int oh, ow;
  size_t count = conv_block_act_count (desc, &oh, &ow);

  if (be->ops->conv_block_bwd != NULL)
    {
      tach_op (be, conv_block_bwd, plan, x, w, act, idx, dy, dact, dx, dw, db);
      return;
    }
  tach_op (be, maxpool_bwd, dy, idx, dact, desc->N, desc->K, oh, ow);
  tach_op (be, relu_bwd, act, dact, dact, count);
  tach_op (be, conv_bwd, plan, x, w, dact, dx, dw, db);
}

const char *
tach_model_sampling_graph_why (const TachConfig *config)
{
  if (config->task == TACH_TASK_GENERATE && config->sampling == TACH_SAMPLING_HOST)
    return W_("{sampling=host} reads the logits back and draws on the host in every step, "
              "which a replayed graph cannot do; use {sampling=device}");
  return NULL;
}
