/* tach-chart-draw.h: drawing a chart on any cairo surface.
 *
 * A TachChartView is everything one draw reads: the series, the options
 * and the theme.  It holds no GTK widget, so exports and tests draw the
 * same picture as the screen.
 */
#pragma once

#include <gdk/gdk.h>
#include <graphene.h>
#include <pango/pangocairo.h>

#include "tach-chart-series.h"

G_BEGIN_DECLS

#define TACH_CHART_N_COLORS 8

typedef struct {
  GPtrArray                  *series;     /* TachChartSeries*, borrowed */
  const char                 *title;
  gboolean                    by_time;
  gboolean                    log_scale;
  double                      smoothing;
  gboolean                    hovering;
  double                      hover_x;    /* in the drawing's pixels */
  GdkRGBA                     fg;         /* the theme's text colour */
  gboolean                    dark;
  const PangoFontDescription *font;
  int                         gutter;     /* the least width of the y labels'
                                           * column, so stacked charts line
                                           * up; 0: as wide as the labels */
  /* Where the read-out may go: the part of the drawing the window shows
   * (tach_chart_get_visible_area); 0 wide: the whole drawing. */
  graphene_rect_t             hover_limits;
  graphene_rect_t            *hover_box;  /* set to where it went, or NULL */
} TachChartView;

/* Draws @layout's text in a read-out box beside a pointer at (@x, @y):
 * right of it, or left where that would pass @limits' right edge, then
 * moved inside @limits (the part of the drawing the window shows) where
 * it would still pass an edge, so that no read-out is cut at the window's
 * edges.  @box, if not NULL, is set to where it went. */
void tach_chart_draw_readout (cairo_t               *cr,
                              PangoLayout           *layout,
                              const GdkRGBA         *fg,
                              gboolean               dark,
                              double                 x,
                              double                 y,
                              const graphene_rect_t *limits,
                              graphene_rect_t       *box);

void tach_chart_view_draw     (const TachChartView *view,
                               cairo_t             *cr,
                               int                  width,
                               int                  height);
/* The width of the column that the y labels of @view need at this size
 * (ignoring view->gutter): their tick count, and so their text, follows
 * the height.  Charts stacked one above the other share the widest. */
int  tach_chart_view_measure_gutter    (const TachChartView *view,
                                        cairo_t             *cr,
                                        int                  width,
                                        int                  height);
/* The rectangle inside the axes that the data is drawn in. */
void tach_chart_view_get_plot_area     (const TachChartView *view,
                                        cairo_t             *cr,
                                        int                  width,
                                        int                  height,
                                        graphene_rect_t     *area);
/* The legend of the visible series (a swatch of the run's colour and its
 * label each), in rows that wrap at @width, as exports put it under the
 * charts.  The height is what drawing it at that width takes. */
int  tach_chart_view_get_legend_height (const TachChartView *view,
                                        cairo_t             *cr,
                                        int                  width);
void tach_chart_view_draw_legend       (const TachChartView *view,
                                        cairo_t             *cr,
                                        int                  width);
/* Writes a drawing as PNG or SVG (by @path's extension): the theme's
 * background, an 8 pixel margin, and @paint's picture inside it. */
typedef void (*TachChartPaintFunc) (gpointer data, cairo_t *cr, int width, int height);
gboolean tach_chart_write_image (const char         *path,
                                 int                 width,
                                 int                 height,
                                 gboolean            dark,
                                 TachChartPaintFunc  paint,
                                 gpointer            data,
                                 GError            **error);
void tach_chart_get_run_color (guint                index,
                               gboolean             dark,
                               GdkRGBA             *color);

G_END_DECLS
