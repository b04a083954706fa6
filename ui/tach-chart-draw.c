/* tach-chart-draw.c: the drawing of a chart, apart from the widget.
 *
 * Layout, ticks and colours are worked out on every draw from the series'
 * buckets, which are bounded, so a redraw costs the same at step ten and at
 * step a million.  The same code draws on screen and into PNG/SVG exports.
 */
#include "tach-chart-draw.h"
#include "tach-chart-axis.h"

#include <cairo-svg.h>
#include <gio/gio.h>

#include <glib/gi18n.h>
#include <math.h>

/* GNOME's palette, a darker shade on light backgrounds and a lighter one on
 * dark backgrounds, so each line keeps its contrast. */
static const char *palette_light[TACH_CHART_N_COLORS] = {
  "#1c71d8", "#e66100", "#26a269", "#813d9c",
  "#c01c28", "#1a8a9a", "#c88800", "#865e3c",
};
static const char *palette_dark[TACH_CHART_N_COLORS] = {
  "#62a0ea", "#ffa348", "#57e389", "#c061cb",
  "#f66151", "#5bc8d8", "#f8e45c", "#cdab8f",
};

void
tach_chart_get_run_color (guint     index,
                          gboolean  dark,
                          GdkRGBA  *color)
{
  const char **palette = dark ? palette_dark : palette_light;

  gdk_rgba_parse (color, palette[index % TACH_CHART_N_COLORS]);
}

typedef struct {
  GdkRGBA        fg;
  gboolean       dark;
  TachChartAxis  x;
  TachChartAxis  y;
  double         left, top, right, bottom;   /* the plot rectangle */
  double         natural_left;               /* what the y labels need */
  PangoLayout   *layout;
  PangoFontDescription *font;
} ChartFrame;

static void
set_source (cairo_t       *cr,
            const GdkRGBA *rgba,
            double         alpha)
{
  cairo_set_source_rgba (cr, rgba->red, rgba->green, rgba->blue, rgba->alpha * alpha);
}

static PangoLayout *
chart_create_layout (cairo_t *cr)
{
  PangoLayout *layout = pango_cairo_create_layout (cr);
  PangoAttrList *attrs = pango_attr_list_new ();

  /* Tabular figures: live numbers keep their width and do not jitter. */
  pango_attr_list_insert (attrs, pango_attr_font_features_new ("tnum=1"));
  pango_layout_set_attributes (layout, attrs);
  pango_attr_list_unref (attrs);
  return layout;
}

static void
layout_set_text (PangoLayout                *layout,
                 const PangoFontDescription *base,
                 const char                 *text,
                 double                      scale,
                 gboolean                    bold)
{
  g_autoptr(PangoFontDescription) desc = pango_font_description_copy (base);
  int size = pango_font_description_get_size (base);

  if (size <= 0)
    size = 11 * PANGO_SCALE;
  pango_font_description_set_size (desc, (int) (size * scale));
  pango_font_description_set_weight (desc, bold ? PANGO_WEIGHT_BOLD : PANGO_WEIGHT_NORMAL);
  pango_layout_set_font_description (layout, desc);
  pango_layout_set_text (layout, text, -1);
}

