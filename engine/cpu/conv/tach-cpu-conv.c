/* tach-cpu-conv.c: 2-D convolution on oneDNN (forward, backward data,
 * backward weights), bare or as a convolution block (conv + bias + ReLU +
 * 2x2 max pool), in fp32 or bf16.
 *
 * oneDNN picks each operand's layout (format "any"): on AVX-512 machines
 * that is a channel-blocked layout (nChw16c) and its direct JIT kernels,
 * several times faster than the GEMM path it takes over plain NCHW.  The
 * plan makes the reorders between Tach's plain layouts and those once.  A
 * block keeps its activations in the convolution's layout: the ReLU is the
 * convolution's post-op, and the block's own pool (tach-cpu-pool.c) reads
 * them there and writes the pooled output plain, and backward un-pools the
 * plain pooled gradient straight into that layout, the ReLU's derivative
 * applied on the way from the pool's codes; only the block's input and its
 * gradient are reordered.
 *
 * A block's own paths take over where they apply: the 5x5 convolution by
 * Winograd (tach-cpu-winograd.c), and the filter and bias gradients of one
 * input channel (tach-cpu-dw1.c), oneDNN's backward data beside them.
 *
 * bf16 (AVX-512 BF16 processors): data and weights are rounded to bf16 for
 * the primitives, which accumulate in fp32; weight and bias gradients come
 * out in fp32, and the fp32 master weights stay the caller's.
 *
 * This file plans (the primitives, the layouts, the chunks, which of the
 * block's own paths apply); tach-cpu-conv-run.c runs the plans.
 *
 * Threads: the engine thread.
 */
#include <string.h>
#include <unistd.h>

#include <glib/gi18n-lib.h>

#include "tach-cpu-private.h"
#include "tach-cpu-conv-private.h"
#include "tach-error-private.h"

void
tach_cpu_conv_plan_free (TachBackend *be, TachConvPlan *plan)
{
  dnnl_primitive_t prims[4];
  dnnl_memory_t mems[6];
  TachCpuArg *args[9];

  if (plan == NULL)
    return;
  prims[0] = plan->fwd, prims[1] = plan->bwd_data, prims[2] = plan->bwd_weights;
  prims[3] = plan->fwd_chunk;
  mems[0] = plan->act, mems[1] = plan->dact;
  mems[2] = plan->bias, mems[3] = plan->dbias;
  mems[4] = plan->x_chunk, mems[5] = plan->act_chunk;
  args[0] = &plan->x_fwd, args[1] = &plan->w_fwd, args[2] = &plan->x_bwd;
  args[3] = &plan->dw, args[4] = &plan->w_bwd, args[5] = &plan->dx, args[6] = &plan->y;
  args[7] = &plan->dy_w, args[8] = &plan->dy_d;
  tach_cpu_arg_clear (be, &plan->wino_x);
  tach_cpu_arg_clear (be, &plan->wino_dx);
  for (guint i = 0; i < G_N_ELEMENTS (prims); i++)
    if (prims[i] != NULL)
      dnnl_primitive_destroy (prims[i]);
  for (guint i = 0; i < G_N_ELEMENTS (mems); i++)
    if (mems[i] != NULL)
      dnnl_memory_destroy (mems[i]);
  for (guint i = 0; i < G_N_ELEMENTS (args); i++)
    tach_cpu_arg_clear (be, args[i]);
  tach_cpu_wino_free (be, plan->wino);
  tach_cpu_dw1_free (be, plan->dw1);
  tach_cpu_mem_free (be, plan->zero_bias);
  tach_cpu_mem_free (be, plan->act_scratch);
  tach_cpu_mem_free (be, plan->db_scratch);
  g_free (plan);
}

/* FALSE under TACH_CPU_CONV=direct: a conv block's own paths (Winograd,
 * one channel's gradients) step aside for oneDNN's direct kernels.  The
 * plan chooses; the paths only say where their shapes allow them. */
