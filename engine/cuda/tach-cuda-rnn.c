/* tach-cuda-rnn.c: the fused LSTM on cuDNN's v8 RNN API.
 *
 * Layout: batch-major data ([N, T, I]) is described to cuDNN as
 * CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED; a time-major plan (and so the
 * BiLSTM report's misread, which is a time-major plan over batch-major
 * memory) as SEQ_MAJOR_UNPACKED over the same memory.  cuDNN takes the
 * unpacked layouts only with CUDNN_RNN_PADDED_IO_ENABLED in auxFlags
 * (cudnn_adv.h; PyTorch and TensorFlow set it for any unpacked input).
 *
 * Weights: Tach's canonical block (per direction W_x [4H, I], W_h [4H, H],
 * b [4H], gates i, f, g, o) is copied into cuDNN's weight space on every
 * forward call, because the optimiser updates the canonical block in place.
 * cuDNN's LSTM uses the same gate order (linear layers 0-3 act on the
 * input, 4-7 on the recurrent state, each for i, f, g, o) and stores each
 * gate's matrix row-major like Tach, so each gate is one contiguous copy;
 * adjacent copies are merged once when the plan is built.  cuDNN has two
 * biases per gate: bx holds b and bh stays zero.
 *
 * Algorithm: CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H where cuDNN accepts the
 * shape, else CUDNN_RNN_ALGO_STANDARD.  A refusal at plan time or at the
 * first call switches the plan to the standard algorithm; the reserve size
 * given to the model covers both, so a switch never outgrows it.  Only a
 * refusal of the shape switches (tach_cudnn_status_is_refusal): a missing
 * driver, runtime or sub-library is reported.  The math mode is the one
 * the precision pinned: a cuDNN that refuses FMA-only fp32 math fails the
 * plan rather than running TF32 under an fp32 label.
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-cuda-private.h"

typedef struct {
  size_t canon;    /* offset in the canonical block, floats */
  size_t cudnn;    /* offset in cuDNN's weight space, floats */
  size_t count;    /* floats */
} TachWeightSegment;

struct _TachLstmPlan {
  TachLstmDesc              desc;
  cudnnRNNDescriptor_t      rnn;       /* owned */
  cudnnRNNDataDescriptor_t  xdesc;     /* owned */
  cudnnRNNDataDescriptor_t  ydesc;     /* owned */
  cudnnTensorDescriptor_t   hdesc;     /* owned: the h and c state shape */
  cudnnTensorDescriptor_t   mdesc;     /* owned: scratch for weight queries */
  cudnnTensorDescriptor_t   bdesc;     /* owned: scratch for weight queries */
  cudnnDropoutDescriptor_t  dropout;   /* owned: "no dropout", as cuDNN wants one */
  cudnnRNNAlgo_t            algo;
  cudnnMathType_t           math;
  cudnnForwardMode_t        fwd_mode;
  size_t                    weight_bytes;
  float                    *wspace;    /* owned, device: cuDNN's weights */
  float                    *dwspace;   /* owned, device: cuDNN's weight gradient */
  size_t                    work_bytes;
  void                     *work;      /* owned, device */
  size_t                    reserve_bytes; /* the larger of both algorithms' */
  int32_t                  *dev_seq;   /* owned, device: N sequence lengths, all T */
  int                      *host_seq;  /* owned */
  float                    *y_scratch; /* owned, device: dx when the caller wants none */
  GArray                   *segments;  /* TachWeightSegment */
};

