/* SPDX-License-Identifier: MIT */
/*
 * A cache of the analysis of a module (its functions, what can be patched and how), so that
 * a library analyzed once is not decoded again at every run: like perf's build-id cache, an
 * entry is named by the file's build id (or its path's hash without one) and is used only
 * when the file's build id, size and modification time and this syscope's own build id and
 * capstone's version are those it was made with; anything else is a miss that analyzes
 * again and replaces it. Entries live in $XDG_CACHE_HOME/syscope/analysis (~/.cache/...),
 * written to a temporary name and renamed, so a reader never sees half of one. What is
 * cached is the analysis before the selection (-I/-E/-MI...), which every run applies anew.
 *
 * Entry layout (native byte order: the cache is this machine's): the magic, the key as two
 * strings, then the module and its functions, each field written as below (put_* / get_*),
 * then a checksum of all of it.
 */
#define PR_FMT "instrument: "
#include <capstone/capstone.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/strutil.h"
#include "instrument.h"

#define CACHE_MAGIC "SCACACHE"
#define CACHE_VERSION 2u /* raise it when the analysis or this layout changes */
#define NO_STRING UINT32_MAX

/* The build id of the ELF file `path` as hex into `hex` (empty when it has none). */
static void build_id_hex(const char *path, char *hex, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	const void *bits = NULL;
	Elf *elf;
	ssize_t n = -1;

	hex[0] = 0;
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf)
		n = dwelf_elf_gnu_build_id(elf, &bits);
	for (ssize_t i = 0; i < n && (size_t)(2 * i + 2) < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", ((const uint8_t *)bits)[i]);
	elf_end(elf);
	close(fd);
}

/* mkdir -p of `path`, private (mode `mode`). Returns 0, or -1 with errno set. */
static int make_dirs(char *path, mode_t mode)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, mode) && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return mkdir(path, mode) && errno != EEXIST ? -1 : 0;
}

/* The cache folder, made when missing; NULL (with `why`) when there is none. */
static char *cache_dir(const char **why)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char *base, *dir;

	if (xdg && *xdg == '/')
		base = sc_xasprintf("%s/syscope", xdg);
	else if (home && *home == '/')
		base = sc_xasprintf("%s/.cache/syscope", home);
	else {
		*why = "neither XDG_CACHE_HOME nor HOME is an absolute path";
		return NULL;
	}
	dir = sc_xasprintf("%s/analysis", base);
	if (make_dirs(dir, 0700)) {
		*why = strerror(errno);
		free(base);
		free(dir);
		return NULL;
	}
	free(base);
	return dir;
}

/* What an entry must match: this analyzer, then the file. */
static char *tool_key(void)
{
	static char self[2 * 64 + 1];
	int major, minor;
	struct stat st;

	if (!self[0])
		build_id_hex("/proc/self/exe", self, sizeof(self));
	/* A build without a build id is told apart by its file. */
	if (!self[0] && !stat("/proc/self/exe", &st))
		snprintf(self, sizeof(self), "none, size %lld mtime %lld", (long long)st.st_size,
			 (long long)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec);
	cs_version(&major, &minor);
	return sc_xasprintf("syscope-analysis-%u build-id %s capstone %d.%d", CACHE_VERSION, self,
			    major, minor);
}

static char *file_key(const char *build_id, uint64_t size, int64_t mtime_ns)
{
	return sc_xasprintf("build-id %s size %llu mtime %lld", build_id[0] ? build_id : "none",
			    (unsigned long long)size, (long long)mtime_ns);
}

