/* test-gui-gpt.c: the gpt workload in the window (part of test-gui): the
 * panel's rows for its knobs, and a generation's prefill, decoding and
 * memory under the run table, in the CLI summary's words. */
#include <math.h>
#include <string.h>
#include <adwaita.h>
#include <glib/gi18n.h>
#include <tach-engine.h>

#include "tach-a11y.h"
#include "tach-compare-view.h"
#include "tach-config-panel.h"
#include "tach-run-object.h"
#include "tach-run-table.h"
#include "test-gui.h"

/* gpt's own knobs, which no other workload uses. */
static const char *gpt_knobs[] = { "attention", "fusion", "heads", "vocab" };
/* Those of generation alone. */
static const char *generate_knobs[] = { "kv-cache", "prompt", "new-tokens" };
/* Other workloads' knobs that gpt leaves unused. */
static const char *other_knobs[] = { "rnn", "layout", "hidden", "filters", "dense" };

static void
assert_row (TachConfigPanel *panel,
            const char      *key,
            gboolean         applies)
{
  GtkWidget *row = tach_config_panel_get_row (panel, key);
  g_autofree char *workload = tach_config_panel_get_knob (panel, "workload");

  if (row == NULL)
    g_error ("%s: no row for %s", workload, key);
  if (gtk_widget_get_sensitive (row) != applies)
    g_error ("%s: the row of %s is %s", workload, key, applies ? "greyed out" : "sensitive");
  /* A row greyed out says why; one in use does not. */
  if (applies)
    g_assert_null (gtk_widget_get_tooltip_text (row));
  else
    g_assert_nonnull (gtk_widget_get_tooltip_text (row));
  g_assert_true (gtk_widget_get_visible (row));
}

/* The panel shows gpt's knobs for gpt and greys out, with the reason, the
 * ones it leaves unused, as it does for the other workloads. */
void
test_gpt_panel (Fixture       *fixture,
                gconstpointer  data)
{
  TachConfigPanel *panel = tach_window_get_config_panel (fixture->window);
  g_autoptr(GError) error = NULL;

  (void) data;
  g_object_set (panel, "workload", "gpt", NULL);
  g_assert_true (tach_config_panel_set_knob (panel, "task", "generate", &error));
  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (gpt_knobs); i++)
    assert_row (panel, gpt_knobs[i], TRUE);
  for (guint i = 0; i < G_N_ELEMENTS (generate_knobs); i++)
    assert_row (panel, generate_knobs[i], TRUE);
  for (guint i = 0; i < G_N_ELEMENTS (other_knobs); i++)
    assert_row (panel, other_knobs[i], FALSE);
  /* The shapes that gpt shares with the lstm-lm are gpt's too. */
  assert_row (panel, "layers", TRUE);
  assert_row (panel, "embed", TRUE);
  assert_row (panel, "context", TRUE);

  /* Training keeps the model's knobs; the bilstm has none of them. */
  g_assert_true (tach_config_panel_set_knob (panel, "task", "train", &error));
  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (gpt_knobs); i++)
    assert_row (panel, gpt_knobs[i], TRUE);
  g_object_set (panel, "workload", "bilstm", NULL);
  for (guint i = 0; i < G_N_ELEMENTS (gpt_knobs); i++)
    assert_row (panel, gpt_knobs[i], FALSE);
  for (guint i = 0; i < G_N_ELEMENTS (generate_knobs); i++)
    assert_row (panel, generate_knobs[i], FALSE);
  assert_row (panel, "rnn", TRUE);
}

/* Picks @task in the panel's task row, as a click on it does. */
static void
choose_task (TachConfigPanel *panel,
             const char      *task)
{
  const char *const *values = tach_knob_lookup ("task")->values;
  AdwComboRow *row = ADW_COMBO_ROW (tach_config_panel_get_row (panel, "task"));

  for (guint i = 0; values[i] != NULL; i++)
    if (g_str_equal (values[i], task))
      adw_combo_row_set_selected (row, i);
  g_assert_cmpstr (tach_knob_value_label ("task", task), ==,
                   gtk_string_object_get_string (adw_combo_row_get_selected_item (row)));
}

