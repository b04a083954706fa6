/* tach-grad-reducer.c: averages a run's gradients over the ranks before
 * each update, as the grad-sync, bucket-mb and grad-compress knobs say
 * (tach-ranks.h describes the modes).
 *
 * Every mode cuts the flat gradient buffer into buckets, contiguous
 * ranges of it: per-tensor one bucket per parameter tensor, in the order
 * the model declared them; fused one bucket of the whole buffer; overlap
 * DDP's buckets, filled in reverse order of the tensors (the order backward
 * produces them) up to bucket-mb, the first one at most 1 MB.  A bucket is
 * all-reduced (a sum) once all its tensors are ready, always in bucket
 * order, so that every rank launches the same collectives in the same
 * order; then divided by the number of ranks, the same division in every
 * mode.  With grad-compress the sum travels as fp16 or bf16 (a user
 * MPI_Op adds them, each partial sum rounded to the wire's precision, as
 * NCCL does on such buffers) and is widened back.  Under shard=grads the
 * same buckets are reduce-scattered instead, each rank keeping its chunk
 * (tach-grad-shard.c says the rest).
 *
 * The backend's grad_sync hook (TachBackend.grad_sync) is the reducer's
 * way in: tach_params_alloc hands it the tensors' layout, backward calls
 * ready as each tensor's gradient is written (it launches the buckets that
 * are complete and, under overlap, polls the ones in flight with MPI_Test:
 * Open MPI's only progress), and tach_params_update calls reduce before
 * the optimizer.  The gradients are the backend's memory: host memory on
 * the CPU (TACH_BACKEND_CAP_HOST_MEMORY), which this file sums over MPI;
 * a device's memory, which tach-grad-device.c sums with the backend's own
 * collectives (NCCL on CUDA), the buckets and their order being the same.
 *
 * Open MPI's TCP transport moves a large message's fragments only inside
 * MPI calls, and backward's layers can be a few long library calls (the
 * cnn's convolutions), so tests between layers (grad-progress=poll) can
 * leave a bucket sitting in flight through most of backward.
 * grad-progress=thread starts a progress thread with the reducer: while
 * buckets fly (launched, not all complete) it tests them every PROGRESS_US
 * and sleeps in between.  MPI stays MPI_THREAD_SERIALIZED (tach-ranks.c):
 * the thread calls MPI only under the reducer's lock, and the engine
 * thread takes the lock for its own MPI calls while buckets fly (the
 * ready hook: launches and the heartbeat); at reduce it clears `flying`
 * under the lock, after which the thread makes no MPI call until the next
 * step's first launch, and the waits run as under poll.
 *
 * Each step's figures (TachGradStepStats) are kept by step, and each
 * all-reduce's flight (launch to completion, TachGradFlight) in a store
 * bounded as the trace is (tach-strided.h), for the trace's tracks.
 *
 * Threads: the engine thread; the progress thread under grad-progress=thread.
 */
#include <math.h>
#include <string.h>

#include <inttypes.h>
#include <glib/gi18n-lib.h>

#include "tach-grad-reducer-private.h"

/* DDP starts with a small bucket (1 MB), so that communication starts
 * early in backward (pytorch docs/source/notes/ddp.rst). */
#define FIRST_BUCKET_BYTES (1024 * 1024)
/* At most this many flights are kept (the trace's bound, tach-strided.h). */
#define MAX_FLIGHTS 200000
/* The progress thread's sleep between tests of the buckets in flight:
 * Open MPI's TCP transport fills and drains the socket buffers on each
 * test, and 100 us at 1 Gbit/s is 12.5 kB, less than those buffers hold,
 * while a wake-up costs a few microseconds of a core. */
#define PROGRESS_US 100

/* ----------------------------------------------------- fp16 and bf16 */

/* Round to nearest even, as a cast on the device would (tach-ranks.h).
 * Outside HAVE_MPI: the GPU tests check the device's casts against them. */
