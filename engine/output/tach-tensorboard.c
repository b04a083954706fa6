/* tach-tensorboard.c: runs as TensorBoard event files.
 *
 * Each run becomes DIR/<run>/events.out.tfevents.<start>.tach, so that
 * TensorBoard lists it as a run of its own: a TFRecord file (each record is
 * its length as a little-endian uint64, the masked CRC-32C of those eight
 * bytes, the data and the masked CRC-32C of the data) of Event protobufs
 * (tensorboard/tach-event.proto, with TensorBoard's field numbers, packed
 * by protobuf-c).  The first event names the file version; the second, at
 * step 0, holds the run's knobs as a text summary (a Markdown table, as
 * TensorBoard's text plugin shows it); then one event per step holds that
 * step's scalars: steps_per_s, loss, accuracy and the step's time and each
 * phase's, in ms; last, at the last step, the run's figures that verdicts
 * use (run/median_steps_per_s, run/items_per_s, each with _lo and _hi, its
 * 95% interval, and run/machine_busy).  A figure the engine did not observe is left out, not
 * written as 0.  Each file is written to a temporary name (a megabyte of
 * events at a time) and renamed.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib/gi18n-lib.h>
#include <glib/gstdio.h>

#include "tach-csv-private.h"
#include "tach-error-private.h"
#include "tach-run-private.h"
#include "tach-event.pb-c.h"

/* ---------------------------------------------------------- TFRecord */

static guint32 crc32c_table[256];

static gpointer
crc32c_init (gpointer data)
{
  for (guint32 i = 0; i < 256; i++)
    {
      guint32 c = i;

      for (int k = 0; k < 8; k++)
        c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  /* Castagnoli, reflected */
      crc32c_table[i] = c;
    }
  return NULL;
}