static cudnnStatus_t
set_rnn_descriptor (TachLstmPlan *plan, cudnnRNNAlgo_t algo, cudnnMathType_t math)
{
  const TachLstmDesc *d = &plan->desc;

  return cudnnSetRNNDescriptor_v8 (plan->rnn,
                                   /* algo = */ algo,
                                   /* cellMode = */ CUDNN_LSTM,
                                   /* biasMode = */ CUDNN_RNN_DOUBLE_BIAS,
                                   /* dirMode = */ d->dirs == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL,
                                   /* inputMode = */ CUDNN_LINEAR_INPUT,
                                   /* dataType = */ CUDNN_DATA_FLOAT,
                                   /* mathPrec = */ CUDNN_DATA_FLOAT,
                                   /* mathType = */ math,
                                   /* inputSize = */ d->I,
                                   /* hiddenSize = */ d->H,
                                   /* projSize = */ d->H,
                                   /* numLayers = */ 1,
                                   /* dropoutDesc = */ plan->dropout,
                                   /* auxFlags = */ CUDNN_RNN_PADDED_IO_ENABLED);
}

/* Configures the descriptor for @algo and asks for its buffer sizes,
 * without touching the sticky error: the caller decides whether a refusal
 * is an error or a reason to fall back. */
static cudnnStatus_t
try_algo (TachBackend *be, TachLstmPlan *plan, cudnnRNNAlgo_t algo, size_t *work, size_t *reserve)
{
  cudnnStatus_t status = set_rnn_descriptor (plan, algo, plan->math);

  if (status == CUDNN_STATUS_SUCCESS)
    status = cudnnGetRNNTempSpaceSizes (TACH_CUDA (be)->cudnn, plan->rnn, plan->fwd_mode,
                                        plan->xdesc, work, reserve);
  return status;
}

/* Fills plan->segments for the current descriptor and weight space. */
static gboolean
map_weights (TachBackend *be, TachLstmPlan *plan)
{
  const TachLstmDesc *d = &plan->desc;
  TachCudaBackend *cb = TACH_CUDA (be);
  size_t H = d->H, I = d->I, per_dir = 4 * H * (I + H + 1), total = 0;

  g_array_set_size (plan->segments, 0);
  for (int dir = 0; dir < d->dirs; dir++)
    for (int lin = 0; lin < 8; lin++)
      {
        gboolean input = lin < 4;
        int gate = lin % 4;
        size_t rows_cols = input ? H * I : H * H;
        void *m_addr = NULL, *b_addr = NULL;
        cudnnDataType_t dtype;
        int nb_dims = 0, dims[3] = { 0 }, strides[3] = { 0 };
        TachWeightSegment seg;

        TACH_CUDNN_TRY (be, cudnnGetRNNWeightParams (cb->cudnn, plan->rnn,
                                                     /* pseudoLayer = */ dir,
                                                     plan->weight_bytes, plan->wspace,
                                                     /* linLayerID = */ lin,
                                                     plan->mdesc, &m_addr,
                                                     plan->bdesc, &b_addr), return FALSE);
        TACH_CUDNN_TRY (be, cudnnGetTensorNdDescriptor (plan->mdesc, 3, &dtype, &nb_dims, dims,
                                                        strides), return FALSE);
        if ((size_t) dims[0] * dims[1] * dims[2] != rows_cols || m_addr == NULL || b_addr == NULL)
          {
            tach_backend_fail (be, TACH_ERROR_LIBRARY,
                               _("cuDNN's LSTM weight layout is not the expected one: linear "
                                 "layer %d of direction %d has %d x %d x %d weights, expected %zu"),
                               lin, dir, dims[0], dims[1], dims[2], rows_cols);
            return FALSE;
          }
        seg.cudnn = (size_t) ((float *) m_addr - plan->wspace);
        seg.canon = dir * per_dir + (input ? gate * H * I : 4 * H * I + gate * H * H);
        seg.count = rows_cols;
        g_array_append_val (plan->segments, seg);
        total += seg.count;
        if (input)
          {
            /* b goes to the input bias; the recurrent bias stays zero. */
            seg.cudnn = (size_t) ((float *) b_addr - plan->wspace);
            seg.canon = dir * per_dir + 4 * H * (I + H) + gate * H;
            seg.count = H;
            g_array_append_val (plan->segments, seg);
            total += seg.count;
          }
      }
  if (total != per_dir * d->dirs)
    {
      tach_backend_fail (be, TACH_ERROR_LIBRARY, _("cuDNN's LSTM weights cover %zu floats, expected %zu"),
                         total, per_dir * d->dirs);
      return FALSE;
    }

  /* Merge runs that are contiguous on both sides (in canonical order), so
   * a step pays a handful of copies rather than one per gate. */
  {
    GArray *merged = g_array_new (FALSE, FALSE, sizeof (TachWeightSegment));
    TachWeightSegment *s = (TachWeightSegment *) (void *) plan->segments->data;

    /* Segments were appended in cuDNN order; sort them by canonical offset
     * (insertion sort: at most 24 entries). */
    for (guint i = 1; i < plan->segments->len; i++)
      for (guint j = i; j > 0 && s[j - 1].canon > s[j].canon; j--)
        {
          TachWeightSegment tmp = s[j];
          s[j] = s[j - 1];
          s[j - 1] = tmp;
        }
    for (guint i = 0; i < plan->segments->len; i++)
      {
        TachWeightSegment *last = merged->len > 0
          ? &g_array_index (merged, TachWeightSegment, merged->len - 1) : NULL;

        if (last != NULL && last->canon + last->count == s[i].canon
            && last->cudnn + last->count == s[i].cudnn)
          last->count += s[i].count;
        else
          g_array_append_val (merged, s[i]);
      }
    g_array_unref (plan->segments);
    plan->segments = merged;
  }
  return TRUE;
}

