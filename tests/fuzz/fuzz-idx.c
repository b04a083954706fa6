/* fuzz-idx.c: the IDX reader (plain and gzipped: gzip is told by its
 * magic) on any bytes, as the images file and as the labels file of an
 * image set.  A file is either read whole or refused with a TACH_ERROR_DATA
 * naming it; memory is never sized from a header alone. */
#include <stdlib.h>
#include <stdio.h>

#include "fuzz-util.h"
#include "tach-idx.h"
#include "tach-idx-cache.h"

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  g_autofree char *path = fuzz_write ("input-images-idx3-ubyte", data, size);
  g_autoptr(GError) error = NULL;
  g_autoptr(TachIdx) idx = NULL;
  TachIdx header;
  gboolean header_ok;

  /* No caching: the file's path and size repeat from one input to the next. */
  tach_idx_cache_set_limits (0, 0);

  header_ok = tach_idx_read_header (path, &header, &error);
  if (!header_ok)
    fuzz_check_error (error, TACH_ERROR_DATA, path, "tach_idx_read_header");
  g_clear_error (&error);

  idx = tach_idx_load (path, &error);
  if (idx == NULL)
    fuzz_check_error (error, TACH_ERROR_DATA, path, "tach_idx_load");
  else
    {
      guint64 total = 1;

      if (!header_ok || idx->n_dims != header.n_dims || idx->n_bytes != header.n_bytes)
        {
          fprintf (stderr, "fuzz: the header and the whole file disagree\n");
          abort ();
        }
      for (guint d = 0; d < idx->n_dims; d++)
        total *= idx->dims[d];
      if (total != idx->n_bytes || g_bytes_get_size (idx->bytes) != idx->n_bytes)
        {
          fprintf (stderr, "fuzz: the data is not the size its header says\n");
          abort ();
        }
      /* The first and the last byte are readable (ASan checks the reads). */
      {
        volatile guint8 ends = idx->data[0] ^ idx->data[idx->n_bytes - 1];

        (void) ends;
      }
    }
  g_clear_error (&error);

  /* The same bytes as images and as labels, with a one-label labels file
   * and a one-image images file beside: every pairing is checked. */
  {
    static const guint8 one_label[] = { 0, 0, 8, 1, 0, 0, 0, 1, 3 };
    static const guint8 one_image[] = { 0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 7 };
    g_autofree char *labels = fuzz_write ("one-labels-idx1-ubyte", one_label, sizeof one_label);
    g_autofree char *images = fuzz_write ("one-images-idx3-ubyte", one_image, sizeof one_image);
    g_autoptr(TachImageSet) as_images = NULL;
    g_autoptr(TachImageSet) as_labels = NULL;

    as_images = tach_image_set_load (path, labels, &error);
    if (as_images == NULL)
      fuzz_check_error (error, TACH_ERROR_DATA, NULL, "tach_image_set_load (images)");
    else if (as_images->n != 1 || as_images->n_classes != 4)
      abort ();
    g_clear_error (&error);
    as_labels = tach_image_set_load (images, path, &error);
    if (as_labels == NULL)
      fuzz_check_error (error, TACH_ERROR_DATA, NULL, "tach_image_set_load (labels)");
    else if (as_labels->n != 1 || as_labels->n_classes < 1 || as_labels->n_classes > 256)
      abort ();
    g_clear_error (&error);
  }
  return 0;
}