guint16
tach_grad_float_to_bf16 (float f)
{
  guint32 u;

  memcpy (&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (guint16) ((u >> 16) | 0x40);   /* a quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (guint16) (u >> 16);
}

float
tach_grad_bf16_to_float (guint16 h)
{
  guint32 u = (guint32) h << 16;
  float f;

  memcpy (&f, &u, sizeof f);
  return f;
}

guint16
tach_grad_float_to_fp16 (float f)
{
  guint32 u, sign, mag;

  memcpy (&u, &f, sizeof u);
  sign = (u >> 16) & 0x8000u;
  mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u)
    return (guint16) (sign | 0x7e00u);                  /* NaN */
  if (mag >= 0x477ff000u)
    return (guint16) (sign | 0x7c00u);                  /* rounds past 65504: inf */
  if (mag < 0x38800000u)
    {
      /* A subnormal half (or zero): scale into the 10-bit field by adding
       * 0.5, whose float addition rounds to nearest even for us. */
      float a, half = 0.5f;

      memcpy (&a, &mag, sizeof a);
      a += half;
      memcpy (&mag, &a, sizeof mag);
      return (guint16) (sign | (mag - 0x3f000000u));
    }
  /* Normal: rebias the exponent (127 -> 15) and round the 13 bits
   * dropped to nearest even. */
  mag += ((guint32) (15 - 127) << 23) + 0xfffu + ((mag >> 13) & 1u);
  return (guint16) (sign | (mag >> 13));
}

float
tach_grad_fp16_to_float (guint16 h)
{
  guint32 sign = (guint32) (h & 0x8000u) << 16;
  guint32 exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
  float f;

  if (exp == 0)
    {
      /* Zero or subnormal: man * 2^-24, exact in float. */
      f = ldexpf ((float) man, -24);
      return sign ? -f : f;
    }
  if (exp == 31)
    u = sign | 0x7f800000u | (man << 13);
  else
    u = sign | ((exp + 127 - 15) << 23) | (man << 13);
  memcpy (&f, &u, sizeof f);
  return f;
}

#ifdef HAVE_MPI

static void
set_error (TachGradReducer *self, GError *error)
{
  tach_backend_set_error (self->be, error);
}

static void
sum_fp16 (void *in, void *inout, int *len, MPI_Datatype *type)
{
  const guint16 *a = in;
  guint16 *b = inout;

  (void) type;
  for (int i = 0; i < *len; i++)
    b[i] = tach_grad_float_to_fp16 (tach_grad_fp16_to_float (a[i])
                                    + tach_grad_fp16_to_float (b[i]));
}

static void
sum_bf16 (void *in, void *inout, int *len, MPI_Datatype *type)
{
  const guint16 *a = in;
  guint16 *b = inout;

  (void) type;
  for (int i = 0; i < *len; i++)
    b[i] = tach_grad_float_to_bf16 (tach_grad_bf16_to_float (a[i])
                                    + tach_grad_bf16_to_float (b[i]));
}

/* The rank reached its step's synchronisation: the heartbeat, and the
 * time it took to get there (compute, feeding, host work). */
void
tach_grad_reducer_arrive (TachGradReducer *self)
{
  if (self->arrived)
    return;
  self->arrived = TRUE;
  /* On a device, the arrival is read from its events. */
  if (!self->device)
    tach_grad_reducer_current (self)->arrive_ms = tach_ranks_now_ms () - self->t_begin;
  tach_ranks_heartbeat (self->ranks, self->step);
}

static gboolean
bucket_launch (TachGradReducer *self, Bucket *b, float *grad, GError **error)
{
  size_t count = b->end - b->start;
  TachGradStepStats *st = tach_grad_reducer_current (self);
  int code;

  if (count > G_MAXINT)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                   _("a gradient bucket of %zu floats is more than one MPI call takes:"
                     " lower {bucket-mb}"), count);
      return FALSE;
    }
  b->t_launch = tach_ranks_now_ms ();
  if (self->compress != TACH_GRAD_COMPRESS_NONE)
    {
      double t0 = tach_ranks_now_ms ();
      guint16 *w = self->wire + b->start;
      const float *g = grad + b->start;

      if (self->compress == TACH_GRAD_COMPRESS_FP16)
        for (size_t i = 0; i < count; i++)
          w[i] = tach_grad_float_to_fp16 (g[i]);
      else
        for (size_t i = 0; i < count; i++)
          w[i] = tach_grad_float_to_bf16 (g[i]);
      st->pack_ms += tach_ranks_now_ms () - t0;
      t0 = tach_ranks_now_ms ();
      code = MPI_Iallreduce (MPI_IN_PLACE, w, (int) count, MPI_UINT16_T, self->op,
                             self->ranks->comm, &b->req);
      st->comm_ms += tach_ranks_now_ms () - t0;
      st->bytes += (double) count * sizeof (guint16);
    }
  else
    {
      double t0 = tach_ranks_now_ms ();

      if (self->shard_grad != NULL)
        code = tach_grad_shard_launch (self, b, grad);
      else
        code = MPI_Iallreduce (MPI_IN_PLACE, grad + b->start, (int) count, MPI_FLOAT, MPI_SUM,
                               self->ranks->comm, &b->req);
      st->comm_ms += tach_ranks_now_ms () - t0;
      st->bytes += (double) count * sizeof (float);
    }
  if (!tach_ranks_mpi_check (code, self->shard_grad != NULL ? "MPI_Ireduce_scatter_block"
                                   : "MPI_Iallreduce", error))
    return FALSE;
  b->launched = TRUE;
  st->collectives++;
  return TRUE;
}

