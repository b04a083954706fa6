/* tach-csv-stream.c: writing a results folder atomically, as runs go
 * (tach-csv.c formats the rows).
 *
 * Every file is written to a temporary file beside it (".samples.csv.XXXXXX")
 * and renamed over it only once complete: samples.csv first, then
 * runs.csv, the index, so a crash between the two leaves new samples whose
 * run has no row yet, never a row without its samples.  A process killed
 * at any moment leaves the earlier complete files or the new ones, never
 * a partial row; its temporary file is removed by the next writer.
 *
 * samples.csv streams: opening the folder copies its rows into the
 * temporary file block by block, each run's rows follow as the run
 * publishes them (tach_csv_stream_write, the CLI's once-a-second tick),
 * through a buffer of TEMP_FLUSH bytes, and committing writes the rest and
 * renames.  So a run of millions of steps never holds its rows in memory
 * (runs.csv, a row per run, is kept in memory until the commit).
 *
 * A writer locks the folder (flock() on the folder itself, so no lock file
 * is left) from open to free: a second process writing the same folder at
 * once would otherwise rename its files over the first's and lose its
 * rows.  It is refused at once, with a message naming the folder, rather
 * than made to wait for a run that may last hours.  On a file system
 * without locks the folder is written unlocked.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <glib/gi18n-lib.h>
#include <glib/gstdio.h>

#include "tach-csv-private.h"
#include "tach-error-private.h"

/* Samples copied out of a run at a time, to be written as rows. */
#define PIECE 4096

/* A temporary file beside the one it will replace, written through a
 * bounded buffer: a samples.csv of millions of rows never sits in memory
 * whole. */
typedef struct {
  char    *path;   /* owned; NULL once finished or aborted */
  int      fd;
  GString *buf;
} TempFile;

#define TEMP_FLUSH (1 << 20)

static void
temp_abort (TempFile *t)
{
  if (t->path != NULL)
    {
      close (t->fd);
      g_unlink (t->path);
      g_clear_pointer (&t->path, g_free);
    }
  if (t->buf != NULL)
    g_string_free (g_steal_pointer (&t->buf), TRUE);
}

static gboolean
temp_open (TempFile *t, const char *dir, const char *base, GError **error)
{
  g_autofree char *tmpl = g_strdup_printf ("%s%c.%s.XXXXXX", dir, G_DIR_SEPARATOR, base);

  t->fd = g_mkstemp_full (tmpl, O_WRONLY, 0644);
  if (t->fd < 0)
    {
      int err = errno;

      g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                   W_("cannot write to the folder %s: %s: choose a writable {--csv folder|folder}"),
                   dir, g_strerror (err));
      return FALSE;
    }
  t->path = g_steal_pointer (&tmpl);
  t->buf = g_string_sized_new (TEMP_FLUSH + 4096);
  return TRUE;
}

/* Writes out the buffer; on failure aborts (the file is gone). */
static gboolean
temp_flush (TempFile *t, GError **error)
{
  gsize done = 0;

  while (done < t->buf->len)
    {
      gssize n = write (t->fd, t->buf->str + done, t->buf->len - done);

      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        {
          int err = errno;

          g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                       W_("could not write %s: %s: free some disk space or choose another {--csv folder|folder}"),
                       t->path, g_strerror (err));
          temp_abort (t);
          return FALSE;
        }
      done += (gsize) n;
    }
  g_string_truncate (t->buf, 0);
  return TRUE;
}

/* Flushes when the buffer is full. */
static gboolean
temp_maybe_flush (TempFile *t, GError **error)
{
  return t->buf->len < TEMP_FLUSH || temp_flush (t, error);
}

/* Flushes, syncs and closes; returns the file's name (owned by @t until
 * renamed), or NULL with the file gone. */
