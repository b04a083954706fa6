/* tach-cpu-lstm.c: the fused LSTM on oneDNN's vanilla LSTM primitive, and
 * the per-timestep cell of the unrolled mode as plain pointwise loops.
 *
 * oneDNN's LSTM gate order is i, f, c~ (g), o, the same as Tach's canonical
 * layout, so converting weights is only a matter of memory layout:
 *   forward:  W_x [4H, I] -> ldigo, i.e. W_x^T [I, 4H] per direction
 *   backward: weights in ldgoi, which per direction *is* W_x [4H, I]
 *             (oneDNN 2.6 has no ldigo weights for backward), diff weights
 *             in ldigo (no ldgoi diff weights), transposed back
 *   bias:     ldgo == b [4H] per direction
 * The data needs no copy: batch-major [N, T, C] is oneDNN's ntc tag and
 * time-major [T, N, C] its tnc tag over the same (T, N, C) logical dims.
 * One exception: oneDNN 2.6.3's backward computes a wrong W_h gradient for
 * a unidirectional LSTM over tnc data (checked against finite differences
 * and an unrolled LSTM), so that one case runs the primitives over ntc
 * copies of the data, transposed at the boundary.
 *
 * Threads: the engine thread.
 */
#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-cpu-private.h"

struct _TachLstmPlan {
  TachLstmDesc desc;
  size_t dir_stride;               /* floats per direction in the canonical block */

  dnnl_primitive_desc_t fwd_pd;    /* owned */
  dnnl_primitive_t      fwd;       /* owned */
  dnnl_primitive_desc_t bwd_pd;    /* owned; NULL unless training */
  dnnl_primitive_t      bwd;       /* owned; NULL unless training */
  size_t                ws_bytes;

  /* Memory objects over no data: handles are set before each execution.
   * All owned. */
  dnnl_memory_t src, dst, wl, wi, bias, ws;
  dnnl_memory_t b_wl, b_wi, diff_src, diff_dst, diff_wl, diff_wi, diff_bias;

  /* Converted weights and gradients (tach_cpu_mem_alloc, owned). */
  float *wl_fwd, *wi_fwd, *bias_buf;   /* ldigo, ldigo, ldgo */
  float *wl_bwd, *wi_bwd;              /* ldgoi */
  float *dwl, *dwi, *dbias;            /* ldigo, ldigo, ldgo */
  float *dx_scratch;                   /* diff_src when !need_dx */

  /* The tnc workaround (see the top of the file): ntc copies, owned. */
  gboolean swap;
  float *x_ntc, *y_ntc, *dy_ntc;
};

/* ------------------------------------------------------------- planning */

static void
md_init (dnnl_memory_desc_t *md, int ndims, const dnnl_dims_t dims, dnnl_format_tag_t tag)
{
  /* Only fails on invalid arguments, which the dims checked by the caller
   * rule out; a failure leaves a zero desc that the primitive rejects. */
  if (dnnl_memory_desc_init_by_tag (md, ndims, dims, dnnl_f32, tag) != dnnl_success)
    memset (md, 0, sizeof *md);
}

/* A memory object for argument @arg of @pd, as the primitive expects it. */
static dnnl_memory_t
arg_memory (TachBackend *be, const_dnnl_primitive_desc_t pd, int arg)
{
  const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md (pd, dnnl_query_exec_arg_md, arg);

  if (md == NULL)
    {
      tach_backend_fail (be, TACH_ERROR_LIBRARY,
                         _("oneDNN did not describe an LSTM argument: argument %d"), arg);
      return NULL;
    }
  return tach_cpu_memory_new (be, md);
}

