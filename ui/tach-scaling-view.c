/* tach-scaling-view.c: the Scaling view: its row (the knob to vary, its
 * values, Run Sweep, the export menu, the progress), the rounds line, a
 * toggle per preset, the chart of the grid, the exports and the class.
 * Running the sweep (its worker thread, the figures after each round, Start
 * and Stop) is tach-scaling-view-sweep.c's.
 */
#include "tach-scaling-view-private.h"
#include "tach-a11y.h"
#include "tach-chart-draw.h"

#include <string.h>

#include "tach-export-chooser.h"

#include <glib/gi18n.h>
#include <math.h>

/* The most the rounds' line takes before it scrolls: about six lines. */
#define ROUNDS_HEIGHT 120

G_DEFINE_FINAL_TYPE (TachScalingView, tach_scaling_view, GTK_TYPE_WIDGET)

enum { PROP_0, PROP_RUNNING };
static GParamSpec *running_pspec;
guint tach_scaling_view_signals[TACH_TASK_VIEW_N_SIGNALS];

gboolean
tach_scaling_view_get_running (TachScalingView *self)
{
  return self->cancellable != NULL;
}

const TachScalingGrid *
tach_scaling_view_get_grid (TachScalingView *self)
{
  return self->axis != NULL ? &self->grid : NULL;
}

TachRun *
tach_scaling_view_get_run (TachScalingView *self, guint preset, guint value)
{
  guint np = self->axis != NULL ? g_strv_length (self->grid.presets) : 0;
  guint i = value * np + preset;

  return preset < np && i < self->n_points ? self->runs[i] : NULL;
}

TachScalingChart *
tach_scaling_view_get_chart (TachScalingView *self)
{
  return self->chart;
}

void
tach_scaling_view_grid_clear (TachScalingView *self)
{
  for (guint i = 0; i < self->n_points; i++)
    g_clear_pointer (&self->runs[i], tach_run_unref);
  g_clear_pointer (&self->runs, g_free);
  self->n_points = 0;
  g_clear_pointer (&self->grid.presets, g_strfreev);
  g_clear_pointer (&self->grid.x, g_free);
  g_clear_pointer (&self->grid.rate, g_free);
  g_clear_pointer (&self->grid.rate_lo, g_free);
  g_clear_pointer (&self->grid.rate_hi, g_free);
  g_clear_pointer (&self->grid.ratio, g_free);
  g_clear_pointer (&self->grid.ratio_lo, g_free);
  g_clear_pointer (&self->grid.ratio_hi, g_free);
  g_clear_pointer (&self->grid.busy, g_free);
  g_clear_pointer (&self->grid.hidden, g_free);
  g_ptr_array_set_size (self->all_runs, 0);
  g_clear_pointer (&self->axis, tach_sweep_axis_free);
  memset (&self->grid, 0, sizeof self->grid);
}

void
tach_scaling_view_set_rounds (TachScalingView *self, guint min_rounds, double budget_s,
                              double target)
{
  self->min_rounds = MAX (min_rounds, 1);
  self->budget_s = MAX (budget_s, 0.0);
  self->target = target > 0 ? target : TACH_SWEEP_DEFAULT_TARGET;
}

void
tach_scaling_view_set_base_func (TachScalingView *self, TachScalingViewBaseFunc func,
                                 gpointer user_data)
{
  self->base_func = func;
  self->base_data = user_data;
  tach_scaling_view_refresh (self);
}

/* The knobs a sweep can vary for the workload and task: whole numbers and
 * choices that apply to them (the workload and the preset are the other
 * axes; generation has its own, kv-cache, prompt, new-tokens, that were
 * missing after a switch from training to generation). */
