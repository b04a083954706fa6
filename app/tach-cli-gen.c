/* tach-cli-gen.c: the bash completion and the tach-cli(1) manual page,
 * written by the hidden command `tach-cli _generate bash-completion|man`
 * at build time from the engine's knob, preset and workload tables, so
 * that neither can drift from what tach-cli takes.  The commands and the
 * options that are not knobs are listed below; the shell test checks them
 * against `tach-cli --help`. */
#include <stdio.h>
#include <string.h>

#include "tach-cli-private.h"

typedef struct {
  const char *name;
  const char *arg;   /* the value's placeholder, or NULL for a flag */
  const char *help;
} GenEntry;

static const GenEntry commands[] = {
  { "run", NULL, "Run one workload and print its summary." },
  { "sweep", NULL, "Run several presets of one workload and compare them." },
  { "explain", NULL, "Measure how much of the gap between two configurations each knob causes "
                     "(each knob's Shapley value of the step-time difference)." },
  { "presets", NULL, "List the presets of every workload." },
  { "devices", NULL, "List the devices Tach can run on." },
};

/* Options that are not knobs.  "dir" and "file" placeholders complete as
 * paths. */
static const GenEntry options[] = {
  { "workload", "W", NULL },  /* help from the workload table */
  { "preset", "NAME", "Start from a preset (see PRESETS); knobs given after it override it." },
  { "presets", "LIST", "sweep: comma-separated presets, or all for the workload's presets." },
  { "vary", "KNOB=VALUES", "sweep: also vary one knob: V1,V2,... (V1;V2;... when values have "
                           "commas), A..BxF (geometric), A..B+S, or all values of a choice." },
  { "from", "A", "explain: the starting configuration, a preset or \"k=v ...\" settings." },
  { "to", "B", "explain: the target configuration, a preset or \"k=v ...\" settings." },
  { "rounds", "N", "explain, sweep, run --scaling: interleaved rounds of every configuration, each in a new "
                  "shuffled order (3 by default; explain: at least 3)." },
  { "budget", "SECONDS", "explain, sweep: after those rounds, add rounds while an interval "
                         "misses the target and time is left (45 by default; 0: the rounds "
                         "given only)." },
  { "target", "PERCENT", "explain, sweep: each speed-up known to ±PERCENT and (explain) each "
                         "share to ±2 PERCENT of the gap (5 by default)." },
  { "csv", "DIR", "Append every run to DIR/runs.csv and DIR/samples.csv "
                  "(explain: also DIR/explain.csv)." },
  { "tensorboard", "DIR", "Write every run as a TensorBoard event file under DIR, one folder per run." },
  { "trace", "FILE", "run: write the run's timeline as Chrome Trace Event JSON (Perfetto UI, "
                     "chrome://tracing): a process per rank, its steps and phases." },
  { "progress", NULL, "run: also write machine-readable progress lines on stdout, about twice a "
                      "second, every rank its own (the window reads them)." },
  { "scaling", NULL, "run, under mpirun -np N: also one process at the same batch and at N "
                     "times it, in shuffled rounds (--rounds): weak and strong scaling "
                     "efficiency." },
  { "scaling-ranks", "LIST", "run --scaling: the counts of ranks measured against one process, "
                             "such as 1,2,4 (N by default); a count below N runs on the first "
                             "ranks while the others sit it out." },
  { "help", NULL, "Show the help." },
  { "version", NULL, "Show the version." },
};

static gboolean
is_fixed_option (const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (options); i++)
    if (g_str_equal (options[i].name, name))
      return TRUE;
  return FALSE;
}

static char *
preset_names (int workload)
{
  guint n = 0;
  const TachPreset *presets = tach_presets (&n);
  g_autoptr(GString) names = g_string_new (NULL);

  for (guint i = 0; i < n; i++)
    if (workload < 0 || presets[i].workload == (TachWorkload) workload)
      {
        gboolean seen = FALSE;

        /* "tuned" belongs to every workload: name it once. */
        for (guint j = 0; j < i && workload < 0; j++)
          seen |= g_str_equal (presets[j].name, presets[i].name);
        if (!seen)
          g_string_append_printf (names, "%s%s", names->len ? " " : "", presets[i].name);
      }
  return g_string_free (g_steal_pointer (&names), FALSE);
}

/* ----------------------------------------------------------------- bash */

