/* tach-sample.h: the host's arithmetic for drawing a token from a row of
 * logits (softmax, inverse CDF), shared by the CPU backend's sample_tokens
 * op, its softmax_ce loss without gradients, and lstm-lm's sampling=host,
 * so that all three give the same bits on any processor.
 *
 * exp (z - zmax) in double by a vectorised polynomial (within an ulp or
 * so of exp), summed in blocks of eight by a fixed tree and the
 * blocks in order; the token is the first whose cumulative mass passes
 * u * sum, found over the block sums first.  Every vector width (AVX-512,
 * AVX2, the baseline) does the same operations in the same order, each
 * one IEEE rounding (the fused multiply-adds written out as fma ()), so
 * the numbers do not depend on TACH_CPU_ISA.
 * Implemented in backend/tach-sample.c, dispatched on the host's vector
 * level (tach-host-isa.h).
 *
 * Threads: any; no state.
 */
#pragma once

#include <stdint.h>

/* The token drawn from softmax (@z [@vocab]) by the uniform @u in [0, 1);
 * with @lse, also zmax + log (sum of exp (z - zmax)), so that the drawn
 * token's -log p is *lse - z[token]. */
int32_t tach_sample_row (const float *z, int vocab, float u, double *lse);

/* zmax + log (sum of exp (z - zmax)): the same value tach_sample_row
 * gives in *lse. */
double  tach_sample_lse (const float *z, int vocab);
