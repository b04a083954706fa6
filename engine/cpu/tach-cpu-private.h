/* tach-cpu-private.h: what the files of the CPU backend share.
 *
 * The CPU backend runs every op synchronously on the calling thread, with
 * one OpenMP pool shared by oneDNN's primitives, dnnl_sgemm and the
 * pointwise loops of this backend.  "Device" pointers are plain host memory.
 *
 * Threads: the engine thread (one thread at a time per backend), and the
 * backend's helper thread for the jobs it runs ahead (tach-cpu-ahead.c).
 */
#pragma once

#include <string.h>

#include <dnnl.h>
#include <glib.h>
#include <omp.h>

#include "tach-backend.h"
#include "tach-cpu.h"
#include "tach-host-isa.h"
#include "tach-machine.h"

G_BEGIN_DECLS

/* How many of the backend's threads its ops run on now
 * (tach-cpu-threads.c). */
typedef struct {
  guint    active;        /* 1 .. be->threads */
  gboolean adapt;         /* FALSE: fixed (one thread, TACH_CPU_THREADS_ADAPT) */
  gboolean alternate;     /* TACH_CPU_THREADS_ADAPT=alternate (tests) */
  gint64   next_us;       /* the next look at the machine */
  gint64   last_us;       /* the last look */
  gint64   full_us;       /* time on every thread, between looks */
  gint64   fewer_us;      /* time on fewer */
  double   others;        /* others' runnable threads, smoothed */
  double   others_most;
  guint    looks;
  guint    up_looks;      /* looks in a row that would run more threads */
  guint    fewest;        /* the fewest active so far */
  int      late;          /* atomic: a wait found its partner late */
  TachMachineMark mark;   /* the start of the CPU-time window */
  double   taken;         /* processors' worth of CPU time others took (and the
                           * hypervisor stole) in the last window of ten ticks
                           * or more; -1 unknown */
} TachCpuThreads;

/* Between looks at the machine, and the looks in a row that must find
 * processors free before more threads run again (200 ms). */
#define TACH_CPU_THREADS_CHECK_US 50000
#define TACH_CPU_THREADS_UP_CHECKS 4

typedef struct {
  TachBackend    parent;          /* first, so that TachBackend* casts */
  dnnl_engine_t  engine;          /* owned */
  dnnl_stream_t  stream;          /* owned */
  GHashTable    *sizes;           /* owned: pointer -> size of live allocations */
  guint64        current_bytes;
  guint64        peak_bytes;
  GHashTable    *bf16_gemms;      /* owned: shape -> matmul primitive (gemm_bf16) */
  guint16       *bf16_scratch;    /* owned: gemm_bf16's rounded operands */
  size_t         bf16_scratch_elems;
  /* Frozen weights (the freeze op, tach-cpu-memory.c): NULL until the
   * first freeze. */
  GArray        *frozen;          /* owned: the frozen ranges */
  GPtrArray     *frozen_copies;   /* owned: allocations that copy frozen data */
  guint64        frozen_copies_bytes;       /* theirs, now */
  guint64        frozen_copies_peak_bytes;  /* theirs, at most so far */
  guint          frozen_epoch;    /* changes whenever a frozen range is written or freed */
  /* The gemm op's packed copies of frozen Bs (tach-cpu-packed.c), each one
   * of frozen_copies; the list holds while gemm_packs_epoch is current. */
  GArray        *gemm_packs;      /* owned; NULL until the first pack */
  guint          gemm_packs_epoch;
  /* The gemm op's matmul primitives on frozen Bs reordered once (a
   * prefill's products), their weights each one of frozen_copies; the
   * list holds while gemm_matmuls_epoch is current. */
  GPtrArray     *gemm_matmuls;    /* owned; NULL until the first */
  guint          gemm_matmuls_epoch;
  /* The helper thread that runs jobs ahead (tach-cpu-ahead.c): NULL until
   * the first post. */
  struct _TachCpuAhead *ahead;    /* owned */
  gboolean       ahead_none;      /* none runs: one thread, TACH_CPU_AHEAD=never, or its
                                   * thread could not start */
  TachCpuThreads run;             /* the threads the ops run on now */
  /* The fused attention's scratch (tach-cpu-attention.c), grown as
   * needed; one of the allocations in @sizes. */
  float         *att_scratch;
  size_t         att_scratch_floats;
} TachCpuBackend;

#define TACH_CPU(be) ((TachCpuBackend *) (be))

/* A job run ahead of the engine thread on the backend's helper thread
 * (tach-cpu-ahead.c). */
