/* test-ops-conv.h: what the convolution and convolution-block op tests
 * share: a case (descriptor, sizes and its double-precision data) and
 * device buffers that start as garbage. */
#pragma once

#include "test-ops-common.h"

typedef struct {
  TachConvDesc d;
  int          oh, ow;
  size_t       nx, nw, ny;
  double      *x, *w, *b, *dy;
} ConvCase;

void     conv_case_init (ConvCase *c, const TachConvDesc *d, guint64 seed);
void     conv_case_clear (ConvCase *c);
/* Outputs that the op overwrites start as garbage, to see that they are. */
void     fill_sentinel (TachBackend *be, float *dev, size_t n);
float   *upload_sentinel (TachBackend *be, size_t n);
/* Whether @be can run @precision; a skip (with the backend's reason) if not. */
gboolean precision_or_skip (TachBackend *be, TachPrecision precision);
void     tach_ops_register_conv_block (const char *device_id);
