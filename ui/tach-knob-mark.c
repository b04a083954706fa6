/* tach-knob-mark.c: settings rows marked by the error of their knob. */
#include "tach-knob-mark.h"

#include <glib/gi18n.h>

#define MARK_KEY "tach-knob-mark"

typedef struct {
  GtkWidget *icon;     /* a prefix: the warning */
  GtkWidget *button;   /* a suffix, for a fix that is a value; or NULL */
  char      *tooltip;
} Mark;

static void
mark_free (Mark *mark)
{
  g_free (mark->tooltip);
  g_free (mark);
}

char *
tach_knob_hint_describe (const TachErrorHint *hint)
{
  const TachKnobInfo *knob;

  if (hint == NULL || hint->fix_knob == TACH_KNOB_COUNT)
    return NULL;
  knob = tach_knob (hint->fix_knob);
  if (hint->fix_value == NULL)
    return g_strdup (_(knob->title));
  return g_strdup_printf ("%s → %s", _(knob->title),
                          tach_knob_value_label (knob->name, hint->fix_value));
}

static void
row_add (GtkWidget *row, GtkWidget *child, gboolean prefix)
{
  if (ADW_IS_ENTRY_ROW (row) && prefix)
    adw_entry_row_add_prefix (ADW_ENTRY_ROW (row), child);
  else if (ADW_IS_ENTRY_ROW (row))
    adw_entry_row_add_suffix (ADW_ENTRY_ROW (row), child);
  else if (prefix)
    adw_action_row_add_prefix (ADW_ACTION_ROW (row), child);
  else
    adw_action_row_add_suffix (ADW_ACTION_ROW (row), child);
}

static void
row_remove (GtkWidget *row, GtkWidget *suffix)
{
  if (ADW_IS_ENTRY_ROW (row))
    adw_entry_row_remove (ADW_ENTRY_ROW (row), suffix);
  else
    adw_action_row_remove (ADW_ACTION_ROW (row), suffix);
}

void
tach_knob_unmark_row (GtkWidget *row)
{
  Mark *mark = g_object_get_data (G_OBJECT (row), MARK_KEY);

  if (mark == NULL)
    return;
  row_remove (row, mark->icon);
  if (mark->button != NULL)
    row_remove (row, mark->button);
  gtk_widget_remove_css_class (row, "error");
  gtk_widget_set_tooltip_text (row, NULL);
  g_object_set_data (G_OBJECT (row), MARK_KEY, NULL);
}

void
tach_knob_mark_row (GtkWidget *row, const GError *error, const char *fix_action)
{
  const TachErrorHint *hint = tach_error_get_hint (error);
  g_autofree char *fix = tach_knob_hint_describe (hint);
  GtkWidget *icon;
  Mark *mark;

  g_return_if_fail (hint != NULL);
  tach_knob_unmark_row (row);

  mark = g_new0 (Mark, 1);
  mark->tooltip = fix != NULL ? g_strdup_printf ("%s\n\n%s\n%s", error->message, _("In the settings:"), fix)
                              : g_strdup (error->message);
  icon = mark->icon = gtk_image_new_from_icon_name ("dialog-warning-symbolic");
  gtk_widget_add_css_class (icon, "error");
  gtk_widget_set_tooltip_text (icon, mark->tooltip);
  gtk_accessible_update_property (GTK_ACCESSIBLE (icon), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  error->message, -1);
  row_add (row, icon, TRUE);
  /* The fix as a compact button beside the value: a check mark saying
   * "Use Global average pooling". */
  if (hint->fix_value != NULL && fix_action != NULL)
    {
      const TachKnobInfo *knob = tach_knob (hint->fix_knob);
      g_autofree char *label =
        g_strdup_printf (_("Use %s"), tach_knob_value_label (knob->name, hint->fix_value));

      mark->button = gtk_button_new_from_icon_name ("object-select-symbolic");
      gtk_widget_set_valign (mark->button, GTK_ALIGN_CENTER);
      gtk_widget_add_css_class (mark->button, "flat");
      gtk_widget_add_css_class (mark->button, "circular");
      gtk_widget_set_tooltip_text (mark->button, label);
      gtk_accessible_update_property (GTK_ACCESSIBLE (mark->button),
                                      GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
      gtk_actionable_set_action_name (GTK_ACTIONABLE (mark->button), fix_action);
      row_add (row, mark->button, FALSE);
    }
  gtk_widget_add_css_class (row, "error");
  gtk_widget_set_tooltip_text (row, mark->tooltip);
  g_object_set_data_full (G_OBJECT (row), MARK_KEY, mark, (GDestroyNotify) mark_free);
}

const char *
tach_knob_mark_tooltip (GtkWidget *row)
{
  Mark *mark = g_object_get_data (G_OBJECT (row), MARK_KEY);

  return mark != NULL ? mark->tooltip : NULL;
}
