/* tach-csv-read.c: the CSV reader of Open Results (tach-results.c, and
 * explain.csv's in engine/analysis): RFC 4180 records, skipping a
 * malformed one to the next line, over text in memory or over a file read
 * a block at a time; columns found by their header's names and fields read
 * as numbers; and the check the writer makes with it before appending to
 * a file (tach_csv_first_malformed).
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "tach-csv-private.h"
#include "tach-csv-read-private.h"
#include "tach-run-private.h"

/* ---------------------------------------------------------- CSV records */

static gboolean reader_record (Reader *r, GPtrArray *fields, gboolean *bad);

/* After a malformed record: on from the line after the one it started on,
 * so a stray quote costs one line, not the rest of the file. */
static void
reader_resync (Reader *r, const char *start, guint line)
{
  const char *eol = memchr (start, '\n', r->end - start);

  r->at_end |= eol == NULL;
  r->p = eol != NULL ? eol + 1 : r->end;
  r->line = line + 1;
}

/* Reads one RFC 4180 record into @fields (cleared first); *line is set to
 * the line the record starts on.  Accepts LF as well as CRLF line ends.
 * Returns FALSE at the end of the input or on a malformed record (then
 * *bad is TRUE and the reader has moved to the next line), which is one
 * whose fields do not parse or, when @n_fields is not 0, are not
 * @n_fields. */
gboolean
tach_csv_reader_next (Reader *r, GPtrArray *fields, guint n_fields, guint *line,
                      gboolean *bad)
{
  const char *start = r->p;

  *line = r->line;
  r->at_end = FALSE;
  if (reader_record (r, fields, bad)
      && (n_fields == 0 || fields->len == n_fields
          || (fields->len == 1 && *(char *) fields->pdata[0] == '\0')))
    return TRUE;
  if (*bad || (r->p > start && n_fields != 0))
    {
      *bad = TRUE;
      reader_resync (r, start, *line);
    }
  return FALSE;
}

static gboolean
reader_record (Reader *r, GPtrArray *fields, gboolean *bad)
{
  g_autoptr(GString) field = g_string_new (NULL);

  g_ptr_array_set_size (fields, 0);
  *bad = FALSE;
  if (r->p >= r->end)
    {
      r->at_end = TRUE;
      return FALSE;
    }

  for (;;)
    {
      gboolean quoted = FALSE;

      g_string_truncate (field, 0);
      if (r->p < r->end && *r->p == '"')
        {
          quoted = TRUE;
          r->p++;
          for (;;)
            {
              if (r->p >= r->end)
                {
                  *bad = TRUE;  /* a quote never closed */
                  r->at_end = TRUE;
                  return FALSE;
                }
              if (*r->p == '"')
                {
                  r->at_end |= r->p + 1 >= r->end;
                  if (r->p + 1 < r->end && r->p[1] == '"')
                    {
                      g_string_append_c (field, '"');
                      r->p += 2;
                      continue;
                    }
                  r->p++;
                  break;
                }
              if (*r->p == '\n')
                r->line++;
              g_string_append_c (field, *r->p++);
            }
        }
      while (r->p < r->end && *r->p != ',' && *r->p != '\r' && *r->p != '\n')
        {
          if (quoted || *r->p == '"')
            {
              /* Text after a closing quote, or a quote inside an unquoted
               * field. */
              *bad = TRUE;
              return FALSE;
            }
          g_string_append_c (field, *r->p++);
        }
      g_ptr_array_add (fields, g_strndup (field->str, field->len));
      if (r->p >= r->end)
        {
          r->at_end = TRUE;
          return TRUE;
        }
      if (*r->p == ',')
        {
          r->p++;
          continue;
        }
      if (*r->p == '\r' && ++r->p >= r->end)
        r->at_end = TRUE;   /* its LF may follow */
      if (r->p < r->end && *r->p == '\n')
        r->p++;
      r->line++;
      return TRUE;
    }
}

/* ----------------------------------------------------- columns and fields */

GHashTable *
tach_csv_columns_from_header (GPtrArray *header)
{
  GHashTable *columns = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);

  for (guint i = 0; i < header->len; i++)
    if (!g_hash_table_contains (columns, header->pdata[i]))
      g_hash_table_insert (columns, g_strdup (header->pdata[i]), GUINT_TO_POINTER (i + 1));
  return columns;
}

