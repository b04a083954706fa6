/* tach-csv-columns.c: reading the columns of a CSV file Tach wrote before,
 * so that one written by an earlier version, with fewer knob columns, takes
 * new rows (see tach_csv_widen()).
 */
#include <string.h>

#include "tach-csv-private.h"

typedef struct {
  const char *start;
  gsize       len;
} Field;

/* Reads the fields of one RFC 4180 record starting at @p into @fields (raw:
 * a quoted field keeps its quotes).  Returns where the next record starts. */
static const char *
read_record (const char *p, const char *end, GArray *fields)
{
  g_array_set_size (fields, 0);
  for (;;)
    {
      Field f = { p, 0 };

      if (p < end && *p == '"')
        {
          for (p++; p < end; p++)
            if (*p == '"')
              {
                if (p + 1 < end && p[1] == '"')
                  p++;
                else
                  {
                    p++;
                    break;
                  }
              }
        }
      while (p < end && *p != ',' && *p != '\r' && *p != '\n')
        p++;
      f.len = (gsize) (p - f.start);
      g_array_append_val (fields, f);
      if (p < end && *p == ',')
        {
          p++;
          continue;
        }
      if (p < end && *p == '\r')
        p++;
      if (p < end && *p == '\n')
        p++;
      return p;
    }
}

static gboolean
field_equal (const Field *a, const Field *b)
{
  return a->len == b->len && memcmp (a->start, b->start, a->len) == 0;
}

gboolean
tach_csv_widen (const char *old, gsize len, const char *header, GString *out)
{
  const char *end = old + len;
  const char *header_end = header + strlen (header);
  g_autoptr(GArray) old_columns = g_array_new (FALSE, FALSE, sizeof (Field));
  g_autoptr(GArray) new_columns = g_array_new (FALSE, FALSE, sizeof (Field));
  g_autoptr(GArray) fields = g_array_new (FALSE, FALSE, sizeof (Field));
  g_autoptr(GString) wide = g_string_new (header);
  g_autofree int *source = NULL;
  const char *p;

  p = read_record (old, end, old_columns);
  read_record (header, header_end, new_columns);

  /* Where each new column comes from in the old file (-1: nowhere). */
  source = g_new (int, new_columns->len);
  for (guint c = 0; c < new_columns->len; c++)
    source[c] = -1;
  for (guint o = 0; o < old_columns->len; o++)
    {
      const Field *name = &g_array_index (old_columns, Field, o);
      gboolean found = FALSE;

      for (guint c = 0; c < new_columns->len && !found; c++)
        if (source[c] < 0 && field_equal (name, &g_array_index (new_columns, Field, c)))
          {
            source[c] = (int) o;
            found = TRUE;
          }
      if (!found)
        return FALSE;
    }

  while (p < end)
    {
      p = read_record (p, end, fields);
      /* Blank lines carry no run. */
      if (fields->len == 1 && g_array_index (fields, Field, 0).len == 0)
        continue;
      /* More fields than columns: not a file to rewrite without loss. */
      if (fields->len > old_columns->len)
        return FALSE;
      for (guint c = 0; c < new_columns->len; c++)
        {
          if (c > 0)
            g_string_append_c (wide, ',');
          if (source[c] >= 0 && (guint) source[c] < fields->len)
            g_string_append_len (wide, g_array_index (fields, Field, source[c]).start,
                                 g_array_index (fields, Field, source[c]).len);
        }
      g_string_append (wide, "\r\n");
    }
  g_string_append_len (out, wide->str, wide->len);
  return TRUE;
}
