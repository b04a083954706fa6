/* tach-analysis-private.h: what explain and sweeps share. */
#pragma once

#include <gio/gio.h>

#include "tach-engine.h"

G_BEGIN_DECLS

/* Runs @config to its end on no main context, marked varied by @varied
 * (NULL: none); cancelling @cancellable stops it.  Returns the run, also
 * when it failed or was stopped (then @error says why), or NULL with
 * @error when it could not start.  Blocks: call it from the thread that
 * drives the runs (tach-sweep.c). */
TachRun *tach_analysis_run (const TachConfig *config, const char *varied,
                            GCancellable *cancellable, GError **error);

G_END_DECLS