void
tach_cpu_lstm_plan_free (TachBackend *be, TachLstmPlan *plan)
{
  dnnl_memory_t *mems[] = {
    &plan->src, &plan->dst, &plan->wl, &plan->wi, &plan->bias, &plan->ws,
    &plan->b_wl, &plan->b_wi, &plan->diff_src, &plan->diff_dst, &plan->diff_wl,
    &plan->diff_wi, &plan->diff_bias,
  };
  float **bufs[] = {
    &plan->wl_fwd, &plan->wi_fwd, &plan->bias_buf, &plan->wl_bwd, &plan->wi_bwd,
    &plan->dwl, &plan->dwi, &plan->dbias, &plan->dx_scratch,
    &plan->x_ntc, &plan->y_ntc, &plan->dy_ntc,
  };

  if (plan == NULL)
    return;
  for (guint i = 0; i < G_N_ELEMENTS (mems); i++)
    if (*mems[i] != NULL)
      dnnl_memory_destroy (*mems[i]);
  for (guint i = 0; i < G_N_ELEMENTS (bufs); i++)
    tach_cpu_mem_free (be, *bufs[i]);
  if (plan->bwd != NULL)
    dnnl_primitive_destroy (plan->bwd);
  if (plan->bwd_pd != NULL)
    dnnl_primitive_desc_destroy (plan->bwd_pd);
  if (plan->fwd != NULL)
    dnnl_primitive_destroy (plan->fwd);
  if (plan->fwd_pd != NULL)
    dnnl_primitive_desc_destroy (plan->fwd_pd);
  g_free (plan);
}

static gboolean
plan_backward (TachBackend *be, TachLstmPlan *plan, dnnl_rnn_direction_t direction,
               const dnnl_memory_desc_t *src_md, const dnnl_memory_desc_t *dst_md,
               const dnnl_memory_desc_t *bias_md)
{
  const TachLstmDesc *d = &plan->desc;
  dnnl_dims_t wl_dims = { 1, d->dirs, d->I, 4, d->H };
  dnnl_dims_t wi_dims = { 1, d->dirs, d->H, 4, d->H };
  dnnl_memory_desc_t wl_md, wi_md, dwl_md, dwi_md;
  dnnl_rnn_desc_t rnn;
  size_t n_wl = (size_t) d->dirs * d->I * 4 * d->H;
  size_t n_wi = (size_t) d->dirs * d->H * 4 * d->H;

  md_init (&wl_md, 5, wl_dims, dnnl_ldgoi);
  md_init (&wi_md, 5, wi_dims, dnnl_ldgoi);
  md_init (&dwl_md, 5, wl_dims, dnnl_ldigo);
  md_init (&dwi_md, 5, wi_dims, dnnl_ldigo);

  TACH_DNNL_TRY (be, dnnl_lstm_backward_desc_init (&rnn, dnnl_backward, direction,
                                                   /* src_layer = */ src_md,
                                                   /* src_iter = */ NULL,
                                                   /* src_iter_c = */ NULL,
                                                   /* weights_layer = */ &wl_md,
                                                   /* weights_iter = */ &wi_md,
                                                   /* bias = */ bias_md,
                                                   /* dst_layer = */ dst_md,
                                                   /* dst_iter = */ NULL,
                                                   /* dst_iter_c = */ NULL,
                                                   /* diff_src_layer = */ src_md,
                                                   /* diff_src_iter = */ NULL,
                                                   /* diff_src_iter_c = */ NULL,
                                                   /* diff_weights_layer = */ &dwl_md,
                                                   /* diff_weights_iter = */ &dwi_md,
                                                   /* diff_bias = */ bias_md,
                                                   /* diff_dst_layer = */ dst_md,
                                                   /* diff_dst_iter = */ NULL,
                                                   /* diff_dst_iter_c = */ NULL,
                                                   /* flags = */ 0), fail);
  TACH_DNNL_TRY (be, dnnl_primitive_desc_create (&plan->bwd_pd, &rnn, NULL,
                                                 TACH_CPU (be)->engine, plan->fwd_pd), fail);
  TACH_DNNL_TRY (be, dnnl_primitive_create (&plan->bwd, plan->bwd_pd), fail);

  plan->b_wl = arg_memory (be, plan->bwd_pd, DNNL_ARG_WEIGHTS_LAYER);
  plan->b_wi = arg_memory (be, plan->bwd_pd, DNNL_ARG_WEIGHTS_ITER);
  plan->diff_src = arg_memory (be, plan->bwd_pd, DNNL_ARG_DIFF_SRC_LAYER);
  plan->diff_dst = arg_memory (be, plan->bwd_pd, DNNL_ARG_DIFF_DST_LAYER);
  plan->diff_wl = arg_memory (be, plan->bwd_pd, DNNL_ARG_DIFF_WEIGHTS_LAYER);
  plan->diff_wi = arg_memory (be, plan->bwd_pd, DNNL_ARG_DIFF_WEIGHTS_ITER);
  plan->diff_bias = arg_memory (be, plan->bwd_pd, DNNL_ARG_DIFF_BIAS);

  plan->wl_bwd = tach_cpu_mem_alloc (be, n_wl * sizeof (float));
  plan->wi_bwd = tach_cpu_mem_alloc (be, n_wi * sizeof (float));
  plan->dwl = tach_cpu_mem_alloc (be, n_wl * sizeof (float));
  plan->dwi = tach_cpu_mem_alloc (be, n_wi * sizeof (float));
  plan->dbias = tach_cpu_mem_alloc (be, (size_t) d->dirs * 4 * d->H * sizeof (float));
  /* The swapped case always computes dx into the scratch, then transposes. */
  if (!d->need_dx || plan->swap)
    plan->dx_scratch = tach_cpu_mem_alloc (be, (size_t) d->T * d->N * d->I * sizeof (float));
  if (plan->swap)
    plan->dy_ntc = tach_cpu_mem_alloc (be, (size_t) d->T * d->N * d->dirs * d->H * sizeof (float));
  return tach_backend_ok (be);
fail:
  return FALSE;
}

