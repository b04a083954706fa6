/* test-ops.c: every backend op against the double-precision reference.
 *
 * Registers the reference self-checks (/ref/...) and every op test for each
 * backend Tach can be built with: /engine/cpu/... always, /engine/cuda/...
 * too, reported as skipped where this machine has no GPU.
 */
#include "test-ops-common.h"

int
main (int argc, char **argv)
{
  static const char *const devices[] = { "cpu", "cuda:0" };

  g_test_init (&argc, &argv, NULL);
  tach_ops_register_dense (NULL);
  tach_ops_register_loss (NULL);
  tach_ops_register_lstm (NULL);
  tach_ops_register_conv (NULL);
  tach_ops_register_misc (NULL);
  for (guint i = 0; i < G_N_ELEMENTS (devices); i++)
    {
      tach_ops_register_dense (devices[i]);
      tach_ops_register_loss (devices[i]);
      tach_ops_register_lstm (devices[i]);
      tach_ops_register_conv (devices[i]);
      tach_ops_register_misc (devices[i]);
    }
  return g_test_run ();
}
