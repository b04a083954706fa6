/* tach-cpu-threads.c: how many of the backend's threads its ops run on
 * now, and how a thread waits for another.
 *
 * A backend of T threads splits its work the same way whatever the
 * machine does (the parts of every reduction, the batch's slices, the
 * spans are fixed by T), but runs the parts on fewer threads while other
 * processes want the processors.  A parallel region whose threads meet at
 * barriers goes at the pace of its slowest: on two cores with one taken
 * by another process, a two-thread pass waits at each barrier for the
 * thread that shares its core, a time slice at a time (the bilstm's
 * step: 17 ms idle, 68 ms so, 33 ms on one thread).  So every
 * TACH_CPU_THREADS_CHECK_US of the engine thread's ops the backend counts
 * the machine's runnable threads that are not its own
 * (tach_machine_probe_busy, one sample, tens of µs), smooths the count,
 * and runs on the processors nobody else wants: fewer at once when others
 * take them, more again only after TACH_CPU_THREADS_UP_CHECKS looks in a
 * row that found them free, so that a short burst (a compiler process)
 * does not make it switch back and forth.  Which thread runs a part
 * changes no result: the parts and their order are the same.
 *
 * The runnable counts are samples that race with this process's own
 * threads: one that goes to sleep between the read of the machine's count
 * and the read of its own is counted as another's (with threads that
 * alternate 50 µs of work and 50 µs of sleep, about 40% of the samples on
 * an idle machine saw such a phantom, and a run fell to one thread for a
 * third of its time).  So the CPU time others took over the last window of
 * ten ticks or more (/proc/stat, tach_machine_load_between) must show
 * them too: under a quarter of a processor, nobody else wants the
 * processors, whatever the counts say (tach_cpu_threads_wanted).
 *
 * What ran is noted on the backend for the run's algorithms line, where
 * any op ran on fewer threads than asked.  TACH_CPU_THREADS_ADAPT=never
 * runs on all of them whatever the load; =N (a number) on N of them (at
 * most the backend's), for measuring; =alternate on one and on all of
 * them by turns, op by op, for the tests that hold every count, changed
 * at any point of a step, to the same bits.
 *
 * The waits: a thread that waits for another (the split pass's barrier)
 * spins TACH_CPU_WAIT_SPIN_US, the partner's usual lateness on a free
 * machine, and then sleeps on a futex until woken: a partner that late
 * has been preempted, and spinning on would burn the processor it needs.
 * A wait that slept asks the backend to look at the machine at its next
 * op.
 *
 * Threads: the counts, on the engine thread; the waits, on any thread.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "tach-cpu-private.h"

static void
note (TachBackend *be)
{
  TachCpuThreads *t = &TACH_CPU (be)->run;
  g_autofree char *text = NULL;
  gint64 total = t->full_us + t->fewer_us;

  /* For the run's figures (runs.csv's threads_fewest). */
  be->threads_fewest = t->fewest;
  be->threads_fewer_share = total > 0 ? (double) t->fewer_us / (double) total : 0.0;
  if (t->fewest >= be->threads)
    return;
  if (t->alternate)
    text = g_strdup_printf ("1 and %u by turns (TACH_CPU_THREADS_ADAPT)", be->threads);
  else if (!t->adapt)
    text = g_strdup_printf ("%u of %u (TACH_CPU_THREADS_ADAPT)", t->active, be->threads);
  else
    text = g_strdup_printf ("fewer than %u while other processes wanted the processors "
                            "(%u at the fewest, %.0f%% of the time; %.1f others runnable at "
                            "the most)",
                            be->threads, t->fewest,
                            total > 0 ? 100.0 * (double) t->fewer_us / (double) total : 0.0,
                            t->others_most);
  tach_backend_note_algorithm (be, "cpu threads", text);
}

void
tach_cpu_threads_init (TachBackend *be)
{
  TachCpuThreads *t = &TACH_CPU (be)->run;
  const char *mode = g_getenv ("TACH_CPU_THREADS_ADAPT");
  guint64 fixed = 0;

  memset (t, 0, sizeof *t);
  tach_machine_mark_times (&t->mark);
  t->taken = -1;
  t->active = be->threads;
  t->fewest = be->threads;
  be->threads_fewest = be->threads;
  be->threads_fewer_share = 0;
  t->adapt = be->threads > 1;
  if (g_strcmp0 (mode, "never") == 0)
    t->adapt = FALSE;
  else if (g_strcmp0 (mode, "alternate") == 0)
    t->alternate = be->threads > 1;
  else if (mode != NULL && g_ascii_string_to_unsigned (mode, 10, 1, G_MAXUINT, &fixed, NULL))
    {
      t->adapt = FALSE;
      t->active = MIN ((guint) fixed, be->threads);
      t->fewest = t->active;
      note (be);
    }
}

