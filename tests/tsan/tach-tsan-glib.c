/* tach-tsan-glib.c: GLib's locks as ThreadSanitizer sees them; linked into
 * the programs of the -Db_sanitize=thread build only.
 *
 * On Linux, GLib's GMutex, GRecMutex, GRWLock and GCond are built on
 * futexes inside an uninstrumented library, so ThreadSanitizer sees none of
 * the ordering they give and reports every access they protect as a race.
 * These definitions take the place of GLib's for this program's own calls:
 * each calls GLib's function (found with dlsym at start-up) and tells
 * ThreadSanitizer what it did, an acquire after taking a lock and a release
 * before giving it up, as its own pthread interceptors do.
 *
 * GTask hands a task to a pool thread and its result back through GLib's
 * own queues, as invisible: running a task in a thread releases the task
 * and the thread function starts by acquiring it; returning a result
 * releases it and propagating the result acquires it.  (GLib's slice
 * allocator, which moves blocks between threads the same way, is turned
 * off with G_SLICE=always-malloc by whoever runs the build.) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <gio/gio.h>

void __tsan_acquire (void *addr);
void __tsan_release (void *addr);

static void     (*real_mutex_lock) (GMutex *);
static void     (*real_mutex_unlock) (GMutex *);
static gboolean (*real_mutex_trylock) (GMutex *);
static void     (*real_rec_mutex_lock) (GRecMutex *);
static void     (*real_rec_mutex_unlock) (GRecMutex *);
static gboolean (*real_rec_mutex_trylock) (GRecMutex *);
static void     (*real_rw_lock_writer_lock) (GRWLock *);
static void     (*real_rw_lock_writer_unlock) (GRWLock *);
static void     (*real_rw_lock_reader_lock) (GRWLock *);
static void     (*real_rw_lock_reader_unlock) (GRWLock *);
static void     (*real_cond_wait) (GCond *, GMutex *);
static gboolean (*real_cond_wait_until) (GCond *, GMutex *, gint64);

static void     (*real_task_run_in_thread) (GTask *, GTaskThreadFunc);
static void     (*real_task_run_in_thread_sync) (GTask *, GTaskThreadFunc);
static void     (*real_task_return_pointer) (GTask *, gpointer, GDestroyNotify);
static void     (*real_task_return_boolean) (GTask *, gboolean);
static void     (*real_task_return_int) (GTask *, gssize);
static void     (*real_task_return_error) (GTask *, GError *);
static gpointer (*real_task_propagate_pointer) (GTask *, GError **);
static gboolean (*real_task_propagate_boolean) (GTask *, GError **);
static gssize   (*real_task_propagate_int) (GTask *, GError **);

/* A function of GLib's, or (@optional) NULL when its library is not loaded:
 * a program that never touches GIO loads no libgio, and calls no GTask. */
static void *
real_of (const char *name, gboolean optional)
{
  void *f = dlsym (RTLD_NEXT, name);

  if (f == NULL && optional)
    return NULL;

  if (f == NULL)
    {
      fprintf (stderr, "tach-tsan-glib: no %s in GLib\n", name);
      abort ();
    }
  return f;
}

/* Resolved once, on first use: GLib's own start-up may lock before any
 * constructor of this program runs. */
