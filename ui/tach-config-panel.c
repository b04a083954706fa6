/* tach-config-panel.c: the settings of the next run.
 *
 * The rows come from tach_knobs(), and every change goes through
 * tach_config_set(), so parsing, defaults and messages live in the engine
 * alone.  After each change every row is refreshed from the configuration
 * (a workload or a preset changes many knobs at once).
 */
#include "tach-config-panel.h"
#include "tach-knob-mark.h"
#include "tach-value-factory.h"

#include <glib/gi18n.h>
#include <string.h>

struct _TachConfigPanel
{
  GtkWidget             parent_instance;

  GtkWidget            *scroller;
  AdwPreferencesGroup  *workload_group;
  AdwPreferencesGroup  *mode_group;
  AdwPreferencesGroup  *run_group;
  AdwPreferencesGroup  *model_group;
  AdwComboRow          *workload_row;
  AdwComboRow          *task_row;
  AdwComboRow          *preset_row;
  AdwComboRow          *device_row;
  GtkStringList        *preset_names;
  GtkStringList        *device_names;
  AdwActionRow         *data_row;
  GtkWidget            *data_clear_button;

  TachConfig            config;
  GHashTable           *rows;         /* knob name -> row, borrowed */
  GPtrArray            *device_ids;   /* char*, parallel to device_names */
  GPtrArray            *preset_ids;   /* char*, parallel to preset_names; [0] = NULL */
  guint                 syncing;      /* >0 while rows are set from the config */
  GtkWidget            *marked_row;   /* the row of marked_error's knob, borrowed */
  GError               *marked_error; /* why the last run could not start, with its hint */
  GtkFileChooserNative *chooser;
};

G_DEFINE_FINAL_TYPE (TachConfigPanel, tach_config_panel, GTK_TYPE_WIDGET)

enum {
  PROP_0,
  PROP_WORKLOAD,
  PROP_TASK,
  PROP_DEVICE,
  PROP_PRESET,
  PROP_BATCH,
  PROP_STEPS,
  PROP_SEED,
  PROP_DATA_FILE,
  PROP_SUMMARY,
  N_PROPS
};

enum {
  ERROR,
  N_SIGNALS
};

static GParamSpec *properties[N_PROPS];
static guint signals[N_SIGNALS];

/* The knob behind each string property. */
static const char *prop_keys[N_PROPS] = {
  [PROP_WORKLOAD] = "workload", [PROP_TASK] = "task", [PROP_DEVICE] = "device",
  [PROP_PRESET] = "preset", [PROP_BATCH] = "batch", [PROP_STEPS] = "steps",
  [PROP_SEED] = "seed", [PROP_DATA_FILE] = "data",
};

/* The row's title, from the knob table. */
static const char *
knob_title (const char *key)
{
  const TachKnobInfo *info = tach_knob_lookup (key);

  return info != NULL ? _(info->title) : key;
}

static void tach_config_panel_refresh (TachConfigPanel *self);

static char *
prop_value (TachConfigPanel *self,
            guint            prop_id)
{
  return tach_config_get (&self->config, prop_keys[prop_id]);
}

gboolean
tach_config_panel_set_knob (TachConfigPanel  *self,
                            const char       *key,
                            const char       *value,
                            GError          **error)
{
  char *old[N_PROPS] = { NULL };
  gboolean ok;

  g_return_val_if_fail (TACH_IS_CONFIG_PANEL (self), FALSE);

  for (guint p = PROP_WORKLOAD; p <= PROP_DATA_FILE; p++)
    old[p] = prop_value (self, p);

  ok = tach_config_set (&self->config, key, value, error);
  /* A change may have fixed what a run was refused for: the mark goes. */
  if (ok)
    tach_config_panel_clear_error (self);
  tach_config_panel_refresh (self);

  g_object_freeze_notify (G_OBJECT (self));
  for (guint p = PROP_WORKLOAD; p <= PROP_DATA_FILE; p++)
    {
      g_autofree char *now = prop_value (self, p);

      if (g_strcmp0 (now, old[p]) != 0)
        g_object_notify_by_pspec (G_OBJECT (self), properties[p]);
      g_free (old[p]);
      old[p] = NULL;
    }
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_SUMMARY]);
  g_object_thaw_notify (G_OBJECT (self));
  return ok;
}

