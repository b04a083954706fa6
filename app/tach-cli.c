/* tach-cli.c: Tach's command line: parsing, help, presets and devices.
 *
 * Every knob is parsed by the engine (tach_config_set), so the command line,
 * the GUI and the CSV agree on names, values and messages; the help text is
 * generated from the engine's knob table for the same reason.
 */
#include "tach-build-config.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib/gi18n.h>

#include "tach-cli-private.h"
#include "tach-explain.h"
#include "tach-i18n.h"
#include "tach-sweep.h"

static void
tach_cli_knob_clear (gpointer data)
{
  TachCliKnob *knob = data;

  g_clear_pointer (&knob->key, g_free);
  g_clear_pointer (&knob->value, g_free);
}

static void
tach_cli_options_clear (TachCliOptions *options)
{
  g_clear_pointer (&options->workload, g_free);
  g_clear_pointer (&options->preset, g_free);
  g_clear_pointer (&options->presets, g_free);
  g_clear_pointer (&options->vary, g_free);
  g_clear_pointer (&options->csv_dir, g_free);
  g_clear_pointer (&options->from, g_free);
  g_clear_pointer (&options->to, g_free);
  g_clear_pointer (&options->tensorboard_dir, g_free);
  g_clear_pointer (&options->trace_path, g_free);
  g_clear_pointer (&options->scaling_ranks, g_free);
  g_clear_pointer (&options->knobs, g_array_unref);
}

static void
tach_cli_set_str (char **field, const char *value)
{
  /* A repeated option replaces the earlier one, as knobs do. */
  g_free (*field);
  *field = g_strdup (value);
}

/* ------------------------------------------------------------------ help */

static const char *
tach_cli_knob_flag_value (const TachKnobInfo *info)
{
  static const char *const truthy[] = { "true", "yes", "on", NULL };

  /* A knob whose values are a yes/no pair may be given as a bare flag
   * (--print-text); any other knob needs a value. */
  if (info->values == NULL || g_strv_length ((char **) info->values) != 2)
    return NULL;
  for (guint i = 0; truthy[i] != NULL; i++)
    if (g_strv_contains (info->values, truthy[i]))
      return truthy[i];
  return NULL;
}

static gboolean
tach_cli_is_fixed_option (const char *name)
{
  return g_str_equal (name, "workload") || g_str_equal (name, "preset");
}

static void
tach_cli_print_option (GString *out, const char *option, const char *help)
{
  /* Columns line up in characters, not bytes, so that translations and
   * the en dash keep the help aligned. */
  glong width = g_utf8_strlen (option, -1);

  g_string_append_printf (out, "  %s", option);
  if (width < 22)
    g_string_append_printf (out, "%*s", (int) (22 - width), "");
  else
    g_string_append_printf (out, "\n%24s", "");
  g_string_append_printf (out, "%s\n", help);
}

