/* test-ops-common.h: what the numeric op tests share.
 *
 * Every op test is a function of a fresh backend; tach_ops_add() registers
 * it under /engine/<kind>/<path> for one device.  A device that this machine
 * lacks turns the test into a skip (never a pass).  Device buffers made with
 * the helpers below are freed by the runner after the test, and the runner
 * fails the test when the backend holds a sticky error at the end.
 */
#pragma once

#include <glib.h>

#include "tach-backend.h"
#include "tach-config-private.h"
#include "tach-ref.h"

G_BEGIN_DECLS

typedef void (*TachOpsFunc) (TachBackend *be);
typedef void (*TachOpsRefFunc) (void);

/* Thresholds on NMSE (see tach_ref_nmse) for fp32 backends. */
#define TACH_OPS_NMSE_SIMPLE 1e-10   /* one rounding per element: copies, pointwise, sums */
#define TACH_OPS_NMSE_DEEP   1e-8    /* long accumulations: GEMM, LSTM, conv, Adam */

/* The one threshold table, per precision (../shared/gpu.md): fp32 as above
 * (@deep: a long accumulation), tf32 3e-4, bf16 and fp16 1e-2. */
double       tach_ops_nmse_limit (TachPrecision precision, gboolean deep);

gboolean     tach_ops_device_present (const char *device_id);
/* Registers @func at fp32 under /engine/<kind>/<path>. */
void         tach_ops_add (const char *device_id, const char *path, TachOpsFunc func);
/* Registers @func once per precision the device's backend supports, under
 * /engine/<kind>/<path>/<precision> (fp32, tf32, bf16, fp16); the backend
 * is opened at that precision (be->precision), and the test takes its
 * thresholds from tach_ops_nmse_limit (be->precision, ...). */
void         tach_ops_add_precisions (const char *device_id, const char *path, TachOpsFunc func);
/* Reference self-checks, registered once under /ref/<path>. */
void         tach_ops_add_ref (const char *path, TachOpsRefFunc func);

/* Device buffers (freed by the runner). */
void        *tach_ops_alloc (TachBackend *be, size_t bytes);
float       *tach_ops_upload_d (TachBackend *be, const double *host, size_t n);
float       *tach_ops_upload_f (TachBackend *be, const float *host, size_t n);
int32_t     *tach_ops_upload_i (TachBackend *be, const int32_t *host, size_t n);
/* Blocking read-backs into new host arrays (g_free them). */
float       *tach_ops_download_f (TachBackend *be, const float *dev, size_t n);
double      *tach_ops_download_d (TachBackend *be, const float *dev, size_t n);
int32_t     *tach_ops_download_i (TachBackend *be, const int32_t *dev, size_t n);
float        tach_ops_download_scalar (TachBackend *be, const float *dev);

/* Fails the test when the backend holds a sticky error. */
void         tach_ops_assert_ok (TachBackend *be);
/* Fails unless NMSE(@got, @want) <= @threshold (NaN and inf always fail). */
void         tach_ops_assert_nmse (const char *what, const float *got, const double *want,
                                   size_t n, double threshold);

/* Central differences of @loss with respect to @param, compared with @grad.
 * Returns max_i |fd_i - grad_i| / max_i |grad_i|. */
typedef double (*TachOpsLossFunc) (gpointer data);
double       tach_ops_fd_error (TachOpsLossFunc loss, gpointer data, double *param, size_t n,
                                const double *grad, double eps);

/* Registration, one function per test file.  @device_id NULL registers the
 * reference self-checks instead. */
void tach_ops_register_dense (const char *device_id);
void tach_ops_register_loss (const char *device_id);
void tach_ops_register_lstm (const char *device_id);
void tach_ops_register_lstm_ref (void);
/* The CUDA backend's weight-space views against its copying path (CUDA only). */
void tach_ops_register_lstm_wspace (const char *device_id);
void tach_ops_register_conv (const char *device_id);
void tach_ops_register_misc (const char *device_id);
void tach_ops_register_graph (const char *device_id);
/* The Transformer ops (test-ops-gpt.c), on the CPU also on the
 * asynchronous test double (async:0). */
void tach_ops_register_gpt (const char *device_id);
/* The fused attention's dropout (test-ops-gpt-drop.c). */
void tach_ops_register_gpt_dropout (const char *device_id);
/* test-ops-gpt.c's helpers: whether @be has the Transformer ops (else the
 * test skips), normal inputs rounded to float, and @dev's @n floats
 * against @want within @limit. */
gboolean gpt_has_transformer (TachBackend *be);
double  *gpt_normal (size_t n, guint64 seed, double scale);
void     gpt_check (TachBackend *be, const char *what, const float *dev, const double *want,
                    size_t n, double limit);
/* The Transformer reference's gradients (test-ops-gpt-ref.c). */
void tach_ops_register_gpt_ref (void);

G_END_DECLS
