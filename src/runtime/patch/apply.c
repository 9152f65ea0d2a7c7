/* SPDX-License-Identifier: MIT */
/*
 * Applying the patch plan at start-up (before the program's own constructors run, while it
 * has one thread). For each module of the plan that is loaded and is the very file the plan
 * was made from (size and modification time), and for each function whose first bytes are
 * still those the analysis saw:
 *   - its trampoline is built in a block mapped within +-2 GiB of the module (a jmp rel32
 *     reaches it, RIP-relative operands can be re-aimed from it);
 *   - its first bytes become a jmp to the trampoline (the rest of the displaced bytes int3).
 * The module's code is made writable only for the writes (read+write, then read+exec: no
 * page is ever writable and executable). Anything that does not fit is left unpatched and
 * counted; nothing is patched half-way.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/patch_plan.h"
#include "patch.h"

#define TRAMP_SIZE 64u
#define NEAR_LIMIT ((int64_t)1 << 31)

struct loaded {
	const char *path; /* plan's path of the module */
	bool is_main;
	uint64_t bias;		   /* load bias */
	uint64_t text_lo, text_hi; /* executable segment(s), at run time */
	bool found;
};

struct stats {
	uint32_t patched, changed, far, modules;
};

static uint64_t *func_addr; /* by id, for the records */

static int find_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct loaded *m = arg;
	char exe[4096];
	ssize_t n;

	(void)size;
	if (m->is_main) {
		/* The program is the first object dl_iterate_phdr reports. */
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			return 1;
		exe[n] = 0;
		if (strcmp(exe, m->path))
			return 1;
	} else {
		/* A library: the loader's name for it may be a link; the plan has the real path. */
		if (!info->dlpi_name || !*info->dlpi_name || !realpath(info->dlpi_name, exe) ||
		    strcmp(exe, m->path))
			return 0;
	}
	m->bias = info->dlpi_addr;
	m->text_lo = UINT64_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (info->dlpi_addr + ph->p_vaddr < m->text_lo)
			m->text_lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > m->text_hi)
			m->text_hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	m->found = m->text_lo < m->text_hi;
	return 1;
}

static bool near(uint64_t a, uint64_t b)
{
	int64_t d = (int64_t)(a - b);

	return d > -NEAR_LIMIT + 4096 && d < NEAR_LIMIT - 4096;
}

/* Map `len` bytes within reach of [lo, hi): free gaps from /proc/self/maps, nearest first
 * below the module, then above. */
static void *map_near(uint64_t lo, uint64_t hi, size_t len)
{
	uint64_t prev_end = 0x10000, best = 0;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e;
		uint64_t cand;

		if (sscanf(line, "%llx-%llx", &s, &e) != 2)
			continue;
		if (s >= prev_end + len) {
			/* The gap [prev_end, s): its top part if below the module, else its bottom. */
			cand = s <= lo ? s - len : prev_end;
			cand &= ~(uint64_t)4095;
			if (cand >= prev_end && near(cand, lo) && near(cand + len, hi) &&
			    (!best || (cand < lo ? lo - cand : cand - hi) <
					      (best < lo ? lo - best : best - hi)))
				best = cand;
		}
		if (e > prev_end)
			prev_end = e;
	}
	fclose(f);
	if (!best)
		return NULL;
	void *p = mmap((void *)(uintptr_t)best, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if ((uint64_t)(uintptr_t)p != best) { /* a kernel without MAP_FIXED_NOREPLACE */
		munmap(p, len);
		return NULL;
	}
	return p;
}

static bool fits_rel32(int64_t d)
{
	return d >= INT32_MIN && d <= INT32_MAX;
}

static void put_rel32(uint8_t *at, uint64_t from_end, uint64_t to)
{
	int32_t rel = (int32_t)(int64_t)(to - from_end);

	memcpy(at, &rel, 4);
}

/* Build `fn`'s trampoline at `t` (run-time address `t` too). Returns false when an operand
 * cannot reach its target from there. */
