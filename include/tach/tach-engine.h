/* tach-engine.h: the public API of Tach's engine.
 *
 * The engine knows nothing of GTK.  It runs one workload at a time per
 * TachRun on a named engine thread, which makes every backend call.
 *
 * Thread contracts: unless a function says otherwise it may be called from
 * any thread, but a given TachConfig must not be used by two threads at once.
 * Callbacks say which thread they run on.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define TACH_VERSION_STRING "0.1.0"

/* ---------------------------------------------------------------- errors */

#define TACH_ERROR (tach_error_quark ())
GQuark tach_error_quark (void);

typedef enum {
  TACH_ERROR_INVALID_CONFIG,      /* a bad setting: CLI exit 2 */
  TACH_ERROR_UNSUPPORTED,         /* a knob value the backend cannot do: exit 2 */
  TACH_ERROR_DEVICE_UNAVAILABLE,  /* no such device, no driver: exit 1 */
  TACH_ERROR_OUT_OF_MEMORY,
  TACH_ERROR_LIBRARY,             /* cuDNN, cuBLAS, CUDA or oneDNN failed */
  TACH_ERROR_DATA,                /* a bad or missing data file */
  TACH_ERROR_IO,                  /* CSV and other output files */
  TACH_ERROR_CANCELLED,
} TachErrorCode;

/* ----------------------------------------------------------------- knobs */

#include "tach-knob-list.h"
#include "tach-verdict.h"

#define TACH_KNOB_UNPAREN_(...) __VA_ARGS__
#define TACH_KNOB_FIELD_(ID, decl, ...) TACH_KNOB_UNPAREN_ decl;
#define TACH_KNOB_ID_(ID, ...) TACH_KNOB_##ID,

/* A run configuration: a plain struct, copied by value, one field (or
 * three: input_h, input_w, input_c) per knob of tach-knob-list.h, in its
 * order.  Every field can also be read and written by name through
 * tach_config_set()/get(), which is how the CLI and the GUI reach it, so
 * that parsing and messages live in one place.  Strings (device, preset,
 * data) are owned by the struct: use tach_config_copy()/clear(). */
typedef struct {
  TACH_KNOB_LIST (TACH_KNOB_FIELD_)
} TachConfig;

/* Every knob, in the order of the knob table (tach-knob-list.h): the
 * order of the command line's help, the GUI's rows and the CSV columns. */
typedef enum {
  TACH_KNOB_LIST (TACH_KNOB_ID_)
  TACH_KNOB_COUNT
} TachKnobId;

#undef TACH_KNOB_FIELD_
#undef TACH_KNOB_ID_

/* What an error of TACH_ERROR concerns when a knob is at fault: the knob,
 * its value, and the fix, so that a front end can point at the knob and
 * offer the fix in its own terms without reading the message.  (Messages
 * say the fix too, naming knobs in the process's wording, below: "--input
 * 64x64x1 with --head flatten ...: use --head gap ..." on the command line.) */
typedef struct {
  TachKnobId  knob;       /* the knob at fault */
  const char *value;      /* its value, as tach_config_get() writes it, or NULL */
  TachKnobId  fix_knob;   /* the knob a fix sets, often @knob; TACH_KNOB_COUNT: none */
  const char *fix_value;  /* tach_config_set (fix_knob, fix_value) fixes it; NULL: no
                           * one value does (then @fix_knob, if set, is what to change) */
  const char *fix;        /* the fix in the message's words (translated), or NULL */
} TachErrorHint;

/* The hint of @error, or NULL when @error concerns no knob (or is not a
 * TACH_ERROR).  It lives as long as @error; g_error_copy() copies it. */
const TachErrorHint *tach_error_get_hint (const GError *error);

/* The words in which the engine's messages name knobs and their values:
 * as the command line's options ("use --head gap"), the default, or as a
 * settings panel shows them ("use Classifier head “Global average
 * pooling”", with the knob's title and the value's label).  A process
 * sets it once, before it runs anything, as it sets its locale; the
 * messages of errors made afterwards follow it. */
typedef enum {
  TACH_WORDING_OPTIONS,
  TACH_WORDING_SETTINGS,
} TachWording;

void        tach_set_wording (TachWording wording);
TachWording tach_get_wording (void);

/* @knob named in the current wording, with @value (as tach_config_get()
 * writes it) when it is not NULL: "--head gap" or "Classifier head
 * “Global average pooling”".  Free with g_free(). */
char *tach_knob_mention (TachKnobId knob, const char *value);

/* Where a user interface puts a knob. */
typedef enum {
  TACH_KNOB_GROUP_SETUP,   /* workload, task, device, preset */
  TACH_KNOB_GROUP_MODE,    /* execution modes */
  TACH_KNOB_GROUP_RUN,     /* how long and how big a run is */
  TACH_KNOB_GROUP_MODEL,   /* the model, its data and its training */
} TachKnobGroup;

/* How a knob's value is written. */
typedef enum {
  TACH_KNOB_KIND_CHOICE,   /* one of @values (an enum or boolean field) */
  TACH_KNOB_KIND_INTEGER,  /* a whole number from @min to @max */
  TACH_KNOB_KIND_TEXT,     /* anything else, read by the knob's own rule ("end", "28x28x1") */
} TachKnobKind;

