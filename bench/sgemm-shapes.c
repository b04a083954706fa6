/* sgemm-shapes.c: where a process's dnnl_sgemm time goes, by shape.
 *
 * Preloaded into any program that calls oneDNN's sgemm (tach-cli, the
 * tests), it times each call on the calling thread's monotonic clock and
 * prints, when the process exits, every shape that took 1% or more of the
 * calls' total: transposes, M, N, K, calls, milliseconds and the rate in
 * GFLOP/s of the thread that ran it.  The CPU backend runs its sgemm calls
 * synchronously, each on one thread or on the OpenMP pool as oneDNN
 * decides, so the time is the call's wall time; for the batch slices of
 * the LSTM (one thread each) the rate is one core's.  See README.md
 * ("Where the products' time goes").
 *
 *   LD_PRELOAD=build/bench/libsgemm-shapes.so build/app/tach-cli run ...
 *
 * Threads: any; the table is under a mutex (a few hundred ns a call).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*SgemmFn) (char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                        float *c, int64_t ldc);

typedef struct {
  char    transa, transb;
  int64_t m, n, k;
  long    calls;
  double  ms;
} Shape;

#define MAX_SHAPES 512

static Shape shapes[MAX_SHAPES];
static int n_shapes;
static long dropped;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* SGEMM_SHAPES_CLOCK=thread times each call by the calling thread's CPU
 * time instead of the wall clock: on a shared machine a call preempted by
 * another process then counts only what it ran, and the report adds the
 * process's own CPU time, so that the products' share of it can be read
 * whatever the load. */
static clockid_t clock_id = CLOCK_MONOTONIC;

__attribute__ ((constructor)) static void
pick_clock (void)
{
  const char *c = getenv ("SGEMM_SHAPES_CLOCK");

  if (c != NULL && strcmp (c, "thread") == 0)
    clock_id = CLOCK_THREAD_CPUTIME_ID;
}

static double
now_ms (void)
{
  struct timespec ts;

  clock_gettime (clock_id, &ts);
  return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec * 1e-6;
}

static void
record (char transa, char transb, int64_t m, int64_t n, int64_t k, double ms)
{
  int i;

  pthread_mutex_lock (&lock);
  for (i = 0; i < n_shapes; i++)
    if (shapes[i].transa == transa && shapes[i].transb == transb && shapes[i].m == m
        && shapes[i].n == n && shapes[i].k == k)
      break;
  if (i == n_shapes && n_shapes < MAX_SHAPES)
    shapes[n_shapes++] = (Shape) { transa, transb, m, n, k, 0, 0.0 };
  if (i < n_shapes)
    {
      shapes[i].calls++;
      shapes[i].ms += ms;
    }
  else
    dropped++;
  pthread_mutex_unlock (&lock);
}

int
dnnl_sgemm (char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha,
            const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
            int64_t ldc)
{
  static SgemmFn real;
  double t0;
  int status;

  if (real == NULL)
    real = (SgemmFn) dlsym (RTLD_NEXT, "dnnl_sgemm");
  if (real == NULL)
    {
      fprintf (stderr, "sgemm-shapes: no dnnl_sgemm after this library: %s\n", dlerror ());
      return 5;   /* dnnl_runtime_error */
    }
  t0 = now_ms ();
  status = real (transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  record (transa, transb, m, n, k, now_ms () - t0);
  return status;
}

__attribute__ ((destructor)) static void
report (void)
{
  double total = 0.0;

  for (int i = 0; i < n_shapes; i++)
    total += shapes[i].ms;
  if (total <= 0.0)
    return;
  if (clock_id == CLOCK_THREAD_CPUTIME_ID)
    {
      struct timespec ts;

      clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
      fprintf (stderr, "sgemm-shapes: %.1f ms of the calling threads' CPU time in dnnl_sgemm, "
               "of the process's %.1f ms (shapes of 1%% or more):\n", total,
               (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec * 1e-6);
    }
  else
    fprintf (stderr, "sgemm-shapes: %.1f ms in dnnl_sgemm (shapes of 1%% or more):\n", total);
  fprintf (stderr, "  %-5s %6s %6s %6s %8s %10s %6s %8s\n", "trans", "M", "N", "K", "calls",
           "ms", "share", "GFLOP/s");
  for (int i = 0; i < n_shapes; i++)
    if (shapes[i].ms >= 0.01 * total)
      fprintf (stderr, "  %c%c    %6lld %6lld %6lld %8ld %10.1f %5.1f%% %8.1f\n",
               shapes[i].transa, shapes[i].transb, (long long) shapes[i].m,
               (long long) shapes[i].n, (long long) shapes[i].k, shapes[i].calls, shapes[i].ms,
               100.0 * shapes[i].ms / total,
               2.0 * (double) shapes[i].m * (double) shapes[i].n * (double) shapes[i].k
                 * (double) shapes[i].calls / shapes[i].ms * 1e-6);
  if (dropped > 0)
    fprintf (stderr, "  (%ld calls of shapes past the first %d not counted)\n", dropped,
             MAX_SHAPES);
}
