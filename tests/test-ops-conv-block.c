/* test-ops-conv-block.c: the convolution block (conv + bias + ReLU + 2x2
 * max pool, forward and backward) against the reference in double, under
 * graph replay, and on CUDA its fused and split routes against the plain
 * passes. */
#include <math.h>
#include <string.h>

#include "test-ops-conv.h"
#include "tach-layers.h"

static const TachConvDesc block_descs[] = {
  /* N  C  H  W  K   R  S  pad_h pad_w need_dx */
  {  2, 3, 8, 8, 32, 3, 3, 1, 1, TRUE,  TACH_PRECISION_FP32, TRUE },  /* K a multiple of 16 */
  {  2, 2, 7, 6, 3,  5, 5, 2, 2, FALSE, TACH_PRECISION_FP32, TRUE },  /* odd sizes, small K */
  {  1, 16, 6, 6, 16, 5, 5, 2, 2, TRUE, TACH_PRECISION_FP32, TRUE },  /* W3's 5x5 "same" */
  /* The cnn's second block at --filters 12,20 on 28x28 images. */
  {  3, 12, 14, 14, 20, 5, 5, 2, 2, TRUE, TACH_PRECISION_FP32, TRUE },
  /* The cnn's first block (MNIST 28x28x1, 32 filters; pools to 14). */
  {  2, 1, 28, 28, 32, 5, 5, 2, 2, FALSE, TACH_PRECISION_FP32, TRUE },
  /* Odd both ways: a last row and column in no window. */
  {  2, 3, 9, 7, 5,  3, 3, 1, 1, TRUE,  TACH_PRECISION_FP32, TRUE },
  /* A batch whose activations (2.4 MB) outgrow the L2 of any core the CPU
   * backend runs on, so that it runs the forward in chunks of images. */
  { 24, 1, 28, 28, 32, 5, 5, 2, 2, TRUE, TACH_PRECISION_FP32, TRUE },
};

/* W3's two blocks at a quarter of its batch, fp32, on CUDA only (the
 * double reference takes seconds): cuDNN's heuristics pick other
 * algorithms for these sizes than for the small ones above, and each must
 * keep fp32's accuracy.  (At TF32 a pooled block is no fair test: a
 * rounding that flips a ReLU or a pool's winner moves whole gradients.) */
static const TachConvDesc w3_descs[] = {
  { 64, 1, 28, 28, 32, 5, 5, 2, 2, FALSE, TACH_PRECISION_FP32, TRUE },
  { 64, 32, 14, 14, 64, 5, 5, 2, 2, TRUE, TACH_PRECISION_FP32, TRUE },
};

/* Shapes the CPU backend runs by Winograd's F(4x4, 5x5) (5x5 filters, C
 * and K multiples of 16): partial tiles (odd outputs), every padding it
 * takes, a batch that splits unevenly over threads, images whose tiles
 * take several chunks (28x28), x plain and need_dx either way. */
static const TachConvDesc wino_descs[] = {
  /* N  C   H   W   K   R  S  pad_h pad_w need_dx */
  {  3, 16,  7,  9, 32, 5, 5, 2, 2, TRUE,  TACH_PRECISION_FP32, TRUE },
  {  2, 32, 14, 14, 64, 5, 5, 2, 2, TRUE,  TACH_PRECISION_FP32, TRUE },  /* the cnn's conv2 */
  {  5, 16, 10,  8, 16, 5, 5, 1, 1, TRUE,  TACH_PRECISION_FP32, TRUE },
  {  2, 16,  8,  9, 48, 5, 5, 0, 0, FALSE, TACH_PRECISION_FP32, TRUE },
  {  1, 32,  5,  5, 16, 5, 5, 4, 3, TRUE,  TACH_PRECISION_FP32, TRUE },
  {  2, 16, 28, 28, 16, 5, 5, 2, 2, TRUE,  TACH_PRECISION_FP32, TRUE },
};

/* Shapes whose filter and bias gradients the CPU backend computes itself
 * (tach-cpu-dw1.c: one input channel, 5-wide filters, K a multiple of the
 * vector width): the cnn's conv1, a batch that leaves a part chunk of 8
 * images, an odd number of channel blocks, other filter heights and
 * paddings, need_dx (oneDNN's backward data beside it). */
