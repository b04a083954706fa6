/* tach-error-private.h: the engine's error vocabulary, which every folder
 * speaks: the TACH_ERROR domain (tach-engine.h), the facts an error
 * carries about a knob (its hint: the knob, its value, the fix), and the
 * markup in which a message names knobs ("{batch=%u}", W_), whose words
 * the settings layer gives (tach_wording_set_namer).  A lower layer states
 * the knob and the values it knows; what it does not (the value a knob has
 * in the run's configuration, a default) the layer that holds the
 * configuration fills in (tach_error_fill_hint, settings/). */
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

/* What of a hint the layer that holds the run's configuration fills in. */
typedef enum {
  TACH_HINT_COMPLETE,        /* nothing: no hint, or one with its facts */
  TACH_HINT_CONFIG_VALUE,    /* the knob's value: the configuration's */
  TACH_HINT_CONFIG_DEFAULT,  /* the same, and the fix: the knob's default */
  TACH_HINT_ZERO_SHAPE,      /* the knob: the first model-shape knob that is
                              * 0; the fix: the workload's default */
} TachHintPending;

/* As tach_error_add_hint(), with @knob's value left to the configuration
 * (@pending TACH_HINT_CONFIG_VALUE or _CONFIG_DEFAULT; for _ZERO_SHAPE,
 * @knob and the fix are left too: pass TACH_KNOB_COUNT, TACH_KNOB_COUNT,
 * NULL).  Until it is filled in, tach_error_get_hint() finds no hint. */
void tach_error_add_pending_hint (GError **error, TachHintPending pending, TachKnobId knob,
                                  TachKnobId fix_knob, const char *fix_value, const char *fix);
/* What @error's hint still needs, and its knob (TACH_KNOB_COUNT for
 * _ZERO_SHAPE). */
TachHintPending tach_error_get_pending (const GError *error, TachKnobId *knob);
/* Fills in a pending hint: @knob, its @value and, unless NULL, @fix_value
 * (with @knob as the fix's knob for _ZERO_SHAPE); @knob TACH_KNOB_COUNT
 * drops it (no knob fits), as if none had been attached. */
void tach_error_complete_hint (GError *error, TachKnobId knob, const char *value,
                               const char *fix_value);

/* @format (a printf format, translated) with the knobs it names put in
 * the current wording (tach_set_wording): "{head}" names a knob, "{head=gap}"
 * a knob and its value (which may be a conversion: "{batch=%u}"), and
 * "{--csv folder|folder}" gives the command line's words, then the
 * window's.  Other braces stay.  Static (interned). */
const char *tach_wording_format (const char *format) G_GNUC_FORMAT (1);
/* Shorthand for messages: _() then tach_wording_format(). */
#define W_(String) tach_wording_format (_(String))

/* Appends to @out the words for the knob @name, with @value when not NULL
 * (in a format string when @in_format: a value holding a conversion such
 * as %u is kept for printf, other text is escaped); FALSE, appending
 * nothing, when @name is no knob. */
typedef gboolean (*TachWordingNamer) (GString *out, const char *name, const char *value,
                                      gboolean in_format);
/* The settings layer's words for knobs (the knob table's names, titles and
 * value labels), installed with its table and by tach_set_wording().  Until
 * then a knob is named as the command line names it
 * (tach_wording_append_option). */
void tach_wording_set_namer (TachWordingNamer namer);
/* The wording tach_get_wording() returns (set by tach_set_wording(),
 * settings/, which installs the namer first). */
void tach_wording_set_mode (TachWording wording);
/* "--name" or "--name value": a knob in the command line's words. */
void tach_wording_append_option (GString *out, const char *name, const char *value);

G_END_DECLS
