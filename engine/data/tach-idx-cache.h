/* tach-idx-cache.h: the process-wide cache of decoded IDX files.
 *
 * Every cnn run on Fashion-MNIST needs the same 60 000 + 10 000 images;
 * decoding them (gunzip) is most of a run's start.  The cache keeps the last
 * few files decoded, keyed by path, size, modification time and inode, so
 * that later runs (a comparison of presets, a second press of Run) start at
 * once, and a file changed on disk is read again.
 *
 * Entries are TachIdx references: immutable, shared by every run that loads
 * the file.  Dropping an entry (to stay within the limits, or on a change
 * of the file) never frees bytes that a run still holds.  A file that
 * several threads ask for at once is decoded once; the others wait for it.
 *
 * Threads: any.
 */
#pragma once

#include "tach-idx.h"

G_BEGIN_DECLS

/* By default the cache keeps at most this many files and bytes (the four
 * files of Fashion-MNIST are 55 MB): the most recently used stay. */
#define TACH_IDX_CACHE_MAX_FILES 8
#define TACH_IDX_CACHE_MAX_BYTES ((gsize) 512 << 20)

typedef struct {
  guint64 hits;     /* loads answered from the cache (waiters included) */
  guint64 decodes;  /* files read and decoded */
  guint   files;    /* files held now */
  gsize   bytes;    /* their data bytes */
} TachIdxCacheStats;

/* Like tach_idx_load(), through the cache: a new reference to the file's
 * decoded contents.  Failures are not cached. */
TachIdx *tach_idx_cache_load (const char *path, GError **error);

/* Changes the bounds (0 files: no caching), dropping what is over them. */
void     tach_idx_cache_set_limits (guint max_files, gsize max_bytes);
/* Drops every entry (references held elsewhere stay valid). */
void     tach_idx_cache_clear (void);
void     tach_idx_cache_get_stats (TachIdxCacheStats *stats);

G_END_DECLS
