/* tach-phase-bar.h: one run's step time split into its phases, as a bar. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

typedef enum {
  TACH_PHASE_FEED,
  TACH_PHASE_COMPUTE,
  TACH_PHASE_SYNC,
  TACH_PHASE_HOST,
  TACH_PHASE_COUNT,
  /* A data-parallel rank's step has three more, each cut from compute
   * (TachSample): the exposed communication, the packing and the wait for
   * the slowest rank.  Runs of one process have none of them. */
  TACH_PHASE_COMM = TACH_PHASE_COUNT,
  TACH_PHASE_PACK,
  TACH_PHASE_IMBALANCE,
  TACH_PHASE_ALL
} TachPhase;

#define TACH_TYPE_PHASE_BAR (tach_phase_bar_get_type ())
G_DECLARE_FINAL_TYPE (TachPhaseBar, tach_phase_bar, TACH, PHASE_BAR, GtkWidget)

GtkWidget  *tach_phase_bar_new        (void);
void        tach_phase_bar_set_share  (TachPhaseBar *self,
                                       TachPhase     phase,
                                       double        share);
double      tach_phase_bar_get_share  (TachPhaseBar *self,
                                       TachPhase     phase);
void        tach_phase_get_color      (TachPhase     phase,
                                       gboolean      dark,
                                       GdkRGBA      *color);
const char *tach_phase_get_label      (TachPhase     phase);
/* "Feeding: 12 %" for each of @n_phases @shares, joined by @separator; the
 * rank phases only where they are above 0.  Read by the bar's tooltip and
 * by screen readers from the bar and the Compare view. */
char       *tach_phase_format_shares  (const double *shares,
                                       guint         n_phases,
                                       const char   *separator);

G_END_DECLS
