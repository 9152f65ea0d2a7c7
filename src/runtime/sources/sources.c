/* SPDX-License-Identifier: MIT */
/* The table of runtime sources and the dispatch of lifecycle hooks to them. */
#include "source.h"

#include "../func_table.h"
#include "../parallel/pthread.h"
#include "../patch/patch.h"
#include "../python/capi.h"

#ifndef SYSCOPE_HAVE_PATCHING
/* A build without patching, given a plan (`syscope instrument`): said, not silently unused. */
static int say_no_patching(void)
{
	if (sc_str(&rt_proc.settings, SC_SET_INSTRUMENT_PLAN)[0])
		rt_note(SC_NOTE_WARN, "instrument: this build of syscope has no binary "
				      "instrumentation (not x86-64, or configured with "
				      "-DSYSCOPE_PATCHING=OFF): no function is patched");
	return 0;
}

const struct rt_source rt_source_patching = {
	.name = "binary instrumentation (not built)",
	.process_start = say_no_patching,
};
#endif

static const struct rt_source *const table[] = {
	&rt_source_patching, /* first: patching wants the process to have one thread */
	&rt_source_counters, /* before sampling: a thread's first sample finds them open */
	&rt_source_python,   /* notes of what samples found; the fork child's code table */
	&rt_source_sampling,   &rt_source_telemetry, &rt_source_compiler_hooks,
	&rt_source_python_api, /* after python: the child's code table is reset first */
	&rt_source_pthread,    &rt_source_openmp,    &rt_source_func_table,
	&rt_source_causal,
};

#define NSOURCES (sizeof(table) / sizeof(table[0]))

static struct rt_source active[NSOURCES];
static unsigned nactive;

static bool no_enabled(const struct sc_settings *s)
{
	(void)s;
	return true;
}
static int no_process_start(void)
{
	return 0;
}
static void no_thread(struct rt_thread *t)
{
	(void)t;
}
static void no_void(void)
{
}

void rt_sources_process_start(void)
{
	nactive = 0;
	for (unsigned i = 0; i < NSOURCES; i++) {
		struct rt_source s = *table[i];

		s.enabled = s.enabled ? s.enabled : no_enabled;
		s.process_start = s.process_start ? s.process_start : no_process_start;
		s.thread_start = s.thread_start ? s.thread_start : no_thread;
		s.thread_stop = s.thread_stop ? s.thread_stop : no_thread;
		s.fork_child = s.fork_child ? s.fork_child : no_void;
		s.process_stop = s.process_stop ? s.process_stop : no_void;
		s.before_exec = s.before_exec ? s.before_exec : no_void;
		s.exec_failed = s.exec_failed ? s.exec_failed : no_void;
		if (!s.enabled(&rt_proc.settings))
			continue;
		if (s.process_start()) {
			rt_note(SC_NOTE_WARN, "%s: could not start; carrying on without it",
				s.name);
			continue;
		}
		active[nactive++] = s;
	}
}

void rt_sources_thread_start(struct rt_thread *t)
{
	for (unsigned i = 0; i < nactive; i++)
		active[i].thread_start(t);
}

void rt_sources_thread_stop(struct rt_thread *t)
{
	for (unsigned i = 0; i < nactive; i++)
		active[i].thread_stop(t);
}

void rt_sources_fork_child(void)
{
	for (unsigned i = 0; i < nactive; i++)
		active[i].fork_child();
}

void rt_sources_process_stop(void)
{
	for (unsigned i = 0; i < nactive; i++)
		active[i].process_stop();
}

void rt_sources_before_exec(void)
{
	for (unsigned i = 0; i < nactive; i++)
		active[i].before_exec();
}

void rt_sources_exec_failed(void)
{
	for (unsigned i = 0; i < nactive; i++)
		active[i].exec_failed();
}
