/* test-async.c: the runner on an asynchronous device, without a GPU.
 *
 * The device is the test double of tach-async-device.h: the CPU's ops on a
 * worker thread, events as timestamps there, so that host calls return
 * before the work is done as on a GPU.  What a GPU run relies on:
 *   - step times come from the device timeline, not the host's enqueue
 *     rate, and agree with the end-to-end rate at sync=end and sync=1;
 *   - the event ring is reused correctly over runs longer than it;
 *   - feed=prefetch overlaps the copy of the next batch with compute (on
 *     the double's own timeline: which upload ran beside which op);
 *   - every mode's per-step losses equal the CPU's.
 * Timing checks compare figures of one run with each other, never with
 * absolute times, nor one run's speed with another's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tach-async-device.h"
#include "test-coll-one-rank.h"
#include "test-run-util.h"

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

/* The median over measured steps of a per-sample field. */
static double
median_of (GArray *samples, size_t offset)
{
  g_autofree double *v = g_new (double, MAX (samples->len, 1));
  guint n = 0;

  for (guint i = 0; i < samples->len; i++)
    {
      const TachSample *s = &g_array_index (samples, TachSample, i);

      if (!s->warmup)
        v[n++] = G_STRUCT_MEMBER (double, s, offset);
    }
  qsort (v, n, sizeof (double), compare_doubles);
  return n > 0 ? v[n / 2] : NAN;
}

/* Sum of the measured steps' device times, in s. */
static double
device_time_s (GArray *samples, guint *measured)
{
  double sum = 0.0;

  *measured = 0;
  for (guint i = 0; i < samples->len; i++)
    {
      const TachSample *s = &g_array_index (samples, TachSample, i);

      if (s->warmup)
        continue;
      g_assert_true (isfinite (s->device_step_ms) && s->device_step_ms > 0.0);
      g_assert_true (isfinite (s->compute_ms) && s->compute_ms > 0.0);
      /* The compute is part of the step's interval on the same clock. */
      g_assert_cmpfloat (s->compute_ms, <=, s->device_step_ms * 1.0001 + 1e-3);
      sum += s->device_step_ms / 1e3;
      (*measured)++;
    }
  return sum;
}

static void
check_timeline (const char *sync)
{
  g_autofree char *settings = g_strdup_printf ("device=" TACH_ASYNC_DEVICE_ID " batch=8 steps=85 "
                                               "warmup=5 threads=1 sync=%s feed=resident", sync);
  g_autoptr(TestRunResult) r = NULL;
  guint measured;
  double device_s, e2e;

  /* Steps set by the double's simulated kernel time, so that the other
   * processes on this machine's cores do not make the run unsteady. */
  tach_async_device_set_op_cost (200.0);
  r = test_run_ok (TACH_WORKLOAD_BILSTM, settings, NULL);
  tach_async_device_set_op_cost (0.0);
  device_s = device_time_s (r->samples, &measured);
  e2e = r->summary.e2e_steps_per_s;

  g_assert_cmpstr (r->summary.rate_clock, ==, "device");
  g_assert_cmpuint (measured, ==, 80);
  g_test_message ("sync=%s: median %.2f steps/s (device), e2e %.2f, device sum %.2f, "
                  "host enqueue median %.2f", sync, r->summary.steps_per_s_median, e2e,
                  measured / device_s,
                  1000.0 / median_of (r->samples, G_STRUCT_OFFSET (TachSample, step_ms)));
  /* The device timeline covers the same span as the end-to-end clock:
   * from the end of warm-up to the last step's end.  The host's clock
   * marks both ends when the host sees them, so a stall of the host there
   * on a loaded machine (one of 16 ms in 400 ms was seen) moves it alone:
   * 80 steps and 3% leave room for that, and still refuse a span with the
   * 5 warm-up steps in it (6%); a step without its own interval fails
   * device_time_s. */
  g_assert_cmpfloat (fabs (measured / device_s - e2e) / e2e, <, 0.03);
  /* The median is of the same steps.  In a steady run it is a few percent
   * from the end-to-end rate; on this machine's shared cores some steps
   * take several times longer, which the mean feels and the median does
   * not, so the bounds here only catch a median of another clock (the
   * host's enqueue rate is 1000x the device's and more at sync=end).  A
   * loaded machine's stalls only lower the end-to-end rate, so the median
   * may stand up to 10x above it (it took a stall of over a second among
   * these 80 steps of a few ms; 3x took a third of one), and no lower than
   * a third of it. */
  g_assert_cmpfloat (r->summary.steps_per_s_median, <=, 10.0 * e2e);
  g_assert_cmpfloat (r->summary.steps_per_s_median, >=, e2e / 3.0);
  /* The calls of each step are counted, the runner's own included: the
   * same for every step between sync points, more for a step that syncs. */
  g_assert_true (r->summary.api_calls_per_step > 0.0);
  for (guint i = 0; i + 1 < r->samples->len; i++)
    {
      const TachSample *s = &g_array_index (r->samples, TachSample, i);

      if (!s->warmup)
        g_assert_cmpfloat (s->api_calls, ==, r->summary.api_calls_per_step);
    }
  if (g_str_equal (sync, "end"))
    g_assert_cmpfloat (g_array_index (r->samples, TachSample, r->samples->len - 1).api_calls, >,
                       r->summary.api_calls_per_step);
  if (g_str_equal (sync, "end"))
    /* What the median must not be: the host only enqueued. */
    g_assert_cmpfloat (1000.0 / median_of (r->samples, G_STRUCT_OFFSET (TachSample, step_ms)), >,
                       3.0 * e2e);
}

