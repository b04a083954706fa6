/* test-ops-misc.c: dropout, embedding, token sampling and the optimisers. */
#include <math.h>
#include <string.h>

#include "tach-rand.h"
#include "tach-sample.h"
#include "test-ops-common.h"

/* Dropout's mask is a pure function of (seed, counter, element): the backend
 * must drop exactly the elements the reference drops, in fwd and in bwd. */
static void
test_dropout (TachBackend *be)
{
  enum { N = 4099 };
  const float p = 0.4f;
  const guint64 seed = 42, counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_DROPOUT, 7);
  g_autofree double *x = g_new (double, N);
  g_autofree double *dy = g_new (double, N);
  g_autofree double *y = g_new (double, N);
  g_autofree double *dx = g_new (double, N);
  g_autofree float *got_y = NULL;
  g_autofree float *got_dx = NULL;
  g_autofree float *got_id = NULL;
  g_autofree float *xf = NULL;
  float *d_x, *d_y, *d_dy, *d_dx, *d_id;
  static const guint64 factors[] = { 0, 1, 0xffffffffu, 0x100000000ULL, 0xffffffffffffffffULL,
                                     0x9e3779b97f4a7c15ULL, 0xbf58476d1ce4e5b9ULL };

  /* The host's tach_rand_mul (from 32-bit halves) is the plain product,
   * and the mix is SplitMix64's (its first output from state 0). */
  for (guint i = 0; i < G_N_ELEMENTS (factors); i++)
    for (guint j = 0; j < G_N_ELEMENTS (factors); j++)
      g_assert_cmphex (tach_rand_mul (factors[i], factors[j]), ==, factors[i] * factors[j]);
  g_assert_cmphex (tach_rand_mix (0), ==, 0xe220a8397b1dcdafULL);

  tach_ref_fill_normal (x, N, 1200, 1, 1.0);
  tach_ref_fill_normal (dy, N, 1200, 2, 1.0);
  tach_ref_round_to_float (x, N);
  tach_ref_round_to_float (dy, N);
  d_x = tach_ops_upload_d (be, x, N);
  d_y = tach_ops_alloc (be, N * sizeof (float));
  d_dy = tach_ops_upload_d (be, dy, N);
  d_dx = tach_ops_alloc (be, N * sizeof (float));
  d_id = tach_ops_alloc (be, N * sizeof (float));
  tach_op (be, dropout_fwd, d_x, d_y, N, p, seed, counter, 0);
  tach_op (be, dropout_bwd, d_dy, d_dx, N, p, seed, counter, 0);
  tach_op (be, dropout_fwd, d_x, d_id, N, 0.0f, seed, counter, 0);

  tach_ref_dropout (x, y, N, p, seed, counter);
  tach_ref_dropout (dy, dx, N, p, seed, counter);
  got_y = tach_ops_download_f (be, d_y, N);
  got_dx = tach_ops_download_f (be, d_dx, N);
  tach_ops_assert_nmse ("dropout_fwd", got_y, y, N, TACH_OPS_NMSE_SIMPLE);
  tach_ops_assert_nmse ("dropout_bwd", got_dx, dx, N, TACH_OPS_NMSE_SIMPLE);
  for (size_t e = 0; e < N; e++)
    {
      gboolean keep = tach_ref_dropout_keep (p, seed, counter, e);

      /* No input is zero, so a zero output means a dropped element. */
      g_assert_cmpint (got_y[e] != 0.0f, ==, keep);
      g_assert_cmpint (got_dx[e] != 0.0f, ==, keep);
    }
  /* A shard that starts at element N/3 of the mask (a data-parallel rank's
   * part of the global batch) draws that part of the whole mask. */
  {
    g_autofree float *shard = NULL;

    tach_op (be, dropout_fwd, d_x + N / 3, d_id, N - N / 3, p, seed, counter, N / 3);
    shard = tach_ops_download_f (be, d_id, N - N / 3);
    g_assert_cmpmem (shard, (N - N / 3) * sizeof (float), got_y + N / 3,
                     (N - N / 3) * sizeof (float));
  }
  /* p = 0 keeps everything unscaled. */
  tach_op (be, dropout_fwd, d_x, d_id, N, 0.0f, seed, counter, 0);
  got_id = tach_ops_download_f (be, d_id, N);
  xf = tach_ref_to_float (x, N);
  g_assert_cmpmem (got_id, N * sizeof (float), xf, N * sizeof (float));
}

/* Over many elements the keep rate is 1 - p, and another counter (the next
 * step) draws another mask. */
