/* tach-run-scaling.c: scaling efficiency, from finished runs: N ranks'
 * samples/s over N times one process's, paired by round, and where the
 * N-rank runs keep it (their summaries' weak and strong scaling).  Above
 * the runs it reads (tach-run-query.c's getters); beside
 * tach-run-ranks.c, which gathers a run's ranks, and calls none of it.
 *
 * Threads: any.
 */
#include <math.h>

#include "tach-run-private.h"
#include "tach-stats.h"

/* @run's items/s with its interval, if it measured (finished or stopped
 * with measured steps); FALSE otherwise. */
static gboolean
items_rate (TachRun *run, TachInterval *rate)
{
  TachSummary s;

  if (run == NULL || tach_run_get_state (run) == TACH_RUN_STATE_FAILED)
    return FALSE;
  tach_run_get_summary (run, &s);
  *rate = (TachInterval) { s.items_per_s, s.items_per_s_lo, s.items_per_s_hi };
  return s.steps > 0 && s.items_per_s > 0 && isfinite (s.items_per_s);
}

void
tach_scaling_efficiency (TachRun *const *ranked, TachRun *const *alone, guint n_rounds,
                         TachInterval *out)
{
  g_autofree double *a = g_new (double, MAX (n_rounds, 1));
  g_autofree double *b = g_new (double, MAX (n_rounds, 1));
  TachInterval ra = { NAN, NAN, NAN }, rb = { NAN, NAN, NAN };
  double n_ranks = 1.0;
  guint n = 0;

  *out = (TachInterval) { NAN, NAN, NAN };
  for (guint k = 0; k < n_rounds; k++)
    if (items_rate (ranked[k], &rb) && items_rate (alone[k], &ra))
      {
        n_ranks = MAX (tach_run_get_config (ranked[k])->ranks, 1);
        a[n] = ra.value;
        b[n++] = rb.value;
      }
  if (n == 0)
    return;
  /* Ideal: N ranks process N times the samples a second of one process. */
  if (n >= 2)
    tach_stats_ratio_paired (a, b, n, out);
  else
    tach_stats_ratio_unpaired (&ra, &rb, out);
  out->value /= n_ranks;
  out->lo /= n_ranks;
  out->hi /= n_ranks;
}

void
tach_run_set_scaling (TachRun *run, const TachInterval *weak, const TachInterval *strong)
{
  g_mutex_lock (&run->lock);
  run->weak_scaling = *weak;
  run->strong_scaling = *strong;
  g_mutex_unlock (&run->lock);
}
