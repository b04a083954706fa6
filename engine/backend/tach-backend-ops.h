/* tach-backend-ops.h: what a compute backend implements: its ops table and
 * its part of the TachBackend struct.  Backends include this header; models
 * use the wrappers of tach-backend.h.
 *
 * A backend owns one device and one stream.
 *
 * Pointers: every float/int pointer passed to an op is a *device* pointer
 * obtained from tach_backend_alloc() (host memory on a backend with
 * TACH_BACKEND_CAP_HOST_MEMORY, device memory otherwise).  Host code never
 * dereferences them; it uses upload and download.  All tensors are dense,
 * row-major, float32 unless said otherwise.
 *
 * Asynchrony: ops are queued on the backend's stream and may return before
 * the work is done (unless the backend has TACH_BACKEND_CAP_SYNC_OPS).
 *
 * Errors are sticky (as CUDA's are): an op that fails records the first
 * error in the backend (tach_backend_fail()) and every later op becomes a
 * no-op until the error is taken with tach_backend_take_error().
 *
 * Threads: a backend is used by one thread at a time (the engine thread).
 */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "tach-engine.h"
#include "tach-error-private.h"

G_BEGIN_DECLS

/* What a backend can do, as its registry row says (tach-backends.c). */
typedef enum {
  TACH_BACKEND_CAP_GRAPHS      = 1 << 0, /* captures and replays graphs (launch=graph) */
  TACH_BACKEND_CAP_SYNC_OPS    = 1 << 1, /* ops finish before they return: the host clock times them */
  TACH_BACKEND_CAP_HOST_MEMORY = 1 << 2, /* its memory is host memory */
  TACH_BACKEND_CAP_THREADS     = 1 << 3, /* computes on host threads (--threads) */
  TACH_BACKEND_CAP_LSTM_FP32_ONLY = 1 << 4, /* its LSTM ops run in fp32 only, whatever the
                                               precision (validation refuses others) */
} TachBackendCaps;

typedef struct _TachBackend      TachBackend;
typedef struct _TachBackendOps   TachBackendOps;
typedef struct _TachLstmPlan     TachLstmPlan;
typedef struct _TachConvPlan     TachConvPlan;
typedef struct _TachEvent        TachEvent;
typedef struct _TachGraph        TachGraph;
typedef struct _TachLstmWeightMap   TachLstmWeightMap;   /* tach-lstm-weight-map.h */

/* The size of a collective communicator's id (NCCL's ncclUniqueId). */
#define TACH_COLL_ID_BYTES 128

/* An LSTM over a whole sequence (the fused op).
 *
 * Data: x is [T, N, I] when time_major, else [N, T, I]; y is laid out the same
 * way with dirs*H features (forward direction first, then backward).
 * The initial h and c are zero.
 *
 * Weights, Tach's canonical layout, one flat block per direction (forward,
 * then backward): W_x [4H, I], W_h [4H, H], b [4H]; gate order i, f, g, o.
 * Size: dirs * 4H * (I + H + 1) floats.  The fused op reads them (and
 * writes their gradient) in the block layout its backend reports
 * (lstm_weight_map, tach-lstm-weight-map.h), which is this one unless the backend
 * says otherwise: the model keeps the block in that layout, so nothing is
 * converted per step.
 *
 * The "layout misread" of the BiLSTM report is a plan with time_major = TRUE
 * over batch-major data: T and N swap meaning, nothing else changes. */
typedef struct {
  int      T, N, I, H;
  int      dirs;          /* 1 or 2 */
  gboolean time_major;
  gboolean training;      /* keep what backward needs in the reserve space */
  gboolean need_dx;       /* backward computes the input gradient */
  TachPrecision precision;
  /* Build the plan from scratch, bypassing any plan or primitive cache of
   * the library (oneDNN's primitive cache): what call-setup=per-call asks
   * for, as a Keras predict call that retraces rebuilds everything. */
  gboolean uncached;
  /* Many rows of x are the same row (rows of a lookup table: an
   * embedding's): a backend may compute each distinct row's input side
   * and weight gradient once.  A hint: the sums are the same up to their
   * order. */
  gboolean rows_repeat;
} TachLstmDesc;

/* Dropout on the fused attention's probabilities (training's, as GPT-2's
 * attn_dropout): probability (b, h, i, j) of a pass of Tq query rows over
 * Tk keys is kept iff tach_rand_uniform (seed, counter + the step offset,
 * first + ((b H + h) Tq + i) Tk + j) >= p, and then scaled by 1/(1-p):
 * the mask that dropout_fwd draws over the naive attention's [B H, Tq, Tk]
 * probabilities at @first, so that the two modes drop the same ones.  The
 * row's normaliser (lse) is the undropped softmax's.  p = 0: none
 * (TACH_ATTN_NO_DROPOUT, generation's). */
