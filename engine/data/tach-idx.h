/* tach-idx.h: MNIST-format IDX files (images and labels), plain or gzipped.
 *
 * An IDX file is a 4-byte magic (0, 0, type, number of dimensions), the
 * dimensions as big-endian 32-bit integers, then the data.  Only unsigned
 * bytes (type 0x08) are read, which is what MNIST and Fashion-MNIST use.
 *
 * Every failure (a missing file, a truncated or corrupt one, a wrong magic,
 * images and labels that do not match) is a TACH_ERROR_DATA that names the
 * file and the problem.
 *
 * A loaded file is immutable and reference-counted, so that several runs
 * (and the process-wide cache of tach-idx-cache.h, through which
 * tach_image_set_load() goes: tach-image-set.c) share one copy of its bytes.
 *
 * Threads: any.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define TACH_IDX_MAX_DIMS 4

typedef struct {
  guint         n_dims;
  guint32       dims[TACH_IDX_MAX_DIMS];
  const guint8 *data;    /* the product of dims bytes, read-only; NULL in a header */
  gsize         n_bytes;
  GBytes       *bytes;   /* owned: holds data; NULL in a header */
} TachIdx;

/* Reads and decodes a whole IDX file (no cache); gzip is recognised by its
 * magic, not its name.  Returns a new reference. */
TachIdx *tach_idx_load (const char *path, GError **error);
TachIdx *tach_idx_ref (TachIdx *idx);
void     tach_idx_unref (TachIdx *idx);
/* Reads only the header: n_dims, dims and n_bytes; data and bytes stay
 * NULL (@header is a plain struct, not a reference).  For sizing memory
 * before anything is loaded. */
gboolean tach_idx_read_header (const char *path, TachIdx *header, GError **error);

/* Images with their labels: pixels [n, h, w, c] as bytes, labels [n].  The
 * bytes are shared with the cache and other runs: never write to them. */
typedef struct {
  guint32       n, h, w, c;
  const guint8 *pixels;     /* borrowed from images_idx */
  const guint8 *labels;     /* borrowed from labels_idx */
  guint         n_classes;  /* 1 + the largest label */
  TachIdx      *images_idx; /* owned reference */
  TachIdx      *labels_idx; /* owned reference */
} TachImageSet;

/* Loads an images file (3 dimensions: n, h, w; or 4: n, h, w, c) and its
 * labels file (1 dimension: n), through the process-wide cache, and checks
 * that they describe the same number of samples. */
TachImageSet *tach_image_set_load (const char *images_path, const char *labels_path,
                                   GError **error);
void          tach_image_set_free (TachImageSet *set);

/* Finds the files of one split ("train" or "t10k") in @folder, gzipped or
 * not.  Returns FALSE (without an error) when the split is absent. */
gboolean tach_idx_find_split (const char *folder, const char *split, char **images_path,
                              char **labels_path);
/* The labels file beside an images file: the name with "images-idx3"
 * replaced by "labels-idx1" (or "images" by "labels"), or NULL when the
 * name says nothing of the kind or no such file exists. */
char    *tach_idx_labels_beside (const char *images_path);

/* Resolves a --data path to image files: a folder holding the train split
 * (and maybe t10k), or an images file with its labels file beside it.
 * The test paths are set to NULL when there is no test split.
 * TACH_ERROR_DATA when nothing usable is found. */
gboolean tach_idx_resolve_data (const char *data, char **train_images, char **train_labels,
                                char **test_images, char **test_labels, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachIdx, tach_idx_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachImageSet, tach_image_set_free)

G_END_DECLS
