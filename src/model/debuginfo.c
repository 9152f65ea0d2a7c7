/* SPDX-License-Identifier: MIT */
/*
 * Where the separate debug information of a file is (debuginfo.h). libdwfl's standard
 * search asks debuginfod servers last, and libdw 0.188 loads libdebuginfod for it (libcurl,
 * a TLS library and theirs) even when DEBUGINFOD_URLS names no server, so that every
 * conversion touching a stripped library without debug files (libc, most system
 * libraries) paid for loading them: a tenth of converting a small session. Without a server
 * the same local places are searched here; with one, libdwfl's own search runs. dwz's
 * alternate files are left to libdw, which finds them itself.
 */
#include "debuginfo.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/vec.h"

/* Whether the ELF file open as `fd` has the build id `bits` (and is not `main` itself). */
static bool same_build_id(int fd, const struct stat *main, const unsigned char *bits, int len)
{
	const void *id = NULL;
	struct stat st;
	ssize_t n = -1;
	bool same;
	Elf *elf;

	if (fstat(fd, &st) || (main && st.st_dev == main->st_dev && st.st_ino == main->st_ino))
		return false;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf)
		n = dwelf_elf_gnu_build_id(elf, &id);
	same = n == len && !memcmp(id, bits, (size_t)len); /* `id` is inside `elf` */
	elf_end(elf);
	return same;
}

/* The debug link `link` of `file`, where GDB and libdwfl look: beside it, in .debug/ beside
 * it, and under /usr/lib/debug at its folder; the fd of the one with the build id. */
static int by_debug_link(const char *file, const char *link, const unsigned char *bits, int len,
			 char **found)
{
	char *copy = sc_xstrdup(file), *dir = dirname(copy);
	/* beside it, in .debug/ beside it, under /usr/lib/debug at its folder */
	const char *const before[] = { "", "", "/usr/lib/debug" }, *const after[] = { "/",
										      "/.debug/",
										      "/" };
	struct stat main;
	bool have_main = !stat(file, &main);
	int fd = -1;

	for (size_t i = 0; i < sizeof(before) / sizeof(before[0]) && fd < 0; i++) {
		char *path = sc_xasprintf("%s%s%s%s", before[i], dir, after[i], link);

		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && !same_build_id(fd, have_main ? &main : NULL, bits, len)) {
			close(fd);
			fd = -1;
		}
		if (fd >= 0)
			*found = path;
		else
			free(path);
	}
	free(copy);
	return fd;
}

int sc_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
		      const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
		      char **debuginfo_file_name)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &bits, &vaddr), fd;
	char *real;

	/* A server to ask, or no build id to check files by: libdwfl's own search. */
	if ((urls && *urls) || len <= 0)
		return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
						    debuglink_file, debuglink_crc,
						    debuginfo_file_name);
	fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
					  debuglink_crc, debuginfo_file_name);
	/* A dwz alternate file (.gnu_debugaltlink, asked for with CRC 0) has a build id of its
	 * own, which the lookup above tried: the debug-link places, checked by the module's
	 * build id, can never hold it. When none is found here, libdw's dwarf_getalt looks for
	 * it by its build id and its path (absolute, or beside the debug file), without the
	 * debuginfod client that libdwfl's standard search would load for it. */
	if (fd >= 0 || !file_name || !debuglink_file || !*debuglink_file || !debuglink_crc)
		return fd;
	fd = by_debug_link(file_name, debuglink_file, bits, len, debuginfo_file_name);
	if (fd < 0 && (real = realpath(file_name, NULL))) { /* a link's target's folder */
		if (strcmp(real, file_name))
			fd = by_debug_link(real, debuglink_file, bits, len, debuginfo_file_name);
		free(real);
	}
	return fd;
}
