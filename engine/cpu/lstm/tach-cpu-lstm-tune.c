/* tach-cpu-lstm-tune.c: how a CPU LSTM plan runs its forward pass.
 *
 * A plan for inference of a few streams chooses between its pass on the
 * calling thread (serial; on frozen weights, tach-cpu-lstm-frozen.c) and
 * its hidden units split between the threads (TACH_CPU_GEMM_SPLIT,
 * tach-cpu-lstm-split.c: its barriers need the other cores free, which a
 * shared machine does not give), by timing its own forward pass each way
 * on scratch data when it is built, as cuDNN's and oneDNN's planners
 * measure or JIT at plan time: the work a persistent plan pays once and a
 * per-call plan pays on every call.
 *
 * Both paths run every product on the small kernels (a plan may split
 * only where its products are all small: tach_cpu_lstm_forward_small),
 * whose outputs' bits do not depend on the columns computed with them, so
 * both give the bits of the plan that is not timed (one thread): the
 * timing, the load of the machine and --threads change a run's speed,
 * never its numbers.  (There is no pool path for the plain pass: on the
 * pool, dnnl_sgemm's bits depend on its thread count for some of the
 * LSTM's shapes, so its products run on the calling thread, as they do
 * in a sliced pass: tach-cpu-lstm.c.)
 *
 * Load from another process only ever adds time, and a burst of it during
 * those passes must not lock a whole run into the slower path.  So the
 * passes alternate between the paths, TUNE_ROUNDS of each with the order
 * rotated every round, and each path counts its fastest pass.  The split
 * is kept only when its fastest pass beats the serial one's by a margin
 * (SPLIT_MARGIN): its fastest pass is the one the other core happened to
 * be free for, and a run on a shared machine gets that less often than
 * the serial pass gets its own core (run-cpu.sh, generation at 2 threads,
 * 2026-12-02: a run whose plan chose the split went at 43.7 k tokens/s,
 * one whose plan kept the serial pass at 82.2 k).
 * On frozen weights whose serial pass runs the next step's products ahead
 * on the helper thread (generation), the split is not timed at all: the
 * helper hides what the split would share out, and its core is the one
 * the split's barriers would need (tune).
 * TACH_CPU_LSTM_SPLIT=always or =never decides the split without
 * measuring (the tests hold the split pass to the others' results).  And a plan
 * whose forward calls then take more than RECHECK_RATIO times its estimate,
 * RECHECK_CALLS calls in a row, times both paths again (at most
 * RECHECK_MAX times per plan).
 *
 * What each plan chose is noted on the backend (tach_backend_note_algorithm)
 * for the run's summary and runs.csv.
 *
 * The op's entry points for a plan and its forward pass are here, above the
 * passes they time: tach_cpu_lstm_plan_new builds a plan (tach-cpu-lstm.c)
 * and tunes it, and tach_cpu_lstm_fwd runs the chosen pass.
 *
 * Threads: the engine thread.
 */
#include <string.h>
#include <time.h>

#include "tach-cpu-lstm-private.h"

#define TUNE_ROUNDS 5
#define SPLIT_MARGIN 0.8
#define RECHECK_RATIO 3.0
#define RECHECK_CALLS 8
#define RECHECK_MAX 2

static TachCpuTuneClock tune_clock;
static gpointer tune_clock_data;

void
tach_cpu_lstm_set_tune_clock (TachCpuTuneClock clock, gpointer data)
{
  tune_clock = clock;
  tune_clock_data = data;
}

/* In µs: the test's clock, or the monotonic clock to the nanosecond (a
 * frozen generation pass takes a few µs). */
static double
now_us (TachCpuGemmMode mode)
{
  struct timespec ts;

  if (tune_clock != NULL)
    return (double) tune_clock (mode, tune_clock_data);
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec * 1e-3;
}

TachCpuGemmMode
tach_cpu_lstm_plan_gemm_mode (const TachLstmPlan *plan)
{
  return plan->gemm_mode;
}

