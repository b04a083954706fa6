/* test-csv.c: runs.csv and samples.csv: RFC 4180 quoting, C-locale
 * numbers, appending, header checks, unwritable folders, read-back; the
 * streamed append (a run written as it goes), the folder lock and the
 * removal of temporary files a killed writer left. */
#include <locale.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "tach-csv-private.h"
#include "tach-trace.h"
#include "test-run-util.h"

/* A small RFC 4180 reader: rows of fields, quotes undone. */
static GPtrArray *
csv_read (const char *path)
{
  g_autofree char *text = NULL;
  GPtrArray *rows = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  GPtrArray *row = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GString) field = g_string_new (NULL);
  gboolean quoted = FALSE;

  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  for (const char *p = text; *p != '\0'; p++)
    {
      if (quoted)
        {
          if (*p == '"' && p[1] == '"')
            g_string_append_c (field, *p++);
          else if (*p == '"')
            quoted = FALSE;
          else
            g_string_append_c (field, *p);
        }
      else if (*p == '"')
        quoted = TRUE;
      else if (*p == ',')
        {
          g_ptr_array_add (row, g_strdup (field->str));
          g_string_truncate (field, 0);
        }
      else if (*p == '\r' && p[1] == '\n')
        {
          p++;
          g_ptr_array_add (row, g_strdup (field->str));
          g_string_truncate (field, 0);
          g_ptr_array_add (rows, row);
          row = g_ptr_array_new_with_free_func (g_free);
        }
      else
        {
          /* Every line must end in CRLF: a bare LF is a format error. */
          g_assert_cmpint (*p, !=, '\n');
          g_string_append_c (field, *p);
        }
    }
  g_assert_false (quoted);
  g_assert_cmpuint (row->len, ==, 0);
  g_ptr_array_unref (row);
  return rows;
}

static int
column (GPtrArray *rows, const char *name)
{
  GPtrArray *header = g_ptr_array_index (rows, 0);

  for (guint i = 0; i < header->len; i++)
    if (g_str_equal (g_ptr_array_index (header, i), name))
      return (int) i;
  g_error ("no column %s", name);
  return -1;
}

static const char *
cell (GPtrArray *rows, guint row, const char *name)
{
  return g_ptr_array_index ((GPtrArray *) g_ptr_array_index (rows, row), column (rows, name));
}

typedef struct {
  char    *dir;
  TachRun *a;     /* a finished run, with a data path that needs quoting */
  TachRun *b;
} Fixture;

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
  TachConfig c;

  f->dir = test_make_tmp_dir ("tach-csv-XXXXXX");

  test_tiny_config (&c, 6);
  /* The bilstm ignores --data, which makes it a harmless carrier for a
   * string that needs every kind of quoting. */
  g_assert_true (tach_config_set (&c, "data", "a,b \"q\"\nline", NULL));
  g_assert_true (tach_config_set (&c, "metrics", "accuracy", NULL));
  f->a = test_run_to_end (&c);
  tach_config_clear (&c);

  test_tiny_config (&c, 3);
  f->b = test_run_to_end (&c);
  tach_config_clear (&c);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
  test_remove_tree (f->dir);
  g_free (f->dir);
  tach_run_unref (f->a);
  tach_run_unref (f->b);
}

static gboolean
append_one (const char *dir, TachRun *run, GError **error)
{
  g_autoptr(GPtrArray) runs = g_ptr_array_new ();

  g_ptr_array_add (runs, run);
  return tach_csv_append (dir, runs, error);
}

static guint
count_entries (const char *dir)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;

  while (d != NULL && g_dir_read_name (d) != NULL)
    n++;
  return n;
}

