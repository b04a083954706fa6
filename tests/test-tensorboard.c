/* test-tensorboard.c: the TensorBoard event files, read back by a reader of
 * the test's own: TFRecord framing with its masked CRC-32C computed here bit
 * by bit (not with the writer's table), Event protobufs unpacked, and every
 * step's scalars against the run's samples; the run's figures with their
 * intervals and machine_busy at its last step; the knobs' text summary; and a
 * folder that cannot be written. */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "test-run-util.h"
#include "tach-event.pb-c.h"

static guint32
crc32c_bitwise (const guint8 *p, gsize n)
{
  guint32 c = 0xFFFFFFFFu;

  for (gsize i = 0; i < n; i++)
    {
      c ^= p[i];
      for (int k = 0; k < 8; k++)
        c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    }
  return ~c;
}

static guint32
masked (const guint8 *p, gsize n)
{
  guint32 c = crc32c_bitwise (p, n);

  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

static guint64
read_le (const guint8 *p, guint bytes)
{
  guint64 v = 0;

  for (guint i = 0; i < bytes; i++)
    v |= (guint64) p[i] << (8 * i);
  return v;
}

static void
event_free (gpointer event)
{
  tensorboard__event__free_unpacked (event, NULL);
}

/* Every record of @path, unpacked (element type Tensorboard__Event*). */
static GPtrArray *
read_events (const char *path)
{
  g_autofree char *text = NULL;
  gsize len = 0, at = 0;
  GPtrArray *events = g_ptr_array_new_with_free_func (event_free);

  g_assert_true (g_file_get_contents (path, &text, &len, NULL));
  while (at < len)
    {
      const guint8 *p = (const guint8 *) text + at;
      guint64 n;
      Tensorboard__Event *event;

      g_assert_cmpuint (len - at, >=, 12);
      n = read_le (p, 8);
      g_assert_cmpuint (read_le (p + 8, 4), ==, masked (p, 8));
      g_assert_cmpuint (len - at, >=, 12 + n + 4);
      g_assert_cmpuint (read_le (p + 12 + n, 4), ==, masked (p + 12, n));
      event = tensorboard__event__unpack (NULL, n, p + 12);
      g_assert_nonnull (event);
      g_ptr_array_add (events, event);
      at += 12 + n + 4;
    }
  return events;
}

static const Tensorboard__Summary__Value *
find_value (const Tensorboard__Event *event, const char *tag)
{
  for (size_t i = 0; i < event->summary->n_value; i++)
    if (g_str_equal (event->summary->value[i]->tag, tag))
      return event->summary->value[i];
  return NULL;
}

static void
assert_scalar (const Tensorboard__Event *event, const char *tag, double expected)
{
  const Tensorboard__Summary__Value *v = find_value (event, tag);

  /* A figure not observed is left out. */
  if (!isfinite (expected))
    {
      g_assert_null (v);
      return;
    }
  g_assert_nonnull (v);
  g_assert_cmpint (v->value_case, ==, TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE);
  g_assert_cmpfloat (v->simple_value, ==, (float) expected);
}

static void
check_run (TachRun *run, const char *path)
{
  g_autoptr(GPtrArray) events = read_events (path);
  g_autoptr(GArray) samples = tach_run_dup_samples (run);
  const Tensorboard__Event *version, *knobs;
  const Tensorboard__Summary__Value *text;
  g_autofree char *markdown = NULL;
  guint n_knobs = 0;
  const TachKnobInfo *infos = tach_knobs (&n_knobs);
  double start_s = tach_run_get_start_time (run) / (double) G_USEC_PER_SEC;

  g_assert_cmpuint (events->len, ==, 2 + samples->len + 1);
  version = events->pdata[0];
  g_assert_cmpint (version->what_case, ==, TENSORBOARD__EVENT__WHAT_FILE_VERSION);
  g_assert_cmpstr (version->file_version, ==, "brain.Event:2");

  /* The knobs, as the text plugin's scalar string tensor. */
  knobs = events->pdata[1];
  g_assert_cmpint (knobs->what_case, ==, TENSORBOARD__EVENT__WHAT_SUMMARY);
  text = find_value (knobs, "knobs");
  g_assert_nonnull (text);
  g_assert_cmpstr (text->metadata->plugin_data->plugin_name, ==, "text");
  g_assert_cmpint (text->tensor->dtype, ==, TENSORBOARD__DATA_TYPE__DT_STRING);
  g_assert_cmpuint (text->tensor->tensor_shape->n_dim, ==, 0);
  g_assert_cmpuint (text->tensor->n_string_val, ==, 1);
  markdown = g_strndup ((const char *) text->tensor->string_val[0].data, text->tensor->string_val[0].len);
  for (guint i = 0; i < n_knobs; i++)
    {
      g_autofree char *value = tach_config_get (tach_run_get_config (run), infos[i].name);
      g_autofree char *row = NULL;

      if (g_str_equal (infos[i].name, "device") || g_str_equal (infos[i].name, "samples")
          || g_str_equal (infos[i].name, "data"))
        continue;
      row = g_strdup_printf ("| %s | %s |\n", infos[i].name, value != NULL ? value : "");
      g_assert_nonnull (strstr (markdown, row));
    }

  for (guint i = 0; i < samples->len; i++)
    {
      const TachSample *s = &g_array_index (samples, TachSample, i);
      const Tensorboard__Event *e = events->pdata[2 + i];

      g_assert_cmpint (e->step, ==, (gint64) s->step);
      g_assert_cmpfloat_with_epsilon (e->wall_time, start_s + s->wall_s, 1e-6);
      assert_scalar (e, "steps_per_s", 1000.0 / s->step_ms);
      assert_scalar (e, "loss", s->loss);
      assert_scalar (e, "accuracy", s->accuracy);
      assert_scalar (e, "ms_per_step/step", s->step_ms);
      assert_scalar (e, "ms_per_step/feed", s->feed_ms);
      assert_scalar (e, "ms_per_step/compute", s->compute_ms);
      assert_scalar (e, "ms_per_step/sync", s->sync_ms);
      assert_scalar (e, "ms_per_step/host", s->host_ms);
    }

  /* Last, at the last step, the run's figures with their intervals, as
   * runs.csv has them; one not known is left out. */
  {
    const Tensorboard__Event *e = events->pdata[events->len - 1];
    TachSummary sum;
    static const char *const tags[] = {
      "run/median_steps_per_s", "run/median_steps_per_s_lo", "run/median_steps_per_s_hi",
      "run/items_per_s", "run/items_per_s_lo", "run/items_per_s_hi", "run/machine_busy",
    };
    double v[G_N_ELEMENTS (tags)];

    tach_run_get_summary (run, &sum);
    v[0] = sum.steps_per_s_median;
    v[1] = sum.steps_per_s_lo;
    v[2] = sum.steps_per_s_hi;
    v[3] = sum.items_per_s;
    v[4] = sum.items_per_s_lo;
    v[5] = sum.items_per_s_hi;
    v[6] = sum.machine_busy;
    g_assert_cmpint (e->what_case, ==, TENSORBOARD__EVENT__WHAT_SUMMARY);
    g_assert_cmpint (e->step, ==, (gint64) g_array_index (samples, TachSample, samples->len - 1).step);
    g_assert_true (isfinite (v[0]) && isfinite (v[3]));
    for (guint i = 0; i < G_N_ELEMENTS (tags); i++)
      if (isfinite (v[i]))
        assert_scalar (e, tags[i], v[i]);
      else
        g_assert_null (find_value (e, tags[i]));
  }
}

static void
test_roundtrip (void)
{
  g_autofree char *dir = test_make_tmp_dir ("tach-tb-XXXXXX");
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GPtrArray) again = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GError) error = NULL;
  TachConfig c;

  test_tiny_config (&c, 6);
  test_apply (&c, "metrics=accuracy");
  g_ptr_array_add (runs, test_run_to_end (&c));
  tach_config_clear (&c);
  test_tiny_config (&c, 5);
  test_apply (&c, "preset=keras-fit device=cpu batch=8");
  g_ptr_array_add (runs, test_run_to_end (&c));
  tach_config_clear (&c);
  /* Enough steps for the median's interval: run/..._lo and _hi are there. */
  test_tiny_config (&c, 40);
  g_ptr_array_add (runs, test_run_to_end (&c));
  tach_config_clear (&c);
  {
    TachSummary sum;

    tach_run_get_summary (runs->pdata[2], &sum);
    g_assert_true (isfinite (sum.steps_per_s_lo) && isfinite (sum.items_per_s_hi));
  }
  /* A run that never started has nothing to write. */
  g_ptr_array_add (runs, test_tiny_run_new (3));

  g_assert_true (tach_tensorboard_export (dir, runs, paths, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (paths->len, ==, 3);
  for (guint i = 0; i < paths->len; i++)
    {
      g_autofree char *base = g_path_get_basename (paths->pdata[i]);
      g_autofree char *parent = g_path_get_dirname (paths->pdata[i]);
      g_autofree char *grand = g_path_get_dirname (parent);

      /* One folder per run, so that TensorBoard lists each as a run. */
      g_assert_cmpstr (grand, ==, dir);
      g_assert_true (g_str_has_prefix (base, "events.out.tfevents."));
      check_run (runs->pdata[i], paths->pdata[i]);
    }
  g_assert_null (strstr (paths->pdata[0], "keras-fit"));
  g_assert_nonnull (strstr (paths->pdata[1], "keras-fit"));

  /* Written again, a run replaces its own file. */
  g_assert_true (tach_tensorboard_export (dir, runs, again, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (again->pdata[0], ==, paths->pdata[0]);
  check_run (runs->pdata[0], again->pdata[0]);
  test_remove_tree (dir);
}

static void
test_unwritable (void)
{
  g_autofree char *dir = test_make_tmp_dir ("tach-tb-XXXXXX");
  g_autofree char *file = test_write_file (dir, "a-file", "x", -1);
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autoptr(GError) error = NULL;
  TachConfig c;

  test_tiny_config (&c, 3);
  g_ptr_array_add (runs, test_run_to_end (&c));
  tach_config_clear (&c);
  g_assert_false (tach_tensorboard_export (file, runs, NULL, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_IO);
  g_assert_nonnull (strstr (error->message, file));
  test_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/tensorboard/roundtrip", test_roundtrip);
  g_test_add_func ("/engine/tensorboard/unwritable", test_unwritable);
  return g_test_run ();
}
