/* tach-cpu-lstm-private.h: the CPU LSTM plan, shared by the fused op
 * (tach-cpu-lstm.c forward, tach-cpu-lstm-bwd.c backward), its tuner
 * (tach-cpu-lstm-tune.c) and its split inference pass
 * (tach-cpu-lstm-split.c). */
#pragma once

#include "tach-cpu-private.h"

G_BEGIN_DECLS

/* What the tuner measured and how the plan's forward passes compare. */
typedef struct {
  gboolean tuned;          /* both paths were timed (serial, split); FALSE: the plain pass */
  gboolean busy;           /* inside a tuning pass: not a step to re-check */
  double   estimate_us;    /* the chosen path's fastest tuning pass */
  double   other_us;       /* the other path's fastest tuning pass */
  guint    slow_calls;     /* consecutive forward calls far slower than the estimate */
  guint    rechecks;       /* re-tunings so far */
  gboolean frozen;         /* timed again on frozen weights (tach_cpu_lstm_fwd) */
} TachCpuLstmTune;

struct _TachLstmPlan {
  TachLstmDesc desc;
  size_t dir_stride;     /* floats per direction in the canonical block */
  size_t rows;           /* T * N */
  int    G;              /* 4H */
  int    ldg;            /* dirs * 4H: row stride of the gates */
  int    ldh;            /* dirs * H: row stride of y and the cell states */

  /* All tach_cpu_mem_alloc, owned. */
  float *work;           /* gates and cell states of an inference plan */
  float *dgates;         /* [T*N, dirs*4H]; unsliced training */
  float *dh;             /* [dirs][N, H] recurrent dh; training only */
  float *dc;             /* [dirs][N, H] cell-state gradient; training only */
  float *ones;           /* [T*N] ones: the bias gradient as a GEMM; unsliced training */
  float *wx_both;        /* [2 * 4H, I] both directions' W_x; unsliced, two directions */
  float *wx_k;           /* [I, dirs * 4H] every direction's W_x transposed, K-major for
                          * the forward's input side; sliced */
  float *wh_k;           /* [dirs][H, 4H] each direction's W_h transposed, for the
                          * forward's recurrent products; sliced */
  float *dg_block;       /* [threads][block * T, dirs * 4H] a block's gate gradients; sliced training */
  float *dw_part;        /* [blocks][dirs * dir_stride] each block's weight gradient
                          * (tach-cpu-lstm.c: part_dwh); sliced training */
  float *dw_sum;         /* [dirs * dir_stride] the blocks' copies added, in their layout,
                          * before the transposes into dw; sliced training */
  /* Sliced training on rows that repeat (desc.rows_repeat,
   * tach-cpu-lstm-repeat.c): each block's distinct rows of x, found by
   * the forward pass and kept for the backward one. */
  gboolean repeat;
  gint32  *rep_map;      /* [T*N] block b's rows from b * block * T: each row's distinct
                          * row, numbered in the block from 0 */
  gint32  *rep_first;    /* [T*N] from the same place: each distinct row's first row in
                          * the block */
  gint32  *rep_count;    /* [blocks] distinct rows of each block */
  float   *rep_x;        /* [threads][block * T, I] a block's distinct rows */
  float   *rep_p;        /* [threads][block * T, dirs * 4H] their input side (forward), the
                          * gate gradients of their rows added (backward) */
  guint32 *rep_slot;     /* [threads][rep_slots] a distinct row's number + 1, or 0: free */
  size_t   rep_slots;

  /* The recurrence runs in slices of the batch, one per thread. */
  gboolean sliced;
  int      block;        /* samples per block of a slice (tach-cpu-lstm.c) */
  /* A block's dW_x in dw_part transposed, as its dW_h always is
   * (tach-cpu-lstm-bwd.c). */
  gboolean dwx_t;
  /* Inference of a few streams, which may run split (TACH_CPU_GEMM_SPLIT). */
  gboolean can_split;

  /* Where this plan's GEMMs run, measured when the plan is built
   * (tach-cpu-lstm-tune.c), with what the tuner keeps to re-check it. */
  TachCpuGemmMode gemm_mode;
  TachCpuLstmTune tune;

