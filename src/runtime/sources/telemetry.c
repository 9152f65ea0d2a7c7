/* SPDX-License-Identifier: MIT */
/*
 * Host telemetry (--host): one background thread samples, at --process-freq, what the
 * process and the machine are doing, as counter tracks of the process:
 *
 *   process   CPU user and system time (% of one CPU), RSS, virtual size, peak RSS, minor
 *             and major page faults, voluntary and involuntary context switches, threads,
 *             open files (every tenth tick), bytes read and written (storage, /proc/self/io)
 *   machine   CPU utilization (all CPUs; per CPU and its frequency with --cpus), bytes,
 *             packets, errors and drops in and out per network interface, bytes read and
 *             written per disk
 *
 * Counts that only grow (faults, switches, bytes) are recorded as totals since telemetry
 * started. /proc files are opened once and read with pread each tick, from the first tick,
 * one period in (a process that ends sooner records none and costs a thread). The thread records
 * into its own stream, is named "syscope-host", takes no signals, and is never sampled. It
 * waits between ticks on a futex that a stop wakes: an exec stops it at once (it would die
 * with the exec, its last records with it: a fork child that execs is the common case).
 */
#include "gpu_telemetry.h"

#include "../../common/strutil.h"

#include <errno.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#define MAX_CPUS SC_ID_LIST_MAX_CPUS
#define MAX_NETS 32
#define MAX_DISKS 64
#define SLOW_EVERY 10 /* ticks between slow readings */
#define FIRST_TICK_MAX_NS 20000000ull
#define BUF_SIZE 65536

enum {
	NET_RX_BYTES,
	NET_RX_PACKETS,
	NET_RX_ERRS,
	NET_RX_DROP,
	NET_TX_BYTES,
	NET_TX_PACKETS,
	NET_TX_ERRS,
	NET_TX_DROP,
	NET_FIELDS
};

struct net {
	char name[32];
	unsigned long long base[NET_FIELDS];
	int track[NET_FIELDS];
};

struct disk {
	char name[32];
	unsigned long long base_read, base_written;
	int track_read, track_written;
};

struct cpu_times {
	unsigned long long busy, total;
};

static struct {
	pthread_t thread;
	bool running;
	bool host;	       /* host metrics (--host) */
	bool gpu_wanted;       /* GPU metrics (--gpu) asked for */
	bool gpu;	       /* ... and being recorded */
	atomic_int stop;       /* 0, or why the thread is asked to end: STOP_END, STOP_EXEC */
	bool stopped_for_exec; /* started again if the exec fails */
	bool need_setup;       /* the host files not opened yet, nor the tracks defined */
	bool have_base;	       /* the process's fault and switch counts taken at start */
	uint64_t cpu_ns;       /* the thread's own CPU time, when it ended */
	unsigned samples;
	uint64_t period_ns, delay_ns, duration_ns;
	int fd_statm, fd_status, fd_io, fd_sysstat, fd_netdev, fd_disks;
	char *buf;
	long page_size;
	uint64_t last_ns;
	unsigned long long last_utime, last_stime;
	unsigned long long base_minflt, base_majflt, base_vcsw, base_ivcsw;
	unsigned long long base_read, base_written;
	struct cpu_times last_all, last_cpu[MAX_CPUS];
	unsigned long cpu_mask[MAX_CPUS / (8 * sizeof(unsigned long))];
	bool per_cpu;
	struct net nets[MAX_NETS];
	unsigned nnets;
	struct disk disks[MAX_DISKS];
	unsigned ndisks;
	int t_user, t_sys, t_rss, t_vm, t_hwm, t_minflt, t_majflt, t_vcsw, t_ivcsw, t_threads,
		t_files, t_read, t_written, t_cpu_all;
	int t_cpu_util[MAX_CPUS], t_cpu_freq[MAX_CPUS];
} tel;

/* ---- reading /proc ---- */

static int open_proc(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	return fd >= 0 ? rt_fd_adopt(fd) : -1;
}

