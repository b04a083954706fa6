/* tach-validate.c: which knobs matter for a configuration, and whether a
 * whole configuration makes sense, fits in memory and can run on a device.
 */
#include <string.h>
#include <unistd.h>

#include <inttypes.h>
#include <glib/gi18n-lib.h>

#include "tach-backend.h"
#include "tach-error-private.h"
#include "tach-config-private.h"
#include "tach-model.h"

gboolean
tach_config_knob_applies (const TachConfig *config, const char *key, const char **why)
{
  const char *reason = NULL;
  gboolean generate = config->task == TACH_TASK_GENERATE;
  TachBackendCaps caps = config->device != NULL ? tach_backend_caps_for (config->device) : 0;
  const TachKnobInfo *knob = tach_knob_lookup (key);

  /* What the workloads say first (the model classes own those rules). */
  if (knob != NULL)
    reason = tach_model_knob_unused (config, knob->id);
  if (reason != NULL)
    ;
  else if (generate && knob != NULL && knob->trains)
    reason = N_("text generation does not train");
  else if (g_strcmp0 (key, "threads") == 0 && config->device != NULL
           && !(caps & TACH_BACKEND_CAP_THREADS))
    reason = N_("threads only set the CPU backend");
  else if (g_strcmp0 (key, "launch") == 0 && config->device != NULL
           && !(caps & TACH_BACKEND_CAP_GRAPHS))
    reason = N_("graph capture needs a GPU");
  else if (knob != NULL && knob->id == TACH_KNOB_ACCUMULATE_SYNC
           && tach_config_get_accumulate (config) <= 1)
    reason = N_("with accumulate=1 each update has one micro-batch: there is no later"
                " synchronisation to defer to");
  else if (knob != NULL && config->ranks <= 1
           && (knob->id == TACH_KNOB_SHARD || knob->id == TACH_KNOB_SHARD_PREFETCH))
    reason = N_("parameters are sharded only between ranks (mpirun -np 2 or more): one rank"
                " owns them all and runs as shard=none");
  else if (knob != NULL && knob->id == TACH_KNOB_SHARD_PREFETCH && config->shard != TACH_SHARD_ALL)
    reason = N_("only shard=all gathers parameters before computing with them: there is"
                " nothing to prefetch");
  else if (knob != NULL && config->ranks <= 1
           && (knob->id == TACH_KNOB_ACCUMULATE_SYNC || knob->id == TACH_KNOB_GRAD_SYNC || knob->id == TACH_KNOB_BUCKET_MB
               || knob->id == TACH_KNOB_GRAD_PROGRESS || knob->id == TACH_KNOB_GRAD_COMPRESS))
    reason = N_("gradients are synchronised only between ranks (mpirun -np 2 or more)");
  else if (knob != NULL && knob->id == TACH_KNOB_BUCKET_MB && config->shard == TACH_SHARD_ALL)
    reason = N_("under shard=all each unit's parameters make the buckets, whatever their size");
  else if (knob != NULL && knob->id == TACH_KNOB_BUCKET_MB
           && config->grad_sync != TACH_GRAD_SYNC_OVERLAP)
    reason = N_("buckets are grad-sync=overlap's; per-tensor and fused have none");
  else if (knob != NULL && knob->id == TACH_KNOB_GRAD_PROGRESS
           && config->grad_sync != TACH_GRAD_SYNC_OVERLAP)
    reason = N_("per-tensor and fused wait on each all-reduce; only grad-sync=overlap leaves"
                " them in flight");
  else if (knob != NULL && knob->id == TACH_KNOB_GRAD_PROGRESS && config->device != NULL
           && !(caps & TACH_BACKEND_CAP_HOST_MEMORY))
    reason = N_("a device's collectives move on by themselves, on their own stream");

  if (why != NULL)
    *why = reason != NULL ? _(reason) : NULL;
  return reason == NULL;
}

/* A knob that only another workload uses, set away from its default where
 * that workload says it must not be. */