static const char *
temp_finish (TempFile *t, GError **error)
{
  if (!temp_flush (t, error))
    return NULL;
  /* The data must be on disk before the rename makes it the real file. */
  if (fsync (t->fd) != 0 || close (t->fd) != 0)
    {
      int err = errno;

      g_unlink (t->path);
      g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                   W_("could not write %s: %s: choose another {--csv folder|folder}"), t->path,
                   g_strerror (err));
      g_clear_pointer (&t->path, g_free);
      return NULL;
    }
  t->fd = -1;
  g_string_free (g_steal_pointer (&t->buf), TRUE);
  return t->path;
}

/* Writes @content to a new temporary file in @dir; returns its name. */
static char *
write_temp (const char *dir, const char *base, const GString *content, GError **error)
{
  TempFile t = { 0 };

  if (!temp_open (&t, dir, base, error))
    return NULL;
  g_string_append_len (t.buf, content->str, content->len);
  if (temp_finish (&t, error) == NULL)
    return NULL;
  return t.path;
}

/* Copies the existing @path into @t when its header is @header exactly,
 * block by block; *copied says whether it did (FALSE: absent, empty or
 * another header, for load_existing to judge).  FALSE on a read or write
 * error. */
static gboolean
copy_existing (const char *path, const char *header, TempFile *t, gboolean *copied,
               GError **error)
{
  gsize header_len = strlen (header) - 2;  /* without CRLF */
  g_autofree char *block = g_malloc (TEMP_FLUSH);
  gboolean first = TRUE;
  char last = '\n';
  int fd;

  *copied = FALSE;
  fd = g_open (path, O_RDONLY, 0);
  if (fd < 0)
    return TRUE;
  for (;;)
    {
      gssize n = read (fd, block, TEMP_FLUSH);

      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        {
          int err = errno;

          close (fd);
          g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                       W_("could not read %s: %s: check its permissions or choose another {--csv folder|folder}"),
                       path, g_strerror (err));
          temp_abort (t);
          return FALSE;
        }
      if (first)
        {
          const char *eol = memchr (block, '\n', (gsize) n);
          gsize line = eol != NULL ? (gsize) (eol - block) : 0;

          /* Only the header this version writes is copied as it is. */
          if (eol == NULL || strncmp (block, header, header_len) != 0
              || !(line == header_len || (line == header_len + 1 && block[header_len] == '\r')))
            {
              close (fd);
              return TRUE;
            }
          first = FALSE;
        }
      if (n == 0)
        break;
      g_string_append_len (t->buf, block, n);
      last = block[n - 1];
      if (!temp_maybe_flush (t, error))
        {
          close (fd);
          return FALSE;
        }
    }
  close (fd);
  /* A file cut short by another program gets its last line ended. */
  if (last != '\n')
    g_string_append (t->buf, "\r\n");
  *copied = TRUE;
  return TRUE;
}

/* ------------------------------------------------------------ locking */

/* The files a writer makes, whose temporary copies ".NAME.XXXXXX" a killed
 * writer may leave. */
static const char *const written_names[] = { "runs.csv", "samples.csv", "explain.csv", NULL };

/* Removes temporary files that a killed writer left in @dir (only ever
 * called with the folder locked, so no live writer owns them). */
static void
remove_stale_temps (const char *dir)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;

  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    for (guint i = 0; written_names[i] != NULL; i++)
      {
        gsize len = strlen (written_names[i]);

        if (name[0] == '.' && strncmp (name + 1, written_names[i], len) == 0
            && name[1 + len] == '.' && strlen (name + 2 + len) == 6)
          {
            g_autofree char *path = g_build_filename (dir, name, NULL);

            g_unlink (path);
          }
      }
}

/* Locks @dir for this writer; returns the descriptor that holds the lock
 * (close it to unlock), or -1 with @error. */
