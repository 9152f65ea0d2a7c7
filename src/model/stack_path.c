/* SPDX-License-Identifier: MIT */
/*
 * A sampled stack as a path of profile functions and lines, root first (sc_stack_path):
 * native frames symbolized, Python frames spliced in (python.h), syscope's own frames elided.
 */
#include "profile_build.h"
#include "perf_map.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

struct path_frame {
	uint32_t func, line;
	bool self, system, exported;
	const struct sc_module *mod; /* with addr: where the frame's code is, for a trace */
	uint64_t addr;
};

static VEC(struct path_frame) path_buf;
static VEC(uint32_t) path_funcs, path_lines;
static VEC(const struct sc_module *) path_mods;
static VEC(uint64_t) path_addrs;

static void push_frame(struct sc_profile_set *set, const char *func, const char *module,
		       const char *file, uint32_t line, bool self, bool system, bool exported)
{
	struct path_frame *pf = VEC_PUSH(&path_buf);

	pf->func = sc_profile_func_id(set, func, module);
	pf->line = sc_profile_line_id(set, pf->func, file, line);
	pf->self = self;
	pf->system = system;
	pf->exported = exported;
	pf->mod = NULL;
	pf->addr = 0;
}

/*
 * The module of the function a syscope wrapper named `name` stands for: the first module of
 * the image, in load order, not syscope's own, that exports it (where the dynamic linker's
 * RTLD_NEXT would find it); NULL when none does.
 */
static const char *wrapped_module(struct sc_profile_set *set, struct sc_image *img,
				  const char *name)
{
	const char *found = NULL;

	/* Known already: a lookup scans symbol tables. */
	for (size_t i = 0; i < img->wrapped_modules.n; i++)
		if (img->wrapped_modules.v[i].name == name)
			return img->wrapped_modules.v[i].module;
	for (size_t i = 0; i < img->modules.n && !found; i++) {
		struct sc_module *mod = &img->modules.v[i];
		struct sc_elf *elf;

		if (mod->is_self)
			continue;
		elf = sc_model_module_elf(set->model, img, mod);
		if (sc_elf_exports(elf, name))
			found = sc_elf_name(elf);
	}
	*VEC_PUSH(&img->wrapped_modules) = (struct sc_wrapped_module){ name, found };
	return found;
}

/*
 * Drop syscope's own frames. A syscope wrapper that is the leafmost syscope frame and has
 * only libc/loader frames below it stays as the leaf (it is named after the call it wraps:
 * time in `nanosleep` then shows as nanosleep, not as the mask juggling around it). Time in
 * syscope's internal code (finalization at exit, say) shows as one "[syscope]" frame.
 */
static void elide_internal(struct sc_profile_set *set, struct sc_image *img)
{
	size_t n = path_buf.n, k = NONE, out = 0;
	bool wrapper_leaf = true;

	for (size_t i = 0; i < n; i++)
		if (path_buf.v[i].self)
			k = i;
	if (k == NONE)
		return;
	for (size_t i = k + 1; i < n; i++)
		if (!path_buf.v[i].system)
			wrapper_leaf = false;
	if (wrapper_leaf) {
		/* The wrapper is the outermost frame of the last run of our frames (what the
		 * program called); the helpers inlined or called inside it go. */
		while (k > 0 && path_buf.v[k - 1].self)
			k--;
		size_t below = k + 1;

		while (below < n && path_buf.v[below].self)
			below++;
		if (path_buf.v[k].exported) {
			/* Shown in the module of what it wraps: the libc frames below it, or, a
			 * sample in the wrapper's own code, the module that defines the name. */
			const struct sc_func *f = &set->funcs.v[path_buf.v[k].func];
			const char *module = below < n ? set->funcs.v[path_buf.v[below].func].module
						       : wrapped_module(set, img, f->name);
			const char *none = sc_strtab_intern(&set->model->strings, "");

			if (module) {
				path_buf.v[k].func = sc_profile_func_id(set, f->name, module);
				path_buf.v[k].line =
					sc_profile_line_id(set, path_buf.v[k].func, none, 0);
			}
		}
		n = k + 1;
		if (!path_buf.v[k].exported) {
			const char *name = sc_strtab_intern(&set->model->strings, "[syscope]");
			const char *none = sc_strtab_intern(&set->model->strings, "");

			path_buf.v[k].func = sc_profile_func_id(set, name, none);
			path_buf.v[k].line = sc_profile_line_id(set, path_buf.v[k].func, none, 0);
		}
	}
	for (size_t i = 0; i < n; i++)
		if (!path_buf.v[i].self || (wrapper_leaf && i == k))
			path_buf.v[out++] = path_buf.v[i];
	path_buf.n = out;
}

