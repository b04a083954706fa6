/* fuzz-corpus.c: the text corpus reader of lstm-lm on any bytes.  The
 * first byte picks the vocabulary size; the rest is the file.  A file is
 * either a corpus whose tokens all lie in the vocabulary, or refused with a
 * TACH_ERROR_DATA naming it. */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz-util.h"
#include "tach-corpus.h"

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  static const guint vocab_sizes[] = { 554, 6, 7, 50, 1000 };
  guint vocab = size > 0 ? vocab_sizes[data[0] % G_N_ELEMENTS (vocab_sizes)] : 554;
  g_autofree char *path = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(TachCorpus) corpus = NULL;

  if (size > 0)
    data++, size--;
  path = fuzz_write ("corpus.txt", data, size);
  corpus = tach_corpus_load (path, vocab, &error);
  if (corpus == NULL)
    {
      fuzz_check_error (error, TACH_ERROR_DATA, path, "tach_corpus_load");
      return 0;
    }
  if (corpus->vocab_size != vocab || corpus->n_words >= vocab || corpus->n_tokens == 0)
    {
      fprintf (stderr, "fuzz: a corpus of %u words and %zu tokens over %u ids (want %u)\n",
               corpus->n_words, (size_t) corpus->n_tokens, corpus->vocab_size, vocab);
      abort ();
    }
  for (gsize i = 0; i < corpus->n_tokens; i++)
    if (corpus->tokens[i] < 0 || (guint) corpus->tokens[i] > corpus->n_words)
      {
        fprintf (stderr, "fuzz: token %zu is %d, outside 0..%u\n", (size_t) i,
                 corpus->tokens[i], corpus->n_words);
        abort ();
      }
  for (guint w = 0; w < corpus->vocab_size; w++)
    if (corpus->words[w] == NULL || !g_utf8_validate (corpus->words[w], -1, NULL))
      {
        fprintf (stderr, "fuzz: word %u is not UTF-8\n", w);
        abort ();
      }
  g_free (tach_corpus_detokenize (corpus, corpus->tokens, MIN (corpus->n_tokens, 64)));
  return 0;
}