/* A change made in a row: an error reaches the window, and the row goes
 * back to the configuration's value. */
static void
apply_from_row (TachConfigPanel *self,
                const char      *key,
                const char      *value)
{
  g_autoptr(GError) error = NULL;

  if (self->syncing > 0)
    return;
  if (!tach_config_panel_set_knob (self, key, value, &error))
    {
      /* The message names the command-line option; the row's title says
       * which row it is. */
      g_prefix_error (&error, "%s: ", knob_title (key));
      g_signal_emit (self, signals[ERROR], 0, error);
    }
}

static void
on_combo_selected (AdwComboRow     *row,
                   GParamSpec      *pspec,
                   TachConfigPanel *self)
{
  const char *key = g_object_get_data (G_OBJECT (row), "tach-knob");
  const TachKnobInfo *info = tach_knob_lookup (key);
  guint selected = adw_combo_row_get_selected (row);

  if (info == NULL || info->values == NULL || selected == GTK_INVALID_LIST_POSITION)
    return;
  apply_from_row (self, key, info->values[selected]);
}

static void
on_spin_changed (GtkSpinButton   *spin,
                 TachConfigPanel *self)
{
  const char *key = g_object_get_data (G_OBJECT (spin), "tach-knob");
  g_autofree char *value = g_strdup_printf ("%.0f", gtk_spin_button_get_value (spin));

  apply_from_row (self, key, value);
}

static void
on_entry_apply (AdwEntryRow     *row,
                TachConfigPanel *self)
{
  apply_from_row (self, g_object_get_data (G_OBJECT (row), "tach-knob"),
                  gtk_editable_get_text (GTK_EDITABLE (row)));
}

static void
on_preset_selected (TachConfigPanel *self)
{
  guint selected = adw_combo_row_get_selected (self->preset_row);

  /* "Custom" keeps the knobs as they are. */
  if (selected == GTK_INVALID_LIST_POSITION || selected == 0 || selected >= self->preset_ids->len)
    return;
  apply_from_row (self, "preset", g_ptr_array_index (self->preset_ids, selected));
}

static void
on_device_selected (TachConfigPanel *self)
{
  guint selected = adw_combo_row_get_selected (self->device_row);

  if (selected == GTK_INVALID_LIST_POSITION || selected >= self->device_ids->len)
    return;
  apply_from_row (self, "device", g_ptr_array_index (self->device_ids, selected));
}

/* The row shows each value's label; the selected position maps back to the
 * identifier in info->values. */
static void
setup_combo (TachConfigPanel    *self,
             AdwComboRow        *row,
             const TachKnobInfo *info)
{
  GtkStringList *list = gtk_string_list_new (NULL);

  for (guint i = 0; info->values[i] != NULL; i++)
    gtk_string_list_append (list, tach_knob_value_label (info->name, info->values[i]));
  tach_value_factory_set (row);
  adw_combo_row_set_model (row, G_LIST_MODEL (list));
  g_object_unref (list);
  g_signal_connect (row, "notify::selected", G_CALLBACK (on_combo_selected), self);
}

