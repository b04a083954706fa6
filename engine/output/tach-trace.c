/* tach-trace.c: Chrome Trace Event JSON (tach-trace.h).
 *
 * Events are kept in memory as small records (names interned), and
 * written at the end: sorted by (pid, tid, ts) so that every track's
 * timestamps are monotone, which Perfetto's importer prefers.
 *
 * A run's trace (tach_run_write_trace) is made from its samples: each
 * rank a process, a track of steps and one of phases, on rank 0's clock
 * (tach_run_gather_ranks moved the other ranks' samples onto it), so that
 * a step's all-reduce overlaps on every rank as it did.  Beside them, each
 * rank's all-reduces as they flew (the reducer's flights, from launch to
 * completion, measured from the step's start: on the host's clock over
 * MPI, on the device's over NCCL, drawn from the host step's start): a
 * track per bucket under grad-sync=overlap, where they overlap one
 * another, else one track; and a counter of the bytes in flight.  The
 * phases are laid around the flights: the wait for the others begins at
 * the first launch where the all-reduces block, and ends at the last
 * landing where they overlap backward.
 *
 * Times are written as integer nanoseconds (in microseconds with three
 * decimals), each slice's end rounded as its neighbour's start, so that
 * the slices of a track nest.
 */
#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-engine.h"
#include "tach-run-private.h"
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

/* @us as integer nanoseconds, written as microseconds with three
 * decimals: a slice's end is rounded as the next one's start, so that
 * slices that meet do not overlap by a rounding (Perfetto nests slices by
 * their integer nanoseconds). */
static gint64
to_ns (double us)
{
  return (gint64) llround (us * 1000.0);
}

