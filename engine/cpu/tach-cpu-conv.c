/* tach-cpu-conv.c: 2-D convolution on oneDNN (forward, backward data,
 * backward weights), bare or as a convolution block (conv + bias + ReLU +
 * 2x2 max pool), in fp32 or bf16.
 *
 * oneDNN picks each operand's layout (format "any"): on AVX-512 machines
 * that is a channel-blocked layout (nChw16c) and its direct JIT kernels,
 * several times faster than the GEMM path it takes over plain NCHW.  The
 * plan makes the reorders between Tach's plain layouts and those once.  A
 * block keeps its activations blocked from the convolution to the pool and
 * back: the ReLU is the convolution's post-op, oneDNN pools and un-pools
 * the blocked data, and only the pooled output and the gradients crossing
 * the block's edges are reordered.  Backward, the ReLU's derivative is
 * applied to the pooled gradient, a quarter of the activations, rather
 * than to the un-pooled one (tach_cpu_conv_block_bwd).
 *
 * bf16 (AVX-512 BF16 processors): data and weights are rounded to bf16 for
 * the primitives, which accumulate in fp32; weight and bias gradients come
 * out in fp32, and the fp32 master weights stay the caller's.
 *
 * Threads: the engine thread.
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-cpu-private.h"
#include "tach-error-private.h"

struct _TachConvPlan {
  TachConvDesc desc;
  int          oh, ow;

  /* All owned; the pool and eltwise primitives only for a block,
   * bwd_data only with need_dx. */
  dnnl_primitive_t fwd, bwd_data, bwd_weights, pool_fwd, pool_bwd, relu_bwd;
  TachCpuArg  x_fwd, w_fwd, x_bwd, dw, w_bwd, dx;
  TachCpuArg  y;                 /* bare: the conv output; block: the pooled output */
  TachCpuArg  dy_w, dy_d;        /* bare: dy for each backward primitive */
  gboolean    dy_shared;         /* bare with need_dx: dy_d serves both */
  TachCpuArg  dy_pool;           /* block: the pooled output's gradient */
  dnnl_memory_t act, dact, ws;   /* block: over the caller's act, dact, idx */
  dnnl_memory_t bias, dbias;     /* plain f32 [K] */

  /* block: the backward weights want x in the layout the forward made, so
   * backward reuses that copy when handed the forward's x (as it is
   * handed its act) instead of reordering it again. */
  gboolean     x_shared;
  const float *x_fwd_last;       /* borrowed: the x that x_fwd.inner holds */

  /* block, fp32, the pooled output and its gradient in private copies of
   * one layout: backward may apply the ReLU's derivative to the pooled
   * gradient, when handed the act of the forward that filled y.inner. */
  gboolean     relu_pooled;
  size_t       pooled_floats;    /* with relu_pooled: floats of y.buf and dy_pool.buf */
  const float *act_fwd_last;     /* borrowed: the act of the forward that y.inner holds */

  float *zero_bias;              /* owned: K zeros, for a NULL bias */
  float *db_scratch;             /* owned: K floats, for a NULL db */
};

void
tach_cpu_conv_plan_free (TachBackend *be, TachConvPlan *plan)
{
  dnnl_primitive_t prims[6];
  dnnl_memory_t mems[5];
  TachCpuArg *args[10];

  if (plan == NULL)
    return;
  prims[0] = plan->fwd, prims[1] = plan->bwd_data, prims[2] = plan->bwd_weights;
  prims[3] = plan->pool_fwd, prims[4] = plan->pool_bwd, prims[5] = plan->relu_bwd;
  mems[0] = plan->act, mems[1] = plan->dact, mems[2] = plan->ws;
  mems[3] = plan->bias, mems[4] = plan->dbias;
  args[0] = &plan->x_fwd, args[1] = &plan->w_fwd, args[2] = &plan->x_bwd;
  args[3] = &plan->dw, args[4] = &plan->w_bwd, args[5] = &plan->dx, args[6] = &plan->y;
  args[7] = &plan->dy_w, args[8] = &plan->dy_d, args[9] = &plan->dy_pool;
  for (guint i = 0; i < G_N_ELEMENTS (prims); i++)
    if (prims[i] != NULL)
      dnnl_primitive_destroy (prims[i]);
  for (guint i = 0; i < G_N_ELEMENTS (mems); i++)
    if (mems[i] != NULL)
      dnnl_memory_destroy (mems[i]);
  for (guint i = 0; i < G_N_ELEMENTS (args); i++)
    tach_cpu_arg_clear (be, args[i]);
  tach_cpu_mem_free (be, plan->zero_bias);
  tach_cpu_mem_free (be, plan->db_scratch);
  g_free (plan);
}

