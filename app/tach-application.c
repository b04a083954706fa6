/* tach-application.c: application-wide actions (about, quit), keyboard
 * accelerators and the main window. */
#include "tach-build-config.h"
#include "tach-application.h"
#include "tach-window.h"

#include <glib/gi18n.h>
#include <tach-engine.h>

struct _TachApplication
{
  AdwApplication parent_instance;
};

G_DEFINE_FINAL_TYPE (TachApplication, tach_application, ADW_TYPE_APPLICATION)

static void
tach_application_activate (GApplication *app)
{
  GtkWindow *window = gtk_application_get_active_window (GTK_APPLICATION (app));

  if (window == NULL)
    window = GTK_WINDOW (tach_window_new (GTK_APPLICATION (app)));
  gtk_window_present (window);
}

/* `tach DIR...`: the window opens each results folder. */
static void
tach_application_open (GApplication  *app,
                       GFile        **files,
                       int            n_files,
                       const char    *hint)
{
  GtkWindow *window = gtk_application_get_active_window (GTK_APPLICATION (app));

  if (window == NULL)
    window = GTK_WINDOW (tach_window_new (GTK_APPLICATION (app)));
  gtk_window_present (window);
  tach_window_open (TACH_WINDOW (window), files, (guint) n_files);
}

static void
about_action (GSimpleAction *action,
              GVariant      *parameter,
              gpointer       user_data)
{
  GtkApplication *app = user_data;
  static const char *developers[] = { "The Tach developers", NULL };
  GtkWidget *about;

  about = g_object_new (ADW_TYPE_ABOUT_WINDOW,
                        "transient-for", gtk_application_get_active_window (app),
                        "application-name", "Tach",
                        "application-icon", APPLICATION_ID,
                        "developer-name", _("The Tach developers"),
                        "version", PACKAGE_VERSION,
                        "comments", _("Measures and explains why the same deep-learning model "
                                      "runs at different speeds in different execution modes."),
                        "website", PACKAGE_URL,
                        "issue-url", PACKAGE_BUGREPORT,
                        "license-type", GTK_LICENSE_GPL_3_0,
                        "developers", developers,
                        /* Translators: put your names here, one per line. */
                        "translator-credits", _("translator-credits"),
                        NULL);
  gtk_window_present (GTK_WINDOW (about));
}

static void
quit_action (GSimpleAction *action,
             GVariant      *parameter,
             gpointer       user_data)
{
  GtkApplication *app = user_data;
  GList *windows = gtk_application_get_windows (app);

  /* Closing each window stops its run cleanly before the process exits. */
  while (windows != NULL)
    {
      GList *next = windows->next;

      gtk_window_close (windows->data);
      windows = next;
    }
}

static void
tach_application_startup (GApplication *app)
{
  static const GActionEntry entries[] = {
    { "about", about_action, NULL, NULL, NULL, { 0 } },
    { "quit", quit_action, NULL, NULL, NULL, { 0 } },
  };
  static const struct { const char *action; const char *accels[3]; } accels[] = {
    { "app.quit", { "<Control>q", NULL } },
    { "win.run", { "<Control>r", NULL } },
    { "win.stop", { "Escape", NULL } },
    { "win.export-csv", { "<Control>e", NULL } },
    { "win.open", { "<Control>o", NULL } },
    { "win.compare", { "<Control><Shift>r", NULL } },
    { "win.toggle-config", { "F9", NULL } },
  };

  G_APPLICATION_CLASS (tach_application_parent_class)->startup (app);

  g_action_map_add_action_entries (G_ACTION_MAP (app), entries, G_N_ELEMENTS (entries), app);
  for (guint i = 0; i < G_N_ELEMENTS (accels); i++)
    gtk_application_set_accels_for_action (GTK_APPLICATION (app), accels[i].action, accels[i].accels);
}

static void
tach_application_class_init (TachApplicationClass *klass)
{
  GApplicationClass *app_class = G_APPLICATION_CLASS (klass);

  app_class->activate = tach_application_activate;
  app_class->open = tach_application_open;
  app_class->startup = tach_application_startup;
}

static void
tach_application_init (TachApplication *self)
{
}

/* Call before GTK opens its display (main(), before g_application_run).
 *
 * The window draws with GSK's cairo renderer and GDK opens no GL at all,
 * unless the user picked a renderer with GSK_RENDERER (then GTK's choice
 * stands, GL included).  Why: Tach measures the GPU, and a GL renderer
 * draws the window on that same GPU, a second context beside the run it
 * times, every frame a live chart changes; the charts and the phase bar
 * are cairo drawings (gtk_snapshot_append_cairo) rasterised on the CPU
 * whichever renderer composites them, so GL buys this window little.  And
 * memory: on X11 GDK initialises GL when it opens the display, even for
 * the cairo renderer, to pick its visual; with Mesa's llvmpipe (X without
 * a GPU driver, Xvfb) that alone is some 58 MB resident (libLLVM, the DRI
 * driver), more than the 1M steps of a run (issue 14).  GDK's switch for
 * it is GDK_DEBUG=gl-disable before GTK 4.16 and GDK_DISABLE=gl since. */
void
tach_application_choose_renderer (void)
{
  const char *var = gtk_get_minor_version () < 16 ? "GDK_DEBUG" : "GDK_DISABLE";
  const char *flag = gtk_get_minor_version () < 16 ? "gl-disable" : "gl";
  const char *old;
  g_autofree char *flags = NULL;

  if (g_getenv ("GSK_RENDERER") != NULL)
    return;
  g_setenv ("GSK_RENDERER", "cairo", TRUE);
  old = g_getenv (var);
  flags = old != NULL && *old != '\0' ? g_strconcat (old, ",", flag, NULL) : g_strdup (flag);
  g_setenv (var, flags, TRUE);
}

TachApplication *
tach_application_new (void)
{
  return g_object_new (TACH_TYPE_APPLICATION,
                       "application-id", APPLICATION_ID,
                       "flags", G_APPLICATION_HANDLES_OPEN,
                       "resource-base-path", "/io/github/tach/Tach",
                       NULL);
}
