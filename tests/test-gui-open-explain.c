/* test-gui-open-explain.c: a results folder's explain.csv opened in the
 * window (part of test-gui, issue 42): the Explain view shows the
 * explanation as it drew it when it was measured, and a damaged
 * explain.csv is said by file and line. */
#include <math.h>
#include <string.h>
#include <adwaita.h>
#include <glib/gstdio.h>

#include "tach-window.h"
#include "tach-explain-view.h"
#include "test-gui.h"

/* What the view shows of its explanation: the chart's caption and each
 * bar's label, tooltip, extent and interval, the summary, the sentences. */
typedef struct {
  char    *caption, *summary, *text;
  GStrv    labels, tooltips;
  GArray  *bars, *whiskers;   /* TachExplainBar */
} Shown;

static void
shown_clear (Shown *s)
{
  g_free (s->caption);
  g_free (s->summary);
  g_free (s->text);
  g_strfreev (s->labels);
  g_strfreev (s->tooltips);
  g_array_unref (s->bars);
  g_array_unref (s->whiskers);
}

static void
shown_read (TachExplainView *view, Shown *s)
{
  TachExplainChart *chart = tach_explain_view_get_chart (view);
  guint n = tach_explain_chart_get_n_bars (chart);
  g_autoptr(GStrvBuilder) labels = g_strv_builder_new ();
  g_autoptr(GStrvBuilder) tooltips = g_strv_builder_new ();
  GtkWidget *summary = find_label_prefix (GTK_WIDGET (view), "The shares sum");

  g_assert_nonnull (summary);
  s->caption = tach_explain_chart_dup_caption (chart);
  s->summary = g_strdup (gtk_label_get_text (GTK_LABEL (summary)));
  s->text = g_strdup (tach_explain_view_get_text (view));
  s->bars = g_array_new (FALSE, TRUE, sizeof (TachExplainBar));
  s->whiskers = g_array_new (FALSE, TRUE, sizeof (TachExplainBar));
  for (guint i = 0; i < n; i++)
    {
      TachExplainBar bar = { NAN, NAN }, whisker = { NAN, NAN };
      g_autofree char *label = tach_explain_chart_dup_label (chart, i);
      g_autofree char *tooltip = tach_explain_chart_dup_tooltip (chart, i);

      g_strv_builder_add (labels, label);
      g_strv_builder_add (tooltips, tooltip);
      g_assert_true (tach_explain_chart_get_bar (chart, i, &bar));
      tach_explain_chart_get_whisker (chart, i, &whisker);
      g_array_append_val (s->bars, bar);
      g_array_append_val (s->whiskers, whisker);
    }
  s->labels = g_strv_builder_end (labels);
  s->tooltips = g_strv_builder_end (tooltips);
}

/* Equal to the figures' ten digits that explain.csv keeps. */
static void
assert_close (double a, double b)
{
  if (isnan (a) || isnan (b))
    g_assert_true (isnan (a) && isnan (b));
  else
    g_assert_cmpfloat_with_epsilon (a, b, 1e-8 * MAX (1.0, fabs (a)));
}

static TachWindow *
fresh_window (Fixture *fixture)
{
  gtk_window_destroy (GTK_WINDOW (fixture->window));
  fixture->window = tach_window_new (GTK_APPLICATION (fixture->app));
  gtk_window_present (GTK_WINDOW (fixture->window));
  g_assert_true (iterate_until (window_mapped, fixture->window, 60));
  return fixture->window;
}

/* Opens @dir in @window; the error (the problems) or NULL. */
static GError *
open_folder (TachWindow *window, const char *dir)
{
  g_autoptr(GFile) folder = g_file_new_for_path (dir);
  GError *error = NULL;

  g_object_set_data (G_OBJECT (window), "test-opened", NULL);
  tach_window_open_folders (window, &folder, 1, on_opened, &error);
  g_assert_true (iterate_until (opened, window, 60));
  return error;
}

static gboolean
explain_idle (gpointer data)
{
  return !tach_explain_view_get_running (data);
}

/* Copies @from/@name to @to/@name, with @edit applied to its text. */
static void
copy_with (const char *from, const char *to, const char *name, char *(*edit) (const char *))
{
  g_autofree char *src = g_build_filename (from, name, NULL);
  g_autofree char *dst = g_build_filename (to, name, NULL);
  g_autofree char *text = NULL;
  g_autofree char *edited = NULL;
  gsize len = 0;

  g_assert_true (g_file_get_contents (src, &text, &len, NULL));
  edited = edit != NULL ? edit (text) : g_strdup (text);
  g_assert_true (g_file_set_contents (dst, edited, edit != NULL ? -1 : (gssize) len, NULL));
}

/* explain.csv with its first knob row's share_ms not a number. */
static char *
bad_share (const char *text)
{
  g_auto(GStrv) lines = g_strsplit (text, "\r\n", -1);
  g_auto(GStrv) header = g_strsplit (lines[0], ",", -1);
  guint column = 0;

  while (header[column] != NULL && !g_str_equal (header[column], "share_ms"))
    column++;
  g_assert_nonnull (header[column]);
  for (guint i = 1; lines[i] != NULL; i++)
    if (strstr (lines[i], ",knob,") != NULL)
      {
        g_auto(GStrv) fields = g_strsplit (lines[i], ",", -1);

        g_free (fields[column]);
        fields[column] = g_strdup ("twelve");
        g_free (lines[i]);
        lines[i] = g_strjoinv (",", fields);
        break;
      }
  return g_strjoinv ("\r\n", lines);
}

