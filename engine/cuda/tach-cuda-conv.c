/* tach-cuda-conv.c: 2-D convolution on cuDNN (forward, backward data,
 * backward filter, bias).
 *
 * Each plan picks its three algorithms once, from cuDNN's heuristics, and
 * preallocates one workspace for the largest, so a step never searches or
 * allocates (and so can be captured in a CUDA graph).  Only deterministic
 * algorithms are taken: modes must give the same losses, bit for bit, and
 * a replayed graph the same step as the eager one.  Each direction has its
 * own convolution descriptor because the chosen algorithms may need
 * different math types.
 */
#include <glib/gi18n-lib.h>

#include "tach-cuda-private.h"

/* Workspace above this is not worth it for MNIST-sized layers; cuDNN
 * always offers a deterministic algorithm that needs less. */
#define TACH_CONV_WORKSPACE_LIMIT ((size_t) 1 << 30)

struct _TachConvPlan {
  TachConvDesc                  desc;
  cudnnTensorDescriptor_t       xdesc, ydesc, bdesc;  /* owned */
  cudnnFilterDescriptor_t       wdesc;                /* owned */
  cudnnConvolutionDescriptor_t  fwd_conv, bwd_data_conv, bwd_filter_conv; /* owned */
  cudnnConvolutionFwdAlgo_t     fwd_algo;
  cudnnConvolutionBwdDataAlgo_t bwd_data_algo;
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo;
  size_t                        work_bytes;
  void                         *work;                 /* owned, device */
};

/* Whether an algorithm's math type honours the backend's precision: fp32
 * must not use TF32 tensor cores, so it takes FMA-only algorithms. */
static gboolean
math_allowed (TachBackend *be, cudnnMathType_t math)
{
  if (TACH_CUDA (be)->cudnn_math == CUDNN_FMA_MATH)
    return math == CUDNN_FMA_MATH;
  return TRUE;
}

static gboolean
acceptable (TachBackend *be, cudnnStatus_t status, cudnnDeterminism_t det, size_t memory,
            cudnnMathType_t math)
{
  return status == CUDNN_STATUS_SUCCESS && det == CUDNN_DETERMINISTIC
         && memory <= TACH_CONV_WORKSPACE_LIMIT && math_allowed (be, math);
}