TachLstmPlan *
tach_cpu_lstm_plan_new (TachBackend *be, const TachLstmDesc *desc)
{
  TachLstmPlan *plan;
  const TachLstmDesc *d = desc;
  dnnl_rnn_direction_t direction;
  gboolean swap = desc->time_major && desc->dirs == 1;
  dnnl_format_tag_t data_tag = desc->time_major && !swap ? dnnl_tnc : dnnl_ntc;
  dnnl_dims_t src_dims = { d->T, d->N, d->I };
  dnnl_dims_t dst_dims = { d->T, d->N, (dnnl_dim_t) d->dirs * d->H };
  dnnl_dims_t wl_dims = { 1, d->dirs, d->I, 4, d->H };
  dnnl_dims_t wi_dims = { 1, d->dirs, d->H, 4, d->H };
  dnnl_dims_t bias_dims = { 1, d->dirs, 4, d->H };
  dnnl_memory_desc_t src_md, dst_md, wl_md, wi_md, bias_md;
  dnnl_rnn_desc_t rnn;

  if (d->T <= 0 || d->N <= 0 || d->I <= 0 || d->H <= 0 || (d->dirs != 1 && d->dirs != 2))
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("an LSTM needs positive sizes and 1 or 2 directions: "
                           "T=%d N=%d I=%d H=%d dirs=%d"),
                         d->T, d->N, d->I, d->H, d->dirs);
      return NULL;
    }
  if (d->precision != TACH_PRECISION_FP32)
    {
      tach_backend_fail (be, TACH_ERROR_UNSUPPORTED,
                         _("the CPU backend's LSTM runs in fp32 only: use --precision fp32"));
      return NULL;
    }

  tach_cpu_bind_threads (be);
  plan = g_new0 (TachLstmPlan, 1);
  plan->desc = *desc;
  plan->swap = swap;
  plan->dir_stride = (size_t) 4 * d->H * ((size_t) d->I + d->H + 1);
  direction = d->dirs == 2 ? dnnl_bidirectional_concat : dnnl_unidirectional_left2right;

  md_init (&src_md, 3, src_dims, data_tag);
  md_init (&dst_md, 3, dst_dims, data_tag);
  md_init (&wl_md, 5, wl_dims, dnnl_ldigo);
  md_init (&wi_md, 5, wi_dims, dnnl_ldigo);
  md_init (&bias_md, 4, bias_dims, dnnl_ldgo);

  TACH_DNNL_TRY (be, dnnl_lstm_forward_desc_init (&rnn,
                                                  d->training ? dnnl_forward_training
                                                              : dnnl_forward_inference,
                                                  direction,
                                                  /* src_layer = */ &src_md,
                                                  /* src_iter = */ NULL,
                                                  /* src_iter_c = */ NULL,
                                                  /* weights_layer = */ &wl_md,
                                                  /* weights_iter = */ &wi_md,
                                                  /* bias = */ &bias_md,
                                                  /* dst_layer = */ &dst_md,
                                                  /* dst_iter = */ NULL,
                                                  /* dst_iter_c = */ NULL,
                                                  /* flags = */ 0), fail);
  TACH_DNNL_TRY (be, dnnl_primitive_desc_create (&plan->fwd_pd, &rnn, NULL,
                                                 TACH_CPU (be)->engine, NULL), fail);
  TACH_DNNL_TRY (be, dnnl_primitive_create (&plan->fwd, plan->fwd_pd), fail);

  plan->src = arg_memory (be, plan->fwd_pd, DNNL_ARG_SRC_LAYER);
  plan->dst = arg_memory (be, plan->fwd_pd, DNNL_ARG_DST_LAYER);
  plan->wl = arg_memory (be, plan->fwd_pd, DNNL_ARG_WEIGHTS_LAYER);
  plan->wi = arg_memory (be, plan->fwd_pd, DNNL_ARG_WEIGHTS_ITER);
  plan->bias = arg_memory (be, plan->fwd_pd, DNNL_ARG_BIAS);
  plan->wl_fwd = tach_cpu_mem_alloc (be, (size_t) d->dirs * d->I * 4 * d->H * sizeof (float));
  plan->wi_fwd = tach_cpu_mem_alloc (be, (size_t) d->dirs * d->H * 4 * d->H * sizeof (float));
  plan->bias_buf = tach_cpu_mem_alloc (be, (size_t) d->dirs * 4 * d->H * sizeof (float));
  if (swap)
    {
      plan->x_ntc = tach_cpu_mem_alloc (be, (size_t) d->T * d->N * d->I * sizeof (float));
      plan->y_ntc = tach_cpu_mem_alloc (be, (size_t) d->T * d->N * d->dirs * d->H * sizeof (float));
    }

  if (d->training)
    {
      const dnnl_memory_desc_t *ws_md =
        dnnl_primitive_desc_query_md (plan->fwd_pd, dnnl_query_workspace_md, 0);

      plan->ws_bytes = ws_md != NULL ? dnnl_memory_desc_get_size (ws_md) : 0;
      if (plan->ws_bytes > 0)
        plan->ws = tach_cpu_memory_new (be, ws_md);
      if (!plan_backward (be, plan, direction, &src_md, &dst_md, &bias_md))
        goto fail;
    }
  if (!tach_backend_ok (be))
    goto fail;
  return plan;

