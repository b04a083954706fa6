/* tach-progress.c: a run's progress as lines for another process
 * (tach-progress.h): written by tach-cli run --progress, read by the
 * window's multi-rank runs. */
#include "tach-progress.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The phases a line carries, in its order: the keys and the sample's
 * fields. */
static const struct {
  const char *key;
  gsize       sample;    /* offset in TachSample */
  gsize       progress;  /* offset in TachProgress */
} phases[] = {
  { "step_ms", G_STRUCT_OFFSET (TachSample, step_ms), G_STRUCT_OFFSET (TachProgress, step_ms) },
  { "feed_ms", G_STRUCT_OFFSET (TachSample, feed_ms), G_STRUCT_OFFSET (TachProgress, feed_ms) },
  { "compute_ms", G_STRUCT_OFFSET (TachSample, compute_ms), G_STRUCT_OFFSET (TachProgress, compute_ms) },
  { "sync_ms", G_STRUCT_OFFSET (TachSample, sync_ms), G_STRUCT_OFFSET (TachProgress, sync_ms) },
  { "host_ms", G_STRUCT_OFFSET (TachSample, host_ms), G_STRUCT_OFFSET (TachProgress, host_ms) },
  { "comm_ms", G_STRUCT_OFFSET (TachSample, comm_ms), G_STRUCT_OFFSET (TachProgress, comm_ms) },
  { "pack_ms", G_STRUCT_OFFSET (TachSample, pack_ms), G_STRUCT_OFFSET (TachProgress, pack_ms) },
};

G_STATIC_ASSERT (G_N_ELEMENTS (phases) == G_N_ELEMENTS (((TachProgress *) NULL)->sums[0]));

#define FIELD(base, offset) (*(double *) ((char *) (base) + (offset)))

static void
clear_figures (TachProgress *progress)
{
  progress->window = 0;
  progress->warmup = FALSE;
  progress->rate = NAN;
  for (guint i = 0; i < G_N_ELEMENTS (phases); i++)
    FIELD (progress, phases[i].progress) = NAN;
}

void
tach_progress_init (TachProgress *progress, guint rank, guint ranks, guint64 steps)
{
  memset (progress, 0, sizeof *progress);
  progress->rank = rank;
  progress->ranks = MAX (ranks, 1);
  progress->steps = steps;
  progress->loss = NAN;
  progress->wall_s = NAN;
  clear_figures (progress);
}

void
tach_progress_add (TachProgress *progress, const TachSample *sample)
{
  guint w = sample->warmup ? 1 : 0;

  progress->step = MAX (progress->step, sample->step + 1);
  if (!isnan (sample->loss))
    progress->loss = sample->loss;
  if (isfinite (sample->wall_s))
    progress->wall_s = sample->wall_s;
  /* A phase not observed (NaN: comm_ms alone) adds nothing; its mean is
   * then NaN, as the samples say. */
  for (guint i = 0; i < G_N_ELEMENTS (phases); i++)
    progress->sums[w][i] += FIELD (sample, phases[i].sample);
  progress->counts[w]++;
}

static void
append_number (GString *line, const char *key, double value)
{
  char buffer[G_ASCII_DTOSTR_BUF_SIZE];

  if (isnan (value))
    g_string_append_printf (line, " %s=nan", key);
  else
    g_string_append_printf (line, " %s=%s", key,
                            g_ascii_formatd (buffer, sizeof buffer, "%.6g", value));
}

char *
tach_progress_take_line (TachProgress *progress)
{
  GString *line = g_string_new (TACH_PROGRESS_PREFIX);
  guint w = progress->counts[0] > 0 ? 0 : 1;
  guint n = progress->counts[w];

  clear_figures (progress);
  if (n > 0)
    {
      progress->window = n;
      progress->warmup = w == 1;
      for (guint i = 0; i < G_N_ELEMENTS (phases); i++)
        FIELD (progress, phases[i].progress) = progress->sums[w][i] / n;
      progress->rate = progress->step_ms > 0.0 ? 1000.0 / progress->step_ms : NAN;
    }
  g_string_append_printf (line, "rank=%u ranks=%u step=%" G_GUINT64_FORMAT
                          " steps=%" G_GUINT64_FORMAT " window=%u warmup=%d",
                          progress->rank, progress->ranks, progress->step, progress->steps,
                          progress->window, progress->warmup ? 1 : 0);
  append_number (line, "wall_s", progress->wall_s);
  append_number (line, "rate", progress->rate);
  for (guint i = 0; i < G_N_ELEMENTS (phases); i++)
    append_number (line, phases[i].key, FIELD (progress, phases[i].progress));
  append_number (line, "loss", progress->loss);
  /* Last, so that a line cut short anywhere, even within its last figure,
   * lacks it. */
  g_string_append (line, " end=1\n");
  memset (progress->sums, 0, sizeof progress->sums);
  memset (progress->counts, 0, sizeof progress->counts);
  return g_string_free (line, FALSE);
}

