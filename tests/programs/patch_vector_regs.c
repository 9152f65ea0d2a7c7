/* SPDX-License-Identifier: MIT */
/*
 * Vector registers across patched calls. The ABI lets a callee clobber every vector
 * register, but a compiler that sees the callee's code (GCC's -fipa-ra) keeps values in the
 * ones it leaves alone, so a probe must leave all of them as the function did: the upper
 * halves of ymm0-15 and, with AVX-512, zmm16-31 and the mask registers k1-k7, none of which
 * the function below touches. Here the calls are made from assembly with known values in
 * those registers, often enough that the recorder's slow paths (a new chunk, a flush) run
 * inside the probes too; afterwards every register must hold its value.
 *
 * Prints "vector registers: N calls, ok (avx2[, avx512])" or the first register that
 * changed; exit status 1 then. Without AVX: "no AVX here" and 0.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"

#define CALLS 300000

static volatile long sink;

/* Integer work only: no vector register, no call (a leaf worth patching). */
NOINLINE long leaf(long x)
{
	sink += x;
	sink ^= x << 3;
	return sink + x;
}

/* leaf(x) from inline assembly: below the red zone, on a 16-byte aligned stack; r12 (saved
 * by the callee) keeps the stack pointer. */
#define CALL_LEAF              \
	"mov %%rsp, %%r12\n\t" \
	"sub $128, %%rsp\n\t"  \
	"and $-16, %%rsp\n\t"  \
	"mov %[x], %%rdi\n\t"  \
	"call leaf\n\t"        \
	"mov %%r12, %%rsp\n\t"

static uint8_t before[32][64] __attribute__((aligned(64)));
static uint8_t after[32][64] __attribute__((aligned(64)));
static uint64_t masks_before[8], masks_after[8];

/* ymm0-15 (full 256 bits) around a call of leaf(). rdi is the argument; the registers the
 * ABI clobbers are declared so. */
static void call_with_ymm(long x)
{
	__asm__ volatile(
#define LOAD(n) "vmovdqu " #n "*64(%[b]), %%ymm" #n "\n\t"
		LOAD(0) LOAD(1) LOAD(2) LOAD(3) LOAD(4) LOAD(5) LOAD(6) LOAD(7) LOAD(8) LOAD(9)
			LOAD(10) LOAD(11) LOAD(12) LOAD(13) LOAD(14) LOAD(15)
#undef LOAD
				CALL_LEAF
#define STORE(n) "vmovdqu %%ymm" #n ", " #n "*64(%[a])\n\t"
					STORE(0) STORE(1) STORE(2) STORE(3) STORE(4) STORE(5)
						STORE(6) STORE(7) STORE(8) STORE(9) STORE(10)
							STORE(11) STORE(12) STORE(13) STORE(14)
								STORE(15)
#undef STORE
									"vzeroupper\n\t"
		:
		: [b] "r"(before), [a] "r"(after), [x] "r"(x)
		: "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "memory",
		  "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
		  "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

/* zmm16-31 and k1-k7 around a call of leaf(). */
__attribute__((target("avx512f"))) static void call_with_zmm(long x)
{
	__asm__ volatile(
#define LOAD(n) "vmovdqu64 " #n "*64(%[b]), %%zmm" #n "\n\t"
		LOAD(16) LOAD(17) LOAD(18) LOAD(19) LOAD(20) LOAD(21) LOAD(22) LOAD(23) LOAD(
			24) LOAD(25) LOAD(26) LOAD(27) LOAD(28) LOAD(29) LOAD(30) LOAD(31)
#undef LOAD
#define KLOAD(n) "kmovw " #n "*8(%[mb]), %%k" #n "\n\t"
			KLOAD(1) KLOAD(2) KLOAD(3) KLOAD(4) KLOAD(5) KLOAD(6) KLOAD(7)
#undef KLOAD
				CALL_LEAF
#define STORE(n) "vmovdqu64 %%zmm" #n ", " #n "*64(%[a])\n\t"
					STORE(16) STORE(17) STORE(18) STORE(19) STORE(20) STORE(
						21) STORE(22) STORE(23) STORE(24) STORE(25)
						STORE(26) STORE(27) STORE(28) STORE(29) STORE(
							30) STORE(31)
#undef STORE
#define KSTORE(n) "kmovw %%k" #n ", " #n "*8(%[ma])\n\t"
							KSTORE(1) KSTORE(2) KSTORE(3) KSTORE(4)
								KSTORE(5) KSTORE(6) KSTORE(7)
#undef KSTORE
									"vzeroupper\n\t"
		:
		: [b] "r"(before), [a] "r"(after), [mb] "r"(masks_before), [ma] "r"(masks_after),
		  [x] "r"(x)
		: "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "memory",
		  "cc", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23",
		  "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k1",
		  "k2", "k3", "k4", "k5", "k6", "k7");
}

static int check(int first, int last, int width, long call, const char *kind)
{
	for (int r = first; r <= last; r++)
		if (memcmp(before[r], after[r], (size_t)width)) {
			printf("vector registers: %s%d changed across call %ld\n", kind, r, call);
			return 1;
		}
	return 0;
}

int main(void)
{
	int avx512;

	if (!__builtin_cpu_supports("avx")) {
		printf("vector registers: no AVX here\n");
		return 0;
	}
	avx512 = __builtin_cpu_supports("avx512f");
	for (int r = 0; r < 32; r++)
		for (int i = 0; i < 64; i++)
			before[r][i] = (uint8_t)(r * 64 + i + 1);
	for (int k = 1; k < 8; k++)
		masks_before[k] = 0x1111u * (unsigned)k;
	for (long i = 0; i < CALLS; i++) {
		call_with_ymm(i);
		if (check(0, 15, 32, i, "ymm"))
			return 1;
		if (!avx512)
			continue;
		call_with_zmm(i);
		if (check(16, 31, 64, i, "zmm"))
			return 1;
		for (int k = 1; k < 8; k++)
			if (masks_after[k] != masks_before[k]) {
				printf("vector registers: k%d changed across call %ld\n", k, i);
				return 1;
			}
	}
	printf("vector registers: %d calls, ok (avx2%s)\n", CALLS * (avx512 ? 2 : 1),
	       avx512 ? ", avx512" : "");
	return 0;
}
