/* tach-value-factory.h: the item factory of the settings' combo rows. */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

/* Gives @row a factory whose items show each value whole (the subtitle
 * wraps instead), the popup marking the selected one. */
void tach_value_factory_set (AdwComboRow *row);

G_END_DECLS