static gboolean
new_conv_desc (TachBackend *be, const TachConvDesc *d, cudnnConvolutionDescriptor_t *conv)
{
  TACH_CUDNN_TRY (be, cudnnCreateConvolutionDescriptor (conv), return FALSE);
  TACH_CUDNN_TRY (be, cudnnSetConvolution2dDescriptor (*conv,
                                                       /* pad_h = */ d->pad_h, /* pad_w = */ d->pad_w,
                                                       /* u = */ 1, /* v = */ 1,
                                                       /* dilation_h = */ 1, /* dilation_w = */ 1,
                                                       CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                  return FALSE);
  TACH_CUDNN_TRY (be, cudnnSetConvolutionMathType (*conv, TACH_CUDA (be)->cudnn_math), return FALSE);
  return TRUE;
}

static void
fail_no_algo (TachBackend *be, const char *which, const TachConvDesc *d)
{
  tach_backend_fail (be, TACH_ERROR_LIBRARY,
                     _("cuDNN offers no deterministic %s convolution algorithm within %zu MiB of "
                       "workspace for input %dx%dx%dx%d and filters %dx%dx%dx%d at this precision"),
                     which, TACH_CONV_WORKSPACE_LIMIT >> 20, d->N, d->C, d->H, d->W, d->K, d->C, d->R,
                     d->S);
}

static gboolean
pick_algorithms (TachBackend *be, TachConvPlan *plan)
{
  cudnnHandle_t h = TACH_CUDA (be)->cudnn;
  int n = 0;
  gboolean found;

  {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];

    TACH_CUDNN_TRY (be, cudnnGetConvolutionForwardAlgorithm_v7 (h, plan->xdesc, plan->wdesc,
                                                                plan->fwd_conv, plan->ydesc,
                                                                CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                                &n, perf), return FALSE);
    found = FALSE;
    for (int i = 0; i < n && !found; i++)
      if (acceptable (be, perf[i].status, perf[i].determinism, perf[i].memory, perf[i].mathType))
        {
          plan->fwd_algo = perf[i].algo;
          plan->work_bytes = MAX (plan->work_bytes, perf[i].memory);
          TACH_CUDNN_TRY (be, cudnnSetConvolutionMathType (plan->fwd_conv, perf[i].mathType),
                          return FALSE);
          found = TRUE;
        }
    if (!found)
      {
        fail_no_algo (be, "forward", &plan->desc);
        return FALSE;
      }
  }
  if (plan->desc.need_dx)
    {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];

      TACH_CUDNN_TRY (be, cudnnGetConvolutionBackwardDataAlgorithm_v7 (h, plan->wdesc, plan->ydesc,
                                                                       plan->bwd_data_conv, plan->xdesc,
                                                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                                       &n, perf), return FALSE);
      found = FALSE;
      for (int i = 0; i < n && !found; i++)
        if (acceptable (be, perf[i].status, perf[i].determinism, perf[i].memory, perf[i].mathType))
          {
            plan->bwd_data_algo = perf[i].algo;
            plan->work_bytes = MAX (plan->work_bytes, perf[i].memory);
            TACH_CUDNN_TRY (be, cudnnSetConvolutionMathType (plan->bwd_data_conv, perf[i].mathType),
                            return FALSE);
            found = TRUE;
          }
      if (!found)
        {
          fail_no_algo (be, "backward-data", &plan->desc);
          return FALSE;
        }
    }
  {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];

    TACH_CUDNN_TRY (be, cudnnGetConvolutionBackwardFilterAlgorithm_v7 (h, plan->xdesc, plan->ydesc,
                                                                       plan->bwd_filter_conv, plan->wdesc,
                                                                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                                                                       &n, perf), return FALSE);
    found = FALSE;
    for (int i = 0; i < n && !found; i++)
      if (acceptable (be, perf[i].status, perf[i].determinism, perf[i].memory, perf[i].mathType))
        {
          plan->bwd_filter_algo = perf[i].algo;
          plan->work_bytes = MAX (plan->work_bytes, perf[i].memory);
          TACH_CUDNN_TRY (be, cudnnSetConvolutionMathType (plan->bwd_filter_conv, perf[i].mathType),
                          return FALSE);
          found = TRUE;
        }
    if (!found)
      {
        fail_no_algo (be, "backward-filter", &plan->desc);
        return FALSE;
      }
  }
  return TRUE;
}

TachConvPlan *
tach_cuda_conv_plan_new (TachBackend *be, const TachConvDesc *desc)
{
  TachConvPlan *plan;
  int oh = desc->H + 2 * desc->pad_h - desc->R + 1;
  int ow = desc->W + 2 * desc->pad_w - desc->S + 1;

  if (desc->N <= 0 || desc->C <= 0 || desc->K <= 0 || oh <= 0 || ow <= 0)
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("invalid convolution: input %dx%dx%dx%d, filters %dx%dx%d, padding %d,%d"),
                         desc->N, desc->C, desc->H, desc->W, desc->K, desc->R, desc->S,
                         desc->pad_h, desc->pad_w);
      return NULL;
    }
  if (!tach_cuda_not_capturing (be, "building a convolution plan"))
    return NULL;

  plan = g_new0 (TachConvPlan, 1);
  plan->desc = *desc;
  TACH_CUDNN_TRY (be, cudnnCreateTensorDescriptor (&plan->xdesc), goto fail);
  TACH_CUDNN_TRY (be, cudnnCreateTensorDescriptor (&plan->ydesc), goto fail);
  TACH_CUDNN_TRY (be, cudnnCreateTensorDescriptor (&plan->bdesc), goto fail);
  TACH_CUDNN_TRY (be, cudnnCreateFilterDescriptor (&plan->wdesc), goto fail);
  TACH_CUDNN_TRY (be, cudnnSetTensor4dDescriptor (plan->xdesc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                  desc->N, desc->C, desc->H, desc->W), goto fail);
  TACH_CUDNN_TRY (be, cudnnSetTensor4dDescriptor (plan->ydesc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                  desc->N, desc->K, oh, ow), goto fail);
  TACH_CUDNN_TRY (be, cudnnSetTensor4dDescriptor (plan->bdesc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                  1, desc->K, 1, 1), goto fail);
  TACH_CUDNN_TRY (be, cudnnSetFilter4dDescriptor (plan->wdesc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                                  desc->K, desc->C, desc->R, desc->S), goto fail);
  if (!new_conv_desc (be, desc, &plan->fwd_conv) || !new_conv_desc (be, desc, &plan->bwd_data_conv)
      || !new_conv_desc (be, desc, &plan->bwd_filter_conv))
    goto fail;
  if (!pick_algorithms (be, plan))
    goto fail;
  if (plan->work_bytes > 0)
    {
      plan->work = tach_cuda_alloc_internal (be, plan->work_bytes);
      if (plan->work == NULL)
        goto fail;
    }
  return plan;

