/* tach-cpu-ops.c: the CPU backend's pointwise ops, reductions, losses,
 * sampling and optimisers (the GEMMs are in tach-cpu-gemm.c).
 *
 * Pointwise loops use OpenMP, the pool oneDNN itself runs on, so nothing is
 * over-subscribed.  Reductions that produce a reported number (losses,
 * accuracy) run serially in double precision, so that they do not depend on
 * the thread count.  Threads: the engine thread.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-cpu-private.h"
#include "tach-adam.h"
#include "tach-rand.h"
#include "tach-sample.h"

/* Comparisons in the pointwise loops (ReLU) are only if-converted, and so
 * vectorised, when GCC may assume floating-point ops do not trap; Tach
 * never enables FP traps, so this changes no result. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("no-trapping-math")
#endif

static inline void
bias_add_row (float *restrict row, const float *restrict bias, int n)
{
#pragma omp simd
  for (int j = 0; j < n; j++)
    row[j] += bias[j];
}

void
tach_cpu_bias_add (TachBackend *be, float *y, const float *bias, int m, int n)
{
  /* Small products (one generated token) stay out of the OpenMP runtime,
   * which even a false if clause would enter. */
  if ((size_t) m * (size_t) n < TACH_CPU_PARALLEL_MIN)
    {
      for (int i = 0; i < m; i++)
        bias_add_row (y + (size_t) i * (size_t) n, bias, n);
      return;
    }
  tach_cpu_bind_threads (be);
#pragma omp parallel for
  for (int i = 0; i < m; i++)
    bias_add_row (y + (size_t) i * (size_t) n, bias, n);
}

/* Rows [@i0, @i1) of @dy summed into @sum, row by row so that the reads
 * stay contiguous. */
static void
bias_grad_rows (const float *dy, double *restrict sum, size_t i0, size_t i1, int n)
{
  for (size_t i = i0; i < i1; i++)
    {
      const float *restrict row = dy + i * (size_t) n;

#pragma omp simd
      for (int j = 0; j < n; j++)
        sum[j] += row[j];
    }
}

void
tach_cpu_bias_grad (TachBackend *be, const float *dy, float *db, int m, int n, float beta)
{
  int parts = (size_t) m * (size_t) n < TACH_CPU_PARALLEL_MIN ? 1 : (int) MAX (be->threads, 1);
  g_autofree double *sum = g_new0 (double, (size_t) parts * MAX (n, 1));

  /* In double, each part over its own block of rows, the blocks' sums
   * then added in order: as many parts as the backend has threads, however
   * many run them now. */
  if (parts == 1)
    bias_grad_rows (dy, sum, 0, (size_t) m, n);
  else
    {
      tach_cpu_bind_threads (be);
#pragma omp parallel for schedule (static)
      for (int p = 0; p < parts; p++)
        bias_grad_rows (dy, sum + (size_t) p * n, (size_t) m * p / parts,
                        (size_t) m * (p + 1) / parts, n);
      for (int p = 1; p < parts; p++)
        for (int j = 0; j < n; j++)
          sum[j] += sum[(size_t) p * n + j];
    }
  for (int j = 0; j < n; j++)
    db[j] = (beta == 0.0f ? 0.0f : beta * db[j]) + (float) sum[j];
}

void
tach_cpu_relu_fwd (TachBackend *be, const float *x, float *y, size_t n)
{
  tach_cpu_bind_threads (be);
#pragma omp parallel for simd if (n >= TACH_CPU_PARALLEL_MIN)
  for (size_t i = 0; i < n; i++)
    {
      float v = x[i];

      y[i] = v > 0.0f ? v : 0.0f;
    }
}

void
tach_cpu_relu_bwd (TachBackend *be, const float *y, const float *dy, float *dx, size_t n)
{
  tach_cpu_bind_threads (be);
#pragma omp parallel for simd if (n >= TACH_CPU_PARALLEL_MIN)
  for (size_t i = 0; i < n; i++)
    {
      float g = dy[i];

      dx[i] = y[i] > 0.0f ? g : 0.0f;
    }
}

/* ------------------------------------------------------ max over time */

