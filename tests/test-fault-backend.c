/* test-fault-backend.c: the fault-injecting backend wrapper. */
#include <string.h>

#include "test-fault-backend.h"

const char *const test_fault_ops[] = {
  "alloc", "download", "synchronize", "gemm", "lstm_fwd", "lstm_bwd", "lstm_cell_fwd",
  "conv_fwd", "softmax_ce", "sigmoid_bce", "adam", "sample_tokens", "sample_tokens_nll", NULL
};

static struct {
  char         *op;      /* owned */
  guint         nth;
  TestFaultKind kind;
  guint         calls;   /* atomic */
  gboolean      fired;   /* atomic */
} fault;

/* The real ops of the backend being wrapped, and the table handed out in
 * their place.  One of each: every backend the registry opens is of the
 * same kind in these tests (the CPU), and the tables must outlive them. */
static TachBackendOps real_ops;
static TachBackendOps fault_ops;

int
test_fault_code (TestFaultKind kind)
{
  switch (kind)
    {
    case TEST_FAULT_OUT_OF_MEMORY:
      return TACH_ERROR_OUT_OF_MEMORY;
    case TEST_FAULT_DEVICE_LOST:
      return TACH_ERROR_DEVICE_UNAVAILABLE;
    case TEST_FAULT_LIBRARY:
    default:
      return TACH_ERROR_LIBRARY;
    }
}

const char *
test_fault_cause (TestFaultKind kind)
{
  switch (kind)
    {
    case TEST_FAULT_OUT_OF_MEMORY:
      return "out of memory";
    case TEST_FAULT_DEVICE_LOST:
      return "the device was lost";
    case TEST_FAULT_LIBRARY:
    default:
      return "library error";
    }
}

const char *
test_fault_kind_name (TestFaultKind kind)
{
  switch (kind)
    {
    case TEST_FAULT_OUT_OF_MEMORY:
      return "oom";
    case TEST_FAULT_DEVICE_LOST:
      return "device-lost";
    case TEST_FAULT_LIBRARY:
    default:
      return "library";
    }
}

/* Counts a call of @op; TRUE (with the sticky error recorded, as the op
 * would) when this is the call to fail. */
static gboolean
fault_hit (TachBackend *be, const char *op)
{
  guint call;

  if (fault.op == NULL || strcmp (op, fault.op) != 0)
    return FALSE;
  call = (guint) g_atomic_int_add (&fault.calls, 1) + 1;
  if (call != fault.nth)
    return FALSE;
  g_atomic_int_set (&fault.fired, TRUE);
  tach_backend_fail (be, test_fault_code (fault.kind), "%s failed on %s: %s (injected at call %u)",
                     op, be->device != NULL ? be->device->id : "?",
                     test_fault_cause (fault.kind), call);
  return TRUE;
}

/* A forwarding slot: the real op unless this call is the one to fail. */
#define FAULT_VOID(slot, params, args)                                              \
  static void fault_##slot params                                                   \
  {                                                                                 \
    if (!fault_hit (be, #slot))                                                     \
      real_ops.slot args;                                                           \
  }

static void *
fault_alloc (TachBackend *be, size_t bytes)
{
  return fault_hit (be, "alloc") ? NULL : real_ops.alloc (be, bytes);
}

FAULT_VOID (download, (TachBackend *be, void *dst, const void *src, size_t bytes),
            (be, dst, src, bytes))
FAULT_VOID (synchronize, (TachBackend *be), (be))
FAULT_VOID (gemm, (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k, float alpha,
                   const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc),
            (be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
FAULT_VOID (lstm_fwd, (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w,
                       float *y, void *reserve),
            (be, plan, x, w, y, reserve))
FAULT_VOID (lstm_bwd, (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w,
                       const float *y, const float *dy, void *reserve, float *dx, float *dw),
            (be, plan, x, w, y, dy, reserve, dx, dw))
FAULT_VOID (conv_fwd, (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                       const float *b, float *y),
            (be, plan, x, w, b, y))
FAULT_VOID (softmax_ce, (TachBackend *be, const float *logits, const int32_t *labels, int n,
                         int classes, float *loss, float *dlogits),
            (be, logits, labels, n, classes, loss, dlogits))
FAULT_VOID (adam, (TachBackend *be, float *param, const float *grad, float *m, float *v,
                   size_t n, float lr, float beta1, float beta2, float eps, float *t),
            (be, param, grad, m, v, n, lr, beta1, beta2, eps, t))
FAULT_VOID (sample_tokens, (TachBackend *be, const float *logits, int n, int vocab, guint64 seed,
                            guint64 counter, int32_t *tok, int32_t *ctx, int len),
            (be, logits, n, vocab, seed, counter, tok, ctx, len))
FAULT_VOID (lstm_cell_fwd, (TachBackend *be, int n, int h, float *gates, const float *bias,
                            const float *c_prev, float *c, float *h_out, int ldh),
            (be, n, h, gates, bias, c_prev, c, h_out, ldh))
FAULT_VOID (sigmoid_bce, (TachBackend *be, const float *logits, const float *labels, int n,
                          float *loss, float *dlogits),
            (be, logits, labels, n, loss, dlogits))
FAULT_VOID (sample_tokens_nll, (TachBackend *be, const float *logits, int n, int vocab,
                                guint64 seed, guint64 counter, int32_t *tok, int32_t *ctx, int len,
                                float *loss),
            (be, logits, n, vocab, seed, counter, tok, ctx, len, loss))

/* Every slot forwards to the real one, so that optional slots stay as
 * absent as they were. */
#define FAULT_WRAP(slot)                                                            \
  G_STMT_START {                                                                    \
    if (real_ops.slot != NULL)                                                      \
      fault_ops.slot = fault_##slot;                                                \
  } G_STMT_END

static void
fault_open_hook (TachBackend *be, gpointer user_data)
{
  real_ops = *be->ops;
  fault_ops = real_ops;
  FAULT_WRAP (alloc);
  FAULT_WRAP (download);
  FAULT_WRAP (synchronize);
  FAULT_WRAP (gemm);
  FAULT_WRAP (lstm_fwd);
  FAULT_WRAP (lstm_bwd);
  FAULT_WRAP (lstm_cell_fwd);
  FAULT_WRAP (conv_fwd);
  FAULT_WRAP (softmax_ce);
  FAULT_WRAP (sigmoid_bce);
  FAULT_WRAP (adam);
  FAULT_WRAP (sample_tokens);
  FAULT_WRAP (sample_tokens_nll);
  be->ops = &fault_ops;
}

void
test_fault_install (const char *op, guint nth, TestFaultKind kind)
{
  g_assert_true (g_strv_contains (test_fault_ops, op));
  g_assert_cmpuint (nth, >, 0);
  test_fault_remove ();
  fault.op = g_strdup (op);
  fault.nth = nth;
  fault.kind = kind;
  g_atomic_int_set (&fault.calls, 0);
  g_atomic_int_set (&fault.fired, FALSE);
  tach_backend_set_open_hook (fault_open_hook, NULL);
}

void
test_fault_remove (void)
{
  tach_backend_set_open_hook (NULL, NULL);
  g_clear_pointer (&fault.op, g_free);
}

guint
test_fault_calls (void)
{
  return (guint) g_atomic_int_get (&fault.calls);
}

gboolean
test_fault_fired (void)
{
  return g_atomic_int_get (&fault.fired);
}
