/* tach-idx-cache.c: the process-wide cache of decoded IDX files.
 *
 * A short list, most recently used first, under one lock.  An entry is
 * either loading (the thread that made it decodes the file without the
 * lock; others wait on the condition), ready (it holds a reference) or
 * failed (kept only until the threads that waited for it have its error).
 * An entry is freed only when nobody waits on it.
 */
#include "tach-idx-cache.h"

#include <sys/stat.h>

typedef struct {
  char    *path;      /* owned, canonical */
  guint64  dev, inode, size;
  gint64   mtime_ns;
} FileKey;

typedef struct {
  FileKey  key;
  TachIdx *idx;       /* owned reference; NULL while loading and after a failure */
  GError  *error;     /* owned: why the load failed, for the waiters */
  gboolean loading;
  guint    waiters;   /* threads between asking for the entry and leaving it */
} Entry;

static GMutex cache_lock;
static GCond cache_loaded;
static GQueue cache_entries = G_QUEUE_INIT;  /* of Entry, most recently used first */
static guint cache_max_files = TACH_IDX_CACHE_MAX_FILES;
static gsize cache_max_bytes = TACH_IDX_CACHE_MAX_BYTES;
static guint64 cache_hits;
static guint64 cache_decodes;

/* FALSE when @path cannot be examined: the caller loads it uncached and
 * so gets the reader's message. */
static gboolean
key_init (FileKey *key, const char *path)
{
  struct stat st;

  if (stat (path, &st) != 0 || !S_ISREG (st.st_mode))
    return FALSE;
  key->path = g_canonicalize_filename (path, NULL);
  key->dev = st.st_dev;
  key->inode = st.st_ino;
  key->size = st.st_size;
  key->mtime_ns = (gint64) st.st_mtim.tv_sec * G_GINT64_CONSTANT (1000000000)
                  + st.st_mtim.tv_nsec;
  return TRUE;
}

static gboolean
key_equal (const FileKey *a, const FileKey *b)
{
  return a->dev == b->dev && a->inode == b->inode && a->size == b->size
         && a->mtime_ns == b->mtime_ns && g_str_equal (a->path, b->path);
}

static void
entry_free (Entry *entry)
{
  g_free (entry->key.path);
  g_clear_pointer (&entry->idx, tach_idx_unref);
  g_clear_error (&entry->error);
  g_free (entry);
}

/* Lock held.  Whether the entry may go: nobody loads it or waits on it. */
static gboolean
entry_idle (const Entry *entry)
{
  return !entry->loading && entry->waiters == 0;
}

static void
entry_drop (GList *link)
{
  Entry *entry = link->data;

  g_queue_delete_link (&cache_entries, link);
  entry_free (entry);
}

/* Lock held.  The entry of @key, or NULL; entries of the same path with
 * another key describe an older version of the file and go. */
static Entry *
find (const FileKey *key)
{
  for (GList *l = cache_entries.head; l != NULL;)
    {
      GList *next = l->next;
      Entry *entry = l->data;

      if (g_str_equal (entry->key.path, key->path))
        {
          if (key_equal (&entry->key, key))
            return entry;
          if (entry_idle (entry))
            entry_drop (l);
        }
      l = next;
    }
  return NULL;
}

/* Lock held.  Drops the least recently used ready entries until the ready
 * ones fit the limits. */
static void
trim (void)
{
  guint files = 0;
  gsize bytes = 0;

  for (GList *l = cache_entries.head; l != NULL; l = l->next)
    {
      Entry *entry = l->data;

      if (entry->idx != NULL)
        {
          files++;
          bytes += entry->idx->n_bytes;
        }
    }
  for (GList *l = cache_entries.tail; l != NULL && (files > cache_max_files
                                                    || bytes > cache_max_bytes);)
    {
      GList *prev = l->prev;
      Entry *entry = l->data;

      if (entry->idx != NULL && entry_idle (entry))
        {
          files--;
          bytes -= entry->idx->n_bytes;
          entry_drop (l);
        }
      l = prev;
    }
}

/* Lock held.  Waits for @entry to be loaded and takes its result. */
static TachIdx *
entry_take (Entry *entry, GError **error)
{
  TachIdx *idx = NULL;

  entry->waiters++;
  while (entry->loading)
    g_cond_wait (&cache_loaded, &cache_lock);
  entry->waiters--;

  if (entry->idx != NULL)
    {
      cache_hits++;
      idx = tach_idx_ref (entry->idx);
      g_queue_remove (&cache_entries, entry);
      g_queue_push_head (&cache_entries, entry);
      return idx;
    }
  if (error != NULL)
    *error = g_error_copy (entry->error);
  if (entry_idle (entry))
    {
      g_queue_remove (&cache_entries, entry);
      entry_free (entry);
    }
  return NULL;
}

TachIdx *
tach_idx_cache_load (const char *path, GError **error)
{
  FileKey key = { 0 };
  g_autoptr(GError) local = NULL;
  Entry *entry;
  TachIdx *idx;

  g_return_val_if_fail (path != NULL, NULL);

  if (!key_init (&key, path))
    return tach_idx_load (path, error);

  g_mutex_lock (&cache_lock);
  entry = find (&key);
  if (entry != NULL)
    {
      idx = entry_take (entry, error);
      g_mutex_unlock (&cache_lock);
      g_free (key.path);
      return idx;
    }
  cache_decodes++;
  if (cache_max_files == 0)
    {
      g_mutex_unlock (&cache_lock);
      g_free (key.path);
      return tach_idx_load (path, error);
    }
  entry = g_new0 (Entry, 1);
  entry->key = key;
  entry->loading = TRUE;
  g_queue_push_head (&cache_entries, entry);
  g_mutex_unlock (&cache_lock);

  /* Decoding takes a while: other files are served meanwhile. */
  idx = tach_idx_load (path, &local);

  g_mutex_lock (&cache_lock);
  entry->loading = FALSE;
  if (idx != NULL)
    entry->idx = tach_idx_ref (idx);
  else
    entry->error = g_error_copy (local);
  g_cond_broadcast (&cache_loaded);
  if (idx == NULL && entry_idle (entry))
    {
      g_queue_remove (&cache_entries, entry);
      entry_free (entry);
    }
  trim ();
  g_mutex_unlock (&cache_lock);

  if (idx == NULL)
    g_propagate_error (error, g_steal_pointer (&local));
  return idx;
}

void
tach_idx_cache_set_limits (guint max_files, gsize max_bytes)
{
  g_mutex_lock (&cache_lock);
  cache_max_files = max_files;
  cache_max_bytes = max_bytes;
  trim ();
  g_mutex_unlock (&cache_lock);
}

void
tach_idx_cache_clear (void)
{
  g_mutex_lock (&cache_lock);
  for (GList *l = cache_entries.head; l != NULL;)
    {
      GList *next = l->next;
      Entry *entry = l->data;

      if (entry->idx != NULL && entry_idle (entry))
        entry_drop (l);
      l = next;
    }
  g_mutex_unlock (&cache_lock);
}

void
tach_idx_cache_get_stats (TachIdxCacheStats *stats)
{
  g_return_if_fail (stats != NULL);

  g_mutex_lock (&cache_lock);
  stats->hits = cache_hits;
  stats->decodes = cache_decodes;
  stats->files = 0;
  stats->bytes = 0;
  for (GList *l = cache_entries.head; l != NULL; l = l->next)
    {
      Entry *entry = l->data;

      if (entry->idx != NULL)
        {
          stats->files++;
          stats->bytes += entry->idx->n_bytes;
        }
    }
  g_mutex_unlock (&cache_lock);
}
