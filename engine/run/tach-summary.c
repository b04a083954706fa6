/* tach-summary.c: summary statistics over a run's samples.
 *
 * Warm-up steps are shown but never summarised: lazy initialisation,
 * autotuning and graph capture would otherwise skew every figure.  Rates are
 * medians with their 10th and 90th percentiles, not means, because a step
 * time distribution has a long tail (page faults, other processes).
 *
 * Which clock: on an asynchronous device the host only queues steps, so
 * host time per step is the enqueue rate; the rates then come from the
 * device timeline (device_step_ms) whenever every measured step has it,
 * and the summary says so (rate_clock).  Beside the median, the end-to-end
 * rate divides the measured steps by the wall time from the end of warm-up
 * to the final synchronisation, which any clock must agree with.
 *
 * Memory: a summary reads the samples in passes (from an array, or from a
 * run's compact store, tach-sample-store.h) and keeps no per-step copy:
 * the loss windows are two rings of ten, and a percentile of many values
 * is found by radix selection, one pass per 16 bits where the values
 * differ, which gives exactly what sorting a copy of them would.  Only
 * short runs (fewer values than the sort limit) sort a copy.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-sample-store.h"
#include "tach-stats.h"

#define LOSS_WINDOW 10
/* Percentile queries one summary asks: p10, p50, p90 of the rates (two
 * ranks each) and the median of the call counts (two ranks). */
#define MAX_QUERIES 8
#define DIGIT_BITS 16

static guint sort_limit = 1 << 16;

guint
tach_summary_set_sort_limit (guint limit)
{
  guint old = sort_limit;

  sort_limit = limit;
  return old;
}

/* Where samples come from: an array, or a store read in order. */
typedef struct {
  const TachSample      *samples;   /* or NULL */
  guint                  n;
  const TachSampleStore *store;
  guint                  i;
  TachSampleIter         iter;
} Source;

static void
source_rewind (Source *src)
{
  src->i = 0;
  if (src->store != NULL)
    tach_sample_iter_init (&src->iter, src->store, 0);
}

static gboolean
source_next (Source *src, TachSample *out)
{
  if (src->store != NULL)
    return tach_sample_iter_next (&src->iter, out);
  if (src->i >= src->n)
    return FALSE;
  *out = src->samples[src->i++];
  return TRUE;
}

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

/* The ranks of sorted values that percentile @p of @n values reads:
 * closest ranks, interpolated (*frac of the way from lo to hi). */
static void
percentile_ranks (guint n, double p, guint *lo, guint *hi, double *frac)
{
  double pos = p * (double) (n - 1);

  *lo = (guint) floor (pos);
  if (*lo + 1 >= n)
    {
      *lo = *hi = n - 1;
      *frac = 0.0;
      return;
    }
  *hi = *lo + 1;
  *frac = pos - (double) *lo;
}

/* Linear interpolation between closest ranks of sorted @v. */
static double
percentile (const double *v, guint n, double p)
{
  guint lo, hi;
  double frac;

  if (n == 0)
    return NAN;
  percentile_ranks (n, p, &lo, &hi, &frac);
  if (lo == hi)
    return v[n - 1];
  return v[lo] + frac * (v[lo + 1] - v[lo]);
}

/* Mean of the observed (non-NaN) losses of @count measured steps from
 * measured index @from, kept in @ring by index modulo LOSS_WINDOW. */
static double
mean_loss (const double *ring, guint from, guint count)
{
  double sum = 0.0;
  guint seen = 0;

  for (guint i = from; i < from + count; i++)
    if (!isnan (ring[i % LOSS_WINDOW]))
      {
        sum += ring[i % LOSS_WINDOW];
        seen++;
      }
  return seen > 0 ? sum / seen : NAN;
}

static void
add_phase (double *sum, double value)
{
  /* A phase the engine did not observe adds nothing rather than NaN. */
  if (!isnan (value))
    *sum += value;
}

/* @x >> @n, 0 when @n is the width of @x. */
static guint64
shift_right (guint64 x, guint n)
{
  return n >= 64 ? 0 : x >> n;
}

/* What percentiles are taken of. */
typedef enum { STREAM_STEP_MS, STREAM_DEVICE_MS, STREAM_CALLS, N_STREAMS } Stream;

