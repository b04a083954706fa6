/* test-fault-backend.h: a backend wrapper, for tests only, that fails the
 * Nth call of one chosen op with one chosen error, on every backend the
 * registry opens while it is installed (tach_backend_set_open_hook()).
 *
 * The failing call records the error as the op would (the sticky error,
 * its message naming the op and the cause) and does not run; every other
 * call runs the real op.  Calls are counted over every backend opened since
 * test_fault_install(), so in a sweep exactly one run meets the failure.
 *
 * Threads: install and remove while no run is going; the ops run on the
 * engine thread. */
#pragma once

#include "tach-backend.h"

G_BEGIN_DECLS

typedef enum {
  TEST_FAULT_LIBRARY,       /* a library call failed (TACH_ERROR_LIBRARY) */
  TEST_FAULT_OUT_OF_MEMORY, /* TACH_ERROR_OUT_OF_MEMORY */
  TEST_FAULT_DEVICE_LOST,   /* the device went away (TACH_ERROR_DEVICE_UNAVAILABLE) */
} TestFaultKind;

/* The ops that can be failed, by slot name. */
extern const char *const test_fault_ops[];

/* Fails call @nth (1 = the first) of @op ("gemm", "lstm_fwd", "alloc", ...:
 * one of test_fault_ops) with @kind. */
void     test_fault_install (const char *op, guint nth, TestFaultKind kind);
void     test_fault_remove (void);
/* How often @op was called since test_fault_install() (the failed call
 * included), and whether the failure happened. */
guint    test_fault_calls (void);
gboolean test_fault_fired (void);
/* The error code and the words of the cause that @kind's message holds. */
int         test_fault_code (TestFaultKind kind);
const char *test_fault_cause (TestFaultKind kind);
/* A name for @kind, for test paths: "library", "oom", "device-lost". */
const char *test_fault_kind_name (TestFaultKind kind);

G_END_DECLS