static void
test_dropout_statistics (TachBackend *be)
{
  enum { N = 100000 };
  const float p = 0.4f;
  g_autofree float *ones = g_new (float, N);
  g_autofree float *a = NULL;
  g_autofree float *b = NULL;
  float *d_x, *d_a, *d_b;
  size_t kept = 0, differ = 0;
  double rate, sigma = sqrt (p * (1.0 - p) / N);

  for (size_t i = 0; i < N; i++)
    ones[i] = 1.0f;
  d_x = tach_ops_upload_f (be, ones, N);
  d_a = tach_ops_alloc (be, N * sizeof (float));
  d_b = tach_ops_alloc (be, N * sizeof (float));
  tach_op (be, dropout_fwd, d_x, d_a, N, p, 9, TACH_RAND_COUNTER (TACH_RAND_STREAM_DROPOUT, 1), 0);
  tach_op (be, dropout_fwd, d_x, d_b, N, p, 9, TACH_RAND_COUNTER (TACH_RAND_STREAM_DROPOUT, 2), 0);
  a = tach_ops_download_f (be, d_a, N);
  b = tach_ops_download_f (be, d_b, N);
  for (size_t i = 0; i < N; i++)
    {
      if (a[i] != 0.0f)
        {
          kept++;
          g_assert_cmpfloat_with_epsilon (a[i], 1.0 / (1.0 - p), 1e-6);
        }
      differ += (a[i] != 0.0f) != (b[i] != 0.0f);
    }
  rate = (double) kept / N;
  g_test_message ("dropout keep rate %.4f (expected %.4f, sigma %.4f)", rate, 1.0 - p, sigma);
  g_assert_cmpfloat (fabs (rate - (1.0 - p)), <, 5.0 * sigma);
  /* Two independent masks disagree on 2 p (1 - p) of the elements. */
  g_assert_cmpfloat (fabs ((double) differ / N - 2.0 * p * (1.0 - p)), <, 0.01);
}

static void
test_embedding (TachBackend *be)
{
  enum { V = 11, D = 7, N = 9 };
  const int32_t idx[N] = { 3, 0, 10, 3, 7, 1, 10, 5, 2 };
  double table[V * D], out[N * D];
  g_autofree float *got = NULL;
  g_autofree float *want = NULL;
  float *d_table, *d_out;
  int32_t *d_idx;

  tach_ref_fill_normal (table, V * D, 1300, 1, 1.0);
  tach_ref_round_to_float (table, V * D);
  d_table = tach_ops_upload_d (be, table, V * D);
  d_idx = tach_ops_upload_i (be, idx, N);
  d_out = tach_ops_alloc (be, N * D * sizeof (float));
  tach_op (be, embedding, d_table, d_idx, d_out, N, D);
  tach_ref_embedding (table, idx, out, N, D);
  got = tach_ops_download_f (be, d_out, N * D);
  want = tach_ref_to_float (out, N * D);
  /* A gather is a copy: bit for bit. */
  g_assert_cmpmem (got, N * D * sizeof (float), want, N * D * sizeof (float));
}

/* Runs sample_tokens over @logits; returns the tokens and the updated ctx. */
static void
backend_sample (TachBackend *be, const double *logits, int n, int vocab, guint64 seed,
                guint64 counter, const int32_t *ctx_in, int len, int32_t **tok, int32_t **ctx)
{
  float *d_logits = tach_ops_upload_d (be, logits, (size_t) n * vocab);
  int32_t *d_tok = tach_ops_alloc (be, n * sizeof (int32_t));
  int32_t *d_ctx = tach_ops_upload_i (be, ctx_in, (size_t) n * len);

  tach_op (be, sample_tokens, d_logits, n, vocab, seed, counter, d_tok, d_ctx, len);
  *tok = tach_ops_download_i (be, d_tok, n);
  *ctx = tach_ops_download_i (be, d_ctx, (size_t) n * len);
}

