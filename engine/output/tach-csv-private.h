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
/* The run's run_id in runs.csv (a run that has started). */
char     *tach_csv_run_id (TachRun *run);
/* The header lines (ending in CRLF) of runs.csv and samples.csv. */
char     *tach_csv_runs_header    (void);
char     *tach_csv_samples_header (void);
/* A header line (CRLF-ended) of the NULL-terminated column @names. */
char     *tach_csv_header_line    (const char *const *names);
/* Appends @run's runs.csv row to @out. */
void      tach_csv_add_run_row    (GString *out, TachRun *run, const char *run_id);
/* Appends one samples.csv row of @sample to @row (empty, or ending a row). */
void      tach_csv_add_sample_row (GString *row, const char *run_id, const TachSample *sample);
/* Appends the file @path to @content (the @header line alone when it is
 * absent or empty) after checking its header, widened when it is an
 * earlier version's (tach_csv_widen); adds the run ids it holds to @ids
 * when not NULL.  A last line cut short gets its CRLF. */
gboolean  tach_csv_load_existing  (const char *path, const char *header, GString *content,
                                   GHashTable *ids, GError **error);
/* Appends @rows (complete CRLF lines) to DIR/@name, made with @header
 * (one CRLF line) when absent, written to a temporary file and renamed,
 * with the folder locked as tach_csv_stream_open() locks it
 * (tach-csv-stream.c).
 * An existing file whose header has a column @header lacks is an error
 * (one with fewer columns is widened: tach_csv_widen()). */
gboolean  tach_csv_append_rows (const char *dir, const char *name, const char *header,
                                const char *rows, GError **error);

/* The line of the first record of @text (@len bytes: a header line, then
 * records) that Open Results (tach_results_load) skips as malformed (a
 * stray quote, or not the header's number of fields), or 0 when every
 * record reads cleanly.  (tach-csv-read.c, Open Results' reader) */
guint     tach_csv_first_malformed (const char *text, gsize len);

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
