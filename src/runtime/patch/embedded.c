/* SPDX-License-Identifier: MIT */
/*
 * Patch plans carried by the files themselves: `syscope instrument -o` writes a copy of a
 * program or library with its plan in a non-loaded section (SC_PLAN_SECTION), so that a
 * run under syscope patches it at start-up without analyzing it again. Reading the section
 * headers of the loaded files is a few small reads each.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/patch_plan.h"
#include "patch.h"

static bool read_at(int fd, void *buf, size_t n, uint64_t off)
{
	return pread(fd, buf, n, (off_t)off) == (ssize_t)n;
}

char *rt_patch_read_embedded(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL, names;
	char *strtab = NULL, *plan = NULL;

	if (fd < 0)
		return NULL;
	if (!read_at(fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    !eh.e_shnum || eh.e_shnum >= SHN_LORESERVE || eh.e_shstrndx >= eh.e_shnum)
		goto out;
	sh = malloc((size_t)eh.e_shnum * sizeof(*sh));
	if (!sh || !read_at(fd, sh, (size_t)eh.e_shnum * sizeof(*sh), eh.e_shoff))
		goto out;
	names = sh[eh.e_shstrndx];
	if (names.sh_size > (1u << 24) || !(strtab = malloc(names.sh_size + 1)) ||
	    !read_at(fd, strtab, names.sh_size, names.sh_offset))
		goto out;
	strtab[names.sh_size] = 0;
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		if (sh[i].sh_name >= names.sh_size ||
		    strcmp(strtab + sh[i].sh_name, SC_PLAN_SECTION) ||
		    sh[i].sh_size < sizeof(struct sc_plan_file) || sh[i].sh_size > (1u << 30))
			continue;
		plan = malloc(sh[i].sh_size);
		if (plan && !read_at(fd, plan, sh[i].sh_size, sh[i].sh_offset)) {
			free(plan);
			plan = NULL;
		}
		if (plan)
			*size = sh[i].sh_size;
		break;
	}
out:
	free(strtab);
	free(sh);
	close(fd);
	return plan;
}

/* A program rewritten by `syscope instrument -o` loads this library by itself (DT_NEEDED);
 * started without syscope, it has no session. It then runs as `syscope run -- PROGRAM
 * ARGS`: the same process image is replaced by the launcher (same pid), which starts the
 * program under syscope and writes the outputs at its end. Nothing happens when the
 * program carries no plan, or when syscope cannot be found (it then runs as it would
 * without syscope). */
void rt_patch_self_launch(const char *self_path)
{
	static char cmdline[1 << 17];
	char exe[4096], cli[4096], *slash;
	char *argv[1024];
	size_t size = 0;
	ssize_t n;
	int fd, argc = 0;
	char *plan;

	if (getenv("SYSCOPE_SELF_LAUNCHED"))
		return;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = 0;
	plan = rt_patch_read_embedded(exe, &size);
	if (!plan)
		return;
	free(plan);
	/* <prefix>/lib/syscope/libsyscope.so -> <prefix>/bin/syscope */
	snprintf(cli, sizeof(cli), "%s", self_path);
	for (int up = 0; up < 3 && (slash = strrchr(cli, '/')); up++)
		*slash = 0;
	if (strlen(cli) + sizeof("/bin/syscope") > sizeof(cli))
		return;
	strcat(cli, "/bin/syscope");
	if (access(cli, X_OK))
		return;
	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, cmdline, sizeof(cmdline) - 1);
	close(fd);
	if (n <= 0)
		return;
	cmdline[n] = 0;
	argv[argc++] = cli;
	argv[argc++] = (char *)"run";
	argv[argc++] = (char *)"--";
	argv[argc++] = exe;
	/* The program's own arguments, after its argv[0]. */
	for (char *p = cmdline + strlen(cmdline) + 1; p < cmdline + n && argc < 1023;
	     p += strlen(p) + 1)
		argv[argc++] = p;
	argv[argc] = NULL;
	setenv("SYSCOPE_SELF_LAUNCHED", "1", 1);
	execv(cli, argv);
	unsetenv("SYSCOPE_SELF_LAUNCHED"); /* could not: run as the plain program */
}
