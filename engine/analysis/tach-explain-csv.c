/* tach-explain-csv.c: explain.csv, written and read back.
 *
 * tach_explain_csv_append writes an explanation as rows: A's ("from"), one
 * per knob, B's ("to"), under one explain_id, with every figure the
 * Explain view draws and says.  tach_explain_csv_load reads them back, so
 * that a results folder opened in the window shows its explanations as
 * the view drew them when they were measured (issue 42).  The rows are
 * read by the CSV reader that reads runs.csv back (tach-csv-read.c),
 * columns found by name: a file written before a column existed still
 * loads, that column's figures unknown.  An explanation whose rows cannot
 * all be read is skipped whole (a waterfall without a knob's bar would
 * walk to the wrong total) and said so by file and line; the others still
 * load.
 *
 * Threads: whichever thread owns the explanation; loading, any.
 */
#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-csv-private.h"
#include "tach-csv-read-private.h"
#include "tach-explain-private.h"
#include "tach-stats.h"

/* ------------------------------------------------------------- writing */

static const char *const explain_header[] = {
  "explain_id", "date", "workload", "task", "device", "from", "to", "row", "knob",
  "from_value", "to_value", "changes_results", "step_ms", "share_ms", "share_lo_ms",
  "share_hi_ms", "round_min_ms", "round_max_ms", "gap_fraction", "gap_fraction_lo",
  "gap_fraction_hi", "speedup", "speedup_lo", "speedup_hi", "verdict", "feed_ms",
  "compute_ms", "sync_ms", "host_ms", "method", "rounds", "orderings_used", "orderings_drawn",
  "configurations", "unrunnable", "machine_busy",
  /* Added later, at the end: a file written before takes them empty
   * (tach_csv_widen). */
  "comm_ms", "pack_ms", "imbalance_ms",
  /* What the window needs to draw the waterfall and say its words again
   * (tach_explain_csv_load): the step times' and the gap's intervals, the
   * rounds' spread of the gap, what was resolved and what the rounds were
   * asked for. */
  "step_lo_ms", "step_hi_ms", "gap_ms", "gap_lo_ms", "gap_hi_ms", "gap_round_min_ms",
  "gap_round_max_ms", "resolved", "target", "min_rounds", "budget_s", "round_s",
  "budget_ended", "partial",
  /* A's and B's rows: what their runs did with their threads, and the
   * busiest any run saw, for the verdict's words on the load. */
  "busy_worst", "threads_asked", "threads_fewest", "threads_fewer_share", NULL
};

