/* tach-idx.c: MNIST-format IDX files, plain or gzipped.
 *
 * zlib's gz* reader handles both (a plain file passes through it as is).
 * When libdeflate is there, a gzipped file's data is decoded in one call
 * over the whole file instead, about twice as fast as zlib's inflate: that
 * is most of a cnn run's start on Fashion-MNIST.  Whatever libdeflate
 * refuses goes through zlib again, so that the messages of a truncated or
 * corrupt file are the same in every build.
 */
#include "tach-idx.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <zlib.h>

#include <glib/gstdio.h>

#ifdef HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "tach-engine.h"
#include "tach-error-private.h"
#include <glib/gi18n-lib.h>

/* A data set bigger than this is taken for a corrupt header rather than
 * allocated: MNIST-like sets are tens of megabytes. */
#define TACH_IDX_MAX_BYTES (G_GUINT64_CONSTANT (4) << 30)

#define TACH_IDX_TYPE_UBYTE 0x08

/* Deflate's largest expansion (a long run of one byte), rounded up. */
#define TACH_IDX_GZ_MAX_RATIO 1040

/* zlib's read buffer: large reads of a gzipped file go through it. */
#define TACH_IDX_GZ_BUFFER (256 * 1024)

static void
idx_clear (TachIdx *idx)
{
  g_clear_pointer (&idx->bytes, g_bytes_unref);
}

TachIdx *
tach_idx_ref (TachIdx *idx)
{
  g_return_val_if_fail (idx != NULL, NULL);

  return g_atomic_rc_box_acquire (idx);
}

void
tach_idx_unref (TachIdx *idx)
{
  if (idx == NULL)
    return;
  g_atomic_rc_box_release_full (idx, (GDestroyNotify) idx_clear);
}

/* Reads exactly @n bytes; fewer means the file ended early. */
static gboolean
read_exact (gzFile gz, const char *path, const char *what, void *buf, gsize n,
            GError **error)
{
  gsize got = 0;

  while (got < n)
    {
      /* gzread() counts in int. */
      unsigned chunk = (unsigned) MIN (n - got, (gsize) 1 << 30);
      int r = gzread (gz, (char *) buf + got, chunk);

      if (r < 0)
        {
          int errnum = Z_OK;
          const char *msg = gzerror (gz, &errnum);
          const char *colon = strstr (msg, ": ");

          /* zlib names the file "<fd:N>"; the message names it already. */
          if (g_str_has_prefix (msg, "<fd:") && colon != NULL)
            msg = colon + 2;

          g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                       "Cannot read the IDX file %s (truncated or corrupt; download it again): "
                       "%s while reading its %s",
                       path, errnum == Z_ERRNO ? g_strerror (errno) : msg, what);
          return FALSE;
        }
      if (r == 0)
        break;
      got += (gsize) r;
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

/* Opens @path (gzipped or not) and reads its header into @idx; the length
 * of the header goes to @header_len. */
static gzFile
idx_open (const char *path, TachIdx *idx, gsize *header_len, GError **error)
{
  gzFile gz;
  guint8 magic[4];
  guint64 total = 1;
  int fd;

  fd = g_open (path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0 || (gz = gzdopen (fd, "rb")) == NULL)
    {
      int saved = errno;

      if (fd >= 0)
        g_close (fd, NULL);
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   W_("Cannot open the IDX file %s (check the {data} path): %s"),
                   path, g_strerror (saved));
      return NULL;
    }
  gzbuffer (gz, TACH_IDX_GZ_BUFFER);

  if (!read_exact (gz, path, "header", magic, 4, error))
    goto fail;
  if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0 || magic[3] > TACH_IDX_MAX_DIMS)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "%s is not an IDX file (give an MNIST-format images or labels file): "
                   "wrong magic %02x %02x %02x %02x",
                   path, magic[0], magic[1], magic[2], magic[3]);
      goto fail;
    }
  if (magic[2] != TACH_IDX_TYPE_UBYTE)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "The IDX file %s holds data of type 0x%02x; Tach reads unsigned bytes (0x08) "
                   "only, as MNIST and Fashion-MNIST use", path, magic[2]);
      goto fail;
    }

  idx->n_dims = magic[3];
  for (guint d = 0; d < idx->n_dims; d++)
    {
      guint8 be[4];

      if (!read_exact (gz, path, "header", be, 4, error))
        goto fail;
      idx->dims[d] = ((guint32) be[0] << 24) | ((guint32) be[1] << 16)
                     | ((guint32) be[2] << 8) | be[3];
      total *= idx->dims[d];
      if (total > TACH_IDX_MAX_BYTES)
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                       "The IDX file %s claims more than 4 GiB of data; its header is corrupt "
                       "(download it again)", path);
          goto fail;
        }
    }
  if (total == 0)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "The IDX file %s holds no samples (one of its dimensions is 0)", path);
      goto fail;
    }
  idx->n_bytes = (gsize) total;
  *header_len = 4 + 4 * (gsize) idx->n_dims;
  return gz;

