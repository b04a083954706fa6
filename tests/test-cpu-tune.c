/* test-cpu-tune.c: the CPU LSTM plan's choice between its one-thread and
 * its pool GEMM path, driven by an injected clock.
 *
 * The clock makes each path cost a fixed time per forward pass and adds
 * bursts of load, as another process would: the plan must still choose the
 * path that is faster without them, and must measure again when its
 * forward calls run far slower than it estimated.
 */
#include <string.h>

#include "cpu/tach-cpu-private.h"

typedef struct {
  gint64  now;            /* µs */
  guint   reads;          /* clock reads: odd ones start a pass, even ones end it */
  guint   passes;         /* passes ended so far */
  double  cost[3];        /* µs per pass, by TachCpuGemmMode */
  /* A burst: passes [burst_from, burst_to) that run on @burst_mode
   * (TACH_CPU_GEMM_AUTO: on either path) take burst_us longer. */
  guint   burst_from, burst_to;
  TachCpuGemmMode burst_mode;
  double  burst_us;
} FakeClock;

static gint64
fake_clock (TachCpuGemmMode mode, gpointer data)
{
  FakeClock *c = data;

  if (c->reads++ % 2 == 0)
    return c->now;
  if (c->passes >= c->burst_from && c->passes < c->burst_to
      && (c->burst_mode == TACH_CPU_GEMM_AUTO || c->burst_mode == mode))
    c->now += (gint64) c->burst_us;
  c->now += (gint64) c->cost[mode];
  c->passes++;
  return c->now;
}

/* Small enough to be tuned (under 64 MFLOP a pass), not sliced. */
static const TachLstmDesc desc = {
  .T = 10, .N = 16, .I = 300, .H = 40, .dirs = 2, .time_major = FALSE,
  .training = TRUE, .need_dx = FALSE, .precision = TACH_PRECISION_FP32,
};

static TachBackend *
cpu_backend (void)
{
  g_autoptr(GError) error = NULL;
  /* Two threads: a one-thread backend has no pool path to choose. */
  TachBackend *be = tach_backend_new ("cpu", 2, TACH_PRECISION_FP32, &error);

  g_assert_no_error (error);
  g_assert_nonnull (be);
  return be;
}

static TachCpuGemmMode
tuned_mode (FakeClock *clock)
{
  TachBackend *be = cpu_backend ();
  TachLstmPlan *plan;
  TachCpuGemmMode mode;

  tach_cpu_lstm_set_tune_clock (fake_clock, clock);
  plan = tach_lstm_plan_new (be, &desc);
  tach_cpu_lstm_set_tune_clock (NULL, NULL);
  g_assert_true (tach_backend_ok (be));
  g_assert_nonnull (plan);
  mode = tach_cpu_lstm_plan_gemm_mode (plan);
  tach_lstm_plan_free (be, plan);
  tach_backend_free (be);
  return mode;
}

/* A burst over the first tuning passes (both paths, or only the faster
 * one's first samples) does not make the plan take the slower path. */
static void
test_noisy_choice (void)
{
  static const struct {
    TachCpuGemmMode fast, slow;
    guint from, to;
    TachCpuGemmMode burst_on;
  } cases[] = {
    /* Load over the first five passes, whichever path they ran. */
    { TACH_CPU_GEMM_POOL, TACH_CPU_GEMM_SERIAL, 0, 5, TACH_CPU_GEMM_AUTO },
    { TACH_CPU_GEMM_SERIAL, TACH_CPU_GEMM_POOL, 0, 5, TACH_CPU_GEMM_AUTO },
    /* Load that happens to hit the faster path's first three passes
     * (and a single pass each, as the plan timed before, would pick the
     * slower one). */
    { TACH_CPU_GEMM_POOL, TACH_CPU_GEMM_SERIAL, 0, 6, TACH_CPU_GEMM_POOL },
    { TACH_CPU_GEMM_SERIAL, TACH_CPU_GEMM_POOL, 0, 6, TACH_CPU_GEMM_SERIAL },
    /* Load late in the tuning. */
    { TACH_CPU_GEMM_POOL, TACH_CPU_GEMM_SERIAL, 6, 10, TACH_CPU_GEMM_POOL },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      FakeClock clock = { 0 };

      clock.cost[cases[i].fast] = 100.0;
      clock.cost[cases[i].slow] = 180.0;
      clock.burst_from = cases[i].from;
      clock.burst_to = cases[i].to;
      clock.burst_mode = cases[i].burst_on;
      clock.burst_us = 5000.0;
      g_assert_cmpint (tuned_mode (&clock), ==, cases[i].fast);
      /* Both paths were timed more than once each. */
      g_assert_cmpuint (clock.passes, >=, 6);
    }
}

