/* test-ops-graph.c: what a device says about itself, a graph-replayed step
 * against the same step run eagerly, the step offset under replay, and
 * errors (a blocking call inside a capture, memory the device lacks).
 * Backends without graphs (the CPU) skip the graph cases.
 */
#include <math.h>
#include <string.h>

#include "tach-rand.h"
#include "test-ops-common.h"

#define SEED 20260601u

static gboolean
graphs_or_skip (TachBackend *be)
{
  if (tach_backend_has_graphs (be))
    return TRUE;
  g_test_skip_printf ("%s has no graph capture", be->device->id);
  return FALSE;
}

static float *
upload_normal (TachBackend *be, size_t n, guint64 counter, double scale)
{
  g_autofree double *x = g_new (double, n);

  tach_ref_fill_normal (x, n, SEED, counter, scale);
  return tach_ops_upload_d (be, x, n);
}

/* A GPU names itself, its memory, its peak and its libraries. */
static void
test_device_info (TachBackend *be)
{
  const TachDeviceInfo *info = be->device;

  g_assert_cmpstr (info->name, !=, "");
  g_test_message ("%s: %s, %s", info->id, info->name, info->versions);
  if (info->kind != TACH_DEVICE_KIND_GPU)
    return;
  g_assert_cmpuint (info->memory_bytes, >, 1u << 30);
  g_assert_cmpfloat (info->peak_flops, >, 1e12);
  g_assert_nonnull (strstr (info->versions, "cuDNN 9."));
  g_assert_nonnull (strstr (info->versions, "cuBLAS"));
}

/* A small training step (dense + ReLU + bias + BCE + gradients + Adam with
 * the device step count) run eagerly on one copy of the parameters and
 * replayed from a captured graph on another: every bit must agree. */
typedef struct {
  float *w, *b, *m, *v, *t, *grad, *h, *logit, *dlogit, *dh, *loss;
} StepBufs;

enum { SN = 256, SK = 64, STEPS = 5 };

static void
queue_step (TachBackend *be, StepBufs *s, const float *x, const float *labels)
{
  /* logit = relu(x w) + b; grad = [dw (k), db (1)], w and b in one block */
  tach_op (be, gemm, FALSE, FALSE, SN, 1, SK, 1.0f, x, SK, s->w, 1, 0.0f, s->h, 1);
  tach_op (be, relu_fwd, s->h, s->h, (size_t) SN);
  tach_backend_copy (be, s->logit, s->h, sizeof (float) * SN);
  tach_op (be, bias_add, s->logit, s->b, SN, 1);
  tach_op (be, sigmoid_bce, s->logit, labels, SN, s->loss, s->dlogit);
  tach_op (be, relu_bwd, s->h, s->dlogit, s->dh, (size_t) SN);
  tach_op (be, gemm, TRUE, FALSE, SK, 1, SN, 1.0f, x, SK, s->dh, 1, 0.0f, s->grad, 1);
  tach_op (be, bias_grad, s->dlogit, s->grad + SK, SN, 1, 0.0f);
  tach_op (be, adam, s->w, s->grad, s->m, s->v, (size_t) SK + 1, 1e-2f, 0.9f, 0.999f, 1e-7f,
           s->t);
}

static void
alloc_step (TachBackend *be, StepBufs *s)
{
  const size_t np = SK + 1;

  s->w = upload_normal (be, np, 62, 0.1);
  s->b = s->w + SK;
  s->m = tach_ops_alloc (be, sizeof (float) * np);
  s->v = tach_ops_alloc (be, sizeof (float) * np);
  s->t = tach_ops_alloc (be, sizeof (float));
  s->grad = tach_ops_alloc (be, sizeof (float) * np);
  s->h = tach_ops_alloc (be, sizeof (float) * SN);
  s->logit = tach_ops_alloc (be, sizeof (float) * SN);
  s->dlogit = tach_ops_alloc (be, sizeof (float) * SN);
  s->dh = tach_ops_alloc (be, sizeof (float) * SN);
  s->loss = tach_ops_alloc (be, sizeof (float));
  tach_backend_zero (be, s->m, sizeof (float) * np);
  tach_backend_zero (be, s->v, sizeof (float) * np);
  tach_backend_zero (be, s->t, sizeof (float));
}