fail:
  tach_cpu_lstm_plan_free (be, plan);
  return NULL;
}

size_t
tach_cpu_lstm_reserve_bytes (TachBackend *be, TachLstmPlan *plan)
{
  /* The workspace is all backward needs from forward; the converted
   * weights live in the plan. */
  return plan->ws_bytes;
}

/* ------------------------------------------------------- weight layouts */

/* dst[k, j] = src[j, k] for a rows x cols @src (row stride cols). */
static void
transpose (float *dst, const float *src, size_t rows, size_t cols)
{
#pragma omp parallel for if (rows * cols >= TACH_CPU_PARALLEL_MIN)
  for (size_t k = 0; k < cols; k++)
    for (size_t j = 0; j < rows; j++)
      dst[k * rows + j] = src[j * cols + k];
}

/* Canonical per-direction W_x, W_h, b -> ldigo, ldigo, ldgo. */
static void
weights_to_ldigo (const TachLstmPlan *plan, const float *w)
{
  const TachLstmDesc *d = &plan->desc;
  size_t g = (size_t) 4 * d->H;

  for (int dir = 0; dir < d->dirs; dir++)
    {
      const float *wx = w + dir * plan->dir_stride;
      const float *wh = wx + g * d->I;
      const float *b = wh + g * d->H;

      transpose (plan->wl_fwd + dir * (size_t) d->I * g, wx, g, d->I);
      transpose (plan->wi_fwd + dir * (size_t) d->H * g, wh, g, d->H);
      memcpy (plan->bias_buf + dir * g, b, g * sizeof (float));
    }
}

