/* tach-cuda-cublas.c: cuBLAS, loaded when a CUDA device is first used.
 *
 * Why not linked: loading libcublas.so.13 loads libcublasLt.so.13, whose
 * constructors touch some 150 MB (50 MB of its code and an 80 MB table it
 * builds) before main() runs, in every process that links it: tach-cli
 * and the window on a machine without a GPU, or a CPU run on one with a
 * GPU, would pay that for nothing (issue 14: a 1M-step run under 100 MB).
 * So the backend reaches cuBLAS through the table below, filled by dlopen
 * the first time a CUDA device is queried or opened, which happens only
 * when cudaGetDeviceCount found one.  cuDNN 9 stays linked: its front
 * library is 2 MB and loads its engines itself, on first use.
 *
 * Threads: tach_cublas_load() may be called from any thread (it runs
 * once); the table is read after it returned TRUE.
 */
#include <dlfcn.h>
#include <string.h>

#include <glib/gi18n.h>

#include "tach-cuda-private.h"

TachCublas tach_cublas;

/* The name the loader is asked for: the soname (LD_LIBRARY_PATH, the
 * cache), then the toolkit this build was linked against. */
static void *
open_cublas (GString *why)
{
  static const char *const names[] = { TACH_CUBLAS_SONAME, TACH_CUDA_LIBDIR "/" TACH_CUBLAS_SONAME };

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      void *handle = dlopen (names[i], RTLD_NOW | RTLD_LOCAL);

      if (handle != NULL)
        return handle;
      g_string_append_printf (why, "%s%s", why->len ? "; " : "", dlerror ());
    }
  return NULL;
}

/* Reads every entry of the table from @handle; FALSE (naming the first
 * symbol missing in @why) when one is not there. */
static gboolean
resolve (void *handle, GString *why)
{
#define RESOLVE(field, symbol)                                               \
  if ((*(void **) &tach_cublas.field = dlsym (handle, symbol)) == NULL)      \
    {                                                                        \
      g_string_append_printf (why, "%s has no %s", TACH_CUBLAS_SONAME, symbol);   \
      return FALSE;                                                          \
    }
  RESOLVE (create, "cublasCreate_v2");
  RESOLVE (destroy, "cublasDestroy_v2");
  RESOLVE (set_stream, "cublasSetStream_v2");
  RESOLVE (set_workspace, "cublasSetWorkspace_v2");
  RESOLVE (set_math_mode, "cublasSetMathMode");
  RESOLVE (gemm_ex, "cublasGemmEx");
  RESOLVE (get_property, "cublasGetProperty");
  RESOLVE (get_status_name, "cublasGetStatusName");
  RESOLVE (get_status_string, "cublasGetStatusString");
#undef RESOLVE
  return TRUE;
}

gboolean
tach_cublas_load (GError **error)
{
  static gsize done;
  static char *failure;   /* why loading failed, kept for later callers */

  if (g_once_init_enter (&done))
    {
      g_autoptr(GString) why = g_string_new (NULL);
      void *handle = open_cublas (why);

      if (handle != NULL && !resolve (handle, why))
        {
          memset (&tach_cublas, 0, sizeof tach_cublas);
          dlclose (handle);
          handle = NULL;
        }
      if (handle == NULL)
        failure = g_string_free (g_steal_pointer (&why), FALSE);
      g_once_init_leave (&done, 1);
    }
  if (failure == NULL)
    return TRUE;
  g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
               _("cuBLAS could not be loaded: install CUDA %d's cuBLAS (%s) or use --device cpu: %s"),
               CUBLAS_VER_MAJOR, TACH_CUBLAS_SONAME, failure);
  return FALSE;
}