static void
print_bash (void)
{
  guint n_knobs = 0;
  const TachKnobInfo *knobs = tach_knobs (&n_knobs);
  g_autoptr(GString) words = g_string_new (NULL);
  g_autoptr(GString) workloads = g_string_new (NULL);
  g_autofree char *all_presets = preset_names (-1);

  for (guint i = 0; i < G_N_ELEMENTS (options); i++)
    g_string_append_printf (words, "%s--%s", words->len ? " " : "", options[i].name);
  for (guint i = 0; i < n_knobs; i++)
    if (!is_fixed_option (knobs[i].name))
      g_string_append_printf (words, " --%s", knobs[i].name);
  for (int w = 0; w < TACH_WORKLOAD_COUNT; w++)
    g_string_append_printf (workloads, "%s%s", w ? " " : "", tach_workload_to_string ((TachWorkload) w));

  printf ("# bash completion for tach-cli, generated by `tach-cli _generate bash-completion`\n"
          "# from Tach's knob and preset tables (Tach %s).\n\n", TACH_VERSION_STRING);
  printf ("_tach_cli_presets ()\n{\n"
          "  # The presets of the workload given so far, or every preset.\n"
          "  local i\n"
          "  for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do\n"
          "    case ${COMP_WORDS[i]} in\n"
          "      --workload=*) _tach_cli_workload=${COMP_WORDS[i]#--workload=} ;;\n"
          "      --workload) _tach_cli_workload=${COMP_WORDS[i + 1]} ;;\n"
          "    esac\n"
          "  done\n"
          "  case ${_tach_cli_workload:-} in\n");
  for (int w = 0; w < TACH_WORKLOAD_COUNT; w++)
    {
      g_autofree char *names = preset_names (w);

      printf ("    %s) echo \"%s\" ;;\n", tach_workload_to_string ((TachWorkload) w), names);
    }
  printf ("    *) echo \"%s\" ;;\n"
          "  esac\n"
          "  unset _tach_cli_workload\n"
          "}\n\n", all_presets);

  printf ("_tach_cli ()\n{\n"
          "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}\n"
          "  COMPREPLY=()\n"
          "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
          "    COMPREPLY=($(compgen -W \"");
  for (guint i = 0; i < G_N_ELEMENTS (commands); i++)
    printf ("%s ", commands[i].name);
  printf ("--help --version\" -- \"$cur\"))\n"
          "    return\n"
          "  fi\n"
          "  case $prev in\n"
          "    --workload) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return ;;\n"
          "    --preset|--from|--to) COMPREPLY=($(compgen -W \"$(_tach_cli_presets)\" -- \"$cur\")); return ;;\n"
          "    --presets) COMPREPLY=($(compgen -W \"all $(_tach_cli_presets)\" -- \"$cur\")); return ;;\n"
          "    --csv|--tensorboard) COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n"
          "    --trace) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
          "    --rounds|--budget|--target|--vary) return ;;\n",
          workloads->str);
  for (guint i = 0; i < n_knobs; i++)
    {
      const TachKnobInfo *k = &knobs[i];

      if (is_fixed_option (k->name))
        continue;
      if (k->values != NULL)
        {
          g_autofree char *values = g_strjoinv (" ", (char **) k->values);

          printf ("    --%s) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return ;;\n", k->name, values);
        }
      else if (g_str_equal (k->name, "data"))
        printf ("    --%s) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", k->name);
      else if (g_str_equal (k->name, "device"))
        printf ("    --%s) COMPREPLY=($(compgen -W \"auto cpu cuda cuda:0\" -- \"$cur\")); return ;;\n",
                k->name);
      else
        printf ("    --%s) return ;;\n", k->name);
    }
  printf ("  esac\n"
          "  COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n"
          "}\n\n"
          "complete -F _tach_cli tach-cli\n", words->str);
}

/* ------------------------------------------------------------------ man */

/* Text for troff: backslashes doubled, hyphens as \-, and no line starting
 * with a control character. */
static char *
roff (const char *text)
{
  g_autoptr(GString) out = g_string_new (NULL);

  for (const char *p = text != NULL ? text : ""; *p != '\0'; p++)
    {
      if (*p == '\\')
        g_string_append (out, "\\e");
      else if (*p == '-')
        g_string_append (out, "\\-");
      else if ((*p == '.' || *p == '\'') && (out->len == 0 || out->str[out->len - 1] == '\n'))
        g_string_append_printf (out, "\\&%c", *p);
      else
        g_string_append_c (out, *p);
    }
  return g_string_free (g_steal_pointer (&out), FALSE);
}

