/* tach-backends.c: the backend registry, one row per backend, and the
 * device functions that read it (listing, resolving, opening, asking what
 * a backend supports).
 *
 * This is the one file that knows which backends exist and which were
 * built: the C code's only HAVE_CUDA conditionals are here, around the CUDA
 * row and its entry points.  A backend adds its folder, its row here and
 * its build files; the device ids that messages and help list come from
 * the rows (tach_backend_device_ids).
 */
#include <stdlib.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-backend.h"
#include "tach-error-private.h"
#include "tach-cpu.h"
#ifdef HAVE_CUDA
#include "tach-cuda.h"
#include "tach-cuda-kernels.h"
#endif

static TachBackend *
cpu_open (guint ordinal, guint threads, TachPrecision precision, GError **error)
{
  return tach_cpu_backend_new (threads, precision, error);
}

#ifdef HAVE_CUDA
static TachBackend *
cuda_open (guint ordinal, guint threads, TachPrecision precision, GError **error)
{
  return tach_cuda_backend_new ((int) ordinal, threads, precision, error);
}
#endif

/* Best first: "auto" picks the first device listed. */
static const TachBackendRow rows[] = {
  {
    .prefix = "cuda", .ordinals = TRUE, .kind = TACH_DEVICE_KIND_GPU,
    .caps = TACH_BACKEND_CAP_GRAPHS,
    .none = N_("no usable CUDA device (the CUDA runtime found none for '%s'): "
               "install the NVIDIA driver or use {device=cpu}"),
    .absent = N_("no CUDA device '%s' on this machine: use {device=cuda:0} to cuda:%u, "
                 "or {device=cpu}"),
    .not_built = N_("this build has no CUDA backend: rebuild with -Dcuda=enabled, or use {device=cpu}"),
#ifdef HAVE_CUDA
    .devices = tach_cuda_backend_devices, .open = cuda_open,
    .supports = tach_cuda_backend_supports,
    .attention_head_dim_max = TACH_CUDA_ATTENTION_HEAD_DIM_MAX,
#endif
  },
  {
    .prefix = "cpu", .kind = TACH_DEVICE_KIND_CPU,
    .caps = TACH_BACKEND_CAP_SYNC_OPS | TACH_BACKEND_CAP_HOST_MEMORY | TACH_BACKEND_CAP_THREADS
            | TACH_BACKEND_CAP_LSTM_FP32_ONLY,
    .none = N_("the CPU backend is not usable: oneDNN reported no CPU engine"),
    .devices = tach_cpu_backend_devices, .open = cpu_open,
    .supports = tach_cpu_backend_supports, .measure_peak = tach_cpu_measure_peak_flops,
  },
};

/* ---------------------------------------------------------------- rows */

/* A test's row (tach_backend_registry_set_extra_row), after the built-in
 * ones. */
static const TachBackendRow *extra_row = NULL;

void
tach_backend_registry_set_extra_row (const TachBackendRow *row)
{
  extra_row = row;
}

/* Row @i of the registry: the built-in rows, then the extra one; NULL
 * past the end. */
static const TachBackendRow *
row_at (guint i)
{
  if (i < G_N_ELEMENTS (rows))
    return &rows[i];
  return i == G_N_ELEMENTS (rows) ? extra_row : NULL;
}

/* The row owning @id ("cpu", "cuda", "cuda:3"), with the ordinal it names
 * (0 for a bare prefix); NULL for an id no backend owns. */
static const TachBackendRow *
row_for_id (const char *id, guint *ordinal)
{
  const TachBackendRow *row;

  for (guint i = 0; id != NULL && (row = row_at (i)) != NULL; i++)
    {
      gsize n = strlen (row->prefix);
      guint64 k = 0;

      if (strncmp (id, row->prefix, n) != 0)
        continue;
      if (id[n] == '\0')
        k = 0;
      else if (!row->ordinals || id[n] != ':'
               || !g_ascii_string_to_unsigned (id + n + 1, 10, 0, G_MAXINT, &k, NULL))
        continue;
      if (ordinal != NULL)
        *ordinal = (guint) k;
      return row;
    }
  return NULL;
}

static int
compare_prefix (gconstpointer a, gconstpointer b)
{
  return strcmp ((*(const TachBackendRow *const *) a)->prefix,
                 (*(const TachBackendRow *const *) b)->prefix);
}

GStrv
tach_backend_device_ids (void)
{
  const TachBackendRow *by_name[G_N_ELEMENTS (rows)];
  GStrvBuilder *builder = g_strv_builder_new ();
  GStrv ids;

  for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
    by_name[i] = &rows[i];
  qsort (by_name, G_N_ELEMENTS (rows), sizeof by_name[0], compare_prefix);
  g_strv_builder_add (builder, "auto");
  /* The built-in rows only: a test's row is not offered to users. */
  for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
    {
      g_strv_builder_add (builder, by_name[i]->prefix);
      if (by_name[i]->ordinals)
        {
          g_autofree char *numbered = g_strdup_printf ("%s:N", by_name[i]->prefix);

          g_strv_builder_add (builder, numbered);
        }
    }
  ids = g_strv_builder_end (builder);
  g_strv_builder_unref (builder);
  return ids;
}