static void
test_roundtrip (Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *out = g_build_filename (f->dir, "new", "sub", NULL);
  g_autofree char *runs_path = g_build_filename (out, "runs.csv", NULL);
  g_autofree char *samples_path = g_build_filename (out, "samples.csv", NULL);
  g_autoptr(GPtrArray) runs = NULL;
  g_autoptr(GPtrArray) samples = NULL;
  g_autoptr(GArray) expected = tach_run_dup_samples (f->a);

  /* DIR is created when missing. */
  g_assert_true (append_one (out, f->a, &error));
  g_assert_no_error (error);
  /* Only the two files: no temporary left behind. */
  g_assert_cmpuint (count_entries (out), ==, 2);

  runs = csv_read (runs_path);
  g_assert_cmpuint (runs->len, ==, 2);
  g_assert_cmpuint (((GPtrArray *) runs->pdata[0])->len, ==, ((GPtrArray *) runs->pdata[1])->len);
  g_assert_cmpstr (cell (runs, 1, "data"), ==, "a,b \"q\"\nline");
  g_assert_cmpstr (cell (runs, 1, "workload"), ==, "bilstm");
  g_assert_cmpstr (cell (runs, 1, "device"), ==, "cpu");
  g_assert_cmpstr (cell (runs, 1, "batch"), ==, "8");
  g_assert_cmpstr (cell (runs, 1, "state"), ==, "finished");
  g_assert_cmpstr (cell (runs, 1, "measured_steps"), ==, "4");
  /* The losses' two windows, and what the plan ran: one thread, so no
   * pool path to tune. */
  g_assert_cmpstr (cell (runs, 1, "loss_window_steps"), ==, "2");
  g_assert_cmpstr (cell (runs, 1, "algorithms"), ==, "lstm T10 N8 I300 H40 x2 train: GEMM by size");
  g_assert_cmpstr (cell (runs, 1, "samples"), ==, "128");
  g_assert_true (g_ascii_strtod (cell (runs, 1, "median_steps_per_s"), NULL) > 0.0);
  /* ISO 8601 in UTC. */
  g_assert_true (g_str_has_suffix (cell (runs, 1, "date"), "Z"));
  g_assert_nonnull (strchr (cell (runs, 1, "date"), 'T'));

  samples = csv_read (samples_path);
  g_assert_cmpuint (samples->len, ==, expected->len + 1);
  for (guint i = 0; i < expected->len; i++)
    {
      const TachSample *s = &g_array_index (expected, TachSample, i);
      double loss = g_ascii_strtod (cell (samples, i + 1, "loss"), NULL);

      g_assert_cmpstr (cell (samples, i + 1, "run_id"), ==, cell (runs, 1, "run_id"));
      g_assert_cmpuint (g_ascii_strtoull (cell (samples, i + 1, "step"), NULL, 10), ==, s->step);
      g_assert_cmpstr (cell (samples, i + 1, "warmup"), ==, s->warmup ? "1" : "0");
      g_assert_cmpfloat (fabs (loss - s->loss), <=, 1e-9 * fabs (s->loss));
      g_assert_true (g_ascii_strtod (cell (samples, i + 1, "step_ms"), NULL) > 0.0);
    }
  g_assert_cmpstr (cell (samples, 1, "accuracy"), !=, "");
}

static void
test_nan_empty (Fixture *f, gconstpointer data)
{
  g_autofree char *samples_path = g_build_filename (f->dir, "samples.csv", NULL);
  g_autoptr(GPtrArray) samples = NULL;

  /* Run b has no accuracy metric: its accuracy is NaN, written empty. */
  g_assert_true (append_one (f->dir, f->b, NULL));
  samples = csv_read (samples_path);
  g_assert_cmpuint (samples->len, ==, 3 + 1);
  for (guint i = 1; i < samples->len; i++)
    g_assert_cmpstr (cell (samples, i, "accuracy"), ==, "");
}

