/* test-machine.c: the machine-load monitor (tach-machine.h) against real
 * load: spinning child processes, one on each processor this process may
 * use, are seen as other processes' CPU time, as runnable threads of
 * others, and as preemptions of a thread of ours that spins beside them.
 * No timing is asserted beyond gross comparisons that a shared machine
 * cannot overturn: while the spinners run, no processor is idle.
 */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tach-machine.h"
#include "test-spinners.h"

typedef struct {
  pid_t pids[64];
  guint n;
} Spinners;

static void
spinners_start (Spinners *s)
{
  s->n = test_spinners_start (s->pids, G_N_ELEMENTS (s->pids));
}

static void
spinners_stop (Spinners *s)
{
  test_spinners_stop (s->pids, s->n);
  s->n = 0;
}

/* Spins this thread for @us of wall time. */
static void
spin_for (gint64 us)
{
  gint64 until = g_get_monotonic_time () + us;
  volatile unsigned long x = 0;

  while (g_get_monotonic_time () < until)
    x++;
}

static void
test_between (void)
{
  TachMachineMark a, b;
  TachMachineLoad idle, loaded, spun;
  Spinners s;

  if (!g_file_test ("/proc/stat", G_FILE_TEST_EXISTS))
    {
      g_test_skip ("no /proc/stat");
      return;
    }
  /* The baseline: this process sleeps, the machine does what it does. */
  tach_machine_mark (&a);
  g_usleep (300000);
  tach_machine_mark (&b);
  g_assert_true (a.have_stat && a.have_self && a.n_cpus > 0);
  g_assert_true (tach_machine_load_between (&a, &b, &idle));
  g_assert_cmpfloat (idle.others_share, >=, 0);
  g_assert_cmpfloat (idle.others_share, <=, 1);
  g_assert_cmpfloat (idle.self_share, <=, 0.2);

  spinners_start (&s);
  tach_machine_mark (&a);
  g_usleep (300000);
  tach_machine_mark (&b);
  g_assert_true (tach_machine_load_between (&a, &b, &loaded));
  /* Then this thread spins too, one thread more than the processors. */
  tach_machine_mark (&a);
  spin_for (300000);
  tach_machine_mark (&b);
  g_assert_true (tach_machine_load_between (&a, &b, &spun));
  spinners_stop (&s);

  g_test_message ("others' share: idle %.2f, spinners %.2f, spinners and us %.2f; "
                  "steal %.2f; our involuntary switches %" G_GINT64_FORMAT,
                  idle.others_share, loaded.others_share, spun.others_share,
                  loaded.steal_share, spun.involuntary_switches);
  /* Every processor we may use has a spinner: with at least as many
   * spinners as processors, nothing is idle but what steal and other
   * processors beyond our affinity leave. */
  g_assert_cmpfloat (loaded.idle_share, <, 0.5);
  g_assert_cmpfloat (loaded.others_share, >=, 0.5);
  /* Well above the baseline where the machine was not already busy. */
  if (idle.others_share < 0.3)
    g_assert_cmpfloat (loaded.others_share, >, idle.others_share + 0.3);
  /* Our spinning thread took its part, and lost the processor to the
   * spinners at least once in 300 ms (a time slice is a few ms). */
  g_assert_cmpfloat (spun.self_share, >, 0);
  g_assert_cmpint (spun.involuntary_switches, >, 0);
}

static void
test_probe (void)
{
  TachMachineBusy busy;
  Spinners s;
  guint spinners;

  if (!g_file_test ("/proc/loadavg", G_FILE_TEST_EXISTS))
    {
      g_test_skip ("no /proc/loadavg");
      return;
    }

  spinners_start (&s);
  spinners = s.n;
  /* Let each spinner reach its processor. */
  g_usleep (20000);
  tach_machine_probe_busy (TACH_MACHINE_PROBE_SAMPLES, TACH_MACHINE_PROBE_INTERVAL_US, &busy);
  spinners_stop (&s);
  g_test_message ("%u spinners: others runnable %.2f, free processors %u of %u",
                  spinners, busy.others_runnable, busy.free_cpus, busy.n_cpus);
  g_assert_true (busy.known);
  /* The spinners never block: every sample sees them all (runnable, state
   * R, whether on a processor or waiting for one), less a quarter for the
   * two reads of a sample, which are not one instant. */
  g_assert_cmpfloat (busy.others_runnable, >=, 0.75 * spinners);
  g_assert_true (busy.busy);
  g_assert_cmpuint (busy.free_cpus, >=, 1);
  g_assert_cmpuint (busy.free_cpus, <, MAX (busy.n_cpus, 2));
}

