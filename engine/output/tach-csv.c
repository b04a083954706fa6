/* tach-csv.c: the rows of runs.csv and samples.csv.
 *
 * RFC 4180 (CRLF line ends, fields quoted when they need it), numbers in
 * the C locale whatever setlocale() says, NaN as an empty field, so both
 * files open in LibreOffice and pandas with no options.  Reading an
 * existing file before an append checks its header; a file written by an
 * earlier version, with fewer knob columns, is rewritten under the current
 * header, its rows keeping their values (tach-csv-columns.c).  How the
 * files are written, atomically and as a run goes, is tach-csv-stream.c.
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
  "host_ms", "loss", "accuracy", "device_step_ms", "api_calls", "rank", "comm_ms", "pack_ms",
  "imbalance_ms", NULL
};

/* Columns of runs.csv after the knobs. */
static const char *const runs_tail[] = {
  "state", "error", "measured_steps", "median_steps_per_s", "median_steps_per_s_lo",
  "median_steps_per_s_hi", "p10_steps_per_s", "p90_steps_per_s", "items_per_s",
  "items_per_s_lo", "items_per_s_hi", "items_unit", "first_loss", "final_loss",
  "loss_window_steps",
  "test_accuracy", "feed_share", "compute_share", "sync_share", "host_share",
  "flops_per_step", "achieved_gflops", "peak_share", "peak_memory_bytes", "wall_s",
  "rate_clock", "e2e_steps_per_s", "algorithms", "api_calls_per_step",
  "comm_share", "pack_share", "imbalance_share", "slowest_rank", "rank_compute_spread",
  "weak_scaling", "weak_scaling_lo", "weak_scaling_hi",
  "strong_scaling", "strong_scaling_lo", "strong_scaling_hi",
  "varied", "varied_value",
  "machine_busy", "eval_s", "data_source", "data_path", "label",
  /* A CPU run's threads (empty elsewhere): how many it had (the threads
   * knob resolved), the fewest its ops ran on while other processes
   * wanted the processors, and the share of its time on fewer. */
  "threads_had", "threads_fewest", "threads_fewer_share",
  /* Generation's prefill and decoding apart, and what the model's memory
   * holds (gpt; empty elsewhere). */
  "prefill_ms", "decode_tokens_per_s", "param_bytes", "optimizer_bytes", "activation_bytes",
  "kv_cache_bytes", "packed_weight_bytes",
  /* What the parameters hold in one rank's memory (every training run):
   * parameters, gradients, optimizer state and their peak. */
  "held_param_bytes", "held_grad_bytes", "held_state_bytes", "held_peak_bytes", NULL
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

char *
tach_csv_header_line (const char *const *names)
{
  g_autoptr(GString) row = g_string_new (NULL);

  for (guint i = 0; names[i] != NULL; i++)
    add_field (row, names[i]);
  end_row (row);
  return g_string_free (g_steal_pointer (&row), FALSE);
}

static char *
samples_header_line (void)
{
  return tach_csv_header_line (samples_header);
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
  add_double (row, s.steps_per_s_lo);
  add_double (row, s.steps_per_s_hi);
  add_double (row, s.steps_per_s_p10);
  add_double (row, s.steps_per_s_p90);
  add_double (row, s.items_per_s);
  add_double (row, s.items_per_s_lo);
  add_double (row, s.items_per_s_hi);
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
  add_double (row, s.comm_share);
  add_double (row, s.pack_share);
  add_double (row, s.imbalance_share);
  add_double (row, s.slowest_rank);
  add_double (row, s.rank_compute_spread);
  add_double (row, s.weak_scaling);
  add_double (row, s.weak_scaling_lo);
  add_double (row, s.weak_scaling_hi);
  add_double (row, s.strong_scaling);
  add_double (row, s.strong_scaling_lo);
  add_double (row, s.strong_scaling_hi);
  add_field (row, tach_run_get_varied (run));
  add_field (row, varied_value);
  add_double (row, s.machine_busy);
  add_double (row, s.eval_s);
  add_field (row, tach_run_get_data_kind (run));
  add_field (row, tach_run_get_data_path (run));
  add_field (row, tach_run_get_label (run));
  add_double (row, s.threads_asked);
  add_double (row, s.threads_fewest);
  add_double (row, s.threads_fewer_share);
  add_double (row, s.prefill_ms);
  add_double (row, s.decode_tokens_per_s);
  add_double (row, s.param_bytes);
  add_double (row, s.optimizer_bytes);
  add_double (row, s.activation_bytes);
  add_double (row, s.kv_cache_bytes);
  add_double (row, s.packed_weight_bytes);
  add_double (row, s.held_param_bytes);
  add_double (row, s.held_grad_bytes);
  add_double (row, s.held_state_bytes);
  add_double (row, s.held_peak_bytes);
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
  add_uint (row, s->rank);
  add_double (row, s->comm_ms);
  add_double (row, s->pack_ms);
  add_double (row, s->imbalance_ms);
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
  guint bad_line;
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
  /* Rows appended after a malformed one (a quote never closed) would be
   * read into it by other CSV readers, Python's among them: the file is
   * left as it is, and the message says where to repair it. */
  bad_line = tach_csv_first_malformed (old, len);
  if (bad_line > 0)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   W_("%s:%u: a malformed row (a stray quote or the wrong number of fields), "
                      "which other CSV readers would read the new rows into: nothing was "
                      "added; repair or delete that line (Open Results skips it), or choose "
                      "another {--csv folder|folder}"),
                   path, bad_line);
      return FALSE;
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

char *
tach_csv_runs_header (void)
{
  return runs_header ();
}

char *
tach_csv_samples_header (void)
{
  return samples_header_line ();
}

void
tach_csv_add_run_row (GString *out, TachRun *run, const char *run_id)
{
  append_run_row (out, run, run_id);
}

void
tach_csv_add_sample_row (GString *row, const char *run_id, const TachSample *sample)
{
  add_sample_row (row, run_id, sample);
}

gboolean
tach_csv_load_existing (const char *path, const char *header, GString *content, GHashTable *ids,
                        GError **error)
{
  return load_existing (path, header, content, ids, error);
}