static GtkWidget *
create_row (TachConfigPanel    *self,
            const TachKnobInfo *info)
{
  const char *blurb = info->blurb ? _(info->blurb) : NULL;
  GtkWidget *row;

  if (info->values != NULL)
    {
      row = adw_combo_row_new ();
      adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), knob_title (info->name));
      adw_action_row_set_subtitle (ADW_ACTION_ROW (row), blurb);
      setup_combo (self, ADW_COMBO_ROW (row), info);
    }
  else if (info->kind == TACH_KNOB_KIND_INTEGER)
    {
      GtkWidget *spin = gtk_spin_button_new_with_range (0, 1e9, 1);

      row = adw_action_row_new ();
      adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), knob_title (info->name));
      adw_action_row_set_subtitle (ADW_ACTION_ROW (row), blurb);
      gtk_widget_set_valign (spin, GTK_ALIGN_CENTER);
      gtk_spin_button_set_numeric (GTK_SPIN_BUTTON (spin), TRUE);
      gtk_spin_button_set_update_policy (GTK_SPIN_BUTTON (spin), GTK_UPDATE_IF_VALID);
      gtk_widget_add_css_class (spin, "numeric");
      g_object_set_data_full (G_OBJECT (spin), "tach-knob", g_strdup (info->name), g_free);
      g_signal_connect (spin, "value-changed", G_CALLBACK (on_spin_changed), self);
      adw_action_row_add_suffix (ADW_ACTION_ROW (row), spin);
      adw_action_row_set_activatable_widget (ADW_ACTION_ROW (row), spin);
      g_object_set_data (G_OBJECT (row), "tach-spin", spin);
    }
  else
    {
      row = adw_entry_row_new ();
      adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), knob_title (info->name));
      adw_entry_row_set_show_apply_button (ADW_ENTRY_ROW (row), TRUE);
      g_signal_connect (row, "apply", G_CALLBACK (on_entry_apply), self);
    }
  gtk_accessible_update_property (GTK_ACCESSIBLE (row),
                                  GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, blurb ? blurb : "", -1);
  return row;
}

static void
tach_config_panel_build_rows (TachConfigPanel *self)
{
  const TachKnobInfo *knobs;
  guint n = 0;

  knobs = tach_knobs (&n);
  for (guint i = 0; i < n; i++)
    {
      const TachKnobInfo *info = &knobs[i];
      AdwPreferencesGroup *group;
      GtkWidget *row;

      /* The template places the set-up rows and the data file's row. */
      switch (info->id)
        {
        case TACH_KNOB_WORKLOAD:
        case TACH_KNOB_TASK:
          row = GTK_WIDGET (info->id == TACH_KNOB_WORKLOAD ? self->workload_row : self->task_row);
          adw_action_row_set_subtitle (ADW_ACTION_ROW (row), _(info->blurb));
          setup_combo (self, ADW_COMBO_ROW (row), info);
          break;
        case TACH_KNOB_PRESET:
          row = GTK_WIDGET (self->preset_row);
          break;
        case TACH_KNOB_DEVICE:
          row = GTK_WIDGET (self->device_row);
          break;
        case TACH_KNOB_DATA:
          row = GTK_WIDGET (self->data_row);
          break;
        default:
          if (info->group == TACH_KNOB_GROUP_MODE)
            group = self->mode_group;
          else if (info->group == TACH_KNOB_GROUP_RUN)
            group = self->run_group;
          else
            group = self->model_group;
          row = create_row (self, info);
          adw_preferences_group_add (group, row);
          break;
        }
      g_object_set_data_full (G_OBJECT (row), "tach-knob", g_strdup (info->name), g_free);
      g_hash_table_insert (self->rows, g_strdup (info->name), row);
    }
}

static void
tach_config_panel_fill_devices (TachConfigPanel *self)
{
  g_autoptr(GPtrArray) devices = tach_devices_list ();

  g_ptr_array_add (self->device_ids, g_strdup ("auto"));
  gtk_string_list_append (self->device_names, _("Automatic (best available)"));
  for (guint i = 0; i < devices->len; i++)
    {
      TachDeviceInfo *info = g_ptr_array_index (devices, i);
      g_autofree char *label = g_strdup_printf ("%s (%s)", info->name, info->id);

      g_ptr_array_add (self->device_ids, g_strdup (info->id));
      gtk_string_list_append (self->device_names, label);
    }
}