/* Creates the primitive of @pd (which it then destroys) in *@prim. */
static gboolean
make_primitive (TachBackend *be, dnnl_primitive_desc_t pd, dnnl_primitive_t *prim)
{
  dnnl_status_t status = dnnl_primitive_create (prim, pd);

  dnnl_primitive_desc_destroy (pd);
  if (status != dnnl_success)
    {
      *prim = NULL;
      tach_cpu_dnnl_fail (be, status, "dnnl_primitive_create", __FILE__, __LINE__);
      return FALSE;
    }
  return TRUE;
}

static const dnnl_memory_desc_t *
query_md (dnnl_primitive_desc_t pd, dnnl_query_t what)
{
  return dnnl_primitive_desc_query_md (pd, what, 0);
}

/* Everything but the primitives' memory: the plain descriptors of the
 * caller's tensors and the conv geometry. */
typedef struct {
  dnnl_memory_desc_t x, w, b, y, act_any, pooled;
  dnnl_data_type_t   dt;
  dnnl_dims_t        strides, padding;
} ConvMds;

static gboolean
conv_mds_init (TachBackend *be, const TachConvPlan *plan, ConvMds *m)
{
  const TachConvDesc *d = &plan->desc;
  dnnl_dims_t x_dims = { d->N, d->C, d->H, d->W };
  dnnl_dims_t w_dims = { d->K, d->C, d->R, d->S };
  dnnl_dims_t b_dims = { d->K };
  dnnl_dims_t y_dims = { d->N, d->K, plan->oh, plan->ow };
  dnnl_dims_t p_dims = { d->N, d->K, plan->oh / 2, plan->ow / 2 };

  m->dt = d->precision == TACH_PRECISION_BF16 ? dnnl_bf16 : dnnl_f32;
  m->strides[0] = m->strides[1] = 1;
  m->padding[0] = d->pad_h;
  m->padding[1] = d->pad_w;
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&m->x, 4, x_dims, dnnl_f32, dnnl_nchw), fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&m->w, 4, w_dims, dnnl_f32, dnnl_oihw), fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&m->b, 1, b_dims, dnnl_f32, dnnl_a), fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&m->y, 4, y_dims, dnnl_f32, dnnl_nchw), fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&m->act_any, 4, y_dims, m->dt,
                                                   dnnl_format_tag_any), fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&m->pooled, 4, p_dims, dnnl_f32, dnnl_nchw),
                 fail);
  return TRUE;
fail:
  return FALSE;
}

/* The forward primitive (with the ReLU as a post-op for a block) and its
 * operands; *act_md gets the layout oneDNN chose for the output. */
static gboolean
plan_forward (TachBackend *be, TachConvPlan *plan, ConvMds *m, const dnnl_memory_desc_t *act,
              dnnl_primitive_desc_t *fwd_pd)
{
  dnnl_engine_t engine = TACH_CPU (be)->engine;
  dnnl_memory_desc_t x_any, w_any;
  dnnl_convolution_desc_t conv;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t ops = NULL;
  dnnl_primitive_desc_t pd = NULL;
  gboolean ok = FALSE;

  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&x_any, 4, m->x.dims, m->dt,
                                                   dnnl_format_tag_any), out);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&w_any, 4, m->w.dims, m->dt,
                                                   dnnl_format_tag_any), out);
  TACH_DNNL_TRY (be, dnnl_convolution_forward_desc_init (&conv, dnnl_forward_training,
                                                         dnnl_convolution_direct,
                                                         /* src = */ &x_any,
                                                         /* weights = */ &w_any,
                                                         /* bias = */ &m->b,
                                                         /* dst = */ act,
                                                         m->strides,
                                                         /* padding_l = */ m->padding,
                                                         /* padding_r = */ m->padding), out);
  TACH_DNNL_TRY (be, dnnl_primitive_attr_create (&attr), out);
  if (plan->desc.block)
    {
      TACH_DNNL_TRY (be, dnnl_post_ops_create (&ops), out);
      TACH_DNNL_TRY (be, dnnl_post_ops_append_eltwise (ops, /* scale = */ 1.0f,
                                                       dnnl_eltwise_relu,
                                                       /* alpha = */ 0.0f,
                                                       /* beta = */ 0.0f), out);
      TACH_DNNL_TRY (be, dnnl_primitive_attr_set_post_ops (attr, ops), out);
    }
  TACH_DNNL_TRY (be, dnnl_primitive_desc_create (&pd, &conv, attr, engine, NULL), out);
  if (!tach_cpu_arg_init (be, &plan->x_fwd, &m->x, query_md (pd, dnnl_query_src_md), FALSE)
      || !tach_cpu_arg_init (be, &plan->w_fwd, &m->w, query_md (pd, dnnl_query_weights_md),
                             FALSE))
    goto out;
  *fwd_pd = g_steal_pointer (&pd);
  ok = TRUE;
