/* SPDX-License-Identifier: MIT */
/*
 * Deterministic tracing of Python calls (syscope python): every call of a traced Python
 * function is one FUNC_CALL record, written when it returns, with flag SC_FUNC_PYTHON and
 * the code id as its function id, so the reader makes regions of them as of instrumented
 * native functions, named by the PY_CODE record of the id.
 *
 * The mechanism is a PEP 523 frame evaluator, on every supported version (3.10-3.13): the
 * hook records the entry, runs the evaluator that was there before (chained, so a debugger's
 * or a JIT's goes on working) and records the exit when it returns. Every way out of a
 * frame (return, exception, a generator's yield) passes through that return, so exits pair
 * with entries by construction; a generator's resumption is a call of its own. Measured
 * (docs/design/python-frames.md §6) it costs 1.6-1.8x on call-heavy code, against ~2x for
 * sys.monitoring with C callbacks and 4.5x for PyEval_SetProfile (a frame object per
 * call), which is why the suggestion of sys.monitoring on 3.12+ is not the default.
 * Never a Python-level callback.
 *
 * Filters (-I/-E by qualified name, -MI/-ME by file) are decided once per code object; the
 * answer and the code id are kept in the code object's own extra slot (co_extra), so the
 * hot path is one load and no lookup. A fork child's code ids are new (its code table
 * starts empty): the slot carries the fork generation it was decided in.
 */
#include "capi.h"

#include <dlfcn.h>
#include <regex.h>
#include <string.h>
#include <sys/mman.h>

#include "../func_table.h"
#include "../sources/source.h"
#include "python.h"

/* co_extra value: bit 0 decided, bit 1 traced, bits 2-33 code id, bits 34-63 generation. */
#define EXTRA_DECIDED 0x1u
#define EXTRA_TRACED 0x2u
#define EXTRA_ID_SHIFT 2
#define EXTRA_GEN_SHIFT 34
#define EXTRA_GEN_MASK 0x3fffffffu

struct filter {
	regex_t re;
	bool on;
};

static struct {
	bool on;
	void *interp;
	py_eval_frame_fn previous;
	py_ssize extra_index;
	unsigned code_offset; /* of the code object in the frame the evaluator is given */
	struct filter fn_include, fn_exclude, file_include, file_exclude;
} tr;

/* The code object's co_extra, read in place once checked against the API (saves a call
 * into the interpreter per frame): its offset in this version's release build, -1 when
 * unknown or found wrong; the first few checks make sure the word there is mapped. */
#define EXTRA_CHECKS 4
static int32_t extra_offset = -1;
static unsigned extra_checked;

static bool armed;	       /* recording: from the pending call, or when the bootstrap says */
static atomic_uint generation; /* fork children seen: frames of an older one are the parent's */

static bool matches(const struct filter *f, const char *text)
{
	return regexec(&f->re, text ? text : "", 0, NULL, 0) == 0;
}

static bool selected(const char *file, const char *qualname)
{
	if (tr.file_include.on && !matches(&tr.file_include, file))
		return false;
	if (tr.file_exclude.on && matches(&tr.file_exclude, file))
		return false;
	if (tr.fn_include.on && !matches(&tr.fn_include, qualname))
		return false;
	return !(tr.fn_exclude.on && matches(&tr.fn_exclude, qualname));
}

/* The text of string attribute `name` of `o`, alive while *ref is (NULL on failure). */
static const char *str_attr(py_obj *o, const char *name, py_obj **ref)
{
	*ref = rt_capi.get_attr(o, name);
	return *ref ? rt_capi.utf8(*ref) : NULL;
}

static int32_t co_extra_offset(unsigned minor)
{
	switch (minor) { /* offsetof(PyCodeObject, co_extra), from each version's headers */
	case 10:
		return 144;
	case 11:
		return 176;
	case 12:
		return 184;
	case 13:
		return 192;
	default:
		return -1;
	}
}

static bool mapped(const void *p)
{
	unsigned char v;

	return mincore((void *)((uintptr_t)p & ~(uintptr_t)4095), 1, &v) == 0;
}

/* After code_set_extra(code, ..., value): does the in-place read give the same? */
static void check_extra_in_place(py_obj *code, uintptr_t value)
{
	const intptr_t *ce;

	if (extra_offset < 0)
		return;
	ce = *(const intptr_t *const *)((char *)code + extra_offset);
	if (((uintptr_t)ce & 7) || (uintptr_t)ce < 4096 ||
	    (extra_checked < EXTRA_CHECKS && (!mapped(ce) || !mapped(ce + 1 + tr.extra_index))) ||
	    ce[0] <= tr.extra_index || (uintptr_t)ce[1 + tr.extra_index] != value) {
		extra_checked = 0; /* not this build's layout: the API from now on */
		extra_offset = -1;
		return;
	}
	if (extra_checked < EXTRA_CHECKS)
		extra_checked++;
}

