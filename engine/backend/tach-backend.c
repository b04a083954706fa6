/* tach-backend.c: the sticky-error helpers and the dispatch wrappers with
 * their defaults for optional slots.  It knows no backend: the registry
 * (tach-backends.c) opens them.
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include <inttypes.h>
#include <glib/gi18n-lib.h>

#include "tach-backend.h"
#include "tach-error-private.h"

/* ------------------------------------------------------------ backends */

void
tach_backend_free (TachBackend *be)
{
  if (be == NULL)
    return;
  g_clear_error (&be->error);
  g_clear_pointer (&be->device, tach_device_info_free);
  g_clear_pointer (&be->algorithms, g_ptr_array_unref);
  be->ops->free (be);
}

void
tach_backend_note_algorithm (TachBackend *be, const char *what, const char *algorithm)
{
  g_autofree char *prefix = g_strconcat (what, ": ", NULL);
  char *note = g_strconcat (prefix, algorithm, NULL);

  if (be->algorithms == NULL)
    be->algorithms = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < be->algorithms->len; i++)
    if (g_str_has_prefix (g_ptr_array_index (be->algorithms, i), prefix))
      {
        g_free (g_ptr_array_index (be->algorithms, i));
        g_ptr_array_index (be->algorithms, i) = note;
        return;
      }
  g_ptr_array_add (be->algorithms, note);
}

char *
tach_lstm_desc_name (const TachLstmDesc *d)
{
  return g_strdup_printf ("lstm T%d N%d I%d H%d x%d%s", d->T, d->N, d->I, d->H, d->dirs,
                          d->training ? " train" : "");
}

char *
tach_backend_dup_algorithms (TachBackend *be)
{
  GString *out;

  if (be->algorithms == NULL || be->algorithms->len == 0)
    return NULL;
  out = g_string_new (NULL);
  for (guint i = 0; i < be->algorithms->len; i++)
    g_string_append_printf (out, "%s%s", i > 0 ? "; " : "",
                            (const char *) g_ptr_array_index (be->algorithms, i));
  return g_string_free (out, FALSE);
}

/* -------------------------------------------------------- sticky errors */

void
tach_backend_set_error (TachBackend *be, GError *error)
{
  if (error == NULL)
    return;
  if (be->error != NULL)
    {
      g_error_free (error);
      return;
    }
  be->error = error;
}

void
tach_backend_fail (TachBackend *be, gint code, const char *format, ...)
{
  va_list args;
  GError *error;

  /* Only the first error counts: later ones are usually its consequences. */
  if (be->error != NULL)
    return;
  va_start (args, format);
  error = g_error_new_valist (TACH_ERROR, code, format, args);
  va_end (args);
  be->error = error;
}

void
tach_backend_fail_label (TachBackend *be, int label, int row, int classes)
{
  tach_backend_fail (be, TACH_ERROR_DATA,
                     _("a label is out of range; check the data file's labels: "
                       "label %d of row %d is not in [0, %d)"),
                     label, row, classes);
}

gboolean
tach_backend_ok (TachBackend *be)
{
  return be->error == NULL;
}

gboolean
tach_backend_take_error (TachBackend *be, GError **error)
{
  if (be->error == NULL)
    return TRUE;
  g_propagate_error (error, g_steal_pointer (&be->error));
  return FALSE;
}

/* -------------------------------------------------------------- memory */

/* An allocation that failed for want of memory (the backend's message or
 * ours says "lower --batch or --samples"): the batch is the knob. */
static void
hint_out_of_memory (TachBackend *be)
{
  if (g_error_matches (be->error, TACH_ERROR, TACH_ERROR_OUT_OF_MEMORY))
    tach_error_add_hint (&be->error, TACH_KNOB_BATCH, NULL, TACH_KNOB_BATCH, NULL, NULL);
}