static guint32
crc32c (const guint8 *data, gsize n)
{
  static GOnce once = G_ONCE_INIT;
  guint32 c = 0xFFFFFFFFu;

  g_once (&once, crc32c_init, NULL);
  for (gsize i = 0; i < n; i++)
    c = crc32c_table[(c ^ data[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

/* TFRecord's masking, so that a CRC of data holding CRCs stays strong. */
static guint32
tach_tensorboard_masked_crc (const guint8 *data, gsize n)
{
  guint32 c = crc32c (data, n);

  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

static void
append_le (GByteArray *out, guint64 v, guint bytes)
{
  for (guint i = 0; i < bytes; i++)
    {
      guint8 b = (guint8) (v >> (8 * i));

      g_byte_array_append (out, &b, 1);
    }
}

static void
append_event (GByteArray *out, const Tensorboard__Event *event)
{
  gsize n = protobuf_c_message_get_packed_size (&event->base);
  guint8 header[8];
  guint start;

  for (guint i = 0; i < 8; i++)
    header[i] = (guint8) ((guint64) n >> (8 * i));
  g_byte_array_append (out, header, 8);
  append_le (out, tach_tensorboard_masked_crc (header, 8), 4);
  start = out->len;
  g_byte_array_set_size (out, out->len + n);
  protobuf_c_message_pack (&event->base, out->data + start);
  append_le (out, tach_tensorboard_masked_crc (out->data + start, n), 4);
}

/* ------------------------------------------------------------ events */

typedef struct { const char *tag; double v; } Scalar;

/* One event of @scalars at @step, those observed (a NaN is left out). */
static void
append_scalars (GByteArray *out, const Scalar *scalars, guint n_scalars, double wall_time,
                gint64 step)
{
  g_autofree Tensorboard__Summary__Value *values = g_new (Tensorboard__Summary__Value, n_scalars);
  g_autofree Tensorboard__Summary__Value **pointers = g_new (Tensorboard__Summary__Value *, n_scalars);
  Tensorboard__Summary summary = TENSORBOARD__SUMMARY__INIT;
  Tensorboard__Event event = TENSORBOARD__EVENT__INIT;
  guint n = 0;

  for (guint i = 0; i < n_scalars; i++)
    {
      if (!isfinite (scalars[i].v))
        continue;
      tensorboard__summary__value__init (&values[n]);
      values[n].tag = (char *) scalars[i].tag;
      values[n].value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
      values[n].simple_value = (float) scalars[i].v;
      pointers[n] = &values[n];
      n++;
    }
  summary.n_value = n;
  summary.value = pointers;
  event.wall_time = wall_time;
  event.step = step;
  event.what_case = TENSORBOARD__EVENT__WHAT_SUMMARY;
  event.summary = &summary;
  append_event (out, &event);
}

/* The step's scalars, those observed. */
static void
append_step (GByteArray *out, const TachSample *s, double start_s)
{
  const Scalar scalars[] = {
    { "steps_per_s", s->step_ms > 0 ? 1000.0 / s->step_ms : NAN },
    { "loss", s->loss },
    { "accuracy", s->accuracy },
    { "ms_per_step/step", s->step_ms },
    { "ms_per_step/feed", s->feed_ms },
    { "ms_per_step/compute", s->compute_ms },
    { "ms_per_step/sync", s->sync_ms },
    { "ms_per_step/host", s->host_ms },
  };

  append_scalars (out, scalars, G_N_ELEMENTS (scalars),
                  start_s + (isfinite (s->wall_s) ? s->wall_s : 0.0), (gint64) s->step);
}

/* The run's verdict figures, once, at its last step: the median rates with
 * their 95% intervals and how busy the machine was, under runs.csv's
 * column names, so that TensorBoard shows each run's interval beside its
 * curves (scalars are TensorBoard's only numbers; a run's figure is one
 * point of its own series).  @last: the last sample, or NULL. */
static void
append_run_figures (GByteArray *out, TachRun *run, const TachSample *last, double start_s)
{
  TachSummary s;

  tach_run_get_summary (run, &s);
  {
    const Scalar scalars[] = {
      { "run/median_steps_per_s", s.steps_per_s_median },
      { "run/median_steps_per_s_lo", s.steps_per_s_lo },
      { "run/median_steps_per_s_hi", s.steps_per_s_hi },
      { "run/items_per_s", s.items_per_s },
      { "run/items_per_s_lo", s.items_per_s_lo },
      { "run/items_per_s_hi", s.items_per_s_hi },
      { "run/machine_busy", s.machine_busy },
    };

    append_scalars (out, scalars, G_N_ELEMENTS (scalars),
                    start_s + (last != NULL && isfinite (last->wall_s) ? last->wall_s : 0.0),
                    last != NULL ? (gint64) last->step : 0);
  }
}

/* A Markdown cell: pipes and line ends would break the table. */
static void
append_cell (GString *md, const char *text)
{
  g_string_append (md, " ");
  for (const char *p = text != NULL ? text : ""; *p != '\0'; p++)
    {
      if (*p == '|')
        g_string_append (md, "\\|");
      else if (*p == '\n' || *p == '\r')
        g_string_append_c (md, ' ');
      else
        g_string_append_c (md, *p);
    }
  g_string_append (md, " |");
}

static void
append_row (GString *md, const char *key, const char *value)
{
  g_string_append (md, "|");
  append_cell (md, key);
  append_cell (md, value);
  g_string_append_c (md, '\n');
}

static char *
knobs_markdown (TachRun *run, const char *run_id)
{
  const TachConfig *config = tach_run_get_config (run);
  const TachDeviceInfo *device = tach_run_get_device (run);
  g_autoptr(GString) md = g_string_new ("| knob | value |\n|---|---|\n");
  guint n_knobs = 0;
  const TachKnobInfo *knobs = tach_knobs (&n_knobs);

  append_row (md, "run_id", run_id);
  append_row (md, "device_name", device->name);
  append_row (md, "versions", device->versions);
  append_row (md, "data_source", tach_run_get_data_kind (run));
  append_row (md, "data_path", tach_run_get_data_path (run));
  for (guint i = 0; i < n_knobs; i++)
    {
      g_autofree char *value = NULL;

      if (!tach_run_knob_is_known (run, knobs[i].name))
        value = g_strdup ("?");
      else if (g_str_equal (knobs[i].name, "device"))
        value = g_strdup (device->id);
      else if (g_str_equal (knobs[i].name, "samples"))
        value = g_strdup_printf ("%" G_GUINT64_FORMAT, tach_config_get_samples (config));
      else
        value = tach_config_get (config, knobs[i].name);
      append_row (md, knobs[i].name, value);
    }
  return g_string_free (g_steal_pointer (&md), FALSE);
}

static void
append_knobs (GByteArray *out, TachRun *run, const char *run_id, double start_s)
{
  g_autofree char *md = knobs_markdown (run, run_id);
  Tensorboard__SummaryMetadata__PluginData plugin = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
  Tensorboard__SummaryMetadata metadata = TENSORBOARD__SUMMARY_METADATA__INIT;
  Tensorboard__TensorShapeProto shape = TENSORBOARD__TENSOR_SHAPE_PROTO__INIT;
  Tensorboard__TensorProto tensor = TENSORBOARD__TENSOR_PROTO__INIT;
  Tensorboard__Summary__Value value = TENSORBOARD__SUMMARY__VALUE__INIT;
  Tensorboard__Summary__Value *values[] = { &value };
  Tensorboard__Summary summary = TENSORBOARD__SUMMARY__INIT;
  Tensorboard__Event event = TENSORBOARD__EVENT__INIT;
  ProtobufCBinaryData text = { strlen (md), (guint8 *) md };

  plugin.plugin_name = (char *) "text";
  metadata.plugin_data = &plugin;
  metadata.data_class = TENSORBOARD__DATA_CLASS__DATA_CLASS_TENSOR;
  /* A scalar string tensor: a shape with no dimensions. */
  tensor.dtype = TENSORBOARD__DATA_TYPE__DT_STRING;
  tensor.tensor_shape = &shape;
  tensor.n_string_val = 1;
  tensor.string_val = &text;
  value.tag = (char *) "knobs";
  value.metadata = &metadata;
  value.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_TENSOR;
  value.tensor = &tensor;
  summary.n_value = 1;
  summary.value = values;
  event.wall_time = start_s;
  event.step = 0;
  event.what_case = TENSORBOARD__EVENT__WHAT_SUMMARY;
  event.summary = &summary;
  append_event (out, &event);
}

/* A folder name from the run's workload, preset and id: only characters
 * that every file system takes. */
static char *
run_folder_name (TachRun *run, const char *run_id)
{
  const TachConfig *config = tach_run_get_config (run);
  g_autofree char *what = tach_run_dup_name (run, "custom");
  char *name = g_strdup_printf ("%s-%s-%s", tach_workload_to_string (config->workload), what,
                                run_id);

  for (char *p = name; *p != '\0'; p++)
    if (!g_ascii_isalnum (*p) && *p != '-' && *p != '_' && *p != '.')
      *p = '_';
  return name;
}

/* The events of a run of millions of steps are written out a megabyte at
 * a time, not gathered whole. */
#define FLUSH_BYTES (1 << 20)

/* Writes out @data (and empties it) when it holds FLUSH_BYTES, or with
 * @all whatever it holds. */
static gboolean
flush_events (GOutputStream *stream, GByteArray *data, gboolean all, GError **error)
{
  if (data->len == 0 || (!all && data->len < FLUSH_BYTES))
    return TRUE;
  if (!g_output_stream_write_all (stream, data->data, data->len, NULL, NULL, error))
    return FALSE;
  g_byte_array_set_size (data, 0);
  return TRUE;
}

/* Writes @run's event file under @dir; returns its path. */
static char *
export_run (const char *dir, TachRun *run, GError **error)
{
  g_autofree char *run_id = tach_csv_run_id (run);
  g_autofree char *folder_name = run_folder_name (run, run_id);
  g_autofree char *folder = g_build_filename (dir, folder_name, NULL);
  g_autofree char *file_name = NULL;
  g_autofree char *path = NULL;
  g_autoptr(GByteArray) out = g_byte_array_new ();
  g_autoptr(GArray) samples = g_array_new (FALSE, FALSE, sizeof (TachSample));
  g_autoptr(GFile) file = NULL;
  g_autoptr(GFileOutputStream) stream = NULL;
  g_autoptr(GCancellable) discard = g_cancellable_new ();
  g_autoptr(GError) local = NULL;
  Tensorboard__Event version = TENSORBOARD__EVENT__INIT;
  double start_s = tach_run_get_start_time (run) / (double) G_USEC_PER_SEC;
  TachSample last;
  gboolean ok, have_last = FALSE;

  if (g_mkdir_with_parents (folder, 0755) != 0)
    {
      int err = errno;

      g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
                   W_("could not create the folder %s: %s: choose a writable {--tensorboard folder|folder}"),
                   folder, g_strerror (err));
      return NULL;
    }
  file_name = g_strdup_printf ("events.out.tfevents.%" G_GINT64_FORMAT ".tach",
                               tach_run_get_start_time (run) / G_USEC_PER_SEC);
  path = g_build_filename (folder, file_name, NULL);
  /* A replacing stream writes a temporary file and renames it when closed
   * (a close cancelled discards it). */
  file = g_file_new_for_path (path);
  stream = g_file_replace (file, NULL, FALSE, G_FILE_CREATE_NONE, NULL, &local);
  if (stream == NULL)
    goto fail;

  version.wall_time = start_s;
  version.what_case = TENSORBOARD__EVENT__WHAT_FILE_VERSION;
  version.file_version = (char *) "brain.Event:2";
  append_event (out, &version);
  append_knobs (out, run, run_id, start_s);
  /* A bounded range of samples at a time. */
  ok = TRUE;
  for (guint from = 0; ok && tach_run_copy_samples (run, from, TACH_RUN_DRAIN_MAX, samples) > 0;
       from += samples->len, g_array_set_size (samples, 0))
    {
      for (guint i = 0; ok && i < samples->len; i++)
        {
          append_step (out, &g_array_index (samples, TachSample, i), start_s);
          ok = flush_events (G_OUTPUT_STREAM (stream), out, FALSE, &local);
        }
      last = g_array_index (samples, TachSample, samples->len - 1);
      have_last = TRUE;
    }
  if (ok)
    append_run_figures (out, run, have_last ? &last : NULL, start_s);
  if (ok && flush_events (G_OUTPUT_STREAM (stream), out, TRUE, &local)
      && g_output_stream_close (G_OUTPUT_STREAM (stream), NULL, &local))
    return g_steal_pointer (&path);

fail:
  if (stream != NULL)
    {
      g_cancellable_cancel (discard);
      g_output_stream_close (G_OUTPUT_STREAM (stream), discard, NULL);
    }
  g_set_error (error, TACH_ERROR, TACH_ERROR_IO,
               W_("could not write %s: %s: choose another {--tensorboard folder|folder}"),
               path, local->message);
  return NULL;
}

gboolean
tach_tensorboard_export (const char  *dir,
                         GPtrArray   *runs,
                         GPtrArray   *paths,
                         GError     **error)
{
  g_return_val_if_fail (dir != NULL && runs != NULL, FALSE);

  for (guint i = 0; i < runs->len; i++)
    {
      TachRun *run = g_ptr_array_index (runs, i);
      TachRunState state = tach_run_get_state (run);
      char *path;

      /* Only ended runs have their steps. */
      if (state == TACH_RUN_STATE_READY || state == TACH_RUN_STATE_RUNNING)
        continue;
      path = export_run (dir, run, error);
      if (path == NULL)
        return FALSE;
      if (paths != NULL)
        g_ptr_array_add (paths, path);
      else
        g_free (path);
    }
  return TRUE;
}
