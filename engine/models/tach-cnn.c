/* tach-cnn.c: workload W3, the MNIST CNN of the tf.estimator vs tf.keras
 * fit report.
 *
 *   x (N, C, H, W) in [0, 1]
 *   -> conv 5x5x32 same + ReLU -> max-pool 2x2
 *   -> conv 5x5x64 same + ReLU -> max-pool 2x2
 *   -> head: flatten (64 * H/4 * W/4; 3136 at 28x28) or global average
 *      pool (64)
 *   -> dense 1024 + ReLU -> dropout 0.4 -> dense 10 -> softmax CE (mean)
 *   SGD lr 0.001 by default, batch 256.
 * Those are the report's shapes; --filters sets the two blocks' filter
 * counts (32,64) and --dense the hidden dense width (1024).
 *
 * Data: --data (an MNIST-format folder or images file), else Debian's
 * Fashion-MNIST when installed and --input is 28x28x1, else seeded
 * synthetic images that can be learnt (one blurred prototype per class plus
 * noise).  The dropout mask is counter-based, keyed by (seed, step), so it is
 * the same whatever the mode (and a data-parallel rank draws its shard's
 * part of the global batch's mask); in a replayed graph the backend adds the
 * runner's step offset to the step captured (TachBackend.step_offset).
 *
 * launch=graph: prepare gets the batch (the feeder hands out fixed
 * buffers), step is all device work on fixed buffers.
 */
#include <math.h>
#include <string.h>

#include <inttypes.h>
#include <glib/gi18n-lib.h>

#include "tach-feeder.h"
#include "tach-error-private.h"
#include "tach-layers.h"
#include "tach-params.h"
#include "tach-model.h"
#include "tach-rand.h"
#include "tach-cnn-data.h"

#define CNN_KS 5
#define CNN_PAD 2
#define CNN_DROPOUT 0.4f
#define CNN_DEFAULT_LR 0.001

typedef struct {
  TachBackend   *be;          /* borrowed */
  int            batch, h, w, c, h2, w2, h4, w4, features;
  int            k1, k2, dense;  /* --filters and --dense */
  TachHead       head;
  guint64        seed;
  TachCnnData        data;
  TachDataset    dataset;
  TachFeeder    *feeder;
  const float   *x;             /* this step's batch (device, borrowed from the feeder) */
  const int32_t *labels;
  TachParams    *params;
  guint          p_c1w, p_c1b, p_c2w, p_c2b, p_d1w, p_d1b, p_d2w, p_d2b;
  guint          unit[4];      /* shard=all's: conv1, conv2, dense1, dense2 */
  TachConvDesc   block1, block2;  /* conv + ReLU + max pool each */
  TachConvPlan  *conv1, *conv2;

  /* device activations and gradients */
  /* p1 and dp1 in the backend's layout (block1.y_native, block2.x_native) */
  float   *y1, *p1, *y2, *p2, *g;  /* conv1 out, pool1, conv2 out, pool2, gap */
  int32_t *idx1, *idx2;
  float   *h1, *d1, *logits;       /* dense1 + ReLU, after dropout, dense2 */
  float   *dlogits, *dd1, *dfeat, *dp2, *dy2, *dp1, *dy1;
  float   *loss;                   /* scratch when the runner wants no loss */
  float   *acc;                    /* evaluation */
  int32_t *eval_labels;
  float   *eval_x;
} TachCnn;

/* --------------------------------------------------------------- shapes */

typedef struct {
  guint64 h, w, c, h2, w2, h4, w4, features;
  guint64 k1, k2, dense;  /* --filters and --dense */
} CnnShape;

static void
cnn_shape (const TachConfig *config, guint64 h, guint64 w, guint64 c, CnnShape *s)
{
  s->k1 = config->filters[0];
  s->k2 = config->filters[1];
  s->dense = config->dense;
  s->h = h;
  s->w = w;
  s->c = c;
  s->h2 = h / 2;
  s->w2 = w / 2;
  s->h4 = s->h2 / 2;
  s->w4 = s->w2 / 2;
  s->features = config->head == TACH_HEAD_GAP ? s->k2 : s->k2 * s->h4 * s->w4;
}

