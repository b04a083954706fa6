/* tach-cnn-data.c: the cnn's images.  Real ones come from --data (an
 * MNIST-format folder or images file) or Debian's Fashion-MNIST when it is
 * installed and --input is 28x28x1; otherwise they are seeded synthetic
 * images that can be learnt: one blurred prototype per class plus noise.
 *
 * Threads: the engine thread.
 */
#include <math.h>

#include <inttypes.h>
#include <glib/gi18n-lib.h>

#include "tach-cnn-data.h"
#include "tach-error-private.h"
#include "tach-rand.h"

#define CNN_FASHION_MNIST "/usr/share/datasets/fashion-mnist"
/* Synthetic images: blobs per class prototype, and the noise amplitude. */
#define CNN_BLOBS 4
#define CNN_NOISE 0.3

void
tach_cnn_data_clear (TachCnnData *d)
{
  g_clear_pointer (&d->train, tach_image_set_free);
  g_clear_pointer (&d->test, tach_image_set_free);
  g_clear_pointer (&d->prototypes, g_free);
}

/* Whether this configuration reads real images, and from where. */
const char *
tach_cnn_data_path (const TachConfig *config)
{
  if (config->data != NULL && config->data[0] != '\0')
    return config->data;
  if (config->input_h == 28 && config->input_w == 28 && config->input_c == 1
      && g_file_test (CNN_FASHION_MNIST, G_FILE_TEST_IS_DIR))
    {
      g_autofree char *i = NULL, *l = NULL;

      if (tach_idx_find_split (CNN_FASHION_MNIST, "train", &i, &l))
        return CNN_FASHION_MNIST;
    }
  return NULL;
}

void
tach_cnn_data_source (const TachConfig *config, const char **kind, char **path)
{
  const char *read = tach_cnn_data_path (config);

  *kind = read == NULL ? N_("synthetic images")
          : g_str_equal (read, CNN_FASHION_MNIST) && (config->data == NULL || config->data[0] == '\0')
          ? N_("Fashion-MNIST (IDX)") : N_("IDX images");
  *path = g_strdup (read);
}

/* Smooth class prototypes: a few seeded Gaussian blobs per channel. */
static float *
make_prototypes (guint64 seed, guint32 h, guint32 w, guint32 c)
{
  size_t plane = (size_t) h * w;
  float *protos = g_new0 (float, CNN_CLASSES * c * plane);
  guint64 counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_DATA, 0x7072);

  for (guint k = 0; k < CNN_CLASSES; k++)
    for (guint ch = 0; ch < c; ch++)
      {
        float *p = protos + ((size_t) k * c + ch) * plane;

        for (guint b = 0; b < CNN_BLOBS; b++)
          {
            guint64 e = (((guint64) k * c + ch) * CNN_BLOBS + b) * 4;
            double cy = tach_rand_uniform (seed, counter, e) * h;
            double cx = tach_rand_uniform (seed, counter, e + 1) * w;
            double r = (0.08 + 0.15 * tach_rand_uniform (seed, counter, e + 2)) * MAX (h, w);
            double amp = 0.5 + 0.5 * tach_rand_uniform (seed, counter, e + 3);

            for (guint y = 0; y < h; y++)
              for (guint x = 0; x < w; x++)
                {
                  double d2 = ((y - cy) * (y - cy) + (x - cx) * (x - cx)) / (r * r);

                  p[(size_t) y * w + x] += (float) (amp * exp (-d2));
                }
          }
      }
  return protos;
}

void
tach_cnn_fill_synthetic (gpointer user, guint64 i, double *x, void *y)
{
  const TachCnnData *d = user;
  size_t n = (size_t) d->c * d->h * d->w;
  int label = (int) (tach_rand_bits (d->seed, TACH_RAND_COUNTER (TACH_RAND_STREAM_LABELS, 0), i)
                     % CNN_CLASSES);
  const float *proto = d->prototypes + (size_t) label * n;
  guint64 counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_DATA, i);

  for (size_t e = 0; e < n; e++)
    {
      double v = proto[e] + CNN_NOISE * (tach_rand_uniform (d->seed, counter, e) - 0.5);

      x[e] = CLAMP (v, 0.0, 1.0);
    }
  *(int32_t *) y = label;
}

/* Sample @i of @set as float32-exact values in [0, 1], NCHW. */
void
tach_cnn_image_to_chw (const TachImageSet *set, guint64 i, double *x)
{
  size_t plane = (size_t) set->h * set->w;
  const guint8 *px = set->pixels + i * plane * set->c;

  for (size_t p = 0; p < plane; p++)
    for (guint ch = 0; ch < set->c; ch++)
      x[ch * plane + p] = (double) (float) (px[p * set->c + ch] / 255.0f);
}

void
tach_cnn_fill_images (gpointer user, guint64 i, double *x, void *y)
{
  const TachCnnData *d = user;

  tach_cnn_image_to_chw (d->train, i, x);
  *(int32_t *) y = d->train->labels[i];
}

static gboolean
check_labels (const TachImageSet *set, const char *path, GError **error)
{
  if (set->n_classes > CNN_CLASSES)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   _("The labels of %s go up to %u; the cnn has %d classes (0 to 9)"),
                   path, set->n_classes - 1, CNN_CLASSES);
      return FALSE;
    }
  return TRUE;
}

gboolean
tach_cnn_data_load (TachCnnData *d, const TachConfig *config, GError **error)
{
  const char *path = tach_cnn_data_path (config);
  g_autofree char *ti = NULL, *tl = NULL, *vi = NULL, *vl = NULL;

  d->seed = config->seed;
  if (path == NULL)
    {
      d->h = config->input_h;
      d->w = config->input_w;
      d->c = config->input_c;
      d->n_train = tach_config_get_samples (config);
      d->prototypes = make_prototypes (config->seed, d->h, d->w, d->c);
      return TRUE;
    }

  if (!tach_idx_resolve_data (path, &ti, &tl, &vi, &vl, error))
    return FALSE;
  d->train = tach_image_set_load (ti, tl, error);
  if (d->train == NULL || !check_labels (d->train, tl, error))
    return FALSE;
  if (vi != NULL)
    {
      d->test = tach_image_set_load (vi, vl, error);
      if (d->test == NULL || !check_labels (d->test, vl, error))
        return FALSE;
      if (d->test->h != d->train->h || d->test->w != d->train->w || d->test->c != d->train->c)
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                       _("The test images %s (%ux%ux%u) differ in size from the training "
                         "images %s (%ux%ux%u)"), vi, d->test->h, d->test->w, d->test->c,
                       ti, d->train->h, d->train->w, d->train->c);
          tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                       TACH_KNOB_DATA, TACH_KNOB_DATA, NULL, NULL);
          return FALSE;
        }
    }
  d->h = d->train->h;
  d->w = d->train->w;
  d->c = d->train->c;
  if ((config->input_h != 28 || config->input_w != 28 || config->input_c != 1)
      && (config->input_h != d->h || config->input_w != d->w || config->input_c != d->c))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("{input=%ux%ux%u} does not match the images of %s (%ux%ux%u): drop {input} "
                     "or {data} (without {data}, larger images are synthetic)"),
                   config->input_h, config->input_w, config->input_c, path, d->h, d->w, d->c);
      /* The fix: the default input, which takes the images' size. */
      tach_error_add_pending_hint (error, TACH_HINT_CONFIG_DEFAULT, TACH_KNOB_INPUT,
                                   TACH_KNOB_INPUT, NULL, NULL);
      return FALSE;
    }
  d->n_train = config->samples > 0 ? MIN (config->samples, d->train->n) : d->train->n;
  return TRUE;
}
