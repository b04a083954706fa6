/* tach-explain-chart.c: the waterfall of an explanation.
 *
 * The time axis runs from 0 to the longest running total.  A's bar and
 * B's bar start at 0; each knob's bar floats from the total before it to
 * the total after, so the bars read as a walk from A to B.  A bar is
 * stacked by phase: the phases that move the same way as the knob's share
 * are laid end to end from where the bar starts; a phase that moves the
 * other way is drawn pale, back from that end to where the bar ends.  The
 * data is prepared when the explanation is set; drawing only reads it, on
 * screen and in exports alike.
 */
#include "tach-explain-chart.h"
#include "tach-phase-bar.h"
#include "tach-compare-view.h"
#include "tach-chart.h"
#include "tach-chart-draw.h"
#include "tach-a11y.h"

#include <adwaita.h>
#include <glib/gi18n.h>
#include <math.h>

#define ROW_HEIGHT 46
#define TOP 34
#define LEGEND_HEIGHT 36
#define BAR_HEIGHT 20

/* An explanation's phases are drawn with the phase bar's colours and
 * labels, in the same order. */
G_STATIC_ASSERT ((int) TACH_EXPLAIN_PHASE_COMM == (int) TACH_PHASE_COMM
                 && (int) TACH_EXPLAIN_PHASE_IMBALANCE == (int) TACH_PHASE_IMBALANCE
                 && (int) TACH_EXPLAIN_N_PHASES == (int) TACH_PHASE_ALL);

struct _TachExplainChart
{
  GtkWidget       parent_instance;

  TachExplain    *explain;   /* borrowed */
  gboolean        provisional;  /* figures of the rounds so far, run going on */
  GArray         *bars;      /* TachExplainBar: A, knobs, B */
  GArray         *whiskers;  /* TachExplainBar: each bar's end's 95% interval, NaN none */
  double          min_ms, max_ms;  /* the time axis: min_ms <= 0 */
  gboolean        hovering;
  double          hover_x, hover_y;
  graphene_rect_t hover_box;  /* where the last snapshot put the read-out; 0 wide: none */
};

G_DEFINE_FINAL_TYPE (TachExplainChart, tach_explain_chart, GTK_TYPE_WIDGET)

static char *describe (GtkWidget *widget);

static const double *
bar_phases (TachExplainChart *self, guint i, double *step)
{
  guint n = tach_explain_get_n_knobs (self->explain);

  if (i == 0 || i == n + 1)
    {
      const TachExplainCost *cost = tach_explain_get_cost (self->explain, i != 0);

      *step = cost->step_ms;
      return cost->phase_ms;
    }
  *step = tach_explain_get_knob (self->explain, i - 1)->share_ms;
  return tach_explain_get_knob (self->explain, i - 1)->phase_ms;
}

/* Where each bar's end may lie, by its 95% interval: A's and B's step
 * times', each knob's share's from where its bar starts.  The axis takes
 * them in, so that no interval is cut off. */
static void
add_whiskers (TachExplainChart *self)
{
  guint n = tach_explain_get_n_knobs (self->explain);

  for (guint i = 0; i < self->bars->len; i++)
    {
      const TachExplainBar *bar = &g_array_index (self->bars, TachExplainBar, i);
      TachExplainBar w = { NAN, NAN };
      TachInterval ci;

      if (i == 0 || i == n + 1)
        {
          tach_explain_get_cost_ci (self->explain, i != 0, &ci);
          w.start_ms = ci.lo;
          w.end_ms = ci.hi;
        }
      else
        {
          ci = tach_explain_get_knob (self->explain, i - 1)->share_ci;
          w.start_ms = bar->start_ms + ci.lo;
          w.end_ms = bar->start_ms + ci.hi;
        }
      if (!isfinite (w.start_ms) || !isfinite (w.end_ms))
        w.start_ms = w.end_ms = NAN;
      else
        {
          self->min_ms = MIN (self->min_ms, w.start_ms);
          self->max_ms = MAX (self->max_ms, w.end_ms);
        }
      g_array_append_val (self->whiskers, w);
    }
}