/* Canonical W_x, W_h, b -> ldgoi, ldgoi, ldgo: per direction the very
 * same rows.  The bias is copied too, so that backward does not rely on a
 * forward through this very plan. */
static void
weights_to_ldgoi (const TachLstmPlan *plan, const float *w)
{
  const TachLstmDesc *d = &plan->desc;
  size_t g = (size_t) 4 * d->H;

  for (int dir = 0; dir < d->dirs; dir++)
    {
      const float *wx = w + dir * plan->dir_stride;
      const float *wh = wx + g * d->I;
      const float *b = wh + g * d->H;

      memcpy (plan->wl_bwd + dir * g * d->I, wx, g * d->I * sizeof (float));
      memcpy (plan->wi_bwd + dir * g * d->H, wh, g * d->H * sizeof (float));
      memcpy (plan->bias_buf + dir * g, b, g * sizeof (float));
    }
}

/* ldigo, ldigo, ldgo gradients -> canonical dW_x, dW_h, db (overwritten). */
static void
grads_from_ldigo (const TachLstmPlan *plan, float *dw)
{
  const TachLstmDesc *d = &plan->desc;
  size_t g = (size_t) 4 * d->H;

  for (int dir = 0; dir < d->dirs; dir++)
    {
      float *dwx = dw + dir * plan->dir_stride;
      float *dwh = dwx + g * d->I;
      float *db = dwh + g * d->H;

      transpose (dwx, plan->dwl + dir * (size_t) d->I * g, d->I, g);
      transpose (dwh, plan->dwi + dir * (size_t) d->H * g, d->H, g);
      memcpy (db, plan->dbias + dir * g, g * sizeof (float));
    }
}

/* [A, B, C] -> [B, A, C]: time-major <-> batch-major. */
static void
swap_outer (float *dst, const float *src, size_t a, size_t b, size_t c)
{
#pragma omp parallel for if (a * b * c >= TACH_CPU_PARALLEL_MIN)
  for (size_t j = 0; j < b; j++)
    for (size_t i = 0; i < a; i++)
      memcpy (dst + (j * a + i) * c, src + (i * b + j) * c, c * sizeof (float));
}

/* ------------------------------------------------------------ execution */

#define SET_HANDLE(be, mem, ptr, label) \
  TACH_DNNL_TRY ((be), dnnl_memory_set_data_handle ((mem), (void *) (ptr)), label)

void
tach_cpu_lstm_fwd (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w,
                   float *y, void *reserve)
{
  dnnl_exec_arg_t args[6];
  int nargs = 0;

  tach_cpu_bind_threads (be);
  if (plan->ws != NULL && reserve == NULL)
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("a training LSTM forward needs its reserve space: "
                           "allocate tach_lstm_reserve_bytes() and pass it"));
      return;
    }
  weights_to_ldigo (plan, w);
  if (plan->swap)
    swap_outer (plan->x_ntc, x, plan->desc.T, plan->desc.N, plan->desc.I);

  SET_HANDLE (be, plan->src, plan->swap ? plan->x_ntc : x, out);
  SET_HANDLE (be, plan->dst, plan->swap ? plan->y_ntc : y, out);
  SET_HANDLE (be, plan->wl, plan->wl_fwd, out);
  SET_HANDLE (be, plan->wi, plan->wi_fwd, out);
  SET_HANDLE (be, plan->bias, plan->bias_buf, out);
  args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_SRC_LAYER, plan->src };
  args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_DST_LAYER, plan->dst };
  args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_WEIGHTS_LAYER, plan->wl };
  args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_WEIGHTS_ITER, plan->wi };
  args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_BIAS, plan->bias };
  if (plan->ws != NULL)
    {
      SET_HANDLE (be, plan->ws, reserve, out);
      args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_WORKSPACE, plan->ws };
    }
  if (tach_cpu_execute (be, plan->fwd, nargs, args) && plan->swap)
    swap_outer (y, plan->y_ntc, plan->desc.N, plan->desc.T, (size_t) plan->desc.dirs * plan->desc.H);
