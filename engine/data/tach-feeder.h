/* tach-feeder.h: gets batches onto the device according to the feed knob.
 *
 *   host-f64  the dataset lives on the host as float64; every step converts
 *             the batch to float32 and copies it synchronously from pageable
 *             memory (TF1 feed_dict)
 *   host-f32  float32 on the host, synchronous pageable copy every step
 *   prefetch  a loader thread prepares batches in pinned memory; each is
 *             copied on the backend's copy stream into one of two device
 *             slots while the previous step computes, and the step that
 *             reads it waits for the copy on the device, not on the host
 *   resident  the whole dataset is uploaded once; a step only offsets into it
 *
 * Whatever the mode, batch i holds the same samples with the same float32
 * values, so the mode changes speed, not math.
 *
 * Threads: the engine thread, except for the feeder's own loader thread.
 */
#pragma once

#include "tach-backend.h"

G_BEGIN_DECLS

typedef enum {
  TACH_DTYPE_F32,   /* features: float32 on the device (held as f64 under host-f64) */
  TACH_DTYPE_I32,   /* token ids or class labels */
} TachDtype;

/* A dataset in host memory, built once by the workload. */
typedef struct {
  guint64   n_samples;
  size_t    x_elems;        /* elements per sample */
  TachDtype x_type;
  size_t    y_elems;        /* label elements per sample (0: none) */
  TachDtype y_type;
  /* Fills sample @i: @x gets x_elems values (as double, whatever x_type),
   * @y gets y_elems values (float or int32 by y_type). */
  void    (*fill) (gpointer data, guint64 i, double *x, void *y);
  gpointer  data;
} TachDataset;

typedef struct _TachFeeder TachFeeder;

/* Materialises the dataset on the host (and on the device for resident).
 * @feed host-f64 requires x_type F32 (otherwise TACH_ERROR_UNSUPPORTED). */
TachFeeder *tach_feeder_new  (TachBackend *be, const TachDataset *dataset, TachFeed feed,
                              guint batch, GError **error);
/* Puts batch @index (samples index*batch .. +batch, modulo the dataset,
 * dropping the remainder; with ranks or accumulation, this rank's
 * micro-batch TachBackend.micro of step @index) on the device; *x and *y point at device memory
 * valid until the next call.  Adds the host time spent to *feed_ms. */
gboolean    tach_feeder_next (TachFeeder *feeder, guint64 index, const void **x, const void **y,
                              double *feed_ms, GError **error);
/* From now on, every tach_feeder_next() hands out the same two device
 * pointers, whatever the batch: what a captured graph, which bakes in its
 * inputs' addresses, needs.  Host feeds already upload into one device
 * batch and so cost nothing more; prefetch and resident then add a
 * device-to-device copy of the batch into a fixed one (allocated here),
 * queued after the same waits, with no host wait.  FALSE + @error when
 * the device is out of memory. */
gboolean    tach_feeder_fix_batch (TachFeeder *feeder, GError **error);
guint64     tach_feeder_batches_per_epoch (TachFeeder *feeder);
/* What tach_feeder_new() allocates for @dataset under @feed in batches of
 * @batch, and tach_feeder_fix_batch() too when @fixed: device bytes (the
 * backend's alloc) and host bytes (the materialised dataset, staging and
 * pinned batches), each at its peak.  A model's memory_needs adds these
 * rather than re-deriving them.  Saturates at G_MAXUINT64. */
void        tach_feeder_memory_needs (const TachDataset *dataset, TachFeed feed, guint batch,
                                      gboolean fixed, guint64 *device_bytes,
                                      guint64 *host_bytes);
void        tach_feeder_free (TachFeeder *feeder);

G_END_DECLS