out:
  if (pd != NULL)
    dnnl_primitive_desc_destroy (pd);
  if (ops != NULL)
    dnnl_post_ops_destroy (ops);
  if (attr != NULL)
    dnnl_primitive_attr_destroy (attr);
  return ok;
}

/* Both backward convolutions; @ddst is the layout of the output gradient
 * they read (a block's activation layout, or "any" for a bare conv). */
static gboolean
plan_backward (TachBackend *be, TachConvPlan *plan, ConvMds *m, dnnl_primitive_desc_t fwd_pd,
               const dnnl_memory_desc_t *ddst)
{
  dnnl_engine_t engine = TACH_CPU (be)->engine;
  dnnl_memory_desc_t x_any, w_any, dx_any, dw_any, dd;
  dnnl_convolution_desc_t conv;
  dnnl_primitive_desc_t pd = NULL;

  dd = *ddst;
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&x_any, 4, m->x.dims, m->dt,
                                                   dnnl_format_tag_any), fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&w_any, 4, m->w.dims, m->dt,
                                                   dnnl_format_tag_any), fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&dw_any, 4, m->w.dims, dnnl_f32,
                                                   dnnl_format_tag_any), fail);
  if (plan->desc.need_dx)
    {
      /* The input gradient in fp32 whatever the precision: it leaves the
       * layer, and a bf16 copy would round it twice. */
      TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&dx_any, 4, m->x.dims, dnnl_f32,
                                                       dnnl_format_tag_any), fail);
      TACH_DNNL_TRY (be, dnnl_convolution_backward_data_desc_init (&conv,
                                                                   dnnl_convolution_direct,
                                                                   /* diff_src = */ &dx_any,
                                                                   /* weights = */ &w_any,
                                                                   /* diff_dst = */ &dd,
                                                                   m->strides,
                                                                   /* padding_l = */ m->padding,
                                                                   /* padding_r = */ m->padding),
                     fail);
      if (dnnl_primitive_desc_create (&pd, &conv, NULL, engine, fwd_pd) != dnnl_success)
        {
          /* Some bf16 kernels only write a bf16 input gradient. */
          TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&dx_any, 4, m->x.dims, m->dt,
                                                           dnnl_format_tag_any), fail);
          TACH_DNNL_TRY (be, dnnl_convolution_backward_data_desc_init (
                           &conv, dnnl_convolution_direct, /* diff_src = */ &dx_any,
                           /* weights = */ &w_any, /* diff_dst = */ &dd, m->strides,
                           /* padding_l = */ m->padding, /* padding_r = */ m->padding), fail);
          TACH_DNNL_TRY (be, dnnl_primitive_desc_create (&pd, &conv, NULL, engine, fwd_pd),
                         fail);
        }
      /* A block hands the backward primitives its own blocked gradient;
       * a bare conv reorders the caller's. */
      if (!tach_cpu_arg_init (be, &plan->dx, &m->x, query_md (pd, dnnl_query_diff_src_md), TRUE)
          || !tach_cpu_arg_init (be, &plan->w_bwd, &m->w, query_md (pd, dnnl_query_weights_md),
                                 FALSE)
          || (!plan->desc.block
              && !tach_cpu_arg_init (be, &plan->dy_d, &m->y,
                                     query_md (pd, dnnl_query_diff_dst_md), FALSE)))
        goto fail;
      /* Both backward primitives read the same output gradient, reordered
       * once. */
      dd = *query_md (pd, dnnl_query_diff_dst_md);
      plan->dy_shared = TRUE;
      if (!make_primitive (be, g_steal_pointer (&pd), &plan->bwd_data))
        goto fail;
    }

  TACH_DNNL_TRY (be, dnnl_convolution_backward_weights_desc_init (&conv, dnnl_convolution_direct,
                                                                  /* src = */ &x_any,
                                                                  /* diff_weights = */ &dw_any,
                                                                  /* diff_bias = */ &m->b,
                                                                  /* diff_dst = */ &dd,
                                                                  m->strides,
                                                                  /* padding_l = */ m->padding,
                                                                  /* padding_r = */ m->padding),
                 fail);
  TACH_DNNL_TRY (be, dnnl_primitive_desc_create (&pd, &conv, NULL, engine, fwd_pd), fail);
  if (!tach_cpu_arg_init (be, &plan->x_bwd, &m->x, query_md (pd, dnnl_query_src_md), FALSE)
      || !tach_cpu_arg_init (be, &plan->dw, &m->w, query_md (pd, dnnl_query_diff_weights_md),
                             TRUE)
      || (!plan->desc.block && !plan->dy_shared
          && !tach_cpu_arg_init (be, &plan->dy_w, &m->y, query_md (pd, dnnl_query_diff_dst_md),
                                 FALSE)))
    goto fail;
  return make_primitive (be, g_steal_pointer (&pd), &plan->bwd_weights);