void *
tach_backend_alloc (TachBackend *be, size_t bytes)
{
  void *ptr;

  if (be->error != NULL)
    return NULL;
  ptr = be->ops->alloc (be, bytes);
  if (ptr == NULL && be->error == NULL)
    tach_backend_fail (be, TACH_ERROR_OUT_OF_MEMORY,
                       W_("out of memory on %s: could not allocate %zu"
                         " bytes; lower {batch} or {samples}"),
                       be->device->id, (gsize) bytes);
  if (ptr == NULL)
    hint_out_of_memory (be);
  return ptr;
}

void
tach_backend_dealloc (TachBackend *be, void *ptr)
{
  /* Freeing runs even with an error pending, so that error paths release. */
  if (ptr != NULL)
    be->ops->dealloc (be, ptr);
}

void
tach_backend_upload (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  if (be->error == NULL && bytes > 0)
    be->ops->upload (be, dst, src, bytes);
}

void
tach_backend_download (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  if (be->error == NULL && bytes > 0)
    be->ops->download (be, dst, src, bytes);
}

void
tach_backend_synchronize (TachBackend *be)
{
  if (be->error == NULL)
    be->ops->synchronize (be);
}

void *
tach_backend_host_alloc (TachBackend *be, size_t bytes)
{
  void *ptr;

  if (be->error != NULL)
    return NULL;
  ptr = be->ops->host_alloc != NULL ? be->ops->host_alloc (be, bytes) : g_try_malloc (bytes);
  if (ptr == NULL && be->error == NULL)
    tach_backend_fail (be, TACH_ERROR_OUT_OF_MEMORY,
                       W_("out of host memory: could not allocate %zu"
                         " bytes; lower {batch} or {samples}"),
                       (gsize) bytes);
  if (ptr == NULL)
    hint_out_of_memory (be);
  return ptr;
}

void
tach_backend_host_free (TachBackend *be, void *ptr)
{
  if (ptr == NULL)
    return;
  if (be->ops->host_free != NULL)
    be->ops->host_free (be, ptr);
  else
    g_free (ptr);
}

void
tach_backend_upload_async (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  if (be->error != NULL || bytes == 0)
    return;
  if (be->ops->upload_async != NULL)
    be->ops->upload_async (be, dst, src, bytes);
  else
    be->ops->upload (be, dst, src, bytes);
}

void
tach_backend_upload_overlapped (TachBackend *be, void *dst, const void *src, size_t bytes,
                                TachEvent *after, TachEvent *done)
{
  if (be->error != NULL)
    return;
  if (be->ops->upload_overlapped != NULL)
    {
      be->ops->upload_overlapped (be, dst, src, bytes, after, done);
      return;
    }
  /* In order on the host: once @after has passed, a synchronous upload is
   * finished when @done is recorded. */
  tach_event_synchronize (be, after);
  tach_backend_upload (be, dst, src, bytes);
  tach_event_record (be, done);
}

void
tach_backend_stream_wait (TachBackend *be, TachEvent *ev)
{
  if (be->error == NULL && ev != NULL && be->ops->stream_wait != NULL)
    be->ops->stream_wait (be, ev);
}

void
tach_backend_zero (TachBackend *be, void *ptr, size_t bytes)
{
  if (be->error == NULL && bytes > 0)
    be->ops->zero (be, ptr, bytes);
}

void
tach_backend_copy (TachBackend *be, void *dst, const void *src, size_t bytes)
{
  if (be->error == NULL && bytes > 0)
    be->ops->copy (be, dst, src, bytes);
}

void
tach_backend_freeze (TachBackend *be, const void *ptr, size_t bytes)
{
  if (be->error == NULL && bytes > 0 && be->ops->freeze != NULL)
    be->ops->freeze (be, ptr, bytes);
}

guint64
tach_backend_frozen_copies_peak (TachBackend *be)
{
  return be->ops->frozen_copies_peak != NULL ? be->ops->frozen_copies_peak (be) : 0;
}

