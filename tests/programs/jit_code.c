/* SPDX-License-Identifier: MIT */
/*
 * A program that runs code it made, as a JIT does (V8, HotSpot, LuaJIT): a counting loop
 * copied into an anonymous executable mapping, outside every module, with no unwind
 * tables, named in the perf map it writes for itself (/tmp/perf-PID.map, as node
 * --perf-basic-prof does). It calls the loop until it used SECONDS of CPU time.
 *
 * usage: jit_code SECONDS
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fixture.h"

/* loop: dec %rdi; jnz loop; ret */
static const unsigned char loop_code[] = { 0x48, 0xff, 0xcf, 0x75, 0xfb, 0xc3 };

int main(int argc, char **argv)
{
	double end = fixture_cpu_now() + fixture_seconds(argc, argv, 1, 0.5);
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void (*loop)(long);
	char path[64];
	FILE *map;

	if (code == MAP_FAILED)
		return 2;
	memcpy(code + 64, loop_code, sizeof(loop_code));
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	map = fopen(path, "w");
	if (!map)
		return 2;
	fprintf(map, "%lx %zx jit_hot_loop\n", (unsigned long)(code + 64), sizeof(loop_code));
	fclose(map);
	loop = (void (*)(long))(void *)(code + 64);
	while (fixture_cpu_left(end))
		loop(1000000);
	printf("jit_code: done\n");
	return 0;
}
