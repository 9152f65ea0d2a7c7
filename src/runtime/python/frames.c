/* SPDX-License-Identifier: MIT */
/*
 * The Python frames of a sample (docs/design/python-frames.md §1.3, §1.4, §5), read by the
 * sampled thread's own signal handler: its thread state through the GIL-state TSS key (set
 * whether or not it holds the GIL), the chain of frames from the innermost, each frame's
 * code object (checked to be one) and instruction, the ends of eval groups, and the GIL.
 *
 * No allocation, no lock, no Python API: loads of the thread's own structures, every
 * pointer checked before it is followed, every loop bounded. The thread may be stopped in
 * the middle of pushing or popping a frame; a frame whose code does not check out ends the
 * walk (SC_PY_STACK_BAD_CODE), and too many of those early on mean the layout is wrong for
 * this interpreter: Python frames go off for the process, with a note. A fault that the
 * checks missed lands in syscope's fault recorder, which resumes here (rt_py_recover_fault)
 * and the sample keeps its native frames.
 */
#include "internal.h"

#include <setjmp.h>

#define MAX_TSS_KEY 1024u		    /* PTHREAD_KEYS_MAX */
#define MAX_STEPS (2 * SC_PY_STACK_MAX + 2) /* frames and the eval calls' shims between */
#define CHECK_FRAMES 1000u		    /* the first frames, where a wrong layout shows */
#define MAX_BAD_SHARE 100u		    /* more than 1 in 100 bad: the layout is wrong */

static atomic_uint frames_checked, frames_bad;

static RT_TLS sigjmp_buf recovery;
static RT_TLS volatile sig_atomic_t walking;

/* SC_PY_GIL_HELD when the GIL is locked by this thread state (§5). */
static uint8_t gil_state(const struct rt_py_layout *L, uintptr_t ts)
{
	uintptr_t gil;

	if (L->rt_gil >= 0) {
		gil = rt_py.runtime + (uintptr_t)L->rt_gil;
	} else {
		uintptr_t interp = rt_py_ptr(ts, L->ts_interp);

		if (!rt_py_plausible(interp))
			return SC_PY_GIL_NONE;
		gil = rt_py_ptr(interp, L->interp_gil);
		if (!rt_py_plausible(gil))
			return SC_PY_GIL_NONE;
	}
	return rt_py_i32(gil, L->gil_locked) && rt_py_ptr(gil, L->gil_holder) == ts
		       ? SC_PY_GIL_HELD
		       : SC_PY_GIL_RELEASED;
}

static uintptr_t top_frame(const struct rt_py_layout *L, uintptr_t ts)
{
	uintptr_t f = rt_py_ptr(ts, L->ts_frame);

	if (L->cframe_current >= 0 && rt_py_plausible(f))
		f = rt_py_ptr(f, L->cframe_current);
	return f;
}

/* The frame's instruction as sc_py_frame.instr wants it: code-unit index + 1, 0 for -1
 * (a frame that has not started) and for anything outside its code. */
static uint32_t instruction(const struct rt_py_layout *L, uintptr_t f, uintptr_t co)
{
	int64_t index, units;

	if (L->instr_is_index) {
		index = rt_py_i32(f, L->fr_instr);
		units = 1 << 30;
	} else {
		index = ((int64_t)rt_py_ptr(f, L->fr_instr) -
			 (int64_t)(co + (uintptr_t)L->co_code)) /
			2;
		units = *(const int64_t *)(co + (uintptr_t)L->ob_size); /* code units */
	}
	return index >= 0 && index < units ? (uint32_t)index + 1 : 0;
}

static void count_frame(bool bad)
{
	unsigned checked, nbad;

	if (atomic_load_explicit(&frames_checked, memory_order_relaxed) >= CHECK_FRAMES)
		return;
	checked = atomic_fetch_add_explicit(&frames_checked, 1, memory_order_relaxed) + 1;
	nbad = bad ? atomic_fetch_add_explicit(&frames_bad, 1, memory_order_relaxed) + 1
		   : atomic_load_explicit(&frames_bad, memory_order_relaxed);
	if (nbad * MAX_BAD_SHARE > CHECK_FRAMES)
		rt_py_disable_bad_layout(nbad, checked);
}

/* The frame at `f` with code `co` as the memo has it (internal.h): the same instruction
 * and entry flag, and the code object's fields that its fingerprint folds (codes.c). */
static inline bool memo_hit(const struct rt_py_memo_frame *m, uintptr_t f, uintptr_t co,
			    uintptr_t ip, uint8_t entry, const struct rt_py_layout *L)
{
	return m->f == f && m->co == co && m->instr_ptr == ip && m->is_entry == entry &&
	       rt_py_ptr(co, L->co_linetable) == m->linetable &&
	       rt_py_ptr(co, L->co_filename) == m->filename &&
	       rt_py_ptr(co, L->co_name) == m->name &&
	       rt_py_i32(co, L->co_firstlineno) == m->first_line;
}