static gboolean
chart_data_range (const TachChartView *view,
                  double    *x_min,
                  double    *x_max,
                  double    *y_min,
                  double    *y_max)
{
  gboolean any = FALSE;

  *x_min = 0.0;
  *x_max = 1.0;
  *y_min = INFINITY;
  *y_max = -INFINITY;
  for (guint i = 0; i < view->series->len; i++)
    {
      TachChartSeries *s = g_ptr_array_index (view->series, i);
      double a, b, lo, hi;

      if (!tach_chart_series_get_visible (s)
          || !tach_chart_series_get_x_range (s, view->by_time, &a, &b)
          || !tach_chart_series_get_y_range (s, &lo, &hi))
        continue;
      /* The axis starts at zero (step 0, or the run's start). */
      *x_max = any ? MAX (*x_max, b) : b;
      if (view->log_scale)
        {
          /* Non-positive values have no place on a log axis. */
          const TachChartBucket *buckets;
          guint n;

          buckets = tach_chart_series_get_buckets (s, &n);
          for (guint j = 0; j < n; j++)
            if (buckets[j].count > 0 && buckets[j].y_max > 0.0)
              {
                *y_min = MIN (*y_min, buckets[j].y_min > 0.0 ? buckets[j].y_min : buckets[j].y_max);
                *y_max = MAX (*y_max, buckets[j].y_max);
              }
        }
      else
        {
          *y_min = MIN (*y_min, lo);
          *y_max = MAX (*y_max, hi);
        }
      any = TRUE;
    }
  if (*x_max <= *x_min)
    *x_max = *x_min + 1.0;
  return any && *y_min <= *y_max;
}

static void
chart_frame_init (const TachChartView *view,
                  ChartFrame *frame,
                  cairo_t    *cr,
                  int         width,
                  int         height)
{
  double x_min, x_max, y_min, y_max;
  double label_w = 0.0, label_h = 0.0;
  double ticks[TACH_CHART_AXIS_MAX_TICKS];
  guint n_ticks, max_y_ticks;
  int tw, th;

  frame->fg = view->fg;
  frame->dark = view->dark;
  frame->layout = chart_create_layout (cr);
  frame->font = pango_font_description_copy (view->font);

  layout_set_text (frame->layout, frame->font, "0", 0.85, FALSE);
  pango_layout_get_pixel_size (frame->layout, &tw, &th);
  label_h = th;

  frame->top = 2 * label_h + 8;
  frame->bottom = height - label_h - 10;
  max_y_ticks = MAX (2, (guint) ((frame->bottom - frame->top) / (2.2 * label_h)));

  tach_chart_axis_init (&frame->y, view->log_scale);
  tach_chart_axis_init (&frame->x, FALSE);
  if (chart_data_range (view, &x_min, &x_max, &y_min, &y_max))
    {
      /* A rate chart reads best from zero; a loss chart from its data. */
      tach_chart_axis_set_range (&frame->y, y_min, y_max, MIN (max_y_ticks, 8));
      tach_chart_axis_set_range (&frame->x, x_min, x_max, 8);
    }

  n_ticks = tach_chart_axis_ticks (&frame->y, MIN (max_y_ticks, 8), ticks, G_N_ELEMENTS (ticks));
  for (guint i = 0; i < n_ticks; i++)
    {
      g_autofree char *text = tach_chart_axis_format (&frame->y, ticks[i]);

      layout_set_text (frame->layout, frame->font, text, 0.85, FALSE);
      pango_layout_get_pixel_size (frame->layout, &tw, &th);
      label_w = MAX (label_w, tw);
    }

  frame->natural_left = ceil (label_w) + 14;
  frame->left = MAX (frame->natural_left, view->gutter);
  frame->right = width - 16;
}

static void
chart_frame_clear (ChartFrame *frame)
{
  g_clear_object (&frame->layout);
  g_clear_pointer (&frame->font, pango_font_description_free);
}

int
tach_chart_view_measure_gutter (const TachChartView *view,
                                cairo_t             *cr,
                                int                  width,
                                int                  height)
{
  ChartFrame frame = { 0 };
  int gutter;

  chart_frame_init (view, &frame, cr, width, height);
  gutter = (int) frame.natural_left;
  chart_frame_clear (&frame);
  return gutter;
}

void
tach_chart_view_get_plot_area (const TachChartView *view,
                               cairo_t             *cr,
                               int                  width,
                               int                  height,
                               graphene_rect_t     *area)
{
  ChartFrame frame = { 0 };

  chart_frame_init (view, &frame, cr, width, height);
  graphene_rect_init (area, frame.left, frame.top,
                      frame.right - frame.left, frame.bottom - frame.top);
  chart_frame_clear (&frame);
}

