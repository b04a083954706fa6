/* test-run.c: the run lifecycle (start, finish, stop, cancel, failure),
 * the coalesced hand-off, sync cadence, summary arithmetic and the feeder's
 * modes. */
#include <locale.h>
#include <math.h>
#include <string.h>

#include "tach-feeder.h"
#include "tach-run-private.h"
#include "test-run-util.h"

typedef struct {
  GArray      *samples;   /* drained */
  guint        calls;
  TachRunState final;     /* state seen by the last call */
  gboolean     ended;
  guint        stop_after;  /* calls before asking to stop; 0 = never */
  gboolean     stop_on_progress; /* ask to stop at the first progress call */
  guint        progress_calls; /* calls that drained nothing while running */
  guint        last_done;   /* tach_run_get_steps_done() at the last call */
} Watch;

/* Runs on the test's main context. */
static void
on_notify (TachRun *run, gpointer user_data)
{
  Watch *w = user_data;
  TachRunState state = tach_run_get_state (run);

  guint done = tach_run_get_steps_done (run);

  /* The call that saw the end waited, as the window's does before it lets
   * go of its data: none follows it. */
  g_assert_false (w->ended);
  w->calls++;
  /* Progress never goes back. */
  g_assert_cmpuint (done, >=, w->last_done);
  w->last_done = done;
  if (tach_run_drain_samples (run, w->samples) == 0 && state == TACH_RUN_STATE_RUNNING)
    {
      w->progress_calls++;
      if (w->stop_on_progress)
        tach_run_stop (run);
    }
  if (w->stop_after > 0 && w->calls == w->stop_after)
    tach_run_stop (run);
  if (state != TACH_RUN_STATE_RUNNING && state != TACH_RUN_STATE_READY)
    {
      w->final = state;
      w->ended = TRUE;
      tach_run_wait (run, NULL);
    }
}

#define WATCH_S 150

static gboolean
on_timeout (gpointer data)
{
  g_error ("the run did not end within %u s", GPOINTER_TO_UINT (data));
  return G_SOURCE_REMOVE;
}

/* Starts @run with notifications on a private context and iterates it
 * until the final notification. */
static void
watch_run (TachRun *run, Watch *w)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(GError) error = NULL;
  /* A hang, not a slow machine: the 400 steps of /engine/run/progress
   * took 18 s under ThreadSanitizer with the other core busy. */
  GSource *timeout = g_timeout_source_new_seconds (WATCH_S);

  g_source_set_callback (timeout, on_timeout, GUINT_TO_POINTER (WATCH_S), NULL);
  g_source_attach (timeout, context);
  w->samples = g_array_new (FALSE, FALSE, sizeof (TachSample));
  g_assert_true (tach_run_start (run, context, on_notify, w, &error));
  g_assert_no_error (error);
  while (!w->ended)
    g_main_context_iteration (context, TRUE);
  g_source_destroy (timeout);
  g_source_unref (timeout);
  /* Nothing stays pending once the final call has run. */
  while (g_main_context_iteration (context, FALSE))
    ;
}

/* With sync=end nothing is published before the end, yet a run that
 * lasts a while still tells its front end how far it has got.  The run
 * lasts until that call comes, whatever the machine's speed: a million
 * steps (100 ms, when the call is due, is a few hundred), and the first
 * call that tells progress alone stops it; without such calls it runs
 * into the watch's bound, or to its end, and fails.  The stop syncs:
 * every step done is published then, at once. */
static void
test_progress_between_syncs (void)
{
  TachConfig c;
  g_autoptr(TachRun) run = NULL;
  g_autoptr(GError) error = NULL;
  Watch w = { 0 };

  test_tiny_config (&c, 1000000);
  g_assert_true (tach_config_set (&c, "sync", "end", NULL));
  g_assert_true (tach_config_set (&c, "batch", "64", NULL));
  run = tach_run_new (&c, &error);
  g_assert_no_error (error);
  tach_config_clear (&c);

  w.stop_on_progress = TRUE;
  watch_run (run, &w);
  g_assert_cmpint (w.final, ==, TACH_RUN_STATE_CANCELLED);
  g_assert_cmpuint (w.progress_calls, >=, 1);
  g_assert_cmpuint (tach_run_get_steps_done (run), >, 0);
  g_assert_cmpuint (w.samples->len, ==, tach_run_get_steps_done (run));
  g_array_unref (w.samples);
}

