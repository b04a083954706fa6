/* tach-run-object.h: one engine run as a GObject for the window's models.
 *
 * It owns a TachRun, drains its samples into two chart series (steps/s and
 * loss) when the engine notifies, and exposes the summary as properties
 * that the run table and the compare view bind to.  Main thread only.
 */
#pragma once

#include <glib-object.h>
#include <tach-engine.h>

#include "tach-chart-series.h"

G_BEGIN_DECLS

#define TACH_TYPE_RUN_OBJECT (tach_run_object_get_type ())
G_DECLARE_FINAL_TYPE (TachRunObject, tach_run_object, TACH, RUN_OBJECT, GObject)

/* @number: the run's number in the window's table, which its titles
 * show ("#3 bilstm · tuned"): the table counts its own runs, whatever
 * other runs (a sweep's, an explanation's) the process makes. */
TachRunObject   *tach_run_object_new                (TachRun        *run,
                                                     guint           number,
                                                     guint           color_index);
guint            tach_run_object_get_number         (TachRunObject  *self);
gboolean         tach_run_object_start              (TachRunObject  *self,
                                                     GError        **error);
void             tach_run_object_stop               (TachRunObject  *self);
void             tach_run_object_wait               (TachRunObject  *self);
TachRun         *tach_run_object_get_run            (TachRunObject  *self);
TachRunState     tach_run_object_get_state          (TachRunObject  *self);
gboolean         tach_run_object_is_active          (TachRunObject  *self);
const GError    *tach_run_object_get_error          (TachRunObject  *self);
const char      *tach_run_object_get_title          (TachRunObject  *self);
const char      *tach_run_object_get_short_title    (TachRunObject  *self);
double           tach_run_object_get_rate           (TachRunObject  *self);
double           tach_run_object_get_speedup        (TachRunObject  *self);
double           tach_run_object_get_share          (TachRunObject  *self,
                                                     guint           phase);
guint64          tach_run_object_get_steps_done     (TachRunObject  *self);
double           tach_run_object_get_progress       (TachRunObject  *self);
const char      *tach_run_object_get_preset         (TachRunObject  *self);
/* @self's speed over @baseline's (tach_summary_compare: the two medians'
 * 95% intervals; items/s where the batch sizes differ) and its verdict;
 * paired by round where Compare measured the pair so. */
TachVerdict      tach_run_object_compare            (TachRunObject      *self,
                                                     TachRunObject      *baseline,
                                                     TachInterval       *ratio,
                                                     gboolean           *by_items);
/* "2.50× (2.31–2.70)", "… per item", "~1.02× within noise", "2.50×"
 * without an interval, "—" without a value (translated). */
char            *tach_run_object_format_speedup     (TachVerdict         verdict,
                                                     const TachInterval *ratio,
                                                     gboolean            by_items);
/* The same in two lines for a narrow column: the value ("2.50×", "~1.02×",
 * "—") and the line under it ("2.31–2.70", "2.31–2.70 per item", "within
 * noise", or ""); both newly allocated. */
void             tach_run_object_format_speedup_parts (TachVerdict         verdict,
                                                       const TachInterval *ratio,
                                                       gboolean            by_items,
                                                       char              **value,
                                                       char              **detail);
/* The speed-up over @baseline (NULL: none; @self: 1×), with its 95%
 * interval and verdict, of items/s where the batch sizes differ; over the
 * paired baseline, the paired figure (tach_run_object_set_paired). */
void             tach_run_object_set_baseline       (TachRunObject  *self,
                                                     TachRunObject  *baseline);
/* The speed-up over @base paired by round (@ratio; NULL forgets it), as
 * Compare measured it: tach_run_object_compare and the run table's
 * speed-up give it for that pair, so that every view gives one verdict. */
void             tach_run_object_set_paired         (TachRunObject      *self,
                                                     TachRunObject      *base,
                                                     const TachInterval *ratio);
/* Where @self against @baseline is not resolved because the two runs were
 * measured apart on a busy machine (tach_summary_dup_busy_apart), why;
 * NULL where it is resolved, paired by round, or not known. */
char            *tach_run_object_dup_busy_apart     (TachRunObject      *self,
                                                     TachRunObject      *baseline);
TachChartSeries *tach_run_object_get_rate_series    (TachRunObject  *self);
TachChartSeries *tach_run_object_get_loss_series    (TachRunObject  *self);

G_END_DECLS
