/* tach-csv-private.h: the CSV writer's pieces that other files of the
 * engine share (explain.csv is written with them). */
#pragma once

#include "tach-engine.h"

G_BEGIN_DECLS

/* Fields of one row, RFC 4180 quoted, C-locale numbers, NaN empty. */
void      tach_csv_add_field  (GString *row, const char *value);
void      tach_csv_add_double (GString *row, double value);
void      tach_csv_add_uint   (GString *row, guint64 value);
void      tach_csv_end_row    (GString *row);
/* The run's run_id in runs.csv. */
char     *tach_csv_run_id (TachRun *run);
/* Appends @rows (complete CRLF lines) to DIR/@name, made with @header
 * (one CRLF line) when absent, written to a temporary file and renamed.
 * An existing file whose header has a column @header lacks is an error
 * (one with fewer columns is widened: tach_csv_widen()). */
gboolean  tach_csv_append_rows (const char *dir, const char *name, const char *header,
                                const char *rows, GError **error);

/* Rewrites @old (@len bytes: a header line, then records) under @header (a
 * header line ending in CRLF) when every column of the old header is one of
 * @header's: each record's fields move to their column's place, and the
 * columns the old file lacked stay empty.  Fields are copied as written
 * (quotes included).  This is how a folder written before a knob existed
 * accepts runs that have it.  Returns FALSE, writing nothing, when the old
 * header has a column @header lacks (a newer version's file, or not
 * Tach's).  (tach-csv-columns.c) */
gboolean  tach_csv_widen (const char *old, gsize len, const char *header, GString *out);

G_END_DECLS