/* The whole file into tel.buf, NUL-terminated; its length, or -1. */
static ssize_t read_proc(int fd)
{
	ssize_t n, len = 0;

	if (fd < 0)
		return -1;
	while ((n = pread(fd, tel.buf + len, BUF_SIZE - 1 - (size_t)len, len)) > 0 &&
	       len + n < BUF_SIZE - 1)
		len += n;
	if (n > 0)
		len += n;
	if (len <= 0)
		return -1;
	tel.buf[len] = '\0';
	return len;
}

/* The first `n` bytes of a file into tel.buf (a whole line at least), NUL-terminated. */
static ssize_t read_head(int fd, size_t n)
{
	ssize_t len = fd >= 0 ? pread(fd, tel.buf, n, 0) : -1;

	if (len <= 0)
		return -1;
	tel.buf[len] = '\0';
	return len;
}

/* The number after "key" (e.g. "VmRSS:") in a status-like text; 0 if absent. */
static unsigned long long field(const char *text, const char *key)
{
	const char *p = strstr(text, key);

	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

static bool cpu_line(const char *line, struct cpu_times *t)
{
	unsigned long long v[8] = { 0 };

	if (sscanf(line, "%*s %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) < 4)
		return false;
	t->total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
	t->busy = t->total - v[3] - v[4]; /* idle and iowait are not busy */
	return true;
}

static double utilization(const struct cpu_times *now, const struct cpu_times *before)
{
	unsigned long long total = now->total - before->total;

	return total ? 100.0 * (double)(now->busy - before->busy) / (double)total : 0;
}

/* ---- tracks ---- */

#define MAX_TRACKS 1024 /* as many as the process's counter table holds */

static struct {
	double value[MAX_TRACKS];
	bool written[MAX_TRACKS];
	bool force; /* write every value (the first and the last tick) */
} last;

/* A value of a track, written when it changed: counters are steps, so an unchanged value
 * says nothing new (the first and last ticks write every value). */
void rt_telemetry_put(int track, uint64_t ts, double value)
{
	if (track < 0 || track >= MAX_TRACKS)
		return;
	if (!last.force && last.written[track] && last.value[track] == value)
		return;
	last.value[track] = value;
	last.written[track] = true;
	rt_counter_value(track, ts, value);
}

static bool cpu_selected(unsigned cpu)
{
	return tel.per_cpu && cpu < MAX_CPUS &&
	       (tel.cpu_mask[cpu / (8 * sizeof(unsigned long))] >>
		(cpu % (8 * sizeof(unsigned long)))) &
		       1;
}

static void setup_nets(const char *list)
{
	char *line, *save = NULL;

	if (read_proc(tel.fd_netdev) < 0)
		return;
	for (line = strtok_r(tel.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		static const char *const names[NET_FIELDS] = {
			"bytes in",  "packets in",  "errors in",  "drops in",
			"bytes out", "packets out", "errors out", "drops out",
		};
		static const char *const units[NET_FIELDS] = { "bytes",	  "packets", "errors",
							       "packets", "bytes",   "packets",
							       "errors",  "packets" };
		char *colon = strchr(line, ':'), *name = line;
		struct net *n;

		if (!colon || tel.nnets == MAX_NETS)
			continue;
		*colon = '\0';
		while (isspace((unsigned char)*name))
			name++;
		if (*list && !sc_has_word(list, name, ", "))
			continue;
		n = &tel.nets[tel.nnets++];
		snprintf(n->name, sizeof(n->name), "%s", name);
		for (int f = 0; f < NET_FIELDS; f++) {
			char t[64];

			snprintf(t, sizeof(t), "net %s %s", n->name, names[f]);
			n->track[f] = rt_counter_track(t, units[f]);
		}
	}
	if (*list) { /* name what was asked for and is not there */
		char *copy = strdup(list), *w, *s2 = NULL;

		for (w = copy ? strtok_r(copy, ", ", &s2) : NULL; w;
		     w = strtok_r(NULL, ", ", &s2)) {
			bool found = false;

			for (unsigned i = 0; i < tel.nnets; i++)
				found = found || !strcmp(tel.nets[i].name, w);
			if (!found)
				rt_note(SC_NOTE_WARN,
					"host telemetry: network interface '%s' not found; it is not "
					"recorded",
					w);
		}
		free(copy);
	}
}

static void setup_disks(void)
{
	char *line, *save = NULL;

	if (read_proc(tel.fd_disks) < 0)
		return;
	for (line = strtok_r(tel.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[32], path[96], t[64];
		struct disk *d;

		if (sscanf(line, "%*u %*u %31s", name) != 1 || tel.ndisks == MAX_DISKS)
			continue;
		/* Whole devices only (a partition has a "partition" file), no loop/ram disks. */
		snprintf(path, sizeof(path), "/sys/class/block/%s/partition", name);
		if (!access(path, F_OK) || !strncmp(name, "loop", 4) || !strncmp(name, "ram", 3))
			continue;
		d = &tel.disks[tel.ndisks++];
		snprintf(d->name, sizeof(d->name), "%s", name);
		snprintf(t, sizeof(t), "disk %s bytes read", name);
		d->track_read = rt_counter_track(t, "bytes");
		snprintf(t, sizeof(t), "disk %s bytes written", name);
		d->track_written = rt_counter_track(t, "bytes");
	}
}

/* ---- one tick ---- */

static void sample_process(uint64_t now, bool slow)
{
	double dt = (double)(now - tel.last_ns) * 1e-9;
	unsigned long long size, resident;
	struct rusage ru;

	/* One system call for CPU times, faults, context switches and peak RSS. */
	if (!getrusage(RUSAGE_SELF, &ru)) {
		unsigned long long utime = (unsigned long long)ru.ru_utime.tv_sec * 1000000 +
					   (unsigned long long)ru.ru_utime.tv_usec;
		unsigned long long stime = (unsigned long long)ru.ru_stime.tv_sec * 1000000 +
					   (unsigned long long)ru.ru_stime.tv_usec;

		if (tel.last_ns && dt > 0) {
			rt_telemetry_put(tel.t_user, now,
					 (double)(utime - tel.last_utime) * 1e-4 / dt);
			rt_telemetry_put(tel.t_sys, now,
					 (double)(stime - tel.last_stime) * 1e-4 / dt);
		}
		if (!tel.last_ns && !tel.have_base) {
			tel.base_minflt = (unsigned long long)ru.ru_minflt;
			tel.base_majflt = (unsigned long long)ru.ru_majflt;
			tel.base_vcsw = (unsigned long long)ru.ru_nvcsw;
			tel.base_ivcsw = (unsigned long long)ru.ru_nivcsw;
		}
		tel.last_utime = utime;
		tel.last_stime = stime;
		rt_telemetry_put(tel.t_hwm, now, (double)ru.ru_maxrss * 1024);
		rt_telemetry_put(tel.t_minflt, now,
				 (double)((unsigned long long)ru.ru_minflt - tel.base_minflt));
		rt_telemetry_put(tel.t_majflt, now,
				 (double)((unsigned long long)ru.ru_majflt - tel.base_majflt));
		rt_telemetry_put(tel.t_vcsw, now,
				 (double)((unsigned long long)ru.ru_nvcsw - tel.base_vcsw));
		rt_telemetry_put(tel.t_ivcsw, now,
				 (double)((unsigned long long)ru.ru_nivcsw - tel.base_ivcsw));
	}
	if (read_proc(tel.fd_statm) > 0 && sscanf(tel.buf, "%llu %llu", &size, &resident) == 2) {
		rt_telemetry_put(tel.t_rss, now, (double)resident * (double)tel.page_size);
		rt_telemetry_put(tel.t_vm, now, (double)size * (double)tel.page_size);
	}
	if (read_proc(tel.fd_io) > 0) {
		unsigned long long r = field(tel.buf, "\nread_bytes:");
		unsigned long long w = field(tel.buf, "\nwrite_bytes:");

		if (!tel.last_ns) {
			tel.base_read = r;
			tel.base_written = w;
		}
		rt_telemetry_put(tel.t_read, now, (double)(r - tel.base_read));
		rt_telemetry_put(tel.t_written, now, (double)(w - tel.base_written));
	}
	if (slow) {
		DIR *d = opendir("/proc/self/fd");
		struct dirent *e;
		long n = 0;

		while (d && (e = readdir(d)))
			n += e->d_name[0] != '.';
		if (d) {
			closedir(d);
			rt_telemetry_put(tel.t_files, now, (double)(n - 1)); /* the listing's own */
		}
		if (read_proc(tel.fd_status) > 0)
			rt_telemetry_put(tel.t_threads, now,
					 (double)field(tel.buf, "Threads:") - 1); /* not us */
	}
}

static void sample_cpus(uint64_t now, bool first)
{
	char *line, *save = NULL;

	/* The cpu lines come first; the interrupt counts after them can be long. */
	if (read_head(tel.fd_sysstat, tel.per_cpu ? BUF_SIZE - 1 : 256) < 0)
		return;
	for (line = strtok_r(tel.buf, "\n", &save); line && !strncmp(line, "cpu", 3);
	     line = strtok_r(NULL, "\n", &save)) {
		struct cpu_times t;
		unsigned cpu;

		if (!cpu_line(line, &t))
			continue;
		if (line[3] == ' ') {
			if (!first)
				rt_telemetry_put(tel.t_cpu_all, now,
						 utilization(&t, &tel.last_all));
			tel.last_all = t;
		} else if (sscanf(line + 3, "%u", &cpu) == 1 && cpu_selected(cpu)) {
			if (!first)
				rt_telemetry_put(tel.t_cpu_util[cpu], now,
						 utilization(&t, &tel.last_cpu[cpu]));
			tel.last_cpu[cpu] = t;
		}
	}
}

static void sample_frequencies(uint64_t now)
{
	for (unsigned cpu = 0; tel.per_cpu && cpu < MAX_CPUS; cpu++) {
		char path[96];
		int fd;
		ssize_t n;
		char b[32];

		if (!cpu_selected(cpu) || tel.t_cpu_freq[cpu] < 0)
			continue;
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu%u/cpufreq/scaling_cur_freq", cpu);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			tel.t_cpu_freq[cpu] = -1; /* no cpufreq here (virtual machines) */
			continue;
		}
		n = read(fd, b, sizeof(b) - 1);
		RT_REAL(close)(fd);
		if (n > 0) {
			b[n] = '\0';
			rt_telemetry_put(tel.t_cpu_freq[cpu], now, strtod(b, NULL) / 1000.0);
		}
	}
}

static void sample_nets(uint64_t now, bool first)
{
	char *line, *save = NULL;

	if (!tel.nnets || read_proc(tel.fd_netdev) < 0)
		return;
	for (line = strtok_r(tel.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':'), *name = line;
		unsigned long long v[16] = { 0 };

		if (!colon)
			continue;
		*colon = '\0';
		while (isspace((unsigned char)*name))
			name++;
		if (sscanf(colon + 1,
			   "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
			   "%llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
			   &v[10], &v[11], &v[12], &v[13], &v[14], &v[15]) < 12)
			continue;
		for (unsigned i = 0; i < tel.nnets; i++) {
			struct net *n = &tel.nets[i];
			/* /proc/net/dev: rx bytes packets errs drop (4 more), tx bytes ... */
			const unsigned long long now_v[NET_FIELDS] = { v[0], v[1], v[2],  v[3],
								       v[8], v[9], v[10], v[11] };

			if (strcmp(n->name, name))
				continue;
			for (int f = 0; f < NET_FIELDS; f++) {
				if (first)
					n->base[f] = now_v[f];
				rt_telemetry_put(n->track[f], now, (double)(now_v[f] - n->base[f]));
			}
		}
	}
}

static void sample_disks(uint64_t now, bool first)
{
	char *line, *save = NULL;

	if (!tel.ndisks || read_proc(tel.fd_disks) < 0)
		return;
	for (line = strtok_r(tel.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long sread, swritten;
		char name[32];

		if (sscanf(line, "%*u %*u %31s %*u %*u %llu %*u %*u %*u %llu", name, &sread,
			   &swritten) != 3)
			continue;
		for (unsigned i = 0; i < tel.ndisks; i++) {
			struct disk *d = &tel.disks[i];

			if (strcmp(d->name, name))
				continue;
			if (first) {
				d->base_read = sread;
				d->base_written = swritten;
			}
			/* diskstats counts 512-byte sectors whatever the device's sector size */
			rt_telemetry_put(d->track_read, now, (double)(sread - d->base_read) * 512);
			rt_telemetry_put(d->track_written, now,
					 (double)(swritten - d->base_written) * 512);
		}
	}
}

static void tick(unsigned n, bool final)
{
	uint64_t now = rt_now_ns();
	bool first = n == 0, slow = n % SLOW_EVERY == 0 || final;

	last.force = first || final;
	if (tel.host) {
		sample_process(now, slow);
		sample_cpus(now, first);
		if (slow)
			sample_frequencies(now);
		if (slow) { /* /proc/net/dev and /proc/diskstats are long: a tenth as often */
			sample_nets(now, first);
			sample_disks(now, first);
		}
	}
	if (tel.gpu)
		rt_gpu_telemetry_tick(now, slow);
	tel.last_ns = now;
}

/* ---- the thread ---- */

#define STOP_END 1  /* the process ends: a last tick with every value */
#define STOP_EXEC 2 /* an exec: no last tick */

/* Until `deadline`, or a stop (which wakes the futex). */
static void sleep_until(uint64_t deadline)
{
	while (!atomic_load(&tel.stop)) {
		uint64_t now = rt_now_ns();
		struct timespec ts;

		if (now >= deadline)
			return;
		ts.tv_sec = (time_t)((deadline - now) / 1000000000u);
		ts.tv_nsec = (long)((deadline - now) % 1000000000u);
		syscall(SYS_futex, &tel.stop, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	}
}

static void setup_host(void);

static void *telemetry_main(void *arg)
{
	/* The first tick one period in, 20 ms at most (or after --process-delay): a process that
	 * ends sooner, a compiler's or a shell's short child, pays for a thread and nothing
	 * else. */
	uint64_t first = tel.period_ns < FIRST_TICK_MAX_NS ? tel.period_ns : FIRST_TICK_MAX_NS;
	uint64_t start = rt_now_ns() + (tel.delay_ns > first ? tel.delay_ns : first), next;
	unsigned n = 0;

	(void)arg;
	pthread_setname_np(pthread_self(), "syscope-host");
	while (!atomic_load(&tel.stop) && rt_now_ns() < start)
		sleep_until(start);
	if (atomic_load(&tel.stop))
		return NULL;
	/* Here, not at process start: loading NVML can take a while. */
	if (tel.gpu_wanted && !tel.gpu)
		tel.gpu = rt_gpu_telemetry_begin(&rt_proc.settings);
	if (tel.host && tel.need_setup)
		setup_host();
	if (!tel.host && !tel.gpu)
		return NULL;
	next = rt_now_ns();
	while (!atomic_load(&tel.stop) && rt_active()) {
		if (tel.duration_ns && next - start > tel.duration_ns)
			break;
		tick(n++, false);
		next += tel.period_ns;
		if (rt_now_ns() > next) /* fell behind: skip, do not burst */
			next = rt_now_ns() + tel.period_ns;
		while (!atomic_load(&tel.stop) && rt_now_ns() < next)
			sleep_until(next);
	}
	/* Every value at the end, from this thread, so that each track's values come in
	 * time order from one stream; not before an exec, which must not wait for it. */
	if (atomic_load(&tel.stop) != STOP_EXEC)
		tick(n, true);
	tel.samples = n + 1;
	tel.cpu_ns = rt_thread_cpu_ns();
	return NULL;
}

static void parse_cpus(const char *list)
{
	unsigned long bitmap[MAX_CPUS / (8 * sizeof(unsigned long))];

	memset(tel.cpu_mask, 0, sizeof(tel.cpu_mask));
	tel.per_cpu = false;
	if (!*list)
		return;
	tel.per_cpu = true;
	if (!strcmp(list, "all")) {
		memset(tel.cpu_mask, 0xff, sizeof(tel.cpu_mask));
		return;
	}
	if (sc_parse_id_list(list, bitmap, MAX_CPUS)) {
		rt_note(SC_NOTE_WARN,
			"host telemetry: SYSCOPE_PROCESS_CPUS '%s' is not a list of CPU ids or "
			"ranges (e.g. 0,2-5) or 'all'; per-CPU tracks are left out",
			list);
		tel.per_cpu = false;
		return;
	}
	memcpy(tel.cpu_mask, bitmap, sizeof(bitmap));
}

static bool enabled(const struct sc_settings *s)
{
	return sc_bool(s, SC_SET_USE_PROCESS_SAMPLING) || sc_bool(s, SC_SET_USE_NVML);
}

static void define_tracks(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);

	tel.t_user = rt_counter_track("CPU user time", "%");
	tel.t_sys = rt_counter_track("CPU system time", "%");
	tel.t_rss = rt_counter_track("RSS", "bytes");
	tel.t_vm = rt_counter_track("Virtual memory", "bytes");
	tel.t_hwm = rt_counter_track("Peak RSS", "bytes");
	tel.t_minflt = rt_counter_track("Minor page faults", "faults");
	tel.t_majflt = rt_counter_track("Major page faults", "faults");
	tel.t_vcsw = rt_counter_track("Voluntary context switches", "switches");
	tel.t_ivcsw = rt_counter_track("Involuntary context switches", "switches");
	tel.t_threads = rt_counter_track("Threads", "threads");
	tel.t_files = rt_counter_track("Open files", "files");
	tel.t_read = rt_counter_track("Storage bytes read", "bytes");
	tel.t_written = rt_counter_track("Storage bytes written", "bytes");
	tel.t_cpu_all = rt_counter_track("CPU utilization (all CPUs)", "%");
	for (long cpu = 0; cpu < ncpu && cpu < MAX_CPUS; cpu++) {
		char name[64];

		if (!cpu_selected((unsigned)cpu))
			continue;
		snprintf(name, sizeof(name), "CPU %ld utilization", cpu);
		tel.t_cpu_util[cpu] = rt_counter_track(name, "%");
		snprintf(name, sizeof(name), "CPU %ld frequency", cpu);
		tel.t_cpu_freq[cpu] = rt_counter_track(name, "MHz");
	}
}

static int start_thread(void)
{
	sigset_t all, old;
	int rc;

	atomic_store(&tel.stop, 0);
	sigfillset(&all);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &all, &old); /* the thread inherits: no signals */
	rc = RT_REAL(pthread_create)(&tel.thread, NULL, telemetry_main, NULL);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &old, NULL);
	tel.running = rc == 0;
	return -rc;
}

/* Open what is read and define the tracks: on the thread, before its first tick. */
static void setup_host(void)
{
	tel.fd_statm = open_proc("/proc/self/statm");
	tel.fd_status = open_proc("/proc/self/status");
	tel.fd_io = open_proc("/proc/self/io"); /* may be refused in containers */
	tel.fd_sysstat = open_proc("/proc/stat");
	tel.fd_netdev = open_proc("/proc/net/dev");
	tel.fd_disks = open_proc("/proc/diskstats");
	define_tracks();
	setup_nets(sc_str(&rt_proc.settings, SC_SET_PROCESS_INTERFACES));
	setup_disks();
	tel.need_setup = false;
}

/* Start the thread: at start and in a fork child (whose descriptors of ours were closed and
 * whose tracks go into a file of its own: set up again). */
static int begin(void)
{
	struct rusage ru;

	tel.need_setup = tel.host;
	/* The process's counts from now (one system call), not from the first reading. */
	tel.have_base = tel.host && !getrusage(RUSAGE_SELF, &ru);
	if (tel.have_base) {
		tel.base_minflt = (unsigned long long)ru.ru_minflt;
		tel.base_majflt = (unsigned long long)ru.ru_majflt;
		tel.base_vcsw = (unsigned long long)ru.ru_nvcsw;
		tel.base_ivcsw = (unsigned long long)ru.ru_nivcsw;
	}
	return start_thread();
}

static int process_start(void)
{
	const struct sc_settings *s = &rt_proc.settings;
	double duration =
		sc_is_set(s, SC_SET_PROCESS_DURATION) ? sc_double(s, SC_SET_PROCESS_DURATION) : 0;

	tel.buf = malloc(BUF_SIZE);
	if (!tel.buf)
		return -ENOMEM;
	tel.period_ns = (uint64_t)(1e9 / sc_double(s, SC_SET_PROCESS_FREQ));
	tel.delay_ns = (uint64_t)(sc_double(s, SC_SET_PROCESS_DELAY) * 1e9);
	tel.duration_ns = (uint64_t)(duration * 1e9);
	tel.page_size = sysconf(_SC_PAGESIZE);
	tel.host = sc_bool(s, SC_SET_USE_PROCESS_SAMPLING);
	tel.gpu_wanted = sc_bool(s, SC_SET_USE_NVML);
	parse_cpus(sc_str(s, SC_SET_PROCESS_CPUS));
	return begin();
}

static void stop_thread_as(int how)
{
	if (!tel.running)
		return;
	atomic_store(&tel.stop, how);
	syscall(SYS_futex, &tel.stop, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	pthread_join(tel.thread, NULL);
	tel.running = false;
}

static void stop_thread(void)
{
	stop_thread_as(STOP_END);
}

/* The thread dies with the exec: stopped now, its records reach the file with the image's
 * end. Started again if the exec fails. */
static void before_exec(void)
{
	tel.stopped_for_exec = tel.running;
	stop_thread_as(STOP_EXEC);
}

static void exec_failed(void)
{
	if (tel.stopped_for_exec)
		start_thread();
	tel.stopped_for_exec = false;
}

static void process_stop(void)
{
	uint64_t wall = rt_now_ns() - rt_proc.start_ns;

	stop_thread();
	if (tel.samples && wall)
		rt_note(SC_NOTE_INFO, "%s: %u samples, %.1f ms of CPU time (%.2f%% of one CPU)",
			!tel.gpu   ? "host telemetry"
			: tel.host ? "host and GPU telemetry"
				   : "GPU telemetry",
			tel.samples, (double)tel.cpu_ns * 1e-6,
			100.0 * (double)tel.cpu_ns / (double)wall);
	if (tel.gpu)
		rt_gpu_telemetry_end();
	tel.gpu = false;
}

static void fork_child(void)
{
	/* The thread did not survive fork: start one for the child, on its own totals. */
	tel.running = false;
	tel.last_ns = 0;
	memset(&last, 0, sizeof(last)); /* its tracks are defined anew */
	tel.nnets = tel.ndisks = 0;
	if (tel.gpu_wanted)
		rt_note(SC_NOTE_INFO, "GPU telemetry: recorded by the parent process, not by this "
				      "child of fork");
	tel.gpu_wanted = tel.gpu = false; /* the GPUs are the parent's to sample */
	if (tel.host)
		begin();
}

const struct rt_source rt_source_telemetry = {
	.name = "telemetry",
	.enabled = enabled,
	.process_start = process_start,
	.fork_child = fork_child,
	.process_stop = process_stop,
	.before_exec = before_exec,
	.exec_failed = exec_failed,
};