/* The maximum over @t steps of one sample's [t, c] block.  Ties keep the
 * earliest step, as a strict comparison does.  Written as selects, not
 * branches: on activations the comparison is a coin toss, and a
 * mispredicted branch per element cost more than the rest of the op
 * (W1: about 5% of the step); the selects vectorise. */
TACH_CPU_SIMD_BODY void
max_over_time_row_body (int t, int c, const float *restrict x, float *restrict y,
                        int32_t *restrict idx)
{
  for (int j = 0; j < c; j++)
    {
      y[j] = x[j];
      idx[j] = 0;
    }
  for (int s = 1; s < t; s++)
    {
      const float *restrict xs = x + (size_t) s * (size_t) c;

#pragma omp simd
      for (int j = 0; j < c; j++)
        {
          gboolean gt = xs[j] > y[j];

          y[j] = gt ? xs[j] : y[j];
          idx[j] = gt ? s : idx[j];
        }
    }
}

TACH_CPU_SIMD_DISPATCH (static, max_over_time_row,
                        (int t, int c, const float *restrict x, float *restrict y,
                         int32_t *restrict idx),
                        (t, c, x, y, idx))

void
tach_cpu_max_over_time_fwd (TachBackend *be, const float *x, float *y, int32_t *idx,
                            int n, int t, int c)
{
  tach_cpu_bind_threads (be);
#pragma omp parallel for if ((size_t) n * (size_t) t * (size_t) c >= TACH_CPU_PARALLEL_MIN)
  for (int b = 0; b < n; b++)
    max_over_time_row (t, c, x + (size_t) b * (size_t) t * (size_t) c, y + (size_t) b * (size_t) c,
                       idx + (size_t) b * (size_t) c);
}

/* One sample's [t, c] input gradient, every element written once: dy
 * where the step was the maximum, else 0 (one pass, where zeroing and
 * then scattering wrote the block twice). */
TACH_CPU_SIMD_BODY void
max_over_time_bwd_row_body (int t, int c, const float *restrict dy, const int32_t *restrict idx,
                            float *restrict dx)
{
  for (int s = 0; s < t; s++)
    {
      float *restrict dxs = dx + (size_t) s * (size_t) c;

#pragma omp simd
      for (int j = 0; j < c; j++)
        dxs[j] = idx[j] == s ? dy[j] : 0.0f;
    }
}

TACH_CPU_SIMD_DISPATCH (static, max_over_time_bwd_row,
                        (int t, int c, const float *restrict dy, const int32_t *restrict idx,
                         float *restrict dx),
                        (t, c, dy, idx, dx))

void
tach_cpu_max_over_time_bwd (TachBackend *be, const float *dy, const int32_t *idx,
                            float *dx, int n, int t, int c)
{
  tach_cpu_bind_threads (be);
#pragma omp parallel for if ((size_t) n * (size_t) t * (size_t) c >= TACH_CPU_PARALLEL_MIN)
  for (int b = 0; b < n; b++)
    max_over_time_bwd_row (t, c, dy + (size_t) b * (size_t) c, idx + (size_t) b * (size_t) c,
                           dx + (size_t) b * (size_t) t * (size_t) c);
}

/* --------------------------------------------------------------- losses */

void
tach_cpu_sigmoid_bce (TachBackend *be, const float *logits, const float *labels, int n,
                      float *loss, float *dlogits)
{
  double total = 0.0;

  for (int i = 0; i < n; i++)
    {
      double z = logits[i];
      double y = labels[i];

      /* max(z, 0) - z y + log(1 + exp(-|z|)): no overflow for large |z|. */
      total += MAX (z, 0.0) - z * y + log1p (exp (-fabs (z)));
      if (dlogits != NULL)
        dlogits[i] = (float) ((1.0 / (1.0 + exp (-z)) - y) / n);
    }
  *loss = n > 0 ? (float) (total / n) : 0.0f;
}

/* The training path's row: the exponentials in float by the branch-free
 * polynomial, written straight into @d and summed in double, then scaled.
 * Logits so far below the maximum that their gradient would be under
 * FLT_MIN (sum <= classes, so e / (sum n) >= e / (classes n)) give exactly
 * zero: denormals in dlogits slow the GEMMs they feed severalfold, and
 * what is dropped is below float's resolution of the sum. */