static double
px_x (const ChartFrame *frame,
      double            x)
{
  return frame->left + tach_chart_axis_map (&frame->x, x) * (frame->right - frame->left);
}

static double
px_y (const ChartFrame *frame,
      double            y)
{
  return frame->bottom - tach_chart_axis_map (&frame->y, y) * (frame->bottom - frame->top);
}

static double
bucket_x (const TachChartBucket *b,
          gboolean               by_time)
{
  return by_time ? 0.5 * (b->time_first + b->time_last)
                 : 0.5 * ((double) b->step_first + (double) b->step_last);
}

static void
chart_draw_grid (const TachChartView *view,
                 ChartFrame *frame,
                 cairo_t    *cr,
                 int         width)
{
  double ticks[TACH_CHART_AXIS_MAX_TICKS];
  guint n;
  int tw, th;
  double max_y_ticks = MAX (2.0, (frame->bottom - frame->top) / 36.0);

  cairo_set_line_width (cr, 1.0);

  n = tach_chart_axis_ticks (&frame->y, MIN ((guint) max_y_ticks, 8), ticks, G_N_ELEMENTS (ticks));
  for (guint i = 0; i < n; i++)
    {
      g_autofree char *text = tach_chart_axis_format (&frame->y, ticks[i]);
      /* Pixel-snapped: a 1 px line centred on a pixel stays crisp. */
      double y = floor (px_y (frame, ticks[i])) + 0.5;

      set_source (cr, &frame->fg, 0.10);
      cairo_move_to (cr, frame->left, y);
      cairo_line_to (cr, frame->right, y);
      cairo_stroke (cr);

      layout_set_text (frame->layout, frame->font, text, 0.85, FALSE);
      pango_layout_get_pixel_size (frame->layout, &tw, &th);
      set_source (cr, &frame->fg, 0.65);
      cairo_move_to (cr, frame->left - 8 - tw, y - th / 2.0);
      pango_cairo_show_layout (cr, frame->layout);
    }

  n = tach_chart_axis_ticks (&frame->x, 8, ticks, G_N_ELEMENTS (ticks));
  for (guint i = 0; i < n; i++)
    {
      g_autofree char *text = tach_chart_axis_format (&frame->x, ticks[i]);
      double x = floor (px_x (frame, ticks[i])) + 0.5;

      set_source (cr, &frame->fg, 0.06);
      cairo_move_to (cr, x, frame->top);
      cairo_line_to (cr, x, frame->bottom);
      cairo_stroke (cr);

      layout_set_text (frame->layout, frame->font, text, 0.85, FALSE);
      pango_layout_get_pixel_size (frame->layout, &tw, &th);
      set_source (cr, &frame->fg, 0.65);
      cairo_move_to (cr, CLAMP (x - tw / 2.0, frame->left - tw / 2.0, width - tw - 2), frame->bottom + 5);
      pango_cairo_show_layout (cr, frame->layout);
    }

  /* The axis line itself. */
  set_source (cr, &frame->fg, 0.30);
  cairo_move_to (cr, frame->left, floor (frame->bottom) + 0.5);
  cairo_line_to (cr, frame->right, floor (frame->bottom) + 0.5);
  cairo_stroke (cr);
}

static void
chart_draw_title (const TachChartView *view,
                  ChartFrame *frame,
                  cairo_t    *cr)
{
  const char *caption = view->by_time ? _("x: wall time (s)") : _("x: step");
  int tw, th;

  layout_set_text (frame->layout, frame->font, view->title ? view->title : "", 1.0, TRUE);
  set_source (cr, &frame->fg, 0.9);
  cairo_move_to (cr, 4, 2);
  pango_cairo_show_layout (cr, frame->layout);

  layout_set_text (frame->layout, frame->font, caption, 0.85, FALSE);
  pango_layout_get_pixel_size (frame->layout, &tw, &th);
  set_source (cr, &frame->fg, 0.55);
  cairo_move_to (cr, frame->right - tw, 4);
  pango_cairo_show_layout (cr, frame->layout);
}