void
tach_explain_chart_set_explain (TachExplainChart *self, TachExplain *explain)
{
  g_return_if_fail (TACH_IS_EXPLAIN_CHART (self));

  self->explain = explain;
  self->provisional = FALSE;
  g_array_set_size (self->bars, 0);
  g_array_set_size (self->whiskers, 0);
  self->min_ms = self->max_ms = 0;
  if (explain != NULL)
    {
      guint n = tach_explain_get_n_knobs (explain);
      double total = tach_explain_get_cost (explain, FALSE)->step_ms;
      TachExplainBar bar = { 0, total };

      g_array_append_val (self->bars, bar);
      self->max_ms = total;
      for (guint i = 0; i < n; i++)
        {
          const TachExplainKnob *knob = tach_explain_get_knob (explain, i);

          bar.start_ms = total;
          total += knob->share_ms;
          bar.end_ms = total;
          g_array_append_val (self->bars, bar);
          /* The same-way phases laid end to end can reach past the bar's
           * end (the other-way ones come back from there). */
          {
            double dir = knob->share_ms < 0 ? -1 : 1, reach = bar.start_ms;

            for (int p = 0; p < TACH_EXPLAIN_N_PHASES; p++)
              if (knob->phase_ms[p] * dir > 0)
                reach += knob->phase_ms[p];
            self->max_ms = MAX (self->max_ms, MAX (reach, MAX (bar.start_ms, bar.end_ms)));
            self->min_ms = MIN (self->min_ms, MIN (reach, bar.end_ms));
          }
        }
      bar.start_ms = 0;
      bar.end_ms = tach_explain_get_cost (explain, TRUE)->step_ms;
      g_array_append_val (self->bars, bar);
      self->max_ms = MAX (self->max_ms, bar.end_ms);
      add_whiskers (self);
    }
  gtk_widget_queue_resize (GTK_WIDGET (self));
  tach_a11y_queue_draw (GTK_WIDGET (self), describe);
}

void
tach_explain_chart_set_provisional (TachExplainChart *self, gboolean provisional)
{
  g_return_if_fail (TACH_IS_EXPLAIN_CHART (self));
  if (self->provisional == provisional)
    return;
  self->provisional = provisional;
  tach_a11y_queue_draw (GTK_WIDGET (self), describe);
}

gboolean
tach_explain_chart_get_provisional (TachExplainChart *self)
{
  return self->provisional;
}

char *
tach_explain_chart_dup_caption (TachExplainChart *self)
{
  g_autofree char *caption = NULL;
  guint rounds;

  g_return_val_if_fail (self->explain != NULL, NULL);
  /* Translators: the waterfall's caption: from configuration A to B. */
  caption = g_strdup_printf (_("Where the gap goes, from %s to %s (time per step)"),
                             tach_explain_get_label (self->explain, FALSE),
                             tach_explain_get_label (self->explain, TRUE));
  if (!self->provisional)
    return g_steal_pointer (&caption);
  rounds = tach_explain_get_rounds (self->explain);
  /* Translators: after the waterfall's caption while its rounds run: the
   * figures are those of the rounds measured so far. */
  return g_strdup_printf (ngettext ("%s · provisional: %u round so far",
                                    "%s · provisional: %u rounds so far", rounds),
                          caption, rounds);
}

gboolean
tach_explain_chart_get_whisker (TachExplainChart *self, guint i, TachExplainBar *whisker)
{
  if (i >= self->whiskers->len)
    return FALSE;
  *whisker = g_array_index (self->whiskers, TachExplainBar, i);
  return isfinite (whisker->start_ms);
}

guint
tach_explain_chart_get_n_bars (TachExplainChart *self)
{
  return self->bars->len;
}

gboolean
tach_explain_chart_get_bar (TachExplainChart *self, guint i, TachExplainBar *bar)
{
  if (i >= self->bars->len)
    return FALSE;
  *bar = g_array_index (self->bars, TachExplainBar, i);
  return TRUE;
}