static void
test_sample_tokens (TachBackend *be)
{
  enum { N = 64, V = 9, L = 4 };
  const guint64 seed = 77, counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_SAMPLE, 3);
  double logits[N * V];
  int32_t ctx[N * L];
  g_autofree int32_t *tok = NULL;
  g_autofree int32_t *tok2 = NULL;
  g_autofree int32_t *tok3 = NULL;
  g_autofree int32_t *out_ctx = NULL;
  g_autofree int32_t *out_ctx2 = NULL;
  g_autofree int32_t *out_ctx3 = NULL;
  int differ = 0;

  tach_ref_fill_normal (logits, N * V, 1400, 1, 1.5);
  /* One row far from zero: only a max-shifted softmax samples it right. */
  for (int k = 0; k < V; k++)
    logits[5 * V + k] += 80.0;
  tach_ref_round_to_float (logits, N * V);
  for (int i = 0; i < N * L; i++)
    ctx[i] = (int32_t) (tach_rand_bits (1400, 2, i) % V);

  backend_sample (be, logits, N, V, seed, counter, ctx, L, &tok, &out_ctx);
  for (int r = 0; r < N; r++)
    {
      double margin;
      int32_t want = tach_ref_sample_row (logits + r * V, V, tach_rand_uniform (seed, counter, r),
                                          &margin);

      g_assert_cmpint (tok[r], >=, 0);
      g_assert_cmpint (tok[r], <, V);
      /* float rounding of the CDF may pick a neighbour only right at a boundary. */
      if (margin > 1e-5)
        g_assert_cmpint (tok[r], ==, want);
      for (int j = 0; j < L - 1; j++)
        g_assert_cmpint (out_ctx[r * L + j], ==, ctx[r * L + j + 1]);
      g_assert_cmpint (out_ctx[r * L + L - 1], ==, tok[r]);
    }

  /* Same seed and counter: the same tokens.  Another counter: others. */
  backend_sample (be, logits, N, V, seed, counter, ctx, L, &tok2, &out_ctx2);
  g_assert_cmpmem (tok, N * sizeof (int32_t), tok2, N * sizeof (int32_t));
  backend_sample (be, logits, N, V, seed, counter + 1, ctx, L, &tok3, &out_ctx3);
  for (int r = 0; r < N; r++)
    differ += tok[r] != tok3[r];
  g_assert_cmpint (differ, >, N / 4);
}

/* tach_backend_sample_tokens with a loss: the same tokens and context as
 * sample_tokens, and the loss softmax_ce gives for those tokens, to the
 * bit (a backend's sample_tokens_nll must follow softmax_ce's arithmetic;
 * without one the wrapper runs those two ops). */
static void
test_sample_tokens_nll (TachBackend *be)
{
  enum { N = 5, V = 554, L = 4 };
  const guint64 seed = 78, counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_SAMPLE, 9);
  g_autofree double *logits = g_new (double, N * V);
  int32_t ctx[N * L];
  g_autofree int32_t *tok = NULL;
  g_autofree int32_t *out_ctx = NULL;
  g_autofree int32_t *tok2 = NULL;
  g_autofree int32_t *out_ctx2 = NULL;
  float *d_logits, *d_loss, *d_ce;
  int32_t *d_tok, *d_ctx;
  float loss, ce;

  tach_ref_fill_normal (logits, N * V, 1450, 1, 2.0);
  tach_ref_round_to_float (logits, N * V);
  for (int i = 0; i < N * L; i++)
    ctx[i] = (int32_t) (tach_rand_bits (1450, 2, i) % V);
  backend_sample (be, logits, N, V, seed, counter, ctx, L, &tok, &out_ctx);

  d_logits = tach_ops_upload_d (be, logits, (size_t) N * V);
  d_tok = tach_ops_alloc (be, N * sizeof (int32_t));
  d_ctx = tach_ops_upload_i (be, ctx, (size_t) N * L);
  d_loss = tach_ops_alloc (be, sizeof (float));
  d_ce = tach_ops_alloc (be, sizeof (float));
  tach_backend_sample_tokens (be, d_logits, N, V, seed, counter, d_tok, d_ctx, L, d_loss);
  tok2 = tach_ops_download_i (be, d_tok, N);
  out_ctx2 = tach_ops_download_i (be, d_ctx, (size_t) N * L);
  g_assert_cmpmem (tok, N * sizeof (int32_t), tok2, N * sizeof (int32_t));
  g_assert_cmpmem (out_ctx, N * L * sizeof (int32_t), out_ctx2, N * L * sizeof (int32_t));

  tach_op (be, softmax_ce, d_logits, d_tok, N, V, d_ce, NULL);
  loss = tach_ops_download_scalar (be, d_loss);
  ce = tach_ops_download_scalar (be, d_ce);
  g_assert_cmpfloat (loss, ==, ce);
  g_assert_cmpfloat (loss, >, 0.0f);
}

/* W2's vocabulary (554) at batch 1 and 64, and other widths, logits up to
 * 3 sigma, and thousands of rows (a GPU spreads them over blocks): the
 * tokens of the double-precision inverse CDF (a backend sums in double as
 * the host does, so only a draw within double rounding of a boundary may
 * move), the context shifted, and with a loss slot the same tokens and the
 * mean -log p of them that the reference gives: softmax_ce's loss of them,
 * to the bit. */
