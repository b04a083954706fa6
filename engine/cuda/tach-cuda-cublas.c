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
 * tach_cuda_load_once() does the same for NCCL (tach-cuda-nccl.c).
 *
 * Threads: tach_cublas_load() may be called from any thread (it runs
 * once); the table is read after it returned TRUE.
 */
#include <dlfcn.h>
#include <string.h>

#include <glib/gi18n.h>

#include "tach-cuda-private.h"

TachCublas tach_cublas;

/* dlopen of @soname by its name, then from the toolkit this build was
 * linked against; NULL with the loader's reasons appended to @why. */
static void *
open_library (const char *soname, GString *why)
{
  g_autofree char *in_toolkit = g_build_filename (TACH_CUDA_LIBDIR, soname, NULL);
  const char *const names[] = { soname, in_toolkit };

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      void *handle = dlopen (names[i], RTLD_NOW | RTLD_LOCAL);

      if (handle != NULL)
        return handle;
      g_string_append_printf (why, "%s%s", why->len ? "; " : "", dlerror ());
    }
  return NULL;
}

const char *
tach_cuda_load_once (gsize *once, char **failure, const char *soname,
                     const TachCudaSymbol *symbols, guint n_symbols, void *table, gsize size)
{
  if (g_once_init_enter (once))
    {
      g_autoptr(GString) why = g_string_new (NULL);
      void *handle = open_library (soname, why);

      for (guint i = 0; handle != NULL && i < n_symbols; i++)
        {
          void *entry = dlsym (handle, symbols[i].name);

          if (entry == NULL)
            {
              g_string_append_printf (why, "%s has no %s", soname, symbols[i].name);
              memset (table, 0, size);
              dlclose (handle);
              handle = NULL;
              break;
            }
          memcpy ((guchar *) table + symbols[i].offset, &entry, sizeof entry);
        }
      if (handle == NULL)
        *failure = g_string_free (g_steal_pointer (&why), FALSE);
      g_once_init_leave (once, 1);
    }
  return *failure;
}

gboolean
tach_cublas_load (GError **error)
{
#define SYMBOL(field, name) { G_STRUCT_OFFSET (TachCublas, field), name }
  static const TachCudaSymbol symbols[] = {
    SYMBOL (create, "cublasCreate_v2"),
    SYMBOL (destroy, "cublasDestroy_v2"),
    SYMBOL (set_stream, "cublasSetStream_v2"),
    SYMBOL (set_workspace, "cublasSetWorkspace_v2"),
    SYMBOL (set_math_mode, "cublasSetMathMode"),
    SYMBOL (gemm_ex, "cublasGemmEx"),
    SYMBOL (gemm_strided_batched_ex, "cublasGemmStridedBatchedEx"),
    SYMBOL (get_property, "cublasGetProperty"),
    SYMBOL (get_status_name, "cublasGetStatusName"),
    SYMBOL (get_status_string, "cublasGetStatusString"),
  };
#undef SYMBOL
  static gsize done;
  static char *failure;   /* why loading failed, kept for later callers */
  const char *why = tach_cuda_load_once (&done, &failure, TACH_CUBLAS_SONAME, symbols,
                                         G_N_ELEMENTS (symbols), &tach_cublas,
                                         sizeof tach_cublas);

  if (why == NULL)
    return TRUE;
  g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
               _("cuBLAS could not be loaded: install CUDA %d's cuBLAS (%s) or use --device cpu: %s"),
               CUBLAS_VER_MAJOR, TACH_CUBLAS_SONAME, why);
  return FALSE;
}