static void memo_fill(struct rt_py_memo_frame *m, uintptr_t f, uintptr_t co, uintptr_t ip,
		      uint8_t entry, struct sc_py_frame out)
{
	const struct rt_py_layout *L = &rt_py.layout;

	m->f = 0; /* empty while it is filled (a fault may stop it half way) */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	m->co = co;
	m->instr_ptr = ip;
	m->is_entry = entry;
	m->linetable = rt_py_ptr(co, L->co_linetable);
	m->filename = rt_py_ptr(co, L->co_filename);
	m->name = rt_py_ptr(co, L->co_name);
	m->first_line = rt_py_i32(co, L->co_firstlineno);
	m->out = out;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (out.code_id)
		m->f = f; /* last: the entry counts from here */
}

/* A frame that is not the memo's: checked, its instruction and code id looked up. */
static bool read_frame(const struct rt_py_layout *L, uintptr_t f, uintptr_t co, uint8_t entry,
		       struct sc_py_frame *out)
{
	if (!rt_py_is(co, rt_py.code_type)) {
		count_frame(true);
		return false;
	}
	count_frame(false);
	out->instr = instruction(L, f, co) | (entry ? SC_PY_FRAME_GROUP_END : 0);
	out->code_id = rt_py_code_id_of_code(co);
	return true;
}

/*
 * The chain from `f`, innermost first, into out (nframes kept up to date: a fault may end
 * the walk anywhere; the stores are volatile, so a frame is there before it counts without
 * a compiler barrier that would reload everything at each frame). With a memo (a call
 * site's walk), a frame as it was at the last call keeps its code id and instruction: a
 * few loads and compares instead of the checks and the table's lookup (internal.h).
 */
static void walk(const struct rt_py_layout *L, uintptr_t f, struct rt_py_sample *out,
		 struct rt_py_memo *memo)
{
	volatile struct sc_py_stack *head = &out->stack;
	volatile struct sc_py_frame *frames = out->frame;
	const int32_t fr_owner = L->fr_owner, fr_is_entry = L->fr_is_entry;
	const int32_t fr_code = L->fr_code, fr_previous = L->fr_previous, fr_instr = L->fr_instr;
	const bool by_index = L->instr_is_index;
	const unsigned memo_frames = memo ? RT_PY_MEMO_FRAMES : 0;
	unsigned n = 0;

	for (unsigned step = 0; f && step < MAX_STEPS; step++) {
		struct sc_py_frame fr;
		uintptr_t co, ip;
		uint8_t entry;

		if (!rt_py_plausible(f)) {
			head->flags |= SC_PY_STACK_BAD_CODE;
			return;
		}
		if (fr_owner >= 0 &&
		    *(const uint8_t *)(f + (uintptr_t)fr_owner) == RT_PY_CSTACK_OWNER) {
			/* The shim an eval call pushes: the frame before it ends that call's group. */
			if (n)
				frames[n - 1].instr |= SC_PY_FRAME_GROUP_END;
			f = rt_py_ptr(f, fr_previous);
			continue;
		}
		co = rt_py_ptr(f, fr_code);
		entry = by_index ||
			(fr_is_entry >= 0 && *(const uint8_t *)(f + (uintptr_t)fr_is_entry));
		if (n < memo_frames) {
			struct rt_py_memo_frame *m = &memo->frame[n];

			ip = by_index ? (uintptr_t)(uint32_t)rt_py_i32(f, fr_instr)
				      : rt_py_ptr(f, fr_instr);
			if (memo_hit(m, f, co, ip, entry, L)) {
				fr = m->out;
			} else {
				if (!read_frame(L, f, co, entry, &fr))
					goto bad;
				memo_fill(m, f, co, ip, entry, fr);
			}
		} else {
			if (n == SC_PY_STACK_MAX) {
				head->flags |= SC_PY_STACK_TRUNCATED;
				return;
			}
			if (!read_frame(L, f, co, entry, &fr))
				goto bad;
		}
		frames[n].code_id = fr.code_id;
		frames[n].instr = fr.instr;
		head->nframes = (uint16_t)++n; /* after the frame: volatile stores keep order */
		f = rt_py_ptr(f, fr_previous);
	}
	if (f)
		head->flags |= SC_PY_STACK_TRUNCATED;
	return;
bad:
	head->flags |= SC_PY_STACK_BAD_CODE;
}

static uintptr_t thread_state(const struct rt_py_layout *L)
{
	uintptr_t key = rt_py.runtime + (uintptr_t)L->rt_tss_key;
	uint32_t k;

	if (!*(const int32_t *)key)
		return 0; /* before Py_Initialize */
	k = *(const uint32_t *)(key + 4);
	if (k >= MAX_TSS_KEY) {
		rt_py_disable_bad_tstate("GIL-state TSS key", k, MAX_TSS_KEY - 1);
		return 0;
	}
	return (uintptr_t)pthread_getspecific((pthread_key_t)k);
}

/* Once, at the first thread state found (§2): it must be the sampled thread's (3.11+
 * record the thread's id), and the main thread's must belong to the main interpreter. A
 * TSS key or a layout that moved in a patch release shows here, not as silently empty
 * stacks. */
