/* tach-lstm-weight-map.c: the LSTM weight block's layouts and the host-side
 * copies through their views (see tach-lstm-weight-map.h). */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-backend.h"
#include "tach-lstm-weight-map.h"

void
tach_lstm_weight_map_canonical (const TachLstmDesc *desc, TachLstmWeightMap *map)
{
  size_t H = desc->H, I = desc->I, per_dir = 4 * H * (I + H + 1);

  memset (map, 0, sizeof *map);
  map->floats = (size_t) desc->dirs * per_dir;
  map->align = sizeof (float);
  for (int d = 0; d < desc->dirs && d < 2; d++)
    for (int g = 0; g < 4; g++)
      {
        map->wx[d][g] = (TachLstmView) { d * per_dir + g * H * I, I };
        map->wh[d][g] = (TachLstmView) { d * per_dir + 4 * H * I + g * H * H, H };
        map->b[d][g] = (TachLstmView) { d * per_dir + 4 * H * (I + H) + g * H, 1 };
      }
}

static gboolean
view_equal (TachLstmView a, TachLstmView b)
{
  return a.offset == b.offset && a.ld == b.ld;
}

gboolean
tach_lstm_weight_map_equal (const TachLstmDesc *desc, const TachLstmWeightMap *a,
                            const TachLstmWeightMap *b)
{
  if (a->floats != b->floats || a->align != b->align)
    return FALSE;
  for (int d = 0; d < desc->dirs; d++)
    for (int g = 0; g < 4; g++)
      if (!view_equal (a->wx[d][g], b->wx[d][g]) || !view_equal (a->wh[d][g], b->wh[d][g])
          || !view_equal (a->b[d][g], b->b[d][g]))
        return FALSE;
  return TRUE;
}

/* Every row of every view as a range, in no particular order. */
static GArray *
view_rows (const TachLstmDesc *desc, const TachLstmWeightMap *map)
{
  GArray *rows = g_array_new (FALSE, FALSE, sizeof (TachLstmRange));

  for (int d = 0; d < desc->dirs; d++)
    for (int g = 0; g < 4; g++)
      {
        TachLstmRange bias = { map->b[d][g].offset, (size_t) desc->H };

        for (int r = 0; r < desc->H; r++)
          {
            TachLstmRange x = { map->wx[d][g].offset + r * map->wx[d][g].ld, (size_t) desc->I };
            TachLstmRange h = { map->wh[d][g].offset + r * map->wh[d][g].ld, (size_t) desc->H };

            g_array_append_val (rows, x);
            g_array_append_val (rows, h);
          }
        g_array_append_val (rows, bias);
      }
  return rows;
}

static gint
range_cmp (gconstpointer a, gconstpointer b)
{
  const TachLstmRange *x = a, *y = b;

  return x->start < y->start ? -1 : x->start > y->start ? 1 : 0;
}

gboolean
tach_lstm_weight_map_check (const TachLstmDesc *desc, const TachLstmWeightMap *map, GError **error)
{
  g_autoptr (GArray) rows = NULL;
  size_t end = 0;

  if (map->align < sizeof (float) || (map->align & (map->align - 1)) != 0)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
                   _("the LSTM weight layout asks for an alignment of %zu bytes, not a power of "
                     "two of at least 4"), map->align);
      return FALSE;
    }
  for (int d = 0; d < desc->dirs; d++)
    for (int g = 0; g < 4; g++)
      {
        /* Bounded first, so that the row arithmetic below cannot wrap. */
        const TachLstmView *views[3] = { &map->wx[d][g], &map->wh[d][g], &map->b[d][g] };
        size_t cols[3] = { (size_t) desc->I, (size_t) desc->H, (size_t) desc->H };
        const char *names[3] = { "W_x", "W_h", "b" };

        for (int k = 0; k < 3; k++)
          if ((k < 2 && views[k]->ld < cols[k]) || views[k]->offset > map->floats
              || views[k]->ld > map->floats)
            {
              g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
                           _("the LSTM weight layout puts %s of gate %d, direction %d at float %zu "
                             "with rows %zu apart, outside a block of %zu floats or shorter than "
                             "its %zu columns"),
                           names[k], g, d, views[k]->offset, views[k]->ld, map->floats, cols[k]);
              return FALSE;
            }
      }
  rows = view_rows (desc, map);
  g_array_sort (rows, range_cmp);
  for (guint i = 0; i < rows->len; i++)
    {
      const TachLstmRange *r = &g_array_index (rows, TachLstmRange, i);

      if (r->start < end || r->start + r->count > map->floats)
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
                       r->start < end
                       ? _("the LSTM weight layout's views overlap at float %zu (block of %zu floats)")
                       : _("the LSTM weight layout's views run past its end at float %zu (block of "
                           "%zu floats)"),
                       r->start < end ? r->start : r->start + r->count, map->floats);
          return FALSE;
        }
      end = r->start + r->count;
    }
  return TRUE;
}

