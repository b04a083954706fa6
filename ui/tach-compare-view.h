/* tach-compare-view.h: a sweep of runs as bars of time per step, split into
 * phases, so that the cause of a speed gap reads at a glance. */
#pragma once

#include <gtk/gtk.h>

#include "tach-run-object.h"
#include "tach-verdict.h"

G_BEGIN_DECLS

#define TACH_TYPE_COMPARE_VIEW (tach_compare_view_get_type ())
G_DECLARE_FINAL_TYPE (TachCompareView, tach_compare_view, TACH, COMPARE_VIEW, GtkWidget)

GtkWidget  *tach_compare_view_new       (void);
GListModel *tach_compare_view_get_model (TachCompareView *self);
void        tach_compare_view_set_model (TachCompareView *self,
                                         GListModel      *model);
/* The speed-up of @row (an item of the model) against the first row,
 * paired by round (NULL: from the two runs' intervals again). */
void        tach_compare_view_set_paired (TachCompareView    *self,
                                          TachRunObject      *row,
                                          const TachInterval *ratio);
/* The line(s) above the bars: the rounds so far, then what stayed
 * unresolved (NULL: none). */
void        tach_compare_view_set_rounds_text (TachCompareView *self,
                                               const char      *text);
const char *tach_compare_view_get_rounds_text (TachCompareView *self);
/* Forgets the paired speed-ups and the rounds line (another comparison). */
void        tach_compare_view_clear_rounds (TachCompareView *self);
void        tach_compare_view_draw      (TachCompareView *self,
                                         cairo_t         *cr,
                                         int              width,
                                         int              height);
/* Text as the bars of the comparison show it (tabular figures), for the
 * charts that stand beside them. */
PangoLayout *tach_compare_layout_new (GtkWidget     *widget,
                                      cairo_t       *cr,
                                      double         scale,
                                      gboolean       bold);
void         tach_compare_show_text  (cairo_t       *cr,
                                      PangoLayout   *layout,
                                      const char    *text,
                                      double         x,
                                      double         y,
                                      const GdkRGBA *color,
                                      double         alpha,
                                      int           *width);

G_END_DECLS
