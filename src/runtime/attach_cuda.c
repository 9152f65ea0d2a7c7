/* SPDX-License-Identifier: MIT */
/*
 * syscope attach in a process that uses CUDA already (libcuda is loaded): libsyscope-cuda.so,
 * beside this library, is loaded and asked to subscribe CUPTI now (gpu/cuda/attach.c). Its
 * CUPTI is the one the process has loaded, if any (the loader shares one library per name);
 * else its own run path's; else the first libcupti found beside the process's CUDA runtime
 * (the toolkit's extras/CUPTI, or pip's nvidia/cuda_cupti) or in /usr/local/cuda. Whatever
 * fails is a note, and CPU sampling goes on. NVTX is not traced (note_nvtx says why).
 */
#include "attach.h"

#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "plugin.h"

#define MAX_DIRS 8

RT_EXPORT const struct sc_plugin_api *syscope_plugin_api(uint32_t abi);

struct dirs {
	char path[MAX_DIRS][PATH_MAX];
	unsigned n;
};

static void add_dir(struct dirs *d, const char *base, const char *below)
{
	if (d->n < MAX_DIRS)
		snprintf(d->path[d->n++], PATH_MAX, "%s%s", base, below);
}

static int find_cuda_libs(struct dl_phdr_info *info, size_t size, void *data)
{
	bool *found = data;

	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, "/libcuda.so"))
		*found = true;
	return 0;
}

/* Where a CUDA runtime of the process lives, CUPTI is often near. */
static int cupti_dirs_of_runtime(struct dl_phdr_info *info, size_t size, void *data)
{
	struct dirs *d = data;
	char dir[PATH_MAX], *slash;

	(void)size;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "/libcudart.so"))
		return 0;
	snprintf(dir, sizeof(dir), "%s", info->dlpi_name);
	slash = strrchr(dir, '/');
	*slash = '\0';
	add_dir(d, dir, "");
	add_dir(d, dir, "/../extras/CUPTI/lib64"); /* the toolkit's lib64 */
	add_dir(d, dir, "/../../cuda_cupti/lib");  /* pip's nvidia/cuda_runtime/lib */
	return 0;
}

/* Load (global) every libcupti.so.N of `dir`; whether one loaded. */
static bool load_cupti_from(const char *dir)
{
	DIR *dd = opendir(dir);
	struct dirent *de;
	bool loaded = false;

	while (dd && (de = readdir(dd))) {
		char path[PATH_MAX * 2];

		if (strncmp(de->d_name, "libcupti.so.", 12))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		loaded |= dlopen(path, RTLD_NOW | RTLD_GLOBAL) != NULL;
	}
	if (dd)
		closedir(dd);
	return loaded;
}

static void *load_plugin(const char *plugin, char *why, size_t whylen)
{
	static struct dirs d;
	void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
	const char *err;

	if (h)
		return h;
	err = dlerror();
	snprintf(why, whylen, "%s", err ? err : "unknown error");
	if (!strstr(why, "libcupti"))
		return NULL;
	d.n = 0;
	dl_iterate_phdr(cupti_dirs_of_runtime, &d);
	add_dir(&d, "/usr/local/cuda/extras/CUPTI/lib64", "");
	add_dir(&d, "/usr/local/cuda/lib64", "");
	for (unsigned i = 0; i < d.n; i++)
		if (load_cupti_from(d.path[i]) && (h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL)))
			return h;
	return NULL;
}

/* libsyscope-cuda.so's attach entry, loaded once (the library stays: -z nodelete). */
typedef int (*cuda_attach_fn)(const struct sc_plugin_api *, const struct sc_settings *);

static cuda_attach_fn cuda_entry(char *why, size_t whylen)
{
	static cuda_attach_fn entry;
	char plugin[PATH_MAX + 32], *slash;
	void *h;

	if (entry)
		return entry;
	snprintf(plugin, sizeof(plugin), "%s", rt_proc.self_path);
	slash = strrchr(plugin, '/');
	snprintf(slash ? slash + 1 : plugin,
		 sizeof(plugin) - (size_t)(slash ? slash + 1 - plugin : 0), "libsyscope-cuda.so");
	h = load_plugin(plugin, why, whylen);
	*(void **)&entry = h ? dlsym(h, "syscope_cuda_attach") : NULL;
	if (h && !entry)
		snprintf(why, whylen, "libsyscope-cuda.so has no attach entry");
	return entry;
}

/*
 * NVTX picks its tool once per library that uses it, at that library's first NVTX call, from
 * NVTX_INJECTION64_PATH. Setting it in a running process is not safe (setenv while another
 * thread reads or changes the environment; and it would stay after the detach, for the
 * program's later children too), so NVTX is not traced in an attached process.
 */
static void note_nvtx(void)
{
	rt_note(SC_NOTE_INFO,
		"attach: NVTX ranges are not recorded in an attached process: NVTX chooses its "
		"tool at the program's first NVTX call, from NVTX_INJECTION64_PATH, which syscope "
		"cannot set safely in a running process; start the program under syscope for them");
}

bool rt_attach_cuda(void)
{
	cuda_attach_fn attach;
	char why[512] = "";
	bool uses_cuda = false;
	int rc;

	dl_iterate_phdr(find_cuda_libs, &uses_cuda);
	if (!uses_cuda)
		return false; /* yet: a later scan looks again */
	if (!sc_bool(&rt_proc.settings, SC_SET_USE_CUDA)) {
		rt_note(SC_NOTE_INFO, "attach: the process uses CUDA; CUDA tracing is off (asked)");
		return true;
	}
	attach = cuda_entry(why, sizeof(why));
	if (!attach) {
		rt_note(SC_NOTE_WARN,
			"attach: the process uses CUDA, but CUDA tracing cannot start in it (%s): "
			"CPU samples only",
			why);
		return true;
	}
	rc = attach(syscope_plugin_api(SC_PLUGIN_ABI), &rt_proc.settings);
	if (rc > 0)
		return false; /* libcuda loaded, the driver not initialized yet: not touched */
	if (rc)
		rt_note(SC_NOTE_WARN, "attach: CUDA is not traced in this process (the note before "
				      "says why); CPU samples go on");
	else if (sc_list_has(&rt_proc.settings, SC_SET_CUDA_DOMAINS, "nvtx"))
		note_nvtx();
	return true;
}
