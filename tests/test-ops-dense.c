/* test-ops-dense.c: gemm (all transposes, strided), bias and ReLU. */
#include <math.h>
#include <string.h>

#include "tach-rand.h"
#include "test-ops-common.h"

/* Shapes chosen so that m, n and k differ and no stride equals a width. */
enum { GM = 5, GN = 7, GK = 6 };

typedef struct {
  gboolean ta, tb;
  int      lda, ldb, ldc;
  size_t   na, nb, nc;    /* stored elements, padding included */
  double  *a, *b, *c;
} GemmCase;

static void
gemm_case_init (GemmCase *g, gboolean ta, gboolean tb, guint64 seed)
{
  int ra = ta ? GK : GM, rb = tb ? GN : GK;

  g->ta = ta;
  g->tb = tb;
  g->lda = (ta ? GM : GK) + 3;
  g->ldb = (tb ? GK : GN) + 2;
  g->ldc = GN + 1;
  g->na = (size_t) ra * g->lda;
  g->nb = (size_t) rb * g->ldb;
  g->nc = (size_t) GM * g->ldc;
  g->a = g_new (double, g->na);
  g->b = g_new (double, g->nb);
  g->c = g_new (double, g->nc);
  tach_ref_fill_normal (g->a, g->na, seed, 1, 1.0);
  tach_ref_fill_normal (g->b, g->nb, seed, 2, 1.0);
  tach_ref_fill_normal (g->c, g->nc, seed, 3, 1.0);
  tach_ref_round_to_float (g->a, g->na);
  tach_ref_round_to_float (g->b, g->nb);
  tach_ref_round_to_float (g->c, g->nc);
}

static void
gemm_case_clear (GemmCase *g)
{
  g_free (g->a);
  g_free (g->b);
  g_free (g->c);
}

/* Every transpose, strided, with beta 0 (C unread: the NaN there must not
 * leak) and 0.5, against the double reference; @bf16 uses the gemm_bf16
 * slot, which keeps 8 significant bits and sums in fp32. */
static void
check_gemm (TachBackend *be, gboolean bf16, int seed, double threshold)
{
  for (int variant = 0; variant < 8; variant++)
    {
      gboolean ta = variant & 1, tb = (variant >> 1) & 1, accumulate = (variant >> 2) & 1;
      double beta = accumulate ? 0.5 : 0.0;
      g_autofree char *what = g_strdup_printf ("%s ta=%d tb=%d beta=%g",
                                               bf16 ? "gemm_bf16" : "gemm", ta, tb, beta);
      g_autofree float *cin = NULL;
      g_autofree float *got = NULL;
      float *da, *db, *dc;
      GemmCase g;

      gemm_case_init (&g, ta, tb, seed + variant);
      cin = tach_ref_to_float (g.c, g.nc);
      if (!accumulate)
        for (int i = 0; i < GM; i++)
          for (int j = 0; j < GN; j++)
            cin[(size_t) i * g.ldc + j] = NAN;
      da = tach_ops_upload_d (be, g.a, g.na);
      db = tach_ops_upload_d (be, g.b, g.nb);
      dc = tach_ops_upload_f (be, cin, g.nc);
      if (bf16)
        tach_op (be, gemm_bf16, ta, tb, GM, GN, GK, 0.75f, da, g.lda, db, g.ldb, (float) beta,
                 dc, g.ldc);
      else
        tach_op (be, gemm, ta, tb, GM, GN, GK, 0.75f, da, g.lda, db, g.ldb, (float) beta, dc,
                 g.ldc);
      got = tach_ops_download_f (be, dc, g.nc);

      tach_ref_gemm (ta, tb, GM, GN, GK, 0.75, g.a, g.lda, g.b, g.ldb, beta, g.c, g.ldc);
      tach_ops_assert_nmse (what, got, g.c, g.nc, threshold);
      /* The padding column of C belongs to someone else: untouched. */
      for (int i = 0; i < GM; i++)
        g_assert_cmpfloat (got[(size_t) i * g.ldc + GN], ==, cin[(size_t) i * g.ldc + GN]);
      gemm_case_clear (&g);
    }
}

