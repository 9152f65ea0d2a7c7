/* SPDX-License-Identifier: MIT */
/* tramp_map.c: where each instruction of a trampoline came from (for the unwinders). */
#ifndef SYSCOPE_RUNTIME_PATCH_TRAMP_MAP_H
#define SYSCOPE_RUNTIME_PATCH_TRAMP_MAP_H

#include <stdint.h>

#define RT_TRAMP_FUNC_SIZE 64u
#define RT_TRAMP_PROBE_SIZE 96u /* a loop probe's also steps over the red zone */
/* A probe's four (red zone, id, call, red zone back), two per displaced instruction (a
 * re-emitted call's push takes two), the jump back. */
#define RT_TRAMP_MAX_STEPS 18

struct rt_tramp_step {
	uint8_t at;	/* from this offset in the trampoline slot */
	uint8_t from;	/* the state of the original code at patch start + `from` */
	uint8_t adjust; /* with the stack pointer this many words below the original's */
};

/* One trampoline slot's steps, in the order of their offsets. */
struct rt_tramp_steps {
	uint64_t patch_at; /* the original code's patch start, at run time */
	uint8_t n;
	struct rt_tramp_step step[RT_TRAMP_MAX_STEPS];
};

void rt_tramp_steps_begin(struct rt_tramp_steps *s, uint64_t patch_at);
void rt_tramp_step(struct rt_tramp_steps *s, unsigned at, unsigned from, unsigned adjust_words);
/* A block of trampolines at `code` (`nfuncs` function slots, then `nprobes` probe slots)
 * and its steps (nfuncs + nprobes, kept mapped by the caller while the block is in the
 * table; a slot with no steps was not built). A full table leaves the block out. */
void rt_tramp_map_add(uintptr_t code, uint32_t nfuncs, uint32_t nprobes,
		      const struct rt_tramp_steps *steps);
/* Before the block at `code` is unmapped. */
void rt_tramp_map_remove(uintptr_t code);

#endif