/* A double's bits, ordered as the doubles are. */
static guint64
sort_key (double v)
{
  guint64 u;

  memcpy (&u, &v, sizeof u);
  return (u >> 63) != 0 ? ~u : u | (G_GUINT64_CONSTANT (1) << 63);
}

static double
key_value (guint64 key)
{
  guint64 u = (key >> 63) != 0 ? key & ~(G_GUINT64_CONSTANT (1) << 63) : ~key;
  double v;

  memcpy (&v, &u, sizeof v);
  return v;
}

/* Whether @s is a measured step whose rate counts, and its value on
 * @stream (the rates are 1000 / the step time of the rate's clock). */
static gboolean
stream_value (const TachSample *s, Stream stream, double *v)
{
  if (s->warmup)
    return FALSE;
  if (stream == STREAM_CALLS)
    {
      *v = s->api_calls;
      return isfinite (s->api_calls);
    }
  if (!(s->step_ms > 0.0 && isfinite (s->step_ms)))
    return FALSE;
  *v = stream == STREAM_STEP_MS ? s->step_ms : s->device_step_ms;
  return TRUE;
}

/* The bits where the keys of a stream differ, for the selection to look at
 * only those: the high ones they all share and the low ones all zero (a
 * float kept in a double) are known. */
typedef struct {
  guint64 and_keys, or_keys;
} KeyBits;

static void
key_bits_add (KeyBits *bits, guint64 key)
{
  bits->and_keys &= key;
  bits->or_keys |= key;
}

typedef struct {
  Stream  stream;
  guint64 rank;      /* among the values still matching */
  guint64 prefix;    /* the key's bits above shift, found so far */
  double  value;
} Query;

/* Finds each query's value (its rank among its stream's values) by radix
 * selection: a pass per DIGIT_BITS of the bits where keys differ, each
 * counting the next digit of the keys that match the digits found. */
static void
select_values (Source *src, Query *queries, guint n_queries, const KeyBits *bits)
{
  g_autofree guint32 *hist = g_new (guint32, (gsize) n_queries << DIGIT_BITS);
  guint top[N_STREAMS], low[N_STREAMS];
  TachSample s;

  for (guint k = 0; k < N_STREAMS; k++)
    {
      guint64 differ = bits[k].and_keys ^ bits[k].or_keys;

      top[k] = differ != 0 ? 64 - (guint) __builtin_clzll (differ) : 0;
      low[k] = bits[k].or_keys != 0 ? (guint) __builtin_ctzll (bits[k].or_keys) : 0;
      low[k] = MIN (low[k], top[k]);
    }
  for (guint q = 0; q < n_queries; q++)
    queries[q].prefix = shift_right (bits[queries[q].stream].and_keys, top[queries[q].stream]);

  for (guint pass = 0;; pass++)
    {
      gboolean any = FALSE;
      guint shift[MAX_QUERIES], width[MAX_QUERIES];

      for (guint q = 0; q < n_queries; q++)
        {
          Stream k = queries[q].stream;
          guint done = MIN (pass * DIGIT_BITS, top[k] - low[k]);

          width[q] = MIN (DIGIT_BITS, top[k] - low[k] - done);
          shift[q] = top[k] - done - width[q];
          any |= width[q] > 0;
        }
      if (!any)
        break;
      memset (hist, 0, ((gsize) n_queries << DIGIT_BITS) * sizeof (guint32));
      source_rewind (src);
      while (source_next (src, &s))
        for (guint q = 0; q < n_queries; q++)
          {
            double v;
            guint64 key;

            if (width[q] == 0 || !stream_value (&s, queries[q].stream, &v))
              continue;
            key = sort_key (v);
            if (shift_right (key, shift[q] + width[q]) != queries[q].prefix)
              continue;
            hist[((gsize) q << DIGIT_BITS) + ((key >> shift[q]) & ((1u << width[q]) - 1))]++;
          }
      for (guint q = 0; q < n_queries; q++)
        {
          const guint32 *h = hist + ((gsize) q << DIGIT_BITS);
          guint64 below = 0;
          guint d = 0;

          if (width[q] == 0)
            continue;
          while (below + h[d] <= queries[q].rank)
            below += h[d++];
          queries[q].rank -= below;
          queries[q].prefix = (queries[q].prefix << width[q]) | d;
        }
    }
  for (guint q = 0; q < n_queries; q++)
    {
      Stream k = queries[q].stream;

      queries[q].value = key_value ((queries[q].prefix << low[k])
                                    | (bits[k].and_keys & ((G_GUINT64_CONSTANT (1) << low[k]) - 1)));
    }
}

