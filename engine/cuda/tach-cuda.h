/* tach-cuda.h: the CUDA backend's entry points, for its registry row
 * (tach-backends.c) and nothing else.  No CUDA header is needed. */
#pragma once

#include "tach-backend-ops.h"

G_BEGIN_DECLS

GPtrArray   *tach_cuda_backend_devices (void);
TachBackend *tach_cuda_backend_new (int ordinal, guint threads, TachPrecision precision,
                                    GError **error);
gboolean     tach_cuda_backend_supports (TachKnobId knob, int value, const char **why);

G_END_DECLS