static void
test_sample_tokens_wide (TachBackend *be)
{
  static const int shapes[][2] = { { 64, 554 }, { 1, 554 }, { 37, 300 }, { 5, 3000 }, { 3, 31 },
                                   { 9000, 554 }, { 4000, 10 } };
  enum { L = 4 };

  for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      int n = shapes[s][0], vocab = shapes[s][1], checked = 0;
      const guint64 seed = 79 + s, counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_SAMPLE, 11);
      size_t nv = (size_t) n * vocab;
      g_autofree double *logits = g_new (double, nv);
      g_autofree double *unused = g_new (double, nv);
      g_autofree int32_t *ctx = g_new (int32_t, (size_t) n * L);
      g_autofree int32_t *tok = NULL;
      g_autofree int32_t *out_ctx = NULL;
      g_autofree int32_t *tok2 = NULL;
      g_autofree int32_t *out_ctx2 = NULL;
      g_autofree char *what = g_strdup_printf ("sample_tokens %dx%d loss", n, vocab);
      float *d_logits, *d_loss, *d_ce;
      int32_t *d_tok, *d_ctx;
      double want_loss;
      float got_loss, ce;

      tach_ref_fill_normal (logits, nv, 1460 + s, 1, 3.0);
      tach_ref_round_to_float (logits, nv);
      for (int i = 0; i < n * L; i++)
        ctx[i] = (int32_t) (i % vocab);
      backend_sample (be, logits, n, vocab, seed, counter, ctx, L, &tok, &out_ctx);
      for (int r = 0; r < n; r++)
        {
          double margin = 0.0;
          int32_t want = tach_ref_sample_row (logits + (size_t) r * vocab, vocab,
                                              tach_rand_uniform (seed, counter, r), &margin);

          if (margin > 1e-12)
            {
              g_assert_cmpint (tok[r], ==, want);
              checked++;
            }
          for (int i = 0; i + 1 < L; i++)
            g_assert_cmpint (out_ctx[r * L + i], ==, ctx[r * L + i + 1]);
          g_assert_cmpint (out_ctx[r * L + L - 1], ==, tok[r]);
        }
      g_assert_cmpint (checked, >=, n - 1);

      d_logits = tach_ops_upload_d (be, logits, nv);
      d_tok = tach_ops_alloc (be, n * sizeof (int32_t));
      d_ctx = tach_ops_upload_i (be, ctx, (size_t) n * L);
      d_loss = tach_ops_alloc (be, sizeof (float));
      d_ce = tach_ops_alloc (be, sizeof (float));
      tach_backend_sample_tokens (be, d_logits, n, vocab, seed, counter, d_tok, d_ctx, L, d_loss);
      tok2 = tach_ops_download_i (be, d_tok, n);
      out_ctx2 = tach_ops_download_i (be, d_ctx, (size_t) n * L);
      g_assert_cmpmem (tok, n * sizeof (int32_t), tok2, n * sizeof (int32_t));
      g_assert_cmpmem (out_ctx, n * L * sizeof (int32_t), out_ctx2, n * L * sizeof (int32_t));
      want_loss = tach_ref_softmax_ce (logits, tok, n, vocab, unused);
      got_loss = tach_ops_download_scalar (be, d_loss);
      tach_ops_assert_nmse (what, &got_loss, &want_loss, 1, TACH_OPS_NMSE_SIMPLE);
      tach_op (be, softmax_ce, d_logits, d_tok, n, vocab, d_ce, NULL);
      ce = tach_ops_download_scalar (be, d_ce);
      g_assert_cmpfloat (got_loss, ==, ce);
    }
}

/* TACH_CUDA_PLAIN=sampler keeps the block-per-row sampler and softmax_ce
 * after it; the lean path (one warp-parallel kernel) must draw the same
 * tokens, shift the same context and report the same loss, to the bit
 * where the tokens agree.  Both backends are opened here, each with its
 * own buffers. */
static void
run_sampler (TachBackend *be, const double *logits, int n, int vocab, guint64 seed,
             guint64 counter, int32_t *tok, int32_t *ctx, int len, float *loss)
{
  float *d_logits = tach_backend_alloc (be, sizeof (float) * n * vocab);
  int32_t *d_tok = tach_backend_alloc (be, sizeof (int32_t) * n);
  int32_t *d_ctx = tach_backend_alloc (be, sizeof (int32_t) * n * len);
  float *d_loss = tach_backend_alloc (be, sizeof (float));
  g_autofree float *f = tach_ref_to_float (logits, (size_t) n * vocab);

  tach_backend_upload (be, d_logits, f, sizeof (float) * n * vocab);
  tach_backend_upload (be, d_ctx, ctx, sizeof (int32_t) * n * len);
  tach_backend_sample_tokens (be, d_logits, n, vocab, seed, counter, d_tok, d_ctx, len, d_loss);
  tach_backend_download (be, tok, d_tok, sizeof (int32_t) * n);
  tach_backend_download (be, ctx, d_ctx, sizeof (int32_t) * n * len);
  tach_backend_download (be, loss, d_loss, sizeof (float));
  tach_ops_assert_ok (be);
  tach_backend_dealloc (be, d_logits);
  tach_backend_dealloc (be, d_tok);
  tach_backend_dealloc (be, d_ctx);
  tach_backend_dealloc (be, d_loss);
}

