/* test-explain.c: the attribution of a gap to knobs, with injected,
 * deterministic costs (no timing), and one under a spinning process;
 * test-explain-real.c explains real runs. */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "tach-explain.h"
#include "test-run-util.h"
#include "test-spinners.h"
#include "test-explain.h"

/* A cost table: a base, each knob's own cost, a cost for every pair that
 * is set together, and marks for configurations that cannot run. */
typedef struct {
  guint   n_knobs;
  double  base;
  double  own[TACH_EXPLAIN_MAX_KNOBS];
  double  pair[TACH_EXPLAIN_MAX_KNOBS][TACH_EXPLAIN_MAX_KNOBS];
  guint   bad_check[8];      /* masks check() refuses */
  guint   n_bad_check;
  guint   bad_measure[8];    /* masks measure() fails */
  guint   n_bad_measure;
  double  round_noise;       /* added per round: r * round_noise * (1 + bit length of the mask) */
  gboolean random_table;     /* costs from a hash of the mask instead */
  guint   cancel_after;      /* measure() reports CANCELLED after this many (0: never) */
  GRand  *rand;              /* when set: normal noise of noise_ms on every measurement */
  double  noise_ms;
  double  clock_s;           /* the injected clock: each measurement takes measure_s */
  double  measure_s;
  gboolean ranked;           /* phases of a data-parallel step too */

  /* What was asked. */
  GArray *calls;             /* guint: round << 16 | mask, in order */
} Costs;

static gboolean
in_list (const guint *list, guint n, guint mask)
{
  for (guint i = 0; i < n; i++)
    if (list[i] == mask)
      return TRUE;
  return FALSE;
}

static double
table_cost (const Costs *c, guint mask, guint round)
{
  double t = c->base;

  if (c->random_table)
    {
      /* Any function of the mask and the round: the shares must still add up. */
      guint32 h = g_int_hash (&(gint) { (gint) (mask * 2654435761u + round * 40503u) });

      return 10.0 + (h % 10007) / 97.0;
    }
  for (guint i = 0; i < c->n_knobs; i++)
    if (mask & (1u << i))
      {
        t += c->own[i];
        for (guint j = i + 1; j < c->n_knobs; j++)
          if (mask & (1u << j))
            t += c->pair[i][j];
      }
  return t + round * c->round_noise * (1 + g_bit_storage (mask));
}

static gboolean
costs_check (guint mask, gpointer user_data, GError **error)
{
  Costs *c = user_data;

  if (in_list (c->bad_check, c->n_bad_check, mask))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED, "refused by the device");
      return FALSE;
    }
  return TRUE;
}

static gboolean
costs_measure (guint mask, guint round, TachExplainCost *cost, gpointer user_data,
               GError **error)
{
  Costs *c = user_data;
  guint call = round << 16 | mask;
  double t;

  g_array_append_val (c->calls, call);
  if (c->cancel_after > 0 && c->calls->len >= c->cancel_after)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_CANCELLED, "stopped");
      return FALSE;
    }
  if (in_list (c->bad_measure, c->n_bad_measure, mask))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_OUT_OF_MEMORY, "out of memory at run time");
      return FALSE;
    }
  t = table_cost (c, mask, round);
  if (c->rand != NULL)
    {
      /* Box-Muller; 1 - u keeps the logarithm's argument above 0. */
      double u = 1.0 - g_rand_double (c->rand), v = g_rand_double (c->rand);

      t += c->noise_ms * sqrt (-2 * log (u)) * cos (2 * G_PI * v);
    }
  c->clock_s += c->measure_s;
  cost->step_ms = t;
  /* Phases that depend on the mask, summing to the step. */
  cost->phase_ms[TACH_EXPLAIN_PHASE_FEED] = 0.1 * t * (mask & 1 ? 1 : 3);
  cost->phase_ms[TACH_EXPLAIN_PHASE_SYNC] = 0.05 * t * (mask & 2 ? 2 : 1);
  cost->phase_ms[TACH_EXPLAIN_PHASE_HOST] = 0.05 * t;
  if (c->ranked)
    {
      /* Knob 0 hides most of the communication, as grad-sync=overlap. */
      cost->phase_ms[TACH_EXPLAIN_PHASE_COMM] = 0.3 * t * (mask & 1 ? 0.2 : 1);
      cost->phase_ms[TACH_EXPLAIN_PHASE_PACK] = 0.02 * t;
      cost->phase_ms[TACH_EXPLAIN_PHASE_IMBALANCE] = 0.03 * t;
    }
  cost->phase_ms[TACH_EXPLAIN_PHASE_COMPUTE] = t;
  for (int p = 0; p < TACH_EXPLAIN_N_PHASES; p++)
    if (p != TACH_EXPLAIN_PHASE_COMPUTE)
      cost->phase_ms[TACH_EXPLAIN_PHASE_COMPUTE] -= cost->phase_ms[p];
  return TRUE;
}

