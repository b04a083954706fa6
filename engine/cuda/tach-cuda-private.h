/* tach-cuda-private.h: what the CUDA backend's sources share.
 *
 * Only engine/cuda/ includes this header (and so the CUDA, cuDNN and cuBLAS
 * headers).  Threads: everything here runs on the thread that uses the
 * backend (the engine thread), as tach-backend.h says.
 */
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "tach-backend.h"
#include "tach-cuda.h"
#include "tach-cuda-kernels.h"

G_BEGIN_DECLS

/* Uploads from pageable host memory in flight (tach-cuda-host.c). */
#define TACH_CUDA_STAGE_SLOTS 16

typedef struct {
  void        *ptr;    /* owned, pinned */
  size_t       size;
  cudaEvent_t  done;   /* owned: the copy out of ptr has run */
} TachCudaStage;

typedef struct {
  TachBackend     base;          /* first, so that a TachBackend* is a TachCudaBackend* */
  int             ordinal;
  cudaStream_t    stream;        /* owned: every op is queued here */
  cudaStream_t    copy_stream;   /* owned: overlapped uploads (feed=prefetch) */
  cublasHandle_t  cublas;        /* owned, bound to stream */
  cudnnHandle_t   cudnn;         /* owned, bound to stream */
  void           *cublas_workspace; /* owned: preallocated so that graph capture never allocates */
  GHashTable     *sizes;         /* device pointer -> size, for the live/peak count */
  guint64         live_bytes;
  guint64         peak_bytes;
  gboolean        capturing;     /* between graph_begin and graph_end */
  cudnnMathType_t cudnn_math;    /* pinned per precision */
  cublasComputeType_t cublas_compute;
  TachCudaStage   stage[TACH_CUDA_STAGE_SLOTS];
  guint           stage_next;
  volatile int32_t *fault;       /* owned, mapped pinned: row + 1, label, classes of a bad label */
  int32_t        *fault_dev;     /* the same memory, as kernels see it */
  void           *rows_scratch;  /* internal, zeroed at init: softmax_ce's and the sampler's
                                  * block sums (TACH_CUDA_ROWS_SCRATCH_BYTES) */
  guint           plain;         /* TachCudaLean bits turned off by TACH_CUDA_PLAIN */
  float          *att_scratch;   /* internal: attention_bwd's rows' D, grown as needed */
  size_t          att_scratch_floats;
  /* Data parallel (tach-cuda-nccl.c): the stream of the collectives that
   * overlap compute, and the communicator (an ncclComm_t), both NULL
   * until coll_join. */
  cudaStream_t    side_stream;
  void           *comm;
} TachCudaBackend;

#define TACH_CUDA(be) ((TachCudaBackend *) (be))

/* cuBLAS, opened on first use (tach-cuda-cublas.c says why): the entries
 * the backend calls, typed from cublas_v2.h's own declarations. */
typedef struct {
  __typeof__ (cublasCreate_v2)       *create;
  __typeof__ (cublasDestroy_v2)      *destroy;
  __typeof__ (cublasSetStream_v2)    *set_stream;
  __typeof__ (cublasSetWorkspace_v2) *set_workspace;
  __typeof__ (cublasSetMathMode)     *set_math_mode;
  __typeof__ (cublasGemmEx)          *gemm_ex;
  __typeof__ (cublasGemmStridedBatchedEx) *gemm_strided_batched_ex;
  __typeof__ (cublasGetProperty)     *get_property;
  __typeof__ (cublasGetStatusName)   *get_status_name;
  __typeof__ (cublasGetStatusString) *get_status_string;
} TachCublas;

extern TachCublas tach_cublas;

#define TACH_CUBLAS_SONAME "libcublas.so." G_STRINGIFY (CUBLAS_VER_MAJOR)

/* Opens cuBLAS and fills tach_cublas, once; later calls say the same.
 * FALSE with TACH_ERROR_LIBRARY (the soname and the loader's reason) when
 * it is not there.  Any thread. */