static void
append_ns (GString *out, gint64 ns)
{
  if (ns < 0)
    {
      g_string_append_c (out, '-');
      ns = -ns;
    }
  g_string_append_printf (out, "%" G_GINT64_FORMAT ".%03d", ns / 1000, (int) (ns % 1000));
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
  char num[G_ASCII_DTOSTR_BUF_SIZE];

  GArray *events = trace->events.items;
  double origin = 0.0;

  g_array_sort (events, event_order);
  /* Time starts at the earliest event, or at 0 if none is before it: on
   * rank 0's clock another rank's first step can begin before rank 0's
   * (its set-up ended first), and a timeline of negative times is one
   * that viewers and readers take as malformed. */
  for (guint i = 0; i < events->len; i++)
    {
      const Event *e = &g_array_index (events, Event, i);

      if (e->kind < EV_PROCESS)
        origin = MIN (origin, e->ts);
    }
  for (guint i = 0; i < events->len; i++)
    {
      Event shifted = g_array_index (events, Event, i);
      const Event *e = &shifted;

      shifted.ts -= origin;

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
          g_string_append_printf (out, ",\"pid\":%u,\"tid\":%u,\"ts\":", e->pid, e->tid);
          append_ns (out, to_ns (e->ts));
          g_string_append (out, ",\"dur\":");
          /* From the rounded ends, not the duration rounded apart. */
          append_ns (out, MAX (to_ns (e->ts + e->dur) - to_ns (e->ts), 0));
          g_string_append_printf (out, ",\"args\":{\"step\":%" G_GUINT64_FORMAT "}}", e->step);
          break;
        case EV_COUNTER:
          g_string_append (out, "{\"ph\":\"C\",\"name\":");
          append_json_string (out, e->name);
          g_string_append_printf (out, ",\"pid\":%u,\"tid\":0,\"ts\":", e->pid);
          append_ns (out, to_ns (e->ts));
          g_string_append_printf (out, ",\"args\":{\"value\":%s}}",
                                  g_ascii_formatd (num, sizeof num, "%.17g", e->value));
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

/* Tracks of a rank: its steps, its phases, then its all-reduces: one per
 * bucket under grad-sync=overlap (they fly at once), else one (they fly
 * one after another). */
enum { TRACK_STEPS, TRACK_PHASES, TRACK_BUCKETS };

/* Where step @s lies on its rank's track, in µs: it starts where the
 * last one ended (the samples' step times are floats, whose rounding
 * must not make two steps overlap). */
static void
step_span (const TachSample *s, double *last_end, double *start, double *end)
{
  *end = s->wall_s * 1e6;
  *start = MAX (*end - s->step_ms * 1000.0, *last_end);
  *end = MAX (*end, *start);
  *last_end = *end;
}

/* Lays step @s's phases on the phases track, in the order a step runs
 * them: feeding, compute, the wait for the slowest rank, the exposed
 * all-reduce, the unpacking, then the rest of compute (the update), the
 * runner's sync and host work.  The wait for the ranks starts at
 * @wait_start (µs; NaN without all-reduces, and the phases go end to
 * end), where the all-reduces began (trace_flights), so that compute is
 * not drawn around them. */
static void
trace_step (TachTrace *trace, guint pid, const TachSample *s, double start, double end,
            double wait_start)
{
  enum { FEED, COMPUTE, IMBALANCE, COMM, PACK, UPDATE, SYNC, HOST, N_PHASES };
  static const char *names[N_PHASES] = {
    "feed", "compute", "imbalance", "all-reduce", "packing", "compute", "sync", "host",
  };
  double ms[N_PHASES] = {
    s->feed_ms, s->compute_ms, s->imbalance_ms, s->comm_ms, s->pack_ms, 0.0, s->sync_ms,
    s->host_ms,
  };
  double t = start;

  for (guint k = 0; k < N_PHASES; k++)
    if (!(ms[k] > 0.0))
      ms[k] = 0.0;
  if (isfinite (wait_start))
    {
      /* The compute before the wait, and after it (the update). */
      double before = CLAMP (wait_start - (start + ms[FEED] * 1000.0), 0.0,
                             ms[COMPUTE] * 1000.0) / 1000.0;

      ms[UPDATE] = ms[COMPUTE] - before;
      ms[COMPUTE] = before;
    }
  tach_trace_slice (trace, s->step, pid, TRACK_STEPS, s->warmup ? "warm-up step" : "step",
                    start, end - start);
  for (guint k = 0; k < N_PHASES; k++)
    {
      double us = ms[k] * 1000.0;

      /* After the compute before it (host work inside the model may
       * leave a gap). */
      if (k == IMBALANCE && isfinite (wait_start))
        t = CLAMP (wait_start, t, end);
      if (!(us > 0.0))
        continue;
      /* Rounding must not push a phase past its step. */
      us = MIN (us, end - t);
      tach_trace_slice (trace, s->step, pid, TRACK_PHASES, names[k], t, us);
      t += us;
    }
  if (!isnan (s->loss))
    tach_trace_counter (trace, s->step, pid, "loss", start, s->loss);
}

/* One rank's all-reduces as they flew (TachGradFlight, in step order). */
typedef struct {
  GArray  *flights;
  guint    next;          /* the first not yet traced */
  gboolean per_bucket;    /* a track per bucket */
  double  *track_end;     /* µs: where each track's last slice ends */
  guint    n_tracks;
  double   counter_ts;    /* µs: the last bytes-in-flight point */
  guint    n_gathers;     /* shard=grads: all-gather tracks, one per bucket, after the others */
} Flights;

/* The slices' names, by TachGradFlightKind. */
static const char *const flight_names[] = { "all-reduce", "reduce-scatter", "all-gather" };

typedef struct {
  double ts, delta;
} FlightEdge;

static int
edge_order (gconstpointer pa, gconstpointer pb)
{
  const FlightEdge *a = pa, *b = pb;

  if (a->ts != b->ts)
    return a->ts < b->ts ? -1 : 1;
  /* A landing before a launch at the same instant. */
  return (a->delta > b->delta) - (a->delta < b->delta);
}

/* Step @s's all-reduces (@start to @end, µs): each a slice on its
 * bucket's track, from its launch to its completion, within the step; and
 * the bytes in flight, a counter that rises at each launch and falls at
 * each landing.  Returns where the step's wait for them began (NaN: no
 * all-reduce): at the first launch where they block (per-tensor, fused),
 * else its exposed part before the last landing (overlap: they fly
 * during backward, and the step waits for the last ones at its end). */
static double
trace_flights (TachTrace *trace, guint pid, const TachSample *s, double start, double end,
               Flights *f)
{
  g_autoptr(GArray) edges = g_array_new (FALSE, FALSE, sizeof (FlightEdge));
  double in_flight = 0.0, launched = NAN, landed = NAN;

  while (f->next < f->flights->len
         && g_array_index (f->flights, TachGradFlight, f->next).step < s->step)
    f->next++;
  for (; f->next < f->flights->len; f->next++)
    {
      const TachGradFlight *fl = &g_array_index (f->flights, TachGradFlight, f->next);
      gboolean gather = fl->kind == TACH_GRAD_FLIGHT_ALL_GATHER;
      guint track = gather ? f->n_tracks + MIN (fl->bucket, f->n_gathers - 1)
                    : f->per_bucket ? MIN (fl->bucket, f->n_tracks - 1) : 0;
      g_autofree char *name = NULL;
      double ts, dur;

      if (fl->step != s->step)
        break;
      if (!isfinite (fl->start_ms) || !isfinite (fl->dur_ms))
        continue;
      /* On this rank's step (the device's clock runs behind the host's:
       * its flights are drawn from the step's start), never over the
       * track's last slice. */
      ts = CLAMP (start + fl->start_ms * 1000.0, MAX (start, f->track_end[track]), end);
      dur = MIN (fl->dur_ms * 1000.0, end - ts);
      f->track_end[track] = ts + dur;
      /* The step waits for its gradients' collectives; shard=all's
       * all-gathers fly from forward on. */
      if (!gather)
        launched = isnan (launched) ? ts : MIN (launched, ts);
      landed = isnan (landed) ? ts + dur : MAX (landed, ts + dur);
      {
        g_autofree char *size = g_format_size ((guint64) fl->bytes);

        /* A prefetched all-gather says so (shard-prefetch=next). */
        name = g_strdup_printf ("%s %s%s", flight_names[MIN (fl->kind, 2)], size,
                                fl->ahead ? " (prefetched)" : "");
      }
      tach_trace_slice (trace, s->step, pid, TRACK_BUCKETS + track, name, ts, dur);
      g_array_append_val (edges, ((FlightEdge) { ts, fl->bytes }));
      g_array_append_val (edges, ((FlightEdge) { ts + dur, -fl->bytes }));
    }
  g_array_sort (edges, edge_order);
  for (guint i = 0; i < edges->len; i++)
    {
      const FlightEdge *edge = &g_array_index (edges, FlightEdge, i);

      in_flight = MAX (0.0, in_flight + edge->delta);
      f->counter_ts = MAX (f->counter_ts, edge->ts);
      tach_trace_counter (trace, s->step, pid, "bytes in flight", f->counter_ts, in_flight);
    }
  if (!f->per_bucket || isnan (landed))
    return launched;
  return landed - (MAX (s->imbalance_ms, 0.0) + MAX (s->comm_ms, 0.0)) * 1000.0;
}

/* Reads the flights of the run's @nth rank, @rank, and names their
 * tracks. */
static void
flights_init (Flights *f, TachTrace *trace, TachRun *run, guint nth, guint rank)
{
  const TachConfig *config = tach_run_get_config (run);
  guint n_buckets = 0;
  gboolean sharded = FALSE;

  f->flights = g_array_new (FALSE, FALSE, sizeof (TachGradFlight));
  f->next = 0;
  f->counter_ts = -G_MAXDOUBLE;
  tach_run_copy_rank_flights (run, nth, f->flights);
  for (guint i = 0; i < f->flights->len; i++)
    {
      const TachGradFlight *fl = &g_array_index (f->flights, TachGradFlight, i);

      n_buckets = MAX (n_buckets, fl->bucket + 1);
      sharded = sharded || fl->kind != TACH_GRAD_FLIGHT_ALL_REDUCE;
    }
  f->per_bucket = config->grad_sync == TACH_GRAD_SYNC_OVERLAP;
  f->n_tracks = f->per_bucket ? MAX (n_buckets, 1) : 1;
  /* The all-gathers fly at once, after the update (shard=all: before
   * each unit's forward and backward): a track each. */
  f->n_gathers = sharded ? MAX (n_buckets, 1) : 0;
  f->track_end = g_new0 (double, f->n_tracks + f->n_gathers);
  for (guint t = 0; t < f->n_tracks + f->n_gathers && f->flights->len > 0; t++)
    {
      g_autofree char *name = NULL;

      if (t >= f->n_tracks)
        name = g_strdup_printf (_("all-gather, bucket %u"), t - f->n_tracks);
      else if (sharded)
        name = f->per_bucket ? g_strdup_printf (_("reduce-scatter, bucket %u"), t)
                             : g_strdup (_("reduce-scatters"));
      else
        name = f->per_bucket ? g_strdup_printf (_("all-reduce, bucket %u"), t)
                             : g_strdup (_("all-reduces"));
      f->track_end[t] = -G_MAXDOUBLE;
      tach_trace_name_thread (trace, rank, TRACK_BUCKETS + t, name);
    }
}

static void
flights_clear (Flights *f)
{
  g_array_unref (f->flights);
  g_free (f->track_end);
}

gboolean
tach_run_write_trace (TachRun *run, const char *path, GError **error)
{
  g_autoptr(TachTrace) trace = tach_trace_new (RUN_TRACE_EVENTS);
  g_autoptr(GArray) piece = g_array_new (FALSE, FALSE, sizeof (TachSample));
  guint n_ranks = tach_run_get_n_ranks (run);

  /* A process per rank, named by its rank in the job (a rank that
   * survived rank 0 writes its own alone). */
  for (guint nth = 0; nth < n_ranks; nth++)
    {
      guint rank = tach_run_get_rank_of (run, nth);
      g_autofree char *name = g_strdup_printf (_("rank %u"), rank);
      Flights flights;
      double last_end = -G_MAXDOUBLE;

      tach_trace_name_process (trace, rank, name);
      tach_trace_name_thread (trace, rank, TRACK_STEPS, _("steps"));
      tach_trace_name_thread (trace, rank, TRACK_PHASES, _("phases"));
      flights_init (&flights, trace, run, nth, rank);
      for (guint from = 0;
           tach_run_copy_rank_samples (run, nth, from, 4096, piece) > 0;
           from += piece->len, g_array_set_size (piece, 0))
        for (guint i = 0; i < piece->len; i++)
          {
            const TachSample *s = &g_array_index (piece, TachSample, i);
            double start, end, wait_start;

            step_span (s, &last_end, &start, &end);
            wait_start = trace_flights (trace, rank, s, start, end, &flights);
            trace_step (trace, rank, s, start, end, wait_start);
          }
      flights_clear (&flights);
    }
  return tach_trace_write (trace, path, error);
}
