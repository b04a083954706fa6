/* tach-lstm-stack.h: a stack of LSTM layers (the --layers knob), each
 * layer a TachLstmLayer reading the one below it.
 *
 * Layer 0 is @desc as given; every layer above takes the dirs * H outputs
 * of the one below as its input (I = dirs * H) and computes its input
 * gradient, in the same layout (so under the bilstm misread every layer
 * reads the buffer as time-major, as stacked CudnnLSTM layers would).  The
 * weights are one block: each layer's block after the one below, in the
 * layout its op reads (TachLstmBlock: the backend's for rnn=fused, the
 * canonical one for rnn=unrolled), so that the optimiser updates them in
 * place.  The canonical stack block (tach_lstm_stack_param_count) is what
 * initialisation draws and what tests read back.  One layer is exactly one
 * TachLstmLayer, with the same weights, so --layers 1 is the plain layer.
 *
 * Threads: the engine thread.
 */
#pragma once

#include "tach-lstm-layer.h"

G_BEGIN_DECLS

typedef struct _TachLstmStack TachLstmStack;

/* The desc of layer @l of a stack over @desc. */
void           tach_lstm_stack_layer_desc (const TachLstmDesc *desc, int l, TachLstmDesc *out);
/* Floats in the stack's weight block, and where layer @l's block starts. */
size_t         tach_lstm_stack_param_count (const TachLstmDesc *desc, int layers);
size_t         tach_lstm_stack_param_offset (const TachLstmDesc *desc, int l);
/* Fills the host weight block: layer 0 as tach_lstm_init_params (@seed,
 * @tensor_index), each layer above from its own counter stream. */
void           tach_lstm_stack_init_params (const TachLstmDesc *desc, int layers, guint64 seed,
                                            guint64 tensor_index, float *host_w);
/* FLOPs of all the layers (see tach_lstm_flops). */
double         tach_lstm_stack_flops (const TachLstmDesc *desc, int layers, gboolean backward);
/* Device bytes of the outputs (and, training, their gradients) kept
 * between the layers: 0 for one layer. */
guint64        tach_lstm_stack_between_bytes (const TachLstmDesc *desc, int layers);

/* The stack's weight block as the ops read it on a backend: layer l's
 * block (in tach_lstm_layer_weight_map()) at an offset aligned as it asks.
 * The same for every stack of @desc, @layers and @rnn on one backend
 * (whatever the batch or call setup), so one block serves them all. */
typedef struct _TachLstmBlock TachLstmBlock;

/* NULL + @error when the backend cannot lay the LSTM out. */
TachLstmBlock *tach_lstm_block_new (TachBackend *be, const TachLstmDesc *desc, int layers,
                                    TachRnn rnn, GError **error);
size_t         tach_lstm_block_floats (const TachLstmBlock *block);
/* Bytes the block's start must be aligned to (tach_params_add_aligned). */
size_t         tach_lstm_block_align (const TachLstmBlock *block);
size_t         tach_lstm_block_offset (const TachLstmBlock *block, int l);
const TachLstmWeightMap *tach_lstm_block_weight_map (const TachLstmBlock *block, int l);
/* Fills the host block (tach_lstm_block_floats) with the weights of
 * tach_lstm_stack_init_params, through the views; the rest zero. */
void           tach_lstm_block_init (const TachLstmBlock *block, guint64 seed,
                                     guint64 tensor_index, float *host);
/* Between the canonical stack weights (tach_lstm_stack_param_count
 * floats) and a host copy of the block (from: the rest of it zero). */
void           tach_lstm_block_from_canonical (const TachLstmBlock *block, const float *canon,
                                               float *host);
void           tach_lstm_block_to_canonical (const TachLstmBlock *block, const float *host,
                                             float *canon);
void           tach_lstm_block_free (TachLstmBlock *block);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachLstmBlock, tach_lstm_block_free)

/* @block: the weights' block (borrowed; only read here); NULL: the
 * canonical stack block. */
TachLstmStack *tach_lstm_stack_new (TachBackend *be, const TachLstmDesc *desc, int layers,
                                    TachRnn rnn, TachCallSetup call_setup,
                                    const TachLstmBlock *block);
/* y: the top layer's output (same layout as x, dirs * H features); w and
 * dw are the stack's block. */
void           tach_lstm_stack_forward  (TachLstmStack *stack, const float *x, const float *w,
                                         float *y);
/* After forward on the same x: dw overwritten, dx written when
 * desc->need_dx (else may be NULL). */
void           tach_lstm_stack_backward (TachLstmStack *stack, const float *x, const float *w,
                                         const float *y, const float *dy, float *dx, float *dw);
/* Host milliseconds the last forward spent rebuilding plans (per-call setup). */
double         tach_lstm_stack_setup_ms (TachLstmStack *stack);
void           tach_lstm_stack_free (TachLstmStack *stack);

G_END_DECLS