static void
tach_config_panel_fill_presets (TachConfigPanel *self)
{
  g_autoptr(GPtrArray) presets = tach_presets_for_workload (self->config.workload);
  guint n_old = g_list_model_get_n_items (G_LIST_MODEL (self->preset_names));
  g_autoptr(GStrvBuilder) names = g_strv_builder_new ();
  g_auto(GStrv) strv = NULL;

  g_ptr_array_set_size (self->preset_ids, 0);
  g_ptr_array_add (self->preset_ids, NULL);
  g_strv_builder_add (names, _("Custom"));
  for (guint i = 0; i < presets->len; i++)
    {
      const TachPreset *preset = g_ptr_array_index (presets, i);

      g_ptr_array_add (self->preset_ids, g_strdup (preset->name));
      g_strv_builder_add (names, preset->name);
    }
  strv = g_strv_builder_end (names);
  gtk_string_list_splice (self->preset_names, 0, n_old, (const char * const *) strv);
}

static guint
index_in (const char *const *values,
          const char        *value)
{
  for (guint i = 0; values && values[i]; i++)
    if (g_strcmp0 (values[i], value) == 0)
      return i;
  return GTK_INVALID_LIST_POSITION;
}

/* The preset row's tooltip says what the chosen preset stands for, knob by
 * knob, with the framework code each value comes from. */
static void
set_preset_tooltip (TachConfigPanel *self,
                    GtkWidget       *row)
{
  g_autoptr(GPtrArray) presets = tach_presets_for_workload (self->config.workload);

  for (guint i = 0; i < presets->len; i++)
    {
      const TachPreset *preset = g_ptr_array_index (presets, i);
      g_autofree char *text = NULL;

      if (g_strcmp0 (preset->name, self->config.preset) != 0)
        continue;
      text = g_strdup_printf ("%s\n\n%s", _(preset->description),
                              preset->rationale != NULL ? _(preset->rationale) : "");
      gtk_widget_set_tooltip_text (row, g_strchomp (text));
      return;
    }
}

static void
refresh_row (TachConfigPanel *self,
             const char      *key,
             GtkWidget       *row)
{
  g_autofree char *value = tach_config_get (&self->config, key);
  const TachKnobInfo *info = tach_knob_lookup (key);
  const char *why = NULL;
  gboolean applies = tach_config_knob_applies (&self->config, key, &why);
  GtkSpinButton *spin = g_object_get_data (G_OBJECT (row), "tach-spin");

  gtk_widget_set_sensitive (row, applies);
  /* A marked row says what is wrong; an insensitive one why it does not
   * matter here. */
  if (tach_knob_mark_tooltip (row) != NULL)
    gtk_widget_set_tooltip_text (row, tach_knob_mark_tooltip (row));
  else
    gtk_widget_set_tooltip_text (row, applies ? NULL : why);
  if (applies && row == GTK_WIDGET (self->preset_row))
    set_preset_tooltip (self, row);

  if (row == GTK_WIDGET (self->preset_row) || row == GTK_WIDGET (self->device_row))
    {
      GPtrArray *ids = row == GTK_WIDGET (self->preset_row) ? self->preset_ids : self->device_ids;
      guint selected = 0;

      for (guint i = 0; i < ids->len; i++)
        if (g_strcmp0 (g_ptr_array_index (ids, i), value) == 0)
          selected = i;
      adw_combo_row_set_selected (ADW_COMBO_ROW (row), selected);
    }
  else if (row == GTK_WIDGET (self->data_row))
    {
      /* Without a data file: what the run will read instead, by name. */
      if (value != NULL && *value != '\0')
        adw_action_row_set_subtitle (self->data_row, value);
      else
        {
          const char *kind = NULL;
          g_autofree char *path = NULL, *text = NULL;

          tach_config_get_data_source (&self->config, &kind, &path);
          text = path != NULL ? g_strdup_printf (_("Default: %s from %s"), _(kind), path)
                              : g_strdup_printf (_("Default: %s"), _(kind));
          adw_action_row_set_subtitle (self->data_row, text);
        }
      gtk_widget_set_sensitive (self->data_clear_button, value && *value);
    }
  else if (ADW_IS_COMBO_ROW (row) && info && info->values)
    adw_combo_row_set_selected (ADW_COMBO_ROW (row), index_in (info->values, value));
  else if (spin != NULL)
    gtk_spin_button_set_value (spin, value ? g_ascii_strtod (value, NULL) : 0);
  else if (ADW_IS_ENTRY_ROW (row))
    gtk_editable_set_text (GTK_EDITABLE (row), value ? value : "");
}

