/* SPDX-License-Identifier: MIT */
#include "profile_build.h"
#include "gpu_python.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

struct path_frame {
	uint32_t func, line;
	bool self, system, exported;
};

static VEC(struct path_frame) path_buf;
static VEC(uint32_t) path_funcs, path_lines;

uint32_t sc_profile_func_id(struct sc_profile_set *set, const char *name, const char *module)
{
	uint64_t key = sc_hash_bytes(&name, sizeof(name), (uint64_t)(uintptr_t)module);
	bool inserted;
	uint64_t *slot;

	/* Interned strings: pointer identity is string identity. Chain on hash collision. */
	for (;;) {
		slot = sc_hashmap_upsert(&set->func_index, key, 0, &inserted);
		if (inserted)
			break;
		struct sc_func *f = &set->funcs.v[*slot - 1];

		if (f->name == name && f->module == module)
			return (uint32_t)(*slot - 1);
		key = sc_hash_u64(key);
	}
	struct sc_func *f = VEC_PUSH(&set->funcs);

	f->name = name;
	f->module = module;
	*slot = set->funcs.n;
	return (uint32_t)(set->funcs.n - 1);
}

uint32_t sc_profile_line_id(struct sc_profile_set *set, uint32_t func, const char *file,
			    uint32_t line)
{
	uint64_t key = sc_hash_bytes(&file, sizeof(file), ((uint64_t)func << 32) | line);
	bool inserted;
	uint64_t *slot;

	for (;;) {
		slot = sc_hashmap_upsert(&set->line_index, key, 0, &inserted);
		if (inserted)
			break;
		struct sc_line *l = &set->lines.v[*slot - 1];

		if (l->func == func && l->file == file && l->line == line)
			return (uint32_t)(*slot - 1);
		key = sc_hash_u64(key);
	}
	struct sc_line *l = VEC_PUSH(&set->lines);

	l->func = func;
	l->file = file;
	l->line = line;
	*slot = set->lines.n;
	return (uint32_t)(set->lines.n - 1);
}

static void push_frame(struct sc_profile_set *set, const char *func, const char *module,
		       const char *file, uint32_t line, bool self, bool system, bool exported)
{
	struct path_frame *pf = VEC_PUSH(&path_buf);

	pf->func = sc_profile_func_id(set, func, module);
	pf->line = sc_profile_line_id(set, pf->func, file, line);
	pf->self = self;
	pf->system = system;
	pf->exported = exported;
}

/*
 * Drop syscope's own frames. A syscope wrapper that is the leafmost syscope frame and has
 * only libc/loader frames below it stays as the leaf (it is named after the call it wraps:
 * time in `nanosleep` then shows as nanosleep, not as the mask juggling around it). Time in
 * syscope's internal code (finalization at exit, say) shows as one "[syscope]" frame.
 */
