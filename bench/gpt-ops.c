/* gpt-ops.c: the Transformer ops' speed on the CPU backend, by shape.
 *
 *   gpt-ops [THREADS [SECONDS_PER_CASE [FILTER]]]
 *
 * Times each op of the gpt workload's step at nanoGPT's shakespeare-char
 * shapes (6 heads of 64, width 384, context 256) and GPT-2 small's (12
 * heads of 64, width 768, context 1024): a decode step's fused attention
 * over caches of 256 and 1024 keys, training's fused attention forward and
 * backward, LayerNorm, GELU, the naive attention's products and softmax.
 * Prints, per case, the fastest and the median call (on a shared machine
 * the fastest is the least disturbed), the least CPU time a call took (on
 * one thread, the op's own time whatever else runs), and the rates of the
 * fastest call and of that CPU time: GFLOP/s
 * for the products and attention (the causal half counted), GB/s of the
 * bytes each pointwise op must move.  A tool, not a test: nothing is
 * checked here (test-ops does that).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tach-backend.h"

typedef void (*CaseFn) (TachBackend *be, gpointer data);

typedef struct {
  int B, H, tq, tk, cap, hd, pos;
  float *q, *k, *v, *o, *lse, *dout, *dq, *dk, *dv, *s, *dp;
} Attn;

typedef struct {
  int rows, dim;
  float *x, *res, *sum, *gamma, *beta, *y, *mean, *rstd, *dy, *dx, *dg, *db;
} Rows;

static double seconds = 0.5;
static const char *filter;   /* only the cases whose name holds it */

static float *
filled (TachBackend *be, size_t n, guint seed)
{
  float *host = g_new (float, n);
  float *dev = tach_backend_alloc (be, n * sizeof (float));

  for (size_t i = 0; i < n; i++)
    host[i] = (float) ((double) ((i * 2654435761u + seed) % 2001) / 1000.0 - 1.0);
  tach_backend_upload (be, dev, host, n * sizeof (float));
  g_free (host);
  return dev;
}

