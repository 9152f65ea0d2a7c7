/* SPDX-License-Identifier: MIT */
/*
 * syscope attach, inside the program: the entry points `syscope attach` calls through ptrace
 * in a process that was started without syscope (libsyscope.so loaded by dlopen, passive).
 *
 * syscope_attach_start(settings_path) runs on the thread the CLI hijacked, which must be
 * given back quickly: it reads the settings and starts one thread, "syscope-attach", that
 * does the rest. That thread opens the session's raw file, records the process and its
 * modules, starts the sources, and arms a CPU-time sampler (a perf task clock, user time
 * only) on every thread of /proc/self/task. A thread registers itself at its first sample,
 * in the handler (there is no pthread_create wrapper in a process we did not start, and no
 * normal-context code of ours may run on the program's threads). Threads made later are
 * found by rescanning /proc/self/task every 50 ms, and armed the same way.
 *
 * Detach: the CLI creates <session>/attach.stop (or calls syscope_attach_stop). The thread
 * disables every sampler, lets handlers in progress finish, finalizes the recording (end
 * reason DETACH: every thread's records reach the file), closes every descriptor it opened,
 * gives the program its signal handlers back and exits. The library stays loaded and
 * dormant; a later attach starts it again. What it did is in <session>/attach.state.
 *
 * What is not done in an attached process: wall-clock sampling (its timer would interrupt
 * blocking calls, which no wrapper guards here: EINTR), the wrappers' records (the program's
 * calls do not reach them), and CPU time in the kernel (user time only, for the same reason).
 */
#include "rt.h"

#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sources/source.h"

#define ATTACH_MAX_THREADS 4096
#define RESCAN_NS 50000000ull

/* A thread attach armed: its sampler's descriptor until the thread adopts it. */
struct armed {
	pid_t tid; /* 0: free slot */
	int fd;
	uint32_t index;
	struct rt_thread *_Atomic adopted; /* set by the thread itself, in its handler */
	bool seen;			   /* in the last scan */
};

static struct {
	struct armed threads[ATTACH_MAX_THREADS];
	_Atomic unsigned n;
	pthread_t thread;
	bool thread_running;
	pid_t own_tid;
	atomic_int stop_asked;
	bool loader_ready;
	uint32_t main_index; /* the main thread is thread 0, as in a launched process */
	unsigned arm_failures;
	int arm_error;
} at;

bool rt_attach_claim(int fd, struct rt_thread *t, uint32_t *index)
{
	pid_t tid = rt_gettid();
	unsigned n = atomic_load_explicit(&at.n, memory_order_acquire);

	for (unsigned i = 0; i < n; i++) {
		struct armed *a = &at.threads[i];
		struct rt_thread *none = NULL;

		if (a->tid != tid || a->fd != fd)
			continue;
		if (!atomic_compare_exchange_strong(&a->adopted, &none, t))
			return false;
		*index = a->index;
		return true;
	}
	return false;
}

/* One line "WORD DETAIL" for the CLI. */
static void write_state(const char *word, const char *detail)
{
	char path[4200], text[1024];
	int fd, len;

	snprintf(path, sizeof(path), "%s/attach.state", rt_proc.session_dir);
	len = snprintf(text, sizeof(text), "%s %s\n", word, detail);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, text, (size_t)len) < 0) {
		/* the CLI then reports that the attach did not answer */
	}
	RT_REAL(close)(fd);
}

/* syscope's own threads (telemetry, this one) are not sampled. */
static bool is_syscope_thread(pid_t tid)
{
	char path[64], name[32] = "";
	int fd;
	ssize_t n;

	if (tid == at.own_tid)
		return true;
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, name, sizeof(name) - 1);
	RT_REAL(close)(fd);
	name[n > 0 ? n : 0] = '\0';
	return !strncmp(name, "syscope-", 8);
}

static struct armed *find_armed(pid_t tid)
{
	unsigned n = atomic_load(&at.n);

	for (unsigned i = 0; i < n; i++)
		if (at.threads[i].tid == tid)
			return &at.threads[i];
	return NULL;
}

