/* tach-cpu-ahead.c: the backend's helper thread, which runs one job ahead
 * of the engine thread: work that the engine thread's next call needs and
 * that depends only on what its last call left, run while the ops between
 * the two calls run on the engine thread.  A generation loop's LSTM steps
 * are its one user (tach-cpu-lstm-frozen.c): the windows' recurrent
 * products for the next token overlap this token's output layer and
 * sampling.
 *
 * One job at a time, in one atomic state:
 *   IDLE -> POSTED          the engine thread posts a job;
 *   POSTED -> RUNNING       the helper takes it, and DONE when it is done;
 *   POSTED -> CLAIMED       or the engine thread takes it back, to run it
 *                           itself, when it needs the job's results before
 *                           the helper has started (the other core busy,
 *                           say): it never waits on a job not started;
 *   POSTED -> IDLE          or drops it, when it will not want it (its
 *                           call did not resume what the job was for);
 *   DONE, CLAIMED -> IDLE   the engine thread takes the results, or
 *                           acknowledges a finished job it did not take.
 * So a job runs at most once, on one thread or the other, with the same
 * results either way.  A job the helper started but has not finished
 * within the caller's limit (the helper preempted, on a shared machine)
 * is left to finish: tach_cpu_ahead_take says so, and the caller does
 * the work itself, so a job must read only what the caller leaves alone
 * until it is done (its own copies) and write only what the caller then
 * ignores.
 *
 * Between jobs the helper spins (jobs come a few µs apart in a generation
 * loop, and waking a thread from a condition variable takes tens of µs),
 * and after AHEAD_SPIN_US without a job it sleeps on a condition
 * variable, so that an idle backend costs no processor time.
 *
 * TACH_CPU_AHEAD=never runs nothing ahead; =caller keeps the posts but no
 * helper, so that every job is claimed and run by the engine thread (the
 * tests hold both to the same bits as the helper).  Otherwise a backend
 * of two or more threads starts its helper on the first post.
 *
 * Threads: post, take, drop, cancel and stop on the engine thread; the
 * helper on its own.
 */
#include "tach-cpu-private.h"

enum { AHEAD_IDLE, AHEAD_POSTED, AHEAD_RUNNING, AHEAD_DONE, AHEAD_CLAIMED };

/* How long the helper spins without a job before it sleeps, and the
 * pauses between its yields of the processor (a pause is 40-140 cycles:
 * a yield every few µs). */
#define AHEAD_SPIN_US 200
#define AHEAD_YIELD_SPINS 64

struct _TachCpuAhead {
  GThread       *thread;    /* NULL: none (TACH_CPU_AHEAD=caller) */
  gint           state;     /* atomic: AHEAD_* */
  gint           sleeping;  /* atomic: the helper waits on cond */
  gint           quit;      /* atomic */
  GMutex         lock;
  GCond          cond;
  TachCpuAheadFn fn;        /* the job, written before its POSTED */
  gpointer       data;
};

/* Sleeps until a job is posted or the helper is told to quit. */
static void
ahead_sleep (TachCpuAhead *a)
{
  g_mutex_lock (&a->lock);
  /* Set before the test below, as the poster sets the state before it
   * reads this: one of the two sees the other (both sequentially
   * consistent), so a post never goes unsignalled. */
  g_atomic_int_set (&a->sleeping, 1);
  while (g_atomic_int_get (&a->state) != AHEAD_POSTED && !g_atomic_int_get (&a->quit))
    g_cond_wait (&a->cond, &a->lock);
  g_atomic_int_set (&a->sleeping, 0);
  g_mutex_unlock (&a->lock);
}

static gpointer
ahead_main (gpointer data)
{
  TachCpuAhead *a = data;

  while (!g_atomic_int_get (&a->quit))
    {
      gint64 idle_since = g_get_monotonic_time ();
      guint spins = 0;

      while (g_atomic_int_get (&a->state) != AHEAD_POSTED && !g_atomic_int_get (&a->quit))
        {
          tach_cpu_relax ();
          if (++spins % AHEAD_YIELD_SPINS != 0)
            continue;
          /* A thread woken from the condition variable often wakes on its
           * waker's processor: yielding it lets the engine thread run there
           * (without, a post could wait behind a whole spin). */
          g_thread_yield ();
          if (g_get_monotonic_time () - idle_since > AHEAD_SPIN_US)
            {
              ahead_sleep (a);
              idle_since = g_get_monotonic_time ();
            }
        }
      if (g_atomic_int_compare_and_exchange (&a->state, AHEAD_POSTED, AHEAD_RUNNING))
        {
          a->fn (a->data);
          g_atomic_int_set (&a->state, AHEAD_DONE);
        }
    }
  return NULL;
}

/* The backend's helper, made on first use: NULL where nothing runs ahead
 * (TACH_CPU_AHEAD=never, one thread, or a thread that could not start). */