void
tach_scaling_view_refresh (TachScalingView *self)
{
  const TachConfig *base = self->base_func != NULL ? self->base_func (self->base_data) : NULL;
  g_autoptr(GStrvBuilder) builder = NULL;
  g_auto(GStrv) names = NULL;
  g_autofree char *chosen = NULL;
  const TachKnobInfo *knobs;
  guint n, batch = 0, kept = G_MAXUINT, count = 0;

  if (base == NULL || ((int) base->workload == self->workload && (int) base->task == self->task))
    return;
  /* Another task of the same workload keeps the knob chosen, where it
   * still applies. */
  if ((int) base->workload == self->workload)
    chosen = g_strdup (gtk_string_list_get_string (self->knobs,
                                                   gtk_drop_down_get_selected (self->knob_choice)));
  self->workload = base->workload;
  self->task = base->task;
  builder = g_strv_builder_new ();
  knobs = tach_knobs (&n);
  for (guint i = 0; i < n; i++)
    {
      const TachKnobInfo *knob = &knobs[i];

      if (knob->id == TACH_KNOB_WORKLOAD || knob->id == TACH_KNOB_PRESET
          || knob->kind == TACH_KNOB_KIND_TEXT || !tach_config_knob_applies (base, knob->name, NULL))
        continue;
      if (g_strcmp0 (knob->name, chosen) == 0)
        kept = count;
      if (g_str_equal (knob->name, "batch"))
        batch = count;
      g_strv_builder_add (builder, knob->name);
      count++;
    }
  names = g_strv_builder_end (builder);
  gtk_string_list_splice (self->knobs, 0, g_list_model_get_n_items (G_LIST_MODEL (self->knobs)),
                          (const char *const *) names);
  /* The knob chosen, else the one the report's case scales with. */
  gtk_drop_down_set_selected (self->knob_choice, kept != G_MAXUINT ? kept : batch);
}

gboolean
tach_scaling_view_set_spec (TachScalingView *self, const char *knob, const char *values)
{
  guint n;

  tach_scaling_view_refresh (self);
  n = g_list_model_get_n_items (G_LIST_MODEL (self->knobs));
  for (guint i = 0; i < n; i++)
    if (g_str_equal (gtk_string_list_get_string (self->knobs, i), knob))
      {
        gtk_drop_down_set_selected (self->knob_choice, i);
        gtk_editable_set_text (GTK_EDITABLE (self->values_entry), values);
        return TRUE;
      }
  return FALSE;
}

void
tach_scaling_view_update_state (TachScalingView *self)
{
  gboolean running = self->cancellable != NULL;

  tach_task_button_update (self->button, self->progress, running, _("_Run Sweep"), "win.scale");
  gtk_widget_set_sensitive (GTK_WIDGET (self->knob_choice), !running);
  gtk_widget_set_sensitive (GTK_WIDGET (self->values_entry), !running);
  gtk_widget_set_sensitive (GTK_WIDGET (self->export_button), !running && self->axis != NULL);
  g_object_notify_by_pspec (G_OBJECT (self), running_pspec);
}

const char *
tach_scaling_view_get_rounds_text (TachScalingView *self)
{
  return gtk_label_get_text (self->rounds_label);
}

void
tach_scaling_view_set_preset_visible (TachScalingView *self, guint preset, gboolean visible)
{
  GtkWidget *toggle = gtk_widget_get_first_child (self->toggles);

  if (self->axis == NULL || preset >= g_strv_length (self->grid.presets))
    return;
  self->grid.hidden[preset] = !visible;
  for (guint i = 0; toggle != NULL; i++, toggle = gtk_widget_get_next_sibling (toggle))
    if (i == preset)
      gtk_toggle_button_set_active (GTK_TOGGLE_BUTTON (toggle), visible);
  tach_scaling_chart_changed (self->chart);
}

static void
on_toggled (GtkToggleButton *toggle, TachScalingView *self)
{
  guint preset = GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (toggle), "tach-preset"));

  if (self->axis != NULL && preset < g_strv_length (self->grid.presets))
    {
      self->grid.hidden[preset] = !gtk_toggle_button_get_active (toggle);
      tach_scaling_chart_changed (self->chart);
    }
}