static void
release_buffers (TachBackend *be, TachLstmPlan *plan)
{
  tach_cuda_free_internal (be, plan->wspace);
  tach_cuda_free_internal (be, plan->dwspace);
  tach_cuda_free_internal (be, plan->work);
  plan->wspace = plan->dwspace = NULL;
  plan->work = NULL;
}

/* (Re)allocates the weight spaces and workspace for the current algorithm
 * and maps the weights.  The weight space starts zeroed so that the
 * recurrent biases, which no copy touches, stay zero. */
static gboolean
realize (TachBackend *be, TachLstmPlan *plan, size_t work_bytes)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  size_t weight_bytes = 0;

  TACH_CUDNN_TRY (be, cudnnGetRNNWeightSpaceSize (cb->cudnn, plan->rnn, &weight_bytes), return FALSE);
  release_buffers (be, plan);
  plan->weight_bytes = weight_bytes;
  plan->work_bytes = work_bytes;
  plan->wspace = tach_cuda_alloc_internal (be, weight_bytes);
  if (plan->desc.training)
    plan->dwspace = tach_cuda_alloc_internal (be, weight_bytes);
  if (work_bytes > 0)
    plan->work = tach_cuda_alloc_internal (be, work_bytes);
  if (be->error != NULL)
    return FALSE;
  TACH_CUDA_TRY (be, cudaMemsetAsync (plan->wspace, 0, weight_bytes, cb->stream), return FALSE);
  return map_weights (be, plan);
}

static const char *
math_name (cudnnMathType_t math)
{
  switch (math)
    {
    case CUDNN_DEFAULT_MATH: return "CUDNN_DEFAULT_MATH";
    case CUDNN_TENSOR_OP_MATH: return "CUDNN_TENSOR_OP_MATH";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION";
    case CUDNN_FMA_MATH: return "CUDNN_FMA_MATH";
    default: return "math mode ?";
    }
}

/* Notes the plan's cuDNN RNN algorithm and math mode on the backend, for
 * the run's summary and runs.csv. */
static void
note_algorithm (TachBackend *be, TachLstmPlan *plan)
{
  g_autofree char *what = tach_lstm_desc_name (&plan->desc);
  g_autofree char *algorithm = g_strdup_printf ("cuDNN %s, %s",
                                                plan->algo == CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H
                                                ? "CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H"
                                                : "CUDNN_RNN_ALGO_STANDARD",
                                                math_name (plan->math));

  tach_backend_note_algorithm (be, what, algorithm);
}