guint64
tach_backend_peak_memory (TachBackend *be)
{
  return be->ops->peak_memory != NULL ? be->ops->peak_memory (be) : 0;
}

/* -------------------------------------------------------------- events */

TachEvent *
tach_event_new (TachBackend *be)
{
  TachEvent *ev;

  if (be->error != NULL)
    return NULL;
  ev = be->ops->event_new (be);
  if (ev == NULL && be->error == NULL)
    tach_backend_fail (be, TACH_ERROR_LIBRARY, _("%s could not create a timing event"),
                       be->device->id);
  return ev;
}

void
tach_event_free (TachBackend *be, TachEvent *ev)
{
  if (ev != NULL)
    be->ops->event_free (be, ev);
}

void
tach_event_record (TachBackend *be, TachEvent *ev)
{
  if (be->error == NULL && ev != NULL)
    be->ops->event_record (be, ev);
}

double
tach_event_elapsed_ms (TachBackend *be, TachEvent *start, TachEvent *end)
{
  if (be->error != NULL || start == NULL || end == NULL)
    return NAN;
  return be->ops->event_elapsed_ms (be, start, end);
}

void
tach_event_synchronize (TachBackend *be, TachEvent *ev)
{
  if (be->error != NULL || ev == NULL)
    return;
  if (be->ops->event_synchronize != NULL)
    be->ops->event_synchronize (be, ev);
  else
    (void) be->ops->event_elapsed_ms (be, ev, ev);
}

/* ------------------------------------------------------------ sampling */

void
tach_backend_sample_tokens (TachBackend *be, const float *logits, int n, int vocab,
                            guint64 seed, guint64 counter, int32_t *tok, int32_t *ctx, int len,
                            float *loss)
{
  if (loss != NULL && be->ops->sample_tokens_nll != NULL)
    {
      tach_op (be, sample_tokens_nll, logits, n, vocab, seed, counter, tok, ctx, len, loss);
      return;
    }
  tach_op (be, sample_tokens, logits, n, vocab, seed, counter, tok, ctx, len);
  if (loss != NULL)
    tach_op (be, softmax_ce, logits, tok, n, vocab, loss, NULL);
}

/* -------------------------------------------------------------- graphs */

gboolean
tach_backend_has_graphs (TachBackend *be)
{
  return be->ops->graph_begin != NULL && be->ops->graph_end != NULL
         && be->ops->graph_launch != NULL && be->ops->graph_free != NULL;
}

static gboolean
check_graphs (TachBackend *be)
{
  if (be->error != NULL)
    return FALSE;
  if (!tach_backend_has_graphs (be))
    {
      tach_backend_fail (be, TACH_ERROR_UNSUPPORTED,
                         W_("{launch=graph} is not supported on %s: use {launch=eager}"),
                         be->device->id);
      tach_error_add_hint (&be->error, TACH_KNOB_LAUNCH, "graph", TACH_KNOB_LAUNCH, "eager", NULL);
      return FALSE;
    }
  return TRUE;
}

void
tach_graph_begin (TachBackend *be)
{
  if (check_graphs (be))
    be->ops->graph_begin (be);
}

TachGraph *
tach_graph_end (TachBackend *be)
{
  TachGraph *graph;

  /* With an error pending the capture is unusable, but the stream may
   * still be capturing: end it (the first error stays the one reported)
   * and drop what it made, so that freeing and the next run work. */
  if (be->error != NULL && tach_backend_has_graphs (be))
    {
      tach_graph_free (be, be->ops->graph_end (be));
      return NULL;
    }
  if (!check_graphs (be))
    return NULL;
  graph = be->ops->graph_end (be);
  if (graph == NULL && be->error == NULL)
    tach_backend_fail (be, TACH_ERROR_LIBRARY, _("%s could not capture the step as a graph"),
                       be->device->id);
  return graph;
}