/* A run that syncs at every step publishes at every step, but tells its
 * front end at most every 10 ms (and at the end of warm-up and the last
 * step): a wake-up a step took a third processor from generation's two
 * threads.  Counted against the run's own wall time, so a slow machine
 * only allows more calls. */
static void
test_notify_cadence (void)
{
  TachConfig c;
  g_autoptr(TachRun) run = NULL;
  g_autoptr(GError) error = NULL;
  gint64 t0;
  double wall_ms;
  Watch w = { 0 };

  test_tiny_config (&c, 3000);
  g_assert_true (tach_config_set (&c, "sync", "1", NULL));
  run = tach_run_new (&c, &error);
  g_assert_no_error (error);
  tach_config_clear (&c);

  t0 = g_get_monotonic_time ();
  watch_run (run, &w);
  wall_ms = (double) (g_get_monotonic_time () - t0) / 1000.0;
  g_assert_cmpint (w.final, ==, TACH_RUN_STATE_FINISHED);
  g_assert_cmpuint (w.samples->len, ==, 3000);
  g_test_message ("%u calls for 3000 steps in %.0f ms", w.calls, wall_ms);
  g_assert_cmpfloat (w.calls, <=, wall_ms / 10.0 + 4);
  g_array_unref (w.samples);
}

static void
test_lifecycle (void)
{
  g_autoptr(TachRun) run = test_tiny_run_new (12);
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) all = NULL;
  Watch w = { 0 };
  TachSummary s;

  g_assert_cmpint (tach_run_get_state (run), ==, TACH_RUN_STATE_READY);
  g_assert_cmpstr (tach_run_get_device (run)->id, ==, "cpu");
  g_assert_cmpuint (tach_run_get_config (run)->batch, ==, 8);

  watch_run (run, &w);
  g_assert_cmpint (w.final, ==, TACH_RUN_STATE_FINISHED);
  g_assert_true (tach_run_wait (run, &error));
  g_assert_no_error (error);
  g_assert_null (tach_run_get_error (run));
  g_assert_cmpint (tach_run_get_start_time (run), >, 0);

  /* Every step arrived once, in order, through the coalesced hand-off. */
  g_assert_cmpuint (w.samples->len, ==, 12);
  g_assert_cmpuint (w.calls, >=, 1);
  g_assert_cmpuint (w.calls, <=, w.samples->len + 1);
  for (guint i = 0; i < w.samples->len; i++)
    {
      const TachSample *sm = &g_array_index (w.samples, TachSample, i);

      g_assert_cmpuint (sm->step, ==, i);
      g_assert_cmpint (sm->warmup, ==, i < 2);
      g_assert_true (isfinite (sm->loss));
      g_assert_true (isnan (sm->accuracy));
      g_assert_cmpfloat (sm->step_ms, >, 0.0);
      g_assert_cmpfloat (sm->compute_ms, >=, 0.0);
      g_assert_cmpfloat (sm->feed_ms, >=, 0.0);
      g_assert_cmpfloat (sm->host_ms, >=, 0.0);
      if (i > 0)
        g_assert_cmpfloat (sm->wall_s, >=, g_array_index (w.samples, TachSample, i - 1).wall_s);
    }
  all = tach_run_dup_samples (run);
  g_assert_cmpuint (all->len, ==, 12);
  g_assert_cmpuint (tach_run_drain_samples (run, w.samples), ==, 0);

  tach_run_get_summary (run, &s);
  g_assert_cmpuint (s.steps, ==, 10);
  g_assert_cmpfloat (s.steps_per_s_median, >, 0.0);
  g_assert_cmpfloat (s.steps_per_s_p10, <=, s.steps_per_s_median);
  g_assert_cmpfloat (s.steps_per_s_p90, >=, s.steps_per_s_median);
  g_assert_cmpfloat_with_epsilon (s.items_per_s, 8.0 * s.steps_per_s_median, 1e-6 * s.items_per_s);
  g_assert_cmpstr (s.items_unit, ==, "samples/s");
  g_assert_true (isfinite (s.final_loss));
  g_assert_cmpfloat (s.flops_per_step, >, 0.0);

  /* A run starts once. */
  g_assert_false (tach_run_start (run, NULL, NULL, NULL, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  g_array_unref (w.samples);
}

/* The loss curve is complete, and the same, whatever the sync cadence. */
static void
test_sync_cadence (void)
{
  static const char *const cadences[] = { "1", "3", "end" };
  /* 7 steps; and 100 at batch 1, with sync=end's steps moved to the held
   * store in batches of 16 before their losses are read. */
  static const struct { guint steps; const char *batch; } lengths[] = { { 7, "8" },
                                                                         { 100, "1" } };
  guint hold_min = tach_run_set_hold_min (16);

  for (guint n = 0; n < G_N_ELEMENTS (lengths); n++)
    {
      g_autoptr(GArray) reference = NULL;

      for (guint k = 0; k < G_N_ELEMENTS (cadences); k++)
        {
          TachConfig c;
          g_autoptr(TachRun) run = NULL;
          g_autoptr(GArray) samples = NULL;
          g_autofree char *settings = g_strdup_printf ("sync=%s metrics=accuracy batch=%s",
                                                       cadences[k], lengths[n].batch);

          test_tiny_config (&c, lengths[n].steps);
          test_apply (&c, settings);
          run = test_run_to_end (&c);
          tach_config_clear (&c);
          samples = tach_run_dup_samples (run);
          g_assert_cmpuint (samples->len, ==, lengths[n].steps);
          for (guint i = 0; i < samples->len; i++)
            {
              const TachSample *sm = &g_array_index (samples, TachSample, i);

              g_assert_cmpuint (sm->step, ==, i);
              g_assert_cmpint (sm->warmup, ==, i < 2);
              g_assert_true (isfinite (sm->loss));
              g_assert_true (sm->accuracy >= 0.0 && sm->accuracy <= 1.0);
              g_assert_true (sm->step_ms > 0.0 && isfinite (sm->compute_ms));
              /* Only sync points wait: with sync=end that is the last step
               * and the last warm-up step (2 warm-up steps). */
              if (g_str_equal (cadences[k], "end") && i + 1 < samples->len && i != 1)
                g_assert_cmpfloat (sm->sync_ms, ==, 0.0);
              if (reference != NULL)
                {
                  const TachSample *r = &g_array_index (reference, TachSample, i);

                  g_assert_cmpfloat (sm->loss, ==, r->loss);
                  g_assert_cmpfloat (sm->accuracy, ==, r->accuracy);
                }
            }
          if (reference == NULL)
            reference = g_steal_pointer (&samples);
        }
    }
  tach_run_set_hold_min (hold_min);
}

/* With sync=end every step waits for the end: what the runner keeps for
 * each (its times in the held store and the loss slot) stays a couple of
 * dozen bytes, not a sample's hundred, and less than a pending record (40
 * bytes) and its slot; a sync every 10 steps keeps ten records, their
 * slots and the slots' staging.  On generation, the cheapest step. */
static void
test_pending_bytes (void)
{
  static const struct { const char *sync; guint steps; double most; } cases[] = {
    /* Batches of 16 to the held store, as 1024 in a run 64 times longer. */
    { "end", 3000, 30.0 },
    { "10", 1000, (40.0 + 8.0) * 10 / 1000 },
  };
  guint hold_min = tach_run_set_hold_min (16);

  for (guint k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      TachConfig c;
      g_autoptr(TachRun) run = NULL;
      g_autofree char *settings = g_strdup_printf ("device=cpu threads=1 task=generate batch=1 "
                                                   "warmup=2 sync=%s steps=%u",
                                                   cases[k].sync, cases[k].steps);
      double per_step;

      tach_config_init (&c, TACH_WORKLOAD_LSTM_LM);
      test_apply (&c, settings);
      run = test_run_to_end (&c);
      tach_config_clear (&c);
      g_assert_cmpuint (tach_run_get_n_samples (run), ==, cases[k].steps);
      per_step = (double) tach_run_get_pending_bytes (run) / cases[k].steps;
      g_test_message ("sync=%s: %.2f bytes pending per step", cases[k].sync, per_step);
      g_assert_cmpfloat (per_step, >, 0.0);
      g_assert_cmpfloat (per_step, <=, cases[k].most);
    }
  tach_run_set_hold_min (hold_min);
}

static void
test_stop (void)
{
  g_autoptr(TachRun) run = test_tiny_run_new (1000000);
  g_autoptr(GError) error = NULL;
  Watch w = { 0 };

  w.stop_after = 2;
  watch_run (run, &w);
  g_assert_cmpint (w.final, ==, TACH_RUN_STATE_CANCELLED);
  /* A cancelled run is not a failure. */
  g_assert_true (tach_run_wait (run, &error));
  g_assert_no_error (error);
  g_assert_cmpint (tach_run_get_state (run), ==, TACH_RUN_STATE_CANCELLED);
  g_assert_cmpuint (w.samples->len, >=, 2);
  g_assert_cmpuint (w.samples->len, <, 1000);
  /* The step the stop interrupted was still synced: its loss is there. */
  g_assert_true (isfinite (g_array_index (w.samples, TachSample, w.samples->len - 1).loss));
  g_array_unref (w.samples);
}

static void
test_cancel_before_start (void)
{
  g_autoptr(TachRun) run = test_tiny_run_new (1000000);
  Watch w = { 0 };

  tach_run_stop (run);
  watch_run (run, &w);
  g_assert_cmpint (w.final, ==, TACH_RUN_STATE_CANCELLED);
  g_assert_cmpuint (w.samples->len, ==, 0);
  g_assert_true (tach_run_wait (run, NULL));
  g_array_unref (w.samples);
}

/* A front end lets go of its notify's data once tach_run_wait() has
 * returned: a call queued by then never comes.  Here the run ends while
 * nothing iterates its context, so its last call is queued at the wait
 * (in the window, a callback that saw the end waited while the thread
 * queued one more, which then ran on a freed TachRunObject). */
static void
test_no_notify_after_wait (void)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(TachRun) run = test_tiny_run_new (12);
  g_autoptr(GError) error = NULL;
  Watch w = { 0 };

  w.samples = g_array_new (FALSE, FALSE, sizeof (TachSample));
  g_assert_true (tach_run_start (run, context, on_notify, &w, &error));
  g_assert_no_error (error);
  g_assert_true (tach_run_wait (run, &error));
  g_assert_no_error (error);
  while (g_main_context_iteration (context, FALSE))
    ;
  g_assert_cmpuint (w.calls, ==, 0);
  g_array_unref (w.samples);
}

