/* SPDX-License-Identifier: MIT */
/*
 * The runtime's one clock (docs/architecture.md, principle 4): nanoseconds of
 * CLOCK_MONOTONIC, and thread identity. All async-signal-safe.
 *
 * clock_gettime costs 27-40 ns on our machines (a vDSO call, a sequence lock, a fenced
 * rdtsc, a conversion): as much as everything else an instrumented call records. With an
 * invariant TSC, a timestamp is one rdtsc and one multiply on a piecewise-linear mapping
 * that is steered onto CLOCK_MONOTONIC:
 *
 *   ns = seg.ns + (tsc - seg.tsc) * seg.mult >> 32
 *
 * Every 100 ms, the first caller past the segment's end reads both clocks, measures the
 * TSC's rate over the last period, and starts the next segment where the current one ends
 * (timestamps never jump back) with a slope that also closes the distance to
 * CLOCK_MONOTONIC by the end of the next period. The two clocks stay within the jitter of
 * reading them (tens of ns). Conversion happens here, at write time, so every record of the
 * file is in nanoseconds whichever clock took it.
 *
 * Segments live in a ring; a reader takes the current one by generation and checks after
 * reading it that the writer has not come round to its slot. Nobody waits: a caller that
 * finds the steering taken (by another thread, or by the code it interrupted) goes on with
 * the current segment, extended. clock_gettime serves before the first segment (the first
 * 2 ms) and when the TSC reads behind the segment's start.
 */
#include "rt.h"

#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PERIOD_NS 100000000ull	   /* steering period */
#define FIRST_PERIOD_NS 2000000ull /* the first rate is measured over 2 ms */
#define FORWARD_JUMP_NS 1000000ull /* behind CLOCK_MONOTONIC by more: jump (paused VM) */

struct rt_clock rt_clk;
#define clk rt_clk

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Both clocks at one instant: of three readings, the one with the narrowest TSC bracket. */
static void read_both(uint64_t *tsc, uint64_t *ns)
{
	uint64_t narrowest = UINT64_MAX;

	for (int i = 0; i < 3; i++) {
		uint64_t t1 = arch_cycles(), n = monotonic_ns(), t2 = arch_cycles();

		if (t2 - t1 < narrowest) {
			narrowest = t2 - t1;
			*tsc = t1 + (t2 - t1) / 2;
			*ns = n;
		}
	}
}

static void steer(void)
{
	uint64_t t, n, rate, start_ns, period_ticks, mult, target;
	unsigned gen;
	struct rt_clock_segment *next;

	if (atomic_exchange_explicit(&clk.steering, 1, memory_order_acquire))
		return;
	gen = atomic_load_explicit(&clk.gen, memory_order_relaxed);
	read_both(&t, &n);
	if (t <= clk.anchor_tsc || n <= clk.anchor_ns) {
		/* The TSC went back (a migrated VM): measure again from here. */
		clk.anchor_tsc = t;
		clk.anchor_ns = n;
		goto out;
	}
	if (n - clk.anchor_ns < FIRST_PERIOD_NS)
		goto out; /* too short to measure a rate */
	rate = (uint64_t)(((unsigned __int128)(n - clk.anchor_ns) << 32) / (t - clk.anchor_tsc));
	if (!rate)
		goto out;
	start_ns = n;
	if (gen) {
		const struct rt_clock_segment *cur = &clk.ring[gen % RT_CLOCK_RING];

		start_ns = rt_clock_map(cur->tsc, cur->ns, cur->mult, t);
		if (start_ns + FORWARD_JUMP_NS < n)
			start_ns = n;
	}
	period_ticks = (uint64_t)(((unsigned __int128)PERIOD_NS << 32) / rate);
	target = n + PERIOD_NS;
	mult = target > start_ns
		       ? (uint64_t)(((unsigned __int128)(target - start_ns) << 32) / period_ticks)
		       : rate / 2;
	if (mult < rate / 2)
		mult = rate / 2;
	if (mult > rate * 2)
		mult = rate * 2;
	next = &clk.ring[(gen + 1) % RT_CLOCK_RING];
	next->tsc = t;
	next->ns = start_ns;
	next->mult = mult;
	next->end_tsc = t + period_ticks;
	atomic_store_explicit(&clk.gen, gen + 1, memory_order_release);
	clk.anchor_tsc = t;
	clk.anchor_ns = n;
out:
	atomic_store_explicit(&clk.steering, 0, memory_order_release);
}

/* Past the current segment's end, or no segment yet (rt.h has the common case). */
uint64_t rt_now_ns_slow(void)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		unsigned gen = atomic_load_explicit(&clk.gen, memory_order_acquire);
		const struct rt_clock_segment *s = &clk.ring[gen % RT_CLOCK_RING];
		uint64_t seg_tsc, seg_ns, mult, span, t;

		if (!gen)
			break;
		seg_tsc = __atomic_load_n(&s->tsc, __ATOMIC_RELAXED);
		seg_ns = __atomic_load_n(&s->ns, __ATOMIC_RELAXED);
		mult = __atomic_load_n(&s->mult, __ATOMIC_RELAXED);
		span = __atomic_load_n(&s->end_tsc, __ATOMIC_RELAXED) - seg_tsc;
		t = arch_cycles();
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&clk.gen, memory_order_relaxed) - gen >= RT_CLOCK_RING - 2)
			continue; /* the slot may have been rewritten while we read it */
		if (t - seg_tsc < span)
			return rt_clock_map(seg_tsc, seg_ns, mult, t);
		if ((int64_t)(t - seg_tsc) < 0)
			break; /* the TSC is behind the segment: another CPU's, or it went back */
		steer();
		if (attempt == 0 && atomic_load_explicit(&clk.gen, memory_order_acquire) != gen)
			continue; /* a new segment: take it with a fresh reading */
		/* Somebody else is steering: the segment extended, still continuous (its error
		 * grows by the rate's, a few tenths of a µs per second). */
		return rt_clock_map(seg_tsc, seg_ns, mult, t);
	}
	if (!clk.on)
		return monotonic_ns();
	{
		uint64_t n = monotonic_ns();

		if (n - clk.anchor_ns >= FIRST_PERIOD_NS)
			steer();
		return n;
	}
}

void rt_clock_init(const struct sc_settings *s)
{
	const char *choice = sc_str(s, SC_SET_CLOCK);

	clk.on = false;
	if (!strcmp(choice, "monotonic"))
		return;
	if (!arch_cycles_invariant())
		return; /* lifecycle.c says so, once recording, when --clock tsc asked for it */
	read_both(&clk.anchor_tsc, &clk.anchor_ns);
	clk.on = true;
}

/* The child has one thread: whoever was steering in the parent is not here. */
void rt_clock_fork_child(void)
{
	atomic_store(&clk.steering, 0);
}

bool rt_clock_uses_tsc(void)
{
	return clk.on;
}

uint64_t rt_thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

pid_t rt_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}