fail:
  if (pd != NULL)
    dnnl_primitive_desc_destroy (pd);
  return FALSE;
}

/* A block's pool (forward and backward, blocked, with oneDNN's workspace
 * in the caller's idx) and ReLU backward (from the activations, in place
 * on their gradient). */
static gboolean
plan_block (TachBackend *be, TachConvPlan *plan, ConvMds *m, const dnnl_memory_desc_t *act)
{
  dnnl_engine_t engine = TACH_CPU (be)->engine;
  const TachConvDesc *d = &plan->desc;
  dnnl_dims_t kernel = { 2, 2 }, stride = { 2, 2 }, zero = { 0, 0 };
  dnnl_memory_desc_t p_any;
  dnnl_pooling_v2_desc_t pool;
  dnnl_eltwise_desc_t elt;
  dnnl_primitive_desc_t pool_pd = NULL, pd = NULL, elt_pd = NULL;
  const dnnl_memory_desc_t *ws_md;
  size_t idx_bytes = (size_t) d->N * d->K * (plan->oh / 2) * (plan->ow / 2) * sizeof (int32_t);
  gboolean ok = FALSE;

  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&p_any, 4, m->pooled.dims, m->dt,
                                                   dnnl_format_tag_any), out);
  TACH_DNNL_TRY (be, dnnl_pooling_v2_forward_desc_init (&pool, dnnl_forward_training,
                                                        dnnl_pooling_max,
                                                        /* src = */ act, /* dst = */ &p_any,
                                                        stride, kernel,
                                                        /* dilation = */ zero,
                                                        /* padding_l = */ zero,
                                                        /* padding_r = */ zero), out);
  TACH_DNNL_TRY (be, dnnl_primitive_desc_create (&pool_pd, &pool, NULL, engine, NULL), out);
  ws_md = query_md (pool_pd, dnnl_query_workspace_md);
  if (ws_md == NULL || dnnl_memory_desc_get_size (ws_md) > idx_bytes)
    {
      tach_backend_fail (be, TACH_ERROR_LIBRARY,
                         _("oneDNN's max pool wants a larger workspace than the block's "
                           "indices: %zu bytes for %zu"),
                         ws_md != NULL ? dnnl_memory_desc_get_size (ws_md) : 0, idx_bytes);
      goto out;
    }
  plan->ws = tach_cpu_memory_new (be, ws_md);
  if (plan->ws == NULL
      || !tach_cpu_arg_init (be, &plan->y, &m->pooled, query_md (pool_pd, dnnl_query_dst_md),
                             TRUE))
    goto out;

  p_any = *query_md (pool_pd, dnnl_query_dst_md);
  TACH_DNNL_TRY (be, dnnl_pooling_v2_backward_desc_init (&pool, dnnl_pooling_max,
                                                         /* diff_src = */ act,
                                                         /* diff_dst = */ &p_any,
                                                         stride, kernel,
                                                         /* dilation = */ zero,
                                                         /* padding_l = */ zero,
                                                         /* padding_r = */ zero), out);
  TACH_DNNL_TRY (be, dnnl_primitive_desc_create (&pd, &pool, NULL, engine, pool_pd), out);
  if (!tach_cpu_arg_init (be, &plan->dy_pool, &m->pooled, query_md (pd, dnnl_query_diff_dst_md),
                          FALSE))
    goto out;
  plan->relu_pooled = m->dt == dnnl_f32 && plan->y.reorder != NULL
                      && plan->dy_pool.reorder != NULL
                      && dnnl_memory_desc_equal (query_md (pool_pd, dnnl_query_dst_md),
                                                 query_md (pd, dnnl_query_diff_dst_md));
  plan->pooled_floats = dnnl_memory_desc_get_size (query_md (pool_pd, dnnl_query_dst_md))
                        / sizeof (float);
  if (!make_primitive (be, g_steal_pointer (&pd), &plan->pool_bwd)
      || !make_primitive (be, g_steal_pointer (&pool_pd), &plan->pool_fwd))
    goto out;

  /* The ReLU's backward from its output (y > 0), as the bare relu_bwd op
   * does; oneDNN wants a forward descriptor as the hint. */
  TACH_DNNL_TRY (be, dnnl_eltwise_forward_desc_init (&elt, dnnl_forward_training,
                                                     dnnl_eltwise_relu_use_dst_for_bwd, act,
                                                     0.0f, 0.0f), out);
  TACH_DNNL_TRY (be, dnnl_primitive_desc_create (&elt_pd, &elt, NULL, engine, NULL), out);
  TACH_DNNL_TRY (be, dnnl_eltwise_backward_desc_init (&elt, dnnl_eltwise_relu_use_dst_for_bwd,
                                                      /* diff_data = */ act,
                                                      /* data = */ act, 0.0f, 0.0f), out);
  TACH_DNNL_TRY (be, dnnl_primitive_desc_create (&pd, &elt, NULL, engine, elt_pd), out);
  if (!make_primitive (be, g_steal_pointer (&pd), &plan->relu_bwd))
    goto out;

  plan->act = tach_cpu_memory_new (be, act);
  plan->dact = tach_cpu_memory_new (be, act);
  ok = plan->act != NULL && plan->dact != NULL;
