/* test-cuda-host.c: the CUDA backend's host-side logic, which runs without
 * a GPU: how cuDNN statuses are classified and reported, cuBLAS opened on
 * first use (not at start-up), the convolution
 * block's route, and its epilogue kernels' index math, run here element by
 * element as the kernels run it.
 *
 * cuDNN's descriptor calls and its error strings are host code, so these
 * tests run on any machine where the backend was built.
 */
#include <dlfcn.h>
#include <math.h>
#include <string.h>

#include "tach-cuda-private.h"
#include "tach-cuda-conv-pool.h"

static void
test_refusal (void)
{
  /* Refusals of a shape, a layout or a data type: another algorithm may do it. */
  g_assert_true (tach_cudnn_status_is_refusal (CUDNN_STATUS_BAD_PARAM));
  g_assert_true (tach_cudnn_status_is_refusal (CUDNN_STATUS_NOT_SUPPORTED));
  g_assert_true (tach_cudnn_status_is_refusal (CUDNN_STATUS_NOT_SUPPORTED_SHAPE));
  g_assert_true (tach_cudnn_status_is_refusal (CUDNN_STATUS_NOT_SUPPORTED_LAYOUT));
  g_assert_true (tach_cudnn_status_is_refusal (CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT));
  /* cuDNN that cannot run at all, or a call that is wrong: reported. */
  g_assert_false (tach_cudnn_status_is_refusal (CUDNN_STATUS_SUCCESS));
  g_assert_false (tach_cudnn_status_is_refusal (CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER));
  g_assert_false (tach_cudnn_status_is_refusal (CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART));
  g_assert_false (tach_cudnn_status_is_refusal (CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH));
  g_assert_false (tach_cudnn_status_is_refusal (CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING));
  g_assert_false (tach_cudnn_status_is_refusal (CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE));
  g_assert_false (tach_cudnn_status_is_refusal (CUDNN_STATUS_BAD_PARAM_NULL_POINTER));
  g_assert_false (tach_cudnn_status_is_refusal (CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH));
  g_assert_false (tach_cudnn_status_is_refusal (CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED));
  g_assert_false (tach_cudnn_status_is_refusal (CUDNN_STATUS_INTERNAL_ERROR));
  g_assert_false (tach_cudnn_status_is_refusal (CUDNN_STATUS_EXECUTION_FAILED));
}

/* A real cuDNN failure: the message names the status, its number, the call
 * and what cuDNN's last-error string said about it. */
static void
test_cudnn_message (void)
{
  TachBackend be = { 0 };
  cudnnTensorDescriptor_t desc = NULL;
  int dims[1] = { -3 }, strides[1] = { 1 };
  cudnnStatus_t status;

  g_assert_cmpint (cudnnCreateTensorDescriptor (&desc), ==, CUDNN_STATUS_SUCCESS);
  status = cudnnSetTensorNdDescriptor (desc, CUDNN_DATA_FLOAT, 1, dims, strides);
  g_assert_cmpint (status, !=, CUDNN_STATUS_SUCCESS);
  g_assert_false (tach_cudnn_check (&be, status, "cudnnSetTensorNdDescriptor (bad)", "here.c", 7));
  g_assert_nonnull (be.error);
  g_assert_cmpint (be.error->code, ==, TACH_ERROR_LIBRARY);
  g_test_message ("%s", be.error->message);
  g_assert_nonnull (strstr (be.error->message, cudnnGetErrorString (status)));
  g_assert_nonnull (strstr (be.error->message, "cudnnSetTensorNdDescriptor (bad) at here.c:7"));
  /* cuDNN's own words come after the place. */
  g_assert_nonnull (strstr (be.error->message, "here.c:7: "));
  g_clear_error (&be.error);
  (void) cudnnDestroyTensorDescriptor (desc);
}

/* cuBLAS is not linked: a process that never asks for a CUDA device does
 * not load it (libcublasLt's start-up alone is some 150 MB resident);
 * loading it fills the table, and a cuBLAS failure reads its own words. */
