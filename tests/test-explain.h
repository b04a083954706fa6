/* test-explain.h: what the files of test-explain share. */
#pragma once

#include "tach-explain.h"

/* The sum of the knobs' shares of @explain's gap. */
double sum_shares      (TachExplain *explain);
/* Every knob's phases add up to its share; the shares to the gap. */
void   assert_additive (TachExplain *explain);
/* Adds the tests of test-explain-real.c. */
void   test_explain_real_add (void);
/* Adds the tests of test-explain-so-far.c. */
void   test_explain_so_far_add (void);
/* Layout and feed (A 50 ms, B 12 ms) measured in @rounds rounds, each
 * configuration but B slowed by @load[round] (test-explain-verdict.c). */
TachExplain *run_loaded (const double *load, guint rounds);
/* Adds the tests of test-explain-load.c. */
void   test_explain_load_add (void);
/* Adds the tests of test-explain-verdict.c. */
void   test_explain_verdict_add (void);