char *
tach_explain_chart_dup_label (TachExplainChart *self, guint i)
{
  guint n;

  g_return_val_if_fail (self->explain != NULL && i < self->bars->len, NULL);
  n = tach_explain_get_n_knobs (self->explain);
  if (i == 0 || i == n + 1)
    /* Translators: a configuration's name and its time per step. */
    return g_strdup_printf (_("%s  %.1f ms"), tach_explain_get_label (self->explain, i != 0),
                            tach_explain_get_cost (self->explain, i != 0)->step_ms);
  {
    const TachExplainKnob *knob = tach_explain_get_knob (self->explain, i - 1);
    const char *from = tach_knob_value_label (knob->key, knob->from);
    const char *to = tach_knob_value_label (knob->key, knob->to);

    /* A share whose interval holds 0 is no finding: the bar says so, not
     * only its tooltip. */
    if (knob->verdict == TACH_VERDICT_WITHIN_NOISE)
      /* Translators: "Feeding: Host float64 -> Resident  ~-1.5 ms, within noise". */
      return g_strdup_printf (_("%s: %s -> %s  ~%+.1f ms, within noise"), knob->title, from, to,
                              knob->share_ms);
    if (isnan (knob->fraction))
      return g_strdup_printf (_("%s: %s -> %s  %+.1f ms"), knob->title, from, to, knob->share_ms);
    /* More than the whole gap, or against it: the other knobs pull the
     * other way (the tooltip and the sentence below say by how much). */
    if (knob->fraction > 1 || knob->fraction < 0)
      return g_strdup_printf (knob->fraction > 1 ? _("%s: %s -> %s  %+.1f ms (more than the gap)")
                                                 : _("%s: %s -> %s  %+.1f ms (against the gap)"),
                              knob->title, from, to, knob->share_ms);
    /* Translators: "Layout: misread -> batch-major  -44.1 ms (80%)". */
    return g_strdup_printf (_("%s: %s -> %s  %+.1f ms (%.0f%%)"), knob->title, from, to,
                            knob->share_ms, 100.0 * knob->fraction);
  }
}

char *
tach_explain_chart_dup_tooltip (TachExplainChart *self, guint i)
{
  g_autoptr(GString) out = g_string_new (NULL);
  g_autofree char *label = NULL;
  guint n;
  double lo, hi, step;
  const double *phase;

  g_return_val_if_fail (self->explain != NULL && i < self->bars->len, NULL);
  n = tach_explain_get_n_knobs (self->explain);
  label = tach_explain_chart_dup_label (self, i);
  g_string_append (out, label);
  if (i == 0 || i == n + 1)
    tach_explain_get_cost_range (self->explain, i != 0, &lo, &hi);
  else
    {
      lo = tach_explain_get_knob (self->explain, i - 1)->share_min_ms;
      hi = tach_explain_get_knob (self->explain, i - 1)->share_max_ms;
    }
  g_string_append_printf (out, "\n");
  g_string_append_printf (out, _("Rounds: %+.2f to %+.2f ms (spread ±%.2f ms)"), lo, hi,
                          (hi - lo) / 2);
  {
    TachExplainBar w;

    if (tach_explain_chart_get_whisker (self, i, &w))
      {
        const TachExplainBar *bar = &g_array_index (self->bars, TachExplainBar, i);
        double from = i == 0 || i == n + 1 ? 0 : bar->start_ms;

        g_string_append_printf (out, "\n");
        g_string_append_printf (out, _("95%% interval: %+.2f to %+.2f ms"), w.start_ms - from,
                                w.end_ms - from);
      }
  }
  phase = bar_phases (self, i, &step);
  for (int p = 0; p < TACH_EXPLAIN_N_PHASES; p++)
    if (p < TACH_EXPLAIN_N_SINGLE_PHASES || tach_explain_has_rank_phases (self->explain))
      g_string_append_printf (out, "\n%s  %+.2f ms", tach_phase_get_label ((TachPhase) p),
                              phase[p]);
  if (i > 0 && i <= n && tach_explain_get_knob (self->explain, i - 1)->changes_results)
    g_string_append_printf (out, "\n%s", _("Changes results: the losses differ, not only the speed"));
  return g_string_free (g_steal_pointer (&out), FALSE);
}

/* The caption and every bar's figures, as its tooltip gives them to the
 * pointer: a screen reader has no pointer. */
static char *
describe (GtkWidget *widget)
{
  TachExplainChart *self = TACH_EXPLAIN_CHART (widget);
  g_autofree char *caption = NULL;
  GString *text;

  if (self->explain == NULL)
    return g_strdup (_("No explanation yet"));
  caption = tach_explain_chart_dup_caption (self);
  text = g_string_new (caption);
  for (guint i = 0; i < self->bars->len; i++)
    {
      g_autofree char *tooltip = tach_explain_chart_dup_tooltip (self, i);
      g_auto(GStrv) lines = g_strsplit (tooltip, "\n", -1);
      g_autofree char *bar = g_strjoinv ("; ", lines);

      g_string_append_printf (text, "\n%s", bar);
    }
  return g_string_free (text, FALSE);
}

/* ------------------------------------------------------------------ draw */

