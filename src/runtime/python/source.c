/* SPDX-License-Identifier: MIT */
/*
 * Python as a runtime source: the interpreter itself is found by find.c as modules are
 * mapped; here are the normal-context points where what handlers could not say becomes a
 * note, and the fork child's fresh start (an empty code table, PY_RUNTIME in its new file).
 */
#include "../sources/source.h"
#include "aggregate.h"
#include "internal.h"

static void flush(void)
{
	rt_py_check_pending_guarded();
	rt_py_flush_notes();
}

static int python_start(void)
{
	flush();
	return 0;
}

static void python_thread(struct rt_thread *t)
{
	(void)t;
	flush();
}

static void python_thread_stop(struct rt_thread *t)
{
	(void)t;
	flush();
	rt_py_callsite_thread_end();
}

static void python_fork_child(void)
{
	rt_py_codes_fork_child();
	rt_py_record_runtime();
}

static void python_stop(void)
{
	uint32_t full = rt_py_codes_full_count();

	flush();
	rt_py_agg_record(true);
	if (full)
		rt_note(SC_NOTE_WARN,
			"Python: the table of code objects was full; %u frames of code objects "
			"seen later are recorded as unknown code",
			full);
}

const struct rt_source rt_source_python = {
	.name = "python",
	.process_start = python_start,
	.thread_start = python_thread,
	.thread_stop = python_thread_stop,
	.fork_child = python_fork_child,
	.process_stop = python_stop,
};