static const TachConvDesc dw1_descs[] = {
  /* N  C   H   W   K   R  S  pad_h pad_w need_dx */
  {  9, 1, 28, 28, 32, 5, 5, 2, 2, FALSE, TACH_PRECISION_FP32, TRUE },  /* the cnn's conv1 */
  { 11, 1, 12, 10, 48, 5, 5, 2, 2, FALSE, TACH_PRECISION_FP32, TRUE },
  {  3, 1,  9, 13, 16, 3, 5, 1, 4, TRUE,  TACH_PRECISION_FP32, TRUE },
  {  2, 1,  8,  8, 32, 7, 5, 0, 0, TRUE,  TACH_PRECISION_FP32, TRUE },
};

/* The block in double: act = relu (conv (x)), y = maxpool (act); backward
 * through the pool, the ReLU's mask and the convolution. */
static void
ref_block (ConvCase *c, const double *dy, double *act, double *y, double *dx, double *dw,
           double *db)
{
  g_autofree double *dact = g_new (double, c->ny);

  tach_ref_conv_fwd (&c->d, c->x, c->w, c->b, act);
  for (size_t i = 0; i < c->ny; i++)
    act[i] = MAX (act[i], 0.0);
  tach_ref_maxpool_fwd (act, y, c->d.N, c->d.K, c->oh, c->ow);
  tach_ref_maxpool_bwd (act, dy, dact, c->d.N, c->d.K, c->oh, c->ow);
  for (size_t i = 0; i < c->ny; i++)
    dact[i] = act[i] > 0.0 ? dact[i] : 0.0;
  tach_ref_conv_bwd (&c->d, c->x, c->w, dact, dx, dw, db);
}

static void
check (const char *what, guint k, TachBackend *be, const float *dev, const double *want,
       size_t n, double nmse)
{
  g_autofree char *name = g_strdup_printf ("conv block %u: %s", k, what);
  g_autofree float *got = tach_ops_download_f (be, dev, n);

  tach_ops_assert_nmse (name, got, want, n, nmse);
}

