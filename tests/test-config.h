/* test-config.h: test-config's parts. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Registers the presets' tests (test-config-presets.c). */
void test_config_presets_add (void);

G_END_DECLS
