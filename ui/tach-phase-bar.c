/* tach-phase-bar.c: a stacked bar of feed / compute / sync wait / host
 * overhead shares (and a rank's communication, packing and imbalance), small enough to sit in a table cell. */
#include "tach-phase-bar.h"
#include "tach-a11y.h"

#include <adwaita.h>
#include <glib/gi18n.h>
#include <math.h>

struct _TachPhaseBar
{
  GtkWidget parent_instance;

  double    shares[TACH_PHASE_ALL];
};

G_DEFINE_FINAL_TYPE (TachPhaseBar, tach_phase_bar, GTK_TYPE_WIDGET)

enum {
  PROP_0,
  PROP_FEED_SHARE,
  PROP_COMPUTE_SHARE,
  PROP_SYNC_SHARE,
  PROP_HOST_SHARE,
  PROP_COMM_SHARE,
  PROP_PACK_SHARE,
  PROP_IMBALANCE_SHARE,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

/* The same colours as the .phase-swatch CSS classes in style.css. */
static const char *colors_light[TACH_PHASE_ALL] = { "#e5a50a", "#3584e4", "#e01b24", "#9a9996",
                                                    "#9141ac", "#2ec27e", "#865e3c" };
static const char *colors_dark[TACH_PHASE_ALL] = { "#f8e45c", "#62a0ea", "#f66151", "#c0bfbc",
                                                   "#c061cb", "#57e389", "#b5835a" };

void
tach_phase_get_color (TachPhase  phase,
                      gboolean   dark,
                      GdkRGBA   *color)
{
  g_return_if_fail (phase < TACH_PHASE_ALL);
  gdk_rgba_parse (color, (dark ? colors_dark : colors_light)[phase]);
}

const char *
tach_phase_get_label (TachPhase phase)
{
  switch (phase)
    {
    case TACH_PHASE_FEED:
      return _("Feeding");
    case TACH_PHASE_COMPUTE:
      return _("Compute");
    case TACH_PHASE_SYNC:
      return _("Sync wait");
    case TACH_PHASE_HOST:
      return _("Host overhead");
    case TACH_PHASE_COMM:
      return _("Exposed communication");
    case TACH_PHASE_PACK:
      return _("Packing");
    case TACH_PHASE_IMBALANCE:
      return _("Imbalance");
    case TACH_PHASE_ALL:
    default:
      g_return_val_if_reached (NULL);
    }
}

static void
tach_phase_bar_measure (GtkWidget      *widget,
                        GtkOrientation  orientation,
                        int             for_size,
                        int            *minimum,
                        int            *natural,
                        int            *minimum_baseline,
                        int            *natural_baseline)
{
  if (orientation == GTK_ORIENTATION_HORIZONTAL)
    {
      *minimum = 60;
      *natural = 120;
    }
  else
    {
      *minimum = 10;
      *natural = 12;
    }
}

static void
tach_phase_bar_snapshot (GtkWidget   *widget,
                         GtkSnapshot *snapshot)
{
  TachPhaseBar *self = TACH_PHASE_BAR (widget);
  gboolean dark = adw_style_manager_get_dark (adw_style_manager_get_default ());
  double width = gtk_widget_get_width (widget);
  double height = MIN (gtk_widget_get_height (widget), 12);
  double y = (gtk_widget_get_height (widget) - height) / 2;
  double total = 0.0, x = 0.0;
  GskRoundedRect outline;

  for (guint i = 0; i < TACH_PHASE_ALL; i++)
    total += self->shares[i];

  gsk_rounded_rect_init_from_rect (&outline, &GRAPHENE_RECT_INIT (0, y, width, height), height / 2);
  gtk_snapshot_push_rounded_clip (snapshot, &outline);
  if (total <= 0.0)
    {
      GdkRGBA empty = { 0.5, 0.5, 0.5, 0.15 };

      gtk_snapshot_append_color (snapshot, &empty, &GRAPHENE_RECT_INIT (0, y, width, height));
    }
  else
    for (guint i = 0; i < TACH_PHASE_ALL; i++)
      {
        /* Rounded to whole pixels so that neighbouring phases do not
         * blend into a seam. */
        double w = round ((x + self->shares[i] / total * width)) - round (x);
        GdkRGBA color;

        tach_phase_get_color (i, dark, &color);
        gtk_snapshot_append_color (snapshot, &color, &GRAPHENE_RECT_INIT (round (x), y, w, height));
        x += self->shares[i] / total * width;
      }
  gtk_snapshot_pop (snapshot);
}

char *
tach_phase_format_shares (const double *shares,
                          guint         n_phases,
                          const char   *separator)
{
  GString *text = g_string_new (NULL);

  for (guint i = 0; i < MIN (n_phases, (guint) TACH_PHASE_ALL); i++)
    /* A rank's phases only where there are ranks. */
    if (i < TACH_PHASE_COUNT || (isfinite (shares[i]) && shares[i] > 0.0))
      g_string_append_printf (text, "%s%s: %.0f %%", i ? separator : "",
                              tach_phase_get_label (i),
                              100.0 * (isfinite (shares[i]) ? shares[i] : 0.0));
  return g_string_free (text, FALSE);
}

/* The tooltip for the pointer, the description for a screen reader: the
 * same shares. */
static void
tach_phase_bar_update_text (TachPhaseBar *self)
{
  g_autofree char *tooltip = tach_phase_format_shares (self->shares, TACH_PHASE_ALL, "\n");
  g_autofree char *description = tach_phase_format_shares (self->shares, TACH_PHASE_ALL, ", ");

  gtk_widget_set_tooltip_text (GTK_WIDGET (self), tooltip);
  tach_a11y_set_description (GTK_WIDGET (self), description);
}

void
tach_phase_bar_set_share (TachPhaseBar *self,
                          TachPhase     phase,
                          double        share)
{
  g_return_if_fail (TACH_IS_PHASE_BAR (self));
  g_return_if_fail (phase < TACH_PHASE_ALL);

  /* A phase the engine did not observe is drawn as nothing, not as NaN. */
  if (!isfinite (share) || share < 0.0)
    share = 0.0;
  if (self->shares[phase] == share)
    return;
  self->shares[phase] = share;
  tach_phase_bar_update_text (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_FEED_SHARE + phase]);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

double
tach_phase_bar_get_share (TachPhaseBar *self,
                          TachPhase     phase)
{
  g_return_val_if_fail (TACH_IS_PHASE_BAR (self), 0.0);
  g_return_val_if_fail (phase < TACH_PHASE_ALL, 0.0);
  return self->shares[phase];
}

static void
tach_phase_bar_get_property (GObject    *object,
                             guint       prop_id,
                             GValue     *value,
                             GParamSpec *pspec)
{
  TachPhaseBar *self = TACH_PHASE_BAR (object);

  if (prop_id >= PROP_FEED_SHARE && prop_id <= PROP_IMBALANCE_SHARE)
    g_value_set_double (value, self->shares[prop_id - PROP_FEED_SHARE]);
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

static void
tach_phase_bar_set_property (GObject      *object,
                             guint         prop_id,
                             const GValue *value,
                             GParamSpec   *pspec)
{
  TachPhaseBar *self = TACH_PHASE_BAR (object);

  if (prop_id >= PROP_FEED_SHARE && prop_id <= PROP_IMBALANCE_SHARE)
    tach_phase_bar_set_share (self, prop_id - PROP_FEED_SHARE, g_value_get_double (value));
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

static void
tach_phase_bar_class_init (TachPhaseBarClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  static const char *names[] = { "feed-share", "compute-share", "sync-share", "host-share",
                                 "comm-share", "pack-share", "imbalance-share" };

  object_class->get_property = tach_phase_bar_get_property;
  object_class->set_property = tach_phase_bar_set_property;
  widget_class->measure = tach_phase_bar_measure;
  widget_class->snapshot = tach_phase_bar_snapshot;

  for (guint i = 0; i < TACH_PHASE_ALL; i++)
    properties[PROP_FEED_SHARE + i] =
      g_param_spec_double (names[i], NULL, NULL, -G_MAXDOUBLE, G_MAXDOUBLE, 0.0,
                           G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  gtk_widget_class_set_css_name (widget_class, "tach-phase-bar");
  gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_IMG);
}

static void
tach_phase_bar_init (TachPhaseBar *self)
{
  tach_a11y_set_label (GTK_WIDGET (self), _("Time per step by phase"));
  g_signal_connect_object (adw_style_manager_get_default (), "notify::dark",
                           G_CALLBACK (gtk_widget_queue_draw), self, G_CONNECT_SWAPPED);
}

GtkWidget *
tach_phase_bar_new (void)
{
  return g_object_new (TACH_TYPE_PHASE_BAR, NULL);
}
