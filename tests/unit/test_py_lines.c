/* SPDX-License-Identifier: MIT */
/*
 * Python on the reader side: the line-table decoders against what real interpreters' own
 * co_lines() said of every instruction of code objects that use every entry form (vectors
 * made by tests/tools/gen_py_line_vectors.py with CPython 3.10.13, 3.11.7, 3.12.1 and
 * 3.13.0), and the splice of Python frames into synthetic native stacks.
 */
#include <stdint.h>

#include "check.h"
#include "model/python.h"

struct py_vector {
	const char *name;
	uint16_t version;
	int32_t first_line;
	const uint8_t *table;
	size_t len;
	const int32_t (*lines)[2]; /* code-unit index, line (-1: none) */
	size_t nlines;
};

#include "py_line_vectors_310.h"
#include "py_line_vectors_311.h"
#include "py_line_vectors_312.h"
#include "py_line_vectors_313.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Every instruction of every vector decodes to co_lines()'s answer; returns how many
 * instructions were checked. */
static size_t check_vectors(const struct py_vector *v, size_t n)
{
	size_t checked = 0;

	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; i < v[k].nlines; i++) {
			int32_t line = -1;
			bool has = sc_py_line_at(v[k].version, v[k].table, v[k].len,
						 v[k].first_line, v[k].lines[i][0], &line);

			if (!has)
				line = -1;
			checked++;
			if (line != v[k].lines[i][1])
				fprintf(stderr, "%#x %s: index %d: line %d, co_lines() says %d\n",
					v[k].version, v[k].name, v[k].lines[i][0], line,
					v[k].lines[i][1]);
			CHECK(line == v[k].lines[i][1]);
		}
	return checked;
}

/* The vectors hold what the decoders must get right: long jumps (the line 5000 lines
 * further on), lines going back, and instructions without a line. */
static void check_vector_coverage(const struct py_vector *v, size_t n)
{
	bool far = false, back = false, none = false;

	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; i < v[k].nlines; i++) {
			far |= v[k].lines[i][1] > 5300;
			none |= v[k].lines[i][1] == -1;
			back |= i && v[k].lines[i][1] >= 0 &&
				v[k].lines[i][1] < v[k].lines[i - 1][1];
		}
	CHECK(far);
	CHECK(back);
	(void)none; /* 3.10 and 3.12 give every instruction of these a line */
}

static void test_line_tables(void)
{
	CHECK(check_vectors(vectors_310, N(vectors_310)) > 100);
	CHECK(check_vectors(vectors_311, N(vectors_311)) > 100);
	CHECK(check_vectors(vectors_312, N(vectors_312)) > 100);
	CHECK(check_vectors(vectors_313, N(vectors_313)) > 100);
	check_vector_coverage(vectors_310, N(vectors_310));
	check_vector_coverage(vectors_311, N(vectors_311));
	check_vector_coverage(vectors_312, N(vectors_312));
	check_vector_coverage(vectors_313, N(vectors_313));
}

/* Bad input never reads past the table: cut tables, unknown versions, index -1. */
static void test_line_table_bounds(void)
{
	const struct py_vector *v = &vectors_311[1];
	int32_t line = 0;

	CHECK(!sc_py_line_at(0x0309, v->table, v->len, v->first_line, 0, &line));
	CHECK(!sc_py_line_at(0x030e, v->table, v->len, v->first_line, 0, &line));
	CHECK(!sc_py_line_at(0x030b, v->table, v->len, v->first_line, -1, &line));
	CHECK(!sc_py_line_at(0x030b, v->table, 0, v->first_line, 0, &line));
	CHECK(!sc_py_line_at(0x030b, v->table, v->len, v->first_line, 1000000, &line));
	for (size_t cut = 0; cut < v->len; cut++) /* each prefix: an answer or none, no read past */
		(void)sc_py_line_at(0x030b, v->table, cut, v->first_line,
				    v->lines[v->nlines - 1][0], &line);
	/* a varint that never ends */
	static const uint8_t endless[] = { 0x80 | 14 << 3, 0x7f, 0x7f, 0x7f };
	CHECK(!sc_py_line_at(0x030b, endless, sizeof(endless), 1, 0, &line));
}

/* A path as text, root to leaf: N<i> native frame i, P<i> Python frame i, W the GIL wait. */
static const char *path_text(const uint8_t *roles, size_t nn, const uint32_t *instr, size_t np,
			     unsigned gil, bool keep, struct sc_py_splice *sp)
{
	static char text[256];
	struct sc_py_item items[64];
	size_t n = sc_py_splice(roles, nn, instr, np, gil, keep, items, sp), at = 0;

	text[0] = '\0';
	for (size_t i = 0; i < n; i++)
		at += (size_t)snprintf(text + at, sizeof(text) - at, "%s%s%u", i ? " " : "",
				       items[i].kind == SC_PY_ITEM_NATIVE   ? "N"
				       : items[i].kind == SC_PY_ITEM_PYTHON ? "P"
									    : "W",
				       items[i].kind == SC_PY_ITEM_GIL_WAIT ? 0 : items[i].index);
	return text;
}

#define I SC_PYN_INTERP
#define E (SC_PYN_INTERP | SC_PYN_EVAL)
#define G (SC_PYN_INTERP | SC_PYN_GIL_WAIT)
#define END SC_PY_FRAME_GROUP_END

