/* tach-ranks-check.c: the ranks agree before they run: every rank's
 * settings (and its command line) against rank 0's, and any block of bytes
 * that must be the same on every rank.  Rank 0 gathers, compares and
 * broadcasts its verdict, so every rank fails with the same message.
 *
 * Threads: the main thread, before the run starts.
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-config-private.h"
#include "tach-ranks-private.h"

#ifdef HAVE_MPI

/* Gathers every rank's NUL-terminated @text onto rank 0 (*all, size
 * strings, rank 0 only). */
static gboolean
gather_strings (TachRanks *ranks, const char *text, GStrv *all, GError **error)
{
  g_autoptr(GPtrArray) parts = NULL;

  if (!tach_ranks_gather_bytes (ranks, text, strlen (text) + 1, &parts, error))
    return FALSE;
  if (parts != NULL)
    {
      *all = g_new0 (char *, parts->len + 1);
      for (guint r = 0; r < parts->len; r++)
        {
          gsize n = 0;
          const char *p = g_bytes_get_data (parts->pdata[r], &n);

          (*all)[r] = g_strndup (p, n);
        }
    }
  return TRUE;
}

/* Broadcasts rank 0's verdict (empty: none) to every rank. */
static gboolean
bcast_string (TachRanks *ranks, char **text, GError **error)
{
  int len = ranks->rank == 0 ? (int) strlen (*text) + 1 : 0;

  if (!tach_ranks_bcast_bytes (ranks, &len, sizeof len, "settings check", error))
    return FALSE;
  if (ranks->rank != 0)
    *text = g_malloc0 (len);
  return tach_ranks_bcast_bytes (ranks, *text, len, "settings check", error);
}

#endif /* HAVE_MPI */

/* "knob=value" lines of every knob of @config, and the version. */
static char *
config_lines (const TachConfig *config)
{
  g_autoptr(GString) text = g_string_new (NULL);
  guint n_knobs = 0;
  const TachKnobInfo *knobs = tach_knobs (&n_knobs);

  g_string_append_printf (text, "version=%s\n", TACH_VERSION_STRING);
  for (guint k = 0; k < n_knobs; k++)
    {
      g_autofree char *value = tach_config_get (config, knobs[k].name);

      g_string_append_printf (text, "%s=%s\n", knobs[k].name, value != NULL ? value : "");
    }
  return g_string_free (g_steal_pointer (&text), FALSE);
}

/* The first line where @a and @b differ, as "name", "a value", "b value";
 * FALSE when they are the same. */
static gboolean
first_difference (const char *a, const char *b, char **name, char **va, char **vb)
{
  g_auto(GStrv) la = g_strsplit (a, "\n", -1);
  g_auto(GStrv) lb = g_strsplit (b, "\n", -1);

  for (guint i = 0; la[i] != NULL || lb[i] != NULL; i++)
    {
      const char *x = la[i] != NULL ? la[i] : "";
      const char *y = lb[i] != NULL ? lb[i] : "";
      const char *ex = strchr (x, '='), *ey = strchr (y, '=');

      if (g_str_equal (x, y))
        {
          if (la[i] == NULL || lb[i] == NULL)
            break;
          continue;
        }
      *name = ex != NULL ? g_strndup (x, (gsize) (ex - x)) : g_strdup (x);
      *va = g_strdup (ex != NULL ? ex + 1 : "");
      *vb = g_strdup (ey != NULL ? ey + 1 : "");
      return TRUE;
    }
  return FALSE;
}

gboolean
tach_ranks_check_config (TachRanks *ranks, const TachConfig *config, GError **error)
{
#ifdef HAVE_MPI
  g_autofree char *mine = NULL;
  g_autofree char *verdict = NULL;
  g_auto(GStrv) all = NULL;

  if (ranks == NULL)
    return TRUE;
  mine = config_lines (config);
  if (!gather_strings (ranks, mine, &all, error))
    return FALSE;
  if (ranks->rank == 0)
    {
      verdict = g_strdup ("");
      for (int r = 1; r < ranks->size && verdict[0] == '\0'; r++)
        {
          g_autofree char *name = NULL, *va = NULL, *vb = NULL;

          if (!first_difference (all[0], all[r], &name, &va, &vb))
            continue;
          g_free (verdict);
          if (g_str_equal (name, "version"))
            verdict = g_strdup_printf (_("rank %d runs Tach %s, rank 0 Tach %s: start every"
                                         " rank from the same build"), r, vb, va);
          else
            {
              const TachKnobInfo *knob = tach_knob_lookup (name);
              g_autofree char *mention_0 = knob != NULL ? tach_knob_mention (knob->id, va)
                                                        : g_strdup (name);
              g_autofree char *mention_r = knob != NULL ? tach_knob_mention (knob->id, vb)
                                                        : g_strdup (name);

              verdict = g_strdup_printf (_("rank %d runs with %s, rank 0 with %s: start every"
                                           " rank with the same settings"),
                                         r, mention_r, mention_0);
            }
        }
    }
  if (!bcast_string (ranks, &verdict, error))
    return FALSE;
  if (verdict[0] != '\0')
    {
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG, "%s", verdict);
      return FALSE;
    }
  return TRUE;
#else
  (void) ranks;
  (void) config;
  (void) error;
  (void) first_difference;
  (void) config_lines;
  return TRUE;
#endif
}

gboolean
tach_ranks_check_world_config (const TachConfig *config, GError **error)
{
  return tach_ranks_check_config (tach_ranks_world (), config, error);
}

gboolean
tach_ranks_check_same_bytes (TachRanks *ranks, const void *data, gsize n, const char *what,
                             GError **error)
{
  guint64 hash = tach_ranks_hash (data, n);

#ifdef HAVE_MPI
  if (ranks != NULL)
    {
      g_autofree guint64 *all = g_new0 (guint64, ranks->size);
      MPI_Request req;

      if (!MPI_TRY (MPI_Iallgather (&hash, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, ranks->comm,
                                    &req), error)
          || !tach_ranks_wait (ranks, &req, "parameter check", 0, NULL, error))
        return FALSE;
      for (int r = 1; r < ranks->size; r++)
        if (all[r] != all[0])
          {
            g_autofree char *mine = g_strdup_printf ("%016" G_GINT64_MODIFIER "x", all[r]);
            g_autofree char *first = g_strdup_printf ("%016" G_GINT64_MODIFIER "x", all[0]);

            g_set_error (error, TACH_ERROR, TACH_ERROR_LIBRARY,
                         _("rank %d's %s differ from rank 0's (hash %s against %s): the ranks"
                           " no longer train the same model"), r, what, mine, first);
            return FALSE;
          }
    }
#else
  (void) ranks;
  (void) what;
  (void) error;
  (void) hash;
#endif
  return TRUE;
}