static void
run_conv_block (TachBackend *be, TachPrecision precision, const TachConvDesc *descs, guint n)
{
  double nmse = tach_ops_nmse_limit (precision, TRUE);

  if (!precision_or_skip (be, precision))
    return;
  for (guint k = 0; k < n; k++)
    {
      ConvCase c;
      size_t np;
      g_autofree double *act = NULL, *y = NULL, *dyp = NULL;
      g_autofree double *dx = NULL, *dw = NULL, *db = NULL;
      TachConvPlan *plan;
      float *d_x, *d_w, *d_b, *d_act, *d_dact, *d_y, *d_dy, *d_dx = NULL, *d_dw, *d_db;
      int32_t *d_idx;

      conv_case_init (&c, &descs[k], 1200 + k);
      c.d.precision = precision;
      np = (size_t) c.d.N * c.d.K * (c.oh / 2) * (c.ow / 2);
      act = g_new (double, c.ny);
      y = g_new (double, np);
      dyp = g_new (double, np);
      dx = g_new (double, c.nx);
      dw = g_new (double, c.nw);
      db = g_new (double, c.d.K);
      tach_ref_fill_normal (dyp, np, 1200 + k, 5, 1.0);
      tach_ref_round_to_float (dyp, np);
      ref_block (&c, dyp, act, y, dx, dw, db);

      plan = tach_conv_plan_new (be, &c.d);
      tach_ops_assert_ok (be);
      g_assert_nonnull (plan);
      d_x = tach_ops_upload_d (be, c.x, c.nx);
      d_w = tach_ops_upload_d (be, c.w, c.nw);
      d_b = tach_ops_upload_d (be, c.b, c.d.K);
      d_act = upload_sentinel (be, c.ny);
      d_dact = upload_sentinel (be, c.ny);
      d_idx = tach_ops_alloc (be, np * sizeof (int32_t));
      d_y = upload_sentinel (be, np);
      d_dy = tach_ops_upload_d (be, dyp, np);
      if (c.d.need_dx)
        d_dx = upload_sentinel (be, c.nx);
      d_dw = upload_sentinel (be, c.nw);
      d_db = upload_sentinel (be, c.d.K);

      tach_conv_block_forward (be, plan, &c.d, d_x, d_w, d_b, d_act, d_idx, d_y);
      check ("y", k, be, d_y, y, np, nmse);
      tach_conv_block_backward (be, plan, &c.d, d_x, d_w, d_act, d_idx, d_dy, d_dact, d_dx,
                                d_dw, d_db);
      tach_ops_assert_ok (be);
      check ("dw", k, be, d_dw, dw, c.nw, nmse);
      check ("db", k, be, d_db, db, c.d.K, nmse);
      if (c.d.need_dx)
        check ("dx", k, be, d_dx, dx, c.nx, nmse);

      /* A second forward and backward on the same plan give the same. */
      tach_conv_block_forward (be, plan, &c.d, d_x, d_w, d_b, d_act, d_idx, d_y);
      tach_conv_block_backward (be, plan, &c.d, d_x, d_w, d_act, d_idx, d_dy, d_dact, d_dx,
                                d_dw, d_db);
      check ("y again", k, be, d_y, y, np, nmse);
      check ("dw again", k, be, d_dw, dw, c.nw, nmse);

      /* Handed a copy of act, backward cannot take it for its forward's,
       * so it applies the ReLU's derivative un-pooled rather than to the
       * pooled gradient (the CPU backend): the very same bits. */
      {
        g_autofree float *act_host = tach_ops_download_f (be, d_act, c.ny);
        g_autofree float *dw_1 = tach_ops_download_f (be, d_dw, c.nw);
        g_autofree float *db_1 = tach_ops_download_f (be, d_db, c.d.K);
        g_autofree float *dx_1 = c.d.need_dx ? tach_ops_download_f (be, d_dx, c.nx) : NULL;
        g_autofree float *dw_2 = NULL, *db_2 = NULL, *dx_2 = NULL;
        float *d_act_copy = tach_ops_upload_f (be, act_host, c.ny);

        tach_conv_block_backward (be, plan, &c.d, d_x, d_w, d_act_copy, d_idx, d_dy, d_dact,
                                  d_dx, d_dw, d_db);
        tach_ops_assert_ok (be);
        dw_2 = tach_ops_download_f (be, d_dw, c.nw);
        db_2 = tach_ops_download_f (be, d_db, c.d.K);
        g_assert_cmpmem (dw_2, c.nw * sizeof (float), dw_1, c.nw * sizeof (float));
        g_assert_cmpmem (db_2, c.d.K * sizeof (float), db_1, c.d.K * sizeof (float));
        if (c.d.need_dx)
          {
            dx_2 = tach_ops_download_f (be, d_dx, c.nx);
            g_assert_cmpmem (dx_2, c.nx * sizeof (float), dx_1, c.nx * sizeof (float));
          }
      }
      tach_conv_plan_free (be, plan);
      conv_case_clear (&c);
    }
}

static void
test_conv_block_fp32 (TachBackend *be)
{
  run_conv_block (be, TACH_PRECISION_FP32, block_descs, G_N_ELEMENTS (block_descs));
}

static void
test_conv_block_bf16 (TachBackend *be)
{
  run_conv_block (be, TACH_PRECISION_BF16, block_descs, G_N_ELEMENTS (block_descs));
}

static void
test_conv_block_w3 (TachBackend *be)
{
  run_conv_block (be, TACH_PRECISION_FP32, w3_descs, G_N_ELEMENTS (w3_descs));
}

/* One block's forward and backward on a backend, from the host data of
 * @c and the pooled gradient @dyp, optionally captured as a graph and
 * replayed; the results downloaded into new host arrays (g_free them). */
typedef struct {
  float  *y, *dx, *dw, *db;
  guint64 calls;   /* the backend's checked API calls of the last forward + backward */
} BlockResult;

/* @src rounded to float, or the sentinel where @src is NULL. */
static float *
block_upload (TachBackend *be, GPtrArray *bufs, const double *src, size_t n)
{
  g_autofree float *f = g_new (float, n);
  float *dev = tach_backend_alloc (be, MAX (n, 1) * sizeof (float));

  g_ptr_array_add (bufs, dev);
  if (src == NULL)
    {
      fill_sentinel (be, dev, n);
      return dev;
    }
  for (size_t i = 0; i < n; i++)
    f[i] = (float) src[i];
  tach_backend_upload (be, dev, f, n * sizeof (float));
  return dev;
}

static float *
block_download (TachBackend *be, const float *dev, size_t n)
{
  float *host = g_new (float, n);

  tach_backend_download (be, host, dev, n * sizeof (float));
  return host;
}

