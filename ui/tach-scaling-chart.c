/* tach-scaling-chart.c: the Scaling view's two charts.
 *
 * Both panels share the x axis, the knob's values (on a log scale when
 * they are a geometric range, evenly spaced where they are not numbers);
 * the upper one plots items/s (log where the values are geometric), the
 * lower one the speed-up against the first preset, with 1x drawn.  The
 * scales are TachChartAxis, the colours the run charts' palette, and the
 * same drawing serves the screen and the PNG/SVG exports.
 */
#include "tach-scaling-chart.h"
#include "tach-chart.h"
#include "tach-chart-axis.h"
#include "tach-chart-draw.h"
#include "tach-compare-view.h"
#include "tach-a11y.h"
#include <tach-engine.h>

#include <adwaita.h>
#include <glib/gi18n.h>
#include <math.h>

#define LEFT 76
#define RIGHT 16
#define TITLE 26
#define BOTTOM 34
#define GAP 18
#define LEGEND_ROW 18
#define MAX_TICKS 6

struct _TachScalingChart
{
  GtkWidget              parent_instance;

  const TachScalingGrid *grid;
  double                 hover_x;   /* < 0: no hover */
  /* The legend's rows below its first, beside the title, as the last
   * draw laid them out (the plot starts below them), and its entries. */
  guint                  legend_rows;
  guint                  legend_shown;
};

G_DEFINE_FINAL_TYPE (TachScalingChart, tach_scaling_chart, GTK_TYPE_WIDGET)

typedef struct {
  TachChartAxis x, y;
  double        left, top, width, height;  /* the plot area */
} Frame;

static guint
n_presets (const TachScalingGrid *grid)
{
  return grid != NULL && grid->presets != NULL ? g_strv_length (grid->presets) : 0;
}

static guint
n_values (const TachScalingGrid *grid)
{
  return grid != NULL && grid->values != NULL ? g_strv_length (grid->values) : 0;
}

double
tach_scaling_grid_value (const TachScalingGrid *grid, TachScalingPanel panel, guint p, guint v)
{
  guint np = n_presets (grid);
  double rate, base;

  if (p >= np || v >= n_values (grid))
    return NAN;
  rate = grid->rate[v * np + p];
  if (panel == TACH_SCALING_RATE)
    return rate > 0 ? rate : NAN;
  if (grid->ratio != NULL && p > 0 && isfinite (grid->ratio[v * np + p]))
    return grid->ratio[v * np + p];
  base = grid->rate[v * np];
  return rate > 0 && base > 0 ? rate / base : NAN;
}

TachVerdict
tach_scaling_grid_interval (const TachScalingGrid *grid, TachScalingPanel panel, guint p,
                            guint v, TachInterval *out)
{
  guint np = n_presets (grid);
  TachInterval base, rate;
  TachVerdict verdict;

  *out = (TachInterval) { tach_scaling_grid_value (grid, panel, p, v), NAN, NAN };
  if (!isfinite (out->value) || grid->rate_lo == NULL || grid->rate_hi == NULL)
    return TACH_VERDICT_UNKNOWN;
  rate = (TachInterval) { grid->rate[v * np + p], grid->rate_lo[v * np + p],
                          grid->rate_hi[v * np + p] };
  if (panel == TACH_SCALING_RATE)
    {
      *out = rate;
      return TACH_VERDICT_UNKNOWN;
    }
  if (p == 0)
    return TACH_VERDICT_UNKNOWN;
  if (grid->ratio != NULL && isfinite (grid->ratio[v * np + p]))
    {
      *out = (TachInterval) { grid->ratio[v * np + p], grid->ratio_lo[v * np + p],
                              grid->ratio_hi[v * np + p] };
      return tach_interval_verdict (out, 1);
    }
  base = (TachInterval) { grid->rate[v * np], grid->rate_lo[v * np], grid->rate_hi[v * np] };
  verdict = tach_interval_ratio (&base, &rate, out);
  if (verdict == TACH_VERDICT_SIGNIFICANT && grid->busy != NULL
      && tach_summary_busy_apart (grid->busy[v * np], grid->busy[v * np + p]))
    verdict = TACH_VERDICT_WITHIN_NOISE;
  return verdict;
}