out:
  if (pool_pd != NULL)
    dnnl_primitive_desc_destroy (pool_pd);
  if (pd != NULL)
    dnnl_primitive_desc_destroy (pd);
  if (elt_pd != NULL)
    dnnl_primitive_desc_destroy (elt_pd);
  return ok;
}

/* Plans every primitive; a block's activations in @act_md (may be "any"). */
static gboolean
plan_all (TachBackend *be, TachConvPlan *plan, ConvMds *m, const dnnl_memory_desc_t *act_md,
          gboolean *too_big)
{
  dnnl_primitive_desc_t fwd_pd = NULL;
  dnnl_memory_desc_t act, ddst;
  size_t act_bytes = (size_t) plan->desc.N * plan->desc.K * plan->oh * plan->ow * sizeof (float);
  gboolean ok = FALSE;

  *too_big = FALSE;
  if (!plan_forward (be, plan, m, act_md, &fwd_pd))
    return FALSE;
  act = *query_md (fwd_pd, dnnl_query_dst_md);
  if (plan->desc.block)
    {
      /* The caller's act and dact hold N*K*OH*OW floats: a layout that
       * pads K to its block must not need more. */
      if (dnnl_memory_desc_get_size (&act) > act_bytes)
        {
          *too_big = TRUE;
          goto out;
        }
      if (!plan_block (be, plan, m, &act))
        goto out;
      ddst = act;
    }
  else
    {
      if (!tach_cpu_arg_init (be, &plan->y, &m->y, &act, TRUE))
        goto out;
      TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&ddst, 4, act.dims, m->dt,
                                                       dnnl_format_tag_any), out);
    }
  if (!plan_backward (be, plan, m, fwd_pd, &ddst))
    goto out;
  ok = make_primitive (be, g_steal_pointer (&fwd_pd), &plan->fwd);
out:
  if (fwd_pd != NULL)
    dnnl_primitive_desc_destroy (fwd_pd);
  return ok;
}

