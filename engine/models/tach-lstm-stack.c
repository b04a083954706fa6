/* tach-lstm-stack.c: stacked LSTM layers over TachLstmLayer. */
#include "tach-lstm-stack.h"

/* A layer's weights draw from a counter stream of their own: layer 0
 * keeps the plain layer's, so one layer is exactly the old model. */
#define STACK_LAYER_INDEX(tensor_index, l) ((tensor_index) + ((guint64) (l) << 32))

struct _TachLstmStack {
  TachBackend    *be;          /* borrowed */
  TachLstmDesc    desc;
  int             layers;
  TachLstmLayer **layer;       /* owned, [layers] */
  float         **between;     /* device, [layers - 1]: each inner layer's output */
  float         **dbetween;    /* device, [layers - 1]: its gradient (training) */
};

void
tach_lstm_stack_layer_desc (const TachLstmDesc *desc, int l, TachLstmDesc *out)
{
  *out = *desc;
  if (l > 0)
    {
      out->I = desc->dirs * desc->H;
      /* The layer below needs its output's gradient. */
      out->need_dx = desc->training;
    }
}

size_t
tach_lstm_stack_param_offset (const TachLstmDesc *desc, int l)
{
  size_t offset = 0;

  for (int k = 0; k < l; k++)
    {
      TachLstmDesc d;

      tach_lstm_stack_layer_desc (desc, k, &d);
      offset += tach_lstm_param_count (&d);
    }
  return offset;
}

size_t
tach_lstm_stack_param_count (const TachLstmDesc *desc, int layers)
{
  return tach_lstm_stack_param_offset (desc, layers);
}

void
tach_lstm_stack_init_params (const TachLstmDesc *desc, int layers, guint64 seed,
                             guint64 tensor_index, float *host_w)
{
  for (int l = 0; l < layers; l++)
    {
      TachLstmDesc d;

      tach_lstm_stack_layer_desc (desc, l, &d);
      tach_lstm_init_params (&d, seed, STACK_LAYER_INDEX (tensor_index, l),
                             host_w + tach_lstm_stack_param_offset (desc, l));
    }
}

double
tach_lstm_stack_flops (const TachLstmDesc *desc, int layers, gboolean backward)
{
  double flops = 0.0;

  for (int l = 0; l < layers; l++)
    {
      TachLstmDesc d;

      tach_lstm_stack_layer_desc (desc, l, &d);
      flops += tach_lstm_flops (&d, backward);
    }
  return flops;
}

guint64
tach_lstm_stack_between_bytes (const TachLstmDesc *desc, int layers)
{
  guint64 seq = (guint64) desc->T * (guint64) desc->N * desc->dirs * desc->H * sizeof (float);

  return (guint64) MAX (layers - 1, 0) * seq * (desc->training ? 2 : 1);
}

TachLstmStack *
tach_lstm_stack_new (TachBackend *be, const TachLstmDesc *desc, int layers, TachRnn rnn,
                     TachCallSetup call_setup)
{
  TachLstmStack *stack = g_new0 (TachLstmStack, 1);
  size_t seq = (size_t) desc->T * desc->N * desc->dirs * desc->H * sizeof (float);

  g_return_val_if_fail (layers >= 1, NULL);
  stack->be = be;
  stack->desc = *desc;
  stack->layers = layers;
  stack->layer = g_new0 (TachLstmLayer *, layers);
  stack->between = g_new0 (float *, layers);
  stack->dbetween = g_new0 (float *, layers);
  for (int l = 0; l < layers; l++)
    {
      TachLstmDesc d;

      tach_lstm_stack_layer_desc (desc, l, &d);
      stack->layer[l] = tach_lstm_layer_new (be, &d, rnn, call_setup);
    }
  for (int l = 0; l + 1 < layers; l++)
    {
      stack->between[l] = tach_backend_alloc (be, seq);
      if (desc->training)
        stack->dbetween[l] = tach_backend_alloc (be, seq);
    }
  return stack;
}

void
tach_lstm_stack_free (TachLstmStack *stack)
{
  if (stack == NULL)
    return;
  for (int l = 0; l < stack->layers; l++)
    {
      tach_lstm_layer_free (stack->layer[l]);
      tach_backend_dealloc (stack->be, stack->between[l]);
      tach_backend_dealloc (stack->be, stack->dbetween[l]);
    }
  g_free (stack->layer);
  g_free (stack->between);
  g_free (stack->dbetween);
  g_free (stack);
}

/* Layer @l's input and output. */
static const float *
layer_input (TachLstmStack *stack, int l, const float *x)
{
  return l == 0 ? x : stack->between[l - 1];
}

static float *
layer_output (TachLstmStack *stack, int l, float *y)
{
  return l == stack->layers - 1 ? y : stack->between[l];
}

void
tach_lstm_stack_forward (TachLstmStack *stack, const float *x, const float *w, float *y)
{
  for (int l = 0; l < stack->layers; l++)
    tach_lstm_layer_forward (stack->layer[l], layer_input (stack, l, x),
                             w + tach_lstm_stack_param_offset (&stack->desc, l),
                             layer_output (stack, l, y));
}

void
tach_lstm_stack_backward (TachLstmStack *stack, const float *x, const float *w,
                          const float *y, const float *dy, float *dx, float *dw)
{
  for (int l = stack->layers - 1; l >= 0; l--)
    {
      size_t offset = tach_lstm_stack_param_offset (&stack->desc, l);
      const float *dy_l = l == stack->layers - 1 ? dy : stack->dbetween[l];
      float *dx_l = l == 0 ? dx : stack->dbetween[l - 1];

      tach_lstm_layer_backward (stack->layer[l], layer_input (stack, l, x), w + offset,
                                layer_output (stack, l, (float *) y), dy_l, dx_l, dw + offset);
    }
}

double
tach_lstm_stack_setup_ms (TachLstmStack *stack)
{
  double ms = 0.0;

  for (int l = 0; l < stack->layers; l++)
    ms += tach_lstm_layer_setup_ms (stack->layer[l]);
  return ms;
}
