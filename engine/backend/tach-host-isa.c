/* tach-host-isa.c: which vector extensions the host's processor has, less
 * what TACH_CPU_ISA caps (tach-host-isa.h).  Threads: any (decided once).
 */
#include "tach-host-isa.h"

int tach_host_isa_level = -1;

static const char *const isa_names[] = { "baseline", "avx2", "avx512" };

const char *
tach_cpu_isa_name (TachCpuIsa isa)
{
  return (guint) isa < G_N_ELEMENTS (isa_names) ? isa_names[isa] : "?";
}

static TachCpuIsa
hardware_isa (void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  if (__builtin_cpu_supports ("x86-64-v4"))
    return TACH_CPU_ISA_AVX512;
  if (__builtin_cpu_supports ("x86-64-v3"))
    return TACH_CPU_ISA_AVX2;
#endif
  return TACH_CPU_ISA_BASELINE;
}

typedef struct {
  TachCpuIsa  level;
  TachCpuIsa  hardware;
  char       *invalid;   /* the environment's value when it names no level */
} HostIsa;

static gpointer
decide (gpointer data)
{
  HostIsa *host = data;
  const char *env = g_getenv ("TACH_CPU_ISA");

  host->hardware = host->level = hardware_isa ();
  if (env != NULL && env[0] != '\0')
    {
      guint i;

      for (i = 0; i < G_N_ELEMENTS (isa_names); i++)
        if (g_ascii_strcasecmp (env, isa_names[i]) == 0)
          break;
      if (i == G_N_ELEMENTS (isa_names))
        host->invalid = g_strdup (env);
      else if ((TachCpuIsa) i < host->level)
        host->level = (TachCpuIsa) i;
    }
  g_atomic_int_set (&tach_host_isa_level, (int) host->level);
  return host;
}

TachCpuIsa
tach_host_isa_decide (TachCpuIsa *hardware, const char **invalid)
{
  static GOnce once = G_ONCE_INIT;
  static HostIsa host;

  g_once (&once, decide, &host);
  if (hardware != NULL)
    *hardware = host.hardware;
  if (invalid != NULL)
    *invalid = host.invalid;
  return host.level;
}