static double
cnn_param_count (const CnnShape *s)
{
  return (double) s->k1 * s->c * CNN_KS * CNN_KS + s->k1
         + (double) s->k2 * s->k1 * CNN_KS * CNN_KS + s->k2
         + (double) s->dense * s->features + s->dense
         + (double) CNN_CLASSES * s->dense + CNN_CLASSES;
}

/* Floats of activations and their gradients for a batch of @n. */
static double
cnn_activation_floats (const CnnShape *s, double n)
{
  double y1 = n * s->k1 * s->h * s->w;
  double p1 = n * s->k1 * s->h2 * s->w2;
  double y2 = n * s->k2 * s->h2 * s->w2;
  double p2 = n * s->k2 * s->h4 * s->w4;
  double dense = n * (3.0 * s->dense + 2.0 * CNN_CLASSES + 2.0 * s->features);

  /* Each conv output and pool output with its gradient and pool indices;
   * the ReLU runs in place. */
  return 2 * y1 + 3 * p1 + 2 * y2 + 3 * p2 + dense;
}

/* ---------------------------------------------------------------- model */

static void
cnn_free (TachModel *model)
{
  TachCnn *self = (TachCnn *) model;
  TachBackend *be;
  float **bufs[] = { &self->y1, &self->p1, &self->y2, &self->p2, &self->g, &self->h1, &self->d1,
                     &self->logits, &self->dlogits, &self->dd1, &self->dfeat, &self->dp2,
                     &self->dy2, &self->dp1, &self->dy1, &self->loss, &self->acc, &self->eval_x };

  if (self == NULL)
    return;
  be = self->be;
  for (guint i = 0; i < G_N_ELEMENTS (bufs); i++)
    tach_backend_dealloc (be, *bufs[i]);
  tach_backend_dealloc (be, self->idx1);
  tach_backend_dealloc (be, self->idx2);
  tach_backend_dealloc (be, self->eval_labels);
  tach_conv_plan_free (be, self->conv1);
  tach_conv_plan_free (be, self->conv2);
  tach_params_free (self->params);
  tach_feeder_free (self->feeder);
  tach_cnn_data_clear (&self->data);
  g_free (self);
}

static void
init_conv (TachParams *p, guint wi, guint bi, int k, int c, guint64 seed)
{
  /* Glorot uniform over a conv kernel, as Keras initialises Conv2D. */
  double fan_in = (double) c * CNN_KS * CNN_KS, fan_out = (double) k * CNN_KS * CNN_KS;

  tach_init_uniform (tach_params_host (p, wi), tach_params_count (p, wi),
                     (float) sqrt (6.0 / (fan_in + fan_out)), seed, wi);
  memset (tach_params_host (p, bi), 0, tach_params_count (p, bi) * sizeof (float));
}

static void *
alloc_floats (TachBackend *be, double n)
{
  return tach_backend_alloc (be, (size_t) n * sizeof (float));
}

