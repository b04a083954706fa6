/* tach-trace.h: a run's timeline as Chrome Trace Event JSON, which
 * Perfetto UI and chrome://tracing open.
 *
 * {"traceEvents": [...]} with complete slices (ph X: ts and dur in
 * microseconds), counters (ph C) and the names of processes and threads
 * (ph M).  One process per rank; the caller picks one track (tid) per
 * phase and per stream, so that slices on a track never overlap.
 *
 * Bounded: it keeps the events of every Nth step, N doubling (and the
 * steps it no longer keeps dropped) whenever the events would pass
 * max_events, so that a run of a million steps writes a file of the same
 * size as one of a thousand: the first steps and an even sample of the
 * rest.
 *
 * Threads: any one thread at a time.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _TachTrace TachTrace;

TachTrace *tach_trace_new (guint max_events);
/* Whether step @step's events are kept (at the current stride). */
gboolean   tach_trace_keeps (const TachTrace *trace, guint64 step);
guint64    tach_trace_get_stride (const TachTrace *trace);
void       tach_trace_name_process (TachTrace *trace, guint pid, const char *name);
void       tach_trace_name_thread (TachTrace *trace, guint pid, guint tid, const char *name);
/* A slice of step @step on track (@pid, @tid), from @ts_us for @dur_us;
 * dropped when the step is not kept. */
void       tach_trace_slice (TachTrace *trace, guint64 step, guint pid, guint tid,
                             const char *name, double ts_us, double dur_us);
/* A counter's value from @ts_us on. */
void       tach_trace_counter (TachTrace *trace, guint64 step, guint pid, const char *name,
                               double ts_us, double value);
guint      tach_trace_get_n_events (const TachTrace *trace);
/* Writes the file (to a temporary name, renamed once complete), events
 * sorted by time on each track, time starting at the earliest event (or
 * at 0, if none is earlier). */
gboolean   tach_trace_write (TachTrace *trace, const char *path, GError **error);
void       tach_trace_free (TachTrace *trace);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachTrace, tach_trace_free)

G_END_DECLS
