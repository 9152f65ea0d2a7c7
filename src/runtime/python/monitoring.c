/* SPDX-License-Identifier: MIT */
/*
 * The sys.monitoring backend of the tracer (PEP 669, CPython 3.12+), the default there:
 * unlike a PEP 523 evaluator it leaves Python-to-Python calls inlined, so a program recurses
 * as deep under syscope python as without it (3.12 counts every C-level evaluation against
 * its C recursion limit: RecursionError at depth ~750 under the PEP 523 hook).
 *
 * Tool id 2 ("profiler" by convention; else the next free one), with C function objects
 * (METH_FASTCALL) as callbacks: PY_START, PY_RESUME and PY_THROW enter a call, PY_RETURN,
 * PY_YIELD and PY_UNWIND leave it, so a generator is one call per resumption as under PEP
 * 523 (its making is no call here: it runs no RESUME). The code id and the filters' answer
 * come from trace.c (rt_py_trace_addr); an excluded code object returns DISABLE, which
 * turns the event off at that place (PY_UNWIND cannot be: it is just not recorded).
 *
 * A throttled function's calls counted, not timed (aggregate.h) are no entries here: count_only
 * and counted_exit keep them apart from the calls in progress, and turn its returns off.
 *
 * Exits pair with entries by a per-thread depth: an exit at depth 0 belongs to a call
 * entered before recording began (before the bootstrap armed the tracer, or in the parent
 * of a fork child), whose entry was never written; a bit per depth says whether recording
 * was paused at the entry (then neither is written, as under PEP 523).
 */
#include "capi.h"

#include <string.h>

#include "../sources/source.h"
#include "python.h"

#define METH_FASTCALL 0x80
#define TOOL_FIRST 2 /* sys.monitoring.PROFILER_ID */
#define TOOL_LAST 4  /* 5 is the optimizer's */

static RT_TLS long depth; /* calls entered since recording began on this thread, not left */
static py_obj *disable;	  /* sys.monitoring.DISABLE */

static py_obj *result(bool off)
{
	if (!off) /* immortal from 3.12 on (PEP 683), where sys.monitoring is: no count */
		return rt_capi.py_none;
	rt_capi.inc_ref(disable);
	return disable;
}

/* A call of a function whose calls are only counted now (slot `s`): counted while
 * recording and, while its exits are still reported, noted above the calls in progress so
 * that its exit is told from theirs (aggregate.h). false: it is to be traced after all
 * (no memory to note it in). */
static bool count_only(struct rt_py_open *o, struct rt_py_agg *s)
{
	if (s->untimed == RT_PY_COUNTED && !s->pushed && !s->untimed_open)
		s->untimed = RT_PY_RETURNS_OFF; /* nothing of it open: its exits are not needed */
	if (s->untimed == RT_PY_COUNTED) {
		if (!o || depth < 0 || depth > RT_PY_OPEN)
			return false;
		o->above[depth]++;
		s->untimed_open++;
	}
	if (rt_recording())
		s->untimed_calls++;
	return true;
}

/* An exit of a function whose calls are only counted now: true when it is one of those
 * (then nothing to do), false when it ends a call in progress entered while it was timed. */
static bool counted_exit(struct rt_py_agg *s)
{
	struct rt_py_open *o = rt_py_open_now;

	if (s->untimed == RT_PY_RETURNS_OFF)
		return true; /* none of its calls was in progress: a counted one's */
	if (!o || depth < 0 || depth > RT_PY_OPEN || !o->above[depth])
		return false;
	o->above[depth]--;
	s->untimed_open -= s->untimed_open > 0;
	return true;
}

