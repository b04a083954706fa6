/* tach-cpu-gemm-frozen.c: the gemm op, which runs a product whose B is a
 * frozen weight (tach_backend_freeze: a generation loop's) on a packed copy
 * of it where tach_cpu_gemm would run its small kernels, with the same
 * bits; the larger x W^T products on a frozen W (a prefill's, a row per
 * prompt token; several streams' decoding) on a oneDNN matmul primitive
 * whose weights were reordered once into the layout its brgemm kernels
 * read, where dnnl_sgemm would pack W again at every call (prefill 1.2-1.7x
 * faster, interleaved runs on the loaded 2-core AMD EPYC; the copy is as
 * large as W); and every other product through tach_cpu_gemm.  Above both
 * the products (tach-cpu-gemm.c) and the packed kernels
 * (tach-cpu-packed.c), which it chooses between.
 *
 * Threads: the engine thread (the backend's state); the packed products
 * and the matmuls run on the threads the ops run on now.
 */
#include <string.h>

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

/* A product shape on a frozen B, for a number of threads: once it comes
 * again (a prefill per request, several streams' decoding every step; not
 * kv-cache=none's prefix, a row longer each step, until its next
 * request), a matmul primitive and B reordered for it (a frozen copy:
 * another primitive's on the same B when their layouts agree); none where
 * oneDNN would run that shape on other kernels than its brgemm ones. */
typedef struct {
  const float       *b;
  int                m, n, k, lda, ldb, ldc, threads;
  gboolean           made;      /* the primitive was asked for */
  dnnl_primitive_t   prim;      /* owned */
  dnnl_memory_t      a, w, c;   /* owned; a's and c's handles set per call */
  dnnl_memory_desc_t w_md;
  void              *w_data;
} GemmMatmul;

/* More shapes than this (kv-cache=none's prefixes, 4 weights a block
 * each) run through tach_cpu_gemm. */
#define GEMM_MATMULS_MAX 512

static void
gemm_matmul_free (gpointer data)
{
  GemmMatmul *g = data;

  if (g->prim != NULL)
    dnnl_primitive_destroy (g->prim);
  if (g->a != NULL)
    dnnl_memory_destroy (g->a);
  if (g->w != NULL)
    dnnl_memory_destroy (g->w);
  if (g->c != NULL)
    dnnl_memory_destroy (g->c);
  g_free (g);
}

void
tach_cpu_gemm_packs_clear (TachBackend *be)
{
  g_clear_pointer (&TACH_CPU (be)->gemm_packs, g_array_unref);
  g_clear_pointer (&TACH_CPU (be)->gemm_matmuls, g_ptr_array_unref);
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

/* The frozen @g->b in the layout @g->w_md: an earlier primitive's copy
 * where it has that layout, else a new frozen copy reordered into it;
 * NULL: none (no memory, or oneDNN failed: a sticky error). */
static void *
gemm_matmul_weights (TachBackend *be, const GemmMatmul *g)
{
  TachCpuBackend *cpu = TACH_CPU (be);
  dnnl_dims_t dims = { g->k, g->n }, strides = { 1, g->ldb };
  dnnl_memory_desc_t plain_md;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_t reorder = NULL;
  dnnl_memory_t from = NULL, to = NULL;
  dnnl_exec_arg_t args[2];
  void *data = NULL;

  for (guint i = 0; i < cpu->gemm_matmuls->len; i++)
    {
      const GemmMatmul *o = g_ptr_array_index (cpu->gemm_matmuls, i);

      if (o->w_data != NULL && o->b == g->b && o->n == g->n && o->k == g->k && o->ldb == g->ldb
          && dnnl_memory_desc_equal (&o->w_md, &g->w_md))
        return o->w_data;
    }
  data = tach_cpu_frozen_copy_alloc (be, dnnl_memory_desc_get_size (&g->w_md));
  if (data == NULL)
    return NULL;
  /* B [n, k] row-major is the matmul's [k, n] weights, transposed. */
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_strides (&plain_md, 2, dims, dnnl_f32, strides),
                 fail);
  TACH_DNNL_TRY (be, dnnl_memory_create (&from, &plain_md, cpu->engine, (void *) g->b), fail);
  TACH_DNNL_TRY (be, dnnl_memory_create (&to, &g->w_md, cpu->engine, data), fail);
  TACH_DNNL_TRY (be, dnnl_reorder_primitive_desc_create (&pd, &plain_md, cpu->engine, &g->w_md,
                                                         cpu->engine, NULL),
                 fail);
  TACH_DNNL_TRY (be, dnnl_primitive_create (&reorder, pd), fail);
  args[0] = (dnnl_exec_arg_t) { DNNL_ARG_FROM, from };
  args[1] = (dnnl_exec_arg_t) { DNNL_ARG_TO, to };
  if (!tach_cpu_execute (be, reorder, 2, args))
    goto fail;
  dnnl_primitive_destroy (reorder);
  dnnl_primitive_desc_destroy (pd);
  dnnl_memory_destroy (to);
  dnnl_memory_destroy (from);
  return data;

fail:
  if (reorder != NULL)
    dnnl_primitive_destroy (reorder);
  if (pd != NULL)
    dnnl_primitive_desc_destroy (pd);
  if (to != NULL)
    dnnl_memory_destroy (to);
  if (from != NULL)
    dnnl_memory_destroy (from);
  /* The copy goes with the others when the epoch changes. */
  return NULL;
}

