/* SPDX-License-Identifier: MIT */
/*
 * Perf maps (perf_map.h): one line per piece of code, "START SIZE NAME", hexadecimal
 * without 0x, as perf reads them. A JIT that moves or recompiles code appends new lines:
 * where entries overlap, the later line wins.
 */
#include "perf_map.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/vec.h"
#include "model.h"
#include "strtab.h"

struct perf_entry {
	uint64_t start, end;
	uint32_t order; /* line number: later lines win */
	const char *name;
};

struct sc_perf_map {
	VEC(struct perf_entry) entries; /* by start, then by order */
};

static int by_start(const void *a, const void *b)
{
	const struct perf_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static struct sc_perf_map *load(const struct sc_image *img, struct sc_strtab *strings)
{
	char path[64], host[256], *line = NULL;
	size_t cap = 0;
	struct sc_perf_map *map;
	FILE *f;

	if (img->hostname && (gethostname(host, sizeof(host)) || strcmp(host, img->hostname)))
		return NULL;
	snprintf(path, sizeof(path), "/tmp/perf-%" PRId32 ".map", img->pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	map = calloc(1, sizeof(*map));
	while (map && getline(&line, &cap, f) > 0) {
		uint64_t start, size;
		int name_at = 0;
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %n", &start, &size, &name_at) != 2 ||
		    !name_at || !line[name_at] || !size || start + size < start)
			continue;
		*VEC_PUSH(&map->entries) =
			(struct perf_entry){ start, start + size, (uint32_t)map->entries.n,
					     sc_strtab_intern(strings, line + name_at) };
	}
	free(line);
	fclose(f);
	if (map && map->entries.n)
		qsort(map->entries.v, map->entries.n, sizeof(map->entries.v[0]), by_start);
	return map;
}

const char *sc_perf_map_name(struct sc_image *img, struct sc_strtab *strings, uint64_t addr)
{
	const struct sc_perf_map *map;
	const char *best = NULL;
	uint32_t best_order = 0;
	size_t lo = 0, hi;

	if (!img->perf_map_read) {
		img->perf_map_read = true;
		img->perf_map = load(img, strings);
	}
	map = img->perf_map;
	if (!map)
		return NULL;
	hi = map->entries.n;
	while (lo < hi) { /* the first entry starting above addr */
		size_t mid = lo + (hi - lo) / 2;

		if (map->entries.v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Entries that start at or below addr, nearest first: the latest one holding it. A
	 * few steps back are enough; code entries seldom nest. */
	for (size_t i = lo, steps = 0; i-- > 0 && steps < 64; steps++) {
		const struct perf_entry *e = &map->entries.v[i];

		if (addr < e->end && (!best || e->order > best_order)) {
			best = e->name;
			best_order = e->order;
		}
	}
	return best;
}

void sc_perf_map_free(struct sc_perf_map *map)
{
	if (!map)
		return;
	VEC_FREE(&map->entries);
	free(map);
}