static int
lock_folder (const char *dir, GError **error)
{
  int fd = g_open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);

  if (fd < 0)
    {
      int err = errno;

      g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                   W_("could not open the folder %s: %s: choose a writable {--csv folder|folder}"),
                   dir, g_strerror (err));
      return -1;
    }
  while (flock (fd, LOCK_EX | LOCK_NB) != 0)
    {
      int err = errno;

      if (err == EINTR)
        continue;
      if (err == EWOULDBLOCK)
        {
          close (fd);
          g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                       _("the folder %s is being written by another Tach (a run with --csv "
                         "or an export into it): wait until it has finished, or choose "
                         "another folder"), dir);
          return -1;
        }
      /* A file system without locks (ENOLCK, EOPNOTSUPP): unlocked. */
      break;
    }
  remove_stale_temps (dir);
  return fd;
}

/* Creates @dir when absent; *created says whether it did. */
static gboolean
make_folder (const char *dir, gboolean *created, GError **error)
{
  *created = FALSE;
  if (g_file_test (dir, G_FILE_TEST_IS_DIR))
    return TRUE;
  if (g_mkdir_with_parents (dir, 0755) != 0)
    {
      int err = errno;

      g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                   W_("could not create the folder %s: %s: choose a writable {--csv folder|folder}"),
                   dir, g_strerror (err));
      return FALSE;
    }
  *created = TRUE;
  return TRUE;
}

/* Renames the finished temporary @tmp over @path. */
static gboolean
replace_file (const char *tmp, const char *path, GError **error)
{
  if (g_rename (tmp, path) == 0)
    return TRUE;
  {
    int err = errno;

    g_set_error (error, TACH_ERROR, TACH_ERROR_IO, _("could not replace %s: %s"),
                 path, g_strerror (err));
  }
  return FALSE;
}

/* ------------------------------------------------------------- stream */

typedef struct {
  TachRun *run;      /* owned */
  char    *run_id;   /* owned */
  guint    written;  /* samples written as rows */
  gboolean ranks_written;  /* the other ranks' rows, once the run ended */
} StreamRun;

struct _TachCsvStream {
  char       *dir;
  char       *runs_path;
  char       *samples_path;
  int         lock_fd;     /* -1: none */
  gboolean    created;     /* the folder was made by open */
  gboolean    done;        /* committed, or its commit failed */
  gboolean    committed;
  GString    *runs_out;    /* runs.csv as it will be */
  GHashTable *ids;         /* run ids in runs.csv and added */
  TempFile    samples;     /* path NULL once failed or renamed */
  GArray     *runs;        /* StreamRun */
  GArray     *piece;       /* TachSample, reused */
  GError     *error;       /* sticky: the first write error */
};

static void
stream_run_clear (gpointer data)
{
  StreamRun *r = data;

  tach_run_unref (r->run);
  g_free (r->run_id);
}

void
tach_csv_stream_free (TachCsvStream *stream)
{
  if (stream == NULL)
    return;
  temp_abort (&stream->samples);
  /* A folder made for files that were not written goes too. */
  if (stream->created && !stream->committed)
    g_rmdir (stream->dir);
  if (stream->lock_fd >= 0)
    close (stream->lock_fd);
  g_string_free (stream->runs_out, TRUE);
  g_hash_table_unref (stream->ids);
  g_array_unref (stream->runs);
  g_array_unref (stream->piece);
  g_clear_error (&stream->error);
  g_free (stream->dir);
  g_free (stream->runs_path);
  g_free (stream->samples_path);
  g_free (stream);
}

