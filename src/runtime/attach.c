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
 * dormant; a later attach starts it again. What it did is in <session>/attach-<pid>.state.
 *
 * The program's threads are attach_threads.c's.
 *
 * What is not done in an attached process: wall-clock sampling (its timer would interrupt
 * blocking calls, which no wrapper guards here: EINTR), the MPI, OpenMP and NCCL wrappers'
 * records (the program's calls do not reach them; the pthread ones, _exit and the exec,
 * spawn and fork wrappers are put in front of them by GOT rewriting, attach_wrap.c), and
 * CPU time in the kernel (user time only, for the same reason).
 */
#include "attach.h"

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

#include "patch/patch.h"
#include "sources/source.h"

#define RESCAN_NS 50000000ull

static struct {
	pthread_t thread;
	bool thread_running;
	pid_t own_tid;
	atomic_int stop_asked;
	bool loader_ready;
	bool in_child;	      /* a fork child's recording: the CLI's state file is the parent's */
	atomic_int starting;  /* from syscope_attach_start until the wrappers are in place */
	atomic_int busy;      /* our thread is in a round of work (it may claim a chunk) */
	atomic_int exec_held; /* an exec is on its way: no new round */
} at;

/*
 * Our thread's rounds of work (the start, each rescan) against an exec of the program, which
 * ends the image without our thread's knowing: a chunk it claimed after the exec's flush
 * would be lost, and counted as such. A round begins only while no exec is on its way, and
 * an exec waits for the round in progress (Dekker's pattern: each side stores its flag,
 * then loads the other's, both sequentially consistent).
 */
static bool round_begin(void)
{
	atomic_store(&at.busy, 1);
	if (!atomic_load(&at.exec_held))
		return true;
	atomic_store(&at.busy, 0);
	return false;
}

static void round_end(void)
{
	atomic_store(&at.busy, 0);
}

/* One line "WORD DETAIL" for the CLI, in a file of this process's own: one attach may record
 * several processes into one session. */
static void write_state(const char *word, const char *detail)
{
	char path[4200], text[1024];
	int fd, len;

	if (at.in_child)
		return;
	snprintf(path, sizeof(path), "%s/attach-%d.state", rt_proc.session_dir, (int)getpid());
	len = snprintf(text, sizeof(text), "%s %s\n", word, detail);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, text, (size_t)len) < 0) {
		/* the CLI then reports that the attach did not answer */
	}
	RT_REAL(close)(fd);
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

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Samplers off, handlers in progress finished, recording finalized, descriptors closed. */
static void detach(void)
{
	bool pending = true;

	rt_attach_wrap_end(); /* the program's calls no longer reach our wrappers */
	rt_attach_threads_quiet();
	rt_finalize(SC_END_DETACH, 0);
	atomic_store(&rt_proc.active, 0);
	/* Signals generated before the samplers stopped reach their threads soon (a sampler
	 * fires only while its thread runs in user space); our handler drops them. */
	for (int tries = 0; tries < 50 && (pending = rt_attach_signal_pending()); tries++)
		sleep_ns(2000000);
	rt_attach_threads_release();
	rt_signals_unhide();
	if (!pending) {
		rt_signals_release();
		rt_unwind_release(); /* no sample can come: libunwind and its pipe go */
	} else
		write_state("note", "a sampler signal was still pending: syscope's handler stays, "
				    "dormant, in front of the program's");
	rt_recorder_close();
	rt_patch_release(); /* nothing patched: its tables go (patch.h) */
}

static void *attach_child_main(void *arg);

void rt_attach_before_exec(void)
{
	if (!at.thread_running || rt_gettid() == at.own_tid)
		return;
	atomic_store(&at.exec_held, 1);
	while (atomic_load(&at.busy))
		sleep_ns(100000);
}

void rt_attach_exec_failed(void)
{
	atomic_store(&at.exec_held, 0);
}

