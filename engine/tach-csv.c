/* tach-csv.c: runs.csv and samples.csv.
 *
 * RFC 4180 (CRLF line ends, fields quoted when they need it), numbers in
 * the C locale whatever setlocale() says, NaN as an empty field, so both
 * files open in LibreOffice and pandas with no options.
 *
 * Appending rewrites each file: the old content plus the new rows go to a
 * temporary file in the same folder, and only when both temporary files
 * are complete are they renamed over the old ones (samples first, runs.csv,
 * the index, last).  An error leaves the files as they were and no
 * temporary file behind.  A run already in runs.csv is not written twice.
 * A file written by an earlier version, with fewer knob columns, is
 * rewritten under the current header, its rows keeping their values.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include <glib/gi18n-lib.h>
#include <glib/gstdio.h>

#include "tach-csv-private.h"
#include "tach-error-private.h"

static const char *const samples_header[] = {
  "run_id", "step", "warmup", "wall_s", "step_ms", "feed_ms", "compute_ms", "sync_ms",
  "host_ms", "loss", "accuracy", "device_step_ms", "api_calls", NULL
};

/* Columns of runs.csv after the knobs. */
static const char *const runs_tail[] = {
  "state", "error", "measured_steps", "median_steps_per_s", "p10_steps_per_s",
  "p90_steps_per_s", "items_per_s", "items_unit", "first_loss", "final_loss",
  "loss_window_steps",
  "test_accuracy", "feed_share", "compute_share", "sync_share", "host_share",
  "flops_per_step", "achieved_gflops", "peak_share", "peak_memory_bytes", "wall_s",
  "rate_clock", "e2e_steps_per_s", "algorithms", "api_calls_per_step", "varied", "varied_value",
  NULL
};

static void
add_field (GString *row, const char *value)
{
  if (row->len > 0 && row->str[row->len - 1] != '\n')
    g_string_append_c (row, ',');
  if (value == NULL)
    return;
  if (strpbrk (value, ",\"\r\n") != NULL || (*value != '\0'
      && (g_ascii_isspace (value[0]) || g_ascii_isspace (value[strlen (value) - 1]))))
    {
      g_string_append_c (row, '"');
      for (const char *p = value; *p != '\0'; p++)
        {
          if (*p == '"')
            g_string_append_c (row, '"');
          g_string_append_c (row, *p);
        }
      g_string_append_c (row, '"');
    }
  else
    g_string_append (row, value);
}

static void
add_double (GString *row, double value)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  /* A figure the engine did not observe stays empty, never 0 or "nan". */
  if (!isfinite (value))
    add_field (row, "");
  else
    add_field (row, g_ascii_formatd (buf, sizeof buf, "%.10g", value));
}

static void
add_uint (GString *row, guint64 value)
{
  char buf[32];

  g_snprintf (buf, sizeof buf, "%" G_GUINT64_FORMAT, value);
  add_field (row, buf);
}

static void
end_row (GString *row)
{
  g_string_append (row, "\r\n");
}

/* Knob columns: every knob except the ones runs.csv puts first. */
static gboolean
knob_is_column (const TachKnobInfo *knob)
{
  static const char *const leading[] = { "workload", "task", "device", "preset", NULL };

  return !g_strv_contains (leading, knob->name);
}

static char *
runs_header (void)
{
  g_autoptr(GString) row = g_string_new (NULL);
  guint n_knobs = 0;
  const TachKnobInfo *knobs = tach_knobs (&n_knobs);

  for (const char *const *c = (const char *const[]) { "run_id", "date", "workload", "task",
                                                       "device", "device_name", "versions",
                                                       "preset", NULL };
       *c != NULL; c++)
    add_field (row, *c);
  for (guint i = 0; i < n_knobs; i++)
    if (knob_is_column (&knobs[i]))
      add_field (row, knobs[i].name);
  for (guint i = 0; runs_tail[i] != NULL; i++)
    add_field (row, runs_tail[i]);
  end_row (row);
  return g_string_free (g_steal_pointer (&row), FALSE);
}

static char *
samples_header_line (void)
{
  g_autoptr(GString) row = g_string_new (NULL);

  for (guint i = 0; samples_header[i] != NULL; i++)
    add_field (row, samples_header[i]);
  end_row (row);
  return g_string_free (g_steal_pointer (&row), FALSE);
}