/* Waits for bucket @b's sum, widens it and divides it by the ranks (under
 * shard=grads, this rank's chunk of it). */
static gboolean
bucket_finish (TachGradReducer *self, Bucket *b, float *grad, GError **error)
{
  size_t count = self->shard_grad != NULL ? b->chunk : b->end - b->start;
  float n = (float) tach_ranks_size (self->ranks);
  float *g = self->shard_grad != NULL ? self->shard_grad + b->state : grad + b->start;
  double t0;

  if (!b->done)
    {
      if (!tach_ranks_wait (self->ranks, &b->req, self->shard_grad != NULL
                            ? "gradient reduce-scatter" : "gradient all-reduce", self->step,
                            &tach_grad_reducer_current (self)->comm_ms, error))
        return FALSE;
      b->t_done = tach_ranks_now_ms ();
    }
  b->done = TRUE;
  t0 = tach_ranks_now_ms ();
  if (self->compress == TACH_GRAD_COMPRESS_FP16)
    for (size_t i = 0; i < count; i++)
      g[i] = tach_grad_fp16_to_float (self->wire[b->start + i]) / n;
  else if (self->compress == TACH_GRAD_COMPRESS_BF16)
    for (size_t i = 0; i < count; i++)
      g[i] = tach_grad_bf16_to_float (self->wire[b->start + i]) / n;
  else
    for (size_t i = 0; i < count; i++)
      g[i] /= n;
  tach_grad_reducer_current (self)->pack_ms += tach_ranks_now_ms () - t0;
  return TRUE;
}

/* Tests the launched buckets not yet complete, so that Open MPI moves
 * them on: the number still in flight, or -1 with @error set. */
static int
test_flying (TachGradReducer *self, GError **error)
{
  int left = 0;

  for (guint i = 0; i < self->next_launch; i++)
    {
      Bucket *b = &g_array_index (self->buckets, Bucket, i);
      int done = 0;

      if (b->done)
        continue;
      if (!tach_ranks_mpi_check (MPI_Test (&b->req, &done, MPI_STATUS_IGNORE), "MPI_Test",
                                 error))
        return -1;
      b->done = done != 0;
      if (b->done)
        b->t_done = tach_ranks_now_ms ();
      else
        left++;
    }
  return left;
}

/* Launches the complete buckets, in order; under overlap, polls the ones
 * in flight so that Open MPI moves them on. */
