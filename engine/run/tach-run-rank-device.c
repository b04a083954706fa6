/* tach-run-rank-device.c: whether a run's ranks can run its settings, and
 * which device each rank runs on (one GPU per rank, by its place among
 * the ranks of its machine).  Checked by tach_run_new before anything is
 * allocated.
 *
 * Threads: the caller's (tach_run_new's).
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-config-private.h"
#include "tach-error-private.h"
#include "tach-run-thread-private.h"

/* How many devices of @device's kind this machine lists. */
static guint
count_devices_like (const TachDeviceInfo *device)
{
  g_autoptr(GPtrArray) all = tach_devices_list ();
  guint n = 0;

  for (guint i = 0; i < all->len; i++)
    n += ((const TachDeviceInfo *) all->pdata[i])->kind == device->kind;
  return n;
}

/* Ranks on GPUs: one GPU per rank, each rank the GPU of its place among the
 * ranks on its machine (rank r of one machine: GPU r), whichever GPU
 * {device} named; more ranks on a machine than it has GPUs are refused.
 * *device becomes the rank's. */
static gboolean
pick_rank_device (const TachConfig *config, TachDevice **device, GError **error)
{
  const TachDeviceInfo *info = (*device)->info;
  guint local_rank = 0, local_size = 1, count = count_devices_like (info);
  g_autofree char *prefix = g_strndup (info->id, strcspn (info->id, ":"));
  g_autofree char *mine = NULL;
  TachDevice *resolved;

  tach_ranks_local (tach_ranks_world (), &local_rank, &local_size);
  if (local_size > count)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DEVICE_UNAVAILABLE,
                   W_("mpirun started %u ranks on this machine, which has %u GPU device(s) (%s):"
                      " each rank needs one of its own: start at most %u ranks per machine"
                      " (mpirun -np %u), or use {device=cpu}"),
                   local_size, count, prefix, count, count);
      tach_error_add_hint (error, TACH_KNOB_DEVICE, info->id, TACH_KNOB_DEVICE, "cpu", NULL);
      return FALSE;
    }
  if (config->launch == TACH_LAUNCH_GRAPH)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED,
                   W_("data-parallel ranks on GPUs launch their steps eagerly: the gradients'"
                      " all-reduces and their watchdog are not captured in a graph: use"
                      " {launch=eager}"));
      tach_error_add_hint (error, TACH_KNOB_LAUNCH, "graph", TACH_KNOB_LAUNCH, "eager", NULL);
      return FALSE;
    }
  mine = g_strdup_printf ("%s:%u", prefix, local_rank % MAX (count, 1));
  resolved = tach_device_find (mine, error);
  if (resolved == NULL)
    return FALSE;
  tach_device_free (*device);
  *device = resolved;
  return TRUE;
}

/* Data parallel: @config's ranks are the job's; on a GPU, *device becomes
 * the rank's own (pick_rank_device). */
gboolean
tach_run_check_ranks (const TachConfig *config, TachDevice **device, GError **error)
{
  guint world = tach_ranks_world_size ();

  /* Under mpirun -np N: the N ranks, or rank 0 alone (ranks=1: the
   * one-process baseline of a scaling measurement, the others idle). */
  if (world > 1 && config->ranks == 1 && tach_ranks_world_rank () != 0)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("{ranks=1} runs on rank 0 alone, not on rank %u"),
                   tach_ranks_world_rank ());
      return FALSE;
    }
  if (!tach_ranks_check_count (config, error))
    return FALSE;
  if (config->ranks > 1 && config->task != TACH_TASK_TRAIN)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("data-parallel ranks train; text generation runs in one process: use"
                      " {task=train}, or run without mpirun"));
      tach_error_add_hint (error, TACH_KNOB_TASK, "generate", TACH_KNOB_TASK, "train", NULL);
      return FALSE;
    }
  if (tach_ranks_world () != NULL && (*device)->info->kind == TACH_DEVICE_KIND_GPU)
    return pick_rank_device (config, device, error);
  return TRUE;
}

