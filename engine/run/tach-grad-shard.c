/* tach-grad-shard.c: sharded data parallelism over MPI, shard=grads
 * (DeepSpeed's ZeRO stage 2), on the reducer's buckets.
 *
 * Each bucket (tach-grad-reducer.c cuts them as for the all-reduce, in
 * the same order) is reduce-scattered instead of all-reduced:
 * MPI_Ireduce_scatter_block sums it over the ranks and leaves rank r the
 * r-th of N equal chunks, in the shard's own buffer (the chunks of every
 * bucket one after another), where it is divided by N as the all-reduce's
 * sum is.  A bucket whose floats do not split into N equal chunks is
 * padded: the block reads up to N - 1 floats past its end, which are the
 * gradient buffer's slack (zeros, TachGradSyncHook.slack) or the start of
 * a bucket already complete (launches go in bucket order, each complete
 * one after the last), and their sum lands past the bucket in the last
 * chunk, where nothing reads it.  The run's note says which buckets were
 * padded.
 *
 * The optimizer (models/tach-params.c) then updates only the ranges this
 * rank owns, one per bucket (its chunk, cut at the bucket's end), with
 * optimizer state for those floats alone: Adam's m and v shrink to about
 * 1/N, the memory that ZeRO-2 saves.  The gradient buffer stays whole:
 * backward writes every gradient in place, and this path adds the shard
 * (1/N more).  Last, every bucket's updated parameters are all-gathered
 * in place (MPI_Iallgatherv with each rank's owned count, so the padding
 * never travels back), every rank launching them in bucket order and
 * waiting for all of them, so that every rank holds every parameter for
 * the next forward and the end-of-run check that the ranks agree.
 *
 * Each float's sum runs over the same N addends as the all-reduce's, in
 * an order MPI's algorithms choose: with 2 ranks, a + b either way (the
 * same bits as shard=none); with more, within float summation order.
 * The optimizer's arithmetic per float is the same as unsharded.
 *
 * Threads: the engine thread (the progress thread tests the
 * reduce-scatters' requests as it tests the all-reduces').
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-grad-reducer-private.h"

static const TachGradShard *
hook_shard (TachGradSyncHook *hook)
{
  TachGradReducer *self = (TachGradReducer *) hook;

  return self->shard_grad != NULL ? &self->shard : NULL;
}

#ifdef HAVE_MPI

int
tach_grad_shard_launch (TachGradReducer *self, Bucket *b, const float *grad)
{
  return MPI_Ireduce_scatter_block (grad + b->start, self->shard_grad + b->state, (int) b->chunk,
                                    MPI_FLOAT, MPI_SUM, self->ranks->comm, &b->req);
}

/* Every bucket's updated parameters to every rank: launched in bucket
 * order, then waited for in the same order. */
static void
hook_gather (TachGradSyncHook *hook, float *params)
{
  TachGradReducer *self = (TachGradReducer *) hook;
  guint size = tach_ranks_size (self->ranks);
  TachGradStepStats *st;
  GError *error = NULL;
  double t0;

  if (!tach_backend_ok (self->be) || self->buckets == NULL)
    return;
  st = tach_grad_reducer_current (self);
  t0 = tach_ranks_now_ms ();
  for (guint i = 0; i < self->buckets->len && error == NULL; i++)
    {
      Bucket *b = &g_array_index (self->buckets, Bucket, i);

      tach_ranks_mpi_check (MPI_Iallgatherv (MPI_IN_PLACE, 0, MPI_DATATYPE_NULL,
                                             params + b->start, b->gather_counts,
                                             b->gather_counts + size, MPI_FLOAT,
                                             self->ranks->comm, &b->gather),
                            "MPI_Iallgatherv", &error);
      st->bytes += (double) (b->end - b->start) * sizeof (float);
      st->collectives++;
    }
  st->comm_ms += tach_ranks_now_ms () - t0;
  /* Each one a flight, from the launches to the end of its wait. */
  for (guint i = 0; i < self->buckets->len && error == NULL; i++)
    {
      Bucket *b = &g_array_index (self->buckets, Bucket, i);
      TachGradFlight f = {
        .step = self->step, .bucket = i, .kind = TACH_GRAD_FLIGHT_ALL_GATHER,
        .start_ms = t0 - self->t_begin,
        .bytes = (double) (b->end - b->start) * sizeof (float),
      };

      if (!tach_ranks_wait (self->ranks, &b->gather, "parameter all-gather", self->step,
                            &st->comm_ms, &error))
        break;
      f.dur_ms = MAX (0.0, tach_ranks_now_ms () - t0);
      tach_grad_reducer_add_flight (self, &f);
    }
  if (error != NULL)
    tach_backend_set_error (self->be, error);
}