double
tach_scaling_grid_ideal (const TachScalingGrid *grid, guint p, guint v)
{
  guint nv = n_values (grid);

  if (!grid->ideal)
    return NAN;
  for (guint first = 0; first < nv; first++)
    {
      double y = tach_scaling_grid_value (grid, TACH_SCALING_RATE, p, first);

      if (isfinite (y) && grid->x[first] > 0)
        return y * grid->x[v] / grid->x[first];
    }
  return NAN;
}

/* The plot area of @panel, and its axes over the shown presets' values. */
static void
frame_init (TachScalingChart *self, TachScalingPanel panel, int width, int height, Frame *f)
{
  const TachScalingGrid *grid = self->grid;
  double each = (height - GAP) / 2.0, lo = INFINITY, hi = -INFINITY;
  gboolean log_y = grid->geometric && panel == TACH_SCALING_RATE;
  guint nv = n_values (grid), np = n_presets (grid);

  f->left = LEFT;
  f->width = MAX (20.0, width - LEFT - RIGHT);
  f->top = (panel == TACH_SCALING_RATE ? self->legend_rows * LEGEND_ROW : each + GAP) + TITLE;
  f->height = MAX (20.0, each - TITLE - BOTTOM
                         - (panel == TACH_SCALING_RATE ? self->legend_rows * LEGEND_ROW : 0));
  tach_chart_axis_init (&f->x, grid->geometric);
  tach_chart_axis_set_range (&f->x, grid->x[0], grid->x[nv - 1], MAX_TICKS);
  /* Values as given, not rounded out to ticks: the points reach the edges. */
  f->x.min = grid->x[0];
  f->x.max = grid->x[nv - 1];
  if (f->x.max <= f->x.min)
    {
      f->x.min -= grid->geometric ? f->x.min / 2 : 1;
      f->x.max += grid->geometric ? f->x.max : 1;
    }
  for (guint v = 0; v < nv; v++)
    for (guint p = 0; p < np; p++)
      {
        double y = tach_scaling_grid_value (grid, panel, p, v);
        double ideal = panel == TACH_SCALING_RATE ? tach_scaling_grid_ideal (grid, p, v) : NAN;

        if (!grid->hidden[p] && isfinite (y))
          {
            lo = MIN (lo, y);
            hi = MAX (hi, y);
          }
        if (!grid->hidden[p] && isfinite (ideal))
          hi = MAX (hi, ideal);
      }
  if (panel == TACH_SCALING_SPEEDUP)
    {
      lo = MIN (isfinite (lo) ? lo : 1.0, 1.0);
      hi = MAX (isfinite (hi) ? hi : 1.0, 1.0);
      lo = MIN (lo, 0.0);
    }
  if (!isfinite (lo))
    lo = 1, hi = 10;
  if (hi <= lo)
    hi = lo * 2 + 1;
  tach_chart_axis_init (&f->y, log_y);
  tach_chart_axis_set_range (&f->y, log_y ? lo : lo, hi * (log_y ? 1.0 : 1.05), MAX_TICKS);
}

static double
px_x (const Frame *f, double x)
{
  return f->left + tach_chart_axis_map (&f->x, x) * f->width;
}

static double
px_y (const Frame *f, double y)
{
  return f->top + (1.0 - tach_chart_axis_map (&f->y, y)) * f->height;
}

static gboolean
have_grid (TachScalingChart *self)
{
  return n_presets (self->grid) > 0 && n_values (self->grid) > 0;
}

gboolean
tach_scaling_chart_get_point (TachScalingChart *self, TachScalingPanel panel, guint p, guint v,
                              int width, int height, double *px, double *py)
{
  Frame f;
  double y;

  if (!have_grid (self) || p >= n_presets (self->grid) || self->grid->hidden[p])
    return FALSE;
  y = tach_scaling_grid_value (self->grid, panel, p, v);
  if (!isfinite (y))
    return FALSE;
  frame_init (self, panel, width, height, &f);
  *px = px_x (&f, self->grid->x[v]);
  *py = px_y (&f, y);
  return TRUE;
}

double
tach_scaling_chart_unmap_y (TachScalingChart *self, TachScalingPanel panel, int width, int height,
                            double py)
{
  Frame f;

  if (!have_grid (self))
    return NAN;
  frame_init (self, panel, width, height, &f);
  return tach_chart_axis_unmap (&f.y, 1.0 - (py - f.top) / f.height);
}