/* Dropping the last reference while the engine runs must neither block
 * nor crash: the thread holds its own reference. */
static void
test_unref_running (void)
{
  TachRun *run = test_tiny_run_new (1000000);
  g_autoptr(GError) error = NULL;

  g_assert_true (tach_run_start (run, NULL, NULL, NULL, &error));
  tach_run_stop (run);
  tach_run_unref (run);
  /* Let the thread end before the process does, for leak checkers. */
  g_usleep (G_USEC_PER_SEC / 2);
}

static void
test_failure (void)
{
  TachConfig c;
  g_autoptr(TachRun) run = NULL;
  g_autoptr(GError) error = NULL;
  Watch w = { 0 };

  /* A data file that does not exist passes validation (the file may
   * appear later) but fails the run: an error value, not an abort. */
  tach_config_init (&c, TACH_WORKLOAD_LSTM_LM);
  test_apply (&c, "device=cpu batch=4 steps=3 data=/nonexistent/tach-test-corpus.txt");
  run = tach_run_new (&c, &error);
  g_assert_no_error (error);
  tach_config_clear (&c);

  watch_run (run, &w);
  g_assert_cmpint (w.final, ==, TACH_RUN_STATE_FAILED);
  g_assert_false (tach_run_wait (run, &error));
  g_assert_nonnull (error);
  g_assert_true (error->domain == TACH_ERROR);
  g_assert_nonnull (tach_run_get_error (run));
  g_assert_cmpstr (tach_run_get_error (run)->message, ==, error->message);
  g_array_unref (w.samples);
}