static gboolean
own_paths (void)
{
  return g_strcmp0 (g_getenv ("TACH_CPU_CONV"), "direct") != 0;
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

/* The layout blocks pass between them (TachConvDesc.y_native, x_native):
 * in fp32, channels blocked by the vector width oneDNN's convolutions block
 * them by at the level the kernels run at (16 on AVX-512, 8 on AVX2),
 * which they then read and write without a reorder; plain where the
 * channels are no multiple of the block or the level has none, and in bf16
 * (where oneDNN's AMX kernels want channels last, and a forced layout
 * would take other kernels, other bits).  Both blocks derive it from the
 * shape and precision alone, so a pair of one precision agrees. */
static int
native_cb (int channels)
{
  int cb = MAX (tach_cpu_isa_lanes (), 1);

  return channels % cb == 0 ? cb : 1;
}

static gboolean
native_applies (const TachConvDesc *d, gboolean x_side)
{
  return d->block && d->precision == TACH_PRECISION_FP32 && (x_side ? d->x_native : d->y_native);
}

static dnnl_status_t
native_md_init (dnnl_memory_desc_t *md, const dnnl_dims_t dims, dnnl_data_type_t dt)
{
  int cb = native_cb ((int) dims[1]);

  return dnnl_memory_desc_init_by_tag (md, 4, dims, dt,
                                       cb == 16 ? dnnl_aBcd16b : cb == 8 ? dnnl_aBcd8b : dnnl_nchw);
}

/* Everything but the primitives' memory: the plain descriptors of the
 * caller's tensors and the conv geometry. */
typedef struct {
  dnnl_memory_desc_t x, w, b, y, act_any;
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

  m->dt = d->precision == TACH_PRECISION_BF16 ? dnnl_bf16 : dnnl_f32;
  m->strides[0] = m->strides[1] = 1;
  m->padding[0] = d->pad_h;
  m->padding[1] = d->pad_w;
  if (native_applies (d, TRUE))
    TACH_DNNL_TRY (be, native_md_init (&m->x, x_dims, dnnl_f32), fail);
  else
    TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&m->x, 4, x_dims, dnnl_f32, dnnl_nchw),
                   fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&m->w, 4, w_dims, dnnl_f32, dnnl_oihw), fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&m->b, 1, b_dims, dnnl_f32, dnnl_a), fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&m->y, 4, y_dims, dnnl_f32, dnnl_nchw), fail);
  /* A pooled output in the native layout is pooled from activations in it
   * (the block's pool keeps their channel block). */
  if (native_applies (d, FALSE))
    TACH_DNNL_TRY (be, native_md_init (&m->act_any, y_dims, m->dt), fail);
  else
    TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&m->act_any, 4, y_dims, m->dt,
                                                     dnnl_format_tag_any), fail);
  return TRUE;
fail:
  return FALSE;
}

/* The forward primitive's descriptor over @x, @w and @dst (with the ReLU
 * as a post-op for a block); @quiet: FALSE without an error where oneDNN
 * has no kernel for them. */