typedef struct {
  float   p;
  guint64 seed, counter, first;
} TachAttnDropout;

#define TACH_ATTN_NO_DROPOUT ((TachAttnDropout) { 0.0f, 0, 0, 0 })

/* A 2-D convolution, NCHW, stride 1, symmetric zero padding.
 *
 * With block set, the plan is a convolution block (conv + bias + ReLU +
 * 2x2 stride-2 max pool, W3's layers) for conv_block_fwd/bwd, which a
 * backend may fuse and run in its own layouts; such a plan serves only the
 * block ops (tach_conv_block_forward/backward in tach-layers.h fall
 * back to conv_fwd/bwd, relu and max pool when the slots are NULL, so a
 * backend without them plans the bare convolution and ignores the flag). */
typedef struct {
  int N, C, H, W;         /* input */
  int K, R, S;            /* filters: K x C x R x S */
  int pad_h, pad_w;
  gboolean need_dx;
  TachPrecision precision;
  gboolean block;
  /* Block plans only, so that two blocks in a row pass their activations
   * without converting them: with y_native, the pooled output y and its
   * gradient dy are in a layout of the backend's choosing, which only a
   * next block planned with x_native (same N and C, H and W) reads; with
   * x_native, x and dx are in that layout (the pair of one precision).  A
   * backend that has one layout ignores both. */
  gboolean y_native, x_native;
} TachConvDesc;

struct _TachBackendOps {
  /* --- lifecycle and memory (all required) --- */
  void     (*free)          (TachBackend *be);
  void    *(*alloc)         (TachBackend *be, size_t bytes);     /* NULL + sticky error on failure */
  void     (*dealloc)       (TachBackend *be, void *ptr);
  void     (*upload)        (TachBackend *be, void *dst, const void *src, size_t bytes);
  /* pinned host memory for asynchronous uploads; optional (NULL: g_malloc) */
  void    *(*host_alloc)    (TachBackend *be, size_t bytes);
  void     (*host_free)     (TachBackend *be, void *ptr);
  void     (*upload_async)  (TachBackend *be, void *dst, const void *src, size_t bytes); /* optional: from host_alloc memory */
  /* Optional (all three or none): uploads that overlap compute, for
   * feed=prefetch's double buffering.  The backend has a copy stream beside
   * its compute stream.
   * upload_overlapped queues, on the copy stream: a wait for @after (an
   * event recorded with event_record, so on the compute stream; NULL: no
   * wait), the copy of @bytes from @src (host_alloc memory) to @dst, then
   * the recording of @done.  It returns at once.  @src must stay unchanged
   * until @done has passed (event_synchronize), and no op may read @dst
   * before stream_wait (@done) has been queued.
   * NULL: the wrapper waits for @after, uploads synchronously and records
   * @done, which is right for a backend whose ops finish before they return. */
  void     (*upload_overlapped) (TachBackend *be, void *dst, const void *src, size_t bytes,
                                 TachEvent *after, TachEvent *done);
  /* Every op queued on the compute stream after this call waits until @ev
   * has passed; the host does not wait.  NULL: nothing to do (ops finish
   * before they return). */
  void     (*stream_wait)   (TachBackend *be, TachEvent *ev);
  /* Blocks the host until @ev has passed.  NULL: event_elapsed_ms (ev, ev). */
  void     (*event_synchronize) (TachBackend *be, TachEvent *ev);
  void     (*download)      (TachBackend *be, void *dst, const void *src, size_t bytes); /* blocks */
  void     (*zero)          (TachBackend *be, void *ptr, size_t bytes);
  void     (*copy)          (TachBackend *be, void *dst, const void *src, size_t bytes); /* device to device */
  void     (*synchronize)   (TachBackend *be);
  guint64  (*peak_memory)   (TachBackend *be);
  /* Optional (NULL: nothing to do): the caller promises that
   * [ptr, ptr + bytes) of an allocation is not changed until it is
   * written by upload, zero or copy or freed (a generation loop's
   * weights), so that the backend may keep what it derives from it
   * (packed copies of weights) across calls.  The results stay those of
   * the plain ops. */
  void     (*freeze)        (TachBackend *be, const void *ptr, size_t bytes);
  /* Optional (NULL: none): the most bytes it has held at once so far in
   * what it derived from frozen data (the packed copies), which its
   * peak_memory counts. */
  guint64  (*frozen_copies_peak) (TachBackend *be);

