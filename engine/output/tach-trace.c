/* tach-trace.c: Chrome Trace Event JSON (tach-trace.h).
 *
 * Events are kept in memory as small records (names interned), and
 * written at the end: sorted by (pid, tid, ts) so that every track's
 * timestamps are monotone, which Perfetto's importer prefers.
 *
 * A run's trace (tach_run_write_trace) is made from its samples: each
 * rank a process, a track of steps and one of phases, laid end to end in
 * each step, on each rank's own clock from its first step (steps end in
 * the same all-reduce on every rank, so the ranks' steps line up).
 */
#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-engine.h"
#include "tach-trace.h"
#include "tach-strided.h"

typedef enum { EV_SLICE, EV_COUNTER, EV_PROCESS, EV_THREAD } EventKind;

typedef struct {
  EventKind   kind;
  guint64     step;
  guint       pid, tid;
  const char *name;    /* interned */
  double      ts, dur, value;
} Event;

struct _TachTrace {
  TachStrided   events;    /* Event; metadata at step 0, kept at every stride */
  GStringChunk *names;
  GHashTable   *interned;  /* name -> the chunk's copy */
};

TachTrace *
tach_trace_new (guint max_events)
{
  TachTrace *trace = g_new0 (TachTrace, 1);

  tach_strided_init (&trace->events, sizeof (Event), G_STRUCT_OFFSET (Event, step), max_events);
  trace->names = g_string_chunk_new (1024);
  trace->interned = g_hash_table_new (g_str_hash, g_str_equal);
  return trace;
}

static const char *
intern (TachTrace *trace, const char *name)
{
  const char *copy = g_hash_table_lookup (trace->interned, name);

  if (copy == NULL)
    {
      copy = g_string_chunk_insert (trace->names, name);
      g_hash_table_add (trace->interned, (gpointer) copy);
    }
  return copy;
}

gboolean
tach_trace_keeps (const TachTrace *trace, guint64 step)
{
  return tach_strided_keeps (&trace->events, step);
}

guint64
tach_trace_get_stride (const TachTrace *trace)
{
  return trace->events.stride;
}

guint
tach_trace_get_n_events (const TachTrace *trace)
{
  return trace->events.items->len;
}

static void
add (TachTrace *trace, const Event *e)
{
  tach_strided_add (&trace->events, e);
}

void
tach_trace_name_process (TachTrace *trace, guint pid, const char *name)
{
  Event e = { EV_PROCESS, 0, pid, 0, intern (trace, name), 0, 0, 0 };

  add (trace, &e);
}

void
tach_trace_name_thread (TachTrace *trace, guint pid, guint tid, const char *name)
{
  Event e = { EV_THREAD, 0, pid, tid, intern (trace, name), 0, 0, 0 };

  add (trace, &e);
}

void
tach_trace_slice (TachTrace *trace, guint64 step, guint pid, guint tid, const char *name,
                  double ts_us, double dur_us)
{
  Event e = { EV_SLICE, step, pid, tid, NULL, ts_us, MAX (dur_us, 0.0), 0 };

  if (!tach_trace_keeps (trace, step))
    return;
  e.name = intern (trace, name);
  add (trace, &e);
}

void
tach_trace_counter (TachTrace *trace, guint64 step, guint pid, const char *name, double ts_us,
                    double value)
{
  Event e = { EV_COUNTER, step, pid, 0, NULL, ts_us, 0, value };

  if (!tach_trace_keeps (trace, step))
    return;
  e.name = intern (trace, name);
  add (trace, &e);
}

static int
event_order (gconstpointer pa, gconstpointer pb)
{
  const Event *a = pa, *b = pb;

  /* Metadata first, then by track and time. */
  if ((a->kind >= EV_PROCESS) != (b->kind >= EV_PROCESS))
    return a->kind >= EV_PROCESS ? -1 : 1;
  if (a->pid != b->pid)
    return a->pid < b->pid ? -1 : 1;
  if (a->kind != b->kind)
    return a->kind < b->kind ? -1 : 1;
  if (a->tid != b->tid)
    return a->tid < b->tid ? -1 : 1;
  if (a->ts != b->ts)
    return a->ts < b->ts ? -1 : 1;
  /* An enclosing slice before the ones it holds. */
  return a->dur > b->dur ? -1 : a->dur < b->dur;
}

static void
append_json_string (GString *out, const char *s)
{
  g_string_append_c (out, '"');
  for (; *s != '\0'; s++)
    {
      if (*s == '"' || *s == '\\')
        g_string_append_printf (out, "\\%c", *s);
      else if ((guchar) *s < 0x20)
        g_string_append_printf (out, "\\u%04x", (guchar) *s);
      else
        g_string_append_c (out, *s);
    }
  g_string_append_c (out, '"');
}

