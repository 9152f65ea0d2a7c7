/* SPDX-License-Identifier: MIT */
/*
 * The libraries a program may dlopen() later that -MI/-MR name by a regex rather than by
 * their file: found before the run, where a dlopen of a bare name or a path in the
 * command line would find them (the program's arguments, its folder, LD_LIBRARY_PATH, the
 * loader's default folders), so that each is analyzed ahead and patched when it loads (the
 * runtime matches a loaded library to the plan by its real path). The target only records:
 * nothing is analyzed inside it.
 */
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/strutil.h"
#include "cmd.h"
#include "dlopen_libs.h"

static const char *const default_dirs[] = {
	"/lib/x86_64-linux-gnu",
	"/usr/lib/x86_64-linux-gnu",
	"/lib/aarch64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu",
	"/lib64",
	"/usr/lib64",
	"/lib",
	"/usr/lib",
	"/usr/local/lib",
};

static bool listed(const sc_path_vec *v, const char *path)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->v[i], path))
			return true;
	return false;
}

/* "libfoo.so", "libfoo.so.1.2", "foo.so": a name a shared object may have. */
static bool so_name(const char *name)
{
	const char *so = strstr(name, ".so");

	return so && (!so[3] || so[3] == '.');
}

static bool is_shared_object(const char *path)
{
	Elf64_Ehdr h;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool yes;

	if (fd < 0)
		return false;
	yes = read(fd, &h, sizeof(h)) == (ssize_t)sizeof(h) &&
	      !memcmp(h.e_ident, ELFMAG, SELFMAG) && h.e_type == ET_DYN;
	close(fd);
	return yes;
}

/* `path` (a file named like a shared object) when -MI/-MR choose it and it is new. */
static void consider(struct sc_selection *sel, const char *path, const sc_path_vec *skip,
		     sc_path_vec *out)
{
	char real[PATH_MAX];
	const char *why;

	if (!so_name(sc_base_name(path)) || !sc_select_module(sel, path, false, &why) ||
	    !realpath(path, real) || listed(skip, real) || listed(out, real) ||
	    !is_shared_object(real))
		return;
	*VEC_PUSH(out) = sc_xstrdup(real);
}

static void scan_dir(struct sc_selection *sel, const char *dir, const sc_path_vec *skip,
		     sc_path_vec *out)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char *path;

		if (de->d_name[0] == '.' || !so_name(de->d_name))
			continue;
		path = sc_xasprintf("%s/%s", dir, de->d_name);
		consider(sel, path, skip, out);
		free(path);
	}
	if (d)
		closedir(d);
}

void sc_dlopen_libraries(struct sc_selection *sel, const char *program, char *const *args,
			 int nargs, const sc_path_vec *skip, sc_path_vec *out)
{
	sc_path_vec dirs = { 0 };
	const char *env = getenv("LD_LIBRARY_PATH");

	for (int i = 0; i < nargs; i++) {
		struct stat st;

		if (!strchr(args[i], '/') || stat(args[i], &st) || !S_ISREG(st.st_mode))
			continue;
		consider(sel, args[i], skip, out);
		*VEC_PUSH(&dirs) = sc_dir_of(args[i]);
	}
	*VEC_PUSH(&dirs) = sc_dir_of(program);
	if (env) {
		char *copy = sc_xstrdup(env), *save = NULL;

		for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save))
			*VEC_PUSH(&dirs) = sc_xstrdup(d);
		free(copy);
	}
	for (size_t i = 0; i < sizeof(default_dirs) / sizeof(default_dirs[0]); i++)
		*VEC_PUSH(&dirs) = sc_xstrdup(default_dirs[i]);
	for (size_t i = 0; i < dirs.n; i++) {
		bool seen = false;

		for (size_t k = 0; k < i && !seen; k++)
			seen = !strcmp(dirs.v[k], dirs.v[i]);
		if (!seen)
			scan_dir(sel, dirs.v[i], skip, out);
	}
	for (size_t i = 0; i < dirs.n; i++)
		free(dirs.v[i]);
	VEC_FREE(&dirs);
}
