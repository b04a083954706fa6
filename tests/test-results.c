/* test-results.c: reading results folders back (tach_results_load): the
 * same runs, summaries and samples as were written, a folder from an older
 * version with fewer knob columns, and malformed files, whose bad rows are
 * reported by file and line while the rest loads; samples.csv read in
 * blocks of any size loads as it does whole. */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "tach-run-private.h"
#include "tach-progress.h"
#include "test-run-util.h"

typedef struct {
  char    *dir;
  TachRun *a;     /* with accuracy, and a data path that needs quoting */
  TachRun *b;
} Fixture;

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
  g_autoptr(GPtrArray) runs = g_ptr_array_new ();
  g_autoptr(GError) error = NULL;
  TachConfig c;

  f->dir = test_make_tmp_dir ("tach-results-XXXXXX");
  test_tiny_config (&c, 6);
  g_assert_true (tach_config_set (&c, "data", "a,b \"q\"\nline", NULL));
  g_assert_true (tach_config_set (&c, "metrics", "accuracy", NULL));
  f->a = test_run_to_end (&c);
  tach_config_clear (&c);
  test_tiny_config (&c, 4);
  test_apply (&c, "preset=keras-fit device=cpu batch=8");
  f->b = test_run_to_end (&c);
  tach_config_clear (&c);
  /* What explain and sweep say of their runs. */
  tach_run_set_label (f->a, "tf1-feed-dict + layout=batch-major");
  tach_run_set_varied (f->b, "batch");

  g_ptr_array_add (runs, f->a);
  g_ptr_array_add (runs, f->b);
  g_assert_true (tach_csv_append (f->dir, runs, &error));
  g_assert_no_error (error);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
  test_remove_tree (f->dir);
  g_free (f->dir);
  tach_run_unref (f->a);
  tach_run_unref (f->b);
}

static void
assert_same_double (double a, double b)
{
  if (isnan (a))
    g_assert_true (isnan (b));
  else
    g_assert_cmpfloat_with_epsilon (a, b, 1e-8 * MAX (1.0, fabs (a)));
}

static void
assert_same_run (TachRun *made, TachRun *loaded)
{
  const TachConfig *mc = tach_run_get_config (made);
  const TachConfig *lc = tach_run_get_config (loaded);
  g_autoptr(GArray) ms = tach_run_dup_samples (made);
  g_autoptr(GArray) ls = tach_run_dup_samples (loaded);
  guint n_knobs = 0;
  const TachKnobInfo *knobs = tach_knobs (&n_knobs);
  TachSummary a, b;

  g_assert_cmpint (tach_run_get_state (loaded), ==, tach_run_get_state (made));
  g_assert_cmpstr (tach_run_get_device (loaded)->id, ==, tach_run_get_device (made)->id);
  g_assert_cmpstr (tach_run_get_device (loaded)->name, ==, tach_run_get_device (made)->name);
  g_assert_cmpstr (lc->preset, ==, mc->preset);
  g_assert_cmpstr (tach_run_get_label (loaded), ==, tach_run_get_label (made));
  g_assert_cmpstr (tach_run_get_data_kind (loaded), ==, tach_run_get_data_kind (made));
  g_assert_cmpstr (tach_run_get_data_path (loaded), ==, tach_run_get_data_path (made));
  g_assert_nonnull (tach_run_get_record_id (loaded));
  g_assert_null (tach_run_get_record_id (made));
  for (guint i = 0; i < n_knobs; i++)
    {
      g_autofree char *mv = tach_config_get (mc, knobs[i].name);
      g_autofree char *lv = tach_config_get (lc, knobs[i].name);

      if (g_str_equal (knobs[i].name, "samples") || g_str_equal (knobs[i].name, "device"))
        continue;  /* saved as the size used and the device resolved */
      g_assert_true (tach_run_knob_is_known (loaded, knobs[i].name));
      g_assert_cmpstr (lv, ==, mv);
    }

  tach_run_get_summary (made, &a);
  tach_run_get_summary (loaded, &b);
  g_assert_cmpuint (a.steps, ==, b.steps);
  assert_same_double (a.steps_per_s_median, b.steps_per_s_median);
  assert_same_double (a.steps_per_s_p10, b.steps_per_s_p10);
  assert_same_double (a.items_per_s, b.items_per_s);
  assert_same_double (a.final_loss, b.final_loss);
  assert_same_double (a.first_loss, b.first_loss);
  g_assert_cmpuint (a.loss_window_steps, >, 0);
  g_assert_cmpuint (a.loss_window_steps, ==, b.loss_window_steps);
  {
    g_autofree char *made_algorithms = tach_run_dup_algorithms (made);
    g_autofree char *loaded_algorithms = tach_run_dup_algorithms (loaded);

    g_assert_nonnull (made_algorithms);
    g_assert_cmpstr (made_algorithms, ==, loaded_algorithms);
  }
  assert_same_double (a.compute_share, b.compute_share);
  assert_same_double (a.achieved_flops, b.achieved_flops);
  g_assert_cmpuint (a.peak_memory_bytes, ==, b.peak_memory_bytes);
  assert_same_double (a.threads_asked, b.threads_asked);
  assert_same_double (a.threads_fewest, b.threads_fewest);
  assert_same_double (a.threads_fewer_share, b.threads_fewer_share);
  g_assert_cmpstr (a.items_unit, ==, b.items_unit);

  g_assert_cmpuint (ms->len, ==, ls->len);
  for (guint i = 0; i < ms->len; i++)
    {
      const TachSample *x = &g_array_index (ms, TachSample, i);
      const TachSample *y = &g_array_index (ls, TachSample, i);

      g_assert_cmpuint (x->step, ==, y->step);
      g_assert_cmpint (x->warmup, ==, y->warmup);
      assert_same_double (x->step_ms, y->step_ms);
      assert_same_double (x->compute_ms, y->compute_ms);
      assert_same_double (x->loss, y->loss);
      assert_same_double (x->accuracy, y->accuracy);
    }
}

