/* test-ops-loss.c: max over time, the two losses and accuracy. */
#include <math.h>
#include <string.h>

#include "tach-rand.h"
#include "test-ops-common.h"

enum { MN = 4, MT = 6, MC = 5 };

static void
test_max_over_time (TachBackend *be)
{
  size_t nx = MN * MT * MC, ny = MN * MC;
  g_autofree double *x = g_new (double, nx);
  g_autofree double *y = g_new (double, ny);
  g_autofree double *dy = g_new (double, ny);
  g_autofree double *dx = g_new (double, nx);
  g_autofree float *sentinel = g_new (float, nx);
  g_autofree float *got = NULL;
  float *d_x, *d_y, *d_dy, *d_dx;
  int32_t *d_idx;

  tach_ref_fill_normal (x, nx, 600, 1, 1.0);
  tach_ref_fill_normal (dy, ny, 600, 2, 1.0);
  tach_ref_round_to_float (x, nx);
  tach_ref_round_to_float (dy, ny);
  /* The op zeroes dx itself: start from garbage to see that it does. */
  for (size_t i = 0; i < nx; i++)
    sentinel[i] = 7.0f;
  d_x = tach_ops_upload_d (be, x, nx);
  d_y = tach_ops_alloc (be, ny * sizeof (float));
  d_idx = tach_ops_alloc (be, ny * sizeof (int32_t));
  d_dy = tach_ops_upload_d (be, dy, ny);
  d_dx = tach_ops_upload_f (be, sentinel, nx);
  tach_op (be, max_over_time_fwd, d_x, d_y, d_idx, MN, MT, MC);
  tach_op (be, max_over_time_bwd, d_dy, d_idx, d_dx, MN, MT, MC);

  tach_ref_max_over_time_fwd (x, y, MN, MT, MC);
  tach_ref_max_over_time_bwd (x, dy, dx, MN, MT, MC);
  got = tach_ops_download_f (be, d_y, ny);
  tach_ops_assert_nmse ("max_over_time_fwd", got, y, ny, TACH_OPS_NMSE_SIMPLE);
  g_free (got);
  got = tach_ops_download_f (be, d_dx, nx);
  tach_ops_assert_nmse ("max_over_time_bwd", got, dx, nx, TACH_OPS_NMSE_SIMPLE);
}

typedef struct {
  double *x, *r;
} MotLoss;

static double
mot_loss (gpointer data)
{
  MotLoss *l = data;
  double y[MN * MC], s = 0.0;

  tach_ref_max_over_time_fwd (l->x, y, MN, MT, MC);
  for (int i = 0; i < MN * MC; i++)
    s += y[i] * l->r[i];
  return s;
}

static void
test_ref_max_over_time_gradient (void)
{
  double x[MN * MT * MC], r[MN * MC], dx[MN * MT * MC];
  MotLoss l = { x, r };

  tach_ref_fill_normal (x, MN * MT * MC, 610, 1, 1.0);
  tach_ref_fill_normal (r, MN * MC, 610, 2, 1.0);
  tach_ref_max_over_time_bwd (x, r, dx, MN, MT, MC);
  g_assert_cmpfloat (tach_ops_fd_error (mot_loss, &l, x, MN * MT * MC, dx, 1e-6), <, 1e-8);
}

enum { BN = 64 };

static void
bce_inputs (double *logits, double *labels, guint64 seed)
{
  tach_ref_fill_normal (logits, BN, seed, 1, 3.0);
  for (int i = 0; i < BN; i++)
    labels[i] = tach_rand_uniform (seed, 2, i) < 0.5f ? 0.0 : 1.0;
  tach_ref_round_to_float (logits, BN);
}

