/* tach-feeder.c: gets batches onto the device as the feed knob says.
 *
 * Every mode starts from the same materialised host copy of the dataset
 * (float64 under host-f64, float32 or int32 otherwise, both converted from
 * the dataset's doubles with the same cast), so batch i holds the same
 * float32 values whatever the mode: the mode changes speed, not math.
 *
 * Batch i covers samples (i mod n_batches) * batch .. + batch, which are
 * contiguous, so a batch is one slice of each host array.  With
 * data-parallel ranks (TachBackend.ranks) a step's global batch is the
 * ranks' batches side by side and rank r takes the r-th: step i of rank r
 * reads sub-batch (i mod G) * ranks + r, G the global batches the dataset
 * holds, so N ranks at batch B read what one process reads at batch N B.
 * With gradient accumulation (TachBackend.accumulate, k) a step's global
 * batch is k N batches, and micro-batch j of rank r takes the (j N + r)-th
 * (tach_backend_batch_place): the feeder counts micro-batches, step i's
 * j-th being its batch i k + j, so that prefetch's "next" is the next
 * micro-batch.
 *
 * Prefetch double-buffers on the device.  Slot k has a device batch dev[k]
 * and its pinned source pinned[k].  When the model asks for batch i (in
 * slot s; o is the other slot):
 *   - the compute queued so far (step i-1, which read slot o) is marked by
 *     released[o], recorded on the compute stream;
 *   - the compute stream waits (stream_wait, not the host) for copied[s],
 *     the copy of batch i, which was queued during the previous call;
 *   - batch i+1 is copied into slot o on the copy stream once released[o]
 *     has passed, so the copy runs while step i computes, and copied[o] is
 *     recorded after it;
 *   - the loader thread refills pinned[s] with batch i+2 on the host, once
 *     the copy of batch i out of it (copied[s]) is done.
 * The host blocks only for that last condition, which holds once step i-2
 * has computed: it never runs more than two steps ahead of the device.
 */
#include <string.h>

#include <inttypes.h>
#include <glib/gi18n-lib.h>

#include "tach-feeder.h"
#include "tach-error-private.h"

#define NO_BATCH G_MAXUINT64

struct _TachFeeder {
  TachBackend *be;          /* borrowed */
  TachDataset  ds;
  TachFeed     feed;
  guint        batch;
  guint64      n_batches;      /* of @batch samples: global batches x shards */
  guint        rank, ranks;    /* this rank's shard of each global batch */
  guint        accumulate;     /* micro-batches per step */
  guint        shards;         /* batches per global batch: ranks x accumulate */
  size_t       x_batch_bytes;  /* as float32/int32 */
  size_t       y_batch_bytes;

  /* Host copies (owned): x as double under host-f64, else 4-byte elements. */
  double      *host_x64;
  void        *host_x;
  void        *host_y;

  /* host-f64: the converted batch before its upload (owned). */
  float       *staging_x;

  /* Device memory: one batch (host modes), two (prefetch), or everything
   * (resident).  x and y share one block; y starts at y_offset. */
  void        *dev[2];
  size_t       dev_y_offset;
  /* tach_feeder_fix_batch(), prefetch and resident: the batch handed out,
   * x then y (owned, device); NULL otherwise. */
  void        *fixed;

  /* prefetch (see the top of the file); engine thread only. */
  void        *pinned[2];      /* owned, host_alloc */
  TachEvent   *copied[2];      /* copy stream: the last upload into dev[k] is done */
  TachEvent   *released[2];    /* compute stream: the last step that read dev[k] is done */
  gboolean     copy_pending[2];   /* an upload may still read pinned[k] */
  gboolean     release_known[2];  /* released[k] was recorded after dev[k]'s last reader */
  guint64      dev_holds[2];   /* the batch queued into dev[k], NO_BATCH if none */
  guint64      wanted[2];      /* the batch last asked of the loader for pinned[k] */
  gint         handed;         /* the slot handed out by the last call, -1 before */

