/* tach-window.h: the main window. */
#pragma once

#include <adwaita.h>

#include "tach-chart.h"
#include "tach-config-panel.h"
#include "tach-run-table.h"
#include "tach-explain-view.h"
#include "tach-scaling-view.h"
#include "tach-ranks-view.h"

G_BEGIN_DECLS

#define TACH_TYPE_WINDOW (tach_window_get_type ())
G_DECLARE_FINAL_TYPE (TachWindow, tach_window, TACH, WINDOW, AdwApplicationWindow)

TachWindow      *tach_window_new               (GtkApplication       *application);
TachConfigPanel *tach_window_get_config_panel  (TachWindow           *self);
TachChart       *tach_window_get_rate_chart    (TachWindow           *self);
TachChart       *tach_window_get_loss_chart    (TachWindow           *self);
TachRunTable    *tach_window_get_run_table     (TachWindow           *self);
GListModel      *tach_window_get_runs          (TachWindow           *self);
GListModel      *tach_window_get_sweep         (TachWindow           *self);
TachExplainView *tach_window_get_explain_view  (TachWindow           *self);
TachScalingView *tach_window_get_scaling_view  (TachWindow           *self);
TachRanksView   *tach_window_get_ranks_view    (TachWindow           *self);
gboolean         tach_window_get_running       (TachWindow           *self);
gboolean         tach_window_start_run         (TachWindow           *self,
                                                GError              **error);
void             tach_window_stop              (TachWindow           *self);
gboolean         tach_window_compare_presets   (TachWindow           *self,
                                                GError              **error);
/* The rounds of the next Compare, Scaling sweep and explanation, as
 * tach-cli's --rounds, --budget (seconds; 0: the rounds given only) and
 * --target (a fraction: 0.05 is +-5%); tach-cli's defaults unless set. */
void             tach_window_set_rounds        (TachWindow           *self,
                                                guint                 min_rounds,
                                                double                budget_s,
                                                double                target);
gboolean         tach_window_explain_runs      (TachWindow           *self,
                                                GError              **error);
void             tach_window_export_csv        (TachWindow           *self,
                                                GFile                *folder,
                                                GCancellable         *cancellable,
                                                GAsyncReadyCallback   callback,
                                                gpointer              user_data);
void             tach_window_export_tensorboard (TachWindow          *self,
                                                GFile                *folder,
                                                GCancellable         *cancellable,
                                                GAsyncReadyCallback   callback,
                                                gpointer              user_data);
gboolean         tach_window_export_csv_finish (TachWindow           *self,
                                                GAsyncResult         *result,
                                                GError              **error);
void             tach_window_open              (TachWindow           *self,
                                                GFile               **folders,
                                                guint                 n_folders);
void             tach_window_open_folders      (TachWindow           *self,
                                                GFile               **folders,
                                                guint                 n_folders,
                                                GAsyncReadyCallback   callback,
                                                gpointer              user_data);
guint            tach_window_open_folders_finish (TachWindow         *self,
                                                GAsyncResult         *result,
                                                GError              **error);
/* The title and body of the last "finished" notification, or NULL. */
const char      *tach_window_get_last_notice   (TachWindow           *self);
gboolean         tach_window_export_charts     (TachWindow           *self,
                                                const char           *path,
                                                GError              **error);

G_END_DECLS
