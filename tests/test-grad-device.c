/* test-grad-device.c: the gradient reducer's device path (what the CUDA
 * backend's NCCL serves), without a GPU: one rank under mpirun on the
 * asynchronous test double (tach-async-device.h), whose collectives are a
 * communicator of one rank on a side stream.  What the NCCL path relies on:
 *   - the communicator is made over MPI (rank 0's id, MPI's broadcast, the
 *     join), and the run says so among its algorithms;
 *   - each grad-sync queues its all-reduces where it should (per-tensor and
 *     fused on the compute stream, overlap's buckets on the side stream
 *     ordered by events) and gives the CPU's losses, bit for bit;
 *   - each step's figures come from the device's events (and its device
 *     step time reaches rank 0's samples): exposed
 *     communication (the collectives take a simulated 2 ms: per-tensor and
 *     fused expose them all, overlap at most that) and packing, finite and
 *     not negative, compute what is left of the step;
 *   - every step's all-reduces are kept as flights, one per bucket, within
 *     the step, and the trace draws a track per bucket under overlap;
 *   - the rank picks its device among the GPUs of its machine, and under
 *     mpirun -np 2 two ranks on a machine with one such device are refused;
 *   - a rank that fails on its own with a collective in flight that never
 *     ends returns, failed, within a deadline (the communicator aborted);
 *   - gradient accumulation (4 micro-batches): accumulate-sync=every
 *     all-reduces after each micro-batch, every one of them a flight and
 *     exposed communication of its step (events of its own, not the last
 *     one's over again), last once a step, over the summed gradients; both
 *     give the CPU's losses at accumulate=4, bit for bit (one rank);
 *   - shard=grads and shard=all on the device path are refused before
 *     anything runs, naming what is missing (NCCL's reduce-scatter and
 *     all-gather);
 *   - tuned on a device that launches graphs: eager under mpirun -np 1 and
 *     -np 2 (the ranks' all-reduces are not captured), said among the run's
 *     algorithms; launch=graph asked for still refused.
 *
 * Run under mpirun -np 1 and -np 2 (tests/test-mpi.py does): alone it
 * exits 77.
 */
#include <math.h>
#include <string.h>

#include "tach-async-device.h"
#include "tach-run-private.h"
#include "test-run-util.h"

#define STEPS 8
#define COLLECTIVE_MS 2.0

static TachRun *
run_sync (const char *sync)
{
  g_autofree char *settings = g_strdup_printf ("device=async:0 workload=bilstm hidden=200"
                                               " batch=4 steps=%d warmup=2 threads=1"
                                               " bucket-mb=1 grad-sync=%s", STEPS, sync);
  TachConfig config;
  TachRun *run;

  tach_config_init (&config, TACH_WORKLOAD_BILSTM);
  test_apply (&config, settings);
  run = test_run_to_end (&config);
  tach_config_clear (&config);
  return run;
}

static GArray *
losses_of (GArray *samples)
{
  GArray *losses = g_array_new (FALSE, FALSE, sizeof (double));

  for (guint i = 0; i < samples->len; i++)
    g_array_append_val (losses, g_array_index (samples, TachSample, i).loss);
  return losses;
}

/* How many all-reduces a step the run's note says @sync makes. */
static guint
buckets_of (const char *algorithms, const char *sync)
{
  g_autofree char *head = g_strdup_printf ("gradient all-reduce: %s: ", sync);
  const char *at = strstr (algorithms, head);

  g_assert_nonnull (at);
  return (guint) g_ascii_strtoull (at + strlen (head), NULL, 10);
}

/* A run of @sync, which must make @buckets all-reduces a step (0: more
 * than 2, per-tensor's one per tensor). */