static gboolean
forward_pd (TachBackend *be, TachConvPlan *plan, ConvMds *m, const dnnl_memory_desc_t *x,
            const dnnl_memory_desc_t *w, const dnnl_memory_desc_t *dst, gboolean quiet,
            dnnl_primitive_desc_t *pd)
{
  dnnl_convolution_desc_t conv;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t ops = NULL;
  gboolean ok = FALSE;

  *pd = NULL;
  TACH_DNNL_TRY (be, dnnl_convolution_forward_desc_init (&conv, dnnl_forward_training,
                                                         dnnl_convolution_direct,
                                                         /* src = */ x, /* weights = */ w,
                                                         /* bias = */ &m->b, /* dst = */ dst,
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
  if (quiet)
    ok = dnnl_primitive_desc_create (pd, &conv, attr, TACH_CPU (be)->engine, NULL)
         == dnnl_success;
  else
    {
      TACH_DNNL_TRY (be, dnnl_primitive_desc_create (pd, &conv, attr, TACH_CPU (be)->engine,
                                                     NULL), out);
      ok = TRUE;
    }
out:
  if (ops != NULL)
    dnnl_post_ops_destroy (ops);
  if (attr != NULL)
    dnnl_primitive_attr_destroy (attr);
  return ok;
}

/* The forward primitive's descriptor and its operands; *@fwd_pd's output
 * is the layout oneDNN chose for the activations. */
static gboolean
plan_forward (TachBackend *be, TachConvPlan *plan, ConvMds *m, const dnnl_memory_desc_t *act,
              dnnl_primitive_desc_t *fwd_pd)
{
  dnnl_memory_desc_t x_any, w_any;
  dnnl_primitive_desc_t pd = NULL;

  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&x_any, 4, m->x.dims, m->dt,
                                                   dnnl_format_tag_any), fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&w_any, 4, m->w.dims, m->dt,
                                                   dnnl_format_tag_any), fail);
  if (!forward_pd (be, plan, m, &x_any, &w_any, act, FALSE, &pd)
      || !tach_cpu_arg_init (be, &plan->x_fwd, &m->x, query_md (pd, dnnl_query_src_md), FALSE)
      || !tach_cpu_arg_init (be, &plan->w_fwd, &m->w, query_md (pd, dnnl_query_weights_md),
                             FALSE))
    goto fail;
  *fwd_pd = pd;
  return TRUE;
fail:
  if (pd != NULL)
    dnnl_primitive_desc_destroy (pd);
  return FALSE;
}

/* Images per forward chunk: as many as keep half of each core's L2 for
 * the chunk's activations, a divisor of the batch (the chunks all alike);
 * 0 (one pass) when that leaves under 4 images a chunk or the whole batch
 * fits.  From the sizes alone, so the numbers do not depend on the run. */
static int
chunk_images (TachBackend *be, const TachConvPlan *plan)
{
  const TachConvDesc *d = &plan->desc;
  long l2 = sysconf (_SC_LEVEL2_CACHE_SIZE);
  size_t image = (size_t) d->K * plan->oh * plan->ow * sizeof (float);
  size_t budget = (size_t) (l2 > 0 ? l2 : 1 << 20) / 2 * MAX (be->threads, 1);
  int target = (int) MIN ((size_t) d->N, budget / MAX (image, 1));

  for (int c = target; c >= 4; c--)
    if (d->N % c == 0)
      return c < d->N ? c : 0;
  return 0;
}

/* The chunked forward (TachConvPlan.chunk): its primitive over views of
 * the first chunk of x_fwd's and the activations' layouts, moved along the
 * batch per chunk.  Leaves chunk 0 where oneDNN takes no such primitive. */
