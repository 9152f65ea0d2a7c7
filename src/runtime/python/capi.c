/* SPDX-License-Identifier: MIT */
/*
 * The C API of the interpreter in the process, and the one moment syscope uses it.
 *
 * At start (the constructor) the API's entry points are looked up in the executable and
 * the libraries loaded with it (Debian's and Ubuntu's python3 export them from the
 * executable, pyenv's from libpython3.X.so). Nothing may call them before the interpreter
 * is initialized, and the constructor runs long before that, so a thread of syscope's polls
 * Py_IsInitialized (1 ms at first, then 10 ms) and then queues a pending call. CPython runs
 * pending calls in the main thread, with the GIL, at its next eval-breaker check: about
 * 10 ms after start here, before the script's first line (syscope python closes the race
 * with a bootstrap that waits for the call). The pending call installs tracing when asked
 * (PYTHON_TRACE) and the recording of thread names and worker roles in every Python program.
 *
 * Interposing Py_Initialize would not work: in Debian's python3 libpython is linked into the
 * executable, whose internal calls never go through the PLT.
 */
#include "capi.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../sources/source.h"
#include "python.h"

#define FAST_POLL_NS 1000000ull	 /* while a normal start-up would still be going on */
#define SLOW_POLL_NS 10000000ull /* later: an embedder may initialize whenever it likes */
#define FAST_POLL_FOR_NS 5000000000ull
#define START_ATTR "_syscope_start" /* sys attribute the bootstrap of syscope python waits for */
#define BOOTSTRAP_MODE "syscope:"   /* sys.argv[1] of that bootstrap */

struct rt_py_capi rt_capi;

static struct {
	pthread_t thread;
	bool running;
	atomic_int stop;
	atomic_int started; /* an installer was started (or the API looked for and missing) */
	atomic_int process_started; /* process_start ran: settings are known */
	bool late; /* started for an interpreter loaded later: its API is looked up here */
} installer;

/* In the interpreter's module (found by find.c, RTLD_LOCAL loads included), else in the
 * global scope. */
static void *sym(const char *name)
{
	void *p = rt_py_symbol(name);

	return p ? p : dlsym(RTLD_DEFAULT, name);
}

/* The first of two names (the newer first: 3.12 renamed the code-extra functions). */
static void *sym2(const char *name, const char *older)
{
	void *p = sym(name);

	return p ? p : sym(older);
}

#define LOOKUP(field, name) (*(void **)&rt_capi.field = sym(name))

