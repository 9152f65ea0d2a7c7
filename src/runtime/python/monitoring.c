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

#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "../sources/source.h"
#include "internal.h"
#include "python.h"

#define METH_FASTCALL 0x80
#define TOOL_FIRST 2 /* sys.monitoring.PROFILER_ID */
#define TOOL_LAST 4  /* 5 is the optimizer's */

static RT_TLS long depth; /* calls entered since recording began on this thread, not left */
/* Its calls in progress that are orphans (below): every callback asks, so it sits beside
 * `depth` rather than in the thread's rt_py_open, whose line is a miss on a hot path. */
static RT_TLS uint32_t orphans;
/* The innermost call in progress's Python stack depth when it is an orphan, else 0: the only
 * orphan that can end next (floor_update keeps it), so a callback tests one TLS word. */
static RT_TLS uint32_t orphan_floor;
static py_obj *disable; /* sys.monitoring.DISABLE */

/*
 * A recursive function is throttled inside its own calls (fib's first 10 000 calls end deep
 * inside its outermost one), so its returns could never be turned off while they are in
 * progress. Instead, when it is throttled, its calls in progress on this thread (if none is
 * on another) are found on the Python stack and become "orphans": its returns are turned off,
 * and each orphan ends when the thread's Python stack is next seen no deeper than its frame
 * (a start, an exit, or an instruction of the code it returns to, which gets INSTRUCTION
 * events for that: each place once, then DISABLE). The depth is the interpreter's own count
 * of Python frames (PyThreadState.py_recursion_remaining, checked against the recursion
 * limit at install). Generators are left out (their frames are not on the stack).
 */
static struct {
	int32_t remaining; /* offsetof(PyThreadState, py_recursion_remaining); -1: not used */
	uint32_t tss_key;  /* the GIL-state TSS key: the thread's own thread state, cheaply */
	int tool;
	long instruction; /* sys.monitoring.events.INSTRUCTION */
	py_obj *monitoring;
} orph = { .remaining = -1 };

static bool call_ok(py_obj *monitoring, const char *name, py_obj **args, py_ssize n);
static inline __attribute__((always_inline)) void end_orphans_seen(void);

#define FRAME_OWNED_BY_THREAD 0
#define FRAME_WALK_MAX 100000

static int32_t recursion_offset(unsigned minor)
{
	switch (minor) { /* offsetof(PyThreadState, py_recursion_remaining); the limit follows */
	case 12:
		return 28;
	case 13:
		return 44;
	default:
		return -1;
	}
}

/* The calling thread's Python stack depth (frames the recursion check counts); *ts its
 * thread state. */
static long py_depth(uintptr_t *ts)
{
	const int *r;

	*ts = (uintptr_t)rt_capi.thread_state_get();
	r = (const int *)(*ts + (uintptr_t)orph.remaining);
	return (long)r[1] - r[0];
}

/* The same of the thread's GIL-state thread state (the one its orphans were found on, which
 * make_orphans checks is the current one), through the TSS key: one pthread_getspecific,
 * not PyThreadState_Get's call through the interpreter's TLS (a third of what orphans cost
 * a counted call). A thread state deleted since (its frames with it) reads as NULL: depth 0,
 * every orphan has returned. */
static inline long gil_state_depth(void)
{
	const int *r = pthread_getspecific((pthread_key_t)orph.tss_key);

	if (!r)
		return 0;
	r = (const int *)((const char *)r + orph.remaining);
	return (long)r[1] - r[0];
}

/* After the calls in progress changed: orphan_floor for the innermost one. */
static inline void floor_update(const struct rt_py_open *o)
{
	orphan_floor = orphans && o && depth > 0 && depth <= RT_PY_OPEN ? o->orphan[depth - 1] : 0;
}

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
static inline __attribute__((always_inline)) bool count_only(struct rt_py_open *o,
							     struct rt_py_agg *s)
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
		return true; /* a counted call's: those in progress (orphans) ended before */
	if (!o || depth < 0 || depth > RT_PY_OPEN || !o->above[depth])
		return false;
	o->above[depth]--;
	s->untimed_open -= s->untimed_open > 0;
	return true;
}