static void
test_timeline_sync_end (void)
{
  check_timeline ("end");
}

static void
test_timeline_sync_1 (void)
{
  check_timeline ("1");
}

/* Over 600 steps between two sync points the ring of 256 event pairs is
 * reused twice; every step's times must still be its own: positive, the
 * compute inside the interval, and the intervals summing to the span. */
static void
test_event_ring (void)
{
  g_autoptr(TestRunResult) r =
    test_run_ok (TACH_WORKLOAD_BILSTM, "device=" TACH_ASYNC_DEVICE_ID " batch=4 steps=602 warmup=2 "
                 "threads=1 sync=end feed=resident", NULL);
  guint measured;
  double device_s = device_time_s (r->samples, &measured);

  g_assert_cmpuint (measured, ==, 600);
  g_assert_cmpfloat (fabs (measured / device_s - r->summary.e2e_steps_per_s)
                     / r->summary.e2e_steps_per_s, <, 0.02);
}

/* The time @up spent while a compute op ran, in ns (the compute stream
 * runs its ops one at a time, so their overlaps add up). */
static gint64
overlap_with_ops_ns (GArray *spans, const TachAsyncSpan *up)
{
  gint64 sum = 0;

  for (guint i = 0; i < spans->len; i++)
    {
      const TachAsyncSpan *op = &g_array_index (spans, TachAsyncSpan, i);

      if (op->kind == TACH_ASYNC_SPAN_OP)
        sum += MAX (0, MIN (op->end_ns, up->end_ns) - MAX (op->start_ns, up->start_ns));
    }
  return sum;
}

/* Runs @settings on the double, traced: the uploads, those on the copy
 * stream, and those of them that ran beside compute ops for at least
 * @beside_ms in all. */
static TestRunResult *
run_traced (const char *settings, double beside_ms, guint *uploads, guint *on_copy,
            guint *overlapped)
{
  g_autoptr(GArray) spans = g_array_new (FALSE, FALSE, sizeof (TachAsyncSpan));
  TestRunResult *r;

  tach_async_device_trace (spans);
  r = test_run_ok (TACH_WORKLOAD_BILSTM, settings, NULL);
  tach_async_device_trace (NULL);
  *uploads = *on_copy = *overlapped = 0;
  for (guint i = 0; i < spans->len; i++)
    {
      const TachAsyncSpan *up = &g_array_index (spans, TachAsyncSpan, i);

      if (up->kind != TACH_ASYNC_SPAN_UPLOAD)
        continue;
      (*uploads)++;
      if (!up->copy_stream)
        continue;
      (*on_copy)++;
      if (overlap_with_ops_ns (spans, up) >= beside_ms * 1e6)
        (*overlapped)++;
    }
  return r;
}

/* How long an upload must run beside compute ops to count as overlapped:
 * two ops' simulated time.  A copy that runs in turn with compute, on
 * either stream, has none at all (the streams' order puts it between two
 * ops' spans); one beside its step has as much as the shorter of the two,
 * several ms, however much a loaded machine stretches them. */
#define BESIDE_MS 1.0

/* With copies as slow as compute, prefetch copies batch i+1 on the copy
 * stream while step i computes, and a host feed copies then computes, in
 * order on one stream.  Both costs are simulated sleeps, and what is
 * checked is the double's own timeline: which upload ran beside which
 * compute op, which the other processes on this machine's cores cannot
 * decide (they stretch both streams' work, not the order the streams
 * allow).  The two rates are printed, not compared: under load the
 * compute stretches and the copy does not, so their ratio says how busy
 * the machine was. */
