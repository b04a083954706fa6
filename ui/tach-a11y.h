/* tach-a11y.h: what the drawn widgets tell a screen reader.
 *
 * A chart drawn with cairo has no text that assistive technologies can
 * read: each one says in its accessible description what a sighted user
 * reads off it.  GTK 4.8 takes no name from a tooltip, so the helpers here
 * also name the controls that show only an icon. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* Returns @widget's description, newly allocated, from its current data. */
typedef char *(*TachA11yDescribeFunc) (GtkWidget *widget);

void        tach_a11y_set_label        (GtkWidget            *widget,
                                        const char           *label);
void        tach_a11y_set_description  (GtkWidget            *widget,
                                        const char           *description);
/* Names @button, whose label has a mnemonic, by that label alone; call it
 * after each gtk_button_set_label(). */
void        tach_a11y_name_by_mnemonic (GtkWidget            *button);
/* The description last set by tach_a11y_set_description(), or NULL. */
const char *tach_a11y_get_description  (GtkWidget            *widget);
/* Describes @widget with @describe at the next idle: a live sweep changes
 * its figures many times a frame, and the description follows once. */
void        tach_a11y_describe_later   (GtkWidget            *widget,
                                        TachA11yDescribeFunc  describe);
/* Queues a redraw of @widget and, after it, its description. */
void        tach_a11y_queue_draw       (GtkWidget            *widget,
                                        TachA11yDescribeFunc  describe);
/* @row in a scroller of its height that scrolls it sideways where the
 * window is narrower than it (a phone's width); the focused control
 * scrolls into view. */
GtkWidget  *tach_a11y_scroll_sideways  (GtkWidget            *row);
/* An expander that shows @chart's description as text a keyboard reaches
 * and selects, following it as it changes: the chart's numbers beside
 * it, for those who cannot read them off the drawing. */
GtkWidget  *tach_a11y_figures_new      (GtkWidget            *chart);
/* Labels @widget by the visible @label (and makes @label its mnemonic
 * target where @label is a GtkLabel). */
void        tach_a11y_label_by         (GtkWidget            *widget,
                                        GtkWidget            *label);

G_END_DECLS
