/* tach-run-query.c: a run as any thread holds it: its id, its references,
 * and what any thread may ask of it: its samples, state, error, settings
 * and summary, each read under the run's lock (or atomically).  Runs are
 * made by tach-run.c (live, with the engine thread that writes them) and
 * tach-results.c (read back); both, and the hand-off of tach-run-pending.c,
 * hold them through these references. */
#include <math.h>
#include "tach-model.h"
#include "tach-run-private.h"

static gint next_run_id = 0;

guint
tach_run_next_id (void)
{
  return (guint) g_atomic_int_add (&next_run_id, 1) + 1;
}

TachRun *
tach_run_ref (TachRun *run)
{
  g_return_val_if_fail (run != NULL, NULL);
  g_atomic_int_inc (&run->ref_count);
  return run;
}

void
tach_run_unref (TachRun *run)
{
  if (run == NULL || !g_atomic_int_dec_and_test (&run->ref_count))
    return;
  /* The last reference can be the engine thread's own, as it ends: detach
   * rather than join it. */
  if (run->thread != NULL)
    g_thread_unref (run->thread);
  tach_config_clear (&run->config);
  tach_device_free (run->device);
  tach_sample_store_free (run->samples);
  g_clear_error (&run->error);
  g_free (run->text);
  g_free (run->algorithms);
  g_clear_pointer (&run->record, tach_run_record_free);
  g_clear_pointer (&run->rank_samples, g_ptr_array_unref);
  g_clear_pointer (&run->rank_flights, g_ptr_array_unref);
  g_free (run->varied);
  g_free (run->label);
  g_free (run->data_kind);
  g_free (run->data_path);
  if (run->context != NULL)
    g_main_context_unref (run->context);
  g_mutex_clear (&run->lock);
  g_cond_clear (&run->cond);
  g_free (run);
}

guint
tach_run_drain_samples (TachRun *run, GArray *out)
{
  guint n;

  /* At most TACH_RUN_DRAIN_MAX at a time: a run that syncs only at its end
   * publishes every step at once, and a copy of them all would be the
   * memory the compact store saves. */
  g_mutex_lock (&run->lock);
  n = tach_sample_store_copy (run->samples, run->drained, TACH_RUN_DRAIN_MAX, out);
  run->drained += n;
  g_mutex_unlock (&run->lock);
  return n;
}

GArray *
tach_run_dup_samples (TachRun *run)
{
  GArray *copy;

  g_mutex_lock (&run->lock);
  copy = g_array_sized_new (FALSE, FALSE, sizeof (TachSample),
                            tach_sample_store_get_length (run->samples));
  tach_sample_store_copy (run->samples, 0, G_MAXUINT, copy);
  g_mutex_unlock (&run->lock);
  return copy;
}

guint
tach_run_get_n_samples (TachRun *run)
{
  guint n;

  g_mutex_lock (&run->lock);
  n = tach_sample_store_get_length (run->samples);
  g_mutex_unlock (&run->lock);
  return n;
}

guint
tach_run_copy_samples (TachRun *run, guint from, guint n, GArray *out)
{
  guint copied;

  g_mutex_lock (&run->lock);
  copied = tach_sample_store_copy (run->samples, from, n, out);
  g_mutex_unlock (&run->lock);
  return copied;
}

TachRunState
tach_run_get_state (TachRun *run)
{
  TachRunState state;

  g_mutex_lock (&run->lock);
  state = run->state;
  g_mutex_unlock (&run->lock);
  return state;
}

const GError *
tach_run_get_error (TachRun *run)
{
  const GError *error;

  g_mutex_lock (&run->lock);
  error = run->error;
  g_mutex_unlock (&run->lock);
  return error;
}

const TachConfig *
tach_run_get_config (TachRun *run)
{
  return &run->config;
}

const TachDeviceInfo *
tach_run_get_device (TachRun *run)
{
  return run->device->info;
}

guint
tach_run_get_id (TachRun *run)
{
  return run->id;
}

gint64
tach_run_get_start_time (TachRun *run)
{
  gint64 t;

  g_mutex_lock (&run->lock);
  t = run->start_time;
  g_mutex_unlock (&run->lock);
  return t;
}

const char *
tach_run_get_data_kind (TachRun *run)
{
  return run->data_kind;
}

const char *
tach_run_get_data_path (TachRun *run)
{
  return run->data_path;
}

TachEvaluation
tach_run_get_evaluation (TachRun *run, guint64 *done, guint64 *total)
{
  TachEvaluation evaluation;

  g_mutex_lock (&run->lock);
  evaluation = run->evaluation;
  if (done != NULL)
    *done = run->eval_done;
  if (total != NULL)
    *total = run->eval_total;
  g_mutex_unlock (&run->lock);
  return evaluation;
}

