/* fuzz-cli.c: tach-cli's option parser on any command line.  The input is
 * the arguments after the command, separated by NUL bytes; its first byte
 * picks the command (run or sweep).  The line is either parsed, and then
 * its configuration built for the given preset (or for each preset of a
 * sweep), or refused with a usage message: never a crash.  Nothing runs.
 *
 * The parser is static in tach-cli.c, which is compiled in here with its
 * main() renamed. */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz-util.h"

#define main tach_cli_main
#include "tach-cli.c"
#undef main

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  const char *command = size > 0 && (data[0] & 1) ? "sweep" : "run";
  g_autoptr(GPtrArray) args = g_ptr_array_new_with_free_func (g_free);
  TachCliOptions options = { 0 };
  gboolean exit_early = FALSE;

  if (size > 0)
    data++, size--;
  for (size_t start = 0, i = 0; i <= size; i++)
    if (i == size || data[i] == '\0')
      {
        if (i > start || i < size)
          g_ptr_array_add (args, g_strndup ((const char *) data + start, i - start));
        start = i + 1;
      }
  /* Long lines add nothing that short ones do not show. */
  if (args->len > 64)
    g_ptr_array_set_size (args, 64);

  options.knobs = g_array_new (FALSE, TRUE, sizeof (TachCliKnob));
  g_array_set_clear_func (options.knobs, tach_cli_knob_clear);
  if (tach_cli_parse_options (command, (int) args->len, (char **) args->pdata, &options,
                              &exit_early)
      && !exit_early)
    {
      g_autoptr(GError) error = NULL;
      TachConfig config = { 0 };

      if (options.workload == NULL)
        {
          fprintf (stderr, "fuzz: a command line without --workload was accepted\n");
          abort ();
        }
      if (tach_cli_build_config (&options, options.preset, &config, &error))
        tach_config_validate (&config, NULL, NULL);
      else if (error == NULL || tach_cli_exit_code_for_error (error) != TACH_CLI_EXIT_USAGE)
        {
          fprintf (stderr, "fuzz: building the configuration failed with %s\n",
                   error != NULL ? error->message : "no error");
          abort ();
        }
      tach_config_clear (&config);
    }
  tach_cli_options_clear (&options);
  return 0;
}
