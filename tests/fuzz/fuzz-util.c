/* fuzz-util.c: the temporary folder and the checks of the harnesses. */
#include "fuzz-util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

static char *tmp_dir;

static void
remove_tmp_dir (void)
{
  g_autoptr(GDir) dir = g_dir_open (tmp_dir, 0, NULL);
  const char *name;

  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_build_filename (tmp_dir, name, NULL);

      g_unlink (path);
    }
  g_rmdir (tmp_dir);
}

const char *
fuzz_tmp_dir (void)
{
  if (tmp_dir == NULL)
    {
      g_autoptr(GError) error = NULL;

      tmp_dir = g_dir_make_tmp ("tach-fuzz-XXXXXX", &error);
      if (tmp_dir == NULL)
        {
          fprintf (stderr, "fuzz: no temporary folder: %s\n", error->message);
          abort ();
        }
      atexit (remove_tmp_dir);
    }
  return tmp_dir;
}

char *
fuzz_write (const char *name, const guint8 *data, size_t size)
{
  char *path = g_build_filename (fuzz_tmp_dir (), name, NULL);
  g_autoptr(GError) error = NULL;

  if (!g_file_set_contents (path, (const char *) data, (gssize) size, &error))
    {
      fprintf (stderr, "fuzz: cannot write %s: %s\n", path, error->message);
      abort ();
    }
  return path;
}

void
fuzz_check_error (const GError *error, int code, const char *needle, const char *what)
{
  if (error == NULL)
    {
      fprintf (stderr, "fuzz: %s failed without an error\n", what);
      abort ();
    }
  if (error->domain != TACH_ERROR || error->code != code)
    {
      fprintf (stderr, "fuzz: %s failed with code %d (want %d): %s\n", what, error->code, code,
               error->message);
      abort ();
    }
  if (needle != NULL && strstr (error->message, needle) == NULL)
    {
      fprintf (stderr, "fuzz: %s: the message does not name %s: %s\n", what, needle,
               error->message);
      abort ();
    }
}

void
fuzz_write_folder (const char *dir, const char *runs_path, const char *samples_path,
                   const guint8 *data, size_t size)
{
  const guint8 *nul = memchr (data, '\0', size);
  size_t runs_len = nul != NULL ? (size_t) (nul - data) : size;

  g_mkdir_with_parents (dir, 0755);
  g_unlink (samples_path);
  if (!g_file_set_contents (runs_path, (const char *) data, (gssize) runs_len, NULL)
      || (nul != NULL
          && !g_file_set_contents (samples_path, (const char *) nul + 1,
                                   (gssize) (size - runs_len - 1), NULL)))
    abort ();
}