  /* The loader thread and what it shares with the engine thread. */
  GThread     *loader;
  GMutex       lock;
  GCond        cond;
  guint64      request[2];     /* under lock: batch to load into pinned[k], or NO_BATCH */
  gboolean     busy[2];        /* under lock: the loader is writing pinned[k] */
  guint64      ready_index[2]; /* under lock: the batch pinned[k] holds, or NO_BATCH */
  gboolean     quit;           /* under lock */
};

static size_t
elem_bytes (void)
{
  /* float32 and int32 alike */
  return 4;
}

/* The host copy materialise() makes (in double: an absurd dataset must
 * not wrap around). */
static double
materialised_bytes (const TachDataset *dataset, TachFeed feed)
{
  double x_bytes = feed == TACH_FEED_HOST_F64 ? sizeof (double) : elem_bytes ();

  return (double) dataset->n_samples
         * ((double) dataset->x_elems * x_bytes + (double) dataset->y_elems * elem_bytes ());
}

static guint64
saturate (double bytes)
{
  return bytes >= (double) G_MAXUINT64 ? G_MAXUINT64 : (guint64) bytes;
}

void
tach_feeder_memory_needs (const TachDataset *dataset, TachFeed feed, guint batch,
                          gboolean fixed, guint64 *device_bytes, guint64 *host_bytes)
{
  double x_batch = (double) batch * dataset->x_elems * elem_bytes ();
  double batch_bytes = x_batch + (double) batch * dataset->y_elems * elem_bytes ();
  double n_batches = batch > 0 ? (double) (dataset->n_samples / batch) : 0.0;
  /* resident needs its host copy only while uploading, but it needs it all. */
  double host = materialised_bytes (dataset, feed);
  double dev;

  /* As tach_feeder_new() allocates, mode by mode. */
  switch (feed)
    {
    case TACH_FEED_HOST_F64:
      host += x_batch;
      G_GNUC_FALLTHROUGH;
    case TACH_FEED_HOST_F32:
      dev = batch_bytes;
      break;
    case TACH_FEED_PREFETCH:
      dev = 2.0 * batch_bytes;
      host += 2.0 * batch_bytes;
      break;
    case TACH_FEED_RESIDENT:
    default:
      dev = n_batches * batch_bytes;
      break;
    }
  /* tach_feeder_fix_batch(): the host feeds' one batch is fixed already. */
  if (fixed && (feed == TACH_FEED_PREFETCH || feed == TACH_FEED_RESIDENT))
    dev += batch_bytes;
  if (device_bytes != NULL)
    *device_bytes = saturate (dev);
  if (host_bytes != NULL)
    *host_bytes = saturate (host);
}

guint64
tach_feeder_batches_per_epoch (TachFeeder *feeder)
{
  return feeder->n_batches / feeder->shards;
}

/* The first sample of micro-batch @index's batch (step index / k's
 * micro-batch index % k): this rank's shard of the step's global batch. */
static guint64
batch_first (TachFeeder *feeder, guint64 index)
{
  guint64 global = feeder->n_batches / feeder->shards;
  guint64 micro = index % feeder->accumulate;

  return ((index / feeder->accumulate % global) * feeder->shards + micro * feeder->ranks
          + feeder->rank) * feeder->batch;
}

/* Copies batch @index's slice of the host arrays into @x and @y. */
static void
copy_batch (TachFeeder *feeder, guint64 index, void *x, void *y)
{
  guint64 first = batch_first (feeder, index);

  memcpy (x, (const char *) feeder->host_x + first * feeder->ds.x_elems * elem_bytes (),
          feeder->x_batch_bytes);
  if (feeder->y_batch_bytes > 0)
    memcpy (y, (const char *) feeder->host_y + first * feeder->ds.y_elems * elem_bytes (),
            feeder->y_batch_bytes);
}