out:
  return;
}

void
tach_cpu_lstm_bwd (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w,
                   const float *y, const float *dy, void *reserve, float *dx, float *dw)
{
  const TachLstmDesc *d = &plan->desc;
  size_t g = (size_t) 4 * d->H;
  dnnl_exec_arg_t args[13];
  int nargs = 0;

  tach_cpu_bind_threads (be);
  if (plan->bwd == NULL)
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("LSTM backward needs a plan made for training: set training in the TachLstmDesc"));
      return;
    }
  if (d->need_dx && dx == NULL)
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("LSTM backward was planned with need_dx but given no dx buffer"));
      return;
    }
  if (plan->ws != NULL && reserve == NULL)
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("LSTM backward needs the reserve space its forward filled"));
      return;
    }

  weights_to_ldgoi (plan, w);
  /* oneDNN accumulates into the weight gradients: start from zero so that
   * dw is overwritten, as the contract says. */
  memset (plan->dwl, 0, (size_t) d->dirs * d->I * g * sizeof (float));
  memset (plan->dwi, 0, (size_t) d->dirs * d->H * g * sizeof (float));
  memset (plan->dbias, 0, (size_t) d->dirs * g * sizeof (float));

  if (plan->swap)
    {
      size_t hd = (size_t) d->dirs * d->H;

      swap_outer (plan->x_ntc, x, d->T, d->N, d->I);
      swap_outer (plan->y_ntc, y, d->T, d->N, hd);
      swap_outer (plan->dy_ntc, dy, d->T, d->N, hd);
      x = plan->x_ntc;
      y = plan->y_ntc;
      dy = plan->dy_ntc;
    }

  SET_HANDLE (be, plan->src, x, out);
  SET_HANDLE (be, plan->dst, y, out);
  SET_HANDLE (be, plan->b_wl, plan->wl_bwd, out);
  SET_HANDLE (be, plan->b_wi, plan->wi_bwd, out);
  SET_HANDLE (be, plan->bias, plan->bias_buf, out);
  SET_HANDLE (be, plan->diff_src, d->need_dx && !plan->swap ? dx : plan->dx_scratch, out);
  SET_HANDLE (be, plan->diff_dst, dy, out);
  SET_HANDLE (be, plan->diff_wl, plan->dwl, out);
  SET_HANDLE (be, plan->diff_wi, plan->dwi, out);
  SET_HANDLE (be, plan->diff_bias, plan->dbias, out);
  args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_SRC_LAYER, plan->src };
  args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_DST_LAYER, plan->dst };
  args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_WEIGHTS_LAYER, plan->b_wl };
  args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_WEIGHTS_ITER, plan->b_wi };
  args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_BIAS, plan->bias };
  args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_SRC_LAYER, plan->diff_src };
  args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_DST_LAYER, plan->diff_dst };
  args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_WEIGHTS_LAYER, plan->diff_wl };
  args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_WEIGHTS_ITER, plan->diff_wi };
  args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_DIFF_BIAS, plan->diff_bias };
  if (plan->ws != NULL)
    {
      SET_HANDLE (be, plan->ws, reserve, out);
      args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_WORKSPACE, plan->ws };
    }
  if (!tach_cpu_execute (be, plan->bwd, nargs, args))
    return;
  grads_from_ldigo (plan, dw);
  if (plan->swap && d->need_dx)
    swap_outer (dx, plan->dx_scratch, d->N, d->T, d->I);
