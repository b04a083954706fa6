/* test-gpu.h: what the GPU test files share (see test-gpu.c). */
#pragma once

#include "tach-backend.h"
#include "tach-rand.h"
#include "tach-ref.h"

#define SEED 20260601u

extern const char *gpu_id;

/* The NMSE threshold of @precision; @deep for long accumulations. */
double       nmse_limit (TachPrecision precision, gboolean deep);
TachBackend *open_gpu (TachPrecision precision);
/* Synchronises and fails the test if the backend holds an error. */
void         assert_ok (TachBackend *be);
float       *up (TachBackend *be, const double *host, size_t n);
double      *down (TachBackend *be, const float *dev, size_t n);
double      *random_doubles (size_t n, guint64 counter, double scale);
void         check (const char *what, const float *dev_got, TachBackend *be, const double *want,
                    size_t n, double limit);

void         gpu_add_kernel_tests (void);
void         gpu_add_mode_tests (void);