static double
costs_now (gpointer user_data)
{
  return ((Costs *) user_data)->clock_s;
}

static const TachExplainCostFuncs cost_funcs = { costs_check, costs_measure, costs_now };

static const char *const keys[] = { "layout", "feed", "sync", "rnn", "metrics", "launch", "call-setup" };
static const char *const froms[] = { "misread", "host-f64", "1", "unrolled", "accuracy", "eager", "per-call" };
static const char *const tos[] = { "batch-major", "resident", "end", "fused", "none", "graph", "persistent" };

static TachExplain *
explain_new (guint n, guint rounds)
{
  g_autoptr(GError) error = NULL;
  TachExplain *explain = tach_explain_new_for_knobs (n, keys, froms, tos, NULL, rounds, 42, &error);

  g_assert_no_error (error);
  g_assert_nonnull (explain);
  return explain;
}

static void
costs_init (Costs *c, guint n)
{
  memset (c, 0, sizeof *c);
  c->n_knobs = n;
  c->base = 100;
  c->calls = g_array_new (FALSE, FALSE, sizeof (guint));
}

static void
costs_clear (Costs *c)
{
  g_clear_pointer (&c->calls, g_array_unref);
  g_clear_pointer (&c->rand, g_rand_free);
}

double
sum_shares (TachExplain *explain)
{
  double sum = 0;

  for (guint i = 0; i < tach_explain_get_n_knobs (explain); i++)
    sum += tach_explain_get_knob (explain, i)->share_ms;
  return sum;
}

/* Every knob's phases add up to its share; the shares to the gap. */
void
assert_additive (TachExplain *explain)
{
  double gap = tach_explain_get_cost (explain, TRUE)->step_ms
               - tach_explain_get_cost (explain, FALSE)->step_ms;

  g_assert_cmpfloat_with_epsilon (sum_shares (explain), gap, 1e-9 * MAX (1, fabs (gap)));
  for (guint i = 0; i < tach_explain_get_n_knobs (explain); i++)
    {
      const TachExplainKnob *knob = tach_explain_get_knob (explain, i);
      double phases = 0;

      for (int p = 0; p < TACH_EXPLAIN_N_PHASES; p++)
        phases += knob->phase_ms[p];
      g_assert_cmpfloat_with_epsilon (phases, knob->share_ms, 1e-9 * MAX (1, fabs (knob->share_ms)));
      g_assert_cmpfloat (knob->share_min_ms, <=, knob->share_ms + 1e-12);
      g_assert_cmpfloat (knob->share_max_ms, >=, knob->share_ms - 1e-12);
    }
}

