/* tach-cpu-conv-private.h: the CPU backend's convolution plan, shared by
 * the file that plans it (tach-cpu-conv.c, which says how it works) and
 * the one that runs it (tach-cpu-conv-run.c).
 */
#pragma once

#include "tach-cpu-private.h"

struct _TachConvPlan {
  TachConvDesc desc;
  int          oh, ow;

  /* All owned; bwd_data only with need_dx. */
  dnnl_primitive_t fwd, bwd_data, bwd_weights;
  TachCpuArg  x_fwd, w_fwd, x_bwd, dw, w_bwd, dx;
  TachCpuArg  y;                 /* bare: the conv output */
  TachCpuArg  dy_w, dy_d;        /* bare: dy for each backward primitive */
  gboolean    dy_shared;         /* bare with need_dx: dy_d serves both */
  dnnl_memory_t act, dact;       /* block: over the caller's act, dact */
  /* block: the forward by chunks of images whose activations stay in the
   * cores' L2 between the convolution and the pool (0: one pass); the
   * chunk's x and activations are views of the batch's layouts. */
  int           chunk;
  dnnl_primitive_t fwd_chunk;
  dnnl_memory_t x_chunk, act_chunk;
  void         *act_scratch;     /* owned: the chunk's activations */
  size_t        x_image_bytes;   /* one image of x_fwd's layout */
  TachCpuActLayout act_layout;   /* block: act's and dact's layout, for the pool */
  dnnl_memory_t bias, dbias;     /* plain f32 [K] */

  /* block: the backward weights want x in the layout the forward made, so
   * backward reuses that copy when handed the forward's x (as it is
   * handed its act) instead of reordering it again. */
  gboolean     x_shared;
  const float *x_fwd_last;       /* borrowed: the x that x_fwd.inner holds */

  /* block: the convolution by Winograd's F(4x4, 5x5) where it applies
   * (tach-cpu-winograd.c), else NULL and oneDNN's primitives run; the
   * chunked forward's chunks and scratch serve it too. */
  TachCpuWino *wino;
  TachCpuArg   wino_x, wino_dx;  /* x and dx blocked as it reads them */
  /* block: the filter and bias gradients of one input channel's
   * convolution (tach-cpu-dw1.c) where it applies, else NULL. */
  TachCpuDw1  *dw1;

  float *zero_bias;              /* owned: K zeros, for a NULL bias */
  float *db_scratch;             /* owned: K floats, for a NULL db */
};