static void
test_sample_tokens_plain (TachBackend *be)
{
  static const int shapes[][2] = { { 1, 554 }, { 64, 554 }, { 256, 10 } };
  enum { L = 3 };
  g_autoptr(GError) error = NULL;
  TachBackend *plain;

  g_setenv ("TACH_CUDA_PLAIN", "sampler", TRUE);
  plain = tach_backend_new (be->device->id, 2, TACH_PRECISION_FP32, &error);
  g_unsetenv ("TACH_CUDA_PLAIN");
  g_assert_no_error (error);
  for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      int n = shapes[s][0], vocab = shapes[s][1], same = 0;
      const guint64 seed = 91 + s, counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_SAMPLE, 5);
      g_autofree double *logits = g_new (double, (size_t) n * vocab);
      g_autofree int32_t *ctx_lean = g_new (int32_t, (size_t) n * L);
      g_autofree int32_t *ctx_plain = g_new (int32_t, (size_t) n * L);
      g_autofree int32_t *tok_lean = g_new (int32_t, n);
      g_autofree int32_t *tok_plain = g_new (int32_t, n);
      float loss_lean = NAN, loss_plain = NAN;

      tach_ref_fill_normal (logits, (size_t) n * vocab, 1470 + s, 1, 3.0);
      tach_ref_round_to_float (logits, (size_t) n * vocab);
      for (int i = 0; i < n * L; i++)
        ctx_lean[i] = ctx_plain[i] = (int32_t) (i % vocab);
      run_sampler (be, logits, n, vocab, seed, counter, tok_lean, ctx_lean, L, &loss_lean);
      run_sampler (plain, logits, n, vocab, seed, counter, tok_plain, ctx_plain, L, &loss_plain);
      for (int r = 0; r < n; r++)
        {
          double margin = 0.0;

          tach_ref_sample_row (logits + (size_t) r * vocab, vocab,
                               tach_rand_uniform (seed, counter, r), &margin);
          if (margin > 1e-12)
            g_assert_cmpint (tok_lean[r], ==, tok_plain[r]);
          same += tok_lean[r] == tok_plain[r];
        }
      g_assert_cmpint (same, >=, n - 1);
      if (same == n)
        {
          g_assert_cmpmem (ctx_lean, sizeof (int32_t) * n * L, ctx_plain, sizeof (int32_t) * n * L);
          g_assert_cmpfloat (loss_lean, ==, loss_plain);
        }
      g_assert_cmpfloat (loss_lean, >, 0.0f);
    }
  tach_backend_free (plain);
}

/* Token frequencies follow the softmax of the logits. */
static void
test_sample_frequencies (TachBackend *be)
{
  enum { N = 20000, V = 6 };
  const double row[V] = { 1.0, 0.2, -0.5, 2.0, 0.0, -1.5 };
  g_autofree double *logits = g_new (double, (size_t) N * V);
  g_autofree int32_t *ctx = g_new0 (int32_t, N);
  g_autofree int32_t *tok = NULL;
  g_autofree int32_t *out_ctx = NULL;
  double prob[V], se = 0.0;
  int count[V] = { 0 };

  for (int r = 0; r < N; r++)
    memcpy (logits + (size_t) r * V, row, sizeof row);
  for (int k = 0; k < V; k++)
    se += exp (row[k]);
  backend_sample (be, logits, N, V, 5, TACH_RAND_COUNTER (TACH_RAND_STREAM_SAMPLE, 0), ctx, 1,
                  &tok, &out_ctx);
  for (int r = 0; r < N; r++)
    {
      g_assert_cmpint (tok[r], >=, 0);
      g_assert_cmpint (tok[r], <, V);
      count[tok[r]]++;
      g_assert_cmpint (out_ctx[r], ==, tok[r]);  /* len 1: the ctx is the token */
    }
  for (int k = 0; k < V; k++)
    {
      double f, sigma;

      prob[k] = exp (row[k]) / se;
      f = (double) count[k] / N;
      sigma = sqrt (prob[k] * (1.0 - prob[k]) / N);
      g_test_message ("token %d: frequency %.4f, softmax %.4f", k, f, prob[k]);
      g_assert_cmpfloat (fabs (f - prob[k]), <, 5.0 * sigma);
    }
}

/* Three Adam steps from a device step counter that starts at @t0: the op
 * must read t from the device (a replayed graph has no host counter). */
