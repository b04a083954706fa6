/* tach-lstm-stack.c: stacked LSTM layers over TachLstmLayer. */
#include <string.h>

#include "tach-lstm-stack.h"

/* A layer's weights draw from a counter stream of their own: layer 0
 * keeps the plain layer's, so one layer is exactly the old model. */
#define STACK_LAYER_INDEX(tensor_index, l) ((tensor_index) + ((guint64) (l) << 32))

struct _TachLstmBlock {
  TachLstmDesc    desc;
  int             layers;
  size_t          floats;
  size_t          align;       /* bytes: the largest of the layers' */
  size_t         *offset;      /* owned, [layers] */
  TachLstmWeightMap *maps;    /* owned, [layers] */
};

struct _TachLstmStack {
  TachBackend    *be;          /* borrowed */
  TachLstmDesc    desc;
  int             layers;
  size_t         *offset;      /* owned, [layers]: each layer's weights in the block */
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
      /* Its rows are the layer below's outputs. */
      out->rows_repeat = FALSE;
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

TachLstmBlock *
tach_lstm_block_new (TachBackend *be, const TachLstmDesc *desc, int layers, TachRnn rnn,
                     GError **error)
{
  g_autoptr (TachLstmBlock) block = g_new0 (TachLstmBlock, 1);

  g_return_val_if_fail (layers >= 1, NULL);
  block->desc = *desc;
  block->layers = layers;
  block->offset = g_new0 (size_t, layers);
  block->maps = g_new0 (TachLstmWeightMap, layers);
  block->align = sizeof (float);
  for (int l = 0; l < layers; l++)
    {
      TachLstmDesc d;
      size_t step;

      tach_lstm_stack_layer_desc (desc, l, &d);
      if (!tach_lstm_layer_weight_map (be, &d, rnn, &block->maps[l]))
        {
          tach_backend_take_error (be, error);
          return NULL;
        }
      /* Each layer's start aligned as its layout asks, relative to a block
       * start that is aligned to the largest of them. */
      step = block->maps[l].align / sizeof (float);
      block->offset[l] = (block->floats + step - 1) / step * step;
      block->floats = block->offset[l] + block->maps[l].floats;
      block->align = MAX (block->align, block->maps[l].align);
    }
  return g_steal_pointer (&block);
}

size_t
tach_lstm_block_floats (const TachLstmBlock *block)
{
  return block->floats;
}

size_t
tach_lstm_block_align (const TachLstmBlock *block)
{
  return block->align;
}

size_t
tach_lstm_block_offset (const TachLstmBlock *block, int l)
{
  g_return_val_if_fail (l >= 0 && l < block->layers, 0);
  return block->offset[l];
}

const TachLstmWeightMap *
tach_lstm_block_weight_map (const TachLstmBlock *block, int l)
{
  g_return_val_if_fail (l >= 0 && l < block->layers, NULL);
  return &block->maps[l];
}

void
tach_lstm_block_init (const TachLstmBlock *block, guint64 seed, guint64 tensor_index,
                      float *host)
{
  g_autofree float *canon = g_new (float, tach_lstm_stack_param_count (&block->desc,
                                                                     block->layers));

  tach_lstm_stack_init_params (&block->desc, block->layers, seed, tensor_index, canon);
  tach_lstm_block_from_canonical (block, canon, host);
}

void
tach_lstm_block_from_canonical (const TachLstmBlock *block, const float *canon, float *host)
{
  memset (host, 0, block->floats * sizeof (float));
  for (int l = 0; l < block->layers; l++)
    {
      TachLstmDesc d;

      tach_lstm_stack_layer_desc (&block->desc, l, &d);
      tach_lstm_weight_map_scatter (&d, &block->maps[l],
                                    canon + tach_lstm_stack_param_offset (&block->desc, l),
                                    host + block->offset[l]);
    }
}

void
tach_lstm_block_to_canonical (const TachLstmBlock *block, const float *host, float *canon)
{
  for (int l = 0; l < block->layers; l++)
    {
      TachLstmDesc d;

      tach_lstm_stack_layer_desc (&block->desc, l, &d);
      tach_lstm_weight_map_gather (&d, &block->maps[l], host + block->offset[l],
                                   canon + tach_lstm_stack_param_offset (&block->desc, l));
    }
}

void
tach_lstm_block_free (TachLstmBlock *block)
{
  if (block == NULL)
    return;
  g_free (block->offset);
  g_free (block->maps);
  g_free (block);
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
                     TachCallSetup call_setup, const TachLstmBlock *block)
{
  TachLstmStack *stack = g_new0 (TachLstmStack, 1);
  size_t seq = (size_t) desc->T * desc->N * desc->dirs * desc->H * sizeof (float);

  g_return_val_if_fail (layers >= 1, NULL);
  g_return_val_if_fail (block == NULL || block->layers == layers, NULL);
  stack->be = be;
  stack->desc = *desc;
  stack->layers = layers;
  stack->layer = g_new0 (TachLstmLayer *, layers);
  stack->offset = g_new0 (size_t, layers);
  for (int l = 0; l < layers; l++)
    stack->offset[l] = block != NULL ? block->offset[l] : tach_lstm_stack_param_offset (desc, l);
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
  g_free (stack->offset);
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
                             w + stack->offset[l],
                             layer_output (stack, l, y));
}

void
tach_lstm_stack_backward (TachLstmStack *stack, const float *x, const float *w,
                          const float *y, const float *dy, float *dx, float *dw)
{
  for (int l = stack->layers - 1; l >= 0; l--)
    {
      size_t offset = stack->offset[l];
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