static gboolean
check_others_knobs (const TachConfig *config, const TachModelClass *klass, GError **error)
{
  for (guint i = 0; i < TACH_KNOB_COUNT; i++)
    {
      const TachModelClass *owner = NULL;
      const TachModelKnob *owned = tach_model_knob_owner ((TachKnobId) i, &owner);
      const TachKnobInfo *knob = tach_knob ((TachKnobId) i);
      g_autofree char *value = NULL;

      if (owned == NULL || owned->misuse == NULL || tach_model_class_owns (klass, (TachKnobId) i))
        continue;
      value = tach_config_get (config, knob->name);
      if (g_strcmp0 (value, knob->default_value) != 0)
        {
          g_set_error_literal (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG, W_(owned->misuse));
          /* The fix: the knob's default, which leaves it unused here. */
          tach_error_add_hint (error, knob->id, value, knob->id, knob->default_value, NULL);
          return FALSE;
        }
    }
  return TRUE;
}

static gboolean
check_consistency (const TachConfig *config, const TachModelClass *klass, GError **error)
{
  const char *message = NULL;
  /* The knob at fault, and the value of it or of another knob that fixes it. */
  TachKnobId knob = TACH_KNOB_COUNT, fix_knob = TACH_KNOB_COUNT;
  const char *fix_value = NULL;
  g_autofree char *default_batch = NULL;

  if (!check_others_knobs (config, klass, error))
    return FALSE;
  if (klass->check != NULL && !klass->check (config, error))
    {
      tach_error_fill_hint (error != NULL ? *error : NULL, config);
      return FALSE;
    }
  if (config->metrics == TACH_METRICS_ACCURACY && config->task == TACH_TASK_GENERATE)
    {
      message = W_("{metrics=accuracy} does not apply to {task=generate}: use {metrics=none}");
      knob = fix_knob = TACH_KNOB_METRICS, fix_value = "none";
    }
  else if (config->print_text && config->task != TACH_TASK_GENERATE)
    {
      message = W_("{print-text} needs {task=generate}");
      knob = fix_knob = TACH_KNOB_PRINT_TEXT, fix_value = "false";
    }
  /* The one check of a configuration's batch (with the samples' below):
   * tach_config_set() refuses a batch of "0" by the knob row's range, and
   * the models and the feeder assert what this has checked. */
  else if (config->batch == 0)
    {
      message = W_("invalid value '0' for {batch}: expected a whole number from 1");
      default_batch = g_strdup_printf ("%u", tach_config_default_batch (config->workload,
                                                                         config->task));
      knob = fix_knob = TACH_KNOB_BATCH, fix_value = default_batch;
    }
  else if (config->steps == 0)
    {
      message = W_("invalid value '0' for {steps}: expected a whole number from 1");
      knob = fix_knob = TACH_KNOB_STEPS, fix_value = tach_knob (TACH_KNOB_STEPS)->default_value;
    }
  else if (config->input_h == 0 || config->input_w == 0 || config->input_c == 0)
    {
      message = W_("invalid {input}: every size must be at least 1");
      knob = fix_knob = TACH_KNOB_INPUT, fix_value = tach_knob (TACH_KNOB_INPUT)->default_value;
    }
  else if (config->device == NULL)
    {
      message = W_("no device set: use {device=auto}");
      knob = fix_knob = TACH_KNOB_DEVICE, fix_value = "auto";
    }

  if (message != NULL)
    {
      g_set_error_literal (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG, message);
      tach_error_add_config_hint (error, config, knob, fix_knob, fix_value, NULL);
      return FALSE;
    }
  if (config->task == TACH_TASK_TRAIN && config->samples > 0 && config->samples < config->batch)
    {
      g_autofree char *samples = g_strdup_printf ("%" G_GUINT64_FORMAT, config->samples);
      g_autofree char *one_batch = g_strdup_printf ("%u", config->batch);

      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("{samples=%s} is less than one batch of %u: "
                     "raise {samples} or lower {batch}"),
                   samples, config->batch);
      tach_error_add_hint (error, TACH_KNOB_SAMPLES, samples, TACH_KNOB_SAMPLES, one_batch, NULL);
      return FALSE;
    }
  return TRUE;
}