GArray *
tach_lstm_weight_map_holes (const TachLstmDesc *desc, const TachLstmWeightMap *map)
{
  g_autoptr (GArray) rows = view_rows (desc, map);
  GArray *holes = g_array_new (FALSE, FALSE, sizeof (TachLstmRange));
  size_t at = 0;

  g_array_sort (rows, range_cmp);
  for (guint i = 0; i <= rows->len; i++)
    {
      size_t start = i < rows->len ? g_array_index (rows, TachLstmRange, i).start : map->floats;

      if (start > at)
        {
          TachLstmRange hole = { at, start - at };

          g_array_append_val (holes, hole);
        }
      if (i < rows->len)
        at = MAX (at, start + g_array_index (rows, TachLstmRange, i).count);
    }
  return holes;
}

/* Copies every row of @map's views between @block and the canonical
 * weights, to the block when @to_block. */
static void
copy_views (const TachLstmDesc *desc, const TachLstmWeightMap *map, float *canon, float *block,
            gboolean to_block)
{
  TachLstmWeightMap c;

  tach_lstm_weight_map_canonical (desc, &c);
  for (int d = 0; d < desc->dirs; d++)
    for (int g = 0; g < 4; g++)
      {
        const TachLstmView *from[3] = { &c.wx[d][g], &c.wh[d][g], &c.b[d][g] };
        const TachLstmView *to[3] = { &map->wx[d][g], &map->wh[d][g], &map->b[d][g] };
        int rows[3] = { desc->H, desc->H, 1 };
        size_t cols[3] = { (size_t) desc->I, (size_t) desc->H, (size_t) desc->H };

        for (int k = 0; k < 3; k++)
          for (int r = 0; r < rows[k]; r++)
            {
              float *cp = canon + from[k]->offset + r * from[k]->ld;
              float *bp = block + to[k]->offset + r * to[k]->ld;

              memcpy (to_block ? bp : cp, to_block ? cp : bp, cols[k] * sizeof (float));
            }
      }
}

void
tach_lstm_weight_map_scatter (const TachLstmDesc *desc, const TachLstmWeightMap *map,
                              const float *canon, float *block)
{
  memset (block, 0, map->floats * sizeof (float));
  copy_views (desc, map, (float *) canon, block, TRUE);
}

void
tach_lstm_weight_map_gather (const TachLstmDesc *desc, const TachLstmWeightMap *map,
                             const float *block, float *canon)
{
  copy_views (desc, map, canon, (float *) block, FALSE);
}

gboolean
tach_lstm_weight_map (TachBackend *be, const TachLstmDesc *desc, TachLstmWeightMap *map)
{
  GError *error = NULL;

  tach_lstm_weight_map_canonical (desc, map);
  if (be->error != NULL)
    return FALSE;
  if (be->ops->lstm_weight_map == NULL)
    return TRUE;
  if (!be->ops->lstm_weight_map (be, desc, map))
    {
      if (be->error == NULL)
        tach_backend_fail (be, TACH_ERROR_LIBRARY, _("%s could not lay out an LSTM of I=%d H=%d"),
                           be->device->id, desc->I, desc->H);
      tach_lstm_weight_map_canonical (desc, map);
      return FALSE;
    }
  if (!tach_lstm_weight_map_check (desc, map, &error))
    {
      g_prefix_error (&error, "%s: ", be->device->id);
      tach_backend_set_error (be, error);
      tach_lstm_weight_map_canonical (desc, map);
      return FALSE;
    }
  return TRUE;
}
