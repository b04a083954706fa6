/* tach-error.c: the engine's error domain. */
#include "tach-engine.h"

G_DEFINE_QUARK (tach-error-quark, tach_error)