static gpointer
loader_main (gpointer data)
{
  TachFeeder *feeder = data;

  g_mutex_lock (&feeder->lock);
  for (;;)
    {
      guint64 index;
      guint slot;
      char *dst;

      while (feeder->request[0] == NO_BATCH && feeder->request[1] == NO_BATCH && !feeder->quit)
        g_cond_wait (&feeder->cond, &feeder->lock);
      if (feeder->quit)
        break;
      slot = feeder->request[0] != NO_BATCH ? 0 : 1;
      index = feeder->request[slot];
      feeder->request[slot] = NO_BATCH;
      feeder->busy[slot] = TRUE;
      g_mutex_unlock (&feeder->lock);

      /* The copy runs unlocked: this is the work that overlaps the step. */
      dst = feeder->pinned[slot];
      copy_batch (feeder, index, dst, dst + feeder->x_batch_bytes);

      g_mutex_lock (&feeder->lock);
      feeder->busy[slot] = FALSE;
      /* A newer request for the slot supersedes what was just loaded. */
      if (feeder->request[slot] == NO_BATCH)
        feeder->ready_index[slot] = index;
      g_cond_broadcast (&feeder->cond);
    }
  g_mutex_unlock (&feeder->lock);
  return NULL;
}

/* Hands pinned[@slot] back to the host: waits until the last upload out of
 * it has read it. */
static void
pinned_release (TachFeeder *feeder, guint slot)
{
  if (!feeder->copy_pending[slot])
    return;
  tach_event_synchronize (feeder->be, feeder->copied[slot]);
  feeder->copy_pending[slot] = FALSE;
}

static void
loader_request (TachFeeder *feeder, guint64 index, guint slot)
{
  pinned_release (feeder, slot);
  g_mutex_lock (&feeder->lock);
  /* A slot being refilled holds nothing usable until the loader is done. */
  feeder->ready_index[slot] = NO_BATCH;
  feeder->request[slot] = index;
  g_cond_broadcast (&feeder->cond);
  g_mutex_unlock (&feeder->lock);
  feeder->wanted[slot] = index;
}

static void
loader_wait (TachFeeder *feeder, guint64 index, guint slot)
{
  g_mutex_lock (&feeder->lock);
  while (feeder->ready_index[slot] != index)
    g_cond_wait (&feeder->cond, &feeder->lock);
  g_mutex_unlock (&feeder->lock);
}

void
tach_feeder_free (TachFeeder *feeder)
{
  if (feeder == NULL)
    return;
  if (feeder->loader != NULL)
    {
      g_mutex_lock (&feeder->lock);
      feeder->quit = TRUE;
      g_cond_broadcast (&feeder->cond);
      g_mutex_unlock (&feeder->lock);
      g_thread_join (feeder->loader);
    }
  for (guint i = 0; i < 2; i++)
    {
      /* Pinned memory may still be read by an asynchronous upload, and the
       * device batch by a queued step: wait for both before freeing. */
      pinned_release (feeder, i);
      if (feeder->handed >= 0)
        {
          tach_event_record (feeder->be, feeder->released[i]);
          tach_event_synchronize (feeder->be, feeder->released[i]);
        }
      tach_event_free (feeder->be, feeder->copied[i]);
      tach_event_free (feeder->be, feeder->released[i]);
      tach_backend_host_free (feeder->be, feeder->pinned[i]);
      tach_backend_dealloc (feeder->be, feeder->dev[i]);
    }
  tach_backend_dealloc (feeder->be, feeder->fixed);
  g_mutex_clear (&feeder->lock);
  g_cond_clear (&feeder->cond);
  g_free (feeder->host_x64);
  g_free (feeder->host_x);
  g_free (feeder->host_y);
  g_free (feeder->staging_x);
  g_free (feeder);
}

static gboolean
take_backend_error (TachFeeder *feeder, GError **error)
{
  /* The sticky error stays in the backend for the runner; the caller gets
   * a copy so that it can fail its step with a message. */
  if (tach_backend_ok (feeder->be))
    return TRUE;
  if (error != NULL && *error == NULL)
    *error = g_error_copy (feeder->be->error);
  return FALSE;
}