static void
csv_row (TachExplain *explain, GString *out, const char *date, const char *row_kind,
         const TachExplainKnob *knob, const TachExplainCost *cost, double lo, double hi,
         const char *failures, double busy)
{
  TachInterval ratio;
  TachVerdict ratio_verdict = tach_explain_get_speedup (explain, &ratio);

  g_autoptr(GString) row = g_string_new (NULL);
  const TachConfig *config = explain->has_configs ? &explain->from : NULL;
  g_autofree char *task = config != NULL ? tach_config_get (config, "task") : NULL;
  gboolean ranked = tach_explain_has_rank_phases (explain);
  const double *phases;

  tach_csv_add_field (row, explain->id);
  tach_csv_add_field (row, date);
  tach_csv_add_field (row, config != NULL ? tach_workload_to_string (config->workload) : NULL);
  tach_csv_add_field (row, task);
  tach_csv_add_field (row, explain->device_id != NULL ? explain->device_id
                          : config != NULL ? config->device : NULL);
  tach_csv_add_field (row, tach_explain_get_label (explain, FALSE));
  tach_csv_add_field (row, tach_explain_get_label (explain, TRUE));
  tach_csv_add_field (row, row_kind);
  tach_csv_add_field (row, knob != NULL ? knob->key : NULL);
  tach_csv_add_field (row, knob != NULL ? knob->from : NULL);
  tach_csv_add_field (row, knob != NULL ? knob->to : NULL);
  tach_csv_add_field (row, knob == NULL ? NULL : knob->changes_results ? "1" : "0");
  if (knob != NULL)
    {
      tach_csv_add_field (row, NULL);
      tach_csv_add_double (row, knob->share_ms);
      tach_csv_add_double (row, knob->share_ci.lo);
      tach_csv_add_double (row, knob->share_ci.hi);
      tach_csv_add_double (row, knob->share_min_ms);
      tach_csv_add_double (row, knob->share_max_ms);
      tach_csv_add_double (row, knob->fraction);
      tach_csv_add_double (row, knob->fraction_ci.lo);
      tach_csv_add_double (row, knob->fraction_ci.hi);
      for (int c = 0; c < 3; c++)
        tach_csv_add_field (row, NULL);
      tach_csv_add_field (row, tach_verdict_to_string (knob->verdict));
      phases = knob->phase_ms;
    }
  else
    {
      gboolean to = g_str_equal (row_kind, "to");

      tach_csv_add_double (row, cost->step_ms);
      for (int c = 0; c < 3; c++)
        tach_csv_add_field (row, NULL);
      tach_csv_add_double (row, lo);
      tach_csv_add_double (row, hi);
      for (int c = 0; c < 3; c++)
        tach_csv_add_field (row, NULL);
      /* B's row carries the comparison: its speed-up over A. */
      tach_csv_add_double (row, to ? ratio.value : NAN);
      tach_csv_add_double (row, to ? ratio.lo : NAN);
      tach_csv_add_double (row, to ? ratio.hi : NAN);
      tach_csv_add_field (row, to ? tach_verdict_to_string (ratio_verdict) : NULL);
      phases = cost->phase_ms;
    }
  for (int p = 0; p < TACH_EXPLAIN_N_SINGLE_PHASES; p++)
    tach_csv_add_double (row, phases[p]);
  tach_csv_add_field (row, explain->exact ? "exact" : "sampled");
  tach_csv_add_uint (row, explain->rounds);
  tach_csv_add_uint (row, explain->orderings_used);
  tach_csv_add_uint (row, explain->n_orderings);
  tach_csv_add_uint (row, explain->masks->len);
  tach_csv_add_field (row, failures);
  tach_csv_add_double (row, busy);
  /* The ranks' phases, empty for a process of its own (not observed). */
  for (int p = TACH_EXPLAIN_N_SINGLE_PHASES; p < TACH_EXPLAIN_N_PHASES; p++)
    tach_csv_add_double (row, ranked ? phases[p] : NAN);
  {
    gboolean from = knob == NULL && g_str_equal (row_kind, "from");
    gboolean to = knob == NULL && !from;
    const TachInterval *ci = from ? &explain->from_ci : &explain->to_ci;

    tach_csv_add_double (row, knob == NULL ? ci->lo : NAN);
    tach_csv_add_double (row, knob == NULL ? ci->hi : NAN);
    /* B's row carries the gap, as it carries the speed-up. */
    tach_csv_add_double (row, to ? explain->gap.value : NAN);
    tach_csv_add_double (row, to ? explain->gap.lo : NAN);
    tach_csv_add_double (row, to ? explain->gap.hi : NAN);
    tach_csv_add_double (row, to ? explain->gap_min : NAN);
    tach_csv_add_double (row, to ? explain->gap_max : NAN);
    tach_csv_add_field (row, knob != NULL ? (knob->resolved ? "1" : "0")
                             : to ? (explain->gap_resolved ? "1" : "0") : NULL);
    tach_csv_add_double (row, explain->target);
    tach_csv_add_uint (row, explain->min_rounds);
    tach_csv_add_double (row, explain->budget_s);
    tach_csv_add_double (row, explain->round_s);
    tach_csv_add_field (row, explain->budget_ended ? "1" : "0");
    tach_csv_add_field (row, explain->partial ? "1" : "0");
    if (knob == NULL)
      {
        TachSummary load;

        tach_explain_side_load (explain, from ? 0 : (1u << explain->n_knobs) - 1, &load);
        tach_csv_add_double (row, load.machine_busy);
        tach_csv_add_double (row, load.threads_asked);
        tach_csv_add_double (row, load.threads_fewest);
        tach_csv_add_double (row, load.threads_fewer_share);
      }
    else
      for (int c = 0; c < 4; c++)
        tach_csv_add_field (row, NULL);
  }
  tach_csv_end_row (row);
  g_string_append_len (out, row->str, row->len);
}

static char *
explain_csv_header (void)
{
  return tach_csv_header_line (explain_header);
}

/* explain.csv alone: whether it takes rows. */
static gboolean
check_explain_file (const char *dir, GError **error)
{
  g_autofree char *header = explain_csv_header ();
  g_autofree char *path = g_build_filename (dir, "explain.csv", NULL);
  g_autoptr(GString) scratch = g_string_new (NULL);

  return tach_csv_load_existing (path, header, scratch, NULL, error);
}

