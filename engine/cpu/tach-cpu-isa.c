/* tach-cpu-isa.c: which vector extensions the CPU backend's kernels use.
 *
 * The level is the host's (backend/tach-host-isa.c: the processor's,
 * lowered by TACH_CPU_ISA), applied to oneDNN (dnnl_set_max_cpu_isa) and
 * lowered by oneDNN's own cap (ONEDNN_MAX_CPU_ISA), so that Tach's kernels
 * and oneDNN's always run at the same level.  Threads: any (decided once).
 */
#include <stdlib.h>

#include "tach-cpu-private.h"

int tach_cpu_isa_level = -1;

/* oneDNN's cap for a level: AVX-512 leaves it uncapped (its BF16 and VNNI
 * kernels are AVX-512 too). */
static dnnl_cpu_isa_t
dnnl_isa_for (TachCpuIsa isa)
{
  switch (isa)
    {
    case TACH_CPU_ISA_AVX2: return dnnl_cpu_isa_avx2;
    case TACH_CPU_ISA_BASELINE: return dnnl_cpu_isa_sse41;
    case TACH_CPU_ISA_AVX512:
    default: return dnnl_cpu_isa_all;
    }
}

static gboolean
dnnl_has (dnnl_cpu_isa_t effective, dnnl_cpu_isa_t isa)
{
  return (effective & isa) == isa;
}

typedef struct {
  TachCpuIsa  level;
  TachCpuIsa  hardware;
  const char *invalid;   /* the environment's value when it names no level */
} IsaChoice;

static gpointer
decide (gpointer data)
{
  IsaChoice *choice = data;
  TachCpuIsa level = tach_host_isa_decide (&choice->hardware, &choice->invalid);
  dnnl_cpu_isa_t effective;

  /* Before any other oneDNN call, or it cannot take effect: every entry
   * point of the backend decides the level first. */
  if (level < choice->hardware && dnnl_set_max_cpu_isa (dnnl_isa_for (level)) != dnnl_success)
    g_warning ("TACH_CPU_ISA=%s: oneDNN was already running and keeps its own "
               "vector extensions", g_getenv ("TACH_CPU_ISA"));
  /* ONEDNN_MAX_CPU_ISA caps oneDNN; Tach's kernels follow it. */
  effective = dnnl_get_effective_cpu_isa ();
  if (level == TACH_CPU_ISA_AVX512 && !dnnl_has (effective, dnnl_cpu_isa_avx512_core))
    level = TACH_CPU_ISA_AVX2;
  if (level == TACH_CPU_ISA_AVX2 && !dnnl_has (effective, dnnl_cpu_isa_avx2))
    level = TACH_CPU_ISA_BASELINE;
  choice->level = level;
  g_atomic_int_set (&tach_cpu_isa_level, (int) level);
  return choice;
}

static const IsaChoice *
choice_get (void)
{
  static GOnce once = G_ONCE_INIT;
  static IsaChoice choice;

  g_once (&once, decide, &choice);
  return &choice;
}

TachCpuIsa
tach_cpu_isa_init (const char **invalid)
{
  const IsaChoice *choice = choice_get ();

  if (invalid != NULL)
    *invalid = choice->invalid;
  return choice->level;
}

gboolean
tach_cpu_isa_capped (void)
{
  const IsaChoice *choice = choice_get ();

  return choice->level < choice->hardware;
}