static void
test_additive (void)
{
  g_autoptr(TachExplain) explain = explain_new (3, 3);
  g_autoptr(GError) error = NULL;
  Costs c;

  costs_init (&c, 3);
  c.own[0] = -44.0;
  c.own[1] = -7.5;
  c.own[2] = 2.25;
  g_assert_true (tach_explain_run_with (explain, &cost_funcs, &c, NULL, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (tach_explain_is_exact (explain));
  for (guint i = 0; i < 3; i++)
    {
      const TachExplainKnob *knob = tach_explain_get_knob (explain, i);

      g_assert_cmpfloat_with_epsilon (knob->share_ms, c.own[i], 1e-12);
      g_assert_cmpfloat_with_epsilon (knob->share_max_ms - knob->share_min_ms, 0, 1e-12);
    }
  g_assert_cmpfloat_with_epsilon (tach_explain_get_knob (explain, 0)->fraction,
                                  -44.0 / (-44.0 - 7.5 + 2.25), 1e-12);
  g_assert_true (tach_explain_get_knob (explain, 0)->changes_results);
  g_assert_false (tach_explain_get_knob (explain, 1)->changes_results);
  assert_additive (explain);
  /* A process of its own: no ranks' phases. */
  g_assert_false (tach_explain_has_rank_phases (explain));
  costs_clear (&c);
}

/* explain.csv's header before the ranks' phases were added. */
static const char old_header[] =
  "explain_id,date,workload,task,device,from,to,row,knob,from_value,to_value,changes_results,"
  "step_ms,share_ms,share_lo_ms,share_hi_ms,round_min_ms,round_max_ms,gap_fraction,"
  "gap_fraction_lo,gap_fraction_hi,speedup,speedup_lo,speedup_hi,verdict,feed_ms,compute_ms,"
  "sync_ms,host_ms,method,rounds,orderings_used,orderings_drawn,configurations,unrunnable,"
  "machine_busy";

static int
column (char **names, const char *name)
{
  for (int i = 0; names[i] != NULL; i++)
    if (g_str_equal (names[i], name))
      return i;
  g_assert_not_reached ();
}

/* Under mpirun a step also has exposed communication, packing and
 * imbalance: the shares split into them too, still adding up, and
 * explain.csv gains their columns at its end, widening a file written
 * before them (its rows keep their figures, the new columns empty). */
static void
test_rank_phases (void)
{
  g_autoptr(TachExplain) explain = explain_new (2, 3);
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("tach-explain-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "explain.csv", NULL);
  g_autofree char *old_row = g_strnfill (35, ',');
  g_autofree char *old = g_strdup_printf ("%s\r\nold-id%s\r\n", old_header, old_row);
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;
  g_auto(GStrv) names = NULL;
  const TachExplainCost *a, *b;
  guint rows = 0;
  Costs c;

  costs_init (&c, 2);
  c.own[0] = -30.0;
  c.own[1] = -2.0;
  c.ranked = TRUE;
  g_assert_true (tach_explain_run_with (explain, &cost_funcs, &c, NULL, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (tach_explain_has_rank_phases (explain));
  assert_additive (explain);
  a = tach_explain_get_cost (explain, FALSE);
  b = tach_explain_get_cost (explain, TRUE);
  for (const TachExplainCost *cost = a; cost != NULL; cost = cost == a ? b : NULL)
    {
      double sum = 0;

      for (int p = 0; p < TACH_EXPLAIN_N_PHASES; p++)
        sum += cost->phase_ms[p];
      g_assert_cmpfloat_with_epsilon (sum, cost->step_ms, 1e-9 * cost->step_ms);
    }
  g_assert_cmpfloat_with_epsilon (a->phase_ms[TACH_EXPLAIN_PHASE_COMM], 30.0, 1e-9);
  /* Knob 0's share is mostly the communication it hides. */
  g_assert_cmpfloat (tach_explain_get_knob (explain, 0)->phase_ms[TACH_EXPLAIN_PHASE_COMM], <,
                     -20.0);

  g_assert_true (g_file_set_contents (path, old, -1, NULL));
  g_assert_true (tach_explain_csv_append (explain, dir, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  lines = g_strsplit (text, "\r\n", -1);
  names = g_strsplit (lines[0], ",", -1);
  /* The old columns in place, the new ones after them. */
  g_assert_true (g_str_has_prefix (lines[0], old_header));
  g_assert_cmpint (column (names, "comm_ms"), ==, column (names, "machine_busy") + 1);
  g_assert_cmpint (column (names, "imbalance_ms"), ==, column (names, "comm_ms") + 2);
  /* Then those that Open Results reads an explanation back with. */
  g_assert_cmpint (column (names, "step_lo_ms"), ==, column (names, "imbalance_ms") + 1);
  g_assert_cmpint (column (names, "threads_fewer_share"), ==, g_strv_length (names) - 1);
  g_assert_true (g_str_has_prefix (lines[1], "old-id,"));
  {
    g_auto(GStrv) f = g_strsplit (lines[1], ",", -1);

    g_assert_cmpuint (g_strv_length (f), ==, g_strv_length (names));
  }
  g_assert_true (g_str_has_suffix (lines[1], ",,,"));
  for (guint l = 2; lines[l] != NULL && lines[l][0] != '\0'; l++)
    {
      g_auto(GStrv) f = g_strsplit (lines[l], ",", -1);
      const char *const phases[] = { "feed_ms", "compute_ms", "sync_ms", "host_ms", "comm_ms",
                                     "pack_ms", "imbalance_ms" };
      const char *total = g_str_equal (f[column (names, "row")], "knob") ? "share_ms" : "step_ms";
      double sum = 0;

      g_assert_cmpuint (g_strv_length (f), ==, g_strv_length (names));
      for (guint p = 0; p < G_N_ELEMENTS (phases); p++)
        {
          g_assert_cmpstr (f[column (names, phases[p])], !=, "");
          sum += g_ascii_strtod (f[column (names, phases[p])], NULL);
        }
      g_assert_cmpfloat_with_epsilon (sum, g_ascii_strtod (f[column (names, total)], NULL),
                                      1e-6 * MAX (1, fabs (sum)));
      rows++;
    }
  g_assert_cmpuint (rows, ==, 4);  /* A, two knobs, B */
  g_assert_cmpint (g_remove (path), ==, 0);
  g_assert_cmpint (g_rmdir (dir), ==, 0);
  costs_clear (&c);
}

static void
test_interaction (void)
{
  g_autoptr(TachExplain) explain = explain_new (2, 3);
  g_autoptr(GError) error = NULL;
  Costs c;

  /* Neither knob alone changes anything; together they cost 30 ms. */
  costs_init (&c, 2);
  c.pair[0][1] = 30.0;
  g_assert_true (tach_explain_run_with (explain, &cost_funcs, &c, NULL, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpfloat_with_epsilon (tach_explain_get_knob (explain, 0)->share_ms, 15.0, 1e-12);
  g_assert_cmpfloat_with_epsilon (tach_explain_get_knob (explain, 1)->share_ms, 15.0, 1e-12);
  g_assert_cmpfloat_with_epsilon (tach_explain_get_knob (explain, 0)->fraction, 0.5, 1e-12);
  assert_additive (explain);
  costs_clear (&c);
}

/* Shares add up to the difference for any costs, any number of knobs
 * (exact up to 5, sampled above), with noise that differs per round. */
static void
test_sum (void)
{
  for (guint n = 1; n <= 7; n++)
    {
      g_autoptr(TachExplain) explain = explain_new (n, 4);
      g_autoptr(GError) error = NULL;
      guint used = 0, drawn = 0;
      Costs c;

      costs_init (&c, n);
      c.random_table = TRUE;
      g_assert_true (tach_explain_run_with (explain, &cost_funcs, &c, NULL, NULL, &error));
      g_assert_no_error (error);
      g_assert_cmpint (tach_explain_is_exact (explain), ==, n <= TACH_EXPLAIN_MAX_EXACT);
      tach_explain_get_orderings (explain, &used, &drawn);
      g_assert_cmpuint (used, ==, drawn);
      if (n <= TACH_EXPLAIN_MAX_EXACT)
        {
          guint fact = 1;

          for (guint i = 2; i <= n; i++)
            fact *= i;
          g_assert_cmpuint (drawn, ==, fact);
          g_assert_cmpuint (tach_explain_get_n_configs (explain), ==, 1u << n);
        }
      else
        {
          g_assert_cmpuint (drawn, ==, TACH_EXPLAIN_SAMPLED_ORDERINGS);
          g_assert_cmpuint (tach_explain_get_n_configs (explain), <, 1u << n);
        }
      g_assert_cmpuint (c.calls->len, ==, 4 * tach_explain_get_n_configs (explain));
      assert_additive (explain);
      costs_clear (&c);
    }
}

/* Sampled orderings of additive costs still give each knob its own. */
static void
test_sampled_additive (void)
{
  g_autoptr(TachExplain) explain = explain_new (7, 3);
  g_autoptr(GError) error = NULL;
  Costs c;

  costs_init (&c, 7);
  for (guint i = 0; i < 7; i++)
    c.own[i] = (double) i * 3 - 5;
  g_assert_true (tach_explain_run_with (explain, &cost_funcs, &c, NULL, NULL, &error));
  g_assert_no_error (error);
  g_assert_false (tach_explain_is_exact (explain));
  for (guint i = 0; i < 7; i++)
    g_assert_cmpfloat_with_epsilon (tach_explain_get_knob (explain, i)->share_ms, c.own[i], 1e-9);
  costs_clear (&c);
}

/* Every round visits every configuration once, the rounds one after the
 * other, in orders that differ. */
static void
test_rounds (void)
{
  g_autoptr(TachExplain) explain = explain_new (3, 3);
  g_autoptr(GError) error = NULL;
  gboolean differ = FALSE;
  Costs c;

  costs_init (&c, 3);
  c.round_noise = 0.5;
  g_assert_true (tach_explain_run_with (explain, &cost_funcs, &c, NULL, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (c.calls->len, ==, 3 * 8);
  for (guint r = 0; r < 3; r++)
    {
      guint seen = 0;

      for (guint j = 0; j < 8; j++)
        {
          guint call = g_array_index (c.calls, guint, r * 8 + j);

          g_assert_cmpuint (call >> 16, ==, r);
          seen |= 1u << (call & 0xffff);
          if (r > 0 && call != g_array_index (c.calls, guint, j))
            differ = TRUE;
        }
      g_assert_cmpuint (seen, ==, 0xff);
    }
  g_assert_true (differ);
  /* Noise that differs per round shows as spread. */
  g_assert_cmpfloat (tach_explain_get_knob (explain, 2)->share_max_ms
                     - tach_explain_get_knob (explain, 2)->share_min_ms, >, 0.1);
  assert_additive (explain);
  costs_clear (&c);

  {
    g_autoptr(GError) few = NULL;
    TachExplain *none = tach_explain_new_for_knobs (2, keys, froms, tos, NULL, 2, 1, &few);

    g_assert_null (none);
    g_assert_error (few, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
    g_assert_nonnull (strstr (few->message, "--rounds"));
  }
}

/* Adaptive rounds on an injected clock (each measurement takes 0.5 s of
 * it): a quiet measurement stops at the minimum rounds with every interval
 * within the target; a noisy one adds rounds until the budget is spent
 * and names what stayed unresolved; a gap within noise gives no share a
 * fraction of it. */
static void
test_adaptive (void)
{
  {
    g_autoptr(TachExplain) explain = explain_new (3, 3);
    g_autoptr(GError) error = NULL;
    TachInterval gap, ratio;
    Costs c;

    costs_init (&c, 3);
    c.own[0] = -40;
    c.own[1] = -10;
    c.own[2] = 5;
    c.measure_s = 0.5;
    tach_explain_set_budget (explain, 60, 0.05);
    g_assert_true (tach_explain_run_with (explain, &cost_funcs, &c, NULL, NULL, &error));
    g_assert_no_error (error);
    g_assert_cmpuint (tach_explain_get_rounds (explain), ==, 3);
    g_assert_cmpuint (c.calls->len, ==, 3 * 8);
    g_assert_true (tach_explain_is_resolved (explain));
    g_assert_null (tach_explain_dup_unresolved (explain));
    g_assert_cmpint (tach_explain_get_gap (explain, &gap), ==, TACH_VERDICT_SIGNIFICANT);
    g_assert_cmpfloat_with_epsilon (gap.value, -45, 1e-9);
    g_assert_cmpint (tach_explain_get_speedup (explain, &ratio), ==, TACH_VERDICT_SIGNIFICANT);
    g_assert_cmpfloat_with_epsilon (ratio.value, 100.0 / 55.0, 1e-9);
    for (guint i = 0; i < 3; i++)
      g_assert_cmpint (tach_explain_get_knob (explain, i)->verdict, ==, TACH_VERDICT_SIGNIFICANT);
    /* Layout's share is 40 of the gap's 45 ms, and B is faster. */
    g_assert_cmpfloat_with_epsilon (tach_explain_get_knob (explain, 0)->fraction, 40.0 / 45.0, 1e-9);
    costs_clear (&c);
  }

  {
    g_autoptr(TachExplain) explain = explain_new (3, 3);
    g_autoptr(GError) error = NULL;
    g_autofree char *unresolved = NULL;
    TachInterval gap;
    Costs c;

    costs_init (&c, 3);
    c.own[0] = -1;
    c.own[1] = 0.5;
    c.rand = g_rand_new_with_seed (33);
    c.noise_ms = 20;
    c.measure_s = 0.5;
    tach_explain_set_budget (explain, 60, 0.05);
    g_assert_true (tach_explain_run_with (explain, &cost_funcs, &c, NULL, NULL, &error));
    g_assert_no_error (error);
    /* 4 s a round: rounds until the next would pass the 60 s that count
     * from the end of the 3 required rounds (12 s). */
    g_assert_cmpuint (tach_explain_get_rounds (explain), >, 3);
    g_assert_cmpuint (c.calls->len, ==, tach_explain_get_rounds (explain) * 8);
    g_assert_cmpfloat (c.clock_s, <=, 12 + 60);
    g_assert_cmpfloat (c.clock_s + 4, >, 12 + 60);
    g_assert_false (tach_explain_is_resolved (explain));
    unresolved = tach_explain_dup_unresolved (explain);
    g_assert_nonnull (unresolved);
    g_assert_nonnull (strstr (unresolved, "Unresolved after"));
    /* What ended the rounds, and what would take them further. */
    g_assert_nonnull (strstr (unresolved, "The budget of 60 s for rounds after the 3 given "
                                          "ended them, not the target"));
    g_assert_nonnull (strstr (unresolved, "--budget"));
    if (tach_explain_get_gap (explain, &gap) != TACH_VERDICT_SIGNIFICANT)
      {
        /* The gap is within noise: it says so, and by how much its interval
         * must shrink; no share is a fraction, in numbers or in words. */
        g_assert_nonnull (strstr (unresolved, "The gap is not resolved"));
        g_assert_nonnull (strstr (unresolved, "times narrower"));
        for (guint i = 0; i < 3; i++)
          {
            g_autofree char *sentence = tach_explain_dup_sentence (explain, i);

            g_assert_true (isnan (tach_explain_get_knob (explain, i)->fraction));
            g_assert_null (strstr (sentence, "of the gap"));
          }
      }
    else
      g_assert_not_reached ();
    costs_clear (&c);
  }

  /* Without a budget: the rounds given, nothing asked, nothing unresolved
   * but a gap within noise. */
  {
    g_autoptr(TachExplain) explain = explain_new (2, 4);
    g_autoptr(GError) error = NULL;
    Costs c;

    costs_init (&c, 2);
    c.rand = g_rand_new_with_seed (7);
    c.noise_ms = 20;
    g_assert_true (tach_explain_run_with (explain, &cost_funcs, &c, NULL, NULL, &error));
    g_assert_cmpuint (tach_explain_get_rounds (explain), ==, 4);
    g_assert_true (tach_explain_is_resolved (explain));
    costs_clear (&c);
  }
}

/* A configuration that cannot run: orderings through it are left out, the
 * rest still add up; with none left, the message names each failure. */
static void
test_unrunnable (void)
{
  Costs c;

  for (int at_run_time = 0; at_run_time < 2; at_run_time++)
    {
      g_autoptr(TachExplain) explain = explain_new (2, 3);
      g_autoptr(GError) error = NULL;
      GArray *failures;
      guint used = 0, drawn = 0;

      costs_init (&c, 2);
      c.own[0] = -10;
      c.own[1] = -4;
      c.pair[0][1] = 2;
      /* "layout=batch-major" alone (mask 1) cannot run. */
      if (at_run_time)
        c.bad_measure[c.n_bad_measure++] = 1;
      else
        c.bad_check[c.n_bad_check++] = 1;
      g_assert_true (tach_explain_run_with (explain, &cost_funcs, &c, NULL, NULL, &error));
      g_assert_no_error (error);
      tach_explain_get_orderings (explain, &used, &drawn);
      g_assert_cmpuint (used, ==, 1);
      g_assert_cmpuint (drawn, ==, 2);
      /* The one ordering left flips feed first, then layout. */
      g_assert_cmpfloat_with_epsilon (tach_explain_get_knob (explain, 1)->share_ms, -4, 1e-12);
      g_assert_cmpfloat_with_epsilon (tach_explain_get_knob (explain, 0)->share_ms, -8, 1e-12);
      assert_additive (explain);
      failures = tach_explain_get_failures (explain);
      g_assert_cmpuint (failures->len, ==, 1);
      g_assert_cmpstr (g_array_index (failures, TachExplainFailure, 0).name, ==,
                       "layout=batch-major");
      /* A configuration that failed is not tried again. */
      if (at_run_time)
        {
          guint tries = 0;

          for (guint i = 0; i < c.calls->len; i++)
            tries += (g_array_index (c.calls, guint, i) & 0xffff) == 1;
          g_assert_cmpuint (tries, ==, 1);
        }
      costs_clear (&c);
    }

  {
    g_autoptr(TachExplain) explain = explain_new (2, 3);
    g_autoptr(GError) error = NULL;

    costs_init (&c, 2);
    c.bad_check[c.n_bad_check++] = 1;
    c.bad_measure[c.n_bad_measure++] = 2;
    g_assert_false (tach_explain_run_with (explain, &cost_funcs, &c, NULL, NULL, &error));
    g_assert_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED);
    g_assert_nonnull (strstr (error->message, "layout=batch-major (refused by the device)"));
    g_assert_nonnull (strstr (error->message, "feed=resident (out of memory at run time)"));
    costs_clear (&c);
  }

  {
    g_autoptr(TachExplain) explain = explain_new (2, 3);
    g_autoptr(GError) error = NULL;

    /* B itself cannot run: nothing is measured. */
    costs_init (&c, 2);
    c.bad_check[c.n_bad_check++] = 3;
    g_assert_false (tach_explain_run_with (explain, &cost_funcs, &c, NULL, NULL, &error));
    g_assert_error (error, TACH_ERROR, TACH_ERROR_UNSUPPORTED);
    g_assert_nonnull (strstr (error->message, "B cannot run"));
    g_assert_nonnull (strstr (error->message, "refused by the device"));
    g_assert_cmpuint (c.calls->len, ==, 0);
    costs_clear (&c);
  }

  {
    g_autoptr(TachExplain) explain = explain_new (7, 3);
    g_autoptr(GError) error = NULL;
    guint used = 0, drawn = 0;

    /* Sampled orderings avoid what the check refuses. */
    costs_init (&c, 7);
    c.random_table = TRUE;
    c.bad_check[c.n_bad_check++] = 1;
    c.bad_check[c.n_bad_check++] = 1 << 6;
    g_assert_true (tach_explain_run_with (explain, &cost_funcs, &c, NULL, NULL, &error));
    g_assert_no_error (error);
    tach_explain_get_orderings (explain, &used, &drawn);
    g_assert_cmpuint (used, ==, drawn);
    for (guint i = 0; i < c.calls->len; i++)
      {
        guint mask = g_array_index (c.calls, guint, i) & 0xffff;

        g_assert_cmpuint (mask, !=, 1);
        g_assert_cmpuint (mask, !=, 1 << 6);
      }
    assert_additive (explain);
    costs_clear (&c);
  }
}

static void
test_cancel (void)
{
  g_autoptr(TachExplain) explain = explain_new (3, 3);
  g_autoptr(GError) error = NULL;
  Costs c;

  costs_init (&c, 3);
  c.cancel_after = 5;
  g_assert_false (tach_explain_run_with (explain, &cost_funcs, &c, NULL, NULL, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_CANCELLED);
  g_assert_cmpuint (c.calls->len, ==, 5);
  /* In the first round: nothing whole to keep. */
  g_assert_false (tach_explain_is_partial (explain));
  costs_clear (&c);

  /* Stopped in the third round (8 configurations a round): the two whole
   * rounds before it stand, and their shares still add up to the gap. */
  g_clear_error (&error);
  costs_init (&c, 3);
  c.cancel_after = 2 * 8 + 3;
  g_assert_false (tach_explain_run_with (explain, &cost_funcs, &c, NULL, NULL, &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_CANCELLED);
  g_assert_true (tach_explain_is_partial (explain));
  g_assert_cmpuint (tach_explain_get_rounds (explain), ==, 2);
  assert_additive (explain);
  costs_clear (&c);
}

/* Real runs under real load (issue 33): a child process spins on one of
 * the processors while tf1-feed-dict -> tuned is explained on a small
 * bilstm.  The layout misread (64 recurrent steps of batch 10 where
 * batch-major runs 10 of batch 64) is slower on any machine, so if its
 * share comes out significant it must be negative (B saves); what the
 * load swallows must come out within noise, never as a finding of the
 * wrong sign.  The other two knobs have no sign to hold them to on the
 * CPU: sync's effect is about 0 (a 95% interval calls it significant
 * either way 5% of the time by construction), and the resident feed was
 * measured slightly slower than host-f64 here (three interleaved pairs at
 * one thread: 9.2-12.3 ms a step against 8.9-11.9).  One thread: at two, the
 * spinner preempts one of the threads that share each product, the other
 * waits for it, and batch-major's larger products lose more than the
 * misread's small single-threaded ones (measured here: batch-major 131 ms
 * a step against the misread's 88 under load, 13-16 against 21-26 at one
 * thread), a real reversal, not noise (issue 22).  No timing is
 * asserted. */
static void
test_real_busy (void)
{
  TachConfig a, b;
  g_autoptr(GError) error = NULL;
  g_autoptr(TachExplain) explain = NULL;
  g_autofree char *unresolved = NULL;
  TachInterval gap;
  pid_t spinner;
  guint n_spinners;

  test_config_pair (TACH_WORKLOAD_BILSTM,
                    &a, "device=cpu preset=tf1-feed-dict batch=64 steps=6 warmup=1 threads=1",
                    &b, "device=cpu preset=tuned batch=64 steps=6 warmup=1 threads=1");
  explain = tach_explain_new (&a, &b, 3, &error);
  g_assert_no_error (error);

  n_spinners = test_spinners_start (&spinner, 1);
  g_assert_true (tach_explain_run (explain, NULL, NULL, NULL, &error));
  test_spinners_stop (&spinner, n_spinners);
  g_assert_no_error (error);

  for (guint i = 0; i < tach_explain_get_n_knobs (explain); i++)
    {
      const TachExplainKnob *knob = tach_explain_get_knob (explain, i);

      g_test_message ("%s: %+.3f ms (%+.3f to %+.3f), %s", knob->key, knob->share_ms,
                      knob->share_ci.lo, knob->share_ci.hi, tach_verdict_to_string (knob->verdict));
      if (knob->verdict == TACH_VERDICT_SIGNIFICANT && g_str_equal (knob->key, "layout"))
        g_assert_cmpfloat (knob->share_ci.hi, <, 0);
    }
  /* A gap within noise is said to be unresolved, and has no fractions. */
  if (tach_explain_get_gap (explain, &gap) != TACH_VERDICT_SIGNIFICANT)
    {
      unresolved = tach_explain_dup_unresolved (explain);
      g_assert_nonnull (unresolved);
      for (guint i = 0; i < tach_explain_get_n_knobs (explain); i++)
        g_assert_true (isnan (tach_explain_get_knob (explain, i)->fraction));
    }
  /* The spinner's share of the machine was seen. */
  g_test_message ("machine busy: %.2f", tach_explain_get_machine_busy (explain));
  g_assert_cmpfloat (tach_explain_get_machine_busy (explain), >, 0);
  /* The verdict says what the busiest run saw, in words to act on. */
  {
    g_autofree char *verdict = tach_explain_dup_verdict (explain);
    double worst = 0;

    for (guint i = 0; i < tach_explain_get_runs (explain)->len; i++)
      {
        TachSummary s;

        tach_run_get_summary (tach_explain_get_runs (explain)->pdata[i], &s);
        if (isfinite (s.machine_busy))
          worst = MAX (worst, s.machine_busy);
      }
    g_test_message ("%s", verdict);
    if (worst >= TACH_SUMMARY_BUSY_SHARE)
      g_assert_nonnull (strstr (verdict, "rerun idle to compare"));
  }
  tach_config_clear (&a);
  tach_config_clear (&b);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/explain/additive", test_additive);
  g_test_add_func ("/engine/explain/rank-phases", test_rank_phases);
  g_test_add_func ("/engine/explain/interaction", test_interaction);
  g_test_add_func ("/engine/explain/sum", test_sum);
  g_test_add_func ("/engine/explain/sampled-additive", test_sampled_additive);
  g_test_add_func ("/engine/explain/rounds", test_rounds);
  g_test_add_func ("/engine/explain/adaptive", test_adaptive);
  g_test_add_func ("/engine/explain/real-busy", test_real_busy);
  g_test_add_func ("/engine/explain/unrunnable", test_unrunnable);
  g_test_add_func ("/engine/explain/cancel", test_cancel);
  test_explain_real_add ();
  test_explain_so_far_add ();
  test_explain_verdict_add ();
  test_explain_load_add ();
  return g_test_run ();
}