/* Converts sample @i, filled into @x and @y, into the host arrays. */
static void
store_sample (TachFeeder *feeder, guint64 i, const double *x, const char *y)
{
  const TachDataset *ds = &feeder->ds;

  if (feeder->host_x64 != NULL)
    memcpy (feeder->host_x64 + i * ds->x_elems, x, ds->x_elems * sizeof (double));
  else if (ds->x_type == TACH_DTYPE_F32)
    {
      float *dst = (float *) feeder->host_x + i * ds->x_elems;

      for (size_t e = 0; e < ds->x_elems; e++)
        dst[e] = (float) x[e];
    }
  else
    {
      gint32 *dst = (gint32 *) feeder->host_x + i * ds->x_elems;

      for (size_t e = 0; e < ds->x_elems; e++)
        dst[e] = (gint32) x[e];
    }
  if (ds->y_elems > 0)
    memcpy ((char *) feeder->host_y + i * ds->y_elems * elem_bytes (), y,
            ds->y_elems * elem_bytes ());
}

/* Fills the host arrays from the dataset; FALSE when memory runs out.
 * Samples are pure functions of their index, so the backend's threads
 * fill them in parallel: a large synthetic dataset is ready sooner, and
 * the values do not depend on the thread count.  A backend whose threads
 * are 0 (a GPU's, which computes on the device: --threads left at its
 * default) fills with every core, as the CPU backend's 0 means. */
static gboolean
materialise (TachFeeder *feeder, GError **error)
{
  const TachDataset *ds = &feeder->ds;
  guint64 n = ds->n_samples;
  int threads = (int) (feeder->be->threads > 0 ? feeder->be->threads : g_get_num_processors ());

  if (feeder->feed == TACH_FEED_HOST_F64)
    feeder->host_x64 = g_try_malloc_n (n, ds->x_elems * sizeof (double));
  else
    feeder->host_x = g_try_malloc_n (n, ds->x_elems * elem_bytes ());
  if (ds->y_elems > 0)
    feeder->host_y = g_try_malloc_n (n, ds->y_elems * elem_bytes ());
  if ((feeder->host_x64 == NULL && feeder->host_x == NULL)
      || (ds->y_elems > 0 && feeder->host_y == NULL))
    {
      g_autofree char *size = g_format_size (saturate (materialised_bytes (ds, feeder->feed)));

      g_set_error (error, TACH_ERROR, TACH_ERROR_OUT_OF_MEMORY,
                   W_("the dataset of %" PRIu64 " samples needs %s of host memory: "
                     "lower {samples}"), n, size);
      {
        g_autofree char *samples = g_strdup_printf ("%" PRIu64, (guint64) n);

        tach_error_add_hint (error, TACH_KNOB_SAMPLES, samples, TACH_KNOB_SAMPLES, NULL, NULL);
      }
      return FALSE;
    }

#pragma omp parallel num_threads (threads)
  {
    double *x = g_new (double, MAX (ds->x_elems, 1));
    char *y = g_malloc (MAX (ds->y_elems, 1) * elem_bytes ());

#pragma omp for schedule (static)
    for (gint64 i = 0; i < (gint64) n; i++)
      {
        ds->fill (ds->data, (guint64) i, x, y);
        store_sample (feeder, (guint64) i, x, y);
      }
    g_free (x);
    g_free (y);
  }
  return TRUE;
}