  /* --- timing --- */
  TachEvent *(*event_new)   (TachBackend *be);
  void     (*event_free)    (TachBackend *be, TachEvent *ev);
  void     (*event_record)  (TachBackend *be, TachEvent *ev);
  double   (*event_elapsed_ms) (TachBackend *be, TachEvent *start, TachEvent *end); /* blocks on end */

  /* --- graphs (optional: NULL means launch=graph is not supported) --- */
  void       (*graph_begin)  (TachBackend *be);
  TachGraph *(*graph_end)    (TachBackend *be);
  void       (*graph_launch) (TachBackend *be, TachGraph *graph);
  void       (*graph_free)   (TachBackend *be, TachGraph *graph);
  /* Optional: *counter += delta for a device uint64 (from alloc), queued on
   * the stream like any op, so that inside a capture it becomes a node of
   * the graph and every replay advances the counter (see step_offset).
   * NULL: tach_backend_counter_add() adds on the host through download
   * and upload, which is right only for a backend whose ops finish before
   * they return; a backend with the graph slots implements it. */
  void       (*counter_add)  (TachBackend *be, uint64_t *counter, uint64_t delta);

  /* --- dense algebra --- */
  /* C[m,n] = alpha * op(A) op(B) + beta * C, row-major, op = transpose when t* */
  void (*gemm) (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k,
                float alpha, const float *a, int lda, const float *b, int ldb,
                float beta, float *c, int ldc);
  /* Optional (NULL: the model runs its products in gemm, in fp32): gemm
   * with A and B rounded to bf16 and the products summed in fp32; C stays
   * fp32.  Dense layers of a bf16 run use it. */
  void (*gemm_bf16) (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k,
                     float alpha, const float *a, int lda, const float *b, int ldb,
                     float beta, float *c, int ldc);
  /* y[m,n] += bias[n] */
  void (*bias_add)  (TachBackend *be, float *y, const float *bias, int m, int n);
  /* db[n] = beta * db[n] + sum_i dy[i,n] */
  void (*bias_grad) (TachBackend *be, const float *dy, float *db, int m, int n, float beta);
  void (*relu_fwd)  (TachBackend *be, const float *x, float *y, size_t n);
  /* dx = dy * (y > 0); may run in place (dx == dy) */
  void (*relu_bwd)  (TachBackend *be, const float *y, const float *dy, float *dx, size_t n);

  /* --- recurrent --- */
  TachLstmPlan *(*lstm_plan_new)  (TachBackend *be, const TachLstmDesc *desc);
  void          (*lstm_plan_free) (TachBackend *be, TachLstmPlan *plan);
  size_t        (*lstm_reserve_bytes) (TachBackend *be, TachLstmPlan *plan);
  /* Optional (NULL: the canonical layout): the layout of the weight block
   * that lstm_fwd/bwd read and write for plans of @desc, the same for every
   * plan whose desc has the same I, H, dirs and precision (so a plan
   * rebuilt per call, or for another batch, reads the same block).  FALSE +
   * sticky error on failure.  Callers use tach_lstm_weight_map(). */
  gboolean (*lstm_weight_map) (TachBackend *be, const TachLstmDesc *desc, TachLstmWeightMap *map);
  /* w and dw in the block layout of lstm_weight_map */
  void (*lstm_fwd) (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w,
                    float *y, void *reserve);
  /* dw is overwritten (not accumulated), the floats no view of the layout
   * covers with zero; dx may be NULL when !need_dx */
  void (*lstm_bwd) (TachBackend *be, TachLstmPlan *plan, const float *x, const float *w,
                    const float *y, const float *dy, void *reserve, float *dx, float *dw);
  /* One cell step (the unrolled mode).  gates [N,4H]: pre-activations
   * x W_x^T + h W_h^T on input (bias not yet added); on output the activated
   * gates (i, f, g, o), kept for backward.  c_prev may be NULL (zero).
   * h is written with row stride ldh. */
  void (*lstm_cell_fwd) (TachBackend *be, int n, int h, float *gates, const float *bias,
                         const float *c_prev, float *c, float *h_out, int ldh);
  /* From dh (row stride lddh, may be NULL = 0) and dc (in: from step t+1, may
   * be NULL = 0) compute dgates [N,4H] and dc_prev [N,H] (may be NULL). */
  void (*lstm_cell_bwd) (TachBackend *be, int n, int h, const float *gates, const float *c_prev,
                         const float *c, const float *dh, int lddh, const float *dc,
                         float *dgates, float *dc_prev);