static gboolean
launch_ready (TachGradReducer *self, float *grad, GError **error)
{
  double t0;

  /* The launches count their own casts and calls (pack_ms, comm_ms). */
  while (self->next_launch < self->buckets->len)
    {
      Bucket *b = &g_array_index (self->buckets, Bucket, self->next_launch);

      if (b->n_ready < b->n_tensors)
        break;
      if (self->device)
        tach_grad_device_launch (self, self->next_launch, grad);
      else if (!bucket_launch (self, b, grad, error))
        return FALSE;
      self->next_launch++;
    }
  /* A device's streams move on by themselves; the progress thread tests
   * what flies. */
  if (self->device)
    return TRUE;
  if (self->progress != NULL)
    {
      if (self->next_launch > 0)
        {
          self->flying = TRUE;
          g_cond_signal (&self->wake);
        }
      return TRUE;
    }
  t0 = tach_ranks_now_ms ();
  if (test_flying (self, error) < 0)
    return FALSE;
  tach_grad_reducer_current (self)->poll_ms += tach_ranks_now_ms () - t0;
  return TRUE;
}

/* The progress thread (grad-progress=thread): tests the buckets in flight
 * every PROGRESS_US while there are any, under the lock; waits on `wake`
 * otherwise. */
static gpointer
progress_main (gpointer data)
{
  TachGradReducer *self = data;

  g_mutex_lock (&self->lock);
  while (!self->quit)
    {
      int left;

      if (!self->flying)
        {
          g_cond_wait (&self->wake, &self->lock);
          continue;
        }
      left = test_flying (self, self->progress_error == NULL ? &self->progress_error : NULL);
      /* shard=all's all-gathers in flight too (a prefetch's, during compute). */
      left = left < 0 ? left : left + tach_grad_shard_all_test (self);
      /* All done (or failed: the engine thread's wait reports it): rest
       * until the next launch. */
      if (left <= 0)
        {
          self->flying = FALSE;
          continue;
        }
      g_mutex_unlock (&self->lock);
      g_usleep (PROGRESS_US);
      g_mutex_lock (&self->lock);
    }
  g_mutex_unlock (&self->lock);
  return NULL;
}

static void
hook_ready (TachGradSyncHook *hook, float *grad, guint index)
{
  TachGradReducer *self = (TachGradReducer *) hook;
  GError *error = NULL;
  Bucket *b;

  /* Only overlap sends anything before backward ends. */
  if (self->mode != TACH_GRAD_SYNC_OVERLAP || index >= self->n_tensors
      || !tach_backend_ok (self->be))
    return;
  /* The progress thread may be testing the buckets in flight. */
  if (self->progress != NULL)
    g_mutex_lock (&self->lock);
  b = &g_array_index (self->buckets, Bucket, self->tensor_bucket[index]);
  b->n_ready++;
  if (b->n_ready == b->n_tensors)
    tach_grad_reducer_arrive (self);
  if (!launch_ready (self, grad, &error))
    set_error (self, error);
  if (self->progress != NULL)
    g_mutex_unlock (&self->lock);
}

/* The step's flights (MPI: on the host clock, from the step's start). */
static void
add_host_flights (TachGradReducer *self)
{
  for (guint i = 0; i < self->buckets->len; i++)
    {
      const Bucket *b = &g_array_index (self->buckets, Bucket, i);
      size_t wire = self->compress != TACH_GRAD_COMPRESS_NONE ? sizeof (guint16) : sizeof (float);
      TachGradFlight f = {
        .step = self->step, .bucket = i,
        .kind = self->shard_grad != NULL ? TACH_GRAD_FLIGHT_REDUCE_SCATTER
                                         : TACH_GRAD_FLIGHT_ALL_REDUCE,
        .start_ms = b->t_launch - self->t_begin,
        .dur_ms = MAX (0.0, b->t_done - b->t_launch),
        .bytes = (double) (b->end - b->start) * wire,
      };

      tach_grad_reducer_add_flight (self, &f);
    }
}

