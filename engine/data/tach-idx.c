/* tach-idx.c: MNIST-format IDX files, plain or gzipped. */
#include "tach-idx.h"

#include <gio/gio.h>
#include <string.h>

#include "tach-engine.h"

/* A data set bigger than this is taken for a corrupt header rather than
 * allocated: MNIST-like sets are tens of megabytes. */
#define TACH_IDX_MAX_BYTES (G_GUINT64_CONSTANT (4) << 30)

#define TACH_IDX_TYPE_UBYTE 0x08

void
tach_idx_free (TachIdx *idx)
{
  if (idx == NULL)
    return;
  g_free (idx->data);
  g_free (idx);
}

/* Reads exactly @n bytes; fewer means the file ended early. */
static gboolean
read_exact (GInputStream *in, const char *path, const char *what, void *buf, gsize n,
            GError **error)
{
  g_autoptr(GError) local = NULL;
  gsize got = 0;

  if (!g_input_stream_read_all (in, buf, n, &got, NULL, &local))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "Cannot read the IDX file %s (truncated or corrupt; download it again): "
                   "%s while reading its %s",
                   path, local->message, what);
      return FALSE;
    }
  if (got < n)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "The IDX file %s is truncated (download it again): its %s needs %"
                   G_GSIZE_FORMAT " bytes but only %" G_GSIZE_FORMAT " remain",
                   path, what, n, got);
      return FALSE;
    }
  return TRUE;
}

/* Opens @path (gzipped or not) and reads its header into @idx. */
static GInputStream *
idx_open (const char *path, TachIdx *idx, GError **error)
{
  g_autoptr(GFile) file = NULL;
  g_autoptr(GFileInputStream) raw = NULL;
  g_autoptr(GInputStream) buffered = NULL;
  g_autoptr(GInputStream) in = NULL;
  g_autoptr(GError) local = NULL;
  const guint8 *peek;
  gsize avail = 0;
  guint8 magic[4];
  guint64 total = 1;

  file = g_file_new_for_path (path);
  raw = g_file_read (file, NULL, &local);
  if (raw == NULL)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "Cannot open the IDX file %s (check the --data path): %s",
                   path, local->message);
      return NULL;
    }

  /* Peek at the first two bytes to recognise gzip whatever the file name. */
  buffered = g_buffered_input_stream_new (G_INPUT_STREAM (raw));
  if (g_buffered_input_stream_fill (G_BUFFERED_INPUT_STREAM (buffered), 2, NULL, &local) < 0)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "Cannot read the IDX file %s: %s", path, local->message);
      return NULL;
    }
  peek = g_buffered_input_stream_peek_buffer (G_BUFFERED_INPUT_STREAM (buffered), &avail);
  if (avail >= 2 && peek[0] == 0x1f && peek[1] == 0x8b)
    {
      g_autoptr(GZlibDecompressor) gz = g_zlib_decompressor_new (G_ZLIB_COMPRESSOR_FORMAT_GZIP);

      in = g_converter_input_stream_new (buffered, G_CONVERTER (gz));
    }
  else
    in = g_object_ref (buffered);

  if (!read_exact (in, path, "header", magic, 4, error))
    return NULL;
  if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0 || magic[3] > TACH_IDX_MAX_DIMS)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "%s is not an IDX file (give an MNIST-format images or labels file): "
                   "wrong magic %02x %02x %02x %02x",
                   path, magic[0], magic[1], magic[2], magic[3]);
      return NULL;
    }
  if (magic[2] != TACH_IDX_TYPE_UBYTE)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "The IDX file %s holds data of type 0x%02x; Tach reads unsigned bytes (0x08) "
                   "only, as MNIST and Fashion-MNIST use", path, magic[2]);
      return NULL;
    }

  idx->n_dims = magic[3];
  for (guint d = 0; d < idx->n_dims; d++)
    {
      guint8 be[4];

      if (!read_exact (in, path, "header", be, 4, error))
        return NULL;
      idx->dims[d] = ((guint32) be[0] << 24) | ((guint32) be[1] << 16)
                     | ((guint32) be[2] << 8) | be[3];
      total *= idx->dims[d];
      if (total > TACH_IDX_MAX_BYTES)
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                       "The IDX file %s claims more than 4 GiB of data; its header is corrupt "
                       "(download it again)", path);
          return NULL;
        }
    }
  if (total == 0)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "The IDX file %s holds no samples (one of its dimensions is 0)", path);
      return NULL;
    }
  idx->n_bytes = (gsize) total;
  return g_steal_pointer (&in);
}

gboolean
tach_idx_read_header (const char *path, TachIdx *header, GError **error)
{
  g_autoptr(GInputStream) in = NULL;

  g_return_val_if_fail (path != NULL && header != NULL, FALSE);

  memset (header, 0, sizeof *header);
  in = idx_open (path, header, error);
  return in != NULL;
}

TachIdx *
tach_idx_load (const char *path, GError **error)
{
  g_autoptr(GInputStream) in = NULL;
  g_autoptr(TachIdx) idx = NULL;

  g_return_val_if_fail (path != NULL, NULL);

  idx = g_new0 (TachIdx, 1);
  in = idx_open (path, idx, error);
  if (in == NULL)
    return NULL;

  idx->data = g_try_malloc (idx->n_bytes);
  if (idx->data == NULL)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_OUT_OF_MEMORY,
                   "Not enough memory to load the IDX file %s: it needs %" G_GSIZE_FORMAT " bytes",
                   path, idx->n_bytes);
      return NULL;
    }
  if (!read_exact (in, path, "data", idx->data, idx->n_bytes, error))
    return NULL;

  return g_steal_pointer (&idx);
}

