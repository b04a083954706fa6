/* test-explain-so-far.c: an explanation's figures while its rounds run
 * (tach_explain_dup_so_far), on injected, deterministic costs (part of
 * test-explain). */
#include <math.h>

#include "test-explain.h"

static const char *const keys[] = { "layout", "feed", "sync" };
static const char *const froms[] = { "misread", "host-f64", "1" };
static const char *const tos[] = { "batch-major", "resident", "end" };

/* A step time for configuration @mask in round @round: each knob's own
 * cost, one pair's interaction, and a drift that differs per round and
 * per configuration, so that every round's shares differ. */
static gboolean
measure (guint mask, guint round, TachExplainCost *cost, gpointer user_data, GError **error)
{
  double t = 100 - 20 * (mask & 1) - 5 * ((mask >> 1) & 1) + 2 * ((mask >> 2) & 1)
             + ((mask & 3) == 3 ? 3 : 0) + round * 0.5 * (1 + g_bit_storage (mask));

  (void) user_data;
  (void) error;
  cost->step_ms = t;
  cost->phase_ms[TACH_EXPLAIN_PHASE_FEED] = 0.1 * t * (mask & 2 ? 1 : 3);
  cost->phase_ms[TACH_EXPLAIN_PHASE_SYNC] = 0.05 * t;
  cost->phase_ms[TACH_EXPLAIN_PHASE_HOST] = 0.05 * t;
  cost->phase_ms[TACH_EXPLAIN_PHASE_COMPUTE] = t - cost->phase_ms[TACH_EXPLAIN_PHASE_FEED]
                                               - 0.1 * t;
  return TRUE;
}

static const TachExplainCostFuncs cost_funcs = { NULL, measure, NULL };

static TachExplain *
explain_new (guint rounds)
{
  g_autoptr(GError) error = NULL;
  TachExplain *explain = tach_explain_new_for_knobs (3, keys, froms, tos, NULL, rounds, 42, &error);

  g_assert_no_error (error);
  g_assert_nonnull (explain);
  return explain;
}

/* The progress callback's copies of the rounds so far: one per whole
 * round from the second on. */
static void
on_progress_copy (TachExplain *explain, guint done, guint total, gpointer user_data)
{
  GPtrArray *copies = user_data;
  guint per_round = tach_explain_get_n_configs (explain);

  (void) total;
  if (done % per_round != 0)
    return;
  /* One round has no interval: no copy. */
  g_assert_null (tach_explain_dup_so_far (explain, 1));
  if (done / per_round >= 2)
    g_ptr_array_add (copies, tach_explain_dup_so_far (explain, done / per_round));
}

static void
assert_same_figures (TachExplain *a, TachExplain *b)
{
  TachInterval ga, gb;

  g_assert_cmpuint (tach_explain_get_rounds (a), ==, tach_explain_get_rounds (b));
  tach_explain_get_gap (a, &ga);
  tach_explain_get_gap (b, &gb);
  g_assert_cmpfloat (ga.value, ==, gb.value);
  g_assert_cmpfloat (ga.lo, ==, gb.lo);
  g_assert_cmpfloat (tach_explain_get_cost (a, TRUE)->step_ms, ==,
                     tach_explain_get_cost (b, TRUE)->step_ms);
  for (guint i = 0; i < tach_explain_get_n_knobs (a); i++)
    {
      const TachExplainKnob *ka = tach_explain_get_knob (a, i);
      const TachExplainKnob *kb = tach_explain_get_knob (b, i);

      g_assert_cmpstr (ka->key, ==, kb->key);
      g_assert_cmpfloat (ka->share_ms, ==, kb->share_ms);
      g_assert_cmpfloat (ka->share_ci.lo, ==, kb->share_ci.lo);
      g_assert_cmpfloat (ka->share_ci.hi, ==, kb->share_ci.hi);
      g_assert_cmpint (ka->verdict, ==, kb->verdict);
    }
}

/* While rounds run, a copy of the figures so far is what an explanation
 * of only those rounds gives (from the third: the fewest one may ask) (the costs depend on the round, the
 * shuffled order does not change them), and later rounds leave it as it
 * was. */
static void
test_so_far (void)
{
  g_autoptr(TachExplain) explain = explain_new (4);
  g_autoptr(GPtrArray) copies = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_explain_free);
  g_autoptr(GError) error = NULL;

  g_assert_null (tach_explain_dup_so_far (explain, 2));
  g_assert_true (tach_explain_run_with (explain, &cost_funcs, NULL, on_progress_copy, copies, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (copies->len, ==, 3);
  /* Two rounds: fewer than an explanation may ask for, an interval all the same. */
  g_assert_cmpuint (tach_explain_get_rounds (copies->pdata[0]), ==, 2);
  g_assert_true (isfinite (tach_explain_get_knob (copies->pdata[0], 0)->share_ci.lo));
  assert_additive (copies->pdata[0]);
  for (guint r = 3; r <= 4; r++)
    {
      g_autoptr(TachExplain) only = explain_new (r);
      TachExplain *copy = copies->pdata[r - 2];

      g_assert_true (tach_explain_run_with (only, &cost_funcs, NULL, NULL, NULL, &error));
      g_assert_no_error (error);
      assert_same_figures (copy, only);
      assert_additive (copy);
      g_assert_cmpstr (tach_explain_get_label (copy, TRUE), ==, "B");
    }
  assert_same_figures (copies->pdata[2], explain);
}

void
test_explain_so_far_add (void)
{
  g_test_add_func ("/engine/explain/so-far", test_so_far);
}