static void
test_graph_replay (TachBackend *be)
{
  g_autofree double *labels = g_new (double, SN);
  float eager_w[SK + 1], graph_w[SK + 1], eager_loss[STEPS], graph_loss[STEPS];
  float *x, *dev_labels;
  StepBufs eager, graphed;
  TachGraph *graph;

  if (!graphs_or_skip (be))
    return;
  for (int i = 0; i < SN; i++)
    labels[i] = tach_rand_uniform (SEED, 63, i) < 0.5f ? 0.0 : 1.0;
  x = upload_normal (be, (size_t) SN * SK, 61, 1.0);
  dev_labels = tach_ops_upload_d (be, labels, SN);
  alloc_step (be, &eager);
  alloc_step (be, &graphed);

  for (int s = 0; s < STEPS; s++)
    {
      queue_step (be, &eager, x, dev_labels);
      tach_backend_download (be, &eager_loss[s], eager.loss, sizeof (float));
    }
  tach_backend_synchronize (be);
  tach_graph_begin (be);
  queue_step (be, &graphed, x, dev_labels);
  graph = tach_graph_end (be);
  tach_ops_assert_ok (be);
  g_assert_nonnull (graph);
  for (int s = 0; s < STEPS; s++)
    {
      tach_graph_launch (be, graph);
      tach_backend_download (be, &graph_loss[s], graphed.loss, sizeof (float));
    }
  tach_backend_download (be, eager_w, eager.w, sizeof eager_w);
  tach_backend_download (be, graph_w, graphed.w, sizeof graph_w);
  tach_ops_assert_ok (be);
  g_assert_cmpmem (eager_loss, sizeof eager_loss, graph_loss, sizeof graph_loss);
  g_assert_cmpmem (eager_w, sizeof eager_w, graph_w, sizeof graph_w);
  /* The loss moved: the replay really took different Adam steps. */
  g_assert_cmpfloat (graph_loss[0], !=, graph_loss[STEPS - 1]);
  tach_graph_free (be, graph);
}

/* Blocking calls inside a capture are refused with an error, not a hang. */
static void
test_graph_refuses_sync (TachBackend *be)
{
  g_autoptr(GError) error = NULL;
  TachGraph *graph;

  if (!graphs_or_skip (be))
    return;
  tach_graph_begin (be);
  tach_backend_synchronize (be);
  g_assert_false (tach_backend_take_error (be, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "graph"));
  /* The capture is over either way; what it left is freed here. */
  graph = tach_graph_end (be);
  g_clear_error (&error);
  tach_backend_take_error (be, &error);
  tach_graph_free (be, graph);
}

/* The step offset on the device: a graph that draws a dropout mask and
 * samples tokens (with their loss) with the counters of step 4, then adds
 * 1 to the offset, replayed three times, draws what eager ops draw with the
 * counters of steps 4, 5 and 6. */
