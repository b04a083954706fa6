/* test-ops.c: every backend op against the double-precision reference.
 *
 *   test-ops [--device=ID] [GTest options]
 *
 * Registers every op test for one device (/engine/cpu/..., the reference
 * self-checks /ref/... with it) or, without --device, for each backend
 * Tach can be built with.  Tests sensitive to the math mode run once per
 * precision the backend offers (.../fp32, .../tf32, ...).  With --device
 * naming a device this machine lacks (cuda:0 without a GPU or driver) it
 * exits 77, which meson reports as skipped, never as passed; without
 * --device the missing device's tests are each reported skipped.
 */
#include <string.h>

#include "tach-async-device.h"
#include "test-ops-common.h"

static void
register_device (const char *device_id)
{
  tach_ops_register_dense (device_id);
  tach_ops_register_loss (device_id);
  tach_ops_register_lstm (device_id);
  tach_ops_register_conv (device_id);
  tach_ops_register_misc (device_id);
  tach_ops_register_graph (device_id);
  tach_ops_register_gpt (device_id);
}

int
main (int argc, char **argv)
{
  static const char *const all[] = { "cpu", "cuda:0" };
  const char *only = NULL;
  int kept = 1;

  /* --device=ID is ours; the rest goes to g_test_init(). */
  for (int i = 1; i < argc; i++)
    if (g_str_has_prefix (argv[i], "--device="))
      only = argv[i] + strlen ("--device=");
    else
      argv[kept++] = argv[i];
  argc = kept;
  argv[argc] = NULL;

  g_test_init (&argc, &argv, NULL);
  /* The Transformer ops run on the asynchronous test double too (the
   * CPU's ops queued to a worker, as a GPU's are), beside the CPU's. */
  tach_async_device_register ();
  if (only != NULL && !tach_ops_device_present (only))
    {
      g_print ("1..0 # SKIP no device %s on this machine (no GPU, no driver, or a build "
               "without its backend)\n", only);
      return 77;
    }
  if (only == NULL || g_strcmp0 (only, "cpu") == 0)
    {
      register_device (NULL);
      tach_ops_register_gpt (TACH_ASYNC_DEVICE_ID);
    }
  for (guint i = 0; i < G_N_ELEMENTS (all); i++)
    if (only == NULL || g_strcmp0 (only, all[i]) == 0)
      register_device (all[i]);
  if (only != NULL && g_strcmp0 (only, "cpu") != 0 && g_strcmp0 (only, "cuda:0") != 0)
    register_device (only);
  return g_test_run ();
}