static py_obj *on_start(py_obj *self, py_obj *const *args, py_ssize nargs)
{
	struct rt_py_open *o;
	struct rt_py_agg *s;
	uint64_t addr;

	(void)self;
	if (nargs < 1)
		return result(false);
	addr = rt_py_trace_addr(args[0]);
	if (!addr)
		return result(true);
	if (!rt_py_trace_armed())
		return result(false);
	o = rt_py_open_get();
	if ((s = rt_py_agg_counted(addr)) && count_only(o, s))
		return result(false);
	rt_py_agg_pushed(addr, 1);
	if (o && depth >= 0 && depth < RT_PY_SKIP_BITS) {
		uint64_t bit = 1ull << (depth % 64);

		o->skipped[depth / 64] = rt_recording() ? o->skipped[depth / 64] & ~bit
							: o->skipped[depth / 64] | bit;
	}
	depth++;
	if (!rt_recording()) {
		if (o && depth <= RT_PY_OPEN)
			o->start[depth - 1] = 0; /* nothing to write at an end */
	} else if (o && depth <= RT_PY_OPEN) {	 /* its start kept until it returns */
		rt_py_call_begin(o, (uint32_t)depth - 1, addr, rt_now_ns());
	} else { /* deeper, or no memory to keep it: the pair of records */
		rt_func_record_flags(SC_REC_FUNC_ENTER, SC_FUNC_PYTHON, addr, rt_now_ns());
	}
	return result(false);
}

static void leave(py_obj *code, uint64_t addr)
{
	struct rt_py_open *o;

	(void)code;
	if (depth <= 0)
		return; /* entered before recording began: its entry is not in this file */
	depth--;
	rt_py_agg_pushed(addr, -1);
	o = rt_py_open_now;
	if (o && depth < RT_PY_SKIP_BITS && o->skipped[depth / 64] & 1ull << (depth % 64))
		return; /* its entry, while recording was paused, was not written either */
	if (o && depth < RT_PY_OPEN)
		rt_py_call_end((uint32_t)depth, addr, o->start[depth], rt_now_ns());
	else
		rt_func_record_flags(SC_REC_FUNC_EXIT, SC_FUNC_PYTHON, addr, rt_now_ns());
}

uint32_t rt_py_monitoring_depth(void)
{
	return depth > 0 ? (uint32_t)depth : 0;
}

static py_obj *on_leave(py_obj *self, py_obj *const *args, py_ssize nargs)
{
	struct rt_py_agg *s;
	uint64_t addr;

	(void)self;
	if (nargs < 1)
		return result(false);
	addr = rt_py_trace_addr(args[0]);
	if (!addr)
		return result(true);
	if ((s = rt_py_agg_counted(addr)) && counted_exit(s)) /* off at this place from now on */
		return result(s->untimed == RT_PY_RETURNS_OFF);
	leave(args[0], addr);
	return result(false);
}

static py_obj *on_unwind(py_obj *self, py_obj *const *args, py_ssize nargs)
{
	uint64_t addr = nargs > 0 ? rt_py_trace_addr(args[0]) : 0;
	struct rt_py_agg *s;

	(void)self;
	if (addr && !((s = rt_py_agg_counted(addr)) && counted_exit(s)))
		leave(args[0], addr);
	return result(false); /* DISABLE is refused for PY_UNWIND */
}

static struct py_method_def enter_def = { "_syscope_enter", (void *)on_start, METH_FASTCALL, NULL };
static struct py_method_def exit_def = { "_syscope_exit", (void *)on_leave, METH_FASTCALL, NULL };
static struct py_method_def unwind_def = { "_syscope_unwind", (void *)on_unwind, METH_FASTCALL,
					   NULL };

/* monitoring.<name>(args...): a new reference, NULL (error cleared) when it failed. */
static py_obj *call(py_obj *monitoring, const char *name, py_obj **args, py_ssize n)
{
	py_obj *fn = rt_capi.get_attr(monitoring, name), *tuple = fn ? rt_capi.tuple_new(n) : NULL;
	py_obj *r = NULL;

	for (py_ssize i = 0; i < n; i++)
		if (tuple && args[i])
			rt_capi.tuple_set(tuple, i, args[i]); /* steals */
		else if (args[i])
			rt_capi.dec_ref(args[i]);
	for (py_ssize i = 0; tuple && i < n; i++)
		if (!args[i])
			goto out; /* an argument could not be made */
	if (tuple)
		r = rt_capi.call(fn, tuple, NULL);
out:
	if (tuple)
		rt_capi.dec_ref(tuple);
	if (fn)
		rt_capi.dec_ref(fn);
	if (!r)
		rt_capi.err_clear();
	return r;
}