/* Adds queries for percentile @p of @n values of @stream; @descending
 * when the percentile is of 1000 / the values (rates), whose order is the
 * values' reversed. */
static void
add_percentile_queries (Query *queries, guint *n_queries, Stream stream, guint n, double p,
                        gboolean descending)
{
  guint lo, hi;
  double frac;

  percentile_ranks (n, p, &lo, &hi, &frac);
  queries[(*n_queries)++] = (Query) { .stream = stream, .rank = descending ? n - 1 - lo : lo };
  queries[(*n_queries)++] = (Query) { .stream = stream, .rank = descending ? n - 1 - hi : hi };
}

static double
percentile_from_queries (const Query *q, guint n, double p, gboolean rate)
{
  guint lo, hi;
  double frac, a, b;

  if (n == 0)
    return NAN;
  percentile_ranks (n, p, &lo, &hi, &frac);
  a = rate ? 1000.0 / q[0].value : q[0].value;
  b = rate ? 1000.0 / q[1].value : q[1].value;
  if (lo == hi)
    return a;
  return a + frac * (b - a);
}

/* The ranks (0-based, ascending rates) of the 95% interval of the median
 * rate @median of @n rates, from one pass over the steps in time order
 * for their autocorrelation; FALSE when they are too few. */
static gboolean
median_ranks (Source *src, Stream stream, double median, guint64 n, guint64 *lo, guint64 *hi)
{
  TachStatsSigns signs;
  TachSample s;

  tach_stats_signs_init (&signs, median);
  source_rewind (src);
  while (source_next (src, &s))
    {
      double v;

      if (stream_value (&s, stream, &v))
        tach_stats_signs_add (&signs, 1000.0 / v);
    }
  return tach_stats_median_ranks (n, tach_stats_signs_inflation (&signs), lo, hi);
}