typedef struct _TachKnobInfo TachKnobInfo;

/* One row of the knob table: everything front ends, validation and CSV
 * files know about a knob.  Rows are static; strings marked translatable
 * are msgids (translate @title and @blurb with _(), labels through
 * tach_knob_value_label()). */
struct _TachKnobInfo {
  TachKnobId          id;
  const char         *name;      /* "rnn": the option, the CSV column, the settings key */
  const char         *title;     /* translatable short label: "RNN" */
  const char         *blurb;     /* translatable one-line help */
  TachKnobGroup       group;
  TachKnobKind        kind;
  size_t              offset;    /* of the TachConfig field it sets */
  const char *const  *values;    /* CHOICE: NULL-terminated allowed values; else NULL */
  const char *const  *labels;    /* CHOICE: a label per value (msgids, context "knob value") */
  const char         *default_value; /* NULL: the workload's default, or none */
  guint64             min, max;  /* INTEGER: the allowed range */
  gboolean            is_mode;   /* an execution-mode knob (changes speed, not math) */
  gboolean            changes_results; /* a mode whose values give different numbers
                                        * (layout=misread, precision) */
  gboolean            is_shape;  /* a model shape (group MODEL): what a memory
                                  * error suggests lowering when it was raised */
  gboolean            trains;    /* matters only to training: not to text generation */

  /*< private >*/
  gsize               size;      /* of the field */
  const char         *default_label; /* TEXT: a label for @default_value ("Automatic") */
  gboolean          (*parse) (TachConfig *config, const TachKnobInfo *knob,
                              const char *value, GError **error);
  char             *(*format) (const TachConfig *config, const TachKnobInfo *knob);
  /* What a value does, for explain's sentences (tach_knob_dup_clause):
   * CHOICE: a msgid per value, or NULL; or a rule reading @config's shape
   * (@config may be NULL: the workload's defaults). */
  const char *const  *clauses;
  char             *(*clause) (const TachConfig *config, const TachKnobInfo *knob,
                               const char *value);
};

/* The knob table, TACH_KNOB_COUNT rows in TachKnobId order. */
const TachKnobInfo *tach_knobs (guint *n_knobs);
/* The row of knob @id. */
const TachKnobInfo *tach_knob (TachKnobId id);
/* The row named @name, or NULL. */
const TachKnobInfo *tach_knob_lookup (const char *name);
/* How a user interface shows @value of knob @key: a short translated label
 * ("fused" -> "Fused"), or @value itself when it has none.  The identifiers,
 * not the labels, go to tach_config_set(), CSV files and the command line.
 * The string is static (translated when the label is). */
const char         *tach_knob_value_label (const char *key, const char *value);
/* What @value of knob @key does in a run of @config, as a translated
 * clause of explain's sentences ("one fused library call runs the whole
 * sequence"; the layout's names the run's sequence length and batch), or
 * "key=value" for a knob whose row says nothing.  @config NULL: the
 * workload's defaults.  Free with g_free(). */
char               *tach_knob_dup_clause (const char *key, const TachConfig *config,
                                          const char *value);

void      tach_config_init    (TachConfig *config, TachWorkload workload);
void      tach_config_copy    (TachConfig *dest, const TachConfig *src);
void      tach_config_clear   (TachConfig *config);

/* Sets knob @key from the string @value ("fused", "256", "end", ...).
 * Errors name the knob, the bad value and the allowed values
 * (TACH_ERROR_INVALID_CONFIG).  Setting "workload" resets the other knobs to
 * that workload's defaults (device, seed and threads are kept); setting
 * "task" resets batch to the task's default; setting "preset" applies it.
 * So a front end sets workload, task, device and preset before the rest. */
gboolean  tach_config_set     (TachConfig *config, const char *key, const char *value, GError **error);
/* Sets several knobs from @settings, "key=value" words separated by white
 * space ("rnn=fused sync=end"; NULL or "" sets nothing), in order, each
 * through tach_config_set().  The presets are written this way.  On an error
 * (a word without '=', or the first tach_config_set() error, both
 * TACH_ERROR_INVALID_CONFIG) @config is left as it was. */
gboolean  tach_config_apply_settings (TachConfig *config, const char *settings, GError **error);
char     *tach_config_get     (const TachConfig *config, const char *key);

/* Checks the whole configuration against the workload and, when @device_id is
 * not NULL, against what that device's backend can do (TACH_ERROR_UNSUPPORTED).
 * Memory needs are checked against the device's memory. */
gboolean  tach_config_validate (const TachConfig *config, const char *device_id, GError **error);

/* Whether a knob matters for this configuration; if not, *why says why
 * (translated, static). */
gboolean  tach_config_knob_applies (const TachConfig *config, const char *key, const char **why);

/* The dataset size in samples: config->samples, or when that is 0 the
 * default of synthetic data, TACH_DEFAULT_BATCHES global batches (every
 * rank's and micro-batch's: TACH_DEFAULT_BATCHES steps; a workload that
 * reads a data file may use the file's size instead). */