static TachModel *
cnn_create (TachBackend *be, const TachConfig *config, GError **error)
{
  TachCnn *self = g_new0 (TachCnn, 1);
  TachParams *p;
  CnnShape s;
  double n;

  self->be = be;
  self->batch = (int) config->batch;
  self->head = config->head;
  self->seed = config->seed;
  if (!tach_cnn_data_load (&self->data, config, error))
    {
      /* A data file that cannot be read or used: choose another. */
      tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                   TACH_KNOB_DATA, TACH_KNOB_DATA, NULL, NULL);
      goto fail;
    }

  cnn_shape (config, self->data.h, self->data.w, self->data.c, &s);
  n = self->batch;
  if (s.h4 < 1 || s.w4 < 1)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("Images of %" PRIu64 "x%" PRIu64 " are too small for "
                     "two 2x2 max-pools: use at least {input=4x4x1}"), s.h, s.w);
      tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                   tach_cnn_data_path (config) != NULL ? TACH_KNOB_DATA
                                                                       : TACH_KNOB_INPUT,
                                   TACH_KNOB_INPUT, NULL, NULL);
      goto fail;
    }
  if (n * MAX (s.k1, s.c) * s.h * s.w > G_MAXINT || n * s.k2 * s.h2 * s.w2 > G_MAXINT)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("{input=%" PRIu64 "x%" PRIu64 "x%" PRIu64 "} with {batch=%u} and "
                     "{filters=%u,%u} is too large for one step: lower {batch} or {filters}, "
                     "or use a smaller {input}"),
                   s.h, s.w, s.c, config->batch, config->filters[0], config->filters[1]);
      tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                   TACH_KNOB_BATCH, TACH_KNOB_BATCH, NULL, NULL);
      goto fail;
    }
  if ((double) s.dense * s.features > G_MAXINT || n * s.dense > G_MAXINT)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("{dense=%u} over %" PRIu64 " features ({input}, {filters}, {head}) with "
                     "{batch=%u} is too large for one step: lower {dense} or {batch}, use "
                     "{head=gap} or a smaller {input}"),
                   config->dense, s.features, config->batch);
      /* The flatten head is what makes the dense layer's input large. */
      if (config->head == TACH_HEAD_FLATTEN)
        tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                     TACH_KNOB_DENSE, TACH_KNOB_HEAD, "gap", NULL);
      else
        tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                     TACH_KNOB_DENSE, TACH_KNOB_DENSE, NULL, NULL);
      goto fail;
    }
  if (self->data.n_train < config->batch)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("cnn: %" PRIu64 " training images are fewer than one batch "
                     "({batch=%u}): lower {batch}"), self->data.n_train, config->batch);
      {
        g_autofree char *fits = g_strdup_printf ("%" PRIu64, (guint64) self->data.n_train);

        /* The fix: the largest batch the images fill. */
        tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                     TACH_KNOB_BATCH, TACH_KNOB_BATCH,
                                     self->data.n_train > 0 ? fits : NULL, NULL);
      }
      goto fail;
    }
  self->h = (int) s.h, self->w = (int) s.w, self->c = (int) s.c;
  self->h2 = (int) s.h2, self->w2 = (int) s.w2, self->h4 = (int) s.h4, self->w4 = (int) s.w4;
  self->features = (int) s.features;
  self->k1 = (int) s.k1, self->k2 = (int) s.k2, self->dense = (int) s.dense;

  self->dataset = (TachDataset) {
    .n_samples = self->data.n_train,
    .x_elems = (size_t) s.c * s.h * s.w,
    .x_type = TACH_DTYPE_F32,
    .y_elems = 1,
    .y_type = TACH_DTYPE_I32,
    .fill = self->data.train != NULL ? tach_cnn_fill_images : tach_cnn_fill_synthetic,
    .data = &self->data,
  };
  self->feeder = tach_feeder_new (be, &self->dataset, config->feed, config->batch, error);
  if (self->feeder == NULL)
    goto fail;
  if (config->launch == TACH_LAUNCH_GRAPH && !tach_feeder_fix_batch (self->feeder, error))
    goto fail;

  p = self->params = tach_params_new ();
  self->unit[0] = tach_params_unit (p, FALSE);
  self->p_c1w = tach_params_add (p, "conv1.w", (size_t) self->k1 * s.c * CNN_KS * CNN_KS,
                                 TRUE);
  self->p_c1b = tach_params_add (p, "conv1.b", self->k1, TRUE);
  self->unit[1] = tach_params_unit (p, FALSE);
  self->p_c2w = tach_params_add (p, "conv2.w",
                                 (size_t) self->k2 * self->k1 * CNN_KS * CNN_KS, TRUE);
  self->p_c2b = tach_params_add (p, "conv2.b", self->k2, TRUE);
  self->unit[2] = tach_params_unit (p, FALSE);
  self->p_d1w = tach_params_add (p, "dense1.w", (size_t) self->dense * s.features, TRUE);
  self->p_d1b = tach_params_add (p, "dense1.b", self->dense, TRUE);
  self->unit[3] = tach_params_unit (p, FALSE);
  self->p_d2w = tach_params_add (p, "dense2.w", (size_t) CNN_CLASSES * self->dense, TRUE);
  self->p_d2b = tach_params_add (p, "dense2.b", CNN_CLASSES, TRUE);
  if (!tach_params_alloc (p, be, error))
    goto fail;
  init_conv (p, self->p_c1w, self->p_c1b, self->k1, self->c, config->seed);
  init_conv (p, self->p_c2w, self->p_c2b, self->k2, self->k1, config->seed);
  tach_init_glorot (tach_params_host (p, self->p_d1w), self->dense, self->features,
                    config->seed, self->p_d1w);
  memset (tach_params_host (p, self->p_d1b), 0, self->dense * sizeof (float));
  tach_init_glorot (tach_params_host (p, self->p_d2w), CNN_CLASSES, self->dense,
                    config->seed, self->p_d2w);
  memset (tach_params_host (p, self->p_d2b), 0, CNN_CLASSES * sizeof (float));
  tach_params_upload (p);
  tach_params_set_optimizer (p, config->optimizer,
                             config->lr > 0.0 ? config->lr : CNN_DEFAULT_LR);

  /* Each conv + ReLU + pool is one block, which a backend may fuse and
   * keep in its own layouts between the three. */
  self->block1 = (TachConvDesc) { .N = self->batch, .C = self->c, .H = self->h, .W = self->w,
                              .K = self->k1, .R = CNN_KS, .S = CNN_KS, .pad_h = CNN_PAD,
                              .pad_w = CNN_PAD, .need_dx = FALSE,
                              .precision = config->precision, .block = TRUE,
                              .y_native = TRUE };
  self->block2 = (TachConvDesc) { .N = self->batch, .C = self->k1, .H = self->h2, .W = self->w2,
                              .K = self->k2, .R = CNN_KS, .S = CNN_KS, .pad_h = CNN_PAD,
                              .pad_w = CNN_PAD, .need_dx = TRUE,
                              .precision = config->precision, .block = TRUE,
                              .x_native = TRUE };
  self->conv1 = tach_conv_plan_new (be, &self->block1);
  self->conv2 = tach_conv_plan_new (be, &self->block2);

  self->y1 = alloc_floats (be, n * self->k1 * s.h * s.w);
  self->dy1 = alloc_floats (be, n * self->k1 * s.h * s.w);
  self->p1 = alloc_floats (be, n * self->k1 * s.h2 * s.w2);
  self->dp1 = alloc_floats (be, n * self->k1 * s.h2 * s.w2);
  self->idx1 = tach_backend_alloc (be, (size_t) (n * self->k1 * s.h2 * s.w2) * sizeof (int32_t));
  self->y2 = alloc_floats (be, n * self->k2 * s.h2 * s.w2);
  self->dy2 = alloc_floats (be, n * self->k2 * s.h2 * s.w2);
  self->p2 = alloc_floats (be, n * self->k2 * s.h4 * s.w4);
  self->dp2 = alloc_floats (be, n * self->k2 * s.h4 * s.w4);
  self->idx2 = tach_backend_alloc (be, (size_t) (n * self->k2 * s.h4 * s.w4) * sizeof (int32_t));
  if (self->head == TACH_HEAD_GAP)
    {
      self->g = alloc_floats (be, n * self->k2);
      self->dfeat = alloc_floats (be, n * self->k2);
    }
  self->h1 = alloc_floats (be, n * self->dense);
  self->d1 = alloc_floats (be, n * self->dense);
  self->dd1 = alloc_floats (be, n * self->dense);
  self->logits = alloc_floats (be, n * CNN_CLASSES);
  self->dlogits = alloc_floats (be, n * CNN_CLASSES);
  self->loss = alloc_floats (be, 1);
  if (!tach_backend_take_error (be, error))
    goto fail;
  return (TachModel *) self;

