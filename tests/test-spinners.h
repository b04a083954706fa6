/* test-spinners.h: other processes that keep the processors busy, for the
 * tests of how the engine behaves on a loaded machine. */
#pragma once

#include <sys/types.h>

#include <glib.h>

G_BEGIN_DECLS

/* Forks one process pinned to each processor this process may use (at
 * most @max), each spinning until killed; returns how many, their ids in
 * @pids.  Any failure fails the test. */
guint test_spinners_start (pid_t *pids, guint max);
/* Kills and reaps the @n spinners of @pids. */
void  test_spinners_stop (const pid_t *pids, guint n);

G_END_DECLS
