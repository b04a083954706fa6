/* tach-cuda-rnn-weight-map.c: the fused LSTM's cuDNN descriptor and where
 * cuDNN keeps its weights (the layout of the block the model allocates:
 * see tach-cuda-rnn.c).
 *
 * The descriptor: one layer, CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS (as PyTorch
 * and TensorFlow use; Tach's one bias is the input bias, the recurrent
 * biases are holes of the layout), linear input, float data and math in
 * the math mode the precision pinned, projection size = hidden size (no
 * projection), padded I/O enabled for the unpacked layouts.
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-cuda-private.h"
#include "tach-error-private.h"

cudnnStatus_t
tach_cuda_rnn_set (cudnnRNNDescriptor_t rnn, cudnnDropoutDescriptor_t dropout,
                   const TachLstmDesc *d, cudnnRNNAlgo_t algo, cudnnMathType_t math)
{
  return cudnnSetRNNDescriptor_v8 (rnn,
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
                                   /* dropoutDesc = */ dropout,
                                   /* auxFlags = */ CUDNN_RNN_PADDED_IO_DISABLED);
}

/* Records a refusal of the standard algorithm, which every LSTM falls back
 * to: with FMA-only math, says that fp32 never runs as TF32. */
void
tach_cuda_rnn_fail_standard (TachBackend *be, cudnnStatus_t status, const char *call)
{
  if (!tach_cudnn_check (be, status, call, __FILE__, __LINE__)
      && TACH_CUDA (be)->cudnn_math == CUDNN_FMA_MATH)
    g_prefix_error (&be->error, W_("cuDNN refuses this LSTM with FMA-only fp32 math "
                                  "(CUDNN_FMA_MATH), and an fp32 run never falls back to "
                                  "TF32 ({precision=tf32} allows it): "));
}

/* Whether a cuDNN tensor descriptor's @n dims and strides describe a dense
 * row-major [rows, cols] matrix (dims of 1 left out, wherever they are). */
static gboolean
dense_matrix (int n, const int *dims, const int *strides, size_t rows, size_t cols)
{
  size_t d[3], st[3];
  int k = 0;

  for (int i = 0; i < n && i < 3; i++)
    if (dims[i] != 1)
      {
        d[k] = (size_t) dims[i];
        st[k++] = (size_t) strides[i];
      }
  if (k == 0)
    return rows * cols == 1;
  if (k == 1)
    return d[0] == rows * cols && st[0] == 1;
  return k == 2 && d[0] == rows && d[1] == cols && st[1] == 1 && st[0] == cols;
}

/* Reads the layout of cuDNN's weight space @space (@bytes) for @rnn, set
 * up for @d: each gate's matrices and input bias as views.  The matrices
 * must be dense [H, cols] row-major (cuDNN's are, as PyTorch's flat
 * weights rely on), as every layout's views here are. */
gboolean
tach_cuda_rnn_query_layout (TachBackend *be, cudnnRNNDescriptor_t rnn, const TachLstmDesc *d,
                            const void *space, size_t bytes, cudnnTensorDescriptor_t mdesc,
                            cudnnTensorDescriptor_t bdesc, TachLstmWeightMap *layout)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  size_t H = d->H, I = d->I;

  memset (layout, 0, sizeof *layout);
  layout->floats = bytes / sizeof (float);
  layout->align = TACH_CUDA_WSPACE_ALIGN;
  for (int dir = 0; dir < d->dirs; dir++)
    for (int lin = 0; lin < 8; lin++)
      {
        gboolean input = lin < 4;
        int gate = lin % 4;
        size_t cols = input ? I : H;
        void *m_addr = NULL, *b_addr = NULL;
        cudnnDataType_t dtype;
        int nb_dims = 0, dims[3] = { 0 }, strides[3] = { 0 };
        int b_dims = 0, bd[3] = { 0 }, bs[3] = { 0 };

        TACH_CUDNN_TRY (be, cudnnGetRNNWeightParams (cb->cudnn, rnn, /* pseudoLayer = */ dir,
                                                     bytes, space, /* linLayerID = */ lin,
                                                     mdesc, &m_addr, bdesc, &b_addr),
                        return FALSE);
        TACH_CUDNN_TRY (be, cudnnGetTensorNdDescriptor (mdesc, 3, &dtype, &nb_dims, dims, strides),
                        return FALSE);
        TACH_CUDNN_TRY (be, cudnnGetTensorNdDescriptor (bdesc, 3, &dtype, &b_dims, bd, bs),
                        return FALSE);
        if (!dense_matrix (nb_dims, dims, strides, H, cols) || m_addr == NULL || b_addr == NULL
            || !dense_matrix (b_dims, bd, bs, H, 1))
          {
            tach_backend_fail (be, TACH_ERROR_LIBRARY,
                               _("cuDNN's LSTM weight layout is not the expected one: linear "
                                 "layer %d of direction %d has %d x %d x %d weights (row stride "
                                 "%d) and %d biases, expected %zu x %zu dense and %zu"),
                               lin, dir, dims[0], dims[1], dims[2], strides[1],
                               bd[0] * bd[1] * bd[2], H, cols, H);
            return FALSE;
          }
        if (input)
          {
            layout->wx[dir][gate] = (TachLstmView) { (size_t) ((const float *) m_addr
                                                               - (const float *) space), I };
            layout->b[dir][gate] = (TachLstmView) { (size_t) ((const float *) b_addr
                                                              - (const float *) space), 1 };
          }
        else
          layout->wh[dir][gate] = (TachLstmView) { (size_t) ((const float *) m_addr
                                                             - (const float *) space), H };
      }
  return TRUE;
}

