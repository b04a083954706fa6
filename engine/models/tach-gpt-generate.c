/* tach-gpt-generate.c: gpt's generate task.  A run is a series of
 * requests: each stream's prompt (a seeded window of the corpus) is
 * prefilled in one step, which draws the first token (the time to first
 * token), then each following step decodes one token, until the request
 * holds prompt + new-tokens tokens; the next step starts another request.
 * So step s is a prefill when s is a multiple of the request's steps
 * (tach_gpt_request_steps), and the summary reports those steps apart.
 *
 * kv-cache=none: every step runs the whole prefix (Tq = Tk = the tokens
 * so far), as nanoGPT's generate does, and keeps the last row's logits.
 * dynamic: each block's keys and values live in storage of exactly the
 * tokens so far, reallocated and copied at every token as Hugging Face's
 * DynamicCache grows by torch.cat; attention runs over those tokens.
 * static: the storage holds the whole context from the start (fixed
 * shapes), and attention runs over all of it, the positions not yet
 * written masked, as Hugging Face's StaticCache without compilation does
 * (transformers PR 40328).  Under launch=graph its decode step reads the
 * position from the device (TachGptPass.pos_dev), which prepare uploads,
 * so that it has no host value that changes from token to token: every
 * step is that decode step, captured once and replayed, and prepare
 * prefills a new request's prompt but its last token, which the first
 * step then decodes (Hugging Face's static cache with torch.compile: the
 * prefill eager, the decode steps CUDA graphs).  Eagerly the position is
 * the ops' argument, as every other mode's: no copy to the device per
 * token.  Every mode computes the same logits.
 *
 * Sampling is lstm-lm's: the token drawn from the softmax by inverse CDF
 * with u = tach_rand_uniform (seed, SAMPLE stream + step, stream), on the
 * device (sample_tokens) or, sampling=host, on the host from logits read
 * back; the step's loss is the drawn tokens' mean -log p.
 */
#include <string.h>


#include "tach-layers.h"
#include "tach-gpt.h"
#include "tach-rand.h"
#include "tach-sample.h"

int
tach_gpt_request_steps (const TachGpt *self)
{
  return self->new_tokens;
}

static size_t
cache_floats (const TachGpt *self, int cap)
{
  return (size_t) self->batch * self->heads * cap * self->hd;
}

/* Points every block at its keys and values: the caches, or kv-cache=none's
 * one pair of buffers that every block reuses. */
static void
point_caches (TachGpt *self)
{
  for (int l = 0; l < self->layers; l++)
    {
      gboolean shared = self->kv_cache == TACH_KV_CACHE_NONE;

      self->act[l].k = self->kv_mem[shared ? 0 : 2 * l];
      self->act[l].v = self->kv_mem[shared ? 1 : 2 * l + 1];
    }
}

static void
free_caches (TachGpt *self)
{
  int n = self->kv_cache == TACH_KV_CACHE_NONE ? 2 : 2 * self->layers;

  for (int i = 0; self->kv_mem != NULL && i < n; i++)
    {
      tach_backend_dealloc (self->be, self->kv_mem[i]);
      self->kv_mem[i] = NULL;
    }
  self->kv_bytes = 0;
}

/* (Re)allocates every block's cache at @cap positions, keeping the first
 * @keep positions of each head: Hugging Face's DynamicCache appends with
 * torch.cat, a new tensor and a copy of the old one at every token. */
static void
grow_caches (TachGpt *self, int cap, int keep)
{
  TachBackend *be = self->be;
  size_t bytes = cache_floats (self, cap) * sizeof (float);
  int bh = self->batch * self->heads, hd = self->hd;

  for (int i = 0; i < 2 * self->layers; i++)
    {
      float *old = self->kv_mem[i];
      float *grown = tach_backend_alloc (be, bytes);

      for (int h = 0; old != NULL && keep > 0 && h < bh; h++)
        tach_backend_copy (be, grown + (size_t) h * cap * hd, old + (size_t) h * self->kv_cap * hd,
                           (size_t) keep * hd * sizeof (float));
      tach_backend_dealloc (be, old);
      self->kv_mem[i] = grown;
    }
  self->kv_cap = cap;
  self->kv_bytes = (guint64) bytes * 2 * self->layers;
  self->kv_bytes_peak = MAX (self->kv_bytes_peak, self->kv_bytes);
  point_caches (self);
}

