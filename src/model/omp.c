/* SPDX-License-Identifier: MIT */
/*
 * OMP_BEGIN and OMP_REGION records into regions: the name and the arguments' names and types come from
 * src/store/omp_events.def, the values from the record, rendered as the tracer renders a
 * REGION_BEGIN's (decimal numbers, 0x-prefixed hexadecimal addresses), so both read alike.
 */
#include "omp.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kinds[SC_OMP_KIND_END] = {
#define SC_OMP_KIND(e, id, name) [id] = name,
#include "../store/omp_events.def"
#undef SC_OMP_KIND
};

static const struct {
	const char *name;
	char type;
} args[SC_OMP_ARG_END] = {
#define SC_OMP_ARG(n, id, t) [id] = { #n, t },
#include "../store/omp_events.def"
#undef SC_OMP_ARG
};

void sc_omp_texts_init(struct sc_omp_texts *t)
{
	sc_hashmap_init(&t->by_hash);
	t->texts.n = 0;
	t->texts.v = NULL;
}

void sc_omp_texts_free(struct sc_omp_texts *t)
{
	for (size_t i = 0; i < t->texts.n; i++)
		free(t->texts.v[i]);
	VEC_FREE(&t->texts);
	sc_hashmap_free(&t->by_hash);
}

/* `text` (`len` bytes) kept in `t`: the copy made before for the same text, else a new one. */
static const char *kept(struct sc_omp_texts *t, const char *text, uint32_t len)
{
	uint64_t h = sc_hash_bytes(text, len, len) | 1, *slot;
	bool inserted;
	char *copy;

	slot = sc_hashmap_upsert(&t->by_hash, h, 0, &inserted);
	if (!inserted) {
		const char *have = t->texts.v[*slot - 1];
		uint32_t have_len;

		memcpy(&have_len, have, sizeof(have_len));
		if (have_len == len && !memcmp(have + sizeof(have_len), text, len))
			return have + sizeof(have_len);
	}
	copy = sc_xcalloc(1, sizeof(len) + len);
	memcpy(copy, &len, sizeof(len));
	memcpy(copy + sizeof(len), text, len);
	*VEC_PUSH(&t->texts) = copy;
	if (inserted)
		*slot = t->texts.n; /* a rare collision keeps the first text cached */
	return copy + sizeof(len);
}

/* The region of a compact record: `flags` its header's, `values` its arguments' (`room` bytes
 * of them in the record). */
static bool region_of(struct sc_region_ev *ev, uint16_t flags, uint64_t ts, const uint64_t *values,
		      uint64_t room, struct sc_omp_texts *texts)
{
	unsigned kind = SC_OMP_KIND_OF(flags), nargs = SC_OMP_NARGS(flags);
	char buf[256], unknown[48];
	uint32_t used = 0, n = 0;
	const char *name = kind < SC_OMP_KIND_END ? kinds[kind] : NULL;

	if (8 * (uint64_t)nargs > room)
		return false;
	if (!name) {
		snprintf(unknown, sizeof(unknown), "omp construct %u", kind);
		name = kept(texts, unknown, (uint32_t)strlen(unknown) + 1);
	}
	for (unsigned i = 0; i < nargs && i < SC_OMP_MAX_ARGS; i++) {
		unsigned id = SC_OMP_ARG_ID(flags, i);
		char arg_name[16];
		const char *an = id < SC_OMP_ARG_END ? args[id].name : NULL;
		char type = an ? args[id].type : SC_ARG_UINT;
		int w;

		if (!an) {
			snprintf(arg_name, sizeof(arg_name), "arg%u", id);
			an = arg_name;
		}
		w = type == SC_ARG_POINTER
			    ? snprintf(buf + used, sizeof(buf) - used, "%c%c%s%c0x%" PRIx64, type,
				       0, an, 0, values[i])
			    : snprintf(buf + used, sizeof(buf) - used, "%c%c%s%c%" PRIu64, type, 0,
				       an, 0, values[i]);
		if (w < 0 || (size_t)w + 1 >= sizeof(buf) - used)
			break;
		used += (uint32_t)w + 1; /* its NUL ends the value */
		n++;
	}
	memset(ev, 0, sizeof(*ev));
	ev->start = ts;
	ev->name = name;
	ev->category = "openmp";
	ev->args = n ? kept(texts, buf, used) : NULL;
	ev->args_len = used;
	ev->nargs = n;
	return true;
}

bool sc_omp_region(struct sc_region_ev *ev, const struct sc_rec_omp_begin *rec, uint32_t size,
		   struct sc_omp_texts *texts)
{
	return size >= sizeof(*rec) &&
	       region_of(ev, rec->hdr.flags, rec->ts, (const uint64_t *)(rec + 1),
			 size - sizeof(*rec), texts);
}

bool sc_omp_whole_region(struct sc_region_ev *ev, const struct sc_rec_omp_region *rec,
			 uint32_t size, struct sc_omp_texts *texts)
{
	uint64_t values[SC_OMP_MAX_ARGS] = { 0 };
	unsigned nargs = SC_OMP_NARGS(rec->hdr.flags), wide, narrow;

	if (size < sizeof(*rec))
		return false;
	wide = SC_OMP_REGION_WIDE(size);
	narrow = nargs && wide < nargs;	     /* the first one in `first` */
	if (narrow && nargs == 2 && !wide) { /* both in `first` */
		values[0] = SC_OMP_PAIR_LOW(rec->first);
		values[1] = SC_OMP_PAIR_HIGH(rec->first);
		narrow = 2;
	} else if (narrow) {
		values[0] = rec->first;
		if (SC_OMP_KIND_OF(rec->hdr.flags) == SC_OMP_PARALLEL_TEAM)
			values[0] = SC_OMP_PAIR_LOW(rec->first); /* the team size above it */
	}
	for (unsigned i = narrow; i < nargs && i < SC_OMP_MAX_ARGS && i - narrow < wide; i++)
		values[i] = ((const uint64_t *)(rec + 1))[i - narrow];
	if (!region_of(ev, rec->hdr.flags, rec->ts, values, 8 * (uint64_t)(wide + narrow), texts))
		return false;
	ev->end = rec->dur && rec->ts + rec->dur > rec->ts ? rec->ts + rec->dur : 0;
	return true;
}

bool sc_omp_held_task(struct sc_region_ev *task, const struct sc_region_ev *region,
		      const struct sc_rec_omp_region *rec, uint32_t size,
		      struct sc_omp_texts *texts)
{
	uint16_t flags =
		SC_OMP_IMPLICIT_TASK | 2u << 6 | SC_OMP_ARG_thread << 8 | SC_OMP_ARG_team << 12;
	uint64_t values[2] = { 0, SC_OMP_TEAM_OF(rec->hdr.flags, rec->first) };

	if (size < sizeof(*rec) || !values[1] ||
	    !region_of(task, flags, rec->ts, values, sizeof(values), texts))
		return false;
	task->end = region->end;
	task->context = region->context;
	return true;
}
