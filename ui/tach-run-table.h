/* tach-run-table.h: the table of runs, with speed-ups against a baseline. */
#pragma once

#include <gtk/gtk.h>

#include "tach-run-object.h"

G_BEGIN_DECLS

#define TACH_TYPE_RUN_TABLE (tach_run_table_get_type ())
G_DECLARE_FINAL_TYPE (TachRunTable, tach_run_table, TACH, RUN_TABLE, GtkWidget)

GListModel    *tach_run_table_get_model        (TachRunTable *self);
void           tach_run_table_set_model        (TachRunTable *self,
                                                GListModel   *model);
TachRunObject *tach_run_table_get_baseline     (TachRunTable *self);
/* The run selected in the table (borrowed), or NULL. */
TachRunObject *tach_run_table_get_selected     (TachRunTable *self);
void           tach_run_table_select           (TachRunTable *self,
                                                guint         position);
void           tach_run_table_set_baseline     (TachRunTable *self,
                                                guint         position);
void           tach_run_table_update_speedups  (TachRunTable *self);
gboolean       tach_run_table_get_compact      (TachRunTable *self);


G_END_DECLS
