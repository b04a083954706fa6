/* test-lstm-lm.c: the lstm-lm workload through the public run API.
 *
 *   /engine/lstm-lm/train/modes        rnn, feed, sync and call-setup give the
 *                                      same per-step losses
 *   /engine/lstm-lm/train/learns       the loss falls on the built-in corpus
 *   /engine/lstm-lm/generate/modes     sampling host/device, call-setup, rnn:
 *                                      same tokens, same losses
 *   /engine/lstm-lm/generate/determinism  a seed fixes the text; words come
 *                                      from the vocabulary
 *   /engine/lstm-lm/generate/per-call  per-call setup is reported as host time
 *   /engine/lstm-lm/generate/no-training-state  generation holds no gradients
 *                                      and no optimiser state; training does
 *   /engine/lstm-lm/threads            two threads, on any GEMM path: one thread's
 *                                      losses and tokens, bit for bit
 *   /engine/lstm-lm/data               a text file trains; bad texts fail clearly
 */
#include <math.h>
#include <string.h>


#include "tach-cpu-private.h"
#include "tach-model.h"
#include "test-run-util.h"

#define LOSS_RTOL 1e-4
#define LM_DEFAULTS "device=cpu threads=1 warmup=0 seed=5"

static TestRunResult *
run_ok (const char *base, const char *settings)
{
  return test_run_ok (TACH_WORKLOAD_LSTM_LM, LM_DEFAULTS, base, settings, NULL);
}

#define TRAIN_BASE "task=train batch=32 samples=1024 steps=12 rnn=fused feed=host-f32 sync=1 " \
                   "call-setup=persistent"

static void
test_train_modes (void)
{
  const char *modes[] = {
    "rnn=unrolled", "feed=prefetch", "feed=resident", "sync=end", "sync=5",
    "call-setup=per-call", "rnn=unrolled call-setup=per-call feed=resident sync=end",
  };
  g_autoptr (TestRunResult) ref = run_ok (TRAIN_BASE, "");

  g_assert_cmpuint (ref->losses->len, ==, 12);
  /* A fresh model predicts about uniformly over 554 words. */
  g_assert_cmpfloat (fabs (g_array_index (ref->losses, double, 0) - log (554.0)), <, 0.5);
  for (guint i = 0; i < G_N_ELEMENTS (modes); i++)
    {
      g_autoptr (TestRunResult) other = run_ok (TRAIN_BASE, modes[i]);

      test_assert_same_losses (ref->losses, other->losses, LOSS_RTOL, modes[i]);
    }
}

static void
test_train_learns (void)
{
  g_autoptr (TestRunResult) r = run_ok ("task=train batch=64 samples=8192 steps=150 lr=0.005", "");
  double first = test_mean (r->losses, 0, 10), last = test_mean (r->losses, 140, 10);

  g_test_message ("loss %.3f -> %.3f", first, last);
  g_assert_cmpfloat (last, <, first - 1.0);
}

#define GEN_BASE "task=generate batch=3 steps=15 print-text=true rnn=fused sampling=host " \
                 "call-setup=persistent sync=1"

static void
test_generate_modes (void)
{
  const char *modes[] = {
    "sampling=device", "call-setup=per-call", "rnn=unrolled", "sync=end",
    "sampling=device call-setup=per-call rnn=unrolled",
  };
  g_autoptr (TestRunResult) ref = run_ok (GEN_BASE, "");

  g_assert_nonnull (ref->text);
  for (guint i = 0; i < ref->losses->len; i++)
    {
      double l = g_array_index (ref->losses, double, i);

      /* -log p of a drawn token when the runner records it: positive, and
       * near log 554 untrained. */
      if (isnan (l))
        continue;
      g_assert_cmpfloat (l, >, 0.0);
      g_assert_cmpfloat (l, <, 20.0);
    }
  for (guint i = 0; i < G_N_ELEMENTS (modes); i++)
    {
      g_autoptr (TestRunResult) other = run_ok (GEN_BASE, modes[i]);

      g_test_message ("%s", modes[i]);
      g_assert_cmpstr (other->text, ==, ref->text);
      test_assert_same_losses (ref->losses, other->losses, LOSS_RTOL, modes[i]);
    }
}