static void
test_gemm_forward (TachBackend *be)
{
  check_gemm (be, FALSE, 100, TACH_OPS_NMSE_SIMPLE);
}

/* gemm_bf16 (optional slot), against the fp64 reference of the unrounded
 * operands, as the bf16 convolutions are held. */
static void
test_gemm_bf16 (TachBackend *be)
{
  const char *why = NULL;

  if (be->ops->gemm_bf16 == NULL
      || !tach_backend_supports (be->device->id, "precision", "bf16", &why))
    {
      g_test_skip_printf ("gemm_bf16 on %s: %s", be->device->id,
                          why != NULL ? why : "no gemm_bf16 slot");
      return;
    }
  check_gemm (be, TRUE, 150, tach_ops_nmse_limit (TACH_PRECISION_BF16, TRUE));
}

/* A product long enough (k = 129) for the math mode to show, at the
 * backend's precision: every transpose, alpha 0.5, beta 0.25. */
static void
test_gemm_wide (TachBackend *be)
{
  const int m = 37, n = 53, k = 129;

  for (int t = 0; t < 4; t++)
    {
      gboolean ta = t & 1, tb = t & 2;
      int lda = ta ? m : k, ldb = tb ? k : n;
      g_autofree double *a = g_new (double, (size_t) m * k);
      g_autofree double *b = g_new (double, (size_t) k * n);
      g_autofree double *c = g_new (double, (size_t) m * n);
      g_autofree float *got = NULL;
      g_autofree char *what = g_strdup_printf ("gemm %dx%dx%d ta=%d tb=%d", m, n, k, ta, tb != 0);
      float *da, *db, *dc;

      tach_ref_fill_normal (a, (size_t) m * k, 160 + t, 1, 1.0);
      tach_ref_fill_normal (b, (size_t) k * n, 160 + t, 2, 1.0);
      tach_ref_fill_normal (c, (size_t) m * n, 160 + t, 3, 1.0);
      tach_ref_round_to_float (a, (size_t) m * k);
      tach_ref_round_to_float (b, (size_t) k * n);
      tach_ref_round_to_float (c, (size_t) m * n);
      da = tach_ops_upload_d (be, a, (size_t) m * k);
      db = tach_ops_upload_d (be, b, (size_t) k * n);
      dc = tach_ops_upload_d (be, c, (size_t) m * n);
      tach_op (be, gemm, ta, tb, m, n, k, 0.5f, da, lda, db, ldb, 0.25f, dc, n);
      tach_ref_gemm (ta, tb, m, n, k, 0.5, a, lda, b, ldb, 0.25, c, n);
      got = tach_ops_download_f (be, dc, (size_t) m * n);
      tach_ops_assert_nmse (what, got, c, (size_t) m * n, tach_ops_nmse_limit (be->precision, TRUE));
    }
}

/* The backward pass of C = op(A) op(B) as models write it: two more gemms
 * whose transposes depend on the forward ones. */
/* The tiny products of generation (a few rows of A against a weight
 * matrix, as x W^T): every row count the CPU backend's small kernels
 * treat apart (m from 1 to 8), n below, at and past whole blocks of
 * sixteen (AVX-512) and eight (AVX2; the last block overlapping the one
 * before it), k with and without a tail of each kernel's vectors and
 * chunks (16, 64 for pairs of rows of A, and 128 floats; 8 and 32), with
 * and without beta, strided. */
