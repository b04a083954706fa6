/* tach-chart.c: the chart widget: properties, pointer tracking, snapshot
 * (cairo through gtk_snapshot_append_cairo) and export.  The drawing itself
 * is in tach-chart-draw.c. */
#include "tach-chart.h"
#include "tach-chart-draw.h"
#include "tach-a11y.h"

#include <adwaita.h>
#include <cairo-svg.h>
#include <glib/gi18n.h>
#include <math.h>

struct _TachChart
{
  GtkWidget  parent_instance;

  GPtrArray *series;        /* TachChartSeries*, owned */
  char      *title;
  gboolean   by_time;
  gboolean   log_scale;
  double     smoothing;
  gboolean   hovering;
  double     hover_x;
  double     hover_y;
  graphene_rect_t hover_box;  /* where the last draw put the read-out; 0 wide: none */
  int        gutter;
};

G_DEFINE_FINAL_TYPE (TachChart, tach_chart, GTK_TYPE_WIDGET)

enum {
  PROP_0,
  PROP_TITLE,
  PROP_BY_TIME,
  PROP_LOG_SCALE,
  PROP_SMOOTHING,
  PROP_GUTTER,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static gboolean
chart_is_dark (void)
{
  return adw_style_manager_get_dark (adw_style_manager_get_default ());
}

/* Everything a draw of @self reads, the theme included. */
static void
chart_view_init (TachChart     *self,
                 TachChartView *view)
{
  *view = (TachChartView) {
    .series = self->series,
    .title = self->title,
    .by_time = self->by_time,
    .log_scale = self->log_scale,
    .smoothing = self->smoothing,
    .hovering = self->hovering,
    .hover_x = self->hover_x,
    .dark = chart_is_dark (),
    .font = pango_context_get_font_description (gtk_widget_get_pango_context (GTK_WIDGET (self))),
    .gutter = self->gutter,
    .hover_box = &self->hover_box,
  };
  tach_chart_get_visible_area (GTK_WIDGET (self), &view->hover_limits);
G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_style_context_get_color (gtk_widget_get_style_context (GTK_WIDGET (self)), &view->fg);
G_GNUC_END_IGNORE_DEPRECATIONS
}

void
tach_chart_draw (TachChart *self,
                 cairo_t   *cr,
                 int        width,
                 int        height)
{
  TachChartView view;

  g_return_if_fail (TACH_IS_CHART (self));

  chart_view_init (self, &view);
  graphene_rect_init (&self->hover_box, 0, 0, 0, 0);
  tach_chart_view_draw (&view, cr, width, height);
}

void
tach_chart_get_visible_area (GtkWidget *widget, graphene_rect_t *area)
{
  graphene_rect_init (area, 0, 0, gtk_widget_get_width (widget), gtk_widget_get_height (widget));
  /* What clips it: the scrolled areas above it, and the window. */
  for (GtkWidget *above = gtk_widget_get_parent (widget); above != NULL;
       above = gtk_widget_get_parent (above))
    {
      graphene_rect_t bounds;

      if ((GTK_IS_SCROLLED_WINDOW (above) || GTK_IS_VIEWPORT (above) || GTK_IS_NATIVE (above))
          && gtk_widget_compute_bounds (above, widget, &bounds)
          && !graphene_rect_intersection (area, &bounds, area))
        graphene_rect_init (area, 0, 0, 0, 0);
    }
}

gboolean
tach_chart_get_hover_box (TachChart *self, graphene_rect_t *box)
{
  g_return_val_if_fail (TACH_IS_CHART (self), FALSE);
  *box = self->hover_box;
  return self->hovering && box->size.width > 0;
}

/* Per visible line, what a sighted user reads off it: its latest value
 * and the range it moved in. */
static char *
describe (GtkWidget *widget)
{
  TachChart *self = TACH_CHART (widget);
  GString *text = g_string_new (NULL);

  for (guint i = 0; i < self->series->len; i++)
    {
      TachChartSeries *series = g_ptr_array_index (self->series, i);
      guint n_buckets = 0;
      const TachChartBucket *buckets = tach_chart_series_get_buckets (series, &n_buckets);
      g_autofree char *step = NULL;
      double lo, hi;

      if (!tach_chart_series_get_visible (series)
          || !tach_chart_series_get_y_range (series, &lo, &hi))
        continue;
      while (n_buckets > 0 && buckets[n_buckets - 1].count == 0)
        n_buckets--;
      if (n_buckets == 0)
        continue;
      step = g_strdup_printf ("%" G_GUINT64_FORMAT, buckets[n_buckets - 1].step_last);
      if (text->len > 0)
        g_string_append_c (text, '\n');
      /* Translators: a line of a live chart: its run, its latest value
       * and the step it was at, the lowest and highest values. */
      g_string_append_printf (text, _("%s: %.4g at step %s, from %.4g to %.4g"),
                              tach_chart_series_get_label (series),
                              tach_chart_bucket_mean (&buckets[n_buckets - 1]), step, lo, hi);
    }
  if (text->len == 0)
    g_string_append (text, _("No runs yet"));
  return g_string_free (text, FALSE);
}

void
tach_chart_data_changed (TachChart *self)
{
  g_return_if_fail (TACH_IS_CHART (self));
  tach_a11y_queue_draw (GTK_WIDGET (self), describe);
}

static void
tach_chart_snapshot (GtkWidget   *widget,
                     GtkSnapshot *snapshot)
{
  TachChart *self = TACH_CHART (widget);
  int width = gtk_widget_get_width (widget);
  int height = gtk_widget_get_height (widget);
  cairo_t *cr;

  cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, width, height));
  tach_chart_draw (self, cr, width, height);
  cairo_destroy (cr);
}