static void
note_algorithm (TachBackend *be, const TachLstmPlan *plan)
{
  g_autofree char *what = tach_lstm_desc_name (&plan->desc);
  g_autofree char *algorithm = NULL;
  const char *path = plan->gemm_mode == TACH_CPU_GEMM_SERIAL
                     ? (plan->tune.frozen ? "serial, frozen weights packed" : "serial GEMM")
                     : plan->gemm_mode == TACH_CPU_GEMM_SPLIT
                     ? (plan->tune.frozen ? "hidden units split, frozen weights packed"
                                          : "hidden units split")
                     : plan->tune.frozen ? "GEMM by size, frozen weights packed"
                     : "GEMM by size";

  gboolean ahead = plan->tune.frozen && plan->gemm_mode != TACH_CPU_GEMM_SPLIT
                   && tach_cpu_lstm_frozen_runs_ahead (be, plan);

  algorithm = g_strdup_printf ("%s%s%s%s", path,
                               ahead ? ", next step's products run ahead on a helper thread" : "",
                               plan->sliced ? ", batch slices" : "",
                               plan->tune.rechecks > 0 ? ", re-checked" : "");
  tach_backend_note_algorithm (be, what, algorithm);
}

/* One forward pass on @mode's path over @scratch (and @w, when it is not
 * NULL, for the weights), in µs. */
static double
time_pass (TachBackend *be, TachLstmPlan *plan, TachCpuGemmMode mode, float *scratch,
           const float *w)
{
  const TachLstmDesc *d = &plan->desc;
  size_t nx = plan->rows * (size_t) d->I;
  size_t nw = (size_t) d->dirs * plan->dir_stride;
  size_t ny = plan->rows * (size_t) plan->ldh;
  double t0;

  plan->gemm_mode = mode;
  t0 = now_us (mode);
  tach_cpu_lstm_forward_pass (be, plan, scratch, w != NULL ? w : scratch + nx, scratch + nx + nw,
                              d->training ? scratch + nx + nw + ny : NULL);
  return now_us (mode) - t0;
}

/* Whether the plan may be timed split, and whether it must run split. */
static gboolean
split_allowed (const TachLstmPlan *plan)
{
  return plan->can_split && g_strcmp0 (g_getenv ("TACH_CPU_LSTM_SPLIT"), "never") != 0;
}

static gboolean
split_forced (const TachLstmPlan *plan)
{
  return plan->can_split && g_strcmp0 (g_getenv ("TACH_CPU_LSTM_SPLIT"), "always") == 0;
}

/* Times every path, alternating, and keeps the one with the fastest best
 * pass: on scratch weights, or on @w (read only) when it is not NULL. */
static void
tune (TachBackend *be, TachLstmPlan *plan, const float *w)
{
  const TachLstmDesc *d = &plan->desc;
  static const TachCpuGemmMode modes[2] = { TACH_CPU_GEMM_SERIAL, TACH_CPU_GEMM_SPLIT };
  /* On frozen weights whose serial pass runs the next step's products
   * ahead on the helper thread (tach-cpu-ahead.c), only the serial path
   * is timed: the helper hides those products behind the ops that follow
   * the pass (the output layer, sampling), which these passes of the LSTM
   * alone cannot see, and the split's barriers would take the helper's
   * core.  Measured, generation of one stream at two threads on the AMD
   * EPYC Zen 4 (bench/HISTORY.md, 2026-12-07): the split 89-105 k
   * tokens/s, the serial pass with the helper 137-202 k, without it
   * 131-136 k; a plan that took the split on its timing ran at 87 k. */
  const guint paths = w != NULL && tach_cpu_lstm_frozen_runs_ahead (be, plan)
                      ? 1 : G_N_ELEMENTS (modes);
  size_t n = plan->rows * (size_t) d->I + (size_t) d->dirs * plan->dir_stride
             + plan->rows * (size_t) plan->ldh
             + (d->training ? tach_cpu_lstm_reserve_floats (plan) : 0);
  size_t n_init = plan->rows * (size_t) d->I + (size_t) d->dirs * plan->dir_stride;
  double best[2] = { G_MAXDOUBLE, G_MAXDOUBLE };
  TachCpuGemmMode before = plan->gemm_mode;
  float *scratch;
  guint fast, other;

  scratch = tach_cpu_mem_alloc (be, n * sizeof (float));

  if (scratch == NULL)
    return;
  /* Small non-zero values in [-0.05, 0.05): representative inputs, never
   * zeros or denormals, from a cheap multiplicative hash. */
  for (size_t i = 0; i < n_init; i++)
    scratch[i] = (float) (((guint32) i * 2654435761u) >> 8) * (0.1f / 16777216.0f) - 0.05f;

  /* On frozen weights the passes keep the input rows they have seen, as
   * a generation loop does from one token to the next (all rows but the
   * newest were the last call's): the first pass computes every row's
   * input side, the others copy it, and each path counts its fastest
   * pass, a generation step's.  The rows are forgotten after. */
  tach_cpu_lstm_frozen_forget (plan);
  for (guint round = 0; round < TUNE_ROUNDS && tach_backend_ok (be); round++)
    for (guint k = 0; k < paths; k++)
      {
        guint which = (round + k) % paths;

        best[which] = MIN (best[which], time_pass (be, plan, modes[which], scratch, w));
      }
  tach_cpu_mem_free (be, scratch);
  tach_cpu_lstm_frozen_forget (plan);
  if (!tach_backend_ok (be))
    {
      plan->gemm_mode = before;
      return;
    }
  /* modes[1] is the split (never timed: G_MAXDOUBLE). */
  fast = best[1] < SPLIT_MARGIN * best[0] ? 1 : 0;
  other = 1 - fast;
  plan->gemm_mode = modes[fast];
  plan->tune.tuned = TRUE;
  plan->tune.estimate_us = best[fast];
  plan->tune.other_us = best[other];
  plan->tune.slow_calls = 0;
}