static void
tach_cli_print_help (void)
{
  g_autoptr(GString) out = g_string_new (NULL);
  g_autoptr(GString) workloads = g_string_new (NULL);
  const TachKnobInfo *knobs;
  guint n_knobs = 0;

  for (int w = 0; w < TACH_WORKLOAD_COUNT; w++)
    g_string_append_printf (workloads, "%s%s", w > 0 ? ", " : "",
                            tach_workload_to_string ((TachWorkload) w));

  g_string_append (out, _("Usage:\n"));
  g_string_append (out, _("  tach-cli run --workload W [--device D] [--preset NAME] [--KNOB VALUE]... [--csv DIR] [--tensorboard DIR] [--trace FILE]\n"
                          "                [--progress]\n"));
  g_string_append (out, _("  mpirun -np N tach-cli run ...    N data-parallel ranks (--batch is per rank)\n"));
  g_string_append (out, _("  mpirun -np N tach-cli run ... --scaling [--rounds N]\n"
                          "                                   and one process beside them: scaling efficiency\n"));
  g_string_append (out, _("  tach-cli sweep --workload W --presets A,B,...|all [--vary KNOB=VALUES] [--KNOB VALUE]...\n"
                          "                 [--rounds N] [--budget SECONDS] [--target PERCENT] [--csv DIR] [--tensorboard DIR]\n"));
  g_string_append (out, _("  tach-cli explain --workload W --from PRESET|\"k=v ...\" --to PRESET|\"k=v ...\"\n"
                          "                   [--KNOB VALUE]... [--rounds N] [--budget SECONDS] [--target PERCENT] [--csv DIR] [--tensorboard DIR]\n"));
  g_string_append (out, "  tach-cli presets\n");
  g_string_append (out, "  tach-cli devices\n");
  g_string_append (out, "  tach-cli --help | --version\n\n");
  g_string_append (out, _("Runs Tach's deep-learning workloads headless and shows where their time goes.\n\n"));

  g_string_append (out, _("Commands:\n"));
  tach_cli_print_option (out, "run", _("Run one workload and print its summary"));
  tach_cli_print_option (out, "sweep", _("Run several presets of one workload and compare them"));
  tach_cli_print_option (out, "explain", _("Measure how much of the gap between two configurations each knob causes"));
  tach_cli_print_option (out, "presets", _("List the presets of every workload"));
  tach_cli_print_option (out, "devices", _("List the devices Tach can run on"));
  g_string_append (out, "\n");

  g_string_append (out, _("Options:\n"));
  {
    g_autofree char *help = g_strdup_printf (_("The workload: %s"), workloads->str);
    tach_cli_print_option (out, "--workload W", help);
  }
  tach_cli_print_option (out, _("--preset NAME"),
                         _("Start from a preset (see 'tach-cli presets'); knobs given override it"));
  tach_cli_print_option (out, _("--presets LIST"),
                         _("sweep: comma-separated presets, or 'all' for the workload's presets"));
  tach_cli_print_option (out, _("--vary KNOB=VALUES"),
                         _("sweep: also vary one knob: V1,V2,... (V1;V2;... when values have "
                           "commas), A..BxF (geometric), A..B+S, or 'all' values of a choice"));
  tach_cli_print_option (out, _("--from A, --to B"),
                         _("explain: each a preset, or \"k=v ...\" settings on the workload's defaults"));
  tach_cli_print_option (out, "--rounds N",
                         _("explain, sweep, run --scaling: interleaved rounds of every configuration, each in a new "
                           "shuffled order (explain: at least 3; 3 by default)"));
  {
    g_autofree char *help = g_strdup_printf (_("explain, sweep: after those rounds, add rounds while an "
                                               "interval misses the target and time is left "
                                               "(%.0f s by default; 0: the rounds given only)"),
                                             TACH_SWEEP_DEFAULT_BUDGET_S);

    tach_cli_print_option (out, "--budget SECONDS", help);
  }
  tach_cli_print_option (out, "--target PERCENT",
                         _("explain, sweep: each speed-up known to ±PERCENT and (explain) each share "
                           "to ±2 PERCENT of the gap (5 by default)"));
  tach_cli_print_option (out, "--csv DIR",
                         _("Append every run to DIR/runs.csv and DIR/samples.csv (explain: also DIR/explain.csv)"));
  tach_cli_print_option (out, "--tensorboard DIR",
                         _("Write every run as a TensorBoard event file under DIR"));
  tach_cli_print_option (out, "--trace FILE",
                         _("run: write the run's timeline as Chrome Trace Event JSON (Perfetto UI,"
                           " chrome://tracing): a process per rank, its steps and phases"));
  tach_cli_print_option (out, "--progress",
                         _("run: also write machine-readable progress lines on stdout, about "
                           "twice a second, every rank its own (the window reads them)"));
  tach_cli_print_option (out, "--scaling",
                         _("run, under mpirun -np N: also one process at the same batch and at "
                           "N times it, in shuffled rounds (--rounds, 3 by default): weak and "
                           "strong scaling efficiency"));
  tach_cli_print_option (out, "--scaling-ranks LIST",
                         _("run --scaling: the counts of ranks measured against one process, "
                           "such as 1,2,4 (N by default); a count below N runs on the first "
                           "ranks while the others sit it out"));
  tach_cli_print_option (out, "--help", _("Show this help"));
  tach_cli_print_option (out, "--version", _("Show the version"));
  g_string_append (out, "\n");

  g_string_append (out, _("Knobs (after the workload and the preset, in the order given;\n"
                          "* marks execution modes, which change speed, not results):\n"));
  knobs = tach_knobs (&n_knobs);
  for (guint i = 0; i < n_knobs; i++)
    {
      const TachKnobInfo *info = &knobs[i];
      g_autofree char *option = NULL;
      g_autofree char *help = NULL;

      if (tach_cli_is_fixed_option (info->name))
        continue;

      /* Free-form knobs show their own name as the placeholder, as
       * argparse does: the blurb says what the value means. */
      if (tach_cli_knob_flag_value (info) != NULL)
        option = g_strdup_printf ("--%s%s", info->name, info->is_mode ? " *" : "");
      else if (info->values != NULL)
        option = g_strdup_printf ("--%s %s%s", info->name, _("VALUE"),
                                  info->is_mode ? " *" : "");
      else
        {
          g_autofree char *upper = g_ascii_strup (info->name, -1);

          g_strdelimit (upper, "-", '_');
          option = g_strdup_printf ("--%s %s%s", info->name, upper, info->is_mode ? " *" : "");
        }
      help = g_strdup (info->blurb != NULL ? _(info->blurb) : "");
      tach_cli_print_option (out, option, help);

      if (info->values != NULL)
        {
          g_autofree char *values = g_strjoinv (" | ", (char **) info->values);
          g_autofree char *line = g_strdup_printf (_("values: %s"), values);

          tach_cli_print_option (out, "", line);
        }
    }
  g_string_append (out, "\n");

  g_string_append (out, _("On a terminal a live line shows progress once a second; Ctrl+C (or SIGTERM,\n"
                          "SIGHUP) stops a run cleanly and still writes the CSV of what ran.\n\n"));
  g_string_append (out, _("Exit status: 0 success, 1 runtime failure (device, data, files, library),\n"
                          "2 bad usage or configuration, 130 interrupted (SIGINT), 143 terminated\n"
                          "(SIGTERM), 129 hung up (SIGHUP).\n"));

  fputs (out->str, stdout);
}