static void
test_gemm_small (TachBackend *be)
{
  const int ms[] = { 1, 2, 3, 4, 8 };
  const int ns[] = { 1, 7, 8, 9, 15, 16, 17, 40, 554 };
  const int ks[] = { 1, 7, 8, 15, 16, 17, 33, 64, 80, 100, 130 };

  for (guint mi = 0; mi < G_N_ELEMENTS (ms); mi++)
    for (guint ni = 0; ni < G_N_ELEMENTS (ns); ni++)
      for (guint ki = 0; ki < G_N_ELEMENTS (ks); ki++)
        for (int variant = 0; variant < 4; variant++)
          {
            int m = ms[mi], n = ns[ni], k = ks[ki];
            gboolean tb = !(variant & 1);
            double beta = (variant & 2) ? 0.5 : 0.0;
            int lda = k + 3, ldb = (tb ? k : n) + 5, ldc = n + 2;
            size_t na = (size_t) m * lda, nb = (size_t) (tb ? n : k) * ldb;
            size_t nc = (size_t) m * ldc;
            g_autofree char *what = g_strdup_printf ("gemm m=%d n=%d k=%d tb=%d beta=%g",
                                                     m, n, k, tb, beta);
            g_autofree double *a = g_new (double, na);
            g_autofree double *b = g_new (double, nb);
            g_autofree double *c = g_new (double, nc);
            g_autofree float *cin = NULL;
            g_autofree float *got = NULL;
            float *dc;

            tach_ref_fill_normal (a, na, 300 + variant, mi, 1.0);
            tach_ref_fill_normal (b, nb, 310 + variant, ni, 1.0);
            tach_ref_fill_normal (c, nc, 320 + variant, ki, 1.0);
            tach_ref_round_to_float (a, na);
            tach_ref_round_to_float (b, nb);
            tach_ref_round_to_float (c, nc);
            cin = tach_ref_to_float (c, nc);
            if (beta == 0.0)
              for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++)
                  cin[(size_t) i * ldc + j] = NAN;
            dc = tach_ops_upload_f (be, cin, nc);
            tach_op (be, gemm, FALSE, tb, m, n, k, 1.25f, tach_ops_upload_d (be, a, na), lda,
                     tach_ops_upload_d (be, b, nb), ldb, (float) beta, dc, ldc);
            got = tach_ops_download_f (be, dc, nc);
            tach_ref_gemm (FALSE, tb, m, n, k, 1.25, a, lda, b, ldb, beta, c, ldc);
            tach_ops_assert_nmse (what, got, c, nc, TACH_OPS_NMSE_DEEP);
            for (int i = 0; i < m; i++)
              g_assert_cmpfloat (got[(size_t) i * ldc + n], ==, cin[(size_t) i * ldc + n]);
          }
}

/* The CPU backend's own kernels for x W^T (products up to 256 K
 * multiply-adds; larger ones go to dnnl_sgemm) give each row of C the
 * bits of the same product of that row alone, whatever m: the fused,
 * unrolled and split LSTMs agree because of it, and the kernels treat
 * rows of A in pairs and alone. */
static void
test_gemm_small_rows (TachBackend *be)
{
  const int ms[] = { 2, 3, 4, 5, 8 };
  const int ns[] = { 8, 9, 16, 17, 40, 400, 554 };
  const int ks[] = { 7, 16, 33, 64, 80, 100, 130 };

  for (guint mi = 0; mi < G_N_ELEMENTS (ms); mi++)
    for (guint ni = 0; ni < G_N_ELEMENTS (ns); ni++)
      for (guint ki = 0; ki < G_N_ELEMENTS (ks); ki++)
        for (int with_beta = 0; with_beta < 2; with_beta++)
          {
            int m = ms[mi], n = ns[ni], k = ks[ki];
            int lda = k + 3, ldb = k + 5, ldc = n + 2;
            float beta = with_beta ? 0.5f : 0.0f;
            size_t na = (size_t) m * lda, nb = (size_t) n * ldb, nc = (size_t) m * ldc;
            g_autofree double *a = NULL;
            g_autofree double *b = NULL;
            g_autofree double *c = NULL;
            g_autofree float *got = NULL;
            float *da, *db, *dc;

            if ((gint64) m * n * k > 256 * 1024)
              continue;
            a = g_new (double, na);
            b = g_new (double, nb);
            c = g_new (double, nc);
            tach_ref_fill_normal (a, na, 330, mi, 1.0);
            tach_ref_fill_normal (b, nb, 331, ni, 1.0);
            tach_ref_fill_normal (c, nc, 332, ki, 1.0);
            da = tach_ops_upload_d (be, a, na);
            db = tach_ops_upload_d (be, b, nb);
            dc = tach_ops_upload_d (be, c, nc);
            tach_op (be, gemm, FALSE, TRUE, m, n, k, 1.25f, da, lda, db, ldb, beta, dc, ldc);
            got = tach_ops_download_f (be, dc, nc);
            for (int i = 0; i < m; i++)
              {
                g_autofree float *row = NULL;
                float *drow = tach_ops_upload_d (be, c + (size_t) i * ldc, (size_t) n);

                tach_op (be, gemm, FALSE, TRUE, 1, n, k, 1.25f, da + (size_t) i * lda, lda, db,
                         ldb, beta, drow, ldc);
                row = tach_ops_download_f (be, drow, (size_t) n);
                if (memcmp (row, got + (size_t) i * ldc, n * sizeof (float)) != 0)
                  g_error ("gemm m=%d n=%d k=%d beta=%g: row %d is not the row alone", m, n, k,
                           beta, i);
              }
          }
}