/* The entry points; false when this is no CPython (or one missing a part we need). */
static bool find_api(void)
{
	void **need[] = {
		(void **)&rt_capi.is_initialized,
		(void **)&rt_capi.add_pending_call,
		(void **)&rt_capi.inc_ref,
		(void **)&rt_capi.dec_ref,
		(void **)&rt_capi.get_attr,
		(void **)&rt_capi.set_attr,
		(void **)&rt_capi.call,
		(void **)&rt_capi.type_of,
		(void **)&rt_capi.utf8,
		(void **)&rt_capi.tuple_item,
		(void **)&rt_capi.list_item,
		(void **)&rt_capi.tuple_size,
		(void **)&rt_capi.tuple_new,
		(void **)&rt_capi.tuple_set,
		(void **)&rt_capi.dict_item,
		(void **)&rt_capi.sys_get,
		(void **)&rt_capi.err_clear,
		(void **)&rt_capi.err_fetch,
		(void **)&rt_capi.err_restore,
		(void **)&rt_capi.cfunction_new,
		(void **)&rt_capi.instance_method,
		(void **)&rt_capi.sys_set,
		(void **)&rt_capi.import,
		(void **)&rt_capi.py_true,
		(void **)&rt_capi.py_none,
		(void **)&rt_capi.code_type,
	};

	if (!LOOKUP(is_initialized, "Py_IsInitialized"))
		return false; /* no Python here: spare every other program the lookups */
	LOOKUP(add_pending_call, "Py_AddPendingCall");
	LOOKUP(inc_ref, "Py_IncRef");
	LOOKUP(dec_ref, "Py_DecRef");
	LOOKUP(get_attr, "PyObject_GetAttrString");
	LOOKUP(set_attr, "PyObject_SetAttrString");
	LOOKUP(call, "PyObject_Call");
	LOOKUP(type_of, "PyObject_Type");
	LOOKUP(utf8, "PyUnicode_AsUTF8");
	LOOKUP(tuple_item, "PyTuple_GetItem");
	LOOKUP(list_item, "PyList_GetItem");
	LOOKUP(tuple_size, "PyTuple_Size");
	LOOKUP(tuple_new, "PyTuple_New");
	LOOKUP(tuple_set, "PyTuple_SetItem");
	LOOKUP(dict_item, "PyDict_GetItemString");
	LOOKUP(sys_get, "PySys_GetObject");
	*(void **)&rt_capi.is_finalizing = sym2("Py_IsFinalizing", "_Py_IsFinalizing");
	LOOKUP(err_clear, "PyErr_Clear");
	LOOKUP(err_fetch, "PyErr_Fetch");
	LOOKUP(err_restore, "PyErr_Restore");
	LOOKUP(err_set_string, "PyErr_SetString");
	LOOKUP(exc_recursion_error, "PyExc_RecursionError");
	LOOKUP(long_from_long, "PyLong_FromLong");
	LOOKUP(long_as_long, "PyLong_AsLong");
	LOOKUP(str_from, "PyUnicode_FromString");
	LOOKUP(cfunction_new, "PyCFunction_NewEx");
	LOOKUP(instance_method, "PyInstanceMethod_New");
	LOOKUP(sys_set, "PySys_SetObject");
	LOOKUP(import, "PyImport_ImportModule");
	LOOKUP(add_audit_hook, "PySys_AddAuditHook");
	LOOKUP(py_true, "_Py_TrueStruct");
	LOOKUP(py_none, "_Py_NoneStruct");
	LOOKUP(code_type, "PyCode_Type");
	LOOKUP(type_from_spec, "PyType_FromSpec");
	LOOKUP(generic_alloc, "PyType_GenericAlloc");
	LOOKUP(vectorcall_call, "PyVectorcall_Call");
	LOOKUP(interp_get, "PyInterpreterState_Get");
	LOOKUP(thread_state_get, "PyThreadState_Get");
	LOOKUP(get_eval_frame, "_PyInterpreterState_GetEvalFrameFunc");
	LOOKUP(set_eval_frame, "_PyInterpreterState_SetEvalFrameFunc");
	*(void **)&rt_capi.request_code_extra =
		sym2("PyUnstable_Eval_RequestCodeExtraIndex", "_PyEval_RequestCodeExtraIndex");
	*(void **)&rt_capi.code_get_extra = sym2("PyUnstable_Code_GetExtra", "_PyCode_GetExtra");
	*(void **)&rt_capi.code_set_extra = sym2("PyUnstable_Code_SetExtra", "_PyCode_SetExtra");
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!*need[i])
			return false;
	return true;
}

/* PY_VERSION_HEX: Py_Version (3.11+), else parsed from Py_GetVersion ("3.10.13 (main..."). */
static unsigned version_hex(void)
{
	const unsigned *v = sym("Py_Version");
	const char *(*get_version)(void) = (const char *(*)(void))sym("Py_GetVersion");
	unsigned major = 0, minor = 0, micro = 0;

	if (v)
		return *v;
	if (!get_version || sscanf(get_version(), "%u.%u.%u", &major, &minor, &micro) < 2)
		return 0;
	return major << 24 | minor << 16 | micro << 8;
}

/* Whether this is the bootstrap of syscope python: python -c BOOTSTRAP syscope:MODE ... */
static bool run_by_bootstrap(void)
{
	py_obj *argv = rt_capi.sys_get("argv");
	py_obj *mode = argv ? rt_capi.list_item(argv, 1) : NULL;
	const char *m = mode ? rt_capi.utf8(mode) : NULL;

	rt_capi.err_clear();
	return m && !strncmp(m, BOOTSTRAP_MODE, strlen(BOOTSTRAP_MODE));
}

/* sys._syscope_start(): the bootstrap is about to run the script. */
static py_obj *start_tracing(py_obj *self, py_obj *args, py_obj *kwargs)
{
	(void)self, (void)args, (void)kwargs;
	rt_py_trace_arm();
	rt_capi.inc_ref(rt_capi.py_none);
	return rt_capi.py_none;
}

static struct py_method_def start_def = { START_ATTR, (void *)start_tracing,
					  PY_METH_VARARGS | PY_METH_KEYWORDS, NULL };