static void
test_new_invalid (void)
{
  TachConfig c;
  g_autoptr(GError) error = NULL;
  TachRun *run;

  test_tiny_config (&c, 3);
  c.layout = TACH_LAYOUT_MISREAD;
  c.workload = TACH_WORKLOAD_CNN;
  run = tach_run_new (&c, &error);
  g_assert_null (run);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  tach_config_clear (&c);
}

/* --------------------------------------------------------------- summary */

/* An asynchronous device's rates come from the device timeline when every
 * measured step has it, never from the host's enqueue times; the
 * end-to-end rate counts the wall time from the end of warm-up. */
static void
test_summary_clocks (void)
{
  TachSample samples[6];
  TachSummary s;

  memset (samples, 0, sizeof samples);
  for (guint i = 0; i < 6; i++)
    {
      samples[i].step = i;
      samples[i].warmup = i < 2;
      samples[i].step_ms = 0.1;                 /* the host only enqueued */
      samples[i].device_step_ms = i < 1 ? NAN : 10.0;
      samples[i].wall_s = 1.0 + 0.01 * i;       /* warm-up ends at 1.01 s */
    }
  tach_summary_compute (samples, 6, 4, 0.0, 0.0, &s);
  g_assert_cmpstr (s.rate_clock, ==, "device");
  g_assert_cmpfloat_with_epsilon (s.steps_per_s_median, 100.0, 1e-9);
  g_assert_cmpfloat_with_epsilon (s.items_per_s, 400.0, 1e-9);
  g_assert_cmpfloat_with_epsilon (s.e2e_steps_per_s, 4 / 0.04, 1e-6);

  /* One measured step without a device time: the host clock for all. */
  samples[3].device_step_ms = NAN;
  tach_summary_compute (samples, 6, 4, 0.0, 0.0, &s);
  g_assert_cmpstr (s.rate_clock, ==, "host");
  g_assert_cmpfloat_with_epsilon (s.steps_per_s_median, 10000.0, 1e-6);
}

