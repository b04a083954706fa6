/* tach-run-table.c: every run in a GtkColumnView.
 *
 * The cells are declared in tach-run-table.ui and bound to TachRunObject
 * properties, so this file only wires the model, the baseline choice and
 * the details under the table (the figures no column has room for).
 */
#include "tach-run-table.h"
#include "tach-a11y.h"
#include "tach-phase-bar.h"

#include <glib/gi18n.h>

struct _TachRunTable
{
  GtkWidget       parent_instance;

  GtkWidget      *header;
  GtkWidget      *scroller;
  GtkColumnView  *column_view;
  GtkDropDown    *baseline_dropdown;
  GtkWidget      *baseline_label;
  GtkColumnViewColumn *run_column, *rate_column, *speedup_column, *generation_column;
  GtkWidget      *title;
  /* The selected run's figures that no column holds (else the newest
   * run's), and the run they are of, whose changes it follows. */
  GtkWidget      *details, *details_scroller;
  TachRunObject  *details_run;
  gboolean        compact;
  guint           compact_idle;

  GListModel     *model;
};

G_DEFINE_FINAL_TYPE (TachRunTable, tach_run_table, GTK_TYPE_WIDGET)

/* Below this width every column does not fit (about 825 px in English,
 * 905 px with a generation's column, the run's column at its 120 px):
 * 1280 px with the settings panel open (929 px) fits them. */
#define COMPACT_WIDTH 900

enum {
  PROP_0,
  PROP_MODEL,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

TachRunObject *
tach_run_table_get_baseline (TachRunTable *self)
{
  g_return_val_if_fail (TACH_IS_RUN_TABLE (self), NULL);
  return gtk_drop_down_get_selected_item (self->baseline_dropdown);
}

TachRunObject *
tach_run_table_get_selected (TachRunTable *self)
{
  GtkSelectionModel *selection;

  g_return_val_if_fail (TACH_IS_RUN_TABLE (self), NULL);
  selection = gtk_column_view_get_model (self->column_view);
  if (!GTK_IS_SINGLE_SELECTION (selection))
    return NULL;
  return gtk_single_selection_get_selected_item (GTK_SINGLE_SELECTION (selection));
}

void
tach_run_table_select (TachRunTable *self,
                       guint         position)
{
  GtkSelectionModel *selection;

  g_return_if_fail (TACH_IS_RUN_TABLE (self));
  selection = gtk_column_view_get_model (self->column_view);
  if (GTK_IS_SINGLE_SELECTION (selection))
    gtk_single_selection_set_selected (GTK_SINGLE_SELECTION (selection), position);
}

void
tach_run_table_set_baseline (TachRunTable *self,
                             guint         position)
{
  g_return_if_fail (TACH_IS_RUN_TABLE (self));
  gtk_drop_down_set_selected (self->baseline_dropdown, position);
}

/* Whether a ratio of @a's and @b's steps/s means anything: the same
 * workload and task (a training step and a generated token are not the
 * same work, nor are two workloads' steps). */
static gboolean
same_work (TachRunObject *a,
           TachRunObject *b)
{
  const TachConfig *ca = tach_run_get_config (tach_run_object_get_run (a));
  const TachConfig *cb = tach_run_get_config (tach_run_object_get_run (b));

  return ca->workload == cb->workload && ca->task == cb->task;
}

/* The run whose details show: the one selected, else the newest. */
static TachRunObject *
details_run (TachRunTable *self)
{
  TachRunObject *run = tach_run_table_get_selected (self);
  guint n = self->model != NULL ? g_list_model_get_n_items (self->model) : 0;

  if (run != NULL || n == 0)
    return run != NULL ? g_object_ref (run) : NULL;
  return g_list_model_get_item (self->model, n - 1);
}

static void
show_details (TachRunTable *self)
{
  g_autofree char *title = NULL;
  g_autofree char *text = NULL;

  if (self->details_run != NULL)
    g_object_get (self->details_run, "title", &title, "details-text", &text, NULL);
  /* A run with no such figures (one not yet measured) shows none. */
  if (text == NULL || text[0] == '\0')
    {
      gtk_widget_set_visible (self->details_scroller, FALSE);
      return;
    }
  {
    g_autofree char *markup = g_markup_printf_escaped ("<b>%s</b>\n%s", title, text);

    gtk_label_set_markup (GTK_LABEL (self->details), markup);
  }
  gtk_widget_set_visible (self->details_scroller, TRUE);
}

static void
follow_details (TachRunTable *self)
{
  g_autoptr(TachRunObject) run = details_run (self);

  if (run != self->details_run)
    {
      if (self->details_run != NULL)
        g_signal_handlers_disconnect_by_func (self->details_run, show_details, self);
      g_set_object (&self->details_run, run);
      if (run != NULL)
        g_signal_connect_swapped (run, "notify::details-text", G_CALLBACK (show_details), self);
    }
  show_details (self);
}

void
tach_run_table_update_speedups (TachRunTable *self)
{
  TachRunObject *baseline;
  guint n;

  g_return_if_fail (TACH_IS_RUN_TABLE (self));

  if (self->model == NULL)
    return;
  baseline = tach_run_table_get_baseline (self);
  n = g_list_model_get_n_items (self->model);
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(TachRunObject) run = g_list_model_get_item (self->model, i);

      /* Other work than the baseline's has no speed-up over it: a dash. */
      tach_run_object_set_baseline (run, baseline != NULL && same_work (run, baseline)
                                         ? baseline : NULL);
    }
}