static guint
nearest_value (TachScalingChart *self, int width, int height, double x)
{
  Frame f;
  guint best = 0;

  frame_init (self, TACH_SCALING_RATE, width, height, &f);
  for (guint v = 1; v < n_values (self->grid); v++)
    if (fabs (px_x (&f, self->grid->x[v]) - x) < fabs (px_x (&f, self->grid->x[best]) - x))
      best = v;
  return best;
}

char *
tach_scaling_chart_dup_tooltip (TachScalingChart *self, guint v)
{
  const TachScalingGrid *grid = self->grid;
  GString *text;

  if (!have_grid (self) || v >= n_values (grid))
    return NULL;
  text = g_string_new (NULL);
  g_string_append_printf (text, "%s = %s", grid->knob, grid->values[v]);
  for (guint p = 0; p < n_presets (grid); p++)
    {
      double rate = tach_scaling_grid_value (grid, TACH_SCALING_RATE, p, v);
      TachInterval speedup;
      TachVerdict verdict = tach_scaling_grid_interval (grid, TACH_SCALING_SPEEDUP, p, v,
                                                        &speedup);

      if (grid->hidden[p])
        continue;
      if (isfinite (rate) && verdict == TACH_VERDICT_SIGNIFICANT)
        /* Translators: a preset, its items per second and unit, its
         * speed-up and the speed-up's 95% interval. */
        g_string_append_printf (text, _("\n%s: %.1f %s · %.2f× (%.2f–%.2f)"), grid->presets[p],
                                rate, grid->unit, speedup.value, speedup.lo, speedup.hi);
      else if (isfinite (rate) && verdict == TACH_VERDICT_WITHIN_NOISE)
        /* Translators: a preset, its items per second and unit, and a
         * speed-up whose 95% interval holds 1×. */
        g_string_append_printf (text, _("\n%s: %.1f %s · ~%.2f× within noise"),
                                grid->presets[p], rate, grid->unit, speedup.value);
      else if (isfinite (rate))
        /* Translators: a preset, its items per second and unit, and its speed-up. */
        g_string_append_printf (text, _("\n%s: %.1f %s · %.2f×"), grid->presets[p], rate,
                                grid->unit, speedup.value);
      else
        g_string_append_printf (text, _("\n%s: not measured"), grid->presets[p]);
    }
  return g_string_free (text, FALSE);
}

static char *
panel_title (const TachScalingGrid *grid, TachScalingPanel panel)
{
  if (panel == TACH_SCALING_RATE && grid->ideal)
    return g_strdup_printf (_("%s against %s (higher is faster; dashed: ideal scaling)"),
                            grid->unit, grid->knob);
  if (panel == TACH_SCALING_RATE)
    return g_strdup_printf (_("%s against %s (higher is faster)"), grid->unit, grid->knob);
  return g_strdup_printf (_("Speed-up against %s at each %s"), grid->presets[0], grid->knob);
}

/* The width of the rate panel's title, which the legend follows. */
static int
rate_title_width (TachScalingChart *self, PangoLayout *small)
{
  g_autofree char *title = panel_title (self->grid, TACH_SCALING_RATE);
  int w = 0;

  pango_layout_set_text (small, title, -1);
  pango_layout_get_pixel_size (small, &w, NULL);
  return w;
}