/* Runs in the main thread with the GIL (a pending call), once per process image. */
static int install(void *arg)
{
	const struct sc_settings *s = &rt_proc.settings;
	bool bootstrap;
	py_obj *start;

	(void)arg;
	if (!rt_active())
		return 0;
	rt_capi.version_hex = version_hex();
	rt_capi.minor = (rt_capi.version_hex >> 24) == 3 ? (rt_capi.version_hex >> 16) & 0xff : 0;
	rt_py_names_install();
	if (!sc_bool(s, SC_SET_PYTHON_TRACE))
		return 0;
	bootstrap = run_by_bootstrap();
	if (rt_py_trace_install() && !bootstrap)
		rt_py_trace_arm(); /* a child of the script: traced from here on */
	if (!bootstrap)
		return 0;
	/* The bootstrap waits for this, installed or not. */
	start = rt_capi.cfunction_new(&start_def, NULL, NULL);
	if (!start || rt_capi.sys_set(START_ATTR, start))
		rt_capi.err_clear();
	if (start)
		rt_capi.dec_ref(start);
	return 0;
}

static void pause_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
			       .tv_nsec = (long)(ns % 1000000000u) };

	syscall(SYS_nanosleep, &ts, NULL); /* not through the program's nanosleep wrapper */
}

/* The installer thread: no signals, never recording, gone once the call is queued. */
static void *installer_main(void *arg)
{
	uint64_t start = rt_now_ns();

	(void)arg;
	while (!atomic_load(&installer.stop)) {
		if (installer.late && rt_py_state()) { /* loaded, relocated and looked at */
			if (!find_api())
				break;
			installer.late = false;
		}
		if (!installer.late && rt_capi.is_initialized() &&
		    rt_capi.add_pending_call(install, NULL) == 0)
			break;
		pause_ns(rt_now_ns() - start < FAST_POLL_FOR_NS ? FAST_POLL_NS : SLOW_POLL_NS);
	}
	return NULL;
}

static bool enabled(const struct sc_settings *s)
{
	return sc_bool(s, SC_SET_PYTHON);
}

/* The installer, once the API is there; only from normal context (it starts a thread). */
static void start_installer(bool late)
{
	sigset_t all, old;
	int rc;

	if (atomic_exchange(&installer.started, 1) || (!late && !find_api()))
		return; /* not a Python program (or not one we can work with): nothing to do */ /* not a Python program (or not one we can work with): nothing to do */
	atomic_store(&installer.stop, 0);
	installer.late = late;
	sigfillset(&all);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &all, &old); /* the thread inherits: no signals */
	rc = RT_REAL(pthread_create)(&installer.thread, NULL, installer_main, NULL);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &old, NULL);
	installer.running = rc == 0;
	if (rc)
		rt_note(SC_NOTE_WARN,
			"Python: no thread to wait for the interpreter (%s); no "
			"thread names, roles or tracing",
			strerror(rc));
}

static int process_start(void)
{
	atomic_store(&installer.process_started, 1);
	start_installer(false);
	/* No interpreter yet: an embedder may dlopen one later (rt_py_capi_found). */
	atomic_store(&installer.started, installer.running);
	return 0;
}

void rt_py_capi_found(void)
{
	/* Before process_start, that one looks. A dlopen'ed interpreter is seen first from the
	 * loader's event, in normal context, before its relocation: the installer starts
	 * there and waits until find.c has decided (maybe in a sample's handler, where no
	 * thread can start). */
	if (!atomic_load(&installer.process_started) || rt_self.in_sampler || !rt_active() ||
	    !enabled(&rt_proc.settings))
		return;
	start_installer(true);
}

static void fork_child(void)
{
	/* The installer did not survive fork; what it installed did (the interpreter's state
	 * is the parent's). A call still pending was copied too and runs in the child. */
	installer.running = false;
	rt_py_trace_fork_child();
	rt_py_monitoring_fork_child();
}

static void process_stop(void)
{
	if (!installer.running)
		return;
	atomic_store(&installer.stop, 1);
	pthread_join(installer.thread, NULL);
	installer.running = false;
}

const struct rt_source rt_source_python_api = {
	.name = "python-api",
	.enabled = enabled,
	.process_start = process_start,
	.fork_child = fork_child,
	.process_stop = process_stop,
};
