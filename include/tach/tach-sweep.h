/* tach-sweep.h: sweeps over any knob: the values of a --vary KNOB=SPEC,
 * the order a grid of presets x values runs in, and the grid's checks
 * before anything runs.  Shared by tach-cli's sweep and the GUI's Scaling
 * view, so both read a spec and order a grid the same way.
 *
 * Threads: any; nothing here touches a device.
 */
#pragma once

#include "tach-engine.h"

G_BEGIN_DECLS

typedef struct {
  const TachKnobInfo *knob;      /* the knob varied (a static row) */
  GStrv               values;    /* owned: in the order given, each one tach_config_set takes */
  gboolean            geometric; /* from an A..BxF range: plot on log axes */
} TachSweepAxis;

/* Reads "KNOB=SPEC", where SPEC is
 *   V1,V2,...   any values the knob takes ("fused,unrolled", "64,256"),
 *               or V1;V2;... when a value has commas itself ("16,32;32,64");
 *   A..BxF      an integer knob's geometric range: A, A*F, A*F^2, ... up
 *               to B (F above 1, rounded to whole numbers, repeats dropped);
 *   A..B+S      an integer knob's arithmetic range: A, A+S, ... up to B;
 *   all         every value of a choice knob.
 * Each value is checked on a copy of @base (tach_config_set), so errors
 * name the knob and the value (TACH_ERROR_INVALID_CONFIG).  The workload
 * and the preset are not knobs a sweep varies (presets are its other
 * axis). */
TachSweepAxis *tach_sweep_axis_parse (const TachConfig *base, const char *spec, GError **error);
void           tach_sweep_axis_free (TachSweepAxis *axis);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachSweepAxis, tach_sweep_axis_free)

/* The @k-th point (0 <= k < n_presets * n_values) of the interleaved
 * order: values in turn, and at each value every preset, in the given
 * order at even values and reversed at odd ones, so that drift (heat,
 * other load) falls alike on every preset. */
void           tach_sweep_point (guint n_presets, guint n_values, guint k, guint *preset,
                                 guint *value);

G_END_DECLS
