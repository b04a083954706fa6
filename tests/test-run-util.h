/* test-run-util.h: helpers shared by the engine tests: whole runs through
 * the public API (run, CSV and the workload tests; test-gpu-modes links it too,
 * for its mode tests) and the temporary files that tests write. */
#pragma once

#include "tach-engine.h"

G_BEGIN_DECLS

/* Applies "key=value key=value" @settings with
 * tach_config_apply_settings(); any error fails the test. */
void      test_apply (TachConfig *config, const char *settings);
/* Two configurations of @workload, @a and @b, each from its defaults and
 * @a_settings or @b_settings (the two sides of an explanation). */
void      test_config_pair (TachWorkload workload, TachConfig *a, const char *a_settings,
                            TachConfig *b, const char *b_settings);

/* The CPU backend with one thread, at fp32; any error fails the test.
 * Free with tach_backend_free(). */
typedef struct _TachBackend TachBackend;
TachBackend *test_cpu_backend (void);

/* A bilstm configuration small enough to run in well under a second on
 * the CPU. */
void      test_tiny_config (TachConfig *config, guint steps);
/* A run of test_tiny_config (@steps), made but not started. */
TachRun  *test_tiny_run_new (guint steps);
/* Runs @config to its end with no notification; returns the run. */
TachRun  *test_run_to_end (const TachConfig *config);

/* What a finished run leaves behind. */
typedef struct {
  GArray      *samples;  /* TachSample per step, warm-up included */
  GArray      *losses;   /* double per step: the samples' losses */
  char        *text;     /* generated text, or NULL */
  char        *algorithms; /* what the backend's plans ran (tach_run_dup_algorithms) */
  TachSummary  summary;
} TestRunResult;

void      test_run_result_free (TestRunResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TestRunResult, test_run_result_free)

/* Runs @workload to its end on a configuration made by applying each of
 * the NULL-terminated "key=value ..." strings in turn.  A setting the
 * engine rejects fails the test; a run that cannot be made or fails
 * returns NULL and sets @error.  A run that returns finished. */
TestRunResult *test_run_try (TachWorkload workload, GError **error,
                             const char *settings, ...) G_GNUC_NULL_TERMINATED;
/* The same, for a run that must succeed. */
TestRunResult *test_run_ok (TachWorkload workload,
                            const char *settings, ...) G_GNUC_NULL_TERMINATED;

/* The mean of @n doubles of @values from index @from. */
double    test_mean (GArray *values, guint from, guint n);
/* Fails the test unless @a and @b (doubles) are as long and every step of
 * @b is within @rtol of @a, relative to MAX (1, |a|).  A step whose loss is
 * NaN in both (a run that records none) is skipped; otherwise @a must be
 * finite.  @what names the mode in the message. */
void      test_assert_same_losses (GArray *a, GArray *b, double rtol, const char *what);

/* A new temporary folder from @tmpl ("name-XXXXXX"); free with g_free(). */
char     *test_make_tmp_dir (const char *tmpl);
/* Writes @n bytes (-1: a string) to @dir/@name; returns the path (free
 * with g_free()). */
char     *test_write_file (const char *dir, const char *name, const void *bytes, gssize n);
/* Removes @dir and all it holds. */
void      test_remove_tree (const char *dir);

G_END_DECLS