fail:
  tach_cuda_conv_plan_free (be, plan);
  return NULL;
}

void
tach_cuda_conv_plan_free (TachBackend *be, TachConvPlan *plan)
{
  if (plan == NULL)
    return;
  tach_cuda_free_internal (be, plan->work);
  if (plan->xdesc != NULL)
    (void) cudnnDestroyTensorDescriptor (plan->xdesc);
  if (plan->ydesc != NULL)
    (void) cudnnDestroyTensorDescriptor (plan->ydesc);
  if (plan->bdesc != NULL)
    (void) cudnnDestroyTensorDescriptor (plan->bdesc);
  if (plan->wdesc != NULL)
    (void) cudnnDestroyFilterDescriptor (plan->wdesc);
  if (plan->fwd_conv != NULL)
    (void) cudnnDestroyConvolutionDescriptor (plan->fwd_conv);
  if (plan->bwd_data_conv != NULL)
    (void) cudnnDestroyConvolutionDescriptor (plan->bwd_data_conv);
  if (plan->bwd_filter_conv != NULL)
    (void) cudnnDestroyConvolutionDescriptor (plan->bwd_filter_conv);
  g_free (plan);
}

void
tach_cuda_conv_fwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                    const float *b, float *y)
{
  cudnnHandle_t h = TACH_CUDA (be)->cudnn;
  const float one = 1.0f, zero = 0.0f;

  TACH_CUDNN_TRY (be, cudnnConvolutionForward (h, &one, plan->xdesc, x, plan->wdesc, w, plan->fwd_conv,
                                               plan->fwd_algo, plan->work, plan->work_bytes,
                                               /* beta = */ &zero, plan->ydesc, y), return);
  if (b != NULL)
    TACH_CUDNN_TRY (be, cudnnAddTensor (h, &one, plan->bdesc, b, /* beta = */ &one, plan->ydesc, y),
                    return);
}

void
tach_cuda_conv_bwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                    const float *dy, float *dx, float *dw, float *db)
{
  cudnnHandle_t h = TACH_CUDA (be)->cudnn;
  const float one = 1.0f, zero = 0.0f;

  if (dx != NULL)
    {
      if (!plan->desc.need_dx)
        {
          tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                             _("convolution backward asked for dx on a plan built without need_dx"));
          return;
        }
      TACH_CUDNN_TRY (be, cudnnConvolutionBackwardData (h, &one, plan->wdesc, w, plan->ydesc, dy,
                                                        plan->bwd_data_conv, plan->bwd_data_algo,
                                                        plan->work, plan->work_bytes,
                                                        /* beta = */ &zero, plan->xdesc, dx), return);
    }
  if (dw != NULL)
    TACH_CUDNN_TRY (be, cudnnConvolutionBackwardFilter (h, &one, plan->xdesc, x, plan->ydesc, dy,
                                                        plan->bwd_filter_conv, plan->bwd_filter_algo,
                                                        plan->work, plan->work_bytes,
                                                        /* beta = */ &zero, plan->wdesc, dw), return);
  if (db != NULL)
    TACH_CUDNN_TRY (be, cudnnConvolutionBackwardBias (h, &one, plan->ydesc, dy, /* beta = */ &zero,
                                                      plan->bdesc, db), return);
}
