/* fuzz-settings.c: the key=value settings parser (what presets, the tests
 * and the window's settings go through) on any text.  The first byte picks
 * the workload.  A string either applies, leaving a configuration whose
 * every knob reads back and sets again, or is refused with
 * TACH_ERROR_INVALID_CONFIG and leaves the configuration as it was. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-util.h"

/* Every knob's value, in table order, joined by newlines. */
static char *
config_dump (const TachConfig *config)
{
  GString *out = g_string_new (NULL);
  guint n = 0;
  const TachKnobInfo *knobs = tach_knobs (&n);

  for (guint i = 0; i < n; i++)
    {
      g_autofree char *value = tach_config_get (config, knobs[i].name);

      g_string_append_printf (out, "%s=%s\n", knobs[i].name, value != NULL ? value : "(null)");
    }
  return g_string_free (out, FALSE);
}

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  TachWorkload workload = size > 0 ? (TachWorkload) (data[0] % TACH_WORKLOAD_COUNT) : 0;
  g_autofree char *text = NULL;
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  g_autoptr(GError) error = NULL;
  TachConfig config;
  guint n = 0;
  const TachKnobInfo *knobs = tach_knobs (&n);

  if (size > 0)
    data++, size--;
  /* A C string ends at the first NUL, as the settings do everywhere. */
  text = g_strndup ((const char *) data, size);

  tach_config_init (&config, workload);
  before = config_dump (&config);
  if (!tach_config_apply_settings (&config, text, &error))
    {
      fuzz_check_error (error, TACH_ERROR_INVALID_CONFIG, NULL, "tach_config_apply_settings");
      after = config_dump (&config);
      if (strcmp (before, after) != 0)
        {
          fprintf (stderr, "fuzz: a refused setting changed the configuration\n");
          abort ();
        }
      tach_config_clear (&config);
      return 0;
    }

  /* What a configuration reads back, it accepts again (the CSV files and
   * the window's saved settings rely on it). */
  for (guint i = 0; i < n; i++)
    {
      g_autofree char *value = tach_config_get (&config, knobs[i].name);
      TachConfig copy;

      if (value == NULL)
        continue;
      tach_config_copy (&copy, &config);
      /* "workload" and "task" reset other knobs; "preset" applies one. */
      if (!tach_config_set (&copy, knobs[i].name, value, &error))
        {
          fprintf (stderr, "fuzz: %s=%s reads back but does not set again: %s\n",
                   knobs[i].name, value, error->message);
          abort ();
        }
      tach_config_clear (&copy);
    }

  if (!tach_config_validate (&config, NULL, &error))
    {
      if (error == NULL || error->domain != TACH_ERROR
          || (error->code != TACH_ERROR_INVALID_CONFIG && error->code != TACH_ERROR_UNSUPPORTED))
        {
          fprintf (stderr, "fuzz: validation failed without a configuration error: %s\n",
                   error != NULL ? error->message : "(none)");
          abort ();
        }
    }
  tach_config_clear (&config);
  return 0;
}
