/* SPDX-License-Identifier: MIT */
/*
 * Callables of a type of syscope's own, called by vectorcall straight into a C function:
 * the sys.monitoring callbacks. CPython calls a callback through PyObject_Vectorcall; a
 * METH_FASTCALL builtin function puts a layer between (cfunction_vectorcall_FASTCALL: the
 * keyword check, the C recursion counter, one more indirect call), 1.7-2.8% of fib's run
 * when its calls are only counted (perf cpu-clock, 3.12 and 3.13). The type is made once
 * with PyType_FromSpec, whose structs (the stable ABI's) are restated here: libsyscope.so
 * includes no Python header. Its instances live for good (sys.monitoring keeps them).
 */
#include "capi.h"

#include <stddef.h>

#define PY_TP_CALL 50
#define PY_TP_MEMBERS 72
#define PY_TPFLAGS_DISALLOW_INSTANTIATION (1u << 7)
#define PY_TPFLAGS_HAVE_VECTORCALL (1u << 11)
#define PY_T_PYSSIZET 19
#define PY_READONLY 1

struct py_member_def {
	const char *name;
	int type;
	py_ssize offset;
	int flags;
	const char *doc;
};

struct py_type_slot {
	int slot;
	void *pfunc;
};

struct py_type_spec {
	const char *name;
	int basicsize, itemsize;
	unsigned flags;
	struct py_type_slot *slots;
};

struct callable {
	py_ssize refcnt; /* PyObject_HEAD of a build with the GIL */
	void *type;
	rt_py_vectorcall_fn call;
};

static py_obj *type; /* made once, kept for good */

static bool make_type(void)
{
	static struct py_member_def members[] = {
		{ "__vectorcalloffset__", PY_T_PYSSIZET, offsetof(struct callable, call),
		  PY_READONLY, NULL },
		{ NULL, 0, 0, 0, NULL },
	};
	struct py_type_slot slots[] = {
		{ PY_TP_CALL, (void *)rt_capi.vectorcall_call }, /* a call by tp_call goes there */
		{ PY_TP_MEMBERS, members },
		{ 0, NULL },
	};
	struct py_type_spec spec = {
		"syscope.callback",
		sizeof(struct callable),
		0,
		PY_TPFLAGS_HAVE_VECTORCALL | PY_TPFLAGS_DISALLOW_INSTANTIATION,
		slots,
	};

	if (!rt_capi.type_from_spec || !rt_capi.generic_alloc || !rt_capi.vectorcall_call)
		return false;
	type = rt_capi.type_from_spec(&spec);
	if (!type)
		rt_capi.err_clear();
	return type != NULL;
}

py_obj *rt_py_vectorcall_new(rt_py_vectorcall_fn fn)
{
	struct callable *c;

	if (!type && !make_type())
		return NULL;
	c = rt_capi.generic_alloc(type, 0);
	if (!c) {
		rt_capi.err_clear();
		return NULL;
	}
	c->call = fn;
	return c;
}