/* First call of a code object (in this process image): filter, code id, remembered. */
static uint64_t decide(py_obj *code, unsigned gen)
{
	py_obj *etype, *evalue, *etb, *file_ref, *name_ref;
	const char *file, *name;
	bool traced;
	uint32_t id = 0;
	uintptr_t extra;

	/* A frame may start with an exception in flight (generator.throw): keep it. */
	rt_capi.err_fetch(&etype, &evalue, &etb);
	file = str_attr(code, "co_filename", &file_ref);
	name = str_attr(code, rt_capi.minor >= 11 ? "co_qualname" : "co_name", &name_ref);
	traced = selected(file, name);
	if (traced)
		id = rt_py_code_id((uintptr_t)code);
	extra = (uintptr_t)(gen & EXTRA_GEN_MASK) << EXTRA_GEN_SHIFT |
		(uintptr_t)id << EXTRA_ID_SHIFT | (traced ? EXTRA_TRACED : 0) | EXTRA_DECIDED;
	if (!rt_capi.code_set_extra(code, tr.extra_index, (void *)extra))
		check_extra_in_place(code, extra);
	if (file_ref)
		rt_capi.dec_ref(file_ref);
	if (name_ref)
		rt_capi.dec_ref(name_ref);
	rt_capi.err_clear(); /* whatever failed above, the frame runs as it would have */
	rt_capi.err_restore(etype, evalue, etb);
	return traced ? SC_PY_FUNC_ADDR(id) : 0;
}

/* The FUNC address of the code object `code`, 0 when it is not traced. */
static inline uint64_t traced_addr(py_obj *code, unsigned gen)
{
	void *extra = NULL;
	uintptr_t v;

	if (!code || *(void **)((char *)code + 8) != rt_capi.code_type)
		return 0; /* 3.13's f_executable may be something else; the code's ob_type */
	if (extra_checked == EXTRA_CHECKS) {
		const intptr_t *ce = *(const intptr_t *const *)((char *)code + extra_offset);

		extra = ce && ce[0] > tr.extra_index ? (void *)ce[1 + tr.extra_index] : NULL;
	} else if (rt_capi.code_get_extra(code, tr.extra_index, &extra)) {
		return 0;
	}
	v = (uintptr_t)extra;
	if (!(v & EXTRA_DECIDED) || (v >> EXTRA_GEN_SHIFT) != (gen & EXTRA_GEN_MASK))
		return decide(code, gen);
	return v & EXTRA_TRACED ? SC_PY_FUNC_ADDR((uint32_t)(v >> EXTRA_ID_SHIFT)) : 0;
}

RT_TLS struct rt_py_open *rt_py_open_now;
static RT_TLS bool py_open_failed; /* mapping failed, or the thread ended: not again */
static RT_TLS uint32_t eval_depth; /* traced calls in progress under the PEP 523 hook */
static bool monitoring_used;

static py_obj *trace_eval(void *tstate, void *frame, int throwflag)
{
	unsigned gen = atomic_load_explicit(&generation, memory_order_relaxed);
	struct rt_py_agg *s;
	uint64_t addr, start;
	py_obj *result;
	uint32_t d;

	if (rt_py_stack_exhausted()) /* RecursionError set: the frame unwinds at once */
		return tr.previous(tstate, frame, 1);
	if (!armed || !rt_recording())
		return tr.previous(tstate, frame, throwflag);
	addr = traced_addr(*(py_obj **)((char *)frame + tr.code_offset), gen);
	if (!addr)
		return tr.previous(tstate, frame, throwflag);
	if ((s = rt_py_agg_counted(addr))) { /* throttled: counted, not timed (aggregate.h) */
		s->untimed_calls++;
		return tr.previous(tstate, frame, throwflag);
	}
	start = rt_now_ns();
	d = eval_depth++;
	rt_py_call_begin(rt_py_open_get(), d, addr, start);
	result = tr.previous(tstate, frame, throwflag);
	/* Entered before a fork, left in its child: the parent's file has it. */
	if (gen == atomic_load_explicit(&generation, memory_order_relaxed)) {
		eval_depth = d;
		rt_py_call_end(d, addr, start, rt_now_ns());
	}
	return result;
}

