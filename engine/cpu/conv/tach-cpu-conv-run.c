/* tach-cpu-conv-run.c: running a CPU convolution plan (tach-cpu-conv.c
 * plans it and says how it works): the bare convolution forward and
 * backward on oneDNN's primitives, and the block's forward (whole or by
 * chunks of images, pooled as it goes) and backward (un-pooled, then the
 * convolution's gradients), on the block's own paths where the plan has
 * them.
 *
 * Threads: the engine thread.
 */
#include <glib/gi18n-lib.h>

#include "tach-cpu-conv-private.h"
#include "tach-error-private.h"

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

/* The backward data convolution from the output gradient in @ddst_d. */
static gboolean
conv_backward_data (TachBackend *be, TachConvPlan *plan, const float *w, dnnl_memory_t ddst_d,
                    float *dx)
{
  dnnl_exec_arg_t args[3];
  dnnl_memory_t wei = tach_cpu_arg_bind (be, &plan->w_bwd, w);
  dnnl_memory_t dsrc = wei != NULL ? tach_cpu_arg_bind (be, &plan->dx, dx) : NULL;

  if (dsrc == NULL || ddst_d == NULL)
    return FALSE;
  args[0] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_SRC, dsrc };
  args[1] = (dnnl_exec_arg_t) { DNNL_ARG_WEIGHTS, wei };
  args[2] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_DST, ddst_d };
  return tach_cpu_execute (be, plan->bwd_data, 3, args) && tach_cpu_arg_finish (be, &plan->dx);
}

/* Both backward convolutions from the output gradient in @ddst_w (for the
 * weights) and @ddst_d (for the data). */
static gboolean
conv_backward (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
               dnnl_memory_t ddst_w, dnnl_memory_t ddst_d, float *dx, float *dw, float *db)
{
  dnnl_exec_arg_t args[4];
  dnnl_memory_t src, dwei;

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
  return dx == NULL || conv_backward_data (be, plan, w, ddst_d, dx);
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

/* The block's forward by chunks of images: each chunk's convolution into
 * the plan's scratch, pooled from there while it is in L2 (the caller's
 * act is left unwritten: backward needs only the pool's codes). */
static void
block_fwd_chunked (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                   const float *b, int32_t *idx, float *y)
{
  size_t pooled = (size_t) plan->desc.K * (plan->oh / 2) * (plan->ow / 2);
  dnnl_exec_arg_t args[4];
  dnnl_memory_t src, wei;
  char *base = NULL;

  src = tach_cpu_arg_bind (be, &plan->x_fwd, x);
  wei = src != NULL ? tach_cpu_arg_bind (be, &plan->w_fwd, w) : NULL;
  if (wei == NULL)
    return;
  TACH_DNNL_TRY (be, dnnl_memory_get_data_handle (src, (void **) &base), out);
  SET_HANDLE (be, plan->bias, b != NULL ? b : plan->zero_bias, out);
  SET_HANDLE (be, plan->act_chunk, plan->act_scratch, out);
  args[0] = (dnnl_exec_arg_t) { DNNL_ARG_SRC, plan->x_chunk };
  args[1] = (dnnl_exec_arg_t) { DNNL_ARG_WEIGHTS, wei };
  args[2] = (dnnl_exec_arg_t) { DNNL_ARG_BIAS, plan->bias };
  args[3] = (dnnl_exec_arg_t) { DNNL_ARG_DST, plan->act_chunk };
  for (int n0 = 0; n0 < plan->desc.N; n0 += plan->chunk)
    {
      SET_HANDLE (be, plan->x_chunk, base + (size_t) n0 * plan->x_image_bytes, out);
      if (!tach_cpu_execute (be, plan->fwd_chunk, 4, args))
        return;
      tach_cpu_block_pool_fwd (be, &plan->act_layout, plan->act_scratch,
                               y + (size_t) n0 * pooled, (guint8 *) idx + (size_t) n0 * pooled,
                               plan->chunk, plan->oh, plan->ow);
    }
out:
  return;
}

/* The block's forward by Winograd (TachConvPlan.wino): by the chunked
 * forward's chunks into its scratch where it has them, else in one pass
 * into @act; each pooled as it comes. */
static float *
bind_ptr (TachBackend *be, TachCpuArg *arg, const float *ptr)
{
  dnnl_memory_t mem = tach_cpu_arg_bind (be, arg, ptr);
  void *handle = NULL;

  if (mem == NULL)
    return NULL;
  TACH_DNNL_TRY (be, dnnl_memory_get_data_handle (mem, &handle), fail);
  return handle;
fail:
  return NULL;
}

static void
block_fwd_wino (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                const float *b, float *act, int32_t *idx, float *y)
{
  const TachConvDesc *d = &plan->desc;
  size_t pooled = (size_t) d->K * (plan->oh / 2) * (plan->ow / 2);
  int step = plan->chunk > 0 ? plan->chunk : d->N;
  float *dst = plan->chunk > 0 ? plan->act_scratch : act;
  const float *xb = bind_ptr (be, &plan->wino_x, x);

  if (xb == NULL)
    return;
  plan->x_fwd_last = x;
  tach_cpu_wino_filters (be, plan->wino, w);
  for (int n0 = 0; n0 < d->N; n0 += step)
    {
      int count = MIN (step, d->N - n0);

      tach_cpu_wino_forward (be, plan->wino, xb, b != NULL ? b : plan->zero_bias, n0, count, dst);
      tach_cpu_block_pool_fwd (be, &plan->act_layout, dst, y + (size_t) n0 * pooled,
                               (guint8 *) idx + (size_t) n0 * pooled, count, plan->oh, plan->ow);
    }
}

void
tach_cpu_conv_block_fwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                         const float *b, float *act, int32_t *idx, float *y)
{
  if (!check_block (be, plan, TRUE))
    return;
  plan->x_fwd_last = NULL;
  if (plan->wino != NULL)
    {
      block_fwd_wino (be, plan, x, w, b, act, idx, y);
      return;
    }
  if (plan->chunk > 0)
    {
      block_fwd_chunked (be, plan, x, w, b, idx, y);
      if (tach_backend_ok (be))
        plan->x_fwd_last = x;
      return;
    }
  SET_HANDLE (be, plan->act, act, out);
  if (!conv_forward (be, plan, x, w, b, plan->act))
    return;
  plan->x_fwd_last = x;
  tach_cpu_block_pool_fwd (be, &plan->act_layout, act, y, (guint8 *) idx, plan->desc.N,
                           plan->oh, plan->ow);
out:
  return;
}

