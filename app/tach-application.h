/* tach-application.h: the AdwApplication of the Tach desktop app. */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

#define TACH_TYPE_APPLICATION (tach_application_get_type ())
G_DECLARE_FINAL_TYPE (TachApplication, tach_application, TACH, APPLICATION, AdwApplication)

TachApplication *tach_application_new (void);
void             tach_application_choose_renderer (void);

G_END_DECLS
