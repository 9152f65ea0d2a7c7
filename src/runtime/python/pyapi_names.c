/* SPDX-License-Identifier: MIT */
/*
 * Python's names for threads and processes, which CPython (up to 3.13) never gives the OS:
 *
 *   threads    _thread.start_new_thread (start_joinable_thread on 3.13), through which
 *              threading starts every thread, is wrapped: the new thread runs a C
 *              trampoline first, which records the name of the threading.Thread whose
 *              _bootstrap it is about to run as the thread's THREAD_NAME (given by the
 *              program: later OS names do not replace it). `_thread` is built in and
 *              imported at start-up; threading copies the function when it is imported,
 *              so the wrapper goes into threading too when it was imported already.
 *   processes  multiprocessing's BaseProcess._bootstrap, which a worker process runs first
 *              (forked, spawned or from a fork server), records the worker's role as the
 *              name of its main thread: the target's qualified name when the process kept
 *              its default name ("Process-3"; a DataLoader's "_worker_loop"), else its
 *              name ("ForkPoolWorker-2").
 *
 * syscope never imports a module the program did not (that would change the program:
 * gevent, for one, must patch threading before anybody imports it). When
 * multiprocessing.process is not imported yet at the pending call, it is wrapped at the
 * first audit event (PEP 578, a C hook) that finds it in sys.modules with its class made:
 * events always come between its import and a worker's start (os.fork, more imports,
 * pickle.find_class in a spawned child), and only those events make it look. Once
 * wrapped, the hook returns at once.
 */
#include "capi.h"

#include <string.h>

static py_obj *thread_trampoline(py_obj *function, py_obj *args, py_obj *kwargs);
static py_obj *start_thread(py_obj *original, py_obj *args, py_obj *kwargs);
static py_obj *process_bootstrap(py_obj *original, py_obj *args, py_obj *kwargs);

#define VARARGS_KW (PY_METH_VARARGS | PY_METH_KEYWORDS)

static struct py_method_def trampoline_def = { "_syscope_thread", (void *)thread_trampoline,
					       VARARGS_KW, NULL };
static struct py_method_def start_defs[] = {
	{ "start_new_thread", (void *)start_thread, VARARGS_KW, NULL },
	{ "start_joinable_thread", (void *)start_thread, VARARGS_KW, NULL },
};
static struct py_method_def bootstrap_def = { "_bootstrap", (void *)process_bootstrap, VARARGS_KW,
					      NULL };

static bool processes_wrapped, wrapping, hook_added;

void rt_py_record_thread_name(const char *name)
{
	struct sc_rec_thread_name rec = { .ts = rt_now_ns() };
	size_t n = strlen(name);

	if (n > sizeof(rec.name)) { /* the reader takes 16 bytes without a NUL */
		n = sizeof(rec.name);
		while (n && ((unsigned char)name[n] & 0xc0) == 0x80)
			n--; /* not in the middle of a UTF-8 character */
	}
	memcpy(rec.name, name, n);
	rt_record(SC_REC_THREAD_NAME, SC_THREAD_NAME_GIVEN, &rec.ts, sizeof(rec) - sizeof(rec.hdr),
		  NULL, 0);
}

/* Record the text of attribute `name` of `o` as the thread's name, if it is some. */
static void record_attr(py_obj *o, const char *name)
{
	py_obj *v = rt_capi.get_attr(o, name);
	const char *s = v ? rt_capi.utf8(v) : NULL;

	if (s && *s)
		rt_py_record_thread_name(s);
	if (v)
		rt_capi.dec_ref(v);
	rt_capi.err_clear();
}

static bool has_attr(py_obj *o, const char *name)
{
	py_obj *v = rt_capi.get_attr(o, name);

	if (v)
		rt_capi.dec_ref(v);
	rt_capi.err_clear();
	return v != NULL;
}

/* The new thread's first code: its threading name, then what it was started to run. */
static py_obj *thread_trampoline(py_obj *function, py_obj *args, py_obj *kwargs)
{
	py_obj *thread = rt_capi.get_attr(function, "__self__"); /* Thread._bootstrap's self */

	if (thread && rt_active() && has_attr(thread, "_bootstrap_inner"))
		record_attr(thread, "name");
	if (thread)
		rt_capi.dec_ref(thread);
	rt_capi.err_clear();
	return rt_capi.call(function, args, kwargs);
}

/* _thread.start_*_thread(function, ...): the same, with the trampoline around `function`. */
static py_obj *start_thread(py_obj *original, py_obj *args, py_obj *kwargs)
{
	py_ssize n = rt_capi.tuple_size(args);
	py_obj *function = n > 0 ? rt_capi.tuple_item(args, 0) : NULL;
	py_obj *trampoline =
		function ? rt_capi.cfunction_new(&trampoline_def, function, NULL) : NULL;
	py_obj *wrapped = trampoline ? rt_capi.tuple_new(n) : NULL, *result;

	if (!wrapped) { /* let the original say what is wrong */
		if (trampoline)
			rt_capi.dec_ref(trampoline);
		rt_capi.err_clear();
		return rt_capi.call(original, args, kwargs);
	}
	rt_capi.tuple_set(wrapped, 0, trampoline); /* steals the reference */
	for (py_ssize i = 1; i < n; i++) {
		py_obj *item = rt_capi.tuple_item(args, i);

		rt_capi.inc_ref(item);
		rt_capi.tuple_set(wrapped, i, item);
	}
	result = rt_capi.call(original, wrapped, kwargs);
	rt_capi.dec_ref(wrapped);
	return result;
}

