/* tach-lstm-layer.c: one (optionally bidirectional) LSTM layer over the
 * backend ops, fused (one library call) or unrolled (per-timestep GEMMs and
 * cell ops, as static_rnn + BasicLSTMCell).
 *
 * The unrolled path reads x_t and writes h_t in place in either layout by
 * giving the GEMMs and the cell op a row stride, so no transposes are ever
 * made: batch-major rows of one time step are T * features apart,
 * time-major rows are adjacent.
 */
#include <math.h>

#include "tach-lstm-layer.h"
#include "tach-rand.h"

struct _TachLstmLayer {
  TachBackend   *be;            /* borrowed */
  TachLstmDesc   desc;
  TachRnn        rnn;
  TachCallSetup  call_setup;

  /* fused */
  TachLstmPlan  *plan;
  void          *reserve;       /* device */

  /* unrolled work buffers (device) */
  float         *gates;         /* [dirs][T][N][4H] activated gates, kept for backward */
  float         *c;             /* [dirs][T][N][H] cell states */
  float         *dgates;        /* [N][4H] */
  float         *dc[2];         /* [N][H] each: ping-pong cell-state gradients */
  float         *dh;            /* same shape as y: dy plus the recurrent dh */
  gboolean       built;
  double         setup_ms;      /* host time of the last forward's rebuild */
};

size_t
tach_lstm_param_count (const TachLstmDesc *desc)
{
  return (size_t) desc->dirs * 4 * desc->H * ((size_t) desc->I + desc->H + 1);
}

void
tach_lstm_init_params (const TachLstmDesc *desc, guint64 seed, guint64 tensor_index,
                       float *host_w)
{
  guint64 counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_INIT, tensor_index);
  size_t per_dir = 4 * (size_t) desc->H * ((size_t) desc->I + desc->H + 1);
  size_t weights = 4 * (size_t) desc->H * ((size_t) desc->I + desc->H);
  float limit = 1.0f / sqrtf ((float) desc->H);

  for (int d = 0; d < desc->dirs; d++)
    {
      float *block = host_w + d * per_dir;

      for (size_t e = 0; e < weights; e++)
        block[e] = (2.0f * tach_rand_uniform (seed, counter, d * per_dir + e) - 1.0f) * limit;
      /* A forget-gate bias of 1 keeps the cell state flowing early in
       * training (Jozefowicz et al.; Keras' unit_forget_bias). */
      for (int g = 0; g < 4 * desc->H; g++)
        block[weights + g] = (g >= desc->H && g < 2 * desc->H) ? 1.0f : 0.0f;
    }
}

gboolean
tach_lstm_layer_weight_map (TachBackend *be, const TachLstmDesc *desc, TachRnn rnn,
                            TachLstmWeightMap *layout)
{
  if (rnn == TACH_RNN_FUSED)
    return tach_lstm_weight_map (be, desc, layout);
  tach_lstm_weight_map_canonical (desc, layout);
  return tach_backend_ok (be);
}

double
tach_lstm_flops (const TachLstmDesc *desc, gboolean backward)
{
  /* Counts the GEMMs, which dominate: per step and direction the input and
   * recurrent products forward; backward the weight gradients, the
   * recurrent dh and, when needed, dx. */
  double steps = (double) desc->T * desc->dirs;
  double g = 2.0 * desc->N * 4.0 * desc->H;
  double flops = steps * g * (desc->I + desc->H);

  if (backward)
    flops += steps * g * (desc->I + 2.0 * desc->H + (desc->need_dx ? desc->I : 0));
  return flops;
}

static void
layer_release (TachLstmLayer *layer)
{
  TachBackend *be = layer->be;

  tach_lstm_plan_free (be, layer->plan);
  tach_backend_dealloc (be, layer->reserve);
  tach_backend_dealloc (be, layer->gates);
  tach_backend_dealloc (be, layer->c);
  tach_backend_dealloc (be, layer->dgates);
  tach_backend_dealloc (be, layer->dc[0]);
  tach_backend_dealloc (be, layer->dc[1]);
  tach_backend_dealloc (be, layer->dh);
  layer->plan = NULL;
  layer->reserve = NULL;
  layer->gates = layer->c = layer->dgates = layer->dh = NULL;
  layer->dc[0] = layer->dc[1] = NULL;
  layer->built = FALSE;
}

/* Builds the plan (fused) or the work buffers (unrolled).  Errors stay in
 * the backend's sticky error. */
