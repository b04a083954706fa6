/* test-gpu-kernels.c: Tach's own CUDA kernels against the reference, and a
 * graph-replayed step against the same step run eagerly. */
#include <math.h>
#include <string.h>

#include "test-gpu.h"

#define EXACT 1e-10   /* one rounding per element */

static void
test_pointwise (void)
{
  TachBackend *be = open_gpu (TACH_PRECISION_FP32);
  const int m = 70, n = 33;
  size_t mn = (size_t) m * n;
  g_autofree double *y = random_doubles (mn, 1, 1.0), *bias = random_doubles (n, 2, 1.0);
  g_autofree double *dy = random_doubles (mn, 3, 1.0), *db = random_doubles (n, 4, 1.0);
  g_autofree double *r = g_new (double, mn), *dr = g_new (double, mn);
  float *dev_y = up (be, y, mn), *dev_b = up (be, bias, n), *dev_dy = up (be, dy, mn);
  float *dev_db = up (be, db, n), *dev_r = tach_backend_alloc (be, sizeof (float) * mn);
  float *dev_dr = tach_backend_alloc (be, sizeof (float) * mn);

  tach_op (be, bias_add, dev_y, dev_b, m, n);
  tach_ref_bias_add (y, bias, m, n);
  check ("bias_add", dev_y, be, y, mn, EXACT);
  tach_op (be, bias_grad, dev_dy, dev_db, m, n, 0.5f);
  tach_ref_bias_grad (dy, db, m, n, 0.5);
  check ("bias_grad", dev_db, be, db, n, 1e-8);
  tach_op (be, relu_fwd, dev_y, dev_r, mn);
  tach_ref_relu_fwd (y, r, mn);
  check ("relu_fwd", dev_r, be, r, mn, EXACT);
  tach_op (be, relu_bwd, dev_r, dev_dy, dev_dr, mn);
  tach_ref_relu_bwd (r, dy, dr, mn);
  check ("relu_bwd", dev_dr, be, dr, mn, EXACT);
  assert_ok (be);
  tach_backend_free (be);
}