static void
test_graph_step_offset (TachBackend *be)
{
  enum { ROWS = 33, VOCAB = 300, N = 5000 };
  float want[N], got[N], want_loss, got_loss;
  int32_t want_tok[ROWS], got_tok[ROWS];
  float *dx, *dz, *dy, *loss;
  int32_t *tok;
  uint64_t *offset, after = 0;
  TachGraph *graph;

  if (!graphs_or_skip (be))
    return;
  dx = upload_normal (be, N, 71, 1.0);
  dz = upload_normal (be, (size_t) ROWS * VOCAB, 72, 3.0);
  dy = tach_ops_alloc (be, sizeof (float) * N);
  loss = tach_ops_alloc (be, sizeof (float));
  tok = tach_ops_alloc (be, sizeof (int32_t) * ROWS);
  offset = tach_ops_alloc (be, sizeof (uint64_t));
  tach_backend_zero (be, offset, sizeof (uint64_t));
  be->step_offset = offset;
  tach_graph_begin (be);
  tach_op (be, dropout_fwd, dx, dy, N, 0.4f, SEED, TACH_RAND_COUNTER (TACH_RAND_STREAM_DROPOUT, 4),
           0);
  tach_backend_sample_tokens (be, dz, ROWS, VOCAB, SEED,
                              TACH_RAND_COUNTER (TACH_RAND_STREAM_SAMPLE, 4), tok, NULL, 0, loss);
  tach_backend_counter_add (be, offset, 1);
  graph = tach_graph_end (be);
  be->step_offset = NULL;
  tach_ops_assert_ok (be);
  g_assert_nonnull (graph);

  for (guint64 step = 4; step < 7; step++)
    {
      tach_graph_launch (be, graph);
      tach_backend_download (be, got, dy, sizeof got);
      tach_backend_download (be, got_tok, tok, sizeof got_tok);
      tach_backend_download (be, &got_loss, loss, sizeof got_loss);
      tach_op (be, dropout_fwd, dx, dy, N, 0.4f, SEED,
               TACH_RAND_COUNTER (TACH_RAND_STREAM_DROPOUT, step), 0);
      tach_backend_sample_tokens (be, dz, ROWS, VOCAB, SEED,
                                  TACH_RAND_COUNTER (TACH_RAND_STREAM_SAMPLE, step), tok, NULL, 0,
                                  loss);
      tach_backend_download (be, want, dy, sizeof want);
      tach_backend_download (be, want_tok, tok, sizeof want_tok);
      tach_backend_download (be, &want_loss, loss, sizeof want_loss);
      tach_ops_assert_ok (be);
      g_assert_cmpmem (want, sizeof want, got, sizeof got);
      g_assert_cmpmem (want_tok, sizeof want_tok, got_tok, sizeof got_tok);
      g_assert_cmpfloat (want_loss, ==, got_loss);
    }
  tach_backend_download (be, &after, offset, sizeof after);
  tach_ops_assert_ok (be);
  g_assert_cmpuint (after, ==, 3);
  tach_graph_free (be, graph);
}

/* The two losses over rows that a GPU spreads over blocks (lstm-lm
 * training's thousands of rows of 554, W3's 256 x 10), softmax_ce with its
 * gradient and the sampler with its loss, captured once: every replay
 * gives the eager bits, and so does an eager launch after the replays,
 * with launches of other shapes (through the same block-sum scratch) in
 * between. */
