/* SPDX-License-Identifier: MIT */
/*
 * Python (CPython 3.10-3.13) in the runtime: the interpreter of the process, found in the
 * executable or a libpython3.*.so* when it is mapped (find.c); its layout (layout.h); the
 * process-wide table of code objects (codes.c); the Python frames of samples (frames.c).
 * docs/design/python-frames.md is the design.
 *
 * For the rest of the runtime (the tracer of `syscope python` included), this header is the
 * interface; the python/ files' own state stays inside them.
 */
#ifndef SYSCOPE_RUNTIME_PYTHON_PYTHON_H
#define SYSCOPE_RUNTIME_PYTHON_PYTHON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../store/format.h"
#include "layout.h"

struct dl_phdr_info;

/* ---- the interpreter (any context, after it was found) ---- */

/* An interpreter was found in this process (whatever syscope does with it). */
bool rt_py_found(void);
/* Its PY_VERSION_HEX (micro 0 when only the name told it), 0 when none was found. */
uint32_t rt_py_version(void);
/* Its minor version (11 for 3.11), 0 when none was found. */
unsigned rt_py_minor(void);
/* What syscope does with it (PY_RUNTIME's state), 0 when none was found. */
enum sc_py_runtime_state rt_py_state(void);
/* Its layout, when it is one syscope knows and it checked out at detection (state
 * SC_PY_FRAMES, or SC_PY_OFF for a known, checked one); NULL otherwise. */
const struct rt_py_layout *rt_py_layout(void);
/* Address of the exported `_PyRuntime`, 0 when none was found. */
uintptr_t rt_py_runtime(void);

/* A symbol of the interpreter's module (the executable or libpython), looked up in its
 * dynamic symbol table; NULL when absent or no interpreter was found. Normal context. */
void *rt_py_symbol(const char *name);

/*
 * The process-wide id of a code object (PyCodeObject *), writing its PY_CODE record into
 * the calling thread's stream the first time. 0: not a code object, no checked layout
 * (rt_py_layout() is NULL), or the table is full (counted). Works under --no-python too. Async-signal-safe and lock-free: the sampler's handler and the tracer (normal
 * context, GIL held) both call it; call it before reserving a record of your own.
 */
uint32_t rt_py_code_id(uintptr_t code_object);

/* The tracer says whether it traces Python calls: PY_RUNTIME is written again with
 * SC_PY_TRACING set or cleared. Normal context. */
void rt_py_set_tracing(bool on);

/* ---- hooks for the rest of the runtime ---- */

/* modules.c: a module was loaded (or is there at start); async-signal-safe. */
void rt_py_module_loaded(const struct dl_phdr_info *info);
/* capi.c: an interpreter was found (find.c's publish); starts what needs its C API. */
void rt_py_capi_found(void);

/* modules.c: the module loaded at `base` (dlpi_addr) went away; async-signal-safe. */
void rt_py_module_unloaded(uintptr_t base);

/* A sample's Python part: the header and the frames, innermost first. */
struct rt_py_sample {
	struct sc_py_stack stack;
	struct sc_py_frame frame[SC_PY_STACK_MAX];
};

/* True while samples read Python frames: the one branch a non-Python process pays. */
extern atomic_bool rt_py_sampling;
static inline bool rt_py_sampling_on(void)
{
	return atomic_load_explicit(&rt_py_sampling, memory_order_relaxed);
}

/* sampling.c: the calling thread's Python frames and GIL state, read from its own signal
 * handler, into *out; returns the bytes to append to the SAMPLE record (0: none, the
 * thread runs no Python). */
uint32_t rt_py_sample(struct rt_py_sample *out);

/* callsite.c: the CUDA tracer (through the plugin table), in normal context on the calling
 * thread. Are Python stacks read in this process (the one branch a non-Python one pays)?
 * Then record the calling thread's Python stack for CUDA correlation id `corr_id`
 * (PY_CALLSITE); returns rt_record's result, 0 when there is none to record. */
bool rt_py_callsites_on(void);
int rt_py_callsite(uint64_t corr_id);

/* signals.c: a fault inside a Python walk resumes the walk's sample (which keeps its native
 * frames); returns only when the fault was not one. */
void rt_py_recover_fault(int sig);

#endif /* SYSCOPE_RUNTIME_PYTHON_PYTHON_H */