TachFeeder *
tach_feeder_new (TachBackend *be, const TachDataset *dataset, TachFeed feed, guint batch,
                 GError **error)
{
  g_autoptr(GError) local = NULL;
  TachFeeder *feeder;

  if (feed == TACH_FEED_HOST_F64 && dataset->x_type != TACH_DTYPE_F32)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                   W_("{feed=host-f64} converts float64 features, but this workload feeds "
                     "token ids: use {feed=host-f32}"));
      return NULL;
    }
  /* The batch itself is checked once, by validation, before any model
   * asks for a feeder; what only the data knows is checked here: whether
   * the dataset holds one (global) batch. */
  g_assert (batch > 0);
  if (dataset->n_samples < (guint64) batch * MAX (be->ranks, 1) * MAX (be->accumulate, 1))
    {
      if (be->accumulate > 1)
        g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                     W_("the dataset has %" PRIu64 " samples, less than one step of"
                        " %u micro-batches x %u ranks x %u: raise {samples} or lower {batch}"),
                     dataset->n_samples, be->accumulate, MAX (be->ranks, 1), batch);
      else if (be->ranks > 1)
        g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                     W_("the dataset has %" PRIu64 " samples, less than one global batch of"
                        " %u ranks x %u: raise {samples} or lower {batch}"),
                     dataset->n_samples, be->ranks, batch);
      else
        g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                     W_("the dataset has %" PRIu64 " samples, less than one batch of %u: "
                       "raise {samples} or lower {batch}"), dataset->n_samples, batch);
      {
        g_autofree char *samples = g_strdup_printf ("%" PRIu64, (guint64) dataset->n_samples);
        g_autofree char *one_batch = g_strdup_printf ("%u", batch * MAX (be->ranks, 1)
                                                            * MAX (be->accumulate, 1));

        /* The fix: a dataset of one batch. */
        tach_error_add_hint (error, TACH_KNOB_SAMPLES, samples, TACH_KNOB_SAMPLES,
                             one_batch, NULL);
      }
      return NULL;
    }

  feeder = g_new0 (TachFeeder, 1);
  feeder->be = be;
  feeder->ds = *dataset;
  feeder->feed = feed;
  feeder->batch = batch;
  feeder->rank = be->rank;
  feeder->ranks = MAX (be->ranks, 1);
  feeder->accumulate = MAX (be->accumulate, 1);
  feeder->shards = feeder->ranks * feeder->accumulate;
  feeder->n_batches = dataset->n_samples / ((guint64) batch * feeder->shards) * feeder->shards;
  feeder->x_batch_bytes = (size_t) batch * dataset->x_elems * elem_bytes ();
  feeder->y_batch_bytes = (size_t) batch * dataset->y_elems * elem_bytes ();
  for (guint i = 0; i < 2; i++)
    {
      feeder->request[i] = NO_BATCH;
      feeder->ready_index[i] = NO_BATCH;
      feeder->wanted[i] = NO_BATCH;
      feeder->dev_holds[i] = NO_BATCH;
    }
  feeder->handed = -1;
  g_mutex_init (&feeder->lock);
  g_cond_init (&feeder->cond);

  if (!materialise (feeder, &local))
    goto fail;

  switch (feed)
    {
    case TACH_FEED_HOST_F64:
      feeder->staging_x = g_try_malloc (feeder->x_batch_bytes);
      if (feeder->staging_x == NULL)
        {
          g_set_error (&local, TACH_ERROR, TACH_ERROR_OUT_OF_MEMORY,
                       W_("out of host memory for one batch: lower {batch}"));
          tach_error_add_hint (&local, TACH_KNOB_BATCH, NULL, TACH_KNOB_BATCH, NULL, NULL);
          goto fail;
        }
      G_GNUC_FALLTHROUGH;
    case TACH_FEED_HOST_F32:
      feeder->dev_y_offset = feeder->x_batch_bytes;
      feeder->dev[0] = tach_backend_alloc (be, feeder->x_batch_bytes + feeder->y_batch_bytes);
      break;

    case TACH_FEED_PREFETCH:
      feeder->dev_y_offset = feeder->x_batch_bytes;
      for (guint i = 0; i < 2; i++)
        {
          feeder->dev[i] = tach_backend_alloc (be, feeder->x_batch_bytes + feeder->y_batch_bytes);
          feeder->pinned[i] = tach_backend_host_alloc (be, feeder->x_batch_bytes
                                                           + feeder->y_batch_bytes);
          feeder->copied[i] = tach_event_new (be);
          feeder->released[i] = tach_event_new (be);
        }
      if (!take_backend_error (feeder, &local))
        goto fail;
      feeder->loader = g_thread_try_new ("tach-loader", loader_main, feeder, &local);
      if (feeder->loader == NULL)
        goto fail;
      break;

    case TACH_FEED_RESIDENT:
    default:
      {
        size_t x_all = (size_t) (feeder->n_batches * batch) * dataset->x_elems * elem_bytes ();
        size_t y_all = (size_t) (feeder->n_batches * batch) * dataset->y_elems * elem_bytes ();

        /* The remainder is never used, so it never goes to the device. */
        feeder->dev_y_offset = x_all;
        feeder->dev[0] = tach_backend_alloc (be, x_all + y_all);
        tach_backend_upload (be, feeder->dev[0], feeder->host_x, x_all);
        if (y_all > 0)
          tach_backend_upload (be, (char *) feeder->dev[0] + x_all, feeder->host_y, y_all);
        g_clear_pointer (&feeder->host_x, g_free);
        g_clear_pointer (&feeder->host_y, g_free);
      }
      break;
    }

  if (!take_backend_error (feeder, &local))
    goto fail;
  return feeder;