static void
summary_compute (Source *src, guint64 items_per_step, double flops_per_step,
                 double device_peak_flops, TachSummary *out)
{
  double first_losses[LOSS_WINDOW], last_losses[LOSS_WINDOW];
  KeyBits bits[N_STREAMS];
  guint n = 0, n_measured = 0, n_rates = 0, n_device = 0, n_calls = 0;
  double warm_end_s = 0.0;
  gboolean device_clock;
  Stream rate_stream;
  double step_sum = 0.0, feed = 0.0, compute = 0.0, sync = 0.0, host = 0.0;
  double comm = 0.0, pack_ms = 0.0, imbalance = 0.0;
  gboolean ranked = FALSE;
  guint window;
  guint64 lo, hi;
  TachSample s;

  memset (out, 0, sizeof *out);
  out->steps_per_s_lo = out->steps_per_s_hi = NAN;
  out->machine_busy = NAN;
  out->threads_asked = out->threads_fewest = out->threads_fewer_share = NAN;
  out->prefill_ms = out->decode_tokens_per_s = NAN;
  out->param_bytes = out->optimizer_bytes = out->activation_bytes = out->kv_cache_bytes = NAN;
  out->packed_weight_bytes = NAN;
  out->held_param_bytes = out->held_grad_bytes = out->held_state_bytes = NAN;
  out->held_peak_bytes = NAN;
  out->weak_scaling = out->weak_scaling_lo = out->weak_scaling_hi = NAN;
  out->strong_scaling = out->strong_scaling_lo = out->strong_scaling_hi = NAN;
  out->items_unit = "samples/s";
  out->flops_per_step = flops_per_step;
  out->test_accuracy = NAN;
  out->eval_s = NAN;
  for (guint k = 0; k < N_STREAMS; k++)
    bits[k] = (KeyBits) { G_MAXUINT64, 0 };

  /* One pass for the counts, sums and loss windows (the last window as a
   * ring); the percentiles need another. */
  source_rewind (src);
  while (source_next (src, &s))
    {
      double v;

      n++;
      out->wall_s = s.wall_s;
      if (s.warmup)
        {
          warm_end_s = MAX (warm_end_s, s.wall_s);
          continue;
        }
      if (n_measured < LOSS_WINDOW)
        first_losses[n_measured] = s.loss;
      last_losses[n_measured % LOSS_WINDOW] = s.loss;
      n_measured++;
      if (s.device_step_ms > 0.0 && isfinite (s.device_step_ms))
        n_device++;
      for (Stream k = 0; k < N_STREAMS; k++)
        if (stream_value (&s, k, &v) && (k != STREAM_DEVICE_MS || !isnan (v)))
          key_bits_add (&bits[k], sort_key (v));
      if (isfinite (s.api_calls))
        n_calls++;
      if (s.step_ms > 0.0 && isfinite (s.step_ms))
        {
          n_rates++;
          step_sum += s.step_ms;
          add_phase (&feed, s.feed_ms);
          add_phase (&compute, s.compute_ms);
          add_phase (&sync, s.sync_ms);
          add_phase (&host, s.host_ms);
          add_phase (&comm, s.comm_ms);
          add_phase (&pack_ms, s.pack_ms);
          add_phase (&imbalance, s.imbalance_ms);
          ranked = ranked || !isnan (s.comm_ms);
        }
    }
  /* One clock for every rate of the run, never a mixture. */
  device_clock = n_measured > 0 && n_device == n_measured;
  out->rate_clock = device_clock ? "device" : "host";
  rate_stream = device_clock ? STREAM_DEVICE_MS : STREAM_STEP_MS;

  if (MAX (n_rates, n_calls) < sort_limit)
    {
      g_autofree double *rates = g_new (double, MAX (MAX (n_rates, n_calls), 1));
      guint r = 0, c = 0;

      source_rewind (src);
      while (source_next (src, &s))
        {
          double v;

          if (stream_value (&s, STREAM_CALLS, &v))
            rates[c++] = v;
        }
      qsort (rates, c, sizeof (double), compare_doubles);
      out->api_calls_per_step = c > 0 ? percentile (rates, c, 0.5) : NAN;
      source_rewind (src);
      while (source_next (src, &s))
        {
          double v;

          if (stream_value (&s, rate_stream, &v))
            rates[r++] = 1000.0 / v;
        }
      qsort (rates, r, sizeof (double), compare_doubles);
      out->steps_per_s_median = percentile (rates, r, 0.5);
      out->steps_per_s_p10 = percentile (rates, r, 0.1);
      out->steps_per_s_p90 = percentile (rates, r, 0.9);
      if (r > 0 && median_ranks (src, rate_stream, out->steps_per_s_median, r, &lo, &hi))
        {
          out->steps_per_s_lo = rates[lo];
          out->steps_per_s_hi = rates[hi];
        }
    }
  else
    {
      static const double ps[] = { 0.5, 0.1, 0.9 };
      Query queries[MAX_QUERIES];
      guint n_queries = 0;

      for (guint p = 0; p < G_N_ELEMENTS (ps) && n_rates > 0; p++)
        add_percentile_queries (queries, &n_queries, rate_stream, n_rates, ps[p], TRUE);
      if (n_calls > 0)
        add_percentile_queries (queries, &n_queries, STREAM_CALLS, n_calls, 0.5, FALSE);
      select_values (src, queries, n_queries, bits);
      out->steps_per_s_median = percentile_from_queries (queries + 0, n_rates, 0.5, TRUE);
      out->steps_per_s_p10 = percentile_from_queries (queries + 2, n_rates, 0.1, TRUE);
      out->steps_per_s_p90 = percentile_from_queries (queries + 4, n_rates, 0.9, TRUE);
      out->api_calls_per_step = n_calls > 0
                                ? percentile_from_queries (queries + (n_rates > 0 ? 6 : 0),
                                                           n_calls, 0.5, FALSE)
                                : NAN;
      /* The interval's ranks are known once the median is: a second
       * selection (the step times' order is the rates' reversed). */
      if (n_rates > 0
          && median_ranks (src, rate_stream, out->steps_per_s_median, n_rates, &lo, &hi))
        {
          queries[0] = (Query) { .stream = rate_stream, .rank = n_rates - 1 - lo };
          queries[1] = (Query) { .stream = rate_stream, .rank = n_rates - 1 - hi };
          select_values (src, queries, 2, bits);
          out->steps_per_s_lo = 1000.0 / queries[0].value;
          out->steps_per_s_hi = 1000.0 / queries[1].value;
        }
    }

  out->steps = n_measured;
  out->e2e_steps_per_s = n_measured > 0 && out->wall_s > warm_end_s
                         ? (double) n_measured / (out->wall_s - warm_end_s) : NAN;
  out->items_per_s = (double) items_per_step * out->steps_per_s_median;
  out->items_per_s_lo = (double) items_per_step * out->steps_per_s_lo;
  out->items_per_s_hi = (double) items_per_step * out->steps_per_s_hi;

  /* Two windows that never overlap, so that a short run's first and final
   * losses are two different averages; a single step is only a final one. */
  window = MIN (LOSS_WINDOW, n_measured / 2);
  out->first_loss = window > 0 ? mean_loss (first_losses, 0, window) : NAN;
  if (n_measured == 1)
    window = 1;
  out->final_loss = window > 0 ? mean_loss (last_losses, n_measured - window, window) : NAN;
  out->loss_window_steps = window;

  if (step_sum > 0.0)
    {
      out->feed_share = feed / step_sum;
      out->compute_share = compute / step_sum;
      out->sync_share = sync / step_sum;
      out->host_share = host / step_sum;
    }
  else
    out->feed_share = out->compute_share = out->sync_share = out->host_share = NAN;
  out->comm_share = ranked && step_sum > 0.0 ? comm / step_sum : NAN;
  out->pack_share = ranked && step_sum > 0.0 ? pack_ms / step_sum : NAN;
  out->imbalance_share = ranked && step_sum > 0.0 ? imbalance / step_sum : NAN;
  out->slowest_rank = NAN;
  out->rank_compute_spread = NAN;

  out->achieved_flops = flops_per_step * out->steps_per_s_median;
  out->peak_share = device_peak_flops > 0.0 ? out->achieved_flops / device_peak_flops : NAN;
}

