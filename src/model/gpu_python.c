/* SPDX-License-Identifier: MIT */
/* GPU time by Python call site: PY_CALLSITE records joined to GPU ops (gpu_python.h). */
#include "gpu_python.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_build.h"
#include "timeline.h"

static struct sc_py_callsites *callsites_of(struct sc_image *img)
{
	if (!img->py_callsites) {
		img->py_callsites = sc_xcalloc(1, sizeof(*img->py_callsites));
		sc_hashmap_init(&img->py_callsites->by_corr);
	}
	return img->py_callsites;
}

void sc_py_callsite_record(struct sc_image *img, int32_t tid, const struct sc_record *rec)
{
	const struct sc_rec_py_callsite *r = (const void *)rec;
	struct sc_py_callsites *cs = callsites_of(img);
	const struct sc_py_frame *f = (const void *)(r + 1);
	struct sc_py_callsite *site;
	bool inserted;
	uint64_t *slot;

	if (rec->size < sizeof(*r) ||
	    (uint64_t)r->stack.nframes * sizeof(*f) > rec->size - sizeof(*r) ||
	    r->stack.nframes > SC_PY_STACK_MAX || !r->corr_id) {
		cs->bad_records++;
		return;
	}
	slot = sc_hashmap_upsert(&cs->by_corr, r->corr_id, 0, &inserted);
	if (!inserted)
		return; /* one call, one stack: the first record stays */
	site = VEC_PUSH(&cs->v);
	site->corr_id = r->corr_id;
	site->tid = tid;
	site->frames_at = (uint32_t)cs->frames.n;
	site->nframes = r->stack.nframes;
	site->flags = r->stack.flags;
	for (uint16_t i = 0; i < r->stack.nframes; i++)
		*VEC_PUSH(&cs->frames) = f[i];
	*slot = cs->v.n;
}

void sc_py_callsites_free(struct sc_py_callsites *cs)
{
	if (!cs)
		return;
	VEC_FREE(&cs->v);
	VEC_FREE(&cs->frames);
	sc_hashmap_free(&cs->by_corr);
	free(cs);
}

const struct sc_py_callsite *sc_py_callsite_of(const struct sc_image *img, uint64_t corr,
					       const struct sc_py_frame **frames)
{
	const struct sc_py_callsites *cs = img->py_callsites;
	const uint64_t *slot = cs && corr ? sc_hashmap_get(&cs->by_corr, corr) : NULL;

	if (!slot)
		return NULL;
	*frames = &cs->frames.v[cs->v.v[*slot - 1].frames_at];
	return &cs->v.v[*slot - 1];
}

const char *sc_py_callsite_text(const struct sc_image *img, const struct sc_py_callsite *cs,
				const struct sc_py_frame *frames, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint16_t i = 0; i < cs->nframes && used + 1 < size; i++) {
		const struct sc_py_code *c = sc_py_code_of(img, frames[i].code_id);
		int n;

		if (c)
			n = snprintf(buf + used, size - used, "%s%s (%s:%d)", i ? " <- " : "",
				     c->qualname, c->filename,
				     (int)sc_py_code_line(c, frames[i].instr));
		else
			n = snprintf(buf + used, size - used, "%s[unknown Python code]",
				     i ? " <- " : "");
		if (n < 0)
			break;
		used += (size_t)n < size - used ? (size_t)n : size - used - 1;
	}
	return buf;
}

/* ---- the profile ---- */

static void on_gpu_op(void *ctx, struct sc_image *img, struct sc_thread *t,
		      const struct sc_gpu_op_ev *op)
{
	struct sc_hashmap *gpu_ns = ctx;
	const struct sc_rec_gpu_op *g = op->rec;

	(void)img;
	(void)t;
	if (!g->corr_id || g->end <= g->start ||
	    (g->kind != SC_GPU_KERNEL && g->kind != SC_GPU_COPY && g->kind != SC_GPU_SET &&
	     g->kind != SC_GPU_GRAPH))
		return;
	*sc_hashmap_upsert(gpu_ns, g->corr_id, 0, NULL) += g->end - g->start;
}

/* A call site's path, root to leaf: each frame its qualname in the "module" of its file. */
static size_t callsite_path(struct sc_profile_set *set, const struct sc_image *img,
			    const struct sc_py_callsite *cs, const struct sc_py_frame *frames,
			    uint32_t *funcs, uint32_t *lines)
{
	struct sc_model *m = set->model;
	const char *empty = sc_strtab_intern(&m->strings, "");
	size_t n = 0;

	for (uint16_t i = cs->nframes; i-- > 0;) {
		const struct sc_py_code *c = sc_py_code_of(img, frames[i].code_id);
		int32_t line = c ? sc_py_code_line(c, frames[i].instr) : 0;

		funcs[n] = c ? sc_profile_func_id(set, c->qualname, c->filename)
			     : sc_profile_func_id(
				       set, sc_strtab_intern(&m->strings, "[unknown Python code]"),
				       empty);
		lines[n] = sc_profile_line_id(set, funcs[n], c ? c->filename : empty,
					      line > 0 ? (uint32_t)line : 0);
		n++;
	}
	return n;
}

static void build_image(struct sc_profile_set *set, struct sc_image *img)
{
	static const struct sc_timeline_ops ops = { .gpu_op = on_gpu_op };
	const struct sc_py_callsites *cs = img->py_callsites;
	struct sc_timeline_stats stats = { 0 };
	struct sc_hashmap gpu_ns;
	uint32_t funcs[SC_PY_STACK_MAX], lines[SC_PY_STACK_MAX];
	struct sc_profile *p = NULL;

	sc_hashmap_init(&gpu_ns);
	sc_timeline_replay(set->model, img, &ops, &gpu_ns, &stats);
	for (size_t i = 0; i < cs->v.n; i++) {
		const struct sc_py_callsite *site = &cs->v.v[i];
		const uint64_t *ns = sc_hashmap_get(&gpu_ns, site->corr_id);
		size_t n;

		if (!ns || !*ns || !site->nframes)
			continue; /* no device time (yet), or no Python frames */
		if (!p) {
			p = sc_profile_for(set, img->proc, SC_PROFILE_GPU_PYTHON);
			p->metric = "gpu_time_by_python";
		}
		n = callsite_path(set, img, site, &cs->frames.v[site->frames_at], funcs, lines);
		sc_profile_add_path(p, site->tid, funcs, lines, n, (double)*ns * 1e-9);
		if (site->flags & SC_PY_STACK_TRUNCATED)
			p->py_truncated++;
		if (site->flags & SC_PY_STACK_BAD_CODE)
			p->py_bad_code++;
	}
	sc_hashmap_free(&gpu_ns);
}

void sc_gpu_python_profiles_build(struct sc_profile_set *set, struct sc_model *m)
{
	for (size_t i = 0; i < m->images.n; i++)
		if (m->images.v[i]->py_callsites && m->images.v[i]->py_callsites->v.n &&
		    m->images.v[i]->proc)
			build_image(set, m->images.v[i]);
}