static void arm(pid_t tid)
{
	unsigned n = atomic_load(&at.n);
	struct armed *a;
	int fd = -1, err;

	if (n >= ATTACH_MAX_THREADS || is_syscope_thread(tid))
		return;
	err = rt_sampling_arm_tid(tid, &fd);
	if (err) {
		at.arm_failures++;
		at.arm_error = -err;
		return;
	}
	a = &at.threads[n];
	a->tid = tid;
	a->fd = fd;
	a->seen = true;
	a->index = tid == rt_proc.pid ? at.main_index
				      : atomic_fetch_add(&rt_proc.next_thread_index, 1);
	atomic_store(&a->adopted, NULL);
	atomic_store_explicit(&at.n, n + 1, memory_order_release);
}

/* A thread that ended before its first sample: its descriptor is ours to close. An adopted
 * thread closed its own at its end (the thread key's destructor). */
static void forget_gone(struct armed *a)
{
	if (!atomic_load(&a->adopted) && a->fd >= 0)
		rt_fd_release(a->fd);
	a->fd = -1;
	a->tid = -1; /* never matches a thread again */
}

/* Every thread of the process, main thread first; new ones armed, gone ones forgotten. */
static void scan_threads(void)
{
	unsigned n = atomic_load(&at.n);
	DIR *d;
	struct dirent *de;

	for (unsigned i = 0; i < n; i++)
		at.threads[i].seen = false;
	if (!find_armed(rt_proc.pid))
		arm(rt_proc.pid);
	d = opendir("/proc/self/task");
	if (!d)
		return;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		struct armed *a;

		if (tid <= 0)
			continue;
		a = find_armed(tid);
		if (a)
			a->seen = true;
		else
			arm(tid);
	}
	closedir(d);
	n = atomic_load(&at.n);
	for (unsigned i = 0; i < n; i++)
		if (at.threads[i].tid > 0 && !at.threads[i].seen)
			forget_gone(&at.threads[i]);
}

static bool stop_file_exists(void)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/attach.stop", rt_proc.session_dir);
	return !access(path, F_OK);
}

/* The syscope that attached (its pid in <session>/attach.owner): 0 when unknown. */
static pid_t read_owner(void)
{
	char path[4200], buf[32] = "";
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/attach.owner", rt_proc.session_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	RT_REAL(close)(fd);
	buf[n > 0 ? n : 0] = '\0';
	return (pid_t)atoi(buf);
}

/* A syscope killed before it asked for the detach must not leave the process recording. */
static bool owner_gone(pid_t owner)
{
	return owner > 0 && kill(owner, 0) && errno == ESRCH;
}

/* A child forked while attached has none of the samplers, and its copy of the threads'
 * buffers must never reach the parent's file. */
static void attach_fork_child(void)
{
	if (at.thread_running)
		atomic_store(&rt_proc.active, 0);
	at.thread_running = false;
}

/* Whether a sampler signal is still pending on one of the threads (then the program must not
 * get its old handler back yet: a pending SIGSTKFLT would end it). */
