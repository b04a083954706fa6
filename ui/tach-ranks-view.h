/* tach-ranks-view.h: a data-parallel run's ranks, a row each: its steps/s
 * and its step split into phases (compute, exposed communication, packing,
 * imbalance and the rest), live from a TachRanksJob's progress lines, then
 * final from the run read back from its results. */
#pragma once

#include <gtk/gtk.h>
#include <tach-engine.h>

#include "tach-ranks-job.h"

G_BEGIN_DECLS

#define TACH_TYPE_RANKS_VIEW (tach_ranks_view_get_type ())
G_DECLARE_FINAL_TYPE (TachRanksView, tach_ranks_view, TACH, RANKS_VIEW, GtkWidget)

GtkWidget *tach_ranks_view_new      (void);
/* Shows @job's ranks as their last progress lines say (call again on each
 * of its "progress" signals). */
void       tach_ranks_view_show_job (TachRanksView *self,
                                     TachRanksJob  *job);
/* Shows the ranks of @run (ended, of more than one rank) from their
 * samples, its imbalance split off, headed by its @number in the run
 * table; NULL or a run of one process hides the view. */
void       tach_ranks_view_show_run (TachRanksView *self,
                                     TachRun       *run,
                                     guint          number);
/* How many rank rows it shows, and rank @rank's text (for tests). */
guint      tach_ranks_view_get_n_rows (TachRanksView *self);
const char *tach_ranks_view_get_row_text (TachRanksView *self,
                                          guint          rank);

G_END_DECLS
