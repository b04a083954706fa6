/* tach-params-gather.c: fully sharded parameters (shard=all, PyTorch
 * FSDP's FULL_SHARD, DeepSpeed's ZeRO stage 3) between the models and the
 * ranks' reducer (engine/run/tach-grad-shard-all.c).
 *
 * The models took their pointers into the flat buffer once, at set-up, and
 * keep them: so the flat buffer stays where it is, a mapping of its own
 * (mmap), and what comes and goes is its pages.  Each unit's pieces start
 * on a page of their own (the floats skipped are trainable zeros, as for
 * any alignment), and so do the frozen slices after them.  Between uses a
 * rank holds its shard of each piece (@shard_data, laid out as the
 * optimizer's state: the reducer's chunk of each bucket) and the frozen
 * slices; tach_params_need all-gathers a unit's pieces into their pages and
 * tach_params_done gives the pages back to the system
 * (madvise MADV_DONTNEED: the memory is really returned, and the pages
 * read as zeros until the next gather writes them).  The gradient buffer
 * is a mapping too: a unit's gradient pages are written by its backward,
 * reduce-scattered, and given back once the reduce-scatter has completed
 * (seen as backward goes on, or at the update), or under gradient
 * accumulation once folded into the sum, which stays whole.
 *
 * A unit marked keep (the root: gpt's tied embedding, used by the first
 * layer and the LM head) stays gathered from its forward to the end of
 * its backward, as FSDP keeps its root unit.  shard-prefetch=next launches
 * the next unit's all-gather (the next in forward order during forward,
 * the previous during backward) once this one's is in, so that it flies
 * while this one computes.  The update gives back whatever is still
 * gathered (its values are about to be stale) and runs the optimizer on
 * the shard alone; nothing is gathered after it.
 *
 * What a rank holds is counted as it changes (the backend's held_*): the
 * shard, the frozen slices and the units' pages while gathered (from the
 * all-gather's launch), the gradients' shard and their pages while
 * written, and the optimizer's state; so the peak is the largest such
 * sum, the units gathered at once included.
 *
 * Threads: the engine thread.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <glib/gi18n-lib.h>

#include "tach-error-private.h"
#include "tach-params-private.h"

/* The held_* accounting is here, below tach-params.c, which also calls
 * it: what a rank holds changes most often as units come and go. */
void
tach_params_hold (TachParams *params, guint kind, gint64 bytes)
{
  TachBackend *be = params->be;
  guint64 *field[3] = { &be->held_params, &be->held_grads, &be->held_state };

  *field[kind] += (guint64) bytes;
  params->held[kind] += (guint64) bytes;
  be->held_peak = MAX (be->held_peak, be->held_params + be->held_grads + be->held_state);
}

static size_t
page_bytes (void)
{
  long page = sysconf (_SC_PAGESIZE);

  return page > 0 ? (size_t) page : 4096;
}

/* @floats' pages, in bytes. */
static size_t
pages_of (size_t floats)
{
  size_t page = page_bytes ();

  return (floats * sizeof (float) + page - 1) / page * page;
}

static void
ensure_units (TachParams *params)
{
  if (params->units != NULL)
    return;
  params->units = g_array_new (FALSE, TRUE, sizeof (TachParamUnit));
  g_array_set_size (params->units, 1);
}

static TachParamUnit *
unit_at (TachParams *params, guint unit)
{
  return &g_array_index (params->units, TachParamUnit, unit);
}

guint
tach_params_unit (TachParams *params, gboolean keep)
{
  gboolean used = FALSE;

  ensure_units (params);
  for (guint i = 0; i < params->slices->len && !used; i++)
    used = tach_params_slice (params, i)->unit == params->unit;
  /* Unit 0 is there from the start: a first call before any slice names
   * it. */
  if (used || params->unit + 1 < params->units->len)
    {
      g_array_set_size (params->units, params->units->len + 1);
      params->unit = params->units->len - 1;
    }
  unit_at (params, params->unit)->keep = keep;
  return params->unit;
}

void
tach_params_use_unit (TachParams *params, guint unit)
{
  ensure_units (params);
  g_return_if_fail (unit < params->units->len);
  params->unit = unit;
}

