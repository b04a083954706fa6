/* tach-chart.h: a live line chart drawn with cairo.
 *
 * The chart draws TachChartSeries (the data) through two TachChartAxis
 * (the scales); it never touches the engine.  Redraws only read the
 * prepared buckets, so their cost does not grow with the run's length.
 */
#pragma once

#include <gtk/gtk.h>

#include "tach-chart-draw.h"
#include "tach-chart-series.h"

G_BEGIN_DECLS

#define TACH_TYPE_CHART (tach_chart_get_type ())
G_DECLARE_FINAL_TYPE (TachChart, tach_chart, TACH, CHART, GtkWidget)

GtkWidget *tach_chart_new              (void);
void       tach_chart_add_series       (TachChart       *self,
                                        TachChartSeries *series);
void       tach_chart_remove_series    (TachChart       *self,
                                        TachChartSeries *series);
guint      tach_chart_get_n_series     (TachChart       *self);
/* The series' data grew or changed: redrawn, and described again. */
void       tach_chart_data_changed     (TachChart       *self);
TachChartSeries *tach_chart_get_series (TachChart       *self,
                                        guint            index);
const char *tach_chart_get_title       (TachChart       *self);
void       tach_chart_set_title        (TachChart       *self,
                                        const char      *title);
gboolean   tach_chart_get_by_time      (TachChart       *self);
void       tach_chart_set_by_time      (TachChart       *self,
                                        gboolean         by_time);
gboolean   tach_chart_get_log_scale    (TachChart       *self);
void       tach_chart_set_log_scale    (TachChart       *self,
                                        gboolean         log_scale);
double     tach_chart_get_smoothing    (TachChart       *self);
void       tach_chart_set_smoothing    (TachChart       *self,
                                        double           smoothing);
int        tach_chart_get_gutter       (TachChart       *self);
void       tach_chart_set_gutter       (TachChart       *self,
                                        int              gutter);
int        tach_chart_measure_gutter   (TachChart       *self,
                                        int              width,
                                        int              height);
void       tach_chart_get_plot_area    (TachChart       *self,
                                        int              width,
                                        int              height,
                                        graphene_rect_t *area);
void       tach_chart_align_gutters    (TachChart      **charts,
                                        guint            n_charts);
void       tach_chart_set_hover        (TachChart       *self,
                                        double           x,
                                        double           y);
/* Where the last draw put the hover read-out, in the chart's coordinates;
 * FALSE when it drew none. */
gboolean   tach_chart_get_hover_box    (TachChart       *self,
                                        graphene_rect_t *box);
/* The part of @widget (a chart) that the window shows, in its own
 * coordinates: its bounds within every scrolled area above it and the
 * window; read-outs are drawn inside it. */
void       tach_chart_get_visible_area (GtkWidget       *widget,
                                        graphene_rect_t *area);
void       tach_chart_draw             (TachChart       *self,
                                        cairo_t         *cr,
                                        int              width,
                                        int              height);
gboolean   tach_chart_export           (TachChart      **charts,
                                        guint            n_charts,
                                        const char      *path,
                                        int              width,
                                        int              height,
                                        GError         **error);

G_END_DECLS
