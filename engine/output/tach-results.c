/* tach-results.c: reading a results folder (runs.csv + samples.csv) back
 * into ended runs, so that runs made elsewhere (a headless GPU server's
 * `tach-cli --csv`, say) can be shown, compared and exported again.
 *
 * Columns are found by their header names, so a folder written by an older
 * version (fewer knob columns) or a newer one (more columns) still loads: a
 * knob without a column is unknown, not silently the default.  A row that
 * cannot be read is reported with its file and line and skipped; the other
 * rows still load.  Only a folder without a readable runs.csv fails as a
 * whole.  samples.csv is read a block at a time into each run's compact
 * store: opening a folder of ten million steps costs the store's few bytes
 * a step, not the file.  The records are read by tach-csv-read.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib/gi18n-lib.h>
#include <glib/gstdio.h>

#include "tach-backend.h"
#include "tach-csv-private.h"
#include "tach-csv-read-private.h"
#include "tach-run-private.h"

/* -------------------------------------------------------------- runs.csv */

static TachRunState
state_from_string (const char *s)
{
  if (g_strcmp0 (s, "cancelled") == 0)
    return TACH_RUN_STATE_CANCELLED;
  if (g_strcmp0 (s, "failed") == 0)
    return TACH_RUN_STATE_FAILED;
  return TACH_RUN_STATE_FINISHED;
}