static void
test_losses (void)
{
  TachBackend *be = open_gpu (TACH_PRECISION_FP32);
  const int n = 300, classes = 11, t = 7, c = 5;
  g_autofree double *logits = random_doubles ((size_t) n * classes, 11, 2.0);
  g_autofree double *bin = random_doubles (n, 12, 2.0), *labels_f = g_new (double, n);
  g_autofree int32_t *labels_i = g_new (int32_t, n);
  g_autofree double *dl = g_new (double, (size_t) n * classes), *dbin = g_new (double, n);
  g_autofree double *x = random_doubles ((size_t) n * t * c, 13, 1.0), *mx = g_new (double, (size_t) n * c);
  g_autofree double *dmx = random_doubles ((size_t) n * c, 14, 1.0), *dx = g_new (double, (size_t) n * t * c);
  float *dev_l, *dev_bin, *dev_lf, *dev_dl, *dev_dbin, *dev_loss, *dev_x, *dev_mx, *dev_dmx, *dev_dx;
  int32_t *dev_li, *dev_idx;
  double want;

  for (int i = 0; i < n; i++)
    {
      labels_f[i] = tach_rand_uniform (SEED, 15, i) < 0.5f ? 0.0 : 1.0;
      labels_i[i] = (int32_t) (tach_rand_uniform (SEED, 16, i) * classes);
    }
  dev_l = up (be, logits, (size_t) n * classes);
  dev_bin = up (be, bin, n);
  dev_lf = up (be, labels_f, n);
  dev_li = tach_backend_alloc (be, sizeof (int32_t) * n);
  tach_backend_upload (be, dev_li, labels_i, sizeof (int32_t) * n);
  dev_dl = tach_backend_alloc (be, sizeof (float) * n * classes);
  dev_dbin = tach_backend_alloc (be, sizeof (float) * n);
  dev_loss = tach_backend_alloc (be, sizeof (float));

  tach_op (be, sigmoid_bce, dev_bin, dev_lf, n, dev_loss, dev_dbin);
  want = tach_ref_sigmoid_bce (bin, labels_f, n, dbin);
  check ("sigmoid_bce loss", dev_loss, be, &want, 1, 1e-10);
  check ("sigmoid_bce dlogits", dev_dbin, be, dbin, n, EXACT);
  tach_op (be, softmax_ce, dev_l, dev_li, n, classes, dev_loss, dev_dl);
  want = tach_ref_softmax_ce (logits, labels_i, n, classes, dl);
  check ("softmax_ce loss", dev_loss, be, &want, 1, 1e-10);
  check ("softmax_ce dlogits", dev_dl, be, dl, (size_t) n * classes, 1e-9);
  tach_op (be, accuracy, dev_l, dev_li, n, classes, dev_loss);
  want = tach_ref_accuracy (logits, NULL, labels_i, n, classes);
  check ("accuracy argmax", dev_loss, be, &want, 1, 1e-12);
  tach_op (be, accuracy, dev_bin, dev_lf, n, 1, dev_loss);
  want = tach_ref_accuracy (bin, labels_f, NULL, n, 1);
  check ("accuracy binary", dev_loss, be, &want, 1, 1e-12);

  dev_x = up (be, x, (size_t) n * t * c);
  dev_mx = tach_backend_alloc (be, sizeof (float) * n * c);
  dev_idx = tach_backend_alloc (be, sizeof (int32_t) * n * c);
  dev_dmx = up (be, dmx, (size_t) n * c);
  dev_dx = up (be, x, (size_t) n * t * c);   /* junk: the op zeroes dx itself */
  tach_op (be, max_over_time_fwd, dev_x, dev_mx, dev_idx, n, t, c);
  tach_ref_max_over_time_fwd (x, mx, n, t, c);
  check ("max_over_time_fwd", dev_mx, be, mx, (size_t) n * c, 0.0);
  tach_op (be, max_over_time_bwd, dev_dmx, dev_idx, dev_dx, n, t, c);
  tach_ref_max_over_time_bwd (x, dmx, dx, n, t, c);
  check ("max_over_time_bwd", dev_dx, be, dx, (size_t) n * t * c, 0.0);
  assert_ok (be);
  tach_backend_free (be);
}

static void
test_pooling (void)
{
  TachBackend *be = open_gpu (TACH_PRECISION_FP32);
  const int n = 3, c = 4, h = 9, w = 12, oh = h / 2, ow = w / 2;
  size_t nx = (size_t) n * c * h * w, ny = (size_t) n * c * oh * ow, nc = (size_t) n * c;
  g_autofree double *x = random_doubles (nx, 21, 1.0), *y = g_new (double, ny);
  g_autofree double *dy = random_doubles (ny, 22, 1.0), *dx = g_new (double, nx);
  g_autofree double *avg = g_new (double, nc), *davg = random_doubles (nc, 23, 1.0);
  float *dev_x = up (be, x, nx), *dev_y = tach_backend_alloc (be, sizeof (float) * ny);
  float *dev_dy = up (be, dy, ny), *dev_dx = up (be, x, nx);
  float *dev_avg = tach_backend_alloc (be, sizeof (float) * nc), *dev_davg = up (be, davg, nc);
  int32_t *dev_idx = tach_backend_alloc (be, sizeof (int32_t) * ny);

  tach_op (be, maxpool_fwd, dev_x, dev_y, dev_idx, n, c, h, w);
  tach_ref_maxpool_fwd (x, y, n, c, h, w);
  check ("maxpool_fwd", dev_y, be, y, ny, 0.0);
  tach_op (be, maxpool_bwd, dev_dy, dev_idx, dev_dx, n, c, h, w);
  tach_ref_maxpool_bwd (x, dy, dx, n, c, h, w);
  check ("maxpool_bwd", dev_dx, be, dx, nx, 0.0);
  tach_op (be, avgpool_fwd, dev_x, dev_avg, n, c, h * w);
  tach_ref_avgpool_fwd (x, avg, n, c, h * w);
  check ("avgpool_fwd", dev_avg, be, avg, nc, 1e-10);
  tach_op (be, avgpool_bwd, dev_davg, dev_dx, n, c, h * w);
  tach_ref_avgpool_bwd (davg, dx, n, c, h * w);
  check ("avgpool_bwd", dev_dx, be, dx, nx, EXACT);
  assert_ok (be);
  tach_backend_free (be);
}