static bool call_ok(py_obj *monitoring, const char *name, py_obj **args, py_ssize n)
{
	py_obj *r = call(monitoring, name, args, n);

	if (r)
		rt_capi.dec_ref(r);
	return r != NULL;
}

static long event_bit(py_obj *events, const char *name)
{
	py_obj *v = rt_capi.get_attr(events, name);
	long bit = v ? rt_capi.long_as_long(v) : -1;

	if (v)
		rt_capi.dec_ref(v);
	rt_capi.err_clear();
	return bit > 0 ? bit : 0;
}

static bool take_tool_id(py_obj *monitoring, int *id)
{
	for (int i = TOOL_FIRST; i <= TOOL_LAST; i++) {
		py_obj *args[] = { rt_capi.long_from_long(i), rt_capi.str_from("syscope") };

		if (call_ok(monitoring, "use_tool_id", args, 2)) {
			*id = i;
			return true;
		}
	}
	return false;
}

static bool register_callback(py_obj *monitoring, int id, long event, struct py_method_def *def)
{
	py_obj *fn = rt_capi.cfunction_new(def, NULL, NULL);
	py_obj *args[] = { rt_capi.long_from_long(id), rt_capi.long_from_long(event), fn };

	return call_ok(monitoring, "register_callback", args, 3);
}

bool rt_py_monitoring_install(void)
{
	py_obj *monitoring = rt_capi.sys_get("monitoring"), *events;
	long start, resume, throw, ret, yield, unwind;
	int id;

	if (!monitoring || !rt_capi.long_from_long || !rt_capi.str_from || !rt_capi.long_as_long)
		return false;
	events = rt_capi.get_attr(monitoring, "events");
	disable = rt_capi.get_attr(monitoring, "DISABLE"); /* kept for good */
	if (!events || !disable) {
		rt_capi.err_clear();
		return false;
	}
	start = event_bit(events, "PY_START"), resume = event_bit(events, "PY_RESUME");
	throw = event_bit(events, "PY_THROW"), ret = event_bit(events, "PY_RETURN");
	yield = event_bit(events, "PY_YIELD"), unwind = event_bit(events, "PY_UNWIND");
	rt_capi.dec_ref(events);
	if (!start || !resume || !throw || !ret || !yield || !unwind)
		return false;
	if (!take_tool_id(monitoring, &id)) {
		rt_note(SC_NOTE_WARN, "Python tracing: sys.monitoring tools 2-4 are all in use; "
				      "tracing with a frame evaluator (PEP 523) instead");
		return false;
	}
	if (!register_callback(monitoring, id, start, &enter_def) ||
	    !register_callback(monitoring, id, resume, &enter_def) ||
	    !register_callback(monitoring, id, throw, &enter_def) ||
	    !register_callback(monitoring, id, ret, &exit_def) ||
	    !register_callback(monitoring, id, yield, &exit_def) ||
	    !register_callback(monitoring, id, unwind, &unwind_def) ||
	    !call_ok(monitoring, "set_events",
		     (py_obj *[]){ rt_capi.long_from_long(id),
				   rt_capi.long_from_long(start | resume | throw | ret | yield |
							  unwind) },
		     2)) {
		py_obj *args[] = { rt_capi.long_from_long(id) };

		call_ok(monitoring, "free_tool_id", args, 1);
		return false;
	}
	return true;
}

void rt_py_monitoring_fork_child(void)
{
	depth = 0; /* the calls in progress were entered in the parent's file */
	if (rt_py_open_now) {
		rt_py_open_now->ended = 0;
		memset(rt_py_open_now->skipped, 0, sizeof(rt_py_open_now->skipped));
		memset(rt_py_open_now->above, 0, sizeof(rt_py_open_now->above));
	}
}
