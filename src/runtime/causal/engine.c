/* SPDX-License-Identifier: MIT */
/*
 * The causal-profiling engine: the scope the CLI resolved (a file of address ranges per
 * module), the per-thread delay counts, and the sample hook that inserts virtual-speedup
 * delays (Coz's method; see causal.h).
 *
 * The scope file, written by src/cmd/causal.c, has one item per line:
 *   module PATH          the ranges that follow are of this file's addresses
 *   range UNIT LO HI     [LO, HI) (hex, the file's virtual addresses) belongs to UNIT
 *   prange POINT LO HI   the same for a sampled progress point (--progress)
 *   point POINT NAME     a sampled progress point's name
 * Lines of another kind are for the reader (names of units) and skipped here.
 */
#include "causal.h"
#include "../parallel/pthread.h"

#include "../sources/source.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

struct rt_causal rt_causal = { .selected = RT_CAUSAL_NONE };

struct range {
	uintptr_t lo, hi;
	uint32_t id;
};

struct range_set {
	struct range *v;
	size_t n, cap;
};

static struct range_set units, points;
static uint32_t nunits;

/* Per thread: the delay it has paid or been credited (Coz's local delay count), its CPU
 * time at its last sample, the global count when it began to block. */
static RT_TLS uint64_t local_delay;
static RT_TLS uint64_t last_cpu, last_wall;
static RT_TLS uint64_t blocked_at;
static RT_TLS int blocked_since_sample;
/* When the thread last woke from a wait the wrappers saw (wall and its CPU time then). */
static RT_TLS uint64_t woke_wall, woke_cpu;
static RT_TLS long last_switches = -1;
static RT_TLS int paying;  /* in pay_delays: a sample meanwhile does not pay twice */
static RT_TLS bool paused; /* this sample paused (its switches are to be read again) */
/* A thread of the program (started through the wrapper, or sampled): the runtime's own
 * threads block every signal and are never delayed, nor made to catch up. */
static RT_TLS int program_thread;
/* The unit and sampled progress point of the thread's last sample (-1: none). */
static RT_TLS int64_t stack_unit = -1, stack_point = -1;
static RT_TLS int64_t last_unit = -1; /* the unit of its last sample, for its end */

/* ---- scope ---- */

static int push_range(struct range_set *s, uintptr_t lo, uintptr_t hi, uint32_t id)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		struct range *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct range){ lo, hi, id };
	return 0;
}

static int by_lo(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int64_t find(const struct range_set *s, uintptr_t pc)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) { /* the last range starting at or below pc */
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && pc < s->v[lo - 1].hi)
		return s->v[lo - 1].id;
	return -1;
}

int64_t rt_causal_unit_of(uintptr_t pc)
{
	return find(&units, pc);
}

int64_t rt_causal_point_of(uintptr_t pc)
{
	return points.n ? find(&points, pc) : -1;
}

uint32_t rt_causal_nunits(void)
{
	return nunits;
}

struct base_query {
	const char *path;
	char exe[PATH_MAX];
	uintptr_t base;
	bool found;
};

static int base_of(struct dl_phdr_info *info, size_t size, void *data)
{
	struct base_query *q = data;
	char real[PATH_MAX];
	const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : q->exe;

	(void)size;
	if (!realpath(name, real) || strcmp(real, q->path))
		return 0;
	q->base = info->dlpi_addr;
	q->found = true;
	return 1;
}

/* Where the module `path` is loaded (its load bias); false when it is not. */
static bool module_base(const char *path, uintptr_t *base)
{
	struct base_query q = { .path = path };
	ssize_t n = readlink("/proc/self/exe", q.exe, sizeof(q.exe) - 1);

	q.exe[n > 0 ? n : 0] = '\0';
	dl_iterate_phdr(base_of, &q);
	*base = q.base;
	return q.found;
}

static char *read_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap + 1);
	ssize_t n;

	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((n = read(fd, buf + len, cap - len)) > 0) {
		len += (size_t)n;
		if (len == cap) {
			char *more = realloc(buf, 2 * cap + 1);

			if (!more)
				break;
			buf = more;
			cap *= 2;
		}
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

static int load_scope(const char *path)
{
	char *text = read_file(path), *save = NULL;
	uintptr_t base = 0;
	bool loaded = false;
	unsigned missing = 0;

	if (!text) {
		rt_note(SC_NOTE_WARN, "causal: cannot read the scope file %s: %s", path,
			strerror(errno));
		return -ENOENT;
	}
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long lo, hi;
		unsigned id;

		if (!strncmp(line, "module ", 7)) {
			loaded = module_base(line + 7, &base);
			missing += !loaded;
		} else if (loaded && sscanf(line, "range %u %llx %llx", &id, &lo, &hi) == 3) {
			if (push_range(&units, base + lo, base + hi, id))
				break;
			if (id + 1 > nunits)
				nunits = id + 1;
		} else if (loaded && sscanf(line, "prange %u %llx %llx", &id, &lo, &hi) == 3) {
			if (push_range(&points, base + lo, base + hi, id))
				break;
		} else if (sscanf(line, "point %u", &id) == 1 && strchr(line + 6, ' ')) {
			rt_causal_counter(SC_CAUSAL_SAMPLED, strchr(line + 6, ' ') + 1);
		}
	}
	free(text);
	if (missing)
		rt_note(SC_NOTE_INFO,
			"causal: %u module(s) of the scope are not loaded in this "
			"process; their code is not sped up here",
			missing);
	qsort(units.v, units.n, sizeof(*units.v), by_lo);
	if (points.n)
		qsort(points.v, points.n, sizeof(*points.v), by_lo);
	return units.n ? 0 : -ENOENT;
}