static void
draw_panel (TachScalingChart *self, cairo_t *cr, TachScalingPanel panel, int width, int height,
            const GdkRGBA *fg, gboolean dark, PangoLayout *small)
{
  const TachScalingGrid *grid = self->grid;
  double ticks[TACH_CHART_AXIS_MAX_TICKS];
  guint n, nv = n_values (grid), np = n_presets (grid);
  g_autofree char *title = panel_title (grid, panel);
  Frame f;
  int w, h;

  frame_init (self, panel, width, height, &f);
  /* The rate panel's title on the legend's first row, above its rows. */
  tach_compare_show_text (cr, small, title, f.left,
                          panel == TACH_SCALING_RATE ? 4 : f.top - TITLE + 4, fg, 0.75, NULL);

  /* Grid lines and the y labels. */
  cairo_set_line_width (cr, 1);
  n = tach_chart_axis_ticks (&f.y, MAX_TICKS, ticks, G_N_ELEMENTS (ticks));
  for (guint i = 0; i < n; i++)
    {
      g_autofree char *label = tach_chart_axis_format (&f.y, ticks[i]);
      double y = round (px_y (&f, ticks[i])) + 0.5;

      cairo_set_source_rgba (cr, fg->red, fg->green, fg->blue, 0.10);
      cairo_move_to (cr, f.left, y);
      cairo_line_to (cr, f.left + f.width, y);
      cairo_stroke (cr);
      pango_layout_set_text (small, label, -1);
      pango_layout_get_pixel_size (small, &w, &h);
      tach_compare_show_text (cr, small, label, f.left - 8 - w, y - h / 2.0, fg, 0.6, NULL);
    }
  /* One x label per value: the values are what the user asked for. */
  for (guint v = 0; v < nv; v++)
    {
      double x = round (px_x (&f, grid->x[v])) + 0.5;

      cairo_set_source_rgba (cr, fg->red, fg->green, fg->blue, 0.10);
      cairo_move_to (cr, x, f.top);
      cairo_line_to (cr, x, f.top + f.height);
      cairo_stroke (cr);
      pango_layout_set_text (small, grid->values[v], -1);
      pango_layout_get_pixel_size (small, &w, &h);
      tach_compare_show_text (cr, small, grid->values[v], x - w / 2.0, f.top + f.height + 6, fg,
                              0.6, NULL);
    }
  if (panel == TACH_SCALING_SPEEDUP)
    {
      double y = round (px_y (&f, 1.0)) + 0.5;

      cairo_set_source_rgba (cr, fg->red, fg->green, fg->blue, 0.45);
      cairo_set_dash (cr, (double[]) { 4, 3 }, 2, 0);
      cairo_move_to (cr, f.left, y);
      cairo_line_to (cr, f.left + f.width, y);
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
    }

  /* The lines, broken where a point is missing, and a dot per point. */
  for (guint p = 0; p < np; p++)
    {
      GdkRGBA color;
      gboolean open = FALSE;

      if (grid->hidden[p])
        continue;
      tach_chart_get_run_color (p, dark, &color);
      gdk_cairo_set_source_rgba (cr, &color);
      /* Ideal scaling first, dashed and thin, under the measured line. */
      if (panel == TACH_SCALING_RATE && isfinite (tach_scaling_grid_ideal (grid, p, 0)))
        {
          cairo_set_line_width (cr, 1.2);
          cairo_set_dash (cr, (double[]) { 6, 4 }, 2, 0);
          for (guint v = 0; v < nv; v++)
            {
              double y = tach_scaling_grid_ideal (grid, p, v);

              if (v == 0)
                cairo_move_to (cr, px_x (&f, grid->x[v]), px_y (&f, y));
              else
                cairo_line_to (cr, px_x (&f, grid->x[v]), px_y (&f, y));
            }
          cairo_stroke (cr);
          cairo_set_dash (cr, NULL, 0, 0);
        }
      cairo_set_line_width (cr, 2);
      for (guint v = 0; v < nv; v++)
        {
          double y = tach_scaling_grid_value (grid, panel, p, v);

          if (!isfinite (y))
            {
              open = FALSE;
              continue;
            }
          if (open)
            cairo_line_to (cr, px_x (&f, grid->x[v]), px_y (&f, y));
          else
            cairo_move_to (cr, px_x (&f, grid->x[v]), px_y (&f, y));
          open = TRUE;
        }
      cairo_stroke (cr);
      for (guint v = 0; v < nv; v++)
        {
          TachInterval iv;
          TachVerdict verdict = tach_scaling_grid_interval (grid, panel, p, v, &iv);
          double x = px_x (&f, grid->x[v]);

          if (!isfinite (iv.value))
            continue;
          /* The 95% interval as a bar through the point, kept inside the
           * plot (a log axis has no place for an end at or below 0). */
          if (tach_interval_is_known (&iv) && iv.lo > 0)
            {
              double top = MAX (f.top, MIN (f.top + f.height, px_y (&f, iv.hi)));
              double bottom = MAX (f.top, MIN (f.top + f.height, px_y (&f, iv.lo)));

              cairo_set_line_width (cr, 1.5);
              cairo_move_to (cr, x, top);
              cairo_line_to (cr, x, bottom);
              cairo_stroke (cr);
            }
          /* A speed-up within noise is no finding: a hollow dot. */
          cairo_arc (cr, x, px_y (&f, iv.value), 3.5, 0, 2 * G_PI);
          if (verdict == TACH_VERDICT_WITHIN_NOISE)
            {
              cairo_set_line_width (cr, 1.5);
              cairo_stroke (cr);
            }
          else
            cairo_fill (cr);
        }
    }
}

