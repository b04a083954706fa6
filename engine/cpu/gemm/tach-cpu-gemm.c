/* tach-cpu-gemm.c: the CPU backend's dense algebra: dnnl_sgemm on the
 * OpenMP pool for real products, and kernels on the calling thread for the
 * tiny ones (one stream's LSTM steps and output layer in generation), where
 * waking the pool would cost more than the work.
 *
 * The tiny products with a transposed B (x W^T with W [n, k] row-major, as
 * every layer of Tach stores its weights) are dot products of rows.  On
 * AVX-512 and AVX2 they run in one kernel written once against a vector
 * width (tach-cpu-gemm-nt.h over tach-cpu-vec.h) and compiled for each:
 * blocks of sixteen or eight rows of B, one accumulator vector each, the
 * k tail by masked loads, and the horizontal sums done together by a
 * transpose-and-add tree, so that no output pays a reduction of its own.
 * Each output's arithmetic depends only on k, never on m or its place in
 * C, so a product computed whole or row by row (fused or unrolled LSTM)
 * gives the same bits.
 *
 * Threads: the engine thread.
 */
#include <string.h>

#include "tach-cpu-private.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && defined(__ELF__)
#define TACH_CPU_VEC_KERNELS 1
#endif

/* Products below this many multiply-adds (token-by-token generation, one
 * LSTM step of one stream) run on the calling thread in plain loops:
 * dnnl_sgemm would wake the thread pool for work of a few microseconds. */
#define TACH_CPU_SMALL_GEMM (256 * 1024)

static inline void
store_scaled (float *c, float sum, float alpha, float beta)
{
  *c = alpha * sum + (beta == 0.0f ? 0.0f : beta * *c);
}

/* C = alpha A B^T + beta C, A [m, k], B [n, k]: dot products of rows, four
 * rows of B at a time so that each load of A serves four outputs. */
TACH_CPU_SIMD_BODY void
small_gemm_nt_body (size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                    const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
  for (size_t i = 0; i < m; i++)
    {
      const float *ar = a + i * lda;
      float *cr = c + i * ldc;
      size_t j = 0;

      for (; j + 4 <= n; j += 4)
        {
          const float *b0 = b + j * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
          float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;

#pragma omp simd reduction(+:s0, s1, s2, s3)
          for (size_t p = 0; p < k; p++)
            {
              float x = ar[p];

              s0 += x * b0[p];
              s1 += x * b1[p];
              s2 += x * b2[p];
              s3 += x * b3[p];
            }
          store_scaled (cr + j, s0, alpha, beta);
          store_scaled (cr + j + 1, s1, alpha, beta);
          store_scaled (cr + j + 2, s2, alpha, beta);
          store_scaled (cr + j + 3, s3, alpha, beta);
        }
      for (; j < n; j++)
        {
          const float *br = b + j * ldb;
          float sum = 0.0f;

#pragma omp simd reduction(+:sum)
          for (size_t p = 0; p < k; p++)
            sum += ar[p] * br[p];
          store_scaled (cr + j, sum, alpha, beta);
        }
    }
}

TACH_CPU_SIMD_DISPATCH (static, small_gemm_nt,
                        (size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                         const float *b, size_t ldb, float beta, float *c, size_t ldc),
                        (m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))

/* C = alpha op(A) B + beta C, B [k, n]: rows of C as sums of rows of B. */
TACH_CPU_SIMD_BODY void
small_gemm_xn_body (gboolean ta, size_t m, size_t n, size_t k, float alpha, const float *a,
                    size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
  for (size_t i = 0; i < m; i++)
    {
      float *cr = c + i * ldc;

      if (beta == 0.0f)
        memset (cr, 0, n * sizeof (float));
      else if (beta != 1.0f)
        for (size_t j = 0; j < n; j++)
          cr[j] *= beta;
      for (size_t p = 0; p < k; p++)
        {
          float s = alpha * (ta ? a[p * lda + i] : a[i * lda + p]);
          const float *br = b + p * ldb;

#pragma omp simd
          for (size_t j = 0; j < n; j++)
            cr[j] += s * br[j];
        }
    }
}

TACH_CPU_SIMD_DISPATCH (static, small_gemm_xn,
                        (gboolean ta, size_t m, size_t n, size_t k, float alpha, const float *a,
                         size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc),
                        (ta, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))

