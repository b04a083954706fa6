/* tach-synthetic.h: seeded synthetic sequence data for the bilstm workload.
 *
 * Sample i has x of shape [T, F], x[t, f] ~ N(0, 1) drawn from the
 * counter-based generator on the DATA stream (element i * T * F + t * F + f),
 * in float64 as the reported numpy source was.  Its label is 0 or 1:
 *
 *   teacher  a fixed seeded function of the inputs that an LSTM can learn:
 *            1 when u . mean_t x[t, :] > 0 for a fixed random unit vector u
 *            over all F features (TEACHER stream), else 0.  A direction
 *            spread over every feature is found fastest by Adam, whose
 *            updates move all weights at once: the loss falls on unseen
 *            batches within a few dozen steps
 *   random   a fair coin per sample (LABELS stream), nothing learnable, as in
 *            the report
 *
 * A sample depends only on (seed, i), so any feed mode, thread or order
 * sees the same numbers.  fill() only reads immutable state and may run on
 * any thread.
 */
#pragma once

#include "tach-feeder.h"

G_BEGIN_DECLS

typedef struct _TachSyntheticSeq TachSyntheticSeq;

TachSyntheticSeq *tach_synthetic_seq_new (guint64 seed, int T, int F, TachLabels labels);
/* Describes @n_samples samples of @seq as a dataset (x F32, one F32 label
 * per sample).  @seq must outlive the dataset. */
void              tach_synthetic_seq_dataset (TachSyntheticSeq *seq, guint64 n_samples,
                                              TachDataset *out);
/* Fills one sample directly (x: T*F doubles; label: one float). */
void              tach_synthetic_seq_fill (TachSyntheticSeq *seq, guint64 i, double *x,
                                           float *label);
void              tach_synthetic_seq_free (TachSyntheticSeq *seq);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachSyntheticSeq, tach_synthetic_seq_free)

G_END_DECLS
