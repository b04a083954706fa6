/* tach-sample-store.c: a run's samples in a few bytes each (the header says
 * what is kept and how). */
#include <math.h>
#include <string.h>

#include "tach-sample-store.h"

#define CHUNK_MAX 4096   /* steps per chunk */
#define CHUNK_MIN 16     /* a chunk's first allocation, doubled up to CHUNK_MAX */

/* The 16-bit phase format: code 0 is 0, NO_VALUE is NaN; otherwise 6 bits
 * of exponent (biased by HALF_BIAS, 1..62) and 10 of mantissa. */
#define NO_VALUE 0xFFFF
#define HALF_BIAS 32

typedef enum {
  COL_STEP, COL_DEVICE, COL_COMPUTE, COL_LOSS, COL_ACCURACY, COL_CALLS,  /* floats */
  COL_FEED, COL_SYNC, COL_HOST,                             /* 16 bits, or floats */
  COL_COMM, COL_PACK, COL_IMBALANCE,
  N_COLS
} Column;

#define FIRST_SHORT COL_FEED

static const gsize column_offset[N_COLS] = {
  G_STRUCT_OFFSET (TachSample, step_ms),
  G_STRUCT_OFFSET (TachSample, device_step_ms),
  G_STRUCT_OFFSET (TachSample, compute_ms),
  G_STRUCT_OFFSET (TachSample, loss),
  G_STRUCT_OFFSET (TachSample, accuracy),
  G_STRUCT_OFFSET (TachSample, api_calls),
  G_STRUCT_OFFSET (TachSample, feed_ms),
  G_STRUCT_OFFSET (TachSample, sync_ms),
  G_STRUCT_OFFSET (TachSample, host_ms),
  G_STRUCT_OFFSET (TachSample, comm_ms),
  G_STRUCT_OFFSET (TachSample, pack_ms),
  G_STRUCT_OFFSET (TachSample, imbalance_ms),
};

typedef struct {
  guint64  first_step;
  guint    first;              /* store index of the first sample */
  guint    len, cap;
  double   wall_first;         /* wall_s of the first sample */
  double   wall_last;          /* wall_s of the last one */
  gpointer col[N_COLS];        /* float or guint16; NULL: every value NaN */
  gboolean wide[N_COLS];       /* a 16-bit column kept as floats */
  guint8  *warmup;             /* bit per sample */
} Chunk;

struct _TachSampleStore {
  GPtrArray *chunks;   /* Chunk */
  guint      length;
  guint      rank;     /* whose steps: every sample read back has it */
};

/* ----------------------------------------------------------- 16 bits */

/* The 16-bit code of @v, rounded to nearest even; FALSE when @v does not
 * fit (negative or infinite). */
static gboolean
short_encode (float v, guint16 *code)
{
  guint32 u, r;
  int e;

  if (isnan (v))
    {
      *code = NO_VALUE;
      return TRUE;
    }
  if (v == 0.0f)
    {
      *code = 0;
      return TRUE;
    }
  if (!(v > 0.0f) || isinf (v))
    return FALSE;
  memcpy (&u, &v, sizeof u);
  r = u + 0x0FFF + ((u >> 13) & 1);   /* carries into the exponent when it must */
  e = (int) ((r >> 23) & 0xFF) - 127 + HALF_BIAS;
  if (e < 1)
    {
      /* Below 2^-31 ms (half a femtosecond): nothing a clock measures. */
      *code = 0;
      return TRUE;
    }
  if (e > 62)
    return FALSE;
  *code = (guint16) (((guint32) e << 10) | ((r >> 13) & 0x3FF));
  return TRUE;
}

static float
short_decode (guint16 code)
{
  guint32 u;
  float v;

  if (code == 0)
    return 0.0f;
  if (code == NO_VALUE)
    return NAN;
  u = ((guint32) ((code >> 10) - HALF_BIAS + 127) << 23) | ((guint32) (code & 0x3FF) << 13);
  memcpy (&v, &u, sizeof v);
  return v;
}

/* ----------------------------------------------------------- chunks */

static gsize
column_width (const Chunk *c, Column k)
{
  return k < FIRST_SHORT || c->wide[k] ? sizeof (float) : sizeof (guint16);
}

static void
column_fill_nan (Chunk *c, Column k, guint from, guint to)
{
  for (guint i = from; i < to; i++)
    {
      if (column_width (c, k) == sizeof (float))
        ((float *) c->col[k])[i] = NAN;
      else
        ((guint16 *) c->col[k])[i] = NO_VALUE;
    }
}