/* The summary figures of one row; FALSE names the first bad column. */
static gboolean
summary_from_row (GHashTable *columns, GPtrArray *fields, TachSummary *s, const char **bad)
{
  static const struct { const char *name; size_t offset; double scale; } figures[] = {
    { "median_steps_per_s", G_STRUCT_OFFSET (TachSummary, steps_per_s_median), 1 },
    { "p10_steps_per_s", G_STRUCT_OFFSET (TachSummary, steps_per_s_p10), 1 },
    { "p90_steps_per_s", G_STRUCT_OFFSET (TachSummary, steps_per_s_p90), 1 },
    { "items_per_s", G_STRUCT_OFFSET (TachSummary, items_per_s), 1 },
    /* Absent (NaN: unknown) in folders written before intervals. */
    { "median_steps_per_s_lo", G_STRUCT_OFFSET (TachSummary, steps_per_s_lo), 1 },
    { "median_steps_per_s_hi", G_STRUCT_OFFSET (TachSummary, steps_per_s_hi), 1 },
    { "items_per_s_lo", G_STRUCT_OFFSET (TachSummary, items_per_s_lo), 1 },
    { "items_per_s_hi", G_STRUCT_OFFSET (TachSummary, items_per_s_hi), 1 },
    { "machine_busy", G_STRUCT_OFFSET (TachSummary, machine_busy), 1 },
    /* Absent (NaN) in folders written before runs.csv kept them. */
    { "threads_had", G_STRUCT_OFFSET (TachSummary, threads_asked), 1 },
    { "threads_fewest", G_STRUCT_OFFSET (TachSummary, threads_fewest), 1 },
    { "threads_fewer_share", G_STRUCT_OFFSET (TachSummary, threads_fewer_share), 1 },
    { "first_loss", G_STRUCT_OFFSET (TachSummary, first_loss), 1 },
    { "final_loss", G_STRUCT_OFFSET (TachSummary, final_loss), 1 },
    { "test_accuracy", G_STRUCT_OFFSET (TachSummary, test_accuracy), 1 },
    { "feed_share", G_STRUCT_OFFSET (TachSummary, feed_share), 1 },
    { "compute_share", G_STRUCT_OFFSET (TachSummary, compute_share), 1 },
    { "sync_share", G_STRUCT_OFFSET (TachSummary, sync_share), 1 },
    { "host_share", G_STRUCT_OFFSET (TachSummary, host_share), 1 },
    { "flops_per_step", G_STRUCT_OFFSET (TachSummary, flops_per_step), 1 },
    { "achieved_gflops", G_STRUCT_OFFSET (TachSummary, achieved_flops), 1e9 },
    { "peak_share", G_STRUCT_OFFSET (TachSummary, peak_share), 1 },
    { "wall_s", G_STRUCT_OFFSET (TachSummary, wall_s), 1 },
    { "eval_s", G_STRUCT_OFFSET (TachSummary, eval_s), 1 },
    { "e2e_steps_per_s", G_STRUCT_OFFSET (TachSummary, e2e_steps_per_s), 1 },
    { "api_calls_per_step", G_STRUCT_OFFSET (TachSummary, api_calls_per_step), 1 },
    { "comm_share", G_STRUCT_OFFSET (TachSummary, comm_share), 1 },
    { "pack_share", G_STRUCT_OFFSET (TachSummary, pack_share), 1 },
    { "imbalance_share", G_STRUCT_OFFSET (TachSummary, imbalance_share), 1 },
    { "slowest_rank", G_STRUCT_OFFSET (TachSummary, slowest_rank), 1 },
    { "rank_compute_spread", G_STRUCT_OFFSET (TachSummary, rank_compute_spread), 1 },
    /* Absent (NaN) in folders written before scaling was measured. */
    { "weak_scaling", G_STRUCT_OFFSET (TachSummary, weak_scaling), 1 },
    { "weak_scaling_lo", G_STRUCT_OFFSET (TachSummary, weak_scaling_lo), 1 },
    { "weak_scaling_hi", G_STRUCT_OFFSET (TachSummary, weak_scaling_hi), 1 },
    { "strong_scaling", G_STRUCT_OFFSET (TachSummary, strong_scaling), 1 },
    { "strong_scaling_lo", G_STRUCT_OFFSET (TachSummary, strong_scaling_lo), 1 },
    { "strong_scaling_hi", G_STRUCT_OFFSET (TachSummary, strong_scaling_hi), 1 },
    /* Absent (NaN) in folders written before gpt. */
    { "prefill_ms", G_STRUCT_OFFSET (TachSummary, prefill_ms), 1 },
    { "decode_tokens_per_s", G_STRUCT_OFFSET (TachSummary, decode_tokens_per_s), 1 },
    { "param_bytes", G_STRUCT_OFFSET (TachSummary, param_bytes), 1 },
    { "optimizer_bytes", G_STRUCT_OFFSET (TachSummary, optimizer_bytes), 1 },
    { "activation_bytes", G_STRUCT_OFFSET (TachSummary, activation_bytes), 1 },
    { "kv_cache_bytes", G_STRUCT_OFFSET (TachSummary, kv_cache_bytes), 1 },
    { "packed_weight_bytes", G_STRUCT_OFFSET (TachSummary, packed_weight_bytes), 1 },
    /* Absent (NaN) in folders written before sharding. */
    { "held_param_bytes", G_STRUCT_OFFSET (TachSummary, held_param_bytes), 1 },
    { "held_grad_bytes", G_STRUCT_OFFSET (TachSummary, held_grad_bytes), 1 },
    { "held_state_bytes", G_STRUCT_OFFSET (TachSummary, held_state_bytes), 1 },
    { "held_peak_bytes", G_STRUCT_OFFSET (TachSummary, held_peak_bytes), 1 },
  };

  memset (s, 0, sizeof *s);
  for (guint i = 0; i < G_N_ELEMENTS (figures); i++)
    {
      double v;

      if (!tach_csv_parse_double (tach_csv_field (columns, fields, figures[i].name), &v))
        {
          *bad = figures[i].name;
          return FALSE;
        }
      G_STRUCT_MEMBER (double, s, figures[i].offset) = v * figures[i].scale;
    }
  if (!tach_csv_parse_uint64 (tach_csv_field (columns, fields, "measured_steps"), &s->steps))
    {
      *bad = "measured_steps";
      return FALSE;
    }
  if (!tach_csv_parse_uint64 (tach_csv_field (columns, fields, "peak_memory_bytes"), &s->peak_memory_bytes))
    {
      *bad = "peak_memory_bytes";
      return FALSE;
    }
  {
    guint64 window = 0;

    /* Absent in folders written before the column existed: 0, unknown. */
    if (!tach_csv_parse_uint64 (tach_csv_field (columns, fields, "loss_window_steps"), &window) || window > G_MAXUINT)
      {
        *bad = "loss_window_steps";
        return FALSE;
      }
    s->loss_window_steps = (guint) window;
  }
  /* The unit is a static string, as the engine's own summaries have it. */
  s->items_unit = g_strcmp0 (tach_csv_field (columns, fields, "items_unit"), "tokens/s") == 0
                  ? "tokens/s" : "samples/s";
  s->rate_clock = g_strcmp0 (tach_csv_field (columns, fields, "rate_clock"), "device") == 0 ? "device" : "host";
  return TRUE;
}