typedef struct _TachCpuAhead TachCpuAhead;
typedef void (*TachCpuAheadFn) (gpointer data);

/* Whether a job may be posted now: FALSE where nothing runs ahead (one
 * thread, TACH_CPU_AHEAD=never) or the last job (any caller's) still
 * holds the helper. */
gboolean tach_cpu_ahead_can_post (TachBackend *be);
/* Posts @fn (@data), where tach_cpu_ahead_can_post says it may be, to run
 * on the helper while the engine thread goes on.  The job must read only
 * what the engine thread leaves unchanged until tach_cpu_ahead_take or
 * tach_cpu_ahead_cancel says it is done, and write only what the engine
 * thread reads after a take that returned TRUE. */
void     tach_cpu_ahead_post (TachBackend *be, TachCpuAheadFn fn, gpointer data);
/* The results of the job posted with @data: TRUE once it has run (on the
 * helper, or here when the helper had not started it); FALSE when none
 * is posted with @data, or when the helper started it and has not
 * finished within @limit_us (it finishes on its own; its results are not
 * to be read). */
gboolean tach_cpu_ahead_take (TachBackend *be, gpointer data, gint64 limit_us);
/* Drops the job posted with @data if the helper has not started it: a
 * job nobody will take must not hold the helper (one started finishes on
 * its own, and frees it). */
void     tach_cpu_ahead_drop (TachBackend *be, gpointer data);
/* Returns when the job posted with @data, if any, no longer runs: dropped
 * if not started, else waited for.  Before what it reads or writes
 * changes or goes. */
void     tach_cpu_ahead_cancel (TachBackend *be, gpointer data);
/* Whether a helper thread runs the posts (started here if it is to run;
 * not at one thread, TACH_CPU_AHEAD=never or =caller). */
gboolean tach_cpu_ahead_running (TachBackend *be);
/* Ends the helper, its job dropped or finished (the backend's free). */
void     tach_cpu_ahead_stop (TachBackend *be);

/* Records a failed oneDNN call as the backend's sticky error, with the call
 * text and its place, then jumps to @label. */
