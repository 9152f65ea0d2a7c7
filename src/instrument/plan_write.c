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
		ok = put(f, &mh, sizeof(mh)) && put(f, path, mh.path_len);
		for (size_t i = 0; ok && i < mod->fns.n; i++)
			if (mod->fns.v[i].state == SC_FN_INSTRUMENTED)
				ok = put(f, &mod->fns.v[i].plan, sizeof(mod->fns.v[i].plan));
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
