/* SPDX-License-Identifier: MIT */
/*
 * The experiment controller: a thread of the runtime (all signals blocked, so never
 * sampled nor delayed) that runs one experiment after another. Each picks a unit (fixed:
 * every unit of the scope in turn; random: the next one a sample lands in), a speedup
 * (every other experiment a baseline at 0%, the others from the list), runs for the
 * experiment's duration, and writes a CAUSAL_EXPERIMENT record with the delays inserted and
 * the progress made. In end-to-end mode the whole run is one experiment, written at the end.
 */
#include "causal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SPEEDUPS 101
#define MAX_FIXED_UNITS 4096
#define MIN_VISITS 20		       /* fewer in an experiment: the next ones are longer */
#define MAX_DURATION_NS 10000000000ull /* 10 s */
#define COOLDOWN_NS 5000000ull	       /* between experiments: owed delays are forgiven */

static struct {
	pthread_t thread;
	bool running;
	atomic_int stop;
	unsigned speedups[MAX_SPEEDUPS]; /* the non-zero ones */
	unsigned nspeedups;
	uint64_t duration_ns;
	bool fixed;
	int64_t e2e_unit;
	unsigned e2e_speedup;
	uint64_t e2e_start, e2e_delay0, e2e_offcpu0;
	uint64_t e2e_points[RT_CAUSAL_MAX_POINTS];
	unsigned next_of_unit[MAX_FIXED_UNITS]; /* fixed: each unit's place in the list */
	uint64_t rng;
} ctl;

static uint64_t next_random(void)
{
	ctl.rng ^= ctl.rng << 13;
	ctl.rng ^= ctl.rng >> 7;
	ctl.rng ^= ctl.rng << 17;
	return ctl.rng;
}

static void parse_speedups(const char *list)
{
	const char *p = list;

	while (p && *p && ctl.nspeedups < MAX_SPEEDUPS) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (v > 0 && v <= 100)
			ctl.speedups[ctl.nspeedups++] = (unsigned)v;
		p = *end ? end + 1 : end;
	}
}

/* Sleep until `deadline` or until asked to stop, in steps short enough to stop quickly. */
static void sleep_until(uint64_t deadline)
{
	uint64_t now;

	while (!atomic_load(&ctl.stop) && (now = rt_now_ns()) < deadline) {
		uint64_t left = deadline - now, step = left < 10000000u ? left : 10000000u;
		struct timespec ts = { 0, (long)step };

		nanosleep(&ts, NULL);
	}
}

/*
 * Run the experiment until `deadline`: every millisecond while the program has latency
 * points, the number in flight of each is added to in_flight[] (*nsamples samples), for
 * Little's law (the mean number in flight over the arrival rate is the mean latency).
 */
static void experiment_until(uint64_t deadline, uint64_t *in_flight, uint64_t *nsamples)
{
	uint64_t now;
	bool latency = rt_causal_add_in_flight(in_flight, RT_CAUSAL_MAX_POINTS);

	*nsamples = 1;
	while (!atomic_load(&ctl.stop) && (now = rt_now_ns()) < deadline) {
		uint64_t left = deadline - now, most = latency ? 1000000u : 10000000u;
		struct timespec ts = { 0, (long)(left < most ? left : most) };

		nanosleep(&ts, NULL);
		if (latency && rt_causal_add_in_flight(in_flight, RT_CAUSAL_MAX_POINTS))
			++*nsamples;
	}
}

/*
 * A latency point's mean number in flight over the experiment's virtual time, x 1000: its
 * area (the wall-time mean x the wall time) less what the delays took out of it (each delay
 * x the number in flight when it was inserted), over the wall time less the delays.
 */
static uint64_t in_flight_milli(uint64_t sum, uint64_t nsamples, uint64_t delayed, uint64_t wall,
				uint64_t delay)
{
	double area = nsamples ? (double)sum / (double)nsamples * (double)wall : 0;

	area -= (double)delayed;
	if (area <= 0 || wall <= delay)
		return 0;
	return (uint64_t)(area / (double)(wall - delay) * 1000.0);
}