static void
run_adam (TachBackend *be, double t0)
{
  enum { N = 257 };
  const float lr = 0.01f, b1 = 0.9f, b2 = 0.999f, eps = 1e-7f;
  g_autofree double *p = g_new (double, N);
  g_autofree double *m = g_new (double, N);
  g_autofree double *v = g_new (double, N);
  g_autofree double *g = g_new (double, N);
  g_autofree float *got = NULL;
  g_autofree char *what = NULL;
  float *d_p, *d_m, *d_v, *d_g, *d_t;
  float t0f = (float) t0;
  double t = t0;

  tach_ref_fill_normal (p, N, 1500, 1, 0.02);
  tach_ref_round_to_float (p, N);
  if (t0 == 0.0)
    {
      memset (m, 0, N * sizeof (double));
      memset (v, 0, N * sizeof (double));
    }
  else
    {
      tach_ref_fill_normal (m, N, 1500, 2, 0.1);
      tach_ref_fill_uniform (v, N, 1500, 3, 0.01, 0.5);
      tach_ref_round_to_float (m, N);
      tach_ref_round_to_float (v, N);
    }
  d_p = tach_ops_upload_d (be, p, N);
  d_m = tach_ops_upload_d (be, m, N);
  d_v = tach_ops_upload_d (be, v, N);
  d_g = tach_ops_alloc (be, N * sizeof (float));
  d_t = tach_ops_upload_f (be, &t0f, 1);
  for (int step = 0; step < 3; step++)
    {
      g_autofree float *gf = NULL;

      tach_ref_fill_normal (g, N, 1500, 10 + step, 1.0);
      /* Gradients near eps on odd elements: there the two published forms
       * (eps added to sqrt(v_hat), or Keras' eps added to sqrt(v) with the
       * corrections folded into lr) differ by a factor of about 4, so every
       * backend must take the contract's form. */
      for (size_t i = 1; i < N; i += 2)
        g[i] *= 1e-6;
      tach_ref_round_to_float (g, N);
      gf = tach_ref_to_float (g, N);
      tach_backend_upload (be, d_g, gf, N * sizeof (float));
      tach_op (be, adam, d_p, d_g, d_m, d_v, N, lr, b1, b2, eps, d_t);
      tach_ref_adam (p, g, m, v, N, lr, b1, b2, eps, &t);
    }
  what = g_strdup_printf ("adam params from t=%g", t0);
  got = tach_ops_download_f (be, d_p, N);
  tach_ops_assert_nmse (what, got, p, N, TACH_OPS_NMSE_SIMPLE);
  g_free (got);
  got = tach_ops_download_f (be, d_m, N);
  tach_ops_assert_nmse ("adam m", got, m, N, TACH_OPS_NMSE_SIMPLE);
  g_free (got);
  got = tach_ops_download_f (be, d_v, N);
  tach_ops_assert_nmse ("adam v", got, v, N, TACH_OPS_NMSE_SIMPLE);
  g_assert_cmpfloat (tach_ops_download_scalar (be, d_t), ==, t0 + 3.0);
}

static void
test_adam (TachBackend *be)
{
  run_adam (be, 0.0);
  run_adam (be, 5.0);
}

static void
test_sgd (TachBackend *be)
{
  enum { N = 1000 };
  g_autofree double *p = g_new (double, N);
  g_autofree double *g = g_new (double, N);
  g_autofree float *got = NULL;
  float *d_p, *d_g;

  tach_ref_fill_normal (p, N, 1600, 1, 0.05);
  tach_ref_fill_normal (g, N, 1600, 2, 1.0);
  tach_ref_round_to_float (p, N);
  tach_ref_round_to_float (g, N);
  d_p = tach_ops_upload_d (be, p, N);
  d_g = tach_ops_upload_d (be, g, N);
  tach_op (be, sgd, d_p, d_g, N, 0.01f);
  tach_ref_sgd (p, g, N, 0.01f);
  got = tach_ops_download_f (be, d_p, N);
  tach_ops_assert_nmse ("sgd", got, p, N, TACH_OPS_NMSE_SIMPLE);
}

/* The reference sampler on a distribution small enough to follow by hand. */
static void
test_ref_sample (void)
{
  const double logits[3] = { 0.0, log (2.0), log (1.0) };  /* probabilities 1/4, 1/2, 1/4 */
  double margin;

  g_assert_cmpint (tach_ref_sample_row (logits, 3, 0.1, &margin), ==, 0);
  g_assert_cmpfloat_with_epsilon (margin, 0.1, 1e-12);
  g_assert_cmpint (tach_ref_sample_row (logits, 3, 0.3, NULL), ==, 1);
  g_assert_cmpint (tach_ref_sample_row (logits, 3, 0.74, NULL), ==, 1);
  g_assert_cmpint (tach_ref_sample_row (logits, 3, 0.76, NULL), ==, 2);
  g_assert_cmpint (tach_ref_sample_row (logits, 3, 0.9999999, NULL), ==, 2);
}