/* Switches a plan to the standard algorithm after cuDNN refused the
 * persistent one for this shape. */
static gboolean
fall_back (TachBackend *be, TachLstmPlan *plan, const char *where)
{
  size_t work = 0, reserve = 0;

  g_info ("cuDNN refused the persistent small-hidden LSTM algorithm at %s; using the standard one",
          where);
  if (!tach_cuda_not_capturing (be, "switching the LSTM to cuDNN's standard algorithm"))
    return FALSE;
  plan->algo = CUDNN_RNN_ALGO_STANDARD;
  TACH_CUDNN_TRY (be, try_algo (be, plan, plan->algo, &work, &reserve), return FALSE);
  if (reserve > plan->reserve_bytes)
    {
      tach_backend_fail (be, TACH_ERROR_LIBRARY,
                         _("cuDNN's standard LSTM algorithm needs a larger reserve space (%zu bytes) "
                           "than it reported when the plan was built (%zu)"),
                         reserve, plan->reserve_bytes);
      return FALSE;
    }
  if (!realize (be, plan, work))
    return FALSE;
  note_algorithm (be, plan);
  return TRUE;
}

TachLstmPlan *
tach_cuda_lstm_plan_new (TachBackend *be, const TachLstmDesc *desc)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  TachLstmPlan *plan;
  size_t work_small = 0, reserve_small = 0, work_std = 0, reserve_std = 0;
  gboolean small_ok;
  int state_dims[3], state_strides[3];

  if (desc->T <= 0 || desc->N <= 0 || desc->I <= 0 || desc->H <= 0
      || (desc->dirs != 1 && desc->dirs != 2))
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("invalid LSTM shape T=%d N=%d I=%d H=%d dirs=%d"),
                         desc->T, desc->N, desc->I, desc->H, desc->dirs);
      return NULL;
    }
  if (!tach_cuda_not_capturing (be, "building an LSTM plan"))
    return NULL;

  plan = g_new0 (TachLstmPlan, 1);
  plan->desc = *desc;
  plan->segments = g_array_new (FALSE, FALSE, sizeof (TachWeightSegment));
  plan->math = cb->cudnn_math;
  plan->fwd_mode = desc->training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE;

  TACH_CUDNN_TRY (be, cudnnCreateRNNDescriptor (&plan->rnn), goto fail);
  TACH_CUDNN_TRY (be, cudnnCreateRNNDataDescriptor (&plan->xdesc), goto fail);
  TACH_CUDNN_TRY (be, cudnnCreateRNNDataDescriptor (&plan->ydesc), goto fail);
  TACH_CUDNN_TRY (be, cudnnCreateTensorDescriptor (&plan->hdesc), goto fail);
  TACH_CUDNN_TRY (be, cudnnCreateTensorDescriptor (&plan->mdesc), goto fail);
  TACH_CUDNN_TRY (be, cudnnCreateTensorDescriptor (&plan->bdesc), goto fail);
  /* A dropout descriptor with p = 0 needs no RNG states (as PyTorch's
   * set_no_dropout): a NULL descriptor is not documented as accepted. */
  TACH_CUDNN_TRY (be, cudnnCreateDropoutDescriptor (&plan->dropout), goto fail);
  TACH_CUDNN_TRY (be, cudnnSetDropoutDescriptor (plan->dropout, cb->cudnn, /* dropout = */ 0.0f,
                                                 /* states = */ NULL, /* stateSizeInBytes = */ 0,
                                                 /* seed = */ 0), goto fail);

  plan->host_seq = g_new (int, desc->N);
  for (int i = 0; i < desc->N; i++)
    plan->host_seq[i] = desc->T;
  plan->dev_seq = tach_cuda_alloc_internal (be, sizeof (int32_t) * desc->N);
  if (plan->dev_seq == NULL)
    goto fail;
  /* host_seq lives as long as the plan, so the copy may stay asynchronous. */
  TACH_CUDA_TRY (be, cudaMemcpyAsync (plan->dev_seq, plan->host_seq, sizeof (int32_t) * desc->N,
                                      cudaMemcpyHostToDevice, cb->stream), goto fail);

  {
    cudnnRNNDataLayout_t layout = desc->time_major ? CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED
                                                   : CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED;

    TACH_CUDNN_TRY (be, cudnnSetRNNDataDescriptor (plan->xdesc, CUDNN_DATA_FLOAT, layout,
                                                   /* maxSeqLength = */ desc->T,
                                                   /* batchSize = */ desc->N,
                                                   /* vectorSize = */ desc->I,
                                                   plan->host_seq, /* paddingFill = */ NULL), goto fail);
    TACH_CUDNN_TRY (be, cudnnSetRNNDataDescriptor (plan->ydesc, CUDNN_DATA_FLOAT, layout,
                                                   /* maxSeqLength = */ desc->T,
                                                   /* batchSize = */ desc->N,
                                                   /* vectorSize = */ desc->dirs * desc->H,
                                                   plan->host_seq, /* paddingFill = */ NULL), goto fail);
  }
  state_dims[0] = desc->dirs;
  state_dims[1] = desc->N;
  state_dims[2] = desc->H;
  state_strides[0] = desc->N * desc->H;
  state_strides[1] = desc->H;
  state_strides[2] = 1;
  TACH_CUDNN_TRY (be, cudnnSetTensorNdDescriptor (plan->hdesc, CUDNN_DATA_FLOAT, 3, state_dims,
                                                  state_strides), goto fail);

  /* Ask both algorithms, so that the reserve size covers a later switch. */
  small_ok = try_algo (be, plan, CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H, &work_small,
                       &reserve_small) == CUDNN_STATUS_SUCCESS;
  {
    cudnnStatus_t status = try_algo (be, plan, CUDNN_RNN_ALGO_STANDARD, &work_std, &reserve_std);

    if (!tach_cudnn_check (be, status, "cudnnSetRNNDescriptor_v8 (CUDNN_RNN_ALGO_STANDARD)",
                           __FILE__, __LINE__))
      {
        if (plan->math == CUDNN_FMA_MATH)
          g_prefix_error (&be->error, _("cuDNN refuses this LSTM with FMA-only fp32 math "
                                        "(CUDNN_FMA_MATH), and an fp32 run never falls back to "
                                        "TF32 (--precision tf32 allows it): "));
        goto fail;
      }
  }
  plan->reserve_bytes = desc->training ? MAX (reserve_small, reserve_std) : 0;
  plan->algo = CUDNN_RNN_ALGO_STANDARD;
  if (small_ok)
    {
      if (try_algo (be, plan, CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H, &work_small, &reserve_small)
          == CUDNN_STATUS_SUCCESS)
        plan->algo = CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H;
      else
        TACH_CUDNN_TRY (be, try_algo (be, plan, CUDNN_RNN_ALGO_STANDARD, &work_std, &reserve_std),
                        goto fail);
    }
  if (!realize (be, plan, plan->algo == CUDNN_RNN_ALGO_STANDARD ? work_std : work_small))
    goto fail;
  /* cuDNN always writes the input gradient; a plan whose caller wants none
   * gets a scratch for it now, so that no step allocates (a captured one
   * could not). */
  if (desc->training && !desc->need_dx)
    {
      plan->y_scratch = tach_cuda_alloc_internal (be, sizeof (float) * (size_t) desc->T * desc->N
                                                      * desc->I);
      if (plan->y_scratch == NULL)
        goto fail;
    }
  note_algorithm (be, plan);
  return plan;