fail:
  g_propagate_error (error, g_steal_pointer (&local));
  tach_feeder_free (feeder);
  return NULL;
}

/* Queues the upload of batch @index into slot @slot: from pinned memory
 * the loader fills (now, unless it was asked before), on the copy stream,
 * after the last step that read the slot. */
static void
queue_batch (TachFeeder *feeder, guint64 index, guint slot)
{
  if (feeder->wanted[slot] != index)
    loader_request (feeder, index, slot);
  loader_wait (feeder, index, slot);
  tach_backend_upload_overlapped (feeder->be, feeder->dev[slot], feeder->pinned[slot],
                                  feeder->x_batch_bytes + feeder->y_batch_bytes,
                                  feeder->release_known[slot] ? feeder->released[slot] : NULL,
                                  feeder->copied[slot]);
  feeder->copy_pending[slot] = TRUE;
  feeder->dev_holds[slot] = index;
}

static void
next_prefetch (TachFeeder *feeder, guint64 index, const void **x, const void **y)
{
  guint slot, other;

  /* Everything queued so far, the step that read the slot handed out last
   * included, is done when released[] passes. */
  if (feeder->handed >= 0)
    {
      tach_event_record (feeder->be, feeder->released[feeder->handed]);
      feeder->release_known[feeder->handed] = TRUE;
    }

  if (feeder->dev_holds[0] == index)
    slot = 0;
  else if (feeder->dev_holds[1] == index)
    slot = 1;
  else
    {
      /* The first call, or a caller that skipped around: nothing useful is
       * queued, so queue it now, preferably not over the last step's input. */
      slot = feeder->handed == 0 ? 1 : 0;
      queue_batch (feeder, index, slot);
    }
  other = 1 - slot;

  /* The step about to be queued reads dev[slot]: it waits on the device,
   * not the host, for the copy. */
  tach_backend_stream_wait (feeder->be, feeder->copied[slot]);

  /* The next batch goes to the other slot while this step computes. */
  if (feeder->dev_holds[other] != index + 1)
    queue_batch (feeder, index + 1, other);

  /* And the one after it to this slot's pinned buffer, on the host. */
  loader_request (feeder, index + 2, slot);
  feeder->handed = (gint) slot;

  *x = feeder->dev[slot];
  *y = feeder->y_batch_bytes > 0 ? (const char *) feeder->dev[slot] + feeder->dev_y_offset : NULL;
}

/* The host feeds: batch @first.. converted (host-f64) and copied
 * synchronously from pageable memory into @x and @y (y: when there are
 * labels). */