TachConvPlan *
tach_cpu_conv_plan_new (TachBackend *be, const TachConvDesc *desc)
{
  const TachConvDesc *d = desc;
  TachConvPlan *plan;
  ConvMds m;
  gboolean too_big = FALSE;
  int oh = d->H + 2 * d->pad_h - d->R + 1;
  int ow = d->W + 2 * d->pad_w - d->S + 1;

  if (d->N <= 0 || d->C <= 0 || d->H <= 0 || d->W <= 0 || d->K <= 0 || d->R <= 0
      || d->S <= 0 || d->pad_h < 0 || d->pad_w < 0 || oh <= 0 || ow <= 0
      || (d->block && (oh < 2 || ow < 2)))
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("a convolution needs positive sizes and an output of at least 1x1 "
                           "(2x2 before a pool): input %dx%dx%dx%d, %d filters %dx%d, "
                           "padding %dx%d"),
                         d->N, d->C, d->H, d->W, d->K, d->R, d->S, d->pad_h, d->pad_w);
      return NULL;
    }
  if (d->precision != TACH_PRECISION_FP32 && d->precision != TACH_PRECISION_BF16)
    {
      tach_backend_fail (be, TACH_ERROR_UNSUPPORTED,
                         W_("the CPU backend's convolution runs in fp32 or bf16: use "
                           "{precision=fp32}"));
      return NULL;
    }
  if (d->precision == TACH_PRECISION_BF16
      && !tach_cpu_backend_supports (TACH_KNOB_PRECISION, TACH_PRECISION_BF16, NULL))
    {
      tach_backend_fail (be, TACH_ERROR_UNSUPPORTED,
                         W_("bf16 needs a processor with AVX-512 BF16: use {precision=fp32}"));
      return NULL;
    }

  tach_cpu_bind_threads (be);
  plan = g_new0 (TachConvPlan, 1);
  plan->desc = *desc;
  plan->oh = oh;
  plan->ow = ow;
  if (!conv_mds_init (be, plan, &m)
      || (!plan_all (be, plan, &m, &m.act_any, &too_big) && !too_big))
    goto fail;
  if (too_big)
    {
      dnnl_memory_desc_t plain;

      /* K is no multiple of the channel block: keep the activations plain. */
      TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&plain, 4, m.y.dims, m.dt, dnnl_nchw),
                     fail);
      tach_cpu_conv_plan_free (be, plan);
      plan = g_new0 (TachConvPlan, 1);
      plan->desc = *desc;
      plan->oh = oh;
      plan->ow = ow;
      if (!plan_all (be, plan, &m, &plain, &too_big))
        goto fail;
    }

  plan->bias = tach_cpu_memory_new (be, &m.b);
  plan->dbias = tach_cpu_memory_new (be, &m.b);
  plan->zero_bias = tach_cpu_mem_alloc (be, (size_t) d->K * sizeof (float));
  plan->db_scratch = tach_cpu_mem_alloc (be, (size_t) d->K * sizeof (float));
  if (!tach_backend_ok (be))
    goto fail;
  memset (plan->zero_bias, 0, (size_t) d->K * sizeof (float));
  if (d->block && plan->x_fwd.reorder != NULL && plan->x_bwd.reorder != NULL)
    {
      const dnnl_memory_desc_t *fwd_md, *bwd_md;

      TACH_DNNL_TRY (be, dnnl_memory_get_memory_desc (plan->x_fwd.inner, &fwd_md), fail);
      TACH_DNNL_TRY (be, dnnl_memory_get_memory_desc (plan->x_bwd.inner, &bwd_md), fail);
      plan->x_shared = dnnl_memory_desc_equal (fwd_md, bwd_md);
    }
  return plan;

fail:
  tach_cpu_conv_plan_free (be, plan);
  return NULL;
}

#define SET_HANDLE(be, mem, ptr, label) \
  TACH_DNNL_TRY ((be), dnnl_memory_set_data_handle ((mem), (void *) (ptr)), label)

static gboolean
check_block (TachBackend *be, TachConvPlan *plan, gboolean block)
{
  if (plan->desc.block == block)
    return TRUE;
  tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                     block ? _("conv_block_fwd/bwd need a plan made with block set")
                           : _("conv_fwd/bwd need a plan made without block set"));
  return FALSE;
}

