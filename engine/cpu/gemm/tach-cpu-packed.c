/* tach-cpu-packed.c: small x W^T products on a copy of W packed when a
 * plan is built (tach-cpu-packed-nt.h), for weights that a plan reads many
 * times unchanged: one stream's LSTM steps in a generation loop; the gemm op
 * runs them on frozen weights (tach-cpu-gemm-frozen.c).
 *
 * Threads: any; each call touches only its own arguments.
 */
#include <string.h>

#include "tach-cpu-private.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && defined(__ELF__)
#define TACH_CPU_PACKED_KERNELS 1
#define TACH_VEC 512
#include "tach-cpu-vec.h"
#include "tach-cpu-packed-nt.h"
#undef TACH_VEC
#define TACH_VEC 256
#include "tach-cpu-vec.h"
#include "tach-cpu-packed-nt.h"
#undef TACH_VEC
#endif

/* Rows of W in a block of the packed copy, and k's values in one of its
 * vectors: one vector of the level the kernels run at (decided once per
 * process); k padded to a whole vector (tach-cpu-packed-nt.h). */
static size_t
packed_rows (void)
{
  return MAX (tach_cpu_isa_lanes (), 8);
}

/* @x rounded up to a whole number of vectors. */
static size_t
packed_round (size_t x)
{
  size_t rows = packed_rows ();

  return (x + rows - 1) / rows * rows;
}

size_t
tach_cpu_packed_nt_floats (size_t n, size_t k)
{
  return packed_round (n) * packed_round (k);
}

gboolean
tach_cpu_packed_nt_usable (size_t n)
{
#ifdef TACH_CPU_PACKED_KERNELS
  TachCpuIsa isa = tach_cpu_isa ();

  /* Where tach_cpu_sgemm_local's small kernels are the vector ones. */
  return (isa == TACH_CPU_ISA_AVX512 && n >= 16) || (isa == TACH_CPU_ISA_AVX2 && n >= 8);
#else
  (void) n;
  return FALSE;
#endif
}

void
tach_cpu_pack_nt (size_t n, size_t k, const float *b, size_t ldb, float *packed)
{
  size_t rows = packed_rows (), kp = packed_round (k);

  /* Block j's vector v: its rows' values at p = v L .. v L + L - 1. */
  for (size_t j = 0; j < n; j += rows)
    for (size_t p0 = 0; p0 < kp; p0 += rows)
      for (size_t r = 0; r < rows; r++)
        {
          float *vec = packed + j * kp + (p0 + r) * rows;

          for (size_t q = 0; q < rows; q++)
            vec[q] = j + r < n && p0 + q < k ? b[(j + r) * ldb + p0 + q] : 0.0f;
        }
}

void
tach_cpu_packed_nt (size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                    const float *packed, float beta, float *c, size_t ldc)
{
#ifdef TACH_CPU_PACKED_KERNELS
  if (m == 0 || n == 0)
    return;
  if (tach_cpu_isa () == TACH_CPU_ISA_AVX512)
    packed_nt_avx512 (m, n, k, alpha, a, lda, packed, beta, c, ldc);
  else
    packed_nt_avx2 (m, n, k, alpha, a, lda, packed, beta, c, ldc);
#else
  (void) m, (void) n, (void) k, (void) alpha, (void) a, (void) lda, (void) packed, (void) beta,
    (void) c, (void) ldc;
  g_assert_not_reached ();
#endif
}

/* Products of at least this many multiply-adds on a packed copy split
 * its blocks between the threads the ops run on now: a decoding step's
 * product reads its weight once and is bound by the read rate, which two
 * cores together raise (bench/HISTORY.md: l2-read on the AMD EPYC, 5.0
 * bytes/ns on one core against 8.6 on two, loaded).  Each output is
 * computed whole by one thread, so the split changes no bits. */
#define PACKED_THREADS_MIN_MACS (64.0 * 1024)

void
tach_cpu_packed_nt_threads (TachBackend *be, size_t m, size_t n, size_t k, float alpha,
                            const float *a, size_t lda, const float *packed, float beta, float *c,
                            size_t ldc)
{
  size_t rows = packed_rows (), kp = packed_round (k), blocks = (n + rows - 1) / rows;
  int parts = (int) MIN ((size_t) tach_cpu_threads_now (be), blocks);

  if (parts <= 1 || (double) m * (double) n * (double) k < PACKED_THREADS_MIN_MACS)
    {
      tach_cpu_packed_nt (m, n, k, alpha, a, lda, packed, beta, c, ldc);
      return;
    }
  tach_cpu_bind_threads (be);
#pragma omp parallel for schedule (static)
  for (int t = 0; t < parts; t++)
    {
      size_t j0 = blocks * (size_t) t / (size_t) parts * rows;
      size_t j1 = MIN (blocks * (size_t) (t + 1) / (size_t) parts * rows, n);

      tach_cpu_packed_nt (m, j1 - j0, k, alpha, a, lda, packed + j0 * kp, beta, c + j0, ldc);
    }
}
