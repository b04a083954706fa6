/* test-sweep.c: the engine's sweep (tach-sweep.h), which tach-cli's sweep
 * and the GUI's Scaling view drive.
 *
 *   /engine/sweep/axis        --vary's lists and ranges, and its errors
 *   /engine/sweep/axis-knob   a knob's values read without a "KNOB=" string
 *   /engine/sweep/order       the interleaved order visits each point once
 *   /engine/sweep/grid        every point made and checked before any runs:
 *                             a point that does not fit, a bad preset
 *   /engine/sweep/loop        the loop visits the points in that order,
 *                             skips those with a problem, runs rounds, stops
 *   /engine/sweep/run         the default run: a real tiny run per point,
 *                             marked with the knob varied
 *   /engine/sweep/shuffle     shuffled rounds: every point once a round, in
 *                             orders that differ
 *   /engine/sweep/verdicts    when to stop, on injected rates and clock: a
 *                             quiet comparison at the minimum rounds, a noisy
 *                             one at the budget, unresolved
 *   /engine/sweep/rounds-text a grid's comparisons, the rounds that fit a
 *                             budget at an injected pace, the "round 3 of up
 *                             to N" line and the unresolved lines the window
 *                             and tach-cli show, a round's order handed out
 */
#include <math.h>
#include <string.h>

#include "tach-sweep.h"
#include "test-run-util.h"

static void
assert_axis (const TachConfig *base, const char *spec, const char *want, gboolean geometric)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TachSweepAxis) axis = tach_sweep_axis_parse (base, spec, &error);
  g_autofree char *got = NULL;

  g_assert_no_error (error);
  got = g_strjoinv (" ", axis->values);
  g_assert_cmpstr (got, ==, want);
  g_assert_cmpint (axis->geometric, ==, geometric);
}

static void
test_sweep_axis (void)
{
  static const struct { const char *spec, *says; } bad[] = {
    { "batch", "KNOB=" }, { "=1,2", "KNOB=" }, { "batch=", "KNOB=" },
    { "nosuch=1,2", "no knob 'nosuch'" }, { "workload=bilstm,cnn", "--presets" },
    { "preset=tuned", "--presets" }, { "batch=64..16x2", "A <= B" },
    { "batch=64..256x1", "factor F above 1" }, { "batch=0..8x2", "cannot start at 0" },
    { "batch=1..8", "A..BxF" }, { "rnn=fused..unrolledx2", "whole-number" },
    { "batch=8,,16", "empty value" }, { "batch=8,16,8", "'8' is listed twice" },
    { "batch=8,x", "--batch" }, { "rnn=fused,sideways", "--rnn" },
    { "batch=1..100000+1", "more than 256" }, { "filters=16,32", "--filters" },
  };
  TachConfig c;

  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  assert_axis (&c, "batch=64..1024x2", "64 128 256 512 1024", TRUE);
  assert_axis (&c, "batch=64..1000x2", "64 128 256 512", TRUE);
  assert_axis (&c, "seq-len=1..10x1.5", "1 2 3 5 8", TRUE);
  assert_axis (&c, "layers=1..4+1", "1 2 3 4", FALSE);
  assert_axis (&c, "hidden=40, 64,128", "40 64 128", FALSE);
  assert_axis (&c, "rnn=all", "fused unrolled", FALSE);
  assert_axis (&c, "sync=1,10,end", "1 10 end", FALSE);
  tach_config_clear (&c);
  tach_config_init (&c, TACH_WORKLOAD_CNN);
  assert_axis (&c, "filters=16,32;32,64", "16,32 32,64", FALSE);
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(TachSweepAxis) axis = tach_sweep_axis_parse (&c, bad[i].spec, &error);

      g_assert_null (axis);
      g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
      if (strstr (error->message, bad[i].says) == NULL)
        g_error ("--vary %s: '%s' does not say '%s'", bad[i].spec, error->message, bad[i].says);
    }
  tach_config_clear (&c);
}

