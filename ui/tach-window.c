/* tach-window.c: the main window: template, properties, and the lifecycle
 * of runs (start, live updates, the queue of a comparison, clean stop on
 * close).  Menu actions and exports are in tach-window-actions.c.
 *
 * TachWindow is one class written in parts by concern (tach-window.c and
 * its six tach-window-*.c, over tach-window-private.h): the parts call one
 * another as one unit, which tools/folder-arrows.py lists.  */
#include "tach-window-private.h"
#include "tach-a11y.h"
#include "tach-phase-bar.h"
#include "tach-knob-mark.h"

#include <glib/gi18n.h>

G_DEFINE_FINAL_TYPE (TachWindow, tach_window, ADW_TYPE_APPLICATION_WINDOW)

enum {
  PROP_0,
  PROP_RUNNING,
  PROP_BUSY,
  PROP_BY_TIME,
  PROP_LOG_SCALE,
  PROP_SMOOTHING,
  PROP_SHOW_CONFIG,
  PROP_ACTIVE_RUN,
  PROP_NOTIFY_AFTER,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

void
tach_window_queued_run_free (TachQueuedRun *queued)
{
  tach_config_clear (&queued->config);
  g_free (queued);
}

gboolean
tach_window_get_running (TachWindow *self)
{
  g_return_val_if_fail (TACH_IS_WINDOW (self), FALSE);
  /* An explanation's runs are the engine's too: one thing at a time. */
  return (self->active_run != NULL && tach_run_object_is_active (self->active_run))
         || tach_window_ranks_running (self)
         || (self->explain_view != NULL && tach_explain_view_get_running (self->explain_view))
         || (self->scaling_view != NULL && tach_scaling_view_get_running (self->scaling_view));
}

void
tach_window_update_actions (TachWindow *self)
{
  gboolean running = tach_window_get_running (self);

  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.run", !running);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.compare", !running);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.explain", !running);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.explain-runs", !running);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.scale", !running);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.stop", running);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.clear-runs", !running);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.export-csv", self->busy_count == 0);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.export-tensorboard", self->busy_count == 0);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_RUNNING]);
}

void
tach_window_set_busy (TachWindow *self,
                      gboolean    busy)
{
  if (busy)
    self->busy_count++;
  else if (self->busy_count > 0)
    self->busy_count--;
  tach_window_update_actions (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_BUSY]);
}

static void
on_error_response (AdwMessageDialog *dialog,
                   const char       *response,
                   TachWindow       *self)
{
  g_autoptr(GError) error = NULL;

  if (g_strcmp0 (response, "apply") == 0
      && !tach_config_panel_apply_fix (self->config_panel, &error))
    tach_window_show_error (self, NULL, error);
}

/* Errors reach the user as a dialog with a @heading that says what failed
 * (a run that failed or could not start, an export) or as a toast (a
 * setting refused, a preset of a comparison skipped); either way the
 * window stays usable.  A dialog's error that concerns a knob (its hint)
 * marks that knob's row, says the row and the fix under the message, and
 * offers to apply the fix where it is a value. */
void
tach_window_show_error (TachWindow   *self,
                        const char   *heading,
                        const GError *error)
{
  if (self->closing)
    return;
  if (heading != NULL)
    {
      const TachErrorHint *hint = tach_error_get_hint (error);
      g_autofree char *fix = tach_knob_hint_describe (hint);
      g_autofree char *body = fix ? g_strdup_printf ("%s\n\n%s\n%s", error->message,
                                                     _("In the settings:"), fix)
                                  : g_strdup (error->message);
      GtkWidget *dialog = adw_message_dialog_new (GTK_WINDOW (self), heading, body);

      adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (dialog), "close", _("_Close"));
      if (tach_config_panel_mark_error (self->config_panel, error) && hint->fix_value != NULL)
        {
          const TachKnobInfo *knob = tach_knob (hint->fix_knob);
          g_autofree char *label =
            g_strdup_printf (_("Use %s"), tach_knob_value_label (knob->name, hint->fix_value));

          adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (dialog), "apply", label);
          adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "apply",
                                                      ADW_RESPONSE_SUGGESTED);
          adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "apply");
        }
      g_signal_connect_object (dialog, "response", G_CALLBACK (on_error_response), self, 0);
      gtk_window_present (GTK_WINDOW (dialog));
    }
  else
    {
      AdwToast *toast = adw_toast_new (error->message);

      adw_toast_set_timeout (toast, 8);
      adw_toast_overlay_add_toast (self->toast_overlay, toast);
    }
}