static void
tach_cli_print_version (void)
{
  printf ("tach-cli %s (engine %s)\n", PACKAGE_VERSION, TACH_VERSION_STRING);
}

/* -------------------------------------------------------- small commands */

static int
tach_cli_command_presets (void)
{
  guint n_presets = 0;
  const TachPreset *presets = tach_presets (&n_presets);

  for (int w = 0; w < TACH_WORKLOAD_COUNT; w++)
    {
      gboolean header = FALSE;

      for (guint i = 0; i < n_presets; i++)
        {
          const TachPreset *preset = &presets[i];

          if (preset->workload != (TachWorkload) w)
            continue;
          if (!header)
            {
              printf ("%s%s\n", w > 0 ? "\n" : "", tach_workload_to_string (preset->workload));
              header = TRUE;
            }
          printf ("  %-16s %s\n", preset->name,
                  preset->description != NULL ? _(preset->description) : "");
          printf ("  %-16s %s\n", "", preset->settings != NULL ? preset->settings : "");
          if (preset->gpu_settings != NULL)
            printf ("  %-16s %s %s\n", "", _("on a GPU also:"), preset->gpu_settings);
          if (preset->between_ranks)
            {
              TachConfig alone;
              guint k;

              /* Accumulation applies to one process too. */
              tach_config_init (&alone, preset->workload);
              k = tach_config_apply_preset (&alone, preset->name, NULL)
                  ? tach_config_get_accumulate (&alone) : 1;
              tach_config_clear (&alone);
              if (k > 1)
                {
                  printf ("  %-16s ", "");
                  printf (_("between ranks only (mpirun -np 2 or more): alone it runs as tuned,"
                            " accumulating %u micro-batches a step\n"), k);
                }
              else
                printf ("  %-16s %s\n", "",
                        _("between ranks only (mpirun -np 2 or more): alone it runs as tuned"));
            }
          if (preset->rationale != NULL)
            {
              g_auto(GStrv) lines = g_strsplit (_(preset->rationale), "\n", -1);

              for (guint k = 0; lines[k] != NULL; k++)
                printf ("  %-16s   %s\n", "", lines[k]);
            }
        }
    }

  return TACH_CLI_EXIT_OK;
}

