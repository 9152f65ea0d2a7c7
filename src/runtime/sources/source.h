/* SPDX-License-Identifier: MIT */
/*
 * Data sources of the runtime. A source is one descriptor in the table of sources.c; the
 * lifecycle code calls every enabled source at the same points, and hooks a source leaves
 * NULL are filled with no-ops at registration, so dispatch never tests for NULL.
 *
 * Hooks run in normal context (never in a signal handler), on the thread named:
 *   process_start  constructor, main thread; return 0 or a negative errno (source stays off)
 *   thread_start   the new thread itself, before its start routine
 *   thread_stop    the exiting thread itself
 *   fork_child     the child's only thread, after the recorder was reopened
 *   process_stop   the thread finalizing the process (exit, _exit)
 *   before_exec    the thread calling exec, before the image's end is set: the other
 *                  threads die with the exec, so a thread of the source stops here
 *   exec_failed    the same thread, when exec returned (the image goes on)
 */
#ifndef SYSCOPE_RUNTIME_SOURCE_H
#define SYSCOPE_RUNTIME_SOURCE_H

#include "../rt.h"

struct rt_source {
	const char *name;
	bool (*enabled)(const struct sc_settings *s);
	int (*process_start)(void);
	void (*thread_start)(struct rt_thread *t);
	void (*thread_stop)(struct rt_thread *t);
	void (*fork_child)(void);
	void (*process_stop)(void);
	void (*before_exec)(void);
	void (*exec_failed)(void);
};

extern const struct rt_source rt_source_sampling;
extern const struct rt_source rt_source_telemetry;
extern const struct rt_source rt_source_counters;
extern const struct rt_source rt_source_compiler_hooks;
extern const struct rt_source rt_source_python;
extern const struct rt_source rt_source_openmp;
extern const struct rt_source rt_source_causal;

void rt_sources_process_start(void);
void rt_sources_thread_start(struct rt_thread *t);
void rt_sources_thread_stop(struct rt_thread *t);
void rt_sources_fork_child(void);
void rt_sources_process_stop(void);
void rt_sources_before_exec(void);
void rt_sources_exec_failed(void);

/* sampling.c: record the stack of a crash (called by the fatal-signal recorder). */
void rt_sampling_record_crash(void *ucontext);
/* sampling.c: around exec, the calling thread's samplers pause and their pending signals
 * are taken (one left pending would kill the new program); resumed if exec fails. */
void rt_sampling_before_exec(void);
void rt_sampling_exec_failed(void);
/* sampling.c: the image ends, new samples stopped by the caller (rt_proc.paused, stopping):
 * the samples other threads are recording finish (bounded: 100 ms), so that the last flush
 * has them. Async-signal-safe. */
void rt_sampling_quiesce(void);
/* sampling.c: the program installed a handler on sampler signal `sig` (signals.c). */
void rt_sampling_signal_taken(int sig);

/* sampling.c, for syscope attach (attach.c): arm a CPU-time sampler on another thread of
 * the process (its descriptor into *fd; 0 or a negative errno), and disable an adopted
 * thread's. */
int rt_sampling_arm_tid(pid_t tid, int *fd);
void rt_sampling_disarm_adopted(struct rt_thread *t);
/* attach, in a fork child: its one thread (registered already) armed by itself. */
void rt_sampling_arm_forked(struct rt_thread *t);
/* attach: the --cpu-events group of thread `tid`, opened from another thread (counting only,
 * no signal); descriptors and event numbers into fds/events, how many returned. */
unsigned rt_counters_open_for(pid_t tid, int *fds, uint8_t *events);

/* counters.c: after a sample, write what the thread's CPU counters counted since its last
 * read (async-signal-safe; nothing when it has none). */
void rt_counters_read(struct rt_thread *t, uint64_t ts);
/* The same at a region boundary (user regions, instrumented functions), when asked for. */
void rt_counters_read_region(uint64_t ts);

/* An instrumented function's entry or exit (SC_REC_FUNC_ENTER/EXIT) at `ts`, for compiler
 * hooks and binary patching alike. Async-signal-safe. The record is written in place:
 * rt_record's copy (a libc memmove call for 16 bytes) was a third of the cost of a call. */
static inline void rt_func_record_flags(uint16_t type, uint16_t flags, uint64_t addr, uint64_t ts)
{
	struct sc_rec_func *r = rt_reserve(sizeof(*r));

	if (!r)
		return;
	r->ts = ts;
	r->addr = addr;
	rt_commit(r, type, flags, sizeof(*r));
	rt_counters_read_region(ts); /* only with --cpu-events */
}

static inline void rt_func_record(uint16_t type, uint64_t addr, uint64_t ts)
{
	rt_func_record_flags(type, 0, addr, ts);
}

/* func_table.c: throttling (see func_table.h). */
bool rt_func_count_call(uint32_t id, uint16_t flags, uint64_t ns);
extern bool rt_func_throttle_native, rt_func_throttle_python;

/* An instrumented call entered at `ts`: nothing is written (its FUNC_CALL comes when it
 * returns), but CPU counters read at region boundaries are read now. */
static inline void rt_func_entered(uint64_t ts)
{
	rt_counters_read_region(ts); /* only with --cpu-events */
}

/*
 * The whole call of function `id` (rt_func_id; with SC_FUNC_PYTHON a code id) at `addr`,
 * from `start` to `end`: one FUNC_CALL record, or, when the call does not fit one (no id,
 * 4.29 s or longer), the FUNC_ENTER/EXIT pair. A throttled function's call is only
 * counted. Async-signal-safe; written in place like rt_func_record_flags.
 */
static inline void rt_func_call_record(uint16_t flags, uint32_t id, uint64_t addr, uint64_t start,
				       uint64_t end)
{
	uint64_t dur = end > start ? end - start : 0;
	struct sc_rec_func_call *r;

	if (!(flags & SC_FUNC_OPEN)) {
		rt_counters_read_region(end);
		if ((flags & SC_FUNC_PYTHON ? rt_func_throttle_python : rt_func_throttle_native) &&
		    id != UINT32_MAX && rt_func_count_call(id, flags, dur))
			return;
	}
	if (id == UINT32_MAX || dur > UINT32_MAX) {
		rt_func_record_flags(SC_REC_FUNC_ENTER, flags & ~SC_FUNC_OPEN, addr, start);
		if (!(flags & SC_FUNC_OPEN)) /* an open one is closed by the reader at the end */
			rt_func_record_flags(SC_REC_FUNC_EXIT, flags, addr, end);
		return;
	}
	r = rt_reserve(sizeof(*r));
	if (!r)
		return;
	r->start = start;
	r->dur_ns = (uint32_t)dur;
	r->id = id;
	rt_commit(r, SC_REC_FUNC_CALL, flags, sizeof(*r));
}

/* unwind.c: fill `frames` from the signal context; returns the count, sets SC_SAMPLE_* flags.
 * Async-signal-safe; the walk is the backend rt_unwind_init chose (SAMPLING_UNWINDER, then
 * the fallbacks of unwind.c's table). */
int rt_unwind(void *ucontext, struct rt_thread *t, uint64_t *frames, int max, uint16_t *flags);
void rt_unwind_init(void);
/* attach's detach, once no sample can come: the backend's resources given back (libunwind
 * unloaded with its address-validation pipe); frame pointers until the next init. */
void rt_unwind_release(void);

#endif /* SYSCOPE_RUNTIME_SOURCE_H */
