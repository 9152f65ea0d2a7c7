/* SPDX-License-Identifier: MIT */
/*
 * libgen_py_interp.so: a stand-in for libpython in the sessions gen_py_session writes. It
 * holds functions under the names the reader looks for in an interpreter (the eval loop,
 * the GIL acquisition) and a few others of the interpreter's kind, and the _PyRuntime a
 * PY_RUNTIME record points at, so that symbolized stacks look like CPython's.
 */
#include "gen_py_interp.h"

char _PyRuntime[64]; /* the module holding it is the interpreter */

void *gen_py_runtime(void)
{
	return _PyRuntime;
}

/* Each function does a little work so that a return address 8 bytes in is inside it. */
#define BODY(x)                            \
	volatile uint64_t v_ = (x);        \
	for (int i_ = 0; i_ < 3; i_++)     \
		v_ = v_ * 2654435761u + 1; \
	return v_

__attribute__((noinline)) uint64_t _PyEval_EvalFrameDefault(uint64_t x)
{
	BODY(x);
}

__attribute__((noinline)) uint64_t _PyObject_Vectorcall(uint64_t x)
{
	BODY(x + 1);
}

__attribute__((noinline)) uint64_t Py_RunMain(uint64_t x)
{
	BODY(x + 2);
}

__attribute__((noinline)) uint64_t zlib_compress(uint64_t x)
{
	BODY(x + 3);
}

__attribute__((noinline)) uint64_t PyNumber_Add(uint64_t x)
{
	BODY(x + 4);
}

__attribute__((noinline)) uint64_t time_sleep(uint64_t x)
{
	BODY(x + 5);
}

__attribute__((noinline)) uint64_t PyEval_RestoreThread(uint64_t x)
{
	BODY(x + 6);
}

__attribute__((noinline)) uint64_t take_gil(uint64_t x)
{
	BODY(x + 7);
}
