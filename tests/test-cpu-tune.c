/* test-cpu-tune.c: the CPU LSTM plan's choice between its one-thread
 * path and its hidden units split between the threads, driven by an
 * injected clock.
 *
 * The clock makes each path cost a fixed time per forward pass and adds
 * bursts of load, as another process would: the plan must still choose the
 * path that is faster without them, and must measure again when its
 * forward calls run far slower than it estimated.  And whichever path it
 * takes, the plan gives the bits of the one-thread plan.
 */
#include <string.h>

#include "tach-cpu-private.h"

typedef struct {
  gint64  now;            /* µs */
  guint   reads;          /* clock reads: odd ones start a pass, even ones end it */
  guint   passes;         /* passes ended so far */
  double  cost[TACH_CPU_GEMM_SPLIT + 1]; /* µs per pass, by TachCpuGemmMode */
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

/* Generation's LSTM: one stream, which may run split, small enough to be
 * tuned. */
static const TachLstmDesc desc = {
  .T = 4, .N = 1, .I = 100, .H = 100, .dirs = 1, .precision = TACH_PRECISION_FP32,
};

static TachBackend *
cpu_backend (void)
{
  g_autoptr(GError) error = NULL;
  /* Two threads: a one-thread backend has no split to choose. */
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
    { TACH_CPU_GEMM_SPLIT, TACH_CPU_GEMM_SERIAL, 0, 5, TACH_CPU_GEMM_AUTO },
    { TACH_CPU_GEMM_SERIAL, TACH_CPU_GEMM_SPLIT, 0, 5, TACH_CPU_GEMM_AUTO },
    /* Load that happens to hit the faster path's first three passes
     * (and a single pass each, as the plan timed before, would pick the
     * slower one). */
    { TACH_CPU_GEMM_SPLIT, TACH_CPU_GEMM_SERIAL, 0, 6, TACH_CPU_GEMM_SPLIT },
    { TACH_CPU_GEMM_SERIAL, TACH_CPU_GEMM_SPLIT, 0, 6, TACH_CPU_GEMM_SERIAL },
    /* Load late in the tuning. */
    { TACH_CPU_GEMM_SPLIT, TACH_CPU_GEMM_SERIAL, 6, 10, TACH_CPU_GEMM_SPLIT },
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

/* The split is kept only when it is clearly faster: a fifth under the
 * serial pass's time, not a tenth. */
static void
test_split_margin (void)
{
  static const struct { double split, serial; TachCpuGemmMode chosen; } cases[] = {
    { 100.0, 110.0, TACH_CPU_GEMM_SERIAL },
    { 100.0, 124.0, TACH_CPU_GEMM_SERIAL },
    { 100.0, 126.0, TACH_CPU_GEMM_SPLIT },
    { 100.0, 90.0, TACH_CPU_GEMM_SERIAL },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      FakeClock clock = { 0 };

      clock.cost[TACH_CPU_GEMM_SPLIT] = cases[i].split;
      clock.cost[TACH_CPU_GEMM_SERIAL] = cases[i].serial;
      g_assert_cmpint (tuned_mode (&clock), ==, cases[i].chosen);
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
  void *reserve = NULL;
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  guint calls = 0;

  clock.cost[TACH_CPU_GEMM_SPLIT] = 100.0;
  clock.cost[TACH_CPU_GEMM_SERIAL] = 180.0;
  tach_cpu_lstm_set_tune_clock (fake_clock, &clock);
  plan = tach_lstm_plan_new (be, &desc);
  g_assert_nonnull (plan);
  g_assert_cmpint (tach_cpu_lstm_plan_gemm_mode (plan), ==, TACH_CPU_GEMM_SPLIT);
  before = tach_backend_dup_algorithms (be);
  g_assert_cmpstr (before, ==, "lstm T4 N1 I100 H100 x1: hidden units split");

  x = tach_backend_alloc (be, nx * sizeof (float));
  w = tach_backend_alloc (be, nw * sizeof (float));
  y = tach_backend_alloc (be, ny * sizeof (float));
  tach_backend_zero (be, x, nx * sizeof (float));
  tach_backend_zero (be, w, nw * sizeof (float));
  g_assert_true (tach_backend_ok (be));

  /* The split turns slow (the other core is now busy). */
  clock.cost[TACH_CPU_GEMM_SPLIT] = 1000.0;
  while (tach_cpu_lstm_plan_gemm_mode (plan) == TACH_CPU_GEMM_SPLIT && calls < 20)
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
  g_assert_cmpstr (after, ==, "lstm T4 N1 I100 H100 x1: serial GEMM, re-checked");

  /* Calls as fast as the new estimate change nothing. */
  for (guint i = 0; i < 20; i++)
    tach_op (be, lstm_fwd, plan, x, w, y, reserve);
  g_assert_cmpint (tach_cpu_lstm_plan_gemm_mode (plan), ==, TACH_CPU_GEMM_SERIAL);

  tach_cpu_lstm_set_tune_clock (NULL, NULL);
  tach_backend_dealloc (be, x);
  tach_backend_dealloc (be, w);
  tach_backend_dealloc (be, y);
  tach_lstm_plan_free (be, plan);
  tach_backend_free (be);
}

static void
fill (float *v, size_t n, guint32 seed)
{
  for (size_t i = 0; i < n; i++)
    {
      seed = seed * 1664525u + 1013904223u;
      v[i] = (float) ((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
}


/* What one plan computed: y, and for training dx (when asked) and dw. */
typedef struct {
  float *y, *dx, *dw;
} PlanOutputs;

static void
plan_outputs_clear (PlanOutputs *o)
{
  g_clear_pointer (&o->y, g_free);
  g_clear_pointer (&o->dx, g_free);
  g_clear_pointer (&o->dw, g_free);
}

/* How a test forces a two-thread plan's path: the path whose passes cost
 * 1000 µs, the others' 100 (TACH_CPU_GEMM_AUTO: the clock left alone),
 * and TACH_CPU_LSTM_SPLIT (NULL: unset). */
typedef struct {
  TachCpuGemmMode slow;
  const char     *split;
} ForcedPath;

static const ForcedPath forced_paths[] = {
  { TACH_CPU_GEMM_SPLIT, "never" },   /* the serial path wins */
  { TACH_CPU_GEMM_SERIAL, "never" },  /* any path but the serial one wins */
  { TACH_CPU_GEMM_SERIAL, NULL },     /* the split wins its timing */
  { TACH_CPU_GEMM_AUTO, "always" },   /* the split, forced */
};

/* One plan of @d on @threads threads, its path forced by @path; with
 * @frozen its weights frozen, as generation's are.  Its forward pass (twice: the second on
 * the plan as the first left it) and for training its backward, on the
 * same data every time, into @out; the path it ran is returned. */
static TachCpuGemmMode
run_plan (const TachLstmDesc *d, guint threads, const ForcedPath *path, gboolean frozen,
          PlanOutputs *out)
{
  g_autoptr(GError) error = NULL;
  TachBackend *be = tach_backend_new ("cpu", threads, TACH_PRECISION_FP32, &error);
  FakeClock clock = { 0 };
  size_t nx = (size_t) d->T * d->N * d->I;
  size_t nw = (size_t) d->dirs * 4 * d->H * ((size_t) d->I + d->H + 1);
  size_t ny = (size_t) d->T * d->N * d->dirs * d->H;
  TachLstmPlan *plan;
  TachCpuGemmMode ran;
  float *x, *w, *y, *dy = NULL, *dx = NULL, *dw = NULL;
  void *reserve = NULL;

  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (clock.cost); i++)
    clock.cost[i] = i == path->slow ? 1000.0 : 100.0;
  if (path->split != NULL)
    g_setenv ("TACH_CPU_LSTM_SPLIT", path->split, TRUE);
  if (path->slow != TACH_CPU_GEMM_AUTO)
    tach_cpu_lstm_set_tune_clock (fake_clock, &clock);
  plan = tach_lstm_plan_new (be, d);
  g_assert_nonnull (plan);
  x = tach_backend_alloc (be, nx * sizeof (float));
  w = tach_backend_alloc (be, nw * sizeof (float));
  y = tach_backend_alloc (be, ny * sizeof (float));
  fill (x, nx, 1);
  fill (w, nw, 2);
  if (frozen)
    tach_backend_freeze (be, w, nw * sizeof (float));
  if (d->training)
    {
      reserve = tach_backend_alloc (be, tach_lstm_reserve_bytes (be, plan));
      dy = tach_backend_alloc (be, ny * sizeof (float));
      dw = tach_backend_alloc (be, nw * sizeof (float));
      fill (dy, ny, 3);
      if (d->need_dx)
        dx = tach_backend_alloc (be, nx * sizeof (float));
    }
  for (int call = 0; call < 2; call++)
    tach_op (be, lstm_fwd, plan, x, w, y, reserve);
  if (d->training)
    tach_op (be, lstm_bwd, plan, x, w, y, dy, reserve, dx, dw);
  g_assert_true (tach_backend_ok (be));
  ran = tach_cpu_lstm_plan_gemm_mode (plan);
  tach_cpu_lstm_set_tune_clock (NULL, NULL);
  g_unsetenv ("TACH_CPU_LSTM_SPLIT");

  out->y = g_memdup2 (y, ny * sizeof (float));
  out->dx = dx != NULL ? g_memdup2 (dx, nx * sizeof (float)) : NULL;
  out->dw = dw != NULL ? g_memdup2 (dw, nw * sizeof (float)) : NULL;
  tach_backend_dealloc (be, x);
  tach_backend_dealloc (be, w);
  tach_backend_dealloc (be, y);
  if (d->training)
    {
      tach_backend_dealloc (be, reserve);
      tach_backend_dealloc (be, dy);
      tach_backend_dealloc (be, dw);
      if (dx != NULL)
        tach_backend_dealloc (be, dx);
    }
  tach_lstm_plan_free (be, plan);
  tach_backend_free (be);
  return ran;
}

/* On frozen weights whose serial pass runs ahead on the helper thread
 * (generation's windows), the plan keeps that pass however much faster
 * the split's timing is; with no helper (TACH_CPU_AHEAD=never) the timing
 * decides as elsewhere.  (run_plan's first call on the frozen weights
 * times the paths again, on them.) */
static void
test_frozen_ahead (void)
{
  /* The split times at a tenth of the serial pass. */
  static const ForcedPath split_wins = { TACH_CPU_GEMM_SERIAL, NULL };
  static const struct { const char *ahead; TachCpuGemmMode chosen; } cases[] = {
    { NULL, TACH_CPU_GEMM_SERIAL },
    { "never", TACH_CPU_GEMM_SPLIT },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      PlanOutputs out = { 0 };

      if (cases[i].ahead != NULL)
        g_setenv ("TACH_CPU_AHEAD", cases[i].ahead, TRUE);
      g_assert_cmpint (run_plan (&desc, 2, &split_wins, TRUE, &out), ==, cases[i].chosen);
      g_unsetenv ("TACH_CPU_AHEAD");
      plan_outputs_clear (&out);
    }
}

/* Every path a two-thread plan may take (serial, split; on frozen
 * weights for inference) gives the bits of the one-thread plan, which is
 * not tuned, for the workloads' shapes and odd ones: which path a timing
 * picks changes a run's speed, never its numbers.  Run under each
 * TACH_CPU_ISA cap too. */
static void
test_same_bits (void)
{
#define FP32 .precision = TACH_PRECISION_FP32
  static const TachLstmDesc descs[] = {
    /* lstm-lm: generation (batch 1) and training (batch 256). */
    { .T = 4, .N = 1, .I = 100, .H = 100, .dirs = 1, FP32 },
    { .T = 4, .N = 256, .I = 100, .H = 100, .dirs = 1, .training = TRUE, FP32 },
    /* bilstm: the report's batch 1024 and a small one that is tuned. */
    { .T = 10, .N = 1024, .I = 300, .H = 40, .dirs = 2, .training = TRUE, FP32 },
    { .T = 10, .N = 16, .I = 300, .H = 40, .dirs = 2, .training = TRUE, FP32 },
    /* Odd sizes: a few streams, two directions, time-major, a long
     * context whose input side is dnnl_sgemm's, a batch that one thread
     * slices and two do not. */
    { .T = 7, .N = 3, .I = 37, .H = 45, .dirs = 1, FP32 },
    { .T = 5, .N = 2, .I = 19, .H = 33, .dirs = 2, FP32 },
    { .T = 4, .N = 3, .I = 64, .H = 40, .dirs = 1, .time_major = TRUE, FP32 },
    { .T = 50, .N = 1, .I = 100, .H = 100, .dirs = 1, FP32 },
    { .T = 9, .N = 5, .I = 23, .H = 17, .dirs = 2, .training = TRUE, .need_dx = TRUE, FP32 },
    { .T = 6, .N = 7, .I = 50, .H = 70, .dirs = 1, .time_major = TRUE, .training = TRUE,
      .need_dx = TRUE, FP32 },
    { .T = 4, .N = 40, .I = 100, .H = 100, .dirs = 1, .training = TRUE, .need_dx = TRUE, FP32 },
  };
#undef FP32
  static const ForcedPath untuned = { TACH_CPU_GEMM_AUTO, NULL };

  for (guint i = 0; i < G_N_ELEMENTS (descs); i++)
    {
      const TachLstmDesc *d = &descs[i];
      size_t nx = (size_t) d->T * d->N * d->I;
      size_t nw = (size_t) d->dirs * 4 * d->H * ((size_t) d->I + d->H + 1);
      size_t ny = (size_t) d->T * d->N * d->dirs * d->H;
      PlanOutputs ref = { 0 };

      run_plan (d, 1, &untuned, FALSE, &ref);
      for (guint m = 0; m < G_N_ELEMENTS (forced_paths); m++)
        for (int frozen = 0; frozen <= !d->training; frozen++)
          {
            PlanOutputs other = { 0 };
            TachCpuGemmMode ran = run_plan (d, 2, &forced_paths[m], frozen, &other);

            g_test_message ("T%d N%d I%d H%d x%d%s: forced path %u (ran %d)%s", d->T, d->N, d->I,
                            d->H, d->dirs, d->training ? " train" : "", m, ran,
                            frozen ? ", frozen" : "");
            g_assert_cmpmem (ref.y, ny * sizeof (float), other.y, ny * sizeof (float));
            if (d->training)
              g_assert_cmpmem (ref.dw, nw * sizeof (float), other.dw, nw * sizeof (float));
            if (d->need_dx)
              g_assert_cmpmem (ref.dx, nx * sizeof (float), other.dx, nx * sizeof (float));
            plan_outputs_clear (&other);
          }
      plan_outputs_clear (&ref);
    }
}

int
main (int argc, char **argv)
{
  /* Every thread, however busy the machine: the plans' choices are the
   * subject here, and a backend on one thread notes that too. */
  g_setenv ("TACH_CPU_THREADS_ADAPT", "never", TRUE);
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cpu/lstm-tune/noisy-choice", test_noisy_choice);
  g_test_add_func ("/cpu/lstm-tune/split-margin", test_split_margin);
  g_test_add_func ("/cpu/lstm-tune/recheck", test_recheck);
  g_test_add_func ("/cpu/lstm-tune/frozen-ahead", test_frozen_ahead);
  g_test_add_func ("/cpu/lstm-tune/same-bits", test_same_bits);
  return g_test_run ();
}
