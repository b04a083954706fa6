/* tach-knob-mark.h: a settings row marked by an error that concerns its
 * knob (the engine's TachErrorHint): the error style, a warning icon
 * whose tooltip says what is wrong and the fix, and a button that applies
 * the fix where the fix is a value. */
#pragma once

#include <adwaita.h>
#include <tach-engine.h>

G_BEGIN_DECLS

/* The fix of @hint in the words of the settings, "Classifier head → Global
 * average pooling", or, without a value, the title of the knob to change;
 * NULL when @hint names none.  Free with g_free(). */
char *tach_knob_hint_describe (const TachErrorHint *hint);

/* Marks @row (an AdwActionRow, AdwComboRow or AdwEntryRow) for @error,
 * whose hint names its knob; the button's action is @fix_action
 * (activated on the row) where the hint's fix is a value.  Marking again
 * replaces the mark. */
void  tach_knob_mark_row      (GtkWidget *row, const GError *error, const char *fix_action);
void  tach_knob_unmark_row    (GtkWidget *row);
/* The tooltip of a marked row (the message and the fix), or NULL. */
const char *tach_knob_mark_tooltip (GtkWidget *row);

G_END_DECLS
