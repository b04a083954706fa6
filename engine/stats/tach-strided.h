/* tach-strided.h: a store of per-step records bounded by keeping every
 * Nth step.
 *
 * Each record names its step.  The store keeps the records of the steps
 * that are a multiple of its stride; when it would pass @max records it
 * doubles the stride and drops the records of the steps no longer kept,
 * so that a run of a million steps keeps as many records as one of a
 * thousand: the first steps and an even sample of the rest.  Step 0 is
 * kept at every stride (records that belong to no step use it).
 *
 * The trace (output/tach-trace.c) keeps its events here, and the
 * gradient reducer (run/tach-grad-reducer.c) the flights of its
 * all-reduces, so that both thin the same steps.
 *
 * Threads: any one thread at a time.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  GArray  *items;        /* owned: the records, in the order added */
  gsize    step_offset;  /* where a record's guint64 step is */
  guint    max;
  guint64  stride;
} TachStrided;

/* Records of @elem_size bytes whose step (a guint64) is at @step_offset;
 * at most @max (at least 64) of them. */
void     tach_strided_init (TachStrided *s, gsize elem_size, gsize step_offset, guint max);
void     tach_strided_clear (TachStrided *s);
/* Whether step @step's records are kept at the current stride. */
gboolean tach_strided_keeps (const TachStrided *s, guint64 step);
/* Adds @item unless its step is not kept (thinning first when full);
 * whether it was added. */
gboolean tach_strided_add (TachStrided *s, const void *item);

G_END_DECLS
