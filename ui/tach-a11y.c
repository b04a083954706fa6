/* tach-a11y.c: the accessible names and descriptions of drawn widgets.
 *
 * Descriptions are kept on the widget too, so that an unchanged one is not
 * sent again (each update is a D-Bus signal under a screen reader) and the
 * tests can read back what was set. */
#include "tach-a11y.h"

#include <glib/gi18n.h>

#define DESCRIPTION_KEY "tach-a11y-description"
#define PENDING_KEY "tach-a11y-pending"
#define FIGURES_KEY "tach-a11y-figures"

/* After the batches drained at the default priority, before the frame's
 * redraw (GDK_PRIORITY_REDRAW): what is read is what is drawn, and a window
 * that paints every frame cannot put it off. */

void
tach_a11y_set_label (GtkWidget  *widget,
                     const char *label)
{
  g_return_if_fail (GTK_IS_WIDGET (widget));
  /* A menu button's inner button, the one that takes the focus, is
   * labelled by the menu button: GTK 4.8's AT-SPI name joins a label of
   * its own to that one ("Main Menu Main Menu"). */
  gtk_accessible_update_property (GTK_ACCESSIBLE (widget), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  label != NULL ? label : "", -1);
}

void
tach_a11y_name_by_mnemonic (GtkWidget *button)
{
  g_return_if_fail (GTK_IS_BUTTON (button));
  /* GTK 4.8 names such a button by its label property, underscore and
   * all, followed by the name of the mnemonic label that labels it
   * ("_Explain Explain"): the label alone says it once. */
  if (gtk_button_get_use_underline (GTK_BUTTON (button)))
    gtk_accessible_reset_property (GTK_ACCESSIBLE (button), GTK_ACCESSIBLE_PROPERTY_LABEL);
}

void
tach_a11y_set_description (GtkWidget  *widget,
                           const char *description)
{
  g_return_if_fail (GTK_IS_WIDGET (widget));
  if (description == NULL)
    description = "";
  if (g_strcmp0 (tach_a11y_get_description (widget), description) == 0)
    return;
  g_object_set_data_full (G_OBJECT (widget), DESCRIPTION_KEY, g_strdup (description), g_free);
  {
    GWeakRef *figures = g_object_get_data (G_OBJECT (widget), FIGURES_KEY);
    g_autoptr(GtkWidget) label = figures != NULL ? g_weak_ref_get (figures) : NULL;

    if (label != NULL)
      gtk_label_set_text (GTK_LABEL (label), description);
  }
  gtk_accessible_update_property (GTK_ACCESSIBLE (widget), GTK_ACCESSIBLE_PROPERTY_DESCRIPTION,
                                  description, -1);
}

const char *
tach_a11y_get_description (GtkWidget *widget)
{
  g_return_val_if_fail (GTK_IS_WIDGET (widget), NULL);
  return g_object_get_data (G_OBJECT (widget), DESCRIPTION_KEY);
}

typedef struct {
  GWeakRef             widget;
  TachA11yDescribeFunc describe;
} Pending;

static void
pending_free (gpointer data)
{
  Pending *pending = data;

  g_weak_ref_clear (&pending->widget);
  g_free (pending);
}

static gboolean
describe_now (gpointer data)
{
  Pending *pending = data;
  g_autoptr(GtkWidget) widget = g_weak_ref_get (&pending->widget);

  if (widget != NULL)
    {
      g_autofree char *text = pending->describe (widget);

      g_object_set_data (G_OBJECT (widget), PENDING_KEY, NULL);
      tach_a11y_set_description (widget, text);
    }
  return G_SOURCE_REMOVE;
}

void
tach_a11y_describe_later (GtkWidget            *widget,
                          TachA11yDescribeFunc  describe)
{
  Pending *pending;

  g_return_if_fail (GTK_IS_WIDGET (widget));
  if (g_object_get_data (G_OBJECT (widget), PENDING_KEY) != NULL)
    return;
  pending = g_new0 (Pending, 1);
  g_weak_ref_init (&pending->widget, widget);
  pending->describe = describe;
  g_object_set_data (G_OBJECT (widget), PENDING_KEY, GINT_TO_POINTER (1));
  g_idle_add_full (G_PRIORITY_HIGH_IDLE, describe_now, pending, pending_free);
}

void
tach_a11y_queue_draw (GtkWidget            *widget,
                      TachA11yDescribeFunc  describe)
{
  gtk_widget_queue_draw (widget);
  tach_a11y_describe_later (widget, describe);
}

GtkWidget *
tach_a11y_scroll_sideways (GtkWidget *row)
{
  GtkWidget *scroller = gtk_scrolled_window_new ();

  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (scroller), GTK_POLICY_AUTOMATIC,
                                  GTK_POLICY_NEVER);
  gtk_scrolled_window_set_propagate_natural_height (GTK_SCROLLED_WINDOW (scroller), TRUE);
  gtk_scrolled_window_set_propagate_natural_width (GTK_SCROLLED_WINDOW (scroller), TRUE);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), row);
  return scroller;
}

static void
weak_ref_free (gpointer data)
{
  g_weak_ref_clear (data);
  g_free (data);
}

GtkWidget *
tach_a11y_figures_new (GtkWidget *chart)
{
  const char *title = _("_Figures as Text");
  GtkWidget *expander = gtk_expander_new_with_mnemonic (title);
  GtkWidget *label = gtk_label_new (tach_a11y_get_description (chart));
  g_autoptr(GString) name = g_string_new (title);
  GWeakRef *figures;

  /* GTK 4.8 names an expander by nothing: its title, less the mnemonic. */
  g_string_replace (name, "_", "", 1);
  tach_a11y_set_label (expander, name->str);

  gtk_label_set_selectable (GTK_LABEL (label), TRUE);
  gtk_label_set_wrap (GTK_LABEL (label), TRUE);
  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_widget_add_css_class (label, "figures-text");
  gtk_expander_set_child (GTK_EXPANDER (expander), label);
  figures = g_new0 (GWeakRef, 1);
  g_weak_ref_init (figures, label);
  g_object_set_data_full (G_OBJECT (chart), FIGURES_KEY, figures, weak_ref_free);
  return expander;
}

void
tach_a11y_label_by (GtkWidget *widget,
                    GtkWidget *label)
{
  g_return_if_fail (GTK_IS_WIDGET (widget));
  g_return_if_fail (GTK_IS_WIDGET (label));
  gtk_accessible_update_relation (GTK_ACCESSIBLE (widget), GTK_ACCESSIBLE_RELATION_LABELLED_BY,
                                  label, NULL, -1);
  if (GTK_IS_LABEL (label))
    gtk_label_set_mnemonic_widget (GTK_LABEL (label), widget);
  /* What takes the focus in a drop-down is GTK's toggle button inside it,
   * which AT-SPI otherwise names by its class ("GtkToggleButton"): the
   * label names it too. */
  if (GTK_IS_DROP_DOWN (widget))
    for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
         child = gtk_widget_get_next_sibling (child))
      if (GTK_IS_TOGGLE_BUTTON (child))
        gtk_accessible_update_relation (GTK_ACCESSIBLE (child),
                                        GTK_ACCESSIBLE_RELATION_LABELLED_BY, label, NULL, -1);
}
