/* SPDX-License-Identifier: MIT */
/*
 * The Python records of a process image: interpreters (PY_RUNTIME) and code objects
 * (PY_CODE), and what samples and traced calls name through them.
 */
#include "python.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

const char *sc_gil_state_name(unsigned state)
{
	static const char *const names[SC_GIL_STATES] = { "none", "holds", "released", "waiting" };

	return state < SC_GIL_STATES ? names[state] : "?";
}

static struct sc_py_image *py_of(struct sc_image *img)
{
	if (!img->py) {
		img->py = sc_xcalloc(1, sizeof(*img->py));
		sc_hashmap_init(&img->py->by_id);
	}
	return img->py;
}

/* The text of `len` bytes at `p`, interned (the record's strings carry no NUL). */
static const char *intern_n(struct sc_model *m, const char *p, size_t len)
{
	char *copy = sc_xcalloc(len + 1, 1);
	const char *r;

	memcpy(copy, p, len);
	r = sc_strtab_intern(&m->strings, copy);
	free(copy);
	return r;
}

static void add_code(struct sc_model *m, struct sc_image *img, const struct sc_rec_py_code *r)
{
	struct sc_py_image *py = py_of(img);
	uint64_t tail = (uint64_t)r->filename_len + r->qualname_len + r->linetable_len;
	const char *t = (const char *)(r + 1);
	struct sc_py_code *c;
	bool inserted;
	uint64_t *slot;

	if (r->hdr.size < sizeof(*r) || tail > r->hdr.size - sizeof(*r) || !r->id) {
		py->bad_records++;
		return;
	}
	/* Two threads may both describe a new code object under ids of their own; an id
	 * names one code object, and its first record stays. */
	slot = sc_hashmap_upsert(&py->by_id, r->id, 0, &inserted);
	if (!inserted)
		return;
	c = VEC_PUSH(&py->codes);
	c->id = r->id;
	c->first_line = r->first_line;
	c->version = r->version;
	c->flags = r->flags;
	c->filename = intern_n(m, t, r->filename_len);
	c->qualname = intern_n(m, t + r->filename_len, r->qualname_len);
	c->linetable_len = r->linetable_len;
	c->linetable = sc_xcalloc(r->linetable_len ? r->linetable_len : 1, 1);
	memcpy(c->linetable, t + r->filename_len + r->qualname_len, r->linetable_len);
	*slot = py->codes.n;
}

void sc_py_record(struct sc_model *m, struct sc_image *img, const struct sc_record *rec)
{
	if (rec->type == SC_REC_PY_CODE) {
		add_code(m, img, (const struct sc_rec_py_code *)rec);
	} else if (rec->type == SC_REC_PY_RUNTIME) {
		const struct sc_rec_py_runtime *r = (const void *)rec;
		struct sc_py_runtime_info *info = VEC_PUSH(&py_of(img)->runtimes);

		info->ts = r->ts;
		info->runtime = r->runtime;
		info->version = r->version;
		info->state = r->state;
		info->flags = r->flags;
	}
}

void sc_py_bad_stack(struct sc_image *img)
{
	py_of(img)->bad_stacks++;
}

void sc_py_image_free(struct sc_py_image *py)
{
	if (!py)
		return;
	for (size_t i = 0; i < py->codes.n; i++)
		free(py->codes.v[i].linetable);
	VEC_FREE(&py->codes);
	VEC_FREE(&py->runtimes);
	sc_hashmap_free(&py->by_id);
	free(py);
}

const struct sc_py_code *sc_py_code_of(const struct sc_image *img, uint32_t id)
{
	const uint64_t *slot = img->py && id ? sc_hashmap_get(&img->py->by_id, id) : NULL;

	return slot ? &img->py->codes.v[*slot - 1] : NULL;
}

int32_t sc_py_code_line(const struct sc_py_code *c, uint32_t instr)
{
	int64_t index = (int64_t)(instr & ~SC_PY_FRAME_GROUP_END) - 1;
	int32_t line;

	if (sc_py_line_at(c->version, c->linetable, c->linetable_len, c->first_line, index, &line))
		return line;
	return c->first_line; /* not started yet (index -1), or a line table cut short */
}

const struct sc_py_stack *sc_py_sample_stack(const struct sc_rec_sample *s,
					     const struct sc_py_frame **frames)
{
	uint64_t at = sizeof(*s) + (uint64_t)s->nframes * 8;
	const struct sc_py_stack *ps;

	*frames = NULL;
	if (!(s->hdr.flags & SC_SAMPLE_PYTHON) || at + sizeof(*ps) > s->hdr.size)
		return NULL;
	ps = (const void *)((const char *)s + at);
	if (ps->nframes > SC_PY_STACK_MAX ||
	    at + sizeof(*ps) + (uint64_t)ps->nframes * sizeof(**frames) > s->hdr.size)
		return NULL;
	*frames = (const void *)(ps + 1);
	return ps;
}

struct sc_module *sc_py_interpreter_module(struct sc_image *img)
{
	struct sc_py_image *py = img->py;

	if (!py || !py->runtimes.n)
		return NULL;
	if (!py->interp_known) { /* asked per native frame: look it up once */
		py->interp =
			sc_image_module_at(img, py->runtimes.v[0].runtime, py->runtimes.v[0].ts);
		py->interp_known = true;
	}
	return py->interp;
}

const char *sc_py_func_name(struct sc_model *m, const struct sc_image *img, uint64_t addr,
			    const struct sc_py_code **code)
{
	uint32_t id = (uint32_t)(addr >> 32 & 0x7fffffff);
	char buf[32];

	*code = sc_py_code_of(img, id);
	if (*code)
		return (*code)->qualname;
	snprintf(buf, sizeof(buf), "<code %u>", id);
	return sc_strtab_intern(&m->strings, buf);
}