static void
hook_reduce (TachGradSyncHook *hook, float *grad, const float *params, size_t total)
{
  TachGradReducer *self = (TachGradReducer *) hook;
  GError *error = NULL;

  self->params = params;
  self->total = total;
  if (self->progress != NULL)
    {
      /* From here on the engine thread alone calls MPI, until the next
       * step's first launch. */
      g_mutex_lock (&self->lock);
      self->flying = FALSE;
      if (self->progress_error != NULL)
        set_error (self, g_steal_pointer (&self->progress_error));
      g_mutex_unlock (&self->lock);
    }
  if (!tach_backend_ok (self->be) || self->buckets == NULL)
    return;
  tach_grad_reducer_arrive (self);
  /* Whatever backward did not announce is ready now. */
  for (guint i = 0; i < self->buckets->len; i++)
    {
      Bucket *b = &g_array_index (self->buckets, Bucket, i);

      b->n_ready = b->n_tensors;
    }
  if (self->device)
    tach_grad_device_reduce (self, grad);
  else
    {
      for (guint i = 0; i < self->buckets->len && error == NULL; i++)
        {
          Bucket *b = &g_array_index (self->buckets, Bucket, i);

          /* per-tensor and fused block on each bucket in turn; overlap has
           * launched most of them already, and waits for all in order. */
          if (!b->launched && !bucket_launch (self, b, grad, &error))
            break;
          if (self->mode != TACH_GRAD_SYNC_OVERLAP)
            bucket_finish (self, b, grad, &error);
        }
      if (self->mode == TACH_GRAD_SYNC_OVERLAP)
        for (guint i = 0; i < self->buckets->len && error == NULL; i++)
          bucket_finish (self, &g_array_index (self->buckets, Bucket, i), grad, &error);
      if (error != NULL)
        {
          set_error (self, error);
          return;
        }
      add_host_flights (self);
    }
  for (guint i = 0; i < self->buckets->len; i++)
    {
      Bucket *b = &g_array_index (self->buckets, Bucket, i);

      b->n_ready = 0;
      b->launched = b->done = FALSE;
    }
  self->next_launch = 0;
}

#endif /* HAVE_MPI */

static void
add_bucket (TachGradReducer *self, size_t start, size_t end, guint n_tensors)
{
  Bucket b = { .start = start, .end = end, .n_tensors = n_tensors };

  g_array_append_val (self->buckets, b);
}

/* "overlap: 3 all-reduces a step: 0.04 1.05 0.33 MB", the run's note of
 * how it synchronises (tach_backend_note_algorithm). */
static char *
dup_layout (TachGradReducer *self)
{
  g_autoptr(GString) text = NULL;

  if (self->buckets == NULL)
    return NULL;
  text = g_string_new (NULL);
  g_string_append_printf (text, "%s: ", tach_knob (TACH_KNOB_GRAD_SYNC)->values[self->mode]);
  g_string_append_printf (text,
                          g_dngettext (GETTEXT_PACKAGE, "%u all-reduce a step:",
                                       "%u all-reduces a step:", self->buckets->len),
                          self->buckets->len);
  for (guint i = 0; i < self->buckets->len && i < 8; i++)
    {
      const Bucket *b = &g_array_index (self->buckets, Bucket, i);

      g_string_append_printf (text, " %.2f", (double) (b->end - b->start) * sizeof (float) / 1e6);
    }
  g_string_append_printf (text, "%s MB", self->buckets->len > 8 ? " ..." : "");
  return g_string_free (g_steal_pointer (&text), FALSE);
}

