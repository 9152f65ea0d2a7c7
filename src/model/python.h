/* SPDX-License-Identifier: MIT */
/*
 * Python on the reader side (issue 15; docs/design/python-frames.md sections 3-5): the
 * interpreters and code objects of a process image (PY_RUNTIME, PY_CODE), line tables, the
 * Python frames a sample carries, and the splice that puts them into the native stack.
 *
 * A stack keeps its Python frames raw (code id, instruction) after its native frames
 * (sc_stack.py_nframes of them): a PY_CODE record may come after a sample of another
 * thread, so names and lines are looked up when the stack is turned into a path.
 */
#ifndef SYSCOPE_MODEL_PYTHON_H
#define SYSCOPE_MODEL_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/hashmap.h"
#include "../common/vec.h"
#include "../store/format.h"

struct sc_model;
struct sc_image;
struct sc_stack;

/* The GIL state of a stack, in its flags (SC_STACK_GIL_MASK, shifted): enum sc_py_gil. */
#define SC_STACK_GIL_SHIFT 8
#define SC_STACK_GIL_MASK 0x0300u
#define SC_STACK_PY_TRUNCATED 0x0400u /* its Python walk stopped at the bound */
#define SC_STACK_PY_BAD_CODE 0x0800u  /* ... or at a code object that did not check out */

/* What a stack's GIL state is, once its native frames are known: held, released (native
 * code runs without it) or waiting for it (the native frames are acquiring it). */
enum sc_gil_state {
	SC_GIL_NONE = 0, /* no Python thread state */
	SC_GIL_HELD = 1,
	SC_GIL_RELEASED = 2,
	SC_GIL_WAITING = 3,
	SC_GIL_STATES
};

const char *sc_gil_state_name(unsigned state); /* "none", "holds", "released", "waiting" */

struct sc_py_code {
	uint32_t id;
	int32_t first_line;
	uint16_t version;		 /* PY_VERSION_HEX >> 16: the line table's format */
	uint16_t flags;			 /* SC_PY_CODE_* */
	const char *filename, *qualname; /* interned */
	uint8_t *linetable;
	uint32_t linetable_len;
};

struct sc_py_runtime_info {
	uint64_t ts, runtime;
	uint32_t version;
	uint16_t state, flags;
};

/* The Python side of a process image; NULL in images without Python records. */
struct sc_py_image {
	VEC(struct sc_py_code) codes;
	struct sc_hashmap by_id; /* code id -> index + 1 (the first record of an id) */
	VEC(struct sc_py_runtime_info) runtimes;
	uint64_t bad_records; /* PY_CODE / PY_RUNTIME records whose lengths did not add up */
	uint64_t bad_stacks;  /* samples whose Python part did not fit the record: native only */
	struct sc_module *interp; /* sc_py_interpreter_module's answer, once looked up */
	bool interp_known;
};

/* Count a sample whose SC_SAMPLE_PYTHON part does not fit its record (it keeps its native
 * frames only). */
void sc_py_bad_stack(struct sc_image *img);
/* Keep the image's PY_RUNTIME and PY_CODE records (the metadata pass calls it for both). */
void sc_py_record(struct sc_model *m, struct sc_image *img, const struct sc_record *rec);
void sc_py_image_free(struct sc_py_image *py);
/* Code object `id` of an image, or NULL. */
const struct sc_py_code *sc_py_code_of(const struct sc_image *img, uint32_t id);
/* The line of instruction `instr` (a frame's field: bits 0-30 code-unit index + 1) of a code
 * object: from its line table, else its first line. */
int32_t sc_py_code_line(const struct sc_py_code *c, uint32_t instr);

/*
 * The line of code-unit `index` in line table `table` of format `version` (PY_VERSION_HEX
 * >> 16: 0x030a PEP 626 pairs, 0x030b-0x030d location table), counting from `first_line`.
 * False when the table gives these instructions no line, ends before them, or is of a
 * version it cannot read.
 */
bool sc_py_line_at(uint16_t version, const uint8_t *table, size_t len, int32_t first_line,
		   int64_t index, int32_t *line);

/* The Python part of a SAMPLE record with SC_SAMPLE_PYTHON: its header and frames, or NULL
 * when it has none or it does not fit the record. */
const struct sc_py_stack *sc_py_sample_stack(const struct sc_rec_sample *s,
					     const struct sc_py_frame **frames);

/* The interpreter module of an image: the one holding the _PyRuntime a PY_RUNTIME record
 * names (the first), else NULL. */
struct sc_module *sc_py_interpreter_module(struct sc_image *img);

/* The name of a traced Python call's FUNC address (SC_PY_FUNC_ADDR): its qualname (or
 * "<code N>" when no PY_CODE record names it); `code` gets its code object or NULL. */
const char *sc_py_func_name(struct sc_model *m, const struct sc_image *img, uint64_t addr,
			    const struct sc_py_code **code);

/*
 * The splice (design section 3). Input: a stack's native frames, innermost first, each
 * with what it is (enum sc_py_native_role bits), and its Python frames' instr fields,
 * innermost first. Output: the path, root to leaf, as native frame indexes, Python frame
 * indexes and at most one "[waiting for the GIL]" leaf.
 */
enum sc_py_native_role {
	SC_PYN_INTERP = 0x1,   /* a frame of the interpreter's module */
	SC_PYN_EVAL = 0x2,     /* _PyEval_EvalFrameDefault: runs one eval group */
	SC_PYN_GIL_WAIT = 0x4, /* PyEval_RestoreThread and the like: acquires the GIL */
};

enum sc_py_item_kind {
	SC_PY_ITEM_NATIVE,
	SC_PY_ITEM_PYTHON,
	SC_PY_ITEM_GIL_WAIT
};

struct sc_py_item {
	uint8_t kind; /* enum sc_py_item_kind */
	uint32_t index;
};

struct sc_py_splice {
	unsigned gil; /* enum sc_gil_state: the sample's, RELEASED made WAITING where acquiring */
	uint32_t extra_groups; /* Python eval groups without a native eval frame: at the root */
	uint32_t extra_evals;  /* native eval frames without a Python group: kept */
};

/* Fills `items` (room for nnative + npy + 1) and returns their count. `keep_native`: every
 * native frame stays (--python-native); otherwise interpreter frames between Python frames
 * and leafward of the innermost one are left out (their time is that frame's own), and so
 * is the GIL acquisition of a waiting stack. */
size_t sc_py_splice(const uint8_t *roles, size_t nnative, const uint32_t *instr, size_t npy,
		    unsigned gil, bool keep_native, struct sc_py_item *items,
		    struct sc_py_splice *out);

/* The role bits of a native frame whose inline chain names `funcs` (n of them). */
unsigned sc_py_native_role(const char *const *funcs, unsigned n, bool in_interpreter);

#endif /* SYSCOPE_MODEL_PYTHON_H */
