/* fuzz-util.h: what the libFuzzer harnesses share.
 *
 * Each harness defines LLVMFuzzerTestOneInput().  Built with clang's
 * -fsanitize=fuzzer (meson -Dfuzzing=true) it is a fuzzer; built in the
 * normal suite it is linked with fuzz-replay.c, which feeds it every file
 * of its corpus folder (the seeds and every input that ever crashed), so
 * that what the fuzzers once found stays fixed.
 *
 * A harness aborts (which both builds report) when a parser breaks its
 * contract: a failure that is not the documented error code, or whose
 * message does not name the file.
 */
#pragma once

#include <glib.h>

#include "tach-engine.h"

G_BEGIN_DECLS

int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

/* A folder of this process's own under the temporary folder, made on the
 * first call and removed at exit (with what the harness left in it). */
const char *fuzz_tmp_dir (void);
/* Writes @size bytes to @name in fuzz_tmp_dir(); returns the path (owned
 * by the caller).  Aborts when the file cannot be written. */
char       *fuzz_write (const char *name, const guint8 *data, size_t size);
/* Makes the results folder @dir from one input: the bytes before its first
 * NUL become runs.csv, those after it samples.csv (no NUL: no samples.csv,
 * and any earlier one is removed).  Aborts when a file cannot be written. */
void        fuzz_write_folder (const char *dir, const char *runs_path, const char *samples_path,
                               const guint8 *data, size_t size);
/* Aborts with @what and the error unless @error is in TACH_ERROR with
 * @code and its message contains @needle (the file's name; NULL: any). */
void        fuzz_check_error (const GError *error, int code, const char *needle,
                              const char *what);

G_END_DECLS