/* A toggle per preset, in its line's colour, as the run charts' legend. */
void
tach_scaling_view_fill_toggles (TachScalingView *self)
{
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (self->toggles)) != NULL)
    gtk_box_remove (GTK_BOX (self->toggles), child);
  for (guint p = 0; self->grid.presets[p] != NULL; p++)
    {
      GtkWidget *button = gtk_toggle_button_new ();
      GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
      GtkWidget *swatch = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
      g_autofree char *color = g_strdup_printf ("color-%u", p % TACH_CHART_N_COLORS);

      gtk_widget_add_css_class (swatch, "run-swatch");
      gtk_widget_add_css_class (swatch, color);
      gtk_widget_set_valign (swatch, GTK_ALIGN_CENTER);
      gtk_box_append (GTK_BOX (box), swatch);
      gtk_box_append (GTK_BOX (box), gtk_label_new (self->grid.presets[p]));
      gtk_button_set_child (GTK_BUTTON (button), box);
      gtk_widget_add_css_class (button, "flat");
      gtk_widget_add_css_class (button, "legend-button");
      gtk_widget_set_tooltip_text (button, _("Show or hide this preset in the charts"));
      tach_a11y_set_label (button, self->grid.presets[p]);
      gtk_accessible_update_property (GTK_ACCESSIBLE (button), GTK_ACCESSIBLE_PROPERTY_DESCRIPTION,
                                      _("Show or hide this preset in the charts"), -1);
      gtk_toggle_button_set_active (GTK_TOGGLE_BUTTON (button), TRUE);
      g_object_set_data (G_OBJECT (button), "tach-preset", GUINT_TO_POINTER (p));
      g_signal_connect (button, "toggled", G_CALLBACK (on_toggled), self);
      gtk_box_append (GTK_BOX (self->toggles), button);
    }
}

/* --------------------------------------------------------------- exports */

gboolean
tach_scaling_view_export_image (TachScalingView *self, const char *path, GError **error)
{
  return tach_scaling_chart_export (self->chart, path, 1000, 620, error);
}

gboolean
tach_scaling_view_export_csv (TachScalingView *self, const char *dir, GError **error)
{
  /* Every round's runs, as tach-cli sweep --csv writes them. */
  GPtrArray *runs = self->all_runs;

  if (runs->len == 0)
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_IO, _("There is no scaling sweep to export yet"));
      return FALSE;
    }
  return tach_csv_append (dir, runs, error);
}

static gboolean
export_format (GtkWidget *widget, const char *format, const char *path, GError **error)
{
  TachScalingView *self = TACH_SCALING_VIEW (widget);

  return g_str_equal (format, "csv") ? tach_scaling_view_export_csv (self, path, error)
                                     : tach_scaling_view_export_image (self, path, error);
}

static void
export_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  static TachExportChooser chooser = { NULL, NULL, "tach-scaling", NULL, export_format };

  (void) action_name;
  chooser.file_title = _("Export the Scaling Charts");
  chooser.folder_title = _("Export the Sweep to a Folder");
  chooser.error_heading = _("Cannot Export the Sweep");
  tach_export_chooser_show (widget, &chooser, g_variant_get_string (parameter, NULL));
}

/* ----------------------------------------------------------------- class */

static void
tach_scaling_view_dispose (GObject *object)
{
  TachScalingView *self = TACH_SCALING_VIEW (object);

  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  g_object_set_data (object, "tach-export-chooser", NULL);
  if (self->chart != NULL)
    tach_scaling_chart_set_grid (self->chart, NULL);
  tach_scaling_view_grid_clear (self);
  g_clear_pointer (&self->all_runs, g_ptr_array_unref);
  g_clear_pointer (&self->box, gtk_widget_unparent);
  G_OBJECT_CLASS (tach_scaling_view_parent_class)->dispose (object);
}

static void
tach_scaling_view_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  switch (prop_id)
    {
    case PROP_RUNNING:
      g_value_set_boolean (value, tach_scaling_view_get_running (TACH_SCALING_VIEW (object)));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
tach_scaling_view_class_init (TachScalingViewClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = tach_scaling_view_dispose;
  object_class->get_property = tach_scaling_view_get_property;

  /* "error" gets a heading, or NULL for a toast (points that will not run). */
  running_pspec = tach_task_view_class_install (object_class, tach_scaling_view_signals);

  gtk_widget_class_install_action (widget_class, "scaling.export", "s", export_action);
  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "tach-scaling-view");
}