/* Push the inline chain of native frame `i` of a stack, outermost first; with `role`, the
 * frame's enum sc_py_native_role bits too. Returns how many frames it pushed. */
static unsigned native_frame(struct sc_profile_set *set, const struct sc_stack *st, uint32_t i,
			     uint8_t *role)
{
	struct sc_model *m = set->model;
	/* Return addresses point after the call; look up the call itself. */
	uint64_t addr = i ? st->frames[i] - 1 : st->frames[i];
	struct sc_module *mod = sc_image_module_at(st->img, addr, st->first_ts);
	const char *names[16];
	const struct sc_symframe *chain;
	struct sc_elf *elf;
	unsigned n;

	if (!mod) {
		const char *empty = sc_strtab_intern(&m->strings, "");
		const char *jit = sc_perf_map_name(st->img, &m->strings, addr);

		if (jit)
			push_frame(set, jit, sc_strtab_intern(&m->strings, "[jit]"), empty, 0,
				   false, false, false);
		else
			push_frame(set, sc_strtab_intern(&m->strings, "[unknown]"), empty, empty, 0,
				   false, false, false);
		if (role)
			*role = 0;
		return 1;
	}
	elf = sc_model_module_elf(m, st->img, mod);
	n = sc_symbolize(&m->sym, elf, addr - mod->base, &chain);
	for (unsigned j = 0; j < n; j++) {
		push_frame(set, chain[j].func, sc_elf_name(elf), chain[j].file, chain[j].line,
			   mod->is_self, mod->is_system, chain[j].exported);
		path_buf.v[path_buf.n - 1].mod = mod;
		path_buf.v[path_buf.n - 1].addr = addr;
		if (j < sizeof(names) / sizeof(names[0]))
			names[j] = chain[j].func;
	}
	if (role)
		*role = (uint8_t)sc_py_native_role(names, n < 16 ? n : 16,
						   mod == sc_py_interpreter_module(st->img));
	return n;
}

static VEC(struct path_frame) native_buf;
static VEC(uint32_t) native_at; /* per native frame (innermost first): start in native_buf */
static VEC(uint8_t) native_roles;
static VEC(uint32_t) py_instr;
static VEC(struct sc_py_item) py_items;

/* Push a Python frame: its qualname in a "module" that is its file, and its line. */
static void python_frame(struct sc_profile_set *set, const struct sc_image *img,
			 const struct sc_py_frame *f)
{
	struct sc_model *m = set->model;
	const struct sc_py_code *c = sc_py_code_of(img, f->code_id);
	const char *empty = sc_strtab_intern(&m->strings, "");

	if (!c) {
		push_frame(set, sc_strtab_intern(&m->strings, "[unknown Python code]"), empty,
			   empty, 0, false, false, false);
		return;
	}
	int32_t line = sc_py_code_line(c, f->instr);

	push_frame(set, c->qualname, c->filename, c->filename, line > 0 ? (uint32_t)line : 0, false,
		   false, false);
}

/* The path of a stack with Python frames: native frames symbolized (innermost first, each
 * with its role), then spliced (python_splice.c) into path_buf. */
static void python_path(struct sc_profile_set *set, const struct sc_stack *st)
{
	const struct sc_py_frame *py = (const void *)(st->frames + st->nframes);
	struct sc_model *m = set->model;
	size_t n;

	native_buf.n = native_at.n = native_roles.n = py_instr.n = 0;
	for (uint32_t i = 0; i < st->nframes; i++) {
		size_t mark = path_buf.n;
		uint8_t role;
		unsigned k = native_frame(set, st, i, &role);

		/* native_frame pushes to path_buf: move the chain aside */
		*VEC_PUSH(&native_at) = (uint32_t)native_buf.n;
		*VEC_PUSH(&native_roles) = role;
		for (unsigned j = 0; j < k; j++)
			*VEC_PUSH(&native_buf) = path_buf.v[mark + j];
		path_buf.n = mark;
	}
	*VEC_PUSH(&native_at) = (uint32_t)native_buf.n;
	for (uint32_t i = 0; i < st->py_nframes; i++)
		*VEC_PUSH(&py_instr) = py[i].instr;
	VEC_RESERVE(&py_items, (size_t)st->nframes + st->py_nframes + 1);
	n = sc_py_splice(native_roles.v, st->nframes, py_instr.v, st->py_nframes,
			 (st->flags & SC_STACK_GIL_MASK) >> SC_STACK_GIL_SHIFT, m->python_native,
			 py_items.v, &set->last_splice);
	for (size_t i = 0; i < n; i++) {
		const struct sc_py_item *it = &py_items.v[i];
		const char *empty = sc_strtab_intern(&m->strings, "");

		if (it->kind == SC_PY_ITEM_PYTHON)
			python_frame(set, st->img, &py[it->index]);
		else if (it->kind == SC_PY_ITEM_GIL_WAIT)
			push_frame(set, sc_strtab_intern(&m->strings, "[waiting for the GIL]"),
				   empty, empty, 0, false, false, false);
		else
			for (uint32_t j = native_at.v[it->index]; j < native_at.v[it->index + 1];
			     j++)
				*VEC_PUSH(&path_buf) = native_buf.v[j];
	}
}

