/* tach-sample-store.h: a run's samples, kept compactly (private to the
 * engine).
 *
 * A TachSample is 120 bytes; a run of ten million steps must not keep a
 * gigabyte.  The store keeps each step in a few bytes, column by column in
 * chunks of up to 4096 consecutive steps:
 *   - step_ms, device_step_ms, compute_ms, loss, accuracy, api_calls as
 *     32-bit floats (a loss is a float on the device already, a call count
 *     is an integer far below 2^24, and a float keeps a time to 0.06 ppm,
 *     so that compute stays within the step it is part of);
 *   - the smaller phases (feed, sync, host; comm, pack, imbalance of
 *     data-parallel ranks) in 16 bits each: a float
 *     with 10 bits of mantissa and 6 of exponent, kept to 0.05% over
 *     2^-31..2^31 ms.  A chunk whose phase does not fit (a negative value,
 *     from a file) keeps that phase as a float;
 *   - the step number and wall_s are not kept per step: a chunk's steps are
 *     consecutive, and each step starts where the previous one ended, so
 *     wall_s is the previous step's plus this step_ms (a sample that does
 *     not follow, e.g. from a file, starts a new chunk);
 *   - the rank is the store's, one rank's samples a store;
 *   - a column no sample of a chunk has (all NaN, such as accuracy without
 *     metrics=accuracy, or the device clock on the CPU) takes no space.
 * So the CPU's generate step costs 18 bytes and a GPU training step with
 * accuracy, the device clock and call counts 30.
 *
 * What the store gives back is the sample as kept (each value rounded as
 * above, once, when it is appended): every reader (summaries, charts, CSV,
 * TensorBoard, Explain) sees the same numbers.
 *
 * Not thread-safe: the run's lock guards its store.
 */
#pragma once

#include "tach-engine.h"

G_BEGIN_DECLS

typedef struct _TachSampleStore TachSampleStore;

TachSampleStore *tach_sample_store_new        (void);
void             tach_sample_store_free       (TachSampleStore *store);
/* Keeps @sample (rounded as the top of the file says). */
void             tach_sample_store_append     (TachSampleStore *store, const TachSample *sample);
guint            tach_sample_store_get_length (const TachSampleStore *store);
/* Whose samples these are (data-parallel ranks; 0 by default): every
 * sample read back carries it. */
void             tach_sample_store_set_rank   (TachSampleStore *store, guint rank);
guint            tach_sample_store_get_rank   (const TachSampleStore *store);
/* Bytes the store holds, for tests and benchmarks. */
gsize            tach_sample_store_get_bytes  (const TachSampleStore *store);
/* Appends samples [@from, @from + @n) (those that exist) to @out (element
 * type TachSample); returns how many. */
guint            tach_sample_store_copy       (const TachSampleStore *store, guint from, guint n,
                                               GArray *out);

/* Sets the loss (and, where @accuracy is not NULL, the accuracy) of
 * samples [@from, @from + @n), which exist, to @loss[0..n) (@accuracy[0..n)),
 * rounded as appending them would. */
void             tach_sample_store_set_losses (TachSampleStore *store, guint from, guint n,
                                               const float *loss, const float *accuracy);
/* Moves every sample of @src to the end of @dst, as kept (no copy: the
 * chunks change hands), leaving @src empty. */
void             tach_sample_store_move       (TachSampleStore *dst, TachSampleStore *src);

/* Reads the samples in order from some index on, without copying them all. */
typedef struct {
  const TachSampleStore *store;  /* borrowed */
  guint   chunk;
  guint   pos;                   /* in the chunk */
  double  wall_s;                /* the sample's before pos; at pos 0 its own */
} TachSampleIter;

void     tach_sample_iter_init (TachSampleIter *iter, const TachSampleStore *store, guint from);
gboolean tach_sample_iter_next (TachSampleIter *iter, TachSample *out);

/* Summary statistics of the store's samples, equal to tach_summary_compute
 * over the same samples copied out (tach-summary.c). */
/* Generation in requests of @request_steps steps (a prefill, then
 * decoding): out->prefill_ms, the median of the prefill steps' times on
 * out->rate_clock's clock, and out->decode_tokens_per_s, the other
 * measured steps' tokens (@tokens_per_step each) over their summed time.
 * Nothing when @request_steps is 0. */
void     tach_summary_add_requests (const TachSampleStore *store, guint64 request_steps,
                                    guint64 tokens_per_step, TachSummary *out);
void     tach_summary_compute_store (const TachSampleStore *store, guint64 items_per_step,
                                     double flops_per_step, double device_peak_flops,
                                     TachSummary *out);
/* Below this many values a percentile sorts a copy of them; from it on it
 * finds them by radix selection over the samples, in constant memory.
 * Both give the same numbers; tests lower it to hold them to that.
 * Returns the previous limit. */
guint    tach_summary_set_sort_limit (guint limit);

G_END_DECLS
