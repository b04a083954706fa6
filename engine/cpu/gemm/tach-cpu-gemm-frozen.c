/* tach-cpu-gemm-frozen.c: the gemm op, which runs a product whose B is a
 * frozen weight (tach_backend_freeze: a generation loop's) on a packed copy
 * of it where tach_cpu_gemm would run its small kernels, with the same
 * bits, and every other product through tach_cpu_gemm.  Above both the
 * products (tach-cpu-gemm.c) and the packed kernels (tach-cpu-packed.c),
 * which it chooses between.
 *
 * Threads: the engine thread (the backend's state); the packed products
 * split between the threads the ops run on.
 */
#include "tach-cpu-private.h"

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
          tach_cpu_packed_nt_threads (be, (size_t) m, (size_t) n, (size_t) k, alpha, a, (size_t) lda,
                                      packed, beta, c, (size_t) ldc);
          return;
        }
    }
  tach_cpu_gemm (be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