static void
layer_build (TachLstmLayer *layer)
{
  TachBackend *be = layer->be;
  const TachLstmDesc *d = &layer->desc;
  size_t nh = (size_t) d->N * d->H;

  if (layer->rnn == TACH_RNN_FUSED)
    {
      size_t reserve;

      layer->plan = tach_lstm_plan_new (be, d);
      reserve = tach_lstm_reserve_bytes (be, layer->plan);
      if (reserve > 0)
        layer->reserve = tach_backend_alloc (be, reserve);
    }
  else
    {
      layer->gates = tach_backend_alloc (be, (size_t) d->dirs * d->T * nh * 4 * sizeof (float));
      layer->c = tach_backend_alloc (be, (size_t) d->dirs * d->T * nh * sizeof (float));
      if (d->training)
        {
          layer->dgates = tach_backend_alloc (be, nh * 4 * sizeof (float));
          layer->dc[0] = tach_backend_alloc (be, nh * sizeof (float));
          layer->dc[1] = tach_backend_alloc (be, nh * sizeof (float));
          layer->dh = tach_backend_alloc (be, (size_t) d->dirs * d->T * nh * sizeof (float));
        }
    }
  layer->built = TRUE;
}

TachLstmLayer *
tach_lstm_layer_new (TachBackend *be, const TachLstmDesc *desc, TachRnn rnn,
                     TachCallSetup call_setup)
{
  TachLstmLayer *layer = g_new0 (TachLstmLayer, 1);

  layer->be = be;
  layer->desc = *desc;
  layer->rnn = rnn;
  layer->call_setup = call_setup;
  /* Persistent setup pays once here; per-call setup pays on every forward. */
  if (call_setup == TACH_CALL_SETUP_PERSISTENT)
    layer_build (layer);
  return layer;
}

void
tach_lstm_layer_free (TachLstmLayer *layer)
{
  if (layer == NULL)
    return;
  layer_release (layer);
  g_free (layer);
}

/* Where time step @t of a [T, N, F] or [N, T, F] tensor starts, and the
 * distance between its rows. */
static inline size_t
step_offset (const TachLstmDesc *d, int t, int features)
{
  return d->time_major ? (size_t) t * d->N * features : (size_t) t * features;
}

static inline int
step_stride (const TachLstmDesc *d, int features)
{
  return d->time_major ? features : d->T * features;
}

/* The time index of processing position @k in direction @dir. */
static inline int
time_at (const TachLstmDesc *d, int dir, int k)
{
  return dir == 0 ? k : d->T - 1 - k;
}

static void
unrolled_forward (TachLstmLayer *layer, const float *x, const float *w, float *y)
{
  TachBackend *be = layer->be;
  const TachLstmDesc *d = &layer->desc;
  int N = d->N, H = d->H, I = d->I, G = 4 * d->H, DH = d->dirs * d->H;
  size_t per_dir = (size_t) G * (I + H + 1);
  int ldx = step_stride (d, I), ldh = step_stride (d, DH);

  for (int dir = 0; dir < d->dirs; dir++)
    {
      const float *wx = w + dir * per_dir;
      const float *wh = wx + (size_t) G * I;
      const float *b = wh + (size_t) G * H;

      for (int k = 0; k < d->T; k++)
        {
          int t = time_at (d, dir, k);
          float *gates = layer->gates + ((size_t) dir * d->T + t) * N * G;
          float *c = layer->c + ((size_t) dir * d->T + t) * N * H;
          float *h = y + step_offset (d, t, DH) + dir * H;

          /* gates = x_t W_x^T + h_{t-1} W_h^T; the cell op adds the bias. */
          tach_op (be, gemm, FALSE, TRUE, N, G, I, 1.0f, x + step_offset (d, t, I), ldx,
                   wx, I, 0.0f, gates, G);
          if (k > 0)
            {
              int tp = time_at (d, dir, k - 1);
              const float *h_prev = y + step_offset (d, tp, DH) + dir * H;
              const float *c_prev = layer->c + ((size_t) dir * d->T + tp) * N * H;

              tach_op (be, gemm, FALSE, TRUE, N, G, H, 1.0f, h_prev, ldh, wh, H, 1.0f, gates, G);
              tach_op (be, lstm_cell_fwd, N, H, gates, b, c_prev, c, h, ldh);
            }
          else
            tach_op (be, lstm_cell_fwd, N, H, gates, b, NULL, c, h, ldh);
        }
    }
}