static void
block_run (TachBackend *be, ConvCase *c, const double *dyp, gboolean graph, BlockResult *r)
{
  g_autoptr(GPtrArray) bufs = g_ptr_array_new ();
  size_t np = (size_t) c->d.N * c->d.K * (c->oh / 2) * (c->ow / 2);
  TachConvPlan *plan = tach_conv_plan_new (be, &c->d);
  float *d_x, *d_w, *d_b, *d_act, *d_dact, *d_y, *d_dy, *d_dx = NULL, *d_dw, *d_db;
  int32_t *d_idx;
  guint64 before;

  tach_ops_assert_ok (be);
  g_assert_nonnull (plan);
  d_x = block_upload (be, bufs, c->x, c->nx);
  d_w = block_upload (be, bufs, c->w, c->nw);
  d_b = block_upload (be, bufs, c->b, c->d.K);
  d_act = block_upload (be, bufs, NULL, c->ny);
  d_dact = block_upload (be, bufs, NULL, c->ny);
  d_y = block_upload (be, bufs, NULL, np);
  d_dy = block_upload (be, bufs, dyp, np);
  if (c->d.need_dx)
    d_dx = block_upload (be, bufs, NULL, c->nx);
  d_dw = block_upload (be, bufs, NULL, c->nw);
  d_db = block_upload (be, bufs, NULL, c->d.K);
  d_idx = tach_backend_alloc (be, np * sizeof (int32_t));
  g_ptr_array_add (bufs, d_idx);

  /* The first pass settles the plan (cuDNN's first calls, a refused fused
   * call); a capture then records the route the eager steps take. */
  tach_conv_block_forward (be, plan, &c->d, d_x, d_w, d_b, d_act, d_idx, d_y);
  tach_conv_block_backward (be, plan, &c->d, d_x, d_w, d_act, d_idx, d_dy, d_dact, d_dx, d_dw,
                            d_db);
  tach_backend_synchronize (be);
  tach_ops_assert_ok (be);
  if (graph)
    {
      TachGraph *g;

      /* Garbage in every output, so that only the replay can fix them. */
      fill_sentinel (be, d_y, np);
      fill_sentinel (be, d_dw, c->nw);
      fill_sentinel (be, d_db, c->d.K);
      if (d_dx != NULL)
        fill_sentinel (be, d_dx, c->nx);
      tach_graph_begin (be);
      tach_conv_block_forward (be, plan, &c->d, d_x, d_w, d_b, d_act, d_idx, d_y);
      tach_conv_block_backward (be, plan, &c->d, d_x, d_w, d_act, d_idx, d_dy, d_dact, d_dx,
                                d_dw, d_db);
      g = tach_graph_end (be);
      tach_ops_assert_ok (be);
      g_assert_nonnull (g);
      tach_graph_launch (be, g);
      tach_backend_synchronize (be);
      tach_graph_free (be, g);
    }
  else
    {
      before = be->api_calls;
      tach_conv_block_forward (be, plan, &c->d, d_x, d_w, d_b, d_act, d_idx, d_y);
      tach_conv_block_backward (be, plan, &c->d, d_x, d_w, d_act, d_idx, d_dy, d_dact, d_dx,
                                d_dw, d_db);
      r->calls = be->api_calls - before;
    }
  tach_ops_assert_ok (be);
  r->y = block_download (be, d_y, np);
  r->dx = c->d.need_dx ? block_download (be, d_dx, c->nx) : NULL;
  r->dw = block_download (be, d_dw, c->nw);
  r->db = block_download (be, d_db, c->d.K);
  tach_ops_assert_ok (be);
  tach_conv_plan_free (be, plan);
  for (guint i = 0; i < bufs->len; i++)
    tach_backend_dealloc (be, g_ptr_array_index (bufs, i));
}

static void
block_result_clear (BlockResult *r)
{
  g_free (r->y);
  g_free (r->dx);
  g_free (r->dw);
  g_free (r->db);
}

/* Holds @got (the @route's) to @want (both float) to @nmse. */
static void
check_same (const char *what, const char *route, guint k, const float *got, const float *want,
            size_t n, double nmse)
{
  g_autofree char *name = g_strdup_printf ("conv block %u, %s: %s", k, route, what);
  g_autofree double *w = g_new (double, n);

  for (size_t i = 0; i < n; i++)
    w[i] = want[i];
  tach_ops_assert_nmse (name, got, w, n, nmse);
}