static void
test_dropout_embedding (void)
{
  TachBackend *be = open_gpu (TACH_PRECISION_FP32);
  const size_t n = 10007;
  const int rows = 40, dim = 17, vocab = 50;
  const float p = 0.4f;
  const guint64 counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_DROPOUT, 3);
  g_autofree double *x = random_doubles (n, 31, 1.0), *y = g_new (double, n);
  g_autofree double *table = random_doubles ((size_t) vocab * dim, 32, 1.0);
  g_autofree double *out = g_new (double, (size_t) rows * dim);
  g_autofree int32_t *idx = g_new (int32_t, rows);
  float *dev_x = up (be, x, n), *dev_y = tach_backend_alloc (be, sizeof (float) * n);
  float *dev_t = up (be, table, (size_t) vocab * dim);
  float *dev_out = tach_backend_alloc (be, sizeof (float) * rows * dim);
  int32_t *dev_idx = tach_backend_alloc (be, sizeof (int32_t) * rows);

  tach_op (be, dropout_fwd, dev_x, dev_y, n, p, SEED, counter);
  tach_ref_dropout (x, y, n, p, SEED, counter);
  check ("dropout_fwd", dev_y, be, y, n, EXACT);
  tach_op (be, dropout_bwd, dev_x, dev_y, n, p, SEED, counter);
  check ("dropout_bwd", dev_y, be, y, n, EXACT);

  for (int i = 0; i < rows; i++)
    idx[i] = (int32_t) ((i * 7 + 3) % vocab);
  tach_backend_upload (be, dev_idx, idx, sizeof (int32_t) * rows);
  tach_op (be, embedding, dev_t, dev_idx, dev_out, rows, dim);
  tach_ref_embedding (table, idx, out, rows, dim);
  check ("embedding", dev_out, be, out, (size_t) rows * dim, 0.0);
  assert_ok (be);
  tach_backend_free (be);
}

static void
test_sample_tokens (void)
{
  TachBackend *be = open_gpu (TACH_PRECISION_FP32);
  const int n = 64, vocab = 554, len = 4;
  const guint64 counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_SAMPLE, 9);
  g_autofree double *logits = random_doubles ((size_t) n * vocab, 41, 3.0);
  g_autofree int32_t *ctx = g_new (int32_t, (size_t) n * len), *tok = g_new (int32_t, n);
  g_autofree int32_t *ctx_out = g_new (int32_t, (size_t) n * len);
  float *dev_l = up (be, logits, (size_t) n * vocab);
  int32_t *dev_tok = tach_backend_alloc (be, sizeof (int32_t) * n);
  int32_t *dev_ctx = tach_backend_alloc (be, sizeof (int32_t) * n * len);
  int checked = 0;

  for (int i = 0; i < n * len; i++)
    ctx[i] = i % vocab;
  tach_backend_upload (be, dev_ctx, ctx, sizeof (int32_t) * n * len);
  tach_op (be, sample_tokens, dev_l, n, vocab, SEED, counter, dev_tok, dev_ctx, len);
  tach_backend_download (be, tok, dev_tok, sizeof (int32_t) * n);
  tach_backend_download (be, ctx_out, dev_ctx, sizeof (int32_t) * n * len);
  assert_ok (be);
  for (int r = 0; r < n; r++)
    {
      double margin = 0.0;
      int32_t want = tach_ref_sample_row (logits + (size_t) r * vocab, vocab,
                                          tach_rand_uniform (SEED, counter, r), &margin);

      /* The kernel sums in double, as the host does: only a draw within
       * double rounding of a CDF boundary may move. */
      if (margin > 1e-12)
        {
          g_assert_cmpint (tok[r], ==, want);
          checked++;
        }
      for (int i = 0; i + 1 < len; i++)
        g_assert_cmpint (ctx_out[r * len + i], ==, ctx[r * len + i + 1]);
      g_assert_cmpint (ctx_out[r * len + len - 1], ==, tok[r]);
    }
  g_assert_cmpint (checked, >=, n - 1);
  tach_backend_free (be);
}