gboolean
tach_trace_write (TachTrace *trace, const char *path, GError **error)
{
  g_autoptr(GString) out = g_string_new ("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  char num[3][G_ASCII_DTOSTR_BUF_SIZE];

  GArray *events = trace->events.items;

  g_array_sort (events, event_order);
  for (guint i = 0; i < events->len; i++)
    {
      const Event *e = &g_array_index (events, Event, i);

      if (i > 0)
        g_string_append (out, ",\n");
      switch (e->kind)
        {
        case EV_PROCESS:
        case EV_THREAD:
          g_string_append_printf (out, "{\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"name\":\"%s\","
                                  "\"args\":{\"name\":",
                                  e->pid, e->tid,
                                  e->kind == EV_PROCESS ? "process_name" : "thread_name");
          append_json_string (out, e->name);
          g_string_append (out, "}}");
          break;
        case EV_SLICE:
          g_string_append (out, "{\"ph\":\"X\",\"name\":");
          append_json_string (out, e->name);
          g_string_append_printf (out, ",\"pid\":%u,\"tid\":%u,\"ts\":%s,\"dur\":%s,"
                                  "\"args\":{\"step\":%" G_GUINT64_FORMAT "}}",
                                  e->pid, e->tid,
                                  g_ascii_formatd (num[0], sizeof num[0], "%.3f", e->ts),
                                  g_ascii_formatd (num[1], sizeof num[1], "%.3f", e->dur),
                                  e->step);
          break;
        case EV_COUNTER:
          g_string_append (out, "{\"ph\":\"C\",\"name\":");
          append_json_string (out, e->name);
          g_string_append_printf (out, ",\"pid\":%u,\"tid\":0,\"ts\":%s,\"args\":{\"value\":%s}}",
                                  e->pid,
                                  g_ascii_formatd (num[0], sizeof num[0], "%.3f", e->ts),
                                  g_ascii_formatd (num[2], sizeof num[2], "%.17g", e->value));
          break;
        }
    }
  g_string_append_printf (out, "\n],\"otherData\":{\"step_stride\":%" G_GUINT64_FORMAT "}}\n",
                          trace->events.stride);
  if (!g_file_set_contents (path, out->str, (gssize) out->len, error))
    {
      g_prefix_error (error, _("could not write the trace %s: "), path);
      return FALSE;
    }
  return TRUE;
}

void
tach_trace_free (TachTrace *trace)
{
  if (trace == NULL)
    return;
  tach_strided_clear (&trace->events);
  g_hash_table_unref (trace->interned);
  g_string_chunk_free (trace->names);
  g_free (trace);
}

/* ------------------------------------------------------------- a run */

/* At most this many events: a few tens of MB of JSON. */
#define RUN_TRACE_EVENTS 400000

enum { TRACK_STEPS, TRACK_PHASES };

/* Lays step @s's phases end to end on the phases track, in the order a
 * step runs them: feeding, compute (backward's all-reduces overlapped
 * with it are inside), the wait for the slowest rank, the exposed
 * all-reduce, the unpacking, then the runner's sync and host work. */
static void
trace_step (TachTrace *trace, guint pid, const TachSample *s)
{
  static const struct { const char *name; gsize offset; } phases[] = {
    { "feed", G_STRUCT_OFFSET (TachSample, feed_ms) },
    { "compute", G_STRUCT_OFFSET (TachSample, compute_ms) },
    { "imbalance", G_STRUCT_OFFSET (TachSample, imbalance_ms) },
    { "all-reduce", G_STRUCT_OFFSET (TachSample, comm_ms) },
    { "packing", G_STRUCT_OFFSET (TachSample, pack_ms) },
    { "sync", G_STRUCT_OFFSET (TachSample, sync_ms) },
    { "host", G_STRUCT_OFFSET (TachSample, host_ms) },
  };
  double start = (s->wall_s * 1000.0 - s->step_ms) * 1000.0;   /* µs */
  double t = start;

  tach_trace_slice (trace, s->step, pid, TRACK_STEPS, s->warmup ? "warm-up step" : "step",
                    start, s->step_ms * 1000.0);
  for (guint k = 0; k < G_N_ELEMENTS (phases); k++)
    {
      double ms = G_STRUCT_MEMBER (double, s, phases[k].offset);

      if (!(ms > 0.0))
        continue;
      /* Rounding must not push a phase past its step. */
      ms = MIN (ms * 1000.0, start + s->step_ms * 1000.0 - t);
      tach_trace_slice (trace, s->step, pid, TRACK_PHASES, phases[k].name, t, ms);
      t += ms;
    }
  if (!isnan (s->loss))
    tach_trace_counter (trace, s->step, pid, "loss", start, s->loss);
}

gboolean
tach_run_write_trace (TachRun *run, const char *path, GError **error)
{
  g_autoptr(TachTrace) trace = tach_trace_new (RUN_TRACE_EVENTS);
  g_autoptr(GArray) piece = g_array_new (FALSE, FALSE, sizeof (TachSample));
  guint n_ranks = tach_run_get_n_ranks (run);

  for (guint rank = 0; rank < n_ranks; rank++)
    {
      g_autofree char *name = g_strdup_printf (_("rank %u"), rank);

      tach_trace_name_process (trace, rank, name);
      tach_trace_name_thread (trace, rank, TRACK_STEPS, _("steps"));
      tach_trace_name_thread (trace, rank, TRACK_PHASES, _("phases"));
      for (guint from = 0;
           tach_run_copy_rank_samples (run, rank, from, 4096, piece) > 0;
           from += piece->len, g_array_set_size (piece, 0))
        for (guint i = 0; i < piece->len; i++)
          trace_step (trace, rank, &g_array_index (piece, TachSample, i));
    }
  return tach_trace_write (trace, path, error);
}
