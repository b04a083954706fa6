/* test-explain-load.c: explain.csv read back (tach_explain_csv_load, issue
 * 42): an explanation written and read again says and draws what it said
 * (every figure, the verdict, the sentences, what stayed unresolved); a
 * damaged file is said row by row, and the rest still loads. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>

#include "tach-explain.h"
#include "test-explain.h"

static void
assert_same (double a, double b)
{
  if (!isfinite (a) || !isfinite (b))
    g_assert_cmpint (isnan (a), ==, isnan (b));
  else
    g_assert_cmpfloat_with_epsilon (a, b, 1e-8 * MAX (1.0, fabs (a)));
}

static void
assert_same_interval (const TachInterval *a, const TachInterval *b)
{
  assert_same (a->value, b->value);
  assert_same (a->lo, b->lo);
  assert_same (a->hi, b->hi);
}

static void
assert_same_cost (TachExplain *a, TachExplain *b, gboolean to)
{
  TachInterval ca, cb;
  double a_min, a_max, b_min, b_max;

  for (int p = 0; p < TACH_EXPLAIN_N_PHASES; p++)
    assert_same (tach_explain_get_cost (a, to)->phase_ms[p], tach_explain_get_cost (b, to)->phase_ms[p]);
  assert_same (tach_explain_get_cost (a, to)->step_ms, tach_explain_get_cost (b, to)->step_ms);
  tach_explain_get_cost_ci (a, to, &ca);
  tach_explain_get_cost_ci (b, to, &cb);
  assert_same_interval (&ca, &cb);
  tach_explain_get_cost_range (a, to, &a_min, &a_max);
  tach_explain_get_cost_range (b, to, &b_min, &b_max);
  assert_same (a_min, b_min);
  assert_same (a_max, b_max);
}

/* Everything the window and the CLI read of an explanation. */
static void
assert_same_explain (TachExplain *a, TachExplain *b)
{
  g_autofree char *va = tach_explain_dup_verdict (a), *vb = tach_explain_dup_verdict (b);
  g_autofree char *ua = tach_explain_dup_unresolved (a), *ub = tach_explain_dup_unresolved (b);
  TachInterval ia, ib;
  double a_lo, a_hi, b_lo, b_hi;
  guint a_used, a_drawn, b_used, b_drawn;

  g_assert_cmpuint (tach_explain_get_n_knobs (b), ==, tach_explain_get_n_knobs (a));
  for (guint i = 0; i < tach_explain_get_n_knobs (a); i++)
    {
      const TachExplainKnob *ka = tach_explain_get_knob (a, i), *kb = tach_explain_get_knob (b, i);
      g_autofree char *sa = tach_explain_dup_sentence (a, i), *sb = tach_explain_dup_sentence (b, i);

      g_assert_cmpstr (kb->key, ==, ka->key);
      g_assert_cmpstr (kb->title, ==, ka->title);
      g_assert_cmpstr (kb->from, ==, ka->from);
      g_assert_cmpstr (kb->to, ==, ka->to);
      g_assert_cmpint (kb->changes_results, ==, ka->changes_results);
      assert_same (kb->share_ms, ka->share_ms);
      assert_same (kb->share_min_ms, ka->share_min_ms);
      assert_same (kb->share_max_ms, ka->share_max_ms);
      assert_same (kb->fraction, ka->fraction);
      assert_same_interval (&kb->share_ci, &ka->share_ci);
      assert_same_interval (&kb->fraction_ci, &ka->fraction_ci);
      g_assert_cmpint (kb->verdict, ==, ka->verdict);
      g_assert_cmpint (kb->resolved, ==, ka->resolved);
      for (int p = 0; p < TACH_EXPLAIN_N_PHASES; p++)
        assert_same (kb->phase_ms[p], ka->phase_ms[p]);
      g_assert_cmpstr (sb, ==, sa);
    }
  assert_same_cost (a, b, FALSE);
  assert_same_cost (a, b, TRUE);
  g_assert_cmpint (tach_explain_get_speedup (b, &ib), ==, tach_explain_get_speedup (a, &ia));
  assert_same_interval (&ib, &ia);
  g_assert_cmpint (tach_explain_get_gap (b, &ib), ==, tach_explain_get_gap (a, &ia));
  assert_same_interval (&ib, &ia);
  tach_explain_get_gap_range (a, &a_lo, &a_hi);
  tach_explain_get_gap_range (b, &b_lo, &b_hi);
  assert_same (b_lo, a_lo);
  assert_same (b_hi, a_hi);
  tach_explain_get_orderings (a, &a_used, &a_drawn);
  tach_explain_get_orderings (b, &b_used, &b_drawn);
  g_assert_cmpuint (b_used, ==, a_used);
  g_assert_cmpuint (b_drawn, ==, a_drawn);
  g_assert_cmpuint (tach_explain_get_rounds (b), ==, tach_explain_get_rounds (a));
  g_assert_cmpuint (tach_explain_get_n_configs (b), ==, tach_explain_get_n_configs (a));
  g_assert_cmpint (tach_explain_is_exact (b), ==, tach_explain_is_exact (a));
  g_assert_cmpint (tach_explain_is_resolved (b), ==, tach_explain_is_resolved (a));
  g_assert_cmpint (tach_explain_is_partial (b), ==, tach_explain_is_partial (a));
  g_assert_cmpstr (tach_explain_get_label (b, FALSE), ==, tach_explain_get_label (a, FALSE));
  g_assert_cmpstr (tach_explain_get_label (b, TRUE), ==, tach_explain_get_label (a, TRUE));
  g_assert_cmpstr (vb, ==, va);
  g_assert_cmpstr (ub, ==, ua);
}

