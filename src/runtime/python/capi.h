/* SPDX-License-Identifier: MIT */
/*
 * The CPython C API as the runtime uses it: function pointers looked up in the interpreter
 * already in the process (libsyscope.so links nothing from Python and includes no Python
 * header), and the installation of what needs the interpreter (tracing, thread names,
 * worker roles) from a pending call, which CPython runs in the main thread with the GIL.
 *
 * Everything here runs in normal context with the GIL held, except rt_py_capi_find (the
 * constructor) and the installer thread, which only calls Py_IsInitialized and
 * Py_AddPendingCall (both may be called from any thread without the GIL).
 */
#ifndef SYSCOPE_RUNTIME_PYTHON_CAPI_H
#define SYSCOPE_RUNTIME_PYTHON_CAPI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../sources/source.h"
#include "aggregate.h"

typedef void py_obj; /* PyObject */
typedef ssize_t py_ssize;

/* PyMethodDef, the stable ABI's layout. */
struct py_method_def {
	const char *name;
	void *meth;
	int flags;
	const char *doc;
};

#define PY_METH_VARARGS 0x1
#define PY_METH_KEYWORDS 0x2
#define PY_METH_O 0x8

/* PEP 523: the evaluator of one frame (PyFrameObject * on 3.10, _PyInterpreterFrame * on
 * 3.11-3.13). */
typedef py_obj *(*py_eval_frame_fn)(void *tstate, void *frame, int throwflag);
/* vectorcallfunc; nargsf's top bit is PY_VECTORCALL_ARGUMENTS_OFFSET. */
typedef py_obj *(*rt_py_vectorcall_fn)(py_obj *callable, py_obj *const *args, size_t nargsf,
				       py_obj *kwnames);
#define PY_VECTORCALL_ARGUMENTS_OFFSET ((size_t)1 << (8 * sizeof(size_t) - 1))
typedef int (*py_audit_hook_fn)(const char *event, py_obj *args, void *data);

struct rt_py_capi {
	unsigned minor; /* 3.minor; 0 when no interpreter was found */
	unsigned version_hex;

	int (*is_initialized)(void);
	int (*add_pending_call)(int (*fn)(void *), void *arg);

	/* Objects and errors */
	void (*inc_ref)(py_obj *o);
	void (*dec_ref)(py_obj *o);
	py_obj *(*get_attr)(py_obj *o, const char *name);
	int (*set_attr)(py_obj *o, const char *name, py_obj *v);
	py_obj *(*call)(py_obj *callable, py_obj *args, py_obj *kwargs);
	py_obj *(*type_of)(py_obj *o); /* PyObject_Type: a new reference */
	const char *(*utf8)(py_obj *str);
	py_obj *(*tuple_item)(py_obj *tuple, py_ssize i); /* borrowed */
	py_ssize (*tuple_size)(py_obj *tuple);
	py_obj *(*list_item)(py_obj *list, py_ssize i); /* borrowed */
	py_obj *(*tuple_new)(py_ssize n);
	int (*tuple_set)(py_obj *tuple, py_ssize i, py_obj *item); /* steals `item` */
	py_obj *(*dict_item)(py_obj *dict, const char *key);	   /* borrowed, no error set */
	py_obj *(*sys_get)(const char *name);			   /* borrowed, no error set */
	int (*is_finalizing)(void);
	void (*err_clear)(void);
	void (*err_fetch)(py_obj **type, py_obj **value, py_obj **traceback);
	void (*err_restore)(py_obj *type, py_obj *value, py_obj *traceback);
	void (*err_set_string)(py_obj *type, const char *message);
	py_obj **exc_recursion_error; /* &PyExc_RecursionError */
	py_obj *(*long_from_long)(long v);
	long (*long_as_long)(py_obj *o);
	py_obj *(*str_from)(const char *utf8);
	py_obj *(*cfunction_new)(struct py_method_def *def, py_obj *self, py_obj *module);
	py_obj *(*instance_method)(py_obj *fn);
	int (*sys_set)(const char *name, py_obj *v);
	py_obj *(*import)(const char *name);
	int (*add_audit_hook)(py_audit_hook_fn hook, void *data);
	py_obj *py_true, *py_none;
	/* vectorcall.c's type (optional: without them, builtin functions instead) */
	py_obj *(*type_from_spec)(void *spec);
	void *(*generic_alloc)(py_obj *type, py_ssize n);
	py_obj *(*vectorcall_call)(py_obj *callable, py_obj *tuple, py_obj *kwargs);

