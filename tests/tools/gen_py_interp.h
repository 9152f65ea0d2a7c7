/* SPDX-License-Identifier: MIT */
/* libgen_py_interp.so (gen_py_interp.c): the stand-in interpreter of gen_py_session. */
#ifndef SYSCOPE_TESTS_GEN_PY_INTERP_H
#define SYSCOPE_TESTS_GEN_PY_INTERP_H

#include <stdint.h>

/* Where its _PyRuntime is (taken here: a reference from the program would copy it there). */
void *gen_py_runtime(void);
uint64_t _PyEval_EvalFrameDefault(uint64_t x);
uint64_t _PyObject_Vectorcall(uint64_t x);
uint64_t Py_RunMain(uint64_t x);
uint64_t zlib_compress(uint64_t x);
uint64_t PyNumber_Add(uint64_t x);
uint64_t time_sleep(uint64_t x);
uint64_t PyEval_RestoreThread(uint64_t x);
uint64_t take_gil(uint64_t x);

#endif