static void
tach_config_panel_refresh (TachConfigPanel *self)
{
  GHashTableIter iter;
  gpointer key, row;

  self->syncing++;
  tach_config_panel_fill_presets (self);
  g_hash_table_iter_init (&iter, self->rows);
  while (g_hash_table_iter_next (&iter, &key, &row))
    refresh_row (self, key, row);
  self->syncing--;
}

static void
on_chooser_response (GtkNativeDialog *dialog,
                     int              response,
                     TachConfigPanel *self)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));
      g_autofree char *path = file ? g_file_get_path (file) : NULL;

      if (path)
        apply_from_row (self, "data", path);
    }
  g_clear_object (&self->chooser);
}

static void
choose_data_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *parameter)
{
  TachConfigPanel *self = TACH_CONFIG_PANEL (widget);
  GtkRoot *root = gtk_widget_get_root (widget);

  g_clear_object (&self->chooser);
  self->chooser = gtk_file_chooser_native_new (_("Choose a Data File"),
                                               GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                               GTK_FILE_CHOOSER_ACTION_OPEN,
                                               _("_Open"), _("_Cancel"));
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (self->chooser), TRUE);
  g_signal_connect (self->chooser, "response", G_CALLBACK (on_chooser_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (self->chooser));
}

static void
clear_data_action (GtkWidget  *widget,
                   const char *action_name,
                   GVariant   *parameter)
{
  apply_from_row (TACH_CONFIG_PANEL (widget), "data", "");
}

const TachConfig *
tach_config_panel_get_config (TachConfigPanel *self)
{
  g_return_val_if_fail (TACH_IS_CONFIG_PANEL (self), NULL);
  return &self->config;
}

char *
tach_config_panel_get_knob (TachConfigPanel *self,
                            const char      *key)
{
  g_return_val_if_fail (TACH_IS_CONFIG_PANEL (self), NULL);
  return tach_config_get (&self->config, key);
}

GtkWidget *
tach_config_panel_get_row (TachConfigPanel *self,
                           const char      *key)
{
  g_return_val_if_fail (TACH_IS_CONFIG_PANEL (self), NULL);
  return g_hash_table_lookup (self->rows, key);
}

gboolean
tach_config_panel_mark_error (TachConfigPanel *self,
                              const GError    *error)
{
  const TachErrorHint *hint = tach_error_get_hint (error);
  GtkWidget *row = NULL;

  g_return_val_if_fail (TACH_IS_CONFIG_PANEL (self), FALSE);

  tach_config_panel_clear_error (self);
  if (hint == NULL)
    return FALSE;
  row = g_hash_table_lookup (self->rows, tach_knob (hint->knob)->name);
  if (row == NULL && hint->fix_knob != TACH_KNOB_COUNT)
    row = g_hash_table_lookup (self->rows, tach_knob (hint->fix_knob)->name);
  if (row == NULL)
    return FALSE;
  self->marked_row = row;
  self->marked_error = g_error_copy (error);
  tach_knob_mark_row (row, error, "panel.apply-fix");
  /* Focus scrolls the panel to the row (its viewport follows the focus). */
  gtk_widget_grab_focus (row);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "panel.apply-fix", hint->fix_value != NULL);
  return TRUE;
}

void
tach_config_panel_clear_error (TachConfigPanel *self)
{
  g_return_if_fail (TACH_IS_CONFIG_PANEL (self));

  if (self->marked_row != NULL)
    tach_knob_unmark_row (self->marked_row);
  self->marked_row = NULL;
  g_clear_error (&self->marked_error);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "panel.apply-fix", FALSE);
}

const char *
tach_config_panel_get_marked_knob (TachConfigPanel *self)
{
  const TachErrorHint *hint;

  g_return_val_if_fail (TACH_IS_CONFIG_PANEL (self), NULL);
  hint = tach_error_get_hint (self->marked_error);
  return hint != NULL ? tach_knob (hint->knob)->name : NULL;
}