  /* Inference on frozen weights (tach-cpu-lstm-frozen.c), all
   * tach_cpu_mem_alloc, owned, made on first use. */
  float       *packed;       /* [dirs][W_x, W_h packed (tach_cpu_pack_nt)] */
  const float *packed_for;   /* the weight block they were packed from */
  guint        packed_epoch; /* tach_cpu_frozen_epoch when they were */
  /* The input rows seen on these weights and their input side, found by
   * a hash of the row's bits (tach-cpu-lstm-frozen.c). */
  float       *memo_x;       /* [memo_cap, I] input rows */
  float       *memo_g;       /* [memo_cap, ldg] their input side x W_x^T */
  /* One direction's windows: [memo_cap, 2H] the cell state and h of the
   * step from a zero state on each row, where memo_start_ok says so. */
  float       *memo_start;
  guint8      *memo_start_ok;
  guint32     *memo_slot;    /* [memo_slots] a row's index + 1, or 0: free */
  size_t       memo_cap, memo_slots;
  size_t       memo_rows;    /* rows of memo_x, memo_g (and memo_start) that are current */
  /* One direction's windows (tach-cpu-lstm-frozen.c: forward_windows):
   * the last call's rows and, per stream, the states of the windows that
   * start at each of its rows, for a next call whose rows have shifted. */
  float       *win_x;        /* [N][T, I] the last call's rows, in time order */
  float       *win_h;        /* [N][T windows][T steps, H] */
  float       *win_c;        /* the same, cell states */
  gboolean     win_kept;     /* win_h and win_c hold win_x's windows */
  guint64      win_resumed;  /* calls that ran one step on the kept windows */
  /* The next call's recurrent products, run ahead on the backend's helper
   * thread (tach-cpu-ahead.c) while the ops between the two calls run,
   * from a copy of the windows' states this call left. */
  float       *ahead_h;      /* [N][T - 1, H] the states the products multiply */
  float       *ahead_g;      /* [N][T - 1, 4H] the products */
  TachBackend *ahead_be;     /* where a job was posted that may not be done; or NULL */
  gboolean     ahead_ready;  /* a job was posted on win_h as it is */
  guint64      win_ahead;    /* resumed calls that took their products from ahead_g */
  /* The split pass on frozen weights (tach-cpu-lstm-split.c): for each
   * direction and span of hidden units, the rows of W_h that feed the
   * span's four gates, gathered and packed; made beside the packed copies
   * above, for the spans of the backend's threads. */
  float       *span_packed;  /* [dirs][spans] gathered W_h rows, packed */
  float       *span_g;       /* [N * 4H] the spans' gates, gathered */
  int          spans;        /* spans span_packed was made for; 0: none */
  gboolean     spans_stale;  /* the packed copies changed since */
};

/* The row of (time @t, sample @n) in the data's order. */
static inline size_t
row_of (const TachLstmDesc *d, int t, int n)
{
  return d->time_major ? (size_t) t * d->N + n : (size_t) n * d->T + t;
}

/* Rows between consecutive samples of one time step. */
static inline size_t
step_rows (const TachLstmDesc *d)
{
  return d->time_major ? 1 : (size_t) d->T;
}

/* The time index of processing position @k in direction @dir. */
static inline int
time_at (const TachLstmDesc *d, int dir, int k)
{
  return dir == 0 ? k : d->T - 1 - k;
}

/* The rows of processing position @k of direction @dir in a forward pass
 * from sample 0 on: the step's gates, cell and hidden states, and the
 * previous step's states (the step's own at k = 0, where none is read). */
typedef struct {
  float       *g, *c, *h;
  const float *c_prev, *h_prev;
} TachLstmStep;

static inline TachLstmStep
forward_step (const TachLstmDesc *d, int dir, int k, float *gates, float *cells, float *y)
{
  size_t ldg = (size_t) d->dirs * 4 * d->H, ldh = (size_t) d->dirs * d->H;
  int t = time_at (d, dir, k), tp = k > 0 ? time_at (d, dir, k - 1) : t;
  TachLstmStep s = {
    gates + row_of (d, t, 0) * ldg + (size_t) dir * 4 * d->H,
    cells + row_of (d, t, 0) * ldh + (size_t) dir * d->H,
    y + row_of (d, t, 0) * ldh + (size_t) dir * d->H,
    cells + row_of (d, tp, 0) * ldh + (size_t) dir * d->H,
    y + row_of (d, tp, 0) * ldh + (size_t) dir * d->H,
  };

  return s;
}