static double *
block_dy (ConvCase *c, guint64 seed)
{
  size_t np = (size_t) c->d.N * c->d.K * (c->oh / 2) * (c->ow / 2);
  double *dyp = g_new (double, np);

  tach_ref_fill_normal (dyp, np, seed, 5, 1.0);
  tach_ref_round_to_float (dyp, np);
  return dyp;
}

/* A step captured as a graph gives the eager step's bits: the block's ops
 * neither allocate nor wait inside the capture.  (The eager step against
 * the reference first, on every backend.) */
static void
test_conv_block_graph (TachBackend *be)
{
  gboolean graphs = tach_backend_has_graphs (be);

  for (guint k = 0; k < G_N_ELEMENTS (block_descs); k++)
    {
      ConvCase c;
      g_autofree double *dyp = NULL, *act = NULL, *y = NULL, *dx = NULL, *dw = NULL, *db = NULL;
      BlockResult eager = { 0 }, replay = { 0 };

      conv_case_init (&c, &block_descs[k], 1300 + k);
      dyp = block_dy (&c, 1300 + k);
      act = g_new (double, c.ny);
      y = g_new (double, (size_t) c.d.N * c.d.K * (c.oh / 2) * (c.ow / 2));
      dx = g_new (double, c.nx);
      dw = g_new (double, c.nw);
      db = g_new (double, c.d.K);
      ref_block (&c, dyp, act, y, dx, dw, db);
      block_run (be, &c, dyp, FALSE, &eager);
      tach_ops_assert_nmse ("eager y", eager.y, y, (size_t) c.d.N * c.d.K * (c.oh / 2) * (c.ow / 2),
                            TACH_OPS_NMSE_DEEP);
      tach_ops_assert_nmse ("eager dw", eager.dw, dw, c.nw, TACH_OPS_NMSE_DEEP);
      tach_ops_assert_nmse ("eager db", eager.db, db, c.d.K, TACH_OPS_NMSE_DEEP);
      if (c.d.need_dx)
        tach_ops_assert_nmse ("eager dx", eager.dx, dx, c.nx, TACH_OPS_NMSE_DEEP);
      if (!graphs)
        {
          block_result_clear (&eager);
          conv_case_clear (&c);
          continue;
        }
      block_run (be, &c, dyp, TRUE, &replay);
      g_assert_cmpmem (replay.y, sizeof (float) * c.d.N * c.d.K * (c.oh / 2) * (c.ow / 2),
                       eager.y, sizeof (float) * c.d.N * c.d.K * (c.oh / 2) * (c.ow / 2));
      g_assert_cmpmem (replay.dw, sizeof (float) * c.nw, eager.dw, sizeof (float) * c.nw);
      g_assert_cmpmem (replay.db, sizeof (float) * c.d.K, eager.db, sizeof (float) * c.d.K);
      if (c.d.need_dx)
        g_assert_cmpmem (replay.dx, sizeof (float) * c.nx, eager.dx, sizeof (float) * c.nx);
      block_result_clear (&eager);
      block_result_clear (&replay);
      conv_case_clear (&c);
    }
  if (!graphs)
    g_test_skip_printf ("%s captures no graphs (its eager block checked)", be->device->id);
}

/* A CUDA backend made with TACH_CUDA_PLAIN set to @plain ("" for none). */
static TachBackend *
cuda_with_plain (const char *device_id, const char *plain)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *saved = g_strdup (g_getenv ("TACH_CUDA_PLAIN"));
  TachBackend *be;

  g_setenv ("TACH_CUDA_PLAIN", plain, TRUE);
  be = tach_backend_new (device_id, 2, TACH_PRECISION_FP32, &error);
  if (saved != NULL)
    g_setenv ("TACH_CUDA_PLAIN", saved, TRUE);
  else
    g_unsetenv ("TACH_CUDA_PLAIN");
  g_assert_no_error (error);
  g_assert_nonnull (be);
  return be;
}

/* The fused block (cuDNN's conv + bias + ReLU, the pool kernel with the
 * ReLU's mask in its argmax, one backward pass for pool, mask and bias)
 * and its split route (cuDNN's conv, bias and ReLU in the pool pass:
 * TACH_CUDA_PLAIN=conv-fuse, or where cuDNN refuses the fused call)
 * compute what the separate passes of TACH_CUDA_PLAIN=conv compute, in
 * fewer calls. */