static void
test_summary_math (void)
{
  TachSample samples[12];
  TachSummary s;

  memset (samples, 0, sizeof samples);
  for (guint i = 0; i < 12; i++)
    {
      TachSample *sm = &samples[i];

      sm->step = i;
      sm->warmup = i < 2;
      /* Warm-up steps are slow; they must not count. */
      sm->step_ms = sm->warmup ? 1000.0 : (double) (i - 1);
      sm->feed_ms = 0.1 * sm->step_ms;
      sm->compute_ms = 0.5 * sm->step_ms;
      sm->sync_ms = sm->warmup ? NAN : 0.2 * sm->step_ms;
      sm->host_ms = 0.2 * sm->step_ms;
      sm->loss = sm->warmup ? 100.0 : (double) (i - 2);
      sm->accuracy = NAN;
      sm->wall_s = (double) i;
    }
  samples[3].loss = NAN;   /* not observed: ignored, not averaged as 0 */

  tach_summary_compute (samples, 12, 8, 1e9, 1e12, &s);
  g_assert_cmpuint (s.steps, ==, 10);
  /* Rates 1000/1 .. 1000/10: sorted, the middle two are 1000/6 and 1000/5. */
  g_assert_cmpfloat_with_epsilon (s.steps_per_s_median, (1000.0 / 6 + 1000.0 / 5) / 2, 1e-9);
  g_assert_cmpfloat_with_epsilon (s.steps_per_s_p10, 100.0 + 0.9 * (1000.0 / 9 - 100.0), 1e-9);
  g_assert_cmpfloat_with_epsilon (s.steps_per_s_p90, 500.0 + 0.1 * 500.0, 1e-9);
  g_assert_cmpfloat_with_epsilon (s.items_per_s, 8 * s.steps_per_s_median, 1e-9);
  /* Losses 0..9 with step 3's (loss 1) missing: two windows of half the
   * measured steps each, never the same steps twice. */
  g_assert_cmpuint (s.loss_window_steps, ==, 5);
  g_assert_cmpfloat_with_epsilon (s.first_loss, (0.0 + 2.0 + 3.0 + 4.0) / 4.0, 1e-12);
  g_assert_cmpfloat_with_epsilon (s.final_loss, (5.0 + 6.0 + 7.0 + 8.0 + 9.0) / 5.0, 1e-12);
  g_assert_cmpfloat_with_epsilon (s.feed_share, 0.1, 1e-12);
  g_assert_cmpfloat_with_epsilon (s.compute_share, 0.5, 1e-12);
  g_assert_cmpfloat_with_epsilon (s.sync_share, 0.2, 1e-12);
  g_assert_cmpfloat_with_epsilon (s.host_share, 0.2, 1e-12);
  g_assert_cmpfloat_with_epsilon (s.achieved_flops, 1e9 * s.steps_per_s_median, 1e-3);
  g_assert_cmpfloat_with_epsilon (s.peak_share, s.achieved_flops / 1e12, 1e-15);
  g_assert_cmpfloat (s.wall_s, ==, 11.0);

  /* Three measured steps (losses 0, unobserved, 2): one step each. */
  tach_summary_compute (samples, 5, 8, 1e9, 1e12, &s);
  g_assert_cmpuint (s.steps, ==, 3);
  g_assert_cmpuint (s.loss_window_steps, ==, 1);
  g_assert_cmpfloat (s.first_loss, ==, 0.0);
  g_assert_cmpfloat (s.final_loss, ==, 2.0);
  /* One measured step is a final loss, not also a first one. */
  tach_summary_compute (samples, 3, 8, 1e9, 1e12, &s);
  g_assert_cmpuint (s.loss_window_steps, ==, 1);
  g_assert_true (isnan (s.first_loss));
  g_assert_cmpfloat (s.final_loss, ==, 0.0);

  /* Nothing measured: no invented figures. */
  tach_summary_compute (samples, 2, 8, 1e9, 0.0, &s);
  g_assert_cmpuint (s.steps, ==, 0);
  g_assert_true (isnan (s.steps_per_s_median));
  g_assert_true (isnan (s.final_loss));
  g_assert_true (isnan (s.peak_share));
}

