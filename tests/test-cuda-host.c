/* test-cuda-host.c: the CUDA backend's host-side logic, which runs without
 * a GPU: how cuDNN statuses are classified and reported.
 *
 * cuDNN's descriptor calls and its error strings are host code, so these
 * tests run on any machine where the backend was built.
 */
#include <string.h>

#include "cuda/tach-cuda-private.h"

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
  g_assert_cmpuint (plain, ==, TACH_CUDA_LEAN_WSPACE | TACH_CUDA_LEAN_SAMPLER | TACH_CUDA_LEAN_CONV);
  plain = 7;
  g_assert_false (tach_cuda_parse_plain ("sampler,fast", &plain, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  g_assert_nonnull (strstr (error->message, "\"fast\""));
  g_assert_nonnull (strstr (error->message, "wspace"));
  g_assert_cmpuint (plain, ==, 7);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/cuda/host/status-refusal", test_refusal);
  g_test_add_func ("/engine/cuda/host/cudnn-message", test_cudnn_message);
  g_test_add_func ("/engine/cuda/host/call-count", test_call_count);
  g_test_add_func ("/engine/cuda/host/plain-paths", test_plain);
  return g_test_run ();
}
