/* tach-corpus.c: text -> words -> token ids, and the seeded generator. */
#include "tach-corpus.h"

#include <string.h>

#include "tach-engine.h"
#include "tach-error-private.h"
#include <glib/gi18n-lib.h>
#include "tach-rand.h"

void
tach_corpus_free (TachCorpus *corpus)
{
  if (corpus == NULL)
    return;
  if (corpus->words != NULL)
    for (guint i = 0; i < corpus->vocab_size; i++)
      g_free (corpus->words[i]);
  g_free (corpus->words);
  g_free (corpus->tokens);
  g_free (corpus);
}

/* A fresh corpus whose ids past n_words are reserved <pad> slots. */
static TachCorpus *
corpus_new (guint vocab_size)
{
  TachCorpus *corpus = g_new0 (TachCorpus, 1);

  corpus->vocab_size = vocab_size;
  corpus->words = g_new0 (char *, vocab_size);
  corpus->words[TACH_CORPUS_UNK] = g_strdup ("<unk>");
  for (guint i = 1; i < vocab_size; i++)
    corpus->words[i] = g_strdup ("<pad>");
  return corpus;
}

/* ------------------------------------------------------------ reading */

static gboolean
is_word_char (gunichar c)
{
  return g_unichar_isalnum (c) || c == '\'' || c == '-' || c == 0x2019;
}

/* A word may hold apostrophes and hyphens inside, not at its ends. */
static gboolean
is_edge_char (gunichar c)
{
  return c == '\'' || c == '-' || c == 0x2019;
}

typedef struct {
  const char *word;   /* borrowed from the hash table */
  guint64     count;
  guint       provisional;
} WordCount;

static int
word_count_compare (gconstpointer pa, gconstpointer pb)
{
  const WordCount *a = pa, *b = pb;

  if (a->count != b->count)
    return a->count > b->count ? -1 : 1;
  return strcmp (a->word, b->word);
}

/* Finds the words of @text; each distinct word gets a provisional id in
 * order of first appearance. */
static void
split_words (const char *text, const char *end, GHashTable *ids, GPtrArray *distinct,
             GArray *provisional, GArray *counts)
{
  const char *p = text;

  while (p < end)
    {
      const char *start, *stop;
      g_autofree char *word = NULL;
      gpointer id_ptr;
      guint id;

      while (p < end && !is_word_char (g_utf8_get_char (p)))
        p = g_utf8_next_char (p);
      start = p;
      while (p < end && is_word_char (g_utf8_get_char (p)))
        p = g_utf8_next_char (p);
      stop = p;

      while (start < stop && is_edge_char (g_utf8_get_char (start)))
        start = g_utf8_next_char (start);
      while (stop > start && is_edge_char (g_utf8_get_char (g_utf8_prev_char (stop))))
        stop = g_utf8_prev_char (stop);
      if (start == stop)
        continue;

      word = g_utf8_strdown (start, stop - start);
      if (g_hash_table_lookup_extended (ids, word, NULL, &id_ptr))
        id = GPOINTER_TO_UINT (id_ptr);
      else
        {
          guint64 zero = 0;

          id = distinct->len;
          g_ptr_array_add (distinct, g_strdup (word));
          g_hash_table_insert (ids, g_ptr_array_index (distinct, id), GUINT_TO_POINTER (id));
          g_array_append_val (counts, zero);
        }
      g_array_index (counts, guint64, id)++;
      g_array_append_val (provisional, id);
    }
}

TachCorpus *
tach_corpus_from_text (const char *text, gsize length, const char *name, guint vocab_size,
                       GError **error)
{
  g_autoptr(GHashTable) ids = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GPtrArray) distinct = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GArray) provisional = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autoptr(GArray) counts = g_array_new (FALSE, FALSE, sizeof (guint64));
  g_autofree WordCount *order = NULL;
  g_autofree gint32 *remap = NULL;
  g_autoptr(TachCorpus) corpus = NULL;
  const char *bad = NULL;
  const char *nul;
  guint keep;

  g_return_val_if_fail (vocab_size > TACH_CORPUS_MIN_WORDS, NULL);

  if (length == 0)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "The text file %s is empty; give a UTF-8 text file with some words in it", name);
      return NULL;
    }
  nul = memchr (text, '\0', length);
  if (nul != NULL || !g_utf8_validate (text, length, &bad))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "%s is not UTF-8 text (a binary file?); give a plain text file: "
                   "invalid byte at offset %" G_GSIZE_FORMAT,
                   name, (gsize) ((nul != NULL ? nul : bad) - text));
      return NULL;
    }

  split_words (text, text + length, ids, distinct, provisional, counts);
  if (distinct->len < TACH_CORPUS_MIN_WORDS)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   "The text of %s has %u distinct words; a language model needs at least %d "
                   "(give a longer text)", name, distinct->len, TACH_CORPUS_MIN_WORDS);
      return NULL;
    }

  /* Most frequent first, ties alphabetically, so the vocabulary does not
   * depend on hash table order. */
  order = g_new (WordCount, distinct->len);
  for (guint i = 0; i < distinct->len; i++)
    {
      order[i].word = g_ptr_array_index (distinct, i);
      order[i].count = g_array_index (counts, guint64, i);
      order[i].provisional = i;
    }
  qsort (order, distinct->len, sizeof (WordCount), word_count_compare);

  corpus = corpus_new (vocab_size);
  keep = MIN (distinct->len, vocab_size - 1);
  corpus->n_words = keep;
  remap = g_new (gint32, distinct->len);
  for (guint i = 0; i < distinct->len; i++)
    remap[order[i].provisional] = i < keep ? (gint32) i + 1 : TACH_CORPUS_UNK;
  for (guint i = 0; i < keep; i++)
    {
      g_free (corpus->words[i + 1]);
      corpus->words[i + 1] = g_strdup (order[i].word);
    }

  corpus->n_tokens = provisional->len;
  corpus->tokens = g_new (gint32, corpus->n_tokens);
  for (gsize i = 0; i < corpus->n_tokens; i++)
    corpus->tokens[i] = remap[g_array_index (provisional, guint, i)];
  return g_steal_pointer (&corpus);
}