static int
tach_cli_command_devices (void)
{
  g_autoptr(GPtrArray) devices = tach_devices_list ();

  for (guint i = 0; i < devices->len; i++)
    {
      TachDeviceInfo *info = g_ptr_array_index (devices, i);
      g_autofree char *memory = g_format_size_full (info->memory_bytes, G_FORMAT_SIZE_IEC_UNITS);

      tach_device_measure_peak_flops (info);
      printf ("%s%s  %s\n", i > 0 ? "\n" : "", info->id, info->name != NULL ? info->name : "");
      if (info->kind == TACH_DEVICE_KIND_CPU)
        printf (_("  kind       CPU, %u threads by default\n"), info->threads);
      else
        printf (_("  kind       GPU\n"));
      printf (_("  memory     %s\n"), memory);
      printf (_("  peak       %.1f GFLOP/s (fp32)\n"), info->peak_flops / 1e9);
      printf (_("  libraries  %s\n"), info->versions != NULL ? info->versions : "");
    }

  return TACH_CLI_EXIT_OK;
}

/* --------------------------------------------------------------- parsing */

/* Parses the options of run, sweep and explain.  Returns FALSE after printing a usage
 * error; *exit_early is set when --help or --version was handled. */
static gboolean
tach_cli_parse_options (const char     *command,
                        int             argc,
                        char          **argv,
                        TachCliOptions *options,
                        gboolean       *exit_early)
{
  gboolean rounds_given = FALSE;

  *exit_early = FALSE;

  for (int i = 0; i < argc; i++)
    {
      const char *arg = argv[i];
      g_autofree char *name = NULL;
      const char *value = NULL;
      const char *eq;
      const TachKnobInfo *info;

      if (g_str_equal (arg, "--help") || g_str_equal (arg, "-h"))
        {
          tach_cli_print_help ();
          *exit_early = TRUE;
          return TRUE;
        }
      if (g_str_equal (arg, "--version"))
        {
          tach_cli_print_version ();
          *exit_early = TRUE;
          return TRUE;
        }
      if (!g_str_has_prefix (arg, "--") || arg[2] == '\0')
        {
          tach_cli_usage_error (_("unexpected argument '%s'"), arg);
          return FALSE;
        }

      eq = strchr (arg + 2, '=');
      if (eq != NULL)
        {
          name = g_strndup (arg + 2, (gsize) (eq - arg - 2));
          value = eq + 1;
        }
      else
        name = g_strdup (arg + 2);

      if (g_str_equal (name, "progress") && eq == NULL)
        {
          if (!g_str_equal (command, "run"))
            {
              tach_cli_usage_error (_("'--progress' belongs to 'run'"));
              return FALSE;
            }
          options->progress = TRUE;
          continue;
        }

      info = tach_knob_lookup (name);
      if (info == NULL && !g_str_equal (name, "workload") && !g_str_equal (name, "preset") &&
          !g_str_equal (name, "presets") && !g_str_equal (name, "vary") &&
          !g_str_equal (name, "csv") &&
          !g_str_equal (name, "from") && !g_str_equal (name, "to") && !g_str_equal (name, "rounds") &&
          !g_str_equal (name, "budget") && !g_str_equal (name, "target") &&
          !g_str_equal (name, "tensorboard") && !g_str_equal (name, "trace") &&
          !g_str_equal (name, "scaling") && !g_str_equal (name, "scaling-ranks"))
        {
          tach_cli_usage_error (_("unknown option '--%s'"), name);
          return FALSE;
        }
      if (g_str_equal (name, "presets") && !g_str_equal (command, "sweep"))
        {
          tach_cli_usage_error (_("'--presets' belongs to 'sweep'; 'run' takes '--preset NAME'"));
          return FALSE;
        }
      if (g_str_equal (name, "vary") && !g_str_equal (command, "sweep"))
        {
          tach_cli_usage_error (_("'--vary' belongs to 'sweep'"));
          return FALSE;
        }
      if ((g_str_equal (name, "from") || g_str_equal (name, "to"))
          && !g_str_equal (command, "explain"))
        {
          tach_cli_usage_error (_("'--%s' belongs to 'explain'"), name);
          return FALSE;
        }
      if (g_str_equal (name, "scaling"))
        {
          if (!g_str_equal (command, "run") || value != NULL)
            {
              tach_cli_usage_error (_("'--scaling' belongs to 'run' and takes no value"));
              return FALSE;
            }
          options->scaling = TRUE;
          continue;
        }
      if (g_str_equal (name, "rounds") && g_str_equal (command, "run"))
        rounds_given = TRUE;
      else if ((g_str_equal (name, "rounds") || g_str_equal (name, "budget")
                || g_str_equal (name, "target"))
               && !g_str_equal (command, "explain") && !g_str_equal (command, "sweep"))
        {
          tach_cli_usage_error (_("'--%s' belongs to 'explain' and 'sweep'"), name);
          return FALSE;
        }
      if (g_str_equal (name, "preset") && g_str_equal (command, "explain"))
        {
          tach_cli_usage_error (_("'explain' takes --from and --to, not --preset"));
          return FALSE;
        }

      if (value == NULL)
        {
          const char *flag = info != NULL ? tach_cli_knob_flag_value (info) : NULL;

          /* A bare flag takes the next argument only when that is one of
           * its values, so "--print-text --steps 5" works. */
          if (flag != NULL && (i + 1 >= argc || !g_strv_contains (info->values, argv[i + 1])))
            value = flag;
          else if (i + 1 < argc)
            value = argv[++i];
          else
            {
              tach_cli_usage_error (_("option '--%s' needs a value"), name);
              return FALSE;
            }
        }

      if (g_str_equal (name, "workload"))
        tach_cli_set_str (&options->workload, value);
      else if (g_str_equal (name, "preset"))
        tach_cli_set_str (&options->preset, value);
      else if (g_str_equal (name, "presets"))
        tach_cli_set_str (&options->presets, value);
      else if (g_str_equal (name, "vary"))
        tach_cli_set_str (&options->vary, value);
      else if (g_str_equal (name, "from"))
        tach_cli_set_str (&options->from, value);
      else if (g_str_equal (name, "to"))
        tach_cli_set_str (&options->to, value);
      else if (g_str_equal (name, "rounds"))
        {
          guint64 rounds = 0;
          /* One message per command, whatever the value: explain needs 3
           * rounds (its shares are paired by round), sweep and run
           * --scaling take 1 (one pass). */
          guint least = g_str_equal (command, "explain") ? TACH_EXPLAIN_MIN_ROUNDS : 1;

          if (!g_ascii_string_to_unsigned (value, 10, least, 1000, &rounds, NULL))
            {
              tach_cli_usage_error (_("invalid value '%s' for --rounds: expected a whole number "
                                      "from %u to 1000"), value, least);
              return FALSE;
            }
          options->rounds = (guint) rounds;
        }
      else if (g_str_equal (name, "budget") || g_str_equal (name, "target"))
        {
          gboolean budget = g_str_equal (name, "budget");
          char *end = NULL;
          double v = g_ascii_strtod (value, &end);

          if (end == value || *end != '\0' || !isfinite (v) || v < 0 || (!budget && v <= 0)
              || v > (budget ? 86400 : 100))
            {
              if (budget)
                tach_cli_usage_error (_("invalid value '%s' for --budget: expected seconds from 0 "
                                        "(the rounds given only) to 86400"), value);
              else
                tach_cli_usage_error (_("invalid value '%s' for --target: expected a percentage "
                                        "above 0 and at most 100, such as 5"), value);
              return FALSE;
            }
          if (budget)
            options->budget_s = v;
          else
            options->target = v / 100.0;
        }
      else if (g_str_equal (name, "csv"))
        {
          if (*value == '\0')
            {
              tach_cli_usage_error (_("option '--csv' needs a folder"));
              return FALSE;
            }
          tach_cli_set_str (&options->csv_dir, value);
        }
      else if (g_str_equal (name, "scaling-ranks"))
        {
          if (*value == '\0' || !g_str_equal (command, "run"))
            {
              tach_cli_usage_error (_("option '--scaling-ranks' needs a list of counts of "
                                      "ranks, such as 1,2,4, and belongs to 'run'"));
              return FALSE;
            }
          tach_cli_set_str (&options->scaling_ranks, value);
          options->scaling = TRUE;
        }
      else if (g_str_equal (name, "trace"))
        {
          if (*value == '\0' || !g_str_equal (command, "run"))
            {
              tach_cli_usage_error (_("option '--trace' needs a file, and belongs to 'run'"));
              return FALSE;
            }
          tach_cli_set_str (&options->trace_path, value);
        }
      else if (g_str_equal (name, "tensorboard"))
        {
          if (*value == '\0')
            {
              tach_cli_usage_error (_("option '--tensorboard' needs a folder"));
              return FALSE;
            }
          tach_cli_set_str (&options->tensorboard_dir, value);
        }
      else
        {
          TachCliKnob knob = { g_strdup (name), g_strdup (value) };

          g_array_append_val (options->knobs, knob);
        }
    }

  if (rounds_given && !options->scaling)
    {
      tach_cli_usage_error (_("'--rounds' belongs to 'explain', 'sweep' and 'run --scaling'"));
      return FALSE;
    }
  if (options->scaling && options->trace_path != NULL)
    {
      tach_cli_usage_error (_("'--trace' writes one run, and '--scaling' makes several: leave"
                              " one of them out"));
      return FALSE;
    }
  if (options->workload == NULL)
    {
      g_autoptr(GString) names = g_string_new (NULL);

      for (int w = 0; w < TACH_WORKLOAD_COUNT; w++)
        g_string_append_printf (names, "%s%s", w > 0 ? ", " : "",
                                tach_workload_to_string ((TachWorkload) w));
      tach_cli_usage_error (_("'%s' needs --workload (%s)"), command, names->str);
      return FALSE;
    }
  if (g_str_equal (command, "explain") && (options->from == NULL || options->to == NULL))
    {
      tach_cli_usage_error (_("'explain' needs --from and --to, each a preset or \"k=v ...\" settings"));
      return FALSE;
    }
  if (g_str_equal (command, "sweep") && options->presets == NULL)
    {
      tach_cli_usage_error (_("'sweep' needs --presets A,B,... or --presets all"));
      return FALSE;
    }

  return TRUE;
}