gboolean
tach_gpt_generate_init (TachGpt *self, GError **error)
{
  TachBackend *be = self->be;
  int B = self->batch;

  self->seq = tach_backend_alloc (be, (size_t) B * self->context * sizeof (int32_t));
  self->next_tok = tach_backend_alloc (be, (size_t) B * sizeof (int32_t));
  self->seq_host = g_new0 (int32_t, (size_t) B * self->context);
  self->tok_host = g_new0 (int32_t, B);
  self->logits_host = g_new0 (float, (size_t) B * self->vocab);
  self->kv_mem = g_new0 (float *, 2 * self->layers);
  if (self->kv_cache == TACH_KV_CACHE_NONE)
    {
      /* Scratch for one pass's keys and values, the longest pass's. */
      size_t floats = cache_floats (self, self->context);

      for (int i = 0; i < 2; i++)
        self->kv_mem[i] = tach_backend_alloc (be, floats * sizeof (float));
      self->activation_bytes += 2 * floats * sizeof (float);
    }
  else if (self->kv_cache == TACH_KV_CACHE_STATIC)
    {
      grow_caches (self, self->context, 0);
      /* The positions not yet written are masked, but multiplied by zero
       * in the naive product: they must hold numbers. */
      for (int i = 0; i < 2 * self->layers; i++)
        tach_backend_zero (be, self->kv_mem[i], cache_floats (self, self->context) * sizeof (float));
      if (self->graph)
        {
          self->pos_dev = tach_backend_alloc (be, sizeof (int32_t));
          self->pos_row = tach_backend_alloc (be, (size_t) self->embed * sizeof (float));
        }
    }
  point_caches (self);
  return tach_backend_take_error (be, error);
}

void
tach_gpt_generate_free (TachGpt *self)
{
  TachBackend *be = self->be;

  free_caches (self);
  g_clear_pointer (&self->kv_mem, g_free);
  tach_backend_dealloc (be, self->seq);
  tach_backend_dealloc (be, self->next_tok);
  tach_backend_dealloc (be, self->pos_dev);
  tach_backend_dealloc (be, self->pos_row);
  g_clear_pointer (&self->seq_host, g_free);
  g_clear_pointer (&self->tok_host, g_free);
  g_clear_pointer (&self->logits_host, g_free);
}

static void prefill_rest (TachGpt *self, guint64 step);

/* Outside any graph: a new request's prompts, and the captured decode
 * step's position. */
gboolean
tach_gpt_generate_prepare (TachGpt *self, TachStepCtx *ctx, GError **error)
{
  int n = tach_gpt_request_steps (self);
  int k = (int) (ctx->step % (guint64) n);
  gint64 t0 = g_get_monotonic_time ();
  gsize starts = self->corpus->n_tokens - self->prompt + 1;

  if (self->pos_dev != NULL)
    {
      /* The tokens before this step's: the prompt's last token is the
       * first step's. */
      self->pos_host = self->prompt + k - 1;
      tach_backend_upload (self->be, self->pos_dev, &self->pos_host, sizeof (int32_t));
    }
  if (k != 0)
    return tach_backend_take_error (self->be, error);
  self->request = ctx->step / n;
  for (int b = 0; b < self->batch; b++)
    {
      guint64 counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_DATA,
                                           (G_GUINT64_CONSTANT (0x6770) << 32) | self->request);
      gsize start = (gsize) (tach_rand_uniform (self->seed, counter, (guint64) b) * starts);

      start = MIN (start, starts - 1);
      memcpy (self->seq_host + (size_t) b * self->context, self->corpus->tokens + start,
              (size_t) self->prompt * sizeof (int32_t));
    }
  tach_backend_upload (self->be, self->seq, self->seq_host,
                       (size_t) self->batch * self->context * sizeof (int32_t));
  ctx->feed_ms += (g_get_monotonic_time () - t0) / 1000.0;
  if (self->graph)
    prefill_rest (self, ctx->step);
  return tach_backend_take_error (self->be, error);
}

/* launch=graph's prefill, in prepare: the prompt but its last token into
 * the caches, and the last token into next_tok, which the first (decode)
 * step embeds at position prompt - 1. */
static void
prefill_rest (TachGpt *self, guint64 step)
{
  TachGptPass pass = { .tq = self->prompt - 1, .tk = self->context, .cap = self->context };

  if (pass.tq > 0)
    {
      tach_gpt_embed (self, self->seq, self->context, &pass, step);
      tach_gpt_blocks_forward (self, &pass, step);
    }
  for (int b = 0; b < self->batch; b++)
    tach_backend_copy (self->be, self->next_tok + b,
                       self->seq + (size_t) b * self->context + self->prompt - 1,
                       sizeof (int32_t));
}

/* The next token of each stream from self->logits, into self->next_tok,
 * and the step's loss. */
static void
sample (TachGpt *self, TachStepCtx *ctx)
{
  TachBackend *be = self->be;
  guint64 counter = TACH_RAND_COUNTER (TACH_RAND_STREAM_SAMPLE, ctx->step);
  int B = self->batch, V = self->vocab;
  gint64 t0;

  if (self->sampling == TACH_SAMPLING_DEVICE)
    {
      /* A context of one token: the op puts the token drawn there. */
      tach_backend_sample_tokens (be, self->logits, B, V, self->seed, counter, self->next_tok,
                                  self->next_tok, 1, ctx->loss_slot);
      return;
    }
  /* The forward pass first, so that the round trip is timed apart. */
  tach_backend_synchronize (be);
  t0 = g_get_monotonic_time ();
  tach_backend_download (be, self->logits_host, self->logits, (size_t) B * V * sizeof (float));
  if (tach_backend_ok (be))
    for (int r = 0; r < B; r++)
      self->tok_host[r] = tach_sample_row (self->logits_host + (size_t) r * V, V,
                                           tach_rand_uniform (self->seed, counter, (guint64) r),
                                           NULL);
  tach_backend_upload (be, self->next_tok, self->tok_host, (size_t) B * sizeof (int32_t));
  ctx->host_ms += (g_get_monotonic_time () - t0) / 1000.0;
  if (ctx->loss_slot != NULL)
    tach_op (be, softmax_ce, self->logits, self->next_tok, B, V, ctx->loss_slot, NULL);
}