fail:
  tach_cuda_lstm_plan_free (be, plan);
  return NULL;
}

void
tach_cuda_lstm_plan_free (TachBackend *be, TachLstmPlan *plan)
{
  if (plan == NULL)
    return;
  release_buffers (be, plan);
  tach_cuda_free_internal (be, plan->dev_seq);
  tach_cuda_free_internal (be, plan->y_scratch);
  if (plan->rnn != NULL)
    (void) cudnnDestroyRNNDescriptor (plan->rnn);
  if (plan->xdesc != NULL)
    (void) cudnnDestroyRNNDataDescriptor (plan->xdesc);
  if (plan->ydesc != NULL)
    (void) cudnnDestroyRNNDataDescriptor (plan->ydesc);
  if (plan->hdesc != NULL)
    (void) cudnnDestroyTensorDescriptor (plan->hdesc);
  if (plan->mdesc != NULL)
    (void) cudnnDestroyTensorDescriptor (plan->mdesc);
  if (plan->bdesc != NULL)
    (void) cudnnDestroyTensorDescriptor (plan->bdesc);
  if (plan->dropout != NULL)
    (void) cudnnDestroyDropoutDescriptor (plan->dropout);
  /* host_seq is freed last: an asynchronous copy may read it until the
   * stream passes, and cudaFree above has synchronised the device. */
  g_free (plan->host_seq);
  if (plan->segments != NULL)
    g_array_unref (plan->segments);
  g_free (plan);
}