TACH_CPU_SIMD_BODY double
softmax_ce_grad_row_body (const float *restrict z, int label, int classes, int n, float *restrict d)
{
  const float lo = (float) log ((double) FLT_MIN * classes * n);
  double sum = 0.0, lse, el;
  float zmaxf = z[0], f;

#pragma omp simd reduction(max:zmaxf)
  for (int j = 1; j < classes; j++)
    zmaxf = MAX (zmaxf, z[j]);

#pragma omp simd reduction(+:sum)
  for (int j = 0; j < classes; j++)
    {
      float x = z[j] - zmaxf;
      float e = x < lo ? 0.0f : tach_cpu_fast_expf (x);

      d[j] = e;
      sum += e;
    }
  lse = zmaxf + log (sum);
  el = d[label];
  f = (float) (1.0 / (sum * n));
#pragma omp simd
  for (int j = 0; j < classes; j++)
    d[j] *= f;
  d[label] = (float) ((el / sum - 1.0) / n);
  return lse - z[label];
}

TACH_CPU_SIMD_DISPATCH_RET (static, double, softmax_ce_grad_row,
                            (const float *restrict z, int label, int classes, int n,
                             float *restrict d),
                            (z, label, classes, n, d))

/* One row of softmax_ce: returns lse - z[label] and writes the row's
 * dlogits when @d is not NULL.  Without @d, the log-sum-exp is the
 * sampler's (tach-sample.h), so that sample_tokens_nll's loss is this
 * loss to the bit. */
static double
softmax_ce_row (const float *restrict z, int label, int classes, int n, float *restrict d)
{
  if (d != NULL)
    return softmax_ce_grad_row (z, label, classes, n, d);
  return tach_sample_lse (z, classes) - z[label];
}

void
tach_cpu_softmax_ce (TachBackend *be, const float *logits, const int32_t *labels, int n,
                     int classes, float *loss, float *dlogits)
{
  g_autofree double *row_loss = NULL;
  double total = 0.0;

  for (int i = 0; i < n; i++)
    if (labels[i] < 0 || labels[i] >= classes)
      {
        tach_backend_fail_label (be, labels[i], i, classes);
        return;
      }
  /* Rows in parallel, each row's loss kept apart and summed in row order
   * below: the same total whatever the thread count. */
  row_loss = g_new (double, MAX (n, 1));
  if ((size_t) n * (size_t) classes < TACH_CPU_PARALLEL_MIN)
    for (int i = 0; i < n; i++)
      row_loss[i] = softmax_ce_row (logits + (size_t) i * (size_t) classes, labels[i], classes,
                                    n, dlogits != NULL
                                         ? dlogits + (size_t) i * (size_t) classes : NULL);
  else
    {
      tach_cpu_bind_threads (be);
#pragma omp parallel for schedule(static)
      for (int i = 0; i < n; i++)
        row_loss[i] = softmax_ce_row (logits + (size_t) i * (size_t) classes, labels[i],
                                      classes, n, dlogits != NULL
                                                    ? dlogits + (size_t) i * (size_t) classes
                                                    : NULL);
    }
  for (int i = 0; i < n; i++)
    total += row_loss[i];
  *loss = n > 0 ? (float) (total / n) : 0.0f;
}

void
tach_cpu_accuracy (TachBackend *be, const float *logits, const void *labels, int n,
                   int classes, float *acc)
{
  int correct = 0;

  if (classes == 1)
    {
      const float *y = labels;

      /* sigmoid(z) > 0.5 exactly when z > 0. */
      for (int i = 0; i < n; i++)
        correct += (logits[i] > 0.0f) == (y[i] > 0.5f);
    }
  else
    {
      const int32_t *y = labels;

      for (int i = 0; i < n; i++)
        {
          const float *z = logits + (size_t) i * (size_t) classes;
          int best = 0;

          for (int j = 1; j < classes; j++)
            if (z[j] > z[best])
              best = j;
          correct += best == y[i];
        }
    }
  *acc = n > 0 ? (float) ((double) correct / n) : 0.0f;
}

/* -------------------------------------------------------------- dropout */

/* Elements per block of the parallel loop, each block one vector loop. */
#define DROPOUT_BLOCK 4096

/* Elements [i0, i1): kept (and scaled) iff tach_rand_uniform >= p, its
 * draws in vectors (on AVX2 too: tach_rand_mul); @in may be @out.  Every
 * element is scaled and then selected, so that no load is conditional. */