gboolean
tach_explain_csv_check (const char *dir, GError **error)
{
  g_autoptr(TachCsvStream) stream = NULL;

  if (!check_explain_file (dir, error))
    return FALSE;
  /* runs.csv and samples.csv as a stream opens them, freed unused: the
   * folder is left as it was. */
  stream = tach_csv_stream_open (dir, error);
  return stream != NULL;
}

gboolean
tach_explain_csv_append (TachExplain *explain, const char *dir, GError **error)
{
  g_autofree char *header = explain_csv_header ();
  g_autoptr(GString) rows = g_string_new (NULL);
  g_autoptr(GString) failures = g_string_new (NULL);
  g_autoptr(GDateTime) now = g_date_time_new_now_utc ();
  g_autofree char *date = g_date_time_format_iso8601 (now);
  double busy;

  g_return_val_if_fail (explain->done, FALSE);

  /* explain.csv first: a file that takes no rows must leave runs.csv
   * and samples.csv without theirs too. */
  if (g_file_test (dir, G_FILE_TEST_IS_DIR) && !check_explain_file (dir, error))
    return FALSE;
  if (explain->runs->len > 0 && !tach_csv_append (dir, explain->runs, error))
    return FALSE;

  if (explain->id == NULL)
    {
      g_autofree char *stamp = g_date_time_format (now, "%Y%m%dT%H%M%S");

      explain->id = g_strdup_printf ("%s.%06dZ-x%u", stamp, g_date_time_get_microsecond (now),
                                     g_random_int ());
    }
  for (guint i = 0; i < explain->failures->len; i++)
    {
      const TachExplainFailure *f = &g_array_index (explain->failures, TachExplainFailure, i);

      g_string_append_printf (failures, "%s%s: %s", i > 0 ? "; " : "", f->name, f->reason);
    }

  busy = tach_explain_get_machine_busy (explain);
  csv_row (explain, rows, date, "from", NULL, &explain->cost_from, explain->from_min,
           explain->from_max, failures->str, busy);
  for (guint i = 0; i < explain->n_knobs; i++)
    csv_row (explain, rows, date, "knob", &explain->knobs[i], NULL, NAN, NAN, failures->str,
             busy);
  csv_row (explain, rows, date, "to", NULL, &explain->cost_to, explain->to_min,
           explain->to_max, failures->str, busy);

  return tach_csv_append_rows (dir, "explain.csv", header, rows->str, error);
}

/* ------------------------------------------------------------- reading */

/* The rows of one explain_id, as read. */
typedef struct {
  char      *id;
  guint      line;         /* of its first row */
  GPtrArray *knob_rows;    /* GPtrArray* (char*): each knob's fields */
  GPtrArray *from_row, *to_row;
  gboolean   bad;          /* a row of it could not be read */
} Group;

static void
group_free (Group *g)
{
  g_free (g->id);
  g_ptr_array_unref (g->knob_rows);
  g_clear_pointer (&g->from_row, g_ptr_array_unref);
  g_clear_pointer (&g->to_row, g_ptr_array_unref);
  g_free (g);
}

/* Reading one explanation's fields: the first that is not a number is
 * kept, to be said. */
typedef struct {
  GHashTable *columns;
  const char *bad;
} Fields;

static double
num (Fields *f, GPtrArray *row, const char *name)
{
  double v;

  if (!tach_csv_parse_double (tach_csv_field (f->columns, row, name), &v) && f->bad == NULL)
    f->bad = name;
  return v;
}

static guint
count (Fields *f, GPtrArray *row, const char *name)
{
  guint64 v;

  if ((!tach_csv_parse_uint64 (tach_csv_field (f->columns, row, name), &v) || v > G_MAXUINT)
      && f->bad == NULL)
    f->bad = name;
  return (guint) MIN (v, G_MAXUINT);
}

/* A "1"/"0" column; @absent where the file has no such column. */
static gboolean
flag (Fields *f, GPtrArray *row, const char *name, gboolean absent)
{
  const char *text = tach_csv_field (f->columns, row, name);

  return text == NULL || *text == '\0' ? absent : g_str_equal (text, "1");
}

static TachVerdict
verdict (Fields *f, GPtrArray *row)
{
  const char *text = tach_csv_field (f->columns, row, "verdict");

  for (int v = TACH_VERDICT_UNKNOWN; v <= TACH_VERDICT_SIGNIFICANT; v++)
    if (g_strcmp0 (text, tach_verdict_to_string (v)) == 0)
      return v;
  return TACH_VERDICT_UNKNOWN;
}