/* Whether `name` is the default multiprocessing gives a process of type `self`. */
static bool default_name(py_obj *self, const char *name)
{
	py_obj *type = rt_capi.type_of(self),
	       *tname = type ? rt_capi.get_attr(type, "__name__") : NULL;
	const char *t = tname ? rt_capi.utf8(tname) : NULL;
	bool dflt = t && !strncmp(name, t, strlen(t)) && name[strlen(t)] == '-';

	if (tname)
		rt_capi.dec_ref(tname);
	if (type)
		rt_capi.dec_ref(type);
	rt_capi.err_clear();
	return dflt;
}

static void name_process(py_obj *process)
{
	py_obj *name = rt_capi.get_attr(process, "name");
	py_obj *target = rt_capi.get_attr(process, "_target");
	const char *n = name ? rt_capi.utf8(name) : NULL;

	rt_capi.err_clear();
	if (n && target && target != rt_capi.py_none && default_name(process, n))
		record_attr(target, "__qualname__");
	else if (n && *n)
		rt_py_record_thread_name(n);
	if (target)
		rt_capi.dec_ref(target);
	if (name)
		rt_capi.dec_ref(name);
	rt_capi.err_clear();
}

static py_obj *process_bootstrap(py_obj *original, py_obj *args, py_obj *kwargs)
{
	py_obj *self = rt_capi.tuple_size(args) > 0 ? rt_capi.tuple_item(args, 0) : NULL;

	if (self && rt_active())
		name_process(self);
	rt_capi.err_clear();
	return rt_capi.call(original, args, kwargs);
}

/* A C function holding `original` as its self: `def` called with original first. */
static py_obj *wrapper_of(py_obj *original, struct py_method_def *def, bool method)
{
	py_obj *fn = rt_capi.cfunction_new(def, original, NULL), *m;

	if (!fn || !method)
		return fn;
	m = rt_capi.instance_method(fn); /* binds like a function defined in the class */
	rt_capi.dec_ref(fn);
	return m;
}

/* obj.attr = wrapper of obj.attr; false when obj has no attr. */
static bool wrap_attr(py_obj *obj, const char *attr, struct py_method_def *def, bool method)
{
	py_obj *original = rt_capi.get_attr(obj, attr), *wrapper;
	bool ok;

	if (!original) {
		rt_capi.err_clear();
		return false;
	}
	wrapper = wrapper_of(original, def, method);
	ok = wrapper && rt_capi.set_attr(obj, attr, wrapper) == 0;
	if (wrapper)
		rt_capi.dec_ref(wrapper);
	rt_capi.dec_ref(original);
	rt_capi.err_clear();
	return ok;
}

static py_obj *loaded_module(const char *name)
{
	py_obj *modules = rt_capi.sys_get("modules");

	return modules ? rt_capi.dict_item(modules, name) : NULL; /* borrowed */
}

static void wrap_thread_start(void)
{
	py_obj *thread_mod = loaded_module("_thread"), *threading = loaded_module("threading");

	for (size_t i = 0; i < sizeof(start_defs) / sizeof(start_defs[0]); i++) {
		char copy[64] = "_";

		if (!thread_mod ||
		    !wrap_attr(thread_mod, start_defs[i].name, &start_defs[i], false))
			continue;
		/* threading took its copy already: "_start_new_thread" = _thread's function */
		strncat(copy, start_defs[i].name, sizeof(copy) - 2);
		if (threading)
			wrap_attr(threading, copy, &start_defs[i], false);
	}
}

static bool wrap_processes(void)
{
	py_obj *module = loaded_module("multiprocessing.process"), *cls;
	bool ok;

	if (!module)
		return false;
	cls = rt_capi.get_attr(module, "BaseProcess"); /* absent while the module imports */
	if (!cls) {
		rt_capi.err_clear();
		return false;
	}
	ok = wrap_attr(cls, "_bootstrap", &bootstrap_def, true);
	rt_capi.dec_ref(cls);
	return ok;
}

/* The events that can come between multiprocessing.process's import and a worker's
 * _bootstrap: a fork (fork or fork server), an import (its own end is seen at the next),
 * a spawned child unpickling its process object. Every other event (there are many: each
 * sys._getframe, open, exec...) costs one comparison, not a lookup in sys.modules. */
static bool may_precede_worker(const char *event)
{
	static const char *const events[] = { "import", "os.fork", "pickle.find_class" };

	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if (event[0] == events[i][0] && !strcmp(event, events[i]))
			return true;
	return false;
}

static int audit(const char *event, py_obj *args, void *data)
{
	(void)args, (void)data;
	if (processes_wrapped || wrapping || !event || !may_precede_worker(event) ||
	    (rt_capi.is_finalizing && rt_capi.is_finalizing()))
		return 0;
	wrapping = true; /* setting a class attribute is itself an audit event */
	processes_wrapped = wrap_processes();
	wrapping = false;
	return 0;
}

void rt_py_names_install(void)
{
	py_obj *etype, *evalue, *etb;

	rt_capi.err_fetch(&etype, &evalue, &etb);
	wrap_thread_start();
	processes_wrapped = wrap_processes();
	if (!processes_wrapped && !hook_added && rt_capi.add_audit_hook) {
		hook_added = rt_capi.add_audit_hook(audit, NULL) == 0;
		rt_capi.err_clear();
	}
	rt_capi.err_restore(etype, evalue, etb);
}