gboolean
tach_params_gather_wanted (TachParams *params, TachBackend *be)
{
  gboolean trains = FALSE;

  /* The pages are host memory; the reducer offers units only on the MPI
   * path (shard=all on a device is refused by validation). */
  if (be->grad_sync == NULL || be->grad_sync->units == NULL
      || !(be->caps & TACH_BACKEND_CAP_HOST_MEMORY))
    return FALSE;
  for (guint i = 0; i < params->slices->len && !trains; i++)
    trains = tach_params_slice (params, i)->trainable;
  ensure_units (params);
  return trains;
}

size_t
tach_params_gather_align (TachParams *params, const TachParamSlice *slice,
                          const TachParamSlice *prev)
{
  gboolean starts;

  if (!params->fully)
    return slice->align;
  /* A piece starts where the unit changes; the frozen slices after the
   * last one. */
  starts = slice->trainable ? prev != NULL && prev->unit != slice->unit
                            : prev != NULL && prev->trainable;
  return starts ? MAX (slice->align, page_bytes ()) : slice->align;
}

static float *
map_floats (size_t bytes, GError **error)
{
  void *mem = mmap (NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

  if (mem != MAP_FAILED)
    return mem;
  g_set_error (error, TACH_ERROR, TACH_ERROR_OUT_OF_MEMORY,
               _("out of host memory: could not map %zu bytes for the parameters"),
               (gsize) bytes);
  return NULL;
}

gboolean
tach_params_gather_map (TachParams *params, size_t grad_floats, GError **error)
{
  size_t frozen = params->total;

  params->map_bytes[0] = pages_of (MAX (params->total, 1));
  params->map_bytes[1] = pages_of (grad_floats);
  params->data = map_floats (params->map_bytes[0], error);
  if (params->data == NULL)
    return FALSE;
  params->grad = map_floats (params->map_bytes[1], error);
  if (params->grad == NULL)
    return FALSE;
  for (guint i = 0; i < params->slices->len; i++)
    {
      const TachParamSlice *slice = tach_params_slice (params, i);

      if (!slice->trainable)
        frozen = MIN (frozen, slice->offset);
    }
  params->frozen_start = frozen;
  /* The frozen slices are held whole; the rest comes with the shard and
   * the gathers. */
  tach_params_hold (params, 0, (gint64) ((params->total - frozen) * sizeof (float)));
  return TRUE;
}

static int
piece_order (gconstpointer pa, gconstpointer pb)
{
  const TachParamPiece *a = pa, *b = pb;

  /* Backward's order: the last unit's first, and within a unit the
   * higher piece first. */
  if (a->unit != b->unit)
    return a->unit > b->unit ? -1 : 1;
  return a->start > b->start ? -1 : a->start < b->start;
}

void
tach_params_gather_units (TachParams *params)
{
  TachGradSyncHook *hook = params->be->grad_sync;
  GArray *pieces = g_array_new (FALSE, TRUE, sizeof (TachParamPiece));
  g_autofree size_t *start = NULL, *end = NULL;
  g_autofree guint *tensor_bucket = g_new0 (guint, MAX (params->slices->len, 1));
  TachGradUnits units = { 0 };
  guint n_tensors = 0;

  /* The trainable slices lie in the order they were declared: a piece is
   * a run of one unit's. */
  for (guint i = 0; i < params->slices->len; i++)
    {
      const TachParamSlice *slice = tach_params_slice (params, i);
      TachParamPiece *last = pieces->len > 0
                             ? &g_array_index (pieces, TachParamPiece, pieces->len - 1) : NULL;

      if (!slice->trainable)
        continue;
      if (last != NULL && last->unit == slice->unit)
        last->end = slice->offset + slice->count;
      else
        g_array_append_val (pieces, ((TachParamPiece) { slice->offset,
                                                         slice->offset + slice->count,
                                                         slice->unit }));
    }
  g_array_sort (pieces, piece_order);
  params->n_pieces = pieces->len;
  params->pieces = (TachParamPiece *) (void *) g_array_free (pieces, FALSE);

  start = g_new0 (size_t, MAX (params->n_pieces, 1));
  end = g_new0 (size_t, MAX (params->n_pieces, 1));
  for (guint p = 0; p < params->n_pieces; p++)
    {
      const TachParamPiece *piece = &params->pieces[p];
      TachParamUnit *unit = unit_at (params, piece->unit);

      start[p] = piece->start;
      end[p] = piece->end;
      unit->bytes += pages_of (piece->end - piece->start);
      /* Kept units are gathered once a step, the others twice. */
      units.n_gathers += unit->keep ? 1 : 2;
    }
  for (guint i = 0; i < params->slices->len; i++)
    {
      const TachParamSlice *slice = tach_params_slice (params, i);

      if (!slice->trainable)
        continue;
      for (guint p = 0; p < params->n_pieces; p++)
        if (params->pieces[p].start <= slice->offset && slice->offset < params->pieces[p].end)
          tensor_bucket[n_tensors] = p;
      n_tensors++;
    }
  for (guint u = 0; u < params->units->len; u++)
    if (unit_at (params, u)->bytes > 0)
      {
        units.n_units++;
        units.n_kept += unit_at (params, u)->keep;
      }
  units.n_buckets = params->n_pieces;
  units.start = start;
  units.end = end;
  units.tensor_bucket = tensor_bucket;
  units.n_tensors = n_tensors;
  hook->units (hook, &units);
}

gboolean
tach_params_gather_shard (TachParams *params, GError **error)
{
  TachBackend *be = params->be;

  if (params->shard == NULL || params->shard->n != params->n_pieces)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                   W_("{shard=all}: the ranks' reducer did not shard the parameters' units;"
                      " use {shard=grads}"));
      return FALSE;
    }
  params->shard_data = tach_backend_alloc (be, MAX (params->state_total, 1) * sizeof (float));
  tach_backend_zero (be, params->shard_data, params->state_total * sizeof (float));
  if (!tach_backend_take_error (be, error))
    return FALSE;
  tach_params_hold (params, 0, (gint64) (params->state_total * sizeof (float)));
  return TRUE;
}

