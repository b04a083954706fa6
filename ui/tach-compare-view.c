/* tach-compare-view.c: horizontal bars of milliseconds per step.
 *
 * Time per step, not steps per second, is what splits into phases: a bar's
 * length is the median step time and its segments are the shares of
 * feeding, compute, sync wait and host overhead.  Speed-ups are against the
 * first run of the sweep, the preset that reproduces the reported slow case:
 * paired by round where the comparison ran in rounds (set by the window
 * after each round, with the rounds line drawn above the bars), else from
 * the two runs' intervals.
 */
#include "tach-compare-view.h"
#include "tach-phase-bar.h"
#include "tach-run-object.h"
#include "tach-chart-draw.h"
#include "tach-a11y.h"

#include <adwaita.h>
#include <glib/gi18n.h>
#include <math.h>

#define ROW_HEIGHT 52
#define TOP_TITLE 36
#define LEGEND_HEIGHT 36
#define LINE_HEIGHT 18

struct _TachCompareView
{
  GtkWidget   parent_instance;

  GListModel *model;
  GHashTable *paired;   /* TachRunObject (ref) -> TachInterval*: speed-ups paired by round */
  char       *rounds_text;  /* the rounds line, or NULL */
};

static void set_font         (GtkWidget   *widget,
                              PangoLayout *layout,
                              double       scale,
                              gboolean     bold);
static void set_rounds_width (PangoLayout *layout,
                              int          width);

/* Where the bars begin at @width (-1: any): under the title and the rounds
 * text's lines as they wrap. */
static int
top_of_bars (TachCompareView *self,
             int              width)
{
  g_autoptr(PangoLayout) layout = NULL;

  if (self->rounds_text == NULL || *self->rounds_text == '\0')
    return TOP_TITLE;
  layout = gtk_widget_create_pango_layout (GTK_WIDGET (self), self->rounds_text);
  set_font (GTK_WIDGET (self), layout, 0.85, FALSE);
  set_rounds_width (layout, width);
  return TOP_TITLE + pango_layout_get_line_count (layout) * LINE_HEIGHT;
}

G_DEFINE_FINAL_TYPE (TachCompareView, tach_compare_view, GTK_TYPE_WIDGET)

