/* tach-cnn-data.h: the cnn's images: an MNIST-format folder or file, Debian's
 * Fashion-MNIST, or seeded synthetic images (tach-cnn-data.c).
 *
 * Threads: the engine thread.
 */
#pragma once

#include <glib.h>

#include "tach-engine.h"
#include "tach-idx.h"

G_BEGIN_DECLS

#define CNN_CLASSES 10

/* Where the images come from and what they look like. */
typedef struct {
  guint32        h, w, c;
  guint64        n_train;
  TachImageSet  *train;      /* owned, NULL for synthetic */
  TachImageSet  *test;       /* owned, NULL when there is no test split */
  float         *prototypes; /* owned, synthetic: [10][C][H][W] */
  guint64        seed;
} TachCnnData;

void        tach_cnn_data_clear (TachCnnData *d);
/* Whether this configuration reads real images, and from where (NULL:
 * synthetic). */
const char *tach_cnn_data_path  (const TachConfig *config);
/* What that is, for tach_config_get_data_source(). */
void        tach_cnn_data_source (const TachConfig *config, const char **kind, char **path);
/* Loads or makes the images @config names; on error says which and why. */
gboolean    tach_cnn_data_load  (TachCnnData *d, const TachConfig *config, GError **error);
/* TachDataset fills: sample @i (NCHW in [0, 1]) and its label; @user is
 * the TachCnnData. */
void        tach_cnn_fill_images    (gpointer user, guint64 i, double *x, void *y);
void        tach_cnn_fill_synthetic (gpointer user, guint64 i, double *x, void *y);
/* Sample @i of @set as float32-exact values in [0, 1], NCHW. */
void        tach_cnn_image_to_chw   (const TachImageSet *set, guint64 i, double *x);

G_END_DECLS