void
tach_params_gather_upload (TachParams *params)
{
  TachBackend *be = params->be;

  for (guint i = 0; i < params->n_ranges; i++)
    tach_backend_upload (be, params->shard_data + params->range_state[i],
                         params->host + params->range_offset[i],
                         params->range_count[i] * sizeof (float));
  if (params->total > params->frozen_start)
    tach_backend_upload (be, params->data + params->frozen_start,
                         params->host + params->frozen_start,
                         (params->total - params->frozen_start) * sizeof (float));
}

/* Gives @piece's pages of @buffer back to the system. */
static void
give_back (float *buffer, const TachParamPiece *piece)
{
  madvise (buffer + piece->start, pages_of (piece->end - piece->start), MADV_DONTNEED);
}

static void
launch_unit (TachParams *params, guint u, gboolean ahead)
{
  TachGradSyncHook *hook = params->be->grad_sync;
  TachParamUnit *unit = unit_at (params, u);

  for (guint p = 0; p < params->n_pieces; p++)
    if (params->pieces[p].unit == u)
      hook->gather_launch (hook, p, params->shard_data, params->data, ahead);
  unit->flying = TRUE;
  tach_params_hold (params, 0, (gint64) unit->bytes);
}

static void
await_unit (TachParams *params, guint u)
{
  TachGradSyncHook *hook = params->be->grad_sync;
  TachParamUnit *unit = unit_at (params, u);

  for (guint p = 0; p < params->n_pieces; p++)
    if (params->pieces[p].unit == u)
      hook->gather_wait (hook, p);
  unit->flying = FALSE;
  unit->resident = TRUE;
}

/* Gives back unit @u's parameter pages (after waiting for its gathers). */
static void
release_unit (TachParams *params, guint u)
{
  TachParamUnit *unit = unit_at (params, u);

  if (unit->flying)
    await_unit (params, u);
  if (!unit->resident)
    return;
  for (guint p = 0; p < params->n_pieces; p++)
    if (params->pieces[p].unit == u)
      give_back (params->data, &params->pieces[p]);
  unit->resident = FALSE;
  tach_params_hold (params, 0, -(gint64) unit->bytes);
}

static gboolean
usable (TachParams *params, guint unit)
{
  return params->fully && unit < params->units->len && unit_at (params, unit)->bytes > 0;
}