static void update_columns (TachRunTable *self);

/* Whether the table holds a generation, whose prefill and decoding have a
 * column (training runs alone keep the table as narrow as before). */
static gboolean
has_generation (TachRunTable *self)
{
  guint n = self->model != NULL ? g_list_model_get_n_items (self->model) : 0;

  for (guint i = 0; i < n; i++)
    {
      g_autoptr(TachRunObject) run = g_list_model_get_item (self->model, i);

      if (tach_run_get_config (tach_run_object_get_run (run))->task == TACH_TASK_GENERATE)
        return TRUE;
    }
  return FALSE;
}

static void
on_items_changed (TachRunTable *self)
{
  /* The first run becomes the baseline until the user picks another. */
  if (gtk_drop_down_get_selected (self->baseline_dropdown) == GTK_INVALID_LIST_POSITION
      && g_list_model_get_n_items (self->model) > 0)
    gtk_drop_down_set_selected (self->baseline_dropdown, 0);
  tach_run_table_update_speedups (self);
  follow_details (self);
  update_columns (self);
}

GListModel *
tach_run_table_get_model (TachRunTable *self)
{
  g_return_val_if_fail (TACH_IS_RUN_TABLE (self), NULL);
  return self->model;
}

void
tach_run_table_set_model (TachRunTable *self,
                          GListModel   *model)
{
  g_autoptr(GtkSelectionModel) selection = NULL;

  g_return_if_fail (TACH_IS_RUN_TABLE (self));

  if (self->model == model)
    return;
  if (self->model)
    g_signal_handlers_disconnect_by_data (self->model, self);
  g_set_object (&self->model, model);

  if (model)
    {
      selection = GTK_SELECTION_MODEL (gtk_single_selection_new (g_object_ref (model)));
      gtk_single_selection_set_autoselect (GTK_SINGLE_SELECTION (selection), FALSE);
      gtk_single_selection_set_can_unselect (GTK_SINGLE_SELECTION (selection), TRUE);
      gtk_single_selection_set_selected (GTK_SINGLE_SELECTION (selection), GTK_INVALID_LIST_POSITION);
      g_signal_connect_object (selection, "notify::selected-item", G_CALLBACK (follow_details),
                               self, G_CONNECT_SWAPPED);
    }
  gtk_column_view_set_model (self->column_view, selection);
  gtk_drop_down_set_model (self->baseline_dropdown, model);
  if (model)
    {
      /* Connected after the views' own handlers, so that the drop-down has
       * seen the new items before the baseline is chosen among them. */
      g_signal_connect_swapped (model, "items-changed", G_CALLBACK (on_items_changed), self);
      on_items_changed (self);
    }
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MODEL]);
}

static void
tach_run_table_dispose (GObject *object)
{
  TachRunTable *self = TACH_RUN_TABLE (object);

  if (self->model)
    g_signal_handlers_disconnect_by_data (self->model, self);
  g_clear_object (&self->model);
  if (self->details_run != NULL)
    g_signal_handlers_disconnect_by_func (self->details_run, show_details, self);
  g_clear_object (&self->details_run);
  g_clear_handle_id (&self->compact_idle, g_source_remove);
  gtk_widget_dispose_template (GTK_WIDGET (self), TACH_TYPE_RUN_TABLE);
  G_OBJECT_CLASS (tach_run_table_parent_class)->dispose (object);
}

