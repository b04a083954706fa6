/* tach-ranks-view.c: a row per rank of a data-parallel run. */
#include "tach-ranks-view.h"
#include "tach-phase-bar.h"

#include <glib/gi18n.h>
#include <inttypes.h>
#include <math.h>

/* One rank's figures, as the row shows them. */
typedef struct {
  double  rate;                   /* steps/s, NaN: none yet */
  double  shares[TACH_PHASE_ALL]; /* of the step */
  guint64 step, steps;
} RankFigures;

struct _TachRanksView
{
  GtkWidget  parent_instance;

  GtkWidget *box;
  GtkLabel  *heading;
  GtkLabel  *note;
  GtkGrid   *grid;
  GPtrArray *texts;   /* char*: each row's text, for tests and tooltips */
  guint      n_rows;
};

G_DEFINE_FINAL_TYPE (TachRanksView, tach_ranks_view, GTK_TYPE_WIDGET)

enum { COL_RANK, COL_RATE, COL_BAR, COL_TEXT, COL_PROGRESS };

static void
ensure_rows (TachRanksView *self, guint n)
{
  GtkWidget *child;

  if (n == self->n_rows)
    return;
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->grid))) != NULL)
    gtk_grid_remove (self->grid, child);
  g_ptr_array_set_size (self->texts, 0);
  for (guint r = 0; r < n; r++)
    {
      /* Translators: a data-parallel rank's row: its number. */
      g_autofree char *name = g_strdup_printf (_("Rank %u"), r);
      GtkWidget *rank = gtk_label_new (name);
      GtkWidget *rate = gtk_label_new ("—");
      GtkWidget *bar = tach_phase_bar_new ();
      GtkWidget *text = gtk_label_new ("");
      GtkWidget *progress = gtk_label_new ("");

      gtk_label_set_xalign (GTK_LABEL (rank), 0);
      gtk_label_set_xalign (GTK_LABEL (rate), 1);
      gtk_widget_add_css_class (rate, "numeric");
      gtk_widget_set_size_request (bar, 200, -1);
      gtk_label_set_xalign (GTK_LABEL (text), 0);
      /* Wrapped where the view is narrow: ellipsised, a rank lost its
       * imbalance and the rest ("imbalance 25% · other …", issue 42). */
      gtk_label_set_wrap (GTK_LABEL (text), TRUE);
      /* No narrower than a few words: the window's least height is
       * measured at its least width, where a label a word wide would be
       * a column of words. */
      gtk_label_set_width_chars (GTK_LABEL (text), 28);
      gtk_widget_set_hexpand (text, TRUE);
      gtk_widget_add_css_class (text, "dim-label");
      gtk_label_set_xalign (GTK_LABEL (progress), 1);
      gtk_widget_add_css_class (progress, "numeric");
      gtk_widget_add_css_class (progress, "dim-label");
      gtk_grid_attach (self->grid, rank, COL_RANK, r, 1, 1);
      gtk_grid_attach (self->grid, rate, COL_RATE, r, 1, 1);
      gtk_grid_attach (self->grid, bar, COL_BAR, r, 1, 1);
      gtk_grid_attach (self->grid, text, COL_TEXT, r, 1, 1);
      gtk_grid_attach (self->grid, progress, COL_PROGRESS, r, 1, 1);
      g_ptr_array_add (self->texts, g_strdup (""));
    }
  self->n_rows = n;
}