gboolean tach_cublas_load (GError **error);
/* A library's entry, by name, and where its pointer goes in a table. */
typedef struct {
  gsize       offset;
  const char *name;
} TachCudaSymbol;
/* Opens @soname (dlopen: by the loader's search, LD_LIBRARY_PATH and the
 * cache, then from the toolkit this build was linked against) and fills
 * @table (@size bytes) with @symbols, once (@once
 * and @failure: the caller's statics); NULL once loaded, else why not
 * (the loader's reasons, or the first symbol missing), for every call. */
const char *tach_cuda_load_once (gsize *once, char **failure, const char *soname,
                                 const TachCudaSymbol *symbols, guint n_symbols, void *table,
                                 gsize size);

/* The lean paths of the GPU step, each of which can be turned off with
 * TACH_CUDA_PLAIN=name[,name...] (or "all") so that one GPU run measures
 * before and after side by side; the plain path computes the same numbers. */
typedef enum {
  TACH_CUDA_LEAN_WSPACE  = 1 << 0,  /* "wspace": LSTM weights kept in cuDNN's weight space */
  TACH_CUDA_LEAN_SAMPLER = 1 << 1,  /* "sampler": one warp-parallel sample + NLL kernel */
  TACH_CUDA_LEAN_CONV    = 1 << 2,  /* "conv": fused convolution epilogues */
  TACH_CUDA_LEAN_CONV_FUSE = 1 << 3, /* "conv-fuse": of those, cuDNN's fused conv + bias + ReLU
                                      * (off: cuDNN's conv, the bias and ReLU in the pool pass) */
  TACH_CUDA_LEAN_PERSIST = 1 << 4,  /* "persist": cuDNN's persistent small-hidden LSTM algorithm
                                      * (off: the standard one, whose sums may round in
                                      * another order); not part of "all", which is the
                                      * step before the lean paths, and had it */
  TACH_CUDA_LEAN_WGRAD   = 1 << 5,  /* "wgrad": fp32 convolutions' weight gradient as im2col
                                      * + one cuBLAS GEMM (off: cuDNN's backward filter) */
} TachCudaLean;

/* Parses a TACH_CUDA_PLAIN value (NULL or "" = nothing turned off) into
 * TachCudaLean bits; FALSE + TACH_ERROR_INVALID_CONFIG naming the bad name. */
gboolean tach_cuda_parse_plain (const char *spec, guint *plain, GError **error);
/* Whether the lean path @lean is on for this backend. */
#define TACH_CUDA_LEAN_ON(be, lean) ((TACH_CUDA (be)->plain & (lean)) == 0)

/* Records a failed library status in the backend's sticky error: the status
 * name, the call as written and the place.  Returns FALSE on failure so the
 * macros below can bail out. */
gboolean tach_cuda_check (TachBackend *be, cudaError_t status, const char *call,
                          const char *file, int line);
gboolean tach_cudnn_check (TachBackend *be, cudnnStatus_t status, const char *call,
                           const char *file, int line);
/* Whether a cuDNN status says that an algorithm cannot do this shape, data
 * type or layout (so that another algorithm may), rather than that cuDNN
 * cannot run at all (driver, runtime or sub-library missing) or that the
 * call itself is wrong: only refusals may be fallen back from. */
gboolean tach_cudnn_status_is_refusal (cudnnStatus_t status);
gboolean tach_cublas_check (TachBackend *be, cublasStatus_t status, const char *call,
                            const char *file, int line);

/* Each TRY evaluates @call once; on failure it records the error and runs
 * @on_error (e.g. "return", "goto out", "return NULL"). */