/* Unique across processes (start time to the microsecond, process id and
 * the per-process run number) and the same every time the run is written. */
static char *
run_id_for (TachRun *run)
{
  gint64 start = tach_run_get_start_time (run);
  g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc (start / G_USEC_PER_SEC);
  g_autofree char *stamp = NULL;

  /* A run loaded from a results folder keeps its id there. */
  if (tach_run_get_record_id (run) != NULL)
    return g_strdup (tach_run_get_record_id (run));
  stamp = dt != NULL ? g_date_time_format (dt, "%Y%m%dT%H%M%S") : g_strdup ("0");
  return g_strdup_printf ("%s.%06dZ-p%d-r%u", stamp, (int) (start % G_USEC_PER_SEC),
                          (int) getpid (), tach_run_get_id (run));
}

static const char *
state_name (TachRunState state)
{
  switch (state)
    {
    case TACH_RUN_STATE_FINISHED: return "finished";
    case TACH_RUN_STATE_CANCELLED: return "cancelled";
    case TACH_RUN_STATE_FAILED: return "failed";
    case TACH_RUN_STATE_RUNNING: return "running";
    case TACH_RUN_STATE_READY:
    default: return "ready";
    }
}

static void
append_run_row (GString *out, TachRun *run, const char *run_id)
{
  g_autoptr(GString) row = g_string_new (NULL);
  const TachConfig *config = tach_run_get_config (run);
  const TachDeviceInfo *device = tach_run_get_device (run);
  const GError *error = tach_run_get_error (run);
  gint64 start = tach_run_get_start_time (run);
  g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc (start / G_USEC_PER_SEC);
  g_autofree char *date = dt != NULL ? g_date_time_format_iso8601 (dt) : NULL;
  g_autofree char *task = tach_config_get (config, "task");
  g_autofree char *algorithms = tach_run_dup_algorithms (run);
  g_autofree char *varied_value = tach_run_get_varied (run) != NULL
                                  ? tach_config_get (config, tach_run_get_varied (run)) : NULL;
  guint n_knobs = 0;
  const TachKnobInfo *knobs = tach_knobs (&n_knobs);
  TachSummary s;

  tach_run_get_summary (run, &s);

  add_field (row, run_id);
  add_field (row, date);
  add_field (row, tach_workload_to_string (config->workload));
  add_field (row, task);
  add_field (row, device->id);
  add_field (row, device->name);
  add_field (row, device->versions);
  add_field (row, config->preset);
  for (guint i = 0; i < n_knobs; i++)
    {
      g_autofree char *value = NULL;

      if (!knob_is_column (&knobs[i]))
        continue;
      /* A knob that a loaded run's folder did not record stays empty. */
      if (!tach_run_knob_is_known (run, knobs[i].name))
        value = NULL;
      /* The dataset size actually used, not "auto". */
      else if (g_str_equal (knobs[i].name, "samples"))
        value = g_strdup_printf ("%" G_GUINT64_FORMAT, tach_config_get_samples (config));
      else
        value = tach_config_get (config, knobs[i].name);
      add_field (row, value);
    }
  add_field (row, state_name (tach_run_get_state (run)));
  add_field (row, error != NULL ? error->message : NULL);
  add_uint (row, s.steps);
  add_double (row, s.steps_per_s_median);
  add_double (row, s.steps_per_s_p10);
  add_double (row, s.steps_per_s_p90);
  add_double (row, s.items_per_s);
  add_field (row, s.items_unit);
  add_double (row, s.first_loss);
  add_double (row, s.final_loss);
  add_uint (row, s.loss_window_steps);
  add_double (row, s.test_accuracy);
  add_double (row, s.feed_share);
  add_double (row, s.compute_share);
  add_double (row, s.sync_share);
  add_double (row, s.host_share);
  add_double (row, s.flops_per_step);
  add_double (row, s.achieved_flops / 1e9);
  add_double (row, s.peak_share);
  add_uint (row, s.peak_memory_bytes);
  add_double (row, s.wall_s);
  add_field (row, s.rate_clock);
  add_double (row, s.e2e_steps_per_s);
  add_field (row, algorithms);
  add_double (row, s.api_calls_per_step);
  add_field (row, tach_run_get_varied (run));
  add_field (row, varied_value);
  end_row (row);
  g_string_append_len (out, row->str, row->len);
}