/* Chooses plan->gemm_mode by timing both paths. */
static void
plan_tune (TachBackend *be, TachLstmPlan *plan)
{
  plan->gemm_mode = TACH_CPU_GEMM_AUTO;
  memset (&plan->tune, 0, sizeof plan->tune);
  if (split_forced (plan))
    plan->gemm_mode = TACH_CPU_GEMM_SPLIT;
  /* Only a plan that may split has two paths, and its pass is small
   * (tach_cpu_lstm_forward_small): quick to time. */
  else if (split_allowed (plan))
    tune (be, plan, NULL);
  if (tach_backend_ok (be))
    note_algorithm (be, plan);
}

/* A plan is built (tach-cpu-lstm.c), then tuned. */
TachLstmPlan *
tach_cpu_lstm_plan_new (TachBackend *be, const TachLstmDesc *desc)
{
  TachLstmPlan *plan = tach_cpu_lstm_plan_build (be, desc);

  if (plan == NULL)
    return NULL;
  plan_tune (be, plan);
  if (!tach_backend_ok (be))
    {
      tach_cpu_lstm_plan_free (be, plan);
      return NULL;
    }
  return plan;
}

void
tach_cpu_lstm_fwd (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w,
                   float *y, void *reserve)
{
  TachCpuLstmTune *t = &plan->tune;
  double t0;
  double took;

  /* Frozen weights make the serial path another one (packed weights,
   * kept rows: tach-cpu-lstm-frozen.c) than the one timed on scratch
   * weights: the first call on them times the paths again, on them. */
  if (t->tuned && !t->frozen && !plan->desc.training && !plan->desc.uncached && !plan->sliced
      && tach_cpu_frozen_epoch (be, w, plan->desc.dirs * plan->dir_stride * sizeof (float)) != 0)
    {
      t->frozen = TRUE;
      tune (be, plan, w);
      if (tach_backend_ok (be))
        note_algorithm (be, plan);
    }
  /* A plan that is not timed takes the frozen pass by size: noted once,
   * on its first call on frozen weights. */
  if (!t->tuned && !t->frozen && tach_cpu_lstm_frozen_wanted (be, plan, w))
    {
      t->frozen = TRUE;
      note_algorithm (be, plan);
    }
  if (!t->tuned || t->rechecks >= RECHECK_MAX)
    {
      tach_cpu_lstm_forward_pass (be, plan, x, w, y, reserve);
      return;
    }
  t0 = now_us (plan->gemm_mode);
  tach_cpu_lstm_forward_pass (be, plan, x, w, y, reserve);
  took = now_us (plan->gemm_mode) - t0;
  t->slow_calls = took > RECHECK_RATIO * t->estimate_us ? t->slow_calls + 1 : 0;
  if (t->slow_calls < RECHECK_CALLS || !tach_backend_ok (be))
    return;
  /* The steps run far slower than the plan measured: whatever the tuning
   * passes saw, measure both paths again, under today's conditions. */
  t->rechecks++;
  tune (be, plan, t->frozen ? w : NULL);
  if (tach_backend_ok (be))
    note_algorithm (be, plan);
}
