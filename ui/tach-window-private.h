/* tach-window-private.h: the window's state, shared by tach-window.c
 * (template, properties, run lifecycle) and tach-window-actions.c (menu
 * actions, exports, comparisons). */
#pragma once

#include "tach-window.h"
#include "tach-compare-view.h"
#include "tach-scaling-view.h"
#include "tach-run-object.h"
#include "tach-ranks-job.h"
#include "tach-ranks-view.h"

G_BEGIN_DECLS

struct _TachWindow
{
  AdwApplicationWindow  parent_instance;

  /* Template children. */
  AdwToastOverlay      *toast_overlay;
  AdwViewStack         *view_stack;
  TachConfigPanel      *config_panel;
  TachChart            *rate_chart;
  TachChart            *loss_chart;
  TachRunTable         *run_table;
  TachCompareView      *compare_view;
  TachExplainView      *explain_view;
  TachScalingView      *scaling_view;
  GtkStack             *compare_stack;
  GtkWidget            *compare_button;
  GtkFlowBox           *legend;
  GtkMenuButton        *menu_button;
  AdwFlap              *flap;
  GtkBox               *compare_box;
  GtkWidget            *live_figures;  /* the active run's rate and loss */
  TachRanksView        *ranks_view;    /* a data-parallel run's ranks */

  /* State. */
  GListStore           *runs;          /* TachRunObject, every run */
  GListStore           *sweep;         /* TachRunObject, the last comparison's rows */
  struct _TachWindowCompare *compare;  /* Compare Presets' rounds (tach-window-compare.c) */
  GQueue                queue;         /* TachQueuedRun*, waiting to start */
  TachRunObject        *active_run;    /* the running (or last) run */
  TachRanksJob         *ranks_job;     /* the last run of several ranks, or NULL */
  TachChartSeries      *ranks_rate;    /* its rank 0's rate and loss while it runs */
  TachChartSeries      *ranks_loss;
  guint64               ranks_plotted; /* steps plotted so far */
  double                ranks_plotted_s; /* and the wall time they ended at */
  GtkFileChooserNative *chooser;
  char                 *last_folder;   /* the last folder opened or exported to */
  GSettings            *settings;      /* NULL when the schema is not installed */
  gint64                job_start;     /* monotonic µs: the run or comparison started */
  gboolean              job_is_sweep;
  double                notify_after;  /* seconds a job takes before it notifies */
  char                 *last_notice;   /* the last notification sent */
  guint                 next_color;
  guint                 next_number;   /* the last run's number in the table (#1 first) */
  guint                 busy_count;
  guint                 redraw_tick_id; /* a frame asked for by a drained batch */
  double                smoothing;
  gboolean              by_time;
  gboolean              log_scale;
  gboolean              show_config;
  gboolean              closing;
};

typedef struct {
  TachConfig config;
  gboolean   in_sweep;
  int        point;   /* the comparison's point (its preset), or -1 */
  guint      round;   /* the comparison's round, 0-based */
} TachQueuedRun;

/* Compare Presets in rounds (tach-window-compare.c). */
typedef struct _TachWindowCompare TachWindowCompare;
TachWindowCompare *tach_window_compare_new (void);
void     tach_window_compare_free     (TachWindowCompare *compare);
/* @object runs @queued (a comparison's point when queued->point >= 0). */
void     tach_window_compare_started  (TachWindow          *self,
                                       const TachQueuedRun *queued,
                                       TachRunObject       *object);
/* @run ended (the active run): at a round's end, the figures so far and
 * the next round queued, or the comparison's outcome. */
void     tach_window_compare_run_finished (TachWindow    *self,
                                           TachRunObject *run);

void     tach_window_queued_run_free (TachQueuedRun *queued);
gboolean tach_window_start_next      (TachWindow    *self,
                                      GError       **error);
void     tach_window_show_error      (TachWindow    *self,
                                      const char    *heading,
                                      const GError  *error);
void     tach_window_set_busy        (TachWindow    *self,
                                      gboolean       busy);
void     tach_window_class_init_actions (GtkWidgetClass *widget_class);
void     tach_window_update_actions  (TachWindow    *self);
/* Connects the Explain part of the Compare view to the window. */
void     tach_window_init_explain    (TachWindow    *self);
/* Connects the Scaling view to the window. */
void     tach_window_init_scaling    (TachWindow    *self);
/* Open…, drag and drop (tach-window-open.c). */
void     tach_window_class_init_open (GtkWidgetClass *widget_class);
void     tach_window_init_open       (TachWindow    *self);
/* Runs of several ranks, through mpirun (tach-window-ranks.c). */
void     tach_window_init_ranks      (TachWindow       *self);
gboolean tach_window_start_ranks     (TachWindow       *self,
                                      const TachConfig *config,
                                      GError          **error);
gboolean tach_window_ranks_running   (TachWindow       *self);
void     tach_window_stop_ranks      (TachWindow       *self);
/* Desktop notifications (tach-window-notify.c). */
void     tach_window_job_started      (TachWindow    *self,
                                       gboolean       is_sweep);
void     tach_window_job_ended        (TachWindow    *self,
                                       TachRunObject *last);
/* Remembered settings (tach-window-settings.c). */
void     tach_window_settings_restore (TachWindow   *self);
void     tach_window_settings_save    (TachWindow   *self);
/* The folder the next file chooser starts in. */
void     tach_window_remember_folder (TachWindow    *self,
                                      const char    *path);
void     tach_window_chooser_set_last_folder (TachWindow     *self,
                                              GtkFileChooser *chooser);

G_END_DECLS