static void
resolve_all (void)
{
  __atomic_store_n (&real_mutex_lock, real_of ("g_mutex_lock", FALSE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_mutex_unlock, real_of ("g_mutex_unlock", FALSE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_mutex_trylock, real_of ("g_mutex_trylock", FALSE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_rec_mutex_lock, real_of ("g_rec_mutex_lock", FALSE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_rec_mutex_unlock, real_of ("g_rec_mutex_unlock", FALSE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_rec_mutex_trylock, real_of ("g_rec_mutex_trylock", FALSE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_rw_lock_writer_lock, real_of ("g_rw_lock_writer_lock", FALSE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_rw_lock_writer_unlock, real_of ("g_rw_lock_writer_unlock", FALSE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_rw_lock_reader_lock, real_of ("g_rw_lock_reader_lock", FALSE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_rw_lock_reader_unlock, real_of ("g_rw_lock_reader_unlock", FALSE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_cond_wait, real_of ("g_cond_wait", FALSE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_cond_wait_until, real_of ("g_cond_wait_until", FALSE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_task_run_in_thread, real_of ("g_task_run_in_thread", TRUE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_task_run_in_thread_sync, real_of ("g_task_run_in_thread_sync", TRUE),
                    __ATOMIC_RELEASE);
  __atomic_store_n (&real_task_return_pointer, real_of ("g_task_return_pointer", TRUE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_task_return_boolean, real_of ("g_task_return_boolean", TRUE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_task_return_int, real_of ("g_task_return_int", TRUE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_task_return_error, real_of ("g_task_return_error", TRUE), __ATOMIC_RELEASE);
  __atomic_store_n (&real_task_propagate_pointer, real_of ("g_task_propagate_pointer", TRUE),
                    __ATOMIC_RELEASE);
  __atomic_store_n (&real_task_propagate_boolean, real_of ("g_task_propagate_boolean", TRUE),
                    __ATOMIC_RELEASE);
  __atomic_store_n (&real_task_propagate_int, real_of ("g_task_propagate_int", TRUE), __ATOMIC_RELEASE);
}

static int resolved;

#define REAL(name)                                                        \
  (G_LIKELY (__atomic_load_n (&resolved, __ATOMIC_ACQUIRE))                 \
   ? real_##name : (resolve_once (), real_##name))

static void
resolve_once (void)
{
  resolve_all ();
  __atomic_store_n (&resolved, 1, __ATOMIC_RELEASE);
}

void
g_mutex_lock (GMutex *mutex)
{
  REAL (mutex_lock) (mutex);
  __tsan_acquire (mutex);
}

void
g_mutex_unlock (GMutex *mutex)
{
  __tsan_release (mutex);
  REAL (mutex_unlock) (mutex);
}

gboolean
g_mutex_trylock (GMutex *mutex)
{
  gboolean locked = REAL (mutex_trylock) (mutex);

  if (locked)
    __tsan_acquire (mutex);
  return locked;
}

void
g_rec_mutex_lock (GRecMutex *mutex)
{
  REAL (rec_mutex_lock) (mutex);
  __tsan_acquire (mutex);
}

void
g_rec_mutex_unlock (GRecMutex *mutex)
{
  __tsan_release (mutex);
  REAL (rec_mutex_unlock) (mutex);
}

gboolean
g_rec_mutex_trylock (GRecMutex *mutex)
{
  gboolean locked = REAL (rec_mutex_trylock) (mutex);

  if (locked)
    __tsan_acquire (mutex);
  return locked;
}

void
g_rw_lock_writer_lock (GRWLock *lock)
{
  REAL (rw_lock_writer_lock) (lock);
  __tsan_acquire (lock);
}

void
g_rw_lock_writer_unlock (GRWLock *lock)
{
  __tsan_release (lock);
  REAL (rw_lock_writer_unlock) (lock);
}

void
g_rw_lock_reader_lock (GRWLock *lock)
{
  REAL (rw_lock_reader_lock) (lock);
  __tsan_acquire (lock);
}

void
g_rw_lock_reader_unlock (GRWLock *lock)
{
  __tsan_release (lock);
  REAL (rw_lock_reader_unlock) (lock);
}

void
g_cond_wait (GCond *cond, GMutex *mutex)
{
  __tsan_release (mutex);
  REAL (cond_wait) (cond, mutex);
  __tsan_acquire (mutex);
}

gboolean
g_cond_wait_until (GCond *cond, GMutex *mutex, gint64 end_time)
{
  gboolean signalled;

  __tsan_release (mutex);
  signalled = REAL (cond_wait_until) (cond, mutex, end_time);
  __tsan_acquire (mutex);
  return signalled;
}

/* ------------------------------------------------------------------ GTask */

static GQuark
task_func_quark (void)
{
  static GQuark quark;

  if (__atomic_load_n (&quark, __ATOMIC_ACQUIRE) == 0)
    __atomic_store_n (&quark, g_quark_from_static_string ("tach-tsan-task-func"),
                      __ATOMIC_RELEASE);
  return __atomic_load_n (&quark, __ATOMIC_ACQUIRE);
}

static void
task_trampoline (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  GTaskThreadFunc func;

  __tsan_acquire (task);
  func = (GTaskThreadFunc) g_object_get_qdata (G_OBJECT (task), task_func_quark ());
  func (task, source, task_data, cancellable);
}

void
g_task_run_in_thread (GTask *task, GTaskThreadFunc task_func)
{
  g_object_set_qdata (G_OBJECT (task), task_func_quark (), (gpointer) task_func);
  __tsan_release (task);
  REAL (task_run_in_thread) (task, task_trampoline);
}

void
g_task_run_in_thread_sync (GTask *task, GTaskThreadFunc task_func)
{
  g_object_set_qdata (G_OBJECT (task), task_func_quark (), (gpointer) task_func);
  __tsan_release (task);
  REAL (task_run_in_thread_sync) (task, task_trampoline);
  __tsan_acquire (task);
}

void
g_task_return_pointer (GTask *task, gpointer result, GDestroyNotify result_destroy)
{
  __tsan_release (task);
  REAL (task_return_pointer) (task, result, result_destroy);
}

void
g_task_return_boolean (GTask *task, gboolean result)
{
  __tsan_release (task);
  REAL (task_return_boolean) (task, result);
}

void
g_task_return_int (GTask *task, gssize result)
{
  __tsan_release (task);
  REAL (task_return_int) (task, result);
}

void
g_task_return_error (GTask *task, GError *error)
{
  __tsan_release (task);
  REAL (task_return_error) (task, error);
}

void
g_task_return_new_error (GTask *task, GQuark domain, gint code, const char *format, ...)
{
  va_list args;
  char *message;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  g_task_return_error (task, g_error_new_literal (domain, code, message));
  g_free (message);
}

gpointer
g_task_propagate_pointer (GTask *task, GError **error)
{
  gpointer result = REAL (task_propagate_pointer) (task, error);

  __tsan_acquire (task);
  return result;
}

gboolean
g_task_propagate_boolean (GTask *task, GError **error)
{
  gboolean result = REAL (task_propagate_boolean) (task, error);

  __tsan_acquire (task);
  return result;
}

gssize
g_task_propagate_int (GTask *task, GError **error)
{
  gssize result = REAL (task_propagate_int) (task, error);

  __tsan_acquire (task);
  return result;
}