enum {
  PROP_0,
  PROP_MODEL,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

/* @layout in the widget's font at @scale, tabular figures. */
static void
set_font (GtkWidget   *widget,
          PangoLayout *layout,
          double       scale,
          gboolean     bold)
{
  g_autoptr(PangoFontDescription) desc =
    pango_font_description_copy (pango_context_get_font_description (gtk_widget_get_pango_context (widget)));
  PangoAttrList *attrs = pango_attr_list_new ();
  int size = pango_font_description_get_size (desc);

  pango_font_description_set_size (desc, (int) ((size > 0 ? size : 11 * PANGO_SCALE) * scale));
  pango_font_description_set_weight (desc, bold ? PANGO_WEIGHT_BOLD : PANGO_WEIGHT_NORMAL);
  pango_layout_set_font_description (layout, desc);
  /* Tabular figures, so that the numbers of a live sweep do not jitter. */
  pango_attr_list_insert (attrs, pango_attr_font_features_new ("tnum=1"));
  pango_layout_set_attributes (layout, attrs);
  pango_attr_list_unref (attrs);
}

/* Shared with the explain chart: the bars' text in the widget's font. */
PangoLayout *
tach_compare_layout_new (GtkWidget *widget,
                         cairo_t   *cr,
                         double     scale,
                         gboolean   bold)
{
  PangoLayout *layout = pango_cairo_create_layout (cr);

  set_font (widget, layout, scale, bold);
  return layout;
}

/* The rounds text wrapped at @width (-1: not wrapped): its lines, each a
 * sentence of the rounds or of the machine's load, longer than the view
 * where many presets ran on a busy machine (gpt's eleven). */
static void
set_rounds_width (PangoLayout *layout,
                  int          width)
{
  pango_layout_set_width (layout, width > 0 ? width * PANGO_SCALE : -1);
  pango_layout_set_wrap (layout, PANGO_WRAP_WORD_CHAR);
}

void
tach_compare_show_text (cairo_t       *cr,
                        PangoLayout   *layout,
                        const char    *text,
                        double         x,
                        double         y,
                        const GdkRGBA *color,
                        double         alpha,
                        int           *width)
{
  int w, h;

  pango_layout_set_text (layout, text, -1);
  pango_layout_get_pixel_size (layout, &w, &h);
  cairo_set_source_rgba (cr, color->red, color->green, color->blue, color->alpha * alpha);
  cairo_move_to (cr, x, y);
  pango_cairo_show_layout (cr, layout);
  if (width)
    *width = w;
}

/* Row @i's time per step (NaN where it has no rate yet) and the line of
 * figures under its name: its rate and its speed-up against the first run
 * with the interval, or its status.  Drawn, and read to a screen reader. */
static char *
row_line (TachCompareView *self,
          guint            i,
          double           first_rate,
          double          *ms)
{
  g_autoptr(TachRunObject) run = g_list_model_get_item (self->model, i);
  double rate = tach_run_object_get_rate (run);
  g_autofree char *status = NULL;
  g_autofree char *rate_text = NULL;

  *ms = isfinite (rate) && rate > 0.0 ? 1000.0 / rate : NAN;
  g_object_get (run, "status", &status, "rate-text", &rate_text, NULL);
  if (isfinite (*ms) && isfinite (first_rate) && first_rate > 0.0)
    {
      g_autoptr(TachRunObject) first = g_list_model_get_item (self->model, 0);
      TachInterval ratio;
      gboolean by_items = FALSE;
      TachVerdict verdict = tach_run_object_compare (run, first, &ratio, &by_items);
      const TachInterval *paired = g_hash_table_lookup (self->paired, run);
      g_autofree char *speedup = NULL;
      g_autofree char *busy = NULL;

      /* Paired by round where rounds ran: the figure the CLI prints. */
      if (paired != NULL && isfinite (paired->value))
        {
          ratio = *paired;
          verdict = tach_interval_verdict (&ratio, 1);
        }
      /* Measured apart on a busy machine: not resolved for the load,
       * which "within noise" would misname (the run table's words). */
      if (i > 0 && paired == NULL && verdict == TACH_VERDICT_WITHIN_NOISE)
        busy = tach_run_object_dup_busy_apart (run, first);
      if (busy != NULL)
        /* Translators: a speed-up that two runs measured apart on a busy
         * machine leave unresolved. */
        speedup = g_strdup_printf (_("~%.2f× machine busy"), ratio.value);
      else
        speedup = i == 0 ? g_strdup_printf ("%.2f×", 1.0)
                         : tach_run_object_format_speedup (verdict, &ratio, by_items);

      /* Translators: steps per second, and the speed-up against the
       * first run with its interval ("1.52× (1.40–1.65)"). */
      return g_strdup_printf (_("%s steps/s · %s"), rate_text, speedup);
    }
  return g_steal_pointer (&status);
}

/* What a sighted user reads off the bars: per run its name, its time per
 * step, its rate and speed-up with the interval, and its phases' shares. */
static char *
describe (GtkWidget *widget)
{
  TachCompareView *self = TACH_COMPARE_VIEW (widget);
  guint n = self->model ? g_list_model_get_n_items (self->model) : 0;
  GString *text = g_string_new (_("Time per step, split into phases (shorter is faster)"));
  double first_rate = NAN;

  if (self->rounds_text != NULL && *self->rounds_text != '\0')
    g_string_append_printf (text, "\n%s", self->rounds_text);
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(TachRunObject) run = g_list_model_get_item (self->model, i);
      g_autofree char *mode = NULL;
      g_autofree char *line = NULL;
      double shares[TACH_PHASE_COUNT], ms;

      if (i == 0)
        first_rate = tach_run_object_get_rate (run);
      line = row_line (self, i, first_rate, &ms);
      g_object_get (run, "mode", &mode, NULL);
      g_string_append_printf (text, "\n%s: %s", mode, line);
      if (!isfinite (ms))
        continue;
      for (guint p = 0; p < TACH_PHASE_COUNT; p++)
        shares[p] = tach_run_object_get_share (run, p);
      {
        g_autofree char *phases = tach_phase_format_shares (shares, TACH_PHASE_COUNT, ", ");

        /* Translators: a run's time per step, then its phases' shares. */
        g_string_append_printf (text, _("; %.2f ms per step (%s)"), ms, phases);
      }
      /* Generation's prefill and decoding, and the memory, in the
       * summary's words. */
      {
        g_autofree char *details = NULL;

        g_object_get (run, "details-text", &details, NULL);
        if (details != NULL && details[0] != '\0')
          g_string_append_printf (text, "\n%s", details);
      }
    }
  return g_string_free (text, FALSE);
}