static bool build_trampoline(uint8_t *t, uint64_t stub_ptr, const struct sc_plan_func *fn,
			     uint64_t func, uint32_t id)
{
	uint64_t patch_at = func + fn->patch_off;
	uint8_t *p = t;

	*p++ = 0x68; /* push $id */
	memcpy(p, &id, 4);
	p += 4;
	*p++ = 0xff; /* call *stub_ptr(%rip) */
	*p++ = 0x15;
	put_rel32(p, (uint64_t)(uintptr_t)(p + 4), stub_ptr);
	p += 4;
	for (unsigned i = 0; i < fn->ninsn; i++) {
		const struct sc_plan_insn *in = &fn->insn[i];
		uint64_t src = patch_at + in->off, target = func + (uint64_t)(int64_t)in->target;

		switch (in->kind) {
		case SC_PLAN_COPY:
			memcpy(p, fn->orig + in->off, in->len);
			p += in->len;
			break;
		case SC_PLAN_RIPREL: {
			int32_t disp;
			uint64_t abs;

			memcpy(p, fn->orig + in->off, in->len);
			memcpy(&disp, p + in->arg, 4);
			abs = src + in->len + (uint64_t)(int64_t)disp;
			if (!fits_rel32((int64_t)(abs - ((uint64_t)(uintptr_t)p + in->len))))
				return false;
			put_rel32(p + in->arg, (uint64_t)(uintptr_t)p + in->len, abs);
			p += in->len;
			break;
		}
		case SC_PLAN_JMP:
			*p++ = 0xe9;
			put_rel32(p, (uint64_t)(uintptr_t)p + 4, target);
			p += 4;
			break;
		case SC_PLAN_JCC:
			*p++ = 0x0f;
			*p++ = (uint8_t)(0x80 | in->arg);
			put_rel32(p, (uint64_t)(uintptr_t)p + 4, target);
			p += 4;
			break;
		case SC_PLAN_CALL: {
			/* lea -8(%rsp),%rsp (no flags touched); movl $lo,(%rsp); movl $hi,4(%rsp) */
			static const uint8_t lea[5] = { 0x48, 0x8d, 0x64, 0x24, 0xf8 };
			uint64_t ret = src + in->len;
			uint32_t lo = (uint32_t)ret, hi = (uint32_t)(ret >> 32);

			memcpy(p, lea, 5);
			p += 5;
			*p++ = 0xc7, *p++ = 0x04, *p++ = 0x24;
			memcpy(p, &lo, 4);
			p += 4;
			*p++ = 0xc7, *p++ = 0x44, *p++ = 0x24, *p++ = 0x04;
			memcpy(p, &hi, 4);
			p += 4;
			*p++ = 0xe9;
			put_rel32(p, (uint64_t)(uintptr_t)p + 4, target);
			p += 4;
			break;
		}
		default:
			return false;
		}
	}
	*p++ = 0xe9; /* back into the function, after the displaced bytes */
	put_rel32(p, (uint64_t)(uintptr_t)p + 4, patch_at + fn->patch_len);
	return true;
}

