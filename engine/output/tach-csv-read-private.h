/* tach-csv-read-private.h: the CSV reader (tach-csv-read.c) that reads a
 * results folder back (tach-results.c, and explain.csv in engine/analysis). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  const char *p;
  const char *end;
  guint       line;      /* of p, 1-based */
  gboolean    at_end;    /* the last record read reached end: where more of
                          * the file follows, it may not be what it seemed */
} Reader;

/* A file read a block at a time (tach-csv-read.c says how). */
typedef struct {
  int      fd;
  char    *buf;
  gsize    len;
  gsize    cap;
  gboolean eof;
  int      read_errno;   /* a read error, which ends the file there */
} Blocks;

/* Reads one RFC 4180 record into @fields (cleared first); *line is set to
 * the line the record starts on.  Returns FALSE at the end of the input or
 * on a malformed record (then *bad is TRUE and the reader has moved to the
 * next line), which is one whose fields do not parse or, when @n_fields is
 * not 0, are not @n_fields. */
gboolean tach_csv_reader_next (Reader *r, GPtrArray *fields, guint n_fields, guint *line,
                               gboolean *bad);
/* tach_csv_reader_next() over @b, reading its next blocks as records need
 * them. */
gboolean tach_csv_blocks_next (Blocks *b, Reader *r, GPtrArray *fields, guint n_fields,
                               guint *line, gboolean *bad);

/* Column positions (1-based) by name, from a header record; the first of
 * a repeated name. */
GHashTable *tach_csv_columns_from_header (GPtrArray *header);
/* The field of column @name, or NULL when the file has no such column. */
const char *tach_csv_field (GHashTable *columns, GPtrArray *fields, const char *name);
/* A number, NaN (0) when empty or absent; FALSE when the text is not one. */
gboolean    tach_csv_parse_double (const char *text, double *out);
gboolean    tach_csv_parse_uint64 (const char *text, guint64 *out);
/* Adds "PATH:LINE: WHAT" to @problems (element type char*) when not NULL. */
void        tach_csv_add_problem (GPtrArray *problems, const char *path, guint line,
                                  const char *what);

G_END_DECLS