/* Queued wherever the bars are: the description follows the drawing. */
static void
queue_update (TachCompareView *self)
{
  tach_a11y_queue_draw (GTK_WIDGET (self), describe);
}

void
tach_compare_view_draw (TachCompareView *self,
                        cairo_t         *cr,
                        int              width,
                        int              height)
{
  g_autoptr(PangoLayout) title = tach_compare_layout_new (GTK_WIDGET (self), cr, 1.0, TRUE);
  g_autoptr(PangoLayout) small = tach_compare_layout_new (GTK_WIDGET (self), cr, 0.85, FALSE);
  gboolean dark = adw_style_manager_get_dark (adw_style_manager_get_default ());
  guint n = self->model ? g_list_model_get_n_items (self->model) : 0;
  double max_ms = 0.0, first_rate = NAN, label_w = 120, bar_x, bar_w, x;
  int top = top_of_bars (self, width);
  GdkRGBA fg;
  int w;

G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_style_context_get_color (gtk_widget_get_style_context (GTK_WIDGET (self)), &fg);
G_GNUC_END_IGNORE_DEPRECATIONS

  tach_compare_show_text (cr, small, _("Time per step, split into phases (shorter is faster)"),
             0, 8, &fg, 0.6, NULL);
  if (top > TOP_TITLE)
    {
      set_rounds_width (small, width);
      tach_compare_show_text (cr, small, self->rounds_text, 0, 8 + LINE_HEIGHT, &fg, 0.85, NULL);
      set_rounds_width (small, -1);
    }

  for (guint i = 0; i < n; i++)
    {
      g_autoptr(TachRunObject) run = g_list_model_get_item (self->model, i);
      double rate = tach_run_object_get_rate (run);
      g_autofree char *mode = NULL;

      if (i == 0)
        first_rate = rate;
      if (isfinite (rate) && rate > 0.0)
        max_ms = MAX (max_ms, 1000.0 / rate);
      g_object_get (run, "mode", &mode, NULL);
      pango_layout_set_text (title, mode, -1);
      pango_layout_get_pixel_size (title, &w, NULL);
      label_w = MAX (label_w, w);
    }
  /* Room for the widest figures that can sit under a name. */
  {
    g_autofree char *widest = g_strdup_printf (_("%s steps/s · %s"), "00000.0 ± 0000.0",
                                               "10.00× (10.00–10.00) per item");

    pango_layout_set_text (small, widest, -1);
    pango_layout_get_pixel_size (small, &w, NULL);
    label_w = MAX (label_w, w);
  }

  bar_x = label_w + 20;
  /* Room right of the longest bar for its time, as wide as it is in the
   * language shown ("131.53 毫秒" is wider than "131.53 ms"). */
  {
    g_autofree char *widest = g_strdup_printf (_("%.2f ms"), max_ms);

    pango_layout_set_text (title, widest, -1);
    pango_layout_get_pixel_size (title, &w, NULL);
  }
  bar_w = MAX (40.0, width - bar_x - MAX (110, 8 + w + 8));
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(TachRunObject) run = g_list_model_get_item (self->model, i);
      double ms, y = top + i * ROW_HEIGHT, total = 0.0;
      g_autofree char *mode = NULL;
      g_autofree char *line = row_line (self, i, first_rate, &ms);

      g_object_get (run, "mode", &mode, NULL);
      tach_compare_show_text (cr, title, mode, 0, y + 4, &fg, 0.9, NULL);
      tach_compare_show_text (cr, small, line, 0, y + 24, &fg, 0.6, NULL);

      if (!isfinite (ms) || max_ms <= 0.0)
        {
          cairo_set_source_rgba (cr, fg.red, fg.green, fg.blue, 0.08);
          cairo_rectangle (cr, bar_x, y + 10, bar_w, 22);
          cairo_fill (cr);
          continue;
        }

      for (guint p = 0; p < TACH_PHASE_COUNT; p++)
        {
          double share = tach_run_object_get_share (run, p);
          total += isfinite (share) ? share : 0.0;
        }
      x = bar_x;
      for (guint p = 0; p < TACH_PHASE_COUNT; p++)
        {
          double share = tach_run_object_get_share (run, p);
          double seg = ms / max_ms * bar_w * (total > 0.0 && isfinite (share) ? share / total : (p == TACH_PHASE_COMPUTE));
          GdkRGBA color;

          if (seg <= 0.0)
            continue;
          tach_phase_get_color (p, dark, &color);
          gdk_cairo_set_source_rgba (cr, &color);
          cairo_rectangle (cr, round (x), y + 10, MAX (1.0, round (x + seg) - round (x)), 22);
          cairo_fill (cr);
          x += seg;
        }
      {
        g_autofree char *ms_text = g_strdup_printf (_("%.2f ms"), ms);
        tach_compare_show_text (cr, title, ms_text, x + 8, y + 11, &fg, 0.85, NULL);
      }
    }

  /* The phase legend under the bars, moved left where it would pass the
   * right edge (a narrow window: 1280 px with the settings panel). */
  x = 0;
  for (guint p = 0; p < TACH_PHASE_COUNT; p++)
    {
      pango_layout_set_text (small, tach_phase_get_label (p), -1);
      pango_layout_get_pixel_size (small, &w, NULL);
      x += 18 + w + 20;
    }
  x = MAX (0.0, MIN (bar_x, width - (x - 20)));
  for (guint p = 0; p < TACH_PHASE_COUNT && n > 0; p++)
    {
      double y = top + n * ROW_HEIGHT + 12;
      GdkRGBA color;

      tach_phase_get_color (p, dark, &color);
      gdk_cairo_set_source_rgba (cr, &color);
      cairo_rectangle (cr, x, y + 3, 12, 12);
      cairo_fill (cr);
      tach_compare_show_text (cr, small, tach_phase_get_label (p), x + 18, y, &fg, 0.75, &w);
      x += 18 + w + 20;
    }
}