/* The configuration of one row.  Knobs without a column, or whose value
 * this version cannot read, go into @unknown. */
static gboolean
config_from_row (GHashTable *columns, GPtrArray *fields, TachConfig *config,
                 GHashTable *unknown, GError **error)
{
  const char *workload = tach_csv_field (columns, fields, "workload");
  const char *task = tach_csv_field (columns, fields, "task");
  const char *preset = tach_csv_field (columns, fields, "preset");
  const char *device = tach_csv_field (columns, fields, "device");
  guint n_knobs = 0;
  const TachKnobInfo *knobs = tach_knobs (&n_knobs);
  TachConfig defaults;
  TachWorkload w;

  if (workload == NULL || !tach_workload_from_string (workload, &w, error))
    {
      if (workload == NULL)
        g_set_error_literal (error, TACH_ERROR, TACH_ERROR_DATA, _("the row has no workload"));
      return FALSE;
    }
  tach_config_init (config, w);
  if (task != NULL && *task != '\0' && !tach_config_set (config, "task", task, error))
    return FALSE;
  tach_config_copy (&defaults, config);

  for (guint i = 0; i < n_knobs; i++)
    {
      const char *name = knobs[i].name;
      const char *value = tach_csv_field (columns, fields, name);
      g_autofree char *default_value = NULL;

      if (g_str_equal (name, "workload") || g_str_equal (name, "task")
          || g_str_equal (name, "device") || g_str_equal (name, "preset"))
        continue;
      if (value == NULL)
        {
          g_hash_table_add (unknown, g_strdup (name));
          continue;
        }
      /* An empty field is a knob without a value (no data file): known
       * only where that is also the default. */
      if (*value == '\0')
        {
          default_value = tach_config_get (&defaults, name);
          if (default_value != NULL && *default_value != '\0')
            g_hash_table_add (unknown, g_strdup (name));
          continue;
        }
      if (!tach_config_set (config, name, value, NULL))
        g_hash_table_add (unknown, g_strdup (name));
    }
  tach_config_clear (&defaults);

  /* Set as recorded, without applying them again: the knobs above are the
   * run's, and its device need not exist here. */
  g_free (config->device);
  config->device = g_strdup (device != NULL && *device != '\0' ? device
                                                               : tach_backend_host_device_id ());
  g_clear_pointer (&config->preset, g_free);
  if (preset != NULL && *preset != '\0')
    config->preset = g_strdup (preset);
  return TRUE;
}

static gint64
start_time_from_row (GHashTable *columns, GPtrArray *fields)
{
  const char *date = tach_csv_field (columns, fields, "date");
  g_autoptr(GDateTime) dt = NULL;

  if (date == NULL || *date == '\0')
    return 0;
  dt = g_date_time_new_from_iso8601 (date, NULL);
  if (dt == NULL)
    return 0;
  return g_date_time_to_unix (dt) * G_USEC_PER_SEC + g_date_time_get_microsecond (dt);
}

