/* tach-cpu-gemm-bf16.c: the gemm_bf16 slot: C = alpha op(A) op(B) + beta C
 * with A and B rounded to bf16 and the products summed in fp32, on a
 * oneDNN matmul primitive (AVX-512 BF16 kernels).
 *
 * The operands arrive in fp32 (the caller's activations and its fp32
 * master weights) and are rounded here into the backend's bf16 scratch,
 * every call: the weights change every step, and rounding them costs a
 * fraction of what the bf16 kernels save over sgemm on a dense layer of
 * the CNN (3136 x 1024).  A transposed operand stays transposed: the
 * matmul reads it through its strides.  One primitive per shape, made on
 * first use and kept by the backend until it is freed.
 *
 * Threads: the engine thread.
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-cpu-private.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("no-trapping-math")
#endif

/* One cached product shape. */
typedef struct {
  dnnl_primitive_t prim;   /* owned */
  dnnl_memory_t    a;      /* owned; handle set per call */
  dnnl_memory_t    b;      /* owned; handle set per call */
  dnnl_memory_t    c;      /* owned; handle set per call */
} Bf16Gemm;

static void
bf16_gemm_free (gpointer data)
{
  Bf16Gemm *g = data;

  if (g->prim != NULL)
    dnnl_primitive_destroy (g->prim);
  if (g->a != NULL)
    dnnl_memory_destroy (g->a);
  if (g->b != NULL)
    dnnl_memory_destroy (g->b);
  if (g->c != NULL)
    dnnl_memory_destroy (g->c);
  g_free (g);
}

void
tach_cpu_gemm_bf16_clear (TachBackend *be)
{
  TachCpuBackend *cpu = TACH_CPU (be);

  g_clear_pointer (&cpu->bf16_gemms, g_hash_table_unref);
  tach_cpu_mem_free (be, cpu->bf16_scratch);
  cpu->bf16_scratch = NULL;
  cpu->bf16_scratch_elems = 0;
}

/* Rounds a [rows, cols] fp32 matrix (row stride @ld) to a packed bf16 one,
 * to nearest even as oneDNN's reorders round; NaNs stay NaNs. */
TACH_CPU_SIMD_BODY void
round_row_body (size_t cols, const float *restrict src, guint16 *restrict dst)
{
#pragma omp simd
  for (size_t j = 0; j < cols; j++)
    {
      guint32 u;

      memcpy (&u, src + j, sizeof u);
      dst[j] = (u & 0x7fffffffu) > 0x7f800000u
               ? (guint16) ((u >> 16) | 0x40u)
               : (guint16) ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
}

TACH_CPU_SIMD_DISPATCH (static, round_row,
                        (size_t cols, const float *restrict src, guint16 *restrict dst),
                        (cols, src, dst))

static void
round_matrix (size_t rows, size_t cols, const float *src, size_t ld, guint16 *dst)
{
#pragma omp parallel for if (rows * cols >= TACH_CPU_PARALLEL_MIN)
  for (size_t r = 0; r < rows; r++)
    round_row (cols, src + r * ld, dst + r * cols);
}

/* The primitive for one shape; NULL + sticky error on failure. */
static Bf16Gemm *
bf16_gemm_new (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k, float alpha,
               float beta, int ldc)
{
  TachCpuBackend *cpu = TACH_CPU (be);
  Bf16Gemm *g = g_new0 (Bf16Gemm, 1);
  dnnl_memory_desc_t a_md, b_md, c_md;
  dnnl_matmul_desc_t desc;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t post_ops = NULL;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_dims_t a_dims = { m, k }, b_dims = { k, n }, c_dims = { m, n };
  /* Packed operands: a transposed one is stored [k, m] or [n, k]. */
  dnnl_dims_t a_strides = { ta ? 1 : k, ta ? m : 1 };
  dnnl_dims_t b_strides = { tb ? 1 : n, tb ? k : 1 };
  dnnl_dims_t c_strides = { ldc, 1 };

  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_strides (&a_md, 2, a_dims, dnnl_bf16, a_strides),
                 fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_strides (&b_md, 2, b_dims, dnnl_bf16, b_strides),
                 fail);
  TACH_DNNL_TRY (be, dnnl_memory_desc_init_by_strides (&c_md, 2, c_dims, dnnl_f32, c_strides),
                 fail);
  TACH_DNNL_TRY (be, dnnl_matmul_desc_init (&desc, &a_md, &b_md, /* bias = */ NULL, &c_md),
                 fail);
  TACH_DNNL_TRY (be, dnnl_primitive_attr_create (&attr), fail);
  if (alpha != 1.0f)
    TACH_DNNL_TRY (be, dnnl_primitive_attr_set_output_scales (attr, 1, /* mask = */ 0, &alpha),
                   fail);
  if (beta != 0.0f)
    {
      TACH_DNNL_TRY (be, dnnl_post_ops_create (&post_ops), fail);
      TACH_DNNL_TRY (be, dnnl_post_ops_append_sum (post_ops, beta), fail);
      TACH_DNNL_TRY (be, dnnl_primitive_attr_set_post_ops (attr, post_ops), fail);
    }
  TACH_DNNL_TRY (be, dnnl_primitive_desc_create (&pd, &desc, attr, cpu->engine,
                                                 /* hint = */ NULL),
                 fail);
  TACH_DNNL_TRY (be, dnnl_primitive_create (&g->prim, pd), fail);
  g->a = tach_cpu_memory_new (be, &a_md);
  g->b = tach_cpu_memory_new (be, &b_md);
  g->c = tach_cpu_memory_new (be, &c_md);
  if (!tach_backend_ok (be))
    goto fail;
  dnnl_primitive_desc_destroy (pd);
  dnnl_post_ops_destroy (post_ops);
  dnnl_primitive_attr_destroy (attr);
  return g;

fail:
  if (pd != NULL)
    dnnl_primitive_desc_destroy (pd);
  if (post_ops != NULL)
    dnnl_post_ops_destroy (post_ops);
  if (attr != NULL)
    dnnl_primitive_attr_destroy (attr);
  bf16_gemm_free (g);
  return NULL;
}

