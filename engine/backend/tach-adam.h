/* tach-adam.h: Adam's bias corrections, shared by every backend.
 *
 * Kingma & Ba's form (tach-backend.h): with t the step count after the
 * increment, param -= lr * m * inv_c1 / (sqrt (v) * inv_sqrt_c2 + eps), where
 * inv_c1 = 1 / (1 - beta1^t) and inv_sqrt_c2 = 1 / sqrt (1 - beta2^t).  Both
 * are computed in double and rounded once: 1 - beta2^t cancels badly at small
 * t in float, and CUDA's powf is not correctly rounded, so a float form would
 * make the backends take different steps.  Plain C, and a __host__
 * __device__ function when nvcc compiles it, so that the CPU and the CUDA
 * kernel run the very same code.
 */
#pragma once

#include <math.h>

#ifdef __CUDACC__
#define TACH_ADAM_FN __host__ __device__ static inline
#else
#define TACH_ADAM_FN static inline
#endif

TACH_ADAM_FN void
tach_adam_corrections (float beta1, float beta2, float t, float *inv_c1, float *inv_sqrt_c2)
{
  double step = (double) t;

  *inv_c1 = (float) (1.0 / (1.0 - pow ((double) beta1, step)));
  *inv_sqrt_c2 = (float) (1.0 / sqrt (1.0 - pow ((double) beta2, step)));
}
