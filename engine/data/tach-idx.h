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
 * Threads: any; the functions share no state.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define TACH_IDX_MAX_DIMS 4

typedef struct {
  guint    n_dims;
  guint32  dims[TACH_IDX_MAX_DIMS];
  guint8  *data;      /* owned: the product of dims bytes */
  gsize    n_bytes;
} TachIdx;

/* Reads a whole IDX file; gzip is recognised by its magic, not its name. */
TachIdx *tach_idx_load (const char *path, GError **error);
void     tach_idx_free (TachIdx *idx);
/* Reads only the header: n_dims, dims and n_bytes; data stays NULL.  For
 * sizing memory before anything is loaded. */
gboolean tach_idx_read_header (const char *path, TachIdx *header, GError **error);

/* Images with their labels: pixels [n, h, w, c] as bytes, labels [n]. */
typedef struct {
  guint32  n, h, w, c;
  guint8  *pixels;    /* owned */
  guint8  *labels;    /* owned */
  guint    n_classes; /* 1 + the largest label */
} TachImageSet;

/* Loads an images file (3 dimensions: n, h, w; or 4: n, h, w, c) and its
 * labels file (1 dimension: n) and checks that they describe the same
 * number of samples. */
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

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachIdx, tach_idx_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachImageSet, tach_image_set_free)

G_END_DECLS