static bool thread_state_checks_out(const struct rt_py_layout *L, uintptr_t ts)
{
	static atomic_bool tid_checked, interp_checked;
	uintptr_t interp, main;
	uint64_t tid;

	if (L->ts_native_tid >= 0 && !atomic_load_explicit(&tid_checked, memory_order_relaxed) &&
	    !atomic_exchange(&tid_checked, true)) {
		tid = (uint64_t)rt_py_ptr(ts, L->ts_native_tid);
		if (tid != (uint64_t)rt_self.tid) {
			rt_py_disable_bad_tstate("native_thread_id", tid, rt_self.tid);
			return false;
		}
	}
	if (rt_self.tid == rt_proc.pid &&
	    !atomic_load_explicit(&interp_checked, memory_order_relaxed) &&
	    !atomic_exchange(&interp_checked, true)) {
		interp = rt_py_ptr(ts, L->ts_interp);
		main = rt_py_ptr(rt_py.runtime, L->rt_interp_main);
		if (interp != main || !rt_py_plausible(interp)) {
			rt_py_disable_bad_tstate("interp", interp, (int64_t)main);
			return false;
		}
	}
	return true;
}

/* Where a fault in rt_py_sample happened, for its recovery. */
enum stage {
	STAGE_PENDING,
	STAGE_THREAD_STATE,
	STAGE_WALK
};
static RT_TLS volatile sig_atomic_t stage;

static uint32_t recovered(struct sc_py_stack *head, unsigned codes_mark)
{
	walking = 0;
	rt_py_codes_abandon(codes_mark);
	if (stage == STAGE_PENDING) { /* the module's tables went away under the check */
		rt_py_pending_faulted();
		return 0;
	}
	count_frame(true); /* a layout that sends the walk astray is a wrong one */
	if (stage == STAGE_THREAD_STATE)
		return 0; /* the runtime's memory is gone (an unloaded libpython) */
	/* A fault inside the walk: keep the frames read before it. */
	head->flags |= SC_PY_STACK_BAD_CODE;
	return (uint32_t)(sizeof(*head) + head->nframes * sizeof(struct sc_py_frame));
}

uint32_t rt_py_sample(struct rt_py_sample *out)
{
	return rt_py_sample_memo(out, NULL);
}

uint32_t rt_py_sample_memo(struct rt_py_sample *out, struct rt_py_memo *memo)
{
	const struct rt_py_layout *L = &rt_py.layout;
	struct sc_py_stack *volatile head = &out->stack;
	unsigned codes_mark;
	uintptr_t ts;

	if (!rt_py_sampling_on())
		return 0;
	head->nframes = 0;
	head->flags = 0;
	head->reserved = 0;
	codes_mark = rt_py_codes_mark();
	stage = STAGE_PENDING;
	if (sigsetjmp(recovery, 0))
		return recovered(head, codes_mark);
	/* Everything below reads the interpreter's module, which may be unmapped by now. */
	walking = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__builtin_expect(atomic_load_explicit(&rt_py_pending, memory_order_relaxed), 0)) {
		rt_py_check_pending();
		if (atomic_load(&rt_py.state) != SC_PY_FRAMES)
			goto none;
	}
	stage = STAGE_THREAD_STATE;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ts = thread_state(L);
	if (!rt_py_plausible(ts) || !thread_state_checks_out(L, ts))
		goto none; /* no Python on this thread, or Python frames just went off */
	stage = STAGE_WALK;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	head->gil = SC_PY_GIL_NONE;
	head->gil = gil_state(L, ts);
	if (memo) {
		unsigned gen = atomic_load_explicit(&rt_py_codes_generation, memory_order_relaxed);

		if (memo->generation != gen) { /* a fork child: the table's ids are new */
			for (unsigned i = 0; i < RT_PY_MEMO_FRAMES; i++)
				memo->frame[i].f = 0;
			memo->generation = gen;
		}
	}
	walk(L, top_frame(L, ts), out, memo);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	walking = 0;
	return (uint32_t)(sizeof(*head) + head->nframes * sizeof(out->frame[0]));
none:
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	walking = 0;
	return 0;
}

void rt_py_check_pending_guarded(void)
{
	sigset_t samplers, old;

	if (!atomic_load(&rt_py_pending))
		return;
	/* No sample's walk in between: it would take the recovery point over. */
	rt_signals_sampler_set(&samplers);
	RT_REAL(pthread_sigmask)(SIG_BLOCK, &samplers, &old);
	stage = STAGE_PENDING;
	if (sigsetjmp(recovery, 0)) {
		rt_py_pending_faulted(); /* the module's tables went away under the check */
	} else {
		walking = 1;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		rt_py_check_pending();
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		walking = 0;
	}
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &old, NULL);
}

void rt_py_recover_fault(int sig)
{
	sigset_t again;

	if (!walking)
		return;
	walking = 0;
	/* The fault's signal is blocked while its handler runs; siglongjmp(…, 0) leaves the
	 * mask alone, so let it through again first. */
	sigemptyset(&again);
	sigaddset(&again, sig);
	RT_REAL(pthread_sigmask)(SIG_UNBLOCK, &again, NULL);
	siglongjmp(recovery, 1);
}