/* The forward convolution into @dst. */
static gboolean
conv_forward (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
              const float *b, dnnl_memory_t dst)
{
  dnnl_exec_arg_t args[4];
  dnnl_memory_t src, wei;

  src = tach_cpu_arg_bind (be, &plan->x_fwd, x);
  wei = src != NULL ? tach_cpu_arg_bind (be, &plan->w_fwd, w) : NULL;
  if (wei == NULL || dst == NULL)
    return FALSE;
  SET_HANDLE (be, plan->bias, b != NULL ? b : plan->zero_bias, fail);
  args[0] = (dnnl_exec_arg_t) { DNNL_ARG_SRC, src };
  args[1] = (dnnl_exec_arg_t) { DNNL_ARG_WEIGHTS, wei };
  args[2] = (dnnl_exec_arg_t) { DNNL_ARG_BIAS, plan->bias };
  args[3] = (dnnl_exec_arg_t) { DNNL_ARG_DST, dst };
  return tach_cpu_execute (be, plan->fwd, 4, args);
fail:
  return FALSE;
}

/* Both backward convolutions from the output gradient in @ddst_w (for the
 * weights) and @ddst_d (for the data). */
static gboolean
conv_backward (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
               dnnl_memory_t ddst_w, dnnl_memory_t ddst_d, float *dx, float *dw, float *db)
{
  dnnl_exec_arg_t args[4];
  dnnl_memory_t src, dwei, wei, dsrc;

  if (plan->x_shared && x == plan->x_fwd_last)
    src = plan->x_fwd.inner;
  else
    src = tach_cpu_arg_bind (be, &plan->x_bwd, x);
  dwei = src != NULL ? tach_cpu_arg_bind (be, &plan->dw, dw) : NULL;
  if (dwei == NULL || ddst_w == NULL)
    return FALSE;
  SET_HANDLE (be, plan->dbias, db != NULL ? db : plan->db_scratch, fail);
  args[0] = (dnnl_exec_arg_t) { DNNL_ARG_SRC, src };
  args[1] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_WEIGHTS, dwei };
  args[2] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_BIAS, plan->dbias };
  args[3] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_DST, ddst_w };
  if (!tach_cpu_execute (be, plan->bwd_weights, 4, args)
      || !tach_cpu_arg_finish (be, &plan->dw))
    return FALSE;
  if (dx == NULL)
    return TRUE;

  wei = tach_cpu_arg_bind (be, &plan->w_bwd, w);
  dsrc = wei != NULL ? tach_cpu_arg_bind (be, &plan->dx, dx) : NULL;
  if (dsrc == NULL || ddst_d == NULL)
    return FALSE;
  args[0] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_SRC, dsrc };
  args[1] = (dnnl_exec_arg_t) { DNNL_ARG_WEIGHTS, wei };
  args[2] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_DST, ddst_d };
  return tach_cpu_execute (be, plan->bwd_data, 3, args) && tach_cpu_arg_finish (be, &plan->dx);
fail:
  return FALSE;
}

static gboolean
check_dx (TachBackend *be, TachConvPlan *plan, const float *dx)
{
  if (dx == NULL || plan->bwd_data != NULL)
    return TRUE;
  tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                     _("a convolution planned without need_dx was asked for dx: "
                       "set need_dx in the TachConvDesc"));
  return FALSE;
}

void
tach_cpu_conv_fwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                   const float *b, float *y)
{
  if (check_block (be, plan, FALSE)
      && conv_forward (be, plan, x, w, b, tach_cpu_arg_bind (be, &plan->y, y)))
    tach_cpu_arg_finish (be, &plan->y);
}

void
tach_cpu_conv_bwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                   const float *dy, float *dx, float *dw, float *db)
{
  dnnl_memory_t ddst_w, ddst_d = NULL;

  if (!check_block (be, plan, FALSE) || !check_dx (be, plan, dx))
    return;
  if (plan->dy_shared)
    ddst_w = ddst_d = tach_cpu_arg_bind (be, &plan->dy_d, dy);
  else
    ddst_w = tach_cpu_arg_bind (be, &plan->dy_w, dy);
  conv_backward (be, plan, x, w, ddst_w, ddst_d, dx, dw, db);
}