static TachRun *
run_from_row (const char *dir, GHashTable *columns, GPtrArray *fields, GError **error)
{
  const char *run_id = tach_csv_field (columns, fields, "run_id");
  const char *message = tach_csv_field (columns, fields, "error");
  const char *bad = NULL;
  TachRunRecord *record;
  TachDeviceInfo *device;
  TachRun *run;

  if (run_id == NULL || *run_id == '\0')
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_DATA, _("the row has no run_id"));
      return NULL;
    }

  record = g_new0 (TachRunRecord, 1);
  record->unknown_knobs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  if (!summary_from_row (columns, fields, &record->summary, &bad))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   _("the column %s holds “%s”, which is not a number"), bad,
                   tach_csv_field (columns, fields, bad));
      tach_run_record_free (record);
      return NULL;
    }

  run = g_new0 (TachRun, 1);
  run->ref_count = 1;
  run->id = tach_run_next_id ();
  if (!config_from_row (columns, fields, &run->config, record->unknown_knobs, error))
    {
      tach_run_record_free (record);
      tach_config_clear (&run->config);
      g_free (run);
      return NULL;
    }
  if (g_hash_table_size (record->unknown_knobs) == 0)
    g_clear_pointer (&record->unknown_knobs, g_hash_table_unref);
  record->record_id = g_strdup (run_id);
  {
    const char *varied = tach_csv_field (columns, fields, "varied");
    const char *label = tach_csv_field (columns, fields, "label");

    if (varied != NULL && tach_knob_lookup (varied) != NULL)
      run->varied = g_strdup (varied);
    tach_run_set_label (run, label);
  }
  record->source = g_strdup (dir);

  device = g_new0 (TachDeviceInfo, 1);
  device->id = g_strdup (run->config.device);
  device->name = g_strdup (tach_csv_field (columns, fields, "device_name"));
  if (device->name == NULL || *device->name == '\0')
    {
      g_free (device->name);
      device->name = g_strdup (device->id);
    }
  device->versions = g_strdup (tach_csv_field (columns, fields, "versions"));

  run->device = tach_device_for_record (device);
  g_mutex_init (&run->lock);
  g_cond_init (&run->cond);
  run->samples = tach_sample_store_new ();
  run->state = state_from_string (tach_csv_field (columns, fields, "state"));
  if (message != NULL && *message != '\0')
    run->error = g_error_new_literal (TACH_ERROR, TACH_ERROR_DATA, message);
  else if (run->state == TACH_RUN_STATE_FAILED)
    run->error = g_error_new_literal (TACH_ERROR, TACH_ERROR_DATA, _("the run failed"));
  run->started = TRUE;
  run->start_time = start_time_from_row (columns, fields);
  run->flops_per_step = record->summary.flops_per_step;
  run->peak_memory = record->summary.peak_memory_bytes;
  run->test_accuracy = record->summary.test_accuracy;
  run->eval_s = record->summary.eval_s;
  run->evaluation = isnan (run->test_accuracy) ? TACH_EVALUATION_NONE : TACH_EVALUATION_DONE;
  g_atomic_int_set (&run->steps_done, (gint) MIN (run->config.steps, (guint) G_MAXINT));
  {
    const char *algorithms = tach_csv_field (columns, fields, "algorithms");
    const char *kind = tach_csv_field (columns, fields, "data_source");
    const char *path = tach_csv_field (columns, fields, "data_path");

    run->algorithms = algorithms != NULL && *algorithms != '\0' ? g_strdup (algorithms) : NULL;
    run->data_kind = kind != NULL && *kind != '\0' ? g_strdup (kind) : NULL;
    run->data_path = path != NULL && *path != '\0' ? g_strdup (path) : NULL;
  }
  run->record = record;
  return run;
}

/* ----------------------------------------------------------- samples.csv */

