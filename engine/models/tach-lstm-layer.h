/* tach-lstm-layer.h: one (optionally bidirectional) LSTM layer, written
 * once over the backend ops, shared by the bilstm and lstm-lm models.
 *
 *   rnn=fused     one backend call over the whole sequence (lstm_fwd/bwd)
 *   rnn=unrolled  per-timestep cells: two GEMMs (input and recurrent) plus
 *                 one pointwise cell op per step and direction, as
 *                 static_rnn + BasicLSTMCell do
 *
 * Both compute the same function with the same canonical weights (see
 * TachLstmDesc), so the knob changes speed, not math.
 *   call-setup=per-call  the backend plan (and, unrolled, the work buffers)
 *                        are rebuilt on every forward call
 *
 * Threads: the engine thread.
 */
#pragma once

#include "tach-backend.h"

G_BEGIN_DECLS

typedef struct _TachLstmLayer TachLstmLayer;

/* Floats in the canonical weight block of @desc. */
size_t         tach_lstm_param_count (const TachLstmDesc *desc);
/* Fills a host weight block: uniform(-1/sqrt(H), 1/sqrt(H)) from the
 * counter-based generator keyed by (@seed, @tensor_index), biases zero
 * except the forget gate's, which is 1. */
void           tach_lstm_init_params (const TachLstmDesc *desc, guint64 seed, guint64 tensor_index,
                                      float *host_w);

/* The layout of the weight block the layer's ops read: the backend's
 * (tach_lstm_weight_map) for rnn=fused, the canonical one for rnn=unrolled,
 * whose GEMMs read canonical views.  FALSE + sticky error on failure. */
gboolean       tach_lstm_layer_weight_map (TachBackend *be, const TachLstmDesc *desc, TachRnn rnn,
                                           TachLstmWeightMap *layout);

TachLstmLayer *tach_lstm_layer_new (TachBackend *be, const TachLstmDesc *desc, TachRnn rnn,
                                    TachCallSetup call_setup);
/* y: same layout as x (see TachLstmDesc), dirs*H features; w (and dw
 * below) in tach_lstm_layer_weight_map(). */
void           tach_lstm_layer_forward  (TachLstmLayer *layer, const float *x, const float *w, float *y);
/* After forward on the same x: dw overwritten, dx written when need_dx (else may be NULL). */
void           tach_lstm_layer_backward (TachLstmLayer *layer, const float *x, const float *w,
                                         const float *y, const float *dy, float *dx, float *dw);
/* FLOPs of one forward over the sequence, plus one backward when @backward
 * (weight gradients, recurrent dh, and dx when desc->need_dx). */
double         tach_lstm_flops (const TachLstmDesc *desc, gboolean backward);
/* Host milliseconds the last forward call spent rebuilding its plan and
 * buffers (call-setup=per-call), 0 when it rebuilt nothing: models add it
 * to TachStepCtx.host_ms so the phase breakdown shows the setup cost. */
double         tach_lstm_layer_setup_ms (TachLstmLayer *layer);
void           tach_lstm_layer_free (TachLstmLayer *layer);

G_END_DECLS
