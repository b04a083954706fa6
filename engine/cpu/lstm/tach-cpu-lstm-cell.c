/* tach-cpu-lstm-cell.c: one LSTM cell step (the unrolled mode's cell op),
 * forward and backward, in libm's expf and tanhf.
 *
 * Threads: the engine thread; the loops run on the backend's OpenMP pool.
 */
#include <math.h>

#include "tach-cpu-private.h"

/* As in tach-cpu-lstm.c: lets GCC if-convert and vectorise; Tach never
 * enables FP traps, so this changes no result. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("no-trapping-math")
#endif

static inline float
sigmoidf (float x)
{
  return 1.0f / (1.0f + expf (-x));
}

void
tach_cpu_lstm_cell_fwd (TachBackend *be, int n, int h, float *gates, const float *bias,
                        const float *c_prev, float *c, float *h_out, int ldh)
{
  tach_cpu_bind_threads (be);
#pragma omp parallel for if ((size_t) n * (size_t) h * 4 >= TACH_CPU_PARALLEL_MIN)
  for (int r = 0; r < n; r++)
    {
      float *gr = gates + (size_t) r * 4 * (size_t) h;
      float *cr = c + (size_t) r * (size_t) h;
      const float *cp = c_prev != NULL ? c_prev + (size_t) r * (size_t) h : NULL;
      float *hr = h_out + (size_t) r * (size_t) ldh;

      for (int j = 0; j < h; j++)
        {
          float ai = gr[j], af = gr[h + j], ag = gr[2 * h + j], ao = gr[3 * h + j];
          float i, f, g, o, cv;

          if (bias != NULL)
            {
              ai += bias[j];
              af += bias[h + j];
              ag += bias[2 * h + j];
              ao += bias[3 * h + j];
            }
          i = sigmoidf (ai);
          f = sigmoidf (af);
          g = tanhf (ag);
          o = sigmoidf (ao);
          cv = i * g + (cp != NULL ? f * cp[j] : 0.0f);
          gr[j] = i;
          gr[h + j] = f;
          gr[2 * h + j] = g;
          gr[3 * h + j] = o;
          cr[j] = cv;
          hr[j] = o * tanhf (cv);
        }
    }
}

void
tach_cpu_lstm_cell_bwd (TachBackend *be, int n, int h, const float *gates, const float *c_prev,
                        const float *c, const float *dh, int lddh, const float *dc,
                        float *dgates, float *dc_prev)
{
  tach_cpu_bind_threads (be);
  /* Each element reads all its inputs before writing, so dgates may alias
   * gates and dc_prev may alias dc. */
#pragma omp parallel for if ((size_t) n * (size_t) h * 4 >= TACH_CPU_PARALLEL_MIN)
  for (int r = 0; r < n; r++)
    {
      const float *gr = gates + (size_t) r * 4 * (size_t) h;
      const float *cr = c + (size_t) r * (size_t) h;
      const float *cp = c_prev != NULL ? c_prev + (size_t) r * (size_t) h : NULL;
      const float *dhr = dh != NULL ? dh + (size_t) r * (size_t) lddh : NULL;
      const float *dcr = dc != NULL ? dc + (size_t) r * (size_t) h : NULL;
      float *dgr = dgates + (size_t) r * 4 * (size_t) h;
      float *dcp = dc_prev != NULL ? dc_prev + (size_t) r * (size_t) h : NULL;

      for (int j = 0; j < h; j++)
        {
          float i = gr[j], f = gr[h + j], g = gr[2 * h + j], o = gr[3 * h + j];
          float tc = tanhf (cr[j]);
          float dhv = dhr != NULL ? dhr[j] : 0.0f;
          float dct = (dcr != NULL ? dcr[j] : 0.0f) + dhv * o * (1.0f - tc * tc);
          float cpv = cp != NULL ? cp[j] : 0.0f;

          dgr[j] = dct * g * i * (1.0f - i);
          dgr[h + j] = dct * cpv * f * (1.0f - f);
          dgr[2 * h + j] = dct * i * (1.0f - g * g);
          dgr[3 * h + j] = dhv * tc * o * (1.0f - o);
          if (dcp != NULL)
            dcp[j] = dct * f;
        }
    }
}