static void
phases (Fields *f, GPtrArray *row, double *phase_ms)
{
  static const char *const names[TACH_EXPLAIN_N_PHASES] = {
    "feed_ms", "compute_ms", "sync_ms", "host_ms", "comm_ms", "pack_ms", "imbalance_ms"
  };

  for (int p = 0; p < TACH_EXPLAIN_N_PHASES; p++)
    {
      phase_ms[p] = num (f, row, names[p]);
      /* The ranks' phases are empty for a process of its own: none. */
      if (isnan (phase_ms[p]))
        phase_ms[p] = 0;
    }
}

static TachInterval
interval (Fields *f, GPtrArray *row, double value, const char *lo, const char *hi)
{
  return (TachInterval) { value, num (f, row, lo), num (f, row, hi) };
}

/* A or B's row: its step time, phases, rounds' spread and interval, and
 * what its runs did with their threads. */
static void
side (Fields *f, GPtrArray *row, TachExplainCost *cost, double *min_ms, double *max_ms,
      TachInterval *ci, TachSummary *load)
{
  cost->step_ms = num (f, row, "step_ms");
  phases (f, row, cost->phase_ms);
  *min_ms = num (f, row, "round_min_ms");
  *max_ms = num (f, row, "round_max_ms");
  *ci = interval (f, row, cost->step_ms, "step_lo_ms", "step_hi_ms");
  memset (load, 0, sizeof *load);
  load->machine_busy = num (f, row, "busy_worst");
  load->threads_asked = num (f, row, "threads_asked");
  load->threads_fewest = num (f, row, "threads_fewest");
  load->threads_fewer_share = num (f, row, "threads_fewer_share");
}

/* "NAME: REASON; NAME: REASON", as the writer joins them. */
static void
failures (TachExplain *explain, const char *text)
{
  g_auto(GStrv) parts = g_strsplit (text != NULL ? text : "", "; ", -1);

  for (guint i = 0; parts[i] != NULL; i++)
    {
      const char *colon = strstr (parts[i], ": ");
      TachExplainFailure failure = { 0 };

      if (*parts[i] == '\0')
        continue;
      failure.name = colon != NULL ? g_strndup (parts[i], colon - parts[i]) : g_strdup (parts[i]);
      failure.reason = g_strdup (colon != NULL ? colon + 2 : "");
      g_array_append_val (explain->failures, failure);
    }
}

/* The explanation of @g's rows, or NULL with *why saying what is wrong
 * (translated, owned by the caller). */