static gboolean
sample_from_row (GHashTable *columns, GPtrArray *fields, TachSample *s, const char **bad)
{
  static const struct { const char *name; size_t offset; } times[] = {
    { "wall_s", G_STRUCT_OFFSET (TachSample, wall_s) },
    { "step_ms", G_STRUCT_OFFSET (TachSample, step_ms) },
    { "feed_ms", G_STRUCT_OFFSET (TachSample, feed_ms) },
    { "compute_ms", G_STRUCT_OFFSET (TachSample, compute_ms) },
    { "sync_ms", G_STRUCT_OFFSET (TachSample, sync_ms) },
    { "host_ms", G_STRUCT_OFFSET (TachSample, host_ms) },
    { "loss", G_STRUCT_OFFSET (TachSample, loss) },
    { "accuracy", G_STRUCT_OFFSET (TachSample, accuracy) },
    { "device_step_ms", G_STRUCT_OFFSET (TachSample, device_step_ms) },
    { "api_calls", G_STRUCT_OFFSET (TachSample, api_calls) },
    { "comm_ms", G_STRUCT_OFFSET (TachSample, comm_ms) },
    { "pack_ms", G_STRUCT_OFFSET (TachSample, pack_ms) },
    { "imbalance_ms", G_STRUCT_OFFSET (TachSample, imbalance_ms) },
  };
  const char *rank = tach_csv_field (columns, fields, "rank");
  guint64 rank_value = 0;
  const char *step = tach_csv_field (columns, fields, "step");
  const char *warmup = tach_csv_field (columns, fields, "warmup");

  if (step == NULL || *step == '\0' || !tach_csv_parse_uint64 (step, &s->step))
    {
      *bad = "step";
      return FALSE;
    }
  s->warmup = g_strcmp0 (warmup, "1") == 0;
  /* Files from before data-parallel runs have no rank: rank 0's. */
  if (rank != NULL && *rank != '\0' && (!tach_csv_parse_uint64 (rank, &rank_value) || rank_value > 65535))
    {
      *bad = "rank";
      return FALSE;
    }
  s->rank = (guint) rank_value;
  for (guint i = 0; i < G_N_ELEMENTS (times); i++)
    if (!tach_csv_parse_double (tach_csv_field (columns, fields, times[i].name),
                       &G_STRUCT_MEMBER (double, s, times[i].offset)))
      {
        *bad = times[i].name;
        return FALSE;
      }
  return TRUE;
}

/* Rank @rank's store of @run (not 0), made as the rows need it. */
static TachSampleStore *
rank_store (TachRun *run, guint rank)
{
  if (run->rank_samples == NULL)
    run->rank_samples = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_sample_store_free);
  while (run->rank_samples->len < rank)
    {
      TachSampleStore *store = tach_sample_store_new ();

      tach_sample_store_set_rank (store, run->rank_samples->len + 1);
      g_ptr_array_add (run->rank_samples, store);
    }
  return run->rank_samples->pdata[rank - 1];
}

/* The rows of samples.csv (@b open on it, @path) into the runs of @by_id. */
static void
load_sample_rows (const char *path, Blocks *b, GHashTable *by_id, GPtrArray *problems)
{
  g_autoptr(GPtrArray) fields = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GHashTable) columns = NULL;
  g_autoptr(GHashTable) strays = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  guint n_columns;
  Reader r = { NULL, NULL, 1, FALSE };
  guint line;
  gboolean bad;

  if (!tach_csv_blocks_next (b, &r, fields, 0, &line, &bad)
      || tach_csv_field (columns = tach_csv_columns_from_header (fields), fields, "run_id") == NULL)
    {
      tach_csv_add_problem (problems, path, 1, _("not a samples.csv header (no run_id column): "
                                        "the runs load without their per-step samples"));
      return;
    }
  n_columns = fields->len;
  if (g_hash_table_lookup (columns, "step") == NULL)
    {
      tach_csv_add_problem (problems, path, 1, _("the header has no step column: "
                                        "the runs load without their per-step samples"));
      return;
    }

  for (;;)
    {
      gboolean more = tach_csv_blocks_next (b, &r, fields, n_columns, &line, &bad);
      const char *what = NULL;
      const char *run_id;
      TachRun *run;
      TachSample s = { 0 };

      if (!more && !bad)
        break;
      if (bad)
        {
          tach_csv_add_problem (problems, path, line, _("a malformed row (a stray quote or the wrong number of fields): skipped"));
          continue;
        }
      if (fields->len == 1 && *(char *) fields->pdata[0] == '\0')
        continue;  /* an empty line */
      run_id = tach_csv_field (columns, fields, "run_id");
      run = run_id != NULL ? g_hash_table_lookup (by_id, run_id) : NULL;
      if (run == NULL)
        {
          /* Said once per run, not once per step. */
          if (run_id != NULL && !g_hash_table_contains (strays, run_id))
            {
              g_autofree char *msg = g_strdup_printf (_("run %s is not in runs.csv: its samples are skipped"),
                                                      run_id);
              tach_csv_add_problem (problems, path, line, msg);
              g_hash_table_add (strays, g_strdup (run_id));
            }
          continue;
        }
      if (!sample_from_row (columns, fields, &s, &what))
        {
          g_autofree char *msg = g_strdup_printf (_("the column %s holds “%s”, which is not a number: "
                                                    "the row is skipped"),
                                                  what, tach_csv_field (columns, fields, what) ? tach_csv_field (columns, fields, what) : "");
          tach_csv_add_problem (problems, path, line, msg);
          continue;
        }
      if (s.rank == 0)
        tach_sample_store_append (run->samples, &s);
      else
        tach_sample_store_append (rank_store (run, s.rank), &s);
    }
}

