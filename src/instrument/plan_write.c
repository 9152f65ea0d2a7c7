/* SPDX-License-Identifier: MIT */
/*
 * Writing the patch plan (format in common/patch_plan.h): the instrumented functions of
 * each module, written to a temporary name and renamed, so a reader never sees half a plan.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "instrument.h"

static bool put(FILE *f, const void *p, size_t n)
{
	static const char zeros[8];
	size_t pad = (8 - n % 8) % 8;

	return fwrite(p, 1, n, f) == n && fwrite(zeros, 1, pad, f) == pad;
}

/* The plan of `mods` into `f`; `embedded`: one module standing for the file that carries
 * it (empty path, no identity). Returns the number of functions, or -1 on a write error. */
static uint32_t popcount(uint32_t x)
{
	uint32_t n = 0;

	for (; x; x &= x - 1)
		n++;
	return n;
}

/* The loops of `fn` that are recorded: bit i set for its loop i. */
static uint32_t recorded_loops(const struct sc_fn *fn)
{
	uint32_t mask = 0;

	for (size_t i = 0; i < fn->loops.n && i < 32; i++)
		if (!fn->loops.v[i].reason)
			mask |= 1u << i;
	return mask;
}

/* `enters` (bits over all of the function's loops) over its recorded loops only. */
static uint32_t compact_bits(uint32_t enters, uint32_t recorded)
{
	uint32_t out = 0, j = 0;

	for (uint32_t i = 0; i < 32; i++)
		if (recorded & (1u << i)) {
			if (enters & (1u << i))
				out |= 1u << j;
			j++;
		}
	return out;
}

/* A module's loops and probes, after its functions. */
static bool write_loops(FILE *f, const struct sc_module_info *mod)
{
	uint32_t func = 0, loop = 0;
	bool ok = true;

	for (size_t i = 0; ok && i < mod->fns.n; i++) {
		const struct sc_fn *fn = &mod->fns.v[i];

		if (fn->state != SC_FN_INSTRUMENTED)
			continue;
		for (size_t k = 0; ok && k < fn->loops.n; k++)
			if (!fn->loops.v[k].reason) {
				struct sc_plan_loop l = { .head = fn->loops.v[k].head,
							  .end = fn->loops.v[k].end,
							  .func = func };

				ok = put(f, &l, sizeof(l));
			}
		func++;
	}
	func = 0;
	for (size_t i = 0; ok && i < mod->fns.n; i++) {
		const struct sc_fn *fn = &mod->fns.v[i];
		uint32_t rec;

		if (fn->state != SC_FN_INSTRUMENTED)
			continue;
		rec = recorded_loops(fn);
		for (size_t k = 0; ok && rec && k < fn->probes.n; k++) {
			struct sc_plan_probe p = { .func = func,
						   .first_loop = loop,
						   .enters = compact_bits(fn->probes.v[k].enters,
									  rec),
						   .win = fn->probes.v[k].win };

			ok = put(f, &p, sizeof(p));
		}
		loop += (uint32_t)popcount(rec);
		func++;
	}
	return ok;
}

/* How many loops and probes write_loops writes. */
static void count_loops(const struct sc_module_info *mod, uint32_t *nloops, uint32_t *nprobes)
{
	*nloops = *nprobes = 0;
	for (size_t i = 0; i < mod->fns.n; i++) {
		const struct sc_fn *fn = &mod->fns.v[i];
		uint32_t rec = recorded_loops(fn);

		if (fn->state != SC_FN_INSTRUMENTED || !rec)
			continue;
		*nloops += (uint32_t)popcount(rec);
		*nprobes += (uint32_t)fn->probes.n;
	}
}

/* The plan of `mods` into `f`; `embedded`: one module standing for the file that carries
 * it (empty path, no identity). Returns the number of functions, or -1 on a write error. */
static long write_plan(FILE *f, const struct sc_module_info *mods, size_t nmods, bool embedded)
{
	struct sc_plan_file hdr = { .version = SC_PLAN_VERSION, .nmodules = (uint32_t)nmods };
	bool ok;
	long total = 0;

	memcpy(hdr.magic, SC_PLAN_MAGIC, sizeof(hdr.magic));
	ok = put(f, &hdr, sizeof(hdr));
	for (size_t m = 0; ok && m < nmods; m++) {
		const struct sc_module_info *mod = &mods[m];
		const char *path = embedded ? "" : mod->path;
		struct sc_plan_module mh = {
			.file_size = embedded ? 0 : mod->file_size,
			.mtime_ns = embedded ? 0 : mod->mtime_ns,
			.path_len = (uint32_t)strlen(path) + 1,
			.is_main = mod->is_main,
		};
		size_t counts[3];

		sc_module_counts(mod, counts);
		mh.nfuncs = (uint32_t)counts[SC_FN_INSTRUMENTED];
		count_loops(mod, &mh.nloops, &mh.nprobes);
		ok = put(f, &mh, sizeof(mh)) && put(f, path, mh.path_len);
		for (size_t i = 0; ok && i < mod->fns.n; i++)
			if (mod->fns.v[i].state == SC_FN_INSTRUMENTED)
				ok = put(f, &mod->fns.v[i].plan, sizeof(mod->fns.v[i].plan));
		ok = ok && write_loops(f, mod);
		total += mh.nfuncs;
	}
	return ok ? total : -1;
}

long sc_plan_write(const char *path, const struct sc_module_info *mods, size_t nmods, char *err,
		   size_t errlen)
{
	char *tmp = sc_xasprintf("%s.tmp", path);
	FILE *f = fopen(tmp, "wbe");
	long total;

	if (!f) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	total = write_plan(f, mods, nmods, false);
	if (fclose(f))
		total = -1;
	if (total < 0 || rename(tmp, path)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : EIO));
		unlink(tmp);
		total = -1;
	}
	free(tmp);
	return total;
}

char *sc_plan_bytes(const struct sc_module_info *mod, size_t *size)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, size);

	if (!f)
		return NULL;
	if (write_plan(f, mod, 1, true) < 0) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}
