/* tach-value-factory.c: how the settings' combo rows show their values. */
#include "tach-value-factory.h"

/* The combo rows' items: libadwaita's own factory ellipsises the value as
 * soon as the subtitle wants the room, so a row showed "t…" for "Train".
 * These labels always get their whole width and the subtitle wraps; the
 * popup marks the selected item as libadwaita's does. */
static void
on_value_item_selected (AdwComboRow *row,
                        GParamSpec  *pspec,
                        GtkListItem *item)
{
  GtkWidget *check = gtk_widget_get_last_child (gtk_list_item_get_child (item));

  gtk_widget_set_opacity (check, adw_combo_row_get_selected_item (row) == gtk_list_item_get_item (item));
}

static void
setup_value_item (GtkSignalListItemFactory *factory,
                  GtkListItem              *item,
                  AdwComboRow              *row)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
  GtkWidget *label = gtk_label_new (NULL);

  gtk_label_set_xalign (GTK_LABEL (label), 0.0);
  gtk_widget_set_valign (label, GTK_ALIGN_CENTER);
  gtk_box_append (GTK_BOX (box), label);
  gtk_box_append (GTK_BOX (box), gtk_image_new_from_icon_name ("object-select-symbolic"));
  gtk_list_item_set_child (item, box);
}

static void
bind_value_item (GtkSignalListItemFactory *factory,
                 GtkListItem              *item,
                 AdwComboRow              *row)
{
  GtkWidget *box = gtk_list_item_get_child (item);
  gboolean in_popup = gtk_widget_get_ancestor (box, GTK_TYPE_POPOVER) != NULL;

  gtk_label_set_label (GTK_LABEL (gtk_widget_get_first_child (box)),
                       gtk_string_object_get_string (gtk_list_item_get_item (item)));
  gtk_widget_set_visible (gtk_widget_get_last_child (box), in_popup);
  if (in_popup)
    {
      g_signal_connect (row, "notify::selected-item", G_CALLBACK (on_value_item_selected), item);
      on_value_item_selected (row, NULL, item);
    }
}

static void
unbind_value_item (GtkSignalListItemFactory *factory,
                   GtkListItem              *item,
                   AdwComboRow              *row)
{
  g_signal_handlers_disconnect_by_func (row, on_value_item_selected, item);
}

void
tach_value_factory_set (AdwComboRow *row)
{
  g_autoptr(GtkListItemFactory) factory = gtk_signal_list_item_factory_new ();

  g_signal_connect (factory, "setup", G_CALLBACK (setup_value_item), row);
  g_signal_connect (factory, "bind", G_CALLBACK (bind_value_item), row);
  g_signal_connect (factory, "unbind", G_CALLBACK (unbind_value_item), row);
  adw_combo_row_set_factory (row, factory);
}