#define TACH_CUDA_TRY(be, call, on_error) \
  G_STMT_START { \
    if (!tach_cuda_check ((be), (call), #call, __FILE__, __LINE__)) { on_error; } \
  } G_STMT_END
#define TACH_CUDNN_TRY(be, call, on_error) \
  G_STMT_START { \
    if (!tach_cudnn_check ((be), (call), #call, __FILE__, __LINE__)) { on_error; } \
  } G_STMT_END
#define TACH_CUBLAS_TRY(be, call, on_error) \
  G_STMT_START { \
    if (!tach_cublas_check ((be), (call), #call, __FILE__, __LINE__)) { on_error; } \
  } G_STMT_END
/* A TRY around one of tach-cuda-kernels.h's launchers: the launch counts
 * as one API call, the cudaGetLastError() it returns (counted by the TRY)
 * as another. */
#define TACH_CUDA_LAUNCH(be, call, on_error) \
  G_STMT_START { (be)->api_calls++; TACH_CUDA_TRY (be, call, on_error); } G_STMT_END

/* Device memory for the backend's own buffers (plans, workspaces), counted
 * in the peak like model tensors.  NULL + sticky error on failure. */
void   *tach_cuda_alloc_internal (TachBackend *be, size_t bytes);
void    tach_cuda_free_internal (TachBackend *be, void *ptr);
/* Fails with a clear message when called while a graph is being captured:
 * for calls that would block or allocate and so break the capture. */
gboolean tach_cuda_not_capturing (TachBackend *be, const char *what);

/* tach-cuda-nccl.c: fills the collective slots of @ops (a build with NCCL's
 * header; NCCL itself is opened on the first coll_join), and ends the
 * communicator and the side stream of a backend being freed. */
void          tach_cuda_nccl_fill_ops (TachBackendOps *ops);
void          tach_cuda_nccl_clear (TachBackend *be);

/* tach-cuda-host.c (see there) */
void         *tach_cuda_pinned_alloc (TachBackend *be, size_t bytes);  /* NULL + out-of-memory error */
gboolean      tach_cuda_host_init (TachBackend *be);
void          tach_cuda_host_clear (TachBackend *be);
/* Copies @src (pageable) to @dst in stream order and returns once @src may be reused. */
void          tach_cuda_upload_staged (TachBackend *be, void *dst, const void *src, size_t bytes);
/* After a wait on the device: FALSE + TACH_ERROR_DATA when a kernel found bad input. */
gboolean      tach_cuda_check_faults (TachBackend *be);

/* tach-cuda-rnn.c */
TachLstmPlan *tach_cuda_lstm_plan_new (TachBackend *be, const TachLstmDesc *desc);
void          tach_cuda_lstm_plan_free (TachBackend *be, TachLstmPlan *plan);
size_t        tach_cuda_lstm_reserve_bytes (TachBackend *be, TachLstmPlan *plan);

/* tach-cuda-rnn-weight-map.c */
/* cudaMalloc's alignment, which every weight space in cuDNN's
 * documentation and samples has: cuDNN's offsets are relative to the
 * base, and its kernels may load the matrices in wide vectors. */
#define TACH_CUDA_WSPACE_ALIGN 256
/* The ops' lstm_weight_map: the standard algorithm's weight space for @desc
 * (TACH_CUDA_PLAIN=wspace: the canonical layout). */
gboolean      tach_cuda_lstm_weight_map (TachBackend *be, const TachLstmDesc *desc,
                                         TachLstmWeightMap *layout);
/* Sets @rnn up for @d (see the file's comment). */
cudnnStatus_t tach_cuda_rnn_set (cudnnRNNDescriptor_t rnn, cudnnDropoutDescriptor_t dropout,
                                 const TachLstmDesc *d, cudnnRNNAlgo_t algo, cudnnMathType_t math);
/* Records the standard algorithm's refusal @status of @call as the sticky
 * error, saying so when FMA-only fp32 math is why. */
void          tach_cuda_rnn_fail_standard (TachBackend *be, cudnnStatus_t status, const char *call);
/* Reads where cuDNN keeps each gate's matrices and input bias in the
 * weight space @space (@bytes, device memory, neither read nor written)
 * of @rnn; @mdesc and @bdesc are scratch.  FALSE + sticky error when they
 * are not dense [H, cols] matrices and H biases. */
gboolean      tach_cuda_rnn_query_layout (TachBackend *be, cudnnRNNDescriptor_t rnn,
                                          const TachLstmDesc *d, const void *space, size_t bytes,
                                          cudnnTensorDescriptor_t mdesc,
                                          cudnnTensorDescriptor_t bdesc, TachLstmWeightMap *layout);
void          tach_cuda_lstm_fwd (TachBackend *be, TachLstmPlan *plan, const float *x,
                                  const float *w, float *y, void *reserve);
void          tach_cuda_lstm_bwd (TachBackend *be, TachLstmPlan *plan, const float *x,
                                  const float *w, const float *y, const float *dy, void *reserve,
                                  float *dx, float *dw);
/* The cuDNN RNN algorithm a plan uses, for tests and logs. */
const char   *tach_cuda_lstm_plan_algo (TachLstmPlan *plan);

/* tach-cuda-conv.c */
/* How a plan runs the convolution block (see tach-cuda-conv.c). */
typedef enum {
  TACH_CUDA_CONV_BARE,   /* no block: conv_fwd/bwd only */
  TACH_CUDA_CONV_PLAIN,  /* TACH_CUDA_PLAIN=conv: conv + bias, ReLU, pool as separate passes */
  TACH_CUDA_CONV_FUSED,  /* cuDNN's conv + bias + ReLU, then the pool kernel */
  TACH_CUDA_CONV_SPLIT,  /* cuDNN's conv, then bias + ReLU + pool in one kernel */
} TachCudaConvPath;

#define TACH_CUDA_CONV_FUSED_CANDIDATES 2

typedef struct {
  TachCudaConvPath           path;
  /* FUSED: the forward algorithms (and math types) to try in order, the
   * one in use at fused_at; a refusal of the last one makes the route SPLIT. */
  cudnnConvolutionFwdAlgo_t  algo[TACH_CUDA_CONV_FUSED_CANDIDATES];
  cudnnMathType_t            math[TACH_CUDA_CONV_FUSED_CANDIDATES];
  int                        n_fused, fused_at;
} TachCudaConvRoute;

/* The route of a plan: BARE without @block, PLAIN unless @lean, SPLIT
 * unless @fuse, else FUSED with the plan's forward algorithm first and
 * IMPLICIT_PRECOMP_GEMM (where cuDNN offered it acceptably, @precomp_ok)
 * second. */
void          tach_cuda_conv_route_init (TachCudaConvRoute *route, gboolean block, gboolean lean,
                                         gboolean fuse,
                                         cudnnConvolutionFwdAlgo_t fwd_algo,
                                         cudnnMathType_t fwd_math, gboolean precomp_ok,
                                         cudnnMathType_t precomp_math);
/* After cuDNN refused the fused call with the current candidate. */
void          tach_cuda_conv_route_refused (TachCudaConvRoute *route);
TachConvPlan *tach_cuda_conv_plan_new (TachBackend *be, const TachConvDesc *desc);
void          tach_cuda_conv_plan_free (TachBackend *be, TachConvPlan *plan);
void          tach_cuda_conv_fwd (TachBackend *be, TachConvPlan *plan, const float *x,
                                  const float *w, const float *b, float *y);
void          tach_cuda_conv_bwd (TachBackend *be, TachConvPlan *plan, const float *x,
                                  const float *w, const float *dy, float *dx, float *dw, float *db);
void          tach_cuda_conv_block_fwd (TachBackend *be, TachConvPlan *plan, const float *x,
                                        const float *w, const float *b, float *act, int32_t *idx,
                                        float *y);
void          tach_cuda_conv_block_bwd (TachBackend *be, TachConvPlan *plan, const float *x,
                                        const float *w, const float *act, const int32_t *idx,
                                        const float *dy, float *dact, float *dx, float *dw,
                                        float *db);

/* tach-cuda-ops.c: the ops built on Tach's kernels, filled into @ops. */
void          tach_cuda_ops_fill_kernels (TachBackendOps *ops);

G_END_DECLS