static TachExplain *
explain_from_group (GHashTable *columns, Group *g, char **why)
{
  guint n = g->knob_rows->len;
  g_autofree const char **keys = g_new0 (const char *, n + 1);
  g_autofree const char **from = g_new0 (const char *, n + 1);
  g_autofree const char **to = g_new0 (const char *, n + 1);
  g_autofree gboolean *changes = g_new0 (gboolean, n + 1);
  Fields f = { columns, NULL };
  GPtrArray *b = g->to_row;
  TachExplain *explain;
  guint rounds;

  if (g->from_row == NULL || g->to_row == NULL || n == 0 || n > TACH_EXPLAIN_MAX_KNOBS)
    {
      *why = g_strdup (g->from_row == NULL ? _("it has no row for A (row “from”)")
                       : g->to_row == NULL ? _("it has no row for B (row “to”)")
                       : _("it has no knob rows, or more than an explanation takes"));
      return NULL;
    }
  for (guint i = 0; i < n; i++)
    {
      GPtrArray *row = g->knob_rows->pdata[i];

      keys[i] = tach_csv_field (columns, row, "knob");
      from[i] = tach_csv_field (columns, row, "from_value");
      to[i] = tach_csv_field (columns, row, "to_value");
      changes[i] = flag (&f, row, "changes_results", FALSE);
      if (keys[i] == NULL || *keys[i] == '\0' || from[i] == NULL || to[i] == NULL)
        {
          *why = g_strdup (_("a knob row names no knob or values"));
          return NULL;
        }
    }
  rounds = count (&f, b, "rounds");
  explain = tach_explain_new_for_knobs (n, keys, from, to, changes,
                                       MAX (rounds, TACH_EXPLAIN_MIN_ROUNDS), 0, NULL);
  if (explain == NULL)
    {
      *why = g_strdup (_("its knobs cannot be explained"));
      return NULL;
    }
  explain->rounds = rounds;
  for (guint i = 0; i < n; i++)
    {
      GPtrArray *row = g->knob_rows->pdata[i];
      TachExplainKnob *knob = &explain->knobs[i];

      knob->share_ms = num (&f, row, "share_ms");
      knob->share_ci = interval (&f, row, knob->share_ms, "share_lo_ms", "share_hi_ms");
      knob->share_min_ms = num (&f, row, "round_min_ms");
      knob->share_max_ms = num (&f, row, "round_max_ms");
      knob->fraction = num (&f, row, "gap_fraction");
      knob->fraction_ci = interval (&f, row, knob->fraction, "gap_fraction_lo", "gap_fraction_hi");
      knob->verdict = verdict (&f, row);
      /* A file from before the column: nothing is said unresolved. */
      knob->resolved = flag (&f, row, "resolved", TRUE);
      phases (&f, row, knob->phase_ms);
    }
  side (&f, g->from_row, &explain->cost_from, &explain->from_min, &explain->from_max,
        &explain->from_ci, &explain->sides[0]);
  side (&f, b, &explain->cost_to, &explain->to_min, &explain->to_max, &explain->to_ci,
        &explain->sides[1]);
  explain->sides_saved = TRUE;
  explain->speedup = interval (&f, b, num (&f, b, "speedup"), "speedup_lo", "speedup_hi");
  explain->gap = interval (&f, b, num (&f, b, "gap_ms"), "gap_lo_ms", "gap_hi_ms");
  if (isnan (explain->gap.value))
    explain->gap.value = explain->cost_to.step_ms - explain->cost_from.step_ms;
  explain->gap_min = num (&f, b, "gap_round_min_ms");
  explain->gap_max = num (&f, b, "gap_round_max_ms");
  explain->gap_resolved = flag (&f, b, "resolved", TRUE);
  explain->exact = g_strcmp0 (tach_csv_field (columns, b, "method"), "exact") == 0;
  explain->orderings_used = count (&f, b, "orderings_used");
  explain->n_orderings = count (&f, b, "orderings_drawn");
  g_array_set_size (explain->masks, MIN (count (&f, b, "configurations"), 1u << n));
  failures (explain, tach_csv_field (columns, b, "unrunnable"));
  explain->target = num (&f, b, "target");
  if (!(explain->target > 0))
    explain->target = TACH_EXPLAIN_DEFAULT_TARGET;
  explain->min_rounds = count (&f, b, "min_rounds");
  explain->budget_s = num (&f, b, "budget_s");
  explain->round_s = num (&f, b, "round_s");
  explain->budget_ended = flag (&f, b, "budget_ended", FALSE);
  explain->partial = flag (&f, b, "partial", FALSE);
  explain->label_from = g_strdup (tach_csv_field (columns, b, "from"));
  explain->label_to = g_strdup (tach_csv_field (columns, b, "to"));
  explain->device_id = g_strdup (tach_csv_field (columns, b, "device"));
  explain->id = g_strdup (g->id);
  explain->done = TRUE;
  if (f.bad != NULL || !isfinite (explain->cost_from.step_ms)
      || !isfinite (explain->cost_to.step_ms))
    {
      /* Translators: a column of explain.csv. */
      *why = g_strdup_printf (_("its %s is not a number"), f.bad != NULL ? f.bad : "step_ms");
      tach_explain_free (explain);
      return NULL;
    }
  /* Shapley shares add up to the gap exactly: where they do not, a knob's
   * row is missing (a malformed row, whose explain_id cannot be read). */
  {
    double sum = 0, gap = explain->cost_to.step_ms - explain->cost_from.step_ms;

    for (guint i = 0; i < n; i++)
      sum += explain->knobs[i].share_ms;
    if (!(fabs (sum - gap) <= 1e-6 * (1 + fabs (explain->cost_from.step_ms)
                                        + fabs (explain->cost_to.step_ms))))
      {
        *why = g_strdup (_("its knobs' shares do not add up to its gap (a knob row is missing "
                           "or damaged)"));
        tach_explain_free (explain);
        return NULL;
      }
  }
  return explain;
}

