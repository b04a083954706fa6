/* test-cpu-frozen.c: the CPU backend's frozen weights (tach_backend_freeze)
 * give the plain ops' bits: the packed small-product kernel against
 * tach_cpu_sgemm_local, the gemm op and the inference LSTM of a
 * generation loop (packed weights, kept input rows) against the same ops
 * on an unfrozen copy, and a write thaws them; the larger products on a
 * matmul whose weights were reordered once, within a float tolerance.  Run under each
 * TACH_CPU_ISA cap, so both vector widths are held to their own bits.
 */
#include <math.h>
#include <string.h>

#include "tach-cpu-lstm-private.h"

static float
next_value (guint32 *state)
{
  *state = *state * 1664525u + 1013904223u;
  return (float) ((*state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void
fill (float *v, size_t n, guint32 *state)
{
  for (size_t i = 0; i < n; i++)
    v[i] = next_value (state);
}

static TachBackend *
cpu_backend (guint threads)
{
  g_autoptr(GError) error = NULL;
  TachBackend *be = tach_backend_new ("cpu", threads, TACH_PRECISION_FP32, &error);

  g_assert_no_error (error);
  g_assert_nonnull (be);
  return be;
}

/* Every shape where the packed kernel stands in for the small kernels. */
static void
test_packed_bits (void)
{
  static const size_t ns[] = { 8, 9, 15, 16, 17, 31, 33, 400, 554, 1152 };
  static const size_t ks[] = { 1, 3, 7, 8, 9, 15, 16, 17, 40, 64, 100, 129, 300, 384, 1536 };
  TachBackend *be = cpu_backend (1);
  guint32 state = 1;
  guint tried = 0;

  for (guint a = 0; a < G_N_ELEMENTS (ns); a++)
    for (guint b = 0; b < G_N_ELEMENTS (ks); b++)
      for (size_t m = 1; m <= 5; m++)
        for (guint v = 0; v < 3; v++)
          {
            size_t n = ns[a], k = ks[b], ldb = k + (v == 2 ? 3 : 0), lda = k + v;
            float alpha = v == 2 ? 0.5f : 1.0f, beta = v == 0 ? 0.0f : 1.0f;
            g_autofree float *bm = NULL, *am = NULL, *c1 = NULL, *c2 = NULL;
            float *packed;

            if (!tach_cpu_packed_nt_usable (n)
                || !tach_cpu_sgemm_takes_small (FALSE, TRUE, m, n, k))
              continue;
            bm = g_new (float, n * ldb);
            am = g_new (float, m * lda);
            c1 = g_new (float, m * n);
            c2 = g_new (float, m * n);
            fill (bm, n * ldb, &state);
            fill (am, m * lda, &state);
            fill (c1, m * n, &state);
            memcpy (c2, c1, m * n * sizeof (float));
            if (v == 1)
              {
                /* Signed zeros keep their sign through both. */
                am[0] = -0.0f;
                bm[0] = 0.0f;
              }
            packed = tach_cpu_mem_alloc (be, tach_cpu_packed_nt_floats (n, k) * sizeof (float));
            tach_cpu_pack_nt (n, k, bm, ldb, packed);
            g_assert_cmpint (tach_cpu_sgemm_local (FALSE, TRUE, m, n, k, alpha, am, lda, bm, ldb,
                                                   beta, c1, n), ==, dnnl_success);
            tach_cpu_packed_nt (m, n, k, alpha, am, lda, packed, beta, c2, n);
            tach_cpu_mem_free (be, packed);
            g_assert_cmpmem (c1, m * n * sizeof (float), c2, m * n * sizeof (float));
            tried++;
          }
  if (tach_cpu_isa () == TACH_CPU_ISA_BASELINE)
    g_assert_cmpuint (tried, ==, 0);
  else
    g_assert_cmpuint (tried, >, 500);
  tach_backend_free (be);
}

/* @c1 against @c2 (m x n): the same bits where @tol is 0, else within
 * @tol. */
static void
assert_products (const float *c1, const float *c2, int m, int n, double tol)
{
  double worst = 0.0;

  if (tol == 0.0)
    {
      g_assert_cmpmem (c1, (size_t) m * n * sizeof (float), c2, (size_t) m * n * sizeof (float));
      return;
    }
  for (size_t i = 0; i < (size_t) m * n; i++)
    worst = MAX (worst, fabs ((double) c1[i] - c2[i]));
  g_assert_cmpfloat (worst, <=, tol);
}

/* The gemm op on a frozen B against the same B unfrozen (within @tol, 0:
 * the same bits), then written: @copies frozen copies made at product
 * number @from (from 0) and read by the next ones. */
static void
gemm_frozen_unfrozen (int m, int n, int k, guint copies, int from, double tol)
{
  TachBackend *be = cpu_backend (1);
  guint32 state = 7;
  g_autofree float *host = g_new (float, (size_t) n * k);
  float *b = tach_backend_alloc (be, (size_t) n * k * sizeof (float));
  float *b2 = tach_backend_alloc (be, (size_t) n * k * sizeof (float));
  float *a = tach_backend_alloc (be, (size_t) m * k * sizeof (float));
  float *c1 = tach_backend_alloc (be, (size_t) m * n * sizeof (float));
  float *c2 = tach_backend_alloc (be, (size_t) m * n * sizeof (float));
  guint64 copied = 0;

  fill (host, (size_t) n * k, &state);
  tach_backend_upload (be, b, host, (size_t) n * k * sizeof (float));
  tach_backend_upload (be, b2, host, (size_t) n * k * sizeof (float));
  fill (a, (size_t) m * k, &state);
  tach_backend_freeze (be, b, (size_t) n * k * sizeof (float));
  for (int round = 0; round < 3; round++)
    {
      g_assert_cmpuint (tach_cpu_frozen_epoch (be, b, (size_t) n * k * sizeof (float)), !=, 0);
      tach_op (be, gemm, FALSE, TRUE, m, n, k, 1.0f, a, k, b, k, 0.0f, c1, n);
      tach_op (be, gemm, FALSE, TRUE, m, n, k, 1.0f, a, k, b2, k, 0.0f, c2, n);
      g_assert_true (tach_backend_ok (be));
      assert_products (c1, c2, m, n, tol);
      g_assert_cmpuint (TACH_CPU (be)->frozen_copies->len, ==, round >= from ? copies : 0);
      if (round <= from)
        copied = TACH_CPU (be)->frozen_copies_bytes;
      g_assert_cmpuint (TACH_CPU (be)->frozen_copies_bytes, ==, copied);
      g_assert_cmpuint (copied, >=, round >= from ? copies * (guint64) n * k * sizeof (float) : 0);
      a[round] += 0.25f;
    }
  /* A write thaws B: the product follows the new values. */
  host[5] = 3.0f;
  tach_backend_upload (be, b, host, (size_t) n * k * sizeof (float));
  tach_backend_upload (be, b2, host, (size_t) n * k * sizeof (float));
  g_assert_cmpuint (tach_cpu_frozen_epoch (be, b, (size_t) n * k * sizeof (float)), ==, 0);
  /* Its copy is freed at once, not at the next product. */
  g_assert_cmpuint (TACH_CPU (be)->frozen_copies->len, ==, 0);
  tach_op (be, gemm, FALSE, TRUE, m, n, k, 1.0f, a, k, b, k, 0.0f, c1, n);
  tach_op (be, gemm, FALSE, TRUE, m, n, k, 1.0f, a, k, b2, k, 0.0f, c2, n);
  assert_products (c1, c2, m, n, tol);
  tach_backend_free (be);
}

/* An LSTM's output layer, and one decoded token's qkv and fc products of
 * gpt at width 384 (batch 1 and 2): thin products beyond the small size,
 * which the packed copy serves too. */
static void
test_gemm (void)
{
  guint packs = tach_cpu_packed_nt_usable (554) ? 1 : 0;

  gemm_frozen_unfrozen (1, 554, 100, packs, 0, 0.0);
  gemm_frozen_unfrozen (1, 1152, 384, packs, 0, 0.0);
  gemm_frozen_unfrozen (2, 1536, 384, packs, 0, 0.0);
}

/* A prefill's products (64 prompt rows by gpt's qkv weight, 1152 x 384,
 * and its MLP's second, 384 x 1536), and four streams' decoding, on frozen
 * weights: from their second call at AVX-512, a matmul on the weights
 * reordered once (one frozen copy, not dnnl_sgemm's packing at every
 * call; below AVX-512 dnnl_sgemm's bits), within a float tolerance of the
 * unfrozen product (the sums run in another order); a write thaws it. */
static void
test_gemm_matmul (void)
{
  guint brgemm = tach_cpu_isa () == TACH_CPU_ISA_AVX512 ? 1 : 0;

  g_assert_false (tach_cpu_sgemm_takes_small (FALSE, TRUE, 4, 1152, 384));
  gemm_frozen_unfrozen (64, 1152, 384, brgemm, 1, 1e-6 * 384);
  gemm_frozen_unfrozen (64, 384, 1536, brgemm, 1, 1e-6 * 1536);
  gemm_frozen_unfrozen (4, 1152, 384, brgemm, 1, 1e-6 * 384);
}

/* A gpt decoding step's weights, four a block over 6 blocks and the LM
 * head, in one frozen buffer: every one of them gets its packed copy and
 * gives the unfrozen bits (at most 8 copies were kept: 17 of the 25 read
 * their plain rows each token). */
static void
test_gemm_many (void)
{
  const int m = 1, n = 64, k = 48, weights = 25;
  const size_t each = (size_t) n * k;
  TachBackend *be = cpu_backend (1);
  guint32 state = 11;
  float *w = tach_backend_alloc (be, weights * each * sizeof (float));
  float *w2 = tach_backend_alloc (be, weights * each * sizeof (float));
  float *a = tach_backend_alloc (be, (size_t) k * sizeof (float));
  float *c1 = tach_backend_alloc (be, (size_t) n * sizeof (float));
  float *c2 = tach_backend_alloc (be, (size_t) n * sizeof (float));

  fill (w, weights * each, &state);
  memcpy (w2, w, weights * each * sizeof (float));
  fill (a, (size_t) k, &state);
  tach_backend_freeze (be, w, weights * each * sizeof (float));
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < weights; i++)
      {
        tach_op (be, gemm, FALSE, TRUE, m, n, k, 1.0f, a, k, w + i * each, k, 0.0f, c1, n);
        tach_op (be, gemm, FALSE, TRUE, m, n, k, 1.0f, a, k, w2 + i * each, k, 0.0f, c2, n);
        g_assert_true (tach_backend_ok (be));
        g_assert_cmpmem (c1, (size_t) n * sizeof (float), c2, (size_t) n * sizeof (float));
      }
  g_assert_cmpuint (TACH_CPU (be)->frozen_copies->len, ==,
                    tach_cpu_packed_nt_usable ((size_t) n) ? (guint) weights : 0);
  tach_backend_free (be);
}

/* A thin product on a frozen weight split between 2 threads (at every
 * load: TACH_CPU_THREADS_ADAPT=never), the last part's block ragged, at
 * the bits of the unfrozen product on one thread. */
static void
test_gemm_threads (void)
{
  const int n = 1000, k = 384;
  TachBackend *one = cpu_backend (1), *two;
  guint32 state = 13;
  float *w, *w1, *a, *c, *c1;

  g_setenv ("TACH_CPU_THREADS_ADAPT", "never", TRUE);
  two = cpu_backend (2);
  g_unsetenv ("TACH_CPU_THREADS_ADAPT");
  w = tach_backend_alloc (two, (size_t) n * k * sizeof (float));
  w1 = tach_backend_alloc (one, (size_t) n * k * sizeof (float));
  a = tach_backend_alloc (two, 2 * (size_t) k * sizeof (float));
  c = tach_backend_alloc (two, 2 * (size_t) n * sizeof (float));
  c1 = tach_backend_alloc (one, 2 * (size_t) n * sizeof (float));
  fill (w, (size_t) n * k, &state);
  memcpy (w1, w, (size_t) n * k * sizeof (float));
  fill (a, 2 * (size_t) k, &state);
  fill (c, 2 * (size_t) n, &state);
  memcpy (c1, c, 2 * (size_t) n * sizeof (float));
  tach_backend_freeze (two, w, (size_t) n * k * sizeof (float));
  for (int m = 1; m <= 2; m++)
    {
      tach_op (two, gemm, FALSE, TRUE, m, n, k, 0.5f, a, k, w, k, 1.0f, c, n);
      tach_op (one, gemm, FALSE, TRUE, m, n, k, 0.5f, a, k, w1, k, 1.0f, c1, n);
      g_assert_true (tach_backend_ok (two) && tach_backend_ok (one));
      g_assert_cmpmem (c, 2 * (size_t) n * sizeof (float), c1, 2 * (size_t) n * sizeof (float));
    }
  g_assert_cmpuint (TACH_CPU (two)->frozen_copies->len, ==,
                    tach_cpu_packed_nt_usable ((size_t) n) ? 1 : 0);
  tach_backend_free (two);
  tach_backend_free (one);
}

/* Rows of the stream drawn from a vocabulary of VOCAB rows (as a
 * generation loop's embeddings are), then FRESH rows never seen, more than
 * the frozen plan keeps, so that it forgets them and starts again. */
#define VOCAB 30
#define VOCAB_ROWS 300
#define FRESH 1200

/* One LSTM (of @desc) over a window that shifts by one row per call, on
 * frozen weights and on an unfrozen copy: the same outputs every call,
 * the frozen plan on its packed copies, each row's input side kept once
 * (rows seen long ago found again, the table forgotten when full); after
 * a write to its weights, the plain pass again, and after freezing them
 * anew, new copies.  One direction's windows (tach-cpu-lstm-frozen.c)
 * resume call after call, with their products run ahead where @ahead
 * says: on the helper thread (two threads), by the calling thread
 * (TACH_CPU_AHEAD=caller) or not at all (one thread). */
typedef enum { AHEAD_NONE, AHEAD_HELPER, AHEAD_CALLER } Ahead;

static void
check_lstm (const TachLstmDesc *desc, Ahead ahead)
{
  TachBackend *be;
  const TachLstmDesc *d = desc;
  size_t row = (size_t) d->I, rows = (size_t) d->T * d->N;
  size_t nw = (size_t) d->dirs * 4 * d->H * ((size_t) d->I + d->H + 1);
  size_t ny = rows * d->dirs * d->H, stream = VOCAB_ROWS + FRESH;
  guint32 state = 3;
  g_autofree float *host = g_new (float, nw);
  g_autofree float *vocab = g_new (float, VOCAB * row);
  g_autofree float *tokens = g_new (float, stream * row);
  gboolean forgot = FALSE;
  size_t kept = 0;
  float *w, *w2, *x, *y1, *y2;
  TachLstmPlan *frozen, *plain;

  /* The split pass would take the place of the windows: the serial pass,
   * whatever its timing. */
  if (ahead == AHEAD_CALLER)
    g_setenv ("TACH_CPU_AHEAD", "caller", TRUE);
  g_setenv ("TACH_CPU_LSTM_SPLIT", "never", TRUE);
  be = cpu_backend (ahead == AHEAD_HELPER ? 2 : 1);
  w = tach_backend_alloc (be, nw * sizeof (float));
  w2 = tach_backend_alloc (be, nw * sizeof (float));
  x = tach_backend_alloc (be, rows * row * sizeof (float));
  y1 = tach_backend_alloc (be, ny * sizeof (float));
  y2 = tach_backend_alloc (be, ny * sizeof (float));
  frozen = tach_lstm_plan_new (be, d);
  plain = tach_lstm_plan_new (be, d);
  gboolean usable = tach_cpu_packed_nt_usable ((size_t) 4 * d->H);

  g_assert_nonnull (frozen);
  g_assert_true (tach_cpu_lstm_frozen_runs_ahead (be, frozen)
                 == (ahead == AHEAD_HELPER && d->dirs == 1 && d->T > 1));
  g_assert_nonnull (plain);
  fill (host, nw, &state);
  fill (vocab, VOCAB * row, &state);
  fill (tokens, stream * row, &state);
  for (size_t j = 0; j < VOCAB_ROWS; j++)
    memcpy (tokens + j * row, vocab + (j * 7 + j * j / 5) % VOCAB * row, row * sizeof (float));
  tach_backend_upload (be, w, host, nw * sizeof (float));
  tach_backend_upload (be, w2, host, nw * sizeof (float));
  tach_backend_freeze (be, w, nw * sizeof (float));
  for (size_t call = 0; call + rows <= stream; call++)
    {
      /* Rows of x: a window of the stream, one row further each call. */
      memcpy (x, tokens + call * row, rows * row * sizeof (float));
      if (call == 4)
        x[0] = -0.0f;
      /* Pauses longer than the helper spins: it sleeps, and a post wakes
       * it (or the caller takes the job back first). */
      if (ahead == AHEAD_HELPER && call % 100 == 50)
        g_usleep (1000);
      tach_op (be, lstm_fwd, frozen, x, w, y1, NULL);
      tach_op (be, lstm_fwd, plain, x, w2, y2, NULL);
      g_assert_true (tach_backend_ok (be));
      g_assert_cmpmem (y1, ny * sizeof (float), y2, ny * sizeof (float));
      g_assert_true (frozen->packed_for == (usable ? w : NULL));
      g_assert_null (plain->packed);
      /* What the plan runs is what the backend notes for runs.csv. */
      if (call == 0)
        {
          g_autofree char *algorithms = tach_backend_dup_algorithms (be);

          g_assert_true ((strstr (algorithms, "frozen weights packed") != NULL) == usable);
        }
      /* The vocabulary's rows (and the one with -0.0) are kept once. */
      if (usable && call + rows <= VOCAB_ROWS)
        g_assert_cmpuint (frozen->memo_rows, <=, VOCAB + 1);
      forgot |= frozen->memo_rows < kept;
      kept = frozen->memo_rows;
    }
  /* One direction, batch-major: each stream's rows shift by one a call,
   * so every call but four ran one step on the windows it kept (not the
   * first; not the second, which computed them; not call 4, whose first
   * row changed; not call 5, which computed them again). */
  if (usable && d->dirs == 1 && !d->time_major)
    g_assert_cmpuint (frozen->win_resumed, ==, stream - rows + 1 - 4);
  else
    g_assert_cmpuint (frozen->win_resumed, ==, 0);
  /* Each of them from the products the call before posted: taken from the
   * helper, or run by the caller where there is none.  (A helper that a
   * busy machine kept from finishing them in time leaves one to the
   * caller, computed there, with the same bits.) */
  if (ahead == AHEAD_CALLER)
    g_assert_cmpuint (frozen->win_ahead, ==, frozen->win_resumed);
  else if (ahead == AHEAD_NONE)
    g_assert_cmpuint (frozen->win_ahead, ==, 0);
  else
    {
      g_assert_cmpuint (frozen->win_ahead, <=, frozen->win_resumed);
      g_assert_true ((frozen->win_ahead > 0) == (frozen->win_resumed > 0));
    }
  /* Forgotten when the distinct rows were more than it keeps. */
  g_assert_true (forgot == (usable && frozen->memo_cap < VOCAB + 1 + FRESH));
  host[1] = 2.0f;
  tach_backend_upload (be, w, host, nw * sizeof (float));
  tach_backend_upload (be, w2, host, nw * sizeof (float));
  for (int refreeze = 0; refreeze < 2; refreeze++)
    {
      guint epoch = frozen->packed_epoch;

      tach_op (be, lstm_fwd, frozen, x, w, y1, NULL);
      tach_op (be, lstm_fwd, plain, x, w2, y2, NULL);
      g_assert_cmpmem (y1, ny * sizeof (float), y2, ny * sizeof (float));
      if (refreeze == 1 && usable)
        g_assert_cmpuint (frozen->packed_epoch, !=, epoch);
      tach_backend_freeze (be, w, nw * sizeof (float));
    }
  tach_lstm_plan_free (be, frozen);
  tach_lstm_plan_free (be, plain);
  tach_backend_free (be);
  g_unsetenv ("TACH_CPU_AHEAD");
  g_unsetenv ("TACH_CPU_LSTM_SPLIT");
}

static void
test_lstm (void)
{
  /* Generation's shape, odd sizes, two directions, a few streams. */
  static const TachLstmDesc descs[] = {
    { .T = 4, .N = 1, .I = 100, .H = 100, .dirs = 1, .precision = TACH_PRECISION_FP32 },
    { .T = 3, .N = 1, .I = 37, .H = 20, .dirs = 1, .precision = TACH_PRECISION_FP32 },
    { .T = 5, .N = 2, .I = 19, .H = 24, .dirs = 2, .precision = TACH_PRECISION_FP32 },
    { .T = 4, .N = 2, .I = 24, .H = 16, .dirs = 1, .precision = TACH_PRECISION_FP32 },
    { .T = 4, .N = 3, .I = 64, .H = 40, .dirs = 1, .time_major = TRUE,
      .precision = TACH_PRECISION_FP32 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (descs); i++)
    for (Ahead a = AHEAD_NONE; a <= AHEAD_CALLER; a++)
      {
        g_test_message ("shape %u, ahead %d", i, a);
        check_lstm (&descs[i], a);
      }
}

int
main (int argc, char **argv)
{
  /* Every thread, however busy the machine: on one, nothing runs ahead
   * on the helper (test-cpu-threads holds that to the same bits). */
  g_setenv ("TACH_CPU_THREADS_ADAPT", "never", TRUE);
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cpu/frozen/packed-bits", test_packed_bits);
  g_test_add_func ("/cpu/frozen/gemm", test_gemm);
  g_test_add_func ("/cpu/frozen/gemm-many", test_gemm_many);
  g_test_add_func ("/cpu/frozen/gemm-matmul", test_gemm_matmul);
  g_test_add_func ("/cpu/frozen/lstm", test_lstm);
  /* Last: its pool's threads, left spinning, would slow the LSTM's helper
   * thread, whose test asks it to finish in time. */
  g_test_add_func ("/cpu/frozen/gemm-threads", test_gemm_threads);
  return g_test_run ();
}
