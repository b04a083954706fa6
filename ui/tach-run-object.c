/* tach-run-object.c: a run's live state, for binding: its life cycle
 * (start, stop, wait, the engine's notifications), the samples drained into
 * the chart series, the status line, the speed-up over a baseline and the
 * class; the text its figures are shown in is tach-run-object-text.c's.
 *
 * tach-run-object.c and tach-run-object-text.c are one class,
 * TachRunObject, and call one another as one unit, which
 * tools/folder-arrows.py lists.  */
#include "tach-run-object-private.h"

#include <glib/gi18n.h>
#include <math.h>

G_DEFINE_FINAL_TYPE (TachRunObject, tach_run_object, G_TYPE_OBJECT)

enum {
  UPDATED,
  FINISHED,
  N_SIGNALS
};

static GParamSpec *properties[N_PROPS];
static guint signals[N_SIGNALS];

static void
tach_run_object_update_status (TachRunObject *self)
{
  const TachConfig *config = tach_run_get_config (self->run);
  g_autofree char *status = NULL;
  guint64 eval_done = 0, eval_total = 0;
  TachEvaluation evaluation = tach_run_get_evaluation (self->run, &eval_done, &eval_total);

  switch (tach_run_get_state (self->run))
    {
    case TACH_RUN_STATE_READY:
      status = g_strdup (self->started ? _("Starting") : _("Queued"));
      break;
    case TACH_RUN_STATE_RUNNING:
      if (evaluation == TACH_EVALUATION_RUNNING)
        {
          /* After the last step, a workload with a test set evaluates it
           * (the cnn: 10 000 Fashion-MNIST images), its own phase with its
           * own progress; Stop ends it within a batch. */
          if (eval_total > 0)
            /* Translators: a run's status while it evaluates its test set, in percent. */
            status = g_strdup_printf (_("Evaluating the test set %.0f%%"),
                                      100.0 * (double) eval_done / (double) eval_total);
          else
            status = g_strdup (_("Evaluating…"));
        }
      else if (config->steps > 0 && tach_run_get_steps_done (self->run) >= config->steps)
        {
          /* Every step has run but the run has not ended: it gathers its
           * results (or is about to evaluate).  "Running 100%" would look
           * stuck. */
          status = g_strdup (tach_workload_evaluates (config->workload) ? _("Evaluating…")
                                                                        : _("Finishing…"));
        }
      else
        {
          /* Translators: a run's status and its progress, in percent. */
          status = g_strdup_printf (_("Running %.0f%%"), 100.0 * tach_run_object_get_progress (self));
        }
      break;
    case TACH_RUN_STATE_FINISHED:
      status = g_strdup (_("Finished"));
      break;
    case TACH_RUN_STATE_CANCELLED:
      status = g_strdup (evaluation == TACH_EVALUATION_STOPPED
                         ? _("Stopped during the test-set evaluation") : _("Stopped"));
      break;
    case TACH_RUN_STATE_FAILED:
    default:
      status = g_strdup (_("Failed"));
      break;
    }
  if (g_strcmp0 (self->status, status) != 0)
    {
      g_free (self->status);
      self->status = g_steal_pointer (&status);
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_STATUS]);
    }
}