static void write_experiment(int64_t unit, unsigned speedup, uint64_t start, uint64_t end,
			     uint64_t delay, uint64_t samples, const uint64_t *before,
			     const uint64_t *after, const uint64_t *in_flight, uint64_t nsamples,
			     const uint64_t *delayed, unsigned n, uint64_t offcpu, uint16_t flags)
{
	struct {
		struct sc_rec_causal_experiment e;
		struct sc_causal_delta d[RT_CAUSAL_MAX_POINTS];
		uint64_t offcpu; /* room for it after the last delta */
	} r;

	memset(&r, 0, sizeof(r));
	r.e.ts = start;
	r.e.end_ns = end;
	r.e.delay_ns = delay;
	r.e.selected_samples = samples;
	r.e.unit = (uint32_t)unit;
	r.e.speedup = (uint16_t)speedup;
	r.e.npoints = (uint16_t)n;
	for (unsigned i = 0; i < n; i++) {
		uint64_t milli = in_flight ? in_flight_milli(in_flight[i], nsamples, delayed[i],
							     end - start, delay)
					   : 0;

		r.d[i].point = i;
		r.d[i].delta = after[i] - before[i];
		r.d[i].in_flight_milli = milli > UINT32_MAX ? UINT32_MAX : (uint32_t)milli;
	}
	memcpy(&r.d[n], &offcpu, sizeof(offcpu)); /* format.h: after the deltas */
	rt_record(SC_REC_CAUSAL_EXPERIMENT, flags, &r.e.ts, sizeof(r.e) - sizeof(r.e.hdr), r.d,
		  (uint32_t)(n * sizeof(r.d[0]) + sizeof(offcpu)));
}

/* The next experiment's unit: -1 when the controller was stopped first. */
static int64_t choose_unit(unsigned experiment)
{
	int64_t unit = RT_CAUSAL_CHOOSING;

	if (ctl.fixed) {
		unit = (int64_t)((experiment / 2) % rt_causal_nunits());
		atomic_store(&rt_causal.selected, unit);
		return unit;
	}
	/* A baseline keeps the unit of the experiment it pairs with. */
	if (experiment & 1)
		return atomic_load(&rt_causal.selected);
	atomic_store(&rt_causal.selected, RT_CAUSAL_CHOOSING);
	while (!atomic_load(&ctl.stop) &&
	       (unit = atomic_load(&rt_causal.selected)) == RT_CAUSAL_CHOOSING) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	return atomic_load(&ctl.stop) ? -1 : unit;
}

static unsigned choose_speedup(int64_t unit, unsigned experiment)
{
	if (experiment & 1 || !ctl.nspeedups)
		return 0; /* the baseline of the pair */
	if (ctl.fixed && unit < MAX_FIXED_UNITS)
		return ctl.speedups[ctl.next_of_unit[unit]++ % ctl.nspeedups];
	return ctl.speedups[next_random() % ctl.nspeedups];
}

/* The experiment running: what its record needs from its beginning (one at a time: the
 * controller thread's, or in a fork child the sample that holds `tick.busy`). */
static struct {
	int64_t unit;
	unsigned speedup, n;
	uint64_t start, deadline, delay0, offcpu0, nsamples;
	uint64_t before[RT_CAUSAL_MAX_POINTS], after[RT_CAUSAL_MAX_POINTS];
	uint64_t in_flight[RT_CAUSAL_MAX_POINTS], delayed0[RT_CAUSAL_MAX_POINTS],
		delayed[RT_CAUSAL_MAX_POINTS];
} cur;

static void begin_experiment(int64_t unit, unsigned experiment, uint64_t duration)
{
	cur.unit = unit;
	cur.speedup = choose_speedup(unit, experiment);
	atomic_store(&rt_causal.speedup, cur.speedup);
	atomic_store(&rt_causal.selected_samples, 0);
	cur.n = rt_causal_read_points(cur.before, RT_CAUSAL_MAX_POINTS);
	cur.delay0 = atomic_load(&rt_causal.global_delay);
	cur.offcpu0 = atomic_load(&rt_causal.offcpu_ns);
	cur.start = rt_now_ns();
	cur.deadline = cur.start + duration;
	memset(cur.in_flight, 0, sizeof(cur.in_flight));
	cur.nsamples = 0;
	rt_causal_read_delayed(cur.delayed0, RT_CAUSAL_MAX_POINTS);
	atomic_store(&rt_causal.experiment_delay0, cur.delay0);
	atomic_store(&rt_causal.active, 1);
}