static void
test_sigmoid_bce (TachBackend *be)
{
  double logits[BN], labels[BN], dlogits[BN], loss;
  g_autofree float *got = NULL;
  float *d_logits, *d_labels, *d_loss, *d_loss2, *d_dlogits;
  float got_loss;

  bce_inputs (logits, labels, 700);
  /* Saturated logits, right and wrong: a naive log(sigmoid) gives inf here. */
  logits[0] = 100.0;  labels[0] = 0.0;
  logits[1] = -100.0; labels[1] = 1.0;
  logits[2] = 40.0;   labels[2] = 1.0;
  logits[3] = -40.0;  labels[3] = 0.0;
  d_logits = tach_ops_upload_d (be, logits, BN);
  d_labels = tach_ops_upload_d (be, labels, BN);
  d_loss = tach_ops_alloc (be, sizeof (float));
  d_loss2 = tach_ops_alloc (be, sizeof (float));
  d_dlogits = tach_ops_alloc (be, BN * sizeof (float));
  tach_op (be, sigmoid_bce, d_logits, d_labels, BN, d_loss, d_dlogits);
  tach_op (be, sigmoid_bce, d_logits, d_labels, BN, d_loss2, NULL);

  loss = tach_ref_sigmoid_bce (logits, labels, BN, dlogits);
  got_loss = tach_ops_download_scalar (be, d_loss);
  tach_ops_assert_nmse ("sigmoid_bce loss", &got_loss, &loss, 1, TACH_OPS_NMSE_SIMPLE);
  got_loss = tach_ops_download_scalar (be, d_loss2);
  tach_ops_assert_nmse ("sigmoid_bce loss without dlogits", &got_loss, &loss, 1,
                        TACH_OPS_NMSE_SIMPLE);
  got = tach_ops_download_f (be, d_dlogits, BN);
  tach_ops_assert_nmse ("sigmoid_bce dlogits", got, dlogits, BN, TACH_OPS_NMSE_SIMPLE);
}

typedef struct {
  double  *logits, *labels_f;
  int32_t *labels_i;
  int      n, classes;
} LossData;

static double
bce_loss (gpointer data)
{
  LossData *l = data;

  return tach_ref_sigmoid_bce (l->logits, l->labels_f, l->n, NULL);
}

static void
test_ref_sigmoid_bce_gradient (void)
{
  double logits[BN], labels[BN], dlogits[BN];
  LossData l = { logits, labels, NULL, BN, 1 };

  bce_inputs (logits, labels, 710);
  tach_ref_sigmoid_bce (logits, labels, BN, dlogits);
  g_assert_cmpfloat (tach_ops_fd_error (bce_loss, &l, logits, BN, dlogits, 1e-5), <, 1e-7);
  /* The stable form must agree with the textbook one where both are finite. */
  {
    double s = 0.0;

    for (int i = 0; i < BN; i++)
      {
        double p = 1.0 / (1.0 + exp (-logits[i]));

        s -= labels[i] * log (p) + (1.0 - labels[i]) * log (1.0 - p);
      }
    g_assert_cmpfloat (fabs (s / BN - bce_loss (&l)), <, 1e-12);
  }
}

enum { SN = 8, SC = 10 };

static void
softmax_inputs (double *logits, int32_t *labels, guint64 seed)
{
  tach_ref_fill_normal (logits, SN * SC, seed, 1, 2.0);
  for (int i = 0; i < SN; i++)
    labels[i] = (int32_t) (tach_rand_bits (seed, 2, i) % SC);
  /* One row far from zero: only a max-shifted softmax survives it. */
  for (int k = 0; k < SC; k++)
    logits[SC + k] += 90.0;
  tach_ref_round_to_float (logits, SN * SC);
}