static bool sampler_signal_pending(void)
{
	sigset_t set;
	unsigned n = atomic_load(&at.n);

	rt_signals_sampler_set(&set);
	for (unsigned i = 0; i < n; i++) {
		char path[64], buf[2048], *p;
		unsigned long long mask;
		int fd;
		ssize_t len;

		if (at.threads[i].tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)at.threads[i].tid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		RT_REAL(close)(fd);
		buf[len > 0 ? len : 0] = '\0';
		p = strstr(buf, "SigPnd:");
		if (!p || sscanf(p + 7, "%llx", &mask) != 1)
			continue;
		for (int s = 1; s < 64; s++)
			if (sigismember(&set, s) && (mask & (1ull << (s - 1))))
				return true;
	}
	return false;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Samplers off, handlers in progress finished, recording finalized, descriptors closed. */
static void detach(void)
{
	unsigned n = atomic_load(&at.n);
	bool pending = true;

	for (unsigned i = 0; i < n; i++) {
		struct armed *a = &at.threads[i];
		struct rt_thread *t = atomic_load(&a->adopted);

		if (a->tid <= 0)
			continue;
		if (t)
			rt_sampling_disarm_adopted(t);
		else if (a->fd >= 0)
			ioctl(a->fd, PERF_EVENT_IOC_DISABLE, 0);
	}
	for (int tries = 0; tries < 20; tries++) {
		bool busy = false;

		for (unsigned i = 0; i < n; i++) {
			struct rt_thread *t = atomic_load(&at.threads[i].adopted);

			busy |= at.threads[i].tid > 0 && t && t->in_sampler;
		}
		if (!busy)
			break;
		sleep_ns(1000000);
	}
	rt_finalize(SC_END_DETACH, 0);
	atomic_store(&rt_proc.active, 0);
	/* Signals generated before the samplers stopped reach their threads soon (a sampler
	 * fires only while its thread runs in user space); our handler drops them. */
	for (int tries = 0; tries < 50 && (pending = sampler_signal_pending()); tries++)
		sleep_ns(2000000);
	for (unsigned i = 0; i < n; i++) {
		struct armed *a = &at.threads[i];
		struct rt_thread *t = atomic_load(&a->adopted);

		if (a->tid <= 0) {
			continue;
		} else if (!t) {
			rt_fd_release(a->fd);
		} else if (t->state == RT_THREAD_ACTIVE) {
			if (t->perf_fd >= 0)
				rt_fd_release(t->perf_fd);
			t->perf_fd = -1;
			rt_recorder_detach_thread(t);
			t->state = RT_THREAD_UNKNOWN; /* registers again at a later attach */
		}
		a->tid = 0;
	}
	atomic_store(&at.n, 0);
	if (!pending)
		rt_signals_release();
	else
		write_state("note", "a sampler signal was still pending: syscope's handler stays, "
				    "dormant, in front of the program's");
	rt_recorder_close();
}

static bool open_recording(void)
{
	Dl_info self;

	rt_proc.pid = getpid();
	rt_proc.start_ns = rt_now_ns();
	if (dladdr((void *)open_recording, &self) && self.dli_fname &&
	    !realpath(self.dli_fname, rt_proc.self_path))
		snprintf(rt_proc.self_path, sizeof(rt_proc.self_path), "%s", self.dli_fname);
	rt_clock_init(&rt_proc.settings);
	if (rt_recorder_open(rt_proc.session_dir, 0, -1))
		return false;
	rt_finalize_reset();
	atomic_store(&rt_proc.stopping, 0);
	atomic_store(&rt_proc.paused, 0);
	rt_threads_attach_init();
	at.main_index = atomic_fetch_add(&rt_proc.next_thread_index, 1);
	atomic_store(&rt_proc.active, 1);
	return true;
}

static int find_cuda(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size, (void)data;
	return info->dlpi_name && strstr(info->dlpi_name, "/libcuda.so") != NULL;
}

/* The program's threads before the sources start their own (telemetry's names itself only
 * once running: later scans know it by its name). */
static unsigned program_threads(pid_t *tids, unsigned max)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	unsigned n = 0;

	while (d && n < max && (de = readdir(d)))
		if (atoi(de->d_name) > 0 && (pid_t)atoi(de->d_name) != at.own_tid)
			tids[n++] = (pid_t)atoi(de->d_name);
	if (d)
		closedir(d);
	return n;
}