static void
set_row (TachRanksView *self, guint r, const RankFigures *f)
{
  GtkLabel *rate = GTK_LABEL (gtk_grid_get_child_at (self->grid, COL_RATE, r));
  TachPhaseBar *bar = TACH_PHASE_BAR (gtk_grid_get_child_at (self->grid, COL_BAR, r));
  GtkLabel *text = GTK_LABEL (gtk_grid_get_child_at (self->grid, COL_TEXT, r));
  GtkLabel *progress = GTK_LABEL (gtk_grid_get_child_at (self->grid, COL_PROGRESS, r));
  /* Short words: the bar's tooltip has the phases' full names. */
  static const struct { TachPhase phase; const char *word; } shown[] = {
    { TACH_PHASE_COMPUTE, N_("compute") },
    { TACH_PHASE_COMM, N_("communication") },
    { TACH_PHASE_PACK, N_("packing") },
    { TACH_PHASE_IMBALANCE, N_("imbalance") },
  };
  g_autoptr(GString) line = g_string_new (NULL);
  g_autofree char *rate_text = NULL, *steps = NULL;
  double other = 1.0;

  for (guint p = 0; p < TACH_PHASE_ALL; p++)
    tach_phase_bar_set_share (bar, p, f->shares[p]);
  rate_text = isfinite (f->rate) ? g_strdup_printf (_("%.1f steps/s"), f->rate) : g_strdup ("—");
  gtk_label_set_text (rate, rate_text);
  for (guint i = 0; i < G_N_ELEMENTS (shown); i++)
    if (isfinite (f->shares[shown[i].phase]))
      {
        if (line->len > 0)
          g_string_append (line, " · ");
        /* Translators: a phase of a rank's step and its share, as in "compute 31%". */
        g_string_append_printf (line, _("%s %.0f%%"), _(shown[i].word),
                                100.0 * f->shares[shown[i].phase]);
        other -= f->shares[shown[i].phase];
      }
  if (line->len > 0 && other > 0.005)
    /* Translators: the rest of a rank's step (feeding, sync, host), in percent. */
    g_string_append_printf (line, _(" · other %.0f%%"), 100.0 * other);
  gtk_label_set_text (text, line->str);
  gtk_widget_set_tooltip_text (GTK_WIDGET (text), line->str);
  steps = f->steps > 0 ? g_strdup_printf (_("step %" PRIu64 "/%" PRIu64),
                                          f->step, f->steps)
                       : g_strdup ("");
  gtk_label_set_text (progress, steps);
  g_free (self->texts->pdata[r]);
  self->texts->pdata[r] = g_strdup_printf ("%s  %s  %s", rate_text, line->str, steps);
}

static double
share_of (double ms, double step_ms)
{
  return isfinite (ms) && step_ms > 0.0 ? ms / step_ms : NAN;
}

void
tach_ranks_view_show_job (TachRanksView *self, TachRanksJob *job)
{
  const TachConfig *config = tach_ranks_job_get_config (job);
  g_autofree char *heading = NULL;

  g_return_if_fail (TACH_IS_RANKS_VIEW (self));
  ensure_rows (self, config->ranks);
  heading = g_strdup_printf (ngettext ("%u rank, live", "%u ranks, live", config->ranks),
                             config->ranks);
  gtk_label_set_text (self->heading, heading);
  gtk_label_set_text (self->note,
                      _("Until the run ends a rank's wait for the slowest one counts as "
                        "communication: telling them apart needs every rank's arrival"));
  for (guint r = 0; r < config->ranks; r++)
    {
      const TachProgress *p = tach_ranks_job_get_progress (job, r);
      RankFigures f = { NAN, { 0 }, 0, config->steps };

      for (guint i = 0; i < TACH_PHASE_ALL; i++)
        f.shares[i] = NAN;
      if (p != NULL)
        {
          f.rate = p->rate;
          f.step = p->step;
          f.steps = p->steps;
          f.shares[TACH_PHASE_FEED] = share_of (p->feed_ms, p->step_ms);
          f.shares[TACH_PHASE_COMPUTE] = share_of (p->compute_ms, p->step_ms);
          f.shares[TACH_PHASE_SYNC] = share_of (p->sync_ms, p->step_ms);
          f.shares[TACH_PHASE_HOST] = share_of (p->host_ms, p->step_ms);
          f.shares[TACH_PHASE_COMM] = share_of (p->comm_ms, p->step_ms);
          f.shares[TACH_PHASE_PACK] = share_of (p->pack_ms, p->step_ms);
        }
      set_row (self, r, &f);
    }
  gtk_widget_set_visible (GTK_WIDGET (self), TRUE);
}