/* Whether both products of @d's forward pass, its input side and a time
 * step's recurrent one, run on the small kernels (on every GEMM path:
 * tach_cpu_sgemm_mode), so that the passes which stand in for the plain
 * one (split, frozen) on the same kernels give its bits. */
static inline gboolean
tach_cpu_lstm_forward_small (const TachLstmDesc *d)
{
  return tach_cpu_sgemm_is_small ((size_t) d->T * d->N, (size_t) d->dirs * 4 * d->H,
                                  (size_t) d->I)
         && tach_cpu_sgemm_is_small ((size_t) d->N, (size_t) 4 * d->H, (size_t) d->H);
}

/* ------------------------------ the fused op, forward (tach-cpu-lstm.c) and
 * backward (tach-cpu-lstm-bwd.c) */

/* The blocks of a sliced plan's batch. */
static inline int
tach_cpu_lstm_blocks (const TachLstmPlan *plan)
{
  return plan->block > 0 ? (plan->desc.N + plan->block - 1) / plan->block : 0;
}

/* Rows of one time step lie T rows apart batch-major (12.8 KB of gates
 * for W1), too far apart for the hardware prefetchers, and the pointwise
 * passes stall on every row's first load: each pass asks for the rows a
 * few samples ahead, and backward also for the gate-gradient rows it is
 * about to write (W1 on two cores: 2 ahead beat 4 and 8). */
#define TACH_CPU_LSTM_PREFETCH_AHEAD 2

static inline void
tach_cpu_lstm_prefetch (const void *p, size_t bytes, gboolean write)
{
  const char *c = p;

  if (write)
    for (size_t o = 0; o < bytes; o += 64)
      __builtin_prefetch (c + o, 1, 3);
  else
    for (size_t o = 0; o < bytes; o += 64)
      __builtin_prefetch (c + o, 0, 3);
}

/* The plain passes' products: the small ones on the small kernels, the
 * others on dnnl_sgemm on this thread alone, as a sliced pass runs its
 * blocks' (tach_cpu_sgemm_local).  On the pool, dnnl_sgemm's bits depend
 * on its thread count for some of the LSTM's shapes (1 x 400 x 1024, the
 * bias gradient of 256 four-step samples, at 1 and 2 threads; with AVX2
 * also 42 x 50 x 280 and 280 x 50 x 42): --threads would change results. */
static inline gboolean
tach_cpu_lstm_sgemm (TachBackend *be, char ta, char tb, size_t m, size_t n, size_t k,
                     float alpha, const float *a, size_t lda, const float *b, size_t ldb,
                     float beta, float *c, size_t ldc)
{
  return tach_cpu_sgemm_mode (be, TACH_CPU_GEMM_SERIAL, ta == 'T', tb == 'T', m, n, k, alpha, a,
                              lda, b, ldb, beta, c, ldc);
}

/* What the slices of one pass share (all borrowed). */
typedef struct {
  const TachLstmPlan *plan;
  const float        *x;
  const float        *w;
  const float        *y;
  const float        *dy;
  float              *h;        /* forward: y, written */
  float              *gates;    /* forward: written; backward: read */
  float              *cells;
  float              *dx;       /* backward: written when the plan needs dx */
  float              *dw;       /* backward: the first thread's weight gradient */
} TachLstmPass;

typedef dnnl_status_t (*TachLstmSliceFunc) (const TachLstmPass *pass, int n0, int n1);

/* Rows that repeat (tach-cpu-lstm-repeat.c): the input side of block
 * [@b0, @b0 + @nb) of @pass into its gates from each distinct row's
 * product with @wx ([I, dirs * 4H]); and that block's dW_x (or its
 * transpose, plan->dwx_t) into @part from its gate gradients @dg (the
 * block's rows in the data's order, as backward_slice keeps them) added
 * per distinct row. */
dnnl_status_t tach_cpu_lstm_repeat_input_side (const TachLstmPass *pass, const float *wx, int b0,
                                               int nb);
dnnl_status_t tach_cpu_lstm_repeat_dwx (const TachLstmPass *pass, const float *dg, int b0, int nb,
                                        float *part);
/* The plan's buffers for rows that repeat (a failure sets the backend's
 * sticky error). */