static gint
compare_double (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

/* The process's CPU time, µs: what the threads ran, whatever else
 * took the processors meanwhile. */
static double
cpu_us (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static void
time_case (TachBackend *be, const char *name, CaseFn fn, gpointer data, double work,
           const char *unit)
{
  g_autoptr(GArray) us = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr(GArray) cpu = g_array_new (FALSE, FALSE, sizeof (double));
  gint64 end;
  double best, median, best_cpu;

  if (filter != NULL && strstr (name, filter) == NULL)
    return;
  fn (be, data);
  end = g_get_monotonic_time () + (gint64) (seconds * 1e6);
  while (g_get_monotonic_time () < end || us->len < 5)
    {
      gint64 t0 = g_get_monotonic_time ();
      double c0 = cpu_us (), d, c;

      fn (be, data);
      tach_backend_synchronize (be);
      d = (double) (g_get_monotonic_time () - t0);
      c = cpu_us () - c0;
      g_array_append_val (us, d);
      g_array_append_val (cpu, c);
    }
  g_array_sort (us, compare_double);
  g_array_sort (cpu, compare_double);
  best = g_array_index (us, double, 0);
  median = g_array_index (us, double, us->len / 2);
  best_cpu = g_array_index (cpu, double, 0);
  printf ("%-46s %9.1f %9.1f %9.1f us %7.1f %s (%.1f per CPU)\n", name, best, median, best_cpu,
          work / best / 1e3, unit, work / best_cpu / 1e3);
  fflush (stdout);
}

static Attn *
attn_new (TachBackend *be, int B, int H, int tq, int tk, int cap, int hd, int pos)
{
  Attn *a = g_new0 (Attn, 1);
  size_t nq = (size_t) B * H * tq * hd, nk = (size_t) B * H * cap * hd;

  *a = (Attn) { B, H, tq, tk, cap, hd, pos };
  a->q = filled (be, nq, 1);
  a->k = filled (be, nk, 2);
  a->v = filled (be, nk, 3);
  a->dout = filled (be, nq, 4);
  a->o = filled (be, nq, 5);
  a->lse = filled (be, (size_t) B * H * tq, 6);
  a->dq = filled (be, nq, 7);
  a->dk = filled (be, nk, 8);
  a->dv = filled (be, nk, 9);
  a->s = filled (be, (size_t) B * H * tq * tk, 10);
  a->dp = filled (be, (size_t) B * H * tq * tk, 11);
  return a;
}

static void
attn_fwd (TachBackend *be, gpointer data)
{
  Attn *a = data;

  tach_op (be, attention_fwd, a->q, a->k, a->v, a->o, a->lse, a->B, a->H, a->tq, a->tk, a->cap,
           a->hd, a->pos, 0.125f, TACH_ATTN_NO_DROPOUT);
}

static void
attn_bwd (TachBackend *be, gpointer data)
{
  Attn *a = data;

  tach_op (be, attention_bwd, a->q, a->k, a->v, a->o, a->dout, a->lse, a->dq, a->dk, a->dv, a->B,
           a->H, a->tq, a->hd, 0.125f, TACH_ATTN_NO_DROPOUT);
}

static void
gemm_ref (TachBackend *be, gpointer data)
{
  Attn *a = data;

  tach_op (be, gemm, FALSE, FALSE, 512, 512, 512, 1.0f, a->q, 512, a->k, 512, 0.0f, a->o, 512);
}

/* attention=naive's forward: the scores, the softmax, the product. */
static void
attn_naive (TachBackend *be, gpointer data)
{
  Attn *a = data;
  int bh = a->B * a->H;

  tach_op (be, gemm_strided_batched, FALSE, TRUE, a->tq, a->tk, a->hd, 1.0f, a->q, a->hd,
           (size_t) a->tq * a->hd, a->k, a->hd, (size_t) a->cap * a->hd, 0.0f, a->s, a->tk,
           (size_t) a->tq * a->tk, bh);
  tach_op (be, causal_softmax_fwd, a->s, bh, a->tq, a->tk, a->pos, 0.125f);
  tach_op (be, gemm_strided_batched, FALSE, FALSE, a->tq, a->hd, a->tk, 1.0f, a->s, a->tk,
           (size_t) a->tq * a->tk, a->v, a->hd, (size_t) a->cap * a->hd, 0.0f, a->o, a->hd,
           (size_t) a->tq * a->hd, bh);
}

/* attention=naive's backward from the forward's probabilities (in s):
 * dV = P^T dO, dP = dO V^T, dS, dQ = dS K, dK = dS^T Q (dS over dP, in
 * the lse buffer's stead: o holds dP). */
static void
attn_naive_bwd (TachBackend *be, gpointer data)
{
  Attn *a = data;
  int bh = a->B * a->H, t = a->tq, hd = a->hd;
  size_t sq = (size_t) t * t, sh = (size_t) t * hd;

  tach_op (be, gemm_strided_batched, TRUE, FALSE, t, hd, t, 1.0f, a->s, t, sq, a->dout, hd, sh,
           0.0f, a->dv, hd, sh, bh);
  tach_op (be, gemm_strided_batched, FALSE, TRUE, t, t, hd, 1.0f, a->dout, hd, sh, a->v, hd, sh,
           0.0f, a->dp, t, sq, bh);
  tach_op (be, causal_softmax_bwd, a->s, a->dp, a->dp, bh, t, t, 0.125f);
  tach_op (be, gemm_strided_batched, FALSE, FALSE, t, hd, t, 1.0f, a->dp, t, sq, a->k, hd, sh,
           0.0f, a->dq, hd, sh, bh);
  tach_op (be, gemm_strided_batched, TRUE, FALSE, t, hd, t, 1.0f, a->dp, t, sq, a->q, hd, sh,
           0.0f, a->dk, hd, sh, bh);
}

static Rows *
rows_new (TachBackend *be, int rows, int dim)
{
  Rows *r = g_new0 (Rows, 1);
  size_t n = (size_t) rows * dim;

  *r = (Rows) { rows, dim };
  r->x = filled (be, n, 11);
  r->res = filled (be, n, 12);
  r->sum = filled (be, n, 13);
  r->gamma = filled (be, dim, 14);
  r->beta = filled (be, dim, 15);
  r->y = filled (be, n, 16);
  r->mean = filled (be, rows, 17);
  r->rstd = filled (be, rows, 18);
  r->dy = filled (be, n, 19);
  r->dx = filled (be, n, 20);
  r->dg = filled (be, dim, 21);
  r->db = filled (be, dim, 22);
  return r;
}

static void
ln_fwd (TachBackend *be, gpointer data)
{
  Rows *r = data;

  tach_op (be, layernorm_fwd, r->x, r->res, r->sum, r->gamma, r->beta, r->y, r->mean, r->rstd,
           r->rows, r->dim);
}

static void
ln_bwd (TachBackend *be, gpointer data)
{
  Rows *r = data;

  tach_op (be, layernorm_bwd, r->sum, r->gamma, r->mean, r->rstd, r->dy, r->dx, r->dx, r->dg,
           r->db, r->rows, r->dim);
}

static void
gelu_fwd (TachBackend *be, gpointer data)
{
  Rows *r = data;

  tach_op (be, gelu_fwd, r->x, r->gamma, r->y, r->rows, r->dim);
}

static void
gelu_bwd (TachBackend *be, gpointer data)
{
  Rows *r = data;

  tach_op (be, gelu_bwd, r->x, r->dy, r->dx, (size_t) r->rows * r->dim);
}

/* Multiply-adds of causal attention: each query row i sees pos + i + 1
 * keys (at most tk), times hd, twice (scores and the product with v). */
static double
attn_flops (const Attn *a)
{
  double keys = 0.0;

  for (int i = 0; i < a->tq; i++)
    keys += MIN (a->tk, a->pos + i + 1);
  return 2.0 * 2.0 * keys * a->hd * a->B * a->H;
}

int
main (int argc, char **argv)
{
  guint threads = argc > 1 ? (guint) atoi (argv[1]) : 0;
  g_autoptr(GError) error = NULL;
  TachBackend *be;
  static const int decode[][3] = { { 6, 256, 1024 }, { 6, 1024, 1024 }, { 12, 256, 1024 },
                                   { 12, 1024, 1024 } };

  if (argc > 2)
    seconds = atof (argv[2]);
  if (argc > 3)
    filter = argv[3];
  be = tach_backend_new ("cpu", threads, TACH_PRECISION_FP32, &error);
  if (be == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return 1;
    }
  printf ("%s, %u threads; the fastest and median call's wall time, the least CPU time a "
          "call took; the rate of the fastest, and of CPU time\n", be->device->name,
          be->threads);
  {
    /* The machine's product rate now, for scale: one 512^3 sgemm. */
    Attn *a = attn_new (be, 1, 1, 512, 512, 512, 512, 0);

    time_case (be, "gemm 512x512x512 (the sgemm rate, for scale)", gemm_ref, a,
               2.0 * 512 * 512 * 512, "GFLOP/s");
  }
  for (guint c = 0; c < G_N_ELEMENTS (decode); c++)
    {
      int H = decode[c][0], tk = decode[c][1], cap = decode[c][2];
      Attn *a = attn_new (be, 1, H, 1, tk, cap, 64, tk - 1);
      g_autofree char *name = g_strdup_printf ("attention_fwd decode H%d hd64 tk%d cap%d", H, tk,
                                               cap);

      /* A decode step is bound by reading the cache: GB/s of k and v. */
      time_case (be, name, attn_fwd, a, 2.0 * H * tk * 64 * 4, "GB/s");
    }
  {
    Attn *a = attn_new (be, 8, 6, 256, 256, 256, 64, 0);

    time_case (be, "attention_fwd train B8 H6 T256 hd64", attn_fwd, a, attn_flops (a), "GFLOP/s");
    time_case (be, "attention_bwd train B8 H6 T256 hd64", attn_bwd, a, 2.0 * attn_flops (a),
               "GFLOP/s");
    time_case (be, "attention naive fwd B8 H6 T256 hd64", attn_naive, a, 2.0 * attn_flops (a),
               "GFLOP/s");
    time_case (be, "attention naive bwd B8 H6 T256 hd64", attn_naive_bwd, a,
               4.0 * attn_flops (a), "GFLOP/s");
  }
  {
    Attn *a = attn_new (be, 1, 12, 1024, 1024, 1024, 64, 0);

    time_case (be, "attention_fwd prefill B1 H12 T1024 hd64", attn_fwd, a, attn_flops (a),
               "GFLOP/s");
  }
  {
    Rows *r = rows_new (be, 8 * 256, 384);
    Rows *g = rows_new (be, 8 * 256, 1536);
    double n = 8.0 * 256 * 384, ng = 8.0 * 256 * 1536;

    time_case (be, "layernorm_fwd+res 2048x384", ln_fwd, r, 4.0 * n * 4, "GB/s");
    time_case (be, "layernorm_bwd+dres 2048x384", ln_bwd, r, 4.0 * n * 4, "GB/s");
    time_case (be, "gelu_fwd+bias 2048x1536", gelu_fwd, g, 3.0 * ng * 4, "GB/s");
    time_case (be, "gelu_bwd 2048x1536", gelu_bwd, g, 3.0 * ng * 4, "GB/s");
  }
  {
    /* In the caches: the ops' own arithmetic, not the memory's rate. */
    Rows *r = rows_new (be, 32, 384);
    Rows *g = rows_new (be, 32, 1536);
    double n = 32.0 * 384, ng = 32.0 * 1536;

    time_case (be, "layernorm_fwd+res 32x384 (cached)", ln_fwd, r, 4.0 * n * 4, "GB/s");
    time_case (be, "layernorm_bwd+dres 32x384 (cached)", ln_bwd, r, 4.0 * n * 4, "GB/s");
    time_case (be, "gelu_fwd+bias 32x1536 (cached)", gelu_fwd, g, 3.0 * ng * 4, "GB/s");
    time_case (be, "gelu_bwd 32x1536 (cached)", gelu_bwd, g, 3.0 * ng * 4, "GB/s");
  }
  tach_backend_free (be);
  return 0;
}