static void
test_gemm_backward (TachBackend *be)
{
  for (int variant = 0; variant < 4; variant++)
    {
      gboolean ta = variant & 1, tb = (variant >> 1) & 1;
      g_autofree char *what_a = g_strdup_printf ("gemm dA ta=%d tb=%d", ta, tb);
      g_autofree char *what_b = g_strdup_printf ("gemm dB ta=%d tb=%d (accumulated)", ta, tb);
      g_autofree double *dy = g_new (double, (size_t) GM * GN + GM);
      g_autofree double *ref_da = NULL;
      g_autofree double *ref_db = NULL;
      g_autofree float *got_da = NULL;
      g_autofree float *got_db = NULL;
      float *d_a, *d_b, *d_dy, *d_da, *d_db;
      int ldy = GN + 1;
      GemmCase g;

      gemm_case_init (&g, ta, tb, 200 + variant);
      tach_ref_fill_normal (dy, (size_t) GM * ldy, 200 + variant, 4, 1.0);
      tach_ref_round_to_float (dy, (size_t) GM * ldy);
      ref_da = g_new0 (double, g.na);
      ref_db = g_new (double, g.nb);
      /* dB accumulates onto what is there (beta = 1), as gradients of shared
       * weights do; the reference starts from the same values. */
      tach_ref_fill_normal (ref_db, g.nb, 200 + variant, 5, 1.0);
      tach_ref_round_to_float (ref_db, g.nb);

      d_a = tach_ops_upload_d (be, g.a, g.na);
      d_b = tach_ops_upload_d (be, g.b, g.nb);
      d_dy = tach_ops_upload_d (be, dy, (size_t) GM * ldy);
      d_da = tach_ops_upload_d (be, ref_da, g.na);
      d_db = tach_ops_upload_d (be, ref_db, g.nb);

      {
        g_autofree double *tmp_db = g_new0 (double, g.nb);

        tach_ref_gemm_bwd (ta, tb, GM, GN, GK, g.a, g.lda, g.b, g.ldb, dy, ldy, ref_da, tmp_db);
        for (int p = 0; p < (tb ? GN : GK); p++)
          for (int j = 0; j < (tb ? GK : GN); j++)
            ref_db[(size_t) p * g.ldb + j] += tmp_db[(size_t) p * g.ldb + j];
      }

      if (!ta)
        tach_op (be, gemm, FALSE, !tb, GM, GK, GN, 1.0f, d_dy, ldy, d_b, g.ldb, 0.0f, d_da, g.lda);
      else
        tach_op (be, gemm, tb, TRUE, GK, GM, GN, 1.0f, d_b, g.ldb, d_dy, ldy, 0.0f, d_da, g.lda);
      if (!tb)
        tach_op (be, gemm, !ta, FALSE, GK, GN, GM, 1.0f, d_a, g.lda, d_dy, ldy, 1.0f, d_db, g.ldb);
      else
        tach_op (be, gemm, TRUE, ta, GN, GK, GM, 1.0f, d_dy, ldy, d_a, g.lda, 1.0f, d_db, g.ldb);

      got_da = tach_ops_download_f (be, d_da, g.na);
      got_db = tach_ops_download_f (be, d_db, g.nb);
      tach_ops_assert_nmse (what_a, got_da, ref_da, g.na, TACH_OPS_NMSE_SIMPLE);
      tach_ops_assert_nmse (what_b, got_db, ref_db, g.nb, TACH_OPS_NMSE_SIMPLE);
      gemm_case_clear (&g);
    }
}