static void
chart_draw_warmup (const TachChartView *view,
                   ChartFrame *frame,
                   cairo_t    *cr)
{
  double end = -INFINITY, x0, x1;

  for (guint i = 0; i < view->series->len; i++)
    {
      TachChartSeries *s = g_ptr_array_index (view->series, i);
      double e;

      if (tach_chart_series_get_visible (s)
          && tach_chart_series_get_warmup_end (s, view->by_time, &e))
        end = MAX (end, e);
    }
  if (!isfinite (end))
    return;

  x0 = frame->left;
  x1 = CLAMP (px_x (frame, end), frame->left, frame->right);
  if (x1 - x0 < 1.0)
    return;

  set_source (cr, &frame->fg, 0.06);
  cairo_rectangle (cr, x0, frame->top, x1 - x0, frame->bottom - frame->top);
  cairo_fill (cr);

  layout_set_text (frame->layout, frame->font, _("warm-up"), 0.75, FALSE);
  set_source (cr, &frame->fg, 0.5);
  cairo_move_to (cr, x0 + 4, frame->top + 2);
  pango_cairo_show_layout (cr, frame->layout);
}

static void
chart_draw_series (const TachChartView *view,
                   ChartFrame      *frame,
                   cairo_t         *cr,
                   TachChartSeries *s)
{
  const TachChartBucket *b;
  g_autofree double *smooth = NULL;
  GdkRGBA color;
  guint n;
  gboolean pen_down = FALSE;

  b = tach_chart_series_get_buckets (s, &n);
  if (n == 0)
    return;
  tach_chart_get_run_color (tach_chart_series_get_color_index (s), frame->dark, &color);

  /* The faint band: every bucket's minimum to maximum, so that no spike is
   * lost however many steps a pixel holds. */
  set_source (cr, &color, 0.22);
  cairo_set_line_width (cr, 1.0);
  for (guint i = 0; i < n; i++)
    {
      double x, y0, y1;

      if (b[i].count == 0)
        continue;
      x = px_x (frame, bucket_x (&b[i], view->by_time));
      y0 = px_y (frame, b[i].y_min);
      y1 = px_y (frame, b[i].y_max);
      if (!isfinite (y0))
        y0 = frame->bottom;
      if (!isfinite (y1))
        continue;
      cairo_move_to (cr, floor (x) + 0.5, y0 + 0.5);
      cairo_line_to (cr, floor (x) + 0.5, y1 - 0.5);
    }
  cairo_stroke (cr);

  /* The raw mean line, faint; the smoothed line, bold. */
  smooth = g_new (double, n);
  tach_chart_series_smooth (s, view->smoothing, smooth);
  for (int pass = 0; pass < 2; pass++)
    {
      gboolean bold = pass == 1;

      if (!bold && view->smoothing <= 0.0)
        continue;
      set_source (cr, &color, bold ? 1.0 : 0.45);
      cairo_set_line_width (cr, bold ? 2.0 : 1.0);
      pen_down = FALSE;
      for (guint i = 0; i < n; i++)
        {
          double v = bold ? smooth[i] : (b[i].count ? tach_chart_bucket_mean (&b[i]) : NAN);
          double x, y;

          if (b[i].count == 0 || !isfinite (v))
            {
              pen_down = FALSE;
              continue;
            }
          x = px_x (frame, bucket_x (&b[i], view->by_time));
          y = px_y (frame, v);
          if (!isfinite (y))
            {
              pen_down = FALSE;
              continue;
            }
          if (pen_down)
            cairo_line_to (cr, x, y);
          else
            cairo_move_to (cr, x, y);
          pen_down = TRUE;
        }
      cairo_stroke (cr);
    }
}

