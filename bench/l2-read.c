/* l2-read: how fast one core streams a buffer that sits in its own cache.
 *
 * Generation of one stream reads each weight once a token (bench/README.md,
 * "the weights through L2"): a token's bound on one core is its bytes over
 * the rate at which a core reads a buffer of that size resident in its L2.
 * This measures that rate: it reads a buffer of each size given (KB) over
 * and over with the widest vector loads the CPU has (AVX-512, AVX2, or
 * SSE2), summing into independent accumulators so that the loads, not the
 * adds, set the pace, and prints the best of several timed passes in bytes
 * a nanosecond, and what a token of lstm-lm's packed weights (430.1 KB at
 * AVX-512, 399.4 KB at AVX2) takes at that rate.  L2_READ_ISA=avx2 uses
 * AVX2 loads on an AVX-512 machine.
 *
 * Usage: l2-read [KB ...]   (default 32 128 256 430 512 1024 4096)
 *
 * One thread; run it on an idle machine (pin it with taskset to keep it on
 * one core).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

typedef float F32x16 __attribute__ ((vector_size (64)));
typedef float F32x8 __attribute__ ((vector_size (32)));
typedef float F32x4 __attribute__ ((vector_size (16)));

/* NAME reads @n floats (@n a multiple of 64) @reps times, a VEC at a time
 * into four accumulators, compiled for TARGET; the sum keeps the loads
 * from being optimised away. */
#define DEFINE_READ(name, target, VEC)                                      \
  target static float                                                      \
  name (const float *p, size_t n, int reps)                                \
  {                                                                        \
    enum { LANES = sizeof (VEC) / sizeof (float) };                        \
    VEC a0 = { 0 }, a1 = a0, a2 = a0, a3 = a0, t;                          \
    float s = 0;                                                           \
                                                                           \
    for (int r = 0; r < reps; r++)                                         \
      for (size_t i = 0; i < n; i += 4 * LANES)                            \
        {                                                                  \
          a0 += *(const VEC *) (p + i);                                    \
          a1 += *(const VEC *) (p + i + LANES);                            \
          a2 += *(const VEC *) (p + i + 2 * LANES);                        \
          a3 += *(const VEC *) (p + i + 3 * LANES);                        \
        }                                                                  \
    t = (a0 + a1) + (a2 + a3);                                             \
    for (int k = 0; k < LANES; k++)                                        \
      s += t[k];                                                           \
    return s;                                                              \
  }

DEFINE_READ (read_avx512, __attribute__ ((target ("avx512f"))), F32x16)
DEFINE_READ (read_avx2, __attribute__ ((target ("avx2"))), F32x8)
DEFINE_READ (read_sse2, , F32x4)

int
main (int argc, char **argv)
{
  static const int defaults[] = { 32, 128, 256, 430, 512, 1024, 4096 };
  const char *level;
  double token_kb;
  float (*read_fn) (const float *, size_t, int);
  int n_sizes = argc > 1 ? argc - 1 : (int) (sizeof defaults / sizeof defaults[0]);
  volatile float sink = 0;

  __builtin_cpu_init ();
  if (__builtin_cpu_supports ("avx512f"))
    level = "avx512", read_fn = read_avx512;
  else if (__builtin_cpu_supports ("avx2"))
    level = "avx2", read_fn = read_avx2;
  else
    level = "sse2", read_fn = read_sse2;
  if (getenv ("L2_READ_ISA") != NULL && strcmp (getenv ("L2_READ_ISA"), "avx2") == 0
      && __builtin_cpu_supports ("avx2"))
    level = "avx2", read_fn = read_avx2;

  for (int s = 1; s < argc; s++)
    {
      char *end;
      long kb = strtol (argv[s], &end, 10);

      if (*end != '\0' || end == argv[s] || kb < 4 || kb > 1 << 20)
        {
          fprintf (stderr, "l2-read: '%s' is not a size in KB from 4 to 1048576\n", argv[s]);
          return 2;
        }
    }
  /* lstm-lm's packed weights a token at this level (bench/README.md). */
  token_kb = strcmp (level, "avx512") == 0 ? 430.1 : 399.4;
  printf ("l2-read: %s loads, one thread, best of 7 passes of about 50 ms each\n", level);
  printf ("%8s %12s %16.1f KB takes (us)\n", "KB", "bytes/ns", token_kb);
  for (int s = 0; s < n_sizes; s++)
    {
      long kb = argc > 1 ? strtol (argv[s + 1], NULL, 10) : defaults[s];
      size_t n;
      float *p;
      double best = 0;
      int reps;

      n = ((size_t) kb * 1024 / sizeof (float)) / 64 * 64;
      p = aligned_alloc (64, n * sizeof (float));
      if (p == NULL)
        {
          fprintf (stderr, "l2-read: out of memory for %ld KB\n", kb);
          return 1;
        }
      for (size_t i = 0; i < n; i++)
        p[i] = (float) (i % 7) * 0.25f;
      /* About 50 ms a pass at 100 bytes a ns. */
      reps = (int) (5e9 / (n * sizeof (float))) + 1;
      sink += read_fn (p, n, reps);  /* warm the cache */
      for (int pass = 0; pass < 7; pass++)
        {
          double t0 = now_ns ();
          double rate;

          sink += read_fn (p, n, reps);
          rate = (double) n * sizeof (float) * reps / (now_ns () - t0);
          if (rate > best)
            best = rate;
        }
      printf ("%8ld %12.1f %28.2f\n", kb, best, token_kb * 1024 / best / 1000);
      free (p);
    }
  (void) sink;
  return 0;
}
