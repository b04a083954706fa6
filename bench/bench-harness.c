/* bench-harness.c: what Tach's own harness costs per step.
 *
 * The harness is everything the runner does around a model step: events
 * and host clocks, the loss slots and their read-back, the sample record,
 * and the hand-off of samples to the main thread (a locked buffer and a
 * coalesced GMainContext wake-up, drained here as the GUI and tach-cli
 * drain it).  This program times the fastest setting Tach has, lstm-lm
 * generation of one stream with the tuned preset on the CPU, two ways,
 * alternating, for several rounds:
 *
 *   runner  tach_run_start() on a main context that drains samples; a
 *           step's time is the time between the ends of consecutive
 *           steps (the samples' wall_s), so everything between steps
 *           counts;
 *   bare    the same model's step in a plain loop on a thread of its own
 *           (as the engine thread), with no events, samples or hand-off,
 *           timed the same way;
 *
 * Interquartile means of per-step times, not plain means: on a shared
 * machine a preempted step would otherwise swamp a difference of
 * microseconds.  It prints both
 * medians per round and the harness's share of the step time, (runner -
 * bare) / bare, and the median of those over the rounds.  On a GPU the
 * step is asynchronous, so this measures the CPU backend.  Usage:
 *
 *   bench-harness [--steps N] [--rounds R] [--workload W] [--batch B]
 *
 * Threads: the main thread, plus the runner's engine thread or the bare
 * loop's thread.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tach-engine.h"
#include "tach-model.h"

typedef struct {
  GMainLoop *loop;
  TachRun   *run;
  GArray    *samples;   /* every drained sample */
} Session;

/* Main thread: the run's coalesced notification. */
static void
on_notify (TachRun *run, gpointer user_data)
{
  Session *s = user_data;

  tach_run_drain_samples (run, s->samples);
  if (tach_run_get_state (run) != TACH_RUN_STATE_RUNNING)
    g_main_loop_quit (s->loop);
}

