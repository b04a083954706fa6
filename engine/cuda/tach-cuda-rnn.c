/* tach-cuda-rnn.c: the fused LSTM on cuDNN's v8 RNN API.
 *
 * Layout: cuDNN reads every plan's data as CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED
 * ([T, N, I]; every sequence is T long, so packed and unpacked are the same
 * memory), with CUDNN_RNN_PADDED_IO_DISABLED, as PyTorch does.  A time-major
 * plan (and so the BiLSTM report's misread, which is a time-major plan over
 * batch-major memory) hands cuDNN the caller's buffers.  A batch-major plan
 * ([N, T, I]) swaps the two outer axes in Tach's own kernel on the way in
 * and out: x and y into time-major copies kept in the caller's reserve
 * (after cuDNN's part, so that the backward pass reads its own forward's),
 * dy into and dx out of the plan's scratch.  On an H200 (cuDNN 9.19) the
 * batch-major unpacked layout made cuDNN rearrange x, y and dy in every
 * pass: six RNNInputRearrangement kernels of 57 us a step at W1's shape,
 * where the four swaps move the same bytes in a few microseconds.
 *
 * Weights: the model keeps the LSTM's parameters and their gradient in
 * cuDNN's own weight-space layout (tach_cuda_lstm_weight_map, the ops'
 * lstm_weight_map), as views into its flat parameter buffer: the forward and
 * both backward passes hand cuDNN the model's block and gradient block
 * directly and Adam updates them in place, so a step copies nothing.
 * cuDNN's LSTM uses Tach's gate order (linear layers 0-3 act on the input,
 * 4-7 on the recurrent state, each for i, f, g, o) and stores each gate's
 * matrix dense and row-major.  It has two biases per gate
 * (CUDNN_RNN_DOUBLE_BIAS, as PyTorch and TensorFlow use): the views map
 * Tach's one bias to the input bias; the recurrent biases are holes of the
 * layout, zero from initialisation, and their gradient, which cuDNN does
 * compute, is zeroed after every backward pass so that the optimiser
 * leaves them zero.  (With CUDNN_RNN_SINGLE_INP_BIAS instead, on an H200,
 * cuDNN 9.19 refused its persistent algorithm, and W1 ran 3% slower and
 * its misread 20 times slower.)  cuDNN's weight gradient ADDS into the
 * gradient block,
 * which is therefore zeroed before (the model's gradients are overwritten
 * each step, not zeroed).
 *
 * The layout the model allocates is the standard algorithm's; a plan whose
 * algorithm lays the weights out differently (none is known to), and every
 * plan under TACH_CUDA_PLAIN=wspace (where lstm_weight_map reports the
 * canonical layout), keeps a weight space of its own and copies the block
 * in on every forward and the gradient out on every backward, the adjacent
 * copies merged once when the plan is built: the numbers are the same
 * either way, only the copies differ.
 *
 * Algorithm: CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H for training where cuDNN
 * accepts the shape and the math is not fp16/bf16 conversion, else
 * CUDNN_RNN_ALGO_STANDARD.  A refusal at plan time or at the
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
  size_t canon;    /* offset in the caller's block, floats */
  size_t cudnn;    /* offset in the plan's weight space, floats */
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
  TachLstmWeightMap         block;     /* where the caller's w and dw lie (lstm_weight_map) */
  gboolean                  views;     /* the block is cuDNN's weight space: no copies */
  GArray                   *holes;     /* TachLstmRange: the block's floats no view covers */
  float                    *wspace;    /* owned, device, copies only: cuDNN's weights */
  float                    *dwspace;   /* owned, device, copies only: cuDNN's weight gradient */
  size_t                    work_bytes;
  void                     *work;      /* owned, device */
  size_t                    reserve_bytes; /* the caller's: cudnn_reserve, then the swapped x, y */
  size_t                    cudnn_reserve; /* the larger of both algorithms', 256-byte aligned */
  gboolean                  swap;      /* batch-major data, swapped to time-major around cuDNN */
  int32_t                  *dev_seq;   /* owned, device: N sequence lengths, all T */
  int                      *host_seq;  /* owned */
  float                    *x_scratch; /* owned, device, x's shape (T x N x I): dx when the
                                        * caller wants none; swapping plans: x time-major in
                                        * inference, cuDNN's time-major dx in training */
  float                    *y_scratch; /* owned, device, swapping plans only, y's shape
                                        * (T x N x dirs x H): y time-major in inference, dy
                                        * swapped in training */
  GArray                   *segments;  /* TachWeightSegment, copies only */
};