static void
test_optimizers (void)
{
  TachBackend *be = open_gpu (TACH_PRECISION_FP32);
  const size_t n = 5000;
  g_autofree double *p = random_doubles (n, 51, 1.0), *g = random_doubles (n, 52, 1.0);
  g_autofree double *m = g_new0 (double, n), *v = g_new0 (double, n), *q = NULL;
  float *dev_p = up (be, p, n), *dev_g = up (be, g, n), *dev_m = up (be, m, n), *dev_v = up (be, v, n);
  float *dev_t = tach_backend_alloc (be, sizeof (float)), *dev_q;
  double t_host = 0.0, t_ref = 0.0;

  q = g_memdup2 (p, sizeof (double) * n);
  dev_q = up (be, q, n);
  tach_backend_zero (be, dev_t, sizeof (float));
  for (int step = 1; step <= 3; step++)
    {
      tach_op (be, adam, dev_p, dev_g, dev_m, dev_v, n, 1e-3f, 0.9f, 0.999f, 1e-7f, dev_t);
      tach_ref_adam (p, g, m, v, n, 1e-3, 0.9, 0.999, 1e-7, &t_ref);
    }
  check ("adam param", dev_p, be, p, n, 1e-10);
  check ("adam m", dev_m, be, m, n, 1e-10);
  t_host = 3.0;
  check ("adam step count", dev_t, be, &t_host, 1, 0.0);
  tach_op (be, sgd, dev_q, dev_g, n, 0.01f);
  tach_ref_sgd (q, g, n, 0.01);
  check ("sgd", dev_q, be, q, n, EXACT);
  assert_ok (be);
  tach_backend_free (be);
}

/* A small training step (dense + bias + ReLU + BCE + gradients + Adam with
 * the device step count) run eagerly on one copy of the parameters and
 * replayed from a captured graph on another: every bit must agree. */
typedef struct {
  float *w, *b, *m, *v, *t, *grad, *h, *logit, *dlogit, *dh, *loss;
} StepBufs;

static void
queue_step (TachBackend *be, StepBufs *s, const float *x, const float *labels, int n, int k)
{
  /* logit = relu(x w) + b; grad = [dw (k), db (1)], w and b in one block */
  tach_op (be, gemm, FALSE, FALSE, n, 1, k, 1.0f, x, k, s->w, 1, 0.0f, s->h, 1);
  tach_op (be, relu_fwd, s->h, s->h, (size_t) n);
  tach_backend_copy (be, s->logit, s->h, sizeof (float) * n);
  tach_op (be, bias_add, s->logit, s->b, n, 1);
  tach_op (be, sigmoid_bce, s->logit, labels, n, s->loss, s->dlogit);
  tach_op (be, relu_bwd, s->h, s->dlogit, s->dh, (size_t) n);
  tach_op (be, gemm, TRUE, FALSE, k, 1, n, 1.0f, x, k, s->dh, 1, 0.0f, s->grad, 1);
  tach_op (be, bias_grad, s->dlogit, s->grad + k, n, 1, 0.0f);
  tach_op (be, adam, s->w, s->grad, s->m, s->v, (size_t) k + 1, 1e-2f, 0.9f, 0.999f, 1e-7f, s->t);
}