/* The batch the panel shows and will run. */
static guint
shown_batch (TachConfigPanel *panel)
{
  GtkSpinButton *spin = g_object_get_data (G_OBJECT (tach_config_panel_get_row (panel, "batch")),
                                            "tach-spin");

  g_assert_cmpuint (gtk_spin_button_get_value_as_int (spin), ==,
                    tach_config_panel_get_config (panel)->batch);
  return tach_config_panel_get_config (panel)->batch;
}

/* Types @batch into the batch row's spin button, then leaves it (the
 * spin button takes the text as focus leaves it). */
static void
type_batch (TachConfigPanel *panel,
            guint            batch)
{
  GtkSpinButton *spin = g_object_get_data (G_OBJECT (tach_config_panel_get_row (panel, "batch")),
                                            "tach-spin");
  g_autofree char *text = g_strdup_printf ("%u", batch);

  gtk_editable_set_text (GTK_EDITABLE (spin), text);
  gtk_spin_button_update (spin);
}

/* The task's own batch, from a fresh configuration of @workload. */
static guint
default_batch (TachWorkload workload,
               const char  *task)
{
  TachConfig config;
  guint batch;

  tach_config_init (&config, workload);
  g_assert_true (tach_config_set (&config, "task", task, NULL));
  batch = config.batch;
  tach_config_clear (&config);
  return batch;
}

/* Switching the task keeps the batch the user set ("task switch resets
 * batch to 1": gpt at batch 8, training to generation, showed 1, and back
 * 64); one left alone follows each task's default, as the engine gives
 * it; choosing a workload starts from its defaults again. */
void
test_gpt_task_batch (Fixture       *fixture,
                     gconstpointer  data)
{
  TachConfigPanel *panel = tach_window_get_config_panel (fixture->window);
  guint train = default_batch (TACH_WORKLOAD_GPT, "train");
  guint generate = default_batch (TACH_WORKLOAD_GPT, "generate");

  (void) data;
  g_assert_cmpuint (train, !=, generate);
  g_object_set (panel, "workload", "gpt", NULL);
  g_assert_cmpuint (shown_batch (panel), ==, train);
  choose_task (panel, "generate");
  g_assert_cmpuint (shown_batch (panel), ==, generate);
  choose_task (panel, "train");
  g_assert_cmpuint (shown_batch (panel), ==, train);

  type_batch (panel, 8);
  g_assert_cmpuint (shown_batch (panel), ==, 8);
  choose_task (panel, "generate");
  g_assert_cmpuint (shown_batch (panel), ==, 8);
  type_batch (panel, 3);
  choose_task (panel, "train");
  g_assert_cmpuint (shown_batch (panel), ==, 3);
  /* A generation set up as the tests' small one: its two streams. */
  gpt_small_generation (panel);
  g_assert_cmpuint (shown_batch (panel), ==, 2);

  g_object_set (panel, "workload", "lstm-lm", NULL);
  g_assert_cmpuint (shown_batch (panel), ==, default_batch (TACH_WORKLOAD_LSTM_LM, "train"));
  choose_task (panel, "generate");
  g_assert_cmpuint (shown_batch (panel), ==, default_batch (TACH_WORKLOAD_LSTM_LM, "generate"));
}

/* The mapped label in @window that holds every one of @parts (the first
 * says which label), or NULL. */
static GtkLabel *
find_label_holding_all (TachWindow        *window,
                        const char *const *parts)
{
  GtkWidget *label = find_label_holding (GTK_WIDGET (window), parts[0]);

  for (guint i = 1; label != NULL && parts[i] != NULL; i++)
    if (strstr (gtk_label_get_text (GTK_LABEL (label)), parts[i]) == NULL)
      return NULL;
  return label != NULL ? GTK_LABEL (label) : NULL;
}

/* A gpt generation small enough for a test: 2 blocks 128 wide, two
 * streams of 16-token prompts and 8 new tokens each. */