static void
check_sync (const char *sync, guint buckets, GArray *cpu_losses)
{
  g_autoptr(TachRun) run = run_sync (sync);
  g_autoptr(GArray) samples = tach_run_dup_samples (run);
  g_autoptr(GArray) losses = losses_of (samples);
  g_autoptr(GArray) flights = g_array_new (FALSE, FALSE, sizeof (TachGradFlight));
  g_autofree char *algorithms = tach_run_dup_algorithms (run);
  gboolean overlap = g_str_equal (sync, "overlap");

  g_test_message ("%s: %s", sync, algorithms);
  g_assert_nonnull (strstr (algorithms, "collectives: test double, rank 0 of 1"));
  if (buckets == 0)
    {
      buckets = buckets_of (algorithms, sync);
      g_assert_cmpuint (buckets, >, 2);
    }
  g_assert_cmpuint (buckets_of (algorithms, sync), ==, buckets);
  g_assert_cmpstr (tach_run_get_device (run)->id, ==, TACH_ASYNC_DEVICE_ID);
  test_assert_same_losses (cpu_losses, losses, 0.0, sync);

  g_assert_cmpuint (samples->len, ==, STEPS);
  {
    const TachSample *last = &g_array_index (samples, TachSample, STEPS - 1);

    g_test_message ("%s, last step: compute %.2f ms, exposed communication %.2f ms, packing"
                    " %.3f ms, device step %.2f ms", sync, last->compute_ms, last->comm_ms,
                    last->pack_ms, last->device_step_ms);
  }
  for (guint i = 0; i < samples->len; i++)
    {
      const TachSample *s = &g_array_index (samples, TachSample, i);

      g_assert_true (isfinite (s->comm_ms) && s->comm_ms >= 0.0);
      g_assert_true (isfinite (s->pack_ms) && s->pack_ms >= 0.0);
      g_assert_true (isfinite (s->compute_ms) && s->compute_ms >= 0.0);
      /* The device timeline survives the ranks' gather on rank 0. */
      if (!s->warmup)
        g_assert_true (isfinite (s->device_step_ms) && s->device_step_ms > 0.0);
      /* Every all-reduce on the compute stream is exposed: at least the
       * simulated time of each (the double sleeps at least that). */
      if (!overlap)
        g_assert_cmpfloat (s->comm_ms, >=, 0.9 * COLLECTIVE_MS * buckets);
    }

  g_assert_cmpuint (tach_run_copy_rank_flights (run, 0, flights), ==, STEPS * buckets);
  for (guint i = 0; i < flights->len; i++)
    {
      const TachGradFlight *f = &g_array_index (flights, TachGradFlight, i);

      g_assert_cmpuint (f->step, ==, i / buckets);
      g_assert_cmpuint (f->bucket, ==, i % buckets);
      g_assert_true (f->start_ms >= 0.0 && f->dur_ms >= 0.9 * COLLECTIVE_MS);
      g_assert_cmpfloat (f->bytes, >, 0.0);
    }

  if (overlap)
    {
      g_autofree char *dir = test_make_tmp_dir ("tach-grad-device-XXXXXX");
      g_autofree char *path = g_build_filename (dir, "trace.json", NULL);
      g_autofree char *json = NULL;
      g_autoptr(GError) error = NULL;

      g_assert_true (tach_run_write_trace (run, path, &error));
      g_assert_no_error (error);
      g_assert_true (g_file_get_contents (path, &json, NULL, NULL));
      g_assert_nonnull (strstr (json, "all-reduce, bucket 1"));
      g_assert_nonnull (strstr (json, "\"bytes in flight\""));
      test_remove_tree (dir);
    }
}

static void
test_modes (void)
{
  g_autoptr(TestRunResult) cpu = test_run_ok (TACH_WORKLOAD_BILSTM,
                                              "device=cpu hidden=200 batch=4 warmup=2 threads=1",
                                              "steps=" G_STRINGIFY (STEPS), NULL);

  tach_async_device_set_collective_cost (COLLECTIVE_MS * 1000.0);
  check_sync ("per-tensor", 0, cpu->losses);
  check_sync ("fused", 1, cpu->losses);
  /* bucket-mb=1: the 3.2 MB of LSTM weights and the rest. */
  check_sync ("overlap", 2, cpu->losses);
}

/* accumulate=4 under accumulate-sync=@sync with grad-sync=@grad_sync:
 * @syncs all-reduce rounds a step of @buckets each. */
static void
check_accumulate (const char *sync, const char *grad_sync, guint buckets, guint syncs,
                  GArray *cpu_losses)
{
  g_autofree char *settings = g_strdup_printf ("accumulate=4 accumulate-sync=%s", sync);
  g_autoptr(TachRun) run = NULL;
  g_autoptr(GArray) samples = NULL;
  g_autoptr(GArray) losses = NULL;
  g_autoptr(GArray) flights = g_array_new (FALSE, FALSE, sizeof (TachGradFlight));
  TachConfig config;

  tach_config_init (&config, TACH_WORKLOAD_BILSTM);
  test_apply (&config, "device=async:0 hidden=200 batch=4 steps=" G_STRINGIFY (STEPS)
                       " warmup=2 threads=1 bucket-mb=1");
  test_apply (&config, settings);
  config.grad_sync = g_str_equal (grad_sync, "fused") ? TACH_GRAD_SYNC_FUSED
                                                        : TACH_GRAD_SYNC_OVERLAP;
  run = test_run_to_end (&config);
  tach_config_clear (&config);
  samples = tach_run_dup_samples (run);
  losses = losses_of (samples);
  test_assert_same_losses (cpu_losses, losses, 0.0, settings);
  g_assert_cmpuint (tach_run_copy_rank_flights (run, 0, flights), ==, STEPS * buckets * syncs);
  for (guint i = 0; i < flights->len; i++)
    {
      const TachGradFlight *f = &g_array_index (flights, TachGradFlight, i);

      g_assert_cmpuint (f->step, ==, i / (buckets * syncs));
      g_assert_cmpuint (f->bucket, ==, i % buckets);
      g_assert_true (f->start_ms >= 0.0 && f->dur_ms >= 0.9 * COLLECTIVE_MS);
    }
  for (guint i = 0; i < samples->len; i++)
    {
      const TachSample *s = &g_array_index (samples, TachSample, i);

      g_assert_true (isfinite (s->comm_ms) && s->comm_ms >= 0.0);
      g_assert_true (isfinite (s->pack_ms) && s->pack_ms >= 0.0);
      /* fused waits on each of its all-reduces: all of them exposed. */
      if (g_str_equal (grad_sync, "fused"))
        g_assert_cmpfloat (s->comm_ms, >=, 0.9 * COLLECTIVE_MS * syncs);
    }
}