/* The entry's file: by build id, else by a hash of the path. */
static char *entry_path(const char *dir, const char *path, const char *build_id)
{
	uint64_t h = 1469598103934665603ull;

	if (build_id[0])
		return sc_xasprintf("%s/%s", dir, build_id);
	for (const char *p = path; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	return sc_xasprintf("%s/path-%016llx", dir, (unsigned long long)h);
}

/* FNV-1a over an entry's bytes, stored after them: a plan read back wrong could patch a
 * program wrongly, so an entry damaged anywhere (not only cut short) is a miss. */
static uint64_t checksum(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* Reasons are static text in the analysis; those read back are kept once each, for the
 * life of the process, so that a module from the cache is freed like an analyzed one. */
static const char *intern(const char *s, size_t n)
{
	static VEC(char *) pool;

	for (size_t i = 0; i < pool.n; i++)
		if (!strncmp(pool.v[i], s, n) && !pool.v[i][n])
			return pool.v[i];
	*VEC_PUSH(&pool) = sc_xstrndup(s, n);
	return pool.v[pool.n - 1];
}

/* Writing. */
static void put(FILE *f, const void *p, size_t n)
{
	if (n) /* an empty vector's array is NULL */
		fwrite(p, 1, n, f);
}

static void put_u32(FILE *f, uint32_t v)
{
	put(f, &v, sizeof(v));
}

static void put_str(FILE *f, const char *s)
{
	if (!s) {
		put_u32(f, NO_STRING);
		return;
	}
	put_u32(f, (uint32_t)strlen(s));
	put(f, s, strlen(s));
}

static void put_fn(FILE *f, const struct sc_fn *fn)
{
	put_str(f, fn->name);
	put_str(f, fn->pretty == fn->name ? NULL : fn->pretty);
	put(f, &fn->addr, sizeof(fn->addr));
	put_u32(f, fn->size);
	put_u32(f, fn->ninsn);
	put_u32(f, fn->nloops);
	put_u32(f, fn->ncalls);
	put_u32(f, (uint32_t)fn->state);
	put_str(f, fn->reason);
	put(f, &fn->plan, sizeof(fn->plan));
	put_u32(f, (uint32_t)fn->loops.n);
	for (size_t i = 0; i < fn->loops.n; i++) {
		put(f, &fn->loops.v[i].head, sizeof(uint64_t));
		put(f, &fn->loops.v[i].end, sizeof(uint64_t));
		put_str(f, fn->loops.v[i].reason);
	}
	put_u32(f, (uint32_t)fn->probes.n);
	put(f, fn->probes.v, fn->probes.n * sizeof(*fn->probes.v));
}

/* Reading: a cursor over the entry's bytes; any read past the end marks it bad. */
struct cursor {
	const uint8_t *p, *end;
	bool bad;
};

static const void *get(struct cursor *c, size_t n)
{
	const void *at = c->p;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return NULL;
	}
	c->p += n;
	return at;
}

static void get_into(struct cursor *c, void *out, size_t n)
{
	const void *at = get(c, n);

	if (at)
		memcpy(out, at, n);
	else
		memset(out, 0, n);
}

static uint32_t get_u32(struct cursor *c)
{
	uint32_t v;

	get_into(c, &v, sizeof(v));
	return v;
}

/* A string of the entry: its length, or NO_STRING, and where its bytes are. */
static const char *get_str(struct cursor *c, uint32_t *len)
{
	*len = get_u32(c);
	if (*len == NO_STRING || c->bad)
		return NULL;
	return get(c, *len);
}

static char *get_dup(struct cursor *c)
{
	uint32_t n;
	const char *s = get_str(c, &n);

	return s ? sc_xstrndup(s, n) : NULL;
}

static const char *get_reason(struct cursor *c)
{
	uint32_t n;
	const char *s = get_str(c, &n);

	return s ? intern(s, n) : NULL;
}

static void get_fn(struct cursor *c, struct sc_fn *fn)
{
	uint32_t nloops, nprobes;

	fn->name = get_dup(c);
	fn->pretty = get_dup(c);
	if (!fn->pretty)
		fn->pretty = fn->name;
	get_into(c, &fn->addr, sizeof(fn->addr));
	fn->size = get_u32(c);
	fn->ninsn = get_u32(c);
	fn->nloops = get_u32(c);
	fn->ncalls = get_u32(c);
	fn->state = (enum sc_fn_state)get_u32(c);
	fn->reason = get_reason(c);
	get_into(c, &fn->plan, sizeof(fn->plan));
	nloops = get_u32(c);
	for (uint32_t i = 0; i < nloops && !c->bad; i++) {
		struct sc_loop *l = VEC_PUSH(&fn->loops);

		get_into(c, &l->head, sizeof(l->head));
		get_into(c, &l->end, sizeof(l->end));
		l->reason = get_reason(c);
	}
	nprobes = get_u32(c);
	for (uint32_t i = 0; i < nprobes && !c->bad; i++)
		get_into(c, VEC_PUSH(&fn->probes), sizeof(struct sc_probe));
	if (!fn->name || fn->state > SC_FN_UNPATCHABLE)
		c->bad = true;
}

/* The module from an entry's bytes after its key; false when it is damaged. */
static bool decode_entry(struct cursor *c, struct sc_module_info *mod)
{
	uint8_t flags[2];
	uint32_t n;

	get_into(c, flags, sizeof(flags));
	mod->has_symtab = flags[0];
	mod->is_library = flags[1];
	mod->interp = get_dup(c);
	mod->is_static = mod->is_main && !mod->interp && !mod->is_library;
	n = get_u32(c);
	if (c->bad || n > (size_t)(c->end - c->p) / 8)
		return false;
	for (uint32_t i = 0; i < n && !c->bad; i++)
		get_fn(c, VEC_PUSH(&mod->fns));
	return !c->bad && c->p == c->end;
}

/* The whole file `path` into memory (an entry is a few hundred KiB at most). */
static uint8_t *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rbe");
	uint8_t *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET)) {
		buf = sc_xrealloc(NULL, (size_t)n);
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*size = (size_t)n;
	}
	fclose(f);
	return buf;
}

