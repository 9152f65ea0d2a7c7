/* SPDX-License-Identifier: MIT */
/* State shared by the files of runtime/python/ (python.h is the outside's interface). */
#ifndef SYSCOPE_RUNTIME_PYTHON_INTERNAL_H
#define SYSCOPE_RUNTIME_PYTHON_INTERNAL_H

#include "../rt.h"
#include "dynsym.h"
#include "python.h"

/* The interpreter found in this process; written once by find.c before `state` is set. */
struct rt_py_interp {
	_Atomic int state;	 /* enum sc_py_runtime_state, 0: none found (yet) */
	bool layout_ok;		 /* `layout` is known and checked out */
	uint32_t version;	 /* PY_VERSION_HEX */
	uint16_t flags;		 /* SC_PY_TRACING */
	uintptr_t module_base;	 /* its module's load bias (dlpi_addr), to tell its unload */
	atomic_bool module_gone; /* that module was unloaded: nothing of it may be read */
	uintptr_t runtime, code_type, type_type, str_type, bytes_type;
	struct rt_dynsym syms;
	struct rt_py_layout layout; /* the table's, or 3.13's own (_Py_DebugOffsets) */
};
extern struct rt_py_interp rt_py;

/* Reads of the interpreter's memory. Every pointer is checked first: non-NULL, aligned,
 * below the top of user space; a bad one that passes still faults, which the recovery
 * point of frames.c catches where syscope's fault recorder is installed. */
static inline bool rt_py_plausible(uintptr_t p)
{
	return p >= 4096 && p < 0x800000000000ull && !(p & 7);
}

static inline uintptr_t rt_py_ptr(uintptr_t base, int32_t off)
{
	return *(const uintptr_t *)(base + (uintptr_t)off);
}

static inline int32_t rt_py_i32(uintptr_t base, int32_t off)
{
	return *(const int32_t *)(base + (uintptr_t)off);
}

/* An object of the type at `type` (a plausible pointer to it, the right ob_type). */
static inline bool rt_py_is(uintptr_t obj, uintptr_t type)
{
	return rt_py_plausible(obj) && rt_py_ptr(obj, rt_py.layout.ob_type) == type;
}

/* find.c: PY_RUNTIME with the current state; notes queued by signal handlers. */
void rt_py_record_runtime(void);
void rt_py_flush_notes(void);
/* find.c: an interpreter was found while its module was not relocated yet; its checks are
 * made again by rt_py_check_pending (async-signal-safe) at the next sample or thread event. */
extern atomic_int rt_py_pending;
void rt_py_check_pending(void);
/* frames.c: the same in normal context, under the recovery point (the module may be gone). */
void rt_py_check_pending_guarded(void);
/* find.c: frames.c found the layout wrong at run time (async-signal-safe). */
void rt_py_disable_bad_layout(uint32_t bad, uint32_t checked);
/* find.c: a thread state's `field` was not what it must be (async-signal-safe). */
void rt_py_disable_bad_tstate(const char *field, uint64_t found, int64_t expected);
/* find.c: rt_py_check_pending faulted (the module went away under it): forget it. */
void rt_py_pending_faulted(void);

/* codes.c */
bool rt_py_codes_init(void); /* the table, mapped and pre-faulted; false: no memory */
void rt_py_codes_fork_child(void);
/* A mark of this thread's inserts in progress; a fault after it abandons those begun since
 * (their reserved records committed as LOST, their slots id 0). */
unsigned rt_py_codes_mark(void);
void rt_py_codes_abandon(unsigned mark);
uint32_t rt_py_codes_full_count(void);
uint32_t rt_py_codes_next_id(void); /* the id the next new code object gets */
/* Bumped in a fork child (the table emptied): what a thread remembered of ids is stale. */
extern atomic_uint rt_py_codes_generation;
/* rt_py_code_id of an object already checked to be a code object (a frame's, in walk()). */
uint32_t rt_py_code_id_of_code(uintptr_t co);

/*
 * What a call site's walk found at each depth of the thread's stack last time (frames.c,
 * callsite.c): a CUDA launch loop calls from the same frames, again and again. A frame
 * whose address, code object, instruction pointer and entry flag are as they were, and
 * whose code object still has the same file name, name, line table and first line (what
 * the table's fingerprint folds), keeps its code id and instruction without the table's
 * lookup. Normal context only (the thread's own call sites): a signal handler's sample
 * does not use it. An entry is cleared before it is filled and counts once its frame
 * address is stored last, so a fault in between leaves no half entry.
 */
#define RT_PY_MEMO_FRAMES 60u /* the memo fits a page */
struct rt_py_memo_frame {
	uintptr_t f, co, instr_ptr;
	uintptr_t filename, name, linetable;
	struct sc_py_frame out; /* its code id and instruction (group end included) */
	int32_t first_line;
	uint8_t is_entry;
};
struct rt_py_memo {
	unsigned generation; /* rt_py_codes_generation when filled */
	struct rt_py_memo_frame frame[RT_PY_MEMO_FRAMES];
};
_Static_assert(sizeof(struct rt_py_memo) <= 4096, "the memo is one page");
/* callsite.c: the thread's memo given back at its end (normal context). */
void rt_py_callsite_thread_end(void);
/* frames.c: rt_py_sample with the calling thread's memo (NULL: none), normal context. */
uint32_t rt_py_sample_memo(struct rt_py_sample *out, struct rt_py_memo *memo);

#endif /* SYSCOPE_RUNTIME_PYTHON_INTERNAL_H */