/* Asks the backend about every enumerated knob that matters here, so that
 * the message can name the knob, the value, the device and a value that
 * would work. */
static gboolean
check_backend (const TachConfig *config, const TachDevice *device, GError **error)
{
  const char *device_id = device->info->id;
  guint n_knobs = 0;
  const TachKnobInfo *knobs = tach_knobs (&n_knobs);
  TachConfig workload_only = *config;

  /* Which knobs matter is asked without the device: "launch does not apply
   * to the CPU" must not hide launch=graph from the CPU backend's check. */
  workload_only.device = NULL;
  for (guint i = 0; i < n_knobs; i++)
    {
      g_autofree char *value = NULL, *mention = NULL, *named = NULL;
      const char *why = NULL;
      const char *instead = NULL;
      int current;

      if (knobs[i].values == NULL || g_str_equal (knobs[i].name, "workload")
          || !tach_config_knob_applies (&workload_only, knobs[i].name, NULL))
        continue;
      value = tach_config_get (config, knobs[i].name);
      current = *(const int *) ((const char *) config + knobs[i].offset);
      if (tach_device_supports_knob (device, knobs[i].id, current, &why))
        continue;

      for (guint k = 0; knobs[i].values[k] != NULL; k++)
        if ((int) k != current
            && tach_device_supports_knob (device, knobs[i].id, (int) k, NULL))
          {
            instead = knobs[i].values[k];
            break;
          }
      mention = tach_knob_mention (knobs[i].id, value);
      named = tach_knob_mention (knobs[i].id, NULL);
      if (instead != NULL && why != NULL && strstr (why, named) != NULL)
        /* The backend's reason already says what to use instead. */
        g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                     _("%s is not supported on %s: %s"), mention, device_id, why);
      else if (instead != NULL)
        {
          g_autofree char *use = tach_knob_mention (knobs[i].id, instead);

          g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                       _("%s is not supported on %s (%s): use %s"), mention, device_id,
                       why != NULL ? why : _("its backend cannot do this"), use);
        }
      else
        g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                     W_("%s is not supported on %s (%s): use another {device}"),
                     mention, device_id, why != NULL ? why : _("its backend cannot do this"));
      /* The fix is the first value the backend can do, else another device. */
      tach_error_add_hint (error, knobs[i].id, value,
                           instead != NULL ? knobs[i].id : TACH_KNOB_DEVICE, instead, NULL);
      return FALSE;
    }
  return TRUE;
}

/* Whether the workload's step can be captured as a graph as configured:
 * asked after the backend, which says first when it has no graphs. */
static gboolean
check_graph (const TachConfig *config, const TachModelClass *klass, GError **error)
{
  const char *why = NULL;
  guint k = tach_config_get_accumulate (config);

  if (k > 1)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                   W_("{launch=graph} captures one micro-batch, and with {accumulate=%u} each step"
                      " is %u of them, fed and told apart between them: use {launch=eager}"),
                   k, k);
      tach_error_add_hint (error, TACH_KNOB_LAUNCH, "graph", TACH_KNOB_LAUNCH, "eager", NULL);
      return FALSE;
    }
  if (klass->supports_graph != NULL && klass->supports_graph (config, &why))
    return TRUE;
  g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
               W_("{launch=graph} cannot capture the %s step (%s): use {launch=eager}"),
               tach_workload_to_string (config->workload),
               why != NULL ? why : _("this workload has no graph support"));
  tach_error_add_hint (error, TACH_KNOB_LAUNCH, "graph", TACH_KNOB_LAUNCH, "eager", NULL);
  return FALSE;
}

static guint64
host_memory_bytes (void)
{
  long pages = sysconf (_SC_PHYS_PAGES);
  long page_size = sysconf (_SC_PAGESIZE);

  if (pages <= 0 || page_size <= 0)
    return 0;
  return (guint64) pages * (guint64) page_size;
}