void
tach_run_get_summary (TachRun *run, TachSummary *summary)
{
  /* A loaded run shows the figures it was saved with. */
  if (run->record != NULL)
    {
      *summary = run->record->summary;
      return;
    }
  g_mutex_lock (&run->lock);
  tach_summary_compute_store (run->samples, run->items_per_step, run->flops_per_step,
                              run->device->info->peak_flops, summary);
  summary->peak_memory_bytes = run->peak_memory;
  tach_summary_add_requests (run->samples, run->request_steps, run->items_per_step, summary);
  summary->param_bytes = run->memory_parts[0];
  summary->optimizer_bytes = run->memory_parts[1];
  summary->activation_bytes = run->memory_parts[2];
  summary->kv_cache_bytes = run->memory_parts[3];
  summary->packed_weight_bytes = run->memory_parts[4];
  summary->held_param_bytes = run->held[0];
  summary->held_grad_bytes = run->held[1];
  summary->held_state_bytes = run->held[2];
  summary->held_peak_bytes = run->held[3];
  summary->test_accuracy = run->test_accuracy;
  tach_run_summarise_ranks (run, summary);
  /* The evaluation counts in the wall time: the command took it too. */
  summary->eval_s = run->eval_s;
  if (!isnan (run->eval_s))
    summary->wall_s += run->eval_s;
  summary->machine_busy = run->machine_busy;
  summary->threads_asked = run->threads_asked;
  summary->threads_fewest = run->threads_fewest;
  summary->threads_fewer_share = run->threads_fewer_share;
  summary->weak_scaling = run->weak_scaling.value;
  summary->weak_scaling_lo = run->weak_scaling.lo;
  summary->weak_scaling_hi = run->weak_scaling.hi;
  summary->strong_scaling = run->strong_scaling.value;
  summary->strong_scaling_lo = run->strong_scaling.lo;
  summary->strong_scaling_hi = run->strong_scaling.hi;
  g_mutex_unlock (&run->lock);
  {
    const TachModelClass *klass = tach_model_class_for (run->config.workload);

    if (run->config.task == TACH_TASK_GENERATE || (klass != NULL && klass->trains_on_tokens))
      summary->items_unit = "tokens/s";
  }
}

/* A copy of one of the run's strings, read under its lock. */
static char *
dup_under_lock (TachRun *run, char *const *field)
{
  char *copy;

  g_mutex_lock (&run->lock);
  copy = g_strdup (*field);
  g_mutex_unlock (&run->lock);
  return copy;
}

char *
tach_run_dup_text (TachRun *run)
{
  return dup_under_lock (run, &run->text);
}

char *
tach_run_dup_algorithms (TachRun *run)
{
  return dup_under_lock (run, &run->algorithms);
}

guint
tach_run_get_steps_done (TachRun *run)
{
  return (guint) g_atomic_int_get (&run->steps_done);
}

gsize
tach_run_get_pending_bytes (TachRun *run)
{
  gsize bytes;

  g_mutex_lock (&run->lock);
  bytes = run->pending_bytes;
  g_mutex_unlock (&run->lock);
  return bytes;
}

/* ---------------------------------------- a run loaded from a results folder */

void
tach_run_record_free (TachRunRecord *record)
{
  if (record == NULL)
    return;
  g_free (record->record_id);
  g_free (record->source);
  g_clear_pointer (&record->unknown_knobs, g_hash_table_unref);
  g_free (record);
}

/* The sweep marker travels with the run into runs.csv and back. */
void
tach_run_set_varied (TachRun *run, const char *knob)
{
  g_return_if_fail (run != NULL);
  g_free (run->varied);
  run->varied = g_strdup (knob);
}

void
tach_run_set_evaluate (TachRun *run, gboolean evaluate)
{
  g_return_if_fail (run != NULL);
  run->no_evaluation = !evaluate;
}

const char *
tach_run_get_varied (TachRun *run)
{
  g_return_val_if_fail (run != NULL, NULL);
  return run->varied;
}

/* The label, as the varied marker, travels into runs.csv and back. */
void
tach_run_set_label (TachRun *run, const char *label)
{
  g_return_if_fail (run != NULL);
  g_free (run->label);
  run->label = label != NULL && *label != '\0' ? g_strdup (label) : NULL;
}

const char *
tach_run_get_label (TachRun *run)
{
  g_return_val_if_fail (run != NULL, NULL);
  return run->label;
}

char *
tach_run_dup_name (TachRun *run, const char *custom)
{
  const char *base = run->config.preset != NULL ? run->config.preset
                     : run->label != NULL ? run->label : custom;
  g_autofree char *value = NULL;

  if (run->varied == NULL || !tach_run_knob_is_known (run, run->varied))
    return g_strdup (base);
  value = tach_config_get (&run->config, run->varied);
  return g_strdup_printf ("%s %s=%s", base, run->varied, value);
}

const char *
tach_run_get_record_id (TachRun *run)
{
  return run->record != NULL ? run->record->record_id : NULL;
}

const char *
tach_run_get_source (TachRun *run)
{
  return run->record != NULL ? run->record->source : NULL;
}

gboolean
tach_run_knob_is_known (TachRun *run, const char *key)
{
  return run->record == NULL || run->record->unknown_knobs == NULL
         || !g_hash_table_contains (run->record->unknown_knobs, key);
}
