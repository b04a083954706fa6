/* tach-async-device.h: an asynchronous test double of a device.
 *
 * A test tool, not a product device: it wraps the CPU backend so that its
 * ops are queued, in order, to a worker thread (the "compute stream"), and
 * overlapped uploads to a second one (the "copy stream"); host calls
 * return before the work is done, as on a GPU.  Events are timestamps
 * taken on the thread that runs them.  Only synchronize, download,
 * event_synchronize and event_elapsed_ms wait; errors of queued ops reach
 * the sticky error at those waits, as CUDA's do.  It has graphs where it
 * claims them (tach_async_device_set_graphs).  It
 * has the collectives of data-parallel ranks (the coll_* slots, as the
 * CUDA backend's NCCL) for a communicator of one rank, on a third worker
 * (the "side stream"), fp32 only.  It
 * counts its calls as the CUDA backend does (TachBackend.api_calls): each
 * queued op, copy or event and each wait is one.
 *
 * tach_async_device_register() makes the device "async:0" known to the
 * registry, so that whole runs (tach_run_new with device=async:0) use it.
 */
#pragma once

#include "tach-backend.h"

G_BEGIN_DECLS

#define TACH_ASYNC_DEVICE_ID "async:0"

void tach_async_device_register (void);
/* A simulated copy cost: every host-to-device copy (upload, upload_async,
 * upload_overlapped) sleeps @ns_per_byte on the stream that runs it, so
 * that tests can see whether copies overlap compute.  0 (the default): none. */
void tach_async_device_set_copy_cost (double ns_per_byte);
/* A simulated kernel time: every compute op sleeps @us before it runs, so
 * that a test's step time is set by the double rather than by how busy
 * this machine's cores are.  0 (the default): none. */
void tach_async_device_set_op_cost (double us);
/* A simulated all-reduce time: each coll_allreduce sleeps @us on its
 * stream.  0 (the default): none. */
void tach_async_device_set_collective_cost (double us);

/* Whether the double says it can launch graphs (launch=graph supported, as
 * on a GPU), for what is decided before a run starts (presets, the ranks'
 * rules), and whether a backend opened from now on has them: a capture
 * records the compute stream's jobs with their arguments as queued and
 * runs none, a launch queues copies of them (tach-async-graph.c), so a
 * replay sees no host value changed since the capture, as a CUDA graph.
 * FALSE (the default): it says no, and has none. */
void tach_async_device_set_graphs (gboolean claim);

/* The @n-th all-reduce queued from now (1: the next; 0: none) never ends,
 * as one whose peer is gone, until the communicator is aborted (coll_leave
 * with abort; a destroy waits for it, as NCCL's does), and the compute op
 * queued after it fails at once (a kernel launch's error): a rank that
 * fails on its own with a collective in flight. */
void tach_async_device_hang_collective (guint n);

/* What ran when, for tests that check what overlapped: a compute op (on
 * the compute stream) or a host-to-device copy (on the stream that ran
 * it), from its start (its simulated cost included) to its end, on the
 * clock of the double's events (CLOCK_MONOTONIC, ns). */
typedef enum {
  TACH_ASYNC_SPAN_OP,
  TACH_ASYNC_SPAN_UPLOAD,
} TachAsyncSpanKind;

typedef struct {
  TachAsyncSpanKind kind;
  gboolean          copy_stream;  /* ran on the copy stream (upload_overlapped) */
  gint64            start_ns, end_ns;
} TachAsyncSpan;

/* From now on every op and upload appends its TachAsyncSpan to @spans
 * (any thread; the array is the caller's), until it is called with NULL. */
void tach_async_device_trace (GArray *spans);

G_END_DECLS
