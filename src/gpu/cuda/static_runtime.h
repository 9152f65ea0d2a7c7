/* SPDX-License-Identifier: MIT */
/* static_runtime.c: is cuInit called by a CUDA runtime linked statically into its caller? */
#ifndef SYSCOPE_GPU_CUDA_STATIC_RUNTIME_H
#define SYSCOPE_GPU_CUDA_STATIC_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

/* `pcs`: the return addresses of the thread inside cuInit. True when an object among them
 * other than the driver and the tools carries nvcc's fat binaries: nvcc output with the
 * runtime linked in, starting CUDA; its file is then in `file` (`cap` bytes). */
bool cuda_static_runtime_starts(void *const *pcs, int n, char *file, size_t cap);
/* Whether the ELF file at `path` has a section named `name` (exposed for the unit test). */
bool cuda_elf_has_section(const char *path, const char *name);

#endif /* SYSCOPE_GPU_CUDA_STATIC_RUNTIME_H */
