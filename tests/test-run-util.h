/* test-run-util.h: small helpers shared by the run and CSV tests. */
#pragma once

#include "tach-engine.h"

G_BEGIN_DECLS

/* A bilstm configuration small enough to run in well under a second on
 * the CPU. */
static inline void
test_tiny_config (TachConfig *config, guint steps)
{
  char buf[32];

  tach_config_init (config, TACH_WORKLOAD_BILSTM);
  g_assert_true (tach_config_set (config, "device", "cpu", NULL));
  g_assert_true (tach_config_set (config, "batch", "8", NULL));
  g_snprintf (buf, sizeof buf, "%u", steps);
  g_assert_true (tach_config_set (config, "steps", buf, NULL));
  g_assert_true (tach_config_set (config, "warmup", "2", NULL));
  g_assert_true (tach_config_set (config, "threads", "1", NULL));
}

/* Runs @config to its end with no notification; returns the run. */
static inline TachRun *
test_run_to_end (const TachConfig *config)
{
  g_autoptr(GError) error = NULL;
  TachRun *run = tach_run_new (config, &error);

  g_assert_no_error (error);
  g_assert_true (tach_run_start (run, NULL, NULL, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (tach_run_wait (run, &error));
  g_assert_no_error (error);
  return run;
}

G_END_DECLS
