/* tach-cpu-dw1.c: the filter and bias gradients of an fp32 conv block
 * with one input channel and 5-wide filters (the cnn's conv1: 1 -> 32
 * channels, 5x5, on 28x28 images), from the block's activation gradient
 * in its channel-blocked layout.
 *
 * oneDNN 2.6's backward-weights kernel for one input channel is slow at
 * AVX2: 14.7 ms of a cnn step at batch 256 on the Zen 4 under
 * TACH_CPU_ISA=avx2 (0.32 GFLOP, about 20 GFLOP/s, a fifth of the step),
 * against 1.5 ms for its AVX-512 kernel.  Here, per filter row, the five
 * taps of two channel blocks are ten vector accumulators over every output
 * position of a chunk of images, each input pixel a broadcast from a
 * zero-padded copy of its image (tach-cpu-dw1-k.h).
 *
 * The images run in fixed chunks, each summing into its own copy of the
 * gradients, the copies added in chunk order: the thread count changes no
 * bit, nor does the vector width (every lane sums in the same order).
 *
 * TACH_CPU_CONV=direct turns it off, as it does Winograd's.
 *
 * Threads: the engine thread (OpenMP inside).
 */
#include <string.h>

#include "tach-cpu-private.h"

/* Images per chunk: 8 padded 32x32 images take 32 KB of a thread's L1/L2. */
#define DW1_CHUNK 8

/* What the kernel reads of the plan: K output channels, R filter rows
 * (the filters are 5 wide), the input and its padding, the output, and
 * the zero-padded input's ph x pw. */
typedef struct {
  int k, r, h, w, pad_h, pad_w, oh, ow, ph, pw;
} TachCpuDw1Shape;

struct _TachCpuDw1 {
  TachCpuDw1Shape shape;
  int     chunks;
  int     threads;
  float  *parts;        /* [chunks][K R S + K] */
  float  *padded;       /* per thread: DW1_CHUNK images of ph x pw */
  size_t  part_floats;
  size_t  padded_floats;
};

#define TACH_VEC 512
#include "tach-cpu-vec.h"
#include "tach-cpu-dw1-k.h"
#undef TACH_VEC
#define TACH_VEC 256
#include "tach-cpu-vec.h"
#include "tach-cpu-dw1-k.h"
#undef TACH_VEC

gboolean
tach_cpu_dw1_applies (const TachConvDesc *d, const TachCpuActLayout *act)
{
  int l = tach_cpu_isa_lanes ();
  int oh = d->H + 2 * d->pad_h - d->R + 1, ow = d->W + 2 * d->pad_w - d->S + 1;

  return l > 0 && d->block
         && d->precision == TACH_PRECISION_FP32 && !d->x_native
         && d->C == 1 && d->S == 5 && d->R >= 1 && d->pad_h < d->R && d->pad_w < d->S
         && oh > 0 && ow > 0 && d->K % l == 0
         && act->cb == l && !act->bf16 && act->sw == (size_t) l;
}

TachCpuDw1 *
tach_cpu_dw1_new (TachBackend *be, const TachConvDesc *d)
{
  TachCpuDw1 *p = g_new0 (TachCpuDw1, 1);
  TachCpuDw1Shape *s = &p->shape;

  s->k = d->K;
  s->r = d->R;
  s->h = d->H;
  s->w = d->W;
  s->pad_h = d->pad_h;
  s->pad_w = d->pad_w;
  s->oh = d->H + 2 * d->pad_h - d->R + 1;
  s->ow = d->W + 2 * d->pad_w - d->S + 1;
  s->ph = d->H + 2 * d->pad_h;
  s->pw = d->W + 2 * d->pad_w;
  p->chunks = (d->N + DW1_CHUNK - 1) / DW1_CHUNK;
  p->threads = MAX ((int) be->threads, 1);
  p->part_floats = (size_t) d->K * d->R * d->S + (size_t) d->K;
  p->padded_floats = (size_t) DW1_CHUNK * s->ph * s->pw;
  p->parts = tach_cpu_mem_alloc (be, p->part_floats * p->chunks * sizeof (float));
  p->padded = tach_cpu_mem_alloc (be, p->padded_floats * p->threads * sizeof (float));
  if (!tach_backend_ok (be))
    {
      tach_cpu_dw1_free (be, p);
      return NULL;
    }
  /* The borders stay zero: each chunk writes only the images' interiors. */
  memset (p->padded, 0, p->padded_floats * p->threads * sizeof (float));
  return p;
}

void
tach_cpu_dw1_free (TachBackend *be, TachCpuDw1 *p)
{
  if (p == NULL)
    return;
  tach_cpu_mem_free (be, p->parts);
  tach_cpu_mem_free (be, p->padded);
  g_free (p);
}

void
tach_cpu_dw1_backward (TachBackend *be, TachCpuDw1 *p, const TachCpuActLayout *l,
                       const float *x, const float *dact, int count, float *dw, float *db)
{
  const TachCpuDw1Shape *s = &p->shape;
  int chunks = MIN (p->chunks, (count + DW1_CHUNK - 1) / DW1_CHUNK);
  size_t nw = (size_t) s->k * s->r * 5;  /* dw: K x R x the 5 taps of a row */
  gboolean wide = tach_cpu_isa_lanes () == 16;
  /* The chunks are fixed: fewer threads change no sum. */
  int threads = (int) MIN ((guint) p->threads, tach_cpu_threads_now (be));

  tach_cpu_bind_threads (be);
#pragma omp parallel for schedule (static) num_threads (threads)
  for (int c = 0; c < chunks; c++)
    {
      int n0 = c * DW1_CHUNK, n = MIN (DW1_CHUNK, count - n0);
      float *xp = p->padded + p->padded_floats * omp_get_thread_num ();
      float *part = p->parts + p->part_floats * c;

      for (int i = 0; i < n; i++)
        for (int y = 0; y < s->h; y++)
          memcpy (xp + ((size_t) i * s->ph + y + s->pad_h) * s->pw + s->pad_w,
                  x + ((size_t) (n0 + i) * s->h + y) * s->w, (size_t) s->w * sizeof (float));
      if (wide)
        dw1_chunk_avx512 (s, l, xp, dact + (size_t) n0 * l->sn, n, part);
      else
        dw1_chunk_avx2 (s, l, xp, dact + (size_t) n0 * l->sn, n, part);
    }
  /* The chunks' copies added in chunk order. */
#pragma omp parallel for schedule (static) num_threads (threads)
  for (size_t e = 0; e < nw + (size_t) s->k; e++)
    {
      float sum = 0.0f;

      for (int c = 0; c < chunks; c++)
        sum += p->parts[p->part_floats * c + e];
      if (e < nw)
        dw[e] = sum;
      else
        db[e - nw] = sum;
    }
}