static bool same_file(const char *path, const struct sc_plan_module *pm)
{
	struct stat st;

	return !stat(path, &st) && (uint64_t)st.st_size == pm->file_size &&
	       (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec == pm->mtime_ns;
}

static int set_text(const struct loaded *m, int prot)
{
	uint64_t lo = m->text_lo & ~(uint64_t)4095, hi = (m->text_hi + 4095) & ~(uint64_t)4095;

	return mprotect((void *)(uintptr_t)lo, hi - lo, prot);
}

/* Patch one module's functions (ids from `first_id`). */
static void patch_module(const struct sc_plan_module *pm, const char *path, bool is_main,
			 const struct sc_plan_func *fns, uint32_t first_id, struct stats *st)
{
	struct loaded m = { .path = path, .is_main = is_main };
	size_t len = (8 + (size_t)pm->nfuncs * TRAMP_SIZE + 4095) & ~(size_t)4095;
	uint8_t *block, *ok;
	uint32_t n = 0;

	dl_iterate_phdr(find_module, &m);
	if (!m.found)
		return; /* not this program (an exec'd child), or a library not loaded */
	if (pm->file_size && !same_file(path, pm)) {
		rt_note(SC_NOTE_WARN,
			"instrument: %s changed since it was analyzed; left uninstrumented", path);
		return;
	}
	block = map_near(m.text_lo, m.text_hi, len);
	if (!block) {
		rt_note(SC_NOTE_WARN,
			"instrument: no free memory within 2 GiB of %s for trampolines; left "
			"uninstrumented",
			path);
		return;
	}
	ok = calloc(pm->nfuncs, 1);
	memcpy(block, &(uint64_t){ (uint64_t)(uintptr_t)rt_patch_entry_stub }, 8);
	for (uint32_t i = 0; ok && i < pm->nfuncs; i++) {
		const struct sc_plan_func *fn = &fns[i];
		uint64_t func = m.bias + fn->addr;
		uint8_t *t = block + 8 + (size_t)i * TRAMP_SIZE;

		func_addr[first_id + i] = func;
		if (fn->patch_len < SC_PLAN_JMP_LEN || fn->patch_len > SC_PLAN_MAX_BYTES ||
		    fn->ninsn > SC_PLAN_MAX_INSNS ||
		    func + fn->patch_off + fn->patch_len > m.text_hi || func < m.text_lo ||
		    memcmp((void *)(uintptr_t)(func + fn->patch_off), fn->orig, fn->patch_len)) {
			st->changed++;
			continue;
		}
		if (!build_trampoline(t, (uint64_t)(uintptr_t)block, fn, func, first_id + i)) {
			st->far++;
			continue;
		}
		ok[i] = 1;
		n++;
	}
	if (!ok || mprotect(block, len, PROT_READ | PROT_EXEC)) {
		rt_note(SC_NOTE_WARN, "instrument: trampolines for %s: %s; left uninstrumented",
			path, strerror(errno));
		munmap(block, len);
		free(ok);
		return;
	}
	if (n && set_text(&m, PROT_READ | PROT_WRITE)) {
		rt_note(SC_NOTE_WARN,
			"instrument: the code of %s cannot be made writable (%s); left "
			"uninstrumented",
			path, strerror(errno));
		free(ok);
		return;
	}
	for (uint32_t i = 0; n && i < pm->nfuncs; i++) {
		const struct sc_plan_func *fn = &fns[i];
		uint8_t *at = (uint8_t *)(uintptr_t)(m.bias + fn->addr + fn->patch_off);
		uint64_t t = (uint64_t)(uintptr_t)(block + 8 + (size_t)i * TRAMP_SIZE);

		if (!ok[i])
			continue;
		at[0] = 0xe9;
		put_rel32(at + 1, (uint64_t)(uintptr_t)at + 5, t);
		memset(at + 5, 0xcc, fn->patch_len - 5u);
	}
	if (n && set_text(&m, PROT_READ | PROT_EXEC))
		rt_note(SC_NOTE_WARN, "instrument: %s: could not restore read+exec: %s", path,
			strerror(errno));
	free(ok);
	st->patched += n;
	st->modules++;
}

static bool enabled(const struct sc_settings *s)
{
	(void)s;
	return true; /* a rewritten file may carry a plan, whatever the settings */
}

/* A plan in memory, from the file `syscope instrument` named, or carried by a loaded file
 * (then `self` is that file: the module the plan's empty path stands for). */
struct plan {
	char *buf;
	size_t size;
	char *self;
	bool self_main;
};

#define MAX_PLANS 64

struct plans {
	struct plan v[MAX_PLANS];
	unsigned n;
	bool main_seen;
};

static bool plan_valid(const char *buf, size_t size)
{
	return buf && size >= sizeof(struct sc_plan_file) && !memcmp(buf, SC_PLAN_MAGIC, 8) &&
	       ((const struct sc_plan_file *)buf)->version == SC_PLAN_VERSION;
}

/* The file SYSCOPE_INSTRUMENT_PLAN names, if any. */
static void read_plan_file(struct plans *ps)
{
	const char *path = sc_str(&rt_proc.settings, SC_SET_INSTRUMENT_PLAN);
	int fd;
	struct stat st;
	char *buf = NULL;

	if (!*path)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !fstat(fd, &st) && st.st_size > 0) {
		buf = malloc((size_t)st.st_size);
		if (buf && read(fd, buf, (size_t)st.st_size) != st.st_size) {
			free(buf);
			buf = NULL;
		}
	}
	if (fd >= 0)
		close(fd);
	if (!plan_valid(buf, buf ? (size_t)st.st_size : 0)) {
		rt_note(SC_NOTE_WARN, "instrument: cannot read the patch plan %s", path);
		free(buf);
		return;
	}
	ps->v[ps->n++] = (struct plan){ .buf = buf, .size = (size_t)st.st_size };
}