/* The names of the model-shape knobs (is_shape), in table order,
 * NULL-terminated. */
static GPtrArray *
shape_knob_names (void)
{
  guint n = 0;
  const TachKnobInfo *knobs = tach_knobs (&n);
  GPtrArray *names = g_ptr_array_new ();

  for (guint i = 0; i < n; i++)
    if (knobs[i].is_shape)
      g_ptr_array_add (names, (gpointer) knobs[i].name);
  g_ptr_array_add (names, NULL);
  return names;
}

/* The model-shape knobs of @config's workload set away from their
 * defaults, as "--hidden 512 --layers 4" (*what) and "--hidden, --layers"
 * (*names) in the current wording, the first of them *first; FALSE when every shape is the
 * default. */
static gboolean
changed_shapes (const TachConfig *config, char **what, char **names, TachKnobId *first)
{
  g_autoptr(GPtrArray) shape_names = shape_knob_names ();
  const char *const *shapes = (const char *const *) shape_names->pdata;
  TachConfig defaults;
  GString *w = g_string_new (NULL), *n = g_string_new (NULL);

  tach_config_init (&defaults, config->workload);
  for (guint i = 0; shapes[i] != NULL; i++)
    {
      g_autofree char *now = tach_config_get (config, shapes[i]);
      g_autofree char *was = tach_config_get (&defaults, shapes[i]);

      if (!tach_config_knob_applies (config, shapes[i], NULL) || g_strcmp0 (now, was) == 0)
        continue;
      TachKnobId id = tach_knob_lookup (shapes[i])->id;
      g_autofree char *with_value = tach_knob_mention (id, now);
      g_autofree char *name = tach_knob_mention (id, NULL);

      if (w->len == 0)
        *first = id;
      /* "--hidden 512 --layers 4" as options, with commas as settings. */
      if (w->len > 0)
        g_string_append (w, tach_get_wording () == TACH_WORDING_OPTIONS ? " " : ", ");
      g_string_append (w, with_value);
      g_string_append_printf (n, "%s%s", n->len > 0 ? ", " : "", name);
    }
  tach_config_clear (&defaults);
  *what = g_string_free (w, FALSE);
  *names = g_string_free (n, FALSE);
  return **what != '\0';
}

static void
set_memory_error (const TachConfig *config, const TachModelClass *klass, GError **error,
                  guint64 need, guint64 have, const char *where)
{
  g_autofree char *need_s = g_format_size (need);
  g_autofree char *have_s = g_format_size (have);
  g_autofree char *what = NULL;
  g_autofree char *shape = NULL, *shape_knobs = NULL, *fix_s = NULL;
  const char *fix;
  /* The knob to change, and its value that fixes it where one does. */
  TachKnobId knob = TACH_KNOB_BATCH;
  const char *fix_value = NULL;

  if (changed_shapes (config, &shape, &shape_knobs, &knob))
    {
      what = g_strdup_printf (W_("%s with {batch=%u}"), shape, config->batch);
      fix_s = g_strdup_printf (W_("lower %s or {batch}"), shape_knobs);
      fix = fix_s;
    }
  else if (klass->memory_hint != NULL
           && klass->memory_hint (config, &what, &fix, &knob, &fix_value))
    ;
  else if (config->task == TACH_TASK_TRAIN)
    {
      what = g_strdup_printf (W_("{samples=%" PRIu64 "} with {batch=%u}"),
                              tach_config_get_samples (config), config->batch);
      if (config->samples > (guint64) TACH_DEFAULT_BATCHES * config->batch)
        fix = W_("lower {samples}"), knob = TACH_KNOB_SAMPLES;
      else
        fix = W_("lower {batch}");
    }
  else
    {
      what = g_strdup_printf (W_("{batch=%u}"), config->batch);
      fix = W_("lower {batch}");
    }

  g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
               _("%s needs %s of %s memory; this machine has %s: %s"),
               what, need_s, where, have_s, fix);
  tach_error_add_config_hint (error, config, knob, knob, fix_value, fix);
}