size_t sc_stack_path(struct sc_profile_set *set, const struct sc_stack *st, uint32_t **funcs,
		     uint32_t **lines)
{
	struct sc_model *m = set->model;
	const char *unknown = sc_strtab_intern(&m->strings, "[unknown]");
	const char *empty = sc_strtab_intern(&m->strings, "");

	path_buf.n = 0;
	memset(&set->last_splice, 0, sizeof(set->last_splice));
	set->last_splice.gil = (st->flags & SC_STACK_GIL_MASK) >> SC_STACK_GIL_SHIFT;
	if (st->flags & SC_SAMPLE_TRUNCATED)
		push_frame(set, sc_strtab_intern(&m->strings, "[truncated]"), empty, empty, 0,
			   false, false, false);
	for (uint32_t i = st->nframes; i-- > 0 && (st->flags & SC_STACK_SYMBOLIC);) {
		const struct sc_symframe *f;

		/* The flag and the index come from a file: a damaged one names no frame. */
		if (st->frames[i] >= m->symframes.n) {
			push_frame(set, unknown, empty, empty, 0, false, false, false);
			continue;
		}
		f = &m->symframes.v[st->frames[i]];
		push_frame(set, f->func, f->module ? f->module : empty, f->file, f->line, false,
			   false, false);
	}
	if ((st->flags & SC_SAMPLE_PYTHON) && !(st->flags & SC_STACK_SYMBOLIC))
		python_path(set, st);
	for (uint32_t i = st->nframes;
	     i-- > 0 && !(st->flags & (SC_STACK_SYMBOLIC | SC_SAMPLE_PYTHON));)
		native_frame(set, st, i, NULL);
	elide_internal(set, st->img);
	path_funcs.n = path_lines.n = path_mods.n = path_addrs.n = 0;
	for (size_t i = 0; i < path_buf.n; i++) {
		*VEC_PUSH(&path_funcs) = path_buf.v[i].func;
		*VEC_PUSH(&path_lines) = path_buf.v[i].line;
		*VEC_PUSH(&path_mods) = path_buf.v[i].mod;
		*VEC_PUSH(&path_addrs) = path_buf.v[i].addr;
	}
	if (funcs)
		*funcs = path_funcs.v;
	if (lines)
		*lines = path_lines.v;
	return path_buf.n;
}

unsigned sc_stack_gil(struct sc_profile_set *set, uint32_t idx)
{
	const struct sc_stack *st = &set->model->stacks.v[idx];

	if (!(st->flags & SC_SAMPLE_PYTHON))
		return SC_GIL_NONE;
	while (set->stack_gil.n <= idx)
		*VEC_PUSH(&set->stack_gil) = 0;
	if (!set->stack_gil.v[idx]) {
		sc_stack_path(set, st, NULL, NULL);
		set->stack_gil.v[idx] = (uint8_t)(set->last_splice.gil + 1);
	}
	return set->stack_gil.v[idx] - 1u;
}

void sc_stack_path_free(void)
{
	VEC_FREE(&path_buf);
	VEC_FREE(&native_buf);
	VEC_FREE(&native_at);
	VEC_FREE(&native_roles);
	VEC_FREE(&py_instr);
	VEC_FREE(&py_items);
	VEC_FREE(&path_funcs);
	VEC_FREE(&path_lines);
	VEC_FREE(&path_mods);
	VEC_FREE(&path_addrs);
}

void sc_stack_path_addresses(const struct sc_module *const **mods, const uint64_t **addrs)
{
	*mods = path_mods.v;
	*addrs = path_addrs.v;
}