size_t
tach_cuda_lstm_reserve_bytes (TachBackend *be, TachLstmPlan *plan)
{
  return plan->reserve_bytes;
}

const char *
tach_cuda_lstm_plan_algo (TachLstmPlan *plan)
{
  return plan->algo == CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H ? "persist-static-small-h" : "standard";
}

/* Copies between the canonical block and cuDNN's weight space. */
static gboolean
convert_weights (TachBackend *be, TachLstmPlan *plan, float *canon, float *space, gboolean to_cudnn)
{
  cudaStream_t stream = TACH_CUDA (be)->stream;

  for (guint i = 0; i < plan->segments->len; i++)
    {
      const TachWeightSegment *s = &g_array_index (plan->segments, TachWeightSegment, i);
      float *dst = to_cudnn ? space + s->cudnn : canon + s->canon;
      const float *src = to_cudnn ? canon + s->canon : space + s->cudnn;

      TACH_CUDA_TRY (be, cudaMemcpyAsync (dst, src, s->count * sizeof (float),
                                          cudaMemcpyDeviceToDevice, stream), return FALSE);
    }
  return TRUE;
}

static cudnnStatus_t
run_forward (TachBackend *be, TachLstmPlan *plan, const float *x, float *y, void *reserve)
{
  return cudnnRNNForward (TACH_CUDA (be)->cudnn, plan->rnn, plan->fwd_mode, plan->dev_seq,
                          plan->xdesc, x, plan->ydesc, y,
                          plan->hdesc, /* hx = */ NULL, /* hy = */ NULL,
                          plan->hdesc, /* cx = */ NULL, /* cy = */ NULL,
                          plan->weight_bytes, plan->wspace,
                          plan->work_bytes, plan->work,
                          plan->desc.training ? plan->reserve_bytes : 0,
                          plan->desc.training ? reserve : NULL);
}

void
tach_cuda_lstm_fwd (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w, float *y,
                    void *reserve)
{
  cudnnStatus_t status;

  if (!convert_weights (be, plan, (float *) w, plan->wspace, TRUE))
    return;
  status = run_forward (be, plan, x, y, reserve);
  if (tach_cudnn_status_is_refusal (status) && plan->algo != CUDNN_RNN_ALGO_STANDARD)
    {
      if (!fall_back (be, plan, "the forward pass")
          || !convert_weights (be, plan, (float *) w, plan->wspace, TRUE))
        return;
      status = run_forward (be, plan, x, y, reserve);
    }
  TACH_CUDNN_TRY (be, status, return);
}

