/* SPDX-License-Identifier: MIT */
/* Fallbacks for architectures without a port in src/arch/: correct, a little slower. */
#ifndef SYSCOPE_ARCH_GENERIC_H
#define SYSCOPE_ARCH_GENERIC_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

static inline uint64_t arch_local_fetch_add(uint64_t *p, uint64_t v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

static inline bool arch_local_cas(uint64_t *p, uint64_t old, uint64_t new)
{
	return __atomic_compare_exchange_n(p, &old, new, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Without a port, no cycle counter: the runtime's clock is clock_gettime alone. */
static inline uint64_t arch_cycles(void)
{
	return 0;
}

static inline bool arch_cycles_invariant(void)
{
	return false;
}

/* No binary patching without a port: the C library's versions are fine. */
static inline void arch_zero(void *p, size_t n)
{
	memset(p, 0, n);
}

static inline void arch_copy(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}

/* Without a port, the frame-pointer unwinder only records the interrupted PC. */
#define ARCH_NO_FP_UNWIND 1

#endif /* SYSCOPE_ARCH_GENERIC_H */
