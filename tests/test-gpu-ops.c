/* test-gpu-ops.c: the op tests on the GPU alone, for the 'gpu' suite.
 *
 * Exits 77 (skipped) when the machine has no CUDA device, so that a build
 * without a GPU never reports these tests as passed.
 */
#include "test-ops-common.h"

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (!tach_ops_device_present ("cuda:0"))
    {
      g_printerr ("no CUDA device: skipping the GPU op tests\n");
      return 77;
    }
  tach_ops_register_dense ("cuda:0");
  tach_ops_register_loss ("cuda:0");
  tach_ops_register_lstm ("cuda:0");
  tach_ops_register_conv ("cuda:0");
  tach_ops_register_misc ("cuda:0");
  return g_test_run ();
}