	/* PEP 523 and per-code-object storage */
	void *(*interp_get)(void);
	void *(*thread_state_get)(void); /* PyThreadState_Get: NULL-checked by Python */
	py_eval_frame_fn (*get_eval_frame)(void *interp);
	void (*set_eval_frame)(void *interp, py_eval_frame_fn fn);
	py_ssize (*request_code_extra)(void (*free_fn)(void *));
	int (*code_get_extra)(py_obj *code, py_ssize index, void **extra);
	int (*code_set_extra)(py_obj *code, py_ssize index, void *extra);
	void *code_type; /* &PyCode_Type */
};

extern struct rt_py_capi rt_capi;

/* trace.c: install the PEP 523 hook (pending call, GIL held); false, with a note, when
 * tracing cannot work here. */
bool rt_py_trace_install(void);
/* trace.c: record calls from now on (calls entered before are never recorded). */
void rt_py_trace_arm(void);
/* trace.c: the fork child's frames in progress were entered in the parent. */
void rt_py_trace_fork_child(void);

/* trace.c: the FUNC address of code object `code`, 0 when the filters leave it out. */
uint64_t rt_py_trace_addr(py_obj *code);
/* trace.c: whether calls are recorded (the bootstrap armed the tracer). */
bool rt_py_trace_armed(void);

/* trace.c: the calling thread's Python calls in progress (both backends), so that their
 * FUNC_CALL records can be written whole when they return, and as open calls when the thread
 * or process ends first (rt_py_end_open_calls). Calls deeper than RT_PY_OPEN are still
 * recorded when they return, but not at such an end. Mapped at the thread's first traced
 * call, not thread-local: the library's static TLS must fit the surplus glibc keeps for
 * libraries loaded by dlopen (`syscope attach`), about 1.6 KB. */
#define RT_PY_OPEN 256
#define RT_PY_SKIP_BITS 4096 /* calls this deep remember whether their entry was recorded */
struct rt_py_open {
	uint64_t start[RT_PY_OPEN];
	uint32_t id[RT_PY_OPEN];
	uint32_t ended; /* calls below this depth were written by an end already */
	uint64_t skipped[RT_PY_SKIP_BITS / 64]; /* monitoring.c: entered while paused */
	/* aggregate.h: per call in progress, how it counts, its traced children's time, and
	 * the time of the recorded calls under it that no recorded call between holds */
	uint8_t mode[RT_PY_OPEN];
	uint64_t inner[RT_PY_OPEN], seen[RT_PY_OPEN];
	/* monitoring.c: at each depth of calls in progress, the counted (untimed) calls open
	 * above it whose exits are still reported (aggregate.h) */
	uint32_t above[RT_PY_OPEN + 1];
	/* monitoring.c: a call in progress whose function's returns were turned off while it
	 * was (its Python stack depth, 0: not such a call) */
	uint32_t orphan[RT_PY_OPEN];
};
extern RT_TLS struct rt_py_open *rt_py_open_now; /* NULL: not mapped (yet), or failed */
struct rt_py_open *rt_py_open_map(void);

/* The calling thread's calls in progress; NULL when they cannot be kept (no memory, or the
 * thread's end has passed). Normal context only: the first call maps them. */
static inline struct rt_py_open *rt_py_open_get(void)
{
	struct rt_py_open *o = rt_py_open_now;

	return o ? o : rt_py_open_map();
}

/* A traced call at depth `d` (0: outermost) of the code id in `addr` entered at `ts`. */
static inline void rt_py_call_begin(struct rt_py_open *o, uint32_t d, uint64_t addr, uint64_t ts)
{
	if (o && d < RT_PY_OPEN) {
		uint32_t id = (uint32_t)(addr >> 32) & 0x7fffffffu;

		o->id[d] = id;
		o->start[d] = ts;
		o->inner[d] = o->seen[d] = 0;
		o->mode[d] = rt_py_agg_enter(o, id, ts);
	}
	rt_func_entered(ts);
}

/*
 * The throttle rule, at each return of a function not throttled yet: more than
 * --python-throttle-calls calls, at under --throttle-us a call on average of the function's
 * own time, which counts each moment inside it once however deep it recurses: the time of its
 * outermost calls (ended ones, and the one still open on this thread until `now`), not the
 * sum of every call's inclusive time. A recursive function's calls hold each other, so that
 * sum grows with its depth and with every preemption of a loaded machine times its depth
 * (fib(27)'s first 10 000 calls: 3-6 us a call idle, over 10 us loaded); its own time does
 * not (0.2-0.5 us). For a function that does not recurse the two are the same.
 */