fail:
  cnn_free ((TachModel *) self);
  return NULL;
}

/* Where this rank's dropout mask lies in the global batch's: rank r of N
 * takes the r-th batch of the global one (the feeder's shard; with
 * accumulation, micro-batch j the (j N + r)-th), so its elements are those
 * one process at batch N B (k N B) draws for the same samples, and N ranks
 * (k micro-batches) drop what one process drops. */
static guint64
cnn_dropout_first (const TachCnn *self)
{
  return tach_backend_batch_place (self->be) * self->batch * self->dense;
}

/* The forward pass up to the logits; dropout only when training. */
static void
cnn_forward (TachCnn *self, const float *x, gboolean training, guint64 step)
{
  TachBackend *be = self->be;
  TachParams *p = self->params;
  size_t n = (size_t) self->batch;
  const float *feat;

  /* Under shard=all each layer is gathered before it computes and given
   * back after (tach-params.h); otherwise need and done do nothing. */
  tach_params_need (p, self->unit[0], FALSE);
  tach_conv_block_forward (be, self->conv1, &self->block1, x, tach_params_data (p, self->p_c1w),
                           tach_params_data (p, self->p_c1b), self->y1, self->idx1, self->p1);
  tach_params_done (p, self->unit[0], FALSE);
  tach_params_need (p, self->unit[1], FALSE);
  tach_conv_block_forward (be, self->conv2, &self->block2, self->p1,
                           tach_params_data (p, self->p_c2w), tach_params_data (p, self->p_c2b),
                           self->y2, self->idx2, self->p2);
  tach_params_done (p, self->unit[1], FALSE);
  feat = self->p2;
  if (self->head == TACH_HEAD_GAP)
    {
      tach_op (be, avgpool_fwd, self->p2, self->g, self->batch, self->k2, self->h4 * self->w4);
      feat = self->g;
    }
  /* The large dense layer follows the run's precision; dense2 (1024 x 10)
   * is too small for bf16 to pay for its rounding. */
  tach_params_need (p, self->unit[2], FALSE);
  tach_dense_forward_prec (be, self->block1.precision, feat, tach_params_data (p, self->p_d1w),
                           tach_params_data (p, self->p_d1b), self->h1, self->batch,
                           self->features, self->dense);
  tach_params_done (p, self->unit[2], FALSE);
  tach_op (be, relu_fwd, self->h1, self->h1, n * self->dense);
  if (training)
    tach_op (be, dropout_fwd, self->h1, self->d1, n * self->dense, CNN_DROPOUT, self->seed,
             TACH_RAND_COUNTER (TACH_RAND_STREAM_DROPOUT, step), cnn_dropout_first (self));
  tach_params_need (p, self->unit[3], FALSE);
  tach_dense_forward (be, training ? self->d1 : self->h1, tach_params_data (p, self->p_d2w),
                      tach_params_data (p, self->p_d2b), self->logits, self->batch, self->dense,
                      CNN_CLASSES);
  tach_params_done (p, self->unit[3], FALSE);
}