TachCsvStream *
tach_csv_stream_open (const char *dir, GError **error)
{
  g_autoptr(TachCsvStream) s = g_new0 (TachCsvStream, 1);
  g_autofree char *rheader = tach_csv_runs_header ();
  g_autofree char *sheader = tach_csv_samples_header ();
  gboolean copied;

  g_return_val_if_fail (dir != NULL, NULL);

  s->dir = g_strdup (dir);
  s->runs_path = g_build_filename (dir, "runs.csv", NULL);
  s->samples_path = g_build_filename (dir, "samples.csv", NULL);
  s->lock_fd = -1;
  s->runs_out = g_string_new (NULL);
  s->ids = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  s->runs = g_array_new (FALSE, TRUE, sizeof (StreamRun));
  g_array_set_clear_func (s->runs, stream_run_clear);
  s->piece = g_array_sized_new (FALSE, FALSE, sizeof (TachSample), PIECE);

  if (!make_folder (dir, &s->created, error))
    return NULL;
  s->lock_fd = lock_folder (dir, error);
  if (s->lock_fd < 0)
    return NULL;
  /* samples.csv's earlier rows are copied block by block (or, from an
   * earlier version, widened in memory). */
  if (!tach_csv_load_existing (s->runs_path, rheader, s->runs_out, s->ids, error)
      || !temp_open (&s->samples, dir, "samples.csv", error)
      || !copy_existing (s->samples_path, sheader, &s->samples, &copied, error)
      || (!copied && !tach_csv_load_existing (s->samples_path, sheader, s->samples.buf, NULL,
                                              error)))
    return NULL;
  return g_steal_pointer (&s);
}

gboolean
tach_csv_stream_add_run (TachCsvStream *stream, TachRun *run)
{
  StreamRun r = { 0 };

  g_return_val_if_fail (stream != NULL && run != NULL, FALSE);

  for (guint i = 0; i < stream->runs->len; i++)
    if (g_array_index (stream->runs, StreamRun, i).run == run)
      return TRUE;
  r.run_id = tach_csv_run_id (run);
  if (g_hash_table_contains (stream->ids, r.run_id))
    {
      g_free (r.run_id);
      return FALSE;
    }
  g_hash_table_add (stream->ids, g_strdup (r.run_id));
  r.run = tach_run_ref (run);
  g_array_append_val (stream->runs, r);
  return TRUE;
}

guint
tach_csv_stream_get_n_runs (TachCsvStream *stream)
{
  return stream->runs->len;
}

/* The stream's sticky error, or one for a stream already done. */
static gboolean
stream_failed (TachCsvStream *stream, GError **error)
{
  if (stream->error != NULL)
    {
      g_propagate_error (error, g_error_copy (stream->error));
      return TRUE;
    }
  if (stream->done)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                   _("the CSV files in %s were already written"), stream->dir);
      return TRUE;
    }
  return FALSE;
}

/* Writes the samples in stream->piece as rows of @r and empties it;
 * returns how many it wrote, or -1 when the stream failed. */
static gint
write_piece (TachCsvStream *stream, StreamRun *r, GError **error)
{
  guint n = stream->piece->len;

  for (guint i = 0; i < n; i++)
    {
      tach_csv_add_sample_row (stream->samples.buf, r->run_id,
                               &g_array_index (stream->piece, TachSample, i));
      /* On an error the temporary file is gone: the stream has failed,
       * and the folder stays as it was. */
      if (!temp_maybe_flush (&stream->samples, &stream->error))
        {
          g_array_set_size (stream->piece, 0);
          g_propagate_error (error, g_error_copy (stream->error));
          return -1;
        }
    }
  g_array_set_size (stream->piece, 0);
  return (gint) n;
}

/* Data parallel: once the run has ended, the other ranks' rows (rank 0's
 * are the run's own, written as they come). */
static gboolean
write_rank_rows (TachCsvStream *stream, StreamRun *r, GError **error)
{
  TachRunState state = tach_run_get_state (r->run);
  guint n_ranks;

  if (state == TACH_RUN_STATE_RUNNING || state == TACH_RUN_STATE_READY)
    return TRUE;
  r->ranks_written = TRUE;
  n_ranks = tach_run_get_n_ranks (r->run);
  for (guint rank = 1; rank < n_ranks; rank++)
    for (guint from = 0; tach_run_copy_rank_samples (r->run, rank, from, PIECE, stream->piece) > 0;)
      {
        gint n = write_piece (stream, r, error);

        if (n < 0)
          return FALSE;
        from += (guint) n;
      }
  return TRUE;
}

