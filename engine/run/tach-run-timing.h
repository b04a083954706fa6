/* tach-run-timing.h: how the runner times steps (private to tach-run.c).
 *
 * On an asynchronous device the host only queues a step, so host time
 * around it is the enqueue rate, not the step's.  Each step records two
 * events on the device's stream: one before its work and one after it.
 * A step's compute is the interval between its own two events; its step
 * time on the device timeline is the interval between the previous step's
 * end-of-step event and its own, which covers everything the device did or
 * waited for between them (feeding, compute, the gaps while the host was
 * late), as steps/s must.
 *
 * Events live in a ring of TACH_STEP_RING pairs, so a long run between
 * sync points reuses them: a slot is read before it is recorded again.
 * Step k's device time needs the end event of step k - 1, which step
 * k + TACH_STEP_RING - 1 records over, so the runner reads step
 * i - (TACH_STEP_RING - 1) before it records step i
 * (tach_step_timer_due()).  That step finished long ago in practice; the
 * host never runs more than the ring ahead of the device.
 *
 * On the host clock (host_clock: a backend whose ops finish before they
 * return, such as the CPU's) there are no events: ops run as they are
 * called and the runner's clock times the steps.
 */
#pragma once

#include <time.h>

#include "tach-backend.h"

G_BEGIN_DECLS

#define TACH_STEP_RING 256
#define TACH_STEP_NO_SLOT G_MAXUINT

typedef struct {
  TachBackend *be;                     /* borrowed */
  gboolean     host_clock;             /* no events: the runner's clock times steps */
  TachEvent   *start[TACH_STEP_RING];  /* owned */
  TachEvent   *end[TACH_STEP_RING];    /* owned */
} TachStepTimer;

/* Where one step's events are. */
typedef struct {
  guint slot;
  guint prev_slot;   /* the previous step's end event, or TACH_STEP_NO_SLOT */
} TachStepMarks;

/* The host clock of step times, in ns: fast steps (tens of µs) need finer
 * than g_get_monotonic_time()'s µs, whose grid would show in medians. */
static inline gint64
tach_now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (gint64) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

/* Makes the events (none with @host_clock); errors go to @be's sticky error. */
void     tach_step_timer_init (TachStepTimer *timer, TachBackend *be, gboolean host_clock);
void     tach_step_timer_clear (TachStepTimer *timer);
/* Where step @step's events are (steps run 0, 1, 2, ...: the previous
 * step's end event is step - 1's). */
void     tach_step_marks_for (guint64 step, TachStepMarks *marks);
/* Records step @step's start event and fills @marks. */
void     tach_step_timer_begin (TachStepTimer *timer, guint64 step, TachStepMarks *marks);
void     tach_step_timer_end (TachStepTimer *timer, const TachStepMarks *marks);
/* Reads a recorded step's compute and device-timeline step time, in ms
 * (waits for its end event).  NaN for what cannot be known: the device
 * step time of a run's first step. */
void     tach_step_timer_read (TachStepTimer *timer, const TachStepMarks *marks,
                               double *compute_ms, double *device_step_ms);
/* The step that must be read before step @step records, if any. */
gboolean tach_step_timer_due (guint64 step, guint64 *due);

G_END_DECLS
