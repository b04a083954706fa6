/* tach-cpu-conv.c: 2-D convolution on oneDNN (forward, backward data,
 * backward weights), and the 2x2 max pool and global average pool as plain
 * loops.
 *
 * Tensors keep Tach's plain layouts (NCHW data, KCRS = oihw filters), so
 * every primitive is planned over those tags and needs no reorder.
 * Threads: the engine thread.
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-cpu-private.h"

/* The pool's comparisons become selects (no mispredicted branches on
 * random signs) only when GCC may assume floating-point ops do not trap;
 * Tach never enables FP traps, so this changes no result. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("no-trapping-math")
#endif

struct _TachConvPlan {
  TachConvDesc desc;
  size_t       w_count;          /* K * C * R * S */

  dnnl_primitive_desc_t fwd_pd, bwd_data_pd, bwd_weights_pd;  /* owned */
  dnnl_primitive_t      fwd, bwd_data, bwd_weights;           /* owned; bwd_data NULL
                                                                 unless need_dx */
  /* Memory objects over no data (owned); the plain layouts are shared by
   * all three primitives, so one object per tensor serves them all. */
  dnnl_memory_t src, weights, bias, dst;

  float *zero_bias;              /* owned: K zeros, for a NULL bias */
  float *db_scratch;             /* owned: K floats, for a NULL db */
};

void
tach_cpu_conv_plan_free (TachBackend *be, TachConvPlan *plan)
{
  dnnl_memory_t mems[4];
  dnnl_primitive_t prims[3];
  dnnl_primitive_desc_t pds[3];

  if (plan == NULL)
    return;
  mems[0] = plan->src;
  mems[1] = plan->weights;
  mems[2] = plan->bias;
  mems[3] = plan->dst;
  prims[0] = plan->fwd;
  prims[1] = plan->bwd_data;
  prims[2] = plan->bwd_weights;
  pds[0] = plan->fwd_pd;
  pds[1] = plan->bwd_data_pd;
  pds[2] = plan->bwd_weights_pd;
  for (guint i = 0; i < G_N_ELEMENTS (mems); i++)
    if (mems[i] != NULL)
      dnnl_memory_destroy (mems[i]);
  for (guint i = 0; i < G_N_ELEMENTS (prims); i++)
    if (prims[i] != NULL)
      dnnl_primitive_destroy (prims[i]);
  for (guint i = 0; i < G_N_ELEMENTS (pds); i++)
    if (pds[i] != NULL)
      dnnl_primitive_desc_destroy (pds[i]);
  tach_cpu_mem_free (be, plan->zero_bias);
  tach_cpu_mem_free (be, plan->db_scratch);
  g_free (plan);
}