  /* --- reductions and losses --- */
  /* x [N, T, C] -> y [N, C], argmax index per (n, c) in idx */
  void (*max_over_time_fwd) (TachBackend *be, const float *x, float *y, int32_t *idx, int n, int t, int c);
  /* dx [N, T, C] = scatter of dy at idx (dx zeroed first by the op) */
  void (*max_over_time_bwd) (TachBackend *be, const float *dy, const int32_t *idx, float *dx, int n, int t, int c);
  /* mean binary cross-entropy of sigmoid(logits) against labels (0/1 floats);
   * writes the loss to *loss and dlogits (may be NULL) */
  void (*sigmoid_bce) (TachBackend *be, const float *logits, const float *labels, int n,
                       float *loss, float *dlogits);
  /* mean softmax cross-entropy; labels int32; dlogits may be NULL */
  void (*softmax_ce)  (TachBackend *be, const float *logits, const int32_t *labels, int n, int classes,
                       float *loss, float *dlogits);
  /* fraction correct: binary (classes == 1, labels float 0/1 as float*) or argmax */
  void (*accuracy)    (TachBackend *be, const float *logits, const void *labels, int n, int classes,
                       float *acc);

  /* --- convolutional --- */
  TachConvPlan *(*conv_plan_new)  (TachBackend *be, const TachConvDesc *desc);
  void          (*conv_plan_free) (TachBackend *be, TachConvPlan *plan);
  void (*conv_fwd) (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                    const float *b, float *y);
  /* dw, db overwritten; dx may be NULL */
  void (*conv_bwd) (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                    const float *dy, float *dx, float *dw, float *db);
  /* 2x2 stride-2 max pool, NCHW; idx records the winner */
  void (*maxpool_fwd) (TachBackend *be, const float *x, float *y, int32_t *idx, int n, int c, int h, int w);
  void (*maxpool_bwd) (TachBackend *be, const float *dy, const int32_t *idx, float *dx, int n, int c, int h, int w);
  /* Optional (NULL: see TachConvDesc.block): the convolution block on a
   * plan made with block set, y = maxpool2x2 (relu (conv (x, w) + b)) with y
   * [N, K, OH/2, OW/2] plain (or, and x, in the backend's layout: y_native,
   * x_native).  act (N*K*OH*OW floats) and idx
   * (N*K*(OH/2)*(OW/2) int32) keep what backward needs, in a layout of the
   * backend's choosing: the caller only hands them back to conv_block_bwd
   * after this forward. */
  void (*conv_block_fwd) (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                          const float *b, float *act, int32_t *idx, float *y);
  /* From dy [N, K, OH/2, OW/2] compute dw, db (overwritten) and dx (may be
   * NULL unless need_dx); dact (as big as act) is scratch.  x is the
   * forward's x, unchanged since (a backend may keep its own copy). */
  void (*conv_block_bwd) (TachBackend *be, TachConvPlan *plan, const float *x, const float *w,
                          const float *act, const int32_t *idx, const float *dy, float *dact,
                          float *dx, float *dw, float *db);
  /* global average pool [N,C,H,W] -> [N,C] */
  void (*avgpool_fwd) (TachBackend *be, const float *x, float *y, int n, int c, int hw);
  void (*avgpool_bwd) (TachBackend *be, const float *dy, float *dx, int n, int c, int hw);
  /* counter-based dropout: element e is kept iff
   * tach_rand_uniform(seed, counter, first + e) >= p, kept values scaled by
   * 1/(1-p).  bwd regenerates the same mask.  @first is where x[0] lies in
   * a larger mask: a data-parallel rank's shard of the global batch draws
   * the elements one process at the global batch draws for those samples.
   * Like sample_tokens, it adds the step offset to @counter (see
   * TachBackend.step_offset). */
  void (*dropout_fwd) (TachBackend *be, const float *x, float *y, size_t n, float p,
                       guint64 seed, guint64 counter, guint64 first);
  void (*dropout_bwd) (TachBackend *be, const float *dy, float *dx, size_t n, float p,
                       guint64 seed, guint64 counter, guint64 first);

  /* --- embedding and generation --- */
  /* out[i, :] = table[idx[i], :] for i < n */
  void (*embedding) (TachBackend *be, const float *table, const int32_t *idx, float *out, int n, int dim);
  /* for each row r < n: draw token from softmax(logits[r]) with
   * u = tach_rand_uniform(seed, counter + step offset, r) by inverse CDF
   * (see TachBackend.step_offset); write to tok[r];
   * then shift ctx[r, 0..len) left by one and put the token last. */
  void (*sample_tokens) (TachBackend *be, const float *logits, int n, int vocab,
                         guint64 seed, guint64 counter, int32_t *tok, int32_t *ctx, int len);
  /* Optional (NULL: sample_tokens, then softmax_ce of the drawn tokens; see
   * tach_backend_sample_tokens): sample_tokens, and also *loss = the mean
   * over the rows of -log softmax (logits[r])[tok[r]], the loss softmax_ce
   * reports for these tokens, from the same pass over the logits. */
  void (*sample_tokens_nll) (TachBackend *be, const float *logits, int n, int vocab,
                             guint64 seed, guint64 counter, int32_t *tok, int32_t *ctx, int len,
                             float *loss);

