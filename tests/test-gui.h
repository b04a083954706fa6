/* test-gui.h: what the files of test-gui share: the fixture (an
 * application with its window, set up for a short CPU run, and a temporary
 * folder), driving the main loop, and the checks of the charts. */
#pragma once

#include "tach-application.h"
#include "tach-window.h"

G_BEGIN_DECLS

typedef struct {
  TachApplication *app;
  TachWindow      *window;
  char            *tmpdir;
} Fixture;

gboolean iterate_until       (gboolean    (*done) (gpointer),
                              gpointer      data,
                              double        seconds);
/* Renders the window's content, at its next frame, to the PNG @name (in
 * the build folder unless absolute). */
void     render_window       (TachWindow   *window,
                              const char   *name);
/* How many opaque pixels of @png at or below row @y0 have @rgba. */
guint    count_color         (GdkTexture   *png,
                              int           y0,
                              const GdkRGBA *rgba);
void     check_export_legend (TachWindow   *window,
                              const char   *path);
void     test_charts_aligned (Fixture      *fixture,
                              gconstpointer data);
void     test_explain        (Fixture      *fixture,
                              gconstpointer data);
void     test_scaling_busy_apart (void);
void     test_scaling_busy   (Fixture      *fixture,
                              gconstpointer data);
void     test_scaling        (Fixture      *fixture,
                              gconstpointer data);
/* The Scaling view's knobs follow the task (test-gui-scaling.c). */
void     test_scaling_task_knobs (Fixture  *fixture,
                                  gconstpointer data);
/* Export CSV's callback: @user_data is a GError ** that it fills; then
 * exported (@window) is TRUE. */
void     on_exported         (GObject      *source,
                              GAsyncResult *result,
                              gpointer      user_data);
gboolean exported            (gpointer      window);
guint    count_lines         (const char   *path);
/* Sets every remembered setting back to its default. */
void     test_settings_reset (void);
void     test_settings_restore (Fixture    *fixture,
                                gconstpointer data);
void     test_notify_finished (Fixture     *fixture,
                               gconstpointer data);
void     test_open_command_line (Fixture   *fixture,
                                 gconstpointer data);
void     test_open_results   (Fixture      *fixture,
                              gconstpointer data);
/* The first widget at or below @widget with the style class @css_class. */
GtkWidget *find_widget_with_class (GtkWidget *widget,
                                   const char *css_class);
/* The first widget at or below @widget whose CSS name is @name. */
GtkWidget *find_widget_with_css_name (GtkWidget *widget,
                                      const char *name);
/* What the GtkScrolledWindow @scroller scrolls (in its viewport or not). */
GtkWidget *scrolled_child        (GtkWidget *scroller);
/* The label at or below @widget whose text is @text, or NULL. */
GtkWidget *find_label            (GtkWidget *widget,
                                  const char *text);
/* The label at or below @widget whose text starts with @prefix, or NULL. */
GtkWidget *find_label_prefix     (GtkWidget *widget,
                                  const char *prefix);
/* The mapped label at or below @widget whose text holds @text, or NULL. */
GtkWidget *find_label_holding    (GtkWidget *widget,
                                  const char *text);
/* An explanation's explain.csv opened in a new window
 * (test-gui-open-explain.c). */
void     test_open_explain   (Fixture      *fixture,
                              gconstpointer data);
/* Fifty loaded runs at 1280x800: the Live view's legend stays bounded. */
void     test_open_many_runs (Fixture      *fixture,
                              gconstpointer data);
/* The window's dialog, transient for @window, or NULL. */
AdwMessageDialog *find_message_dialog (TachWindow *window);
/* The run table's "machine busy" caption, from runs of known busy shares
 * (test-gui-busy.c). */
void     test_run_busy       (Fixture      *fixture,
                              gconstpointer data);
/* A run whose backend fails half-way (test-gui-fault.c). */
void     test_run_fault      (Fixture      *fixture,
                              gconstpointer data);
/* Every reachable control and chart has a name, each chart its figures
 * (test-gui-a11y.c; skipped without GTK_A11Y=test). */
void     test_a11y           (Fixture      *fixture,
                              gconstpointer data);
/* The window at 1280, 800 and 360 px (test-gui-layout.c), after a run of
 * the panel's defaults, or of a small gpt generation where @data is
 * "gpt". */
void     test_layout         (Fixture      *fixture,
                              gconstpointer data);
/* Iterates the main loop for @seconds (test-gui-util.c). */
void     iterate_for         (double        seconds);
/* The first widget at or below @widget of @type, or NULL (test-gui-util.c). */
GtkWidget *find_widget_of_type (GtkWidget  *widget,
                                GType       type);
/* tach_window_open_folders' callback: @user_data is a GError ** that it
 * fills; then opened (@window) is TRUE, and the window's "test-opened" is
 * the runs opened + 1 (test-gui-util.c). */
void     on_opened           (GObject      *source,
                              GAsyncResult *result,
                              gpointer      user_data);
gboolean opened              (gpointer      window);
/* The window holds its "test-want-runs" runs and none is going
 * (test-gui-util.c). */
gboolean window_has_runs     (gpointer      data);
/* Runs the panel's settings through win.run until the window holds @want
 * runs (test-gui-util.c). */
void     run_and_wait        (TachWindow   *window,
                              guint         want);
/* A window and the size asked of it. */
typedef struct {
  TachWindow *window;
  int         width, height;
} WindowSize;
/* The window (a WindowSize) has the size asked, less its client-side
 * decorations' edge, no larger (test-gui-util.c). */
gboolean window_has_size     (gpointer      data);
/* The window is on screen (test-gui-util.c). */
gboolean window_mapped       (gpointer      data);
/* The window has runs and none going (test-gui-util.c). */
gboolean window_idle         (gpointer      data);
/* The window's sweep of presets has ended (test-gui.c). */
gboolean sweep_done          (gpointer      data);
/* No label of the configuration panel is cut short (test-gui.c). */
void     assert_panel_not_ellipsised (TachWindow *window);
/* The window and the engine's messages in Chinese (test-gui-shots.c). */
void     test_i18n_zh_cn     (Fixture      *fixture,
                              gconstpointer data);
/* Runs of several ranks through mpirun (test-gui-ranks.c): adds its tests. */
void     test_gui_ranks_add  (void (*setup) (Fixture *, gconstpointer),
                              void (*teardown) (Fixture *, gconstpointer));
/* What a window of 1280 x 800 keeps inside it (test-gui-fit.c): adds its
 * tests. */
void     test_gui_fit_add    (void (*setup) (Fixture *, gconstpointer),
                              void (*teardown) (Fixture *, gconstpointer));
/* gpt's knobs in the panel, and a generation's prefill, decoding and
 * memory under the run table (test-gui-gpt.c). */
void     test_gpt_panel      (Fixture      *fixture,
                              gconstpointer data);
void     test_gpt_generate   (Fixture      *fixture,
                              gconstpointer data);
void     test_gpt_compare    (Fixture      *fixture,
                              gconstpointer data);
/* Switching the task keeps the user's batch (test-gui-gpt.c). */
void     test_gpt_task_batch (Fixture      *fixture,
                              gconstpointer data);
/* The Compare view's rounds text wraps at its width (test-gui-gpt.c). */
void     test_compare_rounds_wrap (void);
/* Sets @panel to a gpt generation small enough for a test (test-gui-gpt.c). */
void     gpt_small_generation (TachConfigPanel *panel);
/* The README's screenshots, rendered as artifacts (test-gui-shots.c). */
void     test_screenshots    (Fixture      *fixture,
                              gconstpointer data);

G_END_DECLS