static gboolean
cnn_prepare (TachModel *model, TachStepCtx *ctx, GError **error)
{
  TachCnn *self = (TachCnn *) model;
  const void *xv = NULL, *yv = NULL;

  if (!tach_feeder_next (self->feeder, ctx->step, &xv, &yv, &ctx->feed_ms, error))
    return FALSE;
  self->x = xv;
  self->labels = yv;
  return TRUE;
}

static gboolean
cnn_step (TachModel *model, TachStepCtx *ctx, GError **error)
{
  TachCnn *self = (TachCnn *) model;
  TachBackend *be = self->be;
  TachParams *p = self->params;
  const float *xv = self->x;
  const int32_t *labels = self->labels;
  const float *feat;
  float *dfeat;
  size_t n = (size_t) self->batch;

  cnn_forward (self, xv, TRUE, ctx->step);
  tach_op (be, softmax_ce, self->logits, labels, self->batch, CNN_CLASSES,
           ctx->loss_slot != NULL ? ctx->loss_slot : self->loss, self->dlogits);
  if (ctx->acc_slot != NULL)
    tach_op (be, accuracy, self->logits, labels, self->batch, CNN_CLASSES, ctx->acc_slot);

  /* Backward; every gradient is overwritten, so nothing needs zeroing. */
  tach_params_need (p, self->unit[3], TRUE);
  tach_dense_backward (be, self->d1, tach_params_data (p, self->p_d2w), self->dlogits, self->dd1,
                       tach_params_grad (p, self->p_d2w), tach_params_grad (p, self->p_d2b),
                       self->batch, self->dense, CNN_CLASSES, 0.0f);
  tach_params_grad_ready (p, self->p_d2b);
  tach_params_grad_ready (p, self->p_d2w);
  tach_params_done (p, self->unit[3], TRUE);
  tach_op (be, dropout_bwd, self->dd1, self->dd1, n * self->dense, CNN_DROPOUT, self->seed,
           TACH_RAND_COUNTER (TACH_RAND_STREAM_DROPOUT, ctx->step), cnn_dropout_first (self));
  tach_op (be, relu_bwd, self->h1, self->dd1, self->dd1, n * self->dense);
  feat = self->head == TACH_HEAD_GAP ? self->g : self->p2;
  dfeat = self->head == TACH_HEAD_GAP ? self->dfeat : self->dp2;
  tach_params_need (p, self->unit[2], TRUE);
  tach_dense_backward_prec (be, self->block1.precision, feat, tach_params_data (p, self->p_d1w),
                            self->dd1, dfeat, tach_params_grad (p, self->p_d1w),
                            tach_params_grad (p, self->p_d1b), self->batch, self->features,
                            self->dense, 0.0f);
  tach_params_grad_ready (p, self->p_d1b);
  tach_params_grad_ready (p, self->p_d1w);
  tach_params_done (p, self->unit[2], TRUE);
  if (self->head == TACH_HEAD_GAP)
    tach_op (be, avgpool_bwd, self->dfeat, self->dp2, self->batch, self->k2, self->h4 * self->w4);
  tach_params_need (p, self->unit[1], TRUE);
  tach_conv_block_backward (be, self->conv2, &self->block2, self->p1,
                            tach_params_data (p, self->p_c2w), self->y2, self->idx2, self->dp2,
                            self->dy2, self->dp1, tach_params_grad (p, self->p_c2w),
                            tach_params_grad (p, self->p_c2b));
  tach_params_grad_ready (p, self->p_c2b);
  tach_params_grad_ready (p, self->p_c2w);
  tach_params_done (p, self->unit[1], TRUE);
  tach_params_need (p, self->unit[0], TRUE);
  tach_conv_block_backward (be, self->conv1, &self->block1, xv, tach_params_data (p, self->p_c1w),
                            self->y1, self->idx1, self->dp1, self->dy1, NULL,
                            tach_params_grad (p, self->p_c1w), tach_params_grad (p, self->p_c1b));
  tach_params_grad_ready (p, self->p_c1b);
  tach_params_grad_ready (p, self->p_c1w);
  tach_params_done (p, self->unit[0], TRUE);
  tach_params_update (p);

  return tach_backend_take_error (be, error);
}