/* The commands that run no configuration (help, the version, presets,
 * devices) and the usage errors before any: TRUE when argv held one,
 * *status its exit status. */
static gboolean
tach_cli_small_command (int argc, char **argv, int *status)
{
  const char *command;

  if (argc < 2)
    {
      tach_cli_usage_error (_("missing command (run, sweep, explain, presets or devices)"));
      *status = TACH_CLI_EXIT_USAGE;
      return TRUE;
    }

  command = argv[1];
  if (g_str_equal (command, "--help") || g_str_equal (command, "-h") ||
      g_str_equal (command, "help"))
    {
      tach_cli_print_help ();
      *status = TACH_CLI_EXIT_OK;
      return TRUE;
    }
  if (g_str_equal (command, "--version"))
    {
      tach_cli_print_version ();
      *status = TACH_CLI_EXIT_OK;
      return TRUE;
    }

  /* Hidden: the build writes the bash completion and the manual page. */
  if (g_str_equal (command, "_generate"))
    {
      *status = tach_cli_command_generate (argc - 2, argv + 2);
      return TRUE;
    }

  if (g_str_equal (command, "presets") || g_str_equal (command, "devices"))
    {
      if (argc > 2)
        {
          if (g_str_equal (argv[2], "--help") || g_str_equal (argv[2], "-h"))
            {
              tach_cli_print_help ();
              *status = TACH_CLI_EXIT_OK;
              return TRUE;
            }
          tach_cli_usage_error (_("'%s' takes no arguments"), command);
          *status = TACH_CLI_EXIT_USAGE;
          return TRUE;
        }
      *status = g_str_equal (command, "presets") ? tach_cli_command_presets ()
                                                 : tach_cli_command_devices ();
      return TRUE;
    }

  return FALSE;
}