static gboolean
check_memory (const TachConfig *config, const TachModelClass *klass,
              const TachDevice *device, GError **error)
{
  guint64 device_bytes = 0, host_bytes = 0;
  guint64 host_have = host_memory_bytes ();
  guint64 host_need;

  if (klass->memory_needs == NULL)
    return TRUE;
  klass->memory_needs (config, &device_bytes, &host_bytes);

  /* Where the backend's memory is host memory, the two add up. */
  host_need = host_bytes;
  if (device != NULL && (tach_device_caps (device) & TACH_BACKEND_CAP_HOST_MEMORY))
    host_need += device_bytes;
  if (host_have > 0 && host_need > host_have)
    {
      set_memory_error (config, klass, error, host_need, host_have, _("host"));
      return FALSE;
    }
  if (device != NULL && !(tach_device_caps (device) & TACH_BACKEND_CAP_HOST_MEMORY)
      && device->info->memory_bytes > 0
      && device_bytes > device->info->memory_bytes)
    {
      set_memory_error (config, klass, error, device_bytes, device->info->memory_bytes,
                        device->info->id);
      return FALSE;
    }
  return TRUE;
}

/* The checks that need no device. */
static const TachModelClass *
check_settings (const TachConfig *config, GError **error)
{
  const TachModelClass *klass;

  if ((guint) config->workload >= TACH_WORKLOAD_COUNT)
    {
      g_autofree char *joined =
        tach_config_values_joined (tach_knob (TACH_KNOB_WORKLOAD)->values);

      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   _("invalid workload: expected one of %s"), joined);
      tach_error_add_hint (error, TACH_KNOB_WORKLOAD, NULL, TACH_KNOB_COUNT, NULL, NULL);
      return NULL;
    }
  klass = tach_model_class_for (config->workload);
  if (klass == NULL)
    g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                 W_("the %s workload is not built into this engine: choose another {workload}"),
                 tach_workload_to_string (config->workload));
  if (klass == NULL)
    tach_error_add_config_hint (error, config, TACH_KNOB_WORKLOAD, TACH_KNOB_WORKLOAD, NULL, NULL);
  else if (!check_consistency (config, klass, error))
    return NULL;
  return klass;
}

/* A backend that runs its LSTMs in fp32 only, asked for another precision
 * by a workload that has one: refused here, not by the backend once the
 * run has begun (check_backend has already refused a precision the
 * device has not at all). */
static gboolean
check_lstm_precision (const TachConfig *config, const TachModelClass *klass,
                      const TachDevice *device, GError **error)
{
  g_autofree char *value = NULL;

  if (device == NULL || !klass->has_lstm || config->precision == TACH_PRECISION_FP32
      || !(tach_device_caps (device) & TACH_BACKEND_CAP_LSTM_FP32_ONLY))
    return TRUE;
  value = tach_config_get (config, "precision");
  g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
               W_("{precision=%s} is not supported on %s for %s: the backend's LSTM runs in "
                  "fp32 only; use {precision=fp32}"),
               value, device->info->id, tach_workload_to_string (config->workload));
  tach_error_add_config_hint (error, config, TACH_KNOB_PRECISION, TACH_KNOB_PRECISION, "fp32",
                              NULL);
  return FALSE;
}

/* What sharding (tach-grad-shard.c, tach-grad-shard-all.c) cannot run
 * yet, between ranks; with one rank it changes nothing
 * (tach_config_knob_applies says so).  shard=all's units are every
 * training workload's (models/tach-params.h). */