static void
test_sweep_order (void)
{
  for (guint np = 1; np <= 3; np++)
    for (guint nv = 1; nv <= 4; nv++)
      {
        g_autofree guint *seen = g_new0 (guint, np * nv);
        guint prev_v = 0;

        for (guint k = 0; k < np * nv; k++)
          {
            guint p, v;

            tach_sweep_point (np, nv, k, &p, &v);
            g_assert_cmpuint (p, <, np);
            g_assert_cmpuint (v, <, nv);
            g_assert_cmpuint (v, >=, prev_v);
            prev_v = v;
            seen[v * np + p]++;
            /* Odd values run the presets backwards, so no preset always
             * comes first. */
            g_assert_cmpuint (p, ==, v % 2 == 0 ? k % np : np - 1 - k % np);
          }
        for (guint i = 0; i < np * nv; i++)
          g_assert_cmpuint (seen[i], ==, 1);
      }
}


/* The Scaling view's path: the knob chosen, the values typed. */
static void
test_sweep_axis_knob (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TachSweepAxis) axis = NULL;
  g_autoptr(TachSweepAxis) copy = NULL;
  TachConfig c;

  tach_config_init (&c, TACH_WORKLOAD_BILSTM);
  axis = tach_sweep_axis_new (&c, tach_knob (TACH_KNOB_BATCH), "4..16x2", &error);
  g_assert_no_error (error);
  g_assert_true (axis->knob == tach_knob (TACH_KNOB_BATCH));
  g_assert_cmpuint (g_strv_length (axis->values), ==, 3);
  g_assert_cmpstr (axis->values[2], ==, "16");
  g_assert_true (axis->geometric);
  copy = tach_sweep_axis_copy (axis);
  g_assert_true (copy->values != axis->values);
  g_assert_cmpstr (copy->values[1], ==, "8");

  /* Errors name the knob and the values as --vary would take them. */
  g_assert_null (tach_sweep_axis_new (&c, tach_knob (TACH_KNOB_BATCH), "64..8x2", &error));
  g_assert_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG);
  g_assert_nonnull (strstr (error->message, "'batch=64..8x2'"));
  g_clear_error (&error);
  g_assert_null (tach_sweep_axis_new (&c, tach_knob (TACH_KNOB_BATCH), "", &error));
  g_assert_nonnull (strstr (error->message, "KNOB="));
  g_clear_error (&error);
  g_assert_null (tach_sweep_axis_new (&c, tach_knob (TACH_KNOB_WORKLOAD), "cnn", &error));
  g_assert_nonnull (strstr (error->message, "--presets"));
  g_clear_error (&error);
  tach_config_clear (&c);
}

static TachSweepAxis *
axis_of (const TachConfig *base, const char *spec)
{
  g_autoptr(GError) error = NULL;
  TachSweepAxis *axis = tach_sweep_axis_parse (base, spec, &error);

  g_assert_no_error (error);
  return axis;
}