/* Test-set accuracy, forward only, in batches of the training size; the
 * last partial batch is padded and only its real rows are counted.  Each
 * batch reports progress, and a stop request ends it after that batch. */
static double
evaluate_whole (TachModel *model, TachEvalCtx *ctx, GError **error)
{
  TachCnn *self = (TachCnn *) model;
  TachBackend *be = self->be;
  const TachImageSet *test = self->data.test;
  size_t x_elems = self->dataset.x_elems, n = (size_t) self->batch;
  g_autofree double *xd = NULL;
  g_autofree float *xf = NULL;
  g_autofree int32_t *yl = NULL;
  double correct = 0;

  if (test == NULL)
    return NAN;
  if (self->eval_x == NULL)
    {
      self->eval_x = alloc_floats (be, (double) n * x_elems);
      self->eval_labels = tach_backend_alloc (be, n * sizeof (int32_t));
      self->acc = alloc_floats (be, 1);
    }
  xd = g_new (double, x_elems);
  xf = g_new (float, n * x_elems);
  yl = g_new (int32_t, n);
  /* The size first, and a stop asked for as the steps ended. */
  if (ctx != NULL && ctx->progress != NULL && !ctx->progress (ctx->data, 0, test->n))
    return NAN;

  for (size_t start = 0; start < test->n && tach_backend_ok (be); start += n)
    {
      size_t rows = MIN (n, test->n - start);
      float acc = 0;

      for (size_t r = 0; r < n; r++)
        {
          size_t i = start + (r < rows ? r : 0);

          tach_cnn_image_to_chw (test, i, xd);
          for (size_t e = 0; e < x_elems; e++)
            xf[r * x_elems + e] = (float) xd[e];
          yl[r] = test->labels[i];
        }
      tach_backend_upload (be, self->eval_x, xf, n * x_elems * sizeof (float));
      tach_backend_upload (be, self->eval_labels, yl, n * sizeof (int32_t));
      cnn_forward (self, self->eval_x, FALSE, 0);
      tach_op (be, accuracy, self->logits, self->eval_labels, (int) rows, CNN_CLASSES, self->acc);
      tach_backend_download (be, &acc, self->acc, sizeof acc);
      correct += (double) acc * rows;
      if (ctx != NULL && ctx->progress != NULL && tach_backend_ok (be)
          && !ctx->progress (ctx->data, start + rows, test->n))
        return NAN;
    }
  if (!tach_backend_take_error (be, error))
    return NAN;
  return correct / test->n;
}