/* Each row into its explain_id's group, in the order the file has them. */
static void
read_groups (const char *path, Reader *r, GHashTable *columns, guint n_columns,
             GPtrArray *groups, GPtrArray *problems)
{
  g_autoptr(GHashTable) by_id = g_hash_table_new (g_str_hash, g_str_equal);

  for (;;)
    {
      g_autoptr(GPtrArray) fields = g_ptr_array_new_with_free_func (g_free);
      guint line = 0;
      gboolean bad, more = tach_csv_reader_next (r, fields, n_columns, &line, &bad);
      const char *id, *kind;
      Group *g;

      if (!more && !bad)
        break;
      if (bad)
        {
          tach_csv_add_problem (problems, path, line,
                                _("a malformed row (a stray quote or the wrong number of "
                                  "fields): skipped"));
          continue;
        }
      if (fields->len == 1 && *(char *) fields->pdata[0] == '\0')
        continue;
      id = tach_csv_field (columns, fields, "explain_id");
      kind = tach_csv_field (columns, fields, "row");
      if (id == NULL || *id == '\0')
        {
          tach_csv_add_problem (problems, path, line, _("a row without an explain_id: skipped"));
          continue;
        }
      g = g_hash_table_lookup (by_id, id);
      if (g == NULL)
        {
          g = g_new0 (Group, 1);
          g->id = g_strdup (id);
          g->line = line;
          g->knob_rows = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
          g_hash_table_insert (by_id, g->id, g);
          g_ptr_array_add (groups, g);
        }
      if (g_strcmp0 (kind, "knob") == 0)
        g_ptr_array_add (g->knob_rows, g_steal_pointer (&fields));
      else if (g_strcmp0 (kind, "from") == 0 && g->from_row == NULL)
        g->from_row = g_steal_pointer (&fields);
      else if (g_strcmp0 (kind, "to") == 0 && g->to_row == NULL)
        g->to_row = g_steal_pointer (&fields);
      else
        g->bad = TRUE;
    }
}

gboolean
tach_explain_csv_load (const char *dir, GPtrArray *explains, GPtrArray *problems,
                       GError **error)
{
  g_autofree char *path = g_build_filename (dir, "explain.csv", NULL);
  g_autofree char *text = NULL;
  g_autoptr(GError) local = NULL;
  g_autoptr(GPtrArray) fields = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GPtrArray) groups = g_ptr_array_new_with_free_func ((GDestroyNotify) group_free);
  g_autoptr(GHashTable) columns = NULL;
  const char *nul;
  guint line = 0;
  gsize len = 0;
  gboolean bad;
  Reader r;

  g_return_val_if_fail (dir != NULL && explains != NULL, FALSE);
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    return TRUE;
  if (!g_file_get_contents (path, &text, &len, &local))
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   _("%s: %s: the folder opens without its explanations"), path, local->message);
      return FALSE;
    }
  /* A NUL byte (a file cut by a crash, filled with zeros) ends C strings
   * early: the rows from its line on are not read, and said so. */
  nul = memchr (text, '\0', len);
  if (nul != NULL)
    {
      line = 1;
      const char *start = text;

      for (const char *p = text; p < nul; p++)
        if (*p == '\n')
          {
            line++;
            start = p + 1;
          }
      tach_csv_add_problem (problems, path, line,
                            _("a NUL byte (a file cut short or overwritten): the rows from "
                              "here on are skipped"));
      len = (gsize) (start - text);
    }
  r = (Reader) { text, text + len, 1, FALSE };
  if (!tach_csv_reader_next (&r, fields, 0, &line, &bad)
      || tach_csv_field (columns = tach_csv_columns_from_header (fields), fields, "explain_id") == NULL
      || tach_csv_field (columns, fields, "row") == NULL)
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_DATA,
                   _("%s:1: not an explain.csv header (it needs explain_id and row columns): "
                     "the folder opens without its explanations"), path);
      return FALSE;
    }
  read_groups (path, &r, columns, fields->len, groups, problems);

  for (guint i = 0; i < groups->len; i++)
    {
      Group *g = groups->pdata[i];
      g_autofree char *why = NULL;
      TachExplain *explain = g->bad ? NULL : explain_from_group (columns, g, &why);
      g_autofree char *msg = NULL;

      if (explain != NULL)
        {
          g_ptr_array_add (explains, explain);
          continue;
        }
      /* Translators: an explain_id and why its rows cannot be read. */
      msg = g_strdup_printf (_("the explanation %s cannot be read, %s: skipped"), g->id,
                             why != NULL ? why : _("a row of it is neither from, knob nor to, "
                                                   "or repeats A's or B's"));
      tach_csv_add_problem (problems, path, g->line, msg);
    }
  return TRUE;
}
