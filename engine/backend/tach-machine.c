/* tach-machine.c: the machine-load monitor (tach-machine.h).
 *
 * Files are read with plain open/read into stack buffers: a mark must be
 * cheap enough to take around every step, and must not allocate.
 */
#include "tach-machine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Reads up to @size - 1 bytes of @path into @buf, NUL-terminated; the
 * count read, or -1.  /proc files are read in one go: their first bytes
 * are all a caller here wants. */
static gssize
read_small (const char *path, char *buf, gsize size)
{
  gssize n;
  int fd;

  do
    fd = open (path, O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return -1;
  do
    n = read (fd, buf, size - 1);
  while (n < 0 && errno == EINTR);
  close (fd);
  if (n < 0)
    return -1;
  buf[n] = '\0';
  return n;
}

/* /proc/stat's "cpu" line: user nice system idle iowait irq softirq steal
 * guest guest_nice (older kernels stop earlier; guest time is already in
 * user, so it is not added). */
static gboolean
read_stat (TachMachineMark *mark)
{
  char buf[512];
  guint64 v[8] = { 0 };
  char *p, *end;
  guint i;

  if (read_small ("/proc/stat", buf, sizeof buf) < 0 || strncmp (buf, "cpu ", 4) != 0)
    return FALSE;
  p = buf + 4;
  for (i = 0; i < G_N_ELEMENTS (v); i++)
    {
      while (*p == ' ')
        p++;
      if (*p == '\n' || *p == '\0')
        break;
      v[i] = g_ascii_strtoull (p, &end, 10);
      if (end == p)
        return FALSE;
      p = end;
    }
  /* user, nice, system and idle are in every kernel that has the line. */
  if (i < 4)
    return FALSE;
  mark->total_ticks = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
  mark->idle_ticks = v[3];
  mark->iowait_ticks = v[4];
  mark->steal_ticks = v[7];
  return TRUE;
}

/* The mean scaling_cur_freq (kHz) of the online processors, in MHz; 0
 * where none is readable. */
static double
read_freq_mhz (guint n_cpus)
{
  double sum = 0;
  guint read = 0;

  for (guint c = 0; c < n_cpus; c++)
    {
      char path[96], buf[32];

      g_snprintf (path, sizeof path,
                  "/sys/devices/system/cpu/cpu%u/cpufreq/scaling_cur_freq", c);
      if (read_small (path, buf, sizeof buf) <= 0)
        continue;
      sum += g_ascii_strtod (buf, NULL);
      read++;
    }
  return read > 0 ? sum / read / 1000.0 : 0;
}

static guint
online_cpus (void)
{
  long n = sysconf (_SC_NPROCESSORS_ONLN);

  return n > 0 ? (guint) n : 0;
}

/* The job's other processes on this machine: set once at start, before
 * the marks that read them. */
static gint job_pids[TACH_MACHINE_MAX_JOB_PIDS];
static guint n_job_pids;

void
tach_machine_set_job_pids (const gint *pids, guint n)
{
  gint self = (gint) getpid ();

  n_job_pids = 0;
  for (guint i = 0; pids != NULL && i < n && n_job_pids < TACH_MACHINE_MAX_JOB_PIDS; i++)
    if (pids[i] > 0 && pids[i] != self)
      job_pids[n_job_pids++] = pids[i];
}

guint
tach_machine_get_job_pids (gint *pids)
{
  if (pids != NULL)
    memcpy (pids, job_pids, n_job_pids * sizeof (gint));
  return n_job_pids;
}

/* A process's user + system time in µs from /proc/PID/stat (fields 14
 * and 15, in ticks), or -1. */
static gint64
process_cpu_us (gint pid, long hz)
{
  char path[48], buf[512];
  const char *p;
  guint64 utime, stime;
  char *end;

  g_snprintf (path, sizeof path, "/proc/%d/stat", pid);
  if (hz <= 0 || read_small (path, buf, sizeof buf) < 0)
    return -1;
  /* "pid (comm) S ppid ...": the name may hold spaces and parentheses;
   * after it, utime is the 12th field and stime the 13th. */
  p = strrchr (buf, ')');
  if (p == NULL)
    return -1;
  p++;
  for (int field = 0; field < 11; field++)
    {
      p = strchr (p + 1, ' ');
      if (p == NULL)
        return -1;
    }
  utime = g_ascii_strtoull (p + 1, &end, 10);
  if (end == p + 1 || *end != ' ')
    return -1;
  stime = g_ascii_strtoull (end + 1, &end, 10);
  return (gint64) ((utime + stime) * G_USEC_PER_SEC / (guint64) hz);
}

void
tach_machine_mark_times (TachMachineMark *mark)
{
  struct rusage ru;
  long hz;

  memset (mark, 0, sizeof *mark);
  mark->wall_us = g_get_monotonic_time ();
  mark->n_cpus = online_cpus ();
  mark->have_stat = read_stat (mark);
  if (getrusage (RUSAGE_SELF, &ru) == 0)
    {
      mark->have_self = TRUE;
      mark->self_cpu_us = (gint64) ru.ru_utime.tv_sec * G_USEC_PER_SEC + ru.ru_utime.tv_usec
                          + (gint64) ru.ru_stime.tv_sec * G_USEC_PER_SEC + ru.ru_stime.tv_usec;
      mark->self_nivcsw = ru.ru_nivcsw;
    }
  hz = sysconf (_SC_CLK_TCK);
  mark->n_job = n_job_pids;
  for (guint i = 0; i < n_job_pids; i++)
    mark->job_cpu_us[i] = process_cpu_us (job_pids[i], hz);
}

void
tach_machine_mark (TachMachineMark *mark)
{
  tach_machine_mark_times (mark);
  mark->freq_mhz = read_freq_mhz (mark->n_cpus);
}

static double
clamp01 (double x)
{
  return x < 0 ? 0 : x > 1 ? 1 : x;
}

gboolean
tach_machine_load_between (const TachMachineMark *start,
                           const TachMachineMark *end,
                           TachMachineLoad       *load)
{
  guint64 ticks, idle, steal, busy;
  double self_ticks, job_ticks = 0;
  gint64 job_us = 0;
  long hz;

  memset (load, 0, sizeof *load);
  load->wall_us = end->wall_us - start->wall_us;
  load->others_share = load->self_share = load->steal_share = load->idle_share = -1;
  load->job_share = 0;
  load->involuntary_switches = start->have_self && end->have_self
                               ? end->self_nivcsw - start->self_nivcsw : -1;
  load->freq_mhz_start = start->freq_mhz;
  load->freq_mhz_end = end->freq_mhz;
  load->n_cpus = end->n_cpus;

  hz = sysconf (_SC_CLK_TCK);
  if (!start->have_stat || !end->have_stat || end->total_ticks <= start->total_ticks
      || hz <= 0)
    return FALSE;
  ticks = end->total_ticks - start->total_ticks;
  /* Each counter only grows; a counter that went back (a processor taken
   * offline drops its share of the sums) gives no window. */
  if (end->idle_ticks < start->idle_ticks || end->iowait_ticks < start->iowait_ticks
      || end->steal_ticks < start->steal_ticks)
    return FALSE;
  idle = (end->idle_ticks - start->idle_ticks) + (end->iowait_ticks - start->iowait_ticks);
  steal = end->steal_ticks - start->steal_ticks;
  busy = ticks > idle + steal ? ticks - idle - steal : 0;
  load->ticks = ticks;
  load->idle_share = clamp01 ((double) idle / ticks);
  load->steal_share = clamp01 ((double) steal / ticks);
  /* The sibling ranks' time is the job's: counted where both marks read
   * it (a rank that ended between them is left to the others' share). */
  for (guint i = 0; i < MIN (start->n_job, end->n_job); i++)
    if (start->job_cpu_us[i] >= 0 && end->job_cpu_us[i] >= start->job_cpu_us[i])
      job_us += end->job_cpu_us[i] - start->job_cpu_us[i];
  job_ticks = (double) job_us * hz / G_USEC_PER_SEC;
  load->job_share = clamp01 (job_ticks / ticks);
  if (start->have_self && end->have_self)
    {
      /* getrusage is exact where /proc/stat counts whole ticks: over a short
       * window the two disagree by a tick or so, hence the clamps. */
      self_ticks = (double) (end->self_cpu_us - start->self_cpu_us) * hz / G_USEC_PER_SEC;
      load->self_share = clamp01 (self_ticks / ticks);
      load->others_share = clamp01 (((double) busy - self_ticks - job_ticks) / ticks);
    }
  return TRUE;
}

/* The runnable threads of the machine now (/proc/loadavg's fourth field,
 * "running/total"); -1 unknown. */
static int
machine_runnable (void)
{
  char buf[128];
  const char *p;

  if (read_small ("/proc/loadavg", buf, sizeof buf) < 0)
    return -1;
  /* "0.50 0.40 0.30 2/199 12345": past three fields. */
  p = buf;
  for (int i = 0; i < 3; i++)
    {
      p = strchr (p, ' ');
      if (p == NULL)
        return -1;
      p++;
    }
  if (!g_ascii_isdigit (*p))
    return -1;
  return atoi (p);
}

/* This process's threads in state R (running or runnable) now; -1
 * unknown. */
static int
self_runnable (void)
{
  DIR *dir = opendir ("/proc/self/task");
  struct dirent *e;
  int n = 0;

  if (dir == NULL)
    return -1;
  while ((e = readdir (dir)) != NULL)
    {
      char path[64], buf[256];
      const char *paren;

      if (!g_ascii_isdigit (e->d_name[0]))
        continue;
      g_snprintf (path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
      if (read_small (path, buf, sizeof buf) < 0)
        continue;  /* the thread ended meanwhile */
      /* "tid (comm) S ...": the name may hold spaces and parentheses. */
      paren = strrchr (buf, ')');
      if (paren != NULL && paren[1] == ' ' && paren[2] == 'R')
        n++;
    }
  closedir (dir);
  return n;
}

void
tach_machine_probe_busy (guint            samples,
                         guint            interval_us,
                         TachMachineBusy *busy)
{
  TachMachineMark start, end;
  TachMachineLoad load;
  double others = 0, own_sum = 0;
  guint counted = 0;

  /* /proc/stat is generated whole on every read (a line per processor
   * and one per interrupt): a window too short for ten ticks on two
   * processors skips it. */
  gboolean ticks = (guint64) (samples > 0 ? samples - 1 : 0) * interval_us >= 50000;

  memset (busy, 0, sizeof *busy);
  busy->others_share = busy->steal_share = -1;
  samples = MAX (samples, 1);
  if (ticks)
    tach_machine_mark (&start);
  for (guint i = 0; i < samples; i++)
    {
      int all, own;

      if (i > 0 && interval_us > 0)
        g_usleep (interval_us);
      all = machine_runnable ();
      own = self_runnable ();
      if (all < 0 || own < 0)
        continue;
      /* The two reads are a few µs apart: a count that changed between
       * them can make the difference negative. */
      others += MAX (all - own, 0);
      own_sum += own;
      counted++;
    }
  busy->n_cpus = online_cpus ();
  if (counted == 0 || busy->n_cpus == 0)
    return;
  busy->known = TRUE;
  busy->others_runnable = others / counted;
  busy->self_runnable = own_sum / counted;
  /* Below ten ticks a share is too coarse to say anything (a 16 ms probe
   * on two processors sees three or four). */
  if (ticks)
    tach_machine_mark (&end);
  if (ticks && tach_machine_load_between (&start, &end, &load) && load.ticks >= 10)
    {
      busy->others_share = load.others_share;
      busy->steal_share = load.steal_share;
    }
  {
    double demand = busy->others_runnable;
    long taken;

    /* Stolen time is a processor another guest has, as good as taken. */
    if (busy->others_share >= 0)
      demand = MAX (demand, (busy->others_share + busy->steal_share) * busy->n_cpus);
    busy->busy = demand >= 0.25;
    taken = lround (demand);
    busy->free_cpus = taken >= (long) busy->n_cpus ? 1 : busy->n_cpus - (guint) taken;
  }
}