void
tach_cpu_gemm_bf16 (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k,
                    float alpha, const float *a, int lda, const float *b, int ldb,
                    float beta, float *c, int ldc)
{
  TachCpuBackend *cpu = TACH_CPU (be);
  size_t a_elems = (size_t) m * k, b_elems = (size_t) k * n;
  g_autofree char *key = NULL;
  Bf16Gemm *g;
  guint16 *abuf, *bbuf;
  dnnl_exec_arg_t args[3];

  if (m <= 0 || n <= 0)
    return;
  tach_cpu_bind_threads (be);
  if (k <= 0)
    {
      tach_cpu_gemm (be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    }
  if (cpu->bf16_gemms == NULL)
    cpu->bf16_gemms = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, bf16_gemm_free);
  key = g_strdup_printf ("%d %d %d %d %d %d %a %a", ta, tb, m, n, k, ldc, alpha, beta);
  g = g_hash_table_lookup (cpu->bf16_gemms, key);
  if (g == NULL)
    {
      /* Made for every thread of the backend, as it runs (tach_cpu_execute). */
      tach_cpu_bind_all_threads (be);
      g = bf16_gemm_new (be, ta, tb, m, n, k, alpha, beta, ldc);
      tach_cpu_bind_threads (be);
      if (g == NULL)
        return;
      g_hash_table_insert (cpu->bf16_gemms, g_steal_pointer (&key), g);
    }
  if (cpu->bf16_scratch_elems < a_elems + b_elems)
    {
      tach_cpu_mem_free (be, cpu->bf16_scratch);
      cpu->bf16_scratch_elems = 0;
      cpu->bf16_scratch = tach_cpu_mem_alloc (be, (a_elems + b_elems) * sizeof (guint16));
      if (cpu->bf16_scratch == NULL)
        return;
      cpu->bf16_scratch_elems = a_elems + b_elems;
    }
  abuf = cpu->bf16_scratch;
  bbuf = abuf + a_elems;
  round_matrix (ta ? k : m, ta ? m : k, a, lda, abuf);
  round_matrix (tb ? n : k, tb ? k : n, b, ldb, bbuf);

  TACH_DNNL_TRY (be, dnnl_memory_set_data_handle (g->a, abuf), fail);
  TACH_DNNL_TRY (be, dnnl_memory_set_data_handle (g->b, bbuf), fail);
  TACH_DNNL_TRY (be, dnnl_memory_set_data_handle (g->c, c), fail);
  args[0] = (dnnl_exec_arg_t) { DNNL_ARG_SRC, g->a };
  args[1] = (dnnl_exec_arg_t) { DNNL_ARG_WEIGHTS, g->b };
  args[2] = (dnnl_exec_arg_t) { DNNL_ARG_DST, g->c };
  tach_cpu_execute (be, g->prim, 3, args);
fail:
  return;
}
