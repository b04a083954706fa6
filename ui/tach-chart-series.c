/* tach-chart-series.c: bounded, bucketed storage for one chart line. */
#include "tach-chart-series.h"

#include <math.h>

struct _TachChartSeries
{
  GObject          parent_instance;

  char            *label;
  guint            color_index;
  gboolean         visible;

  TachChartBucket *buckets;        /* TACH_CHART_SERIES_CAPACITY, owned */
  guint            n_buckets;
  guint64          width;          /* steps per bucket, a power of two */
  guint64          n_points;
  double           y_min;
  double           y_max;
  gboolean         has_warmup;
  guint64          warmup_end_step;
  double           warmup_end_time;
};

G_DEFINE_FINAL_TYPE (TachChartSeries, tach_chart_series, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_LABEL,
  PROP_COLOR_INDEX,
  PROP_VISIBLE,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
tach_chart_series_finalize (GObject *object)
{
  TachChartSeries *self = TACH_CHART_SERIES (object);

  g_free (self->label);
  g_free (self->buckets);
  G_OBJECT_CLASS (tach_chart_series_parent_class)->finalize (object);
}

static void
tach_chart_series_get_property (GObject    *object,
                                guint       prop_id,
                                GValue     *value,
                                GParamSpec *pspec)
{
  TachChartSeries *self = TACH_CHART_SERIES (object);

  switch (prop_id)
    {
    case PROP_LABEL:
      g_value_set_string (value, self->label);
      break;
    case PROP_COLOR_INDEX:
      g_value_set_uint (value, self->color_index);
      break;
    case PROP_VISIBLE:
      g_value_set_boolean (value, self->visible);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
tach_chart_series_set_property (GObject      *object,
                                guint         prop_id,
                                const GValue *value,
                                GParamSpec   *pspec)
{
  TachChartSeries *self = TACH_CHART_SERIES (object);

  switch (prop_id)
    {
    case PROP_LABEL:
      g_free (self->label);
      self->label = g_value_dup_string (value);
      break;
    case PROP_COLOR_INDEX:
      self->color_index = g_value_get_uint (value);
      break;
    case PROP_VISIBLE:
      tach_chart_series_set_visible (self, g_value_get_boolean (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
tach_chart_series_class_init (TachChartSeriesClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = tach_chart_series_finalize;
  object_class->get_property = tach_chart_series_get_property;
  object_class->set_property = tach_chart_series_set_property;

  properties[PROP_LABEL] =
    g_param_spec_string ("label", NULL, NULL, NULL,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  properties[PROP_COLOR_INDEX] =
    g_param_spec_uint ("color-index", NULL, NULL, 0, G_MAXUINT, 0,
                       G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  properties[PROP_VISIBLE] =
    g_param_spec_boolean ("visible", NULL, NULL, TRUE,
                          G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
tach_chart_series_init (TachChartSeries *self)
{
  self->visible = TRUE;
  /* Allocated once: the storage never grows, whatever the run's length. */
  self->buckets = g_new0 (TachChartBucket, TACH_CHART_SERIES_CAPACITY);
  tach_chart_series_clear (self);
}

TachChartSeries *
tach_chart_series_new (const char *label,
                       guint       color_index)
{
  return g_object_new (TACH_TYPE_CHART_SERIES,
                       "label", label,
                       "color-index", color_index,
                       NULL);
}

void
tach_chart_series_clear (TachChartSeries *self)
{
  g_return_if_fail (TACH_IS_CHART_SERIES (self));

  self->n_buckets = 0;
  self->width = 1;
  self->n_points = 0;
  self->y_min = INFINITY;
  self->y_max = -INFINITY;
  self->has_warmup = FALSE;
  self->warmup_end_step = 0;
  self->warmup_end_time = 0.0;
}

static void
bucket_merge (TachChartBucket       *into,
              const TachChartBucket *from)
{
  if (from->count == 0)
    return;
  if (into->count == 0)
    {
      *into = *from;
      return;
    }
  into->step_first = MIN (into->step_first, from->step_first);
  into->step_last = MAX (into->step_last, from->step_last);
  into->time_first = MIN (into->time_first, from->time_first);
  into->time_last = MAX (into->time_last, from->time_last);
  into->y_min = MIN (into->y_min, from->y_min);
  into->y_max = MAX (into->y_max, from->y_max);
  into->y_sum += from->y_sum;
  into->count += from->count;
}

/* Halves the resolution: bucket i takes buckets 2i and 2i+1.  This keeps
 * the bucket edges on multiples of the width, so that the result does not
 * depend on when the merge happened. */
static void
tach_chart_series_compact (TachChartSeries *self)
{
  guint n = (self->n_buckets + 1) / 2;

  for (guint i = 0; i < n; i++)
    {
      TachChartBucket merged = self->buckets[2 * i];

      if (2 * i + 1 < self->n_buckets)
        bucket_merge (&merged, &self->buckets[2 * i + 1]);
      self->buckets[i] = merged;
    }
  self->n_buckets = n;
  self->width *= 2;
}

void
tach_chart_series_append (TachChartSeries *self,
                          guint64          step,
                          double           time_s,
                          double           y,
                          gboolean         warmup)
{
  TachChartBucket point = { 0 };
  guint64 index;

  g_return_if_fail (TACH_IS_CHART_SERIES (self));

  self->n_points++;
  if (warmup && (!self->has_warmup || step + 1 > self->warmup_end_step))
    {
      self->has_warmup = TRUE;
      self->warmup_end_step = step + 1;
      self->warmup_end_time = time_s;
    }

  /* A value the engine did not observe stays missing, not invented. */
  if (!isfinite (y))
    return;

  index = step / self->width;
  while (index >= TACH_CHART_SERIES_CAPACITY)
    {
      tach_chart_series_compact (self);
      index = step / self->width;
    }
  for (guint i = self->n_buckets; i <= index; i++)
    self->buckets[i].count = 0;
  self->n_buckets = MAX (self->n_buckets, (guint) index + 1);

  point.step_first = point.step_last = step;
  point.time_first = point.time_last = time_s;
  point.y_min = point.y_max = point.y_sum = y;
  point.count = 1;
  bucket_merge (&self->buckets[index], &point);

  self->y_min = MIN (self->y_min, y);
  self->y_max = MAX (self->y_max, y);
}

const TachChartBucket *
tach_chart_series_get_buckets (TachChartSeries *self,
                               guint           *n_buckets)
{
  g_return_val_if_fail (TACH_IS_CHART_SERIES (self), NULL);

  *n_buckets = self->n_buckets;
  return self->buckets;
}

guint64
tach_chart_series_get_bucket_width (TachChartSeries *self)
{
  g_return_val_if_fail (TACH_IS_CHART_SERIES (self), 0);
  return self->width;
}

guint64
tach_chart_series_get_n_points (TachChartSeries *self)
{
  g_return_val_if_fail (TACH_IS_CHART_SERIES (self), 0);
  return self->n_points;
}

gboolean
tach_chart_series_get_y_range (TachChartSeries *self,
                               double          *y_min,
                               double          *y_max)
{
  g_return_val_if_fail (TACH_IS_CHART_SERIES (self), FALSE);

  if (self->y_min > self->y_max)
    return FALSE;
  *y_min = self->y_min;
  *y_max = self->y_max;
  return TRUE;
}

gboolean
tach_chart_series_get_x_range (TachChartSeries *self,
                               gboolean         by_time,
                               double          *x_min,
                               double          *x_max)
{
  const TachChartBucket *first = NULL, *last = NULL;

  g_return_val_if_fail (TACH_IS_CHART_SERIES (self), FALSE);

  for (guint i = 0; i < self->n_buckets && first == NULL; i++)
    if (self->buckets[i].count > 0)
      first = &self->buckets[i];
  for (guint i = self->n_buckets; i > 0 && last == NULL; i--)
    if (self->buckets[i - 1].count > 0)
      last = &self->buckets[i - 1];
  if (first == NULL)
    return FALSE;

  *x_min = by_time ? first->time_first : (double) first->step_first;
  *x_max = by_time ? last->time_last : (double) last->step_last;
  return TRUE;
}

gboolean
tach_chart_series_get_warmup_end (TachChartSeries *self,
                                  gboolean         by_time,
                                  double          *x_end)
{
  g_return_val_if_fail (TACH_IS_CHART_SERIES (self), FALSE);

  if (!self->has_warmup)
    return FALSE;
  *x_end = by_time ? self->warmup_end_time : (double) self->warmup_end_step;
  return TRUE;
}

/* An exponential moving average with TensorBoard's debiasing, so the start
 * of the line is not pulled towards zero.  A bucket of c points advances the
 * average as c points of its mean would: the weight becomes weight^c.  This
 * keeps the smoothed line the same however far the buckets have merged.
 * @out receives one value per bucket (NaN for empty buckets). */
void
tach_chart_series_smooth (TachChartSeries *self,
                          double           weight,
                          double          *out)
{
  double level = 0.0, debias = 0.0;

  g_return_if_fail (TACH_IS_CHART_SERIES (self));

  weight = CLAMP (weight, 0.0, 0.9999);
  for (guint i = 0; i < self->n_buckets; i++)
    {
      const TachChartBucket *b = &self->buckets[i];
      double w;

      if (b->count == 0)
        {
          out[i] = NAN;
          continue;
        }
      w = pow (weight, b->count);
      level = level * w + (1.0 - w) * tach_chart_bucket_mean (b);
      debias = debias * w + (1.0 - w);
      out[i] = debias > 0.0 ? level / debias : tach_chart_bucket_mean (b);
    }
}

const char *
tach_chart_series_get_label (TachChartSeries *self)
{
  g_return_val_if_fail (TACH_IS_CHART_SERIES (self), NULL);
  return self->label;
}

guint
tach_chart_series_get_color_index (TachChartSeries *self)
{
  g_return_val_if_fail (TACH_IS_CHART_SERIES (self), 0);
  return self->color_index;
}

gboolean
tach_chart_series_get_visible (TachChartSeries *self)
{
  g_return_val_if_fail (TACH_IS_CHART_SERIES (self), FALSE);
  return self->visible;
}

void
tach_chart_series_set_visible (TachChartSeries *self,
                               gboolean         visible)
{
  g_return_if_fail (TACH_IS_CHART_SERIES (self));

  visible = !!visible;
  if (self->visible == visible)
    return;
  self->visible = visible;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_VISIBLE]);
}
