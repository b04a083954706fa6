/* tach-sample.c: one row of softmax sampling on the host (see
 * tach-sample.h): the exponentials vectorised, the sums in a fixed order.
 *
 * glibc's exp costs about 20 ns a call here, and generating a token of a
 * 554-word model calls it 554 times: a fifth of the token.  The polynomial
 * below runs a vector at a time.  Every variant (AVX-512, AVX2, baseline)
 * must give the same bits, so each operation is one IEEE rounding whatever
 * the vector width: the multiply-adds are written as fma () (one rounding:
 * an FMA instruction where the variant has one, glibc's correctly rounded
 * fma in the baseline), the compiler contracts nothing else (the pragma),
 * and the sums keep one order.
 *
 * Threads: any.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("fp-contract=off", "no-trapping-math")
#elif defined(__clang__)
#pragma clang fp contract(off)
#endif

#include <math.h>
#include <string.h>

#include "tach-host-isa.h"
#include "tach-sample.h"

/* Rows up to this many entries keep their exponentials on the stack. */
#define SAMPLE_STACK 2048
/* The block of the sums: a fixed tree inside, blocks added in order. */
#define SAMPLE_BLOCK 8

/* exp (x) for x <= 0 (the logits less their maximum; larger x up to 709
 * also work): Cody-Waite reduction x = n ln2 + r, |r| <= ln2 / 2, with
 * ln2 split so that n ln2_hi is exact; exp (r) by its Taylor series to
 * r^13 (truncation below 1e-17 relative) in Horner form, each step one
 * fused multiply-add; times 2^n built in the exponent bits.  Within 1.4e-16
 * relative of exp (against expl, x in [-700, 0]); below -708, where exp
 * would be subnormal, exactly 0 (under 1e-307 of a row whose largest term
 * is 1).  Branch-free, so that the loops vectorise; always inlined, so
 * that the fma calls do not keep it out of them.
 *
 * The fused steps halve the operations of a multiply then an add, and the
 * chain of dependent ones: at AVX2, a 554-word row's exponentials took
 * 1.06 us unfused and take 0.68 us (Intel Xeon model 167). */
static inline __attribute__ ((always_inline)) double
sample_exp (double x)
{
  const double shift = 6755399441055744.0;   /* 1.5 * 2^52: round to nearest */
  const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  double xc = x < -708.0 ? -708.0 : x > 709.0 ? 709.0 : x;
  double t = fma (xc, 1.44269504088896338700, shift);
  double n = t - shift;
  double r = fma (-n, ln2_lo, fma (-n, ln2_hi, xc));
  double p = 1.0 / 6227020800.0;
  double scale;
  int64_t bits;

  p = fma (p, r, 1.0 / 479001600.0);
  p = fma (p, r, 1.0 / 39916800.0);
  p = fma (p, r, 1.0 / 3628800.0);
  p = fma (p, r, 1.0 / 362880.0);
  p = fma (p, r, 1.0 / 40320.0);
  p = fma (p, r, 1.0 / 5040.0);
  p = fma (p, r, 1.0 / 720.0);
  p = fma (p, r, 1.0 / 120.0);
  p = fma (p, r, 1.0 / 24.0);
  p = fma (p, r, 1.0 / 6.0);
  p = fma (p, r, 0.5);
  p = fma (p, r, 1.0);
  p = fma (p, r, 1.0);
  /* t's low mantissa bits hold n (two's complement): shifted into the
   * exponent field, plus the bias, they make 2^n. */
  memcpy (&bits, &t, sizeof bits);
  bits = (int64_t) ((uint64_t) bits << 52) + ((int64_t) 1023 << 52);
  memcpy (&scale, &bits, sizeof scale);
  return x < -708.0 ? 0.0 : p * scale;
}

/* The row's maximum (in float, exact in double), its exponentials into
 * @e and their block sums into @bs; returns the sum of the blocks, in
 * order, and *zmax. */
TACH_SIMD_BODY double
sample_sums_body (const float *restrict z, int vocab, double *restrict e, double *restrict bs,
                  double *zmax_out)
{
  float zmaxf = z[0];
  double zmax, sum = 0.0;
  int nb = vocab / SAMPLE_BLOCK;

#pragma omp simd reduction(max:zmaxf)
  for (int j = 1; j < vocab; j++)
    zmaxf = MAX (zmaxf, z[j]);
  zmax = zmaxf;
#pragma omp simd
  for (int j = 0; j < vocab; j++)
    e[j] = sample_exp ((double) z[j] - zmax);
  for (int b = 0; b < nb; b++)
    {
      const double *eb = e + b * SAMPLE_BLOCK;

      bs[b] = ((eb[0] + eb[1]) + (eb[2] + eb[3])) + ((eb[4] + eb[5]) + (eb[6] + eb[7]));
    }
  if (vocab > nb * SAMPLE_BLOCK)
    {
      double s = 0.0;

      for (int j = nb * SAMPLE_BLOCK; j < vocab; j++)
        s += e[j];
      bs[nb++] = s;
    }
  for (int b = 0; b < nb; b++)
    sum += bs[b];
  *zmax_out = zmax;
  return sum;
}

/* At the host's level, for the CPU backend's ops and lstm-lm's host
 * sampling on any device alike (the bits are the same at every level). */
TACH_SIMD_DISPATCH_ (tach_host_isa, static, double, return, sample_sums,
                     (const float *restrict z, int vocab, double *restrict e,
                      double *restrict bs, double *zmax_out),
                     (z, vocab, e, bs, zmax_out))

/* The first token whose cumulative mass passes @target: the block whose
 * running sum (the very partial sums of sample_sums' total) passes it,
 * then the token inside it.  Rounding inside the block can leave the
 * target just past its end: then its last token of non-zero mass; no
 * block at all (target at the total): the last token, as ever. */
static int32_t
sample_pick (const double *e, const double *bs, int vocab, double target)
{
  int nb = (vocab + SAMPLE_BLOCK - 1) / SAMPLE_BLOCK;
  double cum = 0.0;

  for (int b = 0; b < nb; b++)
    {
      int lo = b * SAMPLE_BLOCK, hi = MIN (lo + SAMPLE_BLOCK, vocab);
      int last = lo;

      if (!(cum + bs[b] > target))
        {
          cum += bs[b];
          continue;
        }
      for (int j = lo; j < hi; j++)
        {
          cum += e[j];
          if (cum > target)
            return j;
          if (e[j] > 0.0)
            last = j;
        }
      return last;
    }
  return vocab - 1;
}

/* The scratch (exponentials and block sums) on the stack, or the heap
 * for a large vocabulary. */
int32_t
tach_sample_row (const float *z, int vocab, float u, double *lse)
{
  double stack[SAMPLE_STACK + SAMPLE_STACK / SAMPLE_BLOCK + 1];
  g_autofree double *heap = NULL;
  double *e = stack, *bs;
  double zmax, sum;
  int32_t pick;

  if (vocab > SAMPLE_STACK)
    e = heap = g_new (double, (size_t) vocab + (size_t) vocab / SAMPLE_BLOCK + 1);
  bs = e + vocab;
  sum = sample_sums (z, vocab, e, bs, &zmax);
  pick = sample_pick (e, bs, vocab, (double) u * sum);
  if (lse != NULL)
    *lse = zmax + log (sum);
  return pick;
}

double
tach_sample_lse (const float *z, int vocab)
{
  double lse;

  /* The walk for u = 0 stops at the first token of non-zero mass. */
  tach_sample_row (z, vocab, 0.0f, &lse);
  return lse;
}