static void
test_generate_determinism (void)
{
  g_autoptr (TestRunResult) a = run_ok (GEN_BASE, "sampling=device");
  g_autoptr (TestRunResult) b = run_ok (GEN_BASE, "sampling=device");
  g_autoptr (TestRunResult) c = run_ok (GEN_BASE, "sampling=device seed=6");
  g_auto (GStrv) lines = g_strsplit (a->text, "\n", -1);

  g_assert_cmpstr (a->text, ==, b->text);
  g_assert_cmpstr (a->text, !=, c->text);
  /* Three streams, each its 4 starting words and 15 generated ones. */
  g_assert_cmpuint (g_strv_length (lines), ==, 4);
  g_assert_cmpstr (lines[3], ==, "");
  for (guint i = 0; i < 3; i++)
    {
      g_auto (GStrv) words = g_strsplit (lines[i], " ", -1);

      g_assert_cmpuint (g_strv_length (words), ==, 4 + 15);
      for (guint w = 0; words[w] != NULL; w++)
        g_assert_true (g_regex_match_simple ("^([a-z]+|<unk>)$", words[w], 0, 0));
    }
  g_test_message ("%s", a->text);
}

/* A long run keeps the end of its text, 10000 steps of each stream, and
 * says so: the words kept are those a shorter run made at the same steps. */
static void
test_generate_text_bounded (void)
{
  const char *base = "task=generate batch=2 print-text=true sampling=device sync=100";
  g_autoptr (TestRunResult) all = run_ok (base, "steps=10000");
  g_autoptr (TestRunResult) tail = run_ok (base, "steps=10030");
  g_auto (GStrv) all_lines = g_strsplit (all->text, "\n", -1);
  g_auto (GStrv) tail_lines = g_strsplit (tail->text, "\n", -1);

  /* Two streams, no note: the whole text. */
  g_assert_cmpuint (g_strv_length (all_lines), ==, 3);
  g_assert_cmpuint (g_strv_length (tail_lines), ==, 4);
  g_assert_cmpstr (tail_lines[0], ==, "(the last 10000 of 10030 words of each stream)");
  for (guint r = 0; r < 2; r++)
    {
      g_auto (GStrv) a = g_strsplit (all_lines[r], " ", -1);
      g_auto (GStrv) t = g_strsplit (tail_lines[1 + r], " ", -1);

      /* Its 4 starting words, then "…" and the steps 30..10029. */
      g_assert_cmpuint (g_strv_length (a), ==, 4 + 10000);
      g_assert_cmpuint (g_strv_length (t), ==, 4 + 1 + 10000);
      g_assert_cmpstr (t[4], ==, "\u2026");
      for (guint w = 0; w < 4; w++)
        g_assert_cmpstr (t[w], ==, a[w]);
      for (guint s = 30; s < 10000; s++)
        g_assert_cmpstr (t[5 + s - 30], ==, a[4 + s]);
    }
}

/* Two threads that split each LSTM step's hidden units between them (the
 * split forced: where it runs is measured, and a shared machine would
 * measure it slower) draw the same tokens as one thread, at one stream
 * and at several. */
static void
test_generate_split (void)
{
  const char *batches[] = { "batch=1", "batch=3" };

  for (guint i = 0; i < G_N_ELEMENTS (batches); i++)
    {
      g_autoptr (TestRunResult) ref = NULL;
      g_autoptr (TestRunResult) split = NULL;
      g_autoptr (TestRunResult) per_call = NULL;

      ref = test_run_ok (TACH_WORKLOAD_LSTM_LM, LM_DEFAULTS, GEN_BASE, batches[i], NULL);
      g_setenv ("TACH_CPU_LSTM_SPLIT", "always", TRUE);
      split = test_run_ok (TACH_WORKLOAD_LSTM_LM, LM_DEFAULTS, GEN_BASE, batches[i],
                           "threads=2", NULL);
      per_call = test_run_ok (TACH_WORKLOAD_LSTM_LM, LM_DEFAULTS, GEN_BASE, batches[i],
                              "threads=2 sampling=device call-setup=per-call", NULL);
      g_unsetenv ("TACH_CPU_LSTM_SPLIT");
      /* At one stream the persistent plan splits on the frozen weights'
       * packed copies (tach-cpu-lstm-split.c), where the packed kernels
       * run (AVX2 and wider), and the per-call one on the weights as they
       * are (three streams' products are not all small: no split). */
      if (i == 0)
        {
          g_assert_nonnull (strstr (per_call->algorithms, "hidden units split"));
          g_assert_null (strstr (per_call->algorithms, "frozen"));
          if (tach_cpu_packed_nt_usable (400))
            g_assert_nonnull (strstr (split->algorithms,
                                      "hidden units split, frozen weights packed"));
        }
      g_assert_cmpstr (split->text, ==, ref->text);
      g_assert_cmpstr (per_call->text, ==, ref->text);
      test_assert_same_losses (ref->losses, split->losses, 0.0, batches[i]);
    }
}