/*
 * fork while attached (a pthread_atfork hook: posix_spawn, and so system() and popen(), make
 * no fork): the child records into its own file as with `run` (lifecycle.c's hooks), its one
 * thread armed as attach arms one, and a thread of ours in it scans for its new threads and
 * detaches it when the CLI asks; the GOT entries patched in the parent are the child's too
 * (an exec of the child ends its file through exec.c's wrappers), given back at its detach.
 * Without --follow-children it records nothing.
 */
#define START_WAIT_MS 100

/*
 * A child forked while the attach starts would record with the program's own exec entries
 * (its exec, before the GOT is rewritten, would lose its last records): the fork waits for
 * the wrappers, at most START_WAIT_MS. Bounded: glibc holds its atfork lock while the prepare
 * handlers run, and the start may register a handler (the MPI tracer's).
 */
static void attach_fork_prepare(void)
{
	for (int ms = 0; atomic_load(&at.starting) && ms < START_WAIT_MS; ms++)
		sleep_ns(1000000);
	if (at.thread_running)
		rt_fork_prepare();
}

static void attach_fork_parent(void)
{
	if (at.thread_running)
		rt_fork_parent();
}

static void attach_fork_child(void)
{
	sigset_t all, old;

	atomic_store(&at.starting, 0); /* a fork that waited no longer: not the child's start */
	atomic_store(&at.busy, 0);     /* the parent's thread is not here to end its round */
	atomic_store(&at.exec_held, 0);
	if (!at.thread_running)
		return;
	at.thread_running = false; /* the parent's thread is not in the child */
	rt_fork_child(true);
	if (!rt_active())
		return;
	at.in_child = true;
	atomic_store(&at.stop_asked, 0);
	sigfillset(&all);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &all, &old);
	at.thread_running = !RT_REAL(pthread_create)(&at.thread, NULL, attach_child_main, &rt_self);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &old, NULL);
	if (!at.thread_running) {
		rt_note(SC_NOTE_WARN,
			"attach: a fork child (process %d) cannot be followed: no "
			"thread for syscope in it; it records nothing",
			(int)getpid());
		rt_finalize(SC_END_DETACH, 0);
		atomic_store(&rt_proc.active, 0);
	}
}

/* exit() of a process we did not start: its status, which no wrapper of ours sees. */
static void on_exit_status(int status, void *arg)
{
	(void)arg;
	rt_finalize(SC_END_EXIT, status);
}