typedef struct {
  GemmCase *g;
  double   *r;   /* loss weights, [GM, ldc] */
} GemmLoss;

static double
gemm_loss (gpointer data)
{
  GemmLoss *l = data;
  g_autofree double *c = g_new0 (double, l->g->nc);
  double s = 0.0;

  tach_ref_gemm (l->g->ta, l->g->tb, GM, GN, GK, 1.0, l->g->a, l->g->lda, l->g->b, l->g->ldb,
                 0.0, c, l->g->ldc);
  for (size_t i = 0; i < l->g->nc; i++)
    s += c[i] * l->r[i];
  return s;
}

/* The reference gemm gradient against central differences, padding included
 * (where the gradient must be zero). */
static void
test_ref_gemm_gradient (void)
{
  for (int variant = 0; variant < 4; variant++)
    {
      GemmCase g;
      GemmLoss l = { &g, NULL };
      g_autofree double *r = NULL;
      g_autofree double *da = NULL;
      g_autofree double *db = NULL;

      gemm_case_init (&g, variant & 1, (variant >> 1) & 1, 300 + variant);
      r = g_new0 (double, g.nc);
      tach_ref_fill_normal (r, g.nc, 300 + variant, 6, 1.0);
      for (int i = 0; i < GM; i++)
        r[(size_t) i * g.ldc + GN] = 0.0;
      l.r = r;
      da = g_new0 (double, g.na);
      db = g_new0 (double, g.nb);
      tach_ref_gemm_bwd (g.ta, g.tb, GM, GN, GK, g.a, g.lda, g.b, g.ldb, r, g.ldc, da, db);
      g_assert_cmpfloat (tach_ops_fd_error (gemm_loss, &l, g.a, g.na, da, 1e-5), <, 1e-8);
      g_assert_cmpfloat (tach_ops_fd_error (gemm_loss, &l, g.b, g.nb, db, 1e-5), <, 1e-8);
      gemm_case_clear (&g);
    }
}

/* bias_add and bias_grad (beta 0 over NaN, beta 1, beta 0.5) over shapes
 * that a column-tiled reduction treats apart: one column, fewer columns
 * than a warp, a warp and a bit, the vocabulary's 554, rows from 1 to 1000. */
