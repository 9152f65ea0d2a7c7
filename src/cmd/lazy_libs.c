/* SPDX-License-Identifier: MIT */
/*
 * capstone and libpfm4, loaded when a command first needs them. Linked, the loader
 * relocated both for every command (118 000 relative relocations, ~5 ms of each
 * `syscope --version` or `summary`), though only `instrument` decodes code and only the
 * CPU-event verbs name events. The functions of theirs that syscope calls are defined here
 * under their own names: each looks its real one up in the library (loaded by soname,
 * found as a linked library would be: the executable's rpath, then the system) on its first
 * call. When the library cannot be loaded, the call fails as the library reports a failure
 * (capstone: CS_ERR_MEM, no instructions; libpfm4: PFM_ERR_NOINIT), once with a message.
 */
#include <capstone/capstone.h>
#include <dlfcn.h>
#include <stdbool.h>

#include "../common/log.h"

#ifdef SYSCOPE_HAVE_LIBPFM
#include <perfmon/pfmlib_perf_event.h>
#endif

#define STR_(x) #x
#define STR(x) STR_(x)

struct lazy_lib {
	const char *soname;
	const char *what; /* what is missing without it */
	void *handle;
	bool tried;
};

static void *lazy_sym(struct lazy_lib *lib, const char *name)
{
	void *fn;

	if (!lib->tried) {
		lib->tried = true;
		lib->handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
		if (!lib->handle)
			pr_warn("%s could not be loaded (%s): %s", lib->soname, dlerror(),
				lib->what);
	}
	if (!lib->handle)
		return NULL;
	if (!(fn = dlsym(lib->handle, name)))
		pr_warn("%s has no %s: %s", lib->soname, name, lib->what);
	return fn;
}

/* `ret name(params)` forwarding `args` to the library's own, `fail` when it is not there. */
#define FORWARD(lib, ret, name, params, args, fail)                          \
	ret name params                                                      \
	{                                                                    \
		static ret(*real) params;                                    \
		if (!real && !(real = (ret(*) params)lazy_sym(&lib, #name))) \
			return fail;                                         \
		return real args;                                            \
	}

/* capstone's soname carries its API's major version (libcapstone.so.4 on Debian 12, .5
 * on newer systems): the one of the header built against. */
static struct lazy_lib capstone = { .soname = "libcapstone.so." STR(CS_API_MAJOR),
				    .what = "syscope instrument cannot decode code" };

FORWARD(capstone, unsigned int, cs_version, (int *major, int *minor), (major, minor),
	(*major = *minor = 0))
FORWARD(capstone, cs_err, cs_open, (cs_arch arch, cs_mode mode, csh *handle), (arch, mode, handle),
	CS_ERR_MEM)
FORWARD(capstone, cs_err, cs_option, (csh handle, cs_opt_type type, size_t value),
	(handle, type, value), CS_ERR_MEM)
FORWARD(capstone, cs_err, cs_close, (csh * handle), (handle), CS_ERR_MEM)
FORWARD(capstone, cs_insn *, cs_malloc, (csh handle), (handle), NULL)
FORWARD(capstone, bool, cs_disasm_iter,
	(csh handle, const uint8_t **code, size_t *size, uint64_t *address, cs_insn *insn),
	(handle, code, size, address, insn), false)

void cs_free(cs_insn *insn, size_t count)
{
	static void (*real)(cs_insn *, size_t);

	if (real || (real = (void (*)(cs_insn *, size_t))lazy_sym(&capstone, "cs_free")))
		real(insn, count);
}

#ifdef SYSCOPE_HAVE_LIBPFM
static struct lazy_lib pfm = { .soname = "libpfm.so.4",
			       .what = "CPU events are named by perf's generic names only" };

FORWARD(pfm, pfm_err_t, pfm_initialize, (void), (), PFM_ERR_NOINIT)
FORWARD(pfm, pfm_err_t, pfm_get_pmu_info, (pfm_pmu_t pmu, pfm_pmu_info_t *info), (pmu, info),
	PFM_ERR_NOINIT)
FORWARD(pfm, int, pfm_get_event_next, (int idx), (idx), -1)
FORWARD(pfm, pfm_err_t, pfm_get_event_info, (int idx, pfm_os_t os, pfm_event_info_t *output),
	(idx, os, output), PFM_ERR_NOINIT)
FORWARD(pfm, pfm_err_t, pfm_get_os_event_encoding,
	(const char *str, int dfl_plm, pfm_os_t os, void *arg), (str, dfl_plm, os, arg),
	PFM_ERR_NOINIT)

void pfm_terminate(void)
{
	static void (*real)(void);

	if (real || (real = (void (*)(void))lazy_sym(&pfm, "pfm_terminate")))
		real();
}
#endif