TachCorpus *
tach_corpus_load (const char *path, guint vocab_size, GError **error)
{
  g_autoptr(GError) local = NULL;
  g_autofree char *text = NULL;
  gsize length = 0;

  if (!g_file_get_contents (path, &text, &length, &local))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   W_("Cannot read the text file %s (check the {data} path): %s"),
                   path, local->message);
      return NULL;
    }
  return tach_corpus_from_text (text, length, path, vocab_size, error);
}

/* ---------------------------------------------------------- generating */

/* Counters of the generator on the DATA stream. */
enum {
  GEN_SPELLING = 1,
  GEN_SUCCESSORS,
  GEN_TOKENS,
};

#define GEN_SUCCESSORS_PER_WORD 4
/* The chance of a Markov step rather than a Zipf-distributed noise word. */
#define GEN_MARKOV_P 0.95

/* Successor k of word b is picked with weight gen_weights[(k + a) % 4]:
 * the previous word a decides which successor is most likely, so a longer
 * context predicts better than the last word alone. */
static const double gen_weights[GEN_SUCCESSORS_PER_WORD] = { 0.70, 0.15, 0.10, 0.05 };

static char *
make_word (guint64 seed, guint index, guint attempt)
{
  static const char consonants[] = "bdfgklmnprstvz";
  static const char vowels[] = "aeiou";
  guint64 bits = tach_rand_bits (seed, TACH_RAND_COUNTER (TACH_RAND_STREAM_DATA, GEN_SPELLING),
                                 (guint64) index * 64 + attempt);
  guint syllables = 1 + bits % 3;
  GString *word = g_string_new (NULL);

  bits /= 3;
  for (guint s = 0; s < syllables + (attempt > 8); s++)
    {
      g_string_append_c (word, consonants[bits % (sizeof consonants - 1)]);
      bits /= sizeof consonants - 1;
      g_string_append_c (word, vowels[bits % (sizeof vowels - 1)]);
      bits /= sizeof vowels - 1;
    }
  return g_string_free (word, FALSE);
}

static gint32
successor (guint64 seed, guint n_words, gint32 b, guint k)
{
  guint64 bits = tach_rand_bits (seed, TACH_RAND_COUNTER (TACH_RAND_STREAM_DATA, GEN_SUCCESSORS),
                                 (guint64) b * GEN_SUCCESSORS_PER_WORD + k);

  return 1 + (gint32) (bits % n_words);
}

TachCorpus *
tach_corpus_generate (guint64 seed, gsize n_tokens, guint vocab_size)
{
  g_autoptr(GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
  g_autofree double *zipf_cdf = NULL;
  TachCorpus *corpus;
  guint n_words = vocab_size - 1;
  double total = 0;

  g_return_val_if_fail (vocab_size > TACH_CORPUS_MIN_WORDS, NULL);

  corpus = corpus_new (vocab_size);
  corpus->n_words = n_words;
  for (guint i = 1; i < vocab_size; i++)
    {
      char *word = NULL;

      /* Spellings collide now and then; draw again until the word is new. */
      for (guint attempt = 0; word == NULL || g_hash_table_contains (seen, word); attempt++)
        {
          g_free (word);
          word = make_word (seed, i, attempt);
          if (attempt > 40)
            {
              g_free (word);
              word = g_strdup_printf ("w%u", i);
            }
        }
      g_free (corpus->words[i]);
      corpus->words[i] = word;
      g_hash_table_add (seen, word);
    }

  zipf_cdf = g_new (double, n_words);
  for (guint r = 0; r < n_words; r++)
    {
      total += 1.0 / (r + 1);
      zipf_cdf[r] = total;
    }

  corpus->n_tokens = n_tokens;
  corpus->tokens = g_new (gint32, MAX (n_tokens, 1));
  for (gsize t = 0; t < n_tokens; t++)
    {
      guint64 counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_DATA, GEN_TOKENS);
      double u = tach_rand_uniform (seed, counter, 2 * (guint64) t);
      double v = tach_rand_uniform (seed, counter, 2 * (guint64) t + 1);

      if (t >= 2 && u < GEN_MARKOV_P)
        {
          gint32 a = corpus->tokens[t - 2], b = corpus->tokens[t - 1];
          double acc = 0;
          guint k = 0;

          for (k = 0; k + 1 < GEN_SUCCESSORS_PER_WORD; k++)
            {
              acc += gen_weights[(k + (guint) a) % GEN_SUCCESSORS_PER_WORD];
              if (v < acc)
                break;
            }
          corpus->tokens[t] = successor (seed, n_words, b, k);
        }
      else
        {
          double target = v * total;
          guint lo = 0, hi = n_words - 1;

          /* The first rank whose cumulative weight reaches the target. */
          while (lo < hi)
            {
              guint mid = (lo + hi) / 2;

              if (zipf_cdf[mid] < target)
                lo = mid + 1;
              else
                hi = mid;
            }
          corpus->tokens[t] = 1 + (gint32) lo;
        }
    }
  return corpus;
}

