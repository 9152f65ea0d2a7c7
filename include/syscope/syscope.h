/* SPDX-License-Identifier: MIT */
/*
 * syscope's user API: name regions of your code, mark instants and record counters, so that
 * they appear on syscope's timeline (rocpd, Perfetto) next to the samples.
 *
 * The functions live in libsyscope.so, which `syscope` preloads; nothing needs linking. To
 * keep a program working when it runs without syscope, declare them weak (define
 * SYSCOPE_WEAK before including this header) and call them only when they resolve:
 *
 *   #define SYSCOPE_WEAK
 *   #include <syscope/syscope.h>
 *   ...
 *   if (syscope_region_begin) syscope_region_begin("load input");
 *
 * All of them are cheap (about 55-90 ns a region), thread-safe, and record nothing when the
 * program runs without syscope or outside a sampling window. Strings are copied; they need
 * not outlive the call. Regions nest per thread: syscope_region_end closes the thread's most
 * recently opened region.
 */
#ifndef SYSCOPE_SYSCOPE_H
#define SYSCOPE_SYSCOPE_H

#ifdef __cplusplus
extern "C" {
#endif

#ifdef SYSCOPE_WEAK
#define SYSCOPE_API __attribute__((weak))
#else
#define SYSCOPE_API
#endif

enum syscope_arg_type {
	SYSCOPE_ARG_INT,
	SYSCOPE_ARG_UINT,
	SYSCOPE_ARG_DOUBLE,
	SYSCOPE_ARG_STRING,
	SYSCOPE_ARG_POINTER,
};

/* A typed argument of a region or mark, shown with it on the timeline. */
struct syscope_arg {
	const char *name;
	enum syscope_arg_type type;
	union {
		long long i;
		unsigned long long u;
		double d;
		const char *s;
		const void *p;
	} value;
};

/* Open a region named `name` on the calling thread (category "user"). */
SYSCOPE_API void syscope_region_begin(const char *name);
/* The same with a category of your choice and `nargs` arguments (args may be NULL if 0). */
SYSCOPE_API void syscope_region_begin_args(const char *category, const char *name,
					   const struct syscope_arg *args, unsigned nargs);
/* Close the calling thread's innermost open region. */
SYSCOPE_API void syscope_region_end(void);
/* An instant event. */
SYSCOPE_API void syscope_mark(const char *name);
SYSCOPE_API void syscope_mark_args(const char *category, const char *name,
				   const struct syscope_arg *args, unsigned nargs);
/* A value of a process-wide counter (a line on the timeline), e.g. ("queue depth", "items"). */
SYSCOPE_API void syscope_counter(const char *name, const char *unit, double value);
/* Stop recording what the program does (samples, new regions, marks, counters, GPU activity)
 * until syscope_resume(), to profile only the part of a run that matters; pairs nest. The
 * timeline shows "recording paused" and "recording resumed" marks; host and GPU telemetry
 * go on. */
SYSCOPE_API void syscope_pause(void);
SYSCOPE_API void syscope_resume(void);
/* A progress point: one unit of work done (a request served, a batch finished), a mark of
 * category "progress" named `name`; throughput is their count over time. */
SYSCOPE_API void syscope_progress(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* SYSCOPE_SYSCOPE_H */
