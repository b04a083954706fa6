/* tach-cpu-arg.c: one operand of a oneDNN primitive as the caller sees it
 * (a plain buffer) and as the primitive wants it (a layout and data type
 * of its choosing), with the reorder between the two made once, at plan
 * time, and the primitive's copy kept in memory owned by the plan.
 *
 * Threads: the engine thread.
 */
#include <string.h>

#include "tach-cpu-private.h"

gboolean
tach_cpu_arg_init (TachBackend *be, TachCpuArg *arg, const dnnl_memory_desc_t *user_md,
                   const dnnl_memory_desc_t *inner_md, gboolean output)
{
  dnnl_engine_t engine = TACH_CPU (be)->engine;
  dnnl_primitive_desc_t pd = NULL;
  size_t bytes;

  memset (arg, 0, sizeof *arg);
  arg->user = tach_cpu_memory_new (be, user_md);
  if (arg->user == NULL)
    return FALSE;
  if (dnnl_memory_desc_equal (user_md, inner_md))
    return TRUE;

  bytes = dnnl_memory_desc_get_size (inner_md);
  arg->buf = tach_cpu_mem_alloc (be, bytes);
  if (arg->buf == NULL)
    return FALSE;
  /* Blocked layouts pad channels up to the block: the padding must be
   * zero for the primitives, and no reorder ever writes it, so zero it
   * once here. */
  memset (arg->buf, 0, bytes);
  TACH_DNNL_TRY (be, dnnl_memory_create (&arg->inner, inner_md, engine, arg->buf), fail);
  if (output)
    TACH_DNNL_TRY (be, dnnl_reorder_primitive_desc_create (&pd, inner_md, engine, user_md,
                                                           engine, NULL), fail);
  else
    TACH_DNNL_TRY (be, dnnl_reorder_primitive_desc_create (&pd, user_md, engine, inner_md,
                                                           engine, NULL), fail);
  TACH_DNNL_TRY (be, dnnl_primitive_create (&arg->reorder, pd), fail);
  dnnl_primitive_desc_destroy (pd);
  arg->output = output;
  return TRUE;

fail:
  if (pd != NULL)
    dnnl_primitive_desc_destroy (pd);
  return FALSE;
}

void
tach_cpu_arg_clear (TachBackend *be, TachCpuArg *arg)
{
  if (arg->reorder != NULL)
    dnnl_primitive_destroy (arg->reorder);
  if (arg->inner != NULL)
    dnnl_memory_destroy (arg->inner);
  if (arg->user != NULL)
    dnnl_memory_destroy (arg->user);
  tach_cpu_mem_free (be, arg->buf);
  memset (arg, 0, sizeof *arg);
}

static gboolean
arg_reorder (TachBackend *be, TachCpuArg *arg)
{
  dnnl_exec_arg_t args[2];

  args[0] = (dnnl_exec_arg_t) { DNNL_ARG_FROM, arg->output ? arg->inner : arg->user };
  args[1] = (dnnl_exec_arg_t) { DNNL_ARG_TO, arg->output ? arg->user : arg->inner };
  return tach_cpu_execute (be, arg->reorder, 2, args);
}

dnnl_memory_t
tach_cpu_arg_bind (TachBackend *be, TachCpuArg *arg, const void *ptr)
{
  TACH_DNNL_TRY (be, dnnl_memory_set_data_handle (arg->user, (void *) ptr), fail);
  if (arg->reorder == NULL)
    return arg->user;
  if (!arg->output && !arg_reorder (be, arg))
    return NULL;
  return arg->inner;
fail:
  return NULL;
}

gboolean
tach_cpu_arg_finish (TachBackend *be, TachCpuArg *arg)
{
  if (arg->reorder == NULL || !arg->output)
    return TRUE;
  return arg_reorder (be, arg);
}