gboolean
tach_config_panel_apply_fix (TachConfigPanel  *self,
                             GError          **error)
{
  const TachErrorHint *hint;
  g_autofree char *value = NULL;
  const char *key;

  g_return_val_if_fail (TACH_IS_CONFIG_PANEL (self), FALSE);
  hint = tach_error_get_hint (self->marked_error);
  if (hint == NULL || hint->fix_value == NULL)
    return TRUE;
  /* Setting the knob clears the mark and the hint with it. */
  key = tach_knob (hint->fix_knob)->name;
  value = g_strdup (hint->fix_value);
  return tach_config_panel_set_knob (self, key, value, error);
}

static void
apply_fix_action (GtkWidget  *widget,
                  const char *action_name,
                  GVariant   *parameter)
{
  TachConfigPanel *self = TACH_CONFIG_PANEL (widget);
  g_autoptr(GError) error = NULL;

  if (!tach_config_panel_apply_fix (self, &error))
    g_signal_emit (self, signals[ERROR], 0, error);
}

static void
tach_config_panel_dispose (GObject *object)
{
  TachConfigPanel *self = TACH_CONFIG_PANEL (object);

  if (self->chooser)
    gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (self->chooser));
  g_clear_object (&self->chooser);
  gtk_widget_dispose_template (GTK_WIDGET (self), TACH_TYPE_CONFIG_PANEL);
  G_OBJECT_CLASS (tach_config_panel_parent_class)->dispose (object);
}

static void
tach_config_panel_finalize (GObject *object)
{
  TachConfigPanel *self = TACH_CONFIG_PANEL (object);

  tach_config_clear (&self->config);
  g_clear_error (&self->marked_error);
  g_clear_pointer (&self->rows, g_hash_table_unref);
  g_clear_pointer (&self->device_ids, g_ptr_array_unref);
  g_clear_pointer (&self->preset_ids, g_ptr_array_unref);
  G_OBJECT_CLASS (tach_config_panel_parent_class)->finalize (object);
}