static inline void rt_py_agg_rule(struct rt_py_agg *s, unsigned mode, uint64_t dur, uint64_t now)
{
	uint64_t own;

	s->before++;
	if (mode != RT_PY_AGG_RECURSIVE)
		s->before_ns += dur;
	own = s->before_ns;
	if (mode == RT_PY_AGG_RECURSIVE && now > s->outer_start)
		own += now - s->outer_start; /* its outermost call, still open */
	s->throttled = s->before > rt_py_agg_rule_calls && own < s->before * rt_py_agg_rule_ns;
	if (s->throttled && rt_py_agg_untimed)
		s->untimed = RT_PY_COUNTED; /* its next calls only counted */
}

/* The call at depth `d` (< RT_PY_OPEN) of code `id` returned after `dur`: into its slot
 * (true: nothing to record), or to be recorded; its caller learns either way (aggregate.h). */
static inline __attribute__((always_inline)) bool rt_py_agg_leave(struct rt_py_open *o, uint32_t d,
								  uint32_t id, uint64_t dur)
{
	uint64_t inner = o->inner[d], seen = o->seen[d];
	struct rt_py_agg *s = rt_py_agg_table;
	unsigned mode = o->mode[d];

	if (d)
		o->inner[d - 1] += dur;
	if (mode == RT_PY_AGG_NONE || !s) {
		if (d)
			o->seen[d - 1] += dur;
		return false;
	}
	s += id;
	s->active -= s->active > 0;
	if (mode != RT_PY_AGG_RECURSIVE) { /* recorded or not: the reader may not see which */
		if (!s->outer_calls++ || dur < s->min_ns)
			s->min_ns = dur;
		if (dur > s->max_ns)
			s->max_ns = dur;
		s->outer_ns += dur;
		s->outer_sumsq += (double)dur * (double)dur;
	}
	if (mode == RT_PY_AGG_OUTER)
		s->owner = NULL;
	if (mode == RT_PY_AGG_FOREIGN || !s->throttled || dur >= rt_py_agg_rule_ns) {
		if (!s->throttled)
			rt_py_agg_rule(s, mode, dur, o->start[d] + dur);
		s->hidden_ns += inner - seen;
		if (d)
			o->seen[d - 1] += dur;
		return false;
	}
	if (d)
		o->seen[d - 1] += seen; /* what the reader sees under it, it sees further out */
	s->calls++;
	s->total_ns += dur;
	s->self_ns += inner < dur ? dur - inner : 0;
	return true;
}

/* ... and its return at `ts`, entered at `start`. */
static inline void rt_py_call_end(uint32_t d, uint64_t addr, uint64_t start, uint64_t ts)
{
	struct rt_py_open *o = rt_py_open_now;

	uint32_t id = (uint32_t)(addr >> 32) & 0x7fffffffu;

	if (o && d < o->ended) { /* written at an end; the frames below it go too */
		o->ended = d;
		return;
	}
	if (__builtin_expect(ts >= rt_py_agg_flush_at, 0))
		rt_py_agg_flush(ts);
	if (o && d < RT_PY_OPEN) {
		if (rt_py_agg_leave(o, d, id, ts > start ? ts - start : 0))
			return;
	} else if (o && d == RT_PY_OPEN) { /* recorded; its caller is the deepest kept */
		o->inner[d - 1] += ts > start ? ts - start : 0;
		o->seen[d - 1] += ts > start ? ts - start : 0;
	}
	rt_func_call_record(SC_FUNC_PYTHON, id, addr, start, ts);
}

/* The open calls' depth, for rt_py_end_open_calls: the backend in use tells. */
uint32_t rt_py_monitoring_depth(void);

/* vectorcall.c: a callable whose calls go straight to `fn` (a new reference), NULL (no
 * error set) when the type cannot be made here. */
py_obj *rt_py_vectorcall_new(rt_py_vectorcall_fn fn);

/* monitoring.c: trace through sys.monitoring (3.12+); false when it cannot. */
bool rt_py_monitoring_install(void);
/* monitoring.c: the fork child's calls in progress were entered in the parent. */
void rt_py_monitoring_fork_child(void);

/* stack_guard.c: whether the C stack is nearly used up; then, with RecursionError set
 * (and a note, once), the frame must be run with throwflag set. Normal context. */
bool rt_py_stack_exhausted(void);

/* pyapi_names.c: record Python thread names and multiprocessing roles from now on. */
void rt_py_names_install(void);

/* Record `name` as the calling thread's name (THREAD_NAME, given by the program). */
void rt_py_record_thread_name(const char *name);

extern const struct rt_source rt_source_python_api;

#endif /* SYSCOPE_RUNTIME_PYTHON_CAPI_H */