static void
on_motion (GtkEventControllerMotion *controller,
           double                    x,
           double                    y,
           TachChart                *self)
{
  tach_chart_set_hover (self, x, y);
}

static void
on_leave (GtkEventControllerMotion *controller,
          TachChart                *self)
{
  self->hovering = FALSE;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static void
on_dark_changed (TachChart *self)
{
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static void
tach_chart_dispose (GObject *object)
{
  TachChart *self = TACH_CHART (object);

  if (self->series != NULL)
    for (guint i = 0; i < self->series->len; i++)
      g_signal_handlers_disconnect_by_data (g_ptr_array_index (self->series, i), self);
  g_clear_pointer (&self->series, g_ptr_array_unref);
  g_clear_pointer (&self->title, g_free);
  G_OBJECT_CLASS (tach_chart_parent_class)->dispose (object);
}

static void
tach_chart_get_property (GObject    *object,
                         guint       prop_id,
                         GValue     *value,
                         GParamSpec *pspec)
{
  TachChart *self = TACH_CHART (object);

  switch (prop_id)
    {
    case PROP_TITLE:
      g_value_set_string (value, self->title);
      break;
    case PROP_BY_TIME:
      g_value_set_boolean (value, self->by_time);
      break;
    case PROP_LOG_SCALE:
      g_value_set_boolean (value, self->log_scale);
      break;
    case PROP_SMOOTHING:
      g_value_set_double (value, self->smoothing);
      break;
    case PROP_GUTTER:
      g_value_set_int (value, self->gutter);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
tach_chart_set_property (GObject      *object,
                         guint         prop_id,
                         const GValue *value,
                         GParamSpec   *pspec)
{
  TachChart *self = TACH_CHART (object);

  switch (prop_id)
    {
    case PROP_TITLE:
      tach_chart_set_title (self, g_value_get_string (value));
      break;
    case PROP_BY_TIME:
      tach_chart_set_by_time (self, g_value_get_boolean (value));
      break;
    case PROP_LOG_SCALE:
      tach_chart_set_log_scale (self, g_value_get_boolean (value));
      break;
    case PROP_SMOOTHING:
      tach_chart_set_smoothing (self, g_value_get_double (value));
      break;
    case PROP_GUTTER:
      tach_chart_set_gutter (self, g_value_get_int (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
tach_chart_class_init (TachChartClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = tach_chart_dispose;
  object_class->get_property = tach_chart_get_property;
  object_class->set_property = tach_chart_set_property;
  widget_class->snapshot = tach_chart_snapshot;

  properties[PROP_TITLE] =
    g_param_spec_string ("title", NULL, NULL, NULL,
                         G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_BY_TIME] =
    g_param_spec_boolean ("by-time", NULL, NULL, FALSE,
                          G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_LOG_SCALE] =
    g_param_spec_boolean ("log-scale", NULL, NULL, FALSE,
                          G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_SMOOTHING] =
    g_param_spec_double ("smoothing", NULL, NULL, 0.0, 0.999, 0.6,
                         G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /* The least width, in pixels, of the column of y labels left of the
   * plot: charts stacked one above the other set the same, so that their
   * plots line up (see tach_chart_align_gutters()).  0: as wide as the
   * labels. */
  properties[PROP_GUTTER] =
    g_param_spec_int ("gutter", NULL, NULL, 0, G_MAXINT, 0,
                      G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  gtk_widget_class_set_css_name (widget_class, "tach-chart");
  gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_IMG);
}

static void
tach_chart_init (TachChart *self)
{
  GtkEventController *motion = gtk_event_controller_motion_new ();

  self->series = g_ptr_array_new_with_free_func (g_object_unref);
  self->smoothing = 0.6;

  g_signal_connect (motion, "motion", G_CALLBACK (on_motion), self);
  g_signal_connect (motion, "leave", G_CALLBACK (on_leave), self);
  gtk_widget_add_controller (GTK_WIDGET (self), motion);

  g_signal_connect_object (adw_style_manager_get_default (), "notify::dark",
                           G_CALLBACK (on_dark_changed), self, G_CONNECT_SWAPPED);
}

GtkWidget *
tach_chart_new (void)
{
  return g_object_new (TACH_TYPE_CHART, NULL);
}

void
tach_chart_add_series (TachChart       *self,
                       TachChartSeries *series)
{
  g_return_if_fail (TACH_IS_CHART (self));
  g_return_if_fail (TACH_IS_CHART_SERIES (series));

  g_ptr_array_add (self->series, g_object_ref (series));
  g_signal_connect_object (series, "notify::visible",
                           G_CALLBACK (tach_chart_data_changed), self, G_CONNECT_SWAPPED);
  tach_chart_data_changed (self);
}

void
tach_chart_remove_series (TachChart       *self,
                          TachChartSeries *series)
{
  g_return_if_fail (TACH_IS_CHART (self));

  g_signal_handlers_disconnect_by_data (series, self);
  if (g_ptr_array_remove (self->series, series))
    tach_chart_data_changed (self);
}

guint
tach_chart_get_n_series (TachChart *self)
{
  g_return_val_if_fail (TACH_IS_CHART (self), 0);
  return self->series->len;
}

TachChartSeries *
tach_chart_get_series (TachChart *self,
                       guint      index)
{
  g_return_val_if_fail (TACH_IS_CHART (self), NULL);
  g_return_val_if_fail (index < self->series->len, NULL);
  return g_ptr_array_index (self->series, index);
}

const char *
tach_chart_get_title (TachChart *self)
{
  g_return_val_if_fail (TACH_IS_CHART (self), NULL);
  return self->title;
}

void
tach_chart_set_title (TachChart  *self,
                      const char *title)
{
  g_return_if_fail (TACH_IS_CHART (self));

  if (g_strcmp0 (self->title, title) != 0)
    {
      g_free (self->title);
      self->title = g_strdup (title);
      gtk_accessible_update_property (GTK_ACCESSIBLE (self),
                                      GTK_ACCESSIBLE_PROPERTY_LABEL, title, -1);
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_TITLE]);
      gtk_widget_queue_draw (GTK_WIDGET (self));
    }
}

gboolean
tach_chart_get_by_time (TachChart *self)
{
  g_return_val_if_fail (TACH_IS_CHART (self), FALSE);
  return self->by_time;
}

void
tach_chart_set_by_time (TachChart *self,
                        gboolean   by_time)
{
  g_return_if_fail (TACH_IS_CHART (self));

  by_time = !!by_time;
  if (self->by_time == by_time)
    return;
  self->by_time = by_time;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_BY_TIME]);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

gboolean
tach_chart_get_log_scale (TachChart *self)
{
  g_return_val_if_fail (TACH_IS_CHART (self), FALSE);
  return self->log_scale;
}

void
tach_chart_set_log_scale (TachChart *self,
                          gboolean   log_scale)
{
  g_return_if_fail (TACH_IS_CHART (self));

  log_scale = !!log_scale;
  if (self->log_scale == log_scale)
    return;
  self->log_scale = log_scale;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_LOG_SCALE]);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

double
tach_chart_get_smoothing (TachChart *self)
{
  g_return_val_if_fail (TACH_IS_CHART (self), 0.0);
  return self->smoothing;
}

void
tach_chart_set_smoothing (TachChart *self,
                          double     smoothing)
{
  g_return_if_fail (TACH_IS_CHART (self));

  smoothing = CLAMP (smoothing, 0.0, 0.999);
  if (self->smoothing == smoothing)
    return;
  self->smoothing = smoothing;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_SMOOTHING]);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

int
tach_chart_get_gutter (TachChart *self)
{
  g_return_val_if_fail (TACH_IS_CHART (self), 0);
  return self->gutter;
}

void
tach_chart_set_gutter (TachChart *self,
                       int        gutter)
{
  g_return_if_fail (TACH_IS_CHART (self));
  g_return_if_fail (gutter >= 0);

  if (self->gutter == gutter)
    return;
  self->gutter = gutter;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_GUTTER]);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

/* Text is measured on the kind of surface a snapshot draws on (a recording
 * surface), so with the same font options as the drawing itself. */
static cairo_t *
chart_measure_context (void)
{
  cairo_surface_t *surface = cairo_recording_surface_create (CAIRO_CONTENT_COLOR_ALPHA, NULL);
  cairo_t *cr = cairo_create (surface);

  cairo_surface_destroy (surface);
  return cr;
}

/* The width that the y labels of @self need when it is @width × @height
 * pixels, whatever its gutter property says. */
int
tach_chart_measure_gutter (TachChart *self,
                           int        width,
                           int        height)
{
  TachChartView view;
  cairo_t *cr;
  int gutter;

  g_return_val_if_fail (TACH_IS_CHART (self), 0);

  chart_view_init (self, &view);
  cr = chart_measure_context ();
  gutter = tach_chart_view_measure_gutter (&view, cr, width, height);
  cairo_destroy (cr);
  return gutter;
}

/* Where the data of @self is drawn when it is @width × @height pixels. */
void
tach_chart_get_plot_area (TachChart       *self,
                          int              width,
                          int              height,
                          graphene_rect_t *area)
{
  TachChartView view;
  cairo_t *cr;

  g_return_if_fail (TACH_IS_CHART (self));

  chart_view_init (self, &view);
  cr = chart_measure_context ();
  tach_chart_view_get_plot_area (&view, cr, width, height, area);
  cairo_destroy (cr);
}

/* Gives @charts, each at its allocated size, the gutter of the widest
 * y labels among them, so that their plots start at the same x.  Each
 * chart that this changes is redrawn. */
void
tach_chart_align_gutters (TachChart **charts,
                          guint       n_charts)
{
  int gutter = 0;

  for (guint i = 0; i < n_charts; i++)
    {
      GtkWidget *widget = GTK_WIDGET (charts[i]);

      gutter = MAX (gutter, tach_chart_measure_gutter (charts[i],
                                                       gtk_widget_get_width (widget),
                                                       gtk_widget_get_height (widget)));
    }
  for (guint i = 0; i < n_charts; i++)
    tach_chart_set_gutter (charts[i], gutter);
}

/* Shows the read-out at widget coordinates (@x, @y), as the pointer does. */
void
tach_chart_set_hover (TachChart *self,
                      double     x,
                      double     y)
{
  g_return_if_fail (TACH_IS_CHART (self));

  self->hovering = TRUE;
  self->hover_x = x;
  self->hover_y = y;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

/* Renders @charts stacked vertically, each @height pixels tall and with
 * their plots lined up, with the legend of the first one's runs under them
 * (the window shows it as buttons, which an image would lose), to a PNG or
 * (by the file name's extension) an SVG file. */
typedef struct
{
  TachChartView *views;
  guint          n_charts;
  int            height;
  TachChartView *legend;
  int            legend_h;
} ExportPaint;

/* Paints the stacked charts and the legend on the whole image: undoes the
 * margin tach_chart_write_image gives, as each chart keeps its own. */
static void
export_paint (gpointer data, cairo_t *cr, int width, int height)
{
  ExportPaint *p = data;
  int gutter = 0;

  (void) height;
  width += 16;
  cairo_translate (cr, -8, -8);
  /* The charts share the gutter of the widest labels, measured on the
   * surface they are drawn on. */
  for (guint i = 0; i < p->n_charts; i++)
    gutter = MAX (gutter, tach_chart_view_measure_gutter (&p->views[i], cr, width - 16, p->height - 16));
  for (guint i = 0; i < p->n_charts; i++)
    {
      p->views[i].gutter = gutter;
      cairo_save (cr);
      cairo_translate (cr, 0, i * p->height);
      cairo_rectangle (cr, 0, 0, width, p->height);
      cairo_clip (cr);
      cairo_translate (cr, 8, 8);
      tach_chart_view_draw (&p->views[i], cr, width - 16, p->height - 16);
      cairo_restore (cr);
    }
  if (p->legend_h > 0)
    {
      cairo_save (cr);
      cairo_translate (cr, 8, p->height * p->n_charts);
      tach_chart_view_draw_legend (p->legend, cr, width - 16);
      cairo_restore (cr);
    }
}

gboolean
tach_chart_export (TachChart  **charts,
                   guint        n_charts,
                   const char  *path,
                   int          width,
                   int          height,
                   GError     **error)
{
  cairo_surface_t *surface;
  cairo_t *cr;
  TachChartView legend;
  g_autofree TachChartView *views = NULL;
  ExportPaint paint;
  int legend_h;

  g_return_val_if_fail (n_charts > 0, FALSE);

  /* The legend's height sets the image's, so it is measured first. */
  chart_view_init (charts[0], &legend);
  surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, 1, 1);
  cr = cairo_create (surface);
  legend_h = tach_chart_view_get_legend_height (&legend, cr, width - 16);
  cairo_destroy (cr);
  cairo_surface_destroy (surface);
  if (legend_h > 0)
    legend_h += 8;

  views = g_new (TachChartView, n_charts);
  for (guint i = 0; i < n_charts; i++)
    {
      chart_view_init (charts[i], &views[i]);
      /* An export shows the data, not where the pointer happened to be. */
      views[i].hovering = FALSE;
      views[i].gutter = 0;
    }
  paint = (ExportPaint) { views, n_charts, height, &legend, legend_h };
  return tach_chart_write_image (path, width, height * n_charts + legend_h, chart_is_dark (),
                                 export_paint, &paint, error);
}