/* A clock under which the path it is given runs its passes in 500 µs
 * and every other in 50: the plans a run builds take another path. */
static gint64
slow_clock (TachCpuGemmMode mode, gpointer data)
{
  static gint64 now;

  now += mode == *(const TachCpuGemmMode *) data ? 250 : 25;
  return now;
}

/* Two threads give one thread's losses and tokens, bit for bit, whichever
 * path their plans' timing picks: forced here, by the path made slow and
 * TACH_CPU_LSTM_SPLIT. */
static void
test_threads (void)
{
  static const char *runs[] = {
    TRAIN_BASE, "task=train batch=256 samples=1024 steps=6", GEN_BASE,
    "task=generate batch=1 steps=40 print-text=true",
  };
  static const struct {
    TachCpuGemmMode slow;
    const char     *split;
  } paths[] = {
    { TACH_CPU_GEMM_SPLIT, "never" }, { TACH_CPU_GEMM_SERIAL, "never" },
    { TACH_CPU_GEMM_SERIAL, "auto" }, { TACH_CPU_GEMM_AUTO, "always" },
  };

  for (guint r = 0; r < G_N_ELEMENTS (runs); r++)
    {
      g_autoptr (TestRunResult) ref = run_ok (runs[r], "");

      for (guint p = 0; p < G_N_ELEMENTS (paths); p++)
        {
          g_autoptr (TestRunResult) other = NULL;
          g_autofree char *what = g_strdup_printf ("%s, threads=2, slow path %d, split %s",
                                                   runs[r], paths[p].slow, paths[p].split);

          g_setenv ("TACH_CPU_LSTM_SPLIT", paths[p].split, TRUE);
          tach_cpu_lstm_set_tune_clock (slow_clock, (gpointer) &paths[p].slow);
          other = run_ok (runs[r], "threads=2");
          tach_cpu_lstm_set_tune_clock (NULL, NULL);
          g_unsetenv ("TACH_CPU_LSTM_SPLIT");
          g_test_message ("%s", what);
          g_assert_cmpstr (other->text, ==, ref->text);
          test_assert_same_losses (ref->losses, other->losses, 0.0, what);
        }
    }
}

static double
total_host_ms (const TestRunResult *r)
{
  double sum = 0.0;

  for (guint i = 0; i < r->samples->len; i++)
    sum += g_array_index (r->samples, TachSample, i).host_ms;
  return sum;
}

static void
test_generate_per_call (void)
{
  /* Two threads, so that rebuilding the plan includes measuring where its
   * GEMMs run: the per-call cost a persistent session does not pay. */
  g_autoptr (TestRunResult) per_call = run_ok (GEN_BASE, "call-setup=per-call sampling=device threads=2");
  g_autoptr (TestRunResult) host = run_ok (GEN_BASE, "sampling=host");
  g_autoptr (TestRunResult) device = run_ok (GEN_BASE, "sampling=device threads=2");

  /* Totals, not single steps: one step's host work can be under the
   * microsecond the clock resolves. */
  g_assert_cmpfloat (total_host_ms (host), >, 0.0);
  g_assert_cmpfloat (total_host_ms (per_call), >, 0.0);
  /* Device sampling in a persistent session does (almost) no host work. */
  g_assert_cmpfloat (total_host_ms (device), <, total_host_ms (per_call));
}

static void
expect_data_error (const char *path, const char *needle)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *settings = g_strdup_printf ("data=%s", path);
  g_autoptr (TestRunResult) r = test_run_try (TACH_WORKLOAD_LSTM_LM, &error, LM_DEFAULTS,
                                              "task=train batch=4 steps=2", settings, NULL);

  g_assert_null (r);
  g_assert_error (error, TACH_ERROR, TACH_ERROR_DATA);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, needle));
}