static bool compile_filter(struct filter *f, enum sc_setting_id id)
{
	const char *pattern = sc_str(&rt_proc.settings, id);

	f->on = false;
	if (!pattern || !*pattern)
		return true;
	if (regcomp(&f->re, pattern, REG_EXTENDED | REG_NOSUB)) {
		/* The command line checked it; the environment may still bring a bad one. */
		rt_note(SC_NOTE_WARN,
			"Python tracing: %s%s is not an extended regular expression: "
			"'%s'; Python calls not traced",
			SC_SETTING_ENV_PREFIX, sc_setting_defs[id].name, pattern);
		return false;
	}
	f->on = true;
	return true;
}

static bool compile_filters(void)
{
	return compile_filter(&tr.fn_include, SC_SET_PYTHON_FUNCTION_INCLUDE) &&
	       compile_filter(&tr.fn_exclude, SC_SET_PYTHON_FUNCTION_EXCLUDE) &&
	       compile_filter(&tr.file_include, SC_SET_PYTHON_MODULE_INCLUDE) &&
	       compile_filter(&tr.file_exclude, SC_SET_PYTHON_MODULE_EXCLUDE);
}

/* Where the code object is in the frame PEP 523 hands over (the versions' own headers). */
static bool code_offset(unsigned minor, unsigned *offset)
{
	switch (minor) {
	case 10: /* PyFrameObject.f_code */
	case 11: /* _PyInterpreterFrame.f_code */
		*offset = 32;
		return true;
	case 12: /* _PyInterpreterFrame.f_code */
	case 13: /* _PyInterpreterFrame.f_executable */
		*offset = 0;
		return true;
	default:
		return false;
	}
}

/* At the interpreter's exit (atexit, run last): an evaluator installed after ours that did
 * not chain to it and put it back (unlike torch.compile's, a debugger's or a JIT's may not)
 * stopped the tracing; say so. */
static py_obj *check_at_exit(py_obj *self, py_obj *args, py_obj *kwargs)
{
	(void)self, (void)args, (void)kwargs;
	if (tr.on && armed && rt_capi.get_eval_frame(tr.interp) != trace_eval)
		rt_note(SC_NOTE_WARN,
			"Python tracing: the program replaced syscope's frame "
			"evaluator and did not put it back (a debugger or JIT); calls "
			"after that were not traced");
	rt_capi.inc_ref(rt_capi.py_none);
	return rt_capi.py_none;
}

static struct py_method_def check_def = { "_syscope_check_tracing", (void *)check_at_exit,
					  PY_METH_VARARGS | PY_METH_KEYWORDS, NULL };

static void check_at_exit_register(void)
{
	py_obj *atexit = rt_capi.import("atexit"); /* built in: importing it does nothing else */
	py_obj *reg = atexit ? rt_capi.get_attr(atexit, "register") : NULL;
	py_obj *fn = reg ? rt_capi.cfunction_new(&check_def, NULL, NULL) : NULL;
	py_obj *args = fn ? rt_capi.tuple_new(1) : NULL, *r = NULL;

	if (args) {
		rt_capi.tuple_set(args, 0, fn); /* steals it */
		fn = NULL;
		r = rt_capi.call(reg, args, NULL);
	}
	if (r)
		rt_capi.dec_ref(r);
	if (args)
		rt_capi.dec_ref(args);
	if (fn)
		rt_capi.dec_ref(fn);
	if (reg)
		rt_capi.dec_ref(reg);
	if (atexit)
		rt_capi.dec_ref(atexit);
	rt_capi.err_clear();
}

/* PYTHON_TRACE_BACKEND: sys.monitoring (monitoring.c) where asked, by default on 3.12+. */
static bool use_monitoring(void)
{
	const char *want = sc_str(&rt_proc.settings, SC_SET_PYTHON_TRACE_BACKEND);

	if (!strcmp(want, "pep523") || (!strcmp(want, "auto") && rt_capi.minor < 12))
		return false;
	if (rt_capi.minor < 12) {
		rt_note(SC_NOTE_WARN,
			"Python tracing: sys.monitoring needs CPython 3.12+ (this is "
			"3.%u); tracing with a frame evaluator (PEP 523) instead",
			rt_capi.minor);
		return false;
	}
	if (!rt_py_monitoring_install())
		return false;
	monitoring_used = true;
	tr.on = true;
	rt_py_set_tracing(true); /* PY_RUNTIME says so */
	rt_note(SC_NOTE_INFO, "Python tracing: every call of CPython 3.%u traced (sys.monitoring)",
		rt_capi.minor);
	return true;
}

