/* SPDX-License-Identifier: MIT */
/*
 * Where each instruction of a trampoline came from, for the sampler's unwinders.
 *
 * A trampoline (apply.c) has no unwind information: a sample whose pc is one of its own
 * instructions (the push of the id, the call of the stub, the displaced instructions, the
 * jump back) could not be walked. But each of those runs in a state the function's own code
 * has at a known address: before the stub's call and after it, the function's entry; a
 * displaced instruction, the original one it was copied from; the jump back, the first byte
 * after the displaced ones. Only the stack pointer can differ (the pushed id, a loop probe's
 * step over the red zone, the return address of a re-emitted call being written). So each
 * trampoline slot gets a short list of steps: from this offset in the slot, the original
 * address is patch start + `from`, and the stack pointer is `adjust` words below the
 * original's. The unwinders restart their walk there, with the function's own unwind
 * information.
 *
 * The lists live in the trampoline block itself (after the code, read-only with it), and
 * the blocks in a fixed table published with release stores, so that the lookup is
 * async-signal-safe: no lock, no allocation, only reads of memory that stays mapped while a
 * thread runs in it.
 */
#include <stdatomic.h>
#include <string.h>

#include "patch.h"
#include "tramp_map.h"

#define MAX_BLOCKS 1024

static struct {
	_Atomic uintptr_t code; /* the block's first trampoline, 0 when free */
	uintptr_t funcs_end;	/* after the function trampolines: the probes' */
	uintptr_t probes_end;
	const struct rt_tramp_steps *steps; /* the functions', then the probes' */
	uint32_t nfuncs;
} blocks[MAX_BLOCKS];
static _Atomic unsigned nblocks;

void rt_tramp_steps_begin(struct rt_tramp_steps *s, uint64_t patch_at)
{
	memset(s, 0, sizeof(*s));
	s->patch_at = patch_at;
}

void rt_tramp_step(struct rt_tramp_steps *s, unsigned at, unsigned from, unsigned adjust_words)
{
	if (s->n < RT_TRAMP_MAX_STEPS)
		s->step[s->n++] =
			(struct rt_tramp_step){ (uint8_t)at, (uint8_t)from, (uint8_t)adjust_words };
}

void rt_tramp_map_add(uintptr_t code, uint32_t nfuncs, uint32_t nprobes,
		      const struct rt_tramp_steps *steps)
{
	unsigned i, n = atomic_load_explicit(&nblocks, memory_order_relaxed);

	for (i = 0; i < n; i++)
		if (!atomic_load_explicit(&blocks[i].code, memory_order_relaxed))
			break;
	if (i == MAX_BLOCKS)
		return; /* its samples end unwalked, as before this table */
	blocks[i].funcs_end = code + (uintptr_t)nfuncs * RT_TRAMP_FUNC_SIZE;
	blocks[i].probes_end = blocks[i].funcs_end + (uintptr_t)nprobes * RT_TRAMP_PROBE_SIZE;
	blocks[i].steps = steps;
	blocks[i].nfuncs = nfuncs;
	atomic_store_explicit(&blocks[i].code, code, memory_order_release);
	if (i == n)
		atomic_store_explicit(&nblocks, n + 1, memory_order_release);
}

void rt_tramp_map_remove(uintptr_t code)
{
	unsigned n = atomic_load_explicit(&nblocks, memory_order_acquire);

	for (unsigned i = 0; i < n; i++)
		if (atomic_load_explicit(&blocks[i].code, memory_order_relaxed) == code)
			atomic_store_explicit(&blocks[i].code, 0, memory_order_release);
}

enum rt_tramp_where rt_patch_tramp_origin(uint64_t pc, uint64_t *orig, unsigned *adjust_bytes)
{
	unsigned n = atomic_load_explicit(&nblocks, memory_order_acquire);

	for (unsigned i = 0; i < n; i++) {
		uintptr_t code = atomic_load_explicit(&blocks[i].code, memory_order_acquire);
		const struct rt_tramp_steps *s;
		uint64_t slot, off;
		bool probe = pc >= blocks[i].funcs_end;
		int k;

		if (!code || pc < code || pc >= blocks[i].probes_end)
			continue;
		if (!probe) {
			slot = (pc - code) / RT_TRAMP_FUNC_SIZE;
			off = (pc - code) % RT_TRAMP_FUNC_SIZE;
		} else {
			slot = blocks[i].nfuncs + (pc - blocks[i].funcs_end) / RT_TRAMP_PROBE_SIZE;
			off = (pc - blocks[i].funcs_end) % RT_TRAMP_PROBE_SIZE;
		}
		s = &blocks[i].steps[slot];
		for (k = s->n - 1; k >= 0 && s->step[k].at > off; k--)
			;
		if (k < 0)
			return RT_TRAMP_NONE; /* a slot left unbuilt (its bytes did not match) */
		*orig = s->patch_at + s->step[k].from;
		*adjust_bytes = 8u * s->step[k].adjust;
		/* Up to the first displaced instruction, a function's state is its entry's. */
		return !probe && !s->step[k].from ? RT_TRAMP_AT_ENTRY : RT_TRAMP_IN_BODY;
	}
	return RT_TRAMP_NONE;
}