static void
print_tp (const char *option, const char *arg, const char *help)
{
  g_autofree char *o = roff (option);
  g_autofree char *a = arg != NULL ? roff (arg) : NULL;
  g_autofree char *h = roff (help);

  printf (".TP\n");
  if (a != NULL)
    printf ("\\fB%s\\fR \\fI%s\\fR\n", o, a);
  else
    printf ("\\fB%s\\fR\n", o);
  printf ("%s\n", h);
}

static void
print_man (void)
{
  guint n_knobs = 0;
  const TachKnobInfo *knobs = tach_knobs (&n_knobs);
  guint n_presets = 0;
  const TachPreset *presets = tach_presets (&n_presets);
  g_autoptr(GString) workloads = g_string_new (NULL);

  for (int w = 0; w < TACH_WORKLOAD_COUNT; w++)
    g_string_append_printf (workloads, "%s%s", w ? ", " : "", tach_workload_to_string ((TachWorkload) w));

  printf (".\\\" tach-cli(1), generated by `tach-cli _generate man` from Tach's knob and preset tables.\n");
  printf (".TH TACH\\-CLI 1 \"\" \"Tach %s\" \"User Commands\"\n", TACH_VERSION_STRING);
  printf (".SH NAME\ntach\\-cli \\- measure why the same deep\\-learning model runs at different speeds\n");
  printf (".SH SYNOPSIS\n"
          ".B tach\\-cli run\n\\fB\\-\\-workload\\fR \\fIW\\fR [\\fB\\-\\-preset\\fR \\fINAME\\fR] "
          "[\\fB\\-\\-\\fR\\fIKNOB VALUE\\fR]... [\\fB\\-\\-csv\\fR \\fIDIR\\fR] [\\fB\\-\\-tensorboard\\fR \\fIDIR\\fR] "
          "[\\fB\\-\\-trace\\fR \\fIFILE\\fR]\n.br\n"
          ".B mpirun \\-np \\fIN\\fR tach\\-cli run\n...: \\fIN\\fR data\\-parallel ranks, \\fB\\-\\-batch\\fR per rank\n.br\n"
          ".B mpirun \\-np \\fIN\\fR tach\\-cli run\n... \\fB\\-\\-scaling\\fR [\\fB\\-\\-rounds\\fR \\fIN\\fR]: and one process beside them\n.br\n"
          ".B tach\\-cli sweep\n\\fB\\-\\-workload\\fR \\fIW\\fR \\fB\\-\\-presets\\fR \\fILIST\\fR|\\fBall\\fR "
          "[\\fB\\-\\-vary\\fR \\fIKNOB=VALUES\\fR] [\\fB\\-\\-\\fR\\fIKNOB VALUE\\fR]... [\\fB\\-\\-rounds\\fR \\fIN\\fR] "
          "[\\fB\\-\\-budget\\fR \\fISECONDS\\fR] [\\fB\\-\\-target\\fR \\fIPERCENT\\fR] [\\fB\\-\\-csv\\fR \\fIDIR\\fR] [\\fB\\-\\-tensorboard\\fR \\fIDIR\\fR]\n.br\n"
          ".B tach\\-cli explain\n\\fB\\-\\-workload\\fR \\fIW\\fR \\fB\\-\\-from\\fR \\fIA\\fR \\fB\\-\\-to\\fR \\fIB\\fR "
          "[\\fB\\-\\-rounds\\fR \\fIN\\fR] [\\fB\\-\\-budget\\fR \\fISECONDS\\fR] [\\fB\\-\\-target\\fR \\fIPERCENT\\fR] [\\fB\\-\\-csv\\fR \\fIDIR\\fR] [\\fB\\-\\-tensorboard\\fR \\fIDIR\\fR]\n.br\n"
          ".B tach\\-cli presets\n.br\n.B tach\\-cli devices\n");
  printf (".SH DESCRIPTION\n"
          "Runs Tach's deep\\-learning workloads (%s) headless on the CPU (oneDNN) or a GPU "
          "(cuDNN, cuBLAS), prints the median steps per second, the loss and where each step's "
          "time goes, and writes CSV files and TensorBoard event files that the Tach window "
          "opens.\n", workloads->str);

  printf (".SH COMMANDS\n");
  for (guint i = 0; i < G_N_ELEMENTS (commands); i++)
    print_tp (commands[i].name, NULL, commands[i].help);

  printf (".SH OPTIONS\n");
  for (guint i = 0; i < G_N_ELEMENTS (options); i++)
    {
      g_autofree char *option = g_strconcat ("--", options[i].name, NULL);
      g_autofree char *help = options[i].help != NULL ? g_strdup (options[i].help)
                                                      : g_strdup_printf ("The workload: %s.", workloads->str);

      print_tp (option, options[i].arg, help);
    }

  printf (".SH KNOBS\n"
          "Knobs are set after the workload and the preset, in the order given.  "
          "Execution modes (marked \\fImode\\fR) change speed, not results, except where marked.\n");
  for (guint i = 0; i < n_knobs; i++)
    {
      const TachKnobInfo *k = &knobs[i];
      g_autofree char *option = NULL;
      g_autoptr(GString) help = NULL;
      g_autofree char *upper = NULL;

      if (is_fixed_option (k->name))
        continue;
      option = g_strconcat ("--", k->name, NULL);
      help = g_string_new (k->blurb != NULL ? k->blurb : "");
      g_string_append (help, ".");
      if (k->values != NULL)
        {
          g_autofree char *values = g_strjoinv (", ", (char **) k->values);

          g_string_append_printf (help, " Values: %s.", values);
        }
      else if (k->kind == TACH_KNOB_KIND_INTEGER)
        g_string_append_printf (help, " A whole number from %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT ".",
                                k->min, k->max);
      if (k->default_value != NULL && *k->default_value != '\0')
        g_string_append_printf (help, " Default: %s.", k->default_value);
      if (k->is_mode)
        g_string_append (help, k->changes_results ? " A mode that changes results." : " A mode.");
      upper = g_ascii_strup (k->name, -1);
      print_tp (option, k->values != NULL ? "VALUE" : upper, help->str);
    }

  printf (".SH PRESETS\n"
          "A preset names the combination of modes that reproduces a reported framework's behaviour; "
          "\\fBtuned\\fR is the fastest correct one.\n");
  for (guint i = 0; i < n_presets; i++)
    {
      g_autofree char *name = g_strdup_printf ("%s (%s)", presets[i].name,
                                               tach_workload_to_string (presets[i].workload));
      g_autofree char *help = g_strdup_printf ("%s. Sets: %s%s%s.", presets[i].description,
                                               presets[i].settings,
                                               presets[i].gpu_settings ? "; on a GPU also " : "",
                                               presets[i].gpu_settings ? presets[i].gpu_settings : "");

      print_tp (name, NULL, help);
    }

  printf (".SH EXIT STATUS\n"
          ".TP\n.B 0\nSuccess.\n"
          ".TP\n.B 1\nA runtime failure (a device, a library, a file).\n"
          ".TP\n.B 2\nInvalid usage or configuration.\n"
          ".TP\n.B 130\nInterrupted by SIGINT (Ctrl+C): the run in progress stops after its step "
          "and what was measured is still written.\n"
          ".TP\n.B 143\nStopped by SIGTERM, as SIGINT stops it.\n"
          ".TP\n.B 129\nStopped by SIGHUP, as SIGINT stops it.\n");
  printf (".SH FILES\n"
          "\\fIDIR\\fR/runs.csv, \\fIDIR\\fR/samples.csv: one row per run and one per step (RFC 4180, "
          "C\\-locale numbers).  \\fIDIR\\fR/\\fIworkload\\-preset\\-run\\fR/events.out.tfevents.*: "
          "TensorBoard event files.\n");
  printf (".SH SEE ALSO\n.BR tach (1),\n.BR tensorboard (1)\n");
}

int
tach_cli_command_generate (int argc, char **argv)
{
  if (argc == 1 && g_str_equal (argv[0], "bash-completion"))
    print_bash ();
  else if (argc == 1 && g_str_equal (argv[0], "man"))
    print_man ();
  else
    {
      fprintf (stderr, "tach-cli: _generate takes bash-completion or man\n");
      return TACH_CLI_EXIT_USAGE;
    }
  return fflush (stdout) == 0 ? TACH_CLI_EXIT_OK : TACH_CLI_EXIT_FAILURE;
}