static void
test_append (Fixture *f, gconstpointer data)
{
  g_autofree char *runs_path = g_build_filename (f->dir, "runs.csv", NULL);
  g_autofree char *samples_path = g_build_filename (f->dir, "samples.csv", NULL);
  g_autoptr(GPtrArray) runs = NULL;
  g_autoptr(GPtrArray) samples = NULL;
  g_autofree char *first_id = NULL;

  g_assert_true (append_one (f->dir, f->a, NULL));
  runs = csv_read (runs_path);
  first_id = g_strdup (cell (runs, 1, "run_id"));
  g_clear_pointer (&runs, g_ptr_array_unref);

  g_assert_true (append_one (f->dir, f->b, NULL));
  /* The same run again is not written twice. */
  g_assert_true (append_one (f->dir, f->a, NULL));

  runs = csv_read (runs_path);
  g_assert_cmpuint (runs->len, ==, 3);
  g_assert_cmpstr (cell (runs, 1, "run_id"), ==, first_id);
  g_assert_cmpstr (cell (runs, 2, "run_id"), !=, first_id);
  samples = csv_read (samples_path);
  g_assert_cmpuint (samples->len, ==, 1 + 6 + 3);
  g_assert_cmpstr (cell (samples, 1, "run_id"), ==, first_id);
  g_assert_cmpuint (count_entries (f->dir), ==, 2);
}

