/* tach-error-private.h: how the engine attaches a hint to its errors. */
#pragma once

#include "tach-engine.h"

G_BEGIN_DECLS

/* Attaches to *@error (a TACH_ERROR just set; nothing happens when @error
 * or *@error is NULL, or when it is of another domain) the knob it
 * concerns and that knob's @value, and the fix: tach_config_set (@fix_knob,
 * @fix_value) where a value fixes it (@fix_knob TACH_KNOB_COUNT and
 * @fix_value NULL where none does), and @fix, the fix in the message's
 * words (translated), or NULL.  An error keeps the first hint attached:
 * the innermost check knows best. */
void tach_error_add_hint (GError **error, TachKnobId knob, const char *value,
                          TachKnobId fix_knob, const char *fix_value, const char *fix);
/* The same with @knob's value read from @config. */
void tach_error_add_config_hint (GError **error, const TachConfig *config, TachKnobId knob,
                                 TachKnobId fix_knob, const char *fix_value, const char *fix);

/* Attaches to *@error, a shape check's refusal of a zero size, the first
 * model-shape knob (or the batch) of @config that is 0, with the
 * workload's default as the fix. */
void tach_error_add_zero_hint (GError **error, const TachConfig *config);

/* @format (a printf format, translated) with the knobs it names put in
 * the current wording (tach_set_wording): "{head}" names a knob, "{head=gap}"
 * a knob and its value (which may be a conversion: "{batch=%u}"), and
 * "{--csv folder|folder}" gives the command line's words, then the
 * window's.  Other braces stay.  Static (interned). */
const char *tach_wording_format (const char *format) G_GNUC_FORMAT (1);
/* Shorthand for messages: _() then tach_wording_format(). */
#define W_(String) tach_wording_format (_(String))

G_END_DECLS
