/* tach-backend.h: the API models are written against: opening a backend
 * through the registry and the dispatch wrappers (tach_op and tach_*),
 * which keep the sticky-error rule and fill in the defaults of optional
 * slots.  Models are written once against these, never against a library.
 *
 * Asynchrony: only tach_backend_synchronize(), tach_backend_download(),
 * tach_event_elapsed_ms() and tach_event_synchronize() block.  Models
 * check the sticky error once per step.
 */
#pragma once

#include "tach-backend-ops.h"
#include "tach-lstm-weight-map.h"

G_BEGIN_DECLS

/* The registry (tach-backends.c): the one place that knows which backends
 * were built.  A row is one backend: the device ids it owns, what it can
 * do, how to list and open its devices. */
typedef struct {
  const char     *prefix;     /* device ids: "cpu", or "cuda" + ":N" with @ordinals */
  gboolean        ordinals;
  TachDeviceKind  kind;
  TachBackendCaps caps;
  /* Messages (translatable) when resolving fails: @none (no device of
   * this backend, with the id asked for), @absent (not that one: the id and
   * the highest ordinal), @not_built (the build left the backend out). */
  const char     *none;
  const char     *absent;
  const char     *not_built;
  /* NULL when the backend was not built.  devices() lists cheaply (no
   * benchmark, no files); open() opens device @ordinal. */
  GPtrArray     *(*devices) (void);
  TachBackend   *(*open) (guint ordinal, guint threads, TachPrecision precision, GError **error);
  gboolean       (*supports) (TachKnobId knob, int value, const char **why);
  /* Optional: a peak that costs time to measure (NULL: devices() says it). */
  double         (*measure_peak) (void);
  /* The widest head (a workload's width over its heads) its fused
   * attention takes; 0: any. */
  guint           attention_head_dim_max;
} TachBackendRow;
GPtrArray   *tach_backend_registry_devices (void);   /* TachDeviceInfo* */
/* A row from outside the build's own, for tests (the asynchronous test
 * double of tests/): a row like the others, its devices listed after the
 * built-in ones.  One at a time (NULL removes it); call from the main
 * thread before any run. */
void         tach_backend_registry_set_extra_row (const TachBackendRow *row);

/* A device resolved once, from its id: its registry row, its ordinal among
 * that row's devices, and its description.  Everything after resolution
 * (validating a configuration on it, opening its backend) takes this, not
 * the id. */
typedef struct {
  const TachBackendRow *row;
  guint                 ordinal;
  TachDeviceInfo       *info;      /* owned */
} TachDevice;
/* tach_device_resolve(), keeping the row. */
TachDevice  *tach_device_find (const char *id, GError **error);
/* The device a record names (a run read back, perhaps from another
 * machine): @info (taken) with the row its id's prefix names, or none, and
 * the kind that row's devices have (a CPU for an id no backend owns). */
TachDevice  *tach_device_for_record (TachDeviceInfo *info);
void         tach_device_free (TachDevice *device);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachDevice, tach_device_free)
TachBackendCaps tach_device_caps (const TachDevice *device);
/* Whether @device's backend can do value number @value of choice knob
 * @knob; if not, *why says so.  Knobs that are not choices: TRUE. */
gboolean     tach_device_supports_knob (const TachDevice *device, TachKnobId knob, int value,
                                        const char **why);
/* tach_device_measure_peak_flops() on @info, the description of @device
 * that its backend holds. */
double       tach_device_fill_peak_flops (const TachDevice *device, TachDeviceInfo *info);
/* Opens the backend of @device. */
TachBackend *tach_backend_open (const TachDevice *device, guint threads,
                                TachPrecision precision, GError **error);
/* Resolves @device_id, then opens its backend. */
TachBackend *tach_backend_new (const char *device_id, guint threads, TachPrecision precision,
                               GError **error);
/* Frees the sticky error and the device info, then calls ops->free, which
 * releases the backend's own resources and the struct itself.  NULL is fine. */
void         tach_backend_free (TachBackend *be);
/* tach_device_supports_knob() on the backend that owns @device_id ("auto"
 * is the device tach_device_resolve() picks), without resolving it. */
gboolean     tach_backend_supports_knob (const char *device_id, TachKnobId knob, int value,
                                         const char **why);
/* The capabilities of the backend of @device_id ("auto" is the device
 * tach_device_resolve() picks); 0 for an id no backend owns. */
TachBackendCaps tach_backend_caps_for (const char *device_id);
/* The algorithm notes so far, "what: algorithm; what: algorithm", or NULL
 * if none (tach_backend_note_algorithm()). */
char        *tach_backend_dup_algorithms (TachBackend *be);

/* For tests (a fault-injecting wrapper): a function handed every backend
 * that tach_backend_open() opens, on the thread that opens it, before
 * anything uses the backend.  It may point be->ops at a table of its own
 * that forwards to the real one; that table must outlive the backend.
 * Process-wide; NULL removes it.  Set it while no run is going. */
typedef void (*TachBackendOpenHook) (TachBackend *be, gpointer user_data);
void         tach_backend_set_open_hook (TachBackendOpenHook hook, gpointer user_data);
/* The kind of device @device_id names (a CPU for an id no backend owns). */
TachDeviceKind tach_backend_kind_for (const char *device_id);
/* "cuda" -> "cuda:0": the id of the device @device_id names, without
 * listing devices ("auto" stays "auto"), or NULL if no backend owns it. */
