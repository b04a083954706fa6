/* tach-scaling-view.h: the Scaling view: one knob's values (a --vary
 * spec, read by the engine's parser) across every preset of the workload,
 * run on a worker thread (each run on its engine thread) with progress and
 * stop, drawn as items/s and speed-up against the value; presets shown or
 * hidden, PNG, SVG and CSV exports.  Main thread only. */
#pragma once

#include <adwaita.h>

#include "tach-engine.h"
#include "tach-scaling-chart.h"

G_BEGIN_DECLS

#define TACH_TYPE_SCALING_VIEW (tach_scaling_view_get_type ())
G_DECLARE_FINAL_TYPE (TachScalingView, tach_scaling_view, TACH, SCALING_VIEW, GtkWidget)

/* The settings a sweep starts from: the window's configuration panel. */
typedef const TachConfig *(*TachScalingViewBaseFunc) (gpointer user_data);

GtkWidget        *tach_scaling_view_new (void);
void              tach_scaling_view_set_base_func (TachScalingView *self,
                                                   TachScalingViewBaseFunc func,
                                                   gpointer user_data);
/* The rounds of the next sweeps, as tach-cli sweep's --rounds, --budget
 * (seconds; 0: the rounds given only) and --target (a fraction: 0.05 is
 * +-5%); tach-cli's defaults unless set. */
void              tach_scaling_view_set_rounds (TachScalingView *self, guint min_rounds,
                                                double budget_s, double target);
/* The line under the controls: the rounds so far while a sweep runs, then
 * how many ran and what stayed unresolved ("" before the first). */
const char       *tach_scaling_view_get_rounds_text (TachScalingView *self);
/* Fills the knob choice for the base's workload. */
void              tach_scaling_view_refresh (TachScalingView *self);
/* Chooses the knob by name and the values (a --vary spec's right side);
 * FALSE if the knob is not offered. */
gboolean          tach_scaling_view_set_spec (TachScalingView *self, const char *knob,
                                              const char *values);
/* Runs the chosen knob's values across the workload's presets on the
 * base's settings.  Points that cannot run are reported (the "error"
 * signal) and left out; the others run. */
gboolean          tach_scaling_view_start (TachScalingView *self, GError **error);
void              tach_scaling_view_stop (TachScalingView *self);
gboolean          tach_scaling_view_get_running (TachScalingView *self);
/* The grid shown (NULL before the first sweep) and the run of each point
 * (NULL where it did not run). */
const TachScalingGrid *tach_scaling_view_get_grid (TachScalingView *self);
TachRun          *tach_scaling_view_get_run (TachScalingView *self, guint preset, guint value);
TachScalingChart *tach_scaling_view_get_chart (TachScalingView *self);
void              tach_scaling_view_set_preset_visible (TachScalingView *self, guint preset,
                                                        gboolean visible);
/* Exports: PNG or SVG by @path's extension; runs.csv and samples.csv of the
 * sweep's runs (with the varied knob's column) into the folder @dir. */
gboolean          tach_scaling_view_export_image (TachScalingView *self, const char *path,
                                                  GError **error);
gboolean          tach_scaling_view_export_csv (TachScalingView *self, const char *dir,
                                                GError **error);

G_END_DECLS