const char *
tach_backend_host_device_id (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
    if (rows[i].kind == TACH_DEVICE_KIND_CPU)
      return rows[i].prefix;
  g_return_val_if_reached (NULL);
}

/* ------------------------------------------------------------- devices */

static TachDeviceInfo *
device_info_copy (const TachDeviceInfo *src)
{
  TachDeviceInfo *dst = g_new0 (TachDeviceInfo, 1);

  *dst = *src;
  dst->id = g_strdup (src->id);
  dst->name = g_strdup (src->name);
  dst->versions = g_strdup (src->versions);
  return dst;
}

static void
append_devices (GPtrArray *all, GPtrArray *some)
{
  if (some == NULL)
    return;
  /* Move the elements over without copying them. */
  g_ptr_array_set_free_func (some, NULL);
  for (guint k = 0; k < some->len; k++)
    g_ptr_array_add (all, g_ptr_array_index (some, k));
  g_ptr_array_unref (some);
}

GPtrArray *
tach_backend_registry_devices (void)
{
  GPtrArray *all = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_device_info_free);
  const TachBackendRow *row;

  for (guint i = 0; (row = row_at (i)) != NULL; i++)
    if (row->devices != NULL)
      append_devices (all, row->devices ());
  return all;
}

GPtrArray *
tach_devices_list (void)
{
  return tach_backend_registry_devices ();
}

static double
measure_peak (const TachBackendRow *row, TachDeviceInfo *info)
{
  if (!(info->peak_flops > 0.0) && row != NULL && row->measure_peak != NULL)
    info->peak_flops = row->measure_peak ();
  return info->peak_flops;
}

double
tach_device_measure_peak_flops (TachDeviceInfo *info)
{
  return measure_peak (row_for_id (info->id, NULL), info);
}

double
tach_device_fill_peak_flops (const TachDevice *device, TachDeviceInfo *info)
{
  return measure_peak (device->row, info);
}

char *
tach_backend_canonical_id (const char *device_id)
{
  guint ordinal = 0;
  const TachBackendRow *row;

  if (g_strcmp0 (device_id, "auto") == 0)
    return g_strdup ("auto");
  row = row_for_id (device_id, &ordinal);
  if (row == NULL)
    return NULL;
  return row->ordinals ? g_strdup_printf ("%s:%u", row->prefix, ordinal) : g_strdup (row->prefix);
}

static TachDevice *
device_new (const TachBackendRow *row, guint ordinal, TachDeviceInfo *info)
{
  TachDevice *device = g_new0 (TachDevice, 1);

  device->row = row;
  device->ordinal = ordinal;
  device->info = info;
  return device;
}

void
tach_device_free (TachDevice *device)
{
  if (device == NULL)
    return;
  tach_device_info_free (device->info);
  g_free (device);
}

TachDevice *
tach_device_for_record (TachDeviceInfo *info)
{
  guint ordinal = 0;
  const TachBackendRow *row = row_for_id (info->id, &ordinal);

  info->kind = row != NULL ? row->kind : TACH_DEVICE_KIND_CPU;
  return device_new (row, ordinal, info);
}

TachDevice *
tach_device_find (const char *id, GError **error)
{
  g_autoptr(GPtrArray) devices = NULL;
  g_autofree char *want = NULL;
  const TachBackendRow *row = NULL;
  guint ordinal = 0;
  guint n_same = 0;

  if (id == NULL || *id == '\0')
    id = "auto";

  if (g_strcmp0 (id, "auto") != 0 && (row = row_for_id (id, &ordinal)) == NULL)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("invalid value '%s' for {device}: expected one of auto, cpu, cuda, cuda:N"),
                   id);
      tach_error_add_hint (error, TACH_KNOB_DEVICE, id, TACH_KNOB_COUNT, NULL, NULL);
      return NULL;
    }

  devices = tach_backend_registry_devices ();
  if (row == NULL)
    {
      const TachDeviceInfo *best;

      if (devices->len == 0)
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_DEVICE_UNAVAILABLE,
                       _("no usable device: the CPU backend reported none"));
          return NULL;
        }
      best = g_ptr_array_index (devices, 0);
      row = row_for_id (best->id, &ordinal);
      return device_new (row, ordinal, device_info_copy (best));
    }

  want = tach_backend_canonical_id (id);
  for (guint i = 0; i < devices->len; i++)
    {
      const TachDeviceInfo *info = g_ptr_array_index (devices, i);

      if (g_strcmp0 (info->id, want) == 0)
        return device_new (row, ordinal, device_info_copy (info));
      if (row_for_id (info->id, NULL) == row)
        n_same++;
    }

  if (row->devices == NULL)
    g_set_error_literal (error, TACH_ERROR, TACH_ERROR_DEVICE_UNAVAILABLE, W_(row->not_built));
  else if (n_same == 0 || row->absent == NULL)
    g_set_error (error, TACH_ERROR, TACH_ERROR_DEVICE_UNAVAILABLE, W_(row->none), id);
  else
    g_set_error (error, TACH_ERROR, TACH_ERROR_DEVICE_UNAVAILABLE, W_(row->absent), id, n_same - 1);
  /* The fix: the best device there is (the messages name the CPU). */
  tach_error_add_hint (error, TACH_KNOB_DEVICE, id, TACH_KNOB_DEVICE,
                       devices->len > 0 ? ((const TachDeviceInfo *) devices->pdata[0])->id : NULL,
                       NULL);
  return NULL;
}