  /* --- Transformer (the gpt workload; optional, all or none) ---
   * Attention tensors are per head: q and o [B, H, Tq, hd]; the keys and
   * values k and v [B, H, cap, hd], a cache of @cap positions of which
   * the first Tk hold keys.  Causal: query row i, at absolute position
   * pos + i, sees the keys j <= pos + i (and j < Tk).  Training runs them
   * with pos = 0 and Tq = Tk = cap = T. */
  /* For i < batch: C_i = alpha op(A_i) op(B_i) + beta C_i, as gemm, with
   * A_i = a + i * stride_a (floats), likewise B_i and C_i. */
  void (*gemm_strided_batched) (TachBackend *be, gboolean ta, gboolean tb, int m, int n, int k,
                                float alpha, const float *a, int lda, size_t stride_a,
                                const float *b, int ldb, size_t stride_b, float beta,
                                float *c, int ldc, size_t stride_c, int batch);
  /* y = a + b over @n floats (y may be a or b): a residual, unfused. */
  void (*add)   (TachBackend *be, const float *a, const float *b, float *y, size_t n);
  /* x *= alpha over @n floats: a scaling pass of its own (fusion=none's
   * attention scale, AdamW's decoupled weight decay). */
  void (*scale) (TachBackend *be, float *x, float alpha, size_t n);
  /* LayerNorm over the rows of [rows, dim], eps 1e-5:
   * y = (s - mean) * rstd * gamma + beta, with s = x, or, when @res is not
   * NULL, s = x + res written to @sum (the residual add fused into the
   * norm; @sum may be x).  mean and rstd [rows] are kept for backward. */
  void (*layernorm_fwd) (TachBackend *be, const float *x, const float *res, float *sum,
                         const float *gamma, const float *beta, float *y, float *mean,
                         float *rstd, int rows, int dim);
  /* From dy: dx = the norm's input gradient, plus @dres when not NULL
   * (the residual branch's gradient, fused; dx may be dres); dgamma and
   * dbeta [dim] overwritten.  x is the forward's s. */
  void (*layernorm_bwd) (TachBackend *be, const float *x, const float *gamma, const float *mean,
                         const float *rstd, const float *dy, const float *dres, float *dx,
                         float *dgamma, float *dbeta, int rows, int dim);
  /* GPT-2's GELU (the tanh form) over [rows, dim]: when @bias is not NULL
   * x[r, :] += bias first, in place (bias and activation fused: x then
   * holds the pre-activation that backward reads), then y = gelu (x). */
  void (*gelu_fwd) (TachBackend *be, float *x, const float *bias, float *y, int rows, int dim);
  /* dx = dy * gelu'(x) over @n floats; may run in place (dx == dy). */
  void (*gelu_bwd) (TachBackend *be, const float *x, const float *dy, float *dx, size_t n);
  /* Heads: x [B*T, ldx] holds H heads of @hd columns from column 0 (a
   * projection's output; a view of q, k or v in [B*T, 3C] with ldx 3C).
   * split: y[b, h, pos + t, :] = x[b*T + t, h*hd ...] with y [B, H, cap,
   * hd] (appends T positions to a cache at @pos).  merge, its inverse:
   * x[b*T + t, h*hd ...] = y[b, h, pos + t, :] (the other columns of x
   * untouched). */
  void (*heads_split) (TachBackend *be, const float *x, int ldx, float *y, int B, int T, int H,
                       int hd, int cap, int pos);
  void (*heads_merge) (TachBackend *be, const float *y, float *x, int ldx, int B, int T, int H,
                       int hd, int cap, int pos);
  /* The naive attention's softmax, in place over s [bh, Tq, Tk] (scores
   * materialised): s = softmax (scale * s) per row with the causal mask
   * (keys past pos + i get probability 0). */
  void (*causal_softmax_fwd) (TachBackend *be, float *s, int bh, int tq, int tk, int pos,
                              float scale);
  /* ds = scale * p * (dp - sum_j p dp) per row (p the forward's output;
   * ds may be dp). */
  void (*causal_softmax_bwd) (TachBackend *be, const float *p, const float *dp, float *ds,
                              int bh, int tq, int tk, float scale);
  /* Fused attention (FlashAttention's algorithm: tiles of keys, an online
   * softmax, no [Tq, Tk] matrix stored): o = dropout (softmax (scale q
   * k^T, causal)) v, and lse [B*H*Tq] (may be NULL when nothing trains)
   * the log-sum-exp of each row's scaled scores, for backward. */
  void (*attention_fwd) (TachBackend *be, const float *q, const float *k, const float *v,
                         float *o, float *lse, int B, int H, int tq, int tk, int cap, int hd,
                         int pos, float scale, TachAttnDropout drop);
  /* Its backward (training: pos 0, tq = tk = cap), recomputing the
   * probabilities from lse and the mask from @drop's counters: dq, dk, dv
   * overwritten. */
  void (*attention_bwd) (TachBackend *be, const float *q, const float *k, const float *v,
                         const float *o, const float *dout, const float *lse, float *dq,
                         float *dk, float *dv, int B, int H, int t, int hd, float scale,
                         TachAttnDropout drop);
  /* dtable[idx[i], :] += dout[i, :] for i < n, in order of i (the
   * embedding's gradient, accumulated: a tied LM head adds its own). */
  void (*embedding_bwd) (TachBackend *be, const float *dout, const int32_t *idx, float *dtable,
                         int n, int dim);