out:
  return;
}

/* ----------------------------------------------------------- one cell */

static inline float
sigmoidf (float x)
{
  return 1.0f / (1.0f + expf (-x));
}

void
tach_cpu_lstm_cell_fwd (TachBackend *be, int n, int h, float *gates, const float *bias,
                        const float *c_prev, float *c, float *h_out, int ldh)
{
  tach_cpu_bind_threads (be);
#pragma omp parallel for if ((size_t) n * (size_t) h * 4 >= TACH_CPU_PARALLEL_MIN)
  for (int r = 0; r < n; r++)
    {
      float *gr = gates + (size_t) r * 4 * (size_t) h;
      float *cr = c + (size_t) r * (size_t) h;
      const float *cp = c_prev != NULL ? c_prev + (size_t) r * (size_t) h : NULL;
      float *hr = h_out + (size_t) r * (size_t) ldh;

      for (int j = 0; j < h; j++)
        {
          float ai = gr[j], af = gr[h + j], ag = gr[2 * h + j], ao = gr[3 * h + j];
          float i, f, g, o, cv;

          if (bias != NULL)
            {
              ai += bias[j];
              af += bias[h + j];
              ag += bias[2 * h + j];
              ao += bias[3 * h + j];
            }
          i = sigmoidf (ai);
          f = sigmoidf (af);
          g = tanhf (ag);
          o = sigmoidf (ao);
          cv = i * g + (cp != NULL ? f * cp[j] : 0.0f);
          gr[j] = i;
          gr[h + j] = f;
          gr[2 * h + j] = g;
          gr[3 * h + j] = o;
          cr[j] = cv;
          hr[j] = o * tanhf (cv);
        }
    }
}

void
tach_cpu_lstm_cell_bwd (TachBackend *be, int n, int h, const float *gates, const float *c_prev,
                        const float *c, const float *dh, int lddh, const float *dc,
                        float *dgates, float *dc_prev)
{
  tach_cpu_bind_threads (be);
  /* Each element reads all its inputs before writing, so dgates may alias
   * gates and dc_prev may alias dc. */
#pragma omp parallel for if ((size_t) n * (size_t) h * 4 >= TACH_CPU_PARALLEL_MIN)
  for (int r = 0; r < n; r++)
    {
      const float *gr = gates + (size_t) r * 4 * (size_t) h;
      const float *cr = c + (size_t) r * (size_t) h;
      const float *cp = c_prev != NULL ? c_prev + (size_t) r * (size_t) h : NULL;
      const float *dhr = dh != NULL ? dh + (size_t) r * (size_t) lddh : NULL;
      const float *dcr = dc != NULL ? dc + (size_t) r * (size_t) h : NULL;
      float *dgr = dgates + (size_t) r * 4 * (size_t) h;
      float *dcp = dc_prev != NULL ? dc_prev + (size_t) r * (size_t) h : NULL;

      for (int j = 0; j < h; j++)
        {
          float i = gr[j], f = gr[h + j], g = gr[2 * h + j], o = gr[3 * h + j];
          float tc = tanhf (cr[j]);
          float dhv = dhr != NULL ? dhr[j] : 0.0f;
          float dct = (dcr != NULL ? dcr[j] : 0.0f) + dhv * o * (1.0f - tc * tc);
          float cpv = cp != NULL ? cp[j] : 0.0f;

          dgr[j] = dct * g * i * (1.0f - i);
          dgr[h + j] = dct * cpv * f * (1.0f - f);
          dgr[2 * h + j] = dct * i * (1.0f - g * g);
          dgr[3 * h + j] = dhv * tc * o * (1.0f - o);
          if (dcp != NULL)
            dcp[j] = dct * f;
        }
    }
}
