/* SPDX-License-Identifier: MIT */
/*
 * Where CPython keeps what a sampler reads: byte offsets into _PyRuntime, thread states,
 * frames, code objects and strings, one table per minor version (3.10-3.13, x86-64, GIL
 * builds), from each release's own internal headers (docs/design/python-frames.md §1.2).
 * Patch releases of a minor share its table. -1 marks a field the version does not have.
 */
#ifndef SYSCOPE_RUNTIME_PYTHON_LAYOUT_H
#define SYSCOPE_RUNTIME_PYTHON_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_py_layout {
	unsigned minor; /* 10 for 3.10 */

	/* _PyRuntime */
	int32_t rt_tss_key;	/* the GIL-state TSS key (Py_tss_t: int initialized, key) */
	int32_t rt_gil;		/* the GIL, embedded in the runtime (3.10, 3.11) */
	int32_t interp_gil;	/* the interpreter's pointer to its GIL (3.12+) */
	int32_t gil_holder;	/* in the GIL: last_holder (PyThreadState *) */
	int32_t gil_locked;	/* in the GIL: locked (int) */
	int32_t rt_interp_main; /* interpreters.main (PyInterpreterState *) */

	/* PyThreadState */
	int32_t ts_interp;
	int32_t ts_native_tid;	/* native_thread_id (unsigned long, 3.11+) */
	int32_t ts_frame;	/* the top frame, or the _PyCFrame holding it */
	int32_t cframe_current; /* in _PyCFrame: current_frame (3.11, 3.12) */

	/* _PyInterpreterFrame (PyFrameObject on 3.10) */
	int32_t fr_code;      /* f_code / f_executable */
	int32_t fr_previous;  /* previous / f_back */
	int32_t fr_instr;     /* prev_instr / instr_ptr (pointer), f_lasti (int32) on 3.10 */
	int32_t fr_owner;     /* char: 3 = a C-stack shim (3.12+) */
	int32_t fr_is_entry;  /* bool: the first frame of its eval call (3.11) */
	bool instr_is_index;  /* 3.10: fr_instr is a code-unit index, not a pointer */
	uint32_t frame_bytes; /* header bytes that hold every field above */

	/* PyCodeObject */
	int32_t co_filename, co_name, co_qualname, co_linetable, co_firstlineno;
	int32_t co_code;      /* co_code_adaptive: inline bytecode (3.11+) */
	int32_t co_basicsize; /* PyCode_Type.tp_basicsize, checked at start */

	/* objects, bytes and str */
	int32_t ob_type, ob_size, tp_name, tp_basicsize;
	int32_t bytes_data;
	int32_t str_length, str_state;
	int32_t str_ascii_data;	  /* compact ASCII: sizeof(PyASCIIObject) */
	int32_t str_compact_data; /* compact, not ASCII: sizeof(PyCompactUnicodeObject) */
};

#define RT_PY_CSTACK_OWNER 3 /* FRAME_OWNED_BY_CSTACK: the shim of an eval call (3.12+) */

/* The table of a minor version, NULL when syscope has none. */
const struct rt_py_layout *rt_py_layout_of_minor(unsigned minor);

/* What differed between _Py_DebugOffsets and our table (no formatting: a signal handler may
 * be the one that found the interpreter). */
struct rt_py_mismatch {
	const char *what; /* the field, or "cookie", "version" */
	uint64_t found;
	int64_t expected;
};

/*
 * 3.13 publishes its layout at the start of _PyRuntime (_Py_DebugOffsets). Copy it over
 * `base` into `out` and check it against `base`: false, with the first difference in *m,
 * when the cookie, the version or a value is not what our table says. *free_threaded is
 * what the interpreter says of itself. Async-signal-safe.
 */
bool rt_py_layout_from_debug_offsets(const struct rt_py_layout *base, const void *runtime,
				     uint32_t version, struct rt_py_layout *out,
				     bool *free_threaded, struct rt_py_mismatch *m);

#endif /* SYSCOPE_RUNTIME_PYTHON_LAYOUT_H */