static int
show_text (cairo_t *cr, PangoLayout *layout, const char *text, double x, double y,
           const GdkRGBA *color, double alpha)
{
  int w = 0;

  tach_compare_show_text (cr, layout, text, x, y, color, alpha, &w);
  return w;
}

static void
fill_span (cairo_t *cr, double x0, double x1, double y, double h)
{
  double a = round (MIN (x0, x1)), b = round (MAX (x0, x1));

  cairo_rectangle (cr, a, y, MAX (1.0, b - a), h);
  cairo_fill (cr);
}

void
tach_explain_chart_draw (TachExplainChart *self, cairo_t *cr, int width, int height)
{
  g_autoptr(PangoLayout) title = NULL;
  g_autoptr(PangoLayout) small = NULL;
  g_autoptr(PangoLayout) plain = NULL;
  gboolean dark = adw_style_manager_get_dark (adw_style_manager_get_default ());
  double label_w = 160, bar_x, bar_w, scale;
  guint n_bars = self->bars->len;
  GdkRGBA fg;
  int w;

  (void) height;
  if (self->explain == NULL || n_bars == 0)
    return;
  title = tach_compare_layout_new (GTK_WIDGET (self), cr, 1.0, TRUE);
  small = tach_compare_layout_new (GTK_WIDGET (self), cr, 0.85, FALSE);
  /* A and B in bold, the knobs between them plain. */
  plain = tach_compare_layout_new (GTK_WIDGET (self), cr, 1.0, FALSE);
  pango_layout_set_width (plain, -1);

G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_style_context_get_color (gtk_widget_get_style_context (GTK_WIDGET (self)), &fg);
G_GNUC_END_IGNORE_DEPRECATIONS

  {
    g_autofree char *caption = tach_explain_chart_dup_caption (self);

    show_text (cr, small, caption, 0, 8, &fg, self->provisional ? 0.9 : 0.6);
  }

  for (guint i = 0; i < n_bars; i++)
    {
      g_autofree char *label = tach_explain_chart_dup_label (self, i);

      pango_layout_set_text (title, label, -1);
      pango_layout_get_pixel_size (title, &w, NULL);
      label_w = MAX (label_w, w);
    }
  label_w = MIN (label_w, width * 0.6);
  bar_x = label_w + 20;
  bar_w = MAX (40.0, width - bar_x - 20);
  scale = self->max_ms > self->min_ms ? bar_w / (self->max_ms - self->min_ms) : 0;
  /* Bars are drawn from the axis' zero. */
  bar_x -= self->min_ms * scale;

  for (guint i = 0; i < n_bars; i++)
    {
      const TachExplainBar *bar = &g_array_index (self->bars, TachExplainBar, i);
      g_autofree char *label = tach_explain_chart_dup_label (self, i);
      double y = TOP + i * ROW_HEIGHT, by = y + 6, step, x, dir;
      const double *phase = bar_phases (self, i, &step);
      gboolean knob = i > 0 && i + 1 < n_bars;

      PangoLayout *layout = knob ? plain : title;

      pango_layout_set_width (layout, (int) (label_w * PANGO_SCALE));
      pango_layout_set_ellipsize (layout, PANGO_ELLIPSIZE_MIDDLE);
      show_text (cr, layout, label, 0, y + 6, &fg, 0.9);
      if (knob && tach_explain_get_knob (self->explain, i - 1)->changes_results)
        show_text (cr, small, _("changes results"), 0, y + 24, &fg, 0.55);

      /* Same-way phases end to end from the start, then the other-way
       * phases pale, back to where the bar ends. */
      dir = knob ? (step < 0 ? -1 : 1) : 1;
      x = bar->start_ms;
      for (int pass = 0; pass < 2; pass++)
        for (int p = 0; p < TACH_EXPLAIN_N_PHASES; p++)
          {
            double v = phase[p];
            GdkRGBA color;

            if ((pass == 0) != (v * dir > 0) || v == 0)
              continue;
            tach_phase_get_color ((TachPhase) p, dark, &color);
            if (pass == 1)
              color.alpha *= 0.35;
            gdk_cairo_set_source_rgba (cr, &color);
            fill_span (cr, bar_x + x * scale, bar_x + (x + v) * scale,
                       pass == 0 ? by : by + BAR_HEIGHT / 4.0,
                       pass == 0 ? BAR_HEIGHT : BAR_HEIGHT / 2.0);
            x += v;
          }

      /* The 95% interval of where the bar ends, across its middle. */
      {
        const TachExplainBar *ci = &g_array_index (self->whiskers, TachExplainBar, i);

        if (isfinite (ci->start_ms))
          {
            double x0 = round (bar_x + ci->start_ms * scale), x1 = round (bar_x + ci->end_ms * scale);
            double ym = by + BAR_HEIGHT / 2.0;

            cairo_set_source_rgba (cr, fg.red, fg.green, fg.blue, 0.8);
            cairo_rectangle (cr, x0, ym - 0.5, MAX (1.0, x1 - x0), 1);
            cairo_rectangle (cr, x0, ym - 4, 1, 8);
            cairo_rectangle (cr, x1 - 1, ym - 4, 1, 8);
            cairo_fill (cr);
          }
      }

      /* The bar's true end, and the step to the next bar. */
      cairo_set_source_rgba (cr, fg.red, fg.green, fg.blue, 0.7);
      cairo_rectangle (cr, round (bar_x + bar->end_ms * scale) - 0.5, by - 2, 1, BAR_HEIGHT + 4);
      cairo_fill (cr);
      if (i + 1 < n_bars)
        {
          static const double dash[] = { 3, 3 };

          cairo_save (cr);
          cairo_set_dash (cr, dash, 2, 0);
          cairo_set_line_width (cr, 1);
          cairo_set_source_rgba (cr, fg.red, fg.green, fg.blue, 0.35);
          cairo_move_to (cr, round (bar_x + bar->end_ms * scale) + 0.5, by + BAR_HEIGHT);
          cairo_line_to (cr, round (bar_x + bar->end_ms * scale) + 0.5, by + ROW_HEIGHT);
          cairo_stroke (cr);
          cairo_restore (cr);
        }
    }

  /* The zero line and the phase legend. */
  cairo_set_source_rgba (cr, fg.red, fg.green, fg.blue, 0.3);
  cairo_rectangle (cr, round (bar_x) - 1, TOP, 1, n_bars * ROW_HEIGHT);
  cairo_fill (cr);
  {
    double x = 0, y = TOP + n_bars * ROW_HEIGHT + 8;

    /* The ranks' phases only where the runs had them (under mpirun). */
    guint n_phases = tach_explain_has_rank_phases (self->explain) ? TACH_PHASE_ALL
                                                                  : TACH_PHASE_COUNT;

    for (guint p = 0; p < n_phases; p++)
      {
        GdkRGBA color;

        tach_phase_get_color ((TachPhase) p, dark, &color);
        gdk_cairo_set_source_rgba (cr, &color);
        cairo_rectangle (cr, x, y + 3, 12, 12);
        cairo_fill (cr);
        x += 18 + show_text (cr, small, tach_phase_get_label ((TachPhase) p), x + 18, y, &fg, 0.75) + 20;
      }
  }
}