void
tach_cpu_conv_block_fwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                         const float *b, float *act, int32_t *idx, float *y)
{
  dnnl_exec_arg_t args[3];
  dnnl_memory_t dst;

  if (!check_block (be, plan, TRUE))
    return;
  SET_HANDLE (be, plan->act, act, out);
  SET_HANDLE (be, plan->ws, idx, out);
  plan->x_fwd_last = NULL;
  plan->act_fwd_last = NULL;
  if (!conv_forward (be, plan, x, w, b, plan->act))
    return;
  plan->x_fwd_last = x;
  dst = tach_cpu_arg_bind (be, &plan->y, y);
  if (dst == NULL)
    return;
  args[0] = (dnnl_exec_arg_t) { DNNL_ARG_SRC, plan->act };
  args[1] = (dnnl_exec_arg_t) { DNNL_ARG_DST, dst };
  args[2] = (dnnl_exec_arg_t) { DNNL_ARG_WORKSPACE, plan->ws };
  if (tach_cpu_execute (be, plan->pool_fwd, 3, args) && tach_cpu_arg_finish (be, &plan->y))
    plan->act_fwd_last = act;
out:
  return;
}

/* dy *= (y > 0), as oneDNN's ReLU backward computes it from its output:
 * the derivative is 1 where y is not <= 0 (NaN included), else alpha = 0,
 * multiplied in.  The max pool's output is the activation at its argmax
 * and its backward puts each gradient at the argmax alone (zero
 * elsewhere, where the ReLU's backward keeps zero), so this on the pooled
 * gradient gives the very bits of the ReLU's backward after un-pooling. */
#define RELU_POOLED_BLOCK 16384

/* The comparison is only if-converted, and so vectorised, when GCC may
 * assume floating-point ops do not trap; Tach never enables FP traps. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("no-trapping-math")
#endif
TACH_CPU_SIMD_BODY void
relu_bwd_span_body (float *restrict dy, const float *restrict y, size_t i0, size_t i1)
{
#pragma omp simd
  for (size_t i = i0; i < i1; i++)
    dy[i] *= y[i] <= 0.0f ? 0.0f : 1.0f;
}

TACH_CPU_SIMD_DISPATCH (static, relu_bwd_span,
                        (float *restrict dy, const float *restrict y, size_t i0, size_t i1),
                        (dy, y, i0, i1))
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

static void
relu_bwd_pooled (TachBackend *be, float *dy, const float *y, size_t n)
{
  size_t blocks = (n + RELU_POOLED_BLOCK - 1) / RELU_POOLED_BLOCK;

  tach_cpu_bind_threads (be);
#pragma omp parallel for if (n >= 4 * RELU_POOLED_BLOCK)
  for (size_t b = 0; b < blocks; b++)
    relu_bwd_span (dy, y, b * RELU_POOLED_BLOCK, MIN (n, (b + 1) * RELU_POOLED_BLOCK));
}

void
tach_cpu_conv_block_bwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                         const float *act, const int32_t *idx, const float *dy, float *dact,
                         float *dx, float *dw, float *db)
{
  dnnl_exec_arg_t args[3];
  dnnl_memory_t ddst;
  gboolean pooled;

  if (!check_block (be, plan, TRUE) || !check_dx (be, plan, dx))
    return;
  SET_HANDLE (be, plan->act, act, out);
  SET_HANDLE (be, plan->dact, dact, out);
  SET_HANDLE (be, plan->ws, idx, out);
  ddst = tach_cpu_arg_bind (be, &plan->dy_pool, dy);
  if (ddst == NULL)
    return;
  /* The pooled gradient is the plan's copy here and y.inner the forward's
   * pooled output, in the same layout. */
  pooled = plan->relu_pooled && act == plan->act_fwd_last;
  if (pooled)
    relu_bwd_pooled (be, plan->dy_pool.buf, plan->y.buf, plan->pooled_floats);
  args[0] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_DST, ddst };
  args[1] = (dnnl_exec_arg_t) { DNNL_ARG_WORKSPACE, plan->ws };
  args[2] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_SRC, plan->dact };
  if (!tach_cpu_execute (be, plan->pool_bwd, 3, args))
    return;
  if (pooled)
    {
      conv_backward (be, plan, x, w, plan->dact, plan->dact, dx, dw, db);
      return;
    }
  /* In place: dact = dact * (act > 0). */
  args[0] = (dnnl_exec_arg_t) { DNNL_ARG_DST, plan->act };
  args[1] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_DST, plan->dact };
  args[2] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_SRC, plan->dact };
  if (!tach_cpu_execute (be, plan->relu_bwd, 3, args))
    return;
  conv_backward (be, plan, x, w, plan->dact, plan->dact, dx, dw, db);
out:
  return;
}
