/* tach-cpu-packed.c: small x W^T products on a copy of W packed when a
 * plan is built (tach-cpu-packed-nt.h), for weights that a plan reads many
 * times unchanged: one stream's LSTM steps in a generation loop.
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

/* ---------------------------------------------------------- frozen weights */

/* A packed copy of a frozen B of the gemm op (a frozen copy: it goes, with
 * every other, when a frozen range is written or freed, tach-cpu-memory.c). */
typedef struct {
  const float *b;
  size_t       n, k, ldb;
  float       *packed;
} GemmPack;

/* More distinct frozen Bs than this run unpacked.  A gpt decoding step
 * reads four weights a block and the LM head: 25 at 6 layers, 49 at GPT-2
 * small's 12 (at 8, 17 of the 25 ran from the plain rows). */
#define GEMM_PACKS_MAX 64

void
tach_cpu_gemm_packs_clear (TachBackend *be)
{
  g_clear_pointer (&TACH_CPU (be)->gemm_packs, g_array_unref);
}

/* The packed copy of the frozen @b for the gemm op, made on first use;
 * NULL: none (too many, or no memory: the plain product runs). */
static const float *
gemm_pack (TachBackend *be, const float *b, size_t n, size_t k, size_t ldb)
{
  TachCpuBackend *cpu = TACH_CPU (be);
  GemmPack pack = { b, n, k, ldb, NULL };

  /* The copies of an earlier epoch are freed already. */
  if (cpu->gemm_packs == NULL)
    cpu->gemm_packs = g_array_new (FALSE, FALSE, sizeof (GemmPack));
  if (cpu->gemm_packs_epoch != cpu->frozen_epoch)
    {
      g_array_set_size (cpu->gemm_packs, 0);
      cpu->gemm_packs_epoch = cpu->frozen_epoch;
    }
  for (guint i = 0; i < cpu->gemm_packs->len; i++)
    {
      const GemmPack *g = &g_array_index (cpu->gemm_packs, GemmPack, i);

      if (g->b == b && g->n == n && g->k == k && g->ldb == ldb)
        return g->packed;
    }
  if (cpu->gemm_packs->len >= GEMM_PACKS_MAX)
    return NULL;
  pack.packed = tach_cpu_frozen_copy_alloc (be, tach_cpu_packed_nt_floats (n, k)
                                                * sizeof (float));
  if (pack.packed == NULL)
    return NULL;
  tach_cpu_pack_nt (n, k, b, ldb, pack.packed);
  g_array_append_val (cpu->gemm_packs, pack);
  return pack.packed;
}

/* Products of at least this many multiply-adds on a packed copy split
 * its blocks between the threads the ops run on now: a decoding step's
 * product reads its weight once and is bound by the read rate, which two
 * cores together raise (bench/HISTORY.md: l2-read on the AMD EPYC, 5.0
 * bytes/ns on one core against 8.6 on two, loaded).  Each output is
 * computed whole by one thread, so the split changes no bits. */
#define PACKED_THREADS_MIN_MACS (64.0 * 1024)

static void
packed_nt_threads (TachBackend *be, size_t m, size_t n, size_t k, float alpha, const float *a,
                   size_t lda, const float *packed, float beta, float *c, size_t ldc)
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

void
tach_cpu_gemm_op (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k, float alpha,
                  const float *a, int lda, const float *b, int ldb, float beta, float *c,
                  int ldc)
{
  /* Where tach_cpu_gemm runs the small kernels on a frozen B: the same
   * bits from its packed copy. */
  if (m > 0 && n > 0 && k > 0 && tb && !ta && TACH_CPU (be)->frozen != NULL
      && tach_cpu_sgemm_takes_small (ta, tb, (size_t) m, (size_t) n, (size_t) k)
      && tach_cpu_packed_nt_usable ((size_t) n)
      && tach_cpu_frozen_epoch (be, b, ((size_t) (n - 1) * ldb + k) * sizeof (float)) != 0)
    {
      const float *packed = gemm_pack (be, b, (size_t) n, (size_t) k, (size_t) ldb);

      if (packed != NULL)
        {
          packed_nt_threads (be, (size_t) m, (size_t) n, (size_t) k, alpha, a, (size_t) lda,
                             packed, beta, c, (size_t) ldc);
          return;
        }
    }
  tach_cpu_gemm (be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