static void
test_data (void)
{
  g_autofree char *dir = test_make_tmp_dir ("tach-test-lm-XXXXXX");
  GString *story = g_string_new (NULL);
  g_autofree char *good = NULL, *empty = NULL, *binary = NULL, *few = NULL, *settings = NULL;
  const char bin[] = { 'x', '\0', 'y', ' ', 'z' };

  for (guint i = 0; i < 60; i++)
    g_string_append (story, "the quick brown fox jumps over the lazy dog and runs away. ");
  good = test_write_file (dir, "story.txt", story->str, story->len);
  empty = test_write_file (dir, "empty.txt", "", 0);
  binary = test_write_file (dir, "binary.bin", bin, sizeof bin);
  few = test_write_file (dir, "few.txt", "a b c a b c d", -1);
  g_string_free (story, TRUE);

  settings = g_strdup_printf ("data=%s", good);
  {
    g_autoptr (TestRunResult) train = run_ok ("task=train batch=16 steps=30 optimizer=adam lr=0.01",
                                          settings);
    g_autoptr (TestRunResult) gen = run_ok ("task=generate batch=1 steps=8 print-text=true", settings);
    static const char *const vocab[] = { "the", "quick", "brown", "fox", "jumps", "over", "lazy",
                                         "dog", "and", "runs", "away", NULL };
    g_auto (GStrv) words = g_strsplit_set (gen->text, " \n", -1);

    g_assert_cmpfloat (test_mean (train->losses, 25, 5), <, test_mean (train->losses, 0, 5) - 1.0);
    /* The first four words come from the text; the untrained model may
     * then pick any id, the reserved ones included. */
    for (guint w = 0; w < 4; w++)
      g_assert_true (g_strv_contains (vocab, words[w]));
  }

  expect_data_error (empty, "empty");
  expect_data_error (binary, "not UTF-8");
  expect_data_error (few, "4 distinct words");
  {
    g_autofree char *missing = g_build_filename (dir, "missing.txt", NULL);

    expect_data_error (missing, "Cannot read");
  }

  test_remove_tree (dir);
}

/* Generation never updates a weight, so it holds neither gradients nor an
 * optimiser's state (they were 532.6 KiB and 1.0 MiB of a 5.1 MiB peak at
 * the defaults), and validation's estimate leaves them out too. */
static void
test_generate_no_training_state (void)
{
  g_autoptr (TestRunResult) gen = run_ok (GEN_BASE, "");
  g_autoptr (TestRunResult) train = run_ok (TRAIN_BASE, "");
  const TachModelClass *klass = tach_model_class_for (TACH_WORKLOAD_LSTM_LM);
  TachConfig config;
  guint64 gen_dev, train_dev, host;

  g_test_message ("generate: gradients %.0f, state %.0f, optimizer part %.0f bytes",
                  gen->summary.held_grad_bytes, gen->summary.held_state_bytes,
                  gen->summary.optimizer_bytes);
  /* tach_params keeps one float of each, so that no buffer is empty. */
  g_assert_cmpfloat (gen->summary.held_grad_bytes, <=, sizeof (float));
  g_assert_cmpfloat (gen->summary.held_state_bytes, <=, 2 * sizeof (float));
  g_assert_cmpfloat (train->summary.held_grad_bytes, >, 1e5);
  g_assert_cmpfloat (train->summary.held_state_bytes, >, 1e5);

  tach_config_init (&config, TACH_WORKLOAD_LSTM_LM);
  test_apply (&config, "task=generate batch=1");
  klass->memory_needs (&config, &gen_dev, &host);
  test_apply (&config, "task=train");
  klass->memory_needs (&config, &train_dev, &host);
  g_assert_cmpuint (gen_dev + 2 * (guint64) train->summary.held_grad_bytes, <=, train_dev);
  tach_config_clear (&config);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/engine/lstm-lm/train/modes", test_train_modes);
  g_test_add_func ("/engine/lstm-lm/train/learns", test_train_learns);
  g_test_add_func ("/engine/lstm-lm/generate/modes", test_generate_modes);
  g_test_add_func ("/engine/lstm-lm/generate/determinism", test_generate_determinism);
  g_test_add_func ("/engine/lstm-lm/generate/split", test_generate_split);
  g_test_add_func ("/engine/lstm-lm/threads", test_threads);
  g_test_add_func ("/engine/lstm-lm/generate/per-call", test_generate_per_call);
  g_test_add_func ("/engine/lstm-lm/generate/no-training-state", test_generate_no_training_state);
  g_test_add_func ("/engine/lstm-lm/generate/text-bounded", test_generate_text_bounded);
  g_test_add_func ("/engine/lstm-lm/data", test_data);

  return g_test_run ();
}