#define TACH_DEFAULT_BATCHES 16
guint64   tach_config_get_samples (const TachConfig *config);
/* Warm-up steps actually run: the first --warmup of the --steps steps, at
 * most half of them, so a short run still has measured steps. */
guint     tach_config_get_warmup (const TachConfig *config);
/* Micro-batches per step actually run: --accumulate when training, 1 for
 * text generation, which has no gradients to accumulate. */
static inline guint
tach_config_get_accumulate (const TachConfig *config)
{
  return config->task == TACH_TASK_TRAIN ? MAX (config->accumulate, 1) : 1;
}

const char *tach_workload_to_string (TachWorkload workload);
/* Whether a run of @workload evaluates a test set after its last step
 * (the cnn): a front end says so while it does. */
gboolean    tach_workload_evaluates (TachWorkload workload);
/* The data a run of @config reads: *kind, an untranslated name (show it
 * with _(): "Fashion-MNIST (IDX)", "IDX images", "text", "synthetic
 * images", ...), and *path (owned), the file or folder read, or NULL for
 * generated data.  The cnn reads Debian's Fashion-MNIST
 * (/usr/share/datasets/fashion-mnist) when no {data} is given, it is
 * installed and the input is 28x28x1.  Any thread. */
void        tach_config_get_data_source (const TachConfig *config, const char **kind,
                                         char **path);
gboolean    tach_workload_from_string (const char *s, TachWorkload *out, GError **error);

/* --------------------------------------------------------------- presets */

typedef struct {
  const char   *name;
  TachWorkload  workload;
  const char   *description;  /* translatable */
  const char   *settings;     /* "rnn=fused feed=host-f64 sync=1" */
  /* Applied on top of @settings, knob by knob, only where config->device
   * (resolved when "auto") is a GPU whose backend supports the value, so a
   * preset never asks a device for what it cannot do; NULL if none. */
  const char   *gpu_settings; /* "launch=graph" */
  /* Translatable; one line per knob of @settings and @gpu_settings,
   * "knob=value: what in the reported code the value stands for (framework
   * file, version)". */
  const char   *rationale;
  /* It reproduces a data-parallel report: its own knobs are the gradients'
   * synchronisation, which apply only between ranks (mpirun -np 2 or
   * more); alone, a process runs it as the workload's tuned. */
  gboolean      between_ranks;
} TachPreset;

const TachPreset *tach_presets (guint *n_presets);
/* The presets of one workload, in the order a sweep runs them. */
GPtrArray        *tach_presets_for_workload (TachWorkload workload);
/* The same, less those that change nothing at @ranks ranks: alone (1), the
 * data-parallel ones (between_ranks), which would run as tuned. */
GPtrArray        *tach_presets_for_ranks (TachWorkload workload, guint ranks);
/* Resets the execution-mode knobs to the workload's defaults, then applies
 * the preset's settings for config->workload and config->device: set the
 * workload, task and device first.  Setting "device" later re-applies the
 * preset's gpu_settings for the new device. */
gboolean          tach_config_apply_preset (TachConfig *config, const char *name, GError **error);

/* --------------------------------------------------------------- devices */

typedef enum { TACH_DEVICE_KIND_CPU, TACH_DEVICE_KIND_GPU } TachDeviceKind;

typedef struct {
  char          *id;            /* "cpu", "cuda:0" */
  char          *name;          /* "Intel Xeon ...", "NVIDIA H200" */
  TachDeviceKind kind;
  guint64        memory_bytes;
  double         peak_flops;    /* fp32 FLOP/s from the spec, or measured; 0 until
                                 * measured (tach_device_measure_peak_flops) */
  char          *versions;      /* "oneDNN 2.6.0", "driver 13.0, cuDNN 9.19.0, cuBLAS 13.0.0" */
  guint          threads;       /* CPU: cores used by default */
} TachDeviceInfo;

/* Lists usable devices, best first (a GPU before the CPU), cheaply: no
 * benchmark runs and no file is written.  Never fails: a missing driver
 * simply lists the CPU alone.  Element type: TachDeviceInfo*. */
GPtrArray      *tach_devices_list (void);
void            tach_device_info_free (TachDeviceInfo *info);
/* Fills in @info->peak_flops where listing left it 0 because measuring it
 * takes time (the CPU's sgemm rate: up to half a second the first time,
 * then cached in the process and on disk), and returns it.  Blocks: never
 * call it on a GUI's main thread. */
double          tach_device_measure_peak_flops (TachDeviceInfo *info);
/* Resolves "auto", "cpu", "cuda", "cuda:N" to a device, or fails with
 * TACH_ERROR_DEVICE_UNAVAILABLE and a message saying what to do. */
TachDeviceInfo *tach_device_resolve (const char *id, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachDeviceInfo, tach_device_info_free)

/* ------------------------------------------------------------------ runs */

/* One step's measurement.  Times in milliseconds; NaN where not observed.
 * A run keeps its samples in a few bytes each, and gives them back as kept:
 * each value rounded to a float once, feed, sync and host to 0.05%
 * (tach-sample-store.h says how). */