/* ---------------------------------------------------------------- feeder */

#define X_ELEMS 5

static void
fill_sample (gpointer data, guint64 i, double *x, void *y)
{
  /* Values that are not exact in float32, so the f64 -> f32 path matters. */
  for (guint e = 0; e < X_ELEMS; e++)
    x[e] = (double) i + (double) e / 7.0;
  ((float *) y)[0] = (float) (i % 2);
}

static GMutex fill_lock;

static void
fill_sample_noting_thread (gpointer data, guint64 i, double *x, void *y)
{
  fill_sample (NULL, i, x, y);
  g_mutex_lock (&fill_lock);
  g_hash_table_add (data, g_thread_self ());
  g_mutex_unlock (&fill_lock);
}

/* A backend that leaves its threads at 0 (the CUDA backend with --threads
 * at its default) still has the dataset filled on every core. */
static void
test_feeder_threads (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) seen = g_hash_table_new (g_direct_hash, g_direct_equal);
  TachBackend *be = tach_backend_new ("cpu", 1, TACH_PRECISION_FP32, &error);
  TachDataset ds = { .n_samples = 4096, .x_elems = X_ELEMS, .x_type = TACH_DTYPE_F32,
                     .y_elems = 1, .y_type = TACH_DTYPE_F32, .fill = fill_sample_noting_thread,
                     .data = seen };
  TachFeeder *feeder;

  g_assert_no_error (error);
  if (g_get_num_processors () < 2)
    {
      tach_backend_free (be);
      g_test_skip ("one core: nothing to fill in parallel");
      return;
    }
  be->threads = 0;
  feeder = tach_feeder_new (be, &ds, TACH_FEED_HOST_F32, 4, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (g_hash_table_size (seen), >=, 2);
  tach_feeder_free (feeder);
  tach_backend_free (be);
}