/* The running experiment's record (it has ended), and the next one's duration. */
static void end_experiment(uint64_t *duration)
{
	uint64_t visits = 0;
	unsigned n = cur.n;

	n = rt_causal_read_points(cur.after, n);
	rt_causal_read_delayed(cur.delayed, RT_CAUSAL_MAX_POINTS);
	for (unsigned i = 0; i < n; i++)
		cur.delayed[i] -= cur.delayed0[i];
	for (unsigned i = 0; i < n; i++)
		visits += cur.after[i] - cur.before[i];
	write_experiment(cur.unit, cur.speedup, cur.start, rt_now_ns(),
			 atomic_load(&rt_causal.global_delay) - cur.delay0,
			 atomic_load(&rt_causal.selected_samples), cur.before, cur.after,
			 cur.in_flight, cur.nsamples ? cur.nsamples : 1, cur.delayed, n,
			 atomic_load(&rt_causal.offcpu_ns) - cur.offcpu0, 0);
	/* Long enough for MIN_VISITS, and back to shorter ones (more of them, each paired
	 * with its baselines more closely in time) when the program is faster again. */
	if (visits < MIN_VISITS && *duration < MAX_DURATION_NS)
		*duration *= 2;
	else if (visits > 4 * MIN_VISITS && *duration / 2 >= ctl.duration_ns)
		*duration /= 2;
}

static void run_experiment(unsigned experiment, uint64_t *duration)
{
	int64_t unit = choose_unit(experiment);

	if (unit < 0)
		return;
	begin_experiment(unit, experiment, *duration);
	experiment_until(cur.deadline, cur.in_flight, &cur.nsamples);
	atomic_store(&rt_causal.active, 0);
	if (atomic_load(&ctl.stop))
		return; /* cut short by the end of the program: not a whole experiment */
	end_experiment(duration);
}

static void *controller(void *arg)
{
	uint64_t duration = ctl.duration_ns;

	(void)arg;
	pthread_setname_np(pthread_self(), "syscope-causal");
	for (unsigned experiment = 0; !atomic_load(&ctl.stop) && rt_active(); experiment++) {
		run_experiment(experiment, &duration);
		sleep_until(rt_now_ns() + COOLDOWN_NS);
	}
	return NULL;
}

/*
 * A fork child starts no thread of ours: many children exec at once or never run the code
 * in scope. Its experiments are run by its own threads' samples instead (each sample of a
 * program thread is a tick, from the handler): the tick that finds the experiment's time
 * up ends it and writes its record, the next one after the pause begins another. Samples
 * come every millisecond of a running thread's CPU time, so an experiment ends within about
 * that of its deadline; a child that does not run makes none. Everything here is
 * async-signal-safe; one tick at a time (a flag the others do not wait for).
 */
static struct {
	atomic_int on, busy;
	bool running;
	unsigned experiment;
	uint64_t duration, next_start;
} tick;

void rt_causal_control_tick(void)
{
	uint64_t now;

	if (!atomic_load_explicit(&tick.on, memory_order_relaxed) ||
	    atomic_exchange_explicit(&tick.busy, 1, memory_order_acquire))
		return;
	now = rt_now_ns();
	if (tick.running) {
		if (rt_causal_add_in_flight(cur.in_flight, RT_CAUSAL_MAX_POINTS))
			cur.nsamples++;
		if (now >= cur.deadline) {
			atomic_store(&rt_causal.active, 0);
			end_experiment(&tick.duration);
			tick.running = false;
			tick.experiment++;
			tick.next_start = rt_now_ns() + COOLDOWN_NS;
			/* Random selection: the samples of the pause choose the next unit. */
			if (!ctl.fixed && !(tick.experiment & 1))
				atomic_store(&rt_causal.selected, RT_CAUSAL_CHOOSING);
		}
	} else if (now >= tick.next_start && rt_active()) {
		int64_t unit = ctl.fixed ? (int64_t)((tick.experiment / 2) % rt_causal_nunits())
					 : atomic_load(&rt_causal.selected);

		if (unit >= 0) {
			if (ctl.fixed)
				atomic_store(&rt_causal.selected, unit);
			begin_experiment(unit, tick.experiment, tick.duration);
			tick.running = true;
		}
	}
	atomic_store_explicit(&tick.busy, 0, memory_order_release);
}

