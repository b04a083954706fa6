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
 *
 * A plan made with block set also serves conv_block_fwd/bwd (conv + bias +
 * ReLU + 2x2 max pool, W3's layers), on the route that
 * tach_cuda_conv_route_init picks (see TachCudaConvRoute):
 *   fused: cudnnConvolutionBiasActivationForward (bias and ReLU in the
 *     convolution's epilogue), then one pool pass that records the winner
 *     with the ReLU's mask (tach-cuda-conv-pool.h);
 *   split: where cuDNN refuses that call, cudnnConvolutionForward, then one
 *     pass that adds the bias, applies the ReLU and pools
 *     (TACH_CUDA_PLAIN=conv-fuse takes this route from the start);
 *   plain (TACH_CUDA_PLAIN=conv): conv, bias, ReLU and pool as separate
 *     passes, the path the model would take without the block ops.
 * Backward on the fused and split routes: one pass writes the whole of
 * dact (pool scatter and ReLU mask) and each plane's share of the bias
 * gradient, bias_grad sums the shares, then cuDNN's backward data and
 * filter.  A refusal moves the route on once, at the call that met it;
 * the workspace covers every candidate, so nothing is allocated then and
 * a captured graph holds the route the eager steps took.
 */
#include <string.h>

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
  gboolean                      gemm_wgrad;           /* dw as im2col + one GEMM, not cuDNN's */
  size_t                        work_bytes;
  void                         *work;                 /* owned, device */
  /* block plans only */
  TachCudaConvRoute             route;
  cudnnConvolutionDescriptor_t  fused_conv;           /* owned: the fused call's math type */
  cudnnActivationDescriptor_t   relu;                 /* owned */
  float                        *partial;              /* owned, device: [N, K] shares of db */
};

#define LAUNCH TACH_CUDA_LAUNCH

void
tach_cuda_conv_route_init (TachCudaConvRoute *route, gboolean block, gboolean lean,
                           gboolean fuse, cudnnConvolutionFwdAlgo_t fwd_algo, cudnnMathType_t fwd_math,
                           gboolean precomp_ok, cudnnMathType_t precomp_math)
{
  memset (route, 0, sizeof *route);
  if (!block)
    {
      route->path = TACH_CUDA_CONV_BARE;
      return;
    }
  if (!lean)
    {
      route->path = TACH_CUDA_CONV_PLAIN;
      return;
    }
  if (!fuse)
    {
      route->path = TACH_CUDA_CONV_SPLIT;
      return;
    }
  route->path = TACH_CUDA_CONV_FUSED;
  route->algo[route->n_fused] = fwd_algo;
  route->math[route->n_fused++] = fwd_math;
  if (precomp_ok && fwd_algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
    {
      route->algo[route->n_fused] = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
      route->math[route->n_fused++] = precomp_math;
    }
}

void
tach_cuda_conv_route_refused (TachCudaConvRoute *route)
{
  if (route->path != TACH_CUDA_CONV_FUSED)
    return;
  if (++route->fused_at >= route->n_fused)
    route->path = TACH_CUDA_CONV_SPLIT;
}

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

/* Whether fp32 refuses backward-filter algorithm @algo to keep fp32's
 * accuracy: the backward filter sums over N x OH x OW products, and FFT
 * and Winograd round in the transformed domain.  On an H200 a 24x1x28x28
 * backward filter through one of them came out with an NMSE of 6e-7
 * against the double reference, where the GEMM-based one gives 1e-14.
 * The forward and backward-data sums run over C x R x S taps only and
 * keep cuDNN's choice (at W3's batch of 256 an FFT forward for its second
 * layer; /engine/cuda/conv-block/w3, at batch 64, got GEMM-based ones).
 * Other precisions round more than that anyway. */
static gboolean
fp32_refuses_filter_algo (TachBackend *be, cudnnConvolutionBwdFilterAlgo_t algo)
{
  return TACH_CUDA (be)->cudnn_math == CUDNN_FMA_MATH
         && (algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT
             || algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING
             || algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED);
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

/* The convolution's output size (the pool's input). */
static void
out_size (const TachConvDesc *d, int *oh, int *ow)
{
  *oh = d->H + 2 * d->pad_h - d->R + 1;
  *ow = d->W + 2 * d->pad_w - d->S + 1;
}

static gboolean
pick_algorithms (TachBackend *be, TachConvPlan *plan)
{
  cudnnHandle_t h = TACH_CUDA (be)->cudnn;
  int n = 0;
  gboolean found, precomp_ok = FALSE;
  cudnnMathType_t fwd_math = CUDNN_DEFAULT_MATH, precomp_math = CUDNN_DEFAULT_MATH;

  {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];

    TACH_CUDNN_TRY (be, cudnnGetConvolutionForwardAlgorithm_v7 (h, plan->xdesc, plan->wdesc,
                                                                plan->fwd_conv, plan->ydesc,
                                                                CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                                &n, perf), return FALSE);
    found = FALSE;
    for (int i = 0; i < n; i++)
      if (acceptable (be, perf[i].status, perf[i].determinism, perf[i].memory, perf[i].mathType))
        {
          if (!found)
            {
              plan->fwd_algo = perf[i].algo;
              fwd_math = perf[i].mathType;
              plan->work_bytes = MAX (plan->work_bytes, perf[i].memory);
              TACH_CUDNN_TRY (be, cudnnSetConvolutionMathType (plan->fwd_conv, perf[i].mathType),
                              return FALSE);
              found = TRUE;
            }
          /* The algorithm that cuDNN's documentation names for a fused
           * bias and activation: a second candidate for a block. */
          if (perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM && !precomp_ok
              && plan->desc.block)
            {
              precomp_ok = TRUE;
              precomp_math = perf[i].mathType;
              plan->work_bytes = MAX (plan->work_bytes, perf[i].memory);
            }
        }
    if (!found)
      {
        fail_no_algo (be, "forward", &plan->desc);
        return FALSE;
      }
    tach_cuda_conv_route_init (&plan->route, plan->desc.block,
                               TACH_CUDA_LEAN_ON (be, TACH_CUDA_LEAN_CONV),
                               TACH_CUDA_LEAN_ON (be, TACH_CUDA_LEAN_CONV_FUSE), plan->fwd_algo,
                               fwd_math, precomp_ok, precomp_math);
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
      if (acceptable (be, perf[i].status, perf[i].determinism, perf[i].memory, perf[i].mathType)
          && !fp32_refuses_filter_algo (be, perf[i].algo))
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
  /* fp32 leaves cuDNN one accurate deterministic backward filter, algorithm
   * 1, which took 470 us a step for each of W3's layers on an H200.  As
   * one GEMM instead, dw[K][CRS] = dy'[K][N*OH*OW] . col[CRS][N*OH*OW]^T
   * (dy with its outer axes swapped, x's patches in col), in the
   * workspace, unless that outgrows the workspace limit. */
  if (TACH_CUDA (be)->cudnn_math == CUDNN_FMA_MATH && TACH_CUDA_LEAN_ON (be, TACH_CUDA_LEAN_WGRAD))
    {
      const TachConvDesc *d = &plan->desc;
      size_t bytes;
      int oh, ow;

      out_size (d, &oh, &ow);
      bytes = sizeof (float) * (size_t) d->N * oh * ow * ((size_t) d->C * d->R * d->S + (size_t) d->K);
      if (bytes <= TACH_CONV_WORKSPACE_LIMIT && (size_t) d->N * oh * ow <= G_MAXINT)
        {
          plan->gemm_wgrad = TRUE;
          plan->work_bytes = MAX (plan->work_bytes, bytes);
        }
    }
  return TRUE;
}

/* Notes the block's route on the backend (the run's summary, runs.csv and
 * the tests read it), and says it at info level: a refusal of the fused
 * call shows as a block that went "split". */
static void
note_route (TachBackend *be, TachConvPlan *plan)
{
  const TachConvDesc *d = &plan->desc;
  const TachCudaConvRoute *r = &plan->route;
  g_autofree char *what = g_strdup_printf ("conv block %dx%dx%dx%d, %d %dx%d filters",
                                           d->N, d->C, d->H, d->W, d->K, d->R, d->S);
  g_autofree char *route = NULL;

  if (r->path == TACH_CUDA_CONV_PLAIN)
    route = g_strdup ("cuDNN conv, then bias, ReLU and pool as separate passes (plain)");
  else if (r->path == TACH_CUDA_CONV_SPLIT)
    route = g_strdup_printf ("cuDNN conv algorithm %d, then one bias + ReLU + pool kernel (split)",
                             (int) plan->fwd_algo);
  else
    route = g_strdup_printf ("cuDNN fused conv + bias + ReLU, algorithm %d, then the pool "
                             "kernel (fused)", (int) r->algo[r->fused_at]);
  {
    /* The backward algorithms too: each may trade speed for accuracy. */
    g_autofree char *filter = plan->gemm_wgrad
                              ? g_strdup ("filter im2col + GEMM")
                              : g_strdup_printf ("filter algorithm %d", (int) plan->bwd_filter_algo);
    char *with = d->need_dx
                 ? g_strdup_printf ("%s; backward data algorithm %d, %s", route,
                                    (int) plan->bwd_data_algo, filter)
                 : g_strdup_printf ("%s; backward %s", route, filter);

    g_free (route);
    route = with;
  }
  g_info ("%s: %s", what, route);
  tach_backend_note_algorithm (be, what, route);
}

/* What the block's fused and split routes need beside a bare plan. */
static gboolean
plan_block (TachBackend *be, TachConvPlan *plan)
{
  const TachConvDesc *d = &plan->desc;

  if (plan->route.path == TACH_CUDA_CONV_BARE)
    return TRUE;
  if (plan->route.path == TACH_CUDA_CONV_PLAIN)
    {
      note_route (be, plan);
      return TRUE;
    }
  /* The backward's shares of db, on the fused and split routes. */
  plan->partial = tach_cuda_alloc_internal (be, sizeof (float) * (size_t) d->N * (size_t) d->K);
  if (plan->partial == NULL)
    return FALSE;
  if (plan->route.path == TACH_CUDA_CONV_SPLIT)
    {
      note_route (be, plan);
      return TRUE;
    }
  note_route (be, plan);
  if (!new_conv_desc (be, d, &plan->fused_conv))
    return FALSE;
  TACH_CUDNN_TRY (be, cudnnSetConvolutionMathType (plan->fused_conv, plan->route.math[0]),
                  return FALSE);
  TACH_CUDNN_TRY (be, cudnnCreateActivationDescriptor (&plan->relu), return FALSE);
  TACH_CUDNN_TRY (be, cudnnSetActivationDescriptor (plan->relu, CUDNN_ACTIVATION_RELU,
                                                    CUDNN_NOT_PROPAGATE_NAN, /* coef = */ 0.0),
                  return FALSE);
  return TRUE;
}

TachConvPlan *
tach_cuda_conv_plan_new (TachBackend *be, const TachConvDesc *desc)
{
  TachConvPlan *plan;
  int oh, ow;

  out_size (desc, &oh, &ow);
  if (desc->N <= 0 || desc->C <= 0 || desc->K <= 0 || oh <= 0 || ow <= 0
      || (desc->block && (oh < 2 || ow < 2)))
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
  if (!pick_algorithms (be, plan) || !plan_block (be, plan))
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
  tach_cuda_free_internal (be, plan->partial);
  if (plan->fused_conv != NULL)
    (void) cudnnDestroyConvolutionDescriptor (plan->fused_conv);
  if (plan->relu != NULL)
    (void) cudnnDestroyActivationDescriptor (plan->relu);
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

/* The convolution into @y, plus the bias unless @b is NULL. */
static gboolean
conv_forward (TachBackend *be, TachConvPlan *plan, const float *x, const float *w, const float *b,
              float *y)
{
  cudnnHandle_t h = TACH_CUDA (be)->cudnn;
  const float one = 1.0f, zero = 0.0f;

  TACH_CUDNN_TRY (be, cudnnConvolutionForward (h, &one, plan->xdesc, x, plan->wdesc, w, plan->fwd_conv,
                                               plan->fwd_algo, plan->work, plan->work_bytes,
                                               /* beta = */ &zero, plan->ydesc, y), return FALSE);
  if (b != NULL)
    TACH_CUDNN_TRY (be, cudnnAddTensor (h, &one, plan->bdesc, b, /* beta = */ &one, plan->ydesc, y),
                    return FALSE);
  return TRUE;
}

static gboolean
check_dx (TachBackend *be, TachConvPlan *plan, const float *dx)
{
  if (dx == NULL || plan->desc.need_dx)
    return TRUE;
  tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                     _("convolution backward asked for dx on a plan built without need_dx"));
  return FALSE;
}

/* dx (unless NULL), dw and db (unless NULL) from @dy. */
static gboolean
conv_backward (TachBackend *be, TachConvPlan *plan, const float *x, const float *w, const float *dy,
               float *dx, float *dw, float *db)
{
  cudnnHandle_t h = TACH_CUDA (be)->cudnn;
  const float one = 1.0f, zero = 0.0f;

  if (!check_dx (be, plan, dx))
    return FALSE;
  if (dx != NULL)
    TACH_CUDNN_TRY (be, cudnnConvolutionBackwardData (h, &one, plan->wdesc, w, plan->ydesc, dy,
                                                      plan->bwd_data_conv, plan->bwd_data_algo,
                                                      plan->work, plan->work_bytes,
                                                      /* beta = */ &zero, plan->xdesc, dx),
                    return FALSE);
  if (dw != NULL && plan->gemm_wgrad)
    {
      const TachConvDesc *d = &plan->desc;
      cudaStream_t stream = TACH_CUDA (be)->stream;
      int oh, ow, taps = d->C * d->R * d->S, rows;
      float *col = plan->work, *dyt;

      out_size (d, &oh, &ow);
      rows = d->N * oh * ow;
      dyt = col + (size_t) rows * taps;
      LAUNCH (be, tach_cuda_launch_im2col (stream, x, col, d->N, d->C, d->H, d->W, d->R, d->S,
                                           d->pad_h, d->pad_w, oh, ow), return FALSE);
      LAUNCH (be, tach_cuda_launch_swap_outer (stream, dy, dyt, d->N, d->K, oh * ow), return FALSE);
      tach_op (be, gemm, FALSE, TRUE, d->K, taps, rows, 1.0f, dyt, rows, col, rows, 0.0f, dw, taps);
      if (be->error != NULL)
        return FALSE;
    }
  else if (dw != NULL)
    TACH_CUDNN_TRY (be, cudnnConvolutionBackwardFilter (h, &one, plan->xdesc, x, plan->ydesc, dy,
                                                        plan->bwd_filter_conv, plan->bwd_filter_algo,
                                                        plan->work, plan->work_bytes,
                                                        /* beta = */ &zero, plan->wdesc, dw),
                    return FALSE);
  if (db != NULL)
    TACH_CUDNN_TRY (be, cudnnConvolutionBackwardBias (h, &one, plan->ydesc, dy, /* beta = */ &zero,
                                                      plan->bdesc, db), return FALSE);
  return TRUE;
}

void
tach_cuda_conv_fwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                    const float *b, float *y)
{
  (void) conv_forward (be, plan, x, w, b, y);
}

void
tach_cuda_conv_bwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                    const float *dy, float *dx, float *dw, float *db)
{
  (void) conv_backward (be, plan, x, w, dy, dx, dw, db);
}

/* ------------------------------------------------------------ the block */

static gboolean
check_block (TachBackend *be, TachConvPlan *plan)
{
  if (plan->desc.block)
    return TRUE;
  tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                     _("conv_block_fwd/bwd need a plan made with block set"));
  return FALSE;
}