static double
column_get (const Chunk *c, Column k, guint i)
{
  if (c->col[k] == NULL)
    return NAN;
  if (column_width (c, k) == sizeof (float))
    return (double) ((const float *) c->col[k])[i];
  return (double) short_decode (((const guint16 *) c->col[k])[i]);
}

/* A 16-bit column becomes a float one, its values unchanged. */
static void
column_widen (Chunk *c, Column k)
{
  float *wide = g_new (float, c->cap);

  for (guint i = 0; i < c->len; i++)
    wide[i] = (float) column_get (c, k, i);
  g_free (c->col[k]);
  c->col[k] = wide;
  c->wide[k] = TRUE;
}

static void
column_set (Chunk *c, Column k, guint i, double value)
{
  float f = (float) value;
  guint16 code;

  if (c->col[k] == NULL)
    {
      if (isnan (f))
        return;
      c->col[k] = g_malloc (c->cap * column_width (c, k));
      column_fill_nan (c, k, 0, c->len);
    }
  if (column_width (c, k) == sizeof (guint16))
    {
      if (short_encode (f, &code))
        {
          ((guint16 *) c->col[k])[i] = code;
          return;
        }
      column_widen (c, k);
    }
  ((float *) c->col[k])[i] = f;
}

static void
chunk_free (gpointer data)
{
  Chunk *c = data;

  if (c == NULL)
    return;
  for (guint k = 0; k < N_COLS; k++)
    g_free (c->col[k]);
  g_free (c->warmup);
  g_free (c);
}

static void
chunk_grow (Chunk *c)
{
  guint cap = MIN (c->cap * 2, CHUNK_MAX);

  for (guint k = 0; k < N_COLS; k++)
    if (c->col[k] != NULL)
      c->col[k] = g_realloc (c->col[k], cap * column_width (c, k));
  c->warmup = g_realloc (c->warmup, cap / 8);
  memset (c->warmup + c->cap / 8, 0, (cap - c->cap) / 8);
  c->cap = cap;
}

/* The wall_s that follows @wall after a step of @step_ms, as kept. */
static double
wall_next (double wall, double step_ms)
{
  return wall + step_ms / 1000.0;
}

static guint chunk_for (const TachSampleStore *store, guint index);

/* ------------------------------------------------------------- store */

TachSampleStore *
tach_sample_store_new (void)
{
  TachSampleStore *store = g_new0 (TachSampleStore, 1);

  store->chunks = g_ptr_array_new_with_free_func (chunk_free);
  return store;
}

void
tach_sample_store_free (TachSampleStore *store)
{
  if (store == NULL)
    return;
  g_ptr_array_unref (store->chunks);
  g_free (store);
}

void
tach_sample_store_set_rank (TachSampleStore *store, guint rank)
{
  store->rank = rank;
}

guint
tach_sample_store_get_rank (const TachSampleStore *store)
{
  return store->rank;
}

guint
tach_sample_store_get_length (const TachSampleStore *store)
{
  return store->length;
}

gsize
tach_sample_store_get_bytes (const TachSampleStore *store)
{
  gsize bytes = sizeof *store + store->chunks->len * sizeof (gpointer);

  for (guint i = 0; i < store->chunks->len; i++)
    {
      const Chunk *c = store->chunks->pdata[i];

      bytes += sizeof *c + c->cap / 8;
      for (guint k = 0; k < N_COLS; k++)
        if (c->col[k] != NULL)
          bytes += c->cap * column_width (c, k);
    }
  return bytes;
}

/* Whether @s continues chunk @c: the next step, starting where the last
 * one ended (to the rounding of the kept step times). */
static gboolean
chunk_continues (const Chunk *c, const TachSample *s, double step_ms)
{
  double wall;

  if (c->len == CHUNK_MAX || s->step != c->first_step + c->len)
    return FALSE;
  wall = wall_next (c->wall_last, step_ms);
  return fabs (wall - s->wall_s) <= 1e-7 * fabs (s->wall_s) + 1e-9;
}

