/* test-explain-real.c: explanations of real runs (configurations, the
 * knobs' sentences, a short explanation and its cancellation), part of
 * test-explain; the attribution's arithmetic is tested in test-explain.c. */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "tach-explain.h"
#include "test-run-util.h"
#include "test-explain.h"

/* Configurations: the knobs that differ, what must agree. */
static void
test_configs (void)
{
  TachConfig a, b;
  g_autoptr(GError) error = NULL;
  g_autoptr(TachExplain) explain = NULL;
  TachConfig mix;

  test_config_pair (TACH_WORKLOAD_BILSTM, &a, "device=cpu preset=tf1-feed-dict",
                    &b, "device=cpu preset=tuned");
  explain = tach_explain_new (&a, &b, 3, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (tach_explain_get_n_knobs (explain), ==, 3);
  g_assert_cmpstr (tach_explain_get_knob (explain, 0)->key, ==, "layout");
  g_assert_cmpstr (tach_explain_get_knob (explain, 0)->from, ==, "misread");
  g_assert_cmpstr (tach_explain_get_knob (explain, 0)->to, ==, "batch-major");
  g_assert_true (tach_explain_get_knob (explain, 0)->changes_results);
  g_assert_cmpstr (tach_explain_get_knob (explain, 1)->key, ==, "feed");
  g_assert_cmpstr (tach_explain_get_knob (explain, 2)->key, ==, "sync");
  g_assert_cmpstr (tach_explain_get_label (explain, FALSE), ==, "tf1-feed-dict");
  g_assert_cmpstr (tach_explain_get_label (explain, TRUE), ==, "tuned");

  tach_explain_config_for_mask (explain, 1 | 4, &mix);
  g_assert_cmpint (mix.layout, ==, TACH_LAYOUT_BATCH_MAJOR);
  g_assert_cmpint (mix.feed, ==, TACH_FEED_HOST_F64);
  g_assert_cmpuint (mix.sync_every, ==, 0);
  g_assert_null (mix.preset);
  tach_config_clear (&mix);
  {
    g_autofree char *name = tach_explain_describe_mask (explain, 1 | 4);

    g_assert_cmpstr (name, ==, "layout=batch-major sync=end");
  }
  g_clear_pointer (&explain, tach_explain_free);

  /* Another batch is not a knob to explain. */
  test_apply (&b, "batch=64");
  explain = tach_explain_new (&a, &b, 3, &error);
  g_assert_null (explain);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  g_assert_nonnull (strstr (error->message, "batch"));
  g_clear_error (&error);

  /* The same configuration twice has nothing to explain. */
  explain = tach_explain_new (&a, &a, 3, &error);
  g_assert_null (explain);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  g_clear_error (&error);

  tach_config_clear (&a);
  tach_config_clear (&b);
}

static void
progress_count (TachExplain *explain, guint done, guint total, gpointer user_data)
{
  guint *last = user_data;

  (void) explain;
  g_assert_cmpuint (done, >, *last);
  g_assert_cmpuint (done, <=, total);
  *last = done;
}

/* The sentences come from the knob rows and read the configurations'
 * shape: under --seq-len 20 the layout's names 20 recurrent steps, not
 * the default 10.  No run is needed to word them. */
static void
test_sentences (void)
{
  TachConfig a, b;
  g_autoptr(GError) error = NULL;
  g_autoptr(TachExplain) explain = NULL;
  g_autofree char *layout = NULL, *rnn = NULL;

  test_tiny_config (&a, 6);
  test_tiny_config (&b, 6);
  test_apply (&a, "seq-len=20 batch=32 layout=misread rnn=unrolled");
  test_apply (&b, "seq-len=20 batch=32 layout=batch-major rnn=fused");
  explain = tach_explain_new (&a, &b, 3, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (tach_explain_get_n_knobs (explain), ==, 2);
  for (guint i = 0; i < 2; i++)
    {
      const TachExplainKnob *knob = tach_explain_get_knob (explain, i);

      if (g_str_equal (knob->key, "layout"))
        layout = tach_explain_dup_sentence (explain, i);
      else if (g_str_equal (knob->key, "rnn"))
        rnn = tach_explain_dup_sentence (explain, i);
    }
  g_assert_nonnull (layout);
  g_assert_nonnull (strstr (layout, "turns 20 recurrent steps of batch 32 into 32 steps of "
                                    "batch 20"));
  g_assert_nonnull (strstr (layout, "batch-major data runs 20 recurrent steps of batch 32"));
  g_assert_nonnull (rnn);
  g_assert_nonnull (strstr (rnn, "one LSTM cell runs per time step"));
  g_assert_nonnull (strstr (rnn, "one fused library call runs the whole sequence"));

  /* Every mode's values are worded by its row: no "key=value" fallback. */
  {
    guint n = 0;
    const TachKnobInfo *knobs = tach_knobs (&n);

    for (guint k = 0; k < n; k++)
      for (guint v = 0; knobs[k].is_mode && knobs[k].values != NULL && knobs[k].values[v] != NULL; v++)
        {
          g_autofree char *clause = tach_knob_dup_clause (knobs[k].name, &a, knobs[k].values[v]);
          g_autofree char *raw = g_strdup_printf ("%s=%s", knobs[k].name, knobs[k].values[v]);

          g_assert_cmpstr (clause, !=, raw);
        }
  }
  tach_config_clear (&a);
  tach_config_clear (&b);
}

/* Real runs: a tiny bilstm, two knobs; the runs and explain.csv. */
static void
test_real (void)
{
  TachConfig a, b;
  g_autoptr(GError) error = NULL;
  g_autoptr(TachExplain) explain = NULL;
  g_autofree char *dir = test_make_tmp_dir ("tach-explain-XXXXXX");
  g_autofree char *path = g_build_filename (dir, "explain.csv", NULL);
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;
  guint last = 0;

  test_tiny_config (&a, 6);
  test_tiny_config (&b, 6);
  test_apply (&a, "layout=misread feed=host-f64");
  test_apply (&b, "layout=batch-major feed=resident");
  explain = tach_explain_new (&a, &b, 3, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (tach_explain_get_n_knobs (explain), ==, 2);
  g_assert_true (tach_explain_run (explain, NULL, progress_count, &last, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (last, ==, 12);
  g_assert_cmpuint (tach_explain_get_runs (explain)->len, ==, 12);
  g_assert_cmpfloat (tach_explain_get_cost (explain, FALSE)->step_ms, >, 0);
  assert_additive (explain);

  for (guint i = 0; i < 2; i++)
    {
      g_autofree char *sentence = tach_explain_dup_sentence (explain, i);

      g_assert_nonnull (strstr (sentence, tach_explain_get_knob (explain, i)->from));
    }

  g_assert_true (tach_explain_csv_append (explain, dir, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  lines = g_strsplit (text, "\r\n", -1);
  g_assert_cmpuint (g_strv_length (lines), ==, 1 + 4 + 1);  /* header, A, 2 knobs, B, "" */
  g_assert_true (g_str_has_prefix (lines[0], "explain_id,"));
  g_assert_nonnull (strstr (lines[2], ",knob,layout,misread,batch-major,1,"));
  g_assert_nonnull (strstr (lines[4], ",to,"));
  {
    g_autofree char *runs_path = g_build_filename (dir, "runs.csv", NULL);
    g_autofree char *runs = NULL;
    g_auto(GStrv) run_lines = NULL;

    g_assert_true (g_file_get_contents (runs_path, &runs, NULL, NULL));
    run_lines = g_strsplit (runs, "\r\n", -1);
    g_assert_cmpuint (g_strv_length (run_lines), ==, 1 + 12 + 1);
  }

  /* A second explanation appends under the same header. */
  g_assert_true (tach_explain_csv_append (explain, dir, &error));
  g_assert_no_error (error);
  g_clear_pointer (&text, g_free);
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  g_clear_pointer (&lines, g_strfreev);
  lines = g_strsplit (text, "\r\n", -1);
  g_assert_cmpuint (g_strv_length (lines), ==, 1 + 8 + 1);

  test_remove_tree (dir);
  tach_config_clear (&a);
  tach_config_clear (&b);
}

/* Stopping from another thread ends the run in progress. */
static gpointer
cancel_soon (gpointer data)
{
  g_usleep (200 * 1000);
  g_cancellable_cancel (data);
  return NULL;
}

static void
test_real_cancel (void)
{
  TachConfig a, b;
  g_autoptr(GError) error = NULL;
  g_autoptr(TachExplain) explain = NULL;
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  GThread *thread;

  test_tiny_config (&a, 100000);
  test_tiny_config (&b, 100000);
  test_apply (&b, "feed=resident");
  explain = tach_explain_new (&a, &b, 3, &error);
  g_assert_no_error (error);
  thread = g_thread_new ("cancel", cancel_soon, cancellable);
  g_assert_false (tach_explain_run (explain, cancellable, NULL, NULL, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_CANCELLED);
  g_thread_join (thread);
  tach_config_clear (&a);
  tach_config_clear (&b);
}

void
test_explain_real_add (void)
{
  g_test_add_func ("/engine/explain/configs", test_configs);
  g_test_add_func ("/engine/explain/sentences", test_sentences);
  g_test_add_func ("/engine/explain/real", test_real);
  g_test_add_func ("/engine/explain/real-cancel", test_real_cancel);
}