TachConvPlan *
tach_cpu_conv_plan_new (TachBackend *be, const TachConvDesc *desc)
{
  const TachConvDesc *d = desc;
  TachConvPlan *plan;
  int oh = d->H + 2 * d->pad_h - d->R + 1;
  int ow = d->W + 2 * d->pad_w - d->S + 1;
  dnnl_dims_t src_dims = { d->N, d->C, d->H, d->W };
  dnnl_dims_t w_dims = { d->K, d->C, d->R, d->S };
  dnnl_dims_t b_dims = { d->K };
  dnnl_dims_t dst_dims = { d->N, d->K, oh, ow };
  dnnl_dims_t strides = { 1, 1 };
  dnnl_dims_t padding = { d->pad_h, d->pad_w };
  dnnl_memory_desc_t src_md, w_md, b_md, dst_md;
  dnnl_convolution_desc_t conv;
  dnnl_engine_t engine = TACH_CPU (be)->engine;

  if (d->N <= 0 || d->C <= 0 || d->H <= 0 || d->W <= 0 || d->K <= 0 || d->R <= 0
      || d->S <= 0 || d->pad_h < 0 || d->pad_w < 0 || oh <= 0 || ow <= 0)
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("a convolution needs positive sizes and an output of at least 1x1: "
                           "input %dx%dx%dx%d, %d filters %dx%d, padding %dx%d"),
                         d->N, d->C, d->H, d->W, d->K, d->R, d->S, d->pad_h, d->pad_w);
      return NULL;
    }
  if (d->precision != TACH_PRECISION_FP32)
    {
      tach_backend_fail (be, TACH_ERROR_UNSUPPORTED,
                         _("the CPU backend's convolution runs in fp32 only: use --precision fp32"));
      return NULL;
    }

  tach_cpu_bind_threads (be);
  plan = g_new0 (TachConvPlan, 1);
  plan->desc = *desc;
  plan->w_count = (size_t) d->K * d->C * d->R * d->S;

  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&src_md, 4, src_dims, dnnl_f32, dnnl_nchw), fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&w_md, 4, w_dims, dnnl_f32, dnnl_oihw), fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&b_md, 1, b_dims, dnnl_f32, dnnl_a), fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&dst_md, 4, dst_dims, dnnl_f32, dnnl_nchw), fail);

  TACH_DNNL_TRY (be, dnnl_convolution_forward_desc_init (&conv, dnnl_forward_training,
                                                         dnnl_convolution_direct,
                                                         /* src = */ &src_md,
                                                         /* weights = */ &w_md,
                                                         /* bias = */ &b_md,
                                                         /* dst = */ &dst_md,
                                                         strides,
                                                         /* padding_l = */ padding,
                                                         /* padding_r = */ padding), fail);
  TACH_DNNL_TRY (be, dnnl_primitive_desc_create (&plan->fwd_pd, &conv, NULL, engine, NULL), fail);
  TACH_DNNL_TRY (be, dnnl_primitive_create (&plan->fwd, plan->fwd_pd), fail);

  if (d->need_dx)
    {
      TACH_DNNL_TRY (be, dnnl_convolution_backward_data_desc_init (&conv, dnnl_convolution_direct,
                                                                   /* diff_src = */ &src_md,
                                                                   /* weights = */ &w_md,
                                                                   /* diff_dst = */ &dst_md,
                                                                   strides,
                                                                   /* padding_l = */ padding,
                                                                   /* padding_r = */ padding),
                     fail);
      TACH_DNNL_TRY (be, dnnl_primitive_desc_create (&plan->bwd_data_pd, &conv, NULL, engine,
                                                     plan->fwd_pd), fail);
      TACH_DNNL_TRY (be, dnnl_primitive_create (&plan->bwd_data, plan->bwd_data_pd), fail);
    }

  TACH_DNNL_TRY (be, dnnl_convolution_backward_weights_desc_init (&conv, dnnl_convolution_direct,
                                                                  /* src = */ &src_md,
                                                                  /* diff_weights = */ &w_md,
                                                                  /* diff_bias = */ &b_md,
                                                                  /* diff_dst = */ &dst_md,
                                                                  strides,
                                                                  /* padding_l = */ padding,
                                                                  /* padding_r = */ padding),
                 fail);
  TACH_DNNL_TRY (be, dnnl_primitive_desc_create (&plan->bwd_weights_pd, &conv, NULL, engine,
                                                 plan->fwd_pd), fail);
  TACH_DNNL_TRY (be, dnnl_primitive_create (&plan->bwd_weights, plan->bwd_weights_pd), fail);

  plan->src = tach_cpu_memory_new (be, &src_md);
  plan->weights = tach_cpu_memory_new (be, &w_md);
  plan->bias = tach_cpu_memory_new (be, &b_md);
  plan->dst = tach_cpu_memory_new (be, &dst_md);
  plan->zero_bias = tach_cpu_mem_alloc (be, (size_t) d->K * sizeof (float));
  plan->db_scratch = tach_cpu_mem_alloc (be, (size_t) d->K * sizeof (float));
  if (!tach_backend_ok (be))
    goto fail;
  memset (plan->zero_bias, 0, (size_t) d->K * sizeof (float));
  return plan;

fail:
  tach_cpu_conv_plan_free (be, plan);
  return NULL;
}

#define SET_HANDLE(be, mem, ptr, label) \
  TACH_DNNL_TRY ((be), dnnl_memory_set_data_handle ((mem), (void *) (ptr)), label)

void
tach_cpu_conv_fwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                   const float *b, float *y)
{
  dnnl_exec_arg_t args[4];

  SET_HANDLE (be, plan->src, x, out);
  SET_HANDLE (be, plan->weights, w, out);
  SET_HANDLE (be, plan->bias, b != NULL ? b : plan->zero_bias, out);
  SET_HANDLE (be, plan->dst, y, out);
  args[0] = (dnnl_exec_arg_t) { DNNL_ARG_SRC, plan->src };
  args[1] = (dnnl_exec_arg_t) { DNNL_ARG_WEIGHTS, plan->weights };
  args[2] = (dnnl_exec_arg_t) { DNNL_ARG_BIAS, plan->bias };
  args[3] = (dnnl_exec_arg_t) { DNNL_ARG_DST, plan->dst };
  tach_cpu_execute (be, plan->fwd, 4, args);
out:
  return;
}

