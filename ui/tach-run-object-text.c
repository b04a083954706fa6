/* tach-run-object-text.c: the text a run object's figures are shown in:
 * the values of the properties the run table and the compare view bind to
 * (rates with their spread, items/s, loss, the speed-up and its interval,
 * the phases' shares, generation and memory in tach-cli's words), the
 * speed-up's words and the mode knobs line.
 *
 * tach-run-object.c and tach-run-object-text.c are one class,
 * TachRunObject, and call one another as one unit, which
 * tools/folder-arrows.py lists.  */
#include "tach-run-object-private.h"

#include <glib/gi18n.h>
#include <math.h>

static double
finite_or_zero (double v)
{
  return isfinite (v) ? v : 0.0;
}

/* Decimals that show a rate of @v's size to about four figures. */
static int
rate_decimals (double v)
{
  return v >= 1000 ? 0 : v >= 10 ? 1 : 3;
}

static char *
format_rate (double v)
{
  if (!isfinite (v))
    return g_strdup ("—");
  return g_strdup_printf ("%.*f", rate_decimals (v), v);
}

/* @v as format_rate writes it, then @unit ("41.2 ms"); "—" where there is
 * no @v. */
static char *
dup_figure (double v, const char *unit)
{
  g_autofree char *figure = NULL;

  if (!isfinite (v))
    return g_strdup ("—");
  figure = format_rate (v);
  return g_strdup_printf ("%s %s", figure, unit);
}