/* Runs at the frame clock's next update, before that frame's layout and
 * paint: the batches drained since the last frame are drawn once. */
static gboolean
redraw_tick (GtkWidget     *widget,
             GdkFrameClock *frame_clock,
             gpointer       user_data)
{
  TachWindow *self = TACH_WINDOW (widget);

  self->redraw_tick_id = 0;
  tach_chart_data_changed (self->rate_chart);
  tach_chart_data_changed (self->loss_chart);
  tach_run_table_update_speedups (self->run_table);
  return G_SOURCE_REMOVE;
}

static void
on_run_updated (TachWindow    *self,
                TachRunObject *run)
{
  /* A fast run drains hundreds of batches a second: each asks for the
   * next frame, and the frame clock redraws the charts once. */
  if (self->redraw_tick_id == 0)
    self->redraw_tick_id = gtk_widget_add_tick_callback (GTK_WIDGET (self), redraw_tick, NULL, NULL);
}

static void
on_run_finished (TachWindow    *self,
                 TachRunObject *run)
{
  g_autoptr(GError) error = NULL;

  tach_run_table_update_speedups (self->run_table);
  tach_chart_data_changed (self->rate_chart);
  tach_chart_data_changed (self->loss_chart);

  if (tach_run_object_get_state (run) == TACH_RUN_STATE_FAILED && tach_run_object_get_error (run))
    {
      g_autofree char *heading = g_strdup_printf (_("Run %s Failed"), tach_run_object_get_title (run));

      tach_window_show_error (self, heading, tach_run_object_get_error (run));
    }

  if (run != self->active_run || self->closing)
    return;
  if (tach_run_object_get_state (run) == TACH_RUN_STATE_CANCELLED)
    g_queue_clear_full (&self->queue, (GDestroyNotify) tach_window_queued_run_free);
  tach_window_compare_run_finished (self, run);

  if (!g_queue_is_empty (&self->queue) && !tach_window_start_next (self, &error))
    tach_window_show_error (self, _("Cannot Compare the Presets"), error);
  tach_window_update_actions (self);
  if (!tach_window_get_running (self))
    tach_window_job_ended (self, run);
}

static gboolean
tach_window_start_config (TachWindow          *self,
                          const TachConfig    *config,
                          const TachQueuedRun *queued,
                          GError             **error)
{
  g_autoptr(TachRun) run = NULL;
  g_autoptr(TachRunObject) object = NULL;

  run = tach_run_new (config, error);
  if (run == NULL)
    return FALSE;
  /* Compare's sweep compares the steps' rates: no test set, as the CLI's. */
  if (queued != NULL && queued->in_sweep)
    tach_run_set_evaluate (run, FALSE);

  object = tach_run_object_new (run, ++self->next_number, self->next_color++);
  g_signal_connect_object (object, "updated", G_CALLBACK (on_run_updated), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (object, "finished", G_CALLBACK (on_run_finished), self, G_CONNECT_SWAPPED);
  tach_chart_add_series (self->rate_chart, tach_run_object_get_rate_series (object));
  tach_chart_add_series (self->loss_chart, tach_run_object_get_loss_series (object));
  g_list_store_append (self->runs, object);
  if (queued != NULL && queued->in_sweep)
    tach_window_compare_started (self, queued, object);

  g_set_object (&self->active_run, object);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_ACTIVE_RUN]);
  gtk_widget_set_visible (self->live_figures, TRUE);

  if (!tach_run_object_start (object, error))
    {
      tach_window_update_actions (self);
      return FALSE;
    }
  tach_window_update_actions (self);
  return TRUE;
}