typedef struct {
  guint64 step;        /* 0-based, warm-up steps first */
  gboolean warmup;
  guint   rank;        /* data parallel: the rank whose step this is (0 alone) */
  double  wall_s;      /* since the first step began (set-up excluded), at the end of this step */
  double  step_ms;
  double  feed_ms;     /* getting the batch onto the device */
  double  compute_ms;  /* device compute */
  double  sync_ms;     /* waiting on synchronisation / read-backs */
  double  host_ms;     /* everything else on the host */
  double  loss;        /* NaN when the workload has no loss (generation) */
  double  accuracy;    /* NaN unless metrics=accuracy */
  /* On an asynchronous device: the step on the device timeline, from the
   * previous step's end-of-step event to its own.  NaN on the CPU (whose
   * step_ms is the step) and for a run's first step. */
  double  device_step_ms;
  /* Library calls the step made, the runner's own included (NaN where the
   * backend does not count them: the CPU). */
  double  api_calls;
  /* Data parallel (NaN in a process of its own), each part of compute's
   * former share: the exposed communication (blocked in the gradients'
   * all-reduces, beyond what compute hid), the packing (casting to and
   * from the wire's precision, dividing by the ranks) and the imbalance
   * (waiting for the slowest rank to reach the step's synchronisation). */
  double  comm_ms;
  double  pack_ms;
  double  imbalance_ms;
} TachSample;

typedef struct {
  guint64 steps;              /* measured (non-warm-up) steps */
  double  steps_per_s_median;
  double  steps_per_s_p10;
  double  steps_per_s_p90;
  /* The 95% interval of the median rate (tach-stats.h: order statistics
   * widened for the steps' autocorrelation); NaN when the run measured too
   * few steps (about 8) for one. */
  double  steps_per_s_lo, steps_per_s_hi;
  double  items_per_s;        /* samples/s or tokens/s */
  double  items_per_s_lo, items_per_s_hi;
  const char *items_unit;     /* "samples/s" or "tokens/s" */
  /* Means over two windows of measured steps that never overlap, each
   * loss_window_steps long: at most 10 steps and at most half of them.
   * With one measured step, final_loss is that step's and first_loss NaN. */
  double  final_loss;         /* mean loss of the last window, NaN if none */
  double  first_loss;         /* mean loss of the first window */
  guint   loss_window_steps;
  double  feed_share, compute_share, sync_share, host_share; /* of step time */
  double  flops_per_step;
  double  achieved_flops;     /* at the median step rate */
  double  peak_share;         /* achieved / device peak */
  guint64 peak_memory_bytes;
  double  test_accuracy;      /* NaN unless the workload has a test split */
  /* From the first step (set-up excluded) to the end of the last step and
   * of the test-set evaluation, which eval_s is (NaN: none ran). */
  double  wall_s;
  double  eval_s;
  /* What the steps/s median (and the p10/p90, items/s, FLOP/s) times:
   * "device" (device_step_ms: the device timeline of an asynchronous
   * device) or "host" (step_ms: the runner's clock, on the CPU). */
  const char *rate_clock;
  /* End to end: measured steps over the wall time from the end of warm-up
   * (a sync point) to the final synchronisation.  For a steady run it
   * agrees with the median. */
  double  e2e_steps_per_s;
  double  api_calls_per_step;  /* median over measured steps; NaN if not counted */
  /* Data parallel (NaN alone): the shares of step time of the exposed
   * communication, the packing and the imbalance, averaged over the ranks
   * (compute_share is then the ranks' mean too); the rank whose compute
   * took longest, and how much longer than the quickest rank's (mean
   * compute per step, slowest / quickest - 1).  The losses are the mean
   * over the ranks, each the loss of its shard, so the global batch's. */
  double  comm_share, pack_share, imbalance_share;
  double  slowest_rank;
  double  rank_compute_spread;
  /* Scaling efficiency against one process (NaN unless measured:
   * `tach-cli run --scaling` under mpirun): the N ranks' samples/s over N
   * times one process's, weak at the same batch per process (B), strong at
   * the N ranks' global batch (N B), each with its 95% interval (paired
   * by round where rounds ran).  1 is ideal. */
  double  weak_scaling, weak_scaling_lo, weak_scaling_hi;
  double  strong_scaling, strong_scaling_lo, strong_scaling_hi;
  /* The share (0 to 1) of the machine's CPU time that other processes
   * took while the run measured (tach-machine.h), NaN when unknown; and
   * whether that is enough to say so beside a verdict
   * (TACH_SUMMARY_BUSY_SHARE). */
  double  machine_busy;
  /* A CPU run's threads (NaN elsewhere, or unknown): how many it had,
   * the fewest its ops ran on while other processes wanted the
   * processors, and the share of its time on fewer than it had. */
  double  threads_asked, threads_fewest, threads_fewer_share;
  /* Generation that prefills a prompt (gpt), NaN elsewhere: the median
   * time of the prefill steps (the time to first token, on the rate's
   * clock), and the decoding steps' tokens over their summed time. */
  double  prefill_ms;
  double  decode_tokens_per_s;
  /* What the model's memory holds, in bytes (NaN: a workload that does
   * not say): its parameters, the optimiser's state (gradients and
   * moments), a step's activations, the KV cache (at its largest) and the
   * copies of its weights that the backend packed for generation (at
   * their largest; 0 where it packs none). */
  double  param_bytes, optimizer_bytes, activation_bytes, kv_cache_bytes;
  double  packed_weight_bytes;
  /* What the parameters hold in one rank's memory, in bytes (NaN:
   * unknown), as models/tach-params.c allocates it: the parameters,
   * their gradients (accumulation's sum, and under shard=grads the
   * shard's too), the optimizer's state (Adam's moments; under
   * shard=grads this rank's shard of them), and the peak of their sum.
   * Under mpirun, rank 0's: its shard is never the one cut short. */
  double  held_param_bytes, held_grad_bytes, held_state_bytes, held_peak_bytes;
} TachSummary;