/* Whether the entry's key (two strings after the magic) is `tool` and `file`; `why` says
 * what differs when not. */
static bool key_matches(struct cursor *c, const char *tool, const char *file, const char **why)
{
	uint32_t tn, fn;
	const char *t, *f;

	if (!(t = get_str(c, &tn)) || !(f = get_str(c, &fn))) {
		*why = "damaged";
		return false;
	}
	if (tn != strlen(tool) || memcmp(t, tool, tn)) {
		*why = "made by another build of syscope";
		return false;
	}
	if (fn != strlen(file) || memcmp(f, file, fn)) {
		*why = "stale: the file changed since (build id, size or modification time)";
		return false;
	}
	return true;
}

static bool cache_load(struct sc_module_info *mod, char *note, size_t notelen)
{
	const char *why = NULL;
	char bid[2 * 64 + 1], *dir = cache_dir(&why), *tool, *file, *entry;
	struct cursor c;
	uint8_t *buf;
	size_t size = 0;
	bool hit = false;

	if (!dir) {
		snprintf(note, notelen, "no analysis cache (%s)", why);
		return false;
	}
	build_id_hex(mod->path, bid, sizeof(bid));
	entry = entry_path(dir, mod->path, bid);
	tool = tool_key();
	file = file_key(bid, mod->file_size, mod->mtime_ns);
	buf = slurp(entry, &size);
	c = (struct cursor){ .p = buf, .end = buf + (size > 8 ? size - 8 : 0) };
	if (!buf)
		why = "none yet";
	else if (size < 16 || memcmp(buf, CACHE_MAGIC, 8) ||
		 memcmp(&(uint64_t){ checksum(buf, size - 8) }, buf + size - 8, 8))
		why = "damaged";
	else if (!get(&c, 8))
		why = "damaged";
	else if (key_matches(&c, tool, file, &why) && !(hit = decode_entry(&c, mod)))
		why = "damaged";
	if (!hit) {
		for (size_t i = 0; i < mod->fns.n; i++) {
			struct sc_fn *fn = &mod->fns.v[i];

			if (fn->pretty != fn->name)
				free(fn->pretty);
			free(fn->name);
			VEC_FREE(&fn->loops);
			VEC_FREE(&fn->probes);
		}
		VEC_FREE(&mod->fns);
		free(mod->interp);
		mod->interp = NULL;
		snprintf(note, notelen, "analysis cache miss (%s): %s", why, entry);
	} else {
		snprintf(note, notelen, "analysis from the cache: %s", entry);
	}
	free(buf);
	free(tool);
	free(file);
	free(entry);
	free(dir);
	return hit;
}