fail:
  gzclose (gz);
  return NULL;
}

gboolean
tach_idx_read_header (const char *path, TachIdx *header, GError **error)
{
  gsize header_len;
  gzFile gz;

  g_return_val_if_fail (path != NULL && header != NULL, FALSE);

  memset (header, 0, sizeof *header);
  gz = idx_open (path, header, &header_len, error);
  if (gz == NULL)
    return FALSE;
  gzclose (gz);
  return TRUE;
}

#ifdef HAVE_LIBDEFLATE
/* The header and data of gzipped @path in one buffer, decoded member by
 * member in whole-buffer calls; NULL (and no error) when libdeflate cannot,
 * for whatever reason: zlib's reader then says why. */
static GBytes *
gunzip_whole (const char *path, gsize n)
{
  g_autofree char *raw = NULL;
  g_autofree guint8 *out = NULL;
  struct libdeflate_decompressor *dec;
  gsize raw_len = 0, in_off = 0, out_off = 0;
  enum libdeflate_result r = LIBDEFLATE_SUCCESS;

  if (!g_file_get_contents (path, &raw, &raw_len, NULL))
    return NULL;
  out = g_try_malloc (n);
  dec = libdeflate_alloc_decompressor ();
  if (out == NULL || dec == NULL)
    {
      libdeflate_free_decompressor (dec);
      return NULL;
    }
  while (out_off < n && in_off < raw_len && r == LIBDEFLATE_SUCCESS)
    {
      size_t in_used = 0, out_used = 0;

      r = libdeflate_gzip_decompress_ex (dec, raw + in_off, raw_len - in_off, out + out_off,
                                         n - out_off, &in_used, &out_used);
      in_off += in_used;
      out_off += out_used;
    }
  libdeflate_free_decompressor (dec);
  if (r != LIBDEFLATE_SUCCESS || out_off < n)
    return NULL;
  return g_bytes_new_take (g_steal_pointer (&out), n);
}
#endif

TachIdx *
tach_idx_load (const char *path, GError **error)
{
  TachIdx header = { 0 };
  TachIdx *idx;
  g_autofree guint8 *data = NULL;
  gsize header_len = 0;
  GStatBuf st;
  gzFile gz;

  g_return_val_if_fail (path != NULL, NULL);

  gz = idx_open (path, &header, &header_len, error);
  if (gz == NULL)
    return NULL;

  /* Memory is never sized from a header alone: a few bytes claiming
   * gigabytes are refused before anything is allocated.  Deflate expands
   * at most about 1032 to 1, so a gzipped file cannot hold more than that. */
  if (g_stat (path, &st) == 0)
    {
      guint64 file_bytes = (guint64) st.st_size;
      guint64 most = gzdirect (gz) ? file_bytes - MIN (file_bytes, header_len)
                                   : file_bytes * TACH_IDX_GZ_MAX_RATIO;

      if (header.n_bytes > most)
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                       "The IDX file %s is truncated (download it again): its data needs %"
                       G_GSIZE_FORMAT " bytes but the file of %" G_GUINT64_FORMAT
                       " bytes cannot hold them", path, header.n_bytes, file_bytes);
          gzclose (gz);
          return NULL;
        }
    }

  idx = g_atomic_rc_box_new0 (TachIdx);
  *idx = header;
#ifdef HAVE_LIBDEFLATE
  /* gzdirect() is known once the header is read: 0 means gzipped. */
  if (!gzdirect (gz))
    {
      g_autoptr(GBytes) whole = gunzip_whole (path, header_len + header.n_bytes);

      if (whole != NULL)
        idx->bytes = g_bytes_new_from_bytes (whole, header_len, header.n_bytes);
    }
#endif
  if (idx->bytes == NULL)
    {
      data = g_try_malloc (header.n_bytes);
      if (data == NULL)
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_OUT_OF_MEMORY,
                       "Not enough memory to load the IDX file %s: it needs %" G_GSIZE_FORMAT
                       " bytes", path, header.n_bytes);
          goto fail;
        }
      if (!read_exact (gz, path, "data", data, header.n_bytes, error))
        goto fail;
      idx->bytes = g_bytes_new_take (g_steal_pointer (&data), header.n_bytes);
    }
  gzclose (gz);
  idx->data = g_bytes_get_data (idx->bytes, NULL);
  return idx;

fail:
  gzclose (gz);
  tach_idx_unref (idx);
  return NULL;
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
                   W_("{data=%s} does not exist: give an MNIST-format folder or images file"), data);
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