gboolean
tach_cuda_lstm_weight_map (TachBackend *be, const TachLstmDesc *desc, TachLstmWeightMap *layout)
{
  TachCudaBackend *cb = TACH_CUDA (be);
  cudnnRNNDescriptor_t rnn = NULL;
  cudnnDropoutDescriptor_t dropout = NULL;
  cudnnTensorDescriptor_t mdesc = NULL, bdesc = NULL;
  cudnnStatus_t status;
  size_t bytes = 0;
  void *space = NULL;
  gboolean ok = FALSE;

  if (!TACH_CUDA_LEAN_ON (be, TACH_CUDA_LEAN_WSPACE))
    {
      tach_lstm_weight_map_canonical (desc, layout);
      return TRUE;
    }
  if (!tach_cuda_not_capturing (be, "laying out an LSTM's weights"))
    return FALSE;
  TACH_CUDNN_TRY (be, cudnnCreateRNNDescriptor (&rnn), goto out);
  TACH_CUDNN_TRY (be, cudnnCreateDropoutDescriptor (&dropout), goto out);
  TACH_CUDNN_TRY (be, cudnnCreateTensorDescriptor (&mdesc), goto out);
  TACH_CUDNN_TRY (be, cudnnCreateTensorDescriptor (&bdesc), goto out);
  TACH_CUDNN_TRY (be, cudnnSetDropoutDescriptor (dropout, cb->cudnn, /* dropout = */ 0.0f,
                                                 /* states = */ NULL, /* stateSizeInBytes = */ 0,
                                                 /* seed = */ 0), goto out);
  /* The standard algorithm's layout: every plan can run it, whatever its
   * batch and length. */
  status = tach_cuda_rnn_set (rnn, dropout, desc, CUDNN_RNN_ALGO_STANDARD, cb->cudnn_math);
  if (status != CUDNN_STATUS_SUCCESS)
    {
      tach_cuda_rnn_fail_standard (be, status, "cudnnSetRNNDescriptor_v8 (CUDNN_RNN_ALGO_STANDARD)");
      goto out;
    }
  TACH_CUDNN_TRY (be, cudnnGetRNNWeightSpaceSize (cb->cudnn, rnn, &bytes), goto out);
  /* cuDNN wants a real weight space to give addresses in (a NULL one is
   * refused); nothing reads or writes it here. */
  space = tach_cuda_alloc_internal (be, bytes);
  if (space == NULL)
    goto out;
  ok = tach_cuda_rnn_query_layout (be, rnn, desc, space, bytes, mdesc, bdesc, layout);

out:
  tach_cuda_free_internal (be, space);
  if (bdesc != NULL)
    (void) cudnnDestroyTensorDescriptor (bdesc);
  if (mdesc != NULL)
    (void) cudnnDestroyTensorDescriptor (mdesc);
  if (dropout != NULL)
    (void) cudnnDestroyDropoutDescriptor (dropout);
  if (rnn != NULL)
    (void) cudnnDestroyRNNDescriptor (rnn);
  return ok && be->error == NULL;
}
