/* SPDX-License-Identifier: MIT */
/*
 * The runtime's life in a process:
 *
 *   constructor ──▶ passive (no session, disabled, or the raw file cannot be created)
 *        │
 *        ▼
 *   active: recorder open, main thread registered, process/environment/settings/modules
 *        │  recorded, fatal-signal recorders and sources started
 *        │
 *        ├── fork(): prepare (block samplers, pre-create the child's file)
 *        │           parent: close that file, unblock
 *        │           child:  forget the parent's file, open the new one, start over as
 *        │                   a new process whose only thread is thread 0
 *        ├── exec*(): EXEC recorded, end reason EXEC; the new image starts in its own file
 *        │
 *        ▼
 *   finalized (exactly once): by the destructor (exit, return from main), by _exit/_Exit,
 *   quick_exit, daemon()'s parent, or a fatal signal's recorder (crashes: signals.c; the
 *   signals whose default action ends the process: here); samplers stop, end reason and
 *   status are stored, every thread's records reach the file.
 *   kill -9 skips this: all but the threads' last ~20 ms is already in the file.
 */
#include "rt.h"
#include "patch/patch.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "func_table.h"
#include "sources/source.h"

struct rt_process rt_proc;

static atomic_int finalized;
static atomic_int end_set; /* finalization has stored the end */
static int exit_status;
static int fork_fd = -1;
static unsigned fork_seq;
static RT_TLS sigset_t fork_saved_mask;

extern char **environ;

static size_t read_small_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return 0;
	while (len < cap && (n = read(fd, buf + len, cap - len)) > 0)
		len += (size_t)n;
	RT_REAL(close)(fd);
	return len;
}

/* Largest payload one record may carry: half a chunk, less headers. */
static size_t record_room(void)
{
	return ((size_t)sc_int(&rt_proc.settings, SC_SET_BUFFER_CHUNK_KB) << 10) / 2 - 256;
}

static void record_process(void)
{
	struct sc_rec_process rec = { .ts = rt_proc.start_ns };
	size_t room = record_room();
	char *buf = malloc(room);
	size_t len = 0;
	ssize_t n;

	if (!buf)
		return;
	rec.pid = rt_proc.pid;
	rec.ppid = getppid();
	rec.uid = getuid();
	n = readlink("/proc/self/exe", buf, room / 4);
	len = n > 0 ? (size_t)n : 0;
	buf[len++] = '\0';
	rec.exe_len = (uint32_t)len;
	n = (ssize_t)read_small_file("/proc/self/cmdline", buf + len, room / 2);
	if (n <= 0 || buf[len + (size_t)n - 1] != '\0')
		buf[len + (size_t)n++] = '\0'; /* truncated: keep it terminated */
	rec.cmdline_len = (uint32_t)n;
	len += (size_t)n;
	if (!getcwd(buf + len, room - len))
		buf[len] = '\0';
	rec.cwd_len = (uint32_t)strlen(buf + len) + 1;
	len += rec.cwd_len;
	rt_record(SC_REC_PROCESS, 0, &rec.ts, sizeof(rec) - sizeof(rec.hdr), buf, (uint32_t)len);
	free(buf);
}

static void record_strings(uint16_t type, char *const *list)
{
	size_t room = record_room(), len = 0;
	char *buf = calloc(1, room);
	bool truncated = false;

	if (!buf)
		return;
	for (; list && *list; list++) {
		size_t l = strlen(*list) + 1;

		if (len + l > room) {
			truncated = true;
			continue;
		}
		memcpy(buf + len, *list, l);
		len += l;
	}
	rt_record(type, 0, buf, (uint32_t)len, NULL, 0);
	free(buf);
	if (truncated)
		rt_note(SC_NOTE_INFO,
			"environment larger than %zu bytes: some variables not recorded", room);
}

static void record_settings(void)
{
	char *list[SC_SETTING_COUNT + 1];
	char *storage = malloc(SC_SETTING_COUNT * 300);
	size_t used = 0;
	int n = 0;

	if (!storage)
		return;
	for (int id = 0; id < SC_SETTING_COUNT; id++) {
		int w = snprintf(storage + used, 300, "%s=%s", sc_setting_defs[id].name,
				 rt_proc.settings.v[id].text);

		if (w < 0 || w >= 300)
			continue;
		list[n++] = storage + used;
		used += (size_t)w + 1;
	}
	list[n] = NULL;
	record_strings(SC_REC_SETTINGS, list);
	free(storage);
}