static gboolean
check_shard (const TachConfig *config, const TachDevice *device, GError **error)
{
  g_autofree char *value = NULL;

  if (config->shard == TACH_SHARD_NONE || config->task != TACH_TASK_TRAIN)
    return TRUE;
  value = tach_config_get (config, "shard");
  /* The device path (tach-grad-device.c) all-reduces with the backend's
   * collectives: on one GPU under mpirun too. */
  if (device != NULL && !(tach_device_caps (device) & TACH_BACKEND_CAP_HOST_MEMORY))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                   W_("{shard=%s} runs over MPI on the CPU backend only: the device path's"
                      " reduce-scatter and all-gather (NCCL's ncclReduceScatter and"
                      " ncclAllGather) are not built yet; use {shard=none}"), value);
      tach_error_add_config_hint (error, config, TACH_KNOB_SHARD, TACH_KNOB_SHARD, "none", NULL);
      return FALSE;
    }
  if (config->ranks <= 1)
    return TRUE;
  if (config->grad_compress != TACH_GRAD_COMPRESS_NONE)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                   W_("{shard=%s} reduce-scatters fp32 gradients: {grad-compress} casts only"
                      " the all-reduce's; use {grad-compress=none}"), value);
      tach_error_add_config_hint (error, config, TACH_KNOB_GRAD_COMPRESS,
                                  TACH_KNOB_GRAD_COMPRESS, "none", NULL);
      return FALSE;
    }
  if (tach_config_get_accumulate (config) > 1
      && config->accumulate_sync == TACH_ACCUMULATE_SYNC_EVERY)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                   W_("{shard=%s} keeps only this rank's shard of each averaged gradient, and"
                      " {accumulate-sync=every} sums whole ones after every micro-batch: use"
                      " {accumulate-sync=last}, which reduce-scatters the sum once"), value);
      tach_error_add_config_hint (error, config, TACH_KNOB_ACCUMULATE_SYNC,
                                  TACH_KNOB_ACCUMULATE_SYNC, "last", NULL);
      return FALSE;
    }
  return TRUE;
}

/* A fused attention with heads wider than the device's kernel takes:
 * refused here, with the two ways out, not by the kernel's launch once
 * the run has begun. */
static gboolean
check_attention_heads (const TachConfig *config, const TachModelClass *klass,
                       const TachDevice *device, GError **error)
{
  guint width, widest;

  if (device == NULL || device->row == NULL || klass->attention_head_dim == NULL)
    return TRUE;
  width = klass->attention_head_dim (config);
  widest = device->row->attention_head_dim_max;
  if (widest == 0 || width <= widest)
    return TRUE;
  g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
               W_("{attention=fused} on %s takes heads at most %u wide, and {embed=%u} over "
                  "{heads=%u} makes them %u: raise {heads} so that embed / heads <= %u, or use "
                  "{attention=naive}"),
               device->info->id, widest, config->embed, config->heads, width, widest);
  tach_error_add_config_hint (error, config, TACH_KNOB_ATTENTION, TACH_KNOB_ATTENTION, "naive",
                              NULL);
  return FALSE;
}

static gboolean
check_on_device (const TachConfig *config, const TachModelClass *klass,
                 const TachDevice *device, GError **error)
{
  if (device != NULL && !check_backend (config, device, error))
    return FALSE;
  if (!check_shard (config, device, error))
    return FALSE;
  if (!check_lstm_precision (config, klass, device, error))
    return FALSE;
  if (!check_attention_heads (config, klass, device, error))
    return FALSE;
  if (config->launch == TACH_LAUNCH_GRAPH && !check_graph (config, klass, error))
    return FALSE;
  return check_memory (config, klass, device, error);
}

gboolean
tach_config_validate_on (const TachConfig *config, const TachDevice *device, GError **error)
{
  const TachModelClass *klass;

  g_return_val_if_fail (config != NULL, FALSE);
  klass = check_settings (config, error);
  return klass != NULL && check_on_device (config, klass, device, error);
}

gboolean
tach_config_validate (const TachConfig *config, const char *device_id, GError **error)
{
  g_autoptr(TachDevice) device = NULL;
  const TachModelClass *klass;

  g_return_val_if_fail (config != NULL, FALSE);
  klass = check_settings (config, error);
  if (klass == NULL)
    return FALSE;
  if (device_id != NULL && (device = tach_device_find (device_id, error)) == NULL)
    return FALSE;
  return check_on_device (config, klass, device, error);
}