static void
test_cublas_on_demand (void)
{
  TachBackend be = { 0 };
  g_autoptr(GError) error = NULL;
  int major = -1;

  g_assert_null (dlopen (TACH_CUBLAS_SONAME, RTLD_NOW | RTLD_NOLOAD));
  g_assert_null (tach_cublas.create);
  g_assert_true (tach_cublas_load (&error));
  g_assert_no_error (error);
  g_assert_nonnull (dlopen (TACH_CUBLAS_SONAME, RTLD_NOW | RTLD_NOLOAD));
  g_assert_nonnull (tach_cublas.create);
  g_assert_nonnull (tach_cublas.gemm_ex);
  g_assert_true (tach_cublas_load (NULL));   /* once */
  g_assert_cmpint (tach_cublas.get_property (MAJOR_VERSION, &major), ==, CUBLAS_STATUS_SUCCESS);
  g_assert_cmpint (major, ==, CUBLAS_VER_MAJOR);

  g_assert_false (tach_cublas_check (&be, CUBLAS_STATUS_NOT_INITIALIZED, "cublasGemmEx (x)", "here.c", 3));
  g_assert_nonnull (be.error);
  g_assert_cmpint (be.error->code, ==, TACH_ERROR_LIBRARY);
  g_assert_nonnull (strstr (be.error->message, "CUBLAS_STATUS_NOT_INITIALIZED"));
  g_assert_nonnull (strstr (be.error->message, "cublasGemmEx (x) at here.c:3"));
  g_clear_error (&be.error);
  g_assert_false (tach_cublas_check (&be, CUBLAS_STATUS_ALLOC_FAILED, "cublasCreate (h)", "here.c", 4));
  g_assert_cmpint (be.error->code, ==, TACH_ERROR_OUT_OF_MEMORY);
  g_clear_error (&be.error);
}

/* Every checked call counts once, whatever its status: the count per step
 * that the runner reports (TachBackend.api_calls). */
static void
test_call_count (void)
{
  TachBackend be = { 0 };

  g_assert_true (tach_cuda_check (&be, cudaSuccess, "a", "here.c", 1));
  g_assert_true (tach_cudnn_check (&be, CUDNN_STATUS_SUCCESS, "b", "here.c", 2));
  g_assert_true (tach_cublas_check (&be, CUBLAS_STATUS_SUCCESS, "c", "here.c", 3));
  g_assert_cmpuint (be.api_calls, ==, 3);
  g_assert_false (tach_cudnn_check (&be, CUDNN_STATUS_NOT_SUPPORTED, "d", "here.c", 4));
  g_assert_cmpuint (be.api_calls, ==, 4);
  g_clear_error (&be.error);
}

/* TACH_CUDA_PLAIN: names turn lean paths off, "all" every one, anything
 * else is refused with a message that names it and the accepted names. */