static void
test_softmax_ce (TachBackend *be)
{
  double logits[SN * SC], dlogits[SN * SC], loss;
  int32_t labels[SN];
  g_autofree float *got = NULL;
  float *d_logits, *d_loss, *d_loss2, *d_dlogits;
  int32_t *d_labels;
  float got_loss;

  softmax_inputs (logits, labels, 720);
  d_logits = tach_ops_upload_d (be, logits, SN * SC);
  d_labels = tach_ops_upload_i (be, labels, SN);
  d_loss = tach_ops_alloc (be, sizeof (float));
  d_loss2 = tach_ops_alloc (be, sizeof (float));
  d_dlogits = tach_ops_alloc (be, SN * SC * sizeof (float));
  tach_op (be, softmax_ce, d_logits, d_labels, SN, SC, d_loss, d_dlogits);
  tach_op (be, softmax_ce, d_logits, d_labels, SN, SC, d_loss2, NULL);

  loss = tach_ref_softmax_ce (logits, labels, SN, SC, dlogits);
  got_loss = tach_ops_download_scalar (be, d_loss);
  tach_ops_assert_nmse ("softmax_ce loss", &got_loss, &loss, 1, TACH_OPS_NMSE_SIMPLE);
  got_loss = tach_ops_download_scalar (be, d_loss2);
  tach_ops_assert_nmse ("softmax_ce loss without dlogits", &got_loss, &loss, 1,
                        TACH_OPS_NMSE_SIMPLE);
  got = tach_ops_download_f (be, d_dlogits, SN * SC);
  tach_ops_assert_nmse ("softmax_ce dlogits", got, dlogits, SN * SC, TACH_OPS_NMSE_SIMPLE);
}

/* The shapes of the workloads' heads and of a warp-parallel kernel's
 * edges: W3's 256 x 10, W2's 554 classes at batch 1 and 64, fewer classes
 * than a warp, a warp's worth of rows and more, logits up to 3 sigma; and
 * lstm-lm training's thousands of rows, which a GPU spreads over many
 * blocks (9000 x 554: more rows than its largest grid takes in one pass).
 * The loss is summed in a fixed order: a second launch gives its bits. */
static void
test_softmax_ce_shapes (TachBackend *be)
{
  static const int shapes[][2] = {
    { 256, 10 }, { 1, 554 }, { 64, 554 }, { 300, 11 }, { 33, 32 }, { 7, 1 }, { 40, 2000 },
    { 9000, 554 }, { 4000, 10 }, { 3000, 1 },
  };

  for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      int n = shapes[s][0], classes = shapes[s][1];
      size_t nc = (size_t) n * classes;
      g_autofree double *logits = g_new (double, nc);
      g_autofree double *dlogits = g_new (double, nc);
      g_autofree int32_t *labels = g_new (int32_t, n);
      g_autofree float *got = NULL;
      g_autofree char *what = g_strdup_printf ("softmax_ce %dx%d", n, classes);
      float *d_logits, *d_loss, *d_loss2, *d_loss3, *d_dlogits;
      int32_t *d_labels;
      double loss;
      float got_loss, again;

      tach_ref_fill_normal (logits, nc, 725 + s, 1, 3.0);
      tach_ref_round_to_float (logits, nc);
      for (int i = 0; i < n; i++)
        labels[i] = (int32_t) (tach_rand_bits (725 + s, 2, i) % classes);
      d_logits = tach_ops_upload_d (be, logits, nc);
      d_labels = tach_ops_upload_i (be, labels, n);
      d_loss = tach_ops_alloc (be, sizeof (float));
      d_loss2 = tach_ops_alloc (be, sizeof (float));
      d_loss3 = tach_ops_alloc (be, sizeof (float));
      d_dlogits = tach_ops_alloc (be, nc * sizeof (float));
      tach_op (be, softmax_ce, d_logits, d_labels, n, classes, d_loss, d_dlogits);
      tach_op (be, softmax_ce, d_logits, d_labels, n, classes, d_loss2, NULL);
      tach_op (be, softmax_ce, d_logits, d_labels, n, classes, d_loss3, d_dlogits);

      loss = tach_ref_softmax_ce (logits, labels, n, classes, dlogits);
      got_loss = tach_ops_download_scalar (be, d_loss);
      tach_ops_assert_nmse (what, &got_loss, &loss, 1, TACH_OPS_NMSE_SIMPLE);
      again = tach_ops_download_scalar (be, d_loss3);
      g_assert_cmpmem (&again, sizeof again, &got_loss, sizeof got_loss);
      got_loss = tach_ops_download_scalar (be, d_loss2);
      tach_ops_assert_nmse (what, &got_loss, &loss, 1, TACH_OPS_NMSE_SIMPLE);
      got = tach_ops_download_f (be, d_dlogits, nc);
      tach_ops_assert_nmse (what, got, dlogits, nc, TACH_OPS_NMSE_SIMPLE);
    }
}