  /* --- optimisers over one flat parameter buffer --- */
  /* Adam; *t (device float) is the step count, incremented by the op so that
   * a captured graph replays correctly.  Kingma & Ba's form (as PyTorch),
   * with t the count after the increment:
   *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
   *   param -= lr * (m / (1-b1^t)) / (sqrt (v / (1-b2^t)) + eps). */
  void (*adam) (TachBackend *be, float *param, const float *grad, float *m, float *v, size_t n,
                float lr, float beta1, float beta2, float eps, float *t);
  void (*sgd)  (TachBackend *be, float *param, const float *grad, size_t n, float lr);

  /* --- data-parallel collectives (optional, all or none) ---
   * A backend with them sums its own device buffers across the ranks (the
   * CUDA backend through NCCL); without them the gradients must be host
   * memory, which the runner sums over MPI.  Each op is queued on the
   * compute stream, or with @side on a second stream beside it, on which
   * the collectives that overlap compute run; side_record and side_wait
   * order the two.  Failures become the sticky error. */
  /* Rank 0: a new communicator's id (TACH_COLL_ID_BYTES), which the
   * runner hands every rank. */
  void     (*coll_new_id) (TachBackend *be, guint8 *id);
  /* Joins the communicator @id as @rank of @size; returns once every rank
   * has joined. */
  void     (*coll_join)   (TachBackend *be, const guint8 *id, guint rank, guint size);
  /* Leaves it; @abort: at once, without the other ranks (one is lost). */
  void     (*coll_leave)  (TachBackend *be, gboolean abort);
  /* The in-place sum over the ranks of @count elements of @buf: floats,
   * or with @wire fp16 or bf16 halves (each partial sum rounded to them). */
  void     (*coll_allreduce) (TachBackend *be, void *buf, size_t count, TachGradCompress wire,
                              gboolean side);
  /* @wire[i] = @grad[i] rounded to nearest even in fp16 or bf16. */
  void     (*coll_pack)   (TachBackend *be, const float *grad, guint16 *wire, size_t n,
                           TachGradCompress compress, gboolean side);
  /* @grad[i] = (@wire[i] widened, or @grad[i] when @wire is NULL) / @divisor. */
  void     (*coll_unpack) (TachBackend *be, const guint16 *wire, float *grad, size_t n,
                           TachGradCompress compress, float divisor, gboolean side);
  void     (*side_record) (TachBackend *be, TachEvent *ev);
  void     (*side_wait)   (TachBackend *be, TachEvent *ev);
  /* Whether @ev has passed; never blocks. */
  gboolean (*event_query) (TachBackend *be, TachEvent *ev);
};

/* Data-parallel gradient synchronisation: what the runner's reducer
 * (engine/run/tach-ranks.h) hooks into a backend, so that the models'
 * flat parameter buffer (models/tach-params.h) reaches it.  @grad is
 * the flat gradient buffer (backend memory). */
typedef struct _TachGradSyncHook TachGradSyncHook;

/* Sharded updates (shard=grads, DeepSpeed's ZeRO-2, and shard=all): what this rank
 * updates after the reduce, as ranges of the flat buffer.  Range i is
 * @count[i] floats from @offset[i]; its averaged gradient is @grad +
 * @state[i] (the rank's shard of the reduce-scatters, backend memory)
 * and its optimizer state starts at @state[i] in buffers of @state_total
 * floats. */
