/* tach-machine.h: how loaded the machine is, by whom.
 *
 * A run's speed depends on what else the processors do.  This monitor
 * reads what the kernel already counts, cheaply and without privileges:
 * the machine's CPU time by kind (/proc/stat: all, idle, iowait, steal),
 * the process's own CPU time and involuntary context switches
 * (getrusage), the processors' clock where the kernel exposes it
 * (cpufreq's scaling_cur_freq), and the runnable threads of the machine
 * and of the process (/proc/stat's procs_running, /proc/self/task).
 *
 * Two kinds of question:
 *   - between two marks (tach_machine_mark, tach_machine_load_between):
 *     what share of the machine's CPU time other processes took, what
 *     share the hypervisor stole, how often this process was preempted.
 *     /proc/stat counts in ticks (USER_HZ, 100 a second): a window of
 *     well under a second has a coarse share, and the window's tick count
 *     is returned so that a caller can judge it.
 *   - now (tach_machine_probe_busy): how many processors' worth of other
 *     threads want to run, sampled over a few milliseconds, for a plan
 *     that chooses its thread count.
 *
 * Anything unreadable (no /proc, a container that hides it) gives
 * "unknown" (negative values, FALSE flags), never an error or a crash.
 *
 * Threads: any thread; nothing is shared between calls.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The most processes of the job besides this one whose time a mark reads
 * (the sibling ranks on this machine): a mark is taken around steps. */
#define TACH_MACHINE_MAX_JOB_PIDS 15

/* One reading.  Plain data: copy it, keep it, compare any two. */
typedef struct {
  gint64   wall_us;          /* g_get_monotonic_time () */
  /* /proc/stat's first line, summed over the processors, in ticks. */
  gboolean have_stat;
  guint64  total_ticks;      /* every kind but guest (already in user) */
  guint64  idle_ticks;
  guint64  iowait_ticks;
  guint64  steal_ticks;
  /* This process (getrusage RUSAGE_SELF). */
  gboolean have_self;
  gint64   self_cpu_us;      /* user + system */
  gint64   self_nivcsw;      /* involuntary context switches */
  /* The job's other processes on this machine (tach_machine_set_job_pids),
   * each one's user + system time in µs from /proc/PID/stat, or -1 where
   * it could not be read (it ended). */
  guint    n_job;
  gint64   job_cpu_us[TACH_MACHINE_MAX_JOB_PIDS];
  /* Mean scaling_cur_freq over the online processors, in MHz; 0 where the
   * kernel does not expose it (most virtual machines). */
  double   freq_mhz;
  guint    n_cpus;           /* online processors; 0 unknown */
} TachMachineMark;

/* What happened between two marks.  A share is of the machine's CPU time
 * in the window (every processor's), 0..1, or negative where unknown. */
typedef struct {
  gint64   wall_us;
  guint64  ticks;            /* the window's CPU time in ticks, all processors:
                              * a share's resolution is 1 / ticks */
  double   others_share;     /* busy time that was neither this process's
                              * nor its job's */
  double   self_share;       /* this process's CPU time */
  double   job_share;        /* the job's other processes' (sibling ranks) */
  double   steal_share;      /* taken by the hypervisor for other guests */
  double   idle_share;       /* idle and iowait */
  gint64   involuntary_switches; /* this process's; -1 unknown */
  double   freq_mhz_start;   /* 0 unknown */
  double   freq_mhz_end;
  guint    n_cpus;
} TachMachineLoad;

/* The job's other processes on this machine, by process id (under
 * mpirun, the ranks that share it; this process's own id is skipped, as
 * are ids past TACH_MACHINE_MAX_JOB_PIDS): their CPU time is the job's,
 * not other processes', in every mark from now on.  Call it before the
 * first mark that should count them (tach_ranks_init does, once); NULL or
 * 0 forgets them.  Not for calling while marks are taken on other
 * threads. */
void     tach_machine_set_job_pids (const gint *pids, guint n);
/* How many are set, and (when @pids is not NULL) the ids. */
guint    tach_machine_get_job_pids (gint *pids);

/* Takes a reading now: a few reads of small /proc and /sys files (tens
 * of µs). */
void     tach_machine_mark (TachMachineMark *mark);
/* The same without the clock frequency (freq_mhz 0, unknown): /proc/stat
 * and getrusage only, for a caller that looks often (a file a processor
 * is what the frequency costs). */
void     tach_machine_mark_times (TachMachineMark *mark);

/* Fills @load with what happened from @start to @end (taken in that
 * order).  Returns FALSE, with every share unknown, where either mark
 * lacks /proc/stat or no tick passed between them; the involuntary
 * switches are filled wherever getrusage was read. */
gboolean tach_machine_load_between (const TachMachineMark *start,
                                    const TachMachineMark *end,
                                    TachMachineLoad       *load);

/* Other threads' demand for processors now, for a plan. */
typedef struct {
  gboolean known;            /* FALSE: /proc unreadable, the rest unset */
  guint    n_cpus;           /* online processors */
  double   others_runnable;  /* mean count of runnable threads not of this
                              * process over the samples: processors'
                              * worth of demand (0 on an idle machine) */
  double   self_runnable;    /* likewise of this process's threads, the
                              * calling thread included */
  double   others_share;     /* from the ticks of the probe's window, < 0
                              * where too few ticks passed */
  double   steal_share;      /* likewise */
  guint    free_cpus;        /* processors nobody else wants, rounded
                              * down, at least 1 where known */
  gboolean busy;             /* others want at least a quarter of a
                              * processor's time (steal included) */
} TachMachineBusy;

/* Samples the runnable threads @samples times, @interval_us apart (the
 * thread sleeps in between), and the ticks of the whole window where it
 * spans 50 ms or more: 8 samples 2000 µs apart take 14 ms; one sample
 * (a look between a run's steps) takes tens of µs.  The calling thread is not counted as
 * another's, nor are the process's other running threads. */
void     tach_machine_probe_busy (guint            samples,
                                  guint            interval_us,
                                  TachMachineBusy *busy);

/* The probe's defaults: samples and interval of a plan's probe. */
#define TACH_MACHINE_PROBE_SAMPLES 8
#define TACH_MACHINE_PROBE_INTERVAL_US 2000

G_END_DECLS
