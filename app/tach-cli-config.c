/* tach-cli-config.c: what every command shares, below the commands and
 * main() (tach-cli.c): the configuration made from a command's options
 * (workload, preset, knobs in the order given), the notes on the knobs
 * given that do not apply, and how a refusal exits (a usage error, exit 2;
 * otherwise by the error's code).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include <glib/gi18n.h>

#include "tach-cli-private.h"

gboolean tach_cli_quiet_usage;

void
tach_cli_usage_error (const char *format, ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);

  /* Under mpirun, every rank started with rank 0's command line finds the
   * same fault in it: rank 0 says it for the job. */
  if (tach_cli_quiet_usage)
    return;
  fprintf (stderr, "tach-cli: %s\n", message);
  fprintf (stderr, _("Try 'tach-cli --help' for more information.\n"));
}

int
tach_cli_exit_code_for_error (const GError *error)
{
  if (error != NULL && error->domain == TACH_ERROR &&
      (error->code == TACH_ERROR_INVALID_CONFIG ||
       error->code == TACH_ERROR_UNSUPPORTED))
    return TACH_CLI_EXIT_USAGE;
  return TACH_CLI_EXIT_FAILURE;
}

gboolean
tach_cli_build_config (const TachCliOptions *options,
                       const char           *preset,
                       TachConfig           *config,
                       GError              **error)
{
  TachWorkload workload;

  if (!tach_workload_from_string (options->workload, &workload, error))
    return FALSE;
  tach_config_init (config, workload);

  if (preset != NULL && !tach_config_apply_preset (config, preset, error))
    return FALSE;
  /* Under mpirun every rank trains, unless --ranks 1 (rank 0 alone). */
  if (tach_ranks_world_size () > 1)
    config->ranks = tach_ranks_world_size ();

  return tach_cli_apply_knobs (options, config, error);
}

gboolean
tach_cli_join_ranks (const TachConfig *config, const TachCliOptions **options,
                     TachCliOptions *quiet)
{
  g_autoptr(GError) error = NULL;

  if (tach_ranks_world_size () == 1)
    return TRUE;
  if (!tach_ranks_check_world_config (config, &error))
    {
      if (tach_ranks_world_rank () == 0)
        tach_cli_usage_error ("%s", error->message);
      return FALSE;
    }
  /* Rank 0 holds every rank's figures once a run has ended: the outputs
   * are its alone. */
  if (tach_ranks_world_rank () != 0)
    {
      *quiet = **options;
      quiet->csv_dir = NULL;
      quiet->tensorboard_dir = NULL;
      quiet->trace_path = NULL;
      *options = quiet;
    }
  return TRUE;
}

gboolean
tach_cli_apply_knobs (const TachCliOptions *options,
                      TachConfig           *config,
                      GError              **error)
{
  for (guint i = 0; i < options->knobs->len; i++)
    {
      const TachCliKnob *knob = &g_array_index (options->knobs, TachCliKnob, i);

      if (!tach_config_set (config, knob->key, knob->value, error))
        return FALSE;
    }

  return TRUE;
}

void
tach_cli_print_notices (const TachCliOptions *options, const TachConfig *config)
{
  g_autoptr(GHashTable) said = g_hash_table_new (g_str_hash, g_str_equal);

  /* Under mpirun, rank 0 says it for the job. */
  if (tach_ranks_world_rank () != 0)
    return;
  /* A data-parallel preset alone: its own knobs are the ranks'. */
  if (options->preset != NULL && config->ranks <= 1)
    {
      g_autoptr(GPtrArray) presets = tach_presets_for_workload (config->workload);

      for (guint i = 0; i < presets->len; i++)
        {
          const TachPreset *preset = g_ptr_array_index (presets, i);
          const char *why = NULL;

          if (preset->between_ranks && g_str_equal (preset->name, options->preset))
            {
              tach_config_knob_applies (config, "grad-sync", &why);
              fprintf (stderr, _("tach-cli: note: preset %s sets how gradients are synchronised,"
                                 " which does not apply here (%s): alone, it runs tuned's other"
                                 " modes\n"), preset->name, why != NULL ? why : "");
            }
        }
    }
  /* Only the knobs given: a preset's or a default's unused knob is no
   * surprise.  A knob given twice is said once. */
  for (guint i = options->knobs->len; i-- > 0;)
    {
      const TachCliKnob *knob = &g_array_index (options->knobs, TachCliKnob, i);
      const TachKnobInfo *info = tach_knob_lookup (knob->key);
      const char *why = NULL;

      if (info == NULL || !g_hash_table_add (said, (gpointer) info->name))
        continue;
      if (!tach_config_knob_applies (config, info->name, &why))
        fprintf (stderr, _("tach-cli: note: --%s %s is ignored: %s\n"), info->name,
                 knob->value, why != NULL ? why : "");
      else if (g_str_equal (info->name, "warmup")
               && tach_config_get_warmup (config) < config->warmup)
        fprintf (stderr, _("tach-cli: note: --warmup %u runs as %u: warm-up steps are at most "
                           "half of the %u steps\n"),
                 config->warmup, tach_config_get_warmup (config), config->steps);
    }
}

/* "0.4 s", "45 s", "2 min 30 s", "1 h 5 min" (translated). */
static char *
dup_duration (double s)
{
  guint64 whole = (guint64) round (MAX (s, 0.0));

  if (s < 9.95)
    /* TRANSLATORS: a duration in seconds, under ten. */
    return g_strdup_printf (_("%.1f s"), MAX (s, 0.0));
  if (whole < 60)
    /* TRANSLATORS: a duration in seconds. */
    return g_strdup_printf (_("%u s"), (guint) whole);
  if (whole < 3600)
    /* TRANSLATORS: a duration in minutes and seconds. */
    return g_strdup_printf (_("%u min %u s"), (guint) (whole / 60), (guint) (whole % 60));
  /* TRANSLATORS: a duration in hours and minutes. */
  return g_strdup_printf (_("%u h %u min"), (guint) (whole / 3600),
                          (guint) (whole % 3600 / 60));
}

void
tach_cli_print_estimate (double first_s, guint runs, guint rounds, double budget_s)
{
  g_autofree char *total = dup_duration (first_s * runs);
  g_autofree char *first = dup_duration (first_s);
  g_autofree char *budget = budget_s > 0 ? dup_duration (budget_s) : NULL;
  g_autofree char *n_runs = g_strdup_printf (ngettext ("%u run", "%u runs", runs), runs);

  if (tach_ranks_world_rank () != 0 || runs == 0)
    return;
  /* The first run holds the one-time costs (the data made, the plans
   * tuned) and presets differ in speed: an estimate, said so. */
  if (budget != NULL)
    /* TRANSLATORS: "about 2 min 30 s for the 3 given rounds (24 runs, each
     * estimated as long as the first, 6 s), then at most 45 s more". */
    printf (ngettext ("  about %s for the %u given round (%s, each estimated as long as "
                      "the first, %s), then at most %s more\n",
                      "  about %s for the %u given rounds (%s, each estimated as long as "
                      "the first, %s), then at most %s more\n", rounds),
            total, rounds, n_runs, first, budget);
  else
    printf (ngettext ("  about %s for the %u given round (%s, each estimated as long as "
                      "the first, %s)\n",
                      "  about %s for the %u given rounds (%s, each estimated as long as "
                      "the first, %s)\n", rounds),
            total, rounds, n_runs, first);
  fflush (stdout);
}