/* Starts the next queued run; a run that cannot start is reported and the
 * one after it is tried, so one bad preset does not end a comparison. */
gboolean
tach_window_start_next (TachWindow  *self,
                        GError     **error)
{
  TachQueuedRun *queued;

  while ((queued = g_queue_pop_head (&self->queue)) != NULL)
    {
      g_autoptr(GError) local_error = NULL;
      gboolean ok = tach_window_start_config (self, &queued->config, queued, &local_error);

      if (!ok && queued->config.preset != NULL)
        g_prefix_error (&local_error, "%s: ", queued->config.preset);
      tach_window_queued_run_free (queued);
      if (ok)
        return TRUE;
      if (g_queue_is_empty (&self->queue))
        {
          g_propagate_error (error, g_steal_pointer (&local_error));
          return FALSE;
        }
      tach_window_show_error (self, NULL, local_error);
    }
  return TRUE;
}

gboolean
tach_window_start_run (TachWindow  *self,
                       GError     **error)
{
  g_return_val_if_fail (TACH_IS_WINDOW (self), FALSE);

  if (tach_window_get_running (self))
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                           _("A run is already in progress: stop it first"));
      return FALSE;
    }
  tach_window_job_started (self, FALSE);
  /* Ranks are processes of their own: mpirun starts them. */
  if (tach_config_panel_get_config (self->config_panel)->ranks > 1)
    return tach_window_start_ranks (self, tach_config_panel_get_config (self->config_panel),
                                    error);
  return tach_window_start_config (self, tach_config_panel_get_config (self->config_panel),
                                   NULL, error);
}

void
tach_window_stop (TachWindow *self)
{
  g_return_if_fail (TACH_IS_WINDOW (self));

  g_queue_clear_full (&self->queue, (GDestroyNotify) tach_window_queued_run_free);
  if (self->active_run != NULL)
    tach_run_object_stop (self->active_run);
  tach_window_stop_ranks (self);
  tach_explain_view_stop (self->explain_view);
  tach_scaling_view_stop (self->scaling_view);
}

static GtkWidget *
create_legend_button (gpointer item,
                      gpointer user_data)
{
  TachRunObject *run = item;
  GtkWidget *button = gtk_toggle_button_new ();
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  GtkWidget *swatch = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
  /* Many runs make many chips: each names its run briefly (a loaded run's
   * folder and device would take a line each) and in full in its tooltip. */
  GtkWidget *label = gtk_label_new (tach_run_object_get_short_title (run));
  g_autofree char *tooltip = g_strdup_printf ("%s\n%s", tach_run_object_get_title (run),
                                              _("Show or hide this run in the charts"));
  g_auto(GStrv) classes = NULL;

  g_object_get (run, "swatch-classes", &classes, NULL);
  gtk_widget_set_css_classes (swatch, (const char **) classes);
  gtk_widget_set_valign (swatch, GTK_ALIGN_CENTER);
  gtk_box_append (GTK_BOX (box), swatch);
  gtk_label_set_ellipsize (GTK_LABEL (label), PANGO_ELLIPSIZE_END);
  gtk_label_set_max_width_chars (GTK_LABEL (label), 28);
  gtk_box_append (GTK_BOX (box), label);
  gtk_button_set_child (GTK_BUTTON (button), box);
  gtk_widget_add_css_class (button, "flat");
  gtk_widget_add_css_class (button, "legend-button");
  gtk_widget_set_halign (button, GTK_ALIGN_START);
  gtk_widget_set_tooltip_text (button, tooltip);
  /* A screen reader reads no tooltip in GTK 4.8: the same words. */
  tach_a11y_set_label (button, tach_run_object_get_title (run));
  gtk_accessible_update_property (GTK_ACCESSIBLE (button), GTK_ACCESSIBLE_PROPERTY_DESCRIPTION,
                                  _("Show or hide this run in the charts"), -1);
  g_object_bind_property (run, "visible", button, "active",
                          G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE);
  return button;
}

