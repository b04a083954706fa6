/* tach-host-isa.h: the vector extensions of the host's processor, a fact
 * of the machine that every side's host code uses: the sampling that
 * models and backends share (tach-sample.c), and the CPU backend's kernels,
 * whose level also caps oneDNN (cpu/tach-cpu-isa.c, tach_cpu_isa()).
 *
 * The level is the processor's (x86-64-v4: AVX-512, v3: AVX2, else the
 * baseline), lowered by TACH_CPU_ISA ("avx512", "avx2" or "baseline") so
 * that one machine can run, test and time every path.  Decided once per
 * process.  Threads: any.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  TACH_CPU_ISA_BASELINE,   /* x86-64 SSE2, or any other architecture */
  TACH_CPU_ISA_AVX2,       /* x86-64-v3: AVX2, FMA */
  TACH_CPU_ISA_AVX512,     /* x86-64-v4: AVX-512 F/BW/DQ/VL */
} TachCpuIsa;

extern int tach_host_isa_level;   /* -1 until tach_host_isa_decide() */

/* The level; *hardware (unless NULL), the processor's own; *invalid (unless
 * NULL), the value of TACH_CPU_ISA when it names no level (then the level
 * is the processor's), else NULL. */
TachCpuIsa  tach_host_isa_decide (TachCpuIsa *hardware, const char **invalid);
/* "avx512", "avx2", "baseline". */
const char *tach_cpu_isa_name (TachCpuIsa isa);

static inline TachCpuIsa
tach_host_isa (void)
{
  int level = g_atomic_int_get (&tach_host_isa_level);

  return G_LIKELY (level >= 0) ? (TachCpuIsa) level : tach_host_isa_decide (NULL, NULL);
}

/* Hot loops are compiled for AVX-512, AVX2 and the baseline and picked per
 * call by @isa_fn (tach_host_isa, or the CPU backend's tach_cpu_isa), so
 * that one build runs everywhere, uses the widest vectors the processor
 * has, and tests the narrower ones on demand.  The kernel is written once
 * as NAME_body (TACH_SIMD_BODY, inlined into each variant); TACH_SIMD_DISPATCH_
 * then defines NAME (with @linkage: static or nothing) returning @ret
 * (@ret_kw: return, or nothing for void) from its parameter list and the
 * argument list that passes them on. */
#define TACH_SIMD_BODY static inline __attribute__ ((always_inline))
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
#define TACH_SIMD_DISPATCH_(isa_fn, linkage, ret, ret_kw, name, params, args)  \
  __attribute__ ((target ("arch=x86-64-v4"))) static ret                       \
  name##_v4 params { ret_kw name##_body args; }                                \
  __attribute__ ((target ("arch=x86-64-v3"))) static ret                       \
  name##_v3 params { ret_kw name##_body args; }                                \
  static ret name##_v1 params { ret_kw name##_body args; }                     \
  linkage ret name params                                                       \
  {                                                                             \
    TachCpuIsa isa_ = isa_fn ();                                                \
    ret (*fn_) params = isa_ == TACH_CPU_ISA_AVX512 ? name##_v4                 \
                        : isa_ == TACH_CPU_ISA_AVX2 ? name##_v3 : name##_v1;    \
    ret_kw fn_ args;                                                            \
  }
#else
#define TACH_SIMD_DISPATCH_(isa_fn, linkage, ret, ret_kw, name, params, args)  \
  linkage ret name params { ret_kw name##_body args; }
#endif

G_END_DECLS