/* The whole run (of this process) as one experiment, from now; process_stop writes it. */
static void start_end_to_end(void)
{
	atomic_store(&rt_causal.selected, ctl.e2e_unit);
	atomic_store(&rt_causal.speedup, ctl.e2e_speedup);
	ctl.e2e_start = rt_now_ns();
	ctl.e2e_delay0 = atomic_load(&rt_causal.global_delay);
	ctl.e2e_offcpu0 = atomic_load(&rt_causal.offcpu_ns);
	atomic_store(&rt_causal.experiment_delay0, ctl.e2e_delay0);
	rt_causal_read_points(ctl.e2e_points, RT_CAUSAL_MAX_POINTS);
	atomic_store(&rt_causal.active, 1);
}

static int start_controller(void)
{
	sigset_t all, old;
	int rc;

	if (ctl.e2e_unit >= 0) {
		start_end_to_end();
		return 0;
	}
	sigfillset(&all);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &all, &old); /* the thread inherits: no signals */
	rc = RT_REAL(pthread_create)(&ctl.thread, NULL, controller, NULL);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &old, NULL);
	ctl.running = rc == 0;
	if (rc)
		rt_note(SC_NOTE_WARN, "causal: cannot start the experiment thread: %s",
			strerror(rc));
	return -rc;
}

int rt_causal_control_start(void)
{
	const struct sc_settings *s = &rt_proc.settings;

	parse_speedups(sc_str(s, SC_SET_CAUSAL_SPEEDUPS));
	ctl.duration_ns = (uint64_t)(sc_double(s, SC_SET_CAUSAL_DURATION) * 1e9);
	ctl.fixed = !strcmp(sc_str(s, SC_SET_CAUSAL_SELECTION), "fixed");
	ctl.e2e_unit = sc_int(s, SC_SET_CAUSAL_E2E_UNIT);
	ctl.e2e_speedup = (unsigned)sc_int(s, SC_SET_CAUSAL_E2E_SPEEDUP);
	ctl.rng = rt_now_ns() | 1;
	return start_controller();
}

/* A fork child (its only thread is the one that forked): its own experiments, from the
 * first unit of the list again, in its own file; the parent's controller is not here. */
int rt_causal_control_fork_child(void)
{
	ctl.running = false;
	atomic_store(&ctl.stop, 0);
	atomic_store(&rt_causal.active, 0);
	memset(ctl.next_of_unit, 0, sizeof(ctl.next_of_unit));
	ctl.rng = (rt_now_ns() ^ ((uint64_t)getpid() << 32)) | 1;
	if (ctl.e2e_unit >= 0) {
		atomic_store(&tick.on, 0);
		return start_controller();
	}
	/* Its experiments come from its samples (rt_causal_control_tick), the first one now. */
	tick.running = false;
	tick.experiment = 0;
	tick.duration = ctl.duration_ns;
	tick.next_start = 0;
	atomic_store(&tick.busy, 0);
	atomic_store(&rt_causal.selected, ctl.fixed ? RT_CAUSAL_NONE : RT_CAUSAL_CHOOSING);
	atomic_store(&tick.on, 1);
	return 0;
}

void rt_causal_control_stop(void)
{
	if (atomic_exchange(&tick.on, 0)) {
		/* A running one is cut short: not a whole experiment. A tick in progress on
		 * another thread finishes what it began. */
		atomic_store(&rt_causal.active, 0);
	}
	if (ctl.e2e_unit >= 0 && atomic_load(&rt_causal.active)) {
		uint64_t after[RT_CAUSAL_MAX_POINTS];
		unsigned n = rt_causal_read_points(after, RT_CAUSAL_MAX_POINTS);

		atomic_store(&rt_causal.active, 0);
		write_experiment(ctl.e2e_unit, ctl.e2e_speedup, ctl.e2e_start, rt_now_ns(),
				 atomic_load(&rt_causal.global_delay) - ctl.e2e_delay0,
				 atomic_load(&rt_causal.selected_samples), ctl.e2e_points, after,
				 NULL, 0, NULL, n,
				 atomic_load(&rt_causal.offcpu_ns) - ctl.e2e_offcpu0,
				 SC_CAUSAL_END_TO_END);
	}
	if (ctl.running) {
		struct timespec deadline;

		atomic_store(&ctl.stop, 1);
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += 1;
		pthread_timedjoin_np(ctl.thread, NULL, &deadline);
		ctl.running = false;
	}
}