/* From this share of the machine's CPU time taken by other processes on,
 * a run's figures and the verdicts that use them say the machine was
 * busy: a tenth of the processors is what a browser's or an editor's
 * background work stays under, a build or a second benchmark takes far
 * more. */
#define TACH_SUMMARY_BUSY_SHARE 0.10

/* Two runs measured apart (one after the other, not interleaved by round)
 * share no rounds: each run's interval sees the variation within that
 * run, not a change of machine load between them.  Where the two runs'
 * busy shares differ by more than this (or either reaches
 * TACH_SUMMARY_BUSY_SHARE), their ratio is not resolved however narrow its
 * interval: a run that keeps the processors busy loses about the share
 * others take, so 5 points of difference in that share can move the ratio
 * by about 5%, more than the 1-3% that within-run intervals of a few
 * hundred steps typically span, and more than they can see. */
#define TACH_SUMMARY_APART_BUSY_SPREAD 0.05

/* ------------------------------------------------------ data parallel */

/* `mpirun -np N tach-cli run ...` runs N data-parallel ranks
 * (engine/run/tach-ranks.h).  A front end calls tach_ranks_init first
 * thing in main() (before any thread starts), gives every run's config
 * ranks = tach_ranks_world_size (), checks the ranks agree with
 * tach_ranks_check_world_config before it starts the run, writes outputs
 * only on rank 0 (which holds every rank's figures once the run ended),
 * and calls tach_ranks_finish with its exit status last.  Main thread. */
gboolean tach_ranks_have_mpi (void);
/* Joins the job; in a build without MPI, a process that a launcher
 * started as one of several ranks fails with TACH_ERROR_UNSUPPORTED. */
gboolean tach_ranks_init (int *argc, char ***argv, GError **error);
guint    tach_ranks_world_rank (void);   /* 0 alone */
guint    tach_ranks_world_size (void);   /* 1 alone */
/* Every rank's @config and Tach version equal to rank 0's, or
 * TACH_ERROR_INVALID_CONFIG on every rank naming the first difference.
 * Collective. */
gboolean tach_ranks_check_world_config (const TachConfig *config, GError **error);
/* Every rank gets rank 0's @size bytes at @data (what runs next, decided
 * by rank 0: another round, a stop).  Collective: between runs, on the
 * thread that drives them.  The wait sleeps, so that a rank with no part
 * in a run (ranks=1: rank 0 alone, the one-process baseline) waits here
 * without taking a processor from it; it has no deadline, but fails once
 * mpirun ends the job.  TRUE at once alone. */
gboolean tach_ranks_share (gpointer data, gsize size, GError **error);
/* Whether this process runs @config: the first config->ranks ranks of
 * the job do (under mpirun -np N, ranks is N, or 1: rank 0 alone). */
gboolean tach_ranks_takes_part (const TachConfig *config);
/* Whether this job can run @config's ranks: its N ranks, 1 (rank 0
 * alone), or the first n made by tach_ranks_prepare_first; else
 * TACH_ERROR_INVALID_CONFIG saying how to start it (a sweep checks every
 * point up front).  Any thread. */
gboolean tach_ranks_check_count (const TachConfig *config, GError **error);
/* Whether this rank holds the same @n bytes at @data as rank 0 (its
 * command line: then its usage errors are rank 0's, said once, by rank
 * 0).  TRUE alone or on rank 0.  Collective over the job. */
gboolean tach_ranks_same_as_rank_0 (const void *data, gsize n);
/* Makes the first @n ranks of the job a job of their own, so that a run
 * of ranks=@n (1 < @n < N) can run on them while the others sit it out
 * (tach_ranks_takes_part).  Collective over the whole job: every rank
 * calls it for the same counts in the same order, before the runs; TRUE
 * at once for 1, N, or alone. */
gboolean tach_ranks_prepare_first (guint n, GError **error);
/* MPI_Finalize, or MPI_Abort with @status when a rank was lost (a
 * finalize would wait for it forever). */
void     tach_ranks_finish (int status);
/* mpirun is ending the job (it sends SIGTERM when a rank exits or is
 * killed, or when it is stopped, and SIGKILL a second later): every wait
 * on the other ranks gives up now, so that the run ends at once, as
 * cancelled when every rank says it is stopping too, else failed with a
 * message naming the ranks that did not, and the front end writes what
 * it has.  Any thread (a signal handler's GLib source). */