void
tach_summary_compute (const TachSample *samples, guint n, guint64 items_per_step,
                      double flops_per_step, double device_peak_flops, TachSummary *out)
{
  Source src = { .samples = samples, .n = n };

  summary_compute (&src, items_per_step, flops_per_step, device_peak_flops, out);
}

void
tach_summary_compute_store (const TachSampleStore *store, guint64 items_per_step,
                            double flops_per_step, double device_peak_flops, TachSummary *out)
{
  Source src = { .store = store };

  summary_compute (&src, items_per_step, flops_per_step, device_peak_flops, out);
}

void
tach_summary_add_requests (const TachSampleStore *store, guint64 request_steps,
                           guint64 tokens_per_step, TachSummary *out)
{
  Source src = { .store = store };
  Stream stream = g_strcmp0 (out->rate_clock, "device") == 0 ? STREAM_DEVICE_MS : STREAM_STEP_MS;
  g_autoptr(GArray) prefill = g_array_new (FALSE, FALSE, sizeof (double));
  double decode_ms = 0.0;
  guint64 decode_steps = 0;
  TachSample s;

  if (request_steps == 0)
    return;
  source_rewind (&src);
  while (source_next (&src, &s))
    {
      double v;

      if (!stream_value (&s, stream, &v) || !(v > 0.0 && isfinite (v)))
        continue;
      if (s.step % request_steps == 0)
        g_array_append_val (prefill, v);
      else
        {
          decode_ms += v;
          decode_steps++;
        }
    }
  /* A few prefills a run: their times sort in place (none: every
   * prefill was warm-up, and the array has no data to sort). */
  if (prefill->len > 0)
    qsort (prefill->data, prefill->len, sizeof (double), compare_doubles);
  out->prefill_ms = prefill->len > 0 ? percentile ((double *) (void *) prefill->data, prefill->len,
                                                   0.5)
                                     : NAN;
  out->decode_tokens_per_s = decode_ms > 0.0
                             ? (double) (decode_steps * tokens_per_step) / (decode_ms / 1000.0)
                             : NAN;
}