static void
tach_scaling_view_init (TachScalingView *self)
{
  GtkWidget *row = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  GtkWidget *label, *rounds;

  self->workload = -1;
  self->task = -1;
  self->all_runs = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_run_unref);
  tach_scaling_view_set_rounds (self, TACH_SWEEP_DEFAULT_ROUNDS, TACH_SWEEP_DEFAULT_BUDGET_S,
                                TACH_SWEEP_DEFAULT_TARGET);
  self->box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 10);
  gtk_widget_set_parent (self->box, GTK_WIDGET (self));

  label = gtk_label_new (_("Vary"));
  gtk_widget_add_css_class (label, "heading");
  gtk_box_append (GTK_BOX (row), label);
  self->knobs = gtk_string_list_new (NULL);
  self->knob_choice = GTK_DROP_DOWN (gtk_drop_down_new (G_LIST_MODEL (self->knobs), NULL));
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->knob_choice));
  tach_a11y_label_by (GTK_WIDGET (self->knob_choice), label);
  label = gtk_label_new (_("over"));
  gtk_box_append (GTK_BOX (row), label);
  self->values_entry = GTK_ENTRY (gtk_entry_new ());
  gtk_editable_set_text (GTK_EDITABLE (self->values_entry), "64..1024x2");
  /* Its text stays readable where the row scrolls sideways. */
  gtk_editable_set_width_chars (GTK_EDITABLE (self->values_entry), 10);
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->values_entry),
                               _("Values as tach-cli sweep --vary takes them: a list (64,256), "
                                 "a geometric range (64..1024x2), a step range (10..50+10), "
                                 "or all of a choice"));
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->values_entry));
  tach_a11y_label_by (GTK_WIDGET (self->values_entry), label);
  /* GTK 4.8 gives a screen reader no tooltip: the same words. */
  gtk_accessible_update_property (GTK_ACCESSIBLE (self->values_entry),
                                  GTK_ACCESSIBLE_PROPERTY_DESCRIPTION,
                                  gtk_widget_get_tooltip_text (GTK_WIDGET (self->values_entry)), -1);
  self->button = GTK_BUTTON (gtk_button_new_with_mnemonic (_("_Run Sweep")));
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->button),
                               _("Run every preset at every value, interleaved, and plot how "
                                 "each one scales"));
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->button));

  self->export_button = GTK_MENU_BUTTON (tach_export_menu_button_new ("scaling.export", _("Export the sweep")));
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->export_button));

  self->progress = tach_task_progress_new ();
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->progress));
  gtk_box_append (GTK_BOX (self->box), tach_a11y_scroll_sideways (row));

  self->rounds_label = GTK_LABEL (gtk_label_new (NULL));
  gtk_label_set_xalign (self->rounds_label, 0);
  gtk_label_set_wrap (self->rounds_label, TRUE);
  gtk_widget_add_css_class (GTK_WIDGET (self->rounds_label), "dim-label");
  /* What stayed unresolved may take many lines (one a point): they scroll
   * past a few, instead of pushing the chart off the window. */
  rounds = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (rounds), GTK_POLICY_NEVER,
                                  GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_propagate_natural_height (GTK_SCROLLED_WINDOW (rounds), TRUE);
  gtk_scrolled_window_set_max_content_height (GTK_SCROLLED_WINDOW (rounds), ROUNDS_HEIGHT);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (rounds), GTK_WIDGET (self->rounds_label));
  gtk_widget_set_visible (rounds, FALSE);
  gtk_box_append (GTK_BOX (self->box), rounds);

  self->toggles = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 4);
  gtk_box_append (GTK_BOX (self->box), self->toggles);
  self->chart = TACH_SCALING_CHART (tach_scaling_chart_new ());
  gtk_widget_set_vexpand (GTK_WIDGET (self->chart), TRUE);
  gtk_box_append (GTK_BOX (self->box), GTK_WIDGET (self->chart));
  gtk_box_append (GTK_BOX (self->box), tach_a11y_figures_new (GTK_WIDGET (self->chart)));

  tach_scaling_view_update_state (self);
}

GtkWidget *
tach_scaling_view_new (void)
{
  return g_object_new (TACH_TYPE_SCALING_VIEW, NULL);
}