static void
hook_layout (TachGradSyncHook *hook, const size_t *offsets, const size_t *counts, guint n,
             size_t trainable)
{
  TachGradReducer *self = (TachGradReducer *) hook;

  if (self->buckets != NULL)
    {
      tach_backend_fail (self->be, TACH_ERROR_UNSUPPORTED,
                         _("the model has more than one parameter buffer, which data-parallel"
                           " training cannot synchronise"));
      return;
    }
  self->buckets = g_array_new (FALSE, TRUE, sizeof (Bucket));
  self->n_tensors = n;
  self->trainable = trainable;
  self->tensor_bucket = g_new0 (guint, MAX (n, 1));
  switch (self->mode)
    {
    case TACH_GRAD_SYNC_PER_TENSOR:
      for (guint i = 0; i < n; i++)
        {
          self->tensor_bucket[i] = i;
          add_bucket (self, offsets[i], offsets[i] + counts[i], 1);
        }
      break;
    case TACH_GRAD_SYNC_FUSED:
      add_bucket (self, 0, trainable, n);
      break;
    case TACH_GRAD_SYNC_OVERLAP:
    default:
      {
        /* Reverse order; a bucket is the range from its lowest tensor's
         * start to its highest tensor's end (the alignment gaps between
         * them, zeros on every rank, travel too). */
        size_t cap = MIN (self->bucket_floats, FIRST_BUCKET_BYTES / sizeof (float));
        size_t end = 0, start = 0, size = 0;
        guint in_bucket = 0;

        for (guint j = n; j-- > 0;)
          {
            if (in_bucket > 0 && size + counts[j] > cap)
              {
                add_bucket (self, start, end, in_bucket);
                cap = self->bucket_floats;
                in_bucket = 0;
                size = 0;
              }
            if (in_bucket == 0)
              end = offsets[j] + counts[j];
            start = offsets[j];
            size += counts[j];
            in_bucket++;
            self->tensor_bucket[j] = self->buckets->len;
          }
        if (in_bucket > 0)
          add_bucket (self, start, end, in_bucket);
      }
      break;
    }
  if (self->hook.shard != NULL)
    tach_grad_shard_layout (self);
  else
    {
      g_autofree char *layout = dup_layout (self);

      tach_backend_note_algorithm (self->be, "gradient all-reduce", layout);
    }
  if (self->compress != TACH_GRAD_COMPRESS_NONE && self->device)
    self->wire = tach_backend_alloc (self->be, MAX (trainable, 1) * sizeof (guint16));
  else if (self->compress != TACH_GRAD_COMPRESS_NONE)
    {
      self->wire = g_try_new (guint16, MAX (trainable, 1));
      if (self->wire == NULL)
        tach_backend_fail (self->be, TACH_ERROR_OUT_OF_MEMORY,
                           _("out of host memory for the compressed gradients (%zu bytes)"),
                           (gsize) (trainable * sizeof (guint16)));
    }
#ifdef HAVE_MPI
  if (self->device)
    tach_grad_device_layout (self);
#endif
}

#ifndef HAVE_MPI
static void
hook_ready (TachGradSyncHook *hook, float *grad, guint index)
{
  (void) hook;
  (void) grad;
  (void) index;
}

static void
hook_reduce (TachGradSyncHook *hook, float *grad, const float *params, size_t total)
{
  TachGradReducer *self = (TachGradReducer *) hook;

  (void) grad;
  self->params = params;
  self->total = total;
}
#endif

TachGradReducer *
tach_grad_reducer_new (TachRanks *ranks, TachBackend *be, const TachConfig *config)
{
  TachGradReducer *self = g_new0 (TachGradReducer, 1);

  self->hook.layout = hook_layout;
  self->hook.ready = hook_ready;
  self->hook.reduce = hook_reduce;
  self->ranks = ranks;
  self->be = be;
  self->mode = config->grad_sync;
  self->compress = config->grad_compress;
  self->bucket_floats = MAX ((size_t) ((double) config->bucket_mb * 1024 * 1024 / sizeof (float)),
                             (size_t) 1);
  self->steps = g_array_new (FALSE, TRUE, sizeof (TachGradStepStats));
  tach_strided_init (&self->flights, sizeof (TachGradFlight),
                     G_STRUCT_OFFSET (TachGradFlight, step), MAX_FLIGHTS);
  /* Device memory travels by the device's collectives, host memory by
   * MPI. */
  self->device = (be->caps & TACH_BACKEND_CAP_HOST_MEMORY) == 0;
  /* Sharding is the MPI path's (tach_config_validate refuses it on a
   * device's). */
  if (config->shard != TACH_SHARD_NONE && ranks != NULL && !self->device)
    tach_grad_shard_init (self, config);
#ifdef HAVE_MPI
  self->op = MPI_OP_NULL;
  if (self->compress != TACH_GRAD_COMPRESS_NONE && !self->device)
    MPI_Op_create (self->compress == TACH_GRAD_COMPRESS_FP16 ? sum_fp16 : sum_bf16, 1,
                   &self->op);
  if (self->device && ranks != NULL)
    self->joined = tach_grad_device_join (self);
  g_mutex_init (&self->lock);
  g_cond_init (&self->wake);
  if (ranks != NULL && !self->device && self->mode == TACH_GRAD_SYNC_OVERLAP
      && config->grad_progress == TACH_GRAD_PROGRESS_THREAD)
    self->progress = g_thread_new ("tach-progress", progress_main, self);
#endif
  be->grad_sync = &self->hook;
  return self;
}