/* cuDNN refused the fused call with @status: counted like any call, said
 * why at info level, and the route moves on for good. */
static gboolean
fused_refused (TachBackend *be, TachConvPlan *plan, cudnnStatus_t status)
{
  char detail[512] = "";
  TachCudaConvRoute *r = &plan->route;

  be->api_calls++;
  cudnnGetLastErrorString (detail, sizeof detail);
  /* A refusal found by a launch that failed (a bad launch parameter) may
   * leave that launch's error behind, which the next kernel's check would
   * take for its own; Tach's own launches are checked as they go, so
   * nothing else is pending here. */
  (void) cudaGetLastError ();
  g_info ("cuDNN refused the fused convolution + bias + ReLU with algorithm %d: %s (%d)%s%s",
          (int) r->algo[r->fused_at], cudnnGetErrorString (status), (int) status,
          detail[0] != '\0' ? ": " : "", detail);
  tach_cuda_conv_route_refused (r);
  note_route (be, plan);
  if (r->path == TACH_CUDA_CONV_FUSED)
    TACH_CUDNN_TRY (be, cudnnSetConvolutionMathType (plan->fused_conv, r->math[r->fused_at]),
                    return FALSE);
  return TRUE;
}

void
tach_cuda_conv_block_fwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                          const float *b, float *act, int32_t *idx, float *y)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  const TachConvDesc *d = &plan->desc;
  const float one = 1.0f, zero = 0.0f;
  TachCudaConvRoute *r = &plan->route;
  gboolean fused;
  int oh, ow;

  if (!check_block (be, plan))
    return;
  out_size (d, &oh, &ow);
  if (r->path == TACH_CUDA_CONV_PLAIN)
    {
      if (!conv_forward (be, plan, x, w, b, act))
        return;
      LAUNCH (be, tach_cuda_launch_relu_fwd (cb->stream, act, act,
                                             (size_t) d->N * d->K * oh * ow), return);
      LAUNCH (be, tach_cuda_launch_maxpool_fwd (cb->stream, act, y, idx, d->N, d->K, oh, ow), return);
      return;
    }
  /* Without a bias there is nothing to fuse. */
  while (b != NULL && r->path == TACH_CUDA_CONV_FUSED)
    {
      /* act = relu (conv (x) + b); z is act with alpha2 = 0, so unread. */
      cudnnStatus_t status =
        cudnnConvolutionBiasActivationForward (cb->cudnn, &one, plan->xdesc, x, plan->wdesc, w,
                                               plan->fused_conv, r->algo[r->fused_at],
                                               plan->work, plan->work_bytes,
                                               /* alpha2 = */ &zero, plan->ydesc, act,
                                               plan->bdesc, b, plan->relu, plan->ydesc, act);

      if (!tach_cudnn_status_is_refusal (status))
        {
          TACH_CUDNN_TRY (be, status, return);
          break;
        }
      if (!fused_refused (be, plan, status))
        return;
    }
  fused = b != NULL && r->path == TACH_CUDA_CONV_FUSED;
  if (!fused && !conv_forward (be, plan, x, w, NULL, act))
    return;
  LAUNCH (be, tach_cuda_launch_conv_pool_fwd (cb->stream, act, fused ? NULL : b, y, idx, d->N,
                                              d->K, oh, ow), return);
}