void
gpt_small_generation (TachConfigPanel *panel)
{
  static const char *knobs[][2] = {
    { "task", "generate" }, { "layers", "2" }, { "embed", "128" }, { "heads", "4" },
    { "context", "128" }, { "prompt", "16" }, { "new-tokens", "8" }, { "warmup", "2" },
  };

  g_object_set (panel, "workload", "gpt", "batch", 2, "steps", 40, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (knobs); i++)
    {
      g_autoptr(GError) error = NULL;

      if (!tach_config_panel_set_knob (panel, knobs[i][0], knobs[i][1], &error))
        g_error ("%s=%s: %s", knobs[i][0], knobs[i][1], error->message);
    }
}

/* A small gpt generation in the window: under the run table, its prefill
 * and decoding apart and its memory, each with the run's own figures in
 * the words tach-cli prints; a training run's memory too, without a
 * prefill.  With TACH_SCREENSHOT_DIR set, the window is kept there. */
void
test_gpt_generate (Fixture       *fixture,
                   gconstpointer  data)
{
  TachConfigPanel *panel = tach_window_get_config_panel (fixture->window);
  TachRunTable *table = tach_window_get_run_table (fixture->window);
  const char *dir = g_getenv ("TACH_SCREENSHOT_DIR");
  g_autoptr(GError) error = NULL;
  g_autoptr(TachRunObject) run = NULL;
  g_autofree char *prefill = NULL, *decode = NULL, *params = NULL, *kv = NULL;
  g_autofree char *memory = NULL, *cache = NULL, *peak = NULL;
  GtkLabel *details;
  TachSummary s;

  (void) data;
  gpt_small_generation (panel);
  run_and_wait (fixture->window, 1);
  g_assert_true (iterate_until (window_idle, fixture->window, 120));

  run = g_list_model_get_item (tach_window_get_runs (fixture->window), 0);
  g_assert_cmpint (tach_run_object_get_state (run), ==, TACH_RUN_STATE_FINISHED);
  tach_run_get_summary (tach_run_object_get_run (run), &s);
  g_assert_true (isfinite (s.prefill_ms));
  g_assert_true (isfinite (s.decode_tokens_per_s));
  g_assert_true (isfinite (s.param_bytes) && isfinite (s.kv_cache_bytes));
  g_assert_cmpuint (s.peak_memory_bytes, >, 0);

  /* The run's own figures, as tach-cli prints them. */
  prefill = g_strdup_printf ("prefill      %.3f ms to the first token", s.prefill_ms);
  decode = g_strdup_printf ("decode       %.1f tokens/s", s.decode_tokens_per_s);
  params = g_format_size_full ((guint64) s.param_bytes, G_FORMAT_SIZE_IEC_UNITS);
  kv = g_format_size_full ((guint64) s.kv_cache_bytes, G_FORMAT_SIZE_IEC_UNITS);
  memory = g_strdup_printf ("parameters %s, optimiser", params);
  cache = g_strdup_printf ("KV cache %s", kv);
  {
    g_autofree char *size = g_format_size_full (s.peak_memory_bytes, G_FORMAT_SIZE_IEC_UNITS);

    peak = g_strdup_printf ("memory       %s peak", size);
  }

  /* The newest run's details show with none selected, and the selected
   * run's once one is, under its title. */
  {
    const char *parts[] = { prefill, decode, peak, memory, cache, NULL };

    tach_run_table_select (table, 0);
    iterate_for (0.2);
    details = find_label_holding_all (fixture->window, parts);
    if (details == NULL)
      g_error ("no label shows '%s', '%s', '%s', '%s' and '%s'", prefill, decode, peak, memory,
               cache);
    g_assert_true (g_str_has_prefix (gtk_label_get_text (details),
                                     tach_run_object_get_title (run)));
  }
  if (dir != NULL)
    {
      g_autofree char *path = g_build_filename (dir, "gpt-generate.png", NULL);

      render_window (fixture->window, path);
    }

  /* A training run: its memory, and no prefill or decoding. */
  g_assert_true (tach_config_panel_set_knob (panel, "task", "train", &error));
  g_assert_no_error (error);
  g_object_set (panel, "batch", 2, "steps", 12, NULL);
  run_and_wait (fixture->window, 2);
  g_assert_true (iterate_until (window_idle, fixture->window, 120));
  tach_run_table_select (table, 1);
  iterate_for (0.2);
  {
    const char *parts[] = { "optimiser", "KV cache", NULL };

    details = find_label_holding_all (fixture->window, parts);
    g_assert_nonnull (details);
    g_assert_null (strstr (gtk_label_get_text (details), "prefill"));
  }
  if (dir != NULL)
    {
      g_autofree char *path = g_build_filename (dir, "gpt-train.png", NULL);

      render_window (fixture->window, path);
    }
}