void
tach_grad_reducer_begin_step (TachGradReducer *self, guint64 step, double start_ms)
{
  self->step = step;
  self->arrived = FALSE;
  if (self->steps->len <= step)
    g_array_set_size (self->steps, (guint) step + 1);
  memset (tach_grad_reducer_current (self), 0, sizeof (TachGradStepStats));
  self->t_begin = start_ms;
#ifdef HAVE_MPI
  if (self->device)
    tach_grad_device_begin_step (self);
#endif
}

gboolean
tach_grad_reducer_step_stats (TachGradReducer *self, guint64 step, TachGradStepStats *stats)
{
  if (step >= self->steps->len)
    return FALSE;
#ifdef HAVE_MPI
  if (self->device)
    tach_grad_device_read (self, step);
#endif
  *stats = g_array_index (self->steps, TachGradStepStats, step);
  return TRUE;
}

gboolean
tach_grad_reducer_settle (TachGradReducer *self, GError **error)
{
#ifdef HAVE_MPI
  if (self->device)
    return tach_grad_device_settle (self, error);
#endif
  (void) self;
  (void) error;
  return TRUE;
}

GArray *
tach_grad_reducer_get_flights (TachGradReducer *self)
{
  return self->flights.items;
}

guint
tach_grad_reducer_get_n_buckets (TachGradReducer *self)
{
  return self->buckets != NULL ? self->buckets->len : 0;
}

gboolean
tach_grad_reducer_check_params (TachGradReducer *self, GError **error)
{
  g_autofree float *host = NULL;

  /* Every step's figures read, and the flights complete. */
  if (!tach_grad_reducer_settle (self, error))
    return FALSE;
  for (guint64 k = 0; k < self->steps->len; k++)
    {
      TachGradStepStats st;

      tach_grad_reducer_step_stats (self, k, &st);
    }
  if (self->params == NULL || self->total == 0)
    return TRUE;
  host = g_try_new (float, self->total);
  if (host == NULL)
    return TRUE;
  tach_backend_download (self->be, host, self->params, self->total * sizeof (float));
  tach_backend_synchronize (self->be);
  if (!tach_backend_take_error (self->be, error))
    return FALSE;
  /* shard=all: the units' parameters from the ranks' shards. */
  if (!tach_grad_shard_all_fill (self, host, error))
    return FALSE;
  return tach_ranks_check_same_bytes (self->ranks, host, self->total * sizeof (float),
                                      _("parameters"), error);
}

void
tach_grad_reducer_abort (TachGradReducer *self)
{
#ifdef HAVE_MPI
  if (self->device)
    tach_grad_device_abort (self);
#endif
  (void) self;
}

void
tach_grad_reducer_free (TachGradReducer *self)
{
  if (self == NULL)
    return;
  if (self->be != NULL && self->be->grad_sync == &self->hook)
    self->be->grad_sync = NULL;
#ifdef HAVE_MPI
  if (self->progress != NULL)
    {
      g_mutex_lock (&self->lock);
      self->quit = TRUE;
      g_cond_signal (&self->wake);
      g_mutex_unlock (&self->lock);
      g_thread_join (self->progress);
    }
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->wake);
  g_clear_error (&self->progress_error);
  if (self->op != MPI_OP_NULL)
    MPI_Op_free (&self->op);
  if (self->device)
    tach_grad_device_clear (self);
#endif
  tach_grad_shard_clear (self);
  if (self->buckets != NULL)
    g_array_unref (self->buckets);
  g_free (self->tensor_bucket);
  if (self->device)
    tach_backend_dealloc (self->be, self->wire);
  else
    g_free (self->wire);
  g_array_unref (self->steps);
  tach_strided_clear (&self->flights);
  g_free (self);
}
