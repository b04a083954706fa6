/* tach-strided.c: a store of per-step records bounded by keeping every
 * Nth step (tach-strided.h). */
#include <string.h>

#include "tach-strided.h"

void
tach_strided_init (TachStrided *s, gsize elem_size, gsize step_offset, guint max)
{
  s->items = g_array_new (FALSE, FALSE, (guint) elem_size);
  s->step_offset = step_offset;
  s->max = MAX (max, 64);
  s->stride = 1;
}

void
tach_strided_clear (TachStrided *s)
{
  g_clear_pointer (&s->items, g_array_unref);
}

gboolean
tach_strided_keeps (const TachStrided *s, guint64 step)
{
  return step % s->stride == 0;
}

static guint64
step_of (const TachStrided *s, const void *item)
{
  guint64 step;

  memcpy (&step, (const guchar *) item + s->step_offset, sizeof step);
  return step;
}

/* Doubles the stride and drops the records of the steps no longer kept. */
static void
thin (TachStrided *s)
{
  guint size = g_array_get_element_size (s->items);
  guchar *data = (guchar *) s->items->data;
  guint kept = 0;

  s->stride *= 2;
  for (guint i = 0; i < s->items->len; i++)
    if (tach_strided_keeps (s, step_of (s, data + (gsize) i * size)))
      {
        if (kept != i)
          memcpy (data + (gsize) kept * size, data + (gsize) i * size, size);
        kept++;
      }
  g_array_set_size (s->items, kept);
}

gboolean
tach_strided_add (TachStrided *s, const void *item)
{
  guint64 step = step_of (s, item);

  if (!tach_strided_keeps (s, step))
    return FALSE;
  while (s->items->len >= s->max && s->stride < G_MAXUINT64 / 2)
    {
      thin (s);
      if (!tach_strided_keeps (s, step))
        return FALSE;
    }
  g_array_append_vals (s->items, item, 1);
  return TRUE;
}