static void
test_bias (TachBackend *be)
{
  static const int shapes[][2] = {
    { 9, 13 }, { 70, 33 }, { 1024, 1 }, { 256, 10 }, { 1, 554 }, { 64, 554 }, { 1000, 160 },
    { 3, 2000 }, { 0, 5 },
  };

  for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      int m = shapes[s][0], n = shapes[s][1];
      size_t mn = (size_t) m * n;
      g_autofree double *y = g_new (double, MAX (mn, 1));
      g_autofree double *bias = g_new (double, n);
      g_autofree double *dy = g_new (double, MAX (mn, 1));
      g_autofree double *db0 = g_new (double, n);
      g_autofree double *db1 = g_new (double, n);
      g_autofree double *dbh = g_new (double, n);
      g_autofree float *nan_row = g_new (float, n);
      g_autofree float *got = NULL;
      g_autofree char *what = NULL;
      float *d_y, *d_b, *d_dy, *d_db0, *d_db1, *d_dbh;

      tach_ref_fill_normal (y, mn, 400 + s, 1, 1.0);
      tach_ref_fill_normal (bias, n, 400 + s, 2, 1.0);
      tach_ref_fill_normal (dy, mn, 400 + s, 3, 1.0);
      tach_ref_fill_normal (db1, n, 400 + s, 4, 1.0);
      tach_ref_round_to_float (y, mn);
      tach_ref_round_to_float (bias, n);
      tach_ref_round_to_float (dy, mn);
      tach_ref_round_to_float (db1, n);
      memcpy (dbh, db1, sizeof (double) * n);
      for (int j = 0; j < n; j++)
        nan_row[j] = NAN;

      d_y = tach_ops_upload_d (be, y, mn);
      d_b = tach_ops_upload_d (be, bias, n);
      d_dy = tach_ops_upload_d (be, dy, mn);
      d_db0 = tach_ops_upload_f (be, nan_row, n);
      d_db1 = tach_ops_upload_d (be, db1, n);
      d_dbh = tach_ops_upload_d (be, dbh, n);
      tach_op (be, bias_add, d_y, d_b, m, n);
      tach_op (be, bias_grad, d_dy, d_db0, m, n, 0.0f);
      tach_op (be, bias_grad, d_dy, d_db1, m, n, 1.0f);
      tach_op (be, bias_grad, d_dy, d_dbh, m, n, 0.5f);

      tach_ref_bias_add (y, bias, m, n);
      tach_ref_bias_grad (dy, db0, m, n, 0.0);
      tach_ref_bias_grad (dy, db1, m, n, 1.0);
      tach_ref_bias_grad (dy, dbh, m, n, 0.5);
      if (mn > 0)
        {
          what = g_strdup_printf ("bias_add %dx%d", m, n);
          got = tach_ops_download_f (be, d_y, mn);
          tach_ops_assert_nmse (what, got, y, mn, TACH_OPS_NMSE_SIMPLE);
          g_clear_pointer (&got, g_free);
          g_clear_pointer (&what, g_free);
        }
      what = g_strdup_printf ("bias_grad %dx%d beta=0 over NaN", m, n);
      got = tach_ops_download_f (be, d_db0, n);
      if (m == 0)
        for (int j = 0; j < n; j++)
          g_assert_cmpfloat (got[j], ==, 0.0f);
      else
        tach_ops_assert_nmse (what, got, db0, n, TACH_OPS_NMSE_SIMPLE);
      g_clear_pointer (&got, g_free);
      g_clear_pointer (&what, g_free);
      what = g_strdup_printf ("bias_grad %dx%d beta=1", m, n);
      got = tach_ops_download_f (be, d_db1, n);
      tach_ops_assert_nmse (what, got, db1, n, TACH_OPS_NMSE_SIMPLE);
      g_clear_pointer (&got, g_free);
      g_clear_pointer (&what, g_free);
      what = g_strdup_printf ("bias_grad %dx%d beta=0.5", m, n);
      got = tach_ops_download_f (be, d_dbh, n);
      tach_ops_assert_nmse (what, got, dbh, n, TACH_OPS_NMSE_SIMPLE);
    }
}

typedef struct {
  double *bias, *r;
} BiasLoss;

static double
bias_loss (gpointer data)
{
  BiasLoss *l = data;
  double y[3 * 4] = { 0 }, s = 0.0;

  tach_ref_bias_add (y, l->bias, 3, 4);
  for (int i = 0; i < 12; i++)
    s += y[i] * l->r[i];
  return s;
}

static void
test_ref_bias_gradient (void)
{
  double bias[4], r[12], db[4];
  BiasLoss l = { bias, r };

  tach_ref_fill_normal (bias, 4, 410, 1, 1.0);
  tach_ref_fill_normal (r, 12, 410, 2, 1.0);
  tach_ref_bias_grad (r, db, 3, 4, 0.0);
  g_assert_cmpfloat (tach_ops_fd_error (bias_loss, &l, bias, 4, db, 1e-5), <, 1e-8);
}