/* @g's C = A B^T, B [n, k] frozen, on a matmul primitive whose weights
 * layout is its kernels' own ("any"), or none where its kernels are not
 * brgemm's; FALSE on a failure (a sticky error). */
static gboolean
gemm_matmul_make (TachBackend *be, GemmMatmul *g)
{
  TachCpuBackend *cpu = TACH_CPU (be);
  dnnl_dims_t a_dims = { g->m, g->k }, w_dims = { g->k, g->n }, c_dims = { g->m, g->n };
  dnnl_dims_t a_strides = { g->lda, 1 }, c_strides = { g->ldc, 1 };
  dnnl_memory_desc_t a_md, w_any, c_md;
  dnnl_matmul_desc_t desc;
  dnnl_primitive_desc_t pd = NULL;
  const char *impl = NULL;

  g->made = TRUE;
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_strides (&a_md, 2, a_dims, dnnl_f32, a_strides),
                 fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_tag (&w_any, 2, w_dims, dnnl_f32,
                                                   dnnl_format_tag_any),
                 fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_strides (&c_md, 2, c_dims, dnnl_f32, c_strides),
                 fail);
  TACH_DNNL_TRY (be, dnnl_matmul_desc_init (&desc, &a_md, &w_any, /* bias = */ NULL, &c_md),
                 fail);
  /* Made for the threads the ops run on now, as dnnl_sgemm would run:
   * one made for all of them waits at every barrier for a thread that
   * another process holds. */
  tach_cpu_bind_threads (be);
  TACH_DNNL_TRY (be, dnnl_primitive_desc_create (&pd, &desc, NULL, cpu->engine, NULL), fail);
  /* Only the brgemm kernels (AVX-512) read the reordered weights as they
   * are: oneDNN's gemm-based matmul below them packs B at every call as
   * dnnl_sgemm does, and ran 64 x 1152 x 384 at 0.85x of it at AVX2. */
  TACH_DNNL_TRY (be, dnnl_primitive_desc_query (pd, dnnl_query_impl_info_str, 0, &impl), fail);
  if (impl == NULL || strncmp (impl, "brg", 3) != 0)
    {
      dnnl_primitive_desc_destroy (pd);
      return TRUE;
    }
  TACH_DNNL_TRY (be, dnnl_primitive_create (&g->prim, pd), fail);
  g->w_md = *dnnl_primitive_desc_query_md (pd, dnnl_query_weights_md, 0);
  if ((g->w_data = gemm_matmul_weights (be, g)) == NULL)
    goto fail;
  TACH_DNNL_TRY (be, dnnl_memory_create (&g->w, &g->w_md, cpu->engine, g->w_data), fail);
  g->a = tach_cpu_memory_new (be, &a_md);
  g->c = tach_cpu_memory_new (be, &c_md);
  if (!tach_backend_ok (be))
    goto fail;
  dnnl_primitive_desc_destroy (pd);
  return TRUE;