static void elide_internal(struct sc_profile_set *set)
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
		if (path_buf.v[k].exported && below < n) {
			/* Shown in the module of what it wraps (the libc frames below it). */
			const struct sc_func *f = &set->funcs.v[path_buf.v[k].func];
			const char *module = set->funcs.v[path_buf.v[below].func].module;
			const char *none = sc_strtab_intern(&set->model->strings, "");

			path_buf.v[k].func = sc_profile_func_id(set, f->name, module);
			path_buf.v[k].line = sc_profile_line_id(set, path_buf.v[k].func, none, 0);
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

		push_frame(set, sc_strtab_intern(&m->strings, "[unknown]"), empty, empty, 0, false,
			   false, false);
		if (role)
			*role = 0;
		return 1;
	}
	elf = sc_model_module_elf(m, st->img, mod);
	n = sc_symbolize(&m->sym, elf, addr - mod->base, &chain);
	for (unsigned j = 0; j < n; j++) {
		push_frame(set, chain[j].func, sc_elf_name(elf), chain[j].file, chain[j].line,
			   mod->is_self, mod->is_system, chain[j].exported);
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
	elide_internal(set);
	path_funcs.n = path_lines.n = 0;
	for (size_t i = 0; i < path_buf.n; i++) {
		*VEC_PUSH(&path_funcs) = path_buf.v[i].func;
		*VEC_PUSH(&path_lines) = path_buf.v[i].line;
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

static void tree_init(struct sc_tree *t, int32_t tid)
{
	struct sc_node *root;

	memset(t, 0, sizeof(*t));
	t->tid = tid;
	sc_hashmap_init(&t->children);
	root = VEC_PUSH(&t->nodes);
	root->func = NONE;
	root->parent = NONE;
	root->first_child = root->next_sibling = NONE;
}

uint32_t sc_tree_child(struct sc_tree *t, uint32_t parent, uint32_t func)
{
	bool inserted;
	uint64_t *slot =
		sc_hashmap_upsert(&t->children, ((uint64_t)parent << 32 | func) + 1, 0, &inserted);
	struct sc_node *n;
	uint32_t id;

	if (!inserted)
		return (uint32_t)*slot;
	id = (uint32_t)t->nodes.n;
	n = VEC_PUSH(&t->nodes);
	n->func = func;
	n->parent = parent;
	n->depth = t->nodes.v[parent].depth + 1;
	n->first_child = NONE;
	n->next_sibling = t->nodes.v[parent].first_child;
	t->nodes.v[parent].first_child = id;
	*slot = id;
	return id;
}

static void tree_add(struct sc_tree *t, const uint32_t *funcs, size_t n, const struct sc_stats *w)
{
	uint32_t node = 0;

	sc_stats_merge(&t->nodes.v[0].incl, w);
	for (size_t i = 0; i < n; i++) {
		node = sc_tree_child(t, node, funcs[i]);
		sc_stats_merge(&t->nodes.v[node].incl, w);
	}
	sc_stats_merge(&t->nodes.v[node].excl, w);
}

static void tree_free(struct sc_tree *t)
{
	VEC_FREE(&t->nodes);
	sc_hashmap_free(&t->children);
}

struct sc_profile *sc_profile_for(struct sc_profile_set *set, struct sc_process *proc,
				  unsigned kind)
{
	for (size_t i = 0; i < set->profiles.n; i++)
		if (set->profiles.v[i]->proc == proc && set->profiles.v[i]->kind == kind)
			return set->profiles.v[i];

	struct sc_profile *p = sc_xcalloc(1, sizeof(*p));

	p->set = set;
	p->proc = proc;
	p->kind = kind;
	p->metric = sc_kind_metric(kind);
	tree_init(&p->merged, -1);
	sc_hashmap_init(&p->thread_tree);
	for (size_t i = 0; i < proc->threads.n; i++) {
		struct sc_tree *t = VEC_PUSH(&p->threads);

		tree_init(t, proc->threads.v[i].tid);
		t->thread_idx = (uint32_t)i;
		*sc_hashmap_upsert(&p->thread_tree, (uint64_t)(uint32_t)t->tid + 1, 0, NULL) =
			p->threads.n;
	}
	*VEC_PUSH(&set->profiles) = p;
	return p;
}

static struct sc_flat *flat_at(void *vec_, size_t id);

struct sc_flat *sc_profile_func_flat(struct sc_profile *p, uint32_t id)
{
	return flat_at(&p->funcs, id);
}

struct sc_tree *sc_profile_thread_tree(struct sc_profile *p, int32_t tid)
{
	uint64_t *tt = sc_hashmap_get(&p->thread_tree, (uint64_t)(uint32_t)tid + 1);

	return tt ? &p->threads.v[*tt - 1] : NULL;
}

static struct sc_flat *flat_at(void *vec_, size_t id)
{
	VEC(struct sc_flat) *vec = vec_;

	while (vec->n <= id)
		VEC_PUSH(vec);
	return &vec->v[id];
}

/* Add a stack's statistics to the flat tables: exclusive to the leaf, inclusive once to each
 * distinct function or line on the path (recursion counts once). */
/* The counter sums of function `id`, the table grown to hold it. */
double *sc_profile_func_pmc_at(struct sc_profile *p, uint32_t id)
{
	size_t need = ((size_t)id + 1) * 2 * SC_PMC_MAX;

	VEC_RESERVE(&p->func_pmc, need);
	while (p->func_pmc.n < need)
		*VEC_PUSH(&p->func_pmc) = 0;
	return &p->func_pmc.v[(size_t)id * 2 * SC_PMC_MAX];
}

static void flat_add(struct sc_profile *p, const uint32_t *funcs, const uint32_t *lines, size_t n,
		     const struct sc_stats *w, const double *pmc, uint32_t *stamp_f,
		     uint32_t *stamp_l, uint32_t stamp)
{
	for (size_t i = 0; i < n; i++) {
		if (stamp_f[funcs[i]] != stamp) {
			stamp_f[funcs[i]] = stamp;
			sc_stats_merge(&flat_at(&p->funcs, funcs[i])->incl, w);
			if (pmc) {
				double *f = sc_profile_func_pmc_at(p, funcs[i]);

				for (unsigned k = 0; k < p->pmc_n; k++)
					f[k] += pmc[k];
			}
		}
		if (stamp_l[lines[i]] != stamp) {
			stamp_l[lines[i]] = stamp;
			sc_stats_merge(&flat_at(&p->lines, lines[i])->incl, w);
		}
	}
	if (n) {
		sc_stats_merge(&flat_at(&p->funcs, funcs[n - 1])->excl, w);
		sc_stats_merge(&flat_at(&p->lines, lines[n - 1])->excl, w);
		if (pmc) {
			double *f = sc_profile_func_pmc_at(p, funcs[n - 1]);

			for (unsigned k = 0; k < p->pmc_n; k++) {
				f[SC_PMC_MAX + k] += pmc[k];
				p->pmc_total[k] += pmc[k];
			}
		}
	}
}

/* A Python stack's GIL state and splice outcome (of the sc_stack_path just made). */
static void python_counts(struct sc_profile *p, struct sc_tree *t, const struct sc_stack *st)
{
	const struct sc_py_splice *sp = &p->set->last_splice;

	p->py_samples += st->w.count;
	if (sp->extra_groups)
		p->py_extra_groups += st->w.count;
	if (sp->extra_evals)
		p->py_extra_evals += st->w.count;
	if (st->flags & SC_STACK_PY_TRUNCATED)
		p->py_truncated += st->w.count;
	if (st->flags & SC_STACK_PY_BAD_CODE)
		p->py_bad_code += st->w.count;
	p->merged.gil[sp->gil] += st->w.count;
	if (t)
		t->gil[sp->gil] += st->w.count;
}

static int by_creation(const void *a, const void *b)
{
	const struct sc_tree *x = a, *y = b;

	return x->thread_idx < y->thread_idx ? -1 : x->thread_idx > y->thread_idx;
}

void sc_profiles_build(struct sc_profile_set *set, struct sc_model *m, bool regions)
{
	VEC(uint32_t) stamp_f = { 0 }, stamp_l = { 0 };

	memset(set, 0, sizeof(*set));
	set->model = m;
	sc_hashmap_init(&set->func_index);
	sc_hashmap_init(&set->line_index);
	/* Profiles in process order, so outputs are listed the same way every time. */
	for (size_t i = 0; i < m->processes.n; i++)
		for (unsigned k = 0; k < SC_KINDS; k++)
			if (sc_sample_kind_profiled(k) && m->processes.v[i]->samples[k])
				sc_profile_for(set, m->processes.v[i], k);

	for (size_t s = 0; s < m->stacks.n; s++) {
		const struct sc_stack *st = &m->stacks.v[s];
		struct sc_profile *p;
		uint32_t *funcs, *lines;
		size_t n;

		if (!sc_sample_kind_profiled(st->kind))
			continue;
		p = sc_profile_for(set, st->img->proc, st->kind);
		n = sc_stack_path(set, st, &funcs, &lines);
		tree_add(&p->merged, funcs, n, &st->w);
		uint64_t *tt = sc_hashmap_get(&p->thread_tree, (uint64_t)(uint32_t)st->tid + 1);

		if (tt)
			tree_add(&p->threads.v[*tt - 1], funcs, n, &st->w);
		VEC_RESERVE(&stamp_f, set->funcs.n);
		VEC_RESERVE(&stamp_l, set->lines.n);
		while (stamp_f.n < set->funcs.n)
			*VEC_PUSH(&stamp_f) = NONE;
		while (stamp_l.n < set->lines.n)
			*VEC_PUSH(&stamp_l) = NONE;
		if (!p->pmc_n && st->img->pmc_n) { /* the process's events, from its image */
			p->pmc_n = st->img->pmc_n;
			memcpy(p->pmc_names, st->img->pmc_names, sizeof(p->pmc_names));
		}
		flat_add(p, funcs, lines, n, &st->w, sc_stack_pmc(m, s), stamp_f.v, stamp_l.v,
			 (uint32_t)s);
		sc_stats_merge(&p->total, &st->w);
		if (st->flags & SC_SAMPLE_TRUNCATED)
			p->truncated += st->w.count;
		if (st->flags & SC_SAMPLE_PYTHON)
			python_counts(p, tt ? &p->threads.v[*tt - 1] : NULL, st);
	}
	if (regions)
		sc_region_profiles_build(set, m);
	sc_gpu_python_profiles_build(set, m);
	for (size_t i = 0; i < set->profiles.n; i++) {
		struct sc_profile *p = set->profiles.v[i];
		size_t keep = 0;

		/* Threads without samples of this kind have empty trees: leave them out. */
		for (size_t t = 0; t < p->threads.n; t++) {
			if (p->threads.v[t].nodes.v[0].incl.count)
				p->threads.v[keep++] = p->threads.v[t];
			else
				tree_free(&p->threads.v[t]);
		}
		p->threads.n = keep;
		if (p->threads.n > 1)
			qsort(p->threads.v, p->threads.n, sizeof(*p->threads.v), by_creation);
		sc_hashmap_free(&p->thread_tree);
	}
	VEC_FREE(&stamp_f);
	VEC_FREE(&stamp_l);
}

void sc_profile_add_path(struct sc_profile *p, int32_t tid, const uint32_t *funcs,
			 const uint32_t *lines, size_t n, double weight)
{
	static VEC(uint32_t) stamp_f, stamp_l; /* the model is built by one thread */
	static uint32_t stamp;
	struct sc_profile_set *set = p->set;
	struct sc_stats w = { 0 };
	struct sc_tree *t = sc_profile_thread_tree(p, tid);

	sc_stats_add(&w, weight);
	tree_add(&p->merged, funcs, n, &w);
	if (t)
		tree_add(t, funcs, n, &w);
	while (stamp_f.n < set->funcs.n)
		*VEC_PUSH(&stamp_f) = NONE;
	while (stamp_l.n < set->lines.n)
		*VEC_PUSH(&stamp_l) = NONE;
	if (++stamp == NONE) { /* wrapped: no stale stamp may match */
		memset(stamp_f.v, 0xff, stamp_f.n * sizeof(*stamp_f.v));
		memset(stamp_l.v, 0xff, stamp_l.n * sizeof(*stamp_l.v));
		stamp = 0;
	}
	flat_add(p, funcs, lines, n, &w, NULL, stamp_f.v, stamp_l.v, stamp);
	sc_stats_merge(&p->total, &w);
}

void sc_profiles_free(struct sc_profile_set *set)
{
	for (size_t i = 0; i < set->profiles.n; i++) {
		struct sc_profile *p = set->profiles.v[i];

		tree_free(&p->merged);
		for (size_t t = 0; t < p->threads.n; t++)
			tree_free(&p->threads.v[t]);
		VEC_FREE(&p->threads);
		VEC_FREE(&p->funcs);
		VEC_FREE(&p->lines);
		VEC_FREE(&p->func_pmc);
		free(p);
	}
	VEC_FREE(&set->profiles);
	VEC_FREE(&set->funcs);
	VEC_FREE(&set->lines);
	VEC_FREE(&set->stack_gil);
	sc_hashmap_free(&set->func_index);
	sc_hashmap_free(&set->line_index);
	VEC_FREE(&path_buf);
	VEC_FREE(&native_buf);
	VEC_FREE(&native_at);
	VEC_FREE(&native_roles);
	VEC_FREE(&py_instr);
	VEC_FREE(&py_items);
	VEC_FREE(&path_funcs);
	VEC_FREE(&path_lines);
}

static const struct sc_tree *sort_tree;

static int by_incl_desc(const void *a, const void *b)
{
	const struct sc_node *x = &sort_tree->nodes.v[*(const uint32_t *)a];
	const struct sc_node *y = &sort_tree->nodes.v[*(const uint32_t *)b];

	if (x->incl.sum != y->incl.sum)
		return x->incl.sum > y->incl.sum ? -1 : 1;
	return x->incl.count > y->incl.count ? -1 : x->incl.count < y->incl.count;
}

uint32_t *sc_tree_sorted_children(const struct sc_tree *t, uint32_t node, size_t *n)
{
	size_t count = 0;
	uint32_t *v;

	for (uint32_t c = t->nodes.v[node].first_child; c != NONE; c = t->nodes.v[c].next_sibling)
		count++;
	v = sc_xcalloc(count ? count : 1, sizeof(*v));
	count = 0;
	for (uint32_t c = t->nodes.v[node].first_child; c != NONE; c = t->nodes.v[c].next_sibling)
		v[count++] = c;
	sort_tree = t;
	qsort(v, count, sizeof(*v), by_incl_desc);
	*n = count;
	return v;
}

static const struct sc_profile *sort_profile;
static bool sort_lines;

static int flat_by_excl_desc(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct sc_flat *fx =
		sort_lines ? &sort_profile->lines.v[x] : &sort_profile->funcs.v[x];
	const struct sc_flat *fy =
		sort_lines ? &sort_profile->lines.v[y] : &sort_profile->funcs.v[y];

	if (fx->excl.sum != fy->excl.sum)
		return fx->excl.sum > fy->excl.sum ? -1 : 1;
	if (fx->incl.sum != fy->incl.sum)
		return fx->incl.sum > fy->incl.sum ? -1 : 1;
	return x < y ? -1 : x > y;
}

uint32_t *sc_profile_sorted_flat(const struct sc_profile *p, bool lines, size_t *n)
{
	size_t total = lines ? p->lines.n : p->funcs.n, count = 0;
	uint32_t *v = sc_xcalloc(total ? total : 1, sizeof(*v));

	for (size_t i = 0; i < total; i++) {
		const struct sc_flat *f = lines ? &p->lines.v[i] : &p->funcs.v[i];

		if (f->incl.count)
			v[count++] = (uint32_t)i;
	}
	sort_profile = p;
	sort_lines = lines;
	qsort(v, count, sizeof(*v), flat_by_excl_desc);
	*n = count;
	return v;
}

uint32_t *sc_profile_hot_lines(const struct sc_profile *p)
{
	const struct sc_profile_set *set = p->set;
	uint32_t *hot = sc_xcalloc(set->funcs.n ? set->funcs.n : 1, sizeof(*hot));

	for (size_t i = 0; i < set->funcs.n; i++)
		hot[i] = NONE;
	for (size_t l = 0; l < p->lines.n; l++) {
		uint32_t f = set->lines.v[l].func;
		const struct sc_flat *cur = &p->lines.v[l];

		if (!cur->incl.count)
			continue;
		if (hot[f] == NONE || cur->excl.sum > p->lines.v[hot[f]].excl.sum ||
		    (cur->excl.sum == p->lines.v[hot[f]].excl.sum &&
		     cur->incl.sum > p->lines.v[hot[f]].incl.sum))
			hot[f] = (uint32_t)l;
	}
	return hot;
}
