/* test-explain-verdict.c: what explain's verdict and sentences say of a
 * clear speed-up measured under load (issue 42): B steady, A slowed by
 * one busy round.  The speed-up comes from the rounds' ratios, so it is
 * significant with two bounded ends; a step time's interval stays above
 * 0; nothing reads "∞" or "inf"; a share larger than the whole gap is
 * told as the other knobs pulling the other way, not as a percentage of
 * the gap. */
#include <math.h>
#include <string.h>

#include "tach-explain.h"
#include "test-explain.h"
#include "test-run-util.h"

/* A at 50 ms, layout saving 44 and feed costing 6 (B at 12 ms): every
 * configuration but B slowed by the round's load, as a busy core slows
 * the configurations that use it and not B's. */
typedef struct {
  double load[8];
} Loaded;

static gboolean
loaded_measure (guint mask, guint round, TachExplainCost *cost, gpointer user_data,
                GError **error)
{
  Loaded *l = user_data;
  double t = 50 - (mask & 1 ? 44 : 0) + (mask & 2 ? 6 : 0);

  (void) error;
  if (mask != 3)
    t *= l->load[round];
  memset (cost, 0, sizeof *cost);
  cost->step_ms = t;
  cost->phase_ms[TACH_EXPLAIN_PHASE_COMPUTE] = t;
  return TRUE;
}

static const TachExplainCostFuncs loaded_funcs = { NULL, loaded_measure, NULL };

TachExplain *
run_loaded (const double *load, guint rounds)
{
  static const char *const keys[] = { "layout", "feed" };
  static const char *const froms[] = { "misread", "host-f64" };
  static const char *const tos[] = { "batch-major", "resident" };
  g_autoptr(GError) error = NULL;
  TachExplain *explain = tach_explain_new_for_knobs (2, keys, froms, tos, NULL, rounds, 42,
                                                     &error);
  Loaded l;

  g_assert_no_error (error);
  memcpy (l.load, load, rounds * sizeof (double));
  tach_explain_set_budget (explain, 0, 0.05);
  g_assert_true (tach_explain_run_with (explain, &loaded_funcs, &l, NULL, NULL, &error));
  g_assert_no_error (error);
  return explain;
}

static void
test_bounded (void)
{
  static const double load[] = { 1.0, 1.1, 3.5 };
  g_autoptr(TachExplain) explain = run_loaded (load, 3);
  g_autofree char *verdict = tach_explain_dup_verdict (explain);
  g_autofree char *unresolved = tach_explain_dup_unresolved (explain);
  TachInterval ratio, gap, a;

  g_assert_cmpint (tach_explain_get_speedup (explain, &ratio), ==, TACH_VERDICT_SIGNIFICANT);
  g_assert_true (tach_interval_is_known (&ratio));
  g_assert_cmpfloat (ratio.lo, >, 1);
  /* One verdict: the gap's agrees, and its interval lies below 0. */
  g_assert_cmpint (tach_explain_get_gap (explain, &gap), ==, TACH_VERDICT_SIGNIFICANT);
  g_assert_cmpfloat (gap.hi, <, 0);
  g_assert_cmpfloat (gap.lo, >=, -tach_explain_get_cost (explain, FALSE)->step_ms);
  /* A's step time: a slow round widens its interval upwards only. */
  tach_explain_get_cost_ci (explain, FALSE, &a);
  g_assert_cmpfloat (a.lo, >, 0);
  g_assert_nonnull (strstr (verdict, "significant"));
  g_assert_null (strstr (verdict, "∞"));
  g_assert_null (strstr (verdict, "inf"));
  /* Nothing was asked (no budget): nothing is unresolved. */
  g_assert_null (unresolved);
  assert_additive (explain);
}

static void
test_beyond_gap (void)
{
  static const double load[] = { 1.0, 1.02, 0.99 };
  g_autoptr(TachExplain) explain = run_loaded (load, 3);
  const TachExplainKnob *layout = tach_explain_get_knob (explain, 0);
  const TachExplainKnob *feed = tach_explain_get_knob (explain, 1);
  g_autofree char *sentence = tach_explain_dup_sentence (explain, 0);
  g_autofree char *against = tach_explain_dup_sentence (explain, 1);

  /* Layout saves 44 ms of a 38 ms gap: more than all of it. */
  g_assert_cmpfloat (layout->fraction, >, 1);
  g_assert_null (strstr (sentence, "of the gap,"));
  g_assert_nonnull (strstr (sentence, "more than the whole gap"));
  g_assert_nonnull (strstr (sentence, "other knobs"));
  /* Feed costs 6 ms against the gap's direction. */
  g_assert_cmpfloat (feed->fraction, <, 0);
  g_assert_null (strstr (against, "of the gap,"));
  g_assert_nonnull (strstr (against, "pull the other way"));
}

/* Issue 42: presets that differ only in grad-sync, explained in one
 * process: the knob applies between ranks only, and the message says so
 * (and where it would apply) instead of "no execution-mode knob". */
static void
test_only_elsewhere (void)
{
  g_autoptr(GError) error = NULL;
  TachExplain *explain;
  TachConfig a, b;

  test_config_pair (TACH_WORKLOAD_BILSTM, &a, "device=cpu preset=horovod-no-overlap",
                    &b, "device=cpu preset=tuned");
  explain = tach_explain_new (&a, &b, 3, &error);
  g_assert_null (explain);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  g_assert_nonnull (strstr (error->message, "grad-sync"));
  g_assert_nonnull (strstr (error->message, "mpirun"));
  g_assert_null (strstr (error->message, "no execution-mode knob"));
  tach_config_clear (&a);
  tach_config_clear (&b);
}

void
test_explain_verdict_add (void)
{
  g_test_add_func ("/engine/explain/verdict/bounded", test_bounded);
  g_test_add_func ("/engine/explain/verdict/beyond-gap", test_beyond_gap);
  g_test_add_func ("/engine/explain/verdict/only-elsewhere", test_only_elsewhere);
}