void
tach_image_set_free (TachImageSet *set)
{
  if (set == NULL)
    return;
  g_free (set->pixels);
  g_free (set->labels);
  g_free (set);
}

TachImageSet *
tach_image_set_load (const char *images_path, const char *labels_path, GError **error)
{
  g_autoptr(TachIdx) images = NULL;
  g_autoptr(TachIdx) labels = NULL;
  g_autoptr(TachImageSet) set = NULL;
  guint max_label = 0;

  images = tach_idx_load (images_path, error);
  if (images == NULL)
    return NULL;
  if (images->n_dims != 3 && images->n_dims != 4)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "%s is not an images file: it has %u dimensions, images have 3 "
                   "(count, height, width) or 4 (with channels)", images_path, images->n_dims);
      return NULL;
    }
  labels = tach_idx_load (labels_path, error);
  if (labels == NULL)
    return NULL;
  if (labels->n_dims != 1)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "%s is not a labels file: it has %u dimensions, labels have 1",
                   labels_path, labels->n_dims);
      return NULL;
    }
  if (labels->dims[0] != images->dims[0])
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "Images and labels do not match (give the labels file of these images): "
                   "%s holds %u images but %s holds %u labels",
                   images_path, images->dims[0], labels_path, labels->dims[0]);
      return NULL;
    }

  for (gsize i = 0; i < labels->n_bytes; i++)
    max_label = MAX (max_label, labels->data[i]);

  set = g_new0 (TachImageSet, 1);
  set->n = images->dims[0];
  set->h = images->dims[1];
  set->w = images->dims[2];
  set->c = images->n_dims == 4 ? images->dims[3] : 1;
  set->pixels = g_steal_pointer (&images->data);
  set->labels = g_steal_pointer (&labels->data);
  set->n_classes = max_label + 1;
  return g_steal_pointer (&set);
}

static char *
find_file (const char *folder, const char *stem)
{
  g_autofree char *plain = g_build_filename (folder, stem, NULL);
  g_autofree char *gz = g_strconcat (plain, ".gz", NULL);

  if (g_file_test (plain, G_FILE_TEST_IS_REGULAR))
    return g_steal_pointer (&plain);
  if (g_file_test (gz, G_FILE_TEST_IS_REGULAR))
    return g_steal_pointer (&gz);
  return NULL;
}

gboolean
tach_idx_find_split (const char *folder, const char *split, char **images_path,
                     char **labels_path)
{
  g_autofree char *images_stem = g_strdup_printf ("%s-images-idx3-ubyte", split);
  g_autofree char *labels_stem = g_strdup_printf ("%s-labels-idx1-ubyte", split);
  g_autofree char *images = find_file (folder, images_stem);
  g_autofree char *labels = find_file (folder, labels_stem);

  if (images == NULL || labels == NULL)
    return FALSE;
  *images_path = g_steal_pointer (&images);
  *labels_path = g_steal_pointer (&labels);
  return TRUE;
}

/* Replaces the first @from in @s by @to, or returns NULL when absent. */
static char *
replace_once (const char *s, const char *from, const char *to)
{
  const char *at = strstr (s, from);

  if (at == NULL)
    return NULL;
  return g_strdup_printf ("%.*s%s%s", (int) (at - s), s, to, at + strlen (from));
}

char *
tach_idx_labels_beside (const char *images_path)
{
  g_autofree char *dir = g_path_get_dirname (images_path);
  g_autofree char *base = g_path_get_basename (images_path);
  g_autofree char *name = replace_once (base, "images-idx3", "labels-idx1");
  g_autofree char *path = NULL;
  g_autofree char *stem = NULL;

  if (name == NULL)
    name = replace_once (base, "images", "labels");
  if (name == NULL)
    return NULL;

  path = g_build_filename (dir, name, NULL);
  if (g_file_test (path, G_FILE_TEST_IS_REGULAR))
    return g_steal_pointer (&path);

  /* The images may be gzipped and the labels not, or the other way round. */
  if (g_str_has_suffix (name, ".gz"))
    stem = g_strndup (name, strlen (name) - 3);
  else
    stem = g_strconcat (name, ".gz", NULL);
  g_free (path);
  path = g_build_filename (dir, stem, NULL);
  if (g_file_test (path, G_FILE_TEST_IS_REGULAR))
    return g_steal_pointer (&path);
  return NULL;
}

gboolean
tach_idx_resolve_data (const char *data, char **train_images, char **train_labels,
                       char **test_images, char **test_labels, GError **error)
{
  *train_images = *train_labels = *test_images = *test_labels = NULL;

  if (g_file_test (data, G_FILE_TEST_IS_DIR))
    {
      if (!tach_idx_find_split (data, "train", train_images, train_labels))
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                       "The folder %s holds no MNIST-format training files: it needs "
                       "train-images-idx3-ubyte and train-labels-idx1-ubyte (gzipped or not)",
                       data);
          return FALSE;
        }
      tach_idx_find_split (data, "t10k", test_images, test_labels);
      return TRUE;
    }
  if (!g_file_test (data, G_FILE_TEST_EXISTS))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "--data %s does not exist: give an MNIST-format folder or images file", data);
      return FALSE;
    }
  *train_labels = tach_idx_labels_beside (data);
  if (*train_labels == NULL)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "No labels file beside %s: put its labels file next to it with \"labels\" "
                   "in place of \"images\" in the name (e.g. train-labels-idx1-ubyte)", data);
      return FALSE;
    }
  *train_images = g_strdup (data);
  return TRUE;
}
