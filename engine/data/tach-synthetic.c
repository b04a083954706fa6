/* tach-synthetic.c: seeded synthetic sequences with teacher or random labels,
 * and the dataset's size a configuration asks for (synthetic data's
 * default: TACH_DEFAULT_BATCHES global batches). */
#include <math.h>

#include "tach-engine.h"
#include "tach-rand.h"
#include "tach-synthetic.h"

guint64
tach_config_get_samples (const TachConfig *config)
{
  if (config->samples > 0)
    return config->samples;
  /* Global batches: with ranks, each global batch is every rank's (and
   * every micro-batch's). */
  return (guint64) TACH_DEFAULT_BATCHES * MAX (config->batch, 1) * MAX (config->ranks, 1)
         * tach_config_get_accumulate (config);
}

struct _TachSyntheticSeq {
  guint64    seed;
  int        T, F;
  TachLabels labels;
  double    *teacher;     /* [F] unit vector */
};

TachSyntheticSeq *
tach_synthetic_seq_new (guint64 seed, int T, int F, TachLabels labels)
{
  TachSyntheticSeq *seq = g_new0 (TachSyntheticSeq, 1);
  double norm = 0.0;

  seq->seed = seed;
  seq->T = T;
  seq->F = F;
  seq->labels = labels;
  seq->teacher = g_new (double, MAX (F, 1));
  for (int f = 0; f < F; f++)
    {
      seq->teacher[f] = tach_rand_normal (seed, TACH_RAND_COUNTER (TACH_RAND_STREAM_TEACHER, 0), f);
      norm += seq->teacher[f] * seq->teacher[f];
    }
  norm = sqrt (norm);
  for (int f = 0; f < F && norm > 0.0; f++)
    seq->teacher[f] /= norm;
  return seq;
}

void
tach_synthetic_seq_free (TachSyntheticSeq *seq)
{
  if (seq == NULL)
    return;
  g_free (seq->teacher);
  g_free (seq);
}

void
tach_synthetic_seq_fill (TachSyntheticSeq *seq, guint64 i, double *x, float *label)
{
  guint64 counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_DATA, 0);
  size_t n = (size_t) seq->T * seq->F;
  guint64 base = i * n;

  tach_rand_normal_fill (seq->seed, counter, base, n, x);

  if (seq->labels == TACH_LABELS_RANDOM)
    {
      guint64 c = TACH_RAND_COUNTER (TACH_RAND_STREAM_LABELS, 0);

      *label = tach_rand_uniform (seq->seed, c, i) < 0.5f ? 0.0f : 1.0f;
    }
  else
    {
      double p = 0.0;

      for (int t = 0; t < seq->T; t++)
        for (int f = 0; f < seq->F; f++)
          p += seq->teacher[f] * x[(size_t) t * seq->F + f];
      *label = p > 0.0 ? 1.0f : 0.0f;
    }
}

static void
dataset_fill (gpointer data, guint64 i, double *x, void *y)
{
  tach_synthetic_seq_fill (data, i, x, y);
}

void
tach_synthetic_seq_dataset (TachSyntheticSeq *seq, guint64 n_samples, TachDataset *out)
{
  *out = (TachDataset) {
    .n_samples = n_samples,
    .x_elems = (size_t) seq->T * seq->F,
    .x_type = TACH_DTYPE_F32,
    .y_elems = 1,
    .y_type = TACH_DTYPE_F32,
    .fill = dataset_fill,
    .data = seq,
  };
}