#ifdef TACH_CPU_VEC_KERNELS
/* small_gemm_nt_avx512 and small_gemm_nt_avx2: one kernel source, built
 * at each width (tach-cpu-gemm-nt.h). */
#define TACH_VEC 512
#include "tach-cpu-vec.h"
#include "tach-cpu-gemm-nt.h"
#undef TACH_VEC
#define TACH_VEC 256
#include "tach-cpu-vec.h"
#include "tach-cpu-gemm-nt.h"
#undef TACH_VEC
#endif

gboolean
tach_cpu_sgemm_is_small (size_t m, size_t n, size_t k)
{
  return (double) m * (double) n * (double) k <= TACH_CPU_SMALL_GEMM;
}

/* Thin products x W^T of up to THIN_ROWS rows and at most THIN_MACS
 * multiply-adds also run on the small kernels: one token's decoding step
 * at batch 1 or 2 (gpt's qkv, fc and fc2, 442 k to 590 k multiply-adds at
 * width 384) reads each weight once whatever runs it, and on the small
 * kernels a frozen W is read from its packed copy, one sequential stream
 * (tach-cpu-packed.c), where dnnl_sgemm read the plain rows.  Larger
 * ones (GPT-2 small's LM head, 38.6 M) stay on dnnl_sgemm, which threads
 * them. */
#define THIN_ROWS 2
#define THIN_MACS (4.0 * 1024 * 1024)

gboolean
tach_cpu_sgemm_is_thin (gboolean ta, gboolean tb, size_t m, size_t n, size_t k)
{
  return !ta && tb && m <= THIN_ROWS && (double) m * (double) n * (double) k <= THIN_MACS;
}

gboolean
tach_cpu_sgemm_takes_small (gboolean ta, gboolean tb, size_t m, size_t n, size_t k)
{
  if (tach_cpu_sgemm_is_small (m, n, k))
    return TRUE;
  return tach_cpu_sgemm_is_thin (ta, tb, m, n, k) && tach_cpu_packed_nt_usable (n);
}

gboolean
tach_cpu_sgemm (TachBackend *be, gboolean ta, gboolean tb, size_t m, size_t n, size_t k,
                float alpha, const float *a, size_t lda, const float *b, size_t ldb,
                float beta, float *c, size_t ldc)
{
  return tach_cpu_sgemm_mode (be, TACH_CPU_GEMM_AUTO, ta, tb, m, n, k, alpha, a, lda, b, ldb,
                              beta, c, ldc);
}

/* The small kernels for C = alpha op(A) op(B) + beta C; FALSE when they
 * do not cover the transposes (both transposed). */