/* ---- delays ---- */

/*
 * Pausing for `owed` ns. nanosleep wakes late, by tens of microseconds on a busy machine and
 * more on idle virtual CPUs, and a thread that then wakes another (a join, a signal) makes
 * the whole program late by that much, which no delay count shows: at the point where a
 * delayed thread meets the selected one (the knee of min(s, 50%) of two joined threads), the
 * program speedup came out low. So each thread asks for its owed time less what its sleeps
 * overshot lately (a moving average), and makes up a short remainder by spinning on the
 * clock, which is exact. Returns the time it actually paused.
 */
#define SPIN_MAX_NS 200000u    /* longer remainders are left for the next payment */
#define LATE_STALL_NS 1000000u /* a sleep later than this: it waited for a CPU */

static RT_TLS uint64_t oversleep_ns; /* this thread's recent nanosleep lateness, averaged */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ volatile("" ::: "memory");
#endif
}

static uint64_t pause_for(uint64_t owed)
{
	uint64_t t0 = rt_now_ns(), now = t0, ask = owed > oversleep_ns ? owed - oversleep_ns : 0;

	if (ask > SPIN_MAX_NS / 4 || owed > SPIN_MAX_NS) {
		struct timespec ts = { (time_t)(ask / 1000000000u), (long)(ask % 1000000000u) };
		uint64_t late;

		RT_REAL(nanosleep)(&ts, NULL);
		now = rt_now_ns();
		late = now - t0 > ask ? now - t0 - ask : 0;
		oversleep_ns = oversleep_ns ? (7 * oversleep_ns + late) / 8 : late;
	}
	if (now - t0 < owed && owed - (now - t0) <= SPIN_MAX_NS)
		while ((now = rt_now_ns()) - t0 < owed)
			cpu_relax();
	/* A pause that ends far later than asked waited for a CPU (a throttle), not a timer. */
	if (now - t0 > owed + LATE_STALL_NS)
		atomic_fetch_add_explicit(&rt_causal.offcpu_ns, now - t0 - owed,
					  memory_order_relaxed);
	return now - t0;
}

/* Pause until this thread has paid what it owes (nanosleep and the clock are
 * async-signal-safe). The time actually paused is what counts as paid, as in Coz. */
static bool pay_delays(void)
{
	uint64_t global = atomic_load_explicit(&rt_causal.global_delay, memory_order_relaxed);
	uint64_t floor = atomic_load_explicit(&rt_causal.experiment_delay0, memory_order_relaxed);
	uint64_t mine;

	bool slept = false;

	if (paying)
		return false;
	paying = 1;
	/* Delays of earlier experiments are forgiven (a thread blocked or not sampled since). */
	if (__atomic_load_n(&local_delay, __ATOMIC_RELAXED) < floor)
		__atomic_store_n(&local_delay, floor, __ATOMIC_RELAXED);
	mine = __atomic_load_n(&local_delay, __ATOMIC_RELAXED);
	if (mine < global) {
		__atomic_fetch_add(&local_delay, pause_for(global - mine), __ATOMIC_RELAXED);
		slept = true;
	}
	paying = 0;
	return slept;
}

void rt_causal_catch_up(void)
{
	if (program_thread && atomic_load_explicit(&rt_causal.active, memory_order_acquire) &&
	    pay_delays()) {
		/* The pause is not the code's time: the next sample counts from here. */
		blocked_since_sample = 1;
		woke_cpu = rt_thread_cpu_ns();
		woke_wall = rt_now_ns();
	}
}

void rt_causal_stack(const uint64_t *frames, int n)
{
	stack_unit = stack_point = -1;
	for (int i = 0; i < n && (stack_unit < 0 || (points.n && stack_point < 0)); i++) {
		/* A caller's frame holds its return address: the call is the byte before. */
		uintptr_t pc = (uintptr_t)frames[i] - (i ? 1 : 0);

		if (stack_unit < 0)
			stack_unit = rt_causal_unit_of(pc);
		if (points.n && stack_point < 0)
			stack_point = rt_causal_point_of(pc);
	}
}