static void
tach_run_object_ingest (TachRunObject *self)
{
  gint64 now;
  guint n = 0, got;

  /* A finished run has handed over every sample. */
  if (self->scratch == NULL)
    return;

  /* A bounded batch at a time (a run that syncs at its end hands over every
   * step at once). */
  do
    {
      g_array_set_size (self->scratch, 0);
      got = tach_run_drain_samples (self->run, self->scratch);
      for (guint i = 0; i < got; i++)
        {
          const TachSample *s = &g_array_index (self->scratch, TachSample, i);
          double rate = s->step_ms > 0.0 ? 1000.0 / s->step_ms : NAN;

          tach_chart_series_append (self->rate_series, s->step, s->wall_s, rate, s->warmup);
          tach_chart_series_append (self->loss_series, s->step, s->wall_s, s->loss, s->warmup);
          self->steps_done = MAX (self->steps_done, s->step + 1);
        }
      n += got;
    }
  while (got == TACH_RUN_DRAIN_MAX);
  g_array_set_size (self->scratch, 0);
  /* Between sync points (sync=end) no sample arrives, but the engine
   * still says how far the run has got. */
  self->steps_done = MAX (self->steps_done, tach_run_get_steps_done (self->run));
  if (n == 0 && self->finished)
    return;

  tach_run_object_update_status (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_PROGRESS]);

  /* The summary reads every sample so far (under the run's lock, which the
   * engine waits on to publish): at thousands of steps per second it is
   * refreshed four times a second, not on every drain, and less often as
   * the run grows, so that it never takes more than a tenth of the time. */
  now = g_get_monotonic_time ();
  if (!self->finished && tach_run_get_state (self->run) == TACH_RUN_STATE_RUNNING
      && now - self->summary_time < MAX (G_USEC_PER_SEC / 4, 10 * self->summary_cost))
    return;
  self->summary_time = now;
  tach_run_get_summary (self->run, &self->summary);
  self->summary_cost = g_get_monotonic_time () - now;
  for (guint p = PROP_RATE; p < PROP_COLOR_INDEX; p++)
    if (p != PROP_SPEEDUP && p != PROP_SPEEDUP_TEXT && p != PROP_SPEEDUP_VALUE_TEXT
        && p != PROP_SPEEDUP_DETAIL_TEXT && p != PROP_SPEEDUP_OPACITY)
      g_object_notify_by_pspec (G_OBJECT (self), properties[p]);
}

static void
tach_run_object_take_end (TachRunObject *self)
{
  if (self->finished)
    return;
  self->finished = TRUE;
  /* Every sample is in by now (each caller ingests first): the drain's
   * scratch, as large as the largest batch drained, goes, so that a list
   * of finished runs keeps only their summaries and chart buckets. */
  g_clear_pointer (&self->scratch, g_array_unref);
  tach_run_object_update_status (self);
  g_signal_emit (self, signals[FINISHED], 0);
}

/* The reference a started run holds on itself for the engine's
 * notifications: dropped once none can come (tach_run_wait has returned). */
static void
tach_run_object_release (TachRunObject *self)
{
  if (self->released)
    return;
  self->released = TRUE;
  g_object_unref (self);
}

/* Runs on the main thread, coalesced by the engine: one drain, one update of
 * the bound properties, one "updated" (and so one redraw) per call. */
static void
on_run_notify (TachRun  *run,
               gpointer  user_data)
{
  TachRunObject *self = user_data;
  TachRunState state = tach_run_get_state (run);
  gboolean ended = state != TACH_RUN_STATE_READY && state != TACH_RUN_STATE_RUNNING;

  tach_run_object_ingest (self);
  g_signal_emit (self, signals[UPDATED], 0);
  if (!ended)
    return;

  /* The engine calls once more after the run ends: the thread is done, so
   * waiting here only joins it and collects the error.  A call the thread
   * queued while this one ran is dropped by the wait: this is the last. */
  tach_run_wait (run, NULL);
  tach_run_object_ingest (self);
  tach_run_object_take_end (self);
  tach_run_object_release (self);
}

static void
tach_run_object_finalize (GObject *object)
{
  TachRunObject *self = TACH_RUN_OBJECT (object);

  g_clear_pointer (&self->run, tach_run_unref);
  g_clear_pointer (&self->scratch, g_array_unref);
  g_clear_object (&self->rate_series);
  g_clear_object (&self->loss_series);
  g_free (self->title);
  g_free (self->short_title);
  g_free (self->mode);
  g_free (self->knobs);
  g_free (self->status);
  g_free (self->speedup_busy);
  g_clear_weak_pointer (&self->paired_base);
  g_clear_weak_pointer (&self->baseline);
  G_OBJECT_CLASS (tach_run_object_parent_class)->finalize (object);
}