static void *attach_main(void *arg)
{
	static pid_t before[ATTACH_MAX_THREADS];
	unsigned nbefore;
	uint64_t next_scan;
	pid_t owner;

	(void)arg;
	at.own_tid = rt_gettid();
	prctl(PR_SET_NAME, "syscope-attach", 0, 0, 0);
	if (!open_recording()) {
		write_state("error", "cannot create the raw file in the session's raw folder");
		return NULL;
	}
	nbefore = program_threads(before, ATTACH_MAX_THREADS);
	rt_record_identity();
	if (!at.loader_ready) {
		rt_loader_init();
		pthread_atfork(NULL, NULL, attach_fork_child);
		at.loader_ready = true;
	} else {
		rt_loader_event(); /* what was loaded while dormant */
	}
	rt_modules_init(false);
	rt_sources_process_start();
	rt_thread_self();
	arm(rt_proc.pid);
	for (unsigned i = 0; i < nbefore; i++)
		if (before[i] != rt_proc.pid)
			arm(before[i]);
	if (at.arm_failures)
		rt_note(SC_NOTE_WARN,
			"attach: the CPU-time sampler could not be armed on %u thread(s) (%s); they "
			"are not sampled",
			at.arm_failures, strerror(at.arm_error));
	if (dl_iterate_phdr(find_cuda, NULL))
		rt_note(SC_NOTE_WARN, "attach: the process uses CUDA (libcuda is loaded); CUDA "
				      "tracing of an attached process is not in this version yet: "
				      "CPU samples only");
	rt_note(SC_NOTE_INFO,
		"attach: CPU-time samples count user time only, and wall-clock sampling is off: "
		"in a process syscope did not start, nothing keeps their signals from "
		"interrupting the program's system calls");
	write_state("started", "");
	owner = read_owner();
	next_scan = rt_now_ns() + RESCAN_NS;
	while (!atomic_load(&at.stop_asked) && !stop_file_exists()) {
		if (!rt_active()) {
			/* The program is ending (exit, exec) and finalizes the recording itself:
			 * nothing here may be closed under it. */
			write_state("ended", "");
			return NULL;
		}
		sleep_ns(10000000);
		if (rt_now_ns() >= next_scan) {
			if (owner_gone(owner)) {
				rt_note(SC_NOTE_WARN,
					"attach: syscope (process %d) ended without "
					"detaching; detached",
					(int)owner);
				break;
			}
			scan_threads();
			next_scan = rt_now_ns() + RESCAN_NS;
		}
	}
	scan_threads(); /* threads gone since the last scan are not touched */
	detach();
	write_state("detached", "");
	return NULL;
}

/* "SYSCOPE_NAME=value" lines of the file the CLI wrote into the session. */
static int load_settings(const char *path)
{
	static char text[256 << 10];
	static char *lines[1024];
	char err[SC_ERRMSG_MAX];
	int fd = open(path, O_RDONLY | O_CLOEXEC), n = 0;
	ssize_t len;

	if (fd < 0)
		return -errno;
	len = read(fd, text, sizeof(text) - 1);
	RT_REAL(close)(fd);
	if (len <= 0)
		return -EINVAL;
	text[len] = '\0';
	for (char *p = text; *p && n < 1023;) {
		char *end = strchr(p, '\n');

		if (end)
			*end = '\0';
		if (*p)
			lines[n++] = p;
		p = end ? end + 1 : p + strlen(p);
	}
	lines[n] = NULL;
	if (sc_settings_init(&rt_proc.settings))
		return -ENOMEM;
	if (sc_settings_load_env(&rt_proc.settings, lines, err))
		return -EINVAL;
	snprintf(rt_proc.session_dir, sizeof(rt_proc.session_dir), "%s",
		 sc_str(&rt_proc.settings, SC_SET_SESSION_DIR));
	return rt_proc.session_dir[0] ? 0 : -EINVAL;
}

RT_EXPORT int syscope_attach_start(const char *settings_path);
RT_EXPORT int syscope_attach_stop(void);

/* Called by syscope attach through ptrace. Returns 0, or a negative errno: -EBUSY when this
 * process is being profiled already. */
RT_EXPORT int syscope_attach_start(const char *settings_path)
{
	sigset_t all, old;
	int rc;

	if (rt_active())
		return -EBUSY;
	if (at.thread_running) { /* the previous attach's thread has finished (detached) */
		pthread_join(at.thread, NULL);
		at.thread_running = false;
	}
	rc = load_settings(settings_path);
	if (rc)
		return rc;
	atomic_store(&at.stop_asked, 0);
	at.arm_failures = 0;
	sigfillset(&all);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &all, &old); /* the thread takes no signal */
	rc = RT_REAL(pthread_create)(&at.thread, NULL, attach_main, NULL);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	at.thread_running = true;
	return 0;
}

/* Detach without the stop file (a program or debugger may call it); waits for the end. */
RT_EXPORT int syscope_attach_stop(void)
{
	if (!at.thread_running)
		return -ESRCH;
	atomic_store(&at.stop_asked, 1);
	pthread_join(at.thread, NULL);
	at.thread_running = false;
	return 0;
}