void
tach_ranks_view_show_run (TachRanksView *self, TachRun *run, guint number)
{
  guint n_ranks = run != NULL ? tach_run_get_n_ranks (run) : 0;
  g_autoptr(GArray) samples = NULL;
  g_autofree char *heading = NULL;

  g_return_if_fail (TACH_IS_RANKS_VIEW (self));
  if (n_ranks < 2)
    {
      gtk_widget_set_visible (GTK_WIDGET (self), FALSE);
      return;
    }
  ensure_rows (self, n_ranks);
  heading = g_strdup_printf (ngettext ("%u rank, run #%u", "%u ranks, run #%u", n_ranks), n_ranks,
                             number);
  gtk_label_set_text (self->heading, heading);
  gtk_label_set_text (self->note, _("Each rank's median steps/s and shares of its step; imbalance "
                                    "is its wait for the slowest rank at each all-reduce"));
  samples = g_array_new (FALSE, FALSE, sizeof (TachSample));
  for (guint r = 0; r < n_ranks; r++)
    {
      TachSummary s;
      RankFigures f;

      g_array_set_size (samples, 0);
      tach_run_copy_rank_samples (run, r, 0, G_MAXUINT, samples);
      tach_summary_compute ((const TachSample *) (void *) samples->data, samples->len, 0, 0, 0, &s);
      f = (RankFigures) {
        .rate = s.steps > 0 ? s.steps_per_s_median : NAN,
        .shares = { s.feed_share, s.compute_share, s.sync_share, s.host_share,
                    s.comm_share, s.pack_share, s.imbalance_share },
        .step = 0,
        .steps = 0,
      };
      set_row (self, r, &f);
    }
  gtk_widget_set_visible (GTK_WIDGET (self), TRUE);
}

guint
tach_ranks_view_get_n_rows (TachRanksView *self)
{
  g_return_val_if_fail (TACH_IS_RANKS_VIEW (self), 0);
  return self->n_rows;
}

const char *
tach_ranks_view_get_row_text (TachRanksView *self, guint rank)
{
  g_return_val_if_fail (TACH_IS_RANKS_VIEW (self), NULL);
  return rank < self->texts->len ? self->texts->pdata[rank] : NULL;
}

static void
tach_ranks_view_dispose (GObject *object)
{
  TachRanksView *self = TACH_RANKS_VIEW (object);

  g_clear_pointer (&self->box, gtk_widget_unparent);
  g_clear_pointer (&self->texts, g_ptr_array_unref);
  G_OBJECT_CLASS (tach_ranks_view_parent_class)->dispose (object);
}

static void
tach_ranks_view_class_init (TachRanksViewClass *klass)
{
  G_OBJECT_CLASS (klass)->dispose = tach_ranks_view_dispose;
  gtk_widget_class_set_layout_manager_type (GTK_WIDGET_CLASS (klass), GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (GTK_WIDGET_CLASS (klass), "tach-ranks-view");
}

static void
tach_ranks_view_init (TachRanksView *self)
{
  GtkWidget *top = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 12);

  self->texts = g_ptr_array_new_with_free_func (g_free);
  self->box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  gtk_widget_set_parent (self->box, GTK_WIDGET (self));
  self->heading = GTK_LABEL (gtk_label_new (""));
  gtk_widget_add_css_class (GTK_WIDGET (self->heading), "heading");
  gtk_box_append (GTK_BOX (top), GTK_WIDGET (self->heading));
  self->note = GTK_LABEL (gtk_label_new (""));
  gtk_label_set_xalign (self->note, 0);
  gtk_label_set_ellipsize (self->note, PANGO_ELLIPSIZE_END);
  gtk_widget_set_hexpand (GTK_WIDGET (self->note), TRUE);
  gtk_widget_add_css_class (GTK_WIDGET (self->note), "dim-label");
  gtk_widget_add_css_class (GTK_WIDGET (self->note), "caption");
  gtk_box_append (GTK_BOX (top), GTK_WIDGET (self->note));
  gtk_box_append (GTK_BOX (self->box), top);
  self->grid = GTK_GRID (gtk_grid_new ());
  gtk_grid_set_column_spacing (self->grid, 12);
  gtk_grid_set_row_spacing (self->grid, 2);
  gtk_box_append (GTK_BOX (self->box), GTK_WIDGET (self->grid));
  gtk_widget_set_visible (GTK_WIDGET (self), FALSE);
}

GtkWidget *
tach_ranks_view_new (void)
{
  return g_object_new (TACH_TYPE_RANKS_VIEW, NULL);
}