/* Reads @path's rows into the runs of @by_id, a block at a time. */
static void
load_samples (const char *path, GHashTable *by_id, GPtrArray *problems)
{
  Blocks b = { .fd = g_open (path, O_RDONLY | O_CLOEXEC, 0) };

  if (b.fd < 0)
    {
      int err = errno;

      if (problems != NULL)
        g_ptr_array_add (problems, g_strdup_printf (_("%s: %s: the runs load without their "
                                                      "per-step samples"), path,
                                                    g_strerror (err)));
      return;
    }
  load_sample_rows (path, &b, by_id, problems);
  if (b.read_errno != 0 && problems != NULL)
    g_ptr_array_add (problems, g_strdup_printf (_("%s: %s: the samples after it are not "
                                                  "loaded"), path, g_strerror (b.read_errno)));
  close (b.fd);
  g_free (b.buf);
}

/* ------------------------------------------------------------ the folder */

gboolean
tach_results_load (const char  *dir,
                   GPtrArray   *runs,
                   GPtrArray   *problems,
                   GError     **error)
{
  g_autofree char *runs_path = g_build_filename (dir, "runs.csv", NULL);
  g_autofree char *samples_path = g_build_filename (dir, "samples.csv", NULL);
  g_autofree char *text = NULL;
  g_autoptr(GError) local = NULL;
  g_autoptr(GPtrArray) fields = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GPtrArray) loaded = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autoptr(GHashTable) columns = NULL;
  g_autoptr(GHashTable) by_id = g_hash_table_new (g_str_hash, g_str_equal);
  gsize len = 0;
  guint n_columns;
  Reader r;
  guint line;
  gboolean bad;

  g_return_val_if_fail (dir != NULL && runs != NULL, FALSE);

  if (!g_file_get_contents (runs_path, &text, &len, &local))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   _("cannot open the results in %s: %s: choose a folder that tach-cli --csv "
                     "or Export CSV wrote"), dir, local->message);
      return FALSE;
    }
  r = (Reader) { text, text + len, 1 };
  if (!tach_csv_reader_next (&r, fields, 0, &line, &bad)
      || tach_csv_field (columns = tach_csv_columns_from_header (fields), fields, "run_id") == NULL
      || tach_csv_field (columns, fields, "workload") == NULL)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   _("%s:1: not a runs.csv header (it needs run_id and workload columns): "
                     "choose a folder that tach-cli --csv or Export CSV wrote"), runs_path);
      return FALSE;
    }
  n_columns = fields->len;

  for (;;)
    {
      gboolean more = tach_csv_reader_next (&r, fields, n_columns, &line, &bad);
      g_autoptr(GError) row_error = NULL;
      TachRun *run;

      if (!more && !bad)
        break;
      if (bad)
        {
          tach_csv_add_problem (problems, runs_path, line, _("a malformed row (a stray quote or the wrong number of fields): skipped"));
          continue;
        }
      if (fields->len == 1 && *(char *) fields->pdata[0] == '\0')
        continue;
      run = run_from_row (dir, columns, fields, &row_error);
      if (run == NULL)
        {
          g_autofree char *msg = g_strdup_printf (_("%s: the run is skipped"), row_error->message);
          tach_csv_add_problem (problems, runs_path, line, msg);
          continue;
        }
      if (g_hash_table_contains (by_id, run->record->record_id))
        {
          tach_run_unref (run);
          continue;
        }
      g_hash_table_insert (by_id, run->record->record_id, run);
      g_ptr_array_add (loaded, run);
    }

  load_samples (samples_path, by_id, problems);
  for (guint i = 0; i < loaded->len; i++)
    g_ptr_array_add (runs, tach_run_ref (loaded->pdata[i]));
  return TRUE;
}