static void
write_file (const char *dir, const char *text, gssize len)
{
  g_autofree char *path = g_build_filename (dir, "explain.csv", NULL);

  g_assert_true (g_file_set_contents (path, text, len, NULL));
}

static void
test_round_trip (void)
{
  /* Two explanations, the second unresolved at a tight target: the
   * sentences say what stayed unresolved and why the rounds ended. */
  static const double quiet[] = { 1.0, 1.02, 0.99, 1.01 };
  static const double busy[] = { 1.0, 1.6, 1.1 };
  g_autoptr(TachExplain) first = run_loaded (quiet, 4);
  g_autoptr(TachExplain) second = run_loaded (busy, 3);
  g_autofree char *dir = g_dir_make_tmp ("tach-explain-load-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "explain.csv", NULL);
  g_autofree char *text = NULL;
  g_autoptr(GPtrArray) explains = g_ptr_array_new_with_free_func ((GDestroyNotify) tach_explain_free);
  g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GError) error = NULL;
  gsize len = 0;

  tach_explain_set_budget (second, 0, 0.001);
  tach_explain_set_labels (second, "tf1-feed-dict", "tuned");
  g_assert_true (tach_explain_csv_append (first, dir, &error));
  g_assert_true (tach_explain_csv_append (second, dir, &error));
  g_assert_no_error (error);

  /* No explain.csv: nothing, and no problem. */
  {
    g_autofree char *empty = g_dir_make_tmp ("tach-explain-none-XXXXXX", NULL);

    g_assert_true (tach_explain_csv_load (empty, explains, problems, &error));
    g_assert_cmpuint (explains->len + problems->len, ==, 0);
    g_rmdir (empty);
  }

  g_assert_true (tach_explain_csv_load (dir, explains, problems, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (problems->len, ==, 0);
  g_assert_cmpuint (explains->len, ==, 2);
  assert_same_explain (first, explains->pdata[0]);
  assert_same_explain (second, explains->pdata[1]);

  /* Damaged: the first explanation's first knob row (line 3) cut short,
   * so that its other rows no longer add up to its gap, and a NUL byte
   * after the last row. */
  g_assert_true (g_file_get_contents (path, &text, &len, NULL));
  g_ptr_array_set_size (explains, 0);
  {
    g_auto(GStrv) lines = g_strsplit (text, "\r\n", -1);
    g_autofree char *joined = NULL;
    g_autoptr(GString) damaged = g_string_new (NULL);

    g_free (lines[2]);
    lines[2] = g_strdup ("\"a row cut short");
    joined = g_strjoinv ("\r\n", lines);
    g_string_append (damaged, joined);
    g_string_append_len (damaged, "\0\0,knob\r\n", 9);
    write_file (dir, damaged->str, (gssize) damaged->len);
  }
  g_assert_true (tach_explain_csv_load (dir, explains, problems, &error));
  g_assert_no_error (error);
  /* The first is skipped whole, said at its line; the second loads. */
  g_assert_cmpuint (explains->len, ==, 1);
  assert_same_explain (second, explains->pdata[0]);
  {
    g_autoptr(GString) all = g_string_new (NULL);
    g_autofree char *at_row = g_strdup_printf ("%s:3: a malformed row", path);
    g_autofree char *at_explain = g_strdup_printf ("%s:2: the explanation ", path);
    g_autofree char *at_nul = g_strdup_printf ("%s:%u: a NUL byte", path,
                                               2 + 2 * (2 + tach_explain_get_n_knobs (first)));

    for (guint i = 0; i < problems->len; i++)
      g_string_append_printf (all, "%s\n", (char *) problems->pdata[i]);
    g_assert_nonnull (strstr (all->str, at_row));
    g_assert_nonnull (strstr (all->str, at_explain));
    g_assert_nonnull (strstr (all->str, "do not add up to its gap"));
    g_assert_nonnull (strstr (all->str, at_nul));
  }
  g_ptr_array_set_size (explains, 0);
  g_ptr_array_set_size (problems, 0);

  /* Not an explain.csv. */
  write_file (dir, "a,b\r\n1,2\r\n", -1);
  g_assert_false (tach_explain_csv_load (dir, explains, problems, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  g_assert_cmpuint (explains->len, ==, 0);

  g_unlink (path);
  g_rmdir (dir);
}

void
test_explain_load_add (void)
{
  g_test_add_func ("/engine/explain/csv-load", test_round_trip);
}