void     tach_ranks_abandon (void);

typedef enum {
  TACH_RUN_STATE_READY,
  TACH_RUN_STATE_RUNNING,
  TACH_RUN_STATE_FINISHED,
  TACH_RUN_STATE_CANCELLED,
  TACH_RUN_STATE_FAILED,
} TachRunState;

typedef struct _TachRun TachRun;

/* A run's test-set evaluation, after its last step (workloads with a test
 * split: tach_workload_evaluates()). */
typedef enum {
  TACH_EVALUATION_NONE,     /* none: no test set, or the steps have not ended */
  TACH_EVALUATION_RUNNING,
  TACH_EVALUATION_DONE,     /* the summary's test_accuracy */
  TACH_EVALUATION_STOPPED,  /* a stop request ended it: no accuracy, the run is cancelled */
} TachEvaluation;

/* Runs on the GMainContext given to tach_run_start().  At most one call is
 * pending at any time (calls coalesce): drain the samples when called.  It
 * comes after each sync point, about every 100 ms while steps run between
 * sync points (with no new samples: see tach_run_get_steps_done()), and
 * once more after the run ends.  None comes after tach_run_wait() has
 * returned on the context's thread, so that @user_data may go then (a call
 * that saw the run end need not be the last one queued). */
typedef void (*TachRunNotify) (TachRun *run, gpointer user_data);

/* Validates @config (copied) and resolves its device.  Any thread. */
TachRun      *tach_run_new (const TachConfig *config, GError **error);
TachRun      *tach_run_ref (TachRun *run);
void          tach_run_unref (TachRun *run);

/* Starts the engine thread.  @context may be NULL for the thread-default
 * context of the caller; @notify may be NULL (poll with drain/wait). */
gboolean      tach_run_start (TachRun *run, GMainContext *context,
                              TachRunNotify notify, gpointer user_data,
                              GError **error);
/* Asks the run to stop after the current step.  Any thread, never blocks. */
void          tach_run_stop (TachRun *run);
/* Waits for the engine thread.  Returns FALSE with the run's error if it
 * failed (a cancelled run returns TRUE). */
gboolean      tach_run_wait (TachRun *run, GError **error);

/* Steps run so far, including those whose samples wait for the next sync
 * point (sync=end publishes nothing before the end).  Any thread. */
guint         tach_run_get_steps_done (TachRun *run);
/* Where the run's test-set evaluation is, and (when not NULL) the test
 * items evaluated and in all so far (0 until it has begun).  A notify
 * comes about every 100 ms while it runs.  Any thread. */
TachEvaluation tach_run_get_evaluation (TachRun *run, guint64 *done, guint64 *total);
/* Moves samples not yet drained into @out (element type TachSample), at
 * most TACH_RUN_DRAIN_MAX of them: call again while it returns that many.
 * Returns how many. */
#define TACH_RUN_DRAIN_MAX 65536
guint         tach_run_drain_samples (TachRun *run, GArray *out);
/* All samples so far (copy: 120 bytes a step, where the run keeps a few;
 * for short runs and tests).  Any thread. */
GArray       *tach_run_dup_samples (TachRun *run);
/* How many samples the run holds so far.  Any thread. */
guint         tach_run_get_n_samples (TachRun *run);
/* Appends samples [@from, @from + @n) (those there are) to @out (element
 * type TachSample); returns how many.  Long runs are read this way, a
 * bounded range at a time.  Any thread. */
guint         tach_run_copy_samples (TachRun *run, guint from, guint n, GArray *out);
/* Scaling efficiency (TachSummary.weak_scaling): the @n_rounds runs of N
 * ranks @ranked against the runs of one process @alone measured in the
 * same rounds (round i: ranked[i], alone[i]; NULL or unfinished: not
 * measured): the N ranks' items/s over N times the process's, paired by
 * round (one round: from the two runs' intervals).  NaN when no round
 * measured both. */
void          tach_scaling_efficiency (TachRun *const *ranked, TachRun *const *alone,
                                       guint n_rounds, TachInterval *out);
/* Sets @run's weak and strong scaling efficiency (its summary's figures). */
void          tach_run_set_scaling (TachRun *run, const TachInterval *weak,
                                    const TachInterval *strong);
/* Data parallel: how many ranks' samples the run holds (on rank 0 once a
 * run of N ranks has ended: N; else 1), and rank @rank's, as
 * tach_run_copy_samples gives rank 0's.  Any thread. */
guint         tach_run_get_n_ranks (TachRun *run);
/* Writes the run's timeline as Chrome Trace Event JSON (Perfetto UI,
 * chrome://tracing): a process per rank, its steps and their phases, the
 * loss as a counter; every Nth step only, past 400000 events.  Any thread
 * but the engine's, once the run has ended. */
gboolean      tach_run_write_trace (TachRun *run, const char *path, GError **error);
guint         tach_run_copy_rank_samples (TachRun *run, guint rank, guint from, guint n,
                                          GArray *out);
