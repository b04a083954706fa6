/* test-cpu-threads.c: the CPU backend on a busy machine
 * (tach-cpu-threads.c).
 *
 *   /engine/cpu/threads/bits     each workload's losses, bit for bit, on all
 *                                of a backend's threads, on one of them, and
 *                                on one and all by turns, op by op
 *   /engine/cpu/threads/wanted   the thread count from others' runnable
 *                                threads and their CPU time
 *   /engine/cpu/threads/busy     with a spinning process on every processor,
 *                                a two-thread backend runs its ops on one and
 *                                says so in its algorithms
 *   /engine/cpu/threads/wait     a thread that waits for a late partner sleeps
 *                                rather than spins, and tells the backend
 */
#include <string.h>
#include <time.h>

#include "tach-cpu-private.h"
#include "test-run-util.h"
#include "test-spinners.h"

typedef struct {
  TachWorkload workload;
  const char  *settings;
} Case;

/* Sizes where the parallel paths run: the bilstm's batch slices and
 * split bias gradients, the cnn's Winograd convolution, filter gradients
 * of one channel and dense layer on the pool (small synthetic images: no
 * test split to evaluate), the language model's row chunks. */
static const Case cases[] = {
  { TACH_WORKLOAD_BILSTM, "device=cpu threads=2 batch=128 samples=512 steps=4 warmup=0 seed=7" },
  { TACH_WORKLOAD_CNN, "device=cpu threads=2 input=16x16x1 batch=32 samples=128 steps=3 "
                       "warmup=0 seed=3" },
  { TACH_WORKLOAD_LSTM_LM, "device=cpu threads=2 task=train batch=256 samples=2048 steps=3 "
                           "warmup=0 seed=5" },
};

static TestRunResult *
run_with (const Case *c, const char *adapt)
{
  TestRunResult *r;

  g_setenv ("TACH_CPU_THREADS_ADAPT", adapt, TRUE);
  r = test_run_ok (c->workload, c->settings, NULL);
  g_unsetenv ("TACH_CPU_THREADS_ADAPT");
  return r;
}

static void
test_bits (void)
{
  /* Under a thread limit (the ThreadSanitizer run's OMP_THREAD_LIMIT=1)
   * oneDNN splits its products for the threads it is told of and runs
   * them on fewer: bits of no real thread count. */
  if (omp_get_thread_limit () < 2)
    {
      g_test_skip ("OMP_THREAD_LIMIT leaves one thread");
      return;
    }
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (TestRunResult) all = run_with (&cases[i], "never");
      g_autoptr (TestRunResult) one = run_with (&cases[i], "1");
      g_autoptr (TestRunResult) turns = run_with (&cases[i], "alternate");

      g_test_message ("%s: %s", cases[i].settings, turns->algorithms);
      test_assert_same_losses (all->losses, one->losses, 0.0, "one thread of two");
      test_assert_same_losses (all->losses, turns->losses, 0.0, "one and two by turns");
      g_assert_true (all->algorithms == NULL || strstr (all->algorithms, "cpu threads") == NULL);
      g_assert_nonnull (strstr (one->algorithms, "cpu threads: 1 of 2"));
      g_assert_nonnull (strstr (turns->algorithms, "cpu threads: 1 and 2 by turns"));
    }
}

static void
test_busy (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *algorithms = NULL;
  TachBackend *be;
  pid_t pids[64];
  guint n;

  if (!g_file_test ("/proc/loadavg", G_FILE_TEST_EXISTS))
    {
      g_test_skip ("no /proc/loadavg");
      return;
    }
  be = tach_backend_new ("cpu", 2, TACH_PRECISION_FP32, &error);
  g_assert_no_error (error);
  n = test_spinners_start (pids, G_N_ELEMENTS (pids));
  /* Long enough for a window of CPU time of ten ticks and more. */
  g_usleep (150000);
  /* Each look sees every spinner runnable: as many others as processors,
   * none free for a second thread; and their CPU time bears it out. */
  for (int i = 0; i < 3; i++)
    tach_cpu_threads_check (be);
  test_spinners_stop (pids, n);
  g_assert_cmpuint (TACH_CPU (be)->run.active, ==, 1);
  g_assert_cmpfloat (TACH_CPU (be)->run.others, >=, 0.75 * n);
  if (g_file_test ("/proc/stat", G_FILE_TEST_EXISTS))
    g_assert_cmpfloat (TACH_CPU (be)->run.taken, >=, 0.25);
  algorithms = tach_backend_dup_algorithms (be);
  g_test_message ("%s", algorithms);
  g_assert_nonnull (strstr (algorithms, "cpu threads: fewer than 2 while other processes"));
  tach_backend_free (be);
}

