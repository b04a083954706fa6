/* test-data.c: the IDX reader and its cache, and the text corpus, good and
 * bad input. */
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tach-engine.h"
#include "tach-corpus.h"
#include "tach-idx.h"
#include "tach-idx-cache.h"
#include "test-run-util.h"

typedef struct {
  char *dir;
} Fixture;

static void
fixture_setup (Fixture *f, gconstpointer data)
{
  f->dir = test_make_tmp_dir ("tach-test-data-XXXXXX");
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
  test_remove_tree (f->dir);
  g_free (f->dir);
}

/* An IDX header plus data, as bytes. */
static GByteArray *
make_idx (guint8 type, guint n_dims, const guint32 *dims, guint8 fill)
{
  GByteArray *b = g_byte_array_new ();
  guint8 head[4] = { 0, 0, type, (guint8) n_dims };
  gsize total = 1;

  g_byte_array_append (b, head, 4);
  for (guint d = 0; d < n_dims; d++)
    {
      guint8 be[4] = { dims[d] >> 24, dims[d] >> 16, dims[d] >> 8, dims[d] };

      g_byte_array_append (b, be, 4);
      total *= dims[d];
    }
  for (gsize i = 0; i < total; i++)
    {
      guint8 v = (guint8) (fill + i);

      g_byte_array_append (b, &v, 1);
    }
  return b;
}