bool rt_py_trace_install(void)
{
	void *interp;

	if (tr.on)
		return true;
	if (rt_py_state() == SC_PY_FREE_THREADED) { /* no GIL: the hook would race itself */
		rt_note(SC_NOTE_WARN, "Python tracing: a free-threaded CPython (3.13t) is not "
				      "supported; Python calls not traced");
		return false;
	}
	if (!code_offset(rt_capi.minor, &tr.code_offset)) {
		rt_note(SC_NOTE_WARN,
			"Python tracing: CPython %u.%u is not supported (3.10-3.13 "
			"are); Python calls not traced",
			rt_capi.version_hex >> 24, rt_capi.minor);
		return false;
	}
	if (!rt_capi.interp_get || !rt_capi.get_eval_frame || !rt_capi.set_eval_frame ||
	    !rt_capi.request_code_extra || !rt_capi.code_get_extra || !rt_capi.code_set_extra) {
		rt_note(SC_NOTE_WARN, "Python tracing: this interpreter does not export the frame "
				      "evaluator API (PEP 523); Python calls not traced");
		return false;
	}
	if (!compile_filters())
		return false;
	tr.extra_index = rt_capi.request_code_extra(NULL); /* values are numbers: nothing to free */
	extra_offset = co_extra_offset(rt_capi.minor);
	if (tr.extra_index < 0) {
		rt_capi.err_clear();
		rt_note(SC_NOTE_WARN, "Python tracing: no code-object slot left (255 in use); "
				      "Python calls not traced");
		return false;
	}
	rt_py_agg_init(); /* without it every call is recorded */
	if (use_monitoring())
		return true;
	interp = tr.interp = rt_capi.interp_get();
	tr.previous = rt_capi.get_eval_frame(interp);
	if (!tr.previous) {
		rt_note(SC_NOTE_WARN,
			"Python tracing: no frame evaluator to chain to; Python calls "
			"not traced");
		return false;
	}
	rt_capi.set_eval_frame(interp, trace_eval);
	tr.on = true;
	rt_py_set_tracing(true); /* PY_RUNTIME says so */
	check_at_exit_register();
	if ((void *)tr.previous != dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault"))
		rt_note(SC_NOTE_INFO, "Python tracing: another frame evaluator was installed "
				      "(a debugger or JIT); syscope's calls it");
	rt_note(SC_NOTE_INFO,
		"Python tracing: every call of CPython %u.%u traced (PEP 523 frame "
		"evaluator)",
		rt_capi.version_hex >> 24, rt_capi.minor);
	return true;
}

uint64_t rt_py_trace_addr(py_obj *code)
{
	return traced_addr(code, atomic_load_explicit(&generation, memory_order_relaxed));
}

bool rt_py_trace_armed(void)
{
	return armed;
}

void rt_py_trace_arm(void)
{
	armed = tr.on;
}

void rt_py_trace_fork_child(void)
{
	atomic_fetch_add(&generation, 1);
	eval_depth = 0; /* the calls in progress are the parent's */
	rt_py_agg_fork_child();
	if (rt_py_open_now)
		rt_py_open_now->ended = 0;
}

struct rt_py_open *rt_py_open_map(void)
{
	void *p;

	if (py_open_failed)
		return NULL;
	p = mmap(NULL, sizeof(struct rt_py_open), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		py_open_failed = true; /* calls are still recorded, only not at an early end */
		return NULL;
	}
	return rt_py_open_now = p;
}

void rt_py_open_release(void)
{
	struct rt_py_open *o = rt_py_open_now;

	py_open_failed = true;
	rt_py_open_now = NULL;
	if (o)
		munmap(o, sizeof(*o));
}

void rt_py_end_open_calls(uint64_t ts)
{
	uint32_t depth = monitoring_used ? rt_py_monitoring_depth() : eval_depth;
	uint32_t n = depth < RT_PY_OPEN ? depth : RT_PY_OPEN;
	struct rt_py_open *o = rt_py_open_now;

	if (!o)
		return;
	for (uint32_t i = n; i > o->ended; i--)
		if (o->start[i - 1]) /* 0: entered while recording was paused */
			rt_func_call_record(SC_FUNC_PYTHON | SC_FUNC_OPEN, o->id[i - 1],
					    SC_PY_FUNC_ADDR(o->id[i - 1]), o->start[i - 1], ts);
	if (n > o->ended)
		o->ended = n;
}
