/* SPDX-License-Identifier: MIT */
/*
 * Which patchable functions get instrumented: a built-in list of functions that must never
 * be probed, then rocprof-sys's selection (-R restricts to matching names, -E excludes,
 * -I includes despite the size heuristics), then the heuristics (--min-instructions,
 * --min-leaf-instructions, --min-address-range). Names match in their demangled or their symbol form.
 */
#include <stdlib.h>
#include <string.h>

#include "../common/strutil.h"
#include "instrument.h"

/* Probing these would recurse into the probe, run before the runtime can record, or
 * belong to a sanitizer, to syscope itself, or to NVTX's implementation (compiled into
 * programs from its headers: a range it pushes would end with its own call). */
static const char *const never_prefixes[] = {
	"_start",
	"_init",
	"_fini",
	"__libc_csu_",
	"_dl_relocate_static_pie",
	"deregister_tm_clones",
	"register_tm_clones",
	"__do_global_dtors_aux",
	"frame_dummy",
	"__cyg_profile_func_",
	"syscope_",
	"__x86.get_pc_thunk",
	"__asan",
	"__ubsan",
	"__sanitizer",
	"__tsan",
	"__lsan",
	"__msan",
	"__stack_chk_fail",
	"__restore_rt",
	"nvtx",
};
static const char *const never_names[] = {
	"malloc",	 "free",   "calloc",  "realloc", "memalign", "posix_memalign",
	"aligned_alloc", "valloc", "pvalloc", "sbrk",	 "brk",
};

static bool starts_with_any(const char *s, const char *const *prefixes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strncmp(s, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

static bool never_probe(const char *name)
{
	if (starts_with_any(name, never_prefixes,
			    sizeof(never_prefixes) / sizeof(never_prefixes[0])))
		return true;
	for (size_t i = 0; i < sizeof(never_names) / sizeof(never_names[0]); i++)
		if (!strcmp(name, never_names[i]))
			return true;
	return false;
}

bool sc_selection_add(sc_regex_vec *v, const char *re, char *err, size_t errlen)
{
	regex_t rx;
	int rc = regcomp(&rx, re, REG_EXTENDED | REG_NOSUB);

	if (rc) {
		char why[128];

		regerror(rc, &rx, why, sizeof(why));
		snprintf(err, errlen, "invalid regular expression '%s': %s", re, why);
		return false;
	}
	*VEC_PUSH(v) = rx;
	return true;
}

static void free_list(sc_regex_vec *v)
{
	for (size_t i = 0; i < v->n; i++)
		regfree(&v->v[i]);
	VEC_FREE(v);
}

void sc_selection_free(struct sc_selection *sel)
{
	free_list(&sel->include);
	free_list(&sel->exclude);
	free_list(&sel->restrict_);
	free_list(&sel->module_include);
	free_list(&sel->module_exclude);
	free_list(&sel->module_restrict);
}

/* The C library and the loader (the probe itself calls into them), the C++ runtime and the
 * unwinder (the exception hooks call into them), syscope's own libraries and sanitizers. */
static const char *const never_modules[] = {
	"ld-linux",    "libc.so",      "libm.so",      "libmvec.so", "libpthread.so",
	"libdl.so",    "librt.so",     "libresolv.so", "libutil.so", "libanl.so",
	"libgcc_s.so", "libstdc++.so", "libsyscope",   "libunwind",  "libasan.so",
	"libubsan.so", "libtsan.so",   "liblsan.so",   "linux-vdso",
};

static bool path_matches(const sc_regex_vec *v, const char *path)
{
	const char *base = sc_base_name(path);

	for (size_t i = 0; i < v->n; i++)
		if (!regexec(&v->v[i], path, 0, NULL, 0) || !regexec(&v->v[i], base, 0, NULL, 0))
			return true;
	return false;
}

bool sc_select_module(struct sc_selection *sel, const char *path, bool is_main, const char **why)
{
	*why = NULL;
	if (!is_main && starts_with_any(sc_base_name(path), never_modules,
					sizeof(never_modules) / sizeof(never_modules[0]))) {
		*why = "built-in exclusion (C library, loader, C++ runtime, syscope)";
		return false;
	}
	if (path_matches(&sel->module_exclude, path)) {
		*why = "matched by --module-exclude";
		return false;
	}
	if (sel->module_restrict.n) {
		if (path_matches(&sel->module_restrict, path))
			return true;
		*why = "not matched by --module-restrict";
		return false;
	}
	return is_main || path_matches(&sel->module_include, path);
}

static bool matches(const sc_regex_vec *v, const struct sc_fn *fn)
{
	for (size_t i = 0; i < v->n; i++)
		if (!regexec(&v->v[i], fn->pretty, 0, NULL, 0) ||
		    !regexec(&v->v[i], fn->name, 0, NULL, 0))
			return true;
	return false;
}

void sc_select_functions(struct sc_module_info *mod, struct sc_selection *sel)
{
	for (size_t i = 0; i < mod->fns.n; i++) {
		struct sc_fn *fn = &mod->fns.v[i];
		bool forced;

		if (!sel->loops) {
			VEC_FREE(&fn->loops);
			VEC_FREE(&fn->probes);
		}
		if (fn->state != SC_FN_INSTRUMENTED)
			continue; /* unpatchable, or start-up glue */
		fn->state = SC_FN_EXCLUDED;
		if (never_probe(fn->name)) {
			fn->reason =
				"built-in exclusion (start-up code, allocator, sanitizer, syscope)";
			continue;
		}
		if (sel->restrict_.n) {
			if (!matches(&sel->restrict_, fn)) {
				fn->reason = "not matched by --function-restrict";
				continue;
			}
			sel->matched_restrict = true;
		}
		if (matches(&sel->exclude, fn)) {
			fn->reason = "matched by --function-exclude";
			continue;
		}
		forced = matches(&sel->include, fn);
		sel->matched_include |= forced;
		if (!forced && fn->ninsn < sel->min_instructions) {
			fn->reason = "fewer instructions than --min-instructions";
			continue;
		}
		if (!forced && !fn->ncalls && !fn->nloops &&
		    fn->ninsn < sel->min_leaf_instructions) {
			fn->reason = "calls nothing, no loop, fewer instructions than "
				     "--min-leaf-instructions";
			continue;
		}
		if (!forced && fn->size < sel->min_address_range) {
			fn->reason = "smaller than --min-address-range";
			continue;
		}
		fn->state = SC_FN_INSTRUMENTED;
		fn->reason = NULL;
	}
}

void sc_module_counts(const struct sc_module_info *mod, size_t counts[3])
{
	counts[0] = counts[1] = counts[2] = 0;
	for (size_t i = 0; i < mod->fns.n; i++)
		counts[mod->fns.v[i].state]++;
}
