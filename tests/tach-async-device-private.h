/* tach-async-device-private.h: what the asynchronous test double's two
 * files share: tach-async-device.c (the streams, events, memory and ops)
 * and tach-async-coll.c (the collectives of one rank). */
#pragma once

#include "tach-async-device.h"

G_BEGIN_DECLS

typedef struct _AsyncJob AsyncJob;
typedef void (*AsyncJobFunc) (TachBackend *cpu, AsyncJob *job);

/* A queued call.  Each kind of job is a struct that starts with this. */
struct _AsyncJob {
  AsyncJobFunc func;        /* NULL: the worker ends */
  gsize        size;        /* of the whole job (JOB_NEW), for a graph's copies */
  uint64_t    *step_offset; /* TachBackend.step_offset when it was queued */
  const int32_t *pos_offset; /* TachBackend.pos_offset when it was queued */
};

typedef struct {
  GAsyncQueue *queue;       /* AsyncJob*, owned */
  GThread     *thread;
  guint64      submitted;   /* under the backend's lock */
  guint64      done;        /* under the backend's lock */
} AsyncStream;

typedef struct {
  TachBackend  base;        /* first */
  TachBackend *cpu;         /* owned: runs the ops, on the workers */
  AsyncStream  compute, copy, side;  /* side: the collectives' (coll_*) */
  gboolean     joined;      /* coll_join: a communicator of one rank */
  gboolean     aborted;     /* coll_leave with abort: a hung collective ends (lock) */
  GPtrArray   *capture;     /* AsyncJob*: a graph being captured, NULL: none */
  GMutex       lock;        /* stream counters and events */
  GCond        cond;
} AsyncBackend;

typedef struct {
  guint64 recorded;         /* host: records queued */
  guint64 reached;          /* worker: the last record run */
  gint64  t_ns;             /* worker: when it ran */
} AsyncEvent;

#define ASYNC(be) ((AsyncBackend *) (be))

#define JOB_NEW(type) ((type *) async_job_new (sizeof (type)))

/* tach-async-graph.c: a zeroed job of @size bytes. */
void    *async_job_new (gsize size);
/* Whether no graph is being captured; else fails @be: @what cannot be. */
gboolean async_not_capturing (TachBackend *be, const char *what);
/* While a graph is captured: takes @job (queued on @stream) into it and
 * returns TRUE; FALSE when none is. */
gboolean async_capture_job (TachBackend *be, AsyncStream *stream, AsyncJob *job);
/* The graph slots. */
void     async_fill_graph_ops (TachBackendOps *ops);

/* Queues @job (its @func run by @stream's worker); one API call. */
void async_submit (TachBackend *be, AsyncStream *stream, AsyncJob *job, AsyncJobFunc func);
/* Queues on @stream the recording of @event (@record) or a wait for it. */
void async_queue_event_job (TachBackend *be, AsyncStream *stream, TachEvent *event,
                            gboolean record);
/* Waits for every stream (as cudaDeviceSynchronize). */
void async_synchronize (TachBackend *be);
/* The next compute op queued fails at once, as a kernel launch can
 * (tach_async_device_hang_collective). */
void async_fail_next_op (void);
/* The collective slots (tach-async-coll.c). */
void async_fill_coll_ops (TachBackendOps *ops);

G_END_DECLS