static void
test_accumulate (void)
{
  g_autoptr(TestRunResult) cpu = test_run_ok (TACH_WORKLOAD_BILSTM,
                                              "device=cpu hidden=200 batch=4 warmup=2 threads=1"
                                              " accumulate=4",
                                              "steps=" G_STRINGIFY (STEPS), NULL);

  tach_async_device_set_collective_cost (COLLECTIVE_MS * 1000.0);
  check_accumulate ("every", "fused", 1, 4, cpu->losses);
  check_accumulate ("last", "fused", 1, 1, cpu->losses);
  check_accumulate ("every", "overlap", 2, 4, cpu->losses);
  check_accumulate ("last", "overlap", 2, 1, cpu->losses);
  tach_async_device_set_collective_cost (0.0);
}

/* How long a failed run may take to return: far beyond the seconds it
 * takes, and far below the forever of a hang. */
#define RETURN_DEADLINE_S 120

typedef struct {
  TachRun *run;
  GMutex   lock;
  GCond    cond;
  gboolean returned;
  gboolean ok;
  GError  *error;
} Waiter;

static gpointer
wait_main (gpointer data)
{
  Waiter *w = data;
  GError *error = NULL;
  gboolean ok = tach_run_wait (w->run, &error);

  g_mutex_lock (&w->lock);
  w->ok = ok;
  w->error = error;
  w->returned = TRUE;
  g_cond_signal (&w->cond);
  g_mutex_unlock (&w->lock);
  return NULL;
}

/* A rank that fails on its own with a collective in flight that never
 * ends (its peer gone): the double's step-2 all-reduce hangs until the
 * communicator is aborted and the op after it fails at once.  The run
 * must return, failed with that error, within the deadline: the
 * communicator aborted (a destroy waits for the collective), and no wait
 * on the hung step's events (under the run's lock) nor on the device
 * (freeing memory) before.  A run that hangs fails here, at the deadline,
 * rather than hanging the test. */
static void
test_failed_rank_returns (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TachRun) run = NULL;
  Waiter w = { 0 };
  GThread *waiter;
  gint64 until;
  TachConfig config;

  tach_config_init (&config, TACH_WORKLOAD_BILSTM);
  test_apply (&config, "device=async:0 workload=bilstm hidden=200 batch=4 steps=8 warmup=2"
                       " threads=1 grad-sync=fused");
  run = tach_run_new (&config, &error);
  tach_config_clear (&config);
  g_assert_no_error (error);
  /* fused: one all-reduce a step; the third is step 2's. */
  tach_async_device_hang_collective (3);
  g_assert_true (tach_run_start (run, NULL, NULL, NULL, &error));
  g_assert_no_error (error);
  w.run = run;
  g_mutex_init (&w.lock);
  g_cond_init (&w.cond);
  waiter = g_thread_new ("wait", wait_main, &w);
  until = g_get_monotonic_time () + RETURN_DEADLINE_S * G_TIME_SPAN_SECOND;
  g_mutex_lock (&w.lock);
  while (!w.returned)
    if (!g_cond_wait_until (&w.cond, &w.lock, until))
      g_error ("a rank that failed with a collective in flight did not return within %d s",
               RETURN_DEADLINE_S);
  g_mutex_unlock (&w.lock);
  g_thread_join (waiter);
  tach_async_device_hang_collective (0);
  g_assert_false (w.ok);
  g_assert_nonnull (w.error);
  g_test_message ("%s", w.error->message);
  g_assert_nonnull (strstr (w.error->message, "injected: a kernel launch failed"));
  g_clear_error (&w.error);
  g_mutex_clear (&w.lock);
  g_cond_clear (&w.cond);
}

/* tuned on a device that launches graphs, in a process that is one of
 * mpirun's ranks: the preset leaves launch eager (a GPU run under mpirun
 * refuses launch=graph), the run then starts, and under -np 1 runs and says
 * so among its algorithms; launch=graph asked for in so many words is
 * still refused, saying why. */