typedef struct {
  guint         n;
  const size_t *offset, *count, *state;
  size_t        state_total;
  float        *grad;
} TachGradShard;

/* Fully sharded (shard=all, FSDP's FULL_SHARD): the buckets that the
 * models' units make (models/tach-params.h), which the reducer takes as
 * they are instead of cutting its own.  Bucket i is the floats [@start[i],
 * @end[i]) of the flat buffer, a run of consecutive tensors of one unit
 * (a piece of it), in launch order (the order backward completes them:
 * the last unit's first); trainable tensor j of @n_tensors lies in bucket
 * @tensor_bucket[j].  @n_units units, @n_kept of them kept gathered
 * through the step (the root's), make @n_gathers all-gathers a step. */
typedef struct {
  guint         n_buckets;
  const size_t *start, *end;
  const guint  *tensor_bucket;
  guint         n_tensors;
  guint         n_units, n_kept, n_gathers;
} TachGradUnits;

struct _TachGradSyncHook {
  /* Once, as the parameters are allocated: the trainable tensors' offsets
   * and counts (floats) in the flat buffer, in the order the model
   * declared them, and the trainable prefix's length. */
  void (*layout) (TachGradSyncHook *hook, const size_t *offsets, const size_t *counts,
                  guint n, size_t trainable);
  /* Backward has written tensor @index's gradient: its bucket may start,
   * and the ones in flight move on (called between layers). */
  void (*ready)  (TachGradSyncHook *hook, float *grad, guint index);
  /* Before the optimizer: every gradient averaged over the ranks.
   * @params (@total floats) for the check at the end.  Failures become
   * the backend's sticky error. */
  void (*reduce) (TachGradSyncHook *hook, float *grad, const float *params, size_t total);
  /* Sharded (NULL otherwise): after layout, the ranges this rank updates;
   * reduce then leaves the averaged gradients in their shard alone, and
   * after the optimizer, gather gives every rank every range's updated
   * parameters. */
  const TachGradShard *(*shard) (TachGradSyncHook *hook);
  void (*gather) (TachGradSyncHook *hook, float *params);
  /* Fully sharded (NULL otherwise; the shard's ranges are then the
   * parameters' only copy, and gather is never called).  units: once,
   * before layout.  gather_launch starts bucket @bucket's all-gather from
   * this rank's @shard (its range at TachGradShard.state[@bucket]) into
   * @params (the bucket's floats), @ahead when it is a prefetch;
   * gather_wait waits for it.  reduced: has
   * the bucket's reduce-scatter of this step completed (its gradients may
   * go)?  @prefetch: shard-prefetch=next.  Failures become the backend's
   * sticky error. */
  void     (*units) (TachGradSyncHook *hook, const TachGradUnits *units);
  void     (*gather_launch) (TachGradSyncHook *hook, guint bucket, const float *shard,
                             float *params, gboolean ahead);
  void     (*gather_wait) (TachGradSyncHook *hook, guint bucket);
  gboolean (*reduced) (TachGradSyncHook *hook, guint bucket);
  gboolean prefetch;
  /* Floats the gradient buffers (and accumulation's sum) must have
   * readable past the trainable prefix: a padded reduce-scatter reads
   * them (their sum lands past the bucket, where nothing reads it). */
  size_t slack;
};

