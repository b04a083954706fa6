/* tach-i18n.h: where tach and tach-cli find their message catalogues. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

const char *tach_i18n_localedir (void);
void        tach_i18n_init      (void);

G_END_DECLS