int
tach_explain_chart_get_height (TachExplainChart *self)
{
  return self->bars->len == 0 ? 0 : TOP + (int) self->bars->len * ROW_HEIGHT + LEGEND_HEIGHT;
}

/* The bar at widget height @y, or -1. */
static int
row_at (TachExplainChart *self, double y)
{
  int row = y >= TOP ? (int) ((y - TOP) / ROW_HEIGHT) : -1;

  return self->explain != NULL && row >= 0 && (guint) row < self->bars->len ? row : -1;
}

/* The bar's figures beside the pointer, drawn as the Live charts draw
 * their read-out: inside the part of the chart the window shows.  A GTK
 * tooltip, a window of its own, ran past the window's right and bottom
 * edges (issue 42). */
static void
draw_hover (TachExplainChart *self, cairo_t *cr)
{
  int row = self->hovering ? row_at (self, self->hover_y) : -1;
  g_autofree char *text = row >= 0 ? tach_explain_chart_dup_tooltip (self, (guint) row) : NULL;
  g_autoptr(PangoLayout) layout = NULL;
  graphene_rect_t limits;
  GdkRGBA fg;

  graphene_rect_init (&self->hover_box, 0, 0, 0, 0);
  if (text == NULL)
    return;
  layout = tach_compare_layout_new (GTK_WIDGET (self), cr, 0.85, FALSE);
  pango_layout_set_width (layout, -1);
  pango_layout_set_text (layout, text, -1);
G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_style_context_get_color (gtk_widget_get_style_context (GTK_WIDGET (self)), &fg);
G_GNUC_END_IGNORE_DEPRECATIONS
  tach_chart_get_visible_area (GTK_WIDGET (self), &limits);
  tach_chart_draw_readout (cr, layout, &fg, adw_style_manager_get_dark (adw_style_manager_get_default ()),
                           self->hover_x, self->hover_y + 16, &limits, &self->hover_box);
}