void
tach_sample_store_append (TachSampleStore *store, const TachSample *s)
{
  Chunk *c = store->chunks->len > 0 ? store->chunks->pdata[store->chunks->len - 1] : NULL;
  double step_ms = (double) (float) s->step_ms;
  guint i;

  if (c == NULL || !chunk_continues (c, s, step_ms))
    {
      c = g_new0 (Chunk, 1);
      c->first_step = s->step;
      c->first = store->length;
      c->cap = CHUNK_MIN;
      c->warmup = g_malloc0 (c->cap / 8);
      c->wall_first = c->wall_last = s->wall_s;
      g_ptr_array_add (store->chunks, c);
    }
  else
    c->wall_last = wall_next (c->wall_last, step_ms);
  if (c->len == c->cap)
    chunk_grow (c);
  i = c->len++;
  for (guint k = 0; k < N_COLS; k++)
    {
      if (c->col[k] != NULL)
        column_fill_nan (c, k, i, i + 1);
      column_set (c, k, i, G_STRUCT_MEMBER (double, s, column_offset[k]));
    }
  if (s->warmup)
    c->warmup[i / 8] |= (guint8) (1u << (i % 8));
  store->length++;
}

void
tach_sample_store_set_losses (TachSampleStore *store, guint from, guint n, const float *loss,
                              const float *accuracy)
{
  guint done = 0;

  g_return_if_fail (from <= store->length && n <= store->length - from);
  while (done < n)
    {
      guint index = from + done;
      Chunk *c = store->chunks->pdata[chunk_for (store, index)];
      guint i = index - c->first;
      guint span = MIN (n - done, c->len - i);

      for (guint j = 0; j < span; j++)
        {
          column_set (c, COL_LOSS, i + j, (double) loss[done + j]);
          if (accuracy != NULL)
            column_set (c, COL_ACCURACY, i + j, (double) accuracy[done + j]);
        }
      done += span;
    }
}

void
tach_sample_store_move (TachSampleStore *dst, TachSampleStore *src)
{
  for (guint i = 0; i < src->chunks->len; i++)
    {
      Chunk *c = src->chunks->pdata[i];

      c->first = dst->length;
      dst->length += c->len;
      g_ptr_array_add (dst->chunks, c);
      src->chunks->pdata[i] = NULL;
    }
  g_ptr_array_set_size (src->chunks, 0);
  src->length = 0;
}

/* ---------------------------------------------------------- reading */

static guint
chunk_for (const TachSampleStore *store, guint index)
{
  guint lo = 0, hi = store->chunks->len;

  /* The last chunk whose first sample is at or before @index. */
  while (hi - lo > 1)
    {
      guint mid = lo + (hi - lo) / 2;

      if (((const Chunk *) store->chunks->pdata[mid])->first <= index)
        lo = mid;
      else
        hi = mid;
    }
  return lo;
}

void
tach_sample_iter_init (TachSampleIter *iter, const TachSampleStore *store, guint from)
{
  const Chunk *c;

  iter->store = store;
  iter->chunk = store->chunks->len;
  iter->pos = 0;
  iter->wall_s = 0.0;
  if (from >= store->length)
    return;
  iter->chunk = chunk_for (store, from);
  c = store->chunks->pdata[iter->chunk];
  /* wall_s runs on from the chunk's first sample. */
  iter->wall_s = c->wall_first;
  for (guint i = 1; i < from - c->first; i++)
    iter->wall_s = wall_next (iter->wall_s, column_get (c, COL_STEP, i));
  iter->pos = from - c->first;
}

gboolean
tach_sample_iter_next (TachSampleIter *iter, TachSample *out)
{
  const Chunk *c;
  guint i;

  if (iter->chunk >= iter->store->chunks->len)
    return FALSE;
  c = iter->store->chunks->pdata[iter->chunk];
  i = iter->pos;
  for (guint k = 0; k < N_COLS; k++)
    G_STRUCT_MEMBER (double, out, column_offset[k]) = column_get (c, k, i);
  if (i > 0)
    iter->wall_s = wall_next (iter->wall_s, out->step_ms);
  out->wall_s = iter->wall_s;
  out->step = c->first_step + i;
  out->warmup = (c->warmup[i / 8] >> (i % 8)) & 1;
  out->rank = iter->store->rank;
  if (++iter->pos == c->len)
    {
      iter->chunk++;
      iter->pos = 0;
      if (iter->chunk < iter->store->chunks->len)
        iter->wall_s = ((const Chunk *) iter->store->chunks->pdata[iter->chunk])->wall_first;
    }
  return TRUE;
}

guint
tach_sample_store_copy (const TachSampleStore *store, guint from, guint n, GArray *out)
{
  TachSampleIter iter;
  TachSample s;
  guint copied = 0;

  tach_sample_iter_init (&iter, store, from);
  while (copied < n && tach_sample_iter_next (&iter, &s))
    {
      g_array_append_val (out, s);
      copied++;
    }
  return copied;
}
