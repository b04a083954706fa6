/* tach-params-private.h: what tach-params.c (the flat buffer and the
 * optimizer) and tach-params-gather.c (shard=all's gathers) share.
 *
 * Threads: the engine thread.
 */
#pragma once

#include "tach-params.h"

G_BEGIN_DECLS

typedef struct {
  char    *name;
  size_t   offset;      /* floats from the start of the flat buffer */
  size_t   count;
  gboolean trainable;
  size_t   align;       /* bytes the slice's start is aligned to */
  guint    sync_index;  /* among the trainable slices, for TachBackend.grad_sync */
  gboolean folded;      /* accumulate-sync=last: its gradient is in the sum already */
  guint    unit;        /* shard=all: the unit it is gathered with (trainable only) */
} TachParamSlice;

/* shard=all: a unit of slices, gathered as one. */
typedef struct {
  gboolean keep;        /* the root's: gathered through the step */
  gboolean resident;    /* its parameters are in the flat buffer */
  gboolean flying;      /* its all-gathers are launched, not waited for */
  gboolean grads;       /* its gradients' pages are written and not given back */
  size_t   bytes;       /* its pieces' pages, in bytes */
} TachParamUnit;

/* shard=all: a run of consecutive trainable slices of one unit, one bucket
 * of the ranks' reduce-scatters and all-gathers, its start on a page of its
 * own (and its end's page its own). */
typedef struct {
  size_t start, end;    /* floats of the flat buffer */
  guint  unit;
} TachParamPiece;

struct _TachParams {
  TachBackend   *be;         /* borrowed */
  GArray        *slices;     /* TachParamSlice */
  size_t         total;
  size_t         trainable;
  float         *data;       /* device: total floats, aligned as the slices ask */
  float         *grad;       /* device: trainable floats, aligned the same */
  float         *sum;        /* device: accumulation's sum, as grad (NULL: none) */
  void          *data_mem, *grad_mem, *sum_mem;  /* device: the allocations they lie in */
  float         *m, *v;      /* device: Adam moments (state_total floats) */
  float         *t;          /* device: Adam step count, one per range */
  /* What this rank updates: the ranges of the flat buffer (one, the
   * trainable prefix, unless sharded) and where each one's optimizer state
   * starts; with @shard (the reducer's, borrowed), its gradients are the
   * shard's. */
  guint          n_ranges;
  size_t        *range_offset, *range_count, *range_state;
  size_t         state_total;
  const TachGradShard *shard;
  gboolean       have_ranges;  /* tach_params_alloc has set them: the state can follow */
  guint64        held[3];    /* bytes counted in the backend's held_*: params, grads, state */
  float         *host;       /* staging copy, until upload */
  TachOptimizer  optimizer;
  float          lr;
  float          beta1, beta2, eps;  /* Adam's */
  /* shard=all (tach-params-gather.c): @data and @grad are mappings of
   * their own (@map_bytes each), whose units' pages come and go; the
   * parameters live in @shard_data (state_total floats: this rank's range
   * of each piece, at its optimizer state's place). */
  gboolean       fully;
  GArray        *units;      /* TachParamUnit */
  guint          unit;       /* the unit slices are added to now */
  TachParamPiece *pieces;    /* in launch order: bucket i is piece i */
  guint          n_pieces;
  float         *shard_data;
  size_t         map_bytes[2];
  size_t         frozen_start;  /* floats: where the frozen slices' pages start */
  gboolean       whole;      /* tach_params_gather_all: every unit kept until the update */
  guint          needs;      /* tach_params_need calls since the last update */
};

static inline TachParamSlice *
tach_params_slice (TachParams *params, guint index)
{
  g_return_val_if_fail (index < params->slices->len, NULL);
  return &g_array_index (params->slices, TachParamSlice, index);
}

/* Counts @bytes of kind @kind (0 parameters, 1 gradients, 2 optimizer
 * state) in the backend's held figures; negative to give them back. */
void     tach_params_hold (TachParams *params, guint kind, gint64 bytes);

/* tach-params-gather.c, for tach_params_alloc and the update. */
/* Whether @be's reducer shards the parameters (before the layout). */
gboolean tach_params_gather_wanted (TachParams *params, TachBackend *be);
/* The alignment in bytes of @slice's start, @prev the slice laid out
 * before it (NULL: none): a page where a piece or the frozen slices
 * begin. */
size_t   tach_params_gather_align (TachParams *params, const TachParamSlice *slice,
                                   const TachParamSlice *prev);
/* Maps the parameters and gradients (@grad_floats), untouched: no page is
 * held until it is written. */
gboolean tach_params_gather_map (TachParams *params, size_t grad_floats, GError **error);
/* Cuts the pieces and hands them to the reducer, before its layout. */
void     tach_params_gather_units (TachParams *params);
/* After the ranges are known: the shard's parameters. */
gboolean tach_params_gather_shard (TachParams *params, GError **error);
/* The staging copy's values into the shard and the frozen pages. */
void     tach_params_gather_upload (TachParams *params);
/* Gives back the gradient pages of every unit whose reduce-scatters have
 * completed (@all: every unit's, after the reduce or the fold). */
void     tach_params_gather_release_grads (TachParams *params, gboolean all);
/* Before the optimizer: no all-gather in flight, no unit gathered (their
 * values are about to be stale). */
void     tach_params_gather_settle (TachParams *params);
void     tach_params_gather_free (TachParams *params);

G_END_DECLS