/* Finds the bucket of @s closest to the data-space @x. */
static const TachChartBucket *
series_nearest (TachChartSeries *s,
                gboolean         by_time,
                double           x,
                double          *smoothed,
                double           smoothing)
{
  const TachChartBucket *b;
  g_autofree double *smooth = NULL;
  guint n, best = G_MAXUINT;
  double best_d = INFINITY;

  b = tach_chart_series_get_buckets (s, &n);
  if (n == 0)
    return NULL;
  for (guint i = 0; i < n; i++)
    {
      double d;

      if (b[i].count == 0)
        continue;
      d = fabs (bucket_x (&b[i], by_time) - x);
      if (d < best_d)
        {
          best_d = d;
          best = i;
        }
    }
  if (best == G_MAXUINT)
    return NULL;
  smooth = g_new (double, n);
  tach_chart_series_smooth (s, smoothing, smooth);
  *smoothed = smooth[best];
  return &b[best];
}

static char *
format_value (double v)
{
  double a = fabs (v);

  if (a >= 1e4)
    return g_strdup_printf ("%.0f", v);
  if (a >= 100)
    return g_strdup_printf ("%.1f", v);
  if (a >= 1)
    return g_strdup_printf ("%.3f", v);
  return g_strdup_printf ("%.4g", v);
}

static void
chart_draw_hover (const TachChartView *view,
                  ChartFrame *frame,
                  cairo_t    *cr,
                  int         width,
                  int         height)
{
  g_autoptr(GString) text = g_string_new (NULL);
  graphene_rect_t limits;
  double x;
  guint shown = 0;

  if (!view->hovering || view->hover_x < frame->left || view->hover_x > frame->right)
    return;

  x = tach_chart_axis_unmap (&frame->x, (view->hover_x - frame->left) / (frame->right - frame->left));
  set_source (cr, &frame->fg, 0.35);
  cairo_set_line_width (cr, 1.0);
  cairo_move_to (cr, floor (view->hover_x) + 0.5, frame->top);
  cairo_line_to (cr, floor (view->hover_x) + 0.5, frame->bottom);
  cairo_stroke (cr);

  for (guint i = 0; i < view->series->len; i++)
    {
      TachChartSeries *s = g_ptr_array_index (view->series, i);
      const TachChartBucket *b;
      double smoothed = NAN, py;
      g_autofree char *mean = NULL;
      GdkRGBA color;

      if (!tach_chart_series_get_visible (s)
          || !(b = series_nearest (s, view->by_time, x, &smoothed, view->smoothing)))
        continue;

      if (shown++ == 0)
        {
          if (view->by_time)
            g_string_append_printf (text, _("%.2f s"), bucket_x (b, TRUE));
          else
            {
              /* Formatted apart: xgettext cannot read G_GUINT64_FORMAT. */
              g_autofree char *first = g_strdup_printf ("%" G_GUINT64_FORMAT, b->step_first);
              g_autofree char *last = g_strdup_printf ("%" G_GUINT64_FORMAT, b->step_last);

              if (b->step_first == b->step_last)
                g_string_append_printf (text, _("Step %s"), first);
              else
                g_string_append_printf (text, _("Steps %s–%s"), first, last);
            }
        }
      mean = format_value (tach_chart_bucket_mean (b));
      g_string_append_printf (text, "\n%s  %s", tach_chart_series_get_label (s), mean);
      if (b->count > 1)
        {
          g_autofree char *lo = format_value (b->y_min);
          g_autofree char *hi = format_value (b->y_max);
          g_string_append_printf (text, "  [%s … %s]", lo, hi);
        }

      tach_chart_get_run_color (tach_chart_series_get_color_index (s), frame->dark, &color);
      py = px_y (frame, isfinite (smoothed) ? smoothed : tach_chart_bucket_mean (b));
      if (isfinite (py))
        {
          set_source (cr, &color, 1.0);
          cairo_arc (cr, px_x (frame, bucket_x (b, view->by_time)), py, 3.5, 0, 2 * G_PI);
          cairo_fill (cr);
        }
    }
  if (shown == 0)
    return;

  layout_set_text (frame->layout, frame->font, text->str, 0.85, FALSE);
  /* At the plot's top, beside the pointer, inside the part of the chart
   * the window shows (over the axes' labels where the plot is short). */
  limits = view->hover_limits;
  if (limits.size.width <= 0)
    graphene_rect_init (&limits, 0, 0, width, height);
  tach_chart_draw_readout (cr, frame->layout, &frame->fg, frame->dark, view->hover_x,
                           frame->top + 4, &limits, view->hover_box);
}