void rt_fork_prepare(void)
{
	sigset_t block;

	if (!rt_active())
		return;
	rt_signals_sampler_set(&block);
	if (sc_bool(&rt_proc.settings, SC_SET_FOLLOW_CHILDREN)) {
		/* A child killed (by a pool's SIGTERM, say) before its recorder wrote the file's
		 * header would leave only an empty file: every signal but a fault waits, pending,
		 * until the child has its recorder or the parent has its pid back. */
		sigfillset(&block);
		sigdelset(&block, SIGSEGV);
		sigdelset(&block, SIGBUS);
		sigdelset(&block, SIGILL);
		sigdelset(&block, SIGFPE);
		sigdelset(&block, SIGTRAP);
		sigdelset(&block, SIGSYS);
	}
	RT_REAL(pthread_sigmask)(SIG_BLOCK, &block, &fork_saved_mask);
	rt_self.forking = 1;
	fork_fd = -1;
	if (sc_bool(&rt_proc.settings, SC_SET_FOLLOW_CHILDREN)) {
		/* Created here, as the parent: a child that runs as another user after setuid()
		 * could not create a file in the session folder itself. */
		char path[4200];
		int fd;

		snprintf(path, sizeof(path), "%s/raw/%d-fork%u" SC_RAW_SUFFIX, rt_proc.session_dir,
			 (int)rt_proc.pid, fork_seq++);
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		fork_fd = fd >= 0 ? rt_fd_adopt(fd) : -1;
	}
}

void rt_fork_parent(void)
{
	if (!rt_self.forking)
		return;
	if (fork_fd >= 0)
		rt_fd_release(fork_fd);
	fork_fd = -1;
	rt_self.forking = 0;
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &fork_saved_mask, NULL);
}

void rt_fork_child(bool attached)
{
	int fd = fork_fd;

	if (!rt_self.forking) {
		rt_loader_fork_child_done();
		return;
	}
	fork_fd = -1;
	rt_clock_fork_child();
	rt_proc.pid = getpid();
	rt_proc.start_ns = rt_now_ns();
	rt_recorder_forget();
	rt_fd_close_all_inherited(fd);
	atomic_store(&finalized, 0);
	atomic_store(&end_set, 0);
	if (!sc_bool(&rt_proc.settings, SC_SET_FOLLOW_CHILDREN) ||
	    rt_recorder_open(rt_proc.session_dir, 0, fd)) {
		atomic_store(&rt_proc.active, 0);
		rt_self.forking = 0;
		rt_self.state = RT_THREAD_EXITED; /* nothing more from this process */
		rt_loader_fork_child_done();
		RT_REAL(pthread_sigmask)(SIG_SETMASK, &fork_saved_mask, NULL);
		return;
	}
	rt_self.forking = 0;
	rt_threads_fork_child();
	record_process();
	record_strings(SC_REC_ENVIRON, environ);
	record_settings();
	rt_modules_init(true);
	rt_counters_fork_child();
	rt_sources_fork_child();
	if (attached) /* armed as attach arms a thread: no signal inside a system call */
		rt_sampling_arm_forked(&rt_self);
	else
		rt_thread_setup(&rt_self);
	rt_loader_fork_child_done();
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &fork_saved_mask, NULL);
}

static void fork_child(void)
{
	rt_fork_child(false);
}

void rt_record_identity(void)
{
	record_process();
	record_strings(SC_REC_ENVIRON, environ);
	record_settings();
}

void rt_finalize_reset(void)
{
	atomic_store(&finalized, 0);
	atomic_store(&end_set, 0);
}

/* Signals whose default action ends the process: each gets a hidden recorder. */
static const int ending[] = { SIGHUP,  SIGINT,	SIGQUIT, SIGPIPE,   SIGALRM, SIGTERM, SIGUSR1,
			      SIGUSR2, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO,   SIGPWR };

static bool end_stored(void);