static TachCpuAhead *
ahead_get (TachBackend *be)
{
  TachCpuBackend *cpu = TACH_CPU (be);
  const char *mode;
  gboolean caller;
  TachCpuAhead *a;

  if (cpu->ahead != NULL || cpu->ahead_none)
    return cpu->ahead;
  /* Decided once per backend (its thread count is fixed). */
  mode = g_getenv ("TACH_CPU_AHEAD");
  caller = g_strcmp0 (mode, "caller") == 0;
  if (g_strcmp0 (mode, "never") == 0 || (!caller && be->threads < 2))
    {
      cpu->ahead_none = TRUE;
      return NULL;
    }
  a = g_new0 (TachCpuAhead, 1);
  g_mutex_init (&a->lock);
  g_cond_init (&a->cond);
  if (!caller)
    {
      a->thread = g_thread_try_new ("tach-ahead", ahead_main, a, NULL);
      if (a->thread == NULL)
        {
          /* Nothing is lost but the overlap: the jobs run on the engine
           * thread, as at one thread, and the plans note that none ran
           * ahead (tach_cpu_ahead_running). */
          g_mutex_clear (&a->lock);
          g_cond_clear (&a->cond);
          g_free (a);
          cpu->ahead_none = TRUE;
          return NULL;
        }
    }
  cpu->ahead = a;
  return a;
}

/* The engine thread's acknowledgement of a job the helper finished: the
 * slot is free again.  Whether it is. */
static gboolean
ahead_free_slot (TachCpuAhead *a)
{
  if (g_atomic_int_get (&a->state) == AHEAD_DONE)
    g_atomic_int_set (&a->state, AHEAD_IDLE);
  return g_atomic_int_get (&a->state) == AHEAD_IDLE;
}

gboolean
tach_cpu_ahead_can_post (TachBackend *be)
{
  TachCpuAhead *a = ahead_get (be);

  /* One job at a time: a job still posted or running keeps the slot.  And
   * none for the helper while the backend runs on one thread (a busy
   * machine: the helper would take the processor someone else wants). */
  return a != NULL && (a->thread == NULL || tach_cpu_threads_now (be) >= 2)
         && ahead_free_slot (a);
}

void
tach_cpu_ahead_post (TachBackend *be, TachCpuAheadFn fn, gpointer data)
{
  TachCpuAhead *a = TACH_CPU (be)->ahead;

  g_return_if_fail (a != NULL && g_atomic_int_get (&a->state) == AHEAD_IDLE);
  a->fn = fn;
  a->data = data;
  g_atomic_int_set (&a->state, AHEAD_POSTED);
  if (g_atomic_int_get (&a->sleeping))
    {
      g_mutex_lock (&a->lock);
      g_cond_signal (&a->cond);
      g_mutex_unlock (&a->lock);
    }
}

gboolean
tach_cpu_ahead_take (TachBackend *be, gpointer data, gint64 limit_us)
{
  TachCpuAhead *a = TACH_CPU (be)->ahead;
  gint64 start = 0;
  guint spins = 0;

  /* Only the engine thread posts, so the slot's data is its own to read. */
  if (a == NULL || a->data != data || g_atomic_int_get (&a->state) == AHEAD_IDLE)
    return FALSE;
  if (g_atomic_int_compare_and_exchange (&a->state, AHEAD_POSTED, AHEAD_CLAIMED))
    {
      a->fn (a->data);
      g_atomic_int_set (&a->state, AHEAD_IDLE);
      return TRUE;
    }
  while (g_atomic_int_get (&a->state) != AHEAD_DONE)
    {
      tach_cpu_relax ();
      if (++spins % AHEAD_YIELD_SPINS == 0)
        {
          gint64 now = g_get_monotonic_time ();

          if (start == 0)
            start = now;
          else if (now - start > limit_us)
            return FALSE;
          /* The helper may be waiting for this processor. */
          g_thread_yield ();
        }
    }
  g_atomic_int_set (&a->state, AHEAD_IDLE);
  return TRUE;
}

void
tach_cpu_ahead_drop (TachBackend *be, gpointer data)
{
  TachCpuAhead *a = TACH_CPU (be)->ahead;

  if (a != NULL && a->data == data)
    g_atomic_int_compare_and_exchange (&a->state, AHEAD_POSTED, AHEAD_IDLE);
}

void
tach_cpu_ahead_cancel (TachBackend *be, gpointer data)
{
  TachCpuAhead *a = TACH_CPU (be)->ahead;

  if (a == NULL || a->data != data)
    return;
  /* Not started: dropped.  Running: waited for, yielding the processor to
   * the helper should it share this one. */
  tach_cpu_ahead_drop (be, data);
  while (g_atomic_int_get (&a->state) == AHEAD_RUNNING)
    g_thread_yield ();
  ahead_free_slot (a);
}

void
tach_cpu_ahead_stop (TachBackend *be)
{
  TachCpuBackend *cpu = TACH_CPU (be);
  TachCpuAhead *a = cpu->ahead;

  if (a == NULL)
    return;
  tach_cpu_ahead_cancel (be, a->data);
  if (a->thread != NULL)
    {
      g_mutex_lock (&a->lock);
      g_atomic_int_set (&a->quit, 1);
      g_cond_signal (&a->cond);
      g_mutex_unlock (&a->lock);
      g_thread_join (a->thread);
    }
  g_mutex_clear (&a->lock);
  g_cond_clear (&a->cond);
  g_free (a);
  cpu->ahead = NULL;
}

gboolean
tach_cpu_ahead_running (TachBackend *be)
{
  TachCpuAhead *a = ahead_get (be);

  return a != NULL && a->thread != NULL;
}