/* The shown presets' swatches and names from @x0, on as many rows as
 * they take (each preset on one: the plot moves down for the rows past
 * the first, laid out here and kept for the next frame); @cr NULL only
 * lays them out.  How many rows past the first. */
static guint
draw_legend (TachScalingChart *self, cairo_t *cr, double x0, int width, const GdkRGBA *fg,
             gboolean dark, PangoLayout *small)
{
  double x = x0;
  guint row = 0;
  int w;

  self->legend_shown = 0;
  for (guint p = 0; p < n_presets (self->grid); p++)
    {
      GdkRGBA color;
      double y;

      if (self->grid->hidden[p])
        continue;
      pango_layout_set_text (small, self->grid->presets[p], -1);
      pango_layout_get_pixel_size (small, &w, NULL);
      if (x + 18 + w > width && x > x0)
        {
          x = x0;
          row++;
        }
      y = row * LEGEND_ROW;
      self->legend_shown++;
      if (cr != NULL)
        {
          tach_chart_get_run_color (p, dark, &color);
          gdk_cairo_set_source_rgba (cr, &color);
          cairo_rectangle (cr, x, y + 3, 12, 12);
          cairo_fill (cr);
          tach_compare_show_text (cr, small, self->grid->presets[p], x + 18, y, fg, 0.8, NULL);
        }
      x += 18 + w + 16;
    }
  return row;
}

static void
draw_hover (TachScalingChart *self, cairo_t *cr, int width, int height, const GdkRGBA *fg,
            PangoLayout *small)
{
  guint v = nearest_value (self, width, height, self->hover_x);
  g_autofree char *text = tach_scaling_chart_dup_tooltip (self, v);
  graphene_rect_t limits;
  Frame f;
  double x;

  frame_init (self, TACH_SCALING_RATE, width, height, &f);
  x = round (px_x (&f, self->grid->x[v])) + 0.5;
  cairo_set_source_rgba (cr, fg->red, fg->green, fg->blue, 0.5);
  cairo_set_line_width (cr, 1);
  cairo_move_to (cr, x, TITLE);
  cairo_line_to (cr, x, height - BOTTOM);
  cairo_stroke (cr);
  pango_layout_set_text (small, text, -1);
  /* Inside the part of the chart the window shows, as the Live charts'. */
  tach_chart_get_visible_area (GTK_WIDGET (self), &limits);
  tach_chart_draw_readout (cr, small, fg, adw_style_manager_get_dark (adw_style_manager_get_default ()),
                           x, TITLE + 6, &limits, NULL);
}

guint
tach_scaling_chart_get_n_legend (TachScalingChart *self)
{
  return self->legend_shown;
}

void
tach_scaling_chart_draw (TachScalingChart *self, cairo_t *cr, int width, int height)
{
  g_autoptr(PangoLayout) small = NULL;
  gboolean dark = adw_style_manager_get_dark (adw_style_manager_get_default ());
  GdkRGBA fg;
  int title_w;

  if (!have_grid (self))
    return;
  small = tach_compare_layout_new (GTK_WIDGET (self), cr, 0.85, FALSE);
G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_style_context_get_color (gtk_widget_get_style_context (GTK_WIDGET (self)), &fg);
G_GNUC_END_IGNORE_DEPRECATIONS
  /* The legend's rows first, so that the plot starts below them; the
   * title's width is the same wherever the title lands. */
  title_w = rate_title_width (self, small);
  self->legend_rows = draw_legend (self, NULL, LEFT + title_w + 24, width, &fg, dark, small);
  draw_panel (self, cr, TACH_SCALING_RATE, width, height, &fg, dark, small);
  draw_legend (self, cr, LEFT + title_w + 24, width, &fg, dark, small);
  draw_panel (self, cr, TACH_SCALING_SPEEDUP, width, height, &fg, dark, small);
  if (self->hover_x >= 0)
    draw_hover (self, cr, width, height, &fg, small);
}

