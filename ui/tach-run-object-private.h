/* tach-run-object-private.h: a run object's state, shared by
 * tach-run-object.c (life cycle, samples, status, speed-up over a baseline,
 * class) and tach-run-object-text.c (the text its figures are shown in:
 * the bound properties' values, the speed-up's words, the mode knobs). */
#pragma once

#include "tach-run-object.h"

G_BEGIN_DECLS

struct _TachRunObject
{
  GObject          parent_instance;

  TachRun         *run;
  GArray          *scratch;        /* TachSample, reused between drains; NULL once
                                    * finished (up to TACH_RUN_DRAIN_MAX x 96 B) */
  TachChartSeries *rate_series;
  TachChartSeries *loss_series;
  TachSummary      summary;
  char            *title;
  char            *short_title;    /* the title without the folder and device */
  char            *mode;           /* its preset, or what it is (tach_run_dup_name) */
  char            *knobs;
  char            *status;
  guint            color_index;
  guint            number;         /* in the window's table, as titles show it */
  guint64          steps_done;
  gint64           summary_time;   /* monotonic time of the last summary */
  gint64           summary_cost;   /* how long it took, µs */
  double           speedup;
  /* The speed-up's 95% interval and verdict (tach_summary_compare), and
   * whether it compares items/s (other batch sizes than the baseline's). */
  TachInterval     speedup_ci;
  TachVerdict      speedup_verdict;
  gboolean         speedup_by_items;
  /* Why the speed-up is not resolved though its interval excludes 1 (the
   * runs were measured apart on a busy machine,
   * tach_summary_dup_busy_apart), or NULL. */
  char            *speedup_busy;
  /* The speed-up over @paired_base paired by round (Compare's rounds),
   * which every view shows for that pair: one verdict per comparison.
   * @paired_base is a weak pointer; @baseline the last baseline set
   * (weak), so that a new paired figure reaches the run table. */
  TachRunObject   *paired_base;
  TachInterval     paired;
  TachRunObject   *baseline;
  gboolean         visible;
  gboolean         started;
  gboolean         finished;       /* the final state has been taken in */
  gboolean         released;       /* the self-reference of a started run */
};

enum {
  PROP_0,
  PROP_NUMBER,
  PROP_TITLE,
  PROP_WORKLOAD,
  PROP_MODE,
  PROP_KNOBS,
  PROP_DEVICE,
  PROP_BATCH,
  PROP_STATUS,
  PROP_RATE,
  PROP_RATE_TEXT,
  PROP_ITEMS_TEXT,
  PROP_LOSS_TEXT,
  PROP_PREFILL_TEXT,
  PROP_DECODE_TEXT,
  PROP_GENERATION_TEXT,
  PROP_DETAILS_TEXT,
  PROP_SPEEDUP,
  PROP_SPEEDUP_TEXT,
  PROP_SPEEDUP_VALUE_TEXT,
  PROP_SPEEDUP_DETAIL_TEXT,
  PROP_SPEEDUP_OPACITY,
  PROP_FEED_SHARE,
  PROP_COMPUTE_SHARE,
  PROP_SYNC_SHARE,
  PROP_HOST_SHARE,
  PROP_COMM_SHARE,
  PROP_PACK_SHARE,
  PROP_IMBALANCE_SHARE,
  PROP_COLOR_INDEX,
  PROP_SWATCH_CLASSES,
  PROP_VISIBLE,
  PROP_PROGRESS,
  N_PROPS
};

/* tach-run-object-text.c */
char *tach_run_object_build_knobs  (TachRun    *run);
void  tach_run_object_get_property (GObject    *object,
                                    guint       prop_id,
                                    GValue     *value,
                                    GParamSpec *pspec);

G_END_DECLS