static void
test_sweep_grid (void)
{
  static const char *const presets[] = { "tf1-constant", "tuned", NULL };
  static const char *const with_bad[] = { "tuned", "nosuch", NULL };
  g_autoptr(TachSweepAxis) axis = NULL;
  g_autoptr(TachSweep) sweep = NULL;
  g_autoptr(TachSweep) unchecked = NULL;
  g_autoptr(TachSweep) bad = NULL;
  g_autoptr(TachSweep) alone = NULL;
  TachConfig base;

  test_tiny_config (&base, 4);
  axis = axis_of (&base, "hidden=4,60000");
  sweep = tach_sweep_new (&base, presets, axis, NULL, NULL, TRUE);
  g_assert_cmpuint (tach_sweep_get_n_presets (sweep), ==, 2);
  g_assert_cmpuint (tach_sweep_get_n_values (sweep), ==, 2);
  g_assert_cmpuint (tach_sweep_get_n_points (sweep), ==, 4);
  g_assert_cmpstr (tach_sweep_get_preset (sweep, 1), ==, "tuned");
  g_assert_cmpstr (tach_sweep_get_value (sweep, 1), ==, "60000");
  g_assert_cmpstr (tach_sweep_get_axis (sweep)->knob->name, ==, "hidden");
  /* Points are numbered value * presets + preset; each is its preset over
   * the base, with the value set last. */
  for (guint i = 0; i < 4; i++)
    {
      const TachConfig *config = tach_sweep_get_config (sweep, i);

      g_assert_nonnull (config);
      g_assert_cmpstr (config->preset, ==, presets[i % 2]);
      g_assert_cmpuint (config->hidden, ==, i < 2 ? 4 : 60000);
      g_assert_cmpuint (config->batch, ==, 8);
    }
  /* hidden 60000 does not fit in memory: both of its points say so, up
   * front, naming the knob. */
  g_assert_cmpuint (tach_sweep_get_n_problems (sweep), ==, 2);
  g_assert_null (tach_sweep_get_problem (sweep, 0));
  g_assert_null (tach_sweep_get_problem (sweep, 1));
  g_assert_nonnull (strstr (tach_sweep_get_problem (sweep, 2), "--hidden 60000"));
  g_assert_nonnull (strstr (tach_sweep_get_problem (sweep, 3), "memory"));

  /* Not validated: only what makes a configuration is checked. */
  unchecked = tach_sweep_new (&base, presets, axis, NULL, NULL, FALSE);
  g_assert_cmpuint (tach_sweep_get_n_problems (unchecked), ==, 0);

  /* A preset that does not exist: every point of it. */
  bad = tach_sweep_new (&base, with_bad, axis, NULL, NULL, FALSE);
  g_assert_cmpuint (tach_sweep_get_n_problems (bad), ==, 2);
  g_assert_nonnull (strstr (tach_sweep_get_problem (bad, 1), "nosuch"));
  g_assert_nonnull (strstr (tach_sweep_get_problem (bad, 3), "nosuch"));

  /* Presets alone: one point per preset, nothing varied. */
  alone = tach_sweep_new (&base, presets, NULL, NULL, NULL, TRUE);
  g_assert_cmpuint (tach_sweep_get_n_points (alone), ==, 2);
  g_assert_null (tach_sweep_get_axis (alone));
  g_assert_null (tach_sweep_get_value (alone, 0));
  tach_config_clear (&base);
}

typedef struct {
  GString      *visits;     /* "r.p.v:outcome/ordinal " per point */
  GCancellable *cancellable;
  guint         stop_after; /* cancel after this many runs (0: never) */
  guint         runs;
  guint         more;       /* rounds round_done asks for */
} Loop;

static TachRun *
loop_run (TachSweep *sweep, const TachSweepPoint *point, const TachConfig *config,
          gpointer user_data, GError **error)
{
  Loop *loop = user_data;

  g_assert_true (config == tach_sweep_get_config (sweep, point->index));
  if (++loop->runs == loop->stop_after)
    g_cancellable_cancel (loop->cancellable);
  g_set_error_literal (error, TACH_ERROR, TACH_ERROR_IO, "not run in this test");
  return NULL;
}

static void
loop_done (TachSweep *sweep, const TachSweepPoint *point, TachSweepOutcome outcome,
           TachRun *run, const GError *error, gpointer user_data)
{
  Loop *loop = user_data;
  static const char *const says[] = { "ran", "bad", "stop" };

  g_assert_cmpuint (point->index, ==, point->value * tach_sweep_get_n_presets (sweep) + point->preset);
  g_assert_null (run);
  g_assert_true ((outcome == TACH_SWEEP_RAN) == (error != NULL));
  g_string_append_printf (loop->visits, "%u.%u.%u:%s/%u ", point->round, point->preset,
                          point->value, says[outcome], point->ordinal);
}