#else

static void
hook_gather (TachGradSyncHook *hook, float *params)
{
  (void) hook;
  (void) params;
}

#endif /* HAVE_MPI */

void
tach_grad_shard_init (TachGradReducer *self, const TachConfig *config)
{
  guint size = self->ranks != NULL ? tach_ranks_size (self->ranks) : 1;

  self->hook.shard = hook_shard;
  self->hook.gather = hook_gather;
  self->hook.slack = size - 1;
  if (config->shard == TACH_SHARD_ALL)
    tach_grad_shard_all_init (self, config);
}

/* "grads, overlap: 3 reduce-scatters and 3 all-gathers a step: 0.04 1.05
 * 0.33 MB, each rank updating 1/2 of each; 2 of them padded to a multiple
 * of 2 floats", the run's note. */
static char *
dup_layout (TachGradReducer *self, guint size, guint padded)
{
  GString *text = g_string_new (NULL);
  g_autofree char *keeps = g_strdup_printf (_("each rank updating 1/%u of each"), size);

  g_string_append_printf (text, "grads, %s: ", tach_knob (TACH_KNOB_GRAD_SYNC)->values[self->mode]);

  g_string_append_printf (text,
                          g_dngettext (GETTEXT_PACKAGE,
                                       "%u reduce-scatter and all-gather a step:",
                                       "%u reduce-scatters and all-gathers a step:",
                                       self->buckets->len),
                          self->buckets->len);
  tach_grad_shard_append_layout (self, text, keeps, NULL, size, padded);
  return g_string_free (text, FALSE);
}

void
tach_grad_shard_layout (TachGradReducer *self)
{
  guint size = tach_ranks_size (self->ranks), rank = tach_ranks_rank (self->ranks);
  guint n = self->buckets->len, padded = 0;
  size_t state = 0;
  g_autofree char *note = NULL;

  /* shard=all: the units' buckets instead of grad-sync's. */
  tach_grad_shard_all_cut (self);
  n = self->buckets->len;
  self->shard_ranges = g_new0 (size_t, 3 * MAX (n, 1));
  for (guint i = 0; i < n; i++)
    {
      Bucket *b = &g_array_index (self->buckets, Bucket, i);
      size_t count = b->end - b->start, own;

      b->chunk = (count + size - 1) / size;
      b->state = state;
      if (b->chunk * size > G_MAXINT)
        {
          tach_backend_fail (self->be, TACH_ERROR_UNSUPPORTED,
                             _("a gradient bucket of %zu floats is more than one MPI call"
                               " takes: lower {bucket-mb}"), count);
          return;
        }
      if (b->chunk * size != count)
        padded++;
      /* The all-gather's counts, then displacements: each rank's chunk,
       * cut at the bucket's end. */
      b->gather_counts = g_new0 (int, 2 * size);
      for (guint r = 0; r < size; r++)
        {
          size_t from = MIN ((size_t) r * b->chunk, count);

          b->gather_counts[r] = (int) MIN (b->chunk, count - from);
          b->gather_counts[size + r] = (int) from;
        }
      own = (size_t) b->gather_counts[rank];
      self->shard_ranges[i] = b->start + (size_t) b->gather_counts[size + rank];
      self->shard_ranges[n + i] = own;
      self->shard_ranges[2 * n + i] = state;
      state += b->chunk;
    }
  self->shard_grad = g_try_new0 (float, MAX (state, 1));
  if (self->shard_grad == NULL)
    {
      tach_backend_fail (self->be, TACH_ERROR_OUT_OF_MEMORY,
                         _("out of host memory for the gradients' shard (%zu bytes)"),
                         (gsize) (state * sizeof (float)));
      return;
    }
  self->shard = (TachGradShard) {
    .n = n, .offset = self->shard_ranges, .count = self->shard_ranges + n,
    .state = self->shard_ranges + 2 * n, .state_total = state, .grad = self->shard_grad,
  };
  note = self->unit_ranges != NULL ? tach_grad_shard_all_dup_layout (self, size, padded)
                                    : dup_layout (self, size, padded);
  tach_backend_note_algorithm (self->be, "gradient shards", note);
}

void
tach_grad_shard_clear (TachGradReducer *self)
{
  if (self->buckets != NULL)
    for (guint i = 0; i < self->buckets->len; i++)
      g_clear_pointer (&g_array_index (self->buckets, Bucket, i).gather_counts, g_free);
  g_clear_pointer (&self->shard_grad, g_free);
  g_clear_pointer (&self->shard_ranges, g_free);
  tach_grad_shard_all_clear (self);
}