void          tach_cpu_lstm_repeat_alloc (TachBackend *be, TachLstmPlan *plan);

/* Runs @func on slices of the batch, one per thread of the pool
 * (tach-cpu-lstm.c); FALSE with the error set when a slice failed. */
gboolean tach_cpu_lstm_run_slices (TachBackend *be, const TachLstmPass *pass,
                                   TachLstmSliceFunc func);
/* Both directions' W_x side by side in plan->wx_both. */
void     tach_cpu_lstm_pack_wx_both (TachLstmPlan *plan, const float *w);

/* Inference of at most this many streams may split its hidden units
 * between the threads. */
#define TACH_CPU_LSTM_SPLIT_MAX_N 4

/* Whether a plan for @d may run its forward pass split. */
gboolean tach_cpu_lstm_split_wanted (TachBackend *be, const TachLstmDesc *d);
/* The whole forward pass (input side included) of @d, split: @gates and
 * @cells are the plan's work space, [T*N, dirs*4H] and [T*N, dirs*H]. */
void     tach_cpu_lstm_split_forward (TachBackend *be, const TachLstmDesc *d, const float *x,
                                      const float *w, float *y, float *gates, float *cells);

/* Whether the forward pass of @plan on weights @w runs on frozen weights'
 * packed copies (tach-cpu-lstm-frozen.c), and that pass: @gates and
 * @cells as for the split one. */
gboolean tach_cpu_lstm_frozen_wanted (TachBackend *be, const TachLstmPlan *plan,
                                      const float *w);
void     tach_cpu_lstm_frozen_forward (TachBackend *be, TachLstmPlan *plan, const float *x,
                                       const float *w, float *y, float *gates, float *cells);
/* Packs @w's W_x and W_h for the frozen passes, once per weight block;
 * FALSE on a failed allocation (sticky error set). */
gboolean tach_cpu_lstm_frozen_pack (TachBackend *be, TachLstmPlan *plan, const float *w);
/* The input side of every row of @x into @gates, from the rows kept or
 * the packed W_x (tach_cpu_lstm_frozen_pack first). */
void     tach_cpu_lstm_frozen_input_side (TachLstmPlan *plan, const float *x, float *gates);
/* The frozen pass split: its input side on the calling thread, then each
 * step's recurrent products and pointwise math by span of hidden units on
 * the pool, from each span's own packed rows of W_h. */
void     tach_cpu_lstm_split_frozen_forward (TachBackend *be, TachLstmPlan *plan,
                                             const float *x, const float *w, float *y,
                                             float *gates, float *cells);
/* Forgets the input rows and the windows kept: the next pass computes
 * every row's input side and every step, as a first call does. */
void     tach_cpu_lstm_frozen_forget (TachLstmPlan *plan);
/* Whether the serial frozen pass of @plan runs its windows' next products
 * ahead on the backend's helper thread (tach-cpu-ahead.c). */
gboolean tach_cpu_lstm_frozen_runs_ahead (TachBackend *be, const TachLstmPlan *plan);
/* Drops the products @plan posted ahead, waiting if they are being
 * computed: before what they read (the packed W_h, ahead_h) changes or
 * goes. */
void     tach_cpu_lstm_frozen_settle (TachLstmPlan *plan);

/* A hash of the bits of the @n floats at @x (tach-cpu-lstm-frozen.c). */
guint32 tach_cpu_lstm_row_hash (const float *x, size_t n);

/* Floats of the reserve: activated gates, then cell states. */
size_t tach_cpu_lstm_reserve_floats (const TachLstmPlan *plan);
/* The forward pass itself, on the GEMM path of plan->gemm_mode
 * (tach_cpu_lstm_fwd is this pass, timed for the tuner's re-check). */
void   tach_cpu_lstm_forward_pass (TachBackend *be, TachLstmPlan *plan, const float *x,
                                   const float *w, float *y, void *reserve);
/* The plan, its buffers allocated, not tuned yet: tach_cpu_lstm_plan_new()
 * (tach-cpu-lstm-tune.c) builds it, then times its paths.  NULL with the
 * backend's error set on failure. */
TachLstmPlan *tach_cpu_lstm_plan_build (TachBackend *be, const TachLstmDesc *desc);

G_END_DECLS