static char *
file_text (const char *dir, const char *name)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  char *text = NULL;

  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  return text;
}

/* Loaded runs are the runs written, and writing them again gives the same
 * files: same ids, knobs and figures. */
static void
test_roundtrip (Fixture *f, gconstpointer data)
{
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GError) error = NULL;
  g_autofree char *again = g_build_filename (f->dir, "again", NULL);
  g_autofree char *runs1 = NULL, *runs2 = NULL, *samples1 = NULL, *samples2 = NULL;

  g_assert_true (tach_results_load (f->dir, runs, problems, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (problems->len, ==, 0);
  g_assert_cmpuint (runs->len, ==, 2);
  assert_same_run (f->a, runs->pdata[0]);
  assert_same_run (f->b, runs->pdata[1]);
  g_assert_cmpstr (tach_run_get_source (runs->pdata[0]), ==, f->dir);
  /* Named by what they are: a's label (it has no preset), b's preset and
   * the value of the knob its sweep varied. */
  {
    g_autofree char *a = tach_run_dup_name (runs->pdata[0], "custom");
    g_autofree char *b = tach_run_dup_name (runs->pdata[1], "custom");
    g_autofree char *plain = NULL;

    g_assert_cmpstr (a, ==, "tf1-feed-dict + layout=batch-major");
    g_assert_cmpstr (b, ==, "keras-fit batch=8");
    tach_run_set_label (runs->pdata[0], NULL);
    plain = tach_run_dup_name (runs->pdata[0], "custom");
    g_assert_cmpstr (plain, ==, "custom");
    tach_run_set_label (runs->pdata[0], "tf1-feed-dict + layout=batch-major");
  }

  /* Appending them to their own folder adds nothing. */
  runs1 = file_text (f->dir, "runs.csv");
  g_assert_true (tach_csv_append (f->dir, runs, &error));
  g_assert_no_error (error);
  runs2 = file_text (f->dir, "runs.csv");
  g_assert_cmpstr (runs1, ==, runs2);
  g_clear_pointer (&runs2, g_free);

  g_assert_true (tach_csv_append (again, runs, &error));
  g_assert_no_error (error);
  runs2 = file_text (again, "runs.csv");
  samples1 = file_text (f->dir, "samples.csv");
  samples2 = file_text (again, "samples.csv");
  g_assert_cmpstr (runs1, ==, runs2);
  g_assert_cmpstr (samples1, ==, samples2);
}

/* A folder written before some knobs existed: those knobs are unknown,
 * shown and written back as such, and the rest of the row is read. */
static void
test_older_columns (Fixture *f, gconstpointer data)
{
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = test_make_tmp_dir ("tach-results-old-XXXXXX");
  g_autofree char *p1 = NULL, *p2 = NULL;
  g_autofree char *again = g_build_filename (dir, "again", NULL);
  g_autofree char *text = NULL;
  TachSummary s;
  TachRun *run;

  p1 = test_write_file (dir, "runs.csv",
                        "run_id,date,workload,task,device,device_name,versions,preset,rnn,layout,"
                        "feed,sync,batch,steps,state,error,measured_steps,median_steps_per_s,"
                        "final_loss\r\n"
                        "old-1,2025-06-01T10:00:00Z,bilstm,train,cuda:0,NVIDIA H200,\"driver 13.0, cuDNN 9.19\","
                        "keras-fit,fused,batch-major,host-f32,1,256,60,finished,,50,123.5,0.6931\r\n", -1);
  p2 = test_write_file (dir, "samples.csv",
                        "run_id,step,warmup,wall_s,step_ms,loss\n"
                        "old-1,0,1,0.1,100,0.7\n"
                        "old-1,1,0,0.108,8,0.69\n", -1);

  g_assert_true (tach_results_load (dir, runs, problems, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (problems->len, ==, 0);
  g_assert_cmpuint (runs->len, ==, 1);
  run = runs->pdata[0];
  g_assert_cmpstr (tach_run_get_device (run)->name, ==, "NVIDIA H200");
  g_assert_cmpint (tach_run_get_device (run)->kind, ==, TACH_DEVICE_KIND_GPU);
  g_assert_cmpstr (tach_run_get_config (run)->preset, ==, "keras-fit");
  g_assert_cmpuint (tach_run_get_config (run)->batch, ==, 256);
  g_assert_true (tach_run_knob_is_known (run, "feed"));
  g_assert_false (tach_run_knob_is_known (run, "precision"));
  g_assert_false (tach_run_knob_is_known (run, "metrics"));
  tach_run_get_summary (run, &s);
  g_assert_cmpuint (s.steps, ==, 50);
  g_assert_cmpfloat (s.steps_per_s_median, ==, 123.5);
  g_assert_cmpfloat (s.final_loss, ==, 0.6931);
  g_assert_true (isnan (s.test_accuracy));
  /* Written before runs.csv kept the threads a run kept: unknown. */
  g_assert_true (isnan (s.threads_asked) && isnan (s.threads_fewest));
  {
    g_autoptr(GArray) samples = tach_run_dup_samples (run);
    const TachSample *x;

    g_assert_cmpuint (samples->len, ==, 2);
    x = &g_array_index (samples, TachSample, 1);
    g_assert_cmpfloat (x->step_ms, ==, 8);
    g_assert_false (x->warmup);
    g_assert_true (isnan (x->compute_ms));
    g_assert_true (isnan (x->accuracy));
  }

  /* Written back, an unknown knob is an empty field, not a default. */
  g_assert_true (tach_csv_append (again, runs, &error));
  g_assert_no_error (error);
  text = file_text (again, "runs.csv");
  g_assert_nonnull (strstr (text, "old-1,2025-06-01T10:00:00Z,bilstm,train,cuda:0,NVIDIA H200,"
                                  "\"driver 13.0, cuDNN 9.19\",keras-fit,fused,batch-major,host-f32,1,,"));
  test_remove_tree (dir);
}

static void
replace_line (const char *dir, const char *name, guint line, const char *with)
{
  g_autofree char *text = file_text (dir, name);
  g_auto(GStrv) lines = g_strsplit (text, "\r\n", -1);
  g_autofree char *joined = NULL;
  g_autofree char *path = NULL;

  g_assert_cmpuint (g_strv_length (lines), >, line);
  g_free (lines[line - 1]);
  lines[line - 1] = g_strdup (with);
  joined = g_strjoinv ("\r\n", lines);
  path = test_write_file (dir, name, joined, -1);
}

static gboolean
has_problem (GPtrArray *problems, const char *start)
{
  for (guint i = 0; i < problems->len; i++)
    if (strstr (problems->pdata[i], start) != NULL)
      return TRUE;
  return FALSE;
}

/* A bad row is named by file and line and skipped; the rest loads. */
static void
test_malformed (Fixture *f, gconstpointer data)
{
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GError) error = NULL;
  g_autofree char *runs_path = g_build_filename (f->dir, "runs.csv", NULL);
  g_autofree char *samples_path = g_build_filename (f->dir, "samples.csv", NULL);
  g_autofree char *where = NULL;
  g_autoptr(GArray) samples = NULL;
  g_autofree char *samples_text = file_text (f->dir, "samples.csv");
  g_auto(GStrv) sample_lines = g_strsplit (samples_text, "\r\n", -1);
  g_autofree char *bad_sample = NULL;

  /* Run a's row (line 2) goes bad; so does one of run b's samples: a's six
   * samples come first (lines 2-7), so b's second step is on line 9. */
  replace_line (f->dir, "runs.csv", 2, "\"unclosed,bilstm");
  bad_sample = g_strdup (sample_lines[8]);
  {
    g_auto(GStrv) cells = g_strsplit (bad_sample, ",", -1);

    g_free (cells[4]);
    cells[4] = g_strdup ("fast");
    g_free (bad_sample);
    bad_sample = g_strjoinv (",", cells);
  }
  replace_line (f->dir, "samples.csv", 9, bad_sample);

  g_assert_true (tach_results_load (f->dir, runs, problems, &error));
  g_assert_no_error (error);
  /* Run a's row is gone, so its samples are strays, said once. */
  g_assert_cmpuint (runs->len, ==, 1);
  where = g_strdup_printf ("%s:2: ", runs_path);
  g_assert_true (has_problem (problems, where));
  g_clear_pointer (&where, g_free);
  where = g_strdup_printf ("%s:9: the column step_ms holds “fast”", samples_path);
  g_assert_true (has_problem (problems, where));
  g_clear_pointer (&where, g_free);
  where = g_strdup_printf ("%s:2: run ", samples_path);
  g_assert_true (has_problem (problems, where));
  g_clear_pointer (&where, g_free);
  g_assert_cmpuint (problems->len, ==, 3);
  samples = tach_run_dup_samples (runs->pdata[0]);
  g_assert_cmpuint (samples->len, ==, 3);

  /* A folder without results, and a file that is not a runs.csv. */
  g_ptr_array_set_size (runs, 0);
  g_assert_false (tach_results_load (samples_path, runs, problems, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  g_assert_nonnull (strstr (error->message, samples_path));
  g_clear_error (&error);
  replace_line (f->dir, "runs.csv", 1, "id;when;what");
  g_assert_false (tach_results_load (f->dir, runs, problems, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  where = g_strdup_printf ("%s:1: ", runs_path);
  g_assert_true (g_str_has_prefix (error->message, where));
  g_assert_cmpuint (runs->len, ==, 0);
}

/* Everything a load gives: each run's id and samples, and the problems. */
static char *
load_digest (const char *dir)
{
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GError) error = NULL;
  GString *out = g_string_new (NULL);

  g_assert_true (tach_results_load (dir, runs, problems, &error));
  g_assert_no_error (error);
  for (guint i = 0; i < runs->len; i++)
    {
      g_autoptr(GArray) samples = tach_run_dup_samples (runs->pdata[i]);

      g_string_append_printf (out, "run %s: %u samples\n",
                              tach_run_get_record_id (runs->pdata[i]), samples->len);
      for (guint k = 0; k < samples->len; k++)
        {
          const TachSample *s = &g_array_index (samples, TachSample, k);

          g_string_append_printf (out, "%" G_GUINT64_FORMAT " %d %.17g %.9g %.9g %.9g %.9g\n",
                                  s->step, s->warmup, s->wall_s, s->step_ms, s->host_ms,
                                  s->loss, s->accuracy);
        }
    }
  for (guint i = 0; i < problems->len; i++)
    g_string_append_printf (out, "problem %s\n", (char *) problems->pdata[i]);
  return g_string_free (out, FALSE);
}

/* samples.csv is read a block at a time: whatever the block size, so
 * wherever a block ends (inside a quoted field with a line break, between
 * CR and LF, in a malformed row, in a file whose last row has no line
 * end), the load is the one of the whole file. */
static void
test_blocks (Fixture *f, gconstpointer data)
{
  g_autofree char *samples_text = file_text (f->dir, "samples.csv");
  g_autofree char *expected = NULL;
  g_autoptr(GString) text = g_string_new (samples_text);
  g_auto(GStrv) lines = g_strsplit (samples_text, "\r\n", -1);
  static const guint sizes[] = { 1, 2, 3, 7, 64, 1000 };
  guint old;

  /* A stray run whose quoted id holds a line break and a quote, a row
   * with a stray quote, an LF line end, one of a's rows again after them,
   * and a last row without a line end. */
  g_string_append (text, "\"stray\r\n\"\"id\"\"\",0,0,1,1,,,,,,,,\r\n");
  g_string_append (text, "bad\"quote,1,0,1,1,,,,,,,,\r\n");
  g_string_append_printf (text, "%s\n", lines[2]);
  g_string_append (text, lines[3]);
  g_free (test_write_file (f->dir, "samples.csv", text->str, text->len));

  old = tach_results_set_block_size (1 << 20);
  expected = load_digest (f->dir);
  g_test_message ("%s", expected);
  g_assert_nonnull (strstr (expected, "problem "));
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      g_autofree char *got = NULL;

      tach_results_set_block_size (sizes[i]);
      got = load_digest (f->dir);
      g_assert_cmpstr (got, ==, expected);
    }
  tach_results_set_block_size (old);
}

/* tach-cli run --progress's lines (tach-progress.h): the means of the
 * steps since the last line, read back as written; any other line, a
 * rank outside the job or a missing field is refused; a key a later
 * version adds is passed over. */
static void
test_progress_lines (void)
{
  TachProgress progress, back;
  g_autofree char *first = NULL, *second = NULL, *later = NULL;

  tach_progress_init (&progress, 1, 2, 50);
  for (guint i = 0; i < 4; i++)
    {
      TachSample s = { .step = i, .warmup = i < 2, .rank = 1, .wall_s = 0.1 * (i + 1),
                       .step_ms = 10.0 + i, .feed_ms = 1, .compute_ms = 6, .sync_ms = 0,
                       .host_ms = 0.5, .loss = 2.0 - i, .accuracy = NAN,
                       .comm_ms = 2, .pack_ms = 0.25, .imbalance_ms = NAN };

      tach_progress_add (&progress, &s);
    }
  /* Measured steps only, once there are any: steps 2 and 3. */
  first = tach_progress_take_line (&progress);
  g_assert_true (g_str_has_suffix (first, "\n"));
  g_assert_true (tach_progress_parse (first, &back));
  g_assert_cmpuint (back.rank, ==, 1);
  g_assert_cmpuint (back.ranks, ==, 2);
  g_assert_cmpuint (back.step, ==, 4);
  g_assert_cmpuint (back.steps, ==, 50);
  g_assert_cmpuint (back.window, ==, 2);
  g_assert_false (back.warmup);
  g_assert_cmpfloat_with_epsilon (back.step_ms, 12.5, 1e-9);
  g_assert_cmpfloat_with_epsilon (back.rate, 80.0, 1e-4);
  g_assert_cmpfloat_with_epsilon (back.comm_ms, 2.0, 1e-9);
  g_assert_cmpfloat_with_epsilon (back.pack_ms, 0.25, 1e-9);
  g_assert_cmpfloat_with_epsilon (back.loss, -1.0, 1e-9);
  g_assert_cmpfloat_with_epsilon (back.wall_s, 0.4, 1e-9);

  /* Nothing since: the line says how far it got, with no figures. */
  second = tach_progress_take_line (&progress);
  g_assert_true (tach_progress_parse (second, &back));
  g_assert_cmpuint (back.window, ==, 0);
  g_assert_cmpuint (back.step, ==, 4);
  g_assert_true (isnan (back.rate) && isnan (back.step_ms));

  later = g_strconcat (g_strchomp (second), " new_key=7", NULL);
  g_assert_true (tach_progress_parse (later, &back));
  g_assert_false (tach_progress_parse ("  steps/s      936.85 median", &back));
  g_assert_false (tach_progress_parse ("tach-progress rank=2 ranks=2 step=1", &back));
  g_assert_false (tach_progress_parse ("tach-progress rank=0 ranks=2", &back));
  g_assert_false (tach_progress_parse ("tach-progress rank=0 ranks=2 step=x", &back));
  g_assert_false (tach_progress_parse ("tach-progress rank=0 ranks=2 step=3 rate=fast", &back));
  g_assert_false (tach_progress_parse ("tach-progress rank=0 ranks=2 step=3 word", &back));
}

/* Progress lines as mpirun can hand them on, its ranks' output read in
 * pieces and other output between them: a line cut short anywhere is
 * refused, however its pieces end up; a line merged with the start of
 * another is read from the whole one; no piece is ever read as figures
 * it did not say. */
static void
test_progress_torn (void)
{
  TachProgress progress, back;
  g_autofree char *whole = NULL, *other = NULL;
  gsize n;

  tach_progress_init (&progress, 1, 2, 50);
  for (guint i = 0; i < 3; i++)
    {
      TachSample s = { .step = i, .rank = 1, .wall_s = 0.1 * (i + 1), .step_ms = 12.5,
                       .feed_ms = 1, .compute_ms = 6, .host_ms = 0.5, .loss = 0.6931,
                       .accuracy = NAN, .comm_ms = 2, .pack_ms = 0.25, .imbalance_ms = NAN };

      tach_progress_add (&progress, &s);
    }
  whole = tach_progress_take_line (&progress);
  g_strchomp (whole);
  tach_progress_init (&progress, 0, 2, 50);
  other = tach_progress_take_line (&progress);
  g_strchomp (other);
  n = strlen (whole);

  for (gsize cut = strlen (TACH_PROGRESS_PREFIX); cut < n; cut++)
    {
      g_autofree char *head = g_strndup (whole, cut);
      g_autofree char *noise = g_strconcat (head, "tach-cli: warning: a rank's message", NULL);
      g_autofree char *merged = g_strconcat (head, other, NULL);

      /* The piece before the cut alone, or with another rank's stderr
       * after it: never a line. */
      g_assert_false (tach_progress_parse (head, &back));
      g_assert_false (tach_progress_parse (noise, &back));
      /* Another rank's whole line after it: that line, and nothing of the
       * cut one's. */
      g_assert_true (tach_progress_parse (merged, &back));
      g_assert_cmpuint (back.rank, ==, 0);
      g_assert_cmpuint (back.step, ==, 0);
      g_assert_true (isnan (back.step_ms) && isnan (back.loss));
    }
  /* Rank 0's words cut short before a whole line. */
  {
    g_autofree char *after = g_strconcat ("  steps/s      93", whole, NULL);

    g_assert_true (tach_progress_parse (after, &back));
    g_assert_cmpuint (back.rank, ==, 1);
    g_assert_cmpfloat_with_epsilon (back.loss, 0.6931, 1e-9);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/results/progress-lines", test_progress_lines);
  g_test_add_func ("/engine/results/progress-torn", test_progress_torn);
  g_test_add ("/engine/results/roundtrip", Fixture, NULL, fixture_set_up, test_roundtrip, fixture_tear_down);
  g_test_add ("/engine/results/older-columns", Fixture, NULL, fixture_set_up, test_older_columns, fixture_tear_down);
  g_test_add ("/engine/results/malformed", Fixture, NULL, fixture_set_up, test_malformed, fixture_tear_down);
  g_test_add ("/engine/results/blocks", Fixture, NULL, fixture_set_up, test_blocks, fixture_tear_down);
  return g_test_run ();
}