void
tach_cpu_threads_check (TachBackend *be)
{
  TachCpuThreads *t = &TACH_CPU (be)->run;
  TachMachineBusy busy;
  TachMachineMark mark;
  TachMachineLoad load;
  gint64 now = g_get_monotonic_time ();
  guint want, before = t->active;

  t->next_us = now + TACH_CPU_THREADS_CHECK_US;
  g_atomic_int_set (&t->late, 0);
  if (t->last_us != 0)
    {
      if (t->active < be->threads)
        t->fewer_us += now - t->last_us;
      else
        t->full_us += now - t->last_us;
    }
  t->last_us = now;
  if (!t->adapt)
    return;
  tach_machine_probe_busy (1, 0, &busy);
  if (!busy.known)
    return;
  /* The window grows until it holds ten ticks (50 ms on two processors);
   * until then the last full window's figure stands.  A look that a late
   * partner called before TACH_CPU_THREADS_CHECK_US had passed reads no
   * /proc/stat and keeps that figure too: at most one read a period,
   * however often waits come back late. */
  if (now - t->mark.wall_us >= TACH_CPU_THREADS_CHECK_US)
    {
      tach_machine_mark_times (&mark);
      if (tach_machine_load_between (&t->mark, &mark, &load) && load.ticks >= 10)
        {
          /* The job's sibling ranks on this machine want processors too. */
          t->taken = (load.others_share + load.job_share + MAX (load.steal_share, 0.0))
                     * load.n_cpus;
          t->mark = mark;
        }
    }
  t->others = t->looks == 0 ? busy.others_runnable
                            : 0.5 * t->others + 0.5 * busy.others_runnable;
  t->looks++;
  want = tach_cpu_threads_wanted (busy.n_cpus, be->threads, t->others, t->taken);
  /* The most others seen, where they ran (a phantom is not worth noting). */
  if (want < be->threads)
    t->others_most = MAX (t->others_most, t->others);
  if (want < t->active)
    {
      t->active = want;
      t->up_looks = 0;
    }
  else if (want > t->active)
    {
      if (++t->up_looks >= TACH_CPU_THREADS_UP_CHECKS)
        {
          t->active = want;
          t->up_looks = 0;
        }
    }
  else
    t->up_looks = 0;
  t->fewest = MIN (t->fewest, t->active);
  if (t->active != before || t->fewest < be->threads)
    note (be);
}

guint
tach_cpu_threads_wanted (guint n_cpus, guint threads, double others, double taken)
{
  /* A processor is free while others want less than three quarters of
   * it: one runnable thread seen twice in a row takes one. */
  double free_cpus = (double) n_cpus - floor (others + 0.25);

  /* Counts that others' CPU time does not bear out are this process's
   * own threads caught changing state. */
  if (taken >= 0 && taken < 0.25)
    return threads;
  return free_cpus < 1 ? 1 : (guint) MIN (free_cpus, (double) threads);
}

guint
tach_cpu_threads_now (TachBackend *be)
{
  TachCpuThreads *t = &TACH_CPU (be)->run;

  if (G_UNLIKELY (t->alternate))
    {
      t->active = t->active == 1 ? be->threads : 1;
      if (t->fewest > 1)
        {
          t->fewest = 1;
          note (be);
        }
      return t->active;
    }
  if (t->adapt && (g_get_monotonic_time () >= t->next_us || g_atomic_int_get (&t->late)))
    tach_cpu_threads_check (be);
  return t->active;
}

/* ---------------------------------------------------------------- waits */

#ifdef __linux__
static void
futex_wait (int *word, int value)
{
  /* Returns at once where *word no longer holds @value (EAGAIN), on a
   * wake-up, or spuriously: the caller tests again. */
  syscall (SYS_futex, word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
}

static void
futex_wake_all (int *word)
{
  syscall (SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
#endif

void
tach_cpu_wait_for (TachCpuWait *w, int *word, int want, TachBackend *be)
{
  gint64 start = 0;
  guint spins = 0;

  while (__atomic_load_n (word, __ATOMIC_ACQUIRE) != want)
    {
      tach_cpu_relax ();
      if (++spins % 64 != 0)
        continue;
      if (start == 0)
        {
          start = g_get_monotonic_time ();
          continue;
        }
      if (g_get_monotonic_time () - start < TACH_CPU_WAIT_SPIN_US)
        continue;
      /* The partner is that late: preempted, most likely.  The backend
       * looks at the machine at its next op. */
      if (be != NULL)
        g_atomic_int_set (&TACH_CPU (be)->run.late, 1);
#ifdef __linux__
      {
        int seen = __atomic_load_n (word, __ATOMIC_ACQUIRE);

        if (seen == want)
          break;
        /* Counted before the test the kernel makes, as the waker changes
         * the word before it reads the count (both sequentially
         * consistent): one of the two sees the other. */
        __atomic_add_fetch (&w->sleepers, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n (word, __ATOMIC_SEQ_CST) == seen)
          futex_wait (word, seen);
        __atomic_sub_fetch (&w->sleepers, 1, __ATOMIC_SEQ_CST);
      }
#else
      g_thread_yield ();
#endif
    }
}

void
tach_cpu_wait_wake (TachCpuWait *w, int *word)
{
#ifdef __linux__
  if (__atomic_load_n (&w->sleepers, __ATOMIC_SEQ_CST) > 0)
    futex_wake_all (word);
#else
  (void) w;
  (void) word;
#endif
}
