/* SPDX-License-Identifier: MIT */
/*
 * x86-64 specifics of the runtime: the signal-atomic fetch-add the recorder reserves space
 * with (and the compare-and-swap it gives space back with), the cycle counter, and register
 * access in a signal's ucontext for the frame-pointer unwinder.
 */
#ifndef SYSCOPE_ARCH_X86_64_H
#define SYSCOPE_ARCH_X86_64_H

#include <cpuid.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

/*
 * Add `v` to a thread-private word and return its old value, in one instruction. A signal
 * is delivered between instructions, so a handler on the same thread sees the word either
 * before or after the add, never halfway; no other CPU ever writes the word, so the `lock`
 * prefix (about 20 cycles) is not needed. GNU inline assembly: the C11 atomics would emit
 * `lock xadd`.
 */
static inline uint64_t arch_local_fetch_add(uint64_t *p, uint64_t v)
{
	__asm__ volatile("xaddq %0, %1" : "+r"(v), "+m"(*p) : : "memory");
	return v;
}

/* Replace a thread-private word that still holds `old` with `new`, in one instruction for
 * the same reason (cmpxchg without `lock`). False when a handler changed it meanwhile. */
static inline bool arch_local_cas(uint64_t *p, uint64_t old, uint64_t new)
{
	bool same;

	__asm__ volatile("cmpxchgq %3, %1"
			 : "=@ccz"(same), "+m"(*p), "+a"(old)
			 : "r"(new)
			 : "memory");
	return same;
}

static inline uintptr_t arch_uc_pc(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

static inline uintptr_t arch_uc_sp(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
}

static inline uintptr_t arch_uc_fp(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
}

/*
 * The time-stamp counter, for the runtime's clock (clock.c converts it to CLOCK_MONOTONIC
 * nanoseconds). Plain rdtsc, not rdtscp or lfence;rdtsc: a timestamp may be taken a few
 * cycles early relative to the instructions around it, which no record can notice.
 */
static inline uint64_t arch_cycles(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* An invariant TSC: a constant rate, counting through deep sleep states (CPUID leaf
 * 0x80000007, EDX bit 8; Linux's constant_tsc and nonstop_tsc flags). */
static inline bool arch_cycles_invariant(void)
{
	unsigned a, b, c, d;

	return __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
}

/*
 * Zero and copy bytes without the C library: its AVX2 and AVX-512 versions use vector
 * registers (zmm16-31; vzeroupper clears the upper halves of the others), and the recorder
 * paths that a patched function's probe reaches must leave every vector register as the
 * function left it (patch/stubs_x86_64.S saves only xmm0-15). `rep stos`/`rep movs` touch
 * none, and are fast on any CPU with ERMS.
 */
static inline void arch_zero(void *p, size_t n)
{
	__asm__ volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(0) : "memory");
}

static inline void arch_copy(void *dst, const void *src, size_t n)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

/* In a frame-pointer chain, the saved caller frame pointer and the return address. */
#define ARCH_FP_NEXT_OFFSET 0
#define ARCH_FP_RET_OFFSET 8

#endif /* SYSCOPE_ARCH_X86_64_H */