static void
on_sweep_changed (TachWindow *self)
{
  gboolean any = g_list_model_get_n_items (G_LIST_MODEL (self->sweep)) > 0;

  gtk_stack_set_visible_child_name (self->compare_stack, any ? "results" : "empty");
}

/* The legend's scrolled area would keep a scrollbar's height with no chip
 * in it: it shows from the first run on. */
static void
on_runs_changed (TachWindow *self)
{
  gtk_widget_set_visible (gtk_widget_get_ancestor (GTK_WIDGET (self->legend), GTK_TYPE_SCROLLED_WINDOW),
                          g_list_model_get_n_items (G_LIST_MODEL (self->runs)) > 0);
}

static void
on_config_error (TachWindow   *self,
                 const GError *error)
{
  tach_window_show_error (self, NULL, error);
}

/* The two charts are stacked with one x range, so they are read against
 * each other: their plots start at the same x whatever their y labels
 * ("400" above, "0.75" below).  They are lined up here, once the layout is
 * final and just before they draw, which follows every change of their
 * data, options or size.  A chart whose gutter changes is queued for
 * drawing while its parent is still to be drawn, so it is drawn in this
 * same frame. */
static void
tach_window_snapshot (GtkWidget   *widget,
                      GtkSnapshot *snapshot)
{
  TachWindow *self = TACH_WINDOW (widget);
  TachChart *charts[] = { self->rate_chart, self->loss_chart };

  if (gtk_widget_get_mapped (GTK_WIDGET (self->rate_chart)))
    tach_chart_align_gutters (charts, G_N_ELEMENTS (charts));
  GTK_WIDGET_CLASS (tach_window_parent_class)->snapshot (widget, snapshot);
}

/* A run in progress is stopped cleanly: the engine thread finishes its
 * step and is joined before the window goes. */
static gboolean
tach_window_close_request (GtkWindow *window)
{
  TachWindow *self = TACH_WINDOW (window);

  self->closing = TRUE;
  tach_window_settings_save (self);
  tach_window_stop (self);
  if (self->active_run != NULL)
    tach_run_object_wait (self->active_run);
  return GTK_WINDOW_CLASS (tach_window_parent_class)->close_request (window);
}

static void
tach_window_dispose (GObject *object)
{
  TachWindow *self = TACH_WINDOW (object);

  self->closing = TRUE;
  tach_window_stop (self);
  if (self->active_run != NULL)
    tach_run_object_wait (self->active_run);
  if (self->redraw_tick_id != 0)
    gtk_widget_remove_tick_callback (GTK_WIDGET (self), self->redraw_tick_id);
  self->redraw_tick_id = 0;
  if (self->chooser)
    gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (self->chooser));
  g_clear_object (&self->chooser);
  g_clear_object (&self->active_run);
  g_clear_object (&self->ranks_job);
  g_clear_object (&self->ranks_rate);
  g_clear_object (&self->ranks_loss);
  gtk_widget_dispose_template (GTK_WIDGET (self), TACH_TYPE_WINDOW);
  g_clear_object (&self->runs);
  g_clear_object (&self->sweep);
  g_clear_pointer (&self->compare, tach_window_compare_free);
  g_clear_pointer (&self->last_folder, g_free);
  g_clear_object (&self->settings);
  g_clear_pointer (&self->last_notice, g_free);
  G_OBJECT_CLASS (tach_window_parent_class)->dispose (object);
}