static void
test_relu (TachBackend *be)
{
  enum { N = 1000 };
  g_autofree double *x = g_new (double, N);
  g_autofree double *y = g_new (double, N);
  g_autofree double *dy = g_new (double, N);
  g_autofree double *dx = g_new (double, N);
  g_autofree float *got = NULL;
  float *d_x, *d_y, *d_dy, *d_dx;

  tach_ref_fill_normal (x, N, 500, 1, 1.0);
  tach_ref_fill_normal (dy, N, 500, 2, 1.0);
  tach_ref_round_to_float (x, N);
  tach_ref_round_to_float (dy, N);
  x[0] = 0.0;  /* the kink itself: relu(0) = 0, no gradient */
  d_x = tach_ops_upload_d (be, x, N);
  d_y = tach_ops_alloc (be, N * sizeof (float));
  d_dy = tach_ops_upload_d (be, dy, N);
  d_dx = tach_ops_alloc (be, N * sizeof (float));
  tach_op (be, relu_fwd, d_x, d_y, N);
  tach_op (be, relu_bwd, d_y, d_dy, d_dx, N);
  /* In place, as the contract allows: dx == dy. */
  tach_op (be, relu_bwd, d_y, d_dy, d_dy, N);

  tach_ref_relu_fwd (x, y, N);
  tach_ref_relu_bwd (y, dy, dx, N);
  got = tach_ops_download_f (be, d_y, N);
  tach_ops_assert_nmse ("relu_fwd", got, y, N, TACH_OPS_NMSE_SIMPLE);
  g_free (got);
  got = tach_ops_download_f (be, d_dx, N);
  tach_ops_assert_nmse ("relu_bwd", got, dx, N, TACH_OPS_NMSE_SIMPLE);
  g_free (got);
  got = tach_ops_download_f (be, d_dy, N);
  tach_ops_assert_nmse ("relu_bwd in place", got, dx, N, TACH_OPS_NMSE_SIMPLE);
}

typedef struct {
  double *x, *r;
  size_t  n;
} ReluLoss;

static double
relu_loss (gpointer data)
{
  ReluLoss *l = data;
  double s = 0.0;

  for (size_t i = 0; i < l->n; i++)
    s += (l->x[i] > 0.0 ? l->x[i] : 0.0) * l->r[i];
  return s;
}

static void
test_ref_relu_gradient (void)
{
  double x[32], y[32], r[32], dx[32];
  ReluLoss l = { x, r, 32 };

  tach_ref_fill_normal (x, 32, 510, 1, 1.0);
  tach_ref_fill_normal (r, 32, 510, 2, 1.0);
  /* Keep every input away from the kink, where differences are undefined. */
  for (int i = 0; i < 32; i++)
    x[i] += x[i] >= 0.0 ? 0.1 : -0.1;
  tach_ref_relu_fwd (x, y, 32);
  tach_ref_relu_bwd (y, r, dx, 32);
  g_assert_cmpfloat (tach_ops_fd_error (relu_loss, &l, x, 32, dx, 1e-5), <, 1e-8);
}

void
tach_ops_register_dense (const char *device_id)
{
  if (device_id == NULL)
    {
      tach_ops_add_ref ("gemm/gradient", test_ref_gemm_gradient);
      tach_ops_add_ref ("bias/gradient", test_ref_bias_gradient);
      tach_ops_add_ref ("relu/gradient", test_ref_relu_gradient);
      return;
    }
  tach_ops_add (device_id, "gemm/forward", test_gemm_forward);
  tach_ops_add (device_id, "gemm/small", test_gemm_small);
  if (g_strcmp0 (device_id, "cpu") == 0)
    tach_ops_add (device_id, "gemm/small-rows", test_gemm_small_rows);
  tach_ops_add (device_id, "gemm/backward", test_gemm_backward);
  tach_ops_add_precisions (device_id, "gemm/wide", test_gemm_wide);
  tach_ops_add (device_id, "gemm/bf16", test_gemm_bf16);
  tach_ops_add (device_id, "bias/forward-backward", test_bias);
  tach_ops_add (device_id, "relu/forward-backward", test_relu);
}