static gboolean
small_gemm (gboolean ta, gboolean tb, size_t m, size_t n, size_t k, float alpha,
            const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c,
            size_t ldc)
{
  if (ta && tb)
    return FALSE;
  if (tb)
    {
#ifdef TACH_CPU_VEC_KERNELS
      TachCpuIsa isa = tach_cpu_isa ();

      if (n >= 16 && isa == TACH_CPU_ISA_AVX512)
        {
          small_gemm_nt_avx512 (m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
          return TRUE;
        }
      if (n >= 8 && isa >= TACH_CPU_ISA_AVX2)
        {
          small_gemm_nt_avx2 (m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
          return TRUE;
        }
#endif
      small_gemm_nt (m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
  else
    small_gemm_xn (ta, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  return TRUE;
}

dnnl_status_t
tach_cpu_sgemm_local (gboolean ta, gboolean tb, size_t m, size_t n, size_t k, float alpha,
                      const float *a, size_t lda, const float *b, size_t ldb, float beta,
                      float *c, size_t ldc)
{
  if (m == 0 || n == 0)
    return dnnl_success;
  if (tach_cpu_sgemm_takes_small (ta, tb, m, n, k)
      && small_gemm (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
    return dnnl_success;
  /* Inside a parallel region oneDNN runs the product on this thread. */
  return dnnl_sgemm (ta ? 'T' : 'N', tb ? 'T' : 'N', (dnnl_dim_t) m, (dnnl_dim_t) n,
                     (dnnl_dim_t) k, alpha, a, (dnnl_dim_t) lda, b, (dnnl_dim_t) ldb, beta, c,
                     (dnnl_dim_t) ldc);
}

/* Products of at least GEMM_ROWS_MIN rows and at most GEMM_ROWS_MAX_MACS
 * multiply-adds (W2's output layer in training: 256 x 554 x 100 and its
 * two gradients) run as GEMM_ROW_CHUNKS runs of whole rows, each by
 * dnnl_sgemm alone on a thread of the pool: its own threading of these
 * shapes on two threads took 86, 106 and 117 us where a thread's half of
 * the rows alone takes 84-91 (the Intel Xeon of bench/README.md; lstm-lm
 * train, interleaved pairs: +1.5%).  Always the same chunks, whatever the
 * number of threads: at AVX2 dnnl_sgemm gives these shapes other bits
 * when the rows come in other runs. */
#define GEMM_ROW_CHUNKS 4
#define GEMM_ROWS_MIN 256
#define GEMM_ROWS_MAX_MACS (32.0 * 1024 * 1024)

static gboolean
gemm_row_chunks (TachBackend *be, gboolean ta, gboolean tb, size_t m, size_t n, size_t k,
                 float alpha, const float *a, size_t lda, const float *b, size_t ldb,
                 float beta, float *c, size_t ldc)
{
  size_t rows = (m + GEMM_ROW_CHUNKS - 1) / GEMM_ROW_CHUNKS;
  dnnl_status_t status = dnnl_success;

  tach_cpu_bind_threads (be);
#pragma omp parallel for schedule (static)
  for (int h = 0; h < GEMM_ROW_CHUNKS; h++)
    {
      size_t i0 = (size_t) h * rows, mi = MIN (rows, m - MIN (i0, m));
      dnnl_status_t st = mi == 0 ? dnnl_success
                                 : dnnl_sgemm (ta ? 'T' : 'N', tb ? 'T' : 'N', (dnnl_dim_t) mi,
                                               (dnnl_dim_t) n, (dnnl_dim_t) k, alpha,
                                               ta ? a + i0 : a + i0 * lda, (dnnl_dim_t) lda, b,
                                               (dnnl_dim_t) ldb, beta, c + i0 * ldc,
                                               (dnnl_dim_t) ldc);

      if (st != dnnl_success)
        {
#pragma omp atomic write
          status = st;
        }
    }
  if (status != dnnl_success)
    {
      tach_cpu_dnnl_fail (be, status, "dnnl_sgemm (a run of rows)", __FILE__, __LINE__);
      return FALSE;
    }
  return TRUE;
}

gboolean
tach_cpu_sgemm_mode (TachBackend *be, TachCpuGemmMode mode, gboolean ta, gboolean tb,
                     size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                     const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
  gboolean alone = mode == TACH_CPU_GEMM_SERIAL || mode == TACH_CPU_GEMM_SPLIT;

  if (m == 0 || n == 0)
    return TRUE;
  /* The size picks the kernel on every path, so that every path gives
   * each output the same bits (dnnl_sgemm's do not depend on its thread
   * count: measured for the LSTMs' shapes, 1 and 2 threads, AVX-512 and
   * AVX2); the mode only picks where dnnl_sgemm runs. */
  if (tach_cpu_sgemm_takes_small (ta, tb, m, n, k)
      && small_gemm (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
    return TRUE;
  if (mode == TACH_CPU_GEMM_AUTO && m >= GEMM_ROWS_MIN
      && (double) m * (double) n * (double) k <= GEMM_ROWS_MAX_MACS)
    return gemm_row_chunks (be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (alone)
    omp_set_num_threads (1);
  else
    tach_cpu_bind_threads (be);
  /* dnnl_sgemm is row-major, like Tach's contract. */
  TACH_DNNL_TRY (be, dnnl_sgemm (ta ? 'T' : 'N', tb ? 'T' : 'N', (dnnl_dim_t) m, (dnnl_dim_t) n,
                                 (dnnl_dim_t) k, alpha, a, (dnnl_dim_t) lda, b, (dnnl_dim_t) ldb,
                                 beta, c, (dnnl_dim_t) ldc), fail);
  if (alone)
    tach_cpu_bind_threads (be);
  return TRUE;
fail:
  if (alone)
    tach_cpu_bind_threads (be);
  return FALSE;
}

void
tach_cpu_gemm (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k,
               float alpha, const float *a, int lda, const float *b, int ldb,
               float beta, float *c, int ldc)
{
  if (m <= 0 || n <= 0)
    return;
  tach_cpu_sgemm (be, ta, tb, m, n, MAX (k, 0), alpha, a, lda, b, ldb, beta, c, ldc);
}