static void
alloc_step (TachBackend *be, StepBufs *s, const double *w0, int n, int k)
{
  s->w = up (be, w0, (size_t) k + 1);
  s->b = s->w + k;
  s->m = tach_backend_alloc (be, sizeof (float) * (k + 1));
  s->v = tach_backend_alloc (be, sizeof (float) * (k + 1));
  s->t = tach_backend_alloc (be, sizeof (float));
  s->grad = tach_backend_alloc (be, sizeof (float) * (k + 1));
  s->h = tach_backend_alloc (be, sizeof (float) * n);
  s->logit = tach_backend_alloc (be, sizeof (float) * n);
  s->dlogit = tach_backend_alloc (be, sizeof (float) * n);
  s->dh = tach_backend_alloc (be, sizeof (float) * n);
  s->loss = tach_backend_alloc (be, sizeof (float));
  tach_backend_zero (be, s->m, sizeof (float) * (k + 1));
  tach_backend_zero (be, s->v, sizeof (float) * (k + 1));
  tach_backend_zero (be, s->t, sizeof (float));
}

static void
test_graph_replay (void)
{
  TachBackend *be = open_gpu (TACH_PRECISION_FP32);
  const int n = 256, k = 64, steps = 5;
  g_autofree double *x = random_doubles ((size_t) n * k, 61, 1.0);
  g_autofree double *w0 = random_doubles ((size_t) k + 1, 62, 0.1);
  g_autofree double *labels = g_new (double, n);
  g_autofree float *eager_w = g_new (float, k + 1), *graph_w = g_new (float, k + 1);
  float eager_loss[5], graph_loss[5];
  float *dev_x, *dev_labels;
  StepBufs eager, graphed;
  TachGraph *graph;

  g_assert_true (tach_backend_has_graphs (be));
  for (int i = 0; i < n; i++)
    labels[i] = tach_rand_uniform (SEED, 63, i) < 0.5f ? 0.0 : 1.0;
  dev_x = up (be, x, (size_t) n * k);
  dev_labels = up (be, labels, n);
  alloc_step (be, &eager, w0, n, k);
  alloc_step (be, &graphed, w0, n, k);

  for (int s = 0; s < steps; s++)
    {
      queue_step (be, &eager, dev_x, dev_labels, n, k);
      tach_backend_download (be, &eager_loss[s], eager.loss, sizeof (float));
    }
  tach_backend_synchronize (be);
  tach_graph_begin (be);
  queue_step (be, &graphed, dev_x, dev_labels, n, k);
  graph = tach_graph_end (be);
  assert_ok (be);
  g_assert_nonnull (graph);
  for (int s = 0; s < steps; s++)
    {
      tach_graph_launch (be, graph);
      tach_backend_download (be, &graph_loss[s], graphed.loss, sizeof (float));
    }
  tach_backend_download (be, eager_w, eager.w, sizeof (float) * (k + 1));
  tach_backend_download (be, graph_w, graphed.w, sizeof (float) * (k + 1));
  assert_ok (be);
  g_assert_cmpmem (eager_loss, sizeof eager_loss, graph_loss, sizeof graph_loss);
  g_assert_cmpmem (eager_w, sizeof (float) * (k + 1), graph_w, sizeof (float) * (k + 1));
  /* The loss moved: the replay really took different Adam steps. */
  g_assert_cmpfloat (graph_loss[0], !=, graph_loss[steps - 1]);
  tach_graph_free (be, graph);
  tach_backend_free (be);
}

/* Blocking calls inside a capture are refused with an error, not a hang. */
static void
test_graph_refuses_sync (void)
{
  TachBackend *be = open_gpu (TACH_PRECISION_FP32);
  g_autoptr(GError) error = NULL;

  tach_graph_begin (be);
  tach_backend_synchronize (be);
  g_assert_false (tach_backend_take_error (be, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "graph"));
  tach_backend_free (be);
}

/* The step offset on the device: a graph that draws a dropout mask and
 * samples tokens with the counters of step 4, then adds 1 to the offset,
 * replayed three times, draws what eager ops draw with the counters of
 * steps 4, 5 and 6. */
