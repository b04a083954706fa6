/* test-spinners.c: spinning processes (test-spinners.h). */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test-spinners.h"

guint
test_spinners_start (pid_t *pids, guint max)
{
  cpu_set_t set;
  guint n = 0;

  g_assert_cmpint (sched_getaffinity (0, sizeof set, &set), ==, 0);
  for (int c = 0; c < CPU_SETSIZE && n < max; c++)
    {
      pid_t pid;

      if (!CPU_ISSET (c, &set))
        continue;
      pid = fork ();
      g_assert_cmpint (pid, >=, 0);
      if (pid == 0)
        {
          cpu_set_t one;
          volatile unsigned long x = 0;

          /* Only async-signal-safe calls after a fork: the pin, the spin. */
          CPU_ZERO (&one);
          CPU_SET (c, &one);
          sched_setaffinity (0, sizeof one, &one);
          for (;;)
            x++;
        }
      pids[n++] = pid;
    }
  g_assert_cmpuint (n, >, 0);
  return n;
}

void
test_spinners_stop (const pid_t *pids, guint n)
{
  for (guint i = 0; i < n; i++)
    {
      int status;

      kill (pids[i], SIGKILL);
      g_assert_cmpint (waitpid (pids[i], &status, 0), ==, pids[i]);
    }
}