void
tach_cpu_conv_bwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                   const float *dy, float *dx, float *dw, float *db)
{
  dnnl_exec_arg_t args[4];
  float *dbias = db != NULL ? db : plan->db_scratch;

  if (dx != NULL && plan->bwd_data == NULL)
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("a convolution planned without need_dx was asked for dx: "
                           "set need_dx in the TachConvDesc"));
      return;
    }

  /* The weight gradient is overwritten, not accumulated: start from zero
   * whatever the chosen implementation does. */
  memset (dw, 0, plan->w_count * sizeof (float));
  memset (dbias, 0, (size_t) plan->desc.K * sizeof (float));

  SET_HANDLE (be, plan->src, x, out);
  SET_HANDLE (be, plan->weights, dw, out);
  SET_HANDLE (be, plan->bias, dbias, out);
  SET_HANDLE (be, plan->dst, dy, out);
  args[0] = (dnnl_exec_arg_t) { DNNL_ARG_SRC, plan->src };
  args[1] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_WEIGHTS, plan->weights };
  args[2] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_BIAS, plan->bias };
  args[3] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_DST, plan->dst };
  if (!tach_cpu_execute (be, plan->bwd_weights, 4, args))
    return;

  if (dx != NULL)
    {
      SET_HANDLE (be, plan->src, dx, out);
      SET_HANDLE (be, plan->weights, w, out);
      args[0] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_SRC, plan->src };
      args[1] = (dnnl_exec_arg_t) { DNNL_ARG_WEIGHTS, plan->weights };
      args[2] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_DST, plan->dst };
      tach_cpu_execute (be, plan->bwd_data, 3, args);
    }
out:
  return;
}

/* --------------------------------------------------------------- pooling */

void
tach_cpu_maxpool_fwd (TachBackend *be, const float *x, float *y, int32_t *idx,
                      int n, int c, int h, int w)
{
  int oh = h / 2, ow = w / 2;
  int planes = n * c;

  tach_cpu_bind_threads (be);
  /* idx holds the winner's offset within its own (n, c) plane, which stays
   * within int32 even for very large batches of large images. */
#pragma omp parallel for if ((size_t) planes * (size_t) h * (size_t) w >= TACH_CPU_PARALLEL_MIN)
  for (int p = 0; p < planes; p++)
    {
      const float *xp = x + (size_t) p * (size_t) h * (size_t) w;
      float *yp = y + (size_t) p * (size_t) oh * (size_t) ow;
      int32_t *ip = idx + (size_t) p * (size_t) oh * (size_t) ow;

      for (int i = 0; i < oh; i++)
        for (int j = 0; j < ow; j++)
          {
            int o = 2 * i * w + 2 * j;
            float v = xp[o], v1 = xp[o + 1], v2 = xp[o + w], v3 = xp[o + w + 1];
            int best = o;

            /* Ties keep the first in row-major order; selects, not
             * branches. */
            best = v1 > v ? o + 1 : best;
            v = v1 > v ? v1 : v;
            best = v2 > v ? o + w : best;
            v = v2 > v ? v2 : v;
            best = v3 > v ? o + w + 1 : best;
            v = v3 > v ? v3 : v;
            yp[i * ow + j] = v;
            ip[i * ow + j] = best;
          }
    }
}

void
tach_cpu_maxpool_bwd (TachBackend *be, const float *dy, const int32_t *idx, float *dx,
                      int n, int c, int h, int w)
{
  int oh = h / 2, ow = w / 2;
  int planes = n * c;

  tach_cpu_bind_threads (be);
  /* Windows do not overlap, so each input gets at most one gradient; the
   * rows and columns an odd size leaves out get zero. */
#pragma omp parallel for if ((size_t) planes * (size_t) h * (size_t) w >= TACH_CPU_PARALLEL_MIN)
  for (int p = 0; p < planes; p++)
    {
      float *dxp = dx + (size_t) p * (size_t) h * (size_t) w;
      const float *dyp = dy + (size_t) p * (size_t) oh * (size_t) ow;
      const int32_t *ip = idx + (size_t) p * (size_t) oh * (size_t) ow;

      memset (dxp, 0, sizeof (float) * (size_t) h * (size_t) w);
      for (int o = 0; o < oh * ow; o++)
        dxp[ip[o]] = dyp[o];
    }
}

void
tach_cpu_avgpool_fwd (TachBackend *be, const float *x, float *y, int n, int c, int hw)
{
  int planes = n * c;

  tach_cpu_bind_threads (be);
#pragma omp parallel for if ((size_t) planes * (size_t) hw >= TACH_CPU_PARALLEL_MIN)
  for (int p = 0; p < planes; p++)
    {
      const float *xp = x + (size_t) p * (size_t) hw;
      double sum = 0.0;

      for (int i = 0; i < hw; i++)
        sum += xp[i];
      y[p] = hw > 0 ? (float) (sum / hw) : 0.0f;
    }
}

void
tach_cpu_avgpool_bwd (TachBackend *be, const float *dy, float *dx, int n, int c, int hw)
{
  int planes = n * c;

  tach_cpu_bind_threads (be);
#pragma omp parallel for if ((size_t) planes * (size_t) hw >= TACH_CPU_PARALLEL_MIN)
  for (int p = 0; p < planes; p++)
    {
      float g = hw > 0 ? dy[p] / (float) hw : 0.0f;
      float *dxp = dx + (size_t) p * (size_t) hw;

      for (int i = 0; i < hw; i++)
        dxp[i] = g;
    }
}