static void
tach_run_table_get_property (GObject    *object,
                             guint       prop_id,
                             GValue     *value,
                             GParamSpec *pspec)
{
  TachRunTable *self = TACH_RUN_TABLE (object);

  switch (prop_id)
    {
    case PROP_MODEL:
      g_value_set_object (value, self->model);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
tach_run_table_set_property (GObject      *object,
                             guint         prop_id,
                             const GValue *value,
                             GParamSpec   *pspec)
{
  TachRunTable *self = TACH_RUN_TABLE (object);

  switch (prop_id)
    {
    case PROP_MODEL:
      tach_run_table_set_model (self, g_value_get_object (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

gboolean
tach_run_table_get_compact (TachRunTable *self)
{
  g_return_val_if_fail (TACH_IS_RUN_TABLE (self), FALSE);
  return self->compact;
}

/* Narrower than its columns (a tiled half of a laptop's screen, a phone):
 * the run, its rate and its speed-up; the run's tooltip names the rest. */
static void
update_columns (TachRunTable *self)
{
  GListModel *columns = gtk_column_view_get_columns (self->column_view);
  gboolean generation = has_generation (self);

  for (guint i = 0; i < g_list_model_get_n_items (columns); i++)
    {
      g_autoptr(GtkColumnViewColumn) column = g_list_model_get_item (columns, i);

      gtk_column_view_column_set_visible (column, column == self->generation_column
                                                  ? !self->compact && generation
                                                  : !self->compact
                                                    || column == self->run_column
                                                    || column == self->rate_column
                                                    || column == self->speedup_column);
    }
  gtk_widget_set_visible (self->title, !self->compact);
}

static gboolean
apply_compact (gpointer data)
{
  TachRunTable *self = data;

  self->compact_idle = 0;
  update_columns (self);
  return G_SOURCE_REMOVE;
}

/* The scroller's page is as wide as the table is allocated.  Columns
 * shown or hidden while allocating would ask for another layout from
 * inside this one: they change at the next idle. */
static void
on_page_size (GtkAdjustment *adjustment,
              GParamSpec    *pspec,
              TachRunTable  *self)
{
  gboolean compact = gtk_adjustment_get_page_size (adjustment) < COMPACT_WIDTH;

  (void) pspec;
  if (compact != self->compact)
    {
      self->compact = compact;
      if (self->compact_idle == 0)
        self->compact_idle = g_idle_add (apply_compact, self);
    }
}

static void
tach_run_table_class_init (TachRunTableClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = tach_run_table_dispose;
  object_class->get_property = tach_run_table_get_property;
  object_class->set_property = tach_run_table_set_property;

  properties[PROP_MODEL] =
    g_param_spec_object ("model", NULL, NULL, G_TYPE_LIST_MODEL,
                         G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /* The list items' templates name these types. */
  g_type_ensure (TACH_TYPE_RUN_OBJECT);
  g_type_ensure (TACH_TYPE_PHASE_BAR);

  gtk_widget_class_set_template_from_resource (widget_class, "/io/github/tach/Tach/ui/tach-run-table.ui");
  gtk_widget_class_bind_template_child (widget_class, TachRunTable, header);
  gtk_widget_class_bind_template_child (widget_class, TachRunTable, scroller);
  gtk_widget_class_bind_template_child (widget_class, TachRunTable, column_view);
  gtk_widget_class_bind_template_child (widget_class, TachRunTable, baseline_dropdown);
  gtk_widget_class_bind_template_child (widget_class, TachRunTable, baseline_label);
  gtk_widget_class_bind_template_child (widget_class, TachRunTable, title);
  gtk_widget_class_bind_template_child (widget_class, TachRunTable, details);
  gtk_widget_class_bind_template_child (widget_class, TachRunTable, details_scroller);
  gtk_widget_class_bind_template_child (widget_class, TachRunTable, run_column);
  gtk_widget_class_bind_template_child (widget_class, TachRunTable, rate_column);
  gtk_widget_class_bind_template_child (widget_class, TachRunTable, speedup_column);
  gtk_widget_class_bind_template_child (widget_class, TachRunTable, generation_column);
  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BOX_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "tach-run-table");
}

static void
tach_run_table_init (TachRunTable *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  tach_a11y_label_by (GTK_WIDGET (self->baseline_dropdown), self->baseline_label);
  /* The group is named; the label inside reads as its own text. */
  tach_a11y_set_label (self->details_scroller, _("Run details"));
  gtk_orientable_set_orientation (GTK_ORIENTABLE (gtk_widget_get_layout_manager (GTK_WIDGET (self))),
                                  GTK_ORIENTATION_VERTICAL);
  g_signal_connect (gtk_scrolled_window_get_hadjustment (GTK_SCROLLED_WINDOW (self->scroller)),
                    "notify::page-size", G_CALLBACK (on_page_size), self);
  g_signal_connect_swapped (self->baseline_dropdown, "notify::selected",
                            G_CALLBACK (tach_run_table_update_speedups), self);
}