void
tach_cuda_conv_block_bwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                          const float *act, const int32_t *idx, const float *dy, float *dact,
                          float *dx, float *dw, float *db)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  const TachConvDesc *d = &plan->desc;
  int oh, ow;

  if (!check_block (be, plan) || !check_dx (be, plan, dx))
    return;
  out_size (d, &oh, &ow);
  if (plan->route.path == TACH_CUDA_CONV_PLAIN)
    {
      LAUNCH (be, tach_cuda_launch_maxpool_bwd (cb->stream, dy, idx, dact, d->N, d->K, oh, ow),
              return);
      LAUNCH (be, tach_cuda_launch_relu_bwd (cb->stream, act, dact, dact,
                                             (size_t) d->N * d->K * oh * ow), return);
      (void) conv_backward (be, plan, x, w, dact, dx, dw, db);
      return;
    }
  LAUNCH (be, tach_cuda_launch_conv_pool_bwd (cb->stream, dy, idx, dact,
                                              db != NULL ? plan->partial : NULL,
                                              d->N, d->K, oh, ow), return);
  if (db != NULL)
    LAUNCH (be, tach_cuda_launch_bias_grad (cb->stream, plan->partial, db, d->N, d->K, 0.0f),
            return);
  (void) conv_backward (be, plan, x, w, dact, dx, dw, NULL);
}