/* sys.monitoring, kept for good once our tool is installed (for restart_after_fork). */
static py_obj *monitoring_module;
/* Set in a fork child: the places where the parent's callbacks returned DISABLE (the exits of
 * functions counted there) are off in the child's code objects too, but the child times its
 * calls afresh and needs those exits; the first callback in the child, holding the GIL,
 * turns every place back on (sys.monitoring.restart_events) before anything else. */
static volatile sig_atomic_t restart_pending;

static bool call_ok(py_obj *monitoring, const char *name, py_obj **args, py_ssize n);

static inline void restart_after_fork(void)
{
	if (__builtin_expect(restart_pending, 0)) {
		restart_pending = 0;
		if (monitoring_module)
			call_ok(monitoring_module, "restart_events", NULL, 0);
	}
}

static inline __attribute__((always_inline)) py_obj *on_start(py_obj *self, py_obj *const *args,
							      py_ssize nargs)
{
	restart_after_fork();
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
	end_orphans_seen();
	if ((s = rt_py_agg_counted(addr)) && count_only(o, s))
		return result(false);
	rt_py_agg_pushed(addr, 1);
	if (o && depth >= 0 && depth < RT_PY_SKIP_BITS) {
		uint64_t bit = 1ull << (depth % 64);

		o->skipped[depth / 64] = rt_recording() ? o->skipped[depth / 64] & ~bit
							: o->skipped[depth / 64] | bit;
	}
	depth++;
	orphan_floor = 0; /* a new call is no orphan */
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

/* The innermost call in progress, of the code in `addr`, left at `ts` (0: now). */
static void leave(uint64_t addr, uint64_t ts)
{
	struct rt_py_open *o;

	if (depth <= 0)
		return; /* entered before recording began: its entry is not in this file */
	depth--;
	rt_py_agg_pushed(addr, -1);
	o = rt_py_open_now;
	if (orphans)
		floor_update(o);
	if (o && depth < RT_PY_SKIP_BITS && o->skipped[depth / 64] & 1ull << (depth % 64))
		return; /* its entry, while recording was paused, was not written either */
	if (o && depth < RT_PY_OPEN)
		rt_py_call_end((uint32_t)depth, addr, o->start[depth], ts ? ts : rt_now_ns());
	else
		rt_func_record_flags(SC_REC_FUNC_EXIT, SC_FUNC_PYTHON, addr, ts ? ts : rt_now_ns());
}

/* Orphans at Python stack depth `d` or deeper have returned: they end now. */
static void end_orphans(struct rt_py_open *o, long d)
{
	uint64_t now = 0;

	while (depth > 0 && depth <= RT_PY_OPEN && o->orphan[depth - 1] &&
	       (long)o->orphan[depth - 1] >= d) {
		uint32_t k = (uint32_t)depth - 1;

		o->orphan[k] = 0;
		orphans--;
		if (!now)
			now = rt_now_ns();
		leave(SC_PY_FUNC_ADDR(o->id[k]), now);
	}
}

/* At a start, an exit or an unwind, the frame at the thread's depth is a new one or the one
 * leaving: orphans that deep have returned. At an instruction (`running`), the frame at that
 * depth is still running (mutual recursion watches a's code for b's orphans, and a's own
 * orphans run it): only deeper orphans have. */
static __attribute__((noinline)) void end_orphans_here(struct rt_py_open *o, long d)
{
	end_orphans(o, d);
	floor_update(o);
}

/* Inline: every callback asks while orphans are in progress (a recursive function's
 * outermost call may be one for the whole run), so the test is the floor and the depth. */
static inline void end_orphans_at(bool running)
{
	struct rt_py_open *o;
	long d;

	if (__builtin_expect(!orphan_floor, 1))
		return;
	d = gil_state_depth() + running;
	if (d <= (long)orphan_floor && (o = rt_py_open_now))
		end_orphans_here(o, d);
}

static inline __attribute__((always_inline)) void end_orphans_seen(void)
{
	end_orphans_at(false);
}

static uintptr_t code_of(const struct rt_py_layout *l, uintptr_t frame)
{
	return rt_py_ptr(frame, l->fr_code);
}

static char owner_of(const struct rt_py_layout *l, uintptr_t frame)
{
	return *(const char *)(frame + (uintptr_t)l->fr_owner);
}

/* The next frame below `frame` that is not a C-stack shim, 0 when none. */
static uintptr_t below(const struct rt_py_layout *l, uintptr_t frame)
{
	for (unsigned i = 0; i < FRAME_WALK_MAX; i++) {
		frame = rt_py_ptr(frame, l->fr_previous);
		if (!rt_py_plausible(frame))
			return 0;
		if (owner_of(l, frame) != RT_PY_CSTACK_OWNER)
			return frame;
	}
	return 0;
}

static bool set_local_events(uintptr_t code, long events)
{
	py_obj *args[] = { rt_capi.long_from_long(orph.tool), (py_obj *)code,
			   rt_capi.long_from_long(events) };

	rt_capi.inc_ref((py_obj *)code); /* the call's tuple takes it */
	return call_ok(orph.monitoring, "set_local_events", args, 3);
}

/* INSTRUCTION events in `code`, at every place: a code watched before has the places it
 * reached since turned off (DISABLE), and setting the same events again changes nothing in
 * CPython, so they are cleared first, once per code object and throttling (`done`). */
#define WATCHED_MAX 16
struct watched {
	uintptr_t code[WATCHED_MAX];
	unsigned n;
};

static bool watch_returns_into(uintptr_t code, struct watched *done)
{
	for (unsigned i = 0; i < done->n; i++)
		if (done->code[i] == code)
			return true;
	if (!set_local_events(code, 0) || !set_local_events(code, orph.instruction))
		return false;
	if (done->n < WATCHED_MAX)
		done->code[done->n++] = code;
	return true;
}

/* Code `code` (id `id`, slot `s`) was just throttled, while calls of it were in progress
 * (its call returning now among them): make them orphans and turn its returns off, when
 * they are all on this thread, kept, found on its Python stack, and no generator's; NULL,
 * or why not. */
static const char *make_orphans(py_obj *code, uint32_t id, struct rt_py_agg *s)
{
	const struct rt_py_layout *l = rt_py_layout();
	struct rt_py_open *o = rt_py_open_now;
	uint32_t mark[RT_PY_OPEN], n = 0, found = 0, j;
	struct watched watched = { .n = 0 };
	uintptr_t ts, f;
	long d;

	if (orph.remaining < 0 || !l || l->fr_owner < 0)
		return "the thread's Python stack depth is not known in this build";
	if (!o || depth < 0 || depth > RT_PY_OPEN)
		return "its calls in progress are deeper than syscope keeps";
	for (j = 0; j < (uint32_t)depth; j++) {
		mark[j] = 0;
		n += o->id[j] == id && !o->orphan[j];
	}
	if (!n || n != s->pushed)
		return "some of its calls in progress are on other threads or deeper than kept";
	d = py_depth(&ts);
	if ((uintptr_t)pthread_getspecific((pthread_key_t)orph.tss_key) != ts)
		return "the thread runs Python on a thread state not its own GIL-state one";
	f = l->cframe_current >= 0 ? rt_py_ptr(rt_py_ptr(ts, l->ts_frame), l->cframe_current)
				   : rt_py_ptr(ts, l->ts_frame);
	if (!rt_py_plausible(f) || code_of(l, f) != (uintptr_t)code)
		return "the frame returning is not the one on the stack";
	j = (uint32_t)depth;
	while (found < n && (f = below(l, f)) && --d > 0) {
		uintptr_t caller;

		if (code_of(l, f) != (uintptr_t)code)
			continue;
		if (owner_of(l, f) != FRAME_OWNED_BY_THREAD)
			return "a call in progress is a generator's";
		while (j > 0 && (o->id[j - 1] != id || o->orphan[j - 1]))
			j--;
		if (!j)
			return "its calls on the stack are not those syscope keeps";
		mark[--j] = (uint32_t)d;
		found++;
		caller = below(l, f);
		if (caller && code_of(l, caller) != (uintptr_t)code &&
		    rt_py_is(code_of(l, caller), (uintptr_t)rt_capi.code_type) &&
		    !watch_returns_into(code_of(l, caller), &watched))
			return "sys.monitoring refused to watch a caller";
	}
	if (found != n)
		return "not all of its calls in progress are on the stack";
	for (j = 0; j < (uint32_t)depth; j++)
		if (mark[j]) {
			o->orphan[j] = mark[j];
			orphans++;
		}
	floor_update(o);
	s->untimed = RT_PY_RETURNS_OFF;
	return NULL;
}

/* ... once per function; a note says why when its returns stay reported (the first few). */
static void orphan_calls_in_progress(py_obj *code, uint32_t id, struct rt_py_agg *s)
{
	static unsigned said;
	const char *why;

	s->orphans_tried = 1;
	why = make_orphans(code, id, s);
	if (why && said++ < 3)
		rt_note(SC_NOTE_INFO,
			"Python tracing: a recursive function throttled inside its own calls "
			"keeps its returns reported (%s): its counts stay exact, its counted "
			"calls cost two callbacks instead of one",
			why);
}

uint32_t rt_py_monitoring_depth(void)
{
	return depth > 0 ? (uint32_t)depth : 0;
}

static inline __attribute__((always_inline)) py_obj *on_leave(py_obj *self, py_obj *const *args,
							      py_ssize nargs)
{
	restart_after_fork();
	struct rt_py_agg *s;
	uint64_t addr;

	(void)self;
	if (nargs < 1)
		return result(false);
	addr = rt_py_trace_addr(args[0]);
	if (!addr)
		return result(true);
	end_orphans_seen();
	if ((s = rt_py_agg_counted(addr)) && counted_exit(s)) /* off at this place from now on */
		return result(s->untimed == RT_PY_RETURNS_OFF);
	leave(addr, 0);
	if ((s = rt_py_agg_counted(addr)) && s->untimed == RT_PY_COUNTED && s->pushed &&
	    !s->orphans_tried) /* throttled just now, inside calls of its own */
		orphan_calls_in_progress(args[0], (uint32_t)(addr >> 32) & 0x7fffffffu, s);
	return result(false);
}

static py_obj *on_instruction(py_obj *self, py_obj *const *args, py_ssize nargs)
{
	restart_after_fork();
	(void)self, (void)args, (void)nargs;
	end_orphans_at(true);
	return result(true); /* each place once */
}

static py_obj *on_unwind(py_obj *self, py_obj *const *args, py_ssize nargs)
{
	uint64_t addr = nargs > 0 ? rt_py_trace_addr(args[0]) : 0;
	struct rt_py_agg *s;

	restart_after_fork();
	(void)self;
	if (addr)
		end_orphans_seen();
	if (addr && !((s = rt_py_agg_counted(addr)) && counted_exit(s)))
		leave(addr, 0);
	return result(false); /* DISABLE is refused for PY_UNWIND */
}

/* The same, called by vectorcall (vectorcall.c): sys.monitoring passes no keywords. */
#define VECTORCALL_OF(name, fn)                                                                    \
	static py_obj *name(py_obj *callable, py_obj *const *args, size_t nargsf, py_obj *kwnames) \
	{                                                                                          \
		(void)callable, (void)kwnames;                                                     \
		return fn(NULL, args, (py_ssize)(nargsf & ~PY_VECTORCALL_ARGUMENTS_OFFSET));       \
	}
VECTORCALL_OF(enter_vc, on_start)
VECTORCALL_OF(exit_vc, on_leave)
VECTORCALL_OF(unwind_vc, on_unwind)
VECTORCALL_OF(instruction_vc, on_instruction)

static struct py_method_def enter_def = { "_syscope_enter", (void *)on_start, METH_FASTCALL, NULL };
static struct py_method_def exit_def = { "_syscope_exit", (void *)on_leave, METH_FASTCALL, NULL };
static struct py_method_def unwind_def = { "_syscope_unwind", (void *)on_unwind, METH_FASTCALL,
					   NULL };
static struct py_method_def instruction_def = { "_syscope_returned", (void *)on_instruction,
						METH_FASTCALL, NULL };

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

static bool register_callback(py_obj *monitoring, int id, long event, struct py_method_def *def,
			      rt_py_vectorcall_fn vc)
{
	py_obj *fn = rt_py_vectorcall_new(vc);

	if (!fn) /* the builtin function: the same, one layer more */
		fn = rt_capi.cfunction_new(def, NULL, NULL);
	py_obj *args[] = { rt_capi.long_from_long(id), rt_capi.long_from_long(event), fn };

	return call_ok(monitoring, "register_callback", args, 3);
}

/* The GIL-state TSS key, when this thread's (the main one's) thread state is found by it. */
static bool tss_key_found(uint32_t *k)
{
	const struct rt_py_layout *l = rt_py_layout();
	uintptr_t key;

	if (!l || l->rt_tss_key < 0 || !rt_py_runtime())
		return false;
	key = rt_py_runtime() + (uintptr_t)l->rt_tss_key;
	*k = *(const uint32_t *)(key + 4);
	return *(const int32_t *)key && *k < 1024 /* PTHREAD_KEYS_MAX */ &&
	       pthread_getspecific((pthread_key_t)*k) == rt_capi.thread_state_get();
}

/* Orphans need the depth of the Python stack: its offset checked against the recursion
 * limit Python reports (the field after it), the thread's state by the GIL-state key, and
 * the INSTRUCTION callback. */
static void orphans_init(py_obj *monitoring, int id, long instruction)
{
	py_obj *get = rt_capi.sys_get("getrecursionlimit"), *args, *v = NULL;
	int32_t off = recursion_offset(rt_capi.minor);
	long limit = -1;
	const int *r;

	if (off < 0 || !get || !instruction || !rt_capi.thread_state_get)
		return;
	args = rt_capi.tuple_new(0);
	v = args ? rt_capi.call(get, args, NULL) : NULL;
	if (v) {
		limit = rt_capi.long_as_long(v);
		rt_capi.dec_ref(v);
	}
	if (args)
		rt_capi.dec_ref(args);
	rt_capi.err_clear();
	r = (const int *)((char *)rt_capi.thread_state_get() + off);
	if (limit <= 0 || r[1] != limit || r[0] <= 0 || r[0] > r[1])
		return; /* not this build's layout: returns stay on */
	if (!tss_key_found(&orph.tss_key))
		return;
	if (!register_callback(monitoring, id, instruction, &instruction_def, instruction_vc))
		return;
	orph.tool = id;
	orph.instruction = instruction;
	orph.monitoring = monitoring;
	rt_capi.inc_ref(monitoring); /* kept for good */
	orph.remaining = off;
}

bool rt_py_monitoring_install(void)
{
	py_obj *monitoring = rt_capi.sys_get("monitoring"), *events;
	long start, resume, throw, ret, yield, unwind, instruction;
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
	instruction = event_bit(events, "INSTRUCTION");
	rt_capi.dec_ref(events);
	if (!start || !resume || !throw || !ret || !yield || !unwind)
		return false;
	if (!take_tool_id(monitoring, &id)) {
		rt_note(SC_NOTE_WARN, "Python tracing: sys.monitoring tools 2-4 are all in use; "
				      "tracing with a frame evaluator (PEP 523) instead");
		return false;
	}
	if (!register_callback(monitoring, id, start, &enter_def, enter_vc) ||
	    !register_callback(monitoring, id, resume, &enter_def, enter_vc) ||
	    !register_callback(monitoring, id, throw, &enter_def, enter_vc) ||
	    !register_callback(monitoring, id, ret, &exit_def, exit_vc) ||
	    !register_callback(monitoring, id, yield, &exit_def, exit_vc) ||
	    !register_callback(monitoring, id, unwind, &unwind_def, unwind_vc) ||
	    !call_ok(monitoring, "set_events",
		     (py_obj *[]){ rt_capi.long_from_long(id),
				   rt_capi.long_from_long(start | resume | throw | ret | yield |
							  unwind) },
		     2)) {
		py_obj *args[] = { rt_capi.long_from_long(id) };

		call_ok(monitoring, "free_tool_id", args, 1);
		return false;
	}
	monitoring_module = monitoring;
	rt_capi.inc_ref(monitoring); /* kept for good */
	if (rt_py_agg_untimed)
		orphans_init(monitoring, id, instruction);
	return true;
}

void rt_py_monitoring_fork_child(void)
{
	depth = 0; /* the calls in progress were entered in the parent's file */
	restart_pending = 1;
	if (rt_py_open_now) {
		rt_py_open_now->ended = 0;
		memset(rt_py_open_now->skipped, 0, sizeof(rt_py_open_now->skipped));
		memset(rt_py_open_now->above, 0, sizeof(rt_py_open_now->above));
		memset(rt_py_open_now->orphan, 0, sizeof(rt_py_open_now->orphan));
	}
	orphans = 0;
	orphan_floor = 0;
}