const char *
tach_csv_field (GHashTable *columns, GPtrArray *fields, const char *name)
{
  guint i = GPOINTER_TO_UINT (g_hash_table_lookup (columns, name));

  return i > 0 && i <= fields->len ? fields->pdata[i - 1] : NULL;
}

gboolean
tach_csv_parse_double (const char *text, double *out)
{
  char *end = NULL;

  *out = NAN;
  if (text == NULL || *text == '\0')
    return TRUE;
  errno = 0;
  *out = g_ascii_strtod (text, &end);
  return end != text && *end == '\0' && errno != ERANGE;
}

gboolean
tach_csv_parse_uint64 (const char *text, guint64 *out)
{
  *out = 0;
  if (text == NULL || *text == '\0')
    return TRUE;
  return g_ascii_string_to_unsigned (text, 10, 0, G_MAXUINT64, out, NULL);
}

void
tach_csv_add_problem (GPtrArray *problems, const char *path, guint line, const char *what)
{
  if (problems != NULL)
    g_ptr_array_add (problems, g_strdup_printf ("%s:%u: %s", path, line, what));
}

/* ------------------------------------------------------------ the check */

guint
tach_csv_first_malformed (const char *text, gsize len)
{
  g_autoptr(GPtrArray) fields = g_ptr_array_new_with_free_func (g_free);
  Reader r = { text, text + len, 1, FALSE };
  const char *nul = memchr (text, '\0', len);
  guint line, n_columns;
  gboolean bad;

  /* A NUL byte (a file cut by a crash, filled with zeros) ends C strings
   * early: the reader would take the row for a short one or none at all,
   * and rows appended after it would be hidden behind it. */
  if (nul != NULL)
    {
      guint nul_line = 1;

      for (const char *p = text; p < nul; p++)
        nul_line += *p == '\n';
      return nul_line;
    }
  if (!tach_csv_reader_next (&r, fields, 0, &line, &bad))
    return bad ? line : 0;
  n_columns = fields->len;
  while (tach_csv_reader_next (&r, fields, n_columns, &line, &bad))
    ;
  return bad ? line : 0;
}

/* ------------------------------------------------- a file read in blocks */

/* samples.csv (millions of rows) is read a block at a time, never whole:
 * the reader parses the bytes read so far, and a record that reaches their
 * end (it may go on in the next block) is read again once the next block
 * is there, so records are the same as over the whole file, whatever the
 * block size.  A record of more than RECORD_MAX bytes (a quote never
 * closed, say) is read as if the file ended there: malformed, so skipped
 * to the next line.  Memory stays a block and a record, whatever the file. */
#define RECORD_MAX (1 << 20)

static guint block_size = 1 << 20;

guint
tach_results_set_block_size (guint bytes)
{
  guint old = block_size;

  block_size = MAX (bytes, 1);
  return old;
}

/* Keeps the bytes from r->p on and reads the next block after them. */
static void
blocks_fill (Blocks *b, Reader *r)
{
  gsize keep = b->len - (gsize) (r->p - b->buf);
  gssize n;

  if (keep > 0)
    memmove (b->buf, r->p, keep);
  if (keep + block_size > b->cap)
    {
      b->cap = keep + block_size;
      b->buf = g_realloc (b->buf, b->cap);
    }
  do
    n = read (b->fd, b->buf + keep, block_size);
  while (n < 0 && errno == EINTR);
  if (n <= 0)
    {
      b->eof = TRUE;
      b->read_errno = n < 0 ? errno : 0;
      n = 0;
    }
  b->len = keep + (gsize) n;
  r->p = b->buf;
  r->end = b->buf + b->len;
}

/* tach_csv_reader_next() over @b. */
gboolean
tach_csv_blocks_next (Blocks *b, Reader *r, GPtrArray *fields, guint n_fields,
                      guint *line, gboolean *bad)
{
  for (;;)
    {
      const char *start = r->p;
      guint start_line = r->line;
      gboolean more = tach_csv_reader_next (r, fields, n_fields, line, bad);

      if (!r->at_end || b->eof || (gsize) (r->end - start) > RECORD_MAX)
        return more;
      r->p = start;
      r->line = start_line;
      blocks_fill (b, r);
    }
}
