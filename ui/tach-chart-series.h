/* tach-chart-series.h: the data of one line on a chart, in bounded memory.
 *
 * Points arrive in step order.  They are folded into at most
 * TACH_CHART_SERIES_CAPACITY buckets of equal width in steps; when the
 * buckets run out, neighbours merge pairwise and the width doubles.  Each
 * bucket keeps the minimum, maximum and mean of its points, so a million-step
 * run uses the same memory and redraw time as a thousand-step one, and no
 * spike disappears from the faint min/max band.
 */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

#define TACH_CHART_SERIES_CAPACITY 2048

typedef struct {
  guint64 step_first;  /* steps of the first and last points folded in */
  guint64 step_last;
  double  time_first;  /* wall time of those points, in seconds */
  double  time_last;
  double  y_min;
  double  y_max;
  double  y_sum;
  guint   count;       /* points with a finite value; 0 = empty bucket */
} TachChartBucket;

#define TACH_TYPE_CHART_SERIES (tach_chart_series_get_type ())
G_DECLARE_FINAL_TYPE (TachChartSeries, tach_chart_series, TACH, CHART_SERIES, GObject)

TachChartSeries       *tach_chart_series_new              (const char      *label,
                                                           guint            color_index);
void                   tach_chart_series_append           (TachChartSeries *self,
                                                           guint64          step,
                                                           double           time_s,
                                                           double           y,
                                                           gboolean         warmup);
void                   tach_chart_series_clear            (TachChartSeries *self);
const TachChartBucket *tach_chart_series_get_buckets      (TachChartSeries *self,
                                                           guint           *n_buckets);
guint64                tach_chart_series_get_bucket_width (TachChartSeries *self);
guint64                tach_chart_series_get_n_points     (TachChartSeries *self);
gboolean               tach_chart_series_get_y_range      (TachChartSeries *self,
                                                           double          *y_min,
                                                           double          *y_max);
gboolean               tach_chart_series_get_x_range      (TachChartSeries *self,
                                                           gboolean         by_time,
                                                           double          *x_min,
                                                           double          *x_max);
gboolean               tach_chart_series_get_warmup_end   (TachChartSeries *self,
                                                           gboolean         by_time,
                                                           double          *x_end);
void                   tach_chart_series_smooth           (TachChartSeries *self,
                                                           double           weight,
                                                           double          *out);
const char            *tach_chart_series_get_label        (TachChartSeries *self);
guint                  tach_chart_series_get_color_index  (TachChartSeries *self);
gboolean               tach_chart_series_get_visible      (TachChartSeries *self);
void                   tach_chart_series_set_visible      (TachChartSeries *self,
                                                           gboolean         visible);

static inline double
tach_chart_bucket_mean (const TachChartBucket *bucket)
{
  return bucket->y_sum / bucket->count;
}

G_END_DECLS
