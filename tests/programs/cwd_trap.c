/* SPDX-License-Identifier: MIT */
/*
 * A library that must never be loaded: copied into a profiled program's working folder
 * under the names of the libraries syscope and its runtime load (libunwind.so.8, ...), it
 * leaves a file TRAP-LOADED there if the loader took it from that folder (test_robustness).
 */
#include <fcntl.h>
#include <unistd.h>

__attribute__((constructor)) static void loaded(void)
{
	int fd = open("TRAP-LOADED", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	if (fd >= 0)
		close(fd);
}