char *
tach_run_object_build_knobs (TachRun *run)
{
  const TachConfig *config = tach_run_get_config (run);
  g_autoptr(GString) text = g_string_new (NULL);
  const TachKnobInfo *knobs;
  guint n = 0;

  knobs = tach_knobs (&n);
  for (guint i = 0; i < n; i++)
    {
      g_autofree char *value = NULL;

      if (!knobs[i].is_mode || !tach_config_knob_applies (config, knobs[i].name, NULL))
        continue;
      /* A knob that a loaded run's folder did not record reads "?". */
      value = tach_run_knob_is_known (run, knobs[i].name) ? tach_config_get (config, knobs[i].name)
                                                          : NULL;
      g_string_append_printf (text, "%s%s=%s", text->len ? " " : "", knobs[i].name,
                              value ? value : "?");
    }
  return g_string_free (g_steal_pointer (&text), FALSE);
}
void
tach_run_object_get_property (GObject    *object,
                              guint       prop_id,
                              GValue     *value,
                              GParamSpec *pspec)
{
  TachRunObject *self = TACH_RUN_OBJECT (object);
  const TachConfig *config = tach_run_get_config (self->run);
  const TachSummary *sum = &self->summary;

  switch (prop_id)
    {
    case PROP_NUMBER:
      g_value_set_uint (value, self->number);
      break;
    case PROP_TITLE:
      g_value_set_string (value, self->title);
      break;
    case PROP_WORKLOAD:
      g_value_set_string (value, tach_workload_to_string (config->workload));
      break;
    case PROP_MODE:
      g_value_set_string (value, self->mode);
      break;
    case PROP_KNOBS:
      g_value_set_string (value, self->knobs);
      break;
    case PROP_DEVICE:
      g_value_set_string (value, tach_run_get_device (self->run)->id);
      break;
    case PROP_BATCH:
      g_value_set_uint (value, config->batch);
      break;
    case PROP_STATUS:
      g_value_set_string (value, self->status);
      break;
    /* GObject refuses NaN for a double property: a figure not observed
     * yet reads as 0 here, and as "—" in the text properties. */
    case PROP_RATE:
      g_value_set_double (value, finite_or_zero (tach_run_object_get_rate (self)));
      break;
    case PROP_RATE_TEXT:
      if (sum->steps == 0)
        g_value_set_string (value, "—");
      else
        {
          double median = sum->steps_per_s_median;
          double spread = (sum->steps_per_s_p90 - sum->steps_per_s_p10) / 2;

          /* The spread to the median's precision: "33.3 ± 1.7", not
           * "33.3 ± 1.655". */
          if (!isfinite (median) || !isfinite (spread))
            g_value_set_string (value, "—");
          else
            g_value_take_string (value, g_strdup_printf ("%.*f ± %.*f", rate_decimals (median),
                                                         median, rate_decimals (median), spread));
        }
      break;
    case PROP_ITEMS_TEXT:
      g_value_take_string (value, dup_figure (sum->steps > 0 ? sum->items_per_s : NAN,
                                              g_strcmp0 (sum->items_unit, "tokens/s") == 0
                                              ? _("tokens/s") : _("samples/s")));
      break;
    case PROP_LOSS_TEXT:
      if (sum->steps == 0 || !isfinite (sum->final_loss))
        g_value_set_string (value, "—");
      else
        g_value_take_string (value, g_strdup_printf ("%.4f", sum->final_loss));
      break;
    case PROP_PREFILL_TEXT:
      /* The time to the first token, as the Throughput column writes its
       * figures; "—" where there is none (training, or every prefill in
       * the warm-up). */
      /* Translators: milliseconds, after a prefill's time to the first
       * token, as in "41.2 ms". */
      g_value_take_string (value, dup_figure (sum->prefill_ms, _("ms")));
      break;
    case PROP_DECODE_TEXT:
      /* The line under the prefill, in the column's narrow words: empty
       * for a run with no decoding. */
      g_value_take_string (value, isfinite (sum->decode_tokens_per_s)
                                  /* Translators: tokens per second, short, under a
                                   * prefill's time in the run table, as in "10653 tok/s". */
                                  ? dup_figure (sum->decode_tokens_per_s, _("tok/s"))
                                  : g_strdup (""));
      break;
    case PROP_GENERATION_TEXT:
      if (config->task != TACH_TASK_GENERATE)
        g_value_set_string (value, _("Only a generation has a prefill and decoding"));
      else if (isnan (sum->prefill_ms) && isnan (sum->decode_tokens_per_s))
        g_value_set_string (value, _("Prefill and decoding: not measured yet"));
      else
        {
          g_autofree char *prefill = isfinite (sum->prefill_ms)
            /* Translators: the first line of the generation column's
             * tooltip, after "Prefill: ". */
            ? g_strdup_printf (_("%.3f ms to the first token (median over the prompts)"),
                               sum->prefill_ms)
            : g_strdup (_("not measured: every prompt's prefill fell in the warm-up"));
          g_autofree char *decode = isfinite (sum->decode_tokens_per_s)
            /* Translators: the second line of the generation column's
             * tooltip, after "Decode: ". */
            ? g_strdup_printf (_("%.1f tokens/s (the other steps' tokens over their time)"),
                               sum->decode_tokens_per_s)
            : g_strdup ("—");

          /* Translators: the generation column's tooltip: its two
           * figures in words, one a line. */
          g_value_take_string (value, g_strdup_printf (_("Prefill: %s\nDecode: %s"), prefill,
                                                       decode));
        }
      break;
    case PROP_DETAILS_TEXT:
      {
        /* The summary's own lines, as tach-cli prints them, less their
         * final newline. */
        char *text = tach_summary_dup_generation_memory (sum);

        g_value_take_string (value, g_strchomp (text));
      }
      break;
    case PROP_SPEEDUP:
      g_value_set_double (value, finite_or_zero (self->speedup));
      break;
    case PROP_SPEEDUP_TEXT:
      {
        g_autofree char *text = tach_run_object_format_speedup (self->speedup_verdict,
                                                                &self->speedup_ci,
                                                                self->speedup_by_items);

        g_value_take_string (value, self->speedup_busy == NULL
                                    ? g_steal_pointer (&text)
                                    : g_strdup_printf ("%s\n%s", text, self->speedup_busy));
      }
      break;
    case PROP_SPEEDUP_VALUE_TEXT:
    case PROP_SPEEDUP_DETAIL_TEXT:
      {
        char *parts[2] = { NULL, NULL };

        tach_run_object_format_speedup_parts (self->speedup_verdict, &self->speedup_ci,
                                              self->speedup_by_items, &parts[0], &parts[1]);
        /* Not resolved for the machine's load, not for the runs' noise:
         * the tooltip says how busy. */
        if (self->speedup_busy != NULL)
          {
            g_free (parts[1]);
            /* Translators: under a speed-up that two runs measured apart on
             * a busy machine leave unresolved (the tooltip says more). */
            parts[1] = g_strdup (_("machine busy"));
          }
        g_value_take_string (value, parts[prop_id == PROP_SPEEDUP_DETAIL_TEXT]);
        g_free (parts[prop_id != PROP_SPEEDUP_DETAIL_TEXT]);
      }
      break;
    case PROP_SPEEDUP_OPACITY:
      /* Within noise is no finding: muted, as GNOME's dim labels are. */
      g_value_set_double (value, self->speedup_verdict == TACH_VERDICT_WITHIN_NOISE ? 0.55 : 1.0);
      break;
    case PROP_FEED_SHARE:
    case PROP_COMPUTE_SHARE:
    case PROP_SYNC_SHARE:
    case PROP_HOST_SHARE:
    case PROP_COMM_SHARE:
    case PROP_PACK_SHARE:
    case PROP_IMBALANCE_SHARE:
      g_value_set_double (value, finite_or_zero (tach_run_object_get_share (self, prop_id - PROP_FEED_SHARE)));
      break;
    case PROP_COLOR_INDEX:
      g_value_set_uint (value, self->color_index);
      break;
    case PROP_SWATCH_CLASSES:
      {
        g_autofree char *color = g_strdup_printf ("color-%u", self->color_index % 8);
        const char *classes[] = { "run-swatch", color, NULL };

        g_value_set_boxed (value, classes);
      }
      break;
    case PROP_VISIBLE:
      g_value_set_boolean (value, self->visible);
      break;
    case PROP_PROGRESS:
      g_value_set_double (value, tach_run_object_get_progress (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}
char *
tach_run_object_format_speedup (TachVerdict         verdict,
                                const TachInterval *ratio,
                                gboolean            by_items)
{
  if (!isfinite (ratio->value))
    return g_strdup ("—");
  if (verdict == TACH_VERDICT_WITHIN_NOISE)
    /* Translators: a speed-up whose 95% interval holds 1×, as in
     * "~1.02× within noise". */
    return g_strdup_printf (_("~%.2f× within noise"), ratio->value);
  if (verdict == TACH_VERDICT_SIGNIFICANT)
    return g_strdup_printf (by_items
                            /* Translators: a speed-up with its 95% interval, of items per
                             * second where the batch sizes differ. */
                            ? _("%.2f× (%.2f–%.2f) per item")
                            /* Translators: a speed-up with its 95% interval, as in
                             * "2.50× (2.31–2.70)". */
                            : _("%.2f× (%.2f–%.2f)"),
                            ratio->value, ratio->lo, ratio->hi);
  /* Translators: a speed-up factor, as in "2.50×". */
  return g_strdup_printf (_("%.2f×"), ratio->value);
}

void
tach_run_object_format_speedup_parts (TachVerdict         verdict,
                                      const TachInterval *ratio,
                                      gboolean            by_items,
                                      char              **value,
                                      char              **detail)
{
  if (verdict == TACH_VERDICT_WITHIN_NOISE)
    {
      /* Translators: a speed-up whose 95% interval holds 1× (the line
       * under it says "within noise"). */
      *value = g_strdup_printf (_("~%.2f×"), ratio->value);
      *detail = g_strdup (_("within noise"));
      return;
    }
  *value = isfinite (ratio->value) ? g_strdup_printf (_("%.2f×"), ratio->value) : g_strdup ("—");
  if (verdict != TACH_VERDICT_SIGNIFICANT)
    *detail = g_strdup ("");
  else if (by_items)
    /* Translators: a speed-up's 95% interval, of items per second where the
     * batch sizes differ (under the speed-up). */
    *detail = g_strdup_printf (_("%.2f–%.2f per item"), ratio->lo, ratio->hi);
  else
    /* Translators: a speed-up's 95% interval, under the speed-up. */
    *detail = g_strdup_printf (_("%.2f–%.2f"), ratio->lo, ratio->hi);
}
