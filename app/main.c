/* main.c: the entry point of the Tach desktop app. */
#include "tach-build-config.h"
#include "tach-application.h"
#include "tach-i18n.h"

#include <glib/gi18n.h>
#include <locale.h>

int
main (int   argc,
      char *argv[])
{
  g_autoptr(TachApplication) app = NULL;

  /* The UI follows the user's language; the engine writes CSV numbers in
   * the C locale whatever this says. */
  setlocale (LC_ALL, "");
  tach_i18n_init ();

  tach_application_choose_renderer ();
  app = tach_application_new ();
  return g_application_run (G_APPLICATION (app), argc, argv);
}