/* Under shard=all every layer is gathered once, before any batch, kept
 * through the evaluation and given back after it (FSDP's
 * summon_full_params): no rank's evaluation then waits for another's, and
 * a stop may end it on each rank after a different batch. */
static double
cnn_evaluate (TachModel *model, TachEvalCtx *ctx, GError **error)
{
  TachCnn *self = (TachCnn *) model;
  double accuracy;

  if (self->data.test == NULL)
    return NAN;
  tach_params_gather_all (self->params, TRUE);
  accuracy = evaluate_whole (model, ctx, error);
  tach_params_gather_all (self->params, FALSE);
  return accuracy;
}

static guint64
cnn_items_per_step (TachModel *model)
{
  return (guint64) ((TachCnn *) model)->batch;
}

static double
conv_flops (double n, double c, double k, double h, double w)
{
  return 2.0 * n * k * c * CNN_KS * CNN_KS * h * w;
}

static double
cnn_flops_per_step (TachModel *model)
{
  TachCnn *self = (TachCnn *) model;
  double n = self->batch;
  /* Conv forward, then backward: conv1 its weight gradient only, conv2 its
   * weight and input gradients.  Counted as a direct convolution does them
   * (every tap, the padding's included), as the peers' are in bench/: the
   * CPU backend's Winograd conv2 does fewer, so its rate can pass the
   * device's peak. */
  double c1 = conv_flops (n, self->c, self->k1, self->h, self->w);
  double c2 = conv_flops (n, self->k1, self->k2, self->h2, self->w2);

  return 2 * c1 + 3 * c2
         + tach_dense_flops (self->batch, self->features, self->dense, TRUE, TRUE)
         + tach_dense_flops (self->batch, self->dense, CNN_CLASSES, TRUE, TRUE);
}

/* The image size and training-set size a configuration will use, from the
 * IDX headers when it reads files (nothing is loaded). */
static void
cnn_peek_size (const TachConfig *config, guint64 *h, guint64 *w, guint64 *c, guint64 *n)
{
  const char *path = tach_cnn_data_path (config);
  g_autofree char *ti = NULL, *tl = NULL, *vi = NULL, *vl = NULL;
  TachIdx header;

  *h = config->input_h;
  *w = config->input_w;
  *c = config->input_c;
  *n = tach_config_get_samples (config);
  if (path == NULL || !tach_idx_resolve_data (path, &ti, &tl, &vi, &vl, NULL)
      || !tach_idx_read_header (ti, &header, NULL) || header.n_dims < 3)
    return;
  *h = header.dims[1];
  *w = header.dims[2];
  *c = header.n_dims == 4 ? header.dims[3] : 1;
  *n = config->samples > 0 ? MIN (config->samples, header.dims[0]) : header.dims[0];
}

static guint64
to_bytes (double bytes)
{
  return bytes >= (double) G_MAXUINT64 ? G_MAXUINT64 : (guint64) bytes;
}