void
tach_graph_launch (TachBackend *be, TachGraph *graph)
{
  if (graph != NULL && check_graphs (be))
    be->ops->graph_launch (be, graph);
}

void
tach_graph_free (TachBackend *be, TachGraph *graph)
{
  if (graph != NULL && be->ops->graph_free != NULL)
    be->ops->graph_free (be, graph);
}

void
tach_backend_counter_add (TachBackend *be, uint64_t *counter, uint64_t delta)
{
  uint64_t value = 0;

  if (be->error != NULL)
    return;
  if (be->ops->counter_add != NULL)
    {
      be->ops->counter_add (be, counter, delta);
      return;
    }
  /* Ops that finish before they return: the counter can be read, added to
   * and written back right here, in order with everything else. */
  tach_backend_download (be, &value, counter, sizeof value);
  value += delta;
  tach_backend_upload (be, counter, &value, sizeof value);
}

/* --------------------------------------------------------------- plans */

TachLstmPlan *
tach_lstm_plan_new (TachBackend *be, const TachLstmDesc *desc)
{
  TachLstmPlan *plan;

  if (be->error != NULL)
    return NULL;
  if (be->ops->lstm_plan_new == NULL)
    {
      tach_backend_fail (be, TACH_ERROR_UNSUPPORTED,
                         W_("{rnn=fused} is not supported on %s: use {rnn=unrolled}"),
                         be->device->id);
      tach_error_add_hint (&be->error, TACH_KNOB_RNN, "fused", TACH_KNOB_RNN, "unrolled", NULL);
      return NULL;
    }
  plan = be->ops->lstm_plan_new (be, desc);
  if (plan == NULL && be->error == NULL)
    tach_backend_fail (be, TACH_ERROR_LIBRARY,
                       _("%s could not plan an LSTM of T=%d N=%d I=%d H=%d"),
                       be->device->id, desc->T, desc->N, desc->I, desc->H);
  return plan;
}

void
tach_lstm_plan_free (TachBackend *be, TachLstmPlan *plan)
{
  if (plan != NULL && be->ops->lstm_plan_free != NULL)
    be->ops->lstm_plan_free (be, plan);
}

size_t
tach_lstm_reserve_bytes (TachBackend *be, TachLstmPlan *plan)
{
  if (be->error != NULL || plan == NULL || be->ops->lstm_reserve_bytes == NULL)
    return 0;
  return be->ops->lstm_reserve_bytes (be, plan);
}

TachConvPlan *
tach_conv_plan_new (TachBackend *be, const TachConvDesc *desc)
{
  TachConvPlan *plan;

  if (be->error != NULL)
    return NULL;
  if (be->ops->conv_plan_new == NULL)
    {
      tach_backend_fail (be, TACH_ERROR_UNSUPPORTED,
                         W_("%s has no convolution: use another {device}"), be->device->id);
      tach_error_add_hint (&be->error, TACH_KNOB_DEVICE, be->device->id, TACH_KNOB_DEVICE, NULL,
                           NULL);
      return NULL;
    }
  plan = be->ops->conv_plan_new (be, desc);
  if (plan == NULL && be->error == NULL)
    tach_backend_fail (be, TACH_ERROR_LIBRARY,
                       _("%s could not plan a convolution of %dx%dx%dx%d with %d %dx%d filters"),
                       be->device->id, desc->N, desc->C, desc->H, desc->W,
                       desc->K, desc->R, desc->S);
  return plan;
}

void
tach_conv_plan_free (TachBackend *be, TachConvPlan *plan)
{
  if (plan != NULL && be->ops->conv_plan_free != NULL)
    be->ops->conv_plan_free (be, plan);
}

/* Every backend lists its devices in this struct (tach-engine.h); the
 * registry (devices/) hands them on. */
void
tach_device_info_free (TachDeviceInfo *info)
{
  if (info == NULL)
    return;
  g_free (info->id);
  g_free (info->name);
  g_free (info->versions);
  g_free (info);
}