/* Appends one samples.csv row of @s to @row (empty, or ending a row). */
static void
add_sample_row (GString *row, const char *run_id, const TachSample *s)
{
  add_field (row, run_id);
  add_uint (row, s->step);
  add_field (row, s->warmup ? "1" : "0");
  add_double (row, s->wall_s);
  add_double (row, s->step_ms);
  add_double (row, s->feed_ms);
  add_double (row, s->compute_ms);
  add_double (row, s->sync_ms);
  add_double (row, s->host_ms);
  add_double (row, s->loss);
  add_double (row, s->accuracy);
  add_double (row, s->device_step_ms);
  add_double (row, s->api_calls);
  end_row (row);
}

/* Loads @path into @content (empty if absent) after checking its header;
 * adds the run ids it holds to @ids when not NULL. */
static gboolean
load_existing (const char *path, const char *header, GString *content, GHashTable *ids,
               GError **error)
{
  g_autofree char *old = NULL;
  g_autoptr(GError) local = NULL;
  gsize len = 0;
  const char *eol;
  gsize header_len = strlen (header) - 2;  /* without CRLF */
  gboolean matches;

  if (!g_file_get_contents (path, &old, &len, &local))
    {
      if (g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        {
          g_string_append (content, header);
          return TRUE;
        }
      g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                   W_("could not read %s: %s: check its permissions or choose another {--csv folder|folder}"),
                   path, local->message);
      return FALSE;
    }
  if (len == 0)
    {
      g_string_append (content, header);
      return TRUE;
    }

  eol = strchr (old, '\n');
  matches = eol != NULL && (gsize) (eol - old) >= header_len
            && strncmp (old, header, header_len) == 0
            && ((gsize) (eol - old) == header_len
                || ((gsize) (eol - old) == header_len + 1 && old[header_len] == '\r'));
  if (!matches && eol != NULL)
    {
      g_autoptr(GString) wide = g_string_new (NULL);

      /* A file from an earlier version, whose header lacks newer knobs'
       * columns, is rewritten with them (empty in its rows). */
      if (tach_csv_widen (old, len, header, wide))
        {
          g_free (old);
          len = wide->len;
          old = g_string_free (g_steal_pointer (&wide), FALSE);
          eol = strchr (old, '\n');
          matches = TRUE;
        }
    }
  if (!matches)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   _("%s has different columns from this version of Tach: "
                     "choose another --csv folder or move the file away"), path);
      return FALSE;
    }

  if (ids != NULL)
    for (const char *line = eol + 1; *line != '\0';)
      {
        const char *next = strchr (line, '\n');
        const char *comma = strchr (line, ',');

        if (comma != NULL && (next == NULL || comma < next))
          g_hash_table_add (ids, g_strndup (line, comma - line));
        if (next == NULL)
          break;
        line = next + 1;
      }

  g_string_append_len (content, old, len);
  /* A file cut short by another program gets its last line ended. */
  if (old[len - 1] != '\n')
    g_string_append (content, "\r\n");
  return TRUE;
}

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

/* Writes @run's sample rows to @t, a bounded range of samples at a time. */
static gboolean
append_sample_rows (TempFile *t, TachRun *run, const char *run_id, GError **error)
{
  g_autoptr(GArray) samples = g_array_new (FALSE, FALSE, sizeof (TachSample));

  for (guint from = 0; tach_run_copy_samples (run, from, TACH_RUN_DRAIN_MAX, samples) > 0;
       from += samples->len, g_array_set_size (samples, 0))
    for (guint i = 0; i < samples->len; i++)
      {
        add_sample_row (t->buf, run_id, &g_array_index (samples, TachSample, i));
        if (!temp_maybe_flush (t, error))
          return FALSE;
      }
  return TRUE;
}