TACH_CPU_SIMD_BODY void
dropout_span_body (const float *in, float *out, size_t i0, size_t i1, float p, float scale,
                   guint64 key, guint64 first)
{
#pragma omp simd
  for (size_t i = i0; i < i1; i++)
    {
      float kept = in[i] * scale;

      out[i] = tach_rand_uniform_key (key, first + i) >= p ? kept : 0.0f;
    }
}

TACH_CPU_SIMD_DISPATCH (static, dropout_span,
                        (const float *in, float *out, size_t i0, size_t i1, float p, float scale,
                         guint64 key, guint64 first),
                        (in, out, i0, i1, p, scale, key, first))

static void
dropout_apply (TachBackend *be, const float *in, float *out, size_t n, float p,
               guint64 seed, guint64 counter, guint64 first)
{
  float scale;
  guint64 key;
  size_t blocks;

  if (p <= 0.0f)
    {
      if (out != in)
        memmove (out, in, n * sizeof (float));
      return;
    }
  if (p >= 1.0f)
    {
      memset (out, 0, n * sizeof (float));
      return;
    }
  scale = 1.0f / (1.0f - p);
  key = tach_rand_key (seed, counter);
  blocks = (n + DROPOUT_BLOCK - 1) / DROPOUT_BLOCK;
  tach_cpu_bind_threads (be);
#pragma omp parallel for if (n >= TACH_CPU_PARALLEL_MIN)
  for (size_t b = 0; b < blocks; b++)
    dropout_span (in, out, b * DROPOUT_BLOCK, MIN (n, (b + 1) * DROPOUT_BLOCK), p, scale, key,
                  first);
}

void
tach_cpu_dropout_fwd (TachBackend *be, const float *x, float *y, size_t n, float p,
                      guint64 seed, guint64 counter, guint64 first)
{
  dropout_apply (be, x, y, n, p, seed, tach_backend_host_counter (be, counter), first);
}

void
tach_cpu_dropout_bwd (TachBackend *be, const float *dy, float *dx, size_t n, float p,
                      guint64 seed, guint64 counter, guint64 first)
{
  /* The mask is regenerated from the same counters: nothing is stored. */
  dropout_apply (be, dy, dx, n, p, seed, tach_backend_host_counter (be, counter), first);
}

/* ---------------------------------------------- embedding and sampling */

/* Row @i of the gather: the table's row idx[i]. */
static inline void
embedding_row (const float *table, const int32_t *idx, float *out, int i, int dim)
{
  memcpy (out + (size_t) i * (size_t) dim, table + (size_t) idx[i] * (size_t) dim,
          sizeof (float) * (size_t) dim);
}

gboolean
tach_cpu_tokens_valid (TachBackend *be, const int32_t *idx, int n)
{
  for (int i = 0; i < n; i++)
    if (idx[i] < 0)
      {
        tach_backend_fail (be, TACH_ERROR_DATA,
                           _("a token index is negative; check the corpus: index %d at %d"),
                           idx[i], i);
        return FALSE;
      }
  return TRUE;
}

void
tach_cpu_embedding (TachBackend *be, const float *table, const int32_t *idx, float *out,
                    int n, int dim)
{
  if (!tach_cpu_tokens_valid (be, idx, n))
    return;
  /* A few rows (generation's context) stay outside OpenMP: a region that
   * its if clause keeps to one thread still builds a team of one, about
   * 0.2 us a call here, 2% of a generated token. */
  if ((size_t) n * (size_t) dim < TACH_CPU_PARALLEL_MIN)
    {
      for (int i = 0; i < n; i++)
        embedding_row (table, idx, out, i, dim);
      return;
    }
  /* Split between the threads: alone on the engine thread, W2's training
   * gather (1024 rows of 400 bytes) was 1.3% of its step. */
  tach_cpu_bind_threads (be);
#pragma omp parallel for
  for (int i = 0; i < n; i++)
    embedding_row (table, idx, out, i, dim);
}

/* sample_tokens, and with @loss the mean -log p of the drawn tokens in
 * softmax_ce's arithmetic: each row's log-sum-exp from the same
 * exponentials that drew its token (tach_sample_row), the value softmax_ce
 * computes, without a second pass of exponentials. */