/*
 * The time the code of a sample took: its thread's CPU time since the previous sample, or,
 * when the thread was kept off its CPU meanwhile (a loaded machine) without blocking, the
 * wall time, which is what making that code faster would save. Blocking is told by the
 * thread's voluntary context switches (getrusage, a plain system call) and by the wait
 * wrappers; after a wait the wrappers saw, the part since the thread woke counts as wall
 * time again (its CPU time before the wait as CPU time), so that a thread that blocks every
 * iteration is not charged only its CPU time on a loaded machine. The wall time is capped
 * at 64x the CPU time all the same.
 */
#define MAX_WALL_PER_CPU 64

static long voluntary_switches(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? -1 : ru.ru_nvcsw;
}

static uint64_t wall_for(uint64_t cpu, uint64_t span)
{
	if (span > MAX_WALL_PER_CPU * cpu)
		span = MAX_WALL_PER_CPU * cpu;
	return span > cpu ? span : cpu;
}

/* A span of `wall` ns in which the thread ran `cpu` ns without blocking: the rest it waited
 * for a CPU (one atomic add, only when there is some). */
static void count_offcpu(uint64_t wall, uint64_t cpu)
{
	if (wall > cpu)
		atomic_fetch_add_explicit(&rt_causal.offcpu_ns, wall - cpu, memory_order_relaxed);
}

static uint64_t sample_period(uint64_t cpu_ns)
{
	uint64_t wall = rt_now_ns(), cpu, span;
	long switches = voluntary_switches();
	bool blocked = blocked_since_sample || switches < 0 || switches != last_switches;

	last_switches = switches; /* read again after a pause (rt_causal_sample) */
	bool woke = blocked_since_sample && woke_wall > last_wall && woke_wall <= wall &&
		    woke_cpu <= cpu_ns && (!last_cpu || woke_cpu >= last_cpu);

	/* A thread's first sample covers its CPU time since it began (a new thread's clock
	 * starts at 0), up to a few periods (the first thread's counts its start-up too). */
	if (last_cpu)
		cpu = cpu_ns > last_cpu ? cpu_ns - last_cpu : rt_causal.period_ns;
	else
		cpu = cpu_ns && cpu_ns < 4 * rt_causal.period_ns ? cpu_ns : rt_causal.period_ns;
	span = last_wall && wall > last_wall ? wall - last_wall : cpu;
	blocked_since_sample = 0;
	if (woke && last_cpu) {
		uint64_t after = cpu_ns - woke_cpu, before = woke_cpu - last_cpu;

		last_cpu = cpu_ns;
		count_offcpu(wall - woke_wall, after);
		return before + wall_for(after, wall - woke_wall);
	}
	last_cpu = cpu_ns;
	if (blocked)
		return cpu;
	count_offcpu(span, cpu);
	return wall_for(cpu, span);
}

/* The selected code ran for `ns`: the delay that makes it that much faster, which this
 * thread (the one running it) has paid already. */
static void insert_delay(uint64_t ns)
{
	uint64_t d = ns * atomic_load(&rt_causal.speedup) / 100;

	atomic_fetch_add(&rt_causal.global_delay, d);
	__atomic_fetch_add(&local_delay, d, __ATOMIC_RELAXED);
	rt_causal_delay_in_flight(d);
}

static void take_sample(uint64_t cpu_ns)
{
	uint64_t period = sample_period(cpu_ns);
	int64_t selected, unit = stack_unit;

	if (stack_point >= 0)
		rt_causal_sampled_point(stack_point);
	stack_unit = stack_point = -1;
	selected = atomic_load_explicit(&rt_causal.selected, memory_order_acquire);
	if (!atomic_load_explicit(&rt_causal.active, memory_order_acquire)) {
		/* Random selection: the first sample in scope chooses the next experiment's
		 * unit. Between experiments nobody owes anything. */
		if (selected == RT_CAUSAL_CHOOSING && unit >= 0)
			atomic_compare_exchange_strong(&rt_causal.selected, &selected, unit);
		__atomic_store_n(&local_delay, atomic_load(&rt_causal.global_delay),
				 __ATOMIC_RELAXED);
		return;
	}
	last_unit = unit;
	if (selected >= 0 && unit == selected) {
		insert_delay(period);
		atomic_fetch_add(&rt_causal.selected_samples, 1);
	}
	if (pay_delays())
		paused = true;
}

void rt_causal_sample(uint64_t cpu_ns)
{
	program_thread = 1;
	paused = false;
	take_sample(cpu_ns);
	rt_causal_control_tick();
	/* After any pause: the next span and switches are the program's own (a sample that
	 * did not pause keeps the count it read, one system call fewer). */
	last_wall = rt_now_ns();
	if (paused)
		last_switches = voluntary_switches();
}

