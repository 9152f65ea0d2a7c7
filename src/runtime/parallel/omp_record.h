/* SPDX-License-Identifier: MIT */
/*
 * OpenMP regions, shared by the two ways syscope sees OpenMP: the OMPT tool (ompt.c, for
 * LLVM's libomp and the runtimes built on it) and the wrappers of libgomp's entry points
 * (gomp.c, for GCC's runtime, which has no OMPT). Both write regions of category "openmp" with
 * the same names, so a program reads alike whichever compiler built it.
 *
 * A construct whose arguments are all numbers is one OMP_REGION record, written at its begin;
 * its end is stored into that record when it ends (no second record, no second reservation),
 * or, when the record has left the thread's current chunk, written as a REGION_END. Others
 * are REGION_BEGIN/REGION_END pairs.
 *
 * Each thread keeps the kinds of the OpenMP regions it opened and where each one's end goes
 * (a small stack in TLS): an end closes the innermost open region of its kind and any left
 * open above it, so records stay nested whatever order a runtime reports its events in, and
 * an end whose begin was never recorded (paused, before the runtime started, lost) writes
 * nothing. A region still open when its thread or process ends keeps no end: readers close
 * it there, marked unterminated.
 */
#ifndef SYSCOPE_RUNTIME_PARALLEL_OMP_RECORD_H
#define SYSCOPE_RUNTIME_PARALLEL_OMP_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "../../store/format.h"

enum omp_kind {
#define SC_OMP_KIND(e, id, name) OMP_##e = id,
#include "../../store/omp_events.def"
#undef SC_OMP_KIND
	OMP_NKINDS
};

/* One argument of a region: a number, or (text != NULL) a string, or an address. `head` is
 * its type character and name as the record holds them ("u\0thread\0"), made at compile time
 * by the macros below so that recording copies it without measuring it; `id` numbers the
 * numeric ones (src/store/omp_events.def), which an OMP_BEGIN record carries by number. */
struct omp_arg {
	const char *head;
	uint32_t head_len;
	uint32_t id; /* enum sc_omp_arg; 0 for a string */
	uint64_t value;
	const char *text;
};

#define OMP_ARG_HEAD(type, n) .head = type "\0" n, .head_len = sizeof(type "\0" n)
#define OMP_U(n, v) \
	((struct omp_arg){ OMP_ARG_HEAD("u", #n), .id = SC_OMP_ARG_##n, .value = (uint64_t)(v) })
#define OMP_S(n, s) ((struct omp_arg){ OMP_ARG_HEAD("s", n), .text = (s) })
#define OMP_P(n, p)                                                     \
	((struct omp_arg){ OMP_ARG_HEAD("p", #n), .id = SC_OMP_ARG_##n, \
			   .value = (uint64_t)(uintptr_t)(p) })

/* OpenMP tracing is on in this process (--parallel=openmp), and the runtime records. */
bool omp_tracing(void);
/* The OMPT tool was started: the libgomp wrappers then only forward (a GCC program run on
 * libomp would otherwise record every event twice). */
extern bool omp_ompt_active;

/* The two ways a begin is written: a construct whose arguments are all numbers (at most
 * SC_OMP_MAX_ARGS, each with an id) as one OMP_REGION, `flags` as its header's (format.h:
 * kind, argument count and ids), `first` and `second` the values; any other as a
 * REGION_BEGIN with its arguments as text. Call omp_begin, which picks. */
void omp_begin_numbers(uint32_t flags, uint64_t first, uint64_t second);
void omp_begin_text(enum omp_kind kind, const struct omp_arg *args, unsigned nargs);

/* Construct `kind` begins on this thread, with `nargs` arguments. Inline so that a call with
 * arguments known at compile time (every call site but a loop's schedule) gets its record's
 * flags made by the compiler: no loop over the arguments at run time. */
static inline void omp_begin(enum omp_kind kind, const struct omp_arg *args, unsigned nargs)
{
	uint32_t flags = (uint32_t)kind | nargs << 6;

	if (nargs > SC_OMP_MAX_ARGS) {
		omp_begin_text(kind, args, nargs);
		return;
	}
	for (unsigned i = 0; i < nargs; i++) {
		if (!args[i].id) {
			omp_begin_text(kind, args, nargs);
			return;
		}
		flags |= args[i].id << (8 + 4 * i);
	}
	omp_begin_numbers(flags, nargs > 0 ? args[0].value : 0, nargs > 1 ? args[1].value : 0);
}

void omp_end(enum omp_kind kind);

#endif /* SYSCOPE_RUNTIME_PARALLEL_OMP_RECORD_H */
