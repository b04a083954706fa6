/* tach-explain-chart.h: a waterfall from A's step time to B's, one
 * floating bar per knob, each bar stacked by phase.  Main thread only. */
#pragma once

#include <gtk/gtk.h>

#include "tach-explain.h"

G_BEGIN_DECLS

/* One bar as drawn: from @start_ms to @end_ms on the time axis (for A
 * and B from 0 to their step time; for a knob from the running total
 * before it to the total after). */
typedef struct {
  double start_ms, end_ms;
} TachExplainBar;

#define TACH_TYPE_EXPLAIN_CHART (tach_explain_chart_get_type ())
G_DECLARE_FINAL_TYPE (TachExplainChart, tach_explain_chart, TACH, EXPLAIN_CHART, GtkWidget)

GtkWidget *tach_explain_chart_new (void);
/* Shows a finished explanation (borrowed: keep it alive while shown), or
 * nothing with NULL. */
void       tach_explain_chart_set_explain (TachExplainChart *self, TachExplain *explain);
/* Marks the explanation shown as provisional (the rounds so far, while
 * they run: the caption says so and how many) or final; set_explain makes
 * it final. */
void       tach_explain_chart_set_provisional (TachExplainChart *self, gboolean provisional);
gboolean   tach_explain_chart_get_provisional (TachExplainChart *self);
/* The caption above the bars: "Where the gap goes, from A to B (time per
 * step)", with " · provisional: 2 rounds so far" while provisional. */
char      *tach_explain_chart_dup_caption (TachExplainChart *self);
/* Bars: A first, one per knob, then B; 0 without an explanation. */
guint      tach_explain_chart_get_n_bars (TachExplainChart *self);
gboolean   tach_explain_chart_get_bar (TachExplainChart *self, guint i, TachExplainBar *bar);
/* Where bar @i's end lies by its 95% interval (on the bars' axis); FALSE
 * where it has none (fewer than 2 rounds). */
gboolean   tach_explain_chart_get_whisker (TachExplainChart *self, guint i,
                                           TachExplainBar *whisker);
/* The label of bar @i: "Layout: misread -> batch-major  -44.1 ms (80%)". */
char      *tach_explain_chart_dup_label (TachExplainChart *self, guint i);
/* The hover text of bar @i: the spread over rounds and the phases. */
char      *tach_explain_chart_dup_tooltip (TachExplainChart *self, guint i);
void       tach_explain_chart_draw (TachExplainChart *self, cairo_t *cr, int width, int height);
/* The height a drawing of the bars takes. */
int        tach_explain_chart_get_height (TachExplainChart *self);
/* Shows the bar's read-out (its tooltip's text) for a pointer at widget
 * coordinates (@x, @y), as the pointer does; where the last drawing put
 * it (FALSE: none drawn). */
void       tach_explain_chart_set_hover (TachExplainChart *self, double x, double y);
gboolean   tach_explain_chart_get_hover_box (TachExplainChart *self, graphene_rect_t *box);
/* Writes the chart as PNG or SVG (by @path's extension). */
gboolean   tach_explain_chart_export (TachExplainChart *self, const char *path, int width,
                                      GError **error);

G_END_DECLS