static void
tach_compare_view_snapshot (GtkWidget   *widget,
                            GtkSnapshot *snapshot)
{
  int width = gtk_widget_get_width (widget);
  int height = gtk_widget_get_height (widget);
  cairo_t *cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, width, height));

  tach_compare_view_draw (TACH_COMPARE_VIEW (widget), cr, width, height);
  cairo_destroy (cr);
}

static void
tach_compare_view_measure (GtkWidget      *widget,
                           GtkOrientation  orientation,
                           int             for_size,
                           int            *minimum,
                           int            *natural,
                           int            *minimum_baseline,
                           int            *natural_baseline)
{
  TachCompareView *self = TACH_COMPARE_VIEW (widget);
  guint n = self->model ? g_list_model_get_n_items (self->model) : 0;

  /* As narrow as a phone's width less the page's margins. */
  if (orientation == GTK_ORIENTATION_HORIZONTAL)
    *minimum = *natural = 280;
  else
    *minimum = *natural = top_of_bars (self, for_size) + n * ROW_HEIGHT + LEGEND_HEIGHT;
}

/* The rounds text wraps: the narrower, the taller. */
static GtkSizeRequestMode
tach_compare_view_get_request_mode (GtkWidget *widget)
{
  (void) widget;
  return GTK_SIZE_REQUEST_HEIGHT_FOR_WIDTH;
}

static void
on_items_changed (GListModel      *model,
                  guint            position,
                  guint            removed,
                  guint            added,
                  TachCompareView *self)
{
  for (guint i = position; i < position + added; i++)
    {
      g_autoptr(TachRunObject) run = g_list_model_get_item (model, i);

      g_signal_connect_object (run, "updated", G_CALLBACK (queue_update),
                               self, G_CONNECT_SWAPPED);
      g_signal_connect_object (run, "finished", G_CALLBACK (queue_update),
                               self, G_CONNECT_SWAPPED);
    }
  gtk_widget_queue_resize (GTK_WIDGET (self));
  queue_update (self);
}

