/* tach-cpu-memory.c: the CPU backend's memory, below its rooms: the
 * allocations (with their sizes, for the peak), the frozen ranges (a model's
 * promise not to change them, tach_backend_freeze) and the copies made of
 * them, which go whenever a frozen range is written or freed; and the glue
 * every room uses to run oneDNN (its memory objects, execution and errors).
 *
 * The backend (tach-cpu-backend.c) and the rooms (gemm/, lstm/, conv/) call
 * this file; it calls none of them, so no room and the backend call each
 * other.  Threads: the engine thread.
 */
#include <stdlib.h>
#include <string.h>

#include <dnnl_debug.h>
#include <glib/gi18n-lib.h>

#include "tach-cpu-private.h"
#include "tach-error-private.h"

/* ---------------------------------------------------------------- errors */

void
tach_cpu_dnnl_fail (TachBackend *be, dnnl_status_t status, const char *call,
                    const char *file, int line)
{
  tach_backend_fail (be, status == dnnl_out_of_memory ? TACH_ERROR_OUT_OF_MEMORY
                                                      : TACH_ERROR_LIBRARY,
                     W_("oneDNN failed on the CPU backend; try fewer {threads} or a smaller {batch}: %s in %s (%s:%d)"),
                     dnnl_status2str (status), call, file, line);
  /* The message's first advice; a backend's earlier error keeps its own. */
  tach_error_add_hint (&be->error, TACH_KNOB_BATCH, NULL, TACH_KNOB_BATCH, NULL, NULL);
}

/* ---------------------------------------------------------------- memory */

void *
tach_cpu_mem_alloc (TachBackend *be, size_t bytes)
{
  TachCpuBackend *cpu = TACH_CPU (be);
  void *ptr = NULL;
  int rc;

  /* A zero-byte request still gets a unique, freeable pointer. */
  rc = posix_memalign (&ptr, 64, MAX (bytes, (size_t) 64));
  if (rc != 0 || ptr == NULL)
    {
      tach_backend_fail (be, TACH_ERROR_OUT_OF_MEMORY,
                         W_("out of host memory: could not allocate %zu"
                           " bytes; lower {batch} or {samples}: posix_memalign: %s"),
                         (gsize) bytes, g_strerror (rc));
      return NULL;
    }
  g_hash_table_insert (cpu->sizes, ptr, GSIZE_TO_POINTER (bytes));
  cpu->current_bytes += bytes;
  cpu->peak_bytes = MAX (cpu->peak_bytes, cpu->current_bytes);
  return ptr;
}

void
tach_cpu_mem_free (TachBackend *be, void *ptr)
{
  TachCpuBackend *cpu = TACH_CPU (be);
  gpointer size;

  if (ptr == NULL)
    return;
  if (g_hash_table_steal_extended (cpu->sizes, ptr, NULL, &size))
    {
      cpu->current_bytes -= GPOINTER_TO_SIZE (size);
      tach_cpu_frozen_write (be, ptr, MAX (GPOINTER_TO_SIZE (size), (size_t) 1));
    }
  free (ptr);
}

/* ---------------------------------------------------------- frozen ranges */

/* A range that the model promised not to change (the freeze op). */
typedef struct {
  const char *start;
  size_t      bytes;
} FrozenRange;

void
tach_cpu_freeze (TachBackend *be, const void *ptr, size_t bytes)
{
  TachCpuBackend *cpu = TACH_CPU (be);
  FrozenRange range = { ptr, bytes };

  if (ptr == NULL || bytes == 0)
    return;
  if (cpu->frozen == NULL)
    {
      cpu->frozen = g_array_new (FALSE, FALSE, sizeof (FrozenRange));
      cpu->frozen_copies = g_ptr_array_new ();
      cpu->frozen_epoch = 1;
    }
  g_array_append_val (cpu->frozen, range);
}