static void
test_graph_loss_wide (TachBackend *be)
{
  static const int shapes[][2] = { { 9000, 554 }, { 256, 10 } };
  const guint64 counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_SAMPLE, 2);

  if (!graphs_or_skip (be))
    return;
  for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      int n = shapes[s][0], c = shapes[s][1];
      size_t nc = (size_t) n * c;
      g_autofree int32_t *labels = g_new (int32_t, n);
      g_autofree int32_t *want_tok = NULL;
      g_autofree float *want_d = NULL;
      float want_ce, want_nll, got_ce, got_nll, *dz, *ce, *nll, *other, *dl;
      int32_t *dlab, *tok;
      TachGraph *graph;

      for (int i = 0; i < n; i++)
        labels[i] = (int32_t) (tach_rand_bits (SEED, 81, i) % c);
      dz = upload_normal (be, nc, 80 + s, 3.0);
      dlab = tach_ops_upload_i (be, labels, n);
      ce = tach_ops_alloc (be, sizeof (float));
      nll = tach_ops_alloc (be, sizeof (float));
      other = tach_ops_alloc (be, sizeof (float));
      dl = tach_ops_alloc (be, nc * sizeof (float));
      tok = tach_ops_alloc (be, n * sizeof (int32_t));
      tach_op (be, softmax_ce, dz, dlab, n, c, ce, dl);
      tach_backend_sample_tokens (be, dz, n, c, SEED, counter, tok, NULL, 0, nll);
      want_ce = tach_ops_download_scalar (be, ce);
      want_nll = tach_ops_download_scalar (be, nll);
      want_d = tach_ops_download_f (be, dl, nc);
      want_tok = tach_ops_download_i (be, tok, n);

      tach_graph_begin (be);
      tach_op (be, softmax_ce, dz, dlab, n, c, ce, dl);
      tach_backend_sample_tokens (be, dz, n, c, SEED, counter, tok, NULL, 0, nll);
      graph = tach_graph_end (be);
      tach_ops_assert_ok (be);
      g_assert_nonnull (graph);
      for (int rep = 0; rep < 3; rep++)
        {
          g_autofree int32_t *got_tok = NULL;
          g_autofree float *got_d = NULL;

          tach_backend_zero (be, ce, sizeof (float));
          tach_backend_zero (be, nll, sizeof (float));
          tach_backend_zero (be, dl, nc * sizeof (float));
          tach_graph_launch (be, graph);
          got_ce = tach_ops_download_scalar (be, ce);
          got_nll = tach_ops_download_scalar (be, nll);
          got_d = tach_ops_download_f (be, dl, nc);
          got_tok = tach_ops_download_i (be, tok, n);
          g_assert_cmpmem (&got_ce, sizeof got_ce, &want_ce, sizeof want_ce);
          g_assert_cmpmem (&got_nll, sizeof got_nll, &want_nll, sizeof want_nll);
          g_assert_cmpmem (got_d, nc * sizeof (float), want_d, nc * sizeof (float));
          g_assert_cmpmem (got_tok, n * sizeof (int32_t), want_tok, n * sizeof (int32_t));
          /* Other grids between replays: one block, a third of the rows. */
          tach_op (be, softmax_ce, dz, dlab, 1, c, other, NULL);
          tach_op (be, softmax_ce, dz, dlab, n / 3, c, other, NULL);
        }
      tach_graph_free (be, graph);
      tach_op (be, softmax_ce, dz, dlab, n, c, ce, NULL);
      got_ce = tach_ops_download_scalar (be, ce);
      tach_ops_assert_ok (be);
      g_assert_cmpmem (&got_ce, sizeof got_ce, &want_ce, sizeof want_ce);
      g_assert_cmpfloat (want_nll, >, 0.0f);
    }
}

/* More memory than any GPU has: an out-of-memory error, and the backend
 * stays usable once it is taken.  (GPUs only: a host allocator under a
 * sanitizer aborts on such a request instead of failing it.) */
static void
test_out_of_memory (TachBackend *be)
{
  g_autoptr(GError) error = NULL;
  void *huge;

  if (be->device->kind != TACH_DEVICE_KIND_GPU)
    {
      g_test_skip ("a GPU case");
      return;
    }
  huge = tach_backend_alloc (be, (size_t) 1 << 50);
  g_assert_null (huge);
  g_assert_false (tach_backend_take_error (be, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_OUT_OF_MEMORY);
  g_clear_error (&error);
  huge = tach_ops_alloc (be, 1024);
  g_assert_nonnull (huge);
  tach_ops_assert_ok (be);
}

void
tach_ops_register_graph (const char *device_id)
{
  if (device_id == NULL)
    return;
  tach_ops_add (device_id, "device/info", test_device_info);
  if (tach_backend_kind_for (device_id) != TACH_DEVICE_KIND_GPU)
    return;
  tach_ops_add (device_id, "graph/replay-equals-eager", test_graph_replay);
  tach_ops_add (device_id, "graph/refuses-sync", test_graph_refuses_sync);
  tach_ops_add (device_id, "graph/step-offset", test_graph_step_offset);
  tach_ops_add (device_id, "graph/loss-replay-wide", test_graph_loss_wide);
  tach_ops_add (device_id, "errors/out-of-memory", test_out_of_memory);
}