/* An explanation measured in the window and exported to a folder, opened
 * in a new window: the Explain view draws and says it as the first did
 * (the summary then says where it was read from).  A copy whose knob row
 * is damaged, with a NUL byte after it, opens with both said by line. */
void
test_open_explain (Fixture *fixture, gconstpointer data)
{
  TachExplainView *view = tach_window_get_explain_view (fixture->window);
  g_autofree char *dir = g_build_filename (fixture->tmpdir, "explained", NULL);
  g_autofree char *damaged = g_build_filename (fixture->tmpdir, "damaged", NULL);
  g_autofree char *csv = g_build_filename (dir, "explain.csv", NULL);
  g_autofree char *read_from = NULL;
  g_autoptr(GError) error = NULL;
  Shown measured, loaded;
  TachWindow *window;

  (void) data;
  g_object_set (tach_window_get_config_panel (fixture->window), "steps", 6, NULL);
  g_assert_true (tach_explain_view_set_presets (view, "tf1-feed-dict", "tuned"));
  tach_explain_view_set_rounds (view, 3, 0, 0.05);
  gtk_widget_activate_action (GTK_WIDGET (fixture->window), "win.explain", NULL);
  g_assert_true (iterate_until (explain_idle, view, 300));
  g_assert_nonnull (tach_explain_view_get_explain (view));
  shown_read (view, &measured);
  g_assert_true (tach_explain_view_export_csv (view, dir, &error));
  g_assert_no_error (error);

  window = fresh_window (fixture);
  view = tach_window_get_explain_view (window);
  g_assert_null (tach_explain_view_get_explain (view));
  error = open_folder (window, dir);
  g_assert_no_error (error);
  g_assert_nonnull (tach_explain_view_get_explain (view));
  shown_read (view, &loaded);
  adw_view_stack_set_visible_child_name (ADW_VIEW_STACK (find_widget_of_type (GTK_WIDGET (window),
                                                                               ADW_TYPE_VIEW_STACK)),
                                         "compare");
  render_window (window, "test-gui-open-explain.png");

  g_assert_cmpstr (loaded.caption, ==, measured.caption);
  g_assert_cmpstr (loaded.text, ==, measured.text);
  read_from = g_strdup_printf ("%s\nRead from %s.", measured.summary, csv);
  g_assert_cmpstr (loaded.summary, ==, read_from);
  g_assert_cmpuint (g_strv_length (loaded.labels), ==, g_strv_length (measured.labels));
  for (guint i = 0; measured.labels[i] != NULL; i++)
    {
      TachExplainBar *a = &g_array_index (measured.bars, TachExplainBar, i);
      TachExplainBar *b = &g_array_index (loaded.bars, TachExplainBar, i);
      TachExplainBar *wa = &g_array_index (measured.whiskers, TachExplainBar, i);
      TachExplainBar *wb = &g_array_index (loaded.whiskers, TachExplainBar, i);

      g_assert_cmpstr (loaded.labels[i], ==, measured.labels[i]);
      g_assert_cmpstr (loaded.tooltips[i], ==, measured.tooltips[i]);
      assert_close (b->start_ms, a->start_ms);
      assert_close (b->end_ms, a->end_ms);
      assert_close (wb->start_ms, wa->start_ms);
      assert_close (wb->end_ms, wa->end_ms);
    }
  shown_clear (&loaded);

  /* Damaged: the explanation whose knob row cannot be read is skipped and
   * said so, and so is the NUL byte after it; the runs still open. */
  g_assert_cmpint (g_mkdir (damaged, 0700), ==, 0);
  copy_with (dir, damaged, "runs.csv", NULL);
  copy_with (dir, damaged, "samples.csv", NULL);
  copy_with (dir, damaged, "explain.csv", bad_share);
  {
    g_autofree char *path = g_build_filename (damaged, "explain.csv", NULL);
    FILE *file = fopen (path, "ab");
    guint lines = 0;
    g_autofree char *text = NULL;
    g_autofree char *at_share = NULL, *at_nul = NULL;

    g_assert_nonnull (file);
    g_assert_cmpint (fwrite ("\0\0\0,knob\r\n", 1, 10, file), ==, 10);
    fclose (file);
    g_assert_true (g_file_get_contents (csv, &text, NULL, NULL));
    for (const char *p = text; *p; p++)
      lines += *p == '\n';
    window = fresh_window (fixture);
    view = tach_window_get_explain_view (window);
    error = open_folder (window, damaged);
    g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
    at_share = g_strdup_printf ("%s:2: the explanation ", path);
    at_nul = g_strdup_printf ("%s:%u: a NUL byte", path, lines + 1);
    g_assert_nonnull (strstr (error->message, at_share));
    g_assert_nonnull (strstr (error->message, "its share_ms is not a number: skipped"));
    g_assert_nonnull (strstr (error->message, at_nul));
    g_assert_null (tach_explain_view_get_explain (view));
    g_assert_cmpuint (g_list_model_get_n_items (tach_window_get_runs (window)), >, 0);
  }
  shown_clear (&measured);
}
