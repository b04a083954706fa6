/* tach-corpus.h: the text corpus of the lstm-lm workload.
 *
 * A corpus is a sequence of token ids over a fixed-size vocabulary.  Token 0
 * is <unk>; tokens 1 .. n_words are the most frequent words of the text,
 * most frequent first.  When the text has fewer distinct words than the
 * vocabulary has room for, the remaining ids are reserved (named <pad>) and
 * never occur in the corpus, so the model keeps its exact shape.
 *
 * Words: maximal runs of letters, digits, apostrophes and hyphens (inner
 * ones), lower-cased; everything else separates words.
 *
 * Threads: any; the functions share no state.
 */
#pragma once

#include <glib.h>

#include "tach-engine.h"

G_BEGIN_DECLS

#define TACH_CORPUS_UNK 0
/* Fewer distinct words than this leave nothing to learn. */
#define TACH_CORPUS_MIN_WORDS 5

typedef struct {
  guint    vocab_size;  /* including <unk> and any <pad> ids */
  guint    n_words;     /* distinct words in the vocabulary, <unk> excluded */
  char   **words;       /* owned, vocab_size entries */
  gint32  *tokens;      /* owned */
  gsize    n_tokens;
} TachCorpus;

/* Reads a UTF-8 text file and keeps its vocab_size - 1 most frequent words
 * (ties broken alphabetically, so the vocabulary is deterministic).
 * TACH_ERROR_DATA for a missing, empty or binary file, or one with fewer
 * than TACH_CORPUS_MIN_WORDS distinct words. */
TachCorpus *tach_corpus_load (const char *path, guint vocab_size, GError **error);
/* The same from text in memory; @name is used in messages. */
TachCorpus *tach_corpus_from_text (const char *text, gsize length, const char *name,
                                   guint vocab_size, GError **error);

/* A seeded corpus of @n_tokens tokens with learnable structure: made-up
 * words follow each other by a sparse, seeded second-order Markov chain
 * (each pair of words has a few likely successors), with a little noise
 * drawn from a Zipf-like unigram distribution.  Every id but <unk> is a
 * word. */
TachCorpus *tach_corpus_generate (guint64 seed, gsize n_tokens, guint vocab_size);

/* Space-separated words of @tokens. */
char       *tach_corpus_detokenize (const TachCorpus *corpus, const gint32 *tokens, gsize n);
void        tach_corpus_free (TachCorpus *corpus);
/* The text a configuration trains on: the corpus file of --data (with
 * @vocab_size words; refused when it holds no window of --context + 1),
 * else @generated_tokens generated from the seed. */
TachCorpus *tach_corpus_for_config (const TachConfig *config, guint vocab_size,
                                    gsize generated_tokens, GError **error);
/* The words of the seeded text that a byte-level corpus spells out. */
#define TACH_CORPUS_BYTE_WORDS 554
/* gpt's text: the bytes of the --data file (at least @least of them), or
 * @generated_bytes of the seeded text's words, spelt out with spaces
 * between them.  Tokens are bytes (vocab_size 256, no words). */
TachCorpus *tach_corpus_bytes_for_config (const TachConfig *config, gsize generated_bytes,
                                          gsize least, GError **error);
/* A step coprime with @n near n / golden ratio: i -> i * step mod n
 * visits every one of @n windows once per epoch, far from its neighbours. */
guint64     tach_corpus_window_stride (guint64 n);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachCorpus, tach_corpus_free)

G_END_DECLS
