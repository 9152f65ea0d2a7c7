/* SPDX-License-Identifier: MIT */
/*
 * Python frames spliced into a native stack (docs/design/python-frames.md, section 3).
 *
 * The Python frames split into eval groups, innermost first: the frames one C-level call
 * of _PyEval_EvalFrameDefault runs. The k-th innermost group takes the place of the k-th
 * innermost native eval frame; groups beyond the native eval frames (native unwinding cut
 * the stack short) go at the root, eval frames beyond the groups (an eval call that has
 * not linked its first frame yet) stay as they are. Both are counted.
 *
 * The clean view (the default) then leaves out the interpreter's own frames wherever
 * Python frames say more: between two Python frames (call machinery), and leafward of the
 * innermost one until a frame of another module (zlib, torch) takes over, so that the
 * interpreter's work for a line is that line's own time. Frames of other modules always
 * stay, and so do the interpreter frames rootward of the outermost Python frame (main,
 * Py_RunMain...) and those a native module calls without Python frames below.
 */
#include "python.h"

#include <string.h>

static bool name_is(const char *name, const char *want)
{
	size_t n = strlen(want);

	/* GCC's split-off parts: "_PyEval_EvalFrameDefault.cold" */
	return name && !strncmp(name, want, n) && (name[n] == '\0' || name[n] == '.');
}

unsigned sc_py_native_role(const char *const *funcs, unsigned n, bool in_interpreter)
{
	static const char *const gil_wait[] = { "PyEval_RestoreThread", "PyEval_AcquireThread",
						"PyEval_AcquireLock", "PyGILState_Ensure",
						"take_gil" };
	unsigned role = in_interpreter ? SC_PYN_INTERP : 0;

	for (unsigned i = 0; i < n; i++) {
		if (name_is(funcs[i], "_PyEval_EvalFrameDefault"))
			role |= SC_PYN_EVAL;
		for (size_t k = 0; k < sizeof(gil_wait) / sizeof(gil_wait[0]); k++)
			if (name_is(funcs[i], gil_wait[k]))
				role |= SC_PYN_GIL_WAIT;
	}
	return role;
}

/* The end of the eval group whose innermost frame is `first`: after its frame with the
 * group-end bit, or after the last frame. */
static size_t group_end(const uint32_t *instr, size_t npy, size_t first)
{
	size_t i = first;

	while (i < npy && !(instr[i] & SC_PY_FRAME_GROUP_END))
		i++;
	return i < npy ? i + 1 : npy;
}

static void put(struct sc_py_item *items, size_t *n, uint8_t kind, uint32_t index)
{
	items[*n].kind = kind;
	items[*n].index = index;
	(*n)++;
}

/* Innermost first: each native frame, or the group that replaces it. */
static size_t splice_inner_first(const uint8_t *roles, size_t nnative, const uint32_t *instr,
				 size_t npy, bool keep_native, struct sc_py_item *items,
				 struct sc_py_splice *out)
{
	size_t n = 0, py = 0;

	for (size_t i = 0; i < nnative; i++) {
		if ((roles[i] & SC_PYN_EVAL) && py < npy) {
			size_t end = group_end(instr, npy, py);

			while (py < end)
				put(items, &n, SC_PY_ITEM_PYTHON, (uint32_t)py++);
			if (!keep_native)
				continue;
		} else if (roles[i] & SC_PYN_EVAL) {
			out->extra_evals++;
		}
		put(items, &n, SC_PY_ITEM_NATIVE, (uint32_t)i);
	}
	while (py < npy) { /* groups the native stack had no eval frame for */
		size_t end = group_end(instr, npy, py);

		out->extra_groups++;
		while (py < end)
			put(items, &n, SC_PY_ITEM_PYTHON, (uint32_t)py++);
	}
	return n;
}

static void reverse(struct sc_py_item *items, size_t n)
{
	for (size_t i = 0; i < n / 2; i++) {
		struct sc_py_item t = items[i];

		items[i] = items[n - 1 - i];
		items[n - 1 - i] = t;
	}
}

/* Root to leaf: drop interpreter frames that Python frames stand for (see the top). */
static size_t clean_view(const uint8_t *roles, struct sc_py_item *items, size_t n)
{
	size_t out = 0, last_py = SIZE_MAX;
	bool foreign = false; /* a frame of another module since the last Python frame */

	for (size_t i = 0; i < n; i++)
		if (items[i].kind == SC_PY_ITEM_PYTHON)
			last_py = i;
	for (size_t i = 0, seen_py = 0; i < n; i++) {
		const struct sc_py_item *it = &items[i];

		if (it->kind == SC_PY_ITEM_PYTHON) {
			seen_py = 1;
			foreign = false;
		} else if (it->kind == SC_PY_ITEM_NATIVE && seen_py) {
			bool interp = roles[it->index] & SC_PYN_INTERP;

			if (!interp)
				foreign = true;
			else if (i < last_py || !foreign)
				continue;
		}
		items[out++] = *it;
	}
	return out;
}

/* A stack without the GIL that is acquiring it: from the outermost acquiring frame leafward
 * of the innermost Python frame (anywhere, without Python frames) the stack waits. Returns
 * the item where the wait starts, or SIZE_MAX. */
static size_t gil_wait_at(const uint8_t *roles, const struct sc_py_item *items, size_t n)
{
	size_t from = 0;

	for (size_t i = 0; i < n; i++)
		if (items[i].kind == SC_PY_ITEM_PYTHON)
			from = i + 1;
	for (size_t i = from; i < n; i++)
		if (items[i].kind == SC_PY_ITEM_NATIVE && (roles[items[i].index] & SC_PYN_GIL_WAIT))
			return i;
	return SIZE_MAX;
}

size_t sc_py_splice(const uint8_t *roles, size_t nnative, const uint32_t *instr, size_t npy,
		    unsigned gil, bool keep_native, struct sc_py_item *items,
		    struct sc_py_splice *out)
{
	size_t n, wait;

	memset(out, 0, sizeof(*out));
	out->gil = gil;
	n = splice_inner_first(roles, nnative, instr, npy, keep_native, items, out);
	reverse(items, n);
	wait = gil == SC_GIL_RELEASED ? gil_wait_at(roles, items, n) : SIZE_MAX;
	if (wait != SIZE_MAX) {
		out->gil = SC_GIL_WAITING;
		if (!keep_native)
			n = wait; /* the acquisition is the wait, told by the leaf below */
		put(items, &n, SC_PY_ITEM_GIL_WAIT, 0);
	}
	if (!keep_native)
		n = clean_view(roles, items, n);
	return n;
}
