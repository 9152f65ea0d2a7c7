/* SPDX-License-Identifier: MIT */
/*
 * Telling a program with the CUDA runtime linked in from a driver-API program
 * (src/gpu/cuda/static_runtime.c), without a GPU: nvcc's fat-binary sections are found in the
 * fixture built as nvcc builds by default (argv[1], when nvcc was there), in no ordinary
 * program, file that is not ELF or missing file; this test's own call chain carries none.
 */
#include <execinfo.h>
#include <stdlib.h>

#include "check.h"
#include "gpu/cuda/static_runtime.h"

int main(int argc, char **argv)
{
	void *pcs[32];
	char file[512] = "";
	int n = backtrace(pcs, 32);

	if (argc > 1) {
		CHECK(cuda_elf_has_section(argv[1], ".nv_fatbin"));
		CHECK(cuda_elf_has_section(argv[1], ".nvFatBinSegment"));
		CHECK(cuda_elf_has_section(argv[1], ".text"));
	}
	CHECK(cuda_elf_has_section("/proc/self/exe", ".text"));
	CHECK(!cuda_elf_has_section("/proc/self/exe", ".nv_fatbin"));
	CHECK(!cuda_elf_has_section("/proc/self/exe", ".nv_fatbi"));
	CHECK(!cuda_elf_has_section("/proc/self/cmdline", ".text")); /* not ELF */
	CHECK(!cuda_elf_has_section("/nonexistent/syscope", ".text"));
	CHECK(n > 1);
	CHECK(!cuda_static_runtime_starts(pcs, n, file, sizeof(file)));
	CHECK(!file[0]);
	return check_report("test_cuda_static_runtime");
}