static void
tach_window_get_property (GObject    *object,
                          guint       prop_id,
                          GValue     *value,
                          GParamSpec *pspec)
{
  TachWindow *self = TACH_WINDOW (object);

  switch (prop_id)
    {
    case PROP_RUNNING:
      g_value_set_boolean (value, tach_window_get_running (self));
      break;
    case PROP_BUSY:
      g_value_set_boolean (value, self->busy_count > 0);
      break;
    case PROP_BY_TIME:
      g_value_set_boolean (value, self->by_time);
      break;
    case PROP_LOG_SCALE:
      g_value_set_boolean (value, self->log_scale);
      break;
    case PROP_SMOOTHING:
      g_value_set_double (value, self->smoothing);
      break;
    case PROP_SHOW_CONFIG:
      g_value_set_boolean (value, self->show_config);
      break;
    case PROP_ACTIVE_RUN:
      g_value_set_object (value, self->active_run);
      break;
    case PROP_NOTIFY_AFTER:
      g_value_set_double (value, self->notify_after);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
tach_window_set_property (GObject      *object,
                          guint         prop_id,
                          const GValue *value,
                          GParamSpec   *pspec)
{
  TachWindow *self = TACH_WINDOW (object);

  switch (prop_id)
    {
    case PROP_BY_TIME:
      if (self->by_time != g_value_get_boolean (value))
        {
          self->by_time = g_value_get_boolean (value);
          g_object_notify_by_pspec (object, pspec);
        }
      break;
    case PROP_LOG_SCALE:
      if (self->log_scale != g_value_get_boolean (value))
        {
          self->log_scale = g_value_get_boolean (value);
          g_object_notify_by_pspec (object, pspec);
        }
      break;
    case PROP_SMOOTHING:
      if (self->smoothing != g_value_get_double (value))
        {
          self->smoothing = g_value_get_double (value);
          g_object_notify_by_pspec (object, pspec);
        }
      break;
    case PROP_SHOW_CONFIG:
      if (self->show_config != g_value_get_boolean (value))
        {
          self->show_config = g_value_get_boolean (value);
          g_object_notify_by_pspec (object, pspec);
        }
      break;
    case PROP_NOTIFY_AFTER:
      if (self->notify_after != g_value_get_double (value))
        {
          self->notify_after = g_value_get_double (value);
          g_object_notify_by_pspec (object, pspec);
        }
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
tach_window_class_init (TachWindowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  GtkWindowClass *window_class = GTK_WINDOW_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;

  /* A process with a window says its settings as the panel shows them:
   * the engine's messages name "Classifier head “Global average
   * pooling”", not the command line's --head gap. */
  tach_set_wording (TACH_WORDING_SETTINGS);

  object_class->dispose = tach_window_dispose;
  object_class->get_property = tach_window_get_property;
  object_class->set_property = tach_window_set_property;
  window_class->close_request = tach_window_close_request;
  widget_class->snapshot = tach_window_snapshot;

  properties[PROP_RUNNING] = g_param_spec_boolean ("running", NULL, NULL, FALSE, ro);
  properties[PROP_BUSY] = g_param_spec_boolean ("busy", NULL, NULL, FALSE, ro);
  properties[PROP_BY_TIME] = g_param_spec_boolean ("by-time", NULL, NULL, FALSE, rw);
  properties[PROP_LOG_SCALE] = g_param_spec_boolean ("log-scale", NULL, NULL, FALSE, rw);
  properties[PROP_SMOOTHING] = g_param_spec_double ("smoothing", NULL, NULL, 0.0, 0.99, 0.6, rw);
  properties[PROP_SHOW_CONFIG] = g_param_spec_boolean ("show-config", NULL, NULL, TRUE, rw);
  /* The run the live figures show: the running one, or the last one. */
  properties[PROP_ACTIVE_RUN] =
    g_param_spec_object ("active-run", NULL, NULL, TACH_TYPE_RUN_OBJECT, ro);
  /* A run or comparison that takes longer than this many seconds and ends
   * while the window is not focused sends a desktop notification. */
  properties[PROP_NOTIFY_AFTER] = g_param_spec_double ("notify-after", NULL, NULL, 0.0, G_MAXDOUBLE,
                                                       30.0, rw);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  g_type_ensure (TACH_TYPE_CHART);
  g_type_ensure (TACH_TYPE_CONFIG_PANEL);
  g_type_ensure (TACH_TYPE_RUN_TABLE);
  g_type_ensure (TACH_TYPE_RUN_OBJECT);
  g_type_ensure (TACH_TYPE_COMPARE_VIEW);
  g_type_ensure (TACH_TYPE_EXPLAIN_VIEW);
  g_type_ensure (TACH_TYPE_SCALING_VIEW);
  g_type_ensure (TACH_TYPE_RANKS_VIEW);

  gtk_widget_class_set_template_from_resource (widget_class, "/io/github/tach/Tach/ui/tach-window.ui");
  gtk_widget_class_bind_template_child (widget_class, TachWindow, toast_overlay);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, view_stack);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, config_panel);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, rate_chart);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, loss_chart);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, run_table);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, compare_view);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, compare_stack);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, compare_button);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, explain_view);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, scaling_view);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, legend);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, menu_button);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, flap);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, compare_box);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, live_figures);
  gtk_widget_class_bind_template_child (widget_class, TachWindow, ranks_view);

  tach_window_class_init_actions (widget_class);
  tach_window_class_init_open (widget_class);
}