#define TACH_DNNL_TRY(be, call, label)                                          \
  G_STMT_START {                                                                \
    dnnl_status_t tach_dnnl_status_ = (call);                                   \
    if (tach_dnnl_status_ != dnnl_success)                                      \
      {                                                                         \
        tach_cpu_dnnl_fail ((be), tach_dnnl_status_, #call, __FILE__, __LINE__); \
        goto label;                                                             \
      }                                                                         \
  } G_STMT_END

/* One pause of a spin-wait: the core's hint that this thread waits (a
 * pause instruction on x86), where it has one. */
static inline void
tach_cpu_relax (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#endif
}

/* The threads the ops run on now: be->threads, or fewer while other
 * processes want the processors (tach-cpu-threads.c).  Work is split by
 * be->threads all the same, so that the count changes no result.  Looks
 * at the machine every TACH_CPU_THREADS_CHECK_US.  Engine thread. */
guint    tach_cpu_threads_now (TachBackend *be);
void     tach_cpu_threads_init (TachBackend *be);
/* Looks at the machine now. */
void     tach_cpu_threads_check (TachBackend *be);
/* The threads to run on, of @threads, on @n_cpus processors: those that
 * others' runnable threads (@others, smoothed) leave free, unless the CPU
 * time others took (@taken, processors' worth; -1 unknown) shows that
 * nobody else ran (tach-cpu-threads.c).  Pure, for the tests. */
guint    tach_cpu_threads_wanted (guint n_cpus, guint threads, double others, double taken);

/* A word some threads wait on (tach_cpu_wait_for) and one changes, then
 * wakes them (tach_cpu_wait_wake). */
typedef struct {
  int sleepers;  /* atomic */
} TachCpuWait;

/* How long a waiter spins before it takes its partner as preempted and
 * sleeps. */
#define TACH_CPU_WAIT_SPIN_US 50

/* Returns once *@word holds @want: spins TACH_CPU_WAIT_SPIN_US, then
 * sleeps until tach_cpu_wait_wake (and tells @be, where not NULL, to look
 * at the machine at its next op). */
void     tach_cpu_wait_for (TachCpuWait *w, int *word, int want, TachBackend *be);
/* Wakes the sleepers of @word, after a sequentially consistent store to
 * it. */
void     tach_cpu_wait_wake (TachCpuWait *w, int *word);

/* OpenMP's thread count is a per-thread setting: each op pins it so that
 * the engine thread uses the backend's count whoever created the backend:
 * the threads it runs on now (tach_cpu_threads_now). */
static inline void
tach_cpu_bind_threads (TachBackend *be)
{
  int n = (int) tach_cpu_threads_now (be);

  if (omp_get_max_threads () != n)
    omp_set_num_threads (n);
}

/* Every thread of the backend, whatever the machine's load: for oneDNN's
 * primitives, whose thread count is fixed when they are made and whose
 * results depend on it (their reductions split by thread). */
static inline void
tach_cpu_bind_all_threads (TachBackend *be)
{
  if (omp_get_max_threads () != (int) be->threads)
    omp_set_num_threads ((int) be->threads);
}

/* The vector extensions the CPU kernels use: the host's (tach-host-isa.h:
 * the widest the processor has, or fewer where TACH_CPU_ISA caps them),
 * lowered to oneDNN's own cap (ONEDNN_MAX_CPU_ISA).  TACH_CPU_ISA reaches
 * oneDNN too (dnnl_set_max_cpu_isa), so its primitives and dnnl_sgemm take
 * the same narrower code, and bf16 (AVX-512 BF16) is refused as on an
 * older processor.  Decided once per process, before oneDNN's first call
 * (tach_cpu_isa_init, from every entry point of the backend). */
extern int tach_cpu_isa_level;   /* -1 until tach_cpu_isa_init() */

/* The level, and the invalid TACH_CPU_ISA value (NULL when none): an
 * invalid value runs at the processor's own level, and
 * tach_cpu_backend_new() refuses it with a message naming the fix. */
TachCpuIsa  tach_cpu_isa_init (const char **invalid);
/* TRUE when the level is below the processor's own. */
gboolean    tach_cpu_isa_capped (void);

static inline TachCpuIsa
tach_cpu_isa (void)
{
  int level = g_atomic_int_get (&tach_cpu_isa_level);

  return G_LIKELY (level >= 0) ? (TachCpuIsa) level : tach_cpu_isa_init (NULL);
}

/* Floats in a vector of the level the kernels run at: 16 (AVX-512), 8
 * (AVX2), 0 at the baseline, which has no hand-written vector kernels. */
static inline int
tach_cpu_isa_lanes (void)
{
  TachCpuIsa isa = tach_cpu_isa ();

  return isa == TACH_CPU_ISA_AVX512 ? 16 : isa == TACH_CPU_ISA_AVX2 ? 8 : 0;
}

/* Hot pointwise kernels, dispatched on the CPU backend's level
 * (TACH_SIMD_DISPATCH_, tach-host-isa.h): written once as NAME_body
 * (TACH_CPU_SIMD_BODY); TACH_CPU_SIMD_DISPATCH then defines NAME (with
 * @linkage: static or nothing) from its parameter list and the argument
 * list that passes them on. */
#define TACH_CPU_SIMD_BODY TACH_SIMD_BODY
#define TACH_CPU_SIMD_DISPATCH(linkage, name, params, args) \
  TACH_SIMD_DISPATCH_ (tach_cpu_isa, linkage, void, , name, params, args)
/* For a kernel that returns a value (@ret): the same. */
#define TACH_CPU_SIMD_DISPATCH_RET(linkage, ret, name, params, args) \
  TACH_SIMD_DISPATCH_ (tach_cpu_isa, linkage, ret, return, name, params, args)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("no-trapping-math")
#endif
/* exp on [-87, 88] (clamped) by Cody-Waite reduction and Cephes' degree-6
 * polynomial: about 1 ulp, branch-free, so that the loops vectorise.
 * Compiled without trapping math, like the files that call it (their
 * pragma): GCC inlines only a callee whose optimisation options match its
 * caller's, and a call per element would stop the loops vectorising. */
static inline float
tach_cpu_fast_expf (float x)
{
  float t, n, r, p, scale;
  int32_t bits;

  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  /* Round to nearest by the 1.5 * 2^23 trick. */
  t = x * 1.44269504088896341f + 12582912.0f;
  n = t - 12582912.0f;
  r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  bits = ((int32_t) n + 127) << 23;
  memcpy (&scale, &bits, sizeof scale);
  return p * scale;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

/* Pointwise loops below this many elements run on one thread: waking the
 * pool costs more than the work. */
#define TACH_CPU_PARALLEL_MIN 16384

/* tach-cpu-memory.c: memory, frozen ranges and oneDNN's glue, which the
 * backend and every room call and which calls none of them. */
void   tach_cpu_dnnl_fail (TachBackend *be, dnnl_status_t status, const char *call,
                           const char *file, int line);

/* Host memory counted in the backend's peak memory: 64-byte aligned, NULL +
 * sticky error on failure.  Plans use it for their own buffers too. */
void  *tach_cpu_mem_alloc (TachBackend *be, size_t bytes);
void   tach_cpu_mem_free (TachBackend *be, void *ptr);

/* Executes @prim on the backend's stream with @nargs arguments; FALSE (and
 * a sticky error) on failure. */
gboolean tach_cpu_execute (TachBackend *be, dnnl_primitive_t prim, int nargs,
                           const dnnl_exec_arg_t *args);

/* A plain memory object over no data yet; the handle is set before each
 * execution.  NULL + sticky error on failure. */
dnnl_memory_t tach_cpu_memory_new (TachBackend *be, const dnnl_memory_desc_t *md);

/* One operand of a primitive: the caller's plain buffer (user, its handle
 * set per call) and, when the primitive wants another layout or data type,
 * the primitive's copy (inner, in buf) with the reorder between them.
 * Input operands reorder user -> inner when bound; output operands reorder
 * inner -> user in tach_cpu_arg_finish().  Made once per plan. */
typedef struct {
  dnnl_memory_t    user;      /* owned */
  dnnl_memory_t    inner;     /* owned; NULL when the layouts agree */
  dnnl_primitive_t reorder;   /* owned; NULL when the layouts agree */
  void            *buf;       /* owned: inner's memory */
  gboolean         output;
} TachCpuArg;

/* FALSE (and a sticky error) on failure; the half-made @arg is cleared by
 * tach_cpu_arg_clear(). */
gboolean tach_cpu_arg_init (TachBackend *be, TachCpuArg *arg, const dnnl_memory_desc_t *user_md,
                            const dnnl_memory_desc_t *inner_md, gboolean output);
void     tach_cpu_arg_clear (TachBackend *be, TachCpuArg *arg);
/* Points the user memory at @ptr (reordering it in, for an input) and
 * returns the memory to hand the primitive; NULL + sticky error on
 * failure. */
dnnl_memory_t tach_cpu_arg_bind (TachBackend *be, TachCpuArg *arg, const void *ptr);
/* For an output: reorders the primitive's result out to the user buffer. */
gboolean tach_cpu_arg_finish (TachBackend *be, TachCpuArg *arg);

/* C = alpha op(A) op(B) + beta C, row-major (the gemm slot's contract),
 * with the sticky-error rule: dnnl_sgemm, or plain loops on the calling
 * thread for products too small to be worth waking the pool.  FALSE (and
 * a sticky error) on failure. */
gboolean tach_cpu_sgemm (TachBackend *be, gboolean ta, gboolean tb, size_t m, size_t n,
                         size_t k, float alpha, const float *a, size_t lda, const float *b,
                         size_t ldb, float beta, float *c, size_t ldc);

/* Where a GEMM runs: on the pool (AUTO), or on the calling thread alone
 * (SERIAL); and the path of an LSTM plan, which only SPLIT changes.
 * Never which kernel computes it: the size gives the small products
 * (tach_cpu_sgemm_is_small) to the small kernels on the calling thread and
 * the others to dnnl_sgemm. */
typedef enum {
  TACH_CPU_GEMM_AUTO,     /* dnnl_sgemm on the OpenMP pool; a plan not timed */
  TACH_CPU_GEMM_SERIAL,   /* dnnl_sgemm on the calling thread alone */
  /* A path of an LSTM plan, not of a lone GEMM: the pass's hidden units
   * split between the pool's threads, each product of a span on its own
   * thread (tach-cpu-lstm-split.c); for tach_cpu_sgemm_mode(), SERIAL. */
  TACH_CPU_GEMM_SPLIT,
} TachCpuGemmMode;

/* The clock (µs) of an LSTM plan's tuning passes and of the forward calls
 * it re-checks: g_get_monotonic_time() unless a test sets its own (NULL
 * restores it; set it before building plans).  It is read twice around
 * each timed pass, at its start and at its end, with the GEMM path that
 * pass runs on. */
typedef gint64 (*TachCpuTuneClock) (TachCpuGemmMode mode, gpointer data);
void            tach_cpu_lstm_set_tune_clock (TachCpuTuneClock clock, gpointer data);
/* The GEMM path an LSTM plan runs on now. */
TachCpuGemmMode tach_cpu_lstm_plan_gemm_mode (const TachLstmPlan *plan);

gboolean tach_cpu_sgemm_mode (TachBackend *be, TachCpuGemmMode mode, gboolean ta, gboolean tb,
                              size_t m, size_t n, size_t k, float alpha, const float *a,
                              size_t lda, const float *b, size_t ldb, float beta, float *c,
                              size_t ldc);

/* For a thread inside an OpenMP region: the product on the calling thread
 * alone (the small kernels, or dnnl_sgemm, which runs serially inside a
 * region), returning oneDNN's status instead of recording a sticky error,
 * which only the engine thread may do. */
/* Whether tach_cpu_sgemm (and tach_cpu_sgemm_local) runs an m x n x k
 * product on the calling thread's small kernels by its size. */
gboolean tach_cpu_sgemm_is_small (size_t m, size_t n, size_t k);
/* Whether they run an op (@ta, @tb) product on the small kernels: the
 * small ones, and thin x W^T ones (a decoding step's) up to a bound. */
gboolean tach_cpu_sgemm_takes_small (gboolean ta, gboolean tb, size_t m, size_t n, size_t k);
/* Whether x W^T is thin by its shape alone (a token's decoding at batch 1
 * or 2): the small kernels take it where the packed kernels are built. */
gboolean tach_cpu_sgemm_is_thin (gboolean ta, gboolean tb, size_t m, size_t n, size_t k);

/* tach-cpu-packed.c: small x W^T products on a copy of W [n, k] packed
 * for them (blocks of one vector's rows, 16 or 8, a vector per input), each output the
 * bits of tach_cpu_sgemm_local's small kernels, where
 * tach_cpu_packed_nt_usable (n) (the vector kernels at the current ISA). */
gboolean tach_cpu_packed_nt_usable (size_t n);
/* tach_cpu_packed_nt over the threads the ops run on now, each a share of
 * the packed blocks (the same bits), when the product is large enough. */
void     tach_cpu_packed_nt_threads (TachBackend *be, size_t m, size_t n, size_t k, float alpha,
                                     const float *a, size_t lda, const float *packed, float beta,
                                     float *c, size_t ldc);
size_t   tach_cpu_packed_nt_floats (size_t n, size_t k);
void     tach_cpu_pack_nt (size_t n, size_t k, const float *b, size_t ldb, float *packed);
/* C = alpha A B^T + beta C on B packed by tach_cpu_pack_nt (64-byte aligned). */
void     tach_cpu_packed_nt (size_t m, size_t n, size_t k, float alpha, const float *a,
                             size_t lda, const float *packed, float beta, float *c, size_t ldc);
/* The freeze op: the model promises that [ptr, ptr + bytes) does not
 * change (generation's weights), so the backend may keep packed copies. */
void     tach_cpu_freeze (TachBackend *be, const void *ptr, size_t bytes);
/* Non-zero when [ptr, ptr + bytes) lies in one frozen range: a value that
 * changes whenever any frozen range is written or freed, so that a copy
 * made under it is current while it is unchanged. */
guint    tach_cpu_frozen_epoch (TachBackend *be, const void *ptr, size_t bytes);
/* [ptr, ptr + bytes) is written or freed: the frozen ranges it touches
 * thaw (called by the backend's memory ops). */
void     tach_cpu_frozen_write (TachBackend *be, const void *ptr, size_t bytes);
/* Frees the frozen ranges and the copies of them (the backend's free). */
void     tach_cpu_frozen_clear (TachBackend *be);
/* Host memory as tach_cpu_mem_alloc's, for a copy of frozen data: freed by
 * the backend as soon as any frozen range is written or freed (the epoch
 * changes), or at its end.  Only after a freeze. */
void    *tach_cpu_frozen_copy_alloc (TachBackend *be, size_t bytes);
/* Forgets the gemm op's packed copies and matmul primitives (the
 * backend's free, after which tach_cpu_frozen_clear frees the copies
 * themselves). */
void     tach_cpu_gemm_packs_clear (TachBackend *be);
/* The gemm op: tach_cpu_gemm, on the packed copy of a frozen B where
 * tach_cpu_gemm would run the small kernels. */
void     tach_cpu_gemm_op (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k,
                           float alpha, const float *a, int lda, const float *b, int ldb,
                           float beta, float *c, int ldc);

dnnl_status_t tach_cpu_sgemm_local (gboolean ta, gboolean tb, size_t m, size_t n, size_t k,
                                    float alpha, const float *a, size_t lda, const float *b,
                                    size_t ldb, float beta, float *c, size_t ldc);

/* The op table slots, by file. */

/* tach-cpu-lstm-tune.c (plan_new, fwd), tach-cpu-lstm.c, tach-cpu-lstm-cell.c */
TachLstmPlan *tach_cpu_lstm_plan_new (TachBackend *be, const TachLstmDesc *desc);
void   tach_cpu_lstm_plan_free (TachBackend *be, TachLstmPlan *plan);
size_t tach_cpu_lstm_reserve_bytes (TachBackend *be, TachLstmPlan *plan);
void   tach_cpu_lstm_fwd (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w,
                          float *y, void *reserve);
void   tach_cpu_lstm_bwd (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w,
                          const float *y, const float *dy, void *reserve, float *dx, float *dw);
void   tach_cpu_lstm_cell_fwd (TachBackend *be, int n, int h, float *gates, const float *bias,
                               const float *c_prev, float *c, float *h_out, int ldh);
void   tach_cpu_lstm_cell_bwd (TachBackend *be, int n, int h, const float *gates,
                               const float *c_prev, const float *c, const float *dh, int lddh,
                               const float *dc, float *dgates, float *dc_prev);

/* tach-cpu-lstm-rows.c: the fused LSTM's pointwise pass over one row.
 * Forward: adds the bias to the gate pre-activations @g [4h] and
 * activates them in place, then c = i z + f cp (cp NULL: c_{-1} = 0) and
 * hy = o tanh (c).  Backward: from the activated gates, c, cp (NULL: 0),
 * dh = dy + dh_rec (dh_rec may be NULL) and the incoming dc (read only
 * when @have_dc), writes the gate gradients @dg [4h] and the outgoing dc;
 * adds @dg to @db when it is not NULL. */
void   tach_cpu_lstm_row_forward (int h, float *restrict g, const float *restrict b,
                                  const float *restrict cp, float *restrict c,
                                  float *restrict hy);
/* The forward pass over units [0, @units) of a row whose gates are @h
 * apart (pointers offset to the first unit): a span of a row. */
void   tach_cpu_lstm_span_forward (int units, int h, float *restrict g,
                                   const float *restrict b, const float *restrict cp,
                                   float *restrict c, float *restrict hy);
void   tach_cpu_lstm_row_backward (int h, const float *restrict g, const float *restrict c,
                                   const float *restrict cp, const float *restrict dy,
                                   const float *restrict dh_rec, float *restrict dc,
                                   gboolean have_dc, float *restrict dg, float *restrict db);

/* tach-cpu-conv.c */
TachConvPlan *tach_cpu_conv_plan_new (TachBackend *be, const TachConvDesc *desc);
void   tach_cpu_conv_plan_free (TachBackend *be, TachConvPlan *plan);
void   tach_cpu_conv_fwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                          const float *b, float *y);
void   tach_cpu_conv_bwd (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                          const float *dy, float *dx, float *dw, float *db);
void   tach_cpu_conv_block_fwd (TachBackend *be, TachConvPlan *plan, const float *x,
                                const float *w, const float *b, float *act, int32_t *idx,
                                float *y);
void   tach_cpu_conv_block_bwd (TachBackend *be, TachConvPlan *plan, const float *x,
                                const float *w, const float *act, const int32_t *idx,
                                const float *dy, float *dact, float *dx, float *dw, float *db);

/* tach-cpu-pool.c */
void   tach_cpu_maxpool_fwd (TachBackend *be, const float *x, float *y, int32_t *idx,
                             int n, int c, int h, int w);
void   tach_cpu_maxpool_bwd (TachBackend *be, const float *dy, const int32_t *idx, float *dx,
                             int n, int c, int h, int w);
void   tach_cpu_avgpool_fwd (TachBackend *be, const float *x, float *y, int n, int c, int hw);
void   tach_cpu_avgpool_bwd (TachBackend *be, const float *dy, float *dx, int n, int c, int hw);

/* A conv block's activations, [N, K, H, W] in oneDNN's layout: element
 * (n, c, h, w) at n * sn + (c / cb) * sc + h * sh + w * sw + c % cb (in
 * elements), fp32 or bf16; cb divides k (1: plain NCHW).  y_blocked: the
 * pooled output and its gradient are blocked by cb too, dense ([N][K/cb]
 * [H/2][W/2][cb]), else plain. */
typedef struct {
  int      k, cb;
  size_t   sn, sc, sh, sw;
  gboolean bf16, y_blocked;
} TachCpuActLayout;

/* The block's 2x2 max pool: @act [N, K, H, W] (@l) -> @y [N, K, H/2, W/2]
 * (plain or blocked, @l), one byte per pooled element in @code (the winner
 * and the ReLU's derivative); backward writes all of @dact (@l) from @dy
 * (as @y) and @code, the ReLU's derivative applied. */
void   tach_cpu_block_pool_fwd (TachBackend *be, const TachCpuActLayout *l, const void *act,
                                float *y, guint8 *code, int n, int h, int w);
void   tach_cpu_block_pool_bwd (TachBackend *be, const TachCpuActLayout *l, const float *dy,
                                const guint8 *code, void *dact, int n, int h, int w);

/* tach-cpu-winograd.c: a conv block's 5x5 convolution by Winograd's
 * F(4x4, 5x5) in fp32, where C and K are multiples of the vector width and
 * the activations (@act) are blocked by it; TACH_CPU_CONV=direct turns it
 * off.  x and dx are blocked by it too ([N][C/L][H][W][L]: the caller
 * reorders a plain x).  tach_cpu_wino_filters transforms the filters (K x
 * C x 5 x 5, plain) for the passes that follow; forward writes images
 * [n0, n0 + count) of x into @act from its start, bias added and ReLU
 * applied; backward writes all of @dx (NULL: none), @dw and @db from the
 * activations' gradient. */
typedef struct _TachCpuWino TachCpuWino;
gboolean     tach_cpu_wino_applies (const TachConvDesc *d, const TachCpuActLayout *act);
TachCpuWino *tach_cpu_wino_new (TachBackend *be, const TachConvDesc *d);
void         tach_cpu_wino_free (TachBackend *be, TachCpuWino *wg);
void         tach_cpu_wino_filters (TachBackend *be, TachCpuWino *wg, const float *w);
void         tach_cpu_wino_forward (TachBackend *be, TachCpuWino *wg, const float *x,
                                    const float *b, int n0, int count, float *act);
void         tach_cpu_wino_backward (TachBackend *be, TachCpuWino *wg, const float *x,
                                     const float *dact, int count, float *dx, float *dw,
                                     float *db);

/* tach-cpu-dw1.c: a conv block's filter and bias gradients (dw [K][1][R]
 * [5], db [K]) where it has one input channel, fp32, 5-wide filters and
 * activations blocked by the vector width; x plain [N][1][H][W], @dact in
 * the block's layout @l; TACH_CPU_CONV=direct turns it off. */
typedef struct _TachCpuDw1 TachCpuDw1;

gboolean    tach_cpu_dw1_applies (const TachConvDesc *d, const TachCpuActLayout *act);
TachCpuDw1 *tach_cpu_dw1_new (TachBackend *be, const TachConvDesc *d);
void        tach_cpu_dw1_free (TachBackend *be, TachCpuDw1 *p);
void        tach_cpu_dw1_backward (TachBackend *be, TachCpuDw1 *p, const TachCpuActLayout *l,
                                   const float *x, const float *dact, int count, float *dw,
                                   float *db);

/* tach-cpu-gemm-bf16.c */
void   tach_cpu_gemm_bf16 (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k,
                           float alpha, const float *a, int lda, const float *b, int ldb,
                           float beta, float *c, int ldc);
/* Frees gemm_bf16's primitives and scratch (the backend's free). */
void   tach_cpu_gemm_bf16_clear (TachBackend *be);

/* tach-cpu-ops.c */
void   tach_cpu_gemm (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k,
                      float alpha, const float *a, int lda, const float *b, int ldb,
                      float beta, float *c, int ldc);
void   tach_cpu_bias_add (TachBackend *be, float *y, const float *bias, int m, int n);
void   tach_cpu_bias_grad (TachBackend *be, const float *dy, float *db, int m, int n, float beta);
void   tach_cpu_relu_fwd (TachBackend *be, const float *x, float *y, size_t n);
void   tach_cpu_relu_bwd (TachBackend *be, const float *y, const float *dy, float *dx, size_t n);
void   tach_cpu_max_over_time_fwd (TachBackend *be, const float *x, float *y, int32_t *idx,
                                   int n, int t, int c);
void   tach_cpu_max_over_time_bwd (TachBackend *be, const float *dy, const int32_t *idx,
                                   float *dx, int n, int t, int c);
void   tach_cpu_sigmoid_bce (TachBackend *be, const float *logits, const float *labels, int n,
                             float *loss, float *dlogits);
void   tach_cpu_softmax_ce (TachBackend *be, const float *logits, const int32_t *labels, int n,
                            int classes, float *loss, float *dlogits);
void   tach_cpu_accuracy (TachBackend *be, const float *logits, const void *labels, int n,
                          int classes, float *acc);
void   tach_cpu_dropout_fwd (TachBackend *be, const float *x, float *y, size_t n, float p,
                             guint64 seed, guint64 counter, guint64 first);
void   tach_cpu_dropout_bwd (TachBackend *be, const float *dy, float *dx, size_t n, float p,
                             guint64 seed, guint64 counter, guint64 first);
/* FALSE, with the data's error, when a token index is negative (the
 * embedding and its gradient). */
gboolean tach_cpu_tokens_valid (TachBackend *be, const int32_t *idx, int n);
void   tach_cpu_embedding (TachBackend *be, const float *table, const int32_t *idx, float *out,
                           int n, int dim);
void   tach_cpu_sample_tokens (TachBackend *be, const float *logits, int n, int vocab,
                               guint64 seed, guint64 counter, int32_t *tok, int32_t *ctx,
                               int len);
void   tach_cpu_sample_tokens_nll (TachBackend *be, const float *logits, int n, int vocab,
                                   guint64 seed, guint64 counter, int32_t *tok, int32_t *ctx,
                                   int len, float *loss);
void   tach_cpu_adam (TachBackend *be, float *param, const float *grad, float *m, float *v,
                      size_t n, float lr, float beta1, float beta2, float eps, float *t);
void   tach_cpu_sgd (TachBackend *be, float *param, const float *grad, size_t n, float lr);

/* tach-cpu-transpose.c: rows [@r0, @r1) of @src (@cols of them, @lds
 * apart) transposed into the same columns of @dst (@ldd apart):
 * dst[c * ldd + r] = src[r * lds + c]; by 8 x 8 blocks in registers when
 * they are eight rows and the CPU runs AVX. */
void   tach_cpu_transpose_rows (size_t r0, size_t r1, size_t cols, const float *src, size_t lds,
                                float *dst, size_t ldd);

/* tach-cpu-transformer.c: the Transformer ops but the fused attention. */
void   tach_cpu_gemm_strided_batched (TachBackend *be, gboolean ta, gboolean tb, int m, int n,
                                      int k, float alpha, const float *a, int lda,
                                      size_t stride_a, const float *b, int ldb, size_t stride_b,
                                      float beta, float *c, int ldc, size_t stride_c, int batch);
void   tach_cpu_add (TachBackend *be, const float *a, const float *b, float *y, size_t n);
void   tach_cpu_scale (TachBackend *be, float *x, float alpha, size_t n);
void   tach_cpu_layernorm_fwd (TachBackend *be, const float *x, const float *res, float *sum,
                               const float *gamma, const float *beta, float *y, float *mean,
                               float *rstd, int rows, int dim);
void   tach_cpu_layernorm_bwd (TachBackend *be, const float *x, const float *gamma,
                               const float *mean, const float *rstd, const float *dy,
                               const float *dres, float *dx, float *dgamma, float *dbeta,
                               int rows, int dim);
void   tach_cpu_gelu_fwd (TachBackend *be, float *x, const float *bias, float *y, int rows,
                          int dim);
void   tach_cpu_gelu_bwd (TachBackend *be, const float *x, const float *dy, float *dx, size_t n);
void   tach_cpu_heads_split (TachBackend *be, const float *x, int ldx, float *y, int B, int T,
                             int H, int hd, int cap, int pos);
void   tach_cpu_heads_merge (TachBackend *be, const float *y, float *x, int ldx, int B, int T,
                             int H, int hd, int cap, int pos);
void   tach_cpu_causal_softmax_fwd (TachBackend *be, float *s, int bh, int tq, int tk, int pos,
                                    float scale);
void   tach_cpu_causal_softmax_bwd (TachBackend *be, const float *p, const float *dp, float *ds,
                                    int bh, int tq, int tk, float scale);
void   tach_cpu_embedding_bwd (TachBackend *be, const float *dout, const int32_t *idx,
                               float *dtable, int n, int dim);

/* tach-cpu-attention.c: the fused attention. */
void   tach_cpu_attention_fwd (TachBackend *be, const float *q, const float *k, const float *v,
                               float *o, float *lse, int B, int H, int tq, int tk, int cap,
                               int hd, int pos, float scale, TachAttnDropout drop);
void   tach_cpu_attention_bwd (TachBackend *be, const float *q, const float *k, const float *v,
                               const float *o, const float *dout, const float *lse, float *dq,
                               float *dk, float *dv, int B, int H, int t, int hd, float scale,
                               TachAttnDropout drop);

G_END_DECLS