static bool open_recording(void)
{
	Dl_info self;

	rt_proc.pid = getpid();
	rt_proc.start_ns = rt_now_ns();
	rt_proc.attached = true; /* exec.c: the programs it executes keep their environment */
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
	rt_attach_threads_begin(at.own_tid);
	atomic_store(&rt_proc.active, 1);
	return true;
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

/* Until the CLI asks (the stop file), or is gone, or the process ends; then the detach. New
 * threads are armed every RESCAN_NS. */
static void record_until_stop(bool cuda_done)
{
	uint64_t next_scan;
	pid_t owner;

	owner = read_owner();
	next_scan = rt_now_ns() + RESCAN_NS;
	while (!atomic_load(&at.stop_asked) && !stop_file_exists()) {
		if (!rt_active()) {
			/* The program is ending (exit, exec) and finalizes the recording itself:
			 * nothing here may be closed under it. */
			write_state("ended", "");
			return;
		}
		sleep_ns(10000000);
		if (!round_begin())
			continue; /* an exec on its way: it ends this thread, or lets it go on */
		rt_attach_wrap_rescan(); /* objects loaded since: their calls to our wrappers */
		if (rt_now_ns() >= next_scan) {
			if (owner_gone(owner)) {
				rt_note(SC_NOTE_WARN,
					"attach: syscope (process %d) ended without "
					"detaching; detached",
					(int)owner);
				round_end();
				break;
			}
			rt_attach_scan();
			if (!cuda_done) /* CUDA started while attached */
				cuda_done = rt_attach_cuda();
			rt_recorder_flush_self(); /* modules and threads: in the file if exec comes */
			next_scan = rt_now_ns() + RESCAN_NS;
		}
		round_end();
	}
	rt_attach_scan(); /* threads gone since the last scan are not touched */
	rt_attach_note_failures();
	detach();
	write_state("detached", "");
}

/* What the launcher's wrappers would record (they are interposed at the program's start, by
 * LD_PRELOAD, and a library loaded later is not in front of the program's calls); those of
 * --parallel=pthread and =mpi are put there by GOT rewriting (attach_wrap.c). */
static void note_wrappers_asked(void)
{
	static const struct {
		int setting;
		const char *name;
	} wrapped[] = {
		{ SC_SET_USE_OPENMP, "openmp" },
		{ SC_SET_USE_NCCL, "nccl" },
	};

	for (size_t i = 0; i < sizeof(wrapped) / sizeof(wrapped[0]); i++)
		if (sc_bool(&rt_proc.settings, wrapped[i].setting))
			rt_note(SC_NOTE_WARN,
				"attach: --parallel=%s records nothing in an attached process: its "
				"wrappers are put in front of the program's calls at its start "
				"(LD_PRELOAD); those calls are in the CPU samples only",
				wrapped[i].name);
}

static void *attach_main(void *arg)
{
	static pid_t before[ATTACH_MAX_THREADS];
	unsigned nbefore;
	bool cuda_done;

	(void)arg;
	at.own_tid = rt_gettid();
	prctl(PR_SET_NAME, "syscope-attach", 0, 0, 0);
	round_begin(); /* no exec waits yet: the recording is not active */
	if (!open_recording()) {
		round_end();
		atomic_store(&at.starting, 0);
		write_state("error", "cannot create the raw file in the session's raw folder");
		return NULL;
	}
	nbefore = program_threads(before, ATTACH_MAX_THREADS);
	rt_record_identity();
	if (!at.loader_ready) {
		rt_loader_init();
		pthread_atfork(attach_fork_prepare, attach_fork_parent, attach_fork_child);
		on_exit(on_exit_status, NULL);
		at.loader_ready = true;
	} else {
		rt_loader_event(); /* what was loaded while dormant */
	}
	rt_modules_init(false);
	rt_signals_install_fatal();
	rt_sources_process_start();
	/* A signal left at its default that ends the process (SIGTERM, Ctrl-C, a crash) keeps
	 * every thread's records and the end, as with `run`; the detach gives the default back
	 * (rt_signals_unhide). Handlers the program installed are not touched: the recorder
	 * comes when the program gives the default back (attach_wrap.c's signal wrappers). */
	rt_install_ending_recorders();
	rt_thread_self();
	rt_attach_arm(rt_proc.pid);
	for (unsigned i = 0; i < nbefore; i++)
		if (before[i] != rt_proc.pid)
			rt_attach_arm(before[i]);
	rt_attach_wrap_begin();
	atomic_store(&at.starting, 0); /* forks go on (attach_fork_prepare) */
	cuda_done = rt_attach_cuda();  /* if the process uses CUDA */
	note_wrappers_asked();
	rt_note(SC_NOTE_INFO,
		"attach: CPU-time samples count user time only, and wall-clock sampling is off: "
		"in a process syscope did not start, nothing keeps their signals from "
		"interrupting the program's system calls");
	round_end();
	write_state("started", "");
	record_until_stop(cuda_done);
	return NULL;
}

/* The thread of ours in a fork child: the same watch, on the child's threads. */
static void *attach_child_main(void *arg)
{
	at.own_tid = rt_gettid();
	prctl(PR_SET_NAME, "syscope-attach", 0, 0, 0);
	while (!round_begin()) /* the child execs already: the exec ends us, or fails */
		sleep_ns(1000000);
	rt_attach_threads_fork_child(at.own_tid, arg);
	rt_thread_self();
	round_end();
	record_until_stop(true); /* CUDA is not usable in a fork child */
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
	atomic_store(&at.starting, 1);
	sigfillset(&all);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &all, &old); /* the thread takes no signal */
	rc = RT_REAL(pthread_create)(&at.thread, NULL, attach_main, NULL);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &old, NULL);
	if (rc) {
		atomic_store(&at.starting, 0);
		return -rc;
	}
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