void rt_finalize(enum sc_end_reason reason, int status)
{
	sigset_t block, saved;

	if (!atomic_load(&rt_proc.active) || getpid() != rt_proc.pid)
		return;
	/* One that comes meanwhile (a pool's SIGTERM to a worker already exiting) waits for the
	 * end to be stored; on_ending_signal then records it as the end. Held back before
	 * `finalized` is set: on this thread, its handler would wait for itself. */
	sigemptyset(&block);
	for (size_t i = 0; i < sizeof(ending) / sizeof(ending[0]); i++)
		sigaddset(&block, ending[i]);
	RT_REAL(pthread_sigmask)(SIG_BLOCK, &block, &saved);
	if (atomic_exchange(&finalized, 1)) {
		RT_REAL(pthread_sigmask)(SIG_SETMASK, &saved, NULL);
		/* Another thread is finalizing (the program's exit while an attach detaches):
		 * returning now would let the caller release the recording under it. */
		end_stored();
		return;
	}
	rt_plugins_stop(); /* plugins flush what they buffered while recording still works */
	rt_exec_report();
	atomic_store(&rt_proc.stopping, 1); /* sample handlers record nothing more */
	rt_sampling_quiesce();		    /* and those recording finish before the flush */
	rt_sources_process_stop();
	rt_modules_check();
	rt_loader_process_stop();
	rt_thread_end();
	rt_set_end(reason, status);
	atomic_store(&end_set, 1);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &saved, NULL);
}

/* Another thread is finalizing: wait (a bounded while) until it has stored the end. */
static bool end_stored(void)
{
	const struct timespec ms = { 0, 1000000 };

	for (int i = 0; i < 2000 && !atomic_load(&end_set); i++)
		nanosleep(&ms, NULL);
	return atomic_load(&end_set);
}

/*
 * Signals whose default action ends the process (SIGPIPE of `prog | head`, SIGTERM, Ctrl-C...)
 * would otherwise end it without any of our code running: the threads' buffers would never
 * reach the file and the end would read "still running". Where the program left the default,
 * a hidden recorder stores everything and the end, then lets the signal take its course.
 * Only what is async-signal-safe: the samplers are told to stop, buffers written, end set.
 */
static void on_ending_signal(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl;
	sigset_t unblock;

	(void)si, (void)uc;
	if (atomic_load(&rt_proc.active) && getpid() == rt_proc.pid) {
		if (!atomic_exchange(&finalized, 1)) {
			atomic_store(&rt_proc.stopping, 1);
			rt_sampling_quiesce();
			rt_func_end_image(); /* the receiving thread's calls it ends in */
			rt_set_end(SC_END_SIGNAL, sig);
			atomic_store(&end_set, 1);
		} else if (end_stored()) {
			rt_set_end(SC_END_SIGNAL, sig); /* it dies of this signal, after all */
		}
	}
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	RT_REAL(sigaction)(sig, &dfl, NULL);
	sigemptyset(&unblock);
	sigaddset(&unblock, sig);
	raise(sig); /* pending until unblocked: then the default action, as without us */
	RT_REAL(pthread_sigmask)(SIG_UNBLOCK, &unblock, NULL);
}

/* Also syscope attach's, once its samplers hold their signals (attach.c). */
void rt_install_ending_recorders(void)
{
	for (size_t i = 0; i < sizeof(ending) / sizeof(ending[0]); i++)
		rt_signal_hide_on_default(ending[i], on_ending_signal);
}

static void on_quick_exit(void)
{
	rt_finalize(SC_END__EXIT, exit_status);
}

static int needs_libraries(struct dl_phdr_info *info, size_t size, void *needs)
{
	(void)size;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_DYNAMIC)
			continue;
		for (const ElfW(Dyn) *d = (const void *)(info->dlpi_addr + ph->p_vaddr);
		     d->d_tag != DT_NULL; d++)
			if (d->d_tag == DT_NEEDED)
				*(bool *)needs = true;
	}
	return 1; /* the first object is the program */
}

/*
 * A program that needs no shared library (a Go program built without cgo as a PIE: the
 * loader runs it, and preloads us) makes its own system calls: its threads, signal
 * handlers and exit all go past syscope's wrappers, and the handler it installs on a
 * sampler's signal ends it at the first sample (Go throws on SIGSTKFLT). It is left alone,
 * as a statically linked one is; the launcher says so (launch.c).
 */
static bool program_calls_the_kernel_itself(void)
{
	bool needs = false;

	dl_iterate_phdr(needs_libraries, &needs);
	return !needs;
}