static void
test_header_mismatch (Fixture *f, gconstpointer data)
{
  g_autofree char *runs_path = g_build_filename (f->dir, "runs.csv", NULL);
  g_autofree char *after = NULL;
  g_autoptr(GError) error = NULL;
  const char *foreign = "name,value\r\nx,1\r\n";

  g_assert_true (g_file_set_contents (runs_path, foreign, -1, NULL));
  g_assert_false (append_one (f->dir, f->a, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  g_assert_nonnull (strstr (error->message, runs_path));
  g_assert_true (g_file_get_contents (runs_path, &after, NULL, NULL));
  g_assert_cmpstr (after, ==, foreign);
  /* Neither samples.csv nor a temporary file appeared. */
  g_assert_cmpuint (count_entries (f->dir), ==, 1);
}

static guint
count_lines (const char *text)
{
  guint n = 0;

  for (const char *p = text; *p != '\0'; p++)
    n += *p == '\n';
  return n;
}

/* A runs.csv with a malformed row (a stray quote, then a short row) is not
 * appended to: other readers would read the new rows into the bad one.
 * The message names the file and the line; nothing in the folder changes. */
static void
test_malformed_refused (Fixture *f, gconstpointer data)
{
  g_autofree char *runs_path = g_build_filename (f->dir, "runs.csv", NULL);
  g_autofree char *samples_path = g_build_filename (f->dir, "samples.csv", NULL);
  g_autofree char *good = NULL, *samples_before = NULL;
  const char *const bad_rows[] = { "\"stray quote,1\r\n", "short,row\r\n" };

  g_assert_true (append_one (f->dir, f->a, NULL));
  g_assert_true (g_file_get_contents (runs_path, &good, NULL, NULL));
  g_assert_true (g_file_get_contents (samples_path, &samples_before, NULL, NULL));
  for (guint i = 0; i < G_N_ELEMENTS (bad_rows); i++)
    {
      g_autofree char *damaged = g_strconcat (good, bad_rows[i], NULL);
      /* Its line: a's row spans two (its data path holds a line break). */
      g_autofree char *where = g_strdup_printf ("%s:%u:", runs_path, count_lines (good) + 1);
      g_autofree char *runs_after = NULL, *samples_after = NULL;
      g_autoptr(GError) error = NULL;

      g_assert_true (g_file_set_contents (runs_path, damaged, -1, NULL));
      g_assert_false (append_one (f->dir, f->b, &error));
      g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
      g_assert_nonnull (strstr (error->message, where));
      g_assert_nonnull (strstr (error->message, "repair or delete that line"));
      g_assert_true (g_file_get_contents (runs_path, &runs_after, NULL, NULL));
      g_assert_cmpstr (runs_after, ==, damaged);
      g_assert_true (g_file_get_contents (samples_path, &samples_after, NULL, NULL));
      g_assert_cmpstr (samples_after, ==, samples_before);
      g_assert_cmpuint (count_entries (f->dir), ==, 2);
    }
  /* Repaired (the line deleted), it takes the run. */
  g_assert_true (g_file_set_contents (runs_path, good, -1, NULL));
  g_assert_true (append_one (f->dir, f->b, NULL));
}

/* Writes @rows as CSV leaving out the columns in @drop, as a version of
 * Tach from before those knobs would have; @extra adds a column (a newer
 * version's file). */
static void
csv_write_without (const char *path, GPtrArray *rows, const char *const *drop, const char *extra)
{
  g_autoptr(GString) out = g_string_new (NULL);
  GPtrArray *header = g_ptr_array_index (rows, 0);

  for (guint r = 0; r < rows->len; r++)
    {
      GPtrArray *row = g_ptr_array_index (rows, r);
      gboolean first = TRUE;

      for (guint c = 0; c < row->len; c++)
        {
          const char *v = g_ptr_array_index (row, c);

          if (g_strv_contains (drop, g_ptr_array_index (header, c)))
            continue;
          g_string_append (out, first ? "" : ",");
          first = FALSE;
          if (strpbrk (v, ",\"\r\n") != NULL)
            {
              g_autoptr(GString) q = g_string_new (v);

              g_string_replace (q, "\"", "\"\"", 0);
              g_string_append_printf (out, "\"%s\"", q->str);
            }
          else
            g_string_append (out, v);
        }
      if (extra != NULL)
        g_string_append_printf (out, ",%s", r == 0 ? extra : "x");
      g_string_append (out, "\r\n");
    }
  g_assert_true (g_file_set_contents (path, out->str, -1, NULL));
}

/* A folder written before the head and print-text knobs existed takes new
 * runs: its rows keep every value, with empty cells for the new columns. */
static void
test_append_older (Fixture *f, gconstpointer data)
{
  g_autofree char *runs_path = g_build_filename (f->dir, "runs.csv", NULL);
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  g_autoptr(GPtrArray) rows = NULL;
  g_autoptr(GError) error = NULL;
  const char *const drop[] = { "head", "print-text", "threads_had", "threads_fewest",
                               "threads_fewer_share", NULL };
  const char *data_path = NULL;

  g_assert_true (append_one (f->dir, f->a, NULL));
  rows = csv_read (runs_path);
  data_path = cell (rows, 1, "data");
  g_assert_cmpstr (data_path, ==, "a,b \"q\"\nline");
  csv_write_without (runs_path, rows, drop, NULL);

  g_assert_true (append_one (f->dir, f->b, &error));
  g_assert_no_error (error);
  /* The earlier run is not written twice. */
  g_assert_true (append_one (f->dir, f->a, NULL));
  {
    g_autoptr(GPtrArray) now = csv_read (runs_path);
    GPtrArray *header = g_ptr_array_index (now, 0);
    GPtrArray *first = g_ptr_array_index (rows, 0);

    g_assert_cmpuint (now->len, ==, 3);
    g_assert_cmpuint (header->len, ==, first->len);
    for (guint c = 0; c < header->len; c++)
      {
        const char *name = g_ptr_array_index (header, c);

        g_assert_cmpstr (name, ==, g_ptr_array_index (first, c));
        if (g_strv_contains (drop, name))
          g_assert_cmpstr (cell (now, 1, name), ==, "");
        else
          g_assert_cmpstr (cell (now, 1, name), ==, cell (rows, 1, name));
      }
    g_assert_cmpstr (cell (now, 2, "head"), ==, "flatten");
    g_assert_cmpstr (cell (now, 2, "print-text"), ==, "false");
    /* The new row says how many threads its CPU run had and kept. */
    g_assert_cmpfloat (g_ascii_strtod (cell (now, 2, "threads_had"), NULL), >=, 1);
    g_assert_cmpfloat (g_ascii_strtod (cell (now, 2, "threads_fewest"), NULL), >=, 1);
    g_assert_cmpfloat (g_ascii_strtod (cell (now, 2, "threads_fewest"), NULL), <=,
                       g_ascii_strtod (cell (now, 2, "threads_had"), NULL));
    g_assert_cmpstr (cell (now, 2, "threads_fewer_share"), !=, "");
  }

  /* A newer version's file, with a column this one lacks, is refused and
   * left as it was. */
  csv_write_without (runs_path, rows, drop, "future-knob");
  g_assert_true (g_file_get_contents (runs_path, &before, NULL, NULL));
  g_assert_false (append_one (f->dir, f->b, &error));
  g_assert_nonnull (strstr (error->message, "different columns"));
  g_assert_true (g_file_get_contents (runs_path, &after, NULL, NULL));
  g_assert_cmpstr (after, ==, before);
}

static void
test_unwritable (Fixture *f, gconstpointer data)
{
  g_autofree char *file = g_build_filename (f->dir, "a-file", NULL);
  g_autofree char *below_file = g_build_filename (file, "out", NULL);
  g_autofree char *locked = g_build_filename (f->dir, "locked", NULL);
  g_autoptr(GError) error = NULL;

  /* A folder that cannot be created: its parent is a file. */
  g_assert_true (g_file_set_contents (file, "x", -1, NULL));
  g_assert_false (append_one (below_file, f->a, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_IO);
  g_assert_nonnull (strstr (error->message, below_file));
  g_assert_nonnull (strstr (error->message, "--csv"));
  g_clear_error (&error);

  /* A folder that exists but cannot be written to.  Root ignores the mode,
   * so there /proc (which refuses new files to everyone) stands in. */
  if (geteuid () == 0)
    {
      g_assert_false (append_one ("/proc/self", f->a, &error));
      g_assert_error (error, TACH_ERROR, TACH_ERROR_IO);
      g_assert_nonnull (strstr (error->message, "/proc/self"));
    }
  else
    {
      g_assert_cmpint (g_mkdir (locked, 0555), ==, 0);
      g_assert_false (append_one (locked, f->a, &error));
      g_assert_error (error, TACH_ERROR, TACH_ERROR_IO);
      g_assert_nonnull (strstr (error->message, locked));
      g_assert_cmpuint (count_entries (locked), ==, 0);
      g_chmod (locked, 0755);
    }
  g_assert_cmpuint (count_entries (f->dir), ==, 2 - (geteuid () == 0));
}

/* Finds or builds a locale with a decimal comma, the case that breaks
 * printf-formatted CSV.  Building one (localedef into a private LOCPATH)
 * keeps the test meaningful on machines with only the C locale. */
static const char *
comma_locale (const char *tmpdir)
{
  static const char *const names[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", NULL };
  g_autofree char *locpath = g_build_filename (tmpdir, "locales", NULL);
  g_autofree char *target = g_build_filename (locpath, "de_DE.UTF-8", NULL);
  const char *argv[] = { "localedef", "-i", "de_DE", "-f", "UTF-8", target, NULL };
  int status = -1;

  for (guint i = 0; names[i] != NULL; i++)
    if (setlocale (LC_ALL, names[i]) != NULL)
      return names[i];
  g_mkdir_with_parents (locpath, 0755);
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL
                     | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, NULL, NULL, &status, NULL)
      || !g_spawn_check_wait_status (status, NULL))
    return NULL;
  g_setenv ("LOCPATH", locpath, TRUE);
  return setlocale (LC_ALL, "de_DE.UTF-8") != NULL ? "de_DE.UTF-8" : NULL;
}

static void
test_locale (Fixture *f, gconstpointer data)
{
  g_autofree char *runs_path = g_build_filename (f->dir, "runs.csv", NULL);
  g_autofree char *samples_path = g_build_filename (f->dir, "samples.csv", NULL);
  g_autofree char *saved = g_strdup (setlocale (LC_ALL, NULL));
  g_autoptr(GPtrArray) runs = NULL;
  g_autoptr(GPtrArray) samples = NULL;
  const char *active = comma_locale (f->dir);
  char printed[32];

  if (active == NULL)
    {
      setlocale (LC_ALL, saved);
      g_test_skip ("no locale with a decimal comma is installed or can be built");
      return;
    }
  /* The locale really is in force: printf now writes a comma. */
  g_snprintf (printed, sizeof printed, "%.1f", 0.5);
  g_assert_cmpstr (printed, ==, "0,5");
  g_assert_true (append_one (f->dir, f->a, NULL));
  setlocale (LC_ALL, saved);
  g_unsetenv ("LOCPATH");

  runs = csv_read (runs_path);
  for (const char *const *name = (const char *const[]) { "lr", "median_steps_per_s",
                                                         "first_loss", "final_loss", NULL };
       *name != NULL; name++)
    {
      const char *value = cell (runs, 1, *name);
      char *end = NULL;

      g_assert_cmpstr (value, !=, "");
      g_ascii_strtod (value, &end);
      g_assert_cmpint (*end, ==, '\0');
    }
  g_assert_cmpstr (cell (runs, 1, "lr"), ==, "0.001");
  /* The field count stays right: a decimal comma would add columns. */
  samples = csv_read (samples_path);
  for (guint i = 0; i < samples->len; i++)
    g_assert_cmpuint (((GPtrArray *) samples->pdata[i])->len, ==, 17);
}

static char *
read_file (const char *dir, const char *name)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  char *text = NULL;

  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  return text;
}

/* samples.csv streams while a run goes: the folder's files stay as they
 * were until the commit, which leaves exactly what appending the ended
 * run at once leaves (same bytes: streaming changes when rows are
 * written, not what they say).  The run lasts until a write has been
 * made while it ran, whatever the machine's speed: a million steps, each
 * published (sync=1), and stopped after that write; without samples while
 * it runs, it runs into the hang bound, or to its end, and fails. */
static void
test_stream_running (Fixture *f, gconstpointer data)
{
  g_autofree char *at_once = g_build_filename (f->dir, "at-once", NULL);
  g_autofree char *streamed = g_build_filename (f->dir, "streamed", NULL);
  g_autofree char *runs_before = NULL, *samples_before = NULL;
  g_autoptr(TachCsvStream) stream = NULL;
  g_autoptr(TachRun) run = NULL;
  g_autoptr(GError) error = NULL;
  TachConfig c;
  guint writes_running = 0;
  /* A hang's bound, not a timing: the first step's samples come within
   * milliseconds. */
  gint64 deadline = g_get_monotonic_time () + 120 * G_USEC_PER_SEC;

  g_assert_true (append_one (at_once, f->b, NULL));
  g_assert_true (append_one (streamed, f->b, NULL));
  runs_before = read_file (streamed, "runs.csv");
  samples_before = read_file (streamed, "samples.csv");

  stream = tach_csv_stream_open (streamed, &error);
  g_assert_no_error (error);
  test_tiny_config (&c, 1000000);
  test_apply (&c, "batch=1 sync=1");
  run = tach_run_new (&c, &error);
  tach_config_clear (&c);
  g_assert_no_error (error);
  g_assert_true (tach_run_start (run, NULL, NULL, NULL, &error));
  while (tach_run_get_state (run) == TACH_RUN_STATE_RUNNING)
    {
      if (tach_run_get_n_samples (run) > 0)
        {
          g_autofree char *runs_now = NULL, *samples_now = NULL;

          g_assert_true (tach_csv_stream_add_run (stream, run));
          g_assert_true (tach_csv_stream_write (stream, &error));
          g_assert_no_error (error);
          writes_running++;
          runs_now = read_file (streamed, "runs.csv");
          samples_now = read_file (streamed, "samples.csv");
          g_assert_cmpstr (runs_now, ==, runs_before);
          g_assert_cmpstr (samples_now, ==, samples_before);
          /* Once more while it still runs, then the stop. */
          if (writes_running == 2)
            tach_run_stop (run);
        }
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (20 * 1000);
    }
  g_assert_true (tach_run_wait (run, &error));
  g_assert_cmpint (tach_run_get_state (run), ==, TACH_RUN_STATE_CANCELLED);
  g_assert_cmpuint (writes_running, >=, 2);
  g_assert_cmpuint (tach_csv_stream_get_n_runs (stream), ==, 1);
  g_assert_true (tach_csv_stream_commit (stream, &error));
  g_assert_no_error (error);
  /* Done: a second commit is refused, and writes nothing. */
  g_assert_false (tach_csv_stream_commit (stream, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_IO);
  g_clear_error (&error);
  g_clear_pointer (&stream, tach_csv_stream_free);

  g_assert_true (append_one (at_once, run, NULL));
  {
    g_autofree char *runs_a = read_file (at_once, "runs.csv");
    g_autofree char *runs_s = read_file (streamed, "runs.csv");
    g_autofree char *samples_a = read_file (at_once, "samples.csv");
    g_autofree char *samples_s = read_file (streamed, "samples.csv");

    g_assert_cmpstr (runs_s, ==, runs_a);
    g_assert_cmpstr (samples_s, ==, samples_a);
  }
  g_assert_cmpuint (count_entries (streamed), ==, 2);
}

/* A folder being written is locked: a second writer (another stream, an
 * export, explain.csv's rows) is refused at once with a message naming the
 * folder, and the folder is left as the first writer makes it. */
static void
test_stream_lock (Fixture *f, gconstpointer data)
{
  g_autoptr(TachCsvStream) first = NULL;
  g_autoptr(TachCsvStream) second = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *samples_before = NULL, *samples_after = NULL;

  g_assert_true (append_one (f->dir, f->b, NULL));
  samples_before = read_file (f->dir, "samples.csv");
  first = tach_csv_stream_open (f->dir, &error);
  g_assert_no_error (error);
  g_assert_true (tach_csv_stream_add_run (first, f->a));
  /* f->b is in runs.csv already: not added again. */
  g_assert_false (tach_csv_stream_add_run (first, f->b));

  second = tach_csv_stream_open (f->dir, &error);
  g_assert_null (second);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_IO);
  g_assert_nonnull (strstr (error->message, f->dir));
  g_assert_nonnull (strstr (error->message, "another"));
  g_clear_error (&error);
  g_assert_false (append_one (f->dir, f->a, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_IO);
  g_clear_error (&error);
  g_assert_false (tach_csv_append_rows (f->dir, "explain.csv", "a,b\r\n", "1,2\r\n", &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_IO);
  g_clear_error (&error);
  samples_after = read_file (f->dir, "samples.csv");
  g_assert_cmpstr (samples_after, ==, samples_before);

  g_assert_true (tach_csv_stream_commit (first, &error));
  g_assert_no_error (error);
  g_clear_pointer (&first, tach_csv_stream_free);
  /* Unlocked once the first is freed. */
  g_assert_true (append_one (f->dir, f->a, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (count_entries (f->dir), ==, 2);
}

/* A stream freed without a commit leaves the folder as it was (and one it
 * made is gone); temporary files a killed writer left are removed by the
 * next writer, and nothing else is. */
static void
test_stream_discard (Fixture *f, gconstpointer data)
{
  g_autofree char *made = g_build_filename (f->dir, "made", NULL);
  g_autofree char *samples_before = NULL, *samples_after = NULL;
  g_autoptr(GError) error = NULL;
  TachCsvStream *stream;
  static const char *const stale[] = { ".samples.csv.Ab12Cd", ".runs.csv.XXXXXX",
                                       ".explain.csv.q1w2e3", NULL };
  static const char *const kept[] = { ".samples.csv.toolong", "notes.txt", ".samples.csv",
                                      NULL };

  stream = tach_csv_stream_open (made, &error);
  g_assert_no_error (error);
  g_assert_true (tach_csv_stream_add_run (stream, f->a));
  g_assert_true (tach_csv_stream_write (stream, &error));
  tach_csv_stream_free (stream);
  g_assert_false (g_file_test (made, G_FILE_TEST_EXISTS));

  g_assert_true (append_one (f->dir, f->b, NULL));
  samples_before = read_file (f->dir, "samples.csv");
  stream = tach_csv_stream_open (f->dir, &error);
  g_assert_true (tach_csv_stream_add_run (stream, f->a));
  g_assert_true (tach_csv_stream_write (stream, &error));
  tach_csv_stream_free (stream);
  samples_after = read_file (f->dir, "samples.csv");
  g_assert_cmpstr (samples_after, ==, samples_before);
  g_assert_cmpuint (count_entries (f->dir), ==, 2);

  for (guint i = 0; stale[i] != NULL; i++)
    g_free (test_write_file (f->dir, stale[i], "partial,row", -1));
  for (guint i = 0; kept[i] != NULL; i++)
    g_free (test_write_file (f->dir, kept[i], "x", -1));
  g_assert_true (append_one (f->dir, f->a, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (count_entries (f->dir), ==, 2 + 3);
  for (guint i = 0; kept[i] != NULL; i++)
    {
      g_autofree char *path = g_build_filename (f->dir, kept[i], NULL);

      g_assert_true (g_file_test (path, G_FILE_TEST_EXISTS));
    }
}

/* A trace's time starts at its earliest event: a rank whose first step
 * began before rank 0's (on rank 0's clock) is not written at negative
 * times, and every event keeps its distance from the others. */
static void
test_trace_origin (void)
{
  g_autoptr(TachTrace) trace = tach_trace_new (100);
  g_autofree char *dir = g_dir_make_tmp ("tach-trace-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "t.json", NULL);
  g_autofree char *text = NULL;
  g_autoptr(GError) error = NULL;

  tach_trace_name_process (trace, 0, "rank 0");
  tach_trace_slice (trace, 0, 0, 0, "step", 0.0, 100.0);
  tach_trace_slice (trace, 0, 1, 0, "step", -250.5, 200.0);
  tach_trace_counter (trace, 0, 1, "bytes in flight", -300.0, 4.0);
  g_assert_true (tach_trace_write (trace, path, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  g_assert_null (strstr (text, "\"ts\":-"));
  g_assert_nonnull (strstr (text, "\"pid\":1,\"tid\":0,\"ts\":0.000,"));      /* the counter */
  g_assert_nonnull (strstr (text, "\"pid\":1,\"tid\":0,\"ts\":49.500,\"dur\":200.000"));
  g_assert_nonnull (strstr (text, "\"pid\":0,\"tid\":0,\"ts\":300.000,\"dur\":100.000"));
  g_unlink (path);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  setlocale (LC_ALL, "");
  g_test_init (&argc, &argv, NULL);

#define ADD(path, fn) g_test_add (path, Fixture, NULL, fixture_set_up, fn, fixture_tear_down)
  ADD ("/engine/csv/roundtrip", test_roundtrip);
  ADD ("/engine/csv/nan-empty", test_nan_empty);
  ADD ("/engine/csv/append", test_append);
  ADD ("/engine/csv/malformed-refused", test_malformed_refused);
  ADD ("/engine/csv/header-mismatch", test_header_mismatch);
  ADD ("/engine/csv/append-older", test_append_older);
  ADD ("/engine/csv/unwritable", test_unwritable);
  ADD ("/engine/csv/locale", test_locale);
  ADD ("/engine/csv/stream-running", test_stream_running);
  ADD ("/engine/csv/stream-lock", test_stream_lock);
  ADD ("/engine/csv/stream-discard", test_stream_discard);
#undef ADD
  g_test_add_func ("/engine/trace/origin", test_trace_origin);
  return g_test_run ();
}