TachDeviceInfo *
tach_device_resolve (const char *id, GError **error)
{
  g_autoptr(TachDevice) device = tach_device_find (id, error);

  return device != NULL ? g_steal_pointer (&device->info) : NULL;
}

/* ------------------------------------------------------------ backends */

static TachBackendOpenHook open_hook;
static gpointer open_hook_data;
static GMutex open_hook_lock;

void
tach_backend_set_open_hook (TachBackendOpenHook hook, gpointer user_data)
{
  g_mutex_lock (&open_hook_lock);
  open_hook = hook;
  open_hook_data = user_data;
  g_mutex_unlock (&open_hook_lock);
}

TachBackend *
tach_backend_open (const TachDevice *device, guint threads, TachPrecision precision,
                   GError **error)
{
  const TachBackendRow *row = device->row;
  TachBackend *be = NULL;

  if (row != NULL && row->open != NULL)
    be = row->open (device->ordinal, threads, precision, error);
  if (be == NULL)
    {
      if (error != NULL && *error == NULL)
        g_set_error (error, TACH_ERROR, TACH_ERROR_DEVICE_UNAVAILABLE,
                     _("could not open device %s"), device->info->id);
      /* Whatever kept the device from opening, the device is the knob. */
      tach_error_add_hint (error, TACH_KNOB_DEVICE, device->info->id, TACH_KNOB_DEVICE, NULL,
                           NULL);
      return NULL;
    }
  be->caps = row->caps;
  be->ranks = 1;
  /* The registry's description is the one users see; a constructor that
   * left the field empty gets it. */
  if (be->device == NULL)
    be->device = device_info_copy (device->info);

  g_mutex_lock (&open_hook_lock);
  if (open_hook != NULL)
    open_hook (be, open_hook_data);
  g_mutex_unlock (&open_hook_lock);
  return be;
}

TachBackend *
tach_backend_new (const char *device_id, guint threads, TachPrecision precision, GError **error)
{
  g_autoptr(TachDevice) device = tach_device_find (device_id, error);

  if (device == NULL)
    return NULL;
  return tach_backend_open (device, threads, precision, error);
}

/* The row "auto" stands for: the first device's, looked up once, since
 * devices do not come and go while Tach runs and front ends ask for every
 * row they draw. */
static const TachBackendRow *
auto_row (void)
{
  static gsize once = 0;
  static const TachBackendRow *row = NULL;

  if (g_once_init_enter (&once))
    {
      g_autoptr(GPtrArray) devices = tach_backend_registry_devices ();

      if (devices->len > 0)
        row = row_for_id (((const TachDeviceInfo *) devices->pdata[0])->id, NULL);
      g_once_init_leave (&once, 1);
    }
  return row;
}

/* The row of @device_id without resolving it ("auto": the first device's). */
static const TachBackendRow *
row_named (const char *device_id)
{
  return g_strcmp0 (device_id, "auto") == 0 ? auto_row () : row_for_id (device_id, NULL);
}

TachBackendCaps
tach_device_caps (const TachDevice *device)
{
  return device->row != NULL ? device->row->caps : 0;
}

TachBackendCaps
tach_backend_caps_for (const char *device_id)
{
  const TachBackendRow *row = row_named (device_id);

  return row != NULL ? row->caps : 0;
}

TachDeviceKind
tach_backend_kind_for (const char *device_id)
{
  const TachBackendRow *row = row_for_id (device_id, NULL);

  return row != NULL ? row->kind : TACH_DEVICE_KIND_CPU;
}

static gboolean
row_supports (const TachBackendRow *row, TachKnobId knob, int value, const char **why)
{
  if (why != NULL)
    *why = NULL;
  if (row == NULL)
    {
      if (why != NULL)
        *why = _("unknown device");
      return FALSE;
    }
  if (row->supports == NULL)
    {
      if (why != NULL)
        *why = W_(row->not_built);
      return FALSE;
    }
  return row->supports (knob, value, why);
}

gboolean
tach_device_supports_knob (const TachDevice *device, TachKnobId knob, int value, const char **why)
{
  return row_supports (device->row, knob, value, why);
}

gboolean
tach_backend_supports_knob (const char *device_id, TachKnobId knob, int value, const char **why)
{
  return row_supports (row_named (device_id), knob, value, why);
}