void
tach_chart_draw_readout (cairo_t *cr, PangoLayout *layout, const GdkRGBA *fg, gboolean dark,
                         double x, double y, const graphene_rect_t *limits,
                         graphene_rect_t *box)
{
  double left = limits->origin.x, top = limits->origin.y;
  double right = left + limits->size.width, bottom = top + limits->size.height;
  double box_x, box_y, w, h;
  int tw, th;
  GdkRGBA bg;

  pango_layout_get_pixel_size (layout, &tw, &th);
  w = tw + 16;
  h = th + 10;
  box_x = x + 12;
  if (box_x + w > right)
    box_x = x - 12 - w;
  /* Past an edge still (a box wider than either side of the pointer, a
   * pointer near the bottom): moved in, the top-left corner first. */
  box_x = MAX (MIN (box_x, right - w), left);
  box_y = MAX (MIN (y, bottom - h), top);
  if (box != NULL)
    graphene_rect_init (box, box_x, box_y, w, h);

  bg = dark ? (GdkRGBA) { 0.19, 0.19, 0.21, 0.94 } : (GdkRGBA) { 1, 1, 1, 0.94 };
  set_source (cr, &bg, 1.0);
  cairo_rectangle (cr, box_x, box_y, w, h);
  cairo_fill_preserve (cr);
  set_source (cr, fg, 0.15);
  cairo_stroke (cr);
  set_source (cr, fg, 0.95);
  cairo_move_to (cr, box_x + 8, box_y + 5);
  pango_cairo_show_layout (cr, layout);
}

void
tach_chart_view_draw (const TachChartView *view,
                      cairo_t             *cr,
                      int                  width,
                      int                  height)
{
  ChartFrame frame = { 0 };
  gboolean any = FALSE;

  if (width < 40 || height < 40)
    return;

  chart_frame_init (view, &frame, cr, width, height);
  chart_draw_title (view, &frame, cr);
  chart_draw_grid (view, &frame, cr, width);
  chart_draw_warmup (view, &frame, cr);

  cairo_save (cr);
  cairo_rectangle (cr, frame.left, frame.top - 2, frame.right - frame.left, frame.bottom - frame.top + 4);
  cairo_clip (cr);
  cairo_set_line_join (cr, CAIRO_LINE_JOIN_ROUND);
  for (guint i = 0; i < view->series->len; i++)
    {
      TachChartSeries *s = g_ptr_array_index (view->series, i);

      if (!tach_chart_series_get_visible (s) || tach_chart_series_get_n_points (s) == 0)
        continue;
      chart_draw_series (view, &frame, cr, s);
      any = TRUE;
    }
  cairo_restore (cr);

  if (!any)
    {
      gboolean shown = FALSE;
      int tw, th;

      /* A run that has not finished its first step yet (it is loading
       * its data, say) is not "no data: press Run". */
      for (guint i = 0; i < view->series->len; i++)
        shown |= tach_chart_series_get_visible (g_ptr_array_index (view->series, i));
      layout_set_text (frame.layout, frame.font,
                       shown ? _("No step measured yet")
                             : _("No data yet: press Run to start measuring"), 1.0, FALSE);
      pango_layout_get_pixel_size (frame.layout, &tw, &th);
      set_source (cr, &frame.fg, 0.45);
      cairo_move_to (cr, (frame.left + frame.right - tw) / 2, (frame.top + frame.bottom - th) / 2);
      pango_cairo_show_layout (cr, frame.layout);
    }
  else
    chart_draw_hover (view, &frame, cr, width, height);

  chart_frame_clear (&frame);
}

