/* tach-cpu.h: the CPU backend's entry points, for its registry row
 * (tach-backends.c) and nothing else. */
#pragma once

#include "tach-backend-ops.h"

G_BEGIN_DECLS

/* The CPU, listed cheaply: its peak_flops is 0 until measured. */
GPtrArray   *tach_cpu_backend_devices (void);
TachBackend *tach_cpu_backend_new (guint threads, TachPrecision precision, GError **error);
gboolean     tach_cpu_backend_supports (TachKnobId knob, int value, const char **why);
/* The measured sgemm rate of all cores, FLOP/s (seconds the first time in
 * a process; cached in memory and on disk). */
double       tach_cpu_measure_peak_flops (void);

G_END_DECLS