TachRunState  tach_run_get_state (TachRun *run);
/* The error of a failed run, or NULL.  Valid until the run is freed. */
const GError *tach_run_get_error (TachRun *run);
const TachConfig     *tach_run_get_config (TachRun *run);
const TachDeviceInfo *tach_run_get_device (TachRun *run);
guint         tach_run_get_id (TachRun *run);       /* unique per process */
gint64        tach_run_get_start_time (TachRun *run); /* real time, µs */
/* Summary of the samples so far (warm-up excluded). */
void          tach_run_get_summary (TachRun *run, TachSummary *summary);
/* Marks @run as one point of a sweep over knob @knob (NULL: none): runs.csv
 * gives it in its "varied" column, and the knob's value in "varied_value".
 * Call before anything else reads the run (the thread that made it). */
void          tach_run_set_varied (TachRun *run, const char *knob);
/* Whether the test-set evaluation runs after the last step (TRUE, the
 * default, for a workload that has a test split): explain and sweep
 * compare the steps' rates only and skip it, which took a quarter of a
 * busy cnn explain.  Call before tach_run_start (the thread that made
 * it). */
void          tach_run_set_evaluate (TachRun *run, gboolean evaluate);
const char   *tach_run_get_varied (TachRun *run);
/* Names a run that no preset names by what it is (an explain mix:
 * "tf1-feed-dict + layout=batch-major"); runs.csv keeps it in its label
 * column.  Call before anything else reads the run (the thread that made
 * it). */
void          tach_run_set_label (TachRun *run, const char *label);
const char   *tach_run_get_label (TachRun *run);
/* What to call the run in a list of runs: its preset, else its label,
 * else @custom (the caller's word for a configuration of its own), then a
 * sweep's varied knob and value ("tuned batch=64").  Any thread. */
char         *tach_run_dup_name (TachRun *run, const char *custom);
/* Generated text (lstm-lm generate with print_text), or NULL. */
char         *tach_run_dup_text (TachRun *run);
/* What each of the run's plans ran, "what: algorithm; ..." (an LSTM plan's
 * CPU GEMM path, or its cuDNN RNN algorithm and math mode), known once the
 * run has ended; NULL if none.  Any thread. */
char         *tach_run_dup_algorithms (TachRun *run);
/* The data the run read (tach_config_get_data_source(): *kind untranslated,
 * the path or NULL), as its runs.csv row says for a loaded run (both NULL
 * from a folder written before they were recorded).  Any thread. */
const char   *tach_run_get_data_kind (TachRun *run);
const char   *tach_run_get_data_path (TachRun *run);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachRun, tach_run_unref)

/* Summary statistics of an array of samples (warm-up excluded). */
void          tach_summary_compute (const TachSample *samples, guint n,
                                    guint64 items_per_step, double flops_per_step,
                                    double device_peak_flops, TachSummary *out);

/* How much faster the run of @b is than the run of @a: the ratio of their
 * median steps/s, or of their items/s where a step of each processes a
 * different number of items (other batch sizes: steps would compare
 * unequal work), with a 95% interval combining the two medians' (runs
 * measured apart; comparisons of interleaved rounds pair them instead).
 * *@by_items (may be NULL) says which rate.  Returns the verdict against
 * 1: TACH_VERDICT_UNKNOWN where either run has no interval, and
 * TACH_VERDICT_WITHIN_NOISE (not resolved) wherever
 * tach_summary_busy_apart says the machine's load may have moved between
 * the runs. */
TachVerdict   tach_summary_compare (const TachSummary *a, const TachSummary *b,
                                    TachInterval *ratio, gboolean *by_items);
/* Whether the load between two runs measured apart leaves their ratio
 * unresolved, from the two runs' machine_busy: either at
 * TACH_SUMMARY_BUSY_SHARE or more, or the two more than
 * TACH_SUMMARY_APART_BUSY_SPREAD apart.  A run whose load was not measured
 * (NaN) gives no evidence either way and counts as idle.  The one decision
 * every between-run ratio uses (tach_summary_compare, the Scaling view's
 * unpaired points). */
gboolean      tach_summary_busy_apart (double busy_a, double busy_b);
/* Why, where tach_summary_busy_apart holds: "not resolved: measured apart
 * while the machine was busy (34% vs 3%)" (translated), newly allocated;
 * NULL where it does not hold. */
char         *tach_summary_dup_busy_apart (double busy_a, double busy_b);
/* A run's generation and memory figures as tach-cli's summary prints them
 * and the window's run details show them: the prefill (time to the first
 * token) and decoding (tokens/s) apart where the run prefilled prompts,
 * the peak memory where measured, and what the model's memory holds
 * (parameters, optimiser, activations, KV cache) where the workload says.
 * One line each, indented as the summary's and ending in a newline,
 * translated, newly allocated; "" where the run has none.  Any thread. */
char         *tach_summary_dup_generation_memory (const TachSummary *s);
/* What one rank holds for the parameters (TachSummary.held_*) as
 * tach-cli's summary prints it, a line ("" where unknown), newly
 * allocated. */
char         *tach_summary_dup_held (const TachSummary *s);
/* From this share of a run's time on fewer threads than it had, a
 * comparison says so: it is a busy machine's figure. */