/* The decision alone: runnable others take processors only where others'
 * CPU time shows them; a count with no CPU time behind it is this
 * process's own threads caught changing state. */
static void
test_wanted (void)
{
  static const struct { guint n_cpus, threads; double others, taken; guint want; } rules[] = {
    { 2, 2, 0.0, 0.0, 2 },    /* idle */
    { 2, 2, 1.0, 0.0, 2 },    /* a phantom: counted, never ran */
    { 2, 2, 1.0, 0.2, 2 },    /* a few kernel threads' time */
    { 2, 2, 1.0, 0.67, 1 },   /* a spinner sharing with two threads */
    { 2, 2, 1.0, 1.0, 1 },    /* a spinner on a core of its own */
    { 2, 2, 2.0, 2.0, 1 },    /* every processor taken: one thread still runs */
    { 2, 2, 1.0, -1.0, 1 },   /* no CPU time to tell: the counts decide */
    { 2, 2, 0.4, 1.0, 2 },    /* CPU time, but under three quarters runnable */
    { 4, 2, 1.0, 1.0, 2 },    /* processors to spare */
    { 4, 4, 2.0, 2.0, 2 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (rules); i++)
    g_assert_cmpuint (tach_cpu_threads_wanted (rules[i].n_cpus, rules[i].threads,
                                               rules[i].others, rules[i].taken),
                      ==, rules[i].want);
}

typedef struct {
  TachCpuWait wait;
  int word;
} Waited;

static gpointer
late_partner (gpointer data)
{
  Waited *w = data;

  g_usleep (30000);
  __atomic_store_n (&w->word, 1, __ATOMIC_SEQ_CST);
  tach_cpu_wait_wake (&w->wait, &w->word);
  return NULL;
}

static gint64
thread_cpu_us (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

static void
test_wait (void)
{
  g_autoptr (GError) error = NULL;
  TachBackend *be = tach_backend_new ("cpu", 2, TACH_PRECISION_FP32, &error);
  Waited w = { { 0 }, 0 };
  gint64 wall0, cpu0, wall, cpu;
  GThread *partner;

  g_assert_no_error (error);
  g_assert_cmpint (TACH_CPU (be)->run.late, ==, 0);
  wall0 = g_get_monotonic_time ();
  cpu0 = thread_cpu_us ();
  partner = g_thread_new ("late", late_partner, &w);
  tach_cpu_wait_for (&w.wait, &w.word, 1, be);
  cpu = thread_cpu_us () - cpu0;
  wall = g_get_monotonic_time () - wall0;
  g_thread_join (partner);
  g_test_message ("waited %" G_GINT64_FORMAT " us, on the processor %" G_GINT64_FORMAT " us",
                  wall, cpu);
  g_assert_cmpint (__atomic_load_n (&w.word, __ATOMIC_SEQ_CST), ==, 1);
  g_assert_cmpint (w.wait.sleepers, ==, 0);
  /* It slept most of the 30 ms the partner took (a spinning waiter is on
   * the processor all along, or would be but for preemption). */
  g_assert_cmpint (wall, >=, 30000);
  g_assert_cmpint (cpu, <, wall / 2);
  /* And the backend looks at the machine at its next op. */
  g_assert_cmpint (g_atomic_int_get (&TACH_CPU (be)->run.late), ==, 1);
  tach_backend_free (be);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/cpu/threads/bits", test_bits);
  g_test_add_func ("/engine/cpu/threads/wanted", test_wanted);
  g_test_add_func ("/engine/cpu/threads/busy", test_busy);
  g_test_add_func ("/engine/cpu/threads/wait", test_wait);
  return g_test_run ();
}