static void
paint_scaling (gpointer data, cairo_t *cr, int width, int height)
{
  TachScalingChart *self = data;
  double hover = self->hover_x;

  self->hover_x = -1;
  tach_scaling_chart_draw (self, cr, width, height);
  self->hover_x = hover;
}

gboolean
tach_scaling_chart_export (TachScalingChart *self, const char *path, int width, int height,
                           GError **error)
{
  if (!have_grid (self))
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                           _("There is no scaling sweep to export yet"));
      return FALSE;
    }
  return tach_chart_write_image (path, width, height,
                                 adw_style_manager_get_dark (adw_style_manager_get_default ()),
                                 paint_scaling, self, error);
}

/* What both panels show, value by value: each preset's items/s and
 * speed-up with its interval, as the hover tooltip gives them. */
static char *
describe (GtkWidget *widget)
{
  TachScalingChart *self = TACH_SCALING_CHART (widget);
  GString *text;

  if (!have_grid (self))
    return g_strdup (_("No sweep yet"));
  text = g_string_new (NULL);
  /* Translators: the Scaling charts' description, before the figures of
   * each value of the knob varied: the baseline preset, the knob. */
  g_string_append_printf (text, _("Items per second and speed-up against %s, by %s"),
                          self->grid->presets[0], self->grid->knob);
  for (guint v = 0; v < n_values (self->grid); v++)
    {
      g_autofree char *tooltip = tach_scaling_chart_dup_tooltip (self, v);
      g_auto(GStrv) lines = g_strsplit (tooltip, "\n", -1);
      g_autofree char *value = g_strjoinv ("; ", lines);

      g_string_append_printf (text, "\n%s", value);
    }
  return g_string_free (text, FALSE);
}

void
tach_scaling_chart_changed (TachScalingChart *self)
{
  g_return_if_fail (TACH_IS_SCALING_CHART (self));
  tach_a11y_queue_draw (GTK_WIDGET (self), describe);
}

void
tach_scaling_chart_set_grid (TachScalingChart *self, const TachScalingGrid *grid)
{
  self->grid = grid;
  tach_scaling_chart_changed (self);
}

void
tach_scaling_chart_set_hover (TachScalingChart *self, double x)
{
  self->hover_x = x;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static void
tach_scaling_chart_snapshot (GtkWidget *widget, GtkSnapshot *snapshot)
{
  int width = gtk_widget_get_width (widget), height = gtk_widget_get_height (widget);
  cairo_t *cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, width, height));

  tach_scaling_chart_draw (TACH_SCALING_CHART (widget), cr, width, height);
  cairo_destroy (cr);
}

static void
on_motion (GtkEventControllerMotion *controller, double x, double y, TachScalingChart *self)
{
  (void) controller;
  (void) y;
  tach_scaling_chart_set_hover (self, x);
}

static void
on_leave (GtkEventControllerMotion *controller, TachScalingChart *self)
{
  (void) controller;
  tach_scaling_chart_set_hover (self, -1);
}

static void
tach_scaling_chart_class_init (TachScalingChartClass *klass)
{
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  widget_class->snapshot = tach_scaling_chart_snapshot;
  gtk_widget_class_set_css_name (widget_class, "tach-scaling-chart");
  gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_IMG);
}

static void
tach_scaling_chart_init (TachScalingChart *self)
{
  GtkEventController *motion = gtk_event_controller_motion_new ();

  self->hover_x = -1;
  tach_a11y_set_label (GTK_WIDGET (self), _("Scaling"));
  tach_a11y_describe_later (GTK_WIDGET (self), describe);
  g_signal_connect (motion, "motion", G_CALLBACK (on_motion), self);
  g_signal_connect (motion, "leave", G_CALLBACK (on_leave), self);
  gtk_widget_add_controller (GTK_WIDGET (self), motion);
  /* As narrow as a phone's width less the page's margins. */
  gtk_widget_set_size_request (GTK_WIDGET (self), 280, 430);
  g_signal_connect_object (adw_style_manager_get_default (), "notify::dark",
                           G_CALLBACK (gtk_widget_queue_draw), self, G_CONNECT_SWAPPED);
}

GtkWidget *
tach_scaling_chart_new (void)
{
  return g_object_new (TACH_TYPE_SCALING_CHART, NULL);
}