/* Floats in an x ([T, N, I]) and a y ([T, N, dirs * H]) of @d, either
 * order. */
static size_t
x_floats (const TachLstmDesc *d)
{
  return (size_t) d->T * d->N * d->I;
}

static size_t
y_floats (const TachLstmDesc *d)
{
  return (size_t) d->T * d->N * d->dirs * d->H;
}

static cudnnStatus_t
set_rnn_descriptor (TachLstmPlan *plan, cudnnRNNAlgo_t algo, cudnnMathType_t math)
{
  return tach_cuda_rnn_set (plan->rnn, plan->dropout, &plan->desc, algo, math);
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

/* Fills plan->segments, the copies between the caller's block (in
 * plan->block) and the plan's weight space (in @own), for the copying
 * path. */
static gboolean
map_weights (TachBackend *be, TachLstmPlan *plan, const TachLstmWeightMap *own)
{
  const TachLstmDesc *d = &plan->desc;
  const TachLstmWeightMap *blk = &plan->block;
  size_t H = d->H, I = d->I;

  g_array_set_size (plan->segments, 0);
  for (int dir = 0; dir < d->dirs; dir++)
    for (int gate = 0; gate < 4; gate++)
      {
        const TachLstmView *from[3] = { &blk->wx[dir][gate], &blk->wh[dir][gate],
                                        &blk->b[dir][gate] };
        const TachLstmView *to[3] = { &own->wx[dir][gate], &own->wh[dir][gate],
                                      &own->b[dir][gate] };
        size_t cols[3] = { I, H, H }, rows[3] = { H, H, 1 };

        for (int k = 0; k < 3; k++)
          {
            TachWeightSegment seg = { from[k]->offset, to[k]->offset, rows[k] * cols[k] };

            /* One copy per matrix: both sides dense, as every layout here is. */
            if (k < 2 && (from[k]->ld != cols[k] || to[k]->ld != cols[k]))
              {
                tach_backend_fail (be, TACH_ERROR_LIBRARY,
                                   _("the LSTM weight block has rows %zu apart for %zu columns: "
                                     "the CUDA backend copies dense blocks only"),
                                   from[k]->ld, cols[k]);
                return FALSE;
              }
            g_array_append_val (plan->segments, seg);
          }
      }

  /* Merge runs that are contiguous on both sides (in the block's order),
   * so a step pays a handful of copies rather than one per gate. */
  {
    GArray *merged = g_array_new (FALSE, FALSE, sizeof (TachWeightSegment));
    TachWeightSegment *s = (TachWeightSegment *) (void *) plan->segments->data;

    /* Segments were appended gate by gate; sort them by block offset
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

/* (Re)allocates the workspace for the current algorithm and reads its
 * weight layout: the caller's block itself when the layouts agree, else a
 * weight space of the plan's own with the copies mapped.  That weight
 * space starts zeroed so that the recurrent biases, which no copy
 * touches, stay zero. */
static gboolean
realize (TachBackend *be, TachLstmPlan *plan, size_t work_bytes)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  size_t weight_bytes = 0;
  TachLstmWeightMap own;

  TACH_CUDNN_TRY (be, cudnnGetRNNWeightSpaceSize (cb->cudnn, plan->rnn, &weight_bytes), return FALSE);
  release_buffers (be, plan);
  plan->weight_bytes = weight_bytes;
  plan->work_bytes = work_bytes;
  plan->wspace = tach_cuda_alloc_internal (be, weight_bytes);
  if (work_bytes > 0)
    plan->work = tach_cuda_alloc_internal (be, work_bytes);
  if (be->error != NULL
      || !tach_cuda_rnn_query_layout (be, plan->rnn, &plan->desc, plan->wspace, weight_bytes, plan->mdesc,
                        plan->bdesc, &own))
    return FALSE;
  {
    GError *error = NULL;

    if (!tach_lstm_weight_map_check (&plan->desc, &own, &error))
      {
        g_prefix_error (&error, "cuDNN: ");
        tach_backend_set_error (be, error);
        return FALSE;
      }
  }
  plan->views = tach_lstm_weight_map_equal (&plan->desc, &plan->block, &own);
  g_array_set_size (plan->segments, 0);
  if (plan->views)
    {
      /* The weight space was only asked where things are. */
      tach_cuda_free_internal (be, plan->wspace);
      plan->wspace = NULL;
      return be->error == NULL;
    }
  if (plan->desc.training)
    {
      plan->dwspace = tach_cuda_alloc_internal (be, weight_bytes);
      if (plan->dwspace == NULL)
        return FALSE;
    }
  TACH_CUDA_TRY (be, cudaMemsetAsync (plan->wspace, 0, weight_bytes, cb->stream), return FALSE);
  return map_weights (be, plan, &own);
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
  g_autofree char *algorithm = g_strdup_printf ("cuDNN %s, %s, %s",
                                                plan->algo == CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H
                                                ? "CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H"
                                                : "CUDNN_RNN_ALGO_STANDARD",
                                                math_name (plan->math),
                                                plan->views ? "weights in place"
                                                            : "weights copied per step");

  g_info ("%s: %s", what, algorithm);
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
  if (reserve > plan->cudnn_reserve)
    {
      tach_backend_fail (be, TACH_ERROR_LIBRARY,
                         _("cuDNN's standard LSTM algorithm needs a larger reserve space (%zu bytes) "
                           "than it reported when the plan was built (%zu)"),
                         reserve, plan->cudnn_reserve);
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
  /* The block the caller hands in: the layout the model allocated. */
  if (!tach_cuda_lstm_weight_map (be, desc, &plan->block))
    goto fail;
  plan->holes = tach_lstm_weight_map_holes (desc, &plan->block);

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

  plan->swap = !desc->time_major;
  {
    cudnnRNNDataLayout_t layout = CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED;

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

  /* Ask both algorithms, so that the reserve size covers a later switch.
   * The persistent one is left out under TACH_CUDA_PLAIN=persist; with
   * fp16/bf16 conversion math, where on an H200 (cuDNN 9.19) it returned
   * wrong numbers for W1's layer batch-major (NMSE 0.15 against the double
   * reference, where fp32 math gives 1e-14); and for inference, where the
   * standard one generated W2's tokens 8-9% faster there in three runs out
   * of three (24.4 against 26.5 k tokens/s, the same losses). */
  small_ok = TACH_CUDA_LEAN_ON (be, TACH_CUDA_LEAN_PERSIST) && desc->training
             && plan->math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
             && try_algo (be, plan, CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H, &work_small,
                          &reserve_small) == CUDNN_STATUS_SUCCESS;
  {
    cudnnStatus_t status = try_algo (be, plan, CUDNN_RNN_ALGO_STANDARD, &work_std, &reserve_std);

    if (status != CUDNN_STATUS_SUCCESS)
      {
        tach_cuda_rnn_fail_standard (be, status, "cudnnSetRNNDescriptor_v8 (CUDNN_RNN_ALGO_STANDARD)");
        goto fail;
      }
  }
  plan->cudnn_reserve = desc->training ? (MAX (reserve_small, reserve_std) + 255) & ~(size_t) 255 : 0;
  plan->reserve_bytes = plan->cudnn_reserve;
  if (desc->training && plan->swap)
    plan->reserve_bytes += sizeof (float) * (x_floats (desc) + y_floats (desc));
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
   * could not).  A swapping plan has both scratches whatever it does: its
   * time-major x, y in inference, and dx, dy in training. */
  if ((desc->training && !desc->need_dx) || plan->swap)
    {
      plan->x_scratch = tach_cuda_alloc_internal (be, sizeof (float) * x_floats (desc));
      if (plan->x_scratch == NULL)
        goto fail;
    }
  if (plan->swap)
    {
      plan->y_scratch = tach_cuda_alloc_internal (be, sizeof (float) * y_floats (desc));
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
  tach_cuda_free_internal (be, plan->x_scratch);
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
  if (plan->holes != NULL)
    g_array_unref (plan->holes);
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

/* Copies between the caller's block and the plan's weight space (the
 * copying path only). */
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

/* The weight space cuDNN reads for the caller's block @w: @w itself, or
 * the plan's own with @w copied in.  NULL on failure. */
static const float *
load_weights (TachBackend *be, TachLstmPlan *plan, const float *w)
{
  if (plan->views)
    return w;
  return convert_weights (be, plan, (float *) w, plan->wspace, TRUE) ? plan->wspace : NULL;
}

static cudnnStatus_t
run_forward (TachBackend *be, TachLstmPlan *plan, const float *space, const float *x, float *y,
             void *reserve)
{
  return cudnnRNNForward (TACH_CUDA (be)->cudnn, plan->rnn, plan->fwd_mode, plan->dev_seq,
                          plan->xdesc, x, plan->ydesc, y,
                          plan->hdesc, /* hx = */ NULL, /* hy = */ NULL,
                          plan->hdesc, /* cx = */ NULL, /* cy = */ NULL,
                          plan->weight_bytes, space,
                          plan->work_bytes, plan->work,
                          plan->desc.training ? plan->cudnn_reserve : 0,
                          plan->desc.training ? reserve : NULL);
}

/* A swapping plan's time-major x and y: in the caller's reserve after
 * cuDNN's part when training (the backward pass reads its own forward's),
 * else in the plan's scratch. */
static float *
swapped_x (TachLstmPlan *plan, void *reserve)
{
  if (!plan->desc.training)
    return plan->x_scratch;
  return (float *) (void *) ((char *) reserve + plan->cudnn_reserve);
}

static float *
swapped_y (TachLstmPlan *plan, void *reserve)
{
  const TachLstmDesc *d = &plan->desc;

  if (!d->training)
    return plan->y_scratch;
  return swapped_x (plan, reserve) + x_floats (d);
}

/* dst[j][i][:] = src[i][j][:] for src [a][b][w]. */
static gboolean
swap_outer (TachBackend *be, const float *src, float *dst, int a, int b, int w)
{
  TACH_CUDA_LAUNCH (be, tach_cuda_launch_swap_outer (TACH_CUDA (be)->stream, src, dst, a, b, w),
                    return FALSE);
  return TRUE;
}

void
tach_cuda_lstm_fwd (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w, float *y,
                    void *reserve)
{
  const TachLstmDesc *d = &plan->desc;
  const float *space = load_weights (be, plan, w);
  const float *x_run = x;
  float *y_run = y;
  cudnnStatus_t status;

  if (space == NULL)
    return;
  if (plan->swap)
    {
      if (d->training && reserve == NULL)
        {
          tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                             _("LSTM forward in training needs its reserve space"));
          return;
        }
      x_run = swapped_x (plan, reserve);
      y_run = swapped_y (plan, reserve);
      if (!swap_outer (be, x, (float *) x_run, d->N, d->T, d->I))
        return;
    }
  status = run_forward (be, plan, space, x_run, y_run, reserve);
  if (tach_cudnn_status_is_refusal (status) && plan->algo != CUDNN_RNN_ALGO_STANDARD)
    {
      if (!fall_back (be, plan, "the forward pass")
          || (space = load_weights (be, plan, w)) == NULL)
        return;
      status = run_forward (be, plan, space, x_run, y_run, reserve);
    }
  TACH_CUDNN_TRY (be, status, return);
  if (plan->swap)
    (void) swap_outer (be, y_run, y, d->T, d->N, d->dirs * d->H);
}

static cudnnStatus_t
run_backward_data (TachBackend *be, TachLstmPlan *plan, const float *space, const float *y,
                   const float *dy, float *dx, void *reserve)
{
  return cudnnRNNBackwardData_v8 (TACH_CUDA (be)->cudnn, plan->rnn, plan->dev_seq,
                                  plan->ydesc, y, dy,
                                  plan->xdesc, dx,
                                  plan->hdesc, /* hx = */ NULL, /* dhy = */ NULL, /* dhx = */ NULL,
                                  plan->hdesc, /* cx = */ NULL, /* dcy = */ NULL, /* dcx = */ NULL,
                                  plan->weight_bytes, space,
                                  plan->work_bytes, plan->work,
                                  plan->cudnn_reserve, reserve);
}

void
tach_cuda_lstm_bwd (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w,
                    const float *y, const float *dy, void *reserve, float *dx, float *dw)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  const TachLstmDesc *d = &plan->desc;
  float *dx_buf = dx;
  float *dspace;
  float *y_again = NULL;  /* owned: the standard forward's y after a fall-back */
  const float *space;
  cudnnStatus_t status;

  if (!d->training || reserve == NULL)
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         _("LSTM backward needs a plan built for training and its reserve space"));
      return;
    }
  /* cuDNN always computes the data gradient, which the weight gradient
   * depends on; without need_dx it goes to the workspace-sized scratch.
   * A swapping plan reads its forward's time-major x and y, and takes dy
   * and gives dx time-major too. */
  if (plan->swap)
    {
      x = swapped_x (plan, reserve);
      y = swapped_y (plan, reserve);
      if (!swap_outer (be, dy, plan->y_scratch, d->N, d->T, d->dirs * d->H))
        return;
      dy = plan->y_scratch;
      dx_buf = plan->x_scratch;
    }
  else if (dx_buf == NULL)
    {
      if (plan->x_scratch == NULL)
        {
          if (!tach_cuda_not_capturing (be, "allocating the LSTM's input-gradient scratch"))
            return;
          plan->x_scratch = tach_cuda_alloc_internal (be, sizeof (float) * x_floats (d));
          if (plan->x_scratch == NULL)
            return;
        }
      dx_buf = plan->x_scratch;
    }

  /* The forward pass left the block in the plan's weight space when it
   * copies (no op in between writes the weights: the optimiser runs after
   * backward). */
  space = plan->views ? w : plan->wspace;
  status = run_backward_data (be, plan, space, y, dy, dx_buf, reserve);
  if (tach_cudnn_status_is_refusal (status) && plan->algo != CUDNN_RNN_ALGO_STANDARD)
    {
      /* The reserve was written by the persistent algorithm: redo the
       * forward pass with the standard one, and take both backward passes
       * from that forward's y and reserve.  Its y goes to a scratch buffer
       * (the caller's y is the persistent forward's), freed only after the
       * weight gradient has read it. */
      if (!fall_back (be, plan, "the backward pass") || (space = load_weights (be, plan, w)) == NULL)
        return;
      y_again = tach_cuda_alloc_internal (be, sizeof (float) * y_floats (d));
      if (y_again == NULL)
        return;
      status = run_forward (be, plan, space, x, y_again, reserve);
      if (status == CUDNN_STATUS_SUCCESS)
        status = run_backward_data (be, plan, space, y_again, dy, dx_buf, reserve);
      y = y_again;
    }
  TACH_CUDNN_TRY (be, status, goto out);
  if (plan->swap && dx != NULL && !swap_outer (be, dx_buf, dx, d->T, d->N, d->I))
    goto out;

  /* cuDNN adds the weight gradient to dweightSpace; Tach's contract
   * overwrites dw, so start from zero. */
  dspace = plan->views ? dw : plan->dwspace;
  TACH_CUDA_TRY (be, cudaMemsetAsync (dspace, 0, plan->weight_bytes, cb->stream), goto out);
  TACH_CUDNN_TRY (be, cudnnRNNBackwardWeights_v8 (cb->cudnn, plan->rnn,
                                                  /* addGrad = */ CUDNN_WGRAD_MODE_ADD,
                                                  plan->dev_seq,
                                                  plan->xdesc, x,
                                                  plan->hdesc, /* hx = */ NULL,
                                                  plan->ydesc, y,
                                                  plan->weight_bytes, dspace,
                                                  plan->work_bytes, plan->work,
                                                  plan->cudnn_reserve, reserve), goto out);
  if (!plan->views && !convert_weights (be, plan, dw, plan->dwspace, FALSE))
    goto out;
  /* The floats of the block that no view covers (the recurrent biases,
   * padding) get a zero gradient, so that they stay zero. */
  for (guint i = 0; i < plan->holes->len; i++)
    {
      const TachLstmRange *h = &g_array_index (plan->holes, TachLstmRange, i);

      TACH_CUDA_TRY (be, cudaMemsetAsync (dw + h->start, 0, h->count * sizeof (float), cb->stream),
                     goto out);
    }

out:
  /* cudaFree waits for the device, so the queued passes are done with it. */
  tach_cuda_free_internal (be, y_again);
}