static void
cnn_memory_needs (const TachConfig *config, guint64 *device_bytes, guint64 *host_bytes)
{
  guint64 h, w, c, n_train;
  CnnShape s;
  double params, dev, host;
  guint64 feed_dev, feed_host;
  TachDataset dataset = { .x_type = TACH_DTYPE_F32, .y_elems = 1, .y_type = TACH_DTYPE_I32 };

  cnn_peek_size (config, &h, &w, &c, &n_train);
  cnn_shape (config, h, w, c, &s);
  params = cnn_param_count (&s);

  /* Parameters, their gradients and two Adam moments, and accumulation's
   * sum, as TachParams allocates them (tach_params_device_bytes, in double
   * here so that an absurd size cannot wrap around). */
  dev = ((tach_config_get_accumulate (config) > 1 ? 5.0 : 4.0) * params + 1) * sizeof (float);
  dev += cnn_activation_floats (&s, config->batch) * sizeof (float);
  /* The library's convolution work space and the blocks' copies of their
   * inputs, outputs and gradients in the library's layouts: about two
   * conv1 outputs. */
  dev += 2.0 * config->batch * s.k1 * h * w * sizeof (float);

  /* The batches and their host copies, as the feeder allocates them. */
  dataset.n_samples = n_train;
  dataset.x_elems = (size_t) MIN ((double) c * h * w, (double) G_MAXSIZE / 16);
  tach_feeder_memory_needs (&dataset, config->feed, config->batch,
                            config->launch == TACH_LAUNCH_GRAPH, &feed_dev, &feed_host);
  dev += (double) feed_dev;
  host = (double) feed_host;
  /* The decoded uint8 images, or the synthetic class prototypes. */
  host += tach_cnn_data_path (config) != NULL ? (double) n_train * c * h * w
                                         : (double) CNN_CLASSES * c * h * w * sizeof (float);

  if (device_bytes != NULL)
    *device_bytes = to_bytes (dev);
  if (host_bytes != NULL)
    *host_bytes = to_bytes (host);
}

/* Every cnn configuration can be captured: its only per-step value, the
 * dropout counter, comes from the step offset in a replay. */
static gboolean
cnn_supports_graph (const TachConfig *config, const char **why)
{
  return TRUE;
}

/* The knobs only the cnn uses. */
static const TachModelKnob cnn_owns[] = {
  { TACH_KNOB_INPUT, N_("only the cnn takes images") },
  { TACH_KNOB_HEAD, N_("only the cnn takes images") },
  { TACH_KNOB_FILTERS, N_("only the cnn has convolutions and a hidden dense layer") },
  { TACH_KNOB_DENSE, N_("only the cnn has convolutions and a hidden dense layer") },
  { TACH_KNOB_COUNT },
};

static const char *
cnn_knob_unused (const TachConfig *config, TachKnobId knob)
{
  if (knob == TACH_KNOB_RNN || knob == TACH_KNOB_CALL_SETUP || knob == TACH_KNOB_HIDDEN
      || knob == TACH_KNOB_LAYERS)
    return N_("the cnn has no recurrent layer");
  return NULL;
}

/* A large image through the flatten head makes the dense layer's weights
 * the memory: global average pooling is the fix. */
static gboolean
cnn_memory_hint (const TachConfig *config, char **what, const char **fix, TachKnobId *knob,
                 const char **fix_value)
{
  if (config->head != TACH_HEAD_FLATTEN || (guint64) config->input_h * config->input_w <= 28 * 28)
    return FALSE;
  *what = g_strdup_printf (W_("{input=%ux%ux%u} with {head=flatten} and {batch=%u}"),
                           config->input_h, config->input_w, config->input_c, config->batch);
  *fix = W_("use {head=gap}{ (global average pooling)|} or a smaller {input}");
  *knob = TACH_KNOB_HEAD;
  *fix_value = "gap";
  return TRUE;
}

const TachModelClass tach_cnn_model_class = {
  .workload = TACH_WORKLOAD_CNN,
  .owns = cnn_owns,
  .knob_unused = cnn_knob_unused,
  .memory_hint = cnn_memory_hint,
  .create = cnn_create,
  .prepare = cnn_prepare,
  .step = cnn_step,
  .finish = NULL,
  .supports_graph = cnn_supports_graph,
  .items_per_step = cnn_items_per_step,
  .flops_per_step = cnn_flops_per_step,
  .data_source = tach_cnn_data_source,
  .evaluate = cnn_evaluate,
  .dup_text = NULL,
  .memory_needs = cnn_memory_needs,
  .free = cnn_free,
};
