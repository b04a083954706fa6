/* tach-run-timing.c: the runner's step events (see tach-run-timing.h). */
#include <math.h>

#include "tach-run-timing.h"

void
tach_step_timer_init (TachStepTimer *timer, TachBackend *be, gboolean host_clock)
{
  timer->be = be;
  timer->host_clock = host_clock;
  for (guint i = 0; i < TACH_STEP_RING && !host_clock; i++)
    {
      timer->start[i] = tach_event_new (be);
      timer->end[i] = tach_event_new (be);
    }
}

void
tach_step_timer_clear (TachStepTimer *timer)
{
  if (timer->be == NULL)
    return;
  for (guint i = 0; i < TACH_STEP_RING; i++)
    {
      tach_event_free (timer->be, timer->start[i]);
      tach_event_free (timer->be, timer->end[i]);
      timer->start[i] = timer->end[i] = NULL;
    }
}

void
tach_step_marks_for (guint64 step, TachStepMarks *marks)
{
  marks->slot = (guint) (step % TACH_STEP_RING);
  marks->prev_slot = step > 0 ? (guint) ((step - 1) % TACH_STEP_RING) : TACH_STEP_NO_SLOT;
}

void
tach_step_timer_begin (TachStepTimer *timer, guint64 step, TachStepMarks *marks)
{
  tach_step_marks_for (step, marks);
  if (!timer->host_clock)
    tach_event_record (timer->be, timer->start[marks->slot]);
}

void
tach_step_timer_end (TachStepTimer *timer, const TachStepMarks *marks)
{
  if (!timer->host_clock)
    tach_event_record (timer->be, timer->end[marks->slot]);
}

void
tach_step_timer_read (TachStepTimer *timer, const TachStepMarks *marks, double *compute_ms,
                      double *device_step_ms)
{
  *compute_ms = *device_step_ms = NAN;
  if (timer->host_clock)
    return;
  *compute_ms = tach_event_elapsed_ms (timer->be, timer->start[marks->slot], timer->end[marks->slot]);
  if (marks->prev_slot != TACH_STEP_NO_SLOT)
    *device_step_ms = tach_event_elapsed_ms (timer->be, timer->end[marks->prev_slot],
                                             timer->end[marks->slot]);
}

gboolean
tach_step_timer_due (guint64 step, guint64 *due)
{
  if (step < TACH_STEP_RING - 1)
    return FALSE;
  *due = step - (TACH_STEP_RING - 1);
  return TRUE;
}