static void
test_tuned (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TachRun) refused = NULL;
  TachConfig config;

  tach_async_device_set_graphs (TRUE);
  tach_config_init (&config, TACH_WORKLOAD_BILSTM);
  test_apply (&config, "device=async:0");
  g_assert_true (tach_config_apply_preset (&config, "tuned", &error));
  g_assert_no_error (error);
  g_assert_cmpint (config.launch, ==, TACH_LAUNCH_EAGER);
  if (tach_ranks_world_size () == 1)
    {
      g_autoptr(TachRun) run = NULL;
      g_autofree char *algorithms = NULL;

      test_apply (&config, "batch=4 steps=4 warmup=1 threads=1");
      run = test_run_to_end (&config);
      algorithms = tach_run_dup_algorithms (run);
      g_test_message ("%s", algorithms);
      g_assert_nonnull (strstr (algorithms, "launch: eager: the preset's launch=graph is one"
                                            " process's"));
      test_apply (&config, "launch=graph");
      refused = tach_run_new (&config, &error);
      g_assert_null (refused);
      g_assert_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED);
      g_assert_nonnull (strstr (error->message, "all-reduces and their watchdog are not"
                                                " captured in a graph"));
    }
  else
    {
      /* Two ranks on the one device: refused for that alone. */
      test_apply (&config, "batch=4 steps=2");
      config.ranks = tach_ranks_world_size ();
      refused = tach_run_new (&config, &error);
      g_assert_null (refused);
      g_assert_nonnull (strstr (error->message, "each rank needs one of its own"));
    }
  tach_config_clear (&config);
  tach_async_device_set_graphs (FALSE);
}

/* Two ranks on this machine, one device of the GPU kind: refused before
 * anything runs, naming the rule. */
static void
test_one_device_per_rank (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TachRun) run = NULL;
  TachConfig config;

  tach_config_init (&config, TACH_WORKLOAD_BILSTM);
  test_apply (&config, "device=async:0 batch=4 steps=2 ranks=2");
  run = tach_run_new (&config, &error);
  tach_config_clear (&config);
  g_assert_null (run);
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "mpirun started 2 ranks on this machine, which has 1"));
  g_assert_nonnull (strstr (error->message, "each rank needs one of its own"));
}

/* Sharding is the MPI path's: on a device whose collectives the reducer
 * drives (NCCL's on CUDA, this double's), refused, naming what is not
 * built, one rank or two. */
static void
test_shard_refused (void)
{
  g_autoptr(GError) error = NULL;
  TachConfig config;

  tach_config_init (&config, TACH_WORKLOAD_BILSTM);
  test_apply (&config, "device=async:0 batch=4 steps=2");
  config.ranks = tach_ranks_world_size ();
  /* shard=all (FSDP's FULL_SHARD) gathers host pages over MPI: the same. */
  for (guint i = 0; i < 2; i++)
    {
      test_apply (&config, i == 0 ? "shard=grads" : "shard=all shard-prefetch=next");
      g_assert_false (tach_config_validate (&config, TACH_ASYNC_DEVICE_ID, &error));
      g_assert_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED);
      g_test_message ("%s", error->message);
      g_assert_nonnull (strstr (error->message, "ncclReduceScatter and ncclAllGather"));
      g_clear_error (&error);
    }
  test_apply (&config, "shard=none shard-prefetch=none");
  g_assert_true (tach_config_validate (&config, TACH_ASYNC_DEVICE_ID, &error));
  g_assert_no_error (error);
  tach_config_clear (&config);
}

int
main (int argc, char **argv)
{
  g_autoptr(GError) error = NULL;
  int status;

  if (!tach_ranks_init (&argc, &argv, &error))
    {
      g_printerr ("%s\n", error->message);
      return 1;
    }
  if (tach_ranks_world () == NULL)
    {
      g_print ("skip: the device path needs one rank under mpirun (mpirun -np 1 %s)\n", argv[0]);
      return 77;
    }
  g_test_init (&argc, &argv, NULL);
  tach_async_device_register ();
  /* One rank: the device path; two: the rule of one device per rank. */
  if (tach_ranks_world_size () == 1)
    {
      g_test_add_func ("/grad-device/modes", test_modes);
      g_test_add_func ("/grad-device/accumulate", test_accumulate);
      g_test_add_func ("/grad-device/failed-rank-returns", test_failed_rank_returns);
    }
  else
    g_test_add_func ("/grad-device/one-device-per-rank", test_one_device_per_rank);
  g_test_add_func ("/grad-device/tuned", test_tuned);
  g_test_add_func ("/grad-device/shard-refused", test_shard_refused);
  status = g_test_run ();
  tach_ranks_finish (status);
  return status;
}
