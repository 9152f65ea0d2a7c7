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

#define FAST_POLL_NS 1000000ull	 /* while a normal start-up would still be going on */
#define SLOW_POLL_NS 10000000ull /* later: an embedder may initialize whenever it likes */
#define FAST_POLL_FOR_NS 5000000000ull
#define READY_FLAG "_syscope_ready" /* sys attribute the bootstrap of syscope python waits for */

struct rt_py_capi rt_py;

static struct {
	pthread_t thread;
	bool running;
	atomic_int stop;
} installer;

static void *sym(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

/* The first of two names (the newer first: 3.12 renamed the code-extra functions). */
static void *sym2(const char *name, const char *older)
{
	void *p = sym(name);

	return p ? p : sym(older);
}

#define LOOKUP(field, name) (*(void **)&rt_py.field = sym(name))

/* The entry points; false when this is no CPython (or one missing a part we need). */
static bool find_api(void)
{
	void **need[] = {
		(void **)&rt_py.is_initialized, (void **)&rt_py.add_pending_call,
		(void **)&rt_py.inc_ref,	(void **)&rt_py.dec_ref,
		(void **)&rt_py.get_attr,	(void **)&rt_py.set_attr,
		(void **)&rt_py.call,		(void **)&rt_py.type_of,
		(void **)&rt_py.utf8,		(void **)&rt_py.tuple_item,
		(void **)&rt_py.tuple_size,	(void **)&rt_py.tuple_new,
		(void **)&rt_py.tuple_set,	(void **)&rt_py.dict_item,
		(void **)&rt_py.sys_get,	(void **)&rt_py.err_clear,
		(void **)&rt_py.err_fetch,	(void **)&rt_py.err_restore,
		(void **)&rt_py.cfunction_new,	(void **)&rt_py.instance_method,
		(void **)&rt_py.sys_set,	(void **)&rt_py.py_true,
		(void **)&rt_py.py_none,	(void **)&rt_py.code_type,
	};

	LOOKUP(is_initialized, "Py_IsInitialized");
	LOOKUP(add_pending_call, "Py_AddPendingCall");
	LOOKUP(inc_ref, "Py_IncRef");
	LOOKUP(dec_ref, "Py_DecRef");
	LOOKUP(get_attr, "PyObject_GetAttrString");
	LOOKUP(set_attr, "PyObject_SetAttrString");
	LOOKUP(call, "PyObject_Call");
	LOOKUP(type_of, "PyObject_Type");
	LOOKUP(utf8, "PyUnicode_AsUTF8");
	LOOKUP(tuple_item, "PyTuple_GetItem");
	LOOKUP(tuple_size, "PyTuple_Size");
	LOOKUP(tuple_new, "PyTuple_New");
	LOOKUP(tuple_set, "PyTuple_SetItem");
	LOOKUP(dict_item, "PyDict_GetItemString");
	LOOKUP(sys_get, "PySys_GetObject");
	*(void **)&rt_py.is_finalizing = sym2("Py_IsFinalizing", "_Py_IsFinalizing");
	LOOKUP(err_clear, "PyErr_Clear");
	LOOKUP(err_fetch, "PyErr_Fetch");
	LOOKUP(err_restore, "PyErr_Restore");
	LOOKUP(cfunction_new, "PyCFunction_NewEx");
	LOOKUP(instance_method, "PyInstanceMethod_New");
	LOOKUP(sys_set, "PySys_SetObject");
	LOOKUP(add_audit_hook, "PySys_AddAuditHook");
	LOOKUP(py_true, "_Py_TrueStruct");
	LOOKUP(py_none, "_Py_NoneStruct");
	LOOKUP(code_type, "PyCode_Type");
	LOOKUP(interp_get, "PyInterpreterState_Get");
	LOOKUP(get_eval_frame, "_PyInterpreterState_GetEvalFrameFunc");
	LOOKUP(set_eval_frame, "_PyInterpreterState_SetEvalFrameFunc");
	*(void **)&rt_py.request_code_extra =
		sym2("PyUnstable_Eval_RequestCodeExtraIndex", "_PyEval_RequestCodeExtraIndex");
	*(void **)&rt_py.code_get_extra = sym2("PyUnstable_Code_GetExtra", "_PyCode_GetExtra");
	*(void **)&rt_py.code_set_extra = sym2("PyUnstable_Code_SetExtra", "_PyCode_SetExtra");
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

/* Runs in the main thread with the GIL (a pending call), once per process image. */
static int install(void *arg)
{
	const struct sc_settings *s = &rt_proc.settings;

	(void)arg;
	if (!rt_active())
		return 0;
	rt_py.version_hex = version_hex();
	rt_py.minor = (rt_py.version_hex >> 24) == 3 ? (rt_py.version_hex >> 16) & 0xff : 0;
	rt_py_names_install();
	if (sc_bool(s, SC_SET_PYTHON_TRACE)) {
		rt_py_trace_install();
		/* The bootstrap of syscope python waits for this, installed or not. */
		if (rt_py.sys_set(READY_FLAG, rt_py.py_true))
			rt_py.err_clear();
	}
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
		if (rt_py.is_initialized() && rt_py.add_pending_call(install, NULL) == 0) {
			break;
		}
		pause_ns(rt_now_ns() - start < FAST_POLL_FOR_NS ? FAST_POLL_NS : SLOW_POLL_NS);
	}
	return NULL;
}

static bool enabled(const struct sc_settings *s)
{
	return sc_bool(s, SC_SET_PYTHON);
}

static int process_start(void)
{
	sigset_t all, old;
	int rc;

	if (!find_api())
		return 0; /* not a Python program (or not one we can work with): nothing to do */
	atomic_store(&installer.stop, 0);
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
	return 0;
}

static void fork_child(void)
{
	/* The installer did not survive fork; what it installed did (the interpreter's state
	 * is the parent's). A call still pending was copied too and runs in the child. */
	installer.running = false;
	rt_py_trace_fork_child();
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