/* The reference Adam's first step moves each parameter by lr against the
 * sign of its gradient (bias correction makes mhat/sqrt(vhat) = sign(g)). */
static void
test_ref_adam (void)
{
  double p[3] = { 1.0, 2.0, 3.0 }, g[3] = { 0.5, -2.0, 4.0 }, m[3] = { 0 }, v[3] = { 0 }, t = 0.0;

  tach_ref_adam (p, g, m, v, 3, 0.1, 0.9, 0.999, 1e-12, &t);
  g_assert_cmpfloat (t, ==, 1.0);
  g_assert_cmpfloat_with_epsilon (p[0], 0.9, 1e-9);
  g_assert_cmpfloat_with_epsilon (p[1], 2.1, 1e-9);
  g_assert_cmpfloat_with_epsilon (p[2], 2.9, 1e-9);
}

/* TACH_CPU_ISA caps the vector extensions of the CPU backend's kernels
 * and oneDNN's: the device names the level it runs at, a cap below AVX-512
 * refuses bf16, and a value that names no level is refused with the fix.
 * The level is decided once per process, so each setting runs in a child.
 * In the suite's capped entries (test-ops-avx2, ...) the parent checks that
 * the cap it runs under took effect, so those entries test the narrower
 * path indeed. */
static void
test_cpu_isa (void)
{
  g_autofree char *env = g_strdup (g_getenv ("TACH_CPU_ISA"));
  g_autoptr(GError) error = NULL;
  TachBackend *be;
  const char *why = NULL;

  be = tach_backend_new ("cpu", 1, TACH_PRECISION_FP32, &error);
  if (g_test_subprocess ())
    {
      if (g_strcmp0 (env, "bogus") == 0)
        {
          g_assert_null (be);
          g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
          g_assert_nonnull (strstr (error->message, "TACH_CPU_ISA is 'bogus'"));
          g_assert_nonnull (strstr (error->message, "avx2"));
          return;
        }
      g_assert_no_error (error);
      g_assert_nonnull (strstr (be->device->versions, ", baseline"));
      g_assert_false (tach_backend_supports ("cpu", "precision", "bf16", &why));
      g_assert_nonnull (strstr (why, "TACH_CPU_ISA"));
      tach_backend_free (be);
      return;
    }
  g_assert_no_error (error);
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  if (g_strcmp0 (env, "avx2") == 0 && __builtin_cpu_supports ("x86-64-v3"))
    g_assert_nonnull (strstr (be->device->versions, ", avx2"));
#endif
  if (g_strcmp0 (env, "baseline") == 0)
    g_assert_nonnull (strstr (be->device->versions, ", baseline"));
  g_test_message ("CPU: %s", be->device->versions);
  tach_backend_free (be);

  for (guint i = 0; i < 2; i++)
    {
      g_setenv ("TACH_CPU_ISA", i == 0 ? "bogus" : "baseline", TRUE);
      g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
      g_test_trap_assert_passed ();
    }
  if (env != NULL)
    g_setenv ("TACH_CPU_ISA", env, TRUE);
  else
    g_unsetenv ("TACH_CPU_ISA");
}

/* The host's sampling arithmetic (tach-sample.h: the CPU op, its
 * softmax_ce without gradients, lstm-lm's sampling=host) on rows of many
 * sizes and spreads: the log-sum-exp within 1e-14 of one in long double,
 * the token the reference draws wherever u is not within 1e-12 of a
 * boundary, and the same bits at every vector width: children under each
 * TACH_CPU_ISA cap print a fingerprint of every value, which must be the
 * parent's. */