/* Lays out (and with @draw, draws) the legend; returns its height. */
static int
chart_legend (const TachChartView *view,
              cairo_t             *cr,
              int                  width,
              gboolean             draw)
{
  const double swatch_w = 18.0, gap = 8.0, spacing = 22.0, pad = 6.0;
  g_autoptr(PangoLayout) layout = chart_create_layout (cr);
  double x = pad, y = pad, row_h = 0.0;
  gboolean any = FALSE;

  for (guint i = 0; i < view->series->len; i++)
    {
      TachChartSeries *s = g_ptr_array_index (view->series, i);
      const char *label = tach_chart_series_get_label (s);
      double entry_w;
      GdkRGBA color;
      int tw, th;

      if (!tach_chart_series_get_visible (s))
        continue;
      layout_set_text (layout, view->font, label != NULL ? label : "", 0.9, FALSE);
      pango_layout_get_pixel_size (layout, &tw, &th);
      entry_w = swatch_w + gap + tw;
      /* A new row when this entry does not fit (unless it starts one). */
      if (x > pad && x + entry_w > width - pad)
        {
          x = pad;
          y += row_h + 4.0;
          row_h = 0.0;
        }
      row_h = MAX (row_h, th);
      any = TRUE;
      if (draw)
        {
          tach_chart_get_run_color (tach_chart_series_get_color_index (s), view->dark, &color);
          set_source (cr, &color, 1.0);
          cairo_set_line_width (cr, 3.0);
          cairo_set_line_cap (cr, CAIRO_LINE_CAP_ROUND);
          cairo_move_to (cr, x + 1.5, y + th / 2.0);
          cairo_line_to (cr, x + swatch_w - 1.5, y + th / 2.0);
          cairo_stroke (cr);
          set_source (cr, &view->fg, 0.9);
          cairo_move_to (cr, x + swatch_w + gap, y);
          pango_cairo_show_layout (cr, layout);
        }
      x += entry_w + spacing;
    }
  return any ? (int) ceil (y + row_h + pad) : 0;
}

int
tach_chart_view_get_legend_height (const TachChartView *view,
                                   cairo_t             *cr,
                                   int                  width)
{
  return chart_legend (view, cr, width, FALSE);
}

void
tach_chart_view_draw_legend (const TachChartView *view,
                             cairo_t             *cr,
                             int                  width)
{
  chart_legend (view, cr, width, TRUE);
}

gboolean
tach_chart_write_image (const char         *path,
                        int                 width,
                        int                 height,
                        gboolean            dark,
                        TachChartPaintFunc  paint,
                        gpointer            data,
                        GError            **error)
{
  g_autofree char *lower = g_ascii_strdown (path, -1);
  gboolean svg = g_str_has_suffix (lower, ".svg");
  cairo_surface_t *surface;
  cairo_status_t status;
  cairo_t *cr;
  GdkRGBA bg;

  surface = svg ? cairo_svg_surface_create (path, width, height)
                : cairo_image_surface_create (CAIRO_FORMAT_ARGB32, width, height);
  cr = cairo_create (surface);
  gdk_rgba_parse (&bg, dark ? "#242424" : "#ffffff");
  gdk_cairo_set_source_rgba (cr, &bg);
  cairo_paint (cr);
  cairo_translate (cr, 8, 8);
  paint (data, cr, width - 16, height - 16);
  cairo_destroy (cr);
  cairo_surface_flush (surface);
  if (svg)
    cairo_surface_finish (surface);
  status = cairo_surface_status (surface);
  if (status == CAIRO_STATUS_SUCCESS && !svg)
    status = cairo_surface_write_to_png (surface, path);
  cairo_surface_destroy (surface);
  if (status != CAIRO_STATUS_SUCCESS)
    {
      g_autofree char *name = g_filename_display_name (path);

      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   _("Could not save the chart to “%s”: %s"),
                   name, cairo_status_to_string (status));
      return FALSE;
    }
  return TRUE;
}