static void
tach_run_object_set_property (GObject      *object,
                              guint         prop_id,
                              const GValue *value,
                              GParamSpec   *pspec)
{
  TachRunObject *self = TACH_RUN_OBJECT (object);

  switch (prop_id)
    {
    case PROP_VISIBLE:
      if (self->visible != g_value_get_boolean (value))
        {
          self->visible = g_value_get_boolean (value);
          tach_chart_series_set_visible (self->rate_series, self->visible);
          tach_chart_series_set_visible (self->loss_series, self->visible);
          g_object_notify_by_pspec (object, pspec);
        }
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static GParamSpec *
string_prop (const char *name)
{
  return g_param_spec_string (name, NULL, NULL, NULL,
                              G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
}

static GParamSpec *
double_prop (const char *name)
{
  return g_param_spec_double (name, NULL, NULL, -G_MAXDOUBLE, G_MAXDOUBLE, 0.0,
                              G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
}

static void
tach_run_object_class_init (TachRunObjectClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = tach_run_object_finalize;
  object_class->get_property = tach_run_object_get_property;
  object_class->set_property = tach_run_object_set_property;

  properties[PROP_NUMBER] =
    g_param_spec_uint ("number", NULL, NULL, 0, G_MAXUINT, 0,
                       G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_TITLE] = string_prop ("title");
  properties[PROP_WORKLOAD] = string_prop ("workload");
  properties[PROP_MODE] = string_prop ("mode");
  properties[PROP_KNOBS] = string_prop ("knobs");
  properties[PROP_DEVICE] = string_prop ("device");
  properties[PROP_BATCH] =
    g_param_spec_uint ("batch", NULL, NULL, 0, G_MAXUINT, 0,
                       G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_STATUS] = string_prop ("status");
  properties[PROP_RATE] = double_prop ("rate");
  properties[PROP_RATE_TEXT] = string_prop ("rate-text");
  properties[PROP_ITEMS_TEXT] = string_prop ("items-text");
  properties[PROP_LOSS_TEXT] = string_prop ("loss-text");
  /* A generation's time to the first token and its decoding rate, each a
   * line of the run table's generation column ("—" for other runs), and
   * both in words for the column's tooltip. */
  properties[PROP_PREFILL_TEXT] = string_prop ("prefill-text");
  properties[PROP_DECODE_TEXT] = string_prop ("decode-text");
  properties[PROP_GENERATION_TEXT] = string_prop ("generation-text");
  /* The figures a column has no room for: generation and memory. */
  properties[PROP_DETAILS_TEXT] = string_prop ("details-text");
  properties[PROP_SPEEDUP] = double_prop ("speedup");
  properties[PROP_SPEEDUP_TEXT] = string_prop ("speedup-text");
  /* The same in two lines, for the run table's narrow column. */
  properties[PROP_SPEEDUP_VALUE_TEXT] = string_prop ("speedup-value-text");
  properties[PROP_SPEEDUP_DETAIL_TEXT] = string_prop ("speedup-detail-text");
  properties[PROP_SPEEDUP_OPACITY] = double_prop ("speedup-opacity");
  properties[PROP_FEED_SHARE] = double_prop ("feed-share");
  properties[PROP_COMPUTE_SHARE] = double_prop ("compute-share");
  properties[PROP_SYNC_SHARE] = double_prop ("sync-share");
  properties[PROP_HOST_SHARE] = double_prop ("host-share");
  /* A data-parallel run's (0 for one process): TachPhase's order. */
  properties[PROP_COMM_SHARE] = double_prop ("comm-share");
  properties[PROP_PACK_SHARE] = double_prop ("pack-share");
  properties[PROP_IMBALANCE_SHARE] = double_prop ("imbalance-share");
  properties[PROP_COLOR_INDEX] =
    g_param_spec_uint ("color-index", NULL, NULL, 0, G_MAXUINT, 0,
                       G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  /* The CSS classes of the run's colour swatch: "run-swatch color-N". */
  properties[PROP_SWATCH_CLASSES] =
    g_param_spec_boxed ("swatch-classes", NULL, NULL, G_TYPE_STRV,
                        G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_VISIBLE] =
    g_param_spec_boolean ("visible", NULL, NULL, TRUE,
                          G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_PROGRESS] = double_prop ("progress");
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /* Emitted after each drain of samples, on the main thread. */
  signals[UPDATED] = g_signal_new ("updated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                   0, NULL, NULL, NULL, G_TYPE_NONE, 0);
  /* Emitted once when the run has finished, failed or been stopped. */
  signals[FINISHED] = g_signal_new ("finished", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                    0, NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void
tach_run_object_init (TachRunObject *self)
{
  self->scratch = g_array_new (FALSE, FALSE, sizeof (TachSample));
  self->visible = TRUE;
  self->speedup = NAN;
  self->speedup_ci = (TachInterval) { NAN, NAN, NAN };
  self->paired = (TachInterval) { NAN, NAN, NAN };
}

TachRunObject *
tach_run_object_new (TachRun *run,
                     guint    number,
                     guint    color_index)
{
  TachRunObject *self;
  const TachConfig *config;

  g_return_val_if_fail (run != NULL, NULL);

  self = g_object_new (TACH_TYPE_RUN_OBJECT, NULL);
  self->run = tach_run_ref (run);
  self->color_index = color_index;
  self->number = number;
  config = tach_run_get_config (run);
  /* Its preset, or what an explain mix or a sweep's point is. */
  self->mode = tach_run_dup_name (run, _("custom"));
  if (config->ranks > 1)
    /* Translators: a run of several data-parallel ranks: its number,
     * workload, preset and ranks ("#3 bilstm · tuned · 2 ranks"). */
    self->short_title = g_strdup_printf (ngettext ("#%u %s · %s · %u rank", "#%u %s · %s · %u ranks",
                                                   config->ranks),
                                         number,
                                         tach_workload_to_string (config->workload), self->mode,
                                         config->ranks);
  else
    self->short_title = g_strdup_printf ("#%u %s · %s", number,
                                         tach_workload_to_string (config->workload), self->mode);
  if (tach_run_get_source (run) != NULL)
    {
      g_autofree char *folder = g_path_get_basename (tach_run_get_source (run));

      /* Translators: a run loaded from a results folder: its number,
       * workload and preset ("#3 bilstm · tuned"), the folder's name and
       * the device it ran on. */
      self->title = g_strdup_printf (_("%s · %s on %s"), self->short_title,
                                     folder, tach_run_get_device (run)->name);
    }
  else
    self->title = g_strdup (self->short_title);
  self->knobs = tach_run_object_build_knobs (run);
  self->rate_series = tach_chart_series_new (self->title, color_index);
  self->loss_series = tach_chart_series_new (self->title, color_index);
  tach_run_get_summary (run, &self->summary);
  tach_run_object_update_status (self);

  /* A run that has already ended (loaded from a results folder) is taken
   * in whole: it never starts and never notifies. */
  if (tach_run_get_state (run) != TACH_RUN_STATE_READY
      && tach_run_get_state (run) != TACH_RUN_STATE_RUNNING)
    {
      self->started = TRUE;
      self->released = TRUE;
      tach_run_object_ingest (self);
      tach_run_object_take_end (self);
    }
  return self;
}

/* Starts the engine thread.  A started run keeps itself alive until the
 * engine's last notification, which may come after the window has gone,
 * or until tach_run_object_wait(). */
gboolean
tach_run_object_start (TachRunObject  *self,
                       GError        **error)
{
  g_return_val_if_fail (TACH_IS_RUN_OBJECT (self), FALSE);
  g_return_val_if_fail (!self->started, FALSE);

  if (!tach_run_start (self->run, NULL, on_run_notify, self, error))
    {
      self->started = TRUE;
      self->released = TRUE;
      tach_run_object_take_end (self);
      return FALSE;
    }
  self->started = TRUE;
  g_object_ref (self);
  tach_run_object_update_status (self);
  return TRUE;
}

void
tach_run_object_stop (TachRunObject *self)
{
  g_return_if_fail (TACH_IS_RUN_OBJECT (self));
  tach_run_stop (self->run);
}

/* Blocks until the engine thread is done and takes in what it left, so the
 * caller sees the final state.  No notification comes after the wait, so
 * the self-reference goes too. */
void
tach_run_object_wait (TachRunObject *self)
{
  g_return_if_fail (TACH_IS_RUN_OBJECT (self));

  if (!self->started || self->finished)
    return;
  tach_run_wait (self->run, NULL);
  tach_run_object_ingest (self);
  tach_run_object_take_end (self);
  tach_run_object_release (self);
}

TachRun *
tach_run_object_get_run (TachRunObject *self)
{
  g_return_val_if_fail (TACH_IS_RUN_OBJECT (self), NULL);
  return self->run;
}

TachRunState
tach_run_object_get_state (TachRunObject *self)
{
  g_return_val_if_fail (TACH_IS_RUN_OBJECT (self), TACH_RUN_STATE_FAILED);
  return tach_run_get_state (self->run);
}

gboolean
tach_run_object_is_active (TachRunObject *self)
{
  g_return_val_if_fail (TACH_IS_RUN_OBJECT (self), FALSE);
  return self->started && !self->finished;
}

const GError *
tach_run_object_get_error (TachRunObject *self)
{
  g_return_val_if_fail (TACH_IS_RUN_OBJECT (self), NULL);
  return tach_run_get_error (self->run);
}

const char *
tach_run_object_get_title (TachRunObject *self)
{
  g_return_val_if_fail (TACH_IS_RUN_OBJECT (self), NULL);
  return self->title;
}

guint
tach_run_object_get_number (TachRunObject *self)
{
  g_return_val_if_fail (TACH_IS_RUN_OBJECT (self), 0);
  return self->number;
}

/* The title without where a loaded run came from: the number, workload
 * and preset, short enough for a legend chip. */
const char *
tach_run_object_get_short_title (TachRunObject *self)
{
  g_return_val_if_fail (TACH_IS_RUN_OBJECT (self), NULL);
  return self->short_title;
}

const char *
tach_run_object_get_preset (TachRunObject *self)
{
  g_return_val_if_fail (TACH_IS_RUN_OBJECT (self), NULL);
  return tach_run_get_config (self->run)->preset;
}

double
tach_run_object_get_rate (TachRunObject *self)
{
  g_return_val_if_fail (TACH_IS_RUN_OBJECT (self), NAN);
  return self->summary.steps > 0 ? self->summary.steps_per_s_median : NAN;
}

double
tach_run_object_get_speedup (TachRunObject *self)
{
  g_return_val_if_fail (TACH_IS_RUN_OBJECT (self), NAN);
  return self->speedup;
}

double
tach_run_object_get_share (TachRunObject *self,
                           guint          phase)
{
  const double shares[] = {
    self->summary.feed_share, self->summary.compute_share,
    self->summary.sync_share, self->summary.host_share,
    self->summary.comm_share, self->summary.pack_share, self->summary.imbalance_share,
  };

  g_return_val_if_fail (phase < G_N_ELEMENTS (shares), NAN);
  return self->summary.steps > 0 ? shares[phase] : NAN;
}

guint64
tach_run_object_get_steps_done (TachRunObject *self)
{
  g_return_val_if_fail (TACH_IS_RUN_OBJECT (self), 0);
  return self->steps_done;
}

double
tach_run_object_get_progress (TachRunObject *self)
{
  const TachConfig *config = tach_run_get_config (self->run);
  guint64 total = config->steps;

  if (self->finished)
    return 1.0;
  return total > 0 ? MIN (1.0, (double) self->steps_done / total) : 0.0;
}

TachVerdict
tach_run_object_compare (TachRunObject *self,
                         TachRunObject *baseline,
                         TachInterval  *ratio,
                         gboolean      *by_items)
{
  *ratio = (TachInterval) { NAN, NAN, NAN };
  if (by_items != NULL)
    *by_items = FALSE;
  if (!isfinite (tach_run_object_get_rate (self)) || !isfinite (tach_run_object_get_rate (baseline)))
    return TACH_VERDICT_UNKNOWN;
  if (baseline == self->paired_base && isfinite (self->paired.value))
    {
      TachInterval apart;

      /* by_items as the medians' comparison says; the figure paired. */
      tach_summary_compare (&baseline->summary, &self->summary, &apart, by_items);
      *ratio = self->paired;
      return tach_interval_verdict (ratio, 1);
    }
  return tach_summary_compare (&baseline->summary, &self->summary, ratio, by_items);
}

char *
tach_run_object_dup_busy_apart (TachRunObject *self, TachRunObject *baseline)
{
  TachInterval ratio;

  if (baseline == NULL || baseline == self
      || (baseline == self->paired_base && isfinite (self->paired.value))
      || tach_run_object_compare (self, baseline, &ratio, NULL) == TACH_VERDICT_UNKNOWN)
    return NULL;
  return tach_summary_dup_busy_apart (baseline->summary.machine_busy, self->summary.machine_busy);
}

void
tach_run_object_set_paired (TachRunObject *self, TachRunObject *base, const TachInterval *ratio)
{
  g_return_if_fail (TACH_IS_RUN_OBJECT (self));
  g_set_weak_pointer (&self->paired_base, ratio != NULL ? base : NULL);
  self->paired = ratio != NULL ? *ratio : (TachInterval) { NAN, NAN, NAN };
  /* The run table's figure follows. */
  tach_run_object_set_baseline (self, self->baseline);
}

void
tach_run_object_set_baseline (TachRunObject *self,
                              TachRunObject *baseline)
{
  TachInterval ci = { NAN, NAN, NAN };
  TachVerdict verdict = TACH_VERDICT_UNKNOWN;
  gboolean by_items = FALSE;
  g_autofree char *busy = NULL;

  g_return_if_fail (TACH_IS_RUN_OBJECT (self));

  g_set_weak_pointer (&self->baseline, baseline);
  /* The baseline is 1× itself, with nothing to compare. */
  if (baseline == self)
    ci.value = isfinite (tach_run_object_get_rate (self)) ? 1.0 : NAN;
  else if (baseline != NULL)
    verdict = tach_run_object_compare (self, baseline, &ci, &by_items);
  busy = tach_run_object_dup_busy_apart (self, baseline);

  if (verdict == self->speedup_verdict && by_items == self->speedup_by_items
      && (ci.value == self->speedup || (isnan (ci.value) && isnan (self->speedup)))
      && (ci.lo == self->speedup_ci.lo || (isnan (ci.lo) && isnan (self->speedup_ci.lo)))
      && g_strcmp0 (busy, self->speedup_busy) == 0)
    return;
  g_free (self->speedup_busy);
  self->speedup_busy = g_steal_pointer (&busy);
  self->speedup = ci.value;
  self->speedup_ci = ci;
  self->speedup_verdict = verdict;
  self->speedup_by_items = by_items;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_SPEEDUP]);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_SPEEDUP_TEXT]);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_SPEEDUP_VALUE_TEXT]);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_SPEEDUP_DETAIL_TEXT]);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_SPEEDUP_OPACITY]);
}

TachChartSeries *
tach_run_object_get_rate_series (TachRunObject *self)
{
  g_return_val_if_fail (TACH_IS_RUN_OBJECT (self), NULL);
  return self->rate_series;
}

TachChartSeries *
tach_run_object_get_loss_series (TachRunObject *self)
{
  g_return_val_if_fail (TACH_IS_RUN_OBJECT (self), NULL);
  return self->loss_series;
}