void
tach_params_need (TachParams *params, guint u, gboolean backward)
{
  TachParamUnit *unit;
  guint next;

  if (!params->fully)
    return;
  params->needs++;
  if (!usable (params, u) || !tach_backend_ok (params->be))
    return;
  unit = unit_at (params, u);
  if (!unit->resident)
    {
      if (!unit->flying)
        launch_unit (params, u, FALSE);
      await_unit (params, u);
    }
  /* Its backward writes its gradients' pages. */
  if (backward && !unit->grads)
    {
      unit->grads = TRUE;
      tach_params_hold (params, 1, (gint64) unit->bytes);
    }
  /* FSDP's prefetch: the unit after this one in the pass's order flies
   * while this one computes. */
  next = backward ? u - 1 : u + 1;
  if (params->be->grad_sync->prefetch && (!backward || u > 0) && usable (params, next)
      && !unit_at (params, next)->resident && !unit_at (params, next)->flying)
    launch_unit (params, next, TRUE);
}

void
tach_params_done (TachParams *params, guint u, gboolean backward)
{
  if (!usable (params, u) || params->whole)
    return;
  if (backward || !unit_at (params, u)->keep)
    release_unit (params, u);
  if (backward)
    tach_params_gather_release_grads (params, FALSE);
}

void
tach_params_gather_all (TachParams *params, gboolean gather)
{
  if (!params->fully)
    return;
  params->whole = FALSE;
  if (!gather)
    {
      for (guint u = 0; u < params->units->len; u++)
        release_unit (params, u);
      return;
    }
  params->needs++;
  for (guint u = 0; u < params->units->len; u++)
    if (usable (params, u) && !unit_at (params, u)->resident && !unit_at (params, u)->flying)
      launch_unit (params, u, FALSE);
  for (guint u = 0; u < params->units->len; u++)
    if (unit_at (params, u)->flying)
      await_unit (params, u);
  params->whole = TRUE;
}

/* Whether every bucket of unit @u has been reduce-scattered. */
static gboolean
reduced (TachParams *params, guint u)
{
  TachGradSyncHook *hook = params->be->grad_sync;

  for (guint p = 0; p < params->n_pieces; p++)
    if (params->pieces[p].unit == u && !hook->reduced (hook, p))
      return FALSE;
  return TRUE;
}

void
tach_params_gather_release_grads (TachParams *params, gboolean all)
{
  if (!params->fully)
    return;
  /* Under accumulation the gradients wait for the update's fold. */
  if (!all && params->sum != NULL)
    return;
  for (guint u = 0; u < params->units->len; u++)
    {
      TachParamUnit *unit = unit_at (params, u);

      if (all ? unit->bytes == 0 : !unit->grads || !reduced (params, u))
        continue;
      for (guint p = 0; p < params->n_pieces; p++)
        if (params->pieces[p].unit == u)
          give_back (params->grad, &params->pieces[p]);
      if (unit->grads)
        tach_params_hold (params, 1, -(gint64) unit->bytes);
      unit->grads = FALSE;
    }
}

void
tach_params_gather_settle (TachParams *params)
{
  if (!params->fully)
    return;
  /* A model that computed without asking for its units read zeros. */
  if (params->needs == 0)
    tach_backend_fail (params->be, TACH_ERROR_UNSUPPORTED,
                       W_("{shard=all}: this workload's model computed without gathering its"
                          " parameters; use {shard=grads}"));
  params->needs = 0;
  params->whole = FALSE;
  for (guint u = 0; u < params->units->len; u++)
    release_unit (params, u);
}

void
tach_params_gather_free (TachParams *params)
{
  if (params->fully)
    {
      /* No all-gather may still write into the mapping. */
      for (guint u = 0; u < params->units->len && params->be->grad_sync != NULL; u++)
        if (unit_at (params, u)->flying)
          await_unit (params, u);
      if (params->data != NULL)
        munmap (params->data, params->map_bytes[0]);
      if (params->grad != NULL)
        munmap (params->grad, params->map_bytes[1]);
      params->data = params->grad = NULL;
      tach_backend_dealloc (params->be, params->shard_data);
    }
  g_clear_pointer (&params->pieces, g_free);
  if (params->units != NULL)
    g_array_unref (params->units);
  params->units = NULL;
}