static void
tach_window_init (TachWindow *self)
{
  self->smoothing = 0.6;
  self->notify_after = 30.0;
  self->show_config = TRUE;
  self->runs = g_list_store_new (TACH_TYPE_RUN_OBJECT);
  self->sweep = g_list_store_new (TACH_TYPE_RUN_OBJECT);
  self->compare = tach_window_compare_new ();
  g_queue_init (&self->queue);

  gtk_widget_init_template (GTK_WIDGET (self));
  tach_a11y_set_label (GTK_WIDGET (self->menu_button), _("Main Menu"));
  tach_a11y_name_by_mnemonic (self->compare_button);
  gtk_box_append (self->compare_box, tach_a11y_figures_new (GTK_WIDGET (self->compare_view)));

  tach_run_table_set_model (self->run_table, G_LIST_MODEL (self->runs));
  tach_compare_view_set_model (self->compare_view, G_LIST_MODEL (self->sweep));
  gtk_flow_box_bind_model (self->legend, G_LIST_MODEL (self->runs),
                           create_legend_button, NULL, NULL);
  g_signal_connect_swapped (self->sweep, "items-changed", G_CALLBACK (on_sweep_changed), self);
  g_signal_connect_swapped (self->runs, "items-changed", G_CALLBACK (on_runs_changed), self);
  g_signal_connect_swapped (self->config_panel, "error", G_CALLBACK (on_config_error), self);
  tach_window_init_open (self);
  tach_window_init_explain (self);
  tach_window_init_scaling (self);
  tach_window_init_ranks (self);
  tach_window_settings_restore (self);
  on_sweep_changed (self);
  on_runs_changed (self);
  tach_window_update_actions (self);
}

TachWindow *
tach_window_new (GtkApplication *application)
{
  return g_object_new (TACH_TYPE_WINDOW, "application", application, NULL);
}

TachConfigPanel *
tach_window_get_config_panel (TachWindow *self)
{
  g_return_val_if_fail (TACH_IS_WINDOW (self), NULL);
  return self->config_panel;
}

TachChart *
tach_window_get_rate_chart (TachWindow *self)
{
  g_return_val_if_fail (TACH_IS_WINDOW (self), NULL);
  return self->rate_chart;
}

TachChart *
tach_window_get_loss_chart (TachWindow *self)
{
  g_return_val_if_fail (TACH_IS_WINDOW (self), NULL);
  return self->loss_chart;
}

TachRunTable *
tach_window_get_run_table (TachWindow *self)
{
  g_return_val_if_fail (TACH_IS_WINDOW (self), NULL);
  return self->run_table;
}

GListModel *
tach_window_get_runs (TachWindow *self)
{
  g_return_val_if_fail (TACH_IS_WINDOW (self), NULL);
  return G_LIST_MODEL (self->runs);
}

GListModel *
tach_window_get_sweep (TachWindow *self)
{
  g_return_val_if_fail (TACH_IS_WINDOW (self), NULL);
  return G_LIST_MODEL (self->sweep);
}