/* A thread of ours that runs is ours, not another's. */
static gpointer
spin_thread (gpointer data)
{
  gint *stop = data;
  volatile unsigned long x = 0;

  while (!g_atomic_int_get (stop))
    x++;
  return NULL;
}

static void
test_probe_own_threads (void)
{
  TachMachineBusy busy;
  GThread *threads[2];
  gint stop = 0;

  if (!g_file_test ("/proc/loadavg", G_FILE_TEST_EXISTS))
    {
      g_test_skip ("no /proc/loadavg");
      return;
    }
  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    threads[i] = g_thread_new ("spin", spin_thread, &stop);
  tach_machine_probe_busy (4, 1000, &busy);
  g_atomic_int_set (&stop, 1);
  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    g_thread_join (threads[i]);
  g_assert_true (busy.known);
  /* Our two spinners and the probing thread are runnable at every sample
   * (state R whether on a processor or waiting for one), and none of the
   * three is counted as another's. */
  g_test_message ("with two threads of ours spinning: ours runnable %.2f, others %.2f",
                  busy.self_runnable, busy.others_runnable);
  g_assert_cmpfloat (busy.self_runnable, >=, 3);
}

/* A process of the job (a sibling rank under mpirun) that spins for
 * @cpu_us of its own CPU time once told to, says so, then waits to be
 * killed: its time falls between two marks and it is still there. */