static void
upload_host_batch (TachFeeder *feeder, guint64 first, void *x, void *y)
{
  if (feeder->feed == TACH_FEED_HOST_F64)
    {
      const double *src = feeder->host_x64 + first * feeder->ds.x_elems;
      size_t n = (size_t) feeder->batch * feeder->ds.x_elems;

      /* What feed_dict does: convert on the host, then a pageable copy. */
      for (size_t e = 0; e < n; e++)
        feeder->staging_x[e] = (float) src[e];
      tach_backend_upload (feeder->be, x, feeder->staging_x, feeder->x_batch_bytes);
    }
  else
    tach_backend_upload (feeder->be, x,
                         (const char *) feeder->host_x + first * feeder->ds.x_elems * elem_bytes (),
                         feeder->x_batch_bytes);
  if (feeder->y_batch_bytes > 0)
    tach_backend_upload (feeder->be, y,
                         (const char *) feeder->host_y + first * feeder->ds.y_elems * elem_bytes (),
                         feeder->y_batch_bytes);
}

gboolean
tach_feeder_next (TachFeeder *feeder, guint64 index, const void **x, const void **y,
                  double *feed_ms, GError **error)
{
  gint64 t0 = g_get_monotonic_time ();
  guint64 first;
  const void *dx = NULL, *dy = NULL;

  /* Step @index's micro-batch being queued, in the feeder's count. */
  index = index * feeder->accumulate + feeder->be->micro % feeder->accumulate;
  first = batch_first (feeder, index);
  if (!take_backend_error (feeder, error))
    return FALSE;

  switch (feeder->feed)
    {
    case TACH_FEED_HOST_F64:
    case TACH_FEED_HOST_F32:
      upload_host_batch (feeder, first, feeder->dev[0],
                         (char *) feeder->dev[0] + feeder->dev_y_offset);
      dx = feeder->dev[0];
      dy = feeder->y_batch_bytes > 0 ? (const char *) feeder->dev[0] + feeder->dev_y_offset : NULL;
      break;

    case TACH_FEED_PREFETCH:
      next_prefetch (feeder, index, &dx, &dy);
      break;

    case TACH_FEED_RESIDENT:
    default:
      dx = (const char *) feeder->dev[0] + first * feeder->ds.x_elems * elem_bytes ();
      dy = feeder->y_batch_bytes > 0
             ? (const char *) feeder->dev[0] + feeder->dev_y_offset
                 + first * feeder->ds.y_elems * elem_bytes ()
             : NULL;
      break;
    }

  /* The copy reads the batch after the waits above and before anything
   * queued after this call; in prefetch, released[] covers it. */
  if (feeder->fixed != NULL)
    {
      char *fixed = feeder->fixed;

      tach_backend_copy (feeder->be, fixed, dx, feeder->x_batch_bytes);
      if (dy != NULL)
        tach_backend_copy (feeder->be, fixed + feeder->x_batch_bytes, dy, feeder->y_batch_bytes);
      dx = fixed;
      dy = dy != NULL ? fixed + feeder->x_batch_bytes : NULL;
    }

  if (feed_ms != NULL)
    *feed_ms += (double) (g_get_monotonic_time () - t0) / 1000.0;
  if (!take_backend_error (feeder, error))
    return FALSE;
  *x = dx;
  if (y != NULL)
    *y = dy;
  return TRUE;
}

gboolean
tach_feeder_fix_batch (TachFeeder *feeder, GError **error)
{
  /* The host feeds' one device batch is fixed already. */
  if (feeder->feed == TACH_FEED_HOST_F64 || feeder->feed == TACH_FEED_HOST_F32
      || feeder->fixed != NULL)
    return TRUE;
  feeder->fixed = tach_backend_alloc (feeder->be, feeder->x_batch_bytes + feeder->y_batch_bytes);
  return take_backend_error (feeder, error);
}