int
main (int argc, char **argv)
{
  TachCliOptions options = { 0 };
  const char *command;
  gboolean exit_early = FALSE;
  int status;
  sigset_t stop_signals;

  /* The signals that stop a command are handled (tach_cli_stop_watch),
   * but a handler never runs for a signal that is blocked, and a parent
   * can hand its children a blocked mask: a SIGTERM would then wait,
   * pending, for as long as the run lasts.  Unblocked here, before any
   * thread starts (each inherits this thread's mask). */
  sigemptyset (&stop_signals);
  sigaddset (&stop_signals, SIGINT);
  sigaddset (&stop_signals, SIGTERM);
  sigaddset (&stop_signals, SIGHUP);
  pthread_sigmask (SIG_UNBLOCK, &stop_signals, NULL);

  /* Messages follow the user's language; numbers stay in the C locale so
   * that output and CSV read the same everywhere. */
  setlocale (LC_ALL, "");
  setlocale (LC_NUMERIC, "C");
  tach_i18n_init ();
  g_set_prgname ("tach-cli");

  /* Started by mpirun: join the job before any thread starts.  Only rank
   * 0 speaks on stdout; every rank's errors reach stderr, and every rank's
   * --progress lines the stdout it was given (tach_cli_progress_out). */
  {
    g_autoptr(GError) error = NULL;
    int fd;

    if (!tach_ranks_init (&argc, &argv, &error))
      {
        fprintf (stderr, "tach-cli: %s\n", error->message);
        return TACH_CLI_EXIT_USAGE;
      }
    /* The same command line as rank 0's makes the same usage errors: said
     * by rank 0 alone, not once per rank. */
    {
      g_autoptr(GString) line = g_string_new (NULL);

      for (int i = 1; i < argc; i++)
        g_string_append_len (line, argv[i], (gssize) strlen (argv[i]) + 1);
      /* (Collective: every rank asks.) */
      gboolean same = tach_ranks_same_as_rank_0 (line->str, line->len);

      tach_cli_quiet_usage = same && tach_ranks_world_rank () != 0;
    }
    if (tach_ranks_world_rank () != 0)
      {
        fflush (stdout);
        fd = dup (STDOUT_FILENO);
        tach_cli_progress_out = fd >= 0 ? fdopen (fd, "w") : NULL;
        if (freopen ("/dev/null", "w", stdout) == NULL)
          return TACH_CLI_EXIT_FAILURE;
      }
  }

  /* Under mpirun too, a rank that leaves says so (MPI_Finalize), or mpirun
   * takes even `tach-cli presets` for a rank that failed. */
  if (tach_cli_small_command (argc, argv, &status))
    {
      tach_ranks_finish (status);
      return status;
    }
  command = argv[1];

  if (!g_str_equal (command, "run") && !g_str_equal (command, "sweep")
      && !g_str_equal (command, "explain"))
    {
      if (g_str_has_prefix (command, "-"))
        tach_cli_usage_error (_("unknown option '%s'"), command);
      else
        tach_cli_usage_error (_("unknown command '%s'"), command);
      return TACH_CLI_EXIT_USAGE;
    }

  options.knobs = g_array_new (FALSE, TRUE, sizeof (TachCliKnob));
  options.rounds = TACH_SWEEP_DEFAULT_ROUNDS;
  options.budget_s = TACH_SWEEP_DEFAULT_BUDGET_S;
  options.target = TACH_SWEEP_DEFAULT_TARGET;
  g_array_set_clear_func (options.knobs, tach_cli_knob_clear);

  if (!tach_cli_parse_options (command, argc - 2, argv + 2, &options, &exit_early))
    status = TACH_CLI_EXIT_USAGE;
  else if (exit_early)
    status = TACH_CLI_EXIT_OK;
  else if (g_str_equal (command, "run"))
    status = tach_cli_command_run (&options);
  else if (g_str_equal (command, "explain"))
    status = tach_cli_command_explain (&options);
  else
    status = options.vary != NULL ? tach_cli_command_sweep_vary (&options)
                                  : tach_cli_command_sweep (&options);

  tach_cli_options_clear (&options);
  tach_ranks_finish (status);
  return status;
}