static int find_embedded(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct plans *ps = arg;
	char path[4096];
	bool is_main = !info->dlpi_name || !*info->dlpi_name;
	size_t plan_size = 0;
	char *buf;

	(void)size;
	if (ps->n == MAX_PLANS)
		return 1;
	if (is_main) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

		if (n <= 0 || ps->main_seen) /* the program, reported first */
			return 0;
		ps->main_seen = true;
		path[n] = 0;
	} else if (!realpath(info->dlpi_name, path)) {
		return 0;
	}
	buf = rt_patch_read_embedded(path, &plan_size);
	if (!buf)
		return 0;
	if (!plan_valid(buf, plan_size)) {
		rt_note(SC_NOTE_WARN,
			"instrument: %s carries a patch plan this syscope cannot read", path);
		free(buf);
		return 0;
	}
	ps->v[ps->n++] = (struct plan){
		.buf = buf, .size = plan_size, .self = strdup(path), .self_main = is_main
	};
	return 0;
}

/* Walk a plan's modules: `fn` gets each one (NULL `st`: only counting). Returns the number
 * of functions, or -1 when the plan is truncated. */
static long walk_plan(const struct plan *p, uint32_t first_id, struct stats *st)
{
	size_t at = sizeof(struct sc_plan_file);
	long total = 0;

	for (uint32_t m = 0, n = ((const struct sc_plan_file *)p->buf)->nmodules; m < n; m++) {
		const struct sc_plan_module *pm = (const void *)(p->buf + at);
		const char *path = p->buf + at + sizeof(*pm);
		size_t padded;

		if (at + sizeof(*pm) > p->size)
			return -1;
		padded = (pm->path_len + 7u) & ~7u;
		if (at + sizeof(*pm) + padded + (size_t)pm->nfuncs * sizeof(struct sc_plan_func) >
			    p->size ||
		    !pm->path_len || path[pm->path_len - 1])
			return -1;
		if (st)
			patch_module(pm, *path ? path : p->self, *path ? pm->is_main : p->self_main,
				     (const void *)(path + padded), first_id + (uint32_t)total, st);
		total += pm->nfuncs;
		at += sizeof(*pm) + padded + (size_t)pm->nfuncs * sizeof(struct sc_plan_func);
	}
	return total;
}

static int process_start(void)
{
	uint64_t t0 = rt_now_ns();
	static struct plans ps;
	struct stats st = { 0 };
	long total = 0, id = 0;

	ps.n = 0;
	ps.main_seen = false;
	read_plan_file(&ps);
	dl_iterate_phdr(find_embedded, &ps);
	for (unsigned i = 0; i < ps.n; i++) {
		long n = walk_plan(&ps.v[i], 0, NULL);

		if (n < 0) {
			rt_note(SC_NOTE_WARN, "instrument: the patch plan of %s is truncated",
				ps.v[i].self ? ps.v[i].self : "syscope instrument");
			free(ps.v[i].buf);
			ps.v[i].buf = NULL;
			continue;
		}
		total += n;
	}
	/* One address table, indexed by id across plans and modules (read by the probes). */
	if (total)
		func_addr = calloc((size_t)total + 1, sizeof(*func_addr));
	rt_patch_func_addr = func_addr;
	for (unsigned i = 0; i < ps.n; i++) {
		if (ps.v[i].buf && func_addr)
			id += walk_plan(&ps.v[i], (uint32_t)id, &st);
		free(ps.v[i].buf);
		free(ps.v[i].self);
	}
	if (st.patched)
		rt_patch_shadow_start();
	if (st.modules)
		rt_note(SC_NOTE_INFO, "instrument: %u functions patched in %u module(s) in %.1f ms",
			st.patched, st.modules, (double)(rt_now_ns() - t0) / 1e6);
	if (st.changed || st.far)
		rt_note(SC_NOTE_WARN,
			"instrument: %u functions left unpatched (%u whose bytes differ from the "
			"analysis, %u out of reach of the trampolines)",
			st.changed + st.far, st.changed, st.far);
	return 0;
}

static void thread_stop(struct rt_thread *t)
{
	(void)t;
	rt_patch_shadow_thread_stop();
}

static void process_stop(void)
{
	uint64_t n = rt_patch_shadow_overflows();

	if (n)
		rt_note(SC_NOTE_WARN,
			"instrument: %llu calls nested deeper than the shadow stack (65536) were "
			"not recorded",
			(unsigned long long)n);
}

const struct rt_source rt_source_patching = {
	.name = "binary instrumentation",
	.enabled = enabled,
	.process_start = process_start,
	.thread_stop = thread_stop,
	.process_stop = process_stop,
};