fail:
  if (pd != NULL)
    dnnl_primitive_desc_destroy (pd);
  /* Never run half made. */
  g_clear_pointer (&g->prim, dnnl_primitive_destroy);
  return FALSE;
}

/* C = A B^T on the frozen B's matmul primitive for this shape, made at
 * its second use; FALSE: none runs (its first use, too many shapes, or a
 * failure, which left a sticky error). */
static gboolean
gemm_matmul (TachBackend *be, int m, int n, int k, const float *a, int lda, const float *b,
             int ldb, float *c, int ldc)
{
  TachCpuBackend *cpu = TACH_CPU (be);
  GemmMatmul *g = NULL;
  int threads = (int) tach_cpu_threads_now (be);
  dnnl_exec_arg_t args[3];

  /* The primitives of an earlier epoch read copies freed already. */
  if (cpu->gemm_matmuls == NULL)
    cpu->gemm_matmuls = g_ptr_array_new_with_free_func (gemm_matmul_free);
  if (cpu->gemm_matmuls_epoch != cpu->frozen_epoch)
    {
      g_ptr_array_set_size (cpu->gemm_matmuls, 0);
      cpu->gemm_matmuls_epoch = cpu->frozen_epoch;
    }
  for (guint i = 0; g == NULL && i < cpu->gemm_matmuls->len; i++)
    {
      GemmMatmul *o = g_ptr_array_index (cpu->gemm_matmuls, i);

      if (o->b == b && o->m == m && o->n == n && o->k == k && o->lda == lda && o->ldb == ldb
          && o->ldc == ldc && o->threads == threads)
        g = o;
    }
  if (g == NULL)
    {
      if (cpu->gemm_matmuls->len >= GEMM_MATMULS_MAX)
        return FALSE;
      g = g_new0 (GemmMatmul, 1);
      *g = (GemmMatmul) { .b = b, .m = m, .n = n, .k = k, .lda = lda, .ldb = ldb, .ldc = ldc,
                          .threads = threads };
      g_ptr_array_add (cpu->gemm_matmuls, g);
      return FALSE;
    }
  if (!g->made && !gemm_matmul_make (be, g))
    return FALSE;
  if (g->prim == NULL)
    return FALSE;
  TACH_DNNL_TRY (be, dnnl_memory_set_data_handle (g->a, (void *) a), fail);
  TACH_DNNL_TRY (be, dnnl_memory_set_data_handle (g->c, c), fail);
  args[0] = (dnnl_exec_arg_t) { DNNL_ARG_SRC, g->a };
  args[1] = (dnnl_exec_arg_t) { DNNL_ARG_WEIGHTS, g->w };
  args[2] = (dnnl_exec_arg_t) { DNNL_ARG_DST, g->c };
  tach_cpu_bind_threads (be);
  TACH_DNNL_TRY (be, dnnl_primitive_execute (g->prim, cpu->stream, 3, args), fail);
fail:
  return TRUE;
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
  /* The other x W^T on a frozen W (a prefill's, or several streams'
   * decoding): the matmul on W reordered once, not dnnl_sgemm, which packs
   * W again at every call.  At Tach's AVX-512 level only (its kernels'
   * level can be below oneDNN's, which picks brgemm on its own), and never
   * a thin product: where the packed kernels do not run, a thin one runs on
   * dnnl_sgemm as the unfrozen product does, with its bits. */
  if (m > 0 && n > 0 && k > 0 && tb && !ta && alpha == 1.0f && beta == 0.0f
      && TACH_CPU (be)->frozen != NULL && tach_cpu_isa () == TACH_CPU_ISA_AVX512
      && !tach_cpu_sgemm_takes_small (ta, tb, (size_t) m, (size_t) n, (size_t) k)
      && !tach_cpu_sgemm_is_thin (ta, tb, (size_t) m, (size_t) n, (size_t) k)
      && tach_cpu_frozen_epoch (be, b, ((size_t) (n - 1) * ldb + k) * sizeof (float)) != 0
      && gemm_matmul (be, m, n, k, a, lda, b, ldb, c, ldc))
    return;
  tach_cpu_gemm (be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