static void
test_conv_block_plain_same (TachBackend *be)
{
  TachBackend *lean = cuda_with_plain (be->device->id, "");
  TachBackend *split = cuda_with_plain (be->device->id, "conv-fuse");
  TachBackend *plain = cuda_with_plain (be->device->id, "conv");

  for (guint k = 0; k < G_N_ELEMENTS (block_descs); k++)
    {
      ConvCase c;
      g_autofree double *dyp = NULL;
      BlockResult b = { 0 };
      size_t np;

      conv_case_init (&c, &block_descs[k], 1400 + k);
      np = (size_t) c.d.N * c.d.K * (c.oh / 2) * (c.ow / 2);
      dyp = block_dy (&c, 1400 + k);
      block_run (plain, &c, dyp, FALSE, &b);
      {
        g_autofree char *notes = tach_backend_dup_algorithms (plain);

        g_assert_nonnull (notes);
        g_assert_nonnull (strstr (notes, "(plain)"));
      }
      for (int route = 0; route < 2; route++)
        {
          BlockResult a = { 0 };
          const char *name = route == 0 ? "fused" : "split";

          block_run (route == 0 ? lean : split, &c, dyp, FALSE, &a);
          g_test_message ("conv block %u: %" G_GUINT64_FORMAT " calls %s, %" G_GUINT64_FORMAT
                          " plain", k, a.calls, name, b.calls);
          check_same ("y vs plain", name, k, a.y, b.y, np, TACH_OPS_NMSE_SIMPLE);
          check_same ("dw vs plain", name, k, a.dw, b.dw, c.nw, TACH_OPS_NMSE_SIMPLE);
          check_same ("db vs plain", name, k, a.db, b.db, c.d.K, TACH_OPS_NMSE_SIMPLE);
          if (c.d.need_dx)
            check_same ("dx vs plain", name, k, a.dx, b.dx, c.nx, TACH_OPS_NMSE_SIMPLE);
          g_assert_cmpuint (a.calls, <, b.calls);
          block_result_clear (&a);
          {
            /* The route each block took is noted; cuDNN 9 documents the
             * fused fp32 conv + bias + ReLU with IMPLICIT_PRECOMP_GEMM, so
             * a lean block that fell back to split is a finding, not a
             * pass. */
            g_autofree char *notes = tach_backend_dup_algorithms (route == 0 ? lean : split);
            g_autofree char *want = g_strdup_printf ("(%s)", name);

            g_test_message ("conv block %u routes: %s", k, notes);
            g_assert_nonnull (notes);
            g_assert_nonnull (strstr (notes, want));
            g_assert_null (strstr (notes, route == 0 ? "(split)" : "(fused)"));
          }
        }
      block_result_clear (&b);
      conv_case_clear (&c);
    }
  tach_backend_free (lean);
  tach_backend_free (split);
  tach_backend_free (plain);
}

/* Two blocks in a row, the first's pooled output the second's input, as
 * the cnn runs them; with @native the first plans y_native and the second
 * x_native (TachConvDesc), so the pair may pass its activations in the
 * backend's layout.  Downloads the second's y, and dw, db and (when
 * planned) dx of both. */
typedef struct {
  float *y, *dw[2], *db[2], *dx;
} ChainResult;

