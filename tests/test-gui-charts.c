/* test-gui-charts.c: the charts of the desktop app as the window and its
 * exports draw them, under xvfb-run (part of test-gui): each run's colour
 * in the exported legend, and plots that line up one above the other. */
#include <adwaita.h>

#include "tach-window.h"
#include "tach-chart-draw.h"
#include "test-gui.h"

/* How many opaque pixels of @png at or below row @y0 have @rgba. */
guint
count_color (GdkTexture    *png,
             int            y0,
             const GdkRGBA *rgba)
{
  int width = gdk_texture_get_width (png), height = gdk_texture_get_height (png);
  gsize stride = (gsize) width * 4;
  g_autofree guint32 *pixels = g_malloc (stride * height);
  int want[3];
  guint n = 0;

  want[0] = (int) lround (rgba->red * 255);
  want[1] = (int) lround (rgba->green * 255);
  want[2] = (int) lround (rgba->blue * 255);
  /* Cairo's ARGB32: 0xAARRGGBB in native order, premultiplied; the swatches
   * are opaque. */
  gdk_texture_download (png, (guchar *) pixels, stride);
  for (int y = MAX (y0, 0); y < height; y++)
    for (int x = 0; x < width; x++)
      {
        guint32 p = pixels[(gsize) y * width + x];

        n += (p >> 24) == 0xff && ABS ((int) ((p >> 16) & 0xff) - want[0]) <= 6
             && ABS ((int) ((p >> 8) & 0xff) - want[1]) <= 6
             && ABS ((int) (p & 0xff) - want[2]) <= 6;
      }
  return n;
}

/* How many pixels of @png at or below row @y0 have the colour of run
 * colour @color_index (as the charts draw it in the current style). */
static guint
count_run_color (GdkTexture *png,
                 int         y0,
                 guint       color_index)
{
  GdkRGBA rgba;

  tach_chart_get_run_color (color_index, adw_style_manager_get_dark (adw_style_manager_get_default ()),
                            &rgba);
  return count_color (png, y0, &rgba);
}

/* Exports the charts to @path as PNG and checks that the legend under
 * them shows the colour of each visible run of the rate chart and of no
 * hidden one. */
void
check_export_legend (TachWindow *window,
                     const char *path)
{
  TachChart *rate_chart = tach_window_get_rate_chart (window);
  g_autoptr(GdkTexture) png = NULL;
  g_autoptr(GError) error = NULL;
  gboolean any_visible = FALSE;

  g_assert_true (tach_window_export_charts (window, path, &error));
  g_assert_no_error (error);
  png = gdk_texture_new_from_filename (path, &error);
  g_assert_no_error (error);
  g_assert_cmpint (gdk_texture_get_width (png), ==, 1200);

  for (guint i = 0; i < tach_chart_get_n_series (rate_chart); i++)
    {
      TachChartSeries *s = tach_chart_get_series (rate_chart, i);
      guint index = tach_chart_series_get_color_index (s);
      gboolean shown = FALSE;

      /* A colour shared with a visible run (the palette repeats) would be
       * there whatever this run does. */
      for (guint j = 0; j < tach_chart_get_n_series (rate_chart); j++)
        {
          TachChartSeries *o = tach_chart_get_series (rate_chart, j);

          shown |= tach_chart_series_get_visible (o)
                   && tach_chart_series_get_color_index (o) % TACH_CHART_N_COLORS
                      == index % TACH_CHART_N_COLORS;
        }
      any_visible |= tach_chart_series_get_visible (s);
      g_test_message ("legend: run %u (colour %u) has %u pixels", i, index,
                      count_run_color (png, 2 * 420, index));
      if (shown)
        g_assert_cmpuint (count_run_color (png, 2 * 420, index), >=, 10);
      else
        g_assert_cmpuint (count_run_color (png, 2 * 420, index), ==, 0);
    }
  /* The legend adds its rows under the two charts; without visible runs
   * there is none. */
  if (any_visible)
    g_assert_cmpint (gdk_texture_get_height (png), >, 2 * 420);
  else
    g_assert_cmpint (gdk_texture_get_height (png), ==, 2 * 420);
}

/* The leftmost x at which a horizontal line (a run of @min_run pixels of
 * one colour other than the background's) starts in rows [@y0, @y1) of
 * @png: where a chart's grid lines, and so its plot, begin. */
static int
plot_left_edge (GdkTexture *png,
                int         y0,
                int         y1,
                int         min_run)
{
  int width = gdk_texture_get_width (png);
  g_autofree guint32 *pixels = g_malloc ((gsize) width * 4 * gdk_texture_get_height (png));
  int left = G_MAXINT;

  gdk_texture_download (png, (guchar *) pixels, (gsize) width * 4);
  for (int y = y0; y < y1; y++)
    for (int x = 0, start = 0; x <= width; x++)
      if (x == width || pixels[(gsize) y * width + x] != pixels[(gsize) y * width + start])
        {
          if (x - start >= min_run && pixels[(gsize) y * width + start] != pixels[0])
            left = MIN (left, start);
          start = x;
        }
  return left;
}

/* Steps/s in the hundred thousands above, a loss under one below: the y
 * labels differ in width, yet both plots start at the same x, on screen
 * and in an export, so that one step is read at one x in both. */
void
test_charts_aligned (Fixture       *fixture,
                     gconstpointer  data)
{
  TachChart *charts[] = { tach_window_get_rate_chart (fixture->window),
                          tach_window_get_loss_chart (fixture->window) };
  g_autofree char *path = g_build_filename (fixture->tmpdir, "aligned.png", NULL);
  g_autoptr(GdkTexture) png = NULL;
  g_autoptr(GError) error = NULL;
  graphene_rect_t area[2];
  int natural[2];

  for (guint c = 0; c < 2; c++)
    {
      g_autoptr(TachChartSeries) series = tach_chart_series_new ("run", 0);

      for (guint i = 0; i < 200; i++)
        tach_chart_series_append (series, i, 0.01 * i,
                                  c == 0 ? 412345.0 + 1000.0 * (i % 7) : 0.75 / (1.0 + i), FALSE);
      tach_chart_add_series (charts[c], series);
    }
  render_window (fixture->window, path);
  for (guint c = 0; c < 2; c++)
    {
      int width = gtk_widget_get_width (GTK_WIDGET (charts[c]));
      int height = gtk_widget_get_height (GTK_WIDGET (charts[c]));

      natural[c] = tach_chart_measure_gutter (charts[c], width, height);
      tach_chart_get_plot_area (charts[c], width, height, &area[c]);
      g_test_message ("chart %u: labels need %d px, the plot starts at %g", c, natural[c], area[c].origin.x);
    }
  g_assert_cmpint (natural[0], >, natural[1] + 10);
  g_assert_cmpint (tach_chart_get_gutter (charts[0]), ==, natural[0]);
  g_assert_cmpint (tach_chart_get_gutter (charts[1]), ==, natural[0]);
  g_assert_cmpfloat (area[0].origin.x, ==, area[1].origin.x);
  g_assert_cmpfloat (area[0].size.width, ==, area[1].size.width);

  g_assert_true (tach_window_export_charts (fixture->window, path, &error));
  g_assert_no_error (error);
  png = gdk_texture_new_from_filename (path, &error);
  g_assert_no_error (error);
  g_assert_cmpint (plot_left_edge (png, 0, 420, 60), <, 1200);
  g_assert_cmpint (plot_left_edge (png, 0, 420, 60), ==, plot_left_edge (png, 420, 840, 60));
}
