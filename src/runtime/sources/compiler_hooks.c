/* SPDX-License-Identifier: MIT */
/*
 * Compiler hooks: a program built with -finstrument-functions calls
 * __cyg_profile_func_enter/exit at every entry and exit of its functions. glibc has no-op
 * versions; libsyscope.so, preloaded, defines them first, so the program's calls come here
 * (a program that defines them itself keeps its own). Each call is one small record with the
 * function's address; the reader names the function. Nothing else happens here: no
 * lookups, no locks, no allocation.
 */
#include "source.h"

static bool hooks_on; /* set once at start, read on every call */

/* The hooks themselves must not be instrumented (syscope is not built with the flag). */
static inline void record(uint16_t type, void *fn)
{
	/* While paused, entries are not recorded; exits are (theirs may predate the pause). */
	if (!hooks_on || !(type == SC_REC_FUNC_EXIT ? rt_active() : rt_recording()))
		return;
	rt_func_record(type, (uint64_t)(uintptr_t)fn, rt_now_ns());
}

RT_EXPORT void __cyg_profile_func_enter(void *fn, void *call_site);
RT_EXPORT void __cyg_profile_func_enter(void *fn, void *call_site)
{
	(void)call_site;
	record(SC_REC_FUNC_ENTER, fn);
}

RT_EXPORT void __cyg_profile_func_exit(void *fn, void *call_site);
RT_EXPORT void __cyg_profile_func_exit(void *fn, void *call_site)
{
	(void)call_site;
	record(SC_REC_FUNC_EXIT, fn);
}

static bool enabled(const struct sc_settings *s)
{
	return sc_bool(s, SC_SET_COMPILER_HOOKS);
}

static int process_start(void)
{
	hooks_on = true;
	return 0;
}

static void process_stop(void)
{
	hooks_on = false;
}

const struct rt_source rt_source_compiler_hooks = {
	.name = "compiler hooks",
	.enabled = enabled,
	.process_start = process_start,
	.process_stop = process_stop,
};