guint
tach_cpu_frozen_epoch (TachBackend *be, const void *ptr, size_t bytes)
{
  TachCpuBackend *cpu = TACH_CPU (be);
  const char *p = ptr;

  if (cpu->frozen == NULL)
    return 0;
  for (guint i = 0; i < cpu->frozen->len; i++)
    {
      const FrozenRange *r = &g_array_index (cpu->frozen, FrozenRange, i);

      if (p >= r->start && bytes <= r->bytes && (size_t) (p - r->start) <= r->bytes - bytes)
        return cpu->frozen_epoch;
    }
  return 0;
}

void *
tach_cpu_frozen_copy_alloc (TachBackend *be, size_t bytes)
{
  TachCpuBackend *cpu = TACH_CPU (be);
  void *ptr;

  g_return_val_if_fail (cpu->frozen_copies != NULL, NULL);
  ptr = tach_cpu_mem_alloc (be, bytes);
  if (ptr != NULL)
    {
      g_ptr_array_add (cpu->frozen_copies, ptr);
      cpu->frozen_copies_bytes += bytes;
      cpu->frozen_copies_peak_bytes = MAX (cpu->frozen_copies_peak_bytes,
                                           cpu->frozen_copies_bytes);
    }
  return ptr;
}

static void
drop_frozen_copies (TachBackend *be)
{
  TachCpuBackend *cpu = TACH_CPU (be);
  GPtrArray *copies = cpu->frozen_copies;

  /* Detached first: freeing a copy comes back through tach_cpu_frozen_write. */
  cpu->frozen_copies = NULL;
  for (guint i = 0; i < copies->len; i++)
    tach_cpu_mem_free (be, g_ptr_array_index (copies, i));
  g_ptr_array_set_size (copies, 0);
  cpu->frozen_copies_bytes = 0;
  cpu->frozen_copies = copies;
}

void
tach_cpu_frozen_write (TachBackend *be, const void *ptr, size_t bytes)
{
  TachCpuBackend *cpu = TACH_CPU (be);
  const char *p = ptr;
  gboolean dropped = FALSE;

  if (cpu->frozen == NULL || cpu->frozen_copies == NULL)
    return;
  for (guint i = cpu->frozen->len; i-- > 0;)
    {
      const FrozenRange *r = &g_array_index (cpu->frozen, FrozenRange, i);

      if (r->start < p + bytes && p < r->start + r->bytes)
        {
          g_array_remove_index_fast (cpu->frozen, i);
          dropped = TRUE;
        }
    }
  if (!dropped)
    return;
  cpu->frozen_epoch++;
  drop_frozen_copies (be);
}

void
tach_cpu_frozen_clear (TachBackend *be)
{
  TachCpuBackend *cpu = TACH_CPU (be);

  if (cpu->frozen == NULL)
    return;
  drop_frozen_copies (be);
  g_ptr_array_unref (cpu->frozen_copies);
  g_array_unref (cpu->frozen);
  cpu->frozen_copies = NULL;
  cpu->frozen = NULL;
}

/* -------------------------------------------------------------- oneDNN */

gboolean
tach_cpu_execute (TachBackend *be, dnnl_primitive_t prim, int nargs,
                  const dnnl_exec_arg_t *args)
{
  TachCpuBackend *cpu = TACH_CPU (be);

  /* A primitive runs the threads it was made for (tach-cpu-private.h). */
  tach_cpu_bind_all_threads (be);
  TACH_DNNL_TRY (be, dnnl_primitive_execute (prim, cpu->stream, nargs, args), fail);
  return TRUE;
fail:
  return FALSE;
}

dnnl_memory_t
tach_cpu_memory_new (TachBackend *be, const dnnl_memory_desc_t *md)
{
  dnnl_memory_t mem = NULL;

  TACH_DNNL_TRY (be, dnnl_memory_create (&mem, md, TACH_CPU (be)->engine, DNNL_MEMORY_NONE),
                 fail);
  return mem;
fail:
  return NULL;
}
