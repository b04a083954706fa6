/* tach-image-set.c: images with their labels, as a cnn run reads them: two
 * IDX files loaded through the process-wide cache (tach-idx-cache.c, which
 * decodes with tach-idx.c) and checked against each other.
 */
#include "tach-idx-cache.h"

#include "tach-engine.h"
#include "tach-error-private.h"

void
tach_image_set_free (TachImageSet *set)
{
  if (set == NULL)
    return;
  g_clear_pointer (&set->images_idx, tach_idx_unref);
  g_clear_pointer (&set->labels_idx, tach_idx_unref);
  g_free (set);
}

TachImageSet *
tach_image_set_load (const char *images_path, const char *labels_path, GError **error)
{
  g_autoptr(TachIdx) images = NULL;
  g_autoptr(TachIdx) labels = NULL;
  g_autoptr(TachImageSet) set = NULL;
  guint max_label = 0;

  images = tach_idx_cache_load (images_path, error);
  if (images == NULL)
    return NULL;
  if (images->n_dims != 3 && images->n_dims != 4)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "%s is not an images file: it has %u dimensions, images have 3 "
                   "(count, height, width) or 4 (with channels)", images_path, images->n_dims);
      return NULL;
    }
  labels = tach_idx_cache_load (labels_path, error);
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
  set->pixels = images->data;
  set->labels = labels->data;
  set->n_classes = max_label + 1;
  set->images_idx = g_steal_pointer (&images);
  set->labels_idx = g_steal_pointer (&labels);
  return g_steal_pointer (&set);
}