static void
test_graph_step_offset (void)
{
  TachBackend *be = open_gpu (TACH_PRECISION_FP32);
  const int rows = 33, vocab = 300;
  const size_t n = 5000;
  g_autofree double *x = random_doubles (n, 71, 1.0);
  g_autofree double *z = random_doubles ((size_t) rows * vocab, 72, 3.0);
  g_autofree float *want = g_new (float, n), *got = g_new (float, n);
  int32_t want_tok[33], got_tok[33];
  float *dx = up (be, x, n), *dz = up (be, z, (size_t) rows * vocab);
  float *dy = tach_backend_alloc (be, sizeof (float) * n);
  int32_t *tok = tach_backend_alloc (be, sizeof (int32_t) * rows);
  uint64_t *offset = tach_backend_alloc (be, sizeof (uint64_t));
  uint64_t after = 0;
  TachGraph *graph;

  tach_backend_zero (be, offset, sizeof (uint64_t));
  be->step_offset = offset;
  tach_graph_begin (be);
  tach_op (be, dropout_fwd, dx, dy, n, 0.4f, SEED, TACH_RAND_COUNTER (TACH_RAND_STREAM_DROPOUT, 4));
  tach_backend_sample_tokens (be, dz, rows, vocab, SEED,
                              TACH_RAND_COUNTER (TACH_RAND_STREAM_SAMPLE, 4), tok, NULL, 0, NULL);
  tach_backend_counter_add (be, offset, 1);
  graph = tach_graph_end (be);
  be->step_offset = NULL;
  assert_ok (be);
  g_assert_nonnull (graph);

  for (guint64 step = 4; step < 7; step++)
    {
      tach_graph_launch (be, graph);
      tach_backend_download (be, got, dy, sizeof (float) * n);
      tach_backend_download (be, got_tok, tok, sizeof got_tok);
      tach_op (be, dropout_fwd, dx, dy, n, 0.4f, SEED,
               TACH_RAND_COUNTER (TACH_RAND_STREAM_DROPOUT, step));
      tach_backend_sample_tokens (be, dz, rows, vocab, SEED,
                                  TACH_RAND_COUNTER (TACH_RAND_STREAM_SAMPLE, step), tok, NULL, 0,
                                  NULL);
      tach_backend_download (be, want, dy, sizeof (float) * n);
      tach_backend_download (be, want_tok, tok, sizeof want_tok);
      assert_ok (be);
      g_assert_cmpmem (want, sizeof (float) * n, got, sizeof (float) * n);
      g_assert_cmpmem (want_tok, sizeof want_tok, got_tok, sizeof got_tok);
    }
  tach_backend_download (be, &after, offset, sizeof after);
  assert_ok (be);
  g_assert_cmpuint (after, ==, 3);
  tach_graph_free (be, graph);
  tach_backend_free (be);
}

static void
test_out_of_memory (void)
{
  TachBackend *be = open_gpu (TACH_PRECISION_FP32);
  g_autoptr(GError) error = NULL;
  void *huge = tach_backend_alloc (be, (size_t) 1 << 50);

  g_assert_null (huge);
  g_assert_false (tach_backend_take_error (be, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_OUT_OF_MEMORY);
  /* The backend stays usable once the error is taken. */
  g_clear_error (&error);
  huge = tach_backend_alloc (be, 1024);
  g_assert_nonnull (huge);
  assert_ok (be);
  tach_backend_free (be);
}

void
gpu_add_kernel_tests (void)
{
  g_test_add_func ("/gpu/ops/pointwise", test_pointwise);
  g_test_add_func ("/gpu/ops/losses", test_losses);
  g_test_add_func ("/gpu/ops/pooling", test_pooling);
  g_test_add_func ("/gpu/ops/dropout-embedding", test_dropout_embedding);
  g_test_add_func ("/gpu/ops/sample-tokens", test_sample_tokens);
  g_test_add_func ("/gpu/ops/optimizers", test_optimizers);
  g_test_add_func ("/gpu/graph/replay-equals-eager", test_graph_replay);
  g_test_add_func ("/gpu/graph/refuses-sync", test_graph_refuses_sync);
  g_test_add_func ("/gpu/graph/step-offset", test_graph_step_offset);
  g_test_add_func ("/gpu/errors/out-of-memory", test_out_of_memory);
}