static void
test_plain (void)
{
  g_autoptr (GError) error = NULL;
  guint plain = 99;

  g_assert_true (tach_cuda_parse_plain (NULL, &plain, NULL));
  g_assert_cmpuint (plain, ==, 0);
  g_assert_true (tach_cuda_parse_plain ("", &plain, NULL));
  g_assert_cmpuint (plain, ==, 0);
  g_assert_true (tach_cuda_parse_plain ("sampler", &plain, NULL));
  g_assert_cmpuint (plain, ==, TACH_CUDA_LEAN_SAMPLER);
  g_assert_true (tach_cuda_parse_plain (" wspace , conv", &plain, NULL));
  g_assert_cmpuint (plain, ==, TACH_CUDA_LEAN_WSPACE | TACH_CUDA_LEAN_CONV);
  g_assert_true (tach_cuda_parse_plain ("all", &plain, NULL));
  g_assert_cmpuint (plain, ==, TACH_CUDA_LEAN_WSPACE | TACH_CUDA_LEAN_SAMPLER | TACH_CUDA_LEAN_CONV
                                | TACH_CUDA_LEAN_CONV_FUSE | TACH_CUDA_LEAN_WGRAD);
  g_assert_true (tach_cuda_parse_plain ("conv-fuse", &plain, NULL));
  g_assert_cmpuint (plain, ==, TACH_CUDA_LEAN_CONV_FUSE);
  /* "persist" is named alone: "all" is the step before the lean paths. */
  g_assert_true (tach_cuda_parse_plain ("all,persist", &plain, NULL));
  g_assert_cmpuint (plain, ==, TACH_CUDA_LEAN_WSPACE | TACH_CUDA_LEAN_SAMPLER | TACH_CUDA_LEAN_CONV
                                | TACH_CUDA_LEAN_CONV_FUSE | TACH_CUDA_LEAN_WGRAD
                                | TACH_CUDA_LEAN_PERSIST);
  plain = 7;
  g_assert_false (tach_cuda_parse_plain ("sampler,fast", &plain, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  g_assert_nonnull (strstr (error->message, "\"fast\""));
  g_assert_nonnull (strstr (error->message, "wspace"));
  g_assert_cmpuint (plain, ==, 7);
}

/* The block's route: plain when TACH_CUDA_PLAIN=conv, split when
 * conv-fuse, else the fused call with the plan's algorithm, then
 * IMPLICIT_PRECOMP_GEMM, then the split path, each refusal moving one step
 * and never back. */
static void
test_conv_route (void)
{
  TachCudaConvRoute r;

  tach_cuda_conv_route_init (&r, FALSE, TRUE, TRUE, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_FMA_MATH,
                             TRUE, CUDNN_FMA_MATH);
  g_assert_cmpint (r.path, ==, TACH_CUDA_CONV_BARE);
  tach_cuda_conv_route_init (&r, TRUE, FALSE, TRUE, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_FMA_MATH,
                             TRUE, CUDNN_FMA_MATH);
  g_assert_cmpint (r.path, ==, TACH_CUDA_CONV_PLAIN);
  tach_cuda_conv_route_refused (&r);
  g_assert_cmpint (r.path, ==, TACH_CUDA_CONV_PLAIN);

  tach_cuda_conv_route_init (&r, TRUE, TRUE, TRUE, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                             CUDNN_FMA_MATH, TRUE, CUDNN_DEFAULT_MATH);
  g_assert_cmpint (r.path, ==, TACH_CUDA_CONV_FUSED);
  g_assert_cmpint (r.n_fused, ==, 2);
  g_assert_cmpint (r.fused_at, ==, 0);
  g_assert_cmpint (r.algo[0], ==, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
  g_assert_cmpint (r.math[0], ==, CUDNN_FMA_MATH);
  g_assert_cmpint (r.algo[1], ==, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
  g_assert_cmpint (r.math[1], ==, CUDNN_DEFAULT_MATH);
  tach_cuda_conv_route_refused (&r);
  g_assert_cmpint (r.path, ==, TACH_CUDA_CONV_FUSED);
  g_assert_cmpint (r.fused_at, ==, 1);
  tach_cuda_conv_route_refused (&r);
  g_assert_cmpint (r.path, ==, TACH_CUDA_CONV_SPLIT);
  tach_cuda_conv_route_refused (&r);
  g_assert_cmpint (r.path, ==, TACH_CUDA_CONV_SPLIT);

  /* Already the documented algorithm, or none offered: one candidate. */
  tach_cuda_conv_route_init (&r, TRUE, TRUE, TRUE, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                             CUDNN_FMA_MATH, TRUE, CUDNN_FMA_MATH);
  g_assert_cmpint (r.n_fused, ==, 1);
  tach_cuda_conv_route_refused (&r);
  g_assert_cmpint (r.path, ==, TACH_CUDA_CONV_SPLIT);
  tach_cuda_conv_route_init (&r, TRUE, TRUE, TRUE, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_FMA_MATH,
                             FALSE, CUDNN_FMA_MATH);
  g_assert_cmpint (r.n_fused, ==, 1);
  g_assert_cmpint (r.algo[0], ==, CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
  /* TACH_CUDA_PLAIN=conv-fuse: the split route from the start. */
  tach_cuda_conv_route_init (&r, TRUE, TRUE, FALSE, CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                             CUDNN_FMA_MATH, TRUE, CUDNN_FMA_MATH);
  g_assert_cmpint (r.path, ==, TACH_CUDA_CONV_SPLIT);
}

/* The plain block on the host, as the separate passes compute it:
 * a = relu (act + b), the pool's first maximum and its offset, the
 * gradient scattered there and masked by a > 0, db its channel sum. */
static void
plain_block (const float *act, const float *bias, const float *dy, float *y, float *dact,
             double *db, int n, int k, int h, int w)
{
  int ph = h / 2, pw = w / 2;

  memset (dact, 0, sizeof (float) * n * k * h * w);
  memset (db, 0, sizeof (double) * k);
  for (int p = 0; p < n * k; p++)
    for (int oy = 0; oy < ph; oy++)
      for (int ox = 0; ox < pw; ox++)
        {
          float best = -1.0f;
          int at = -1;
          size_t o = ((size_t) p * ph + oy) * pw + ox;

          for (int r = 0; r < 2; r++)
            for (int s = 0; s < 2; s++)
              {
                int i = (2 * oy + r) * w + 2 * ox + s;
                float v = act[(size_t) p * h * w + i] + (bias != NULL ? bias[p % k] : 0.0f);

                v = v > 0.0f ? v : 0.0f;
                if (at < 0 || v > best)
                  {
                    best = v;
                    at = i;
                  }
              }
          y[o] = best;
          if (best > 0.0f)
            {
              dact[(size_t) p * h * w + at] = dy[o];
              db[p % k] += dy[o];
            }
        }
}

/* The epilogue kernels' element functions, run over every element (and
 * the backward one in its block's thread order), against the plain
 * passes: odd sizes (a row and a column in no window), W3's 28 -> 14 and
 * 14 -> 7, and values on a coarse grid so that ties, zeros and negative
 * windows are common. */
static void
test_conv_pool_index_math (void)
{
  static const int shapes[][4] = {
    { 2, 3, 7, 6 }, { 1, 2, 5, 5 }, { 2, 4, 28, 28 }, { 3, 2, 14, 14 }, { 1, 1, 2, 3 },
    { 2, 2, 3, 2 },
  };
  GRand *rand = g_rand_new_with_seed (1234);

  for (guint c = 0; c < G_N_ELEMENTS (shapes); c++)
    for (int with_bias = 0; with_bias < 2; with_bias++)
      {
        int n = shapes[c][0], k = shapes[c][1], h = shapes[c][2], w = shapes[c][3];
        int ph = h / 2, pw = w / 2, threads = tach_conv_pool_bwd_threads (h, w);
        size_t na = (size_t) n * k * h * w, np = (size_t) n * k * ph * pw;
        g_autofree float *act = g_new (float, na), *bias = g_new (float, k);
        g_autofree float *dy = g_new (float, np), *y = g_new (float, np);
        g_autofree float *want_y = g_new (float, np), *dact = g_new (float, na);
        g_autofree float *want_dact = g_new (float, na);
        g_autofree int32_t *idx = g_new (int32_t, np);
        g_autofree guint8 *written = g_new0 (guint8, (size_t) h * w);
        g_autofree double *want_db = g_new (double, k), *db = g_new0 (double, k);

        for (size_t i = 0; i < na; i++)
          act[i] = (float) g_rand_int_range (rand, -3, 4) * 0.5f;
        for (int i = 0; i < k; i++)
          bias[i] = (float) g_rand_int_range (rand, -2, 3) * 0.25f;
        for (size_t i = 0; i < np; i++)
          dy[i] = (float) g_rand_double_range (rand, -1.0, 1.0);
        plain_block (act, with_bias ? bias : NULL, dy, want_y, want_dact, want_db, n, k, h, w);

        for (size_t e = 0; e < np; e++)
          tach_conv_pool_fwd_at (act, with_bias ? bias : NULL, y, idx, e, k, h, w);
        g_assert_cmpmem (y, np * sizeof (float), want_y, np * sizeof (float));
        for (size_t e = 0; e < np; e++)
          g_assert_true (idx[e] == -1 || (idx[e] >= 0 && idx[e] < h * w));

        g_assert_cmpint (threads % 32, ==, 0);
        g_assert_cmpint (threads, >=, 32);
        g_assert_cmpint (threads, <=, 256);
        for (int plane = 0; plane < n * k; plane++)
          {
            double s = 0.0;

            memset (written, 0, (size_t) h * w);
            for (int t = 0; t < threads; t++)
              {
                for (int pos = t; pos < h * w; pos += threads)
                  {
                    dact[(size_t) plane * h * w + pos] = tach_conv_pool_bwd_at (dy, idx, plane, pos,
                                                                                h, w);
                    written[pos]++;
                  }
                for (int j = t; j < ph * pw; j += threads)
                  s += tach_conv_pool_bias_term (dy, idx, (size_t) plane * ph * pw + j);
              }
            for (int pos = 0; pos < h * w; pos++)
              g_assert_cmpuint (written[pos], ==, 1);
            db[plane % k] += s;
          }
        g_assert_cmpmem (dact, na * sizeof (float), want_dact, na * sizeof (float));
        for (int i = 0; i < k; i++)
          g_assert_cmpfloat (fabs (db[i] - want_db[i]), <=, 1e-9 * (1.0 + fabs (want_db[i])));
      }
  g_rand_free (rand);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/cuda/host/status-refusal", test_refusal);
  g_test_add_func ("/engine/cuda/host/cudnn-message", test_cudnn_message);
  g_test_add_func ("/engine/cuda/host/cublas-on-demand", test_cublas_on_demand);
  g_test_add_func ("/engine/cuda/host/call-count", test_call_count);
  g_test_add_func ("/engine/cuda/host/plain-paths", test_plain);
  g_test_add_func ("/engine/cuda/host/conv-route", test_conv_route);
  g_test_add_func ("/engine/cuda/host/conv-pool-index-math", test_conv_pool_index_math);
  return g_test_run ();
}