static void
chain_run (TachBackend *be, ConvCase *c, const double *dyp, gboolean native, ChainResult *r)
{
  g_autoptr(GPtrArray) bufs = g_ptr_array_new ();
  TachConvDesc d[2] = { c[0].d, c[1].d };
  TachConvPlan *plan[2];
  size_t np[2];
  float *x[3], *w[2], *b[2], *act[2], *dact[2], *dy[2], *dx[2], *dw[2], *db[2];
  int32_t *idx[2];

  d[0].y_native = native;
  d[1].x_native = native;
  x[0] = block_upload (be, bufs, c[0].x, c[0].nx);
  for (int i = 0; i < 2; i++)
    {
      np[i] = (size_t) d[i].N * d[i].K * (c[i].oh / 2) * (c[i].ow / 2);
      plan[i] = tach_conv_plan_new (be, &d[i]);
      tach_ops_assert_ok (be);
      w[i] = block_upload (be, bufs, c[i].w, c[i].nw);
      b[i] = block_upload (be, bufs, c[i].b, d[i].K);
      act[i] = block_upload (be, bufs, NULL, c[i].ny);
      dact[i] = block_upload (be, bufs, NULL, c[i].ny);
      x[i + 1] = block_upload (be, bufs, NULL, np[i]);
      dx[i] = d[i].need_dx ? block_upload (be, bufs, NULL, c[i].nx) : NULL;
      dw[i] = block_upload (be, bufs, NULL, c[i].nw);
      db[i] = block_upload (be, bufs, NULL, d[i].K);
      idx[i] = tach_backend_alloc (be, np[i] * sizeof (int32_t));
      g_ptr_array_add (bufs, idx[i]);
    }
  dy[1] = block_upload (be, bufs, dyp, np[1]);
  dy[0] = dx[1];
  for (int i = 0; i < 2; i++)
    tach_conv_block_forward (be, plan[i], &d[i], x[i], w[i], b[i], act[i], idx[i], x[i + 1]);
  for (int i = 1; i >= 0; i--)
    tach_conv_block_backward (be, plan[i], &d[i], x[i], w[i], act[i], idx[i], dy[i], dact[i],
                              dx[i], dw[i], db[i]);
  tach_ops_assert_ok (be);
  r->y = block_download (be, x[2], np[1]);
  r->dx = d[0].need_dx ? block_download (be, dx[0], c[0].nx) : NULL;
  for (int i = 0; i < 2; i++)
    {
      r->dw[i] = block_download (be, dw[i], c[i].nw);
      r->db[i] = block_download (be, db[i], d[i].K);
      tach_conv_plan_free (be, plan[i]);
    }
  for (guint i = 0; i < bufs->len; i++)
    tach_backend_dealloc (be, g_ptr_array_index (bufs, i));
}

static void
chain_result_clear (ChainResult *r)
{
  g_free (r->y);
  g_free (r->dx);
  for (int i = 0; i < 2; i++)
    {
      g_free (r->dw[i]);
      g_free (r->db[i]);
    }
}

/* The native layouts between two blocks change no bit of anything that
 * leaves the pair (their own blocked copies are the same values), with
 * channels the native layout blocks (32) and channels it leaves plain (20,
 * 12), in each precision the backend has. */
static void
test_conv_block_native (TachBackend *be)
{
  static const TachConvDesc pairs[][2] = {
    { {  2, 1, 12, 12, 32, 5, 5, 2, 2, FALSE, TACH_PRECISION_FP32, TRUE },
      {  2, 32, 6, 6, 16, 5, 5, 2, 2, TRUE, TACH_PRECISION_FP32, TRUE } },
    { {  3, 2, 10, 9, 20, 3, 3, 1, 1, TRUE, TACH_PRECISION_FP32, TRUE },
      {  3, 20, 5, 4, 12, 3, 3, 1, 1, TRUE, TACH_PRECISION_FP32, TRUE } },
  };
  TachPrecision precisions[] = { TACH_PRECISION_FP32, TACH_PRECISION_BF16 };

  for (guint p = 0; p < G_N_ELEMENTS (precisions); p++)
    for (guint k = 0; k < G_N_ELEMENTS (pairs); k++)
      {
        ConvCase c[2];
        g_autofree double *dyp = NULL;
        ChainResult plain = { 0 }, native = { 0 };

        if (precisions[p] == TACH_PRECISION_BF16
            && !tach_backend_supports (be->device->id, "precision", "bf16", NULL))
          continue;
        for (int i = 0; i < 2; i++)
          {
            conv_case_init (&c[i], &pairs[k][i], 1300 + 2 * k + i);
            c[i].d.precision = precisions[p];
          }
        dyp = block_dy (&c[1], 1310 + k);
        chain_run (be, c, dyp, FALSE, &plain);
        chain_run (be, c, dyp, TRUE, &native);
        g_assert_cmpmem (native.y, sizeof (float) * c[1].d.N * c[1].d.K * (c[1].oh / 2)
                                   * (c[1].ow / 2),
                         plain.y, sizeof (float) * c[1].d.N * c[1].d.K * (c[1].oh / 2)
                                  * (c[1].ow / 2));
        for (int i = 0; i < 2; i++)
          {
            g_assert_cmpmem (native.dw[i], sizeof (float) * c[i].nw, plain.dw[i],
                             sizeof (float) * c[i].nw);
            g_assert_cmpmem (native.db[i], sizeof (float) * c[i].d.K, plain.db[i],
                             sizeof (float) * c[i].d.K);
          }
        if (c[0].d.need_dx)
          g_assert_cmpmem (native.dx, sizeof (float) * c[0].nx, plain.dx,
                           sizeof (float) * c[0].nx);
        chain_result_clear (&plain);
        chain_result_clear (&native);
        for (int i = 0; i < 2; i++)
          conv_case_clear (&c[i]);
      }
}