TachVerdict
tach_summary_compare (const TachSummary *a, const TachSummary *b, TachInterval *ratio,
                      gboolean *by_items)
{
  double per_step_a = a->items_per_s / a->steps_per_s_median;
  double per_step_b = b->items_per_s / b->steps_per_s_median;
  gboolean items = isfinite (per_step_a) && isfinite (per_step_b)
                   && fabs (per_step_a - per_step_b) > 1e-9 * MAX (per_step_a, per_step_b);
  TachInterval ia, ib;
  TachVerdict verdict;

  if (items)
    {
      ia = (TachInterval) { a->items_per_s, a->items_per_s_lo, a->items_per_s_hi };
      ib = (TachInterval) { b->items_per_s, b->items_per_s_lo, b->items_per_s_hi };
    }
  else
    {
      ia = (TachInterval) { a->steps_per_s_median, a->steps_per_s_lo, a->steps_per_s_hi };
      ib = (TachInterval) { b->steps_per_s_median, b->steps_per_s_lo, b->steps_per_s_hi };
    }
  if (by_items != NULL)
    *by_items = items;
  verdict = tach_interval_ratio (&ia, &ib, ratio);
  if (verdict == TACH_VERDICT_SIGNIFICANT && tach_summary_busy_apart (a->machine_busy, b->machine_busy))
    verdict = TACH_VERDICT_WITHIN_NOISE;
  return verdict;
}

static double
busy_or_idle (double busy)
{
  return isfinite (busy) ? busy : 0.0;
}

gboolean
tach_summary_busy_apart (double busy_a, double busy_b)
{
  busy_a = busy_or_idle (busy_a);
  busy_b = busy_or_idle (busy_b);
  return busy_a >= TACH_SUMMARY_BUSY_SHARE || busy_b >= TACH_SUMMARY_BUSY_SHARE
         || fabs (busy_a - busy_b) > TACH_SUMMARY_APART_BUSY_SPREAD;
}

char *
tach_summary_dup_busy_apart (double busy_a, double busy_b)
{
  if (!tach_summary_busy_apart (busy_a, busy_b))
    return NULL;
  /* Translators: a speed-up between two runs measured one after the other;
   * the shares of CPU time other processes took during each run. */
  return g_strdup_printf (_("not resolved: measured apart while the machine was busy "
                            "(%.0f%% vs %.0f%%)"),
                          100.0 * busy_or_idle (busy_a), 100.0 * busy_or_idle (busy_b));
}

/* A size in bytes as GLib words it ("1.5 MiB"); one the engine did not
 * observe (NaN) reads as a dash, as the summary's other figures do. */
static char *
dup_size (double bytes)
{
  if (!isfinite (bytes) || bytes < 0)
    return g_strdup ("–");
  return g_format_size_full ((guint64) bytes, G_FORMAT_SIZE_IEC_UNITS);
}

/* @format's line with four sizes, each as dup_size words it. */
static void
append_sizes (GString *text, const char *format, double a, double b, double c, double d)
{
  g_autofree char *sa = dup_size (a);
  g_autofree char *sb = dup_size (b);
  g_autofree char *sc = dup_size (c);
  g_autofree char *sd = dup_size (d);

  g_string_append_printf (text, format, sa, sb, sc, sd);
}

/* One piece for the CLI's summary and the window's run details, so that the
 * two say a run's generation and memory figures in the same words. */