char        *tach_backend_canonical_id (const char *device_id);
/* The forms of device id the backends take, for messages and help:
 * "auto", then each backend's ("cpu"; "cuda", "cuda:N" where it numbers its
 * devices) in the order of their names, whether built or not. */
GStrv        tach_backend_device_ids (void);
/* The id of the host's device (the CPU row's, in every build): what a
 * record that names no device ran on. */
const char  *tach_backend_host_device_id (void);

/* Memory helpers with the sticky-error rule. */
void   *tach_backend_alloc (TachBackend *be, size_t bytes);
void    tach_backend_dealloc (TachBackend *be, void *ptr);
void    tach_backend_upload (TachBackend *be, void *dst, const void *src, size_t bytes);
void    tach_backend_download (TachBackend *be, void *dst, const void *src, size_t bytes);
void    tach_backend_synchronize (TachBackend *be);

/* More wrappers with the sticky-error rule: each does nothing (and returns
 * NULL, 0 or NaN) while an error is pending, and fills in the default of an
 * optional slot.  Freeing functions always run and accept NULL. */
void   *tach_backend_host_alloc (TachBackend *be, size_t bytes);   /* ops->host_alloc or g_try_malloc */
void    tach_backend_host_free (TachBackend *be, void *ptr);
/* From tach_backend_host_alloc() memory; falls back to a synchronous upload. */
void    tach_backend_upload_async (TachBackend *be, void *dst, const void *src, size_t bytes);
/* The overlapped upload of the slots above, with their defaults: @after
 * and @done may be NULL (no wait, nothing recorded). */
void    tach_backend_upload_overlapped (TachBackend *be, void *dst, const void *src, size_t bytes,
                                        TachEvent *after, TachEvent *done);
void    tach_backend_stream_wait (TachBackend *be, TachEvent *ev);        /* NULL @ev: no-op */
void    tach_backend_zero (TachBackend *be, void *ptr, size_t bytes);
void    tach_backend_copy (TachBackend *be, void *dst, const void *src, size_t bytes);
guint64 tach_backend_peak_memory (TachBackend *be);                 /* 0 when unknown */
/* The freeze op (tach-backend-ops.h): @ptr's bytes stay unchanged. */
void    tach_backend_freeze (TachBackend *be, const void *ptr, size_t bytes);
/* The most bytes of copies the backend derived from frozen data (packed
 * weights) held at once so far; 0 for a backend that keeps none. */
guint64 tach_backend_frozen_copies_peak (TachBackend *be);

TachEvent *tach_event_new (TachBackend *be);
void       tach_event_free (TachBackend *be, TachEvent *ev);
void       tach_event_record (TachBackend *be, TachEvent *ev);
double     tach_event_elapsed_ms (TachBackend *be, TachEvent *start, TachEvent *end);
/* Blocks until @ev has passed (NULL: returns at once). */
void       tach_event_synchronize (TachBackend *be, TachEvent *ev);

/* Whether the backend can capture graphs (the graph slots are present). */
gboolean   tach_backend_has_graphs (TachBackend *be);
/* Captures what is queued on the backend's stream until tach_graph_end():
 * nothing runs; ops that would block or allocate fail the capture.
 * tach_graph_end() returns the graph, or NULL with the sticky error set
 * (a capture that an error interrupted is ended and dropped, so the
 * stream is usable for freeing). */
void       tach_graph_begin (TachBackend *be);
TachGraph *tach_graph_end (TachBackend *be);
/* Queues one replay of @graph on the stream, like an op. */
void       tach_graph_launch (TachBackend *be, TachGraph *graph);
void       tach_graph_free (TachBackend *be, TachGraph *graph);
/* *@counter += @delta on the stream (ops->counter_add or its default). */
void       tach_backend_counter_add (TachBackend *be, uint64_t *counter, uint64_t delta);

/* The sample_tokens op, and when @loss (device float) is not NULL the
 * mean -log p of the drawn tokens written there: sample_tokens_nll, or
 * sample_tokens then softmax_ce where a backend lacks it. */
void       tach_backend_sample_tokens (TachBackend *be, const float *logits, int n, int vocab,
                                       guint64 seed, guint64 counter, int32_t *tok,
                                       int32_t *ctx, int len, float *loss);

TachLstmPlan *tach_lstm_plan_new (TachBackend *be, const TachLstmDesc *desc);
void          tach_lstm_plan_free (TachBackend *be, TachLstmPlan *plan);
size_t        tach_lstm_reserve_bytes (TachBackend *be, TachLstmPlan *plan);
TachConvPlan *tach_conv_plan_new (TachBackend *be, const TachConvDesc *desc);
void          tach_conv_plan_free (TachBackend *be, TachConvPlan *plan);

/* Dispatch: tach_op (be, gemm, ...) skips the call when an error is pending
 * and reports a missing optional slot as TACH_ERROR_UNSUPPORTED. */
#define tach_op(be, slot, ...)                                                   \
  G_STMT_START {                                                                 \
    TachBackend *tach_op_be_ = (be);                                             \
    if (tach_op_be_->error == NULL) {                                            \
      if (tach_op_be_->ops->slot == NULL)                                        \
        tach_backend_fail (tach_op_be_, TACH_ERROR_UNSUPPORTED,                  \
                           "%s does not implement %s", tach_op_be_->device->id,  \
                           #slot);                                               \
      else                                                                       \
        tach_op_be_->ops->slot (tach_op_be_, __VA_ARGS__);                       \
    }                                                                            \
  } G_STMT_END

G_END_DECLS