static gboolean
plan_chunk (TachBackend *be, TachConvPlan *plan, ConvMds *m)
{
  const dnnl_memory_desc_t *x_md, *w_md, *act_md;
  dnnl_memory_desc_t xc, ac;
  dnnl_dims_t zero = { 0, 0, 0, 0 };
  dnnl_dims_t x_dims = { 0, plan->desc.C, plan->desc.H, plan->desc.W };
  dnnl_dims_t a_dims = { 0, plan->desc.K, plan->oh, plan->ow };
  dnnl_primitive_desc_t pd = NULL;
  int chunk = chunk_images (be, plan);

  if (chunk == 0)
    return TRUE;
  x_dims[0] = a_dims[0] = chunk;
  TACH_DNNL_TRY (be, dnnl_memory_get_memory_desc (plan->x_fwd.inner != NULL ? plan->x_fwd.inner
                                                                            : plan->x_fwd.user,
                                                  &x_md), fail);
  TACH_DNNL_TRY (be, dnnl_memory_get_memory_desc (plan->w_fwd.inner != NULL ? plan->w_fwd.inner
                                                                            : plan->w_fwd.user,
                                                  &w_md), fail);
  TACH_DNNL_TRY (be, dnnl_memory_get_memory_desc (plan->act, &act_md), fail);
  /* Views along the batch need it outermost and unblocked in both. */
  for (int i = 0; i < x_md->format_desc.blocking.inner_nblks; i++)
    if (x_md->format_desc.blocking.inner_idxs[i] == 0)
      return TRUE;
  for (int i = 0; i < act_md->format_desc.blocking.inner_nblks; i++)
    if (act_md->format_desc.blocking.inner_idxs[i] == 0)
      return TRUE;
  if (x_md->format_kind != dnnl_blocked || act_md->format_kind != dnnl_blocked
      || (size_t) x_md->format_desc.blocking.strides[0] * plan->desc.N
         * (x_md->data_type == dnnl_bf16 ? 2 : 4) != dnnl_memory_desc_get_size (x_md))
    return TRUE;
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_submemory (&xc, x_md, x_dims, zero), fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_submemory (&ac, act_md, a_dims, zero), fail);
  if (!forward_pd (be, plan, m, &xc, w_md, &ac, TRUE, &pd))
    {
      /* No kernel for the views: the forward runs in one pass. */
      if (pd != NULL)
        dnnl_primitive_desc_destroy (pd);
      return tach_backend_ok (be);
    }
  plan->x_image_bytes = dnnl_memory_desc_get_size (x_md) / plan->desc.N;
  plan->x_chunk = tach_cpu_memory_new (be, &xc);
  plan->act_chunk = tach_cpu_memory_new (be, &ac);
  plan->act_scratch = tach_cpu_mem_alloc (be, dnnl_memory_desc_get_size (&ac));
  if (!make_primitive (be, g_steal_pointer (&pd), &plan->fwd_chunk) || !tach_backend_ok (be))
    return FALSE;
  plan->chunk = chunk;
  return TRUE;
fail:
  return FALSE;
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

/* A block's activations: their layout for the block's pool, when it is one
 * the pool reads (a plain or channel-blocked layout without padding), and
 * the memory objects over the caller's act and dact.  FALSE with no error
 * set when the pool cannot read the layout. */
static gboolean
plan_block (TachBackend *be, TachConvPlan *plan, const dnnl_memory_desc_t *act)
{
  const dnnl_blocking_desc_t *blk = &act->format_desc.blocking;
  TachCpuActLayout *l = &plan->act_layout;

  if (act->format_kind != dnnl_blocked || act->offset0 != 0 || act->padded_dims[1] != act->dims[1]
      || blk->inner_nblks > 1 || (blk->inner_nblks == 1 && blk->inner_idxs[0] != 1))
    return FALSE;
  l->k = plan->desc.K;
  /* Channels last (NHWC) is one block of all K channels. */
  l->cb = blk->inner_nblks == 1 ? (int) blk->inner_blks[0] : blk->strides[1] == 1 ? l->k : 1;
  l->sn = (size_t) blk->strides[0];
  l->sc = (size_t) blk->strides[1];
  l->sh = (size_t) blk->strides[2];
  l->sw = (size_t) blk->strides[3];
  l->bf16 = act->data_type == dnnl_bf16;
  l->y_blocked = native_applies (&plan->desc, FALSE) && l->cb > 1;
  if (l->cb <= 0 || l->k % l->cb != 0 || (act->data_type != dnnl_f32 && !l->bf16))
    return FALSE;
  if (native_applies (&plan->desc, FALSE) && l->cb != native_cb (l->k))
    {
      tach_backend_fail (be, TACH_ERROR_LIBRARY,
                         _("the convolution block's activations came out blocked by %d "
                           "channels, not the %d its next block reads"),
                         l->cb, native_cb (l->k));
      return FALSE;
    }
  plan->act = tach_cpu_memory_new (be, act);
  plan->dact = tach_cpu_memory_new (be, act);
  return plan->act != NULL && plan->dact != NULL;
}