static gboolean
loop_round_done (TachSweep *sweep, guint round, gpointer user_data)
{
  Loop *loop = user_data;

  (void) sweep;
  return round + 1 < loop->more;
}

static void
test_sweep_loop (void)
{
  static const char *const presets[] = { "tf1-constant", "tuned", NULL };
  TachSweepFuncs funcs = { loop_run, loop_done, NULL };
  g_autoptr(TachSweepAxis) axis = NULL;
  TachConfig base;

  test_tiny_config (&base, 4);
  axis = axis_of (&base, "hidden=4,60000,8");

  /* One round: values in turn, presets reversed at odd values; the two
   * points of 60000 are skipped, the others counted 1..4. */
  {
    g_autoptr(TachSweep) sweep = tach_sweep_new (&base, presets, axis, NULL, NULL, TRUE);
    g_autoptr(GError) error = NULL;
    Loop loop = { g_string_new (NULL), g_cancellable_new (), 0, 0, 0 };

    g_assert_true (tach_sweep_run (sweep, &funcs, &loop, loop.cancellable, &error));
    g_assert_no_error (error);
    g_assert_cmpstr (loop.visits->str, ==,
                     "0.0.0:ran/1 0.1.0:ran/2 0.1.1:bad/0 0.0.1:bad/0 0.0.2:ran/3 0.1.2:ran/4 ");
    g_assert_cmpuint (tach_sweep_get_rounds_run (sweep), ==, 1);
    g_assert_null (tach_sweep_get_run (sweep, 0, 0));
    g_string_free (loop.visits, TRUE);
    g_object_unref (loop.cancellable);
  }

  /* Rounds: the grid again in the same order, each round counted anew. */
  {
    g_autoptr(TachSweep) sweep = tach_sweep_new (&base, presets, axis, NULL, NULL, TRUE);
    Loop loop = { g_string_new (NULL), NULL, 0, 0, 0 };
    g_autofree char *once = NULL;

    tach_sweep_set_rounds (sweep, 2);
    g_assert_true (tach_sweep_run (sweep, &funcs, &loop, NULL, NULL));
    g_assert_cmpuint (tach_sweep_get_rounds_run (sweep), ==, 2);
    g_assert_cmpuint (loop.runs, ==, 8);
    g_assert_true (g_str_has_suffix (loop.visits->str,
                                     "1.0.0:ran/1 1.1.0:ran/2 1.1.1:bad/0 1.0.1:bad/0 "
                                     "1.0.2:ran/3 1.1.2:ran/4 "));
    g_string_free (loop.visits, TRUE);
  }

  /* round_done decides how many rounds run (adaptive rounds slot in here). */
  {
    g_autoptr(TachSweep) sweep = tach_sweep_new (&base, presets, axis, NULL, NULL, TRUE);
    TachSweepFuncs adaptive = { loop_run, loop_done, loop_round_done };
    Loop loop = { g_string_new (NULL), NULL, 0, 0, 3 };

    g_assert_true (tach_sweep_run (sweep, &adaptive, &loop, NULL, NULL));
    g_assert_cmpuint (tach_sweep_get_rounds_run (sweep), ==, 3);
    g_assert_cmpuint (loop.runs, ==, 12);
    g_string_free (loop.visits, TRUE);
  }

  /* Stopped during the second run: every point left is reported stopped,
   * the points with a problem too, and no round follows. */
  {
    g_autoptr(TachSweep) sweep = tach_sweep_new (&base, presets, axis, NULL, NULL, TRUE);
    g_autoptr(GError) error = NULL;
    Loop loop = { g_string_new (NULL), g_cancellable_new (), 2, 0, 0 };

    tach_sweep_set_rounds (sweep, 2);
    g_assert_false (tach_sweep_run (sweep, &funcs, &loop, loop.cancellable, &error));
    g_assert_error (error, TACH_ERROR, TACH_ERROR_CANCELLED);
    g_assert_cmpstr (loop.visits->str, ==,
                     "0.0.0:ran/1 0.1.0:ran/2 0.1.1:stop/0 0.0.1:stop/0 0.0.2:stop/0 "
                     "0.1.2:stop/0 ");
    g_assert_cmpuint (tach_sweep_get_rounds_run (sweep), ==, 1);
    g_string_free (loop.visits, TRUE);
    g_object_unref (loop.cancellable);
  }
  tach_config_clear (&base);
}