static void test_splice(void)
{
	struct sc_py_splice sp;
	/* innermost first: 0 libz deflate, 1 zlib_compress (interp), 2 eval, 3 vectorcall,
	 * 4 eval, 5 PyRun, 6 main (interp) */
	const uint8_t zlib[] = { 0, I, E, I, E, I, I };
	/* Python: 0 compress_it, 1 mid (ends group 0), 2 <module> (ends group 1) */
	const uint32_t two_groups[] = { 5, 7 | END, 3 | END };

	/* The clean view: main and PyRun at the root, then the Python frames; the call
	 * machinery between them and zlib_compress leafward of compress_it go; libz stays. */
	CHECK_STR(path_text(zlib, 7, two_groups, 3, SC_GIL_HELD, false, &sp), "N6 N5 P2 P1 P0 N0");
	CHECK(sp.extra_groups == 0 && sp.extra_evals == 0 && sp.gil == SC_GIL_HELD);
	/* Every native frame kept, eval frames included, Python frames above their own. */
	CHECK_STR(path_text(zlib, 7, two_groups, 3, SC_GIL_HELD, true, &sp),
		  "N6 N5 N4 P2 N3 N2 P1 P0 N1 N0");

	/* One group, two eval frames: the inner eval takes it, the outer one stays. */
	const uint32_t one_group[] = { 5, 7 | END };
	CHECK_STR(path_text(zlib, 7, one_group, 2, SC_GIL_HELD, false, &sp),
		  "N6 N5 N4 N3 P1 P0 N0");
	CHECK(sp.extra_evals == 1 && sp.extra_groups == 0);

	/* More groups than eval frames (the native stack was cut): the rest at the root. */
	const uint8_t cut[] = { 0, I, E };
	CHECK_STR(path_text(cut, 3, two_groups, 3, SC_GIL_HELD, false, &sp), "P2 P1 P0 N0");
	CHECK(sp.extra_groups == 1 && sp.extra_evals == 0);

	/* The last frame without the end bit still ends its group. */
	const uint32_t open_end[] = { 5, 7 };
	CHECK_STR(path_text(cut, 3, open_end, 2, SC_GIL_HELD, false, &sp), "P1 P0 N0");

	/* Waiting for the GIL: 0 futex (libc), 1 take_gil, 2 PyEval_RestoreThread,
	 * 3 time_sleep (interp), 4 eval, 5 main */
	const uint8_t waiting[] = { 0, G, G, I, E, I };
	const uint32_t sleeper[] = { 9 | END };
	CHECK_STR(path_text(waiting, 6, sleeper, 1, SC_GIL_RELEASED, false, &sp), "N5 P0 W0");
	CHECK(sp.gil == SC_GIL_WAITING);
	CHECK_STR(path_text(waiting, 6, sleeper, 1, SC_GIL_RELEASED, true, &sp),
		  "N5 N4 P0 N3 N2 N1 N0 W0");
	/* Holding the GIL there is not waiting (the moment it got it). */
	CHECK_STR(path_text(waiting, 6, sleeper, 1, SC_GIL_HELD, false, &sp), "N5 P0 N0");
	CHECK(sp.gil == SC_GIL_HELD);
	/* Released, in a native module: time that runs without the GIL. */
	CHECK_STR(path_text(zlib, 7, two_groups, 3, SC_GIL_RELEASED, false, &sp),
		  "N6 N5 P2 P1 P0 N0");
	CHECK(sp.gil == SC_GIL_RELEASED);

	/* A native module calling back into Python, then into the interpreter's allocator
	 * without Python frames: 0 PyMem_Malloc (interp), 1 torch op, 2 eval, 3 torch,
	 * 4 PyObject_Call (interp), 5 eval, 6 main. The interpreter frame the foreign module
	 * calls at the leaf stays; the one between torch and the next Python frame goes. */
	const uint8_t callback[] = { I, 0, E, 0, I, E, I };
	const uint32_t cb_py[] = { 4 | END, 8 | END };
	CHECK_STR(path_text(callback, 7, cb_py, 2, SC_GIL_HELD, false, &sp), "N6 P1 N3 P0 N1 N0");

	/* No Python frames at all (a C thread in PyGILState_Ensure): native, and the wait. */
	const uint8_t c_thread[] = { 0, G, 0 };
	CHECK_STR(path_text(c_thread, 3, NULL, 0, SC_GIL_RELEASED, false, &sp), "N2 W0");
	CHECK(sp.gil == SC_GIL_WAITING);
}

static void test_roles(void)
{
	const char *eval[] = { "_PyEval_EvalFrameDefault" };
	const char *cold[] = { "inlined_helper", "_PyEval_EvalFrameDefault.cold" };
	const char *gil[] = { "take_gil", "PyEval_RestoreThread" };
	const char *other[] = { "_PyEval_EvalFrameDefaultX", "PyEval_RestoreThreadState" };

	CHECK(sc_py_native_role(eval, 1, true) == (SC_PYN_INTERP | SC_PYN_EVAL));
	CHECK(sc_py_native_role(cold, 2, false) == SC_PYN_EVAL);
	CHECK(sc_py_native_role(gil, 2, true) == (SC_PYN_INTERP | SC_PYN_GIL_WAIT));
	CHECK(sc_py_native_role(other, 2, false) == 0);
}

int main(void)
{
	test_line_tables();
	test_line_table_bounds();
	test_splice();
	test_roles();
	printf("%d of %d checks failed\n", check_failures, check_count);
	return check_failures != 0;
}
