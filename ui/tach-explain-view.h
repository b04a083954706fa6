/* tach-explain-view.h: "Explain" in the Compare view: two presets to
 * explain the gap between, the measurement on a worker thread (each run on
 * its engine thread) with progress and stop, the waterfall chart, the
 * sentences that read it, and its PNG, SVG and CSV exports.
 * Main thread only. */
#pragma once

#include <adwaita.h>

#include "tach-explain.h"
#include "tach-explain-chart.h"

G_BEGIN_DECLS

#define TACH_TYPE_EXPLAIN_VIEW (tach_explain_view_get_type ())
G_DECLARE_FINAL_TYPE (TachExplainView, tach_explain_view, TACH, EXPLAIN_VIEW, GtkWidget)

/* The settings an explanation starts from (batch, steps, device...): the
 * window's configuration panel.  Main thread. */
typedef const TachConfig *(*TachExplainViewBaseFunc) (gpointer user_data);

GtkWidget        *tach_explain_view_new (void);
void              tach_explain_view_set_base_func (TachExplainView *self,
                                                   TachExplainViewBaseFunc func,
                                                   gpointer user_data);
/* Fills the two preset choices for the base's workload. */
void              tach_explain_view_refresh_presets (TachExplainView *self);
/* The rounds of the next explanations, as tach-cli explain's --rounds (at
 * least TACH_EXPLAIN_MIN_ROUNDS), --budget (seconds; 0: the rounds given
 * only) and --target (a fraction); tach-cli's defaults unless set. */
void              tach_explain_view_set_rounds (TachExplainView *self, guint min_rounds,
                                                double budget_s, double target);
/* Chooses the presets by name; FALSE if the workload has no such preset. */
gboolean          tach_explain_view_set_presets (TachExplainView *self, const char *from,
                                                 const char *to);
/* Starts explaining the chosen presets on the base's settings. */
gboolean          tach_explain_view_start (TachExplainView *self, GError **error);
/* Starts explaining two configurations (copied), e.g. two runs of the run
 * table, named @from_label and @to_label. */
gboolean          tach_explain_view_start_configs (TachExplainView *self,
                                                   const TachConfig *from, const char *from_label,
                                                   const TachConfig *to, const char *to_label,
                                                   GError **error);
void              tach_explain_view_stop (TachExplainView *self);
gboolean          tach_explain_view_get_running (TachExplainView *self);
/* The last finished explanation, or NULL. */
TachExplain      *tach_explain_view_get_explain (TachExplainView *self);
/* Shows @explain (taken), read from a results folder's explain.csv
 * (@source, said under it), as the view shows one it measured; FALSE
 * (@explain freed) while an explanation is measuring. */
gboolean          tach_explain_view_show_loaded (TachExplainView *self,
                                                 TachExplain     *explain,
                                                 const char      *source);
/* While an explanation runs, the figures of its whole rounds so far (from
 * the second round on), which the chart shows marked provisional; NULL
 * otherwise. */
TachExplain      *tach_explain_view_get_live (TachExplainView *self);
TachExplainChart *tach_explain_view_get_chart (TachExplainView *self);
/* The sentences under the chart. */
const char       *tach_explain_view_get_text (TachExplainView *self);
/* Exports: PNG or SVG by @path's extension; CSV into a folder. */
gboolean          tach_explain_view_export_image (TachExplainView *self, const char *path,
                                                  GError **error);
gboolean          tach_explain_view_export_csv (TachExplainView *self, const char *dir,
                                                GError **error);

G_END_DECLS