/* The default run: each point a real run to its end, marked varied. */
static void
test_sweep_run (void)
{
  static const char *const presets[] = { "tf1-constant", "tuned", NULL };
  g_autoptr(TachSweepAxis) axis = NULL;
  g_autoptr(TachSweep) sweep = NULL;
  g_autoptr(GError) error = NULL;
  TachConfig base;

  test_tiny_config (&base, 4);
  axis = axis_of (&base, "hidden=4,6");
  sweep = tach_sweep_new (&base, presets, axis, NULL, NULL, TRUE);
  g_assert_true (tach_sweep_run (sweep, NULL, NULL, NULL, &error));
  g_assert_no_error (error);
  for (guint i = 0; i < tach_sweep_get_n_points (sweep); i++)
    {
      TachRun *run = tach_sweep_get_run (sweep, i, 0);

      g_assert_nonnull (run);
      g_assert_cmpint (tach_run_get_state (run), ==, TACH_RUN_STATE_FINISHED);
      g_assert_cmpstr (tach_run_get_varied (run), ==, "hidden");
      g_assert_cmpuint (tach_run_get_config (run)->hidden, ==, i < 2 ? 4 : 6);
    }
  tach_config_clear (&base);
}

static TachRun *
order_run (TachSweep *sweep, const TachSweepPoint *point, const TachConfig *config,
           gpointer user_data, GError **error)
{
  (void) sweep, (void) config;
  g_array_append_val ((GArray *) user_data, point->index);
  g_set_error_literal (error, TACH_ERROR, TACH_ERROR_IO, "not run in this test");
  return NULL;
}

static void
test_sweep_shuffle (void)
{
  static const char *const presets[] = { "tf1-feed-dict", "tf1-constant", "keras-fit", "tuned",
                                         NULL };
  TachSweepFuncs funcs = { order_run, NULL, NULL };
  g_autoptr(TachSweep) sweep = NULL;
  g_autoptr(GArray) order = g_array_new (FALSE, FALSE, sizeof (guint));
  gboolean differ = FALSE;
  TachConfig base;

  test_tiny_config (&base, 2);
  sweep = tach_sweep_new (&base, presets, NULL, NULL, NULL, FALSE);
  tach_sweep_set_shuffle (sweep, 33);
  tach_sweep_set_rounds (sweep, 3);
  g_assert_true (tach_sweep_run (sweep, &funcs, order, NULL, NULL));
  g_assert_cmpuint (order->len, ==, 12);
  for (guint r = 0; r < 3; r++)
    {
      guint seen = 0;

      for (guint j = 0; j < 4; j++)
        {
          guint i = g_array_index (order, guint, r * 4 + j);

          seen |= 1u << i;
          differ |= i != j;
        }
      g_assert_cmpuint (seen, ==, 0xf);
    }
  /* (3 rounds of 4 in tach_sweep_point's order 0 1 2 3 each time, from a
   * fixed seed: not the case.) */
  g_assert_true (differ);
  tach_config_clear (&base);
}

static double
normal (GRand *rand)
{
  double u = 1.0 - g_rand_double (rand), v = g_rand_double (rand);

  return sqrt (-2 * log (u)) * cos (2 * G_PI * v);
}