static void cache_store(const struct sc_module_info *mod, char *note, size_t notelen)
{
	const char *why = NULL;
	char bid[2 * 64 + 1], *dir = cache_dir(&why), *tool, *file, *entry, *tmp;
	uint8_t flags[2] = { mod->has_symtab, mod->is_library };
	char *body = NULL;
	size_t len = 0;
	uint64_t sum;
	FILE *f;
	int fd;

	if (!dir) {
		snprintf(note, notelen, "analysis not cached (%s)", why);
		return;
	}
	build_id_hex(mod->path, bid, sizeof(bid));
	entry = entry_path(dir, mod->path, bid);
	tmp = sc_xasprintf("%s.XXXXXX", entry);
	tool = tool_key();
	file = file_key(bid, mod->file_size, mod->mtime_ns);
	f = open_memstream(&body, &len);
	if (!f) {
		snprintf(note, notelen, "analysis not cached (%s)", strerror(errno));
		goto out;
	}
	put(f, CACHE_MAGIC, 8);
	put_str(f, tool);
	put_str(f, file);
	put(f, flags, sizeof(flags));
	put_str(f, mod->interp);
	put_u32(f, (uint32_t)mod->fns.n);
	for (size_t i = 0; i < mod->fns.n; i++)
		put_fn(f, &mod->fns.v[i]);
	if (fclose(f)) {
		snprintf(note, notelen, "analysis not cached (%s)", strerror(errno));
		goto out;
	}
	sum = checksum((const uint8_t *)body, len);
	fd = mkstemp(tmp);
	f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (!f) {
		snprintf(note, notelen, "analysis not cached (%s: %s)", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	put(f, body, len);
	put(f, &sum, sizeof(sum));
	if (ferror(f) | fclose(f) || rename(tmp, entry)) {
		snprintf(note, notelen, "analysis not cached (%s: %s)", entry, strerror(errno));
		unlink(tmp);
	} else {
		snprintf(note, notelen, "analysis saved to the cache: %s", entry);
	}
out:
	free(body);
	free(tmp);
	free(tool);
	free(file);
	free(entry);
	free(dir);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int sc_analyze_module_cached(const char *path, bool is_main, bool use_cache,
			     struct sc_module_info *mod, char *err, size_t errlen)
{
	char note[PATH_MAX + 256];
	int64_t t0 = now_ns();
	struct stat st;

	if (!use_cache || stat(path, &st) || !S_ISREG(st.st_mode))
		return sc_analyze_module(path, is_main, mod, err, errlen);
	memset(mod, 0, sizeof(*mod));
	mod->path = sc_xstrdup(path);
	mod->is_main = is_main;
	mod->file_size = (uint64_t)st.st_size;
	mod->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	if (cache_load(mod, note, sizeof(note))) {
		mod->from_cache = true;
		mod->decode_ns = (uint64_t)(now_ns() - t0);
		pr_info("%s: %s", path, note);
		return 0;
	}
	pr_info("%s: %s", path, note);
	sc_module_info_free(mod);
	if (sc_analyze_module(path, is_main, mod, err, errlen))
		return -1;
	cache_store(mod, note, sizeof(note));
	pr_info("%s: %s", path, note);
	return 0;
}
