/* tach-async-graph.c: the asynchronous test double's graphs
 * (tach-async-device.h), on a device that claims them
 * (tach_async_device_set_graphs).  A capture records the jobs queued on the
 * compute stream, with the arguments they had when they were queued (the
 * step and position offsets among them), and runs none; a launch queues a
 * copy of each, in order.  So a replay repeats exactly what was captured,
 * as a CUDA graph does: a value the host changed after the capture is not
 * seen, a device value the jobs read is.  Host calls that a CUDA capture
 * refuses fail the capture here too. */
#include "tach-async-device-private.h"

void *
async_job_new (gsize size)
{
  AsyncJob *job = g_malloc0 (size);

  job->size = size;
  return job;
}

gboolean
async_not_capturing (TachBackend *be, const char *what)
{
  if (ASYNC (be)->capture == NULL)
    return TRUE;
  tach_backend_fail (be, TACH_ERROR_UNSUPPORTED, "%s cannot be captured in a graph", what);
  return FALSE;
}

gboolean
async_capture_job (TachBackend *be, AsyncStream *stream, AsyncJob *job)
{
  AsyncBackend *ab = ASYNC (be);

  if (ab->capture == NULL)
    return FALSE;
  if (stream != &ab->compute)
    {
      tach_backend_fail (be, TACH_ERROR_UNSUPPORTED,
                         "work on another stream cannot be captured in a graph");
      g_free (job);
    }
  else
    g_ptr_array_add (ab->capture, job);
  return TRUE;
}

/* counter_add on the compute stream, as the CUDA backend's kernel (the
 * default reads the counter back on the host, which a capture refuses). */
typedef struct {
  AsyncJob  job;
  uint64_t *counter;
  uint64_t  delta;
} CounterJob;

static void
run_counter_add (TachBackend *cpu, AsyncJob *job)
{
  CounterJob *j = (CounterJob *) job;

  *j->counter += j->delta;
}

static void
async_counter_add (TachBackend *be, uint64_t *counter, uint64_t delta)
{
  CounterJob *j = JOB_NEW (CounterJob);

  j->counter = counter;
  j->delta = delta;
  async_submit (be, &ASYNC (be)->compute, &j->job, run_counter_add);
}

static void
async_graph_begin (TachBackend *be)
{
  AsyncBackend *ab = ASYNC (be);

  g_return_if_fail (ab->capture == NULL);
  ab->capture = g_ptr_array_new_with_free_func (g_free);
}

static TachGraph *
async_graph_end (TachBackend *be)
{
  return (TachGraph *) g_steal_pointer (&ASYNC (be)->capture);
}

static void
async_graph_launch (TachBackend *be, TachGraph *graph)
{
  AsyncBackend *ab = ASYNC (be);
  GPtrArray *jobs = (GPtrArray *) graph;

  /* One call, as cudaGraphLaunch. */
  be->api_calls++;
  g_mutex_lock (&ab->lock);
  ab->compute.submitted += jobs->len;
  g_mutex_unlock (&ab->lock);
  for (guint i = 0; i < jobs->len; i++)
    {
      const AsyncJob *job = g_ptr_array_index (jobs, i);

      g_async_queue_push (ab->compute.queue, g_memdup2 (job, job->size));
    }
}

static void
async_graph_free (TachBackend *be, TachGraph *graph)
{
  g_ptr_array_unref ((GPtrArray *) graph);
}

void
async_fill_graph_ops (TachBackendOps *ops)
{
  ops->graph_begin = async_graph_begin;
  ops->graph_end = async_graph_end;
  ops->graph_launch = async_graph_launch;
  ops->graph_free = async_graph_free;
  ops->counter_add = async_counter_add;
}
