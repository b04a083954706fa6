/* tach-i18n.c: where tach and tach-cli find their message catalogues.
 *
 * Installed, under the prefix's locale folder.  Run from the build folder
 * (build/app/tach, the README's first command), the catalogues that build
 * made, in its po/ folder: under the prefix there are none yet, or older
 * ones, and LANGUAGE=zh_CN showed English.
 */
#include "tach-build-config.h"
#include "tach-i18n.h"

#include <stdlib.h>
#include <glib/gi18n.h>

/* The build's own catalogues when the running program lies in the build
 * folder that made it, else the installed ones. */
const char *
tach_i18n_localedir (void)
{
  static char *dir;

  if (g_once_init_enter (&dir))
    {
      /* The program's path has its links resolved: so has the root's. */
      g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
      g_autofree char *real_root = realpath (TACH_BUILD_ROOT, NULL);
      g_autofree char *root = g_strconcat (real_root ? real_root : TACH_BUILD_ROOT, G_DIR_SEPARATOR_S, NULL);
      g_autofree char *built = g_build_filename (TACH_BUILD_ROOT, "po", NULL);
      char *chosen;

      if (exe != NULL && g_str_has_prefix (exe, root) && g_file_test (built, G_FILE_TEST_IS_DIR))
        chosen = g_steal_pointer (&built);
      else
        chosen = g_strdup (LOCALEDIR);
      g_once_init_leave (&dir, chosen);
    }
  return dir;
}

/* Binds the catalogues of GETTEXT_PACKAGE, as UTF-8; the caller has set
 * the locale. */
void
tach_i18n_init (void)
{
  bindtextdomain (GETTEXT_PACKAGE, tach_i18n_localedir ());
  bind_textdomain_codeset (GETTEXT_PACKAGE, "UTF-8");
  textdomain (GETTEXT_PACKAGE);
}