static gboolean
parse_double (const char *value, double *out)
{
  char *end = NULL;

  if (g_str_equal (value, "nan"))
    {
      *out = NAN;
      return TRUE;
    }
  *out = g_ascii_strtod (value, &end);
  return end != value && *end == '\0' && isfinite (*out);
}

/* The keys every line of this version carries besides the phases, as bits
 * of the parser's tally. */
enum {
  KEY_RANK = 1 << 0, KEY_RANKS = 1 << 1, KEY_STEP = 1 << 2, KEY_STEPS = 1 << 3,
  KEY_WINDOW = 1 << 4, KEY_WARMUP = 1 << 5, KEY_WALL_S = 1 << 6, KEY_RATE = 1 << 7,
  KEY_LOSS = 1 << 8, KEY_END = 1 << 9, KEY_PHASE0 = 1 << 10,
  KEY_ALL = (KEY_PHASE0 << G_N_ELEMENTS (phases)) - 1
};

gboolean
tach_progress_parse (const char *line, TachProgress *out)
{
  g_auto(GStrv) words = NULL;
  const char *start, *next;
  guint seen = 0;

  /* mpirun hands the ranks' output on in the pieces it read, so a line
   * can reach the reader after the start of another (a rank's line or
   * words cut short, then the next whole line): the last line begun is
   * the one that can be whole. */
  start = line != NULL ? strstr (line, TACH_PROGRESS_PREFIX) : NULL;
  if (start == NULL)
    return FALSE;
  while ((next = strstr (start + 1, TACH_PROGRESS_PREFIX)) != NULL)
    start = next;
  tach_progress_init (out, 0, 1, 0);
  words = g_strsplit_set (start + strlen (TACH_PROGRESS_PREFIX), " \r\n", -1);
  for (guint i = 0; words[i] != NULL; i++)
    {
      char *eq = strchr (words[i], '=');
      const char *key = words[i], *value;
      guint64 whole = 0;
      gboolean known = FALSE;

      if (*key == '\0')
        continue;
      if (eq == NULL)
        return FALSE;
      *eq = '\0';
      value = eq + 1;
      for (guint p = 0; p < G_N_ELEMENTS (phases); p++)
        if (g_str_equal (key, phases[p].key))
          {
            if (!parse_double (value, &FIELD (out, phases[p].progress)))
              return FALSE;
            seen |= KEY_PHASE0 << p;
            known = TRUE;
          }
      if (known)
        continue;
      if (g_str_equal (key, "rate") || g_str_equal (key, "loss") || g_str_equal (key, "wall_s"))
        {
          if (!parse_double (value, g_str_equal (key, "rate") ? &out->rate
                                    : g_str_equal (key, "loss") ? &out->loss : &out->wall_s))
            return FALSE;
          seen |= g_str_equal (key, "rate") ? KEY_RATE
                  : g_str_equal (key, "loss") ? KEY_LOSS : KEY_WALL_S;
          continue;
        }
      /* Whole numbers: the rank (of at most 65536, as the ranks knob), the
       * steps and the flags. */
      if (!g_ascii_string_to_unsigned (value, 10, 0, G_MAXUINT64, &whole, NULL))
        return FALSE;
      if (g_str_equal (key, "rank") && whole < 65536)
        out->rank = (guint) whole, seen |= KEY_RANK;
      else if (g_str_equal (key, "ranks") && whole >= 1 && whole <= 65536)
        out->ranks = (guint) whole, seen |= KEY_RANKS;
      else if (g_str_equal (key, "step"))
        out->step = whole, seen |= KEY_STEP;
      else if (g_str_equal (key, "steps"))
        out->steps = whole, seen |= KEY_STEPS;
      else if (g_str_equal (key, "window") && whole <= G_MAXUINT)
        out->window = (guint) whole, seen |= KEY_WINDOW;
      else if (g_str_equal (key, "warmup") && whole <= 1)
        out->warmup = whole == 1, seen |= KEY_WARMUP;
      else if (g_str_equal (key, "end") && whole == 1)
        seen |= KEY_END;
      else if (!g_str_equal (key, "rank") && !g_str_equal (key, "ranks")
               && !g_str_equal (key, "window") && !g_str_equal (key, "warmup")
               && !g_str_equal (key, "end"))
        continue;  /* a key a later version added */
      else
        return FALSE;
    }
  /* Every key this version writes, end=1 last: a line cut short by other
   * output (the rest of it then on a line of its own) is refused rather
   * than read with its figures missing or cut. */
  return seen == KEY_ALL && out->rank < out->ranks;
}