/* A path of the CPU backend's own (Winograd, one input channel's
 * gradients) on @descs against the reference in double (fp32's bound),
 * and against oneDNN's direct convolution (TACH_CPU_CONV=direct): the
 * same numbers within that bound, and where the backend has vector
 * kernels (not under TACH_CPU_ISA=baseline, which has neither path) other
 * bits, so that the path did run: on every shape with @each_differs, else
 * on some (the same sums in another order, which for a small shape can be
 * oneDNN's order). */
static void
own_against_direct (TachBackend *be, const char *what, const TachConvDesc *descs, guint n,
                    guint seed, gboolean each_differs)
{
  guint differ = 0;

  run_conv_block (be, TACH_PRECISION_FP32, descs, n);
  for (guint k = 0; k < n; k++)
    {
      ConvCase c;
      g_autofree double *dyp = NULL, *y = NULL, *dw = NULL;
      g_autofree char *name_y = g_strdup_printf ("%s %u: y", what, k);
      g_autofree char *name_dw = g_strdup_printf ("%s %u: dw", what, k);
      BlockResult own = { 0 }, direct = { 0 };
      size_t np;

      conv_case_init (&c, &descs[k], seed + k);
      np = (size_t) c.d.N * c.d.K * (c.oh / 2) * (c.ow / 2);
      dyp = block_dy (&c, seed + 20 + k);
      block_run (be, &c, dyp, FALSE, &own);
      g_setenv ("TACH_CPU_CONV", "direct", TRUE);
      block_run (be, &c, dyp, FALSE, &direct);
      g_unsetenv ("TACH_CPU_CONV");
      if (memcmp (own.y, direct.y, np * sizeof (float)) != 0
          || memcmp (own.dw, direct.dw, c.nw * sizeof (float)) != 0)
        differ++;
      else
        g_assert_true (!each_differs || strstr (be->device->versions, "avx") == NULL);
      for (int i = 0; i < c.d.K; i++)
        g_assert_cmpfloat_with_epsilon (own.db[i], direct.db[i],
                                        1e-5 * (1.0 + fabs (direct.db[i])));
      y = g_new (double, np);
      dw = g_new (double, c.nw);
      for (size_t i = 0; i < np; i++)
        y[i] = direct.y[i];
      for (size_t i = 0; i < c.nw; i++)
        dw[i] = direct.dw[i];
      tach_ops_assert_nmse (name_y, own.y, y, np, TACH_OPS_NMSE_DEEP);
      tach_ops_assert_nmse (name_dw, own.dw, dw, c.nw, TACH_OPS_NMSE_DEEP);
      block_result_clear (&own);
      block_result_clear (&direct);
      conv_case_clear (&c);
    }
  if (strstr (be->device->versions, "avx") != NULL)
    g_assert_cmpuint (differ, >, 0);
}

static void
test_conv_block_winograd (TachBackend *be)
{
  own_against_direct (be, "winograd", wino_descs, G_N_ELEMENTS (wino_descs), 1400, TRUE);
}

static void
test_conv_block_dw1 (TachBackend *be)
{
  own_against_direct (be, "one channel", dw1_descs, G_N_ELEMENTS (dw1_descs), 1500, FALSE);
}

void
tach_ops_register_conv_block (const char *device_id)
{
  tach_ops_add (device_id, "conv-block/fp32", test_conv_block_fp32);
  tach_ops_add (device_id, "conv-block/bf16", test_conv_block_bf16);
  tach_ops_add (device_id, "conv-block/graph", test_conv_block_graph);
  tach_ops_add (device_id, "conv-block/native", test_conv_block_native);
  if (g_str_equal (device_id, "cpu"))
    {
      tach_ops_add (device_id, "conv-block/winograd", test_conv_block_winograd);
      tach_ops_add (device_id, "conv-block/one-channel", test_conv_block_dw1);
    }
  if (g_str_has_prefix (device_id, "cuda"))
    {
      tach_ops_add (device_id, "conv-block/plain-same", test_conv_block_plain_same);
      tach_ops_add (device_id, "conv-block/w3", test_conv_block_w3);
    }
}