/* Plans every primitive; a block's activations in @act_md (may be "any").
 * *@replan: a block's activations want a layout the caller's buffers or
 * the block's pool do not take (no error set). */
static gboolean
plan_all (TachBackend *be, TachConvPlan *plan, ConvMds *m, const dnnl_memory_desc_t *act_md,
          gboolean *replan)
{
  dnnl_primitive_desc_t fwd_pd = NULL;
  dnnl_memory_desc_t act, ddst;
  size_t act_bytes = (size_t) plan->desc.N * plan->desc.K * plan->oh * plan->ow * sizeof (float);
  gboolean ok = FALSE;

  *replan = FALSE;
  if (!plan_forward (be, plan, m, act_md, &fwd_pd))
    return FALSE;
  act = *query_md (fwd_pd, dnnl_query_dst_md);
  if (plan->desc.block)
    {
      /* The caller's act and dact hold N*K*OH*OW floats: a layout that
       * pads K to its block must not need more. */
      if (dnnl_memory_desc_get_size (&act) > act_bytes || !plan_block (be, plan, &act))
        {
          *replan = tach_backend_ok (be);
          goto out;
        }
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
  gboolean replan = FALSE;
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

  /* oneDNN's primitives are made for every thread of the backend, so
   * that their results never depend on the machine's load. */
  tach_cpu_bind_all_threads (be);
  plan = g_new0 (TachConvPlan, 1);
  plan->desc = *desc;
  plan->oh = oh;
  plan->ow = ow;
  if (!conv_mds_init (be, plan, &m)
      || (!plan_all (be, plan, &m, &m.act_any, &replan) && !replan))
    goto fail;
  if (replan)
    {
      dnnl_memory_desc_t plain;

      /* K is no multiple of the channel block, or the layout is none the
       * block's pool reads: keep the activations plain. */
      TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&plain, 4, m.y.dims, m.dt, dnnl_nchw),
                     fail);
      tach_cpu_conv_plan_free (be, plan);
      plan = g_new0 (TachConvPlan, 1);
      plan->desc = *desc;
      plan->oh = oh;
      plan->ow = ow;
      if (!plan_all (be, plan, &m, &plain, &replan))
        goto fail;
    }

  plan->bias = tach_cpu_memory_new (be, &m.b);
  plan->dbias = tach_cpu_memory_new (be, &m.b);
  plan->zero_bias = tach_cpu_mem_alloc (be, (size_t) d->K * sizeof (float));
  plan->db_scratch = tach_cpu_mem_alloc (be, (size_t) d->K * sizeof (float));
  if (!tach_backend_ok (be))
    goto fail;
  memset (plan->zero_bias, 0, (size_t) d->K * sizeof (float));
  if (d->block && !plan_chunk (be, plan, &m))
    goto fail;
  if (d->block && own_paths () && tach_cpu_wino_applies (d, &plan->act_layout))
    {
      dnnl_memory_desc_t blocked;

      /* C is a multiple of the vector width: native_md_init blocks by it. */
      TACH_DNNL_TRY (be, native_md_init (&blocked, m.x.dims, dnnl_f32), fail);
      plan->wino = tach_cpu_wino_new (be, d);
      if (plan->wino == NULL
          || !tach_cpu_arg_init (be, &plan->wino_x, &m.x, &blocked, FALSE)
          || (d->need_dx && !tach_cpu_arg_init (be, &plan->wino_dx, &m.x, &blocked, TRUE)))
        goto fail;
    }
  if (d->block && own_paths () && tach_cpu_dw1_applies (d, &plan->act_layout)
      && (plan->dw1 = tach_cpu_dw1_new (be, d)) == NULL)
    goto fail;
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