static void
test_prefetch_overlap (void)
{
  g_autoptr(TestRunResult) serial = NULL;
  g_autoptr(TestRunResult) overlapped = NULL;
  g_autoptr(TestRunResult) calibrate = NULL;
  double compute_ms, batch_bytes = 8.0 * (10 * 300 + 1) * sizeof (float);
  guint uploads, on_copy, beside;

  tach_async_device_set_op_cost (500.0);
  calibrate = test_run_ok (TACH_WORKLOAD_BILSTM, "device=" TACH_ASYNC_DEVICE_ID " batch=8 steps=8 "
                           "warmup=2 threads=1 sync=end feed=resident", NULL);
  compute_ms = median_of (calibrate->samples, G_STRUCT_OFFSET (TachSample, compute_ms));
  tach_async_device_set_copy_cost (compute_ms * 1e6 / batch_bytes);

  /* A host feed: every batch's upload on the compute stream, none beside
   * an op (what the count below would find of a prefetch that did not
   * overlap). */
  serial = run_traced ("device=" TACH_ASYNC_DEVICE_ID " batch=8 steps=12 warmup=2 threads=1 "
                       "sync=end feed=host-f32", BESIDE_MS, &uploads, &on_copy, &beside);
  g_test_message ("host-f32: %u uploads, %u on the copy stream, %u beside compute",
                  uploads, on_copy, beside);
  g_assert_cmpuint (uploads, >=, 12);
  g_assert_cmpuint (on_copy, ==, 0);
  g_assert_cmpuint (beside, ==, 0);

  /* Prefetch: each step's batch on the copy stream, batch 0 before any
   * step, each later one beside the step before it: most of them.  A copy
   * and the step beside it start on the same event, each on its stream's
   * thread, and under load a thread can wait longer for a processor than
   * the step's ops take (3 of 13 ran after them, one core busy beside the
   * suite); a prefetch that waits for the step has none beside it. */
  overlapped = run_traced ("device=" TACH_ASYNC_DEVICE_ID " batch=8 steps=12 warmup=2 threads=1 "
                           "sync=end feed=prefetch", BESIDE_MS, &uploads, &on_copy, &beside);
  tach_async_device_set_copy_cost (0.0);
  tach_async_device_set_op_cost (0.0);
  g_test_message ("compute %.2f ms; host-f32 %.2f steps/s, prefetch %.2f steps/s; prefetch: "
                  "%u uploads on the copy stream, %u beside compute", compute_ms,
                  serial->summary.steps_per_s_median, overlapped->summary.steps_per_s_median,
                  on_copy, beside);
  g_assert_cmpuint (on_copy, >=, 12);
  g_assert_cmpuint (2 * beside, >, on_copy);
  test_assert_same_losses (serial->losses, overlapped->losses, 0.0, "prefetch vs host-f32");
}

/* Modes change speed, not math: the double's losses are the CPU's, step
 * for step, whatever the sync cadence and the feed. */
static void
test_losses_equal_cpu (void)
{
  static const char *const modes[] = {
    "sync=end feed=resident", "sync=1 feed=host-f64", "sync=3 feed=prefetch",
    "sync=end feed=host-f32 metrics=accuracy",
  };

  for (guint m = 0; m < G_N_ELEMENTS (modes); m++)
    {
      g_autoptr(TestRunResult) cpu = test_run_ok (TACH_WORKLOAD_BILSTM, "device=cpu batch=8 steps=9 "
                                                  "warmup=2 threads=1", modes[m], NULL);
      g_autoptr(TestRunResult) dev = test_run_ok (TACH_WORKLOAD_BILSTM, "device=" TACH_ASYNC_DEVICE_ID
                                                  " batch=8 steps=9 warmup=2 threads=1", modes[m],
                                                  NULL);

      test_assert_same_losses (cpu->losses, dev->losses, 0.0, modes[m]);
      g_assert_cmpstr (dev->summary.rate_clock, ==, "device");
      g_assert_cmpstr (cpu->summary.rate_clock, ==, "host");
    }
  {
    g_autoptr(TestRunResult) cpu = test_run_ok (TACH_WORKLOAD_LSTM_LM, "device=cpu batch=16 steps=6 "
                                                "warmup=1 threads=1 sync=2", NULL);
    g_autoptr(TestRunResult) dev = test_run_ok (TACH_WORKLOAD_LSTM_LM, "device=" TACH_ASYNC_DEVICE_ID
                                                " batch=16 steps=6 warmup=1 threads=1 sync=2", NULL);

    test_assert_same_losses (cpu->losses, dev->losses, 0.0, "lstm-lm train");
  }
}

static const TestCollCase async_coll_case = { TACH_ASYNC_DEVICE_ID, FALSE };

/* With an upload (64 ms) slower than an all-reduce (20 ms), itself slower
 * than nothing: an order between the streams that the events do not keep
 * shows in the values. */
static void
test_coll_slow (gconstpointer data)
{
  tach_async_device_set_copy_cost (4000.0);
  tach_async_device_set_collective_cost (20000.0);
  test_coll_one_rank (data);
  tach_async_device_set_copy_cost (0.0);
  tach_async_device_set_collective_cost (0.0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tach_async_device_register ();
  g_test_add_func ("/async/timeline/sync-end", test_timeline_sync_end);
  /* The GPU tests' check of NCCL without MPI, on the double (fp32 only). */
  g_test_add_data_func ("/async/coll/one-rank", &async_coll_case, test_coll_slow);
  g_test_add_func ("/async/timeline/sync-1", test_timeline_sync_1);
  g_test_add_func ("/async/event-ring", test_event_ring);
  g_test_add_func ("/async/prefetch-overlap", test_prefetch_overlap);
  g_test_add_func ("/async/losses-equal-cpu", test_losses_equal_cpu);
  return g_test_run ();
}