gboolean
tach_gpt_generate_step (TachGpt *self, TachStepCtx *ctx, GError **error)
{
  TachParams *p = self->params;
  int k = (int) (ctx->step % (guint64) tach_gpt_request_steps (self));
  /* Tokens before this step's: none at a prefill. */
  int done = k == 0 ? 0 : self->prompt + k - 1;
  /* A step of one token after cached ones: under graph, every step (whose
   * shapes then depend on nothing of k). */
  gboolean decode = (k > 0 || self->graph) && self->kv_cache != TACH_KV_CACHE_NONE;
  TachGptPass pass;
  const int32_t *tokens;
  int ld;

  if (!decode)
    {
      /* The whole prefix, from the request's tokens. */
      int t = k == 0 ? self->prompt : done + 1;

      pass = (TachGptPass) { .tq = t, .tk = t, .cap = t, .pos = 0 };
      tokens = self->seq;
      ld = self->context;
    }
  else
    {
      /* One token, the one drawn last, after the cached ones. */
      pass = (TachGptPass) { .tq = 1, .tk = done + 1, .cap = done + 1, .pos = done };
      tokens = self->next_tok;
      ld = 1;
    }
  if (self->kv_cache == TACH_KV_CACHE_STATIC)
    {
      pass.tk = pass.cap = self->context;
      if (decode && self->pos_dev != NULL)
        {
          /* The position from the device: the same arguments at every
           * token, for the graph. */
          pass.pos = 0;
          pass.pos_dev = self->pos_dev;
        }
    }
  else if (self->kv_cache == TACH_KV_CACHE_DYNAMIC)
    grow_caches (self, pass.cap, k == 0 ? 0 : done);

  tach_gpt_embed (self, tokens, ld, &pass, ctx->step);
  tach_gpt_blocks_forward (self, &pass, ctx->step);
  /* The LM head over each stream's last row only. */
  tach_dense_forward_strided (self->be, self->precision, self->xf + (size_t) (pass.tq - 1) * self->embed,
                              pass.tq * self->embed, tach_params_data (p, self->p_wte), NULL,
                              self->logits, self->batch, self->embed, self->vocab);
  sample (self, ctx);
  return tach_backend_take_error (self->be, error);
}

/* Outside any graph: the token drawn goes to its place in the request. */
gboolean
tach_gpt_generate_finish (TachGpt *self, TachStepCtx *ctx, GError **error)
{
  int k = (int) (ctx->step % (guint64) tach_gpt_request_steps (self));
  int at = self->prompt + k;

  if (at < self->context)
    for (int b = 0; b < self->batch; b++)
      tach_backend_copy (self->be, self->seq + (size_t) b * self->context + at,
                         self->next_tok + b, sizeof (int32_t));
  self->len = at + 1;
  self->generated = ctx->step + 1;
  return tach_backend_take_error (self->be, error);
}

/* Each stream's last request on a line: its prompt, then " | " and what it
 * generated.  Tokens are bytes: control bytes are written as C escapes
 * ("\n", "\x01"), bytes that do not make UTF-8 as U+FFFD, and the rows of
 * a vocabulary past the bytes as <id>. */
char *
tach_gpt_generate_dup_text (TachGpt *self)
{
  GString *text;
  int len = MIN (self->len, self->context);

  if (self->generated == 0)
    return NULL;
  tach_backend_download (self->be, self->seq_host, self->seq,
                         (size_t) self->batch * self->context * sizeof (int32_t));
  if (!tach_backend_ok (self->be))
    return NULL;
  text = g_string_new (NULL);
  for (int b = 0; b < self->batch; b++)
    {
      const int32_t *row = self->seq_host + (size_t) b * self->context;
      g_autoptr(GString) bytes = g_string_new (NULL);
      g_autofree char *valid = NULL;

      for (int t = 0; t < len; t++)
        {
          if (t == self->prompt)
            g_string_append (bytes, " | ");
          if (row[t] >= 256 || row[t] < 0)
            g_string_append_printf (bytes, "<%d>", (int) row[t]);
          else if (row[t] == '\n')
            g_string_append (bytes, "\\n");
          else if (row[t] < 0x20 || row[t] == 0x7f)
            g_string_append_printf (bytes, "\\x%02x", (unsigned) row[t]);
          else
            g_string_append_c (bytes, (char) row[t]);
        }
      valid = g_utf8_make_valid (bytes->str, (gssize) bytes->len);
      g_string_append (text, valid);
      g_string_append_c (text, '\n');
    }
  return g_string_free (text, FALSE);
}