void
tach_compare_view_set_paired (TachCompareView    *self,
                              TachRunObject      *row,
                              const TachInterval *ratio)
{
  g_return_if_fail (TACH_IS_COMPARE_VIEW (self));
  if (ratio != NULL)
    g_hash_table_insert (self->paired, g_object_ref (row), g_memdup2 (ratio, sizeof *ratio));
  else
    g_hash_table_remove (self->paired, row);
  queue_update (self);
}

void
tach_compare_view_set_rounds_text (TachCompareView *self,
                                   const char      *text)
{
  g_return_if_fail (TACH_IS_COMPARE_VIEW (self));
  if (g_strcmp0 (text, self->rounds_text) == 0)
    return;
  g_free (self->rounds_text);
  self->rounds_text = g_strdup (text);
  gtk_widget_queue_resize (GTK_WIDGET (self));
  queue_update (self);
}

void
tach_compare_view_clear_rounds (TachCompareView *self)
{
  g_return_if_fail (TACH_IS_COMPARE_VIEW (self));
  g_hash_table_remove_all (self->paired);
  tach_compare_view_set_rounds_text (self, NULL);
}

const char *
tach_compare_view_get_rounds_text (TachCompareView *self)
{
  g_return_val_if_fail (TACH_IS_COMPARE_VIEW (self), NULL);
  return self->rounds_text;
}

GListModel *
tach_compare_view_get_model (TachCompareView *self)
{
  g_return_val_if_fail (TACH_IS_COMPARE_VIEW (self), NULL);
  return self->model;
}

void
tach_compare_view_set_model (TachCompareView *self,
                             GListModel      *model)
{
  g_return_if_fail (TACH_IS_COMPARE_VIEW (self));

  if (self->model == model)
    return;
  if (self->model)
    g_signal_handlers_disconnect_by_func (self->model, on_items_changed, self);
  g_set_object (&self->model, model);
  if (model)
    {
      g_signal_connect (model, "items-changed", G_CALLBACK (on_items_changed), self);
      on_items_changed (model, 0, 0, g_list_model_get_n_items (model), self);
    }
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MODEL]);
}

static void
tach_compare_view_dispose (GObject *object)
{
  TachCompareView *self = TACH_COMPARE_VIEW (object);

  if (self->model)
    g_signal_handlers_disconnect_by_func (self->model, on_items_changed, self);
  g_clear_object (&self->model);
  g_clear_pointer (&self->paired, g_hash_table_unref);
  g_clear_pointer (&self->rounds_text, g_free);
  G_OBJECT_CLASS (tach_compare_view_parent_class)->dispose (object);
}

static void
tach_compare_view_get_property (GObject    *object,
                                guint       prop_id,
                                GValue     *value,
                                GParamSpec *pspec)
{
  switch (prop_id)
    {
    case PROP_MODEL:
      g_value_set_object (value, TACH_COMPARE_VIEW (object)->model);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
tach_compare_view_set_property (GObject      *object,
                                guint         prop_id,
                                const GValue *value,
                                GParamSpec   *pspec)
{
  switch (prop_id)
    {
    case PROP_MODEL:
      tach_compare_view_set_model (TACH_COMPARE_VIEW (object), g_value_get_object (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
tach_compare_view_class_init (TachCompareViewClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = tach_compare_view_dispose;
  object_class->get_property = tach_compare_view_get_property;
  object_class->set_property = tach_compare_view_set_property;
  widget_class->snapshot = tach_compare_view_snapshot;
  widget_class->measure = tach_compare_view_measure;
  widget_class->get_request_mode = tach_compare_view_get_request_mode;

  properties[PROP_MODEL] =
    g_param_spec_object ("model", NULL, NULL, G_TYPE_LIST_MODEL,
                         G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  gtk_widget_class_set_css_name (widget_class, "tach-compare-view");
  gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_IMG);
}

static void
tach_compare_view_init (TachCompareView *self)
{
  self->paired = g_hash_table_new_full (NULL, NULL, g_object_unref, g_free);
  tach_a11y_set_label (GTK_WIDGET (self), _("Presets compared"));
  g_signal_connect_object (adw_style_manager_get_default (), "notify::dark",
                           G_CALLBACK (gtk_widget_queue_draw), self, G_CONNECT_SWAPPED);
}

GtkWidget *
tach_compare_view_new (void)
{
  return g_object_new (TACH_TYPE_COMPARE_VIEW, NULL);
}