char *
tach_summary_dup_generation_memory (const TachSummary *s)
{
  GString *text = g_string_new (NULL);

  /* Generation in requests: its prefills and its decoding apart. */
  if (!isnan (s->prefill_ms) || !isnan (s->decode_tokens_per_s))
    {
      g_autofree char *decode = isfinite (s->decode_tokens_per_s)
                                ? g_strdup_printf ("%.1f", s->decode_tokens_per_s)
                                : g_strdup ("–");

      if (isnan (s->prefill_ms))
        g_string_append (text, _("  prefill      not measured: every prompt's prefill fell in the "
                                 "warm-up (raise --steps or lower --new-tokens)\n"));
      else
        g_string_append_printf (text, _("  prefill      %.3f ms to the first token (median over "
                                        "the prompts)\n"), s->prefill_ms);
      g_string_append_printf (text, _("  decode       %s tokens/s (the other steps' tokens over "
                                      "their time)\n"), decode);
    }
  if (s->peak_memory_bytes > 0)
    {
      g_autofree char *memory = g_format_size_full (s->peak_memory_bytes, G_FORMAT_SIZE_IEC_UNITS);

      g_string_append_printf (text, _("  memory       %s peak\n"), memory);
    }
  if (!isnan (s->param_bytes))
    {
      g_autofree char *params = dup_size (s->param_bytes);
      g_autofree char *optimizer = dup_size (s->optimizer_bytes);
      g_autofree char *activations = dup_size (s->activation_bytes);
      g_autofree char *kv = dup_size (s->kv_cache_bytes);
      g_autofree char *packed = dup_size (s->packed_weight_bytes);

      /* Translators: what the model's memory holds, after the peak. */
      if (!(s->packed_weight_bytes > 0.0))
        g_string_append_printf (text, _("               parameters %s, optimiser %s, activations "
                                        "%s, KV cache %s\n"),
                                params, optimizer, activations, kv);
      else
        /* Translators: as above, with the copies of the weights that
         * decoding's products run from. */
        g_string_append_printf (text, _("               parameters %s, optimiser %s, activations "
                                        "%s, KV cache %s, packed weights %s\n"),
                                params, optimizer, activations, kv, packed);
    }
  return g_string_free (text, FALSE);
}

char *
tach_summary_dup_held (const TachSummary *s)
{
  GString *text = g_string_new (NULL);

  if (isfinite (s->held_peak_bytes))
    /* Translators: what one rank (rank 0, whose shard is never cut short)
     * holds for the parameters, and the most it held; shard=grads shrinks
     * the optimiser's part. */
    append_sizes (text, _("  held         parameters %s, gradients %s, optimiser state %s a "
                          "rank, %s at most\n"),
                  s->held_param_bytes, s->held_grad_bytes, s->held_state_bytes,
                  s->held_peak_bytes);
  return g_string_free (text, FALSE);
}

/* Whether @s ran on fewer threads than it had for long enough to say. */
static gboolean
fell_to_fewer (const TachSummary *s)
{
  return isfinite (s->threads_fewest) && isfinite (s->threads_asked)
         && s->threads_fewest < s->threads_asked
         && s->threads_fewer_share >= TACH_SUMMARY_FEWER_THREADS_SHARE;
}

/* A figure of a busy machine is no figure of the configurations: pairing
 * by round cancels a load that slows both alike, not one that took a
 * thread from one of them (the interval is then tight and the speed-up
 * another machine's).  The words say what happened and what to do. */
char *
tach_summary_dup_load_caveat (const char *name_a, const TachSummary *a, const char *name_b,
                              const TachSummary *b)
{
  double busy = MAX (busy_or_idle (a->machine_busy), busy_or_idle (b->machine_busy));
  gboolean fell_a = fell_to_fewer (a), fell_b = fell_to_fewer (b);

  if (fell_a && fell_b)
    /* Translators: two runs' names, each with the threads it ran on of
     * those it had; the share of CPU time other processes took. */
    return g_strdup_printf (_("%s ran on %.0f of %.0f threads and %s on %.0f of %.0f because "
                              "other processes took %.0f%% of the CPU: this speed-up is for a "
                              "busy machine; rerun idle to compare"),
                            name_a, a->threads_fewest, a->threads_asked, name_b,
                            b->threads_fewest, b->threads_asked, 100.0 * busy);
  if (fell_a || fell_b)
    {
      const TachSummary *s = fell_a ? a : b;

      return g_strdup_printf (g_dngettext (GETTEXT_PACKAGE,
                                           "%s ran on %u thread of %u because other processes "
                                           "took %.0f%% of the CPU: this speed-up is for a busy "
                                           "machine; rerun idle to compare",
                                           "%s ran on %u threads of %u because other processes "
                                           "took %.0f%% of the CPU: this speed-up is for a busy "
                                           "machine; rerun idle to compare",
                                           (gulong) s->threads_fewest),
                              fell_a ? name_a : name_b, (guint) s->threads_fewest,
                              (guint) s->threads_asked, 100.0 * busy);
    }
  if (busy >= TACH_SUMMARY_BUSY_SHARE)
    return g_strdup_printf (_("%s and %s ran while other processes took %.0f%% of the CPU: this "
                              "speed-up is for a busy machine; rerun idle to compare"),
                            name_a, name_b, 100.0 * busy);
  return NULL;
}