static void
unrolled_backward (TachLstmLayer *layer, const float *x, const float *w, const float *y,
                   const float *dy, float *dx, float *dw)
{
  TachBackend *be = layer->be;
  const TachLstmDesc *d = &layer->desc;
  int N = d->N, H = d->H, I = d->I, G = 4 * d->H, DH = d->dirs * d->H;
  size_t per_dir = (size_t) G * (I + H + 1);
  int ldx = step_stride (d, I), ldh = step_stride (d, DH);
  gboolean want_dx = d->need_dx && dx != NULL;

  /* dh starts as dy; each step adds the recurrent dh of the step after it
   * in place, with the GEMM's ldc giving the layout's stride. */
  tach_backend_copy (be, layer->dh, dy, (size_t) d->T * N * DH * sizeof (float));
  tach_backend_zero (be, dw, tach_lstm_param_count (d) * sizeof (float));
  if (want_dx)
    tach_backend_zero (be, dx, (size_t) d->T * N * I * sizeof (float));

  for (int dir = 0; dir < d->dirs; dir++)
    {
      const float *wx = w + dir * per_dir;
      const float *wh = wx + (size_t) G * I;
      float *dwx = dw + dir * per_dir;
      float *dwh = dwx + (size_t) G * I;
      float *db = dwh + (size_t) G * H;
      int cur = 0;

      for (int k = d->T - 1; k >= 0; k--)
        {
          int t = time_at (d, dir, k);
          const float *gates = layer->gates + ((size_t) dir * d->T + t) * N * G;
          const float *c = layer->c + ((size_t) dir * d->T + t) * N * H;
          const float *c_prev = NULL;
          const float *h_prev = NULL;
          const float *x_t = x + step_offset (d, t, I);
          float *dh = layer->dh + step_offset (d, t, DH) + dir * H;
          int tp = k > 0 ? time_at (d, dir, k - 1) : 0;

          if (k > 0)
            {
              c_prev = layer->c + ((size_t) dir * d->T + tp) * N * H;
              h_prev = y + step_offset (d, tp, DH) + dir * H;
            }
          /* The last step has no incoming dc; the first has no c_prev to
           * pass a gradient to. */
          tach_op (be, lstm_cell_bwd, N, H, gates, c_prev, c, dh, ldh,
                   k == d->T - 1 ? NULL : layer->dc[cur], layer->dgates,
                   k > 0 ? layer->dc[1 - cur] : NULL);
          cur = 1 - cur;

          tach_op (be, gemm, TRUE, FALSE, G, I, N, 1.0f, layer->dgates, G, x_t, ldx,
                   1.0f, dwx, I);
          tach_op (be, bias_grad, layer->dgates, db, N, G, 1.0f);
          if (want_dx)
            tach_op (be, gemm, FALSE, FALSE, N, I, G, 1.0f, layer->dgates, G, wx, I,
                     1.0f, dx + step_offset (d, t, I), ldx);
          if (k > 0)
            {
              float *dh_prev = layer->dh + step_offset (d, tp, DH) + dir * H;

              tach_op (be, gemm, TRUE, FALSE, G, H, N, 1.0f, layer->dgates, G, h_prev, ldh,
                       1.0f, dwh, H);
              tach_op (be, gemm, FALSE, FALSE, N, H, G, 1.0f, layer->dgates, G, wh, H,
                       1.0f, dh_prev, ldh);
            }
        }
    }
}

void
tach_lstm_layer_forward (TachLstmLayer *layer, const float *x, const float *w, float *y)
{
  TachBackend *be = layer->be;

  layer->setup_ms = 0.0;
  if (layer->call_setup == TACH_CALL_SETUP_PER_CALL || !layer->built)
    {
      gint64 start = g_get_monotonic_time ();

      /* Keras predict rebuilds its plan and buffers on every call. */
      layer_release (layer);
      layer_build (layer);
      layer->setup_ms = (double) (g_get_monotonic_time () - start) / 1000.0;
    }
  if (!tach_backend_ok (be))
    return;
  if (layer->rnn == TACH_RNN_FUSED)
    tach_op (be, lstm_fwd, layer->plan, x, w, y, layer->reserve);
  else
    unrolled_forward (layer, x, w, y);
}

double
tach_lstm_layer_setup_ms (TachLstmLayer *layer)
{
  return layer->setup_ms;
}

void
tach_lstm_layer_backward (TachLstmLayer *layer, const float *x, const float *w,
                          const float *y, const float *dy, float *dx, float *dw)
{
  TachBackend *be = layer->be;

  if (!tach_backend_ok (be))
    return;
  if (!layer->built || !layer->desc.training)
    {
      tach_backend_fail (be, TACH_ERROR_INVALID_CONFIG,
                         "LSTM backward needs a training layer and a forward call first");
      return;
    }
  if (layer->rnn == TACH_RNN_FUSED)
    tach_op (be, lstm_bwd, layer->plan, x, w, y, dy, layer->reserve,
             layer->desc.need_dx ? dx : NULL, dw);
  else
    unrolled_backward (layer, x, w, y, dy, dx, dw);
}