static gboolean
gpt_sweep_done (gpointer data)
{
  TachWindow *window = data;
  g_autoptr(GPtrArray) presets = tach_presets_for_ranks (TACH_WORKLOAD_GPT, 1);

  return g_list_model_get_n_items (tach_window_get_sweep (window)) == presets->len
         && !tach_window_get_running (window);
}

/* Compare presets of the small generation, kept as a screenshot only when
 * TACH_SCREENSHOT_DIR is set (every gpt preset twice is too long for the
 * suite): the Compare view's figures list each run's prefill, decoding and
 * memory. */
void
test_gpt_compare (Fixture       *fixture,
                  gconstpointer  data)
{
  const char *dir = g_getenv ("TACH_SCREENSHOT_DIR");
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;
  GtkWidget *view;
  const char *figures;

  (void) data;
  if (dir == NULL)
    {
      g_test_skip ("TACH_SCREENSHOT_DIR is not set");
      return;
    }
  gpt_small_generation (tach_window_get_config_panel (fixture->window));
  g_object_set (tach_window_get_config_panel (fixture->window), "steps", 24, NULL);
  g_assert_true (tach_window_compare_presets (fixture->window, &error));
  g_assert_no_error (error);
  g_assert_true (iterate_until (gpt_sweep_done, fixture->window, 900));
  iterate_for (0.5);
  view = find_widget_with_css_name (GTK_WIDGET (fixture->window), "tach-compare-view");
  figures = tach_a11y_get_description (view);
  g_assert_nonnull (figures);
  g_assert_nonnull (strstr (figures, "prefill      "));
  g_assert_nonnull (strstr (figures, "KV cache"));
  path = g_build_filename (dir, "gpt-compare.png", NULL);
  render_window (fixture->window, path);
}

/* The Compare view's rounds text wraps at the view's width: gpt's eleven
 * presets on a busy machine gave six caveat lines longer than the view at
 * 1280 px, cut off at its right edge.  Narrower, the view is taller. */
void
test_compare_rounds_wrap (void)
{
  GtkWidget *view = g_object_ref_sink (tach_compare_view_new ());
  int narrow = 0, wide = 0, unwrapped = 0;

  tach_compare_view_set_rounds_text (TACH_COMPARE_VIEW (view),
                                     "2 rounds.\nhf-dynamic and hf-static ran while other "
                                     "processes took 73% of the CPU: this speed-up is for a "
                                     "busy machine; rerun idle to compare");
  gtk_widget_measure (view, GTK_ORIENTATION_VERTICAL, 300, &narrow, NULL, NULL, NULL);
  gtk_widget_measure (view, GTK_ORIENTATION_VERTICAL, 4000, &wide, NULL, NULL, NULL);
  tach_compare_view_set_rounds_text (TACH_COMPARE_VIEW (view), "2 rounds.\none line");
  gtk_widget_measure (view, GTK_ORIENTATION_VERTICAL, 300, &unwrapped, NULL, NULL, NULL);
  g_assert_cmpint (gtk_widget_get_request_mode (view), ==, GTK_SIZE_REQUEST_HEIGHT_FOR_WIDTH);
  g_assert_cmpint (narrow, >, wide);
  g_assert_cmpint (wide, ==, unwrapped);
  g_object_unref (view);
}