static GBytes *
gzip_bytes (const guint8 *data, gsize n)
{
  g_autoptr(GZlibCompressor) gz = g_zlib_compressor_new (G_ZLIB_COMPRESSOR_FORMAT_GZIP, 6);
  g_autoptr(GInputStream) mem = g_memory_input_stream_new_from_data (data, n, NULL);
  g_autoptr(GInputStream) conv = g_converter_input_stream_new (mem, G_CONVERTER (gz));
  g_autoptr(GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr(GError) error = NULL;

  g_output_stream_splice (out, conv, G_OUTPUT_STREAM_SPLICE_CLOSE_TARGET, NULL, &error);
  g_assert_no_error (error);
  return g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
}

static void
test_idx_plain (Fixture *f, gconstpointer data)
{
  const guint32 idims[3] = { 3, 4, 5 }, ldims[1] = { 3 };
  g_autoptr(GByteArray) images = make_idx (0x08, 3, idims, 7);
  g_autoptr(GByteArray) labels = make_idx (0x08, 1, ldims, 2);
  g_autofree char *ipath = test_write_file (f->dir, "train-images-idx3-ubyte", images->data, images->len);
  g_autofree char *lpath = test_write_file (f->dir, "train-labels-idx1-ubyte", labels->data, labels->len);
  g_autofree char *found_i = NULL, *found_l = NULL, *beside = NULL;
  g_autoptr(TachImageSet) set = NULL;
  g_autoptr(GError) error = NULL;

  set = tach_image_set_load (ipath, lpath, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (set->n, ==, 3);
  g_assert_cmpuint (set->h, ==, 4);
  g_assert_cmpuint (set->w, ==, 5);
  g_assert_cmpuint (set->c, ==, 1);
  g_assert_cmpuint (set->pixels[0], ==, 7);
  g_assert_cmpuint (set->pixels[59], ==, 7 + 59);
  g_assert_cmpuint (set->labels[2], ==, 4);
  g_assert_cmpuint (set->n_classes, ==, 5);

  g_assert_true (tach_idx_find_split (f->dir, "train", &found_i, &found_l));
  g_assert_cmpstr (found_i, ==, ipath);
  g_assert_cmpstr (found_l, ==, lpath);
  g_assert_false (tach_idx_find_split (f->dir, "t10k", &found_i, &found_l));
  beside = tach_idx_labels_beside (ipath);
  g_assert_cmpstr (beside, ==, lpath);
}

static void
test_idx_gzip (Fixture *f, gconstpointer data)
{
  const guint32 idims[4] = { 2, 3, 3, 2 }, ldims[1] = { 2 };
  g_autoptr(GByteArray) images = make_idx (0x08, 4, idims, 1);
  g_autoptr(GByteArray) labels = make_idx (0x08, 1, ldims, 0);
  g_autoptr(GBytes) gz = gzip_bytes (images->data, images->len);
  g_autofree char *ipath = test_write_file (f->dir, "x-images-idx3-ubyte.gz", g_bytes_get_data (gz, NULL),
                                       g_bytes_get_size (gz));
  /* The labels are not gzipped: the reader goes by content, not name. */
  g_autofree char *lpath = test_write_file (f->dir, "x-labels-idx1-ubyte", labels->data, labels->len);
  g_autofree char *beside = tach_idx_labels_beside (ipath);
  g_autoptr(TachImageSet) set = NULL;
  g_autoptr(GError) error = NULL;

  g_assert_cmpstr (beside, ==, lpath);
  set = tach_image_set_load (ipath, beside, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (set->n, ==, 2);
  g_assert_cmpuint (set->c, ==, 2);
  g_assert_cmpmem (set->pixels, 36, images->data + 4 + 16, 36);
}

/* Each bad file must fail with TACH_ERROR_DATA and a message naming @needle. */
static void
expect_bad_idx (Fixture *f, const char *name, const guint8 *bytes, gsize n, const char *needle)
{
  g_autofree char *path = test_write_file (f->dir, name, bytes, n);
  g_autoptr(GError) error = NULL;
  g_autoptr(TachIdx) idx = tach_idx_load (path, &error);

  g_assert_null (idx);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  g_test_message ("%s: %s", name, error->message);
  g_assert_nonnull (strstr (error->message, needle));
  g_assert_nonnull (strstr (error->message, path));
}

static void
test_idx_errors (Fixture *f, gconstpointer data)
{
  const guint32 idims[3] = { 4, 6, 6 }, ldims[1] = { 5 };
  g_autoptr(GByteArray) images = make_idx (0x08, 3, idims, 0);
  g_autoptr(GByteArray) labels = make_idx (0x08, 1, ldims, 0);
  g_autoptr(GByteArray) floats = make_idx (0x0d, 1, ldims, 0);
  g_autoptr(GBytes) gz = gzip_bytes (images->data, images->len);
  const guint8 *gzd = g_bytes_get_data (gz, NULL);
  g_autofree guint8 *corrupt = g_memdup2 (gzd, g_bytes_get_size (gz));
  const guint8 text[] = "hello, this is not an IDX file";
  const guint32 huge[3] = { 0x7fffffff, 0x7fff, 0x7fff };
  g_autoptr(GByteArray) absurd = g_byte_array_new ();
  g_autofree char *missing = g_build_filename (f->dir, "nope-images-idx3-ubyte", NULL);
  g_autofree char *ipath = test_write_file (f->dir, "a-images-idx3-ubyte", images->data, images->len);
  g_autofree char *lpath = test_write_file (f->dir, "a-labels-idx1-ubyte", labels->data, labels->len);
  g_autoptr(TachIdx) idx = NULL;
  g_autoptr(TachImageSet) set = NULL;
  g_autoptr(GError) error = NULL;

  idx = tach_idx_load (missing, &error);
  g_assert_null (idx);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  g_assert_nonnull (strstr (error->message, "Cannot open"));
  g_clear_error (&error);

  expect_bad_idx (f, "empty", (const guint8 *) "", 0, "truncated");
  expect_bad_idx (f, "short-header", images->data, 6, "truncated");
  expect_bad_idx (f, "short-data", images->data, images->len - 10, "truncated");
  expect_bad_idx (f, "text", text, sizeof text, "wrong magic");
  expect_bad_idx (f, "floats", floats->data, floats->len, "0x0d");
  expect_bad_idx (f, "gz-truncated", gzd, g_bytes_get_size (gz) / 2, "IDX file");
  /* Garbage after a gzip magic: the inflater refuses it. */
  memset (corrupt + 10, 0xa5, g_bytes_get_size (gz) - 10);
  expect_bad_idx (f, "gz-corrupt", corrupt, g_bytes_get_size (gz), "corrupt");

  {
    guint8 head[4] = { 0, 0, 0x08, 3 };

    g_byte_array_append (absurd, head, 4);
    for (guint d = 0; d < 3; d++)
      {
        guint8 be[4] = { huge[d] >> 24, huge[d] >> 16, huge[d] >> 8, huge[d] };

        g_byte_array_append (absurd, be, 4);
      }
    expect_bad_idx (f, "absurd", absurd->data, absurd->len, "4 GiB");
  }

  /* 4 images but 5 labels. */
  set = tach_image_set_load (ipath, lpath, &error);
  g_assert_null (set);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  g_assert_nonnull (strstr (error->message, "4 images"));
  g_assert_nonnull (strstr (error->message, "5 labels"));
  g_clear_error (&error);

  /* A labels file given as images and the other way round. */
  set = tach_image_set_load (lpath, ipath, &error);
  g_assert_null (set);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  g_assert_nonnull (strstr (error->message, "not an images file"));
}

/* The cache's counters since the last call, and the files it holds. */
static void
cache_delta (TachIdxCacheStats *last, guint64 *hits, guint64 *decodes)
{
  TachIdxCacheStats now;

  tach_idx_cache_get_stats (&now);
  *hits = now.hits - last->hits;
  *decodes = now.decodes - last->decodes;
  *last = now;
}

/* A gzipped images file of @n 28x28 images whose bytes start at @fill. */
static char *
write_images_gz (const char *dir, const char *name, guint n, guint8 fill)
{
  const guint32 dims[3] = { n, 28, 28 };
  g_autoptr(GByteArray) images = make_idx (0x08, 3, dims, fill);
  g_autoptr(GBytes) gz = gzip_bytes (images->data, images->len);

  return test_write_file (dir, name, g_bytes_get_data (gz, NULL), g_bytes_get_size (gz));
}

static void
test_idx_cache_same (Fixture *f, gconstpointer data)
{
  const guint32 ldims[1] = { 50 };
  g_autoptr(GByteArray) labels = make_idx (0x08, 1, ldims, 0);
  g_autofree char *ipath = write_images_gz (f->dir, "c-images-idx3-ubyte.gz", 50, 3);
  g_autofree char *lpath = test_write_file (f->dir, "c-labels-idx1-ubyte", labels->data, labels->len);
  g_autofree char *cwd = g_get_current_dir ();
  g_autoptr(TachIdx) a = NULL, b = NULL, c = NULL, fresh = NULL;
  g_autoptr(TachImageSet) s1 = NULL, s2 = NULL;
  g_autoptr(GError) error = NULL;
  TachIdxCacheStats stats;
  guint64 hits, decodes;

  tach_idx_cache_clear ();
  tach_idx_cache_get_stats (&stats);

  a = tach_idx_cache_load (ipath, &error);
  g_assert_no_error (error);
  b = tach_idx_cache_load (ipath, &error);
  g_assert_no_error (error);
  cache_delta (&stats, &hits, &decodes);
  g_assert_cmpuint (decodes, ==, 1);
  g_assert_cmpuint (hits, ==, 1);
  /* One copy of the bytes, shared. */
  g_assert_true (a == b);
  g_assert_true (a->data == b->data);

  /* The same file by another spelling of its path. */
  g_assert_no_errno (g_chdir (f->dir));
  c = tach_idx_cache_load ("./c-images-idx3-ubyte.gz", &error);
  g_assert_no_errno (g_chdir (cwd));
  g_assert_no_error (error);
  g_assert_true (c == a);

  /* The uncached reader decodes the same bytes. */
  fresh = tach_idx_load (ipath, &error);
  g_assert_no_error (error);
  g_assert_true (fresh != a);
  g_assert_cmpuint (fresh->n_bytes, ==, 50 * 28 * 28);
  g_assert_cmpmem (fresh->data, fresh->n_bytes, a->data, a->n_bytes);

  /* Image sets of two runs share the cached pixels and labels. */
  s1 = tach_image_set_load (ipath, lpath, &error);
  g_assert_no_error (error);
  s2 = tach_image_set_load (ipath, lpath, &error);
  g_assert_no_error (error);
  g_assert_true (s1->pixels == a->data);
  g_assert_true (s2->pixels == a->data);
  g_assert_true (s1->labels == s2->labels);
  cache_delta (&stats, &hits, &decodes);
  g_assert_cmpuint (decodes, ==, 1);  /* the labels */
  g_assert_cmpuint (hits, ==, 4);     /* c, the images twice, the labels once */

  /* Dropping the cache leaves the runs' references valid. */
  tach_idx_cache_clear ();
  tach_idx_cache_get_stats (&stats);
  g_assert_cmpuint (stats.files, ==, 0);
  g_assert_cmpuint (s1->pixels[0], ==, 3);
  g_assert_cmpuint (s2->labels[49], ==, 49);
}

static void
test_idx_cache_changed (Fixture *f, gconstpointer data)
{
  const guint32 dims[1] = { 64 };
  g_autoptr(GByteArray) v1 = make_idx (0x08, 1, dims, 10);
  g_autoptr(GByteArray) v2 = make_idx (0x08, 1, dims, 20);
  g_autoptr(GByteArray) v3 = make_idx (0x08, 2, (const guint32[]) { 8, 9 }, 30);
  g_autofree char *path = test_write_file (f->dir, "changing-idx1-ubyte", v1->data, v1->len);
  g_autoptr(TachIdx) a = NULL, b = NULL, c = NULL, d = NULL;
  g_autoptr(GError) error = NULL;
  struct timespec times[2] = { { 0, UTIME_OMIT }, { 1000000000, 0 } };
  TachIdxCacheStats stats;
  guint64 hits, decodes;
  FILE *out;

  tach_idx_cache_clear ();
  tach_idx_cache_get_stats (&stats);
  a = tach_idx_cache_load (path, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (a->data[0], ==, 10);

  /* Rewritten in place, same size (same inode): the new modification time
   * tells the cache. */
  out = g_fopen (path, "r+b");
  g_assert_nonnull (out);
  g_assert_cmpuint (fwrite (v2->data, 1, v2->len, out), ==, v2->len);
  fclose (out);
  g_assert_no_errno (utimensat (AT_FDCWD, path, times, 0));
  b = tach_idx_cache_load (path, &error);
  g_assert_no_error (error);
  g_assert_true (b != a);
  g_assert_cmpuint (b->data[0], ==, 20);
  /* The first version is still whole for whoever holds it. */
  g_assert_cmpuint (a->data[63], ==, 10 + 63);

  /* Replaced by another file (a new inode), another shape. */
  g_assert_true (g_file_set_contents (path, (const char *) v3->data, v3->len, NULL));
  c = tach_idx_cache_load (path, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (c->n_dims, ==, 2);
  g_assert_cmpuint (c->data[0], ==, 30);
  d = tach_idx_cache_load (path, &error);
  g_assert_true (d == c);

  cache_delta (&stats, &hits, &decodes);
  g_assert_cmpuint (decodes, ==, 3);
  g_assert_cmpuint (hits, ==, 1);
  /* The older versions left the cache. */
  g_assert_cmpuint (stats.files, ==, 1);

  /* A failure is not kept: the file, once fixed, loads. */
  g_assert_true (g_file_set_contents (path, "garbage!", 8, NULL));
  g_assert_null (tach_idx_cache_load (path, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  g_clear_error (&error);
  g_assert_true (g_file_set_contents (path, (const char *) v1->data, v1->len, NULL));
  g_clear_pointer (&a, tach_idx_unref);
  a = tach_idx_cache_load (path, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (a->data[0], ==, 10);
}

static void
test_idx_cache_bounded (Fixture *f, gconstpointer data)
{
  g_autofree char *p1 = write_images_gz (f->dir, "b1-images", 4, 1);
  g_autofree char *p2 = write_images_gz (f->dir, "b2-images", 4, 2);
  g_autofree char *p3 = write_images_gz (f->dir, "b3-images", 4, 3);
  g_autoptr(TachIdx) a = NULL, b = NULL, c = NULL, again = NULL;
  g_autoptr(GError) error = NULL;
  TachIdxCacheStats stats;
  guint64 hits, decodes;

  tach_idx_cache_clear ();
  tach_idx_cache_set_limits (2, TACH_IDX_CACHE_MAX_BYTES);
  tach_idx_cache_get_stats (&stats);
  a = tach_idx_cache_load (p1, &error);
  b = tach_idx_cache_load (p2, &error);
  /* p1 used last: p2 is the oldest when p3 comes. */
  g_clear_pointer (&a, tach_idx_unref);
  a = tach_idx_cache_load (p1, &error);
  c = tach_idx_cache_load (p3, &error);
  g_assert_no_error (error);
  cache_delta (&stats, &hits, &decodes);
  g_assert_cmpuint (stats.files, ==, 2);
  g_assert_cmpuint (stats.bytes, ==, 2 * 4 * 28 * 28);
  g_assert_cmpuint (decodes, ==, 3);
  g_assert_cmpuint (b->data[0], ==, 2);  /* dropped, still held here */

  again = tach_idx_cache_load (p1, &error);
  g_assert_true (again == a);
  g_clear_pointer (&again, tach_idx_unref);
  again = tach_idx_cache_load (p2, &error);
  g_assert_true (again != b);
  cache_delta (&stats, &hits, &decodes);
  g_assert_cmpuint (decodes, ==, 1);
  g_assert_cmpuint (hits, ==, 1);

  /* By bytes: room for one file only. */
  tach_idx_cache_set_limits (8, 4 * 28 * 28);
  tach_idx_cache_get_stats (&stats);
  g_assert_cmpuint (stats.files, ==, 1);

  /* No caching at all. */
  tach_idx_cache_set_limits (0, 0);
  g_clear_pointer (&again, tach_idx_unref);
  again = tach_idx_cache_load (p2, &error);
  g_assert_no_error (error);
  g_assert_true (again != b);
  tach_idx_cache_get_stats (&stats);
  g_assert_cmpuint (stats.files, ==, 0);

  tach_idx_cache_set_limits (TACH_IDX_CACHE_MAX_FILES, TACH_IDX_CACHE_MAX_BYTES);
}

#define CACHE_THREADS 8

typedef struct {
  const char *path;
  GMutex     *lock;
  GCond      *go;
  gboolean   *started;
  TachIdx    *idx;     /* out */
} CacheWorker;

static gpointer
cache_worker (gpointer user)
{
  CacheWorker *w = user;
  g_autoptr(GError) error = NULL;

  /* Everyone starts together, so that they ask while the file loads. */
  g_mutex_lock (w->lock);
  while (!*w->started)
    g_cond_wait (w->go, w->lock);
  g_mutex_unlock (w->lock);

  w->idx = tach_idx_cache_load (w->path, &error);
  g_assert_no_error (error);
  return NULL;
}

static void
test_idx_cache_concurrent (Fixture *f, gconstpointer data)
{
  /* Large enough (a few MB) that decoding it takes a while. */
  g_autofree char *big = write_images_gz (f->dir, "big-images", 6000, 0);
  g_autofree char *small = write_images_gz (f->dir, "small-images", 10, 7);
  CacheWorker workers[CACHE_THREADS];
  GThread *threads[CACHE_THREADS];
  GMutex lock;
  GCond go;
  gboolean started = FALSE;
  TachIdxCacheStats stats;
  guint64 hits, decodes;

  g_mutex_init (&lock);
  g_cond_init (&go);
  tach_idx_cache_clear ();
  tach_idx_cache_get_stats (&stats);
  for (guint t = 0; t < CACHE_THREADS; t++)
    {
      workers[t] = (CacheWorker) { t % 4 == 3 ? small : big, &lock, &go, &started, NULL };
      threads[t] = g_thread_new ("cache-test", cache_worker, &workers[t]);
    }
  g_mutex_lock (&lock);
  started = TRUE;
  g_cond_broadcast (&go);
  g_mutex_unlock (&lock);
  for (guint t = 0; t < CACHE_THREADS; t++)
    g_thread_join (threads[t]);

  /* Each file decoded once, every thread holding the same copy. */
  cache_delta (&stats, &hits, &decodes);
  g_assert_cmpuint (decodes, ==, 2);
  g_assert_cmpuint (hits, ==, CACHE_THREADS - 2);
  for (guint t = 0; t < CACHE_THREADS; t++)
    {
      TachIdx *first = workers[t % 4 == 3 ? 3 : 0].idx;

      g_assert_true (workers[t].idx == first);
      g_assert_cmpuint (workers[t].idx->data[0], ==, t % 4 == 3 ? 7 : 0);
    }
  g_assert_cmpuint (workers[0].idx->n_bytes, ==, 6000 * 28 * 28);
  g_assert_cmpuint (workers[0].idx->data[6000 * 28 * 28 - 1], ==,
                    (guint8) (6000 * 28 * 28 - 1));
  for (guint t = 0; t < CACHE_THREADS; t++)
    tach_idx_unref (workers[t].idx);
  g_mutex_clear (&lock);
  g_cond_clear (&go);
}

static void
test_idx_fashion_mnist (void)
{
  const char *folder = "/usr/share/datasets/fashion-mnist";
  g_autofree char *ipath = NULL, *lpath = NULL;
  g_autoptr(TachImageSet) set = NULL;
  g_autoptr(GError) error = NULL;

  if (!tach_idx_find_split (folder, "t10k", &ipath, &lpath))
    {
      g_test_skip ("Fashion-MNIST (dataset-fashion-mnist) is not installed");
      return;
    }
  set = tach_image_set_load (ipath, lpath, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (set->n, ==, 10000);
  g_assert_cmpuint (set->h, ==, 28);
  g_assert_cmpuint (set->w, ==, 28);
  g_assert_cmpuint (set->n_classes, ==, 10);
}

static void
test_corpus_text (void)
{
  const char *text = "The cat sat. The cat ran! A dog's bone -- the END.\n"
                     "Le café est là; le café.";
  g_autoptr(GError) error = NULL;
  g_autoptr(TachCorpus) corpus = tach_corpus_from_text (text, strlen (text), "mem", 8, &error);
  g_autofree char *back = NULL;

  g_assert_no_error (error);
  g_assert_cmpuint (corpus->vocab_size, ==, 8);
  g_assert_cmpuint (corpus->n_words, ==, 7);
  g_assert_cmpuint (corpus->n_tokens, ==, 17);
  /* the (3), then cat, café, le (2 each, alphabetical), then the first
   * three of the words seen once, alphabetically. */
  g_assert_cmpstr (corpus->words[0], ==, "<unk>");
  g_assert_cmpstr (corpus->words[1], ==, "the");
  g_assert_cmpstr (corpus->words[2], ==, "café");
  g_assert_cmpstr (corpus->words[3], ==, "cat");
  g_assert_cmpstr (corpus->words[4], ==, "le");
  g_assert_cmpstr (corpus->words[5], ==, "a");
  g_assert_cmpstr (corpus->words[6], ==, "bone");
  g_assert_cmpstr (corpus->words[7], ==, "dog's");
  back = tach_corpus_detokenize (corpus, corpus->tokens, corpus->n_tokens);
  g_assert_cmpstr (back, ==, "the cat <unk> the cat <unk> a dog's bone the <unk> "
                   "le café <unk> <unk> le café");
}

static void
test_corpus_pad (void)
{
  const char *text = "one two three four five one two";
  g_autoptr(GError) error = NULL;
  g_autoptr(TachCorpus) corpus = tach_corpus_from_text (text, strlen (text), "mem", 554, &error);

  g_assert_no_error (error);
  g_assert_cmpuint (corpus->vocab_size, ==, 554);
  g_assert_cmpuint (corpus->n_words, ==, 5);
  g_assert_cmpstr (corpus->words[6], ==, "<pad>");
  g_assert_cmpstr (corpus->words[553], ==, "<pad>");
  for (gsize i = 0; i < corpus->n_tokens; i++)
    g_assert_cmpint (corpus->tokens[i], >=, 1);
}

static void
expect_bad_text (Fixture *f, const char *name, const char *bytes, gsize n, const char *needle)
{
  g_autofree char *path = test_write_file (f->dir, name, bytes, n);
  g_autoptr(GError) error = NULL;
  g_autoptr(TachCorpus) corpus = tach_corpus_load (path, 554, &error);

  g_assert_null (corpus);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  g_test_message ("%s: %s", name, error->message);
  g_assert_nonnull (strstr (error->message, needle));
}

static void
test_corpus_errors (Fixture *f, gconstpointer data)
{
  const char binary[] = { 'a', 'b', '\0', 'c', ' ', 'd', 'e', ' ', 'f', ' ', 'g' };
  const char latin1[] = "caf\xe9 one two three four five";
  const char few[] = "to be or not to be, to be!";
  const char good[] = "alpha beta gamma delta epsilon zeta";
  g_autofree char *missing = g_build_filename (f->dir, "missing.txt", NULL);
  g_autofree char *good_path = test_write_file (f->dir, "good.txt", good, strlen (good));
  g_autoptr(TachCorpus) corpus = NULL;
  g_autoptr(GError) error = NULL;

  corpus = tach_corpus_load (missing, 554, &error);
  g_assert_null (corpus);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  g_assert_nonnull (strstr (error->message, "--data"));
  g_clear_error (&error);

  expect_bad_text (f, "empty.txt", "", 0, "empty");
  expect_bad_text (f, "binary.bin", binary, sizeof binary, "not UTF-8 text");
  expect_bad_text (f, "latin1.txt", latin1, strlen (latin1), "offset 3");
  expect_bad_text (f, "few.txt", few, strlen (few), "4 distinct words");
  expect_bad_text (f, "punct.txt", "... !!! ,,,", 11, "0 distinct words");

  corpus = tach_corpus_load (good_path, 554, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (corpus->n_words, ==, 6);
}

static void
test_corpus_generate (void)
{
  g_autoptr(TachCorpus) a = tach_corpus_generate (42, 50000, 554);
  g_autoptr(TachCorpus) b = tach_corpus_generate (42, 50000, 554);
  g_autoptr(TachCorpus) c = tach_corpus_generate (43, 50000, 554);
  g_autoptr(GHashTable) names = g_hash_table_new (g_str_hash, g_str_equal);
  g_autofree guint *hits = g_new0 (guint, 554);
  gsize predicted = 0;
  guint distinct = 0;

  g_assert_cmpuint (a->vocab_size, ==, 554);
  g_assert_cmpuint (a->n_words, ==, 553);
  g_assert_cmpmem (a->tokens, 50000 * sizeof (gint32), b->tokens, 50000 * sizeof (gint32));
  g_assert_cmpint (memcmp (a->tokens, c->tokens, 50000 * sizeof (gint32)), !=, 0);
  for (guint i = 0; i < 554; i++)
    {
      g_assert_false (g_hash_table_contains (names, a->words[i]));
      g_hash_table_add (names, a->words[i]);
    }
  for (gsize t = 0; t < a->n_tokens; t++)
    {
      g_assert_cmpint (a->tokens[t], >=, 1);
      g_assert_cmpint (a->tokens[t], <, 554);
      distinct += hits[a->tokens[t]]++ == 0;
    }
  g_assert_cmpuint (distinct, >, 400);

  /* Learnable: the most common successor of each (previous, last) pair in
   * the first half predicts the second half far above chance (1/553). */
  {
    g_autoptr(GHashTable) best = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
    gsize half = a->n_tokens / 2, tried = 0;

    for (gsize t = 2; t < half; t++)
      {
        gint64 key = (gint64) a->tokens[t - 2] * 1000 + a->tokens[t - 1];
        guint *counts = g_hash_table_lookup (best, &key);

        if (counts == NULL)
          {
            counts = g_new0 (guint, 554);
            g_hash_table_insert (best, g_memdup2 (&key, sizeof key), counts);
          }
        counts[a->tokens[t]]++;
      }
    for (gsize t = half; t < a->n_tokens; t++)
      {
        gint64 key = (gint64) a->tokens[t - 2] * 1000 + a->tokens[t - 1];
        guint *counts = g_hash_table_lookup (best, &key);
        guint arg = 0;

        if (counts == NULL)
          continue;
        tried++;
        for (guint w = 1; w < 554; w++)
          if (counts[w] > counts[arg])
            arg = w;
        predicted += (gint32) arg == a->tokens[t];
      }
    g_assert_cmpuint (tried, >, half / 2);
    g_assert_cmpfloat ((double) predicted / tried, >, 0.4);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add ("/engine/data/idx/plain", Fixture, NULL, fixture_setup, test_idx_plain, fixture_teardown);
  g_test_add ("/engine/data/idx/gzip", Fixture, NULL, fixture_setup, test_idx_gzip, fixture_teardown);
  g_test_add ("/engine/data/idx/errors", Fixture, NULL, fixture_setup, test_idx_errors, fixture_teardown);
  g_test_add ("/engine/data/idx/cache/same", Fixture, NULL, fixture_setup, test_idx_cache_same,
              fixture_teardown);
  g_test_add ("/engine/data/idx/cache/changed", Fixture, NULL, fixture_setup,
              test_idx_cache_changed, fixture_teardown);
  g_test_add ("/engine/data/idx/cache/bounded", Fixture, NULL, fixture_setup,
              test_idx_cache_bounded, fixture_teardown);
  g_test_add ("/engine/data/idx/cache/concurrent", Fixture, NULL, fixture_setup,
              test_idx_cache_concurrent, fixture_teardown);
  g_test_add_func ("/engine/data/idx/fashion-mnist", test_idx_fashion_mnist);
  g_test_add_func ("/engine/data/corpus/text", test_corpus_text);
  g_test_add_func ("/engine/data/corpus/pad", test_corpus_pad);
  g_test_add ("/engine/data/corpus/errors", Fixture, NULL, fixture_setup, test_corpus_errors, fixture_teardown);
  g_test_add_func ("/engine/data/corpus/generate", test_corpus_generate);

  return g_test_run ();
}