gboolean
tach_csv_append (const char *dir, GPtrArray *runs, GError **error)
{
  g_autofree char *runs_path = g_build_filename (dir, "runs.csv", NULL);
  g_autofree char *samples_path = g_build_filename (dir, "samples.csv", NULL);
  g_autofree char *rheader = runs_header ();
  g_autofree char *sheader = samples_header_line ();
  g_autoptr(GString) runs_out = g_string_new (NULL);
  TempFile samples = { 0 };
  g_autoptr(GHashTable) ids = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autofree char *runs_tmp = NULL;
  g_autofree char *samples_tmp = NULL;
  gboolean created = FALSE, copied;

  g_return_val_if_fail (dir != NULL, FALSE);

  if (!g_file_test (dir, G_FILE_TEST_IS_DIR))
    {
      if (g_mkdir_with_parents (dir, 0755) != 0)
        {
          int err = errno;

          g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                       W_("could not create the folder %s: %s: choose a writable {--csv folder|folder}"),
                       dir, g_strerror (err));
          return FALSE;
        }
      created = TRUE;
    }

  /* samples.csv streams into its temporary file: its earlier rows copied
   * block by block (or, from an earlier version, widened in memory), then
   * each run's rows. */
  if (!load_existing (runs_path, rheader, runs_out, ids, error)
      || !temp_open (&samples, dir, "samples.csv", error)
      || !copy_existing (samples_path, sheader, &samples, &copied, error)
      || (!copied && !load_existing (samples_path, sheader, samples.buf, NULL, error)))
    goto fail;

  for (guint i = 0; runs != NULL && i < runs->len; i++)
    {
      TachRun *run = g_ptr_array_index (runs, i);
      TachRunState state = tach_run_get_state (run);
      g_autofree char *run_id = NULL;

      /* Only ended runs have figures to export. */
      if (state == TACH_RUN_STATE_READY || state == TACH_RUN_STATE_RUNNING)
        continue;
      run_id = run_id_for (run);
      if (g_hash_table_contains (ids, run_id))
        continue;
      append_run_row (runs_out, run, run_id);
      if (!append_sample_rows (&samples, run, run_id, error))
        goto fail;
      g_hash_table_add (ids, g_steal_pointer (&run_id));
    }

  if (temp_finish (&samples, error) == NULL)
    goto fail;
  samples_tmp = g_steal_pointer (&samples.path);
  runs_tmp = write_temp (dir, "runs.csv", runs_out, error);
  if (runs_tmp == NULL)
    goto fail;
  if (g_rename (samples_tmp, samples_path) != 0)
    {
      int err = errno;

      g_set_error (error, TACH_ERROR, TACH_ERROR_IO, _("could not replace %s: %s"),
                   samples_path, g_strerror (err));
      goto fail;
    }
  g_clear_pointer (&samples_tmp, g_free);
  if (g_rename (runs_tmp, runs_path) != 0)
    {
      int err = errno;

      g_set_error (error, TACH_ERROR, TACH_ERROR_IO, _("could not replace %s: %s"),
                   runs_path, g_strerror (err));
      goto fail;
    }
  return TRUE;

fail:
  temp_abort (&samples);
  if (samples_tmp != NULL)
    g_unlink (samples_tmp);
  if (runs_tmp != NULL)
    g_unlink (runs_tmp);
  if (created)
    g_rmdir (dir);
  return FALSE;
}

/* ------------------------------------------- shared with other CSV files */

void
tach_csv_add_field (GString *row, const char *value)
{
  add_field (row, value);
}

void
tach_csv_add_double (GString *row, double value)
{
  add_double (row, value);
}

void
tach_csv_add_uint (GString *row, guint64 value)
{
  add_uint (row, value);
}

void
tach_csv_end_row (GString *row)
{
  end_row (row);
}

char *
tach_csv_run_id (TachRun *run)
{
  return run_id_for (run);
}

gboolean
tach_csv_append_rows (const char *dir, const char *name, const char *header,
                      const char *rows, GError **error)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autoptr(GString) out = g_string_new (NULL);
  g_autofree char *tmp = NULL;

  if (!g_file_test (dir, G_FILE_TEST_IS_DIR) && g_mkdir_with_parents (dir, 0755) != 0)
    {
      int err = errno;

      g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                   W_("could not create the folder %s: %s: choose a writable {--csv folder|folder}"),
                   dir, g_strerror (err));
      return FALSE;
    }
  if (!load_existing (path, header, out, NULL, error))
    return FALSE;
  g_string_append (out, rows);
  tmp = write_temp (dir, name, out, error);
  if (tmp == NULL)
    return FALSE;
  if (g_rename (tmp, path) != 0)
    {
      int err = errno;

      g_unlink (tmp);
      g_set_error (error, TACH_ERROR, TACH_ERROR_IO, _("could not replace %s: %s"),
                   path, g_strerror (err));
      return FALSE;
    }
  return TRUE;
}