#define TACH_SUMMARY_FEWER_THREADS_SHARE 0.10
/* What a person should know of a comparison of @b (named @name_b) against
 * @a (@name_a) whose runs ran on fewer threads than they had (for
 * TACH_SUMMARY_FEWER_THREADS_SHARE of their time or more) or while the
 * machine was busy (TACH_SUMMARY_BUSY_SHARE): "tuned ran on 1 thread of 2
 * because other processes took 55% of the CPU: this speed-up is for a
 * busy machine; rerun idle to compare" (translated, newly allocated);
 * NULL where both ran as on an idle machine. */
char         *tach_summary_dup_load_caveat (const char *name_a, const TachSummary *a,
                                            const char *name_b, const TachSummary *b);

/* ------------------------------------------------------------------- CSV */

/* Appends finished runs to DIR/runs.csv and DIR/samples.csv (creating DIR
 * and the files with headers), RFC 4180, C-locale numbers.  Each file is
 * written to a temporary name and renamed: an error leaves both as they
 * were.  A run already in runs.csv is not written again.  Another process
 * writing DIR (its folder lock, below) makes this fail with TACH_ERROR_IO.
 * Element type of @runs: TachRun*. */
gboolean tach_csv_append (const char *dir, GPtrArray *runs, GError **error);

/* The same append, with samples.csv written as the runs go (and the
 * number of runs added so far), so that a run
 * ends with its rows already on disk (tach-csv-stream.c):
 *   open    locks DIR (created when absent) against other writers, checks
 *           its files' headers and starts a temporary samples.csv with the
 *           rows it holds.  A DIR another process is writing is refused
 *           (TACH_ERROR_IO, naming the folder);
 *   add_run adds a started run: FALSE when DIR's runs.csv holds it already
 *           (it is then not written);
 *   write   writes the rows of the added runs' samples published since the
 *           last call (any thread that owns the stream; the runs may be
 *           running).  After an error (a full disk) the stream is failed:
 *           every later call returns that error and the folder stays as it
 *           was;
 *   commit  writes the remaining rows and a runs.csv row per added run, as
 *           it is then (an ended run), and renames the temporary files over
 *           the old ones.  The stream is done after it, committed or not;
 *   free    discards what was not committed (the folder as it was) and
 *           unlocks DIR.
 * A process killed at any moment leaves DIR's files as they were or as
 * committed, never a partial row; the next writer removes the temporary
 * files it left. */
typedef struct _TachCsvStream TachCsvStream;

TachCsvStream *tach_csv_stream_open    (const char *dir, GError **error);
gboolean       tach_csv_stream_add_run (TachCsvStream *stream, TachRun *run);
guint          tach_csv_stream_get_n_runs (TachCsvStream *stream);
gboolean       tach_csv_stream_write   (TachCsvStream *stream, GError **error);
gboolean       tach_csv_stream_commit  (TachCsvStream *stream, GError **error);
void           tach_csv_stream_free    (TachCsvStream *stream);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TachCsvStream, tach_csv_stream_free)

/* --------------------------------------------------------- results folders */

/* Reads DIR/runs.csv and DIR/samples.csv (as tach_csv_append writes them)
 * and appends one ended run per row of runs.csv to @runs (element type
 * TachRun*), with its samples, its summary as saved and its device as
 * recorded.  Columns are found by name: a knob without a column (a folder
 * written by an older version) is unknown (tach_run_knob_is_known).  A row
 * that cannot be read is skipped and described in @problems (element type
 * char*, "FILE:LINE: what", when not NULL); the other rows still load.
 * Fails (TACH_ERROR_DATA) only when runs.csv cannot be read or is not one.
 * Any thread. */
gboolean    tach_results_load      (const char *dir, GPtrArray *runs, GPtrArray *problems,
                                    GError **error);
/* For a run loaded by tach_results_load: its run_id in runs.csv and its
 * folder; NULL for a run made here. */
const char *tach_run_get_record_id (TachRun *run);
const char *tach_run_get_source    (TachRun *run);
/* FALSE for a knob that the run's results folder did not record. */
gboolean    tach_run_knob_is_known (TachRun *run, const char *key);

/* ----------------------------------------------------------- TensorBoard */

/* Writes each ended run of @runs (element type TachRun*) as a TensorBoard
 * event file, DIR/<workload>-<preset>-<run_id>/events.out.tfevents.*.tach
 * (run_id as in runs.csv, so writing a run again replaces its file): the
 * knobs as a text summary "knobs" at step 0, and per step the scalars
 * steps_per_s, loss, accuracy and ms_per_step/{step,feed,compute,sync,host}
 * (those observed), then at the last step the run's figures:
 * run/median_steps_per_s and run/items_per_s, each with _lo and _hi (the
 * median's 95% interval), and run/machine_busy (0 to 1), those known.
 * Each file is written to a temporary name and renamed.
 * The paths written are added to @paths (char*) when it is not NULL.
 * Fails with TACH_ERROR_IO, leaving the files written before.  Any thread. */
gboolean    tach_tensorboard_export (const char *dir, GPtrArray *runs, GPtrArray *paths,
                                     GError **error);

G_END_DECLS