static guint64
host_sample_fingerprint (gboolean check)
{
  static const int sizes[] = { 1, 7, 8, 9, 554, 554, 554, 1000, 2100, 3, 5, 12, 17, 31, 64, 100 };
  guint64 hash = 14695981039346656037ull;

  for (guint c = 0; c < G_N_ELEMENTS (sizes); c++)
    {
      int v = sizes[c];
      g_autofree double *z = g_new (double, v);
      g_autofree float *zf = g_new (float, v);
      long double se = 0.0L, zmax;
      double lse;
      guint64 bits;

      tach_ref_fill_normal (z, v, 1470, c, c == 5 ? 300.0 : 2.5);
      if (c == 6)
        for (int k = 0; k < v; k++)
          z[k] = k % 3 == 0 ? 4.0 : -2.0;    /* ties, and equal rows of mass */
      tach_ref_round_to_float (z, v);
      zmax = z[0];
      for (int k = 1; k < v; k++)
        zmax = MAX (zmax, (long double) z[k]);
      /* A maximum of 0: lse = log (sum) then shows the sum's every bit. */
      if (c % 2 == 0)
        {
          for (int k = 0; k < v; k++)
            z[k] -= (double) zmax;
          tach_ref_round_to_float (z, v);
        }
      for (int k = 0; k < v; k++)
        zf[k] = (float) z[k];
      zmax = z[0];
      for (int k = 1; k < v; k++)
        zmax = MAX (zmax, (long double) z[k]);
      for (int k = 0; k < v; k++)
        se += expl (z[k] - zmax);
      lse = tach_sample_lse (zf, v);
      if (check)
        g_assert_cmpfloat (fabs (lse - (double) (zmax + logl (se))), <=,
                           1e-14 * (1.0 + fabs (lse)));
      memcpy (&bits, &lse, sizeof bits);
      hash = (hash ^ bits) * 1099511628211ull;
      for (int i = 0; i < 64; i++)
        {
          float u = tach_rand_uniform (1471, c, i);
          double margin, lse_row;
          int32_t tok = tach_sample_row (zf, v, u, &lse_row);
          int32_t want = tach_ref_sample_row (z, v, u, &margin);

          if (check)
            {
              g_assert_cmpfloat (lse_row, ==, lse);
              if (margin > 1e-12)
                g_assert_cmpint (tok, ==, want);
            }
          hash = (hash ^ (guint64) tok) * 1099511628211ull;
        }
    }
  /* Two-entry rows {0, -t}: lse = log1p (exp (-t)) shows each exponential's
   * last bits (the ones fusing a multiply-add or not would change). */
  for (int i = 0; i < 8192; i++)
    {
      float zf[2] = { 0.0f, -0.003f * (float) i };
      double lse = tach_sample_lse (zf, 2);
      guint64 bits;

      if (check)
        g_assert_cmpfloat (fabs (lse - (double) log1pl (expl ((long double) zf[1]))), <=,
                           3e-16);
      memcpy (&bits, &lse, sizeof bits);
      hash = (hash ^ bits) * 1099511628211ull;
    }
  return hash;
}

static void
test_host_sample (void)
{
  static const char *const caps[] = { "avx2", "baseline" };
  g_autofree char *env = g_strdup (g_getenv ("TACH_CPU_ISA"));
  g_autofree char *want = NULL;
  guint64 hash;

  if (g_test_subprocess ())
    {
      g_print ("fingerprint %016" G_GINT64_MODIFIER "x\n", host_sample_fingerprint (TRUE));
      return;
    }
  hash = host_sample_fingerprint (TRUE);
  want = g_strdup_printf ("*fingerprint %016" G_GINT64_MODIFIER "x*", hash);
  for (guint i = 0; i < G_N_ELEMENTS (caps); i++)
    {
      g_setenv ("TACH_CPU_ISA", caps[i], TRUE);
      g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
      g_test_trap_assert_passed ();
      g_test_trap_assert_stdout (want);
    }
  if (env != NULL)
    g_setenv ("TACH_CPU_ISA", env, TRUE);
  else
    g_unsetenv ("TACH_CPU_ISA");
}

void
tach_ops_register_misc (const char *device_id)
{
  if (device_id == NULL)
    {
      tach_ops_add_ref ("sample-tokens/by-hand", test_ref_sample);
      tach_ops_add_ref ("adam/first-step", test_ref_adam);
      return;
    }
  tach_ops_add (device_id, "dropout/forward-backward", test_dropout);
  tach_ops_add (device_id, "dropout/statistics", test_dropout_statistics);
  tach_ops_add (device_id, "embedding/forward", test_embedding);
  tach_ops_add (device_id, "sample-tokens/reference", test_sample_tokens);
  tach_ops_add (device_id, "sample-tokens/wide", test_sample_tokens_wide);
  tach_ops_add (device_id, "sample-tokens/frequencies", test_sample_frequencies);
  tach_ops_add (device_id, "sample-tokens/with-loss", test_sample_tokens_nll);
  if (g_str_has_prefix (device_id, "cuda"))
    tach_ops_add (device_id, "sample-tokens/plain-sampler", test_sample_tokens_plain);
  tach_ops_add (device_id, "adam/steps", test_adam);
  tach_ops_add (device_id, "sgd/step", test_sgd);
  if (g_strcmp0 (device_id, "cpu") == 0)
    {
      g_test_add_func ("/engine/cpu/isa/cap", test_cpu_isa);
      g_test_add_func ("/engine/cpu/sample/host-arithmetic", test_host_sample);
    }
}
