/* tach-lstm-weight-map.h: where an LSTM's parameters lie in its weight block.
 *
 * The fused LSTM op (lstm_fwd/bwd) reads its weights from, and writes its
 * weight gradient into, one block per plan in a layout of the backend's
 * choosing, which the backend reports (tach_lstm_weight_map()): the block's
 * size and alignment and, for each direction and gate (i, f, g, o), where
 * W_x [H, I], W_h [H, H] and the bias [H] start and how far apart their
 * rows are.  The model allocates the block at that size in its flat
 * parameter buffer and goes through these views for everything host-side
 * (initialisation from the canonical weights, reading them back), so the
 * optimiser updates the block in place and no step converts anything.
 *
 * Floats of a block that no view covers (a backend's second bias, padding)
 * start zero and the backend writes their gradient zero, so under Adam and
 * SGD they stay zero: the views are exactly the parameters.
 *
 * The canonical layout is TachLstmDesc's: per direction W_x, W_h, b back to
 * back, gates in order, rows dense; what the CPU backend reads, and what
 * every backend reads for rnn=unrolled.
 */
#pragma once

#include "tach-backend-ops.h"

G_BEGIN_DECLS

typedef struct {
  size_t offset;   /* floats from the block's start */
  size_t ld;       /* floats from one row to the next (a bias: 1) */
} TachLstmView;

struct _TachLstmWeightMap {
  size_t       floats;    /* the block's size */
  size_t       align;     /* bytes its start must be aligned to: a power of two, >= 4 */
  TachLstmView wx[2][4];  /* [direction][gate]: W_x of that gate, H rows of I */
  TachLstmView wh[2][4];  /* W_h, H rows of H */
  TachLstmView b[2][4];   /* the bias, H floats */
};

/* A run of floats of a block: [start, start + count). */
typedef struct {
  size_t start, count;
} TachLstmRange;

/* The canonical layout of @desc (align: one float). */
void     tach_lstm_weight_map_canonical (const TachLstmDesc *desc, TachLstmWeightMap *map);
/* Whether two layouts of @desc are the same (size, alignment, every view). */
gboolean tach_lstm_weight_map_equal (const TachLstmDesc *desc, const TachLstmWeightMap *a,
                                     const TachLstmWeightMap *b);
/* Whether @map is usable for @desc: every view inside the block, no two
 * overlapping, rows at least as long as the matrix's, a power-of-two
 * alignment.  FALSE + TACH_ERROR_LIBRARY saying which view is wrong. */
gboolean tach_lstm_weight_map_check (const TachLstmDesc *desc, const TachLstmWeightMap *map,
                                     GError **error);
/* The runs of the block that no view covers, ascending and merged
 * (TachLstmRange); the layout must pass tach_lstm_weight_map_check(). */
GArray  *tach_lstm_weight_map_holes (const TachLstmDesc *desc, const TachLstmWeightMap *map);
/* Host copies between the canonical weights (tach_lstm_param_count floats)
 * and a block in @map (map->floats): scatter writes every float of
 * the block, the holes zero; gather reads only the views. */
void     tach_lstm_weight_map_scatter (const TachLstmDesc *desc, const TachLstmWeightMap *map,
                                       const float *canon, float *block);
void     tach_lstm_weight_map_gather (const TachLstmDesc *desc, const TachLstmWeightMap *map,
                                      const float *block, float *canon);

/* The layout of the block the fused op reads for plans of @desc on @be:
 * ops->lstm_weight_map, or the canonical one where the backend has none.  On
 * failure (sticky error set, also for a layout that fails the check) the
 * canonical one is filled in and FALSE returned. */
gboolean tach_lstm_weight_map (TachBackend *be, const TachLstmDesc *desc, TachLstmWeightMap *map);

G_END_DECLS