static void
tach_config_panel_get_property (GObject    *object,
                                guint       prop_id,
                                GValue     *value,
                                GParamSpec *pspec)
{
  TachConfigPanel *self = TACH_CONFIG_PANEL (object);

  switch (prop_id)
    {
    case PROP_WORKLOAD:
    case PROP_TASK:
    case PROP_DEVICE:
    case PROP_PRESET:
    case PROP_DATA_FILE:
      g_value_take_string (value, prop_value (self, prop_id));
      break;
    case PROP_BATCH:
      g_value_set_uint (value, self->config.batch);
      break;
    case PROP_STEPS:
      g_value_set_uint (value, self->config.steps);
      break;
    case PROP_SEED:
      g_value_set_uint64 (value, self->config.seed);
      break;
    case PROP_SUMMARY:
      g_value_take_string (value,
                           g_strdup_printf ("%s · %s · %s",
                                            tach_workload_to_string (self->config.workload),
                                            self->config.preset ? self->config.preset : _("custom"),
                                            tach_knob_value_label ("device", self->config.device ? self->config.device : "auto")));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
tach_config_panel_set_property (GObject      *object,
                                guint         prop_id,
                                const GValue *value,
                                GParamSpec   *pspec)
{
  TachConfigPanel *self = TACH_CONFIG_PANEL (object);
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL;

  switch (prop_id)
    {
    case PROP_WORKLOAD:
    case PROP_TASK:
    case PROP_DEVICE:
    case PROP_PRESET:
    case PROP_DATA_FILE:
      text = g_value_dup_string (value);
      break;
    case PROP_BATCH:
    case PROP_STEPS:
      text = g_strdup_printf ("%u", g_value_get_uint (value));
      break;
    case PROP_SEED:
      text = g_strdup_printf ("%" G_GUINT64_FORMAT, g_value_get_uint64 (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      return;
    }
  if (!tach_config_panel_set_knob (self, prop_keys[prop_id], text ? text : "", &error))
    g_signal_emit (self, signals[ERROR], 0, error);
}

static void
tach_config_panel_class_init (TachConfigPanelClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  const GParamFlags flags = G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;

  object_class->dispose = tach_config_panel_dispose;
  object_class->finalize = tach_config_panel_finalize;
  object_class->get_property = tach_config_panel_get_property;
  object_class->set_property = tach_config_panel_set_property;

  properties[PROP_WORKLOAD] = g_param_spec_string ("workload", NULL, NULL, NULL, flags);
  properties[PROP_TASK] = g_param_spec_string ("task", NULL, NULL, NULL, flags);
  properties[PROP_DEVICE] = g_param_spec_string ("device", NULL, NULL, NULL, flags);
  properties[PROP_PRESET] = g_param_spec_string ("preset", NULL, NULL, NULL, flags);
  properties[PROP_BATCH] = g_param_spec_uint ("batch", NULL, NULL, 1, G_MAXINT, 1, flags);
  properties[PROP_STEPS] = g_param_spec_uint ("steps", NULL, NULL, 1, G_MAXUINT, 1, flags);
  properties[PROP_SEED] = g_param_spec_uint64 ("seed", NULL, NULL, 0, G_MAXUINT64, 0, flags);
  properties[PROP_DATA_FILE] = g_param_spec_string ("data-file", NULL, NULL, NULL, flags);
  /* "workload · preset · device", for the window's subtitle. */
  properties[PROP_SUMMARY] =
    g_param_spec_string ("summary", NULL, NULL, NULL,
                         G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /* A setting the engine refused; the panel shows the old value again. */
  signals[ERROR] = g_signal_new ("error", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                 0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_ERROR);

  gtk_widget_class_install_action (widget_class, "panel.choose-data", NULL, choose_data_action);
  gtk_widget_class_install_action (widget_class, "panel.clear-data", NULL, clear_data_action);
  /* Applies the fix of the error marked on a row (tach_config_panel_mark_error). */
  gtk_widget_class_install_action (widget_class, "panel.apply-fix", NULL, apply_fix_action);

  gtk_widget_class_set_template_from_resource (widget_class, "/io/github/tach/Tach/ui/tach-config-panel.ui");
  gtk_widget_class_bind_template_child (widget_class, TachConfigPanel, scroller);
  gtk_widget_class_bind_template_child (widget_class, TachConfigPanel, workload_group);
  gtk_widget_class_bind_template_child (widget_class, TachConfigPanel, mode_group);
  gtk_widget_class_bind_template_child (widget_class, TachConfigPanel, run_group);
  gtk_widget_class_bind_template_child (widget_class, TachConfigPanel, model_group);
  gtk_widget_class_bind_template_child (widget_class, TachConfigPanel, workload_row);
  gtk_widget_class_bind_template_child (widget_class, TachConfigPanel, task_row);
  gtk_widget_class_bind_template_child (widget_class, TachConfigPanel, preset_row);
  gtk_widget_class_bind_template_child (widget_class, TachConfigPanel, device_row);
  gtk_widget_class_bind_template_child (widget_class, TachConfigPanel, preset_names);
  gtk_widget_class_bind_template_child (widget_class, TachConfigPanel, device_names);
  gtk_widget_class_bind_template_child (widget_class, TachConfigPanel, data_row);
  gtk_widget_class_bind_template_child (widget_class, TachConfigPanel, data_clear_button);
  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "tach-config-panel");
}

static void
tach_config_panel_init (TachConfigPanel *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));

  self->rows = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  self->device_ids = g_ptr_array_new_with_free_func (g_free);
  self->preset_ids = g_ptr_array_new_with_free_func (g_free);
  tach_config_init (&self->config, TACH_WORKLOAD_BILSTM);

  tach_value_factory_set (self->preset_row);
  tach_value_factory_set (self->device_row);
  tach_config_panel_fill_devices (self);
  tach_config_panel_build_rows (self);
  g_signal_connect_swapped (self->preset_row, "notify::selected", G_CALLBACK (on_preset_selected), self);
  g_signal_connect_swapped (self->device_row, "notify::selected", G_CALLBACK (on_device_selected), self);
  tach_config_panel_refresh (self);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "panel.apply-fix", FALSE);
}