static void
test_feeder_modes (void)
{
  static const TachFeed modes[] = { TACH_FEED_HOST_F64, TACH_FEED_HOST_F32, TACH_FEED_PREFETCH,
                                    TACH_FEED_RESIDENT };
  g_autoptr(GError) error = NULL;
  TachBackend *be = tach_backend_new ("cpu", 1, TACH_PRECISION_FP32, &error);
  TachDataset ds = { .n_samples = 23, .x_elems = X_ELEMS, .x_type = TACH_DTYPE_F32,
                     .y_elems = 1, .y_type = TACH_DTYPE_F32, .fill = fill_sample };
  const guint batch = 4;
  /* In order, a skip, and past the end of the epoch (5 batches, 3 dropped). */
  static const guint64 order[] = { 0, 1, 2, 3, 4, 5, 6, 9, 10, 2, 3 };

  g_assert_no_error (error);
  g_assert_nonnull (be);
  /* Each mode as it comes, then with a fixed batch (launch=graph): the
   * same values, and from the second call on the same two pointers. */
  for (guint m = 0; m < 2 * G_N_ELEMENTS (modes); m++)
    {
      gboolean fixed = m >= G_N_ELEMENTS (modes);
      TachFeed feed = modes[m % G_N_ELEMENTS (modes)];
      /* A backend of its own, whose peak is then this feeder's alone. */
      TachBackend *mbe = tach_backend_new ("cpu", 1, TACH_PRECISION_FP32, &error);
      TachFeeder *feeder = tach_feeder_new (mbe, &ds, feed, batch, &error);
      const void *first_x = NULL, *first_y = NULL;
      double feed_ms = 0.0;
      guint64 dev_need = 0, host_need = 0;

      g_assert_no_error (error);
      if (fixed)
        {
          g_assert_true (tach_feeder_fix_batch (feeder, &error));
          g_assert_no_error (error);
        }
      g_assert_cmpuint (tach_feeder_batches_per_epoch (feeder), ==, 5);
      /* What the feeder says it allocates is what it allocated. */
      tach_feeder_memory_needs (&ds, feed, batch, fixed, &dev_need, &host_need);
      g_assert_cmpuint (tach_backend_peak_memory (mbe), ==, dev_need);
      g_assert_cmpuint (dev_need, ==, (feed == TACH_FEED_RESIDENT ? 5 + fixed
                                       : feed == TACH_FEED_PREFETCH ? 2 + fixed : 1)
                                      * batch * 6 * 4);
      g_assert_cmpuint (host_need, >=, 23 * 6 * 4);
      for (guint k = 0; k < G_N_ELEMENTS (order); k++)
        {
          const void *dx = NULL, *dy = NULL;
          float x[4 * X_ELEMS], y[4];

          g_assert_true (tach_feeder_next (feeder, order[k], &dx, &dy, &feed_ms, &error));
          g_assert_no_error (error);
          if (k == 0)
            first_x = dx, first_y = dy;
          else if (fixed)
            {
              g_assert_true (dx == first_x);
              g_assert_true (dy == first_y);
            }
          tach_backend_download (mbe, x, dx, sizeof x);
          tach_backend_download (mbe, y, dy, sizeof y);
          for (guint r = 0; r < batch; r++)
            {
              guint64 i = (order[k] % 5) * batch + r;

              for (guint e = 0; e < X_ELEMS; e++)
                g_assert_cmpfloat (x[r * X_ELEMS + e], ==, (float) ((double) i + (double) e / 7.0));
              g_assert_cmpfloat (y[r], ==, (float) (i % 2));
            }
        }
      g_assert_cmpfloat (feed_ms, >=, 0.0);
      tach_feeder_free (feeder);
      tach_backend_free (mbe);
    }

  /* Token ids cannot be fed as float64. */
  ds.x_type = TACH_DTYPE_I32;
  g_assert_null (tach_feeder_new (be, &ds, TACH_FEED_HOST_F64, batch, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  /* Fewer samples than a batch. */
  ds.x_type = TACH_DTYPE_F32;
  g_assert_null (tach_feeder_new (be, &ds, TACH_FEED_HOST_F32, 64, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  tach_backend_free (be);
}

int
main (int argc, char **argv)
{
  setlocale (LC_ALL, "");
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/engine/summary/math", test_summary_math);
  g_test_add_func ("/engine/summary/clocks", test_summary_clocks);
  g_test_add_func ("/engine/feeder/modes", test_feeder_modes);
  g_test_add_func ("/engine/feeder/threads", test_feeder_threads);
  g_test_add_func ("/engine/run/lifecycle", test_lifecycle);
  g_test_add_func ("/engine/run/sync-cadence", test_sync_cadence);
  g_test_add_func ("/engine/run/progress", test_progress_between_syncs);
  g_test_add_func ("/engine/run/notify-cadence", test_notify_cadence);
  g_test_add_func ("/engine/run/pending-bytes", test_pending_bytes);
  g_test_add_func ("/engine/run/stop", test_stop);
  g_test_add_func ("/engine/run/cancel-before-start", test_cancel_before_start);
  g_test_add_func ("/engine/run/unref-running", test_unref_running);
  g_test_add_func ("/engine/run/no-notify-after-wait", test_no_notify_after_wait);
  g_test_add_func ("/engine/run/failure", test_failure);
  g_test_add_func ("/engine/run/new-invalid", test_new_invalid);
  return g_test_run ();
}