static int
compare_double (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

static double
median (GArray *values)
{
  g_array_sort (values, compare_double);
  if (values->len == 0)
    return NAN;
  return g_array_index (values, double, values->len / 2);
}

/* The mean of the middle half of sorted per-step times: as robust to a
 * preempted step as the median, but not stuck to the microsecond grid of
 * the clock, whose quantisation alone would be a few percent here. */
static double
interquartile_mean (GArray *values)
{
  double sum = 0.0;
  guint lo, hi;

  g_array_sort (values, compare_double);
  lo = values->len / 4;
  hi = values->len - values->len / 4;
  if (hi <= lo)
    return NAN;
  for (guint i = lo; i < hi; i++)
    sum += g_array_index (values, double, i);
  return sum / (hi - lo);
}

/* The interquartile mean of the times between the ends of consecutive measured steps
 * through the runner, in ms: everything between two steps counts, while a
 * step that the shared machine preempted does not move it. */
static double
time_runner (const TachConfig *config, GError **error)
{
  Session s = { 0 };
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(GArray) gaps = g_array_new (FALSE, FALSE, sizeof (double));
  double prev = NAN, result;

  s.loop = g_main_loop_new (context, FALSE);
  s.samples = g_array_new (FALSE, FALSE, sizeof (TachSample));
  s.run = tach_run_new (config, error);
  if (s.run == NULL)
    goto out;
  g_main_context_push_thread_default (context);
  if (tach_run_start (s.run, context, on_notify, &s, error))
    {
      g_main_loop_run (s.loop);
      tach_run_wait (s.run, error);
    }
  g_main_context_pop_thread_default (context);
  tach_run_drain_samples (s.run, s.samples);
  for (guint i = 0; i < s.samples->len; i++)
    {
      const TachSample *sample = &g_array_index (s.samples, TachSample, i);
      double gap = (sample->wall_s - prev) * 1000.0;

      if (!sample->warmup && !isnan (prev))
        g_array_append_val (gaps, gap);
      prev = sample->wall_s;
    }
out:
  g_clear_pointer (&s.run, tach_run_unref);
  g_array_unref (s.samples);
  g_main_loop_unref (s.loop);
  result = interquartile_mean (gaps);
  return result;
}

/* The same mean for the model's step alone in a plain loop, timed with
 * the clock the runner uses. */
static double
bare_loop (const TachConfig *config, GError **error)
{
  const TachModelClass *klass = tach_model_class_for (config->workload);
  g_autoptr(GArray) gaps = g_array_new (FALSE, FALSE, sizeof (double));
  TachBackend *be;
  TachModel *model = NULL;
  float *losses = NULL;
  guint warmup = tach_config_get_warmup (config);
  gint64 prev = 0;
  double result = NAN;

  be = tach_backend_new (config->device, config->threads, config->precision, error);
  if (be == NULL)
    return NAN;
  model = klass->create (be, config, error);
  if (model == NULL)
    goto out;
  /* The model does the same work as under the runner: it writes each
   * step's loss to a device slot.  Reading the slots back, timing and
   * publishing samples are the harness, left out here. */
  losses = tach_backend_alloc (be, (size_t) config->steps * sizeof (float));
  if (losses == NULL)
    goto out;
  for (guint i = 0; i < config->steps; i++)
    {
      TachStepCtx ctx = { .step = i, .loss_slot = losses + i };
      gint64 now;

      if (!klass->step (model, &ctx, error) || !tach_backend_take_error (be, error))
        goto out;
      now = g_get_monotonic_time ();
      if (i > warmup)
        {
          double gap = (double) (now - prev) / 1000.0;

          g_array_append_val (gaps, gap);
        }
      prev = now;
    }
  tach_backend_synchronize (be);
  if (tach_backend_take_error (be, error))
    result = interquartile_mean (gaps);
out:
  if (model != NULL)
    klass->free (model);
  if (losses != NULL)
    tach_backend_dealloc (be, losses);
  tach_backend_free (be);
  return result;
}

typedef struct {
  const TachConfig *config;
  GError           *error;
  double            ms;
} BareJob;

static gpointer
bare_thread (gpointer data)
{
  BareJob *job = data;

  job->ms = bare_loop (job->config, &job->error);
  return NULL;
}

/* The bare loop on a thread of its own, as the runner's engine thread:
 * a fresh thread has its own OpenMP pool and its own caches' warmth, which
 * is not the harness's cost. */
static double
time_bare (const TachConfig *config, GError **error)
{
  BareJob job = { config, NULL, NAN };

  g_thread_join (g_thread_new ("tach-bare", bare_thread, &job));
  if (job.error != NULL)
    g_propagate_error (error, job.error);
  return job.ms;
}

int
main (int argc, char **argv)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GOptionContext) options = NULL;
  g_autoptr(GArray) runner = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr(GArray) bare = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr(GArray) shares = g_array_new (FALSE, FALSE, sizeof (double));
  g_autofree char *workload = g_strdup ("lstm-lm");
  g_autofree char *batch = g_strdup ("1");
  int steps = 4000, rounds = 5;
  TachConfig config;
  GOptionEntry entries[] = {
    { "steps", 0, 0, G_OPTION_ARG_INT, &steps, "measured steps per run (default 4000)", "N" },
    { "rounds", 0, 0, G_OPTION_ARG_INT, &rounds, "alternating rounds (default 5)", "R" },
    { "workload", 0, 0, G_OPTION_ARG_STRING, &workload, "workload (default lstm-lm)", "W" },
    { "batch", 0, 0, G_OPTION_ARG_STRING, &batch, "batch (default 1)", "B" },
    { NULL }
  };
  g_autofree char *total = NULL, *warm = NULL;

  options = g_option_context_new ("- the harness's share of Tach's step time");
  g_option_context_add_main_entries (options, entries, NULL);
  if (!g_option_context_parse (options, &argc, &argv, &error) || steps < 10 || rounds < 1)
    {
      fprintf (stderr, "bench-harness: %s\n",
               error != NULL ? error->message : "--steps must be at least 10, --rounds 1");
      return 2;
    }

  total = g_strdup_printf ("%d", steps + steps / 10);
  warm = g_strdup_printf ("%d", steps / 10);
  tach_config_init (&config, TACH_WORKLOAD_LSTM_LM);
  if (!tach_config_set (&config, "workload", workload, &error)
      || !tach_config_apply_preset (&config, "tuned", &error)
      || !tach_config_set (&config, "device", "cpu", &error)
      || !tach_config_set (&config, "batch", batch, &error)
      || (config.workload == TACH_WORKLOAD_LSTM_LM
          && !tach_config_set (&config, "task", "generate", &error))
      || !tach_config_set (&config, "steps", total, &error)
      || !tach_config_set (&config, "warmup", warm, &error)
      || !tach_config_validate (&config, "cpu", &error))
    {
      fprintf (stderr, "bench-harness: %s\n", error->message);
      tach_config_clear (&config);
      return 1;
    }

  printf ("%s, batch %s, tuned preset, cpu: %d measured steps per run, %d rounds\n",
          workload, batch, steps, rounds);
  for (int r = 0; r < rounds; r++)
    {
      /* Alternate who goes first, so that a drift of a shared machine
       * favours neither. */
      double a, b;

      if (r % 2 == 0)
        {
          a = time_runner (&config, &error);
          b = error == NULL ? time_bare (&config, &error) : NAN;
        }
      else
        {
          b = time_bare (&config, &error);
          a = error == NULL ? time_runner (&config, &error) : NAN;
        }
      if (error != NULL)
        {
          fprintf (stderr, "bench-harness: %s\n", error->message);
          tach_config_clear (&config);
          return 1;
        }
      g_array_append_val (runner, a);
      g_array_append_val (bare, b);
      a = 100.0 * (a - b) / b;
      g_array_append_val (shares, a);
      printf ("round %d: runner %.4f ms/step, bare %.4f ms/step, harness %+.2f%%\n",
              r + 1, g_array_index (runner, double, r), b, a);
    }
  printf ("median: runner %.4f ms/step, bare %.4f ms/step, harness share %+.2f%% "
          "(median of the rounds' shares)\n", median (runner), median (bare), median (shares));
  tach_config_clear (&config);
  return 0;
}
