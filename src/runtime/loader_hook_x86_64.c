/* SPDX-License-Identifier: MIT */
/*
 * The loader event hook on x86-64: a jump over the dynamic loader's _dl_debug_state
 * (r_debug's r_brk, where debuggers break), which the loader calls before and after every
 * change of its list of objects. The jump goes, through a block mapped within reach, to
 * loader_stub_x86_64.S, which keeps every register and calls rt_loader_event (loader.c).
 */
#include "rt.h"

#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define NEAR_LIMIT ((int64_t)1 << 31)

void rt_loader_stub(void); /* loader_stub_x86_64.S */

static bool near(uint64_t a, uint64_t b)
{
	int64_t d = (int64_t)(a - b);

	return d > -NEAR_LIMIT + 4096 && d < NEAR_LIMIT - 4096;
}
/* Map `len` bytes within reach of [lo, hi): free gaps from /proc/self/maps, nearest first
 * below the module, then above. */
void *rt_map_near(uint64_t lo, uint64_t hi, size_t len)
{
	uint64_t prev_end = 0x10000, best = 0;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e;
		uint64_t cand;

		if (sscanf(line, "%llx-%llx", &s, &e) != 2)
			continue;
		if (s >= prev_end + len) {
			/* The gap [prev_end, s): its top part if below the module, else its bottom. */
			cand = s <= lo ? s - len : prev_end;
			cand &= ~(uint64_t)4095;
			if (cand >= prev_end && near(cand, lo) && near(cand + len, hi) &&
			    (!best || (cand < lo ? lo - cand : cand - hi) <
					      (best < lo ? lo - best : best - hi)))
				best = cand;
		}
		if (e > prev_end)
			prev_end = e;
	}
	fclose(f);
	if (!best)
		return NULL;
	void *p = mmap((void *)(uintptr_t)best, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if ((uint64_t)(uintptr_t)p != best) { /* a kernel without MAP_FIXED_NOREPLACE */
		munmap(p, len);
		return NULL;
	}
	return p;
}

static void put_rel32(uint8_t *at, uint64_t from_end, uint64_t to)
{
	int32_t rel = (int32_t)(int64_t)(to - from_end);

	memcpy(at, &rel, 4);
}

/* Put a jump to the loader stub over _dl_debug_state, which is a bare `ret` (or endbr64;
 * ret) followed by padding; anything else is left alone. Returns whether it is in place. */
bool rt_loader_hook_install(void)
{
	uint8_t *f = (uint8_t *)(uintptr_t)_r_debug.r_brk, *block;
	static const uint8_t endbr_ret[5] = { 0xf3, 0x0f, 0x1e, 0xfa, 0xc3 };
	uintptr_t page;
	bool ok;

	if (!f)
		return false;
	ok = !memcmp(f, endbr_ret, 5);
	if (!ok && f[0] == 0xc3) {
		/* ret, then the multi-byte NOP padding compilers put before the next function */
		ok = true;
		for (int i = 1; i < 5; i++)
			ok = ok && (f[i] == 0x66 || f[i] == 0x2e || f[i] == 0x0f || f[i] == 0x1f ||
				    f[i] == 0x84 || f[i] == 0x00 || f[i] == 0x90 || f[i] == 0x44 ||
				    f[i] == 0x40 || f[i] == 0x80);
	}
	if (!ok)
		return false;
	block = rt_map_near((uint64_t)(uintptr_t)f, (uint64_t)(uintptr_t)f + 5, 4096);
	if (!block)
		return false;
	/* jmp *0(%rip); .quad stub */
	memcpy(block, (const uint8_t[6]){ 0xff, 0x25, 0, 0, 0, 0 }, 6);
	memcpy(block + 6, &(uint64_t){ (uint64_t)(uintptr_t)rt_loader_stub }, 8);
	page = (uintptr_t)f & ~(uintptr_t)4095;
	/* The loader's page stays executable during the write (other threads may be running
	 * loader code, which every lazy binding and TLS access does): the one place where a
	 * page is briefly writable and executable. A system that refuses it keeps its loader
	 * as it is. */
	if (mprotect(block, 4096, PROT_READ | PROT_EXEC) ||
	    mprotect((void *)page, ((uintptr_t)f + 5 - page + 4095) & ~(uintptr_t)4095,
		     PROT_READ | PROT_WRITE | PROT_EXEC)) {
		munmap(block, 4096);
		return false;
	}
	if (((uintptr_t)f & 7) == 0) {
		/* One aligned 8-byte store: a thread inside dlopen right now (a library's
		 * constructor may have started one) sees the old bytes or the new, never half. */
		uint64_t word;

		memcpy(&word, f, 8);
		((uint8_t *)&word)[0] = 0xe9;
		put_rel32((uint8_t *)&word + 1, (uint64_t)(uintptr_t)f + 5,
			  (uint64_t)(uintptr_t)block);
		__atomic_store_n((uint64_t *)(void *)f, word, __ATOMIC_RELEASE);
	} else {
		f[0] = 0xe9;
		put_rel32(f + 1, (uint64_t)(uintptr_t)f + 5, (uint64_t)(uintptr_t)block);
	}
	mprotect((void *)page, ((uintptr_t)f + 5 - page + 4095) & ~(uintptr_t)4095,
		 PROT_READ | PROT_EXEC);
	return true;
}