/* A label out of range fails with the data error on every backend: at the
 * op on the CPU, at the next wait on an asynchronous device; the backend
 * works again once the error is taken.  labels[@bad] is set to @wrong,
 * then back. */
static void
assert_bad_label (TachBackend *be, const double *logits, int32_t *labels, int n, int classes,
                  int bad, int32_t wrong)
{
  size_t nc = (size_t) n * classes;
  g_autofree double *dlogits = g_new (double, nc);
  g_autofree char *message = g_strdup_printf ("label %d of row %d is not in [0, %d)", wrong, bad,
                                              classes);
  g_autoptr(GError) error = NULL;
  int32_t right = labels[bad];
  float *d_logits, *d_loss, got;
  int32_t *d_labels;
  double want;

  labels[bad] = wrong;
  d_logits = tach_ops_upload_d (be, logits, nc);
  d_labels = tach_ops_upload_i (be, labels, n);
  d_loss = tach_ops_alloc (be, sizeof (float));
  tach_op (be, softmax_ce, d_logits, d_labels, n, classes, d_loss, NULL);
  tach_backend_synchronize (be);
  g_assert_false (tach_backend_take_error (be, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  g_assert_nonnull (strstr (error->message, message));

  labels[bad] = right;
  tach_backend_upload (be, d_labels, labels, n * sizeof (int32_t));
  tach_op (be, softmax_ce, d_logits, d_labels, n, classes, d_loss, NULL);
  tach_backend_synchronize (be);
  tach_ops_assert_ok (be);
  want = tach_ref_softmax_ce (logits, labels, n, classes, dlogits);
  got = tach_ops_download_scalar (be, d_loss);
  tach_ops_assert_nmse ("softmax_ce loss after the error", &got, &want, 1, TACH_OPS_NMSE_SIMPLE);
}

static void
test_softmax_ce_bad_label (TachBackend *be)
{
  double logits[SN * SC];
  int32_t labels[SN];

  softmax_inputs (logits, labels, 721);
  assert_bad_label (be, logits, labels, SN, SC, 2, SC);
}

/* The same over rows that a GPU spreads over blocks: the bad row is found
 * in whichever block holds it, and the next loss (whose blocks' sums go
 * through the same scratch) is right. */
static void
test_softmax_ce_bad_label_wide (TachBackend *be)
{
  enum { N = 3000, C = 40 };
  g_autofree double *logits = g_new (double, N * C);
  g_autofree int32_t *labels = g_new (int32_t, N);

  tach_ref_fill_normal (logits, N * C, 722, 1, 2.0);
  tach_ref_round_to_float (logits, N * C);
  for (int i = 0; i < N; i++)
    labels[i] = (int32_t) (tach_rand_bits (722, 2, i) % C);
  assert_bad_label (be, logits, labels, N, C, 2345, -1);
}

static double
softmax_loss (gpointer data)
{
  LossData *l = data;

  return tach_ref_softmax_ce (l->logits, l->labels_i, l->n, l->classes, NULL);
}

static void
test_ref_softmax_ce_gradient (void)
{
  double logits[SN * SC], dlogits[SN * SC];
  int32_t labels[SN];
  LossData l = { logits, NULL, labels, SN, SC };

  softmax_inputs (logits, labels, 730);
  tach_ref_softmax_ce (logits, labels, SN, SC, dlogits);
  g_assert_cmpfloat (tach_ops_fd_error (softmax_loss, &l, logits, SN * SC, dlogits, 1e-5), <, 1e-7);
}

static void
test_accuracy (TachBackend *be)
{
  enum { N = 50, C = 7 };
  double logits_b[N], labels_f[N], logits_m[N * C], want;
  int32_t labels_i[N];
  float *d_lb, *d_lf, *d_lm, *d_acc_b, *d_acc_m;
  int32_t *d_li;
  float got;

  tach_ref_fill_normal (logits_b, N, 740, 1, 1.0);
  tach_ref_fill_normal (logits_m, N * C, 740, 2, 1.0);
  tach_ref_round_to_float (logits_b, N);
  tach_ref_round_to_float (logits_m, N * C);
  for (int i = 0; i < N; i++)
    {
      labels_f[i] = tach_rand_uniform (740, 3, i) < 0.5f ? 0.0 : 1.0;
      labels_i[i] = (int32_t) (tach_rand_bits (740, 4, i) % C);
    }
  /* Make the argmax case right often enough that 0 and 1 are both far. */
  for (int i = 0; i < N; i += 2)
    logits_m[(size_t) i * C + labels_i[i]] += 5.0;

  d_lb = tach_ops_upload_d (be, logits_b, N);
  d_lf = tach_ops_upload_d (be, labels_f, N);
  d_lm = tach_ops_upload_d (be, logits_m, N * C);
  d_li = tach_ops_upload_i (be, labels_i, N);
  d_acc_b = tach_ops_alloc (be, sizeof (float));
  d_acc_m = tach_ops_alloc (be, sizeof (float));
  tach_op (be, accuracy, d_lb, d_lf, N, 1, d_acc_b);
  tach_op (be, accuracy, d_lm, d_li, N, C, d_acc_m);

  want = tach_ref_accuracy (logits_b, labels_f, NULL, N, 1);
  g_assert_cmpfloat (want, >, 0.0);
  g_assert_cmpfloat (want, <, 1.0);
  got = tach_ops_download_scalar (be, d_acc_b);
  g_assert_cmpfloat_with_epsilon (got, want, 1e-6);
  want = tach_ref_accuracy (logits_m, NULL, labels_i, N, C);
  g_assert_cmpfloat (want, >, 0.5);
  g_assert_cmpfloat (want, <, 1.0);
  got = tach_ops_download_scalar (be, d_acc_m);
  g_assert_cmpfloat_with_epsilon (got, want, 1e-6);
}

/* The reference accuracy on cases counted by hand. */
static void
test_ref_accuracy (void)
{
  double lb[4] = { 1.5, -0.5, 0.2, -3.0 }, lf[4] = { 1, 1, 0, 0 };
  double lm[3 * 3] = { 0.1, 0.9, 0.0,   2.0, -1.0, 1.0,   0.0, 0.0, 3.0 };
  int32_t li[3] = { 1, 2, 2 };

  g_assert_cmpfloat (tach_ref_accuracy (lb, lf, NULL, 4, 1), ==, 0.5);
  g_assert_cmpfloat_with_epsilon (tach_ref_accuracy (lm, NULL, li, 3, 3), 2.0 / 3.0, 1e-15);
}

void
tach_ops_register_loss (const char *device_id)
{
  if (device_id == NULL)
    {
      tach_ops_add_ref ("max-over-time/gradient", test_ref_max_over_time_gradient);
      tach_ops_add_ref ("sigmoid-bce/gradient", test_ref_sigmoid_bce_gradient);
      tach_ops_add_ref ("softmax-ce/gradient", test_ref_softmax_ce_gradient);
      tach_ops_add_ref ("accuracy/by-hand", test_ref_accuracy);
      return;
    }
  tach_ops_add (device_id, "max-over-time/forward-backward", test_max_over_time);
  tach_ops_add (device_id, "sigmoid-bce/forward-backward", test_sigmoid_bce);
  tach_ops_add (device_id, "softmax-ce/forward-backward", test_softmax_ce);
  tach_ops_add (device_id, "softmax-ce/shapes", test_softmax_ce_shapes);
  tach_ops_add (device_id, "softmax-ce/label-out-of-range", test_softmax_ce_bad_label);
  tach_ops_add (device_id, "softmax-ce/label-out-of-range-wide", test_softmax_ce_bad_label_wide);
  tach_ops_add (device_id, "accuracy/binary-and-argmax", test_accuracy);
}
