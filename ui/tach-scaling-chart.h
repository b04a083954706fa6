/* tach-scaling-chart.h: a sweep over one knob as two line charts, one line
 * per preset: items/s against the knob's value (log-log when the values
 * are a geometric range) and, under it, the speed-up against the first
 * preset at each value.  Main thread only. */
#pragma once

#include <gtk/gtk.h>

#include "tach-verdict.h"

G_BEGIN_DECLS

/* The grid a chart shows, owned by whoever sets it (the Scaling view). */
typedef struct {
  const char *knob;       /* the knob varied */
  const char *unit;       /* "samples/s" or "tokens/s" */
  GStrv       presets;    /* n_presets names, the first the baseline */
  GStrv       values;     /* n_values, as the knob takes them */
  gboolean    geometric;  /* log axes */
  double     *x;          /* n_values: the values as numbers (index where not) */
  double     *rate;       /* [v * n_presets + p] items/s, NaN until measured */
  double     *rate_lo;    /* the same points' 95% intervals (NaN: none) */
  double     *rate_hi;
  /* The speed-ups paired by round (the geometric mean of the rounds'
   * ratios, with its 95% interval), [v * n_presets + p]; NULL, or NaN
   * where fewer than 2 rounds paired them: then the two runs' ratio. */
  double     *ratio, *ratio_lo, *ratio_hi;
  /* [v * n_presets + p] the share of the machine other processes took
   * while the point ran (TachSummary.machine_busy; NULL or NaN: unknown):
   * a two runs' ratio on a busy machine is no finding
   * (tach_summary_busy_apart). */
  double     *busy;
  gboolean   *hidden;     /* n_presets: left out of the drawing */
  /* Data-parallel ranks varied: each preset's ideal scaling is drawn too,
   * a dashed line through its first point proportional to the value
   * (tach_scaling_grid_ideal). */
  gboolean    ideal;
} TachScalingGrid;

typedef enum {
  TACH_SCALING_RATE,      /* the upper chart: items/s */
  TACH_SCALING_SPEEDUP,   /* the lower chart: against presets[0] */
} TachScalingPanel;

#define TACH_TYPE_SCALING_CHART (tach_scaling_chart_get_type ())
G_DECLARE_FINAL_TYPE (TachScalingChart, tach_scaling_chart, TACH, SCALING_CHART, GtkWidget)

GtkWidget *tach_scaling_chart_new (void);
/* Borrowed: keep @grid alive while shown, and call again (or
 * gtk_widget_queue_draw) when it changes; NULL shows nothing. */
void       tach_scaling_chart_set_grid (TachScalingChart *self, const TachScalingGrid *grid);
/* The grid changed in place: redrawn and described again. */
void       tach_scaling_chart_changed  (TachScalingChart *self);
/* The value a panel plots for preset @p at value @v (items/s or the
 * speed-up), NaN where there is none. */
double     tach_scaling_grid_value (const TachScalingGrid *grid, TachScalingPanel panel,
                                    guint p, guint v);
/* Ideal scaling of preset @p at value @v: its first measured items/s
 * times @v's value over that point's; NaN without @grid->ideal or a
 * measured point. */
double     tach_scaling_grid_ideal (const TachScalingGrid *grid, guint p, guint v);
/* The same value with its 95% interval (a run's median's, or the speed-up
 * paired by round, else from the two runs' intervals) and its verdict (against 1 for the
 * speed-up; TACH_VERDICT_UNKNOWN for items/s and the first preset). */
TachVerdict tach_scaling_grid_interval (const TachScalingGrid *grid, TachScalingPanel panel,
                                        guint p, guint v, TachInterval *out);
/* Where the point (@p, @v) of @panel is drawn in a @width x @height
 * drawing; FALSE where it is not drawn (hidden, not measured). */
gboolean   tach_scaling_chart_get_point (TachScalingChart *self, TachScalingPanel panel,
                                         guint p, guint v, int width, int height,
                                         double *px, double *py);
/* The data value at pixel row @py of @panel (the y axis read back). */
double     tach_scaling_chart_unmap_y (TachScalingChart *self, TachScalingPanel panel,
                                       int width, int height, double py);
/* Hover: the value column nearest @x is marked and its figures shown;
 * negative @x hides it. */
void       tach_scaling_chart_set_hover (TachScalingChart *self, double x);
/* The hover text of value @v: one line per shown preset. */
char      *tach_scaling_chart_dup_tooltip (TachScalingChart *self, guint v);
/* How many presets the in-chart legend showed in the last draw (every
 * shown one: it takes more rows when they do not fit beside the title). */
guint      tach_scaling_chart_get_n_legend (TachScalingChart *self);
void       tach_scaling_chart_draw (TachScalingChart *self, cairo_t *cr, int width, int height);
/* PNG or SVG by @path's extension. */
gboolean   tach_scaling_chart_export (TachScalingChart *self, const char *path, int width,
                                      int height, GError **error);

G_END_DECLS