/* Rounds of 3 points (rates 100, 150, 200) under a load shared by the
 * round, each point's own noise @noise; each point takes 2 s of the
 * injected clock.  Returns the rounds run. */
static guint
verdict_rounds (TachSweepRounds *rounds, double noise, guint32 seed, double *clock)
{
  static const double rate[] = { 100, 150, 200 };
  g_autoptr(GRand) rand = g_rand_new_with_seed (seed);
  guint round = 0;

  *clock = 0;
  do
    {
      double load = exp (0.3 * normal (rand));

      for (guint i = 0; i < 3; i++)
        {
          tach_sweep_rounds_record (rounds, i, round, rate[i] * load * exp (noise * normal (rand)));
          *clock += 2;
        }
      round++;
    }
  while (tach_sweep_rounds_want_more (rounds, round, *clock));
  return round;
}

static void
test_sweep_verdicts (void)
{
  TachInterval ratio;
  double clock;

  /* Quiet: the rounds' shared load cancels in each round's ratio, known
   * exactly after the minimum 3 rounds. */
  {
    g_autoptr(TachSweepRounds) rounds = tach_sweep_rounds_new (3, 3, 60, 0.05);

    tach_sweep_rounds_add_comparison (rounds, 0, 1);
    tach_sweep_rounds_add_comparison (rounds, 0, 2);
    g_assert_cmpuint (verdict_rounds (rounds, 0, 1, &clock), ==, 3);
    g_assert_cmpint (tach_sweep_rounds_get_ratio (rounds, 0, &ratio), ==, TACH_VERDICT_SIGNIFICANT);
    g_assert_cmpfloat_with_epsilon (ratio.value, 1.5, 1e-9);
    g_assert_true (tach_sweep_rounds_is_resolved (rounds, 1));
  }
  /* Noisy: rounds until the next (6 s) would pass the 60 s budget, which
   * counts from the end of the 3 required rounds (18 s; issue 42: from the
   * start, the required rounds spent it), and the comparison stays
   * unresolved. */
  {
    g_autoptr(TachSweepRounds) rounds = tach_sweep_rounds_new (3, 3, 60, 0.05);
    guint n;

    tach_sweep_rounds_add_comparison (rounds, 0, 1);
    n = verdict_rounds (rounds, 0.4, 2, &clock);
    g_assert_cmpuint (n, >, 3);
    g_assert_cmpfloat (clock, <=, 18 + 60);
    g_assert_cmpfloat (clock + 6, >, 18 + 60);
    g_assert_false (tach_sweep_rounds_is_resolved (rounds, 0));
    g_assert_true (isfinite (tach_sweep_rounds_get_rate (rounds, 1)));
  }
  /* No budget: the rounds given, noisy or not; nothing asked is unresolved. */
  {
    g_autoptr(TachSweepRounds) rounds = tach_sweep_rounds_new (3, 2, 0, 0.05);

    tach_sweep_rounds_add_comparison (rounds, 0, 1);
    g_assert_cmpuint (verdict_rounds (rounds, 0.4, 3, &clock), ==, 2);
    g_assert_true (tach_sweep_rounds_is_resolved (rounds, 0));
  }
  /* A point never measured: no ratio, no verdict. */
  {
    g_autoptr(TachSweepRounds) rounds = tach_sweep_rounds_new (3, 1, 0, 0.05);

    tach_sweep_rounds_add_comparison (rounds, 0, 2);
    tach_sweep_rounds_record (rounds, 0, 0, 100);
    tach_sweep_rounds_record (rounds, 2, 0, NAN);
    g_assert_cmpint (tach_sweep_rounds_get_ratio (rounds, 0, &ratio), ==, TACH_VERDICT_UNKNOWN);
    g_assert_true (isnan (tach_sweep_rounds_get_rate (rounds, 2)));
  }
}

