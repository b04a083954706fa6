/* tach-scaling-view-private.h: the Scaling view's state, shared by
 * tach-scaling-view.c (the widget: its row, toggles, chart, exports, class)
 * and tach-scaling-view-sweep.c (the sweep's worker, its rounds' figures,
 * Start and Stop). */
#pragma once

#include "tach-scaling-view.h"
#include "tach-sweep.h"
#include "tach-task-view.h"

G_BEGIN_DECLS

struct _TachScalingView
{
  GtkWidget               parent_instance;

  GtkWidget              *box;
  GtkDropDown            *knob_choice;
  GtkStringList          *knobs;
  GtkEntry               *values_entry;
  GtkButton              *button;
  GtkMenuButton          *export_button;
  GtkProgressBar         *progress;
  GtkLabel               *rounds_label; /* the rounds so far, then what stayed unresolved */
  GtkWidget              *toggles;     /* a button per preset */
  TachScalingChart       *chart;

  TachScalingViewBaseFunc base_func;
  gpointer                base_data;
  int                     workload;    /* -1 before the first refresh */
  int                     task;        /* the task the knobs were listed for */

  /* The grid shown: axis, presets, and per point its run. */
  TachSweepAxis          *axis;
  TachScalingGrid         grid;
  TachRun               **runs;        /* [v * n_presets + p], owned, or NULL: the shown */
  guint                   n_points;
  GPtrArray              *all_runs;    /* TachRun*, owned: every round's, for the export */
  guint                   min_rounds;  /* tach-cli's --rounds, --budget and --target */
  double                  budget_s, target;

  GCancellable           *cancellable; /* the running sweep's, or NULL */
  guint                   generation;
  guint                   done, total;
};

/* TachTaskView's signals ("error", "finished"). */
extern guint tach_scaling_view_signals[TACH_TASK_VIEW_N_SIGNALS];

void tach_scaling_view_grid_clear    (TachScalingView *self);
void tach_scaling_view_update_state  (TachScalingView *self);
void tach_scaling_view_fill_toggles  (TachScalingView *self);

G_END_DECLS