struct _TachBackend {
  const TachBackendOps *ops;
  TachDeviceInfo       *device;   /* owned */
  TachBackendCaps       caps;     /* set by the registry when it opens the backend */
  GError               *error;    /* sticky: first error, owned */
  guint                 threads;
  /* The fewest of @threads that ops ran on, and the share of the time
   * they ran on fewer than @threads (a CPU backend that gives processors
   * up to other processes; 0 and 0 where nothing is known). */
  guint                 threads_fewest;
  double                threads_fewer_share;
  TachPrecision         precision;
  /* The step offset: NULL (the default) or a device uint64 (borrowed, from
   * alloc) that the counter-taking ops (dropout_fwd/bwd, sample_tokens,
   * sample_tokens_nll) add to their @counter *when they run*, not when
   * they are queued.  A captured graph bakes in the counter of the step it
   * was captured at, c; the runner sets this field while capturing, zeroes
   * the offset and adds 1 to it as the graph's last node (counter_add), so
   * that replay k draws with counter c + k, the counter of step c + k:
   * TACH_RAND_COUNTER (stream, i) + k == TACH_RAND_COUNTER (stream, i + k)
   * for step indices below 2^48.  NULL means an offset of 0, so eager runs
   * draw exactly as before.  Host-side backends read the value with
   * tach_backend_host_counter(); device backends hand the pointer to their
   * kernels, which read the value. */
  uint64_t             *step_offset;
  /* The position offset: NULL (the default) or a device int32 (borrowed,
   * from alloc) that the position-taking ops (heads_split, heads_merge,
   * causal_softmax_fwd, attention_fwd) add to their @pos *when they run*,
   * as the counter-taking ops add step_offset.  A decode step that keeps
   * its position there, advanced outside the step, has no host value
   * that changes from token to token, so a graph captured from it replays
   * at the position the device holds (gpt's kv-cache=static).  The model
   * sets it around the ops that mean it and puts NULL back.  Host-side
   * backends read it with tach_backend_host_pos(); device backends hand
   * the pointer to their kernels. */
  const int32_t        *pos_offset;
  /* What each plan runs, "what: algorithm" strings (owned, NULL until the
   * first note): see tach_backend_note_algorithm(). */
  GPtrArray            *algorithms;
  /* Library calls made so far, for a backend that counts them
   * (counts_api_calls): the CUDA backend counts every CUDA, cuDNN and
   * cuBLAS call it checks, a kernel launch and its error check as two.
   * The runner reports the calls of each step, its own included. */
  gboolean              counts_api_calls;
  guint64               api_calls;
  /* Data parallel: this process is rank @rank of @ranks (0 of 1 alone);
   * the feeder hands it its shard of each global batch.  @grad_sync
   * (borrowed, NULL alone) averages the gradients.  Set by the runner
   * before the model is created. */
  guint                 rank;
  guint                 ranks;
  TachGradSyncHook     *grad_sync;
  /* Gradient accumulation: each update sums the gradients of @accumulate
   * micro-batches (1: none), of which the step being queued is number
   * @micro; the parameters (models/tach-params.h) keep the sum and update
   * after the last, and the feeder hands micro-batch j of step i the
   * samples that batch i of @accumulate times the size would have there.
   * @accumulate_sync says when the ranks synchronise.  Set by the runner,
   * @accumulate before the model is created, @micro before each call. */
  guint                 accumulate;
  guint                 micro;
  TachAccumulateSync    accumulate_sync;
  /* What the models' parameters hold in this process, in bytes, as
   * models/tach-params.c allocates and frees it: the parameters, their
   * gradients (accumulation's sum and a shard's gradients too), the
   * optimizer's state, and the largest their sum has been. */
  guint64               held_params, held_grads, held_state, held_peak;
};

/* Where micro-batch @micro of this rank lies in its update's global batch,
 * in batches: micro-batch j of rank r of N is the (j N + r)-th, so that k
 * micro-batches on N ranks take what one process takes at batch k N B. */
static inline guint64
tach_backend_batch_place (const TachBackend *be)
{
  return (guint64) be->micro * MAX (be->ranks, 1) + be->rank;
}

/* @pos plus the position offset, for a backend whose ops run on the host
 * (the CPU): the value of *be->pos_offset when the op runs. */
static inline int
tach_backend_host_pos (const TachBackend *be, int pos)
{
  return be->pos_offset != NULL ? pos + *be->pos_offset : pos;
}

/* @counter plus the step offset, for a backend whose ops run on the host
 * (the CPU): the value of *be->step_offset when the op runs. */
static inline guint64
tach_backend_host_counter (const TachBackend *be, guint64 counter)
{
  return be->step_offset != NULL ? counter + *be->step_offset : counter;
}

/* Records @error as the sticky error unless one is already recorded (takes ownership). */
void         tach_backend_set_error (TachBackend *be, GError *error);
void         tach_backend_fail (TachBackend *be, gint code, const char *format, ...) G_GNUC_PRINTF (3, 4);
/* The one message for a label outside [0, @classes) (TACH_ERROR_DATA), whichever backend finds it. */
void         tach_backend_fail_label (TachBackend *be, int label, int row, int classes);
gboolean     tach_backend_ok (TachBackend *be);
/* Moves the sticky error into @error; returns FALSE if there was one. */
gboolean     tach_backend_take_error (TachBackend *be, GError **error);

/* Records which algorithm the plan described by @what ("lstm T10 N1024 ...")
 * runs, replacing an earlier note for the same @what (a plan re-tuned, or
 * rebuilt per call).  Engine thread. */
void         tach_backend_note_algorithm (TachBackend *be, const char *what, const char *algorithm);
/* "lstm T10 N1024 I300 H40 x2 train": the @what of an LSTM plan's note. */
char        *tach_lstm_desc_name (const TachLstmDesc *desc);

G_END_DECLS