gboolean
tach_csv_stream_write (TachCsvStream *stream, GError **error)
{
  g_return_val_if_fail (stream != NULL, FALSE);

  if (stream_failed (stream, error))
    return FALSE;
  for (guint k = 0; k < stream->runs->len; k++)
    {
      StreamRun *r = &g_array_index (stream->runs, StreamRun, k);

      while (tach_run_copy_samples (r->run, r->written, PIECE, stream->piece) > 0)
        {
          gint n = write_piece (stream, r, error);

          if (n < 0)
            return FALSE;
          r->written += (guint) n;
        }
      if (!r->ranks_written && !write_rank_rows (stream, r, error))
        return FALSE;
    }
  return TRUE;
}

gboolean
tach_csv_stream_commit (TachCsvStream *stream, GError **error)
{
  g_autofree char *samples_tmp = NULL;
  g_autofree char *runs_tmp = NULL;
  GError *local = NULL;

  g_return_val_if_fail (stream != NULL, FALSE);

  if (!tach_csv_stream_write (stream, error))
    return FALSE;
  stream->done = TRUE;
  for (guint k = 0; k < stream->runs->len; k++)
    {
      StreamRun *r = &g_array_index (stream->runs, StreamRun, k);

      tach_csv_add_run_row (stream->runs_out, r->run, r->run_id);
    }
  if (temp_finish (&stream->samples, &local) == NULL)
    goto fail;
  samples_tmp = g_steal_pointer (&stream->samples.path);
  runs_tmp = write_temp (stream->dir, "runs.csv", stream->runs_out, &local);
  if (runs_tmp == NULL || !replace_file (samples_tmp, stream->samples_path, &local))
    goto fail;
  g_clear_pointer (&samples_tmp, g_free);
  if (!replace_file (runs_tmp, stream->runs_path, &local))
    goto fail;
  stream->committed = TRUE;
  return TRUE;

fail:
  if (samples_tmp != NULL)
    g_unlink (samples_tmp);
  if (runs_tmp != NULL)
    g_unlink (runs_tmp);
  stream->error = g_error_copy (local);
  g_propagate_error (error, local);
  return FALSE;
}

gboolean
tach_csv_append (const char *dir, GPtrArray *runs, GError **error)
{
  g_autoptr(TachCsvStream) stream = tach_csv_stream_open (dir, error);

  if (stream == NULL)
    return FALSE;
  for (guint i = 0; runs != NULL && i < runs->len; i++)
    {
      TachRun *run = g_ptr_array_index (runs, i);
      TachRunState state = tach_run_get_state (run);

      /* Only ended runs have figures to export. */
      if (state != TACH_RUN_STATE_READY && state != TACH_RUN_STATE_RUNNING)
        tach_csv_stream_add_run (stream, run);
    }
  return tach_csv_stream_commit (stream, error);
}

/* ------------------------------------------------------ other CSV files */

gboolean
tach_csv_append_rows (const char *dir, const char *name, const char *header,
                      const char *rows, GError **error)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autoptr(GString) out = g_string_new (NULL);
  g_autofree char *tmp = NULL;
  gboolean created;
  int lock_fd;
  gboolean ok;

  if (!make_folder (dir, &created, error))
    return FALSE;
  lock_fd = lock_folder (dir, error);
  if (lock_fd < 0)
    return FALSE;
  ok = tach_csv_load_existing (path, header, out, NULL, error);
  if (ok)
    {
      g_string_append (out, rows);
      tmp = write_temp (dir, name, out, error);
      ok = tmp != NULL;
    }
  if (ok && !replace_file (tmp, path, error))
    {
      g_unlink (tmp);
      ok = FALSE;
    }
  close (lock_fd);
  return ok;
}
