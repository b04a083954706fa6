/* tach-window-ranks.c: runs of several ranks from the window.
 *
 * Ranks above 1 in the panel make Run start a TachRanksJob (mpirun of this
 * build's tach-cli) instead of a run in this process.  While it goes, the
 * ranks view shows each rank's rate and phases from its progress lines;
 * when it ends, its results folder is opened as Open Results opens one, so
 * its run joins the table, the charts and the comparisons like any other,
 * and the ranks view shows its final per-rank figures.
 *
 * TachWindow is one class written in parts by concern (tach-window.c and
 * its six tach-window-*.c, over tach-window-private.h): the parts call one
 * another as one unit, which tools/folder-arrows.py lists.  */
#include "tach-window-private.h"

#include <glib/gi18n.h>

#include <math.h>

/* While the job runs, the charts plot rank 0's lines: a point per
 * progress line, the means of the steps since the one before. */
static void
live_series_clear (TachWindow *self)
{
  if (self->ranks_rate != NULL)
    {
      tach_chart_remove_series (self->rate_chart, self->ranks_rate);
      tach_chart_remove_series (self->loss_chart, self->ranks_loss);
    }
  g_clear_object (&self->ranks_rate);
  g_clear_object (&self->ranks_loss);
}

static void
live_series_add (TachWindow *self, guint ranks)
{
  /* Translators: the charts' line of a run of several ranks while it
   * runs, before its results are read: rank 0's figures. */
  g_autofree char *label = g_strdup_printf (_("%u ranks (rank 0, live)"), ranks);

  live_series_clear (self);
  /* The colour the run takes when its results are opened. */
  self->ranks_rate = tach_chart_series_new (label, self->next_color);
  self->ranks_loss = tach_chart_series_new (label, self->next_color);
  tach_chart_add_series (self->rate_chart, self->ranks_rate);
  tach_chart_add_series (self->loss_chart, self->ranks_loss);
  self->ranks_plotted = 0;
  self->ranks_plotted_s = 0.0;
}

static void
on_job_progress (TachWindow *self, guint rank, TachRanksJob *job)
{
  const TachProgress *progress = tach_ranks_job_get_progress (job, rank);

  if (job != self->ranks_job)
    return;
  tach_ranks_view_show_job (self->ranks_view, job);
  if (rank != 0 || progress == NULL || progress->window == 0 || self->ranks_rate == NULL
      || progress->step <= self->ranks_plotted || !isfinite (progress->wall_s))
    return;
  /* Each step since the last line at the line's means (the rank says no
   * more), its time spread evenly: a line, as a run of this process draws. */
  for (guint64 s = self->ranks_plotted; s < progress->step; s++)
    {
      double t = self->ranks_plotted_s + (progress->wall_s - self->ranks_plotted_s)
                                         * (double) (s + 1 - self->ranks_plotted)
                                         / (double) (progress->step - self->ranks_plotted);

      tach_chart_series_append (self->ranks_rate, s, t, progress->rate, progress->warmup);
      tach_chart_series_append (self->ranks_loss, s, t, progress->loss, progress->warmup);
    }
  self->ranks_plotted = progress->step;
  self->ranks_plotted_s = progress->wall_s;
  tach_chart_data_changed (self->rate_chart);
  tach_chart_data_changed (self->loss_chart);
}

static void
on_job_finished (TachWindow *self, TachRanksJob *job)
{
  const GError *error = tach_ranks_job_get_error (job);

  if (job != self->ranks_job)
    return;
  live_series_clear (self);
  tach_window_update_actions (self);
  if (self->closing)
    return;
  if (error != NULL)
    {
      g_autofree char *heading =
        g_strdup_printf (ngettext ("The Run of %u Rank Failed", "The Run of %u Ranks Failed",
                                   tach_ranks_job_get_config (job)->ranks),
                         tach_ranks_job_get_config (job)->ranks);

      tach_window_show_error (self, heading, error);
    }
  /* What rank 0 wrote (all of it, or the rows it had when stopped or
   * failed) joins the window as saved results do. */
  if (tach_ranks_job_has_results (job))
    {
      g_autoptr(GFile) folder = g_file_new_for_path (tach_ranks_job_get_folder (job));

      /* The live figures show it once it is read, as the last run. */
      gtk_widget_set_visible (self->live_figures, TRUE);
      tach_window_open (self, &folder, 1);
    }
  else if (error == NULL)
    tach_ranks_view_show_run (self->ranks_view, NULL, 0);
}

gboolean
tach_window_start_ranks (TachWindow *self, const TachConfig *config, GError **error)
{
  g_autoptr(TachRanksJob) job = NULL;

  /* A bad setting is said here, with its row marked, rather than by a
   * rank a second later. */
  if (!tach_config_validate (config, NULL, error) || !tach_ranks_job_check (error))
    return FALSE;
  job = tach_ranks_job_new (config);
  g_signal_connect_object (job, "progress", G_CALLBACK (on_job_progress), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (job, "finished", G_CALLBACK (on_job_finished), self, G_CONNECT_SWAPPED);
  if (!tach_ranks_job_start (job, error))
    return FALSE;
  g_set_object (&self->ranks_job, job);
  /* The live figures and the progress bar follow runs of this process;
   * the ranks view has the job's. */
  g_clear_object (&self->active_run);
  g_object_notify (G_OBJECT (self), "active-run");
  gtk_widget_set_visible (self->live_figures, FALSE);
  tach_ranks_view_show_job (self->ranks_view, job);
  live_series_add (self, config->ranks);
  tach_window_update_actions (self);
  return TRUE;
}

gboolean
tach_window_ranks_running (TachWindow *self)
{
  return self->ranks_job != NULL && tach_ranks_job_is_running (self->ranks_job);
}

void
tach_window_stop_ranks (TachWindow *self)
{
  if (self->ranks_job != NULL)
    tach_ranks_job_stop (self->ranks_job);
}

/* The ranks view shows the active run's ranks once no job is live. */
static void
on_active_run (TachWindow *self, GParamSpec *pspec, gpointer data)
{
  (void) pspec;
  (void) data;
  if (tach_window_ranks_running (self))
    return;
  tach_ranks_view_show_run (self->ranks_view,
                            self->active_run != NULL ? tach_run_object_get_run (self->active_run)
                                                     : NULL,
                            self->active_run != NULL ? tach_run_object_get_number (self->active_run)
                                                     : 0);
}

void
tach_window_init_ranks (TachWindow *self)
{
  g_signal_connect (self, "notify::active-run", G_CALLBACK (on_active_run), NULL);
}

TachRanksView *
tach_window_get_ranks_view (TachWindow *self)
{
  g_return_val_if_fail (TACH_IS_WINDOW (self), NULL);
  return self->ranks_view;
}