__attribute__((constructor)) static void rt_constructor(void)
{
	char err[SC_ERRMSG_MAX] = "";
	const char *dir;
	Dl_info self;
	int env_rc;

	rt_real_resolve();
	rt_proc.pid = getpid();
	rt_proc.start_ns = rt_now_ns();
	if (sc_settings_init(&rt_proc.settings))
		return;
	env_rc = sc_settings_load_env(&rt_proc.settings, NULL, err);
	dir = sc_str(&rt_proc.settings, SC_SET_SESSION_DIR);
	if (rt_patch_built() && sc_bool(&rt_proc.settings, SC_SET_ENABLED) && !dir[0] &&
	    dladdr((void *)rt_constructor, &self) && self.dli_fname) {
		char path[4096];

		if (realpath(self.dli_fname, path))
			rt_patch_self_launch(path); /* returns only when it did not */
	}
	if (!sc_bool(&rt_proc.settings, SC_SET_ENABLED) || !dir[0])
		return; /* not started by syscope: stay passive */
	if (program_calls_the_kernel_itself())
		return;
	snprintf(rt_proc.session_dir, sizeof(rt_proc.session_dir), "%s", dir);
	if (dladdr((void *)rt_constructor, &self) && self.dli_fname &&
	    !realpath(self.dli_fname, rt_proc.self_path))
		snprintf(rt_proc.self_path, sizeof(rt_proc.self_path), "%s", self.dli_fname);
	rt_exec_env_init();
	rt_clock_init(&rt_proc.settings); /* before the file header, which names the clock */
	if (rt_recorder_open(dir, 0, -1))
		return; /* nowhere to record: behave as if not loaded */
	atomic_store(&rt_proc.active, 1);
	rt_threads_init();
	record_process();
	record_strings(SC_REC_ENVIRON, environ);
	record_settings();
	if (!strcmp(sc_str(&rt_proc.settings, SC_SET_CLOCK), "tsc") && !rt_clock_uses_tsc())
		rt_note(SC_NOTE_WARN, "clock: this CPU has no invariant time-stamp counter; "
				      "timestamps from clock_gettime");
	rt_loader_init();
	rt_modules_init(false);
	if (env_rc)
		rt_note(SC_NOTE_WARN, "ignored a setting from the environment: %s", err);
	rt_signals_install_fatal();
	rt_sources_process_start();
	rt_install_ending_recorders(); /* after the sources: sampler signals are theirs */
	at_quick_exit(on_quick_exit);  /* the first registered runs last */
	rt_thread_setup(&rt_self);
	pthread_atfork(rt_fork_prepare, rt_fork_parent, fork_child);
}

__attribute__((destructor)) static void rt_destructor(void)
{
	rt_finalize(SC_END_EXIT, exit_status);
}

RT_EXPORT void exit(int status)
{
	exit_status = status;
	RT_REAL(exit)(status);
	__builtin_unreachable();
}

RT_EXPORT void _exit(int status)
{
	rt_finalize(SC_END__EXIT, status);
	RT_REAL(_exit)(status);
	__builtin_unreachable();
}

RT_EXPORT void _Exit(int status)
{
	rt_finalize(SC_END__EXIT, status);
	RT_REAL(_Exit)(status);
	__builtin_unreachable();
}

/* quick_exit() leaves through libc's own _exit, past ours: on_quick_exit finalizes after the
 * program's at_quick_exit handlers. */
RT_EXPORT void quick_exit(int status)
{
	exit_status = status;
	RT_REAL(quick_exit)(status);
}

/* daemon(3)'s standard streams onto /dev/null, as glibc does it. */
static int streams_to_null(void)
{
	struct stat st;
	int fd = open("/dev/null", O_RDWR);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISCHR(st.st_mode)) {
		RT_REAL(close)(fd);
		errno = ENODEV;
		return -1;
	}
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		RT_REAL(close)(fd);
	return 0;
}

/*
 * daemon(3) as glibc implements it, but its parent leaves through our _exit: libc's own
 * would end the parent past every wrapper of ours, with its records still in its buffers.
 */
RT_EXPORT int daemon(int nochdir, int noclose)
{
	pid_t pid;

	if (!atomic_load(&rt_proc.active))
		return RT_REAL(daemon)(nochdir, noclose);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0)
		_exit(0);
	if (setsid() < 0)
		return -1;
	if (!nochdir && chdir("/") < 0) {
		/* glibc ignores this failure too */
	}
	return noclose ? 0 : streams_to_null();
}

/*
 * Returning from main() reaches exit() inside libc, past our wrapper; wrapping main through
 * __libc_start_main is how we learn that exit status.
 */
typedef int (*main_fn)(int, char **, char **);
static main_fn program_main;

static int main_hook(int argc, char **argv, char **envp)
{
	int rc = program_main(argc, argv, envp);

	exit_status = rc;
	return rc;
}

RT_EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
				void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	program_main = main;
	return RT_REAL(__libc_start_main)(main_hook, argc, argv, init, fini, rtld_fini, stack_end);
}
