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
 * An existing file with another header is an error. */
gboolean  tach_csv_append_rows (const char *dir, const char *name, const char *header,
                                const char *rows, GError **error);

G_END_DECLS