static pid_t
job_process_start (gint64 cpu_us, int *go, int *done)
{
  int to_child[2], from_child[2];
  pid_t pid;

  g_assert_cmpint (pipe (to_child), ==, 0);
  g_assert_cmpint (pipe (from_child), ==, 0);
  pid = fork ();
  g_assert_cmpint (pid, >=, 0);
  if (pid == 0)
    {
      struct timespec ts;
      volatile unsigned long x = 0;
      char c;

      if (read (to_child[0], &c, 1) != 1)
        _exit (1);
      do
        {
          for (int i = 0; i < 100000; i++)
            x++;
          clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
        }
      while ((gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000 < cpu_us);
      if (write (from_child[1], "d", 1) != 1)
        _exit (1);
      for (;;)
        pause ();
    }
  close (to_child[0]);
  close (from_child[1]);
  *go = to_child[1];
  *done = from_child[0];
  return pid;
}

/* Issue 42: a sibling rank's CPU time is the job's, not "other
 * processes'": with its id set, the time it spent between two marks moves
 * from the others' share to the job's.  CPU time is counted, not timed:
 * the sibling spins for 300 ms of its own CPU, however long that takes. */
static void
test_job (void)
{
  TachMachineMark a, b, a_alone, b_alone;
  TachMachineLoad with_job, without;
  gint pids[3], got[TACH_MACHINE_MAX_JOB_PIDS];
  int go, done, status;
  char c;
  double hz = sysconf (_SC_CLK_TCK), job_ticks;
  pid_t child;

  if (!g_file_test ("/proc/self/stat", G_FILE_TEST_EXISTS))
    {
      g_test_skip ("no /proc");
      return;
    }
  child = job_process_start (300000, &go, &done);
  /* This process's own id among the job's is not another of the job. */
  pids[0] = (gint) getpid ();
  pids[1] = (gint) child;
  pids[2] = 0;
  tach_machine_set_job_pids (pids, 3);
  g_assert_cmpuint (tach_machine_get_job_pids (got), ==, 1);
  g_assert_cmpint (got[0], ==, child);

  tach_machine_mark (&a);
  g_assert_cmpint (write (go, "g", 1), ==, 1);
  g_assert_cmpint (read (done, &c, 1), ==, 1);
  tach_machine_mark (&b);
  kill (child, SIGKILL);
  g_assert_cmpint (waitpid (child, &status, 0), ==, child);
  close (go);
  close (done);
  tach_machine_set_job_pids (NULL, 0);
  g_assert_cmpuint (tach_machine_get_job_pids (NULL), ==, 0);

  g_assert_cmpuint (a.n_job, ==, 1);
  g_assert_cmpint (a.job_cpu_us[0], >=, 0);
  g_assert_true (tach_machine_load_between (&a, &b, &with_job));
  /* The same marks as a process that knew of no job. */
  a_alone = a;
  b_alone = b;
  a_alone.n_job = b_alone.n_job = 0;
  g_assert_true (tach_machine_load_between (&a_alone, &b_alone, &without));
  job_ticks = with_job.job_share * with_job.ticks;
  g_test_message ("job %.2f, others %.2f with the job's id, %.2f without, over %" G_GUINT64_FORMAT
                  " ticks", with_job.job_share, with_job.others_share, without.others_share,
                  with_job.ticks);
  /* 300 ms of its CPU time, in ticks (counted whole: a tick or two off). */
  g_assert_cmpfloat (job_ticks, >=, 0.3 * hz - 3);
  g_assert_cmpfloat (without.job_share, ==, 0);
  /* The others' share lost what the job's gained, but for its clamp at 0. */
  g_assert_cmpfloat (with_job.others_share, <=, without.others_share);
  g_assert_cmpfloat (with_job.others_share, >=,
                     without.others_share - with_job.job_share - 1e-9);
  if (with_job.others_share > 0)
    g_assert_cmpfloat_with_epsilon (without.others_share - with_job.others_share,
                                    with_job.job_share, 1e-9);
}

/* Marks without /proc/stat give no window: unknown shares, no crash. */
static void
test_unknown (void)
{
  TachMachineMark a = { 0 }, b = { 0 };
  TachMachineLoad load;

  a.wall_us = 1;
  b.wall_us = 1001;
  a.have_self = b.have_self = TRUE;
  a.self_nivcsw = 3;
  b.self_nivcsw = 5;
  g_assert_false (tach_machine_load_between (&a, &b, &load));
  g_assert_cmpfloat (load.others_share, <, 0);
  g_assert_cmpfloat (load.steal_share, <, 0);
  g_assert_cmpint (load.involuntary_switches, ==, 2);
  g_assert_cmpint (load.wall_us, ==, 1000);
  /* Counters that go back (a processor taken offline) give none either. */
  a.have_stat = b.have_stat = TRUE;
  a.total_ticks = 100;
  b.total_ticks = 200;
  a.idle_ticks = 50;
  b.idle_ticks = 40;
  g_assert_false (tach_machine_load_between (&a, &b, &load));
  g_assert_cmpfloat (load.idle_share, <, 0);
  /* And a plain window adds up. */
  b.idle_ticks = 90;
  b.steal_ticks = 10;
  a.have_self = b.have_self = FALSE;
  g_assert_true (tach_machine_load_between (&a, &b, &load));
  g_assert_cmpuint (load.ticks, ==, 100);
  g_assert_cmpfloat_with_epsilon (load.idle_share, 0.4, 1e-12);
  g_assert_cmpfloat_with_epsilon (load.steal_share, 0.1, 1e-12);
  g_assert_cmpfloat (load.others_share, <, 0);
  g_assert_cmpint (load.involuntary_switches, ==, -1);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/backend/machine/between", test_between);
  g_test_add_func ("/engine/backend/machine/probe", test_probe);
  g_test_add_func ("/engine/backend/machine/probe-own-threads", test_probe_own_threads);
  g_test_add_func ("/engine/backend/machine/unknown", test_unknown);
  g_test_add_func ("/engine/backend/machine/job", test_job);
  return g_test_run ();
}