void rt_causal_pre_block(void)
{
	blocked_at = atomic_load(&rt_causal.global_delay);
	blocked_since_sample = 1;
}

/* Coz's rule: a thread another thread woke does not pay the delays inserted while it
 * waited (the thread that woke it paid them, or was the selected one). */
void rt_causal_post_block(bool woken)
{
	uint64_t now = atomic_load(&rt_causal.global_delay);

	if (woken && now > blocked_at)
		__atomic_fetch_add(&local_delay, now - blocked_at, __ATOMIC_RELAXED);
	woke_cpu = rt_thread_cpu_ns();
	woke_wall = rt_now_ns();
}

/* ---- the source ---- */

static bool enabled(const struct sc_settings *s)
{
	return sc_bool(s, SC_SET_CAUSAL);
}

static int process_start(void)
{
	const struct sc_settings *s = &rt_proc.settings;
	int rc;

	rt_causal.period_ns = (uint64_t)(1e9 / sc_double(s, SC_SET_SAMPLING_FREQ));
	if (!sc_bool(s, SC_SET_USE_SAMPLING)) {
		rt_note(SC_NOTE_WARN, "causal: sampling is off; no experiments");
		return -EINVAL;
	}
	rc = load_scope(sc_str(s, SC_SET_CAUSAL_SCOPE_FILE));
	if (rc) {
		rt_note(SC_NOTE_WARN, "causal: no code of the scope is loaded in this process; no "
				      "experiments");
		return rc;
	}
	atomic_store(&rt_causal.on, 1);
	__atomic_store_n(&__syscope_causal_on, 1, __ATOMIC_RELAXED);
	/* The lock wrappers (preloaded for causal runs) try a lock before they block only
	 * when this is on; only a lock that blocked is then credited (block.c). */
	__atomic_store_n(&__syscope_pthread_on, 1, __ATOMIC_RELAXED);
	return rt_causal_control_start();
}

static void thread_start(struct rt_thread *t)
{
	(void)t;
	/* A new thread owes nothing inserted before it existed. */
	program_thread = 1;
	__atomic_store_n(&local_delay, atomic_load(&rt_causal.global_delay), __ATOMIC_RELAXED);
}

static void thread_stop(struct rt_thread *t)
{
	(void)t;
	/* The end since its last sample, when it did not block meanwhile: a thread kept off
	 * its CPU there and ending before another sample would not be seen otherwise. */
	if (atomic_load(&rt_causal.active) && last_cpu && last_wall && !blocked_since_sample) {
		uint64_t wall = rt_now_ns(), cpu = rt_thread_cpu_ns();

		if (wall > last_wall && cpu > last_cpu)
			count_offcpu(wall - last_wall, cpu - last_cpu);
	}
	/* The time since its last sample, in the selected unit where that sample was, is not
	 * sampled: a short thread would lose half a period of its speedup every time. */
	if (atomic_load(&rt_causal.active) && last_cpu && last_unit >= 0 &&
	    last_unit == atomic_load(&rt_causal.selected)) {
		uint64_t now = rt_thread_cpu_ns(), tail = now > last_cpu ? now - last_cpu : 0;

		insert_delay(tail < 2 * rt_causal.period_ns ? tail : 2 * rt_causal.period_ns);
		last_cpu = now;
	}
	rt_causal_catch_up(); /* before the thread that joins it wakes */
}

/* A fork child records a file of its own: its experiments are its own, run by a controller
 * of its own (the parent's thread is not inherited). */
static void fork_child(void)
{
	if (!atomic_load(&rt_causal.on))
		return;
	/* The thread's clock starts again in the child; it owes nothing yet. */
	last_cpu = last_wall = 0;
	last_switches = -1;
	blocked_since_sample = 0;
	stack_unit = stack_point = last_unit = -1;
	__atomic_store_n(&local_delay, atomic_load(&rt_causal.global_delay), __ATOMIC_RELAXED);
	rt_causal_points_fork_child();
	if (rt_causal_control_fork_child()) {
		rt_note(SC_NOTE_WARN, "causal: no experiments in this fork child (pid %d)",
			(int)getpid());
		atomic_store(&rt_causal.on, 0);
		__atomic_store_n(&__syscope_causal_on, 0, __ATOMIC_RELAXED);
	}
}

static void process_stop(void)
{
	rt_causal_control_stop();
	atomic_store(&rt_causal.active, 0);
}

const struct rt_source rt_source_causal = {
	.name = "causal",
	.enabled = enabled,
	.process_start = process_start,
	.thread_start = thread_start,
	.thread_stop = thread_stop,
	.fork_child = fork_child,
	.process_stop = process_stop,
};