/* Forward calls that run far slower than the plan's estimate make it
 * measure both paths again, and it moves to the path that is faster now;
 * the note on the backend says which path the plan runs. */
static void
test_recheck (void)
{
  TachBackend *be = cpu_backend ();
  FakeClock clock = { 0 };
  TachLstmPlan *plan;
  size_t nx = (size_t) desc.T * desc.N * desc.I;
  size_t nw = (size_t) desc.dirs * 4 * desc.H * ((size_t) desc.I + desc.H + 1);
  size_t ny = (size_t) desc.T * desc.N * desc.dirs * desc.H;
  float *x, *w, *y;
  void *reserve;
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  guint calls = 0;

  clock.cost[TACH_CPU_GEMM_POOL] = 100.0;
  clock.cost[TACH_CPU_GEMM_SERIAL] = 180.0;
  tach_cpu_lstm_set_tune_clock (fake_clock, &clock);
  plan = tach_lstm_plan_new (be, &desc);
  g_assert_nonnull (plan);
  g_assert_cmpint (tach_cpu_lstm_plan_gemm_mode (plan), ==, TACH_CPU_GEMM_POOL);
  before = tach_backend_dup_algorithms (be);
  g_assert_cmpstr (before, ==, "lstm T10 N16 I300 H40 x2 train: pool GEMM");

  x = tach_backend_alloc (be, nx * sizeof (float));
  w = tach_backend_alloc (be, nw * sizeof (float));
  y = tach_backend_alloc (be, ny * sizeof (float));
  reserve = tach_backend_alloc (be, tach_lstm_reserve_bytes (be, plan));
  tach_backend_zero (be, x, nx * sizeof (float));
  tach_backend_zero (be, w, nw * sizeof (float));
  g_assert_true (tach_backend_ok (be));

  /* The pool path turns slow (the plan's pool is now contended). */
  clock.cost[TACH_CPU_GEMM_POOL] = 1000.0;
  while (tach_cpu_lstm_plan_gemm_mode (plan) == TACH_CPU_GEMM_POOL && calls < 20)
    {
      tach_op (be, lstm_fwd, plan, x, w, y, reserve);
      calls++;
    }
  g_assert_true (tach_backend_ok (be));
  g_assert_cmpint (tach_cpu_lstm_plan_gemm_mode (plan), ==, TACH_CPU_GEMM_SERIAL);
  /* Not on one slow call: on a run of them. */
  g_assert_cmpuint (calls, >, 1);
  g_assert_cmpuint (calls, <=, 10);
  after = tach_backend_dup_algorithms (be);
  g_assert_cmpstr (after, ==, "lstm T10 N16 I300 H40 x2 train: serial GEMM, re-checked");

  /* Calls as fast as the new estimate change nothing. */
  for (guint i = 0; i < 20; i++)
    tach_op (be, lstm_fwd, plan, x, w, y, reserve);
  g_assert_cmpint (tach_cpu_lstm_plan_gemm_mode (plan), ==, TACH_CPU_GEMM_SERIAL);

  tach_cpu_lstm_set_tune_clock (NULL, NULL);
  tach_backend_dealloc (be, x);
  tach_backend_dealloc (be, w);
  tach_backend_dealloc (be, y);
  tach_backend_dealloc (be, reserve);
  tach_lstm_plan_free (be, plan);
  tach_backend_free (be);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cpu/lstm-tune/noisy-choice", test_noisy_choice);
  g_test_add_func ("/cpu/lstm-tune/recheck", test_recheck);
  return g_test_run ();
}