static void
test_sweep_rounds_text (void)
{
  static const char *const presets[] = { "tf1-feed-dict", "tuned", NULL };
  g_autoptr(TachSweep) sweep = NULL;
  g_autoptr(TachSweepRounds) rounds = NULL;
  g_autoptr(GRand) rand = g_rand_new_with_seed (5);
  g_autofree char *line = NULL;
  g_autofree char *unresolved = NULL;
  guint order[2];
  TachConfig base;

  /* The pace is the caller's (an injected clock): 2 rounds in 12 s leave
   * room for 10 more than the required 3 in 60 s; none measured, or no
   * budget, the minimum. */
  g_assert_cmpuint (tach_rounds_fit (3, 60, 2, 12), ==, 13);
  g_assert_cmpuint (tach_rounds_fit (3, 60, 0, 0), ==, 3);
  g_assert_cmpuint (tach_rounds_fit (3, 0, 5, 100), ==, 3);
  g_assert_cmpuint (tach_rounds_fit (3, 1e6, 1, 1), ==, TACH_SWEEP_MAX_ROUNDS);
  line = tach_rounds_dup_progress (1, 3, 60, 0.05, 0, 0, NAN);
  g_assert_cmpstr (line, ==, "round 1 of at least 3");
  g_clear_pointer (&line, g_free);
  line = tach_rounds_dup_progress (3, 3, 60, 0.05, 2, 12, 0.062);
  g_assert_cmpstr (line, ==, "round 3 of up to 13, speed-ups known to ±6.2% (target ±5%)");
  g_clear_pointer (&line, g_free);

  test_tiny_config (&base, 2);
  sweep = tach_sweep_new (&base, presets, NULL, NULL, NULL, FALSE);
  tach_config_clear (&base);
  rounds = tach_sweep_rounds_new_for_sweep (sweep, 3, 60, 0.05);
  g_assert_cmpint (tach_sweep_rounds_point_comparison (sweep, 0), ==, -1);
  g_assert_cmpint (tach_sweep_rounds_point_comparison (sweep, 1), ==, 0);
  /* A caller that runs the points itself takes each round's order and
   * hands the runs back (none here): the rounds begun follow. */
  tach_sweep_set_shuffle (sweep, 1);
  for (guint r = 0; r < 3; r++)
    {
      tach_sweep_next_order (sweep, order);
      g_assert_cmpuint (order[0] + order[1], ==, 1);
      tach_sweep_set_run (sweep, order[0], r, NULL);
      /* tuned about twice as fast, each round's ratio noisy by 40%. */
      tach_sweep_rounds_record (rounds, 0, r, 100);
      tach_sweep_rounds_record (rounds, 1, r, 200 * exp (0.4 * normal (rand)));
    }
  g_assert_cmpuint (tach_sweep_get_rounds_run (sweep), ==, 3);
  g_assert_cmpfloat (tach_sweep_rounds_get_widest (rounds), >, 0.05);
  unresolved = tach_sweep_rounds_dup_unresolved (rounds, sweep);
  g_assert_nonnull (unresolved);
  g_assert_true (g_str_has_prefix (unresolved, "unresolved after 3 rounds: tuned against "
                                               "tf1-feed-dict is known to ±"));
  g_assert_nonnull (strstr (unresolved, "not the ±5% asked"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/sweep/axis", test_sweep_axis);
  g_test_add_func ("/engine/sweep/axis-knob", test_sweep_axis_knob);
  g_test_add_func ("/engine/sweep/order", test_sweep_order);
  g_test_add_func ("/engine/sweep/grid", test_sweep_grid);
  g_test_add_func ("/engine/sweep/loop", test_sweep_loop);
  g_test_add_func ("/engine/sweep/run", test_sweep_run);
  g_test_add_func ("/engine/sweep/shuffle", test_sweep_shuffle);
  g_test_add_func ("/engine/sweep/verdicts", test_sweep_verdicts);
  g_test_add_func ("/engine/sweep/rounds-text", test_sweep_rounds_text);
  return g_test_run ();
}