static cudnnStatus_t
run_backward_data (TachBackend *be, TachLstmPlan *plan, const float *y, const float *dy, float *dx,
                   void *reserve)
{
  return cudnnRNNBackwardData_v8 (TACH_CUDA (be)->cudnn, plan->rnn, plan->dev_seq,
                                  plan->ydesc, y, dy,
                                  plan->xdesc, dx,
                                  plan->hdesc, /* hx = */ NULL, /* dhy = */ NULL, /* dhx = */ NULL,
                                  plan->hdesc, /* cx = */ NULL, /* dcy = */ NULL, /* dcx = */ NULL,
                                  plan->weight_bytes, plan->wspace,
                                  plan->work_bytes, plan->work,
                                  plan->reserve_bytes, reserve);
}

void
tach_cuda_lstm_bwd (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w,
                    const float *y, const float *dy, void *reserve, float *dx, float *dw)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  const TachLstmDesc *d = &plan->desc;
  float *dx_buf = dx;
  float *y_again = NULL;  /* owned: the standard forward's y after a fall-back */
  cudnnStatus_t status;

  if (!d->training || reserve == NULL)
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("LSTM backward needs a plan built for training and its reserve space"));
      return;
    }
  /* cuDNN always computes the data gradient, which the weight gradient
   * depends on; without need_dx it goes to the workspace-sized scratch. */
  if (dx_buf == NULL)
    {
      if (plan->y_scratch == NULL)
        {
          if (!tach_cuda_not_capturing (be, "allocating the LSTM's input-gradient scratch"))
            return;
          plan->y_scratch = tach_cuda_alloc_internal (be, sizeof (float) * (size_t) d->T * d->N
                                                          * d->I);
          if (plan->y_scratch == NULL)
            return;
        }
      dx_buf = plan->y_scratch;
    }

  status = run_backward_data (be, plan, y, dy, dx_buf, reserve);
  if (tach_cudnn_status_is_refusal (status) && plan->algo != CUDNN_RNN_ALGO_STANDARD)
    {
      /* The reserve was written by the persistent algorithm: redo the
       * forward pass with the standard one, and take both backward passes
       * from that forward's y and reserve.  Its y goes to a scratch buffer
       * (the caller's y is the persistent forward's), freed only after the
       * weight gradient has read it. */
      if (!fall_back (be, plan, "the backward pass") || !convert_weights (be, plan, (float *) w,
                                                                          plan->wspace, TRUE))
        return;
      y_again = tach_cuda_alloc_internal (be, sizeof (float) * (size_t) d->T * d->N * d->dirs * d->H);
      if (y_again == NULL)
        return;
      status = run_forward (be, plan, x, y_again, reserve);
      if (status == CUDNN_STATUS_SUCCESS)
        status = run_backward_data (be, plan, y_again, dy, dx_buf, reserve);
      y = y_again;
    }
  TACH_CUDNN_TRY (be, status, goto out);

  /* cuDNN adds the weight gradient to dweightSpace; Tach's contract
   * overwrites dw, so start from zero. */
  TACH_CUDA_TRY (be, cudaMemsetAsync (plan->dwspace, 0, plan->weight_bytes, cb->stream), goto out);
  TACH_CUDNN_TRY (be, cudnnRNNBackwardWeights_v8 (cb->cudnn, plan->rnn,
                                                  /* addGrad = */ CUDNN_WGRAD_MODE_ADD,
                                                  plan->dev_seq,
                                                  plan->xdesc, x,
                                                  plan->hdesc, /* hx = */ NULL,
                                                  plan->ydesc, y,
                                                  plan->weight_bytes, plan->dwspace,
                                                  plan->work_bytes, plan->work,
                                                  plan->reserve_bytes, reserve), goto out);
  convert_weights (be, plan, dw, plan->dwspace, FALSE);

out:
  /* cudaFree waits for the device, so the queued passes are done with it. */
  tach_cuda_free_internal (be, y_again);
}