void
tach_cpu_conv_block_bwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                         const float *act, const int32_t *idx, const float *dy, float *dact,
                         float *dx, float *dw, float *db)
{
  (void) act;  /* the pool's codes in idx carry the ReLU's derivative */
  if (!check_block (be, plan, TRUE) || !check_dx (be, plan, dx))
    return;
  SET_HANDLE (be, plan->dact, dact, out);
  tach_cpu_block_pool_bwd (be, &plan->act_layout, dy, (const guint8 *) idx, dact, plan->desc.N,
                           plan->oh, plan->ow);
  if (plan->wino != NULL)
    {
      /* x as the forward blocked it, when it was this x; the filters
       * again: the caller may have changed them since. */
      const float *xb = plan->wino_x.reorder != NULL && x == plan->x_fwd_last
                        ? plan->wino_x.buf : bind_ptr (be, &plan->wino_x, x);
      float *dxb = dx != NULL ? bind_ptr (be, &plan->wino_dx, dx) : NULL;

      if (xb == NULL || (dx != NULL && dxb == NULL))
        return;
      tach_cpu_wino_filters (be, plan->wino, w);
      tach_cpu_wino_backward (be, plan->wino, xb, dact, plan->desc.N, dxb, dw,
                              db != NULL ? db : plan->db_scratch);
      if (dx != NULL)
        tach_cpu_arg_finish (be, &plan->wino_dx);
      return;
    }
  if (plan->dw1 != NULL)
    {
      tach_cpu_dw1_backward (be, plan->dw1, &plan->act_layout, x, dact, plan->desc.N, dw,
                             db != NULL ? db : plan->db_scratch);
      if (dx != NULL)
        conv_backward_data (be, plan, w, plan->dact, dx);
      return;
    }
  conv_backward (be, plan, x, w, plan->dact, plan->dact, dx, dw, db);
out:
  return;
}
