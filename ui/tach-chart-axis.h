/* tach-chart-axis.h: the scale of one chart axis (data space to [0, 1]).
 *
 * The axis knows nothing of widgets or cairo: it maps values, chooses
 * "nice" ticks and formats their labels, so that it can be unit-tested.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define TACH_CHART_AXIS_MAX_TICKS 32

typedef struct {
  double   min;      /* the visible range, after rounding to ticks */
  double   max;
  gboolean log;      /* logarithmic (base 10); min and max are then > 0 */
  double   step;     /* linear: the tick spacing chosen by set_range() */
} TachChartAxis;

void     tach_chart_axis_init       (TachChartAxis *axis,
                                     gboolean       log);
void     tach_chart_axis_set_range  (TachChartAxis *axis,
                                     double         lo,
                                     double         hi,
                                     guint          max_ticks);
double   tach_chart_axis_map        (const TachChartAxis *axis,
                                     double               value);
double   tach_chart_axis_unmap      (const TachChartAxis *axis,
                                     double               fraction);
guint    tach_chart_axis_ticks      (const TachChartAxis *axis,
                                     guint                max_ticks,
                                     double              *ticks,
                                     guint                n_ticks);
char    *tach_chart_axis_format     (const TachChartAxis *axis,
                                     double               value);
double   tach_chart_nice_step       (double range,
                                     guint  max_ticks);

G_END_DECLS