static void
tach_explain_chart_snapshot (GtkWidget *widget, GtkSnapshot *snapshot)
{
  int width = gtk_widget_get_width (widget);
  int height = gtk_widget_get_height (widget);
  cairo_t *cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, width, height));

  tach_explain_chart_draw (TACH_EXPLAIN_CHART (widget), cr, width, height);
  draw_hover (TACH_EXPLAIN_CHART (widget), cr);
  cairo_destroy (cr);
}

void
tach_explain_chart_set_hover (TachExplainChart *self, double x, double y)
{
  g_return_if_fail (TACH_IS_EXPLAIN_CHART (self));
  self->hovering = TRUE;
  self->hover_x = x;
  self->hover_y = y;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

gboolean
tach_explain_chart_get_hover_box (TachExplainChart *self, graphene_rect_t *box)
{
  g_return_val_if_fail (TACH_IS_EXPLAIN_CHART (self), FALSE);
  *box = self->hover_box;
  return box->size.width > 0;
}

static void
on_motion (GtkEventControllerMotion *controller, double x, double y, TachExplainChart *self)
{
  (void) controller;
  tach_explain_chart_set_hover (self, x, y);
}

static void
on_leave (GtkEventControllerMotion *controller, TachExplainChart *self)
{
  (void) controller;
  self->hovering = FALSE;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static void
tach_explain_chart_measure (GtkWidget *widget, GtkOrientation orientation, int for_size,
                            int *minimum, int *natural, int *minimum_baseline,
                            int *natural_baseline)
{
  /* As narrow as a phone's width less the page's margins. */
  if (orientation == GTK_ORIENTATION_HORIZONTAL)
    *minimum = *natural = 280;
  else
    *minimum = *natural = tach_explain_chart_get_height (TACH_EXPLAIN_CHART (widget));
}

static void
paint_explain (gpointer data, cairo_t *cr, int width, int height)
{
  tach_explain_chart_draw (data, cr, width, height);
}

gboolean
tach_explain_chart_export (TachExplainChart *self, const char *path, int width, GError **error)
{
  if (self->explain == NULL)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                           _("There is no explanation to export yet"));
      return FALSE;
    }
  return tach_chart_write_image (path, width, tach_explain_chart_get_height (self) + 16,
                                 adw_style_manager_get_dark (adw_style_manager_get_default ()),
                                 paint_explain, self, error);
}

static void
tach_explain_chart_finalize (GObject *object)
{
  TachExplainChart *self = TACH_EXPLAIN_CHART (object);

  g_clear_pointer (&self->bars, g_array_unref);
  g_clear_pointer (&self->whiskers, g_array_unref);
  G_OBJECT_CLASS (tach_explain_chart_parent_class)->finalize (object);
}

static void
tach_explain_chart_class_init (TachExplainChartClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->finalize = tach_explain_chart_finalize;
  widget_class->snapshot = tach_explain_chart_snapshot;
  widget_class->measure = tach_explain_chart_measure;
  gtk_widget_class_set_css_name (widget_class, "tach-explain-chart");
  gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_IMG);
}

static void
tach_explain_chart_init (TachExplainChart *self)
{
  self->bars = g_array_new (FALSE, FALSE, sizeof (TachExplainBar));
  self->whiskers = g_array_new (FALSE, FALSE, sizeof (TachExplainBar));
  tach_a11y_set_label (GTK_WIDGET (self), _("Where the gap goes"));
  tach_a11y_describe_later (GTK_WIDGET (self), describe);
  {
    GtkEventController *motion = gtk_event_controller_motion_new ();

    g_signal_connect (motion, "motion", G_CALLBACK (on_motion), self);
    g_signal_connect (motion, "leave", G_CALLBACK (on_leave), self);
    gtk_widget_add_controller (GTK_WIDGET (self), motion);
  }
  g_signal_connect_object (adw_style_manager_get_default (), "notify::dark",
                           G_CALLBACK (gtk_widget_queue_draw), self, G_CONNECT_SWAPPED);
}

GtkWidget *
tach_explain_chart_new (void)
{
  return g_object_new (TACH_TYPE_EXPLAIN_CHART, NULL);
}