char *
tach_corpus_detokenize (const TachCorpus *corpus, const gint32 *tokens, gsize n)
{
  GString *s = g_string_new (NULL);

  for (gsize i = 0; i < n; i++)
    {
      gint32 t = tokens[i];

      if (i > 0)
        g_string_append_c (s, ' ');
      g_string_append (s, t >= 0 && (guint) t < corpus->vocab_size ? corpus->words[t] : "<unk>");
    }
  return g_string_free (s, FALSE);
}

/* ------------------------------------------------- a model's text, in order */

/* A step coprime with @n near n / golden ratio: i -> i * step mod n visits
 * every window once per epoch, far from its neighbours. */
guint64
tach_corpus_window_stride (guint64 n)
{
  guint64 s = MAX ((guint64) (n * 0.6180339887), 1);

  for (;; s++)
    {
      guint64 a = s, b = n;

      while (b != 0)
        {
          guint64 t = a % b;

          a = b;
          b = t;
        }
      if (a == 1)
        return s;
    }
}

TachCorpus *
tach_corpus_for_config (const TachConfig *config, guint vocab_size, gsize generated_tokens,
                        GError **error)
{
  if (config->data != NULL && config->data[0] != '\0')
    {
      TachCorpus *corpus = tach_corpus_load (config->data, vocab_size, error);

      if (corpus == NULL)
        tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                     TACH_KNOB_DATA, TACH_KNOB_DATA, NULL, NULL);

      if (corpus != NULL && corpus->n_tokens <= (gsize) config->context)
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                       _("The text of %s has %zu words; one training window "
                         "needs %d (give a longer text)"),
                       config->data, corpus->n_tokens, (int) config->context + 1);
          tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                       TACH_KNOB_DATA, TACH_KNOB_DATA, NULL, NULL);
          g_clear_pointer (&corpus, tach_corpus_free);
        }
      return corpus;
    }
  return tach_corpus_generate (config->seed, generated_tokens, vocab_size);
}

/* ---------------------------------------------------------- bytes */

/* A corpus whose tokens are the bytes of @text: 256 ids, each the byte. */
static TachCorpus *
corpus_of_bytes (const char *text, gsize length)
{
  TachCorpus *corpus = g_new0 (TachCorpus, 1);

  corpus->vocab_size = 256;
  corpus->n_words = 256;
  corpus->n_tokens = length;
  corpus->tokens = g_new (gint32, MAX (length, 1));
  for (gsize i = 0; i < length; i++)
    corpus->tokens[i] = (guint8) text[i];
  return corpus;
}

TachCorpus *
tach_corpus_bytes_for_config (const TachConfig *config, gsize generated_bytes, gsize least,
                              GError **error)
{
  g_autofree char *text = NULL;
  gsize length = 0;

  if (config->data != NULL && config->data[0] != '\0')
    {
      g_autoptr(GError) local = NULL;

      if (!g_file_get_contents (config->data, &text, &length, &local))
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                       W_("Cannot read the text file %s (check the {data} path): %s"),
                       config->data, local->message);
          tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                       TACH_KNOB_DATA, TACH_KNOB_DATA, NULL, NULL);
          return NULL;
        }
      if (length < least)
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                       _("The text of %s has %zu bytes; gpt needs at least %zu "
                         "(give a longer text)"),
                       config->data, length, least);
          tach_error_add_pending_hint (error, TACH_HINT_CONFIG_VALUE,
                                       TACH_KNOB_DATA, TACH_KNOB_DATA, NULL, NULL);
          return NULL;
        }
      return corpus_of_bytes (text, length);
    }
  {
    /* The seeded words, spelt out: a word and its space are at least two
     * bytes, so this many words give enough. */
    g_autoptr(TachCorpus) words = tach_corpus_generate (config->seed, MAX (generated_bytes, least) / 2 + 1,
                                                        TACH_CORPUS_BYTE_WORDS);

    text = tach_corpus_detokenize (words, words->tokens, words->n_tokens);
    length = MIN (strlen (text), MAX (generated_bytes, least));
    return corpus_of_bytes (text, length);
  }
}