static void
sample_rows (const float *logits, int n, int vocab, guint64 seed, guint64 counter,
             int32_t *tok, int32_t *ctx, int len, float *loss)
{
  double total = 0.0;

  for (int r = 0; r < n; r++)
    {
      const float *z = logits + (size_t) r * (size_t) vocab;
      double lse;
      int32_t pick = tach_sample_row (z, vocab, tach_rand_uniform (seed, counter, (guint64) r),
                                      loss != NULL ? &lse : NULL);

      tok[r] = pick;
      if (loss != NULL)
        total += lse - z[pick];
      if (ctx != NULL && len > 0)
        {
          int32_t *row = ctx + (size_t) r * (size_t) len;

          memmove (row, row + 1, sizeof (int32_t) * (size_t) (len - 1));
          row[len - 1] = pick;
        }
    }
  if (loss != NULL)
    *loss = n > 0 ? (float) (total / n) : 0.0f;
}

void
tach_cpu_sample_tokens (TachBackend *be, const float *logits, int n, int vocab,
                        guint64 seed, guint64 counter, int32_t *tok, int32_t *ctx, int len)
{
  sample_rows (logits, n, vocab, seed, tach_backend_host_counter (be, counter), tok, ctx, len,
               NULL);
}

void
tach_cpu_sample_tokens_nll (TachBackend *be, const float *logits, int n, int vocab,
                            guint64 seed, guint64 counter, int32_t *tok, int32_t *ctx, int len,
                            float *loss)
{
  sample_rows (logits, n, vocab, seed, tach_backend_host_counter (be, counter), tok, ctx, len,
               loss);
}

/* ----------------------------------------------------------- optimisers */

/* Adam's elements in spans, each on the widest vectors the CPU has: the
 * square root and division per element are what the update costs, and
 * baseline SSE does four at a time. */
#define ADAM_CHUNK 4096

TACH_CPU_SIMD_BODY void
adam_span_body (size_t n, float *restrict param, const float *restrict grad, float *restrict m,
                float *restrict v, float lr, float beta1, float beta2, float eps, float inv_c1,
                float inv_sqrt_c2)
{
#pragma omp simd
  for (size_t i = 0; i < n; i++)
    {
      float g = grad[i];
      float mi = beta1 * m[i] + (1.0f - beta1) * g;
      float vi = beta2 * v[i] + (1.0f - beta2) * g * g;

      m[i] = mi;
      v[i] = vi;
      param[i] -= lr * (mi * inv_c1) / (sqrtf (vi) * inv_sqrt_c2 + eps);
    }
}

TACH_CPU_SIMD_DISPATCH (static, adam_span,
                        (size_t n, float *restrict param, const float *restrict grad,
                         float *restrict m,
                         float *restrict v, float lr, float beta1, float beta2, float eps,
                         float inv_c1, float inv_sqrt_c2),
                        (n, param, grad, m, v, lr, beta1, beta2, eps, inv_c1, inv_sqrt_c2))

void
tach_cpu_adam (TachBackend *be, float *param, const float *grad, float *m, float *v, size_t n,
               float lr, float beta1, float beta2, float eps, float *t)
{
  float inv_c1, inv_sqrt_c2;

  *t += 1.0f;
  /* Kingma & Ba's bias-corrected form, eps added to sqrt(v_hat), as the
   * double-precision reference (and PyTorch) compute it, in the form every
   * backend shares. */
  tach_adam_corrections (beta1, beta2, *t, &inv_c1, &inv_sqrt_c2);
  tach_cpu_bind_threads (be);
#pragma omp parallel for if (n >= TACH_CPU_PARALLEL_MIN)
  for (size_t i0 = 0; i0 < n; i0 += ADAM_CHUNK)
    adam_span (MIN (n - i0, ADAM_CHUNK), param + i0, grad + i0, m + i0, v + i0, lr, beta1,
               beta2, eps, inv_c1, inv_sqrt_c2);
}

void
tach_cpu_sgd (TachBackend *be, float *param, const float *grad, size_t n, float lr)
{
  tach_cpu_bind_threads (be);
#pragma omp parallel for if (n >= TACH_CPU_PARALLEL_MIN)
  for (size_t i = 0; i < n; i++)
    param[i] -= lr * grad[i];
}
