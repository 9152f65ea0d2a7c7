/* SPDX-License-Identifier: MIT */
/*
 * Applying the patch plan at start-up (before the program's own constructors run, while it
 * has one thread). For each module of the plan that is loaded and is the very file the plan
 * was made from (size and modification time), and for each function whose first bytes are
 * still those the analysis saw:
 *   - its trampoline is built in a block mapped within +-2 GiB of the module (a jmp rel32
 *     reaches it, RIP-relative operands can be re-aimed from it);
 *   - its first bytes become a jmp to the trampoline (the rest of the displaced bytes int3).
 * The module's code is made writable only for the writes (read+write, then read+exec: none
 * of its pages is writable and executable). Anything that does not fit is left unpatched and
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
#include <time.h>
#include <unistd.h>

#include "../../common/patch_plan.h"
#include "../counted_calls.h"
#include "patch.h"
#include "tramp_map.h"

#define TRAMP_SIZE RT_TRAMP_FUNC_SIZE
#define PROBE_TRAMP_SIZE RT_TRAMP_PROBE_SIZE

struct loaded {
	const char *path; /* plan's path of the module */
	bool is_main;
	uint64_t bias;		   /* load bias */
	uint64_t text_lo, text_hi; /* executable segment(s), at run time */
	bool found;
};

struct stats {
	uint32_t patched, changed, far, modules, probes;
	uint32_t reloads; /* modules patched again, loaded anew after a dlclose */
};

/* Where a module's patches are, to tell a module that is still patched from one the loader
 * unloaded (dlclose) and perhaps loaded again, even at the same address. */
struct patched_at {
	uint8_t *block; /* its trampolines */
	size_t len;
	uint64_t jump_at; /* one jump written into its code, its bytes, the bytes it replaced */
	uint8_t jump[SC_PLAN_JMP_LEN], orig[SC_PLAN_JMP_LEN];
	const char *path; /* the module, as patch_module found it */
	bool is_main;
};

/* Function addresses by id, for the records: reserved once (virtual memory, pages come as
 * ids are used) so that a library patched later never moves the table under a probe. */
#define MAX_IDS RT_PATCH_MAX_IDS
static uint64_t *func_addr;
static uint32_t next_id;
uint64_t *rt_patch_calls; /* coverage mode: calls by id (the same reserve) */
/* Loops and their probes (-l), by id, reserved the same way. */
struct rt_loop *rt_patch_loops;
struct rt_probe *rt_patch_probes;
static uint32_t next_loop, next_probe;
static bool coverage;

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

static bool fits_rel32(int64_t d)
{
	return d >= INT32_MIN && d <= INT32_MAX;
}

static void put_rel32(uint8_t *at, uint64_t from_end, uint64_t to)
{
	int32_t rel = (int32_t)(int64_t)(to - from_end);

	memcpy(at, &rel, 4);
}

/* Build `fn`'s trampoline at `t` (run-time address `t` too), and into `steps` where each of
 * its instructions came from (tramp_map.c). Returns false when an operand cannot reach its
 * target from there. */
static bool build_trampoline(uint8_t *t, uint64_t stub_ptr, const struct sc_plan_func *fn,
			     uint64_t func, uint32_t id, bool probe, struct rt_tramp_steps *steps)
{
	/* lea -128(%rsp),%rsp and back: a probe inside a function steps over the red zone,
	 * where a leaf function may keep data below its stack pointer. */
	static const uint8_t below_red_zone[5] = { 0x48, 0x8d, 0x64, 0x24, 0x80 };
	static const uint8_t above_red_zone[8] = { 0x48, 0x8d, 0xa4, 0x24, 0x80, 0, 0, 0 };
	uint64_t patch_at = func + fn->patch_off;
	uint8_t *p = t;
	unsigned red = probe ? 128 / 8 : 0; /* words a probe steps over */

	rt_tramp_steps_begin(steps, patch_at);
	if (probe) {
		rt_tramp_step(steps, 0, 0, 0);
		memcpy(p, below_red_zone, 5);
		p += 5;
	}
	rt_tramp_step(steps, (unsigned)(p - t), 0, red);
	*p++ = 0x68; /* push $id */
	memcpy(p, &id, 4);
	p += 4;
	rt_tramp_step(steps, (unsigned)(p - t), 0, red + 1);
	*p++ = 0xff; /* call *stub_ptr(%rip) */
	*p++ = 0x15;
	put_rel32(p, (uint64_t)(uintptr_t)(p + 4), stub_ptr);
	p += 4;
	if (probe) {
		rt_tramp_step(steps, (unsigned)(p - t), 0, red); /* the stub dropped the id */
		memcpy(p, above_red_zone, 8);
		p += 8;
	}
	for (unsigned i = 0; i < fn->ninsn; i++) {
		const struct sc_plan_insn *in = &fn->insn[i];
		uint64_t src = patch_at + in->off, target = func + (uint64_t)(int64_t)in->target;

		rt_tramp_step(steps, (unsigned)(p - t), in->off, 0);
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
			/* The return address being written: still the call, one word below. */
			rt_tramp_step(steps, (unsigned)(p - t), in->off, 1);
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
	rt_tramp_step(steps, (unsigned)(p - t), fn->patch_len, 0);
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

/* The plan of one module, as apply_plan found it. */
struct module_plan {
	const struct sc_plan_module *pm;
	const struct sc_plan_func *fns;
	const struct sc_plan_loop *loops;
	const struct sc_plan_probe *probes;
};

/* Check the bytes of `w` at `func` + patch_off against the plan. */
static bool bytes_match(const struct loaded *m, const struct sc_plan_func *w, uint64_t func)
{
	return w->patch_len >= SC_PLAN_JMP_LEN && w->patch_len <= SC_PLAN_MAX_BYTES &&
	       w->ninsn <= SC_PLAN_MAX_INSNS && func >= m->text_lo &&
	       func + w->patch_off + w->patch_len <= m->text_hi &&
	       !memcmp((void *)(uintptr_t)(func + w->patch_off), w->orig, w->patch_len);
}

static void write_jump(const struct sc_plan_func *w, uint64_t func, uint8_t *tramp)
{
	uint8_t *at = (uint8_t *)(uintptr_t)(func + w->patch_off);

	at[0] = 0xe9;
	put_rel32(at + 1, (uint64_t)(uintptr_t)at + 5, (uint64_t)(uintptr_t)tramp);
	memset(at + 5, 0xcc, w->patch_len - 5u);
}

uint32_t rt_patch_nids(void)
{
	return next_id;
}

/* Patch one module's functions (ids from `first_id`) and their loop probes. Returns false
 * when the module is not loaded (yet), true when it was dealt with (patched, or refused
 * with a note). Every path leaves through `out`, which releases the flags, and the
 * trampoline block unless the module's code jumps into it. */
static bool patch_module(const struct module_plan *mp, const char *path, bool is_main,
			 uint32_t first_id, struct stats *st, struct patched_at *where)
{
	const struct sc_plan_module *pm = mp->pm;
	struct loaded m = { .path = path, .is_main = is_main };
	uint32_t nprobes = coverage ? 0 : pm->nprobes, nloops = coverage ? 0 : pm->nloops;
	/* The stubs' addresses, the trampolines, then where their instructions came from. */
	size_t code_len = 16 + (size_t)pm->nfuncs * TRAMP_SIZE + (size_t)nprobes * PROBE_TRAMP_SIZE;
	size_t steps_at = (code_len + 7) & ~(size_t)7;
	size_t len =
		(steps_at + ((size_t)pm->nfuncs + nprobes) * sizeof(struct rt_tramp_steps) + 4095) &
		~(size_t)4095;
	uint8_t *block = NULL, *ok = NULL, *probe_ok, *probes_at;
	struct rt_tramp_steps *steps;
	uint32_t n = 0, np = 0;
	bool dealt = false;

	dl_iterate_phdr(find_module, &m);
	if (!m.found)
		goto out; /* not this program (an exec'd child), or a library not loaded */
	/* From here on it is dealt with: patched, or refused with a note. */
	dealt = true;
	if (first_id + (uint64_t)pm->nfuncs > MAX_IDS || next_loop + (uint64_t)nloops > MAX_IDS ||
	    next_probe + (uint64_t)nprobes > MAX_IDS) {
		rt_note(SC_NOTE_WARN, "instrument: more than %u functions; %s left uninstrumented",
			MAX_IDS, path);
		goto out;
	}
	if (pm->file_size && !same_file(path, pm)) {
		rt_note(SC_NOTE_WARN,
			"instrument: %s changed since it was analyzed; left uninstrumented", path);
		goto out;
	}
	block = rt_map_near(m.text_lo, m.text_hi, len);
	if (!block) {
		rt_note(SC_NOTE_WARN,
			"instrument: no free memory within 2 GiB of %s for trampolines; left "
			"uninstrumented",
			path);
		goto out;
	}
	ok = calloc((size_t)pm->nfuncs + nprobes + 1, 1);
	probe_ok = ok ? ok + pm->nfuncs : NULL;
	probes_at = block + 16 + (size_t)pm->nfuncs * TRAMP_SIZE;
	steps = (struct rt_tramp_steps *)(void *)(block + steps_at); /* zeroed: no slot built */
	memcpy(block,
	       &(uint64_t){ (uint64_t)(uintptr_t)(coverage ? rt_patch_coverage_stub
							   : rt_patch_entry_stub) },
	       8);
	memcpy(block + 8, &(uint64_t){ (uint64_t)(uintptr_t)rt_patch_loop_stub }, 8);
	for (uint32_t i = 0; ok && i < pm->nfuncs; i++) {
		const struct sc_plan_func *fn = &mp->fns[i];
		uint64_t func = m.bias + fn->addr;

		if (!bytes_match(&m, fn, func)) {
			st->changed++;
			continue;
		}
		if (!build_trampoline(block + 16 + (size_t)i * TRAMP_SIZE,
				      (uint64_t)(uintptr_t)block, fn, func, first_id + i, false,
				      &steps[i])) {
			steps[i].n = 0;
			st->far++;
			continue;
		}
		ok[i] = 1;
		n++;
	}
	for (uint32_t i = 0; ok && i < nloops; i++)
		rt_patch_loops[next_loop + i] = (struct rt_loop){ .lo = m.bias + mp->loops[i].head,
								  .hi = m.bias + mp->loops[i].end };
	for (uint32_t i = 0; ok && i < nprobes; i++) {
		const struct sc_plan_probe *pr = &mp->probes[i];
		uint64_t at = m.bias + pr->win.addr;

		if (pr->func >= pm->nfuncs || !ok[pr->func] || pr->first_loop >= nloops ||
		    !bytes_match(&m, &pr->win, at) ||
		    !build_trampoline(probes_at + (size_t)i * PROBE_TRAMP_SIZE,
				      (uint64_t)(uintptr_t)block + 8, &pr->win, at, next_probe + i,
				      true, &steps[pm->nfuncs + i])) {
			steps[pm->nfuncs + i].n = 0;
			continue;
		}
		rt_patch_probes[next_probe + i] =
			(struct rt_probe){ .addr = at,
					   .func_id = first_id + pr->func,
					   .first_loop = next_loop + pr->first_loop,
					   .enters = pr->enters };
		probe_ok[i] = 1;
		np++;
	}
	if (!ok || mprotect(block, len, PROT_READ | PROT_EXEC)) {
		rt_note(SC_NOTE_WARN, "instrument: trampolines for %s: %s; left uninstrumented",
			path, strerror(errno));
		goto out;
	}
	if (n && set_text(&m, PROT_READ | PROT_WRITE)) {
		rt_note(SC_NOTE_WARN,
			"instrument: the code of %s cannot be made writable (%s); left "
			"uninstrumented",
			path, strerror(errno));
		goto out;
	}
	for (uint32_t i = 0; n && i < pm->nfuncs; i++) {
		uint64_t func = m.bias + mp->fns[i].addr;

		if (!ok[i])
			continue;
		/* The address first: the jump makes the probe live. A module loaded again
		 * (perhaps elsewhere) is recorded call by call again until throttled again. */
		if (func_addr[first_id + i])
			rt_counted_patch_reset(first_id + i);
		func_addr[first_id + i] = func;
		if (rt_patch_counted)
			rt_patch_counted[first_id + i] = 0;
		write_jump(&mp->fns[i], func, block + 16 + (size_t)i * TRAMP_SIZE);
		if (where && !where->block) {
			where->jump_at = func + mp->fns[i].patch_off;
			memcpy(where->jump, (void *)(uintptr_t)where->jump_at, SC_PLAN_JMP_LEN);
			memcpy(where->orig, mp->fns[i].orig, SC_PLAN_JMP_LEN);
			where->block = block, where->len = len;
			where->path = path, where->is_main = is_main;
		}
	}
	for (uint32_t i = 0; n && i < nprobes; i++)
		if (probe_ok[i])
			write_jump(&mp->probes[i].win, m.bias + mp->probes[i].win.addr,
				   probes_at + (size_t)i * PROBE_TRAMP_SIZE);
	if (n && set_text(&m, PROT_READ | PROT_EXEC))
		rt_note(SC_NOTE_WARN, "instrument: %s: could not restore read+exec: %s", path,
			strerror(errno));
	if (n) {
		rt_tramp_map_add((uintptr_t)(block + 16), pm->nfuncs, nprobes, steps);
		block = NULL; /* the module's code jumps into it now */
	}
	next_loop += nloops;
	next_probe += nprobes;
	st->patched += n;
	st->probes += np;
	st->modules++;
out:
	if (block)
		munmap(block, len);
	free(ok);
	return dealt;
}

static bool enabled(const struct sc_settings *s)
{
	(void)s;
	return true; /* a rewritten file may carry a plan, whatever the settings */
}

/* A plan in memory, from the file `syscope instrument` named, or carried by a loaded file
 * (then `self` is that file: the module the plan's empty path stands for). The plan file
 * stays in memory: its libraries that are not loaded yet are patched when they are. */
struct plan {
	char *buf;
	size_t size;
	char *self;
	bool self_main;
	uint32_t pending;		 /* modules not loaded yet */
	uint8_t *done;			 /* by module: dealt with */
	struct plan_module_state *state; /* by module, with done */
};

/* A module of the plan file once dealt with: its ids (kept for its later loads) and where
 * its patches are (none when it was refused). */
struct plan_module_state {
	bool has_ids;
	uint32_t first_id;
	struct patched_at at;
};

static struct plan plan_file;
static struct stats totals;
static struct stats reloaded; /* modules patched again at a later load, said at the end */
static uint64_t t_start;

/* Files already looked at for a carried plan, by load address and name; `gen`: the scan
 * that last saw it loaded (one unloaded since is forgotten, and looked at again if loaded
 * again). */
#define MAX_SEEN 4096
static struct {
	uint64_t addr;
	uint64_t name_hash;
	uint32_t gen;
} seen[MAX_SEEN];
static unsigned nseen;
static uint32_t scan_gen;

static bool plan_valid(const char *buf, size_t size)
{
	return buf && size >= sizeof(struct sc_plan_file) && !memcmp(buf, SC_PLAN_MAGIC, 8) &&
	       ((const struct sc_plan_file *)buf)->version == SC_PLAN_VERSION;
}

static bool plan_file_named(void)
{
	return *sc_str(&rt_proc.settings, SC_SET_INSTRUMENT_PLAN) != 0;
}

/* The file SYSCOPE_INSTRUMENT_PLAN names, if any. */
static void read_plan_file(void)
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
	plan_file = (struct plan){ .buf = buf, .size = (size_t)st.st_size };
	plan_file.done = calloc(((const struct sc_plan_file *)buf)->nmodules + 1u, 1);
	plan_file.state =
		calloc(((const struct sc_plan_file *)buf)->nmodules + 1u, sizeof(*plan_file.state));
	if (!plan_file.state) {
		free(plan_file.done);
		plan_file.done = NULL;
	}
	plan_file.pending = ((const struct sc_plan_file *)buf)->nmodules;
}

/* Patch the modules of `p` that are loaded now and were not dealt with. Returns false when
 * the plan is truncated. */
static bool apply_plan(struct plan *p)
{
	size_t at = sizeof(struct sc_plan_file);

	for (uint32_t m = 0, n = ((const struct sc_plan_file *)p->buf)->nmodules; m < n; m++) {
		const struct sc_plan_module *pm = (const void *)(p->buf + at);
		const char *path = p->buf + at + sizeof(*pm);
		struct module_plan mp = { .pm = pm };
		size_t padded, body;

		if (at + sizeof(*pm) > p->size)
			return false;
		padded = (pm->path_len + 7u) & ~7u;
		body = (size_t)pm->nfuncs * sizeof(struct sc_plan_func) +
		       (size_t)pm->nloops * sizeof(struct sc_plan_loop) +
		       (size_t)pm->nprobes * sizeof(struct sc_plan_probe);
		if (at + sizeof(*pm) + padded + body > p->size || !pm->path_len ||
		    path[pm->path_len - 1])
			return false;
		mp.fns = (const void *)(path + padded);
		mp.loops = (const void *)(mp.fns + pm->nfuncs);
		mp.probes = (const void *)(mp.loops + pm->nloops);
		if (!(p->done && p->done[m])) {
			struct plan_module_state *ms = p->state ? &p->state[m] : NULL;
			bool again = ms && ms->has_ids;
			uint32_t first = again ? ms->first_id : next_id;

			if (patch_module(&mp, *path ? path : p->self,
					 *path ? pm->is_main : p->self_main, first,
					 again ? &reloaded : &totals, ms ? &ms->at : NULL)) {
				if (!again)
					next_id += pm->nfuncs;
				if (ms && !again)
					ms->has_ids = true, ms->first_id = first;
				if (p->done) {
					p->done[m] = 1;
					p->pending--;
				}
			}
		}
		at += sizeof(*pm) + padded + body;
	}
	return true;
}

/* A library of the plan file that the loader unloaded (dlclose) is to be patched again at
 * its next load: its trampolines go, and it is pending again. One still loaded whose code
 * holds the original bytes again was unloaded and loaded anew (at the same address) since
 * the last look. Code that is neither ours nor the original (someone else's patch) is left
 * as it is. */
static void forget_unloaded(struct plan *p)
{
	uint32_t n = ((const struct sc_plan_file *)p->buf)->nmodules;

	for (uint32_t m = 0; p->state && m < n; m++) {
		struct patched_at *at = &p->state[m].at;
		struct loaded l = { .path = at->path, .is_main = at->is_main };
		const uint8_t *code;

		if (!p->done[m] || !at->block || at->is_main)
			continue;
		dl_iterate_phdr(find_module, &l);
		code = (const uint8_t *)(uintptr_t)at->jump_at;
		if (l.found && at->jump_at >= l.text_lo &&
		    at->jump_at + SC_PLAN_JMP_LEN <= l.text_hi &&
		    memcmp(code, at->orig, SC_PLAN_JMP_LEN))
			continue; /* still ours (or not ours to judge) */
		rt_tramp_map_remove((uintptr_t)(at->block + 16));
		munmap(at->block, at->len);
		at->block = NULL;
		p->done[m] = 0;
		p->pending++;
	}
}

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return h;
}

/* Loaded files not looked at yet: patch those that carry a plan. */
static int scan_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	bool is_main = !info->dlpi_name || !*info->dlpi_name;
	uint64_t h = hash_name(is_main ? "" : info->dlpi_name);
	struct plan p = { .self_main = is_main };
	char path[4096];

	(void)size;
	(void)arg;
	for (unsigned i = 0; i < nseen; i++)
		if (seen[i].addr == info->dlpi_addr && seen[i].name_hash == h) {
			seen[i].gen = scan_gen;
			return 0;
		}
	if (nseen < MAX_SEEN)
		seen[nseen++] = (__typeof__(seen[0])){ info->dlpi_addr, h, scan_gen };
	if (is_main) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

		if (n <= 0)
			return 0;
		path[n] = 0;
	} else if (!realpath(info->dlpi_name, path) || strstr(path, "linux-vdso")) {
		return 0;
	}
	p.buf = rt_patch_read_embedded(path, &p.size);
	if (!p.buf)
		return 0;
	p.self = path;
	if (!plan_valid(p.buf, p.size) || !apply_plan(&p))
		rt_note(SC_NOTE_WARN,
			"instrument: %s carries a patch plan this syscope cannot read", path);
	free(p.buf);
	return 0;
}

/* Look at every loaded file for a carried plan; forget those no longer loaded. */
static void scan_objects(void)
{
	unsigned kept = 0;

	scan_gen++;
	dl_iterate_phdr(scan_object, NULL);
	for (unsigned i = 0; i < nseen; i++)
		if (seen[i].gen == scan_gen)
			seen[kept++] = seen[i];
	nseen = kept;
}

static void report(void)
{
	if (totals.patched)
		rt_patch_shadow_start();
	if (totals.modules)
		rt_note(SC_NOTE_INFO, "instrument: %u functions patched in %u module(s) in %.1f ms",
			totals.patched, totals.modules, (double)(rt_now_ns() - t_start) / 1e6);
	if (totals.probes)
		rt_note(SC_NOTE_INFO, "instrument: %u loop probes", totals.probes);
	if (totals.changed || totals.far)
		rt_note(SC_NOTE_WARN,
			"instrument: %u functions left unpatched (%u whose bytes differ from the "
			"analysis, %u out of reach of the trampolines)",
			totals.changed + totals.far, totals.changed, totals.far);
	totals = (struct stats){ 0 };
}

/* The loader's list of objects changed (loader.c calls this at RT_CONSISTENT, after the
 * mapping of a dlopen'd library, before its relocation and constructors): patch what the
 * plans name. Nothing while patching is not running (sampling mode). */
static atomic_int in_loader_event; /* rt_patch_release waits for these to finish */

void rt_patch_loader_event(void)
{
	atomic_fetch_add(&in_loader_event, 1);
	if (func_addr && rt_active()) {
		t_start = rt_now_ns();
		if (plan_file.buf) {
			forget_unloaded(&plan_file);
			if (plan_file.pending)
				apply_plan(&plan_file);
		}
		scan_objects();
		report();
	}
	atomic_fetch_sub(&in_loader_event, 1);
}

/* MAX_IDS entries of `size` bytes, reserved (pages come as they are used). */
static void *reserve_table(size_t size)
{
	void *p = mmap(NULL, (size_t)MAX_IDS * size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static uint64_t *reserve_ids(void)
{
	return reserve_table(sizeof(uint64_t));
}

/* Patching writes five bytes over code that nothing runs yet; a library constructor that
 * started threads before ours could be running some of it. Say so rather than hide it. */
static void warn_if_threads(void)
{
	char buf[4096];
	const char *t;
	ssize_t n;
	int fd;

	if (!plan_file_named())
		return; /* nothing of this program is patched at start-up */
	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	t = strstr(buf, "\nThreads:");
	if (t && atoi(t + 9) > 1)
		rt_note(SC_NOTE_WARN,
			"instrument: %d threads were already running when the program's code was "
			"patched (started by a library's constructor); a thread inside a function "
			"being patched at that moment could fail",
			atoi(t + 9));
}

static int process_start(void)
{
	if (!strcmp(sc_str(&rt_proc.settings, SC_SET_INSTRUMENT_MODE), "sampling"))
		return 0; /* rewritten files run unpatched, sampled */
	if (func_addr)
		return 0; /* a second attach to an image patched by the first: its tables go on */
	coverage = !strcmp(sc_str(&rt_proc.settings, SC_SET_INSTRUMENT_MODE), "coverage");
	func_addr = reserve_ids();
	if (coverage)
		rt_patch_calls = reserve_ids();
	else {
		rt_patch_counted = reserve_ids();
		rt_patch_loops = (void *)reserve_table(sizeof(struct rt_loop));
		rt_patch_probes = (void *)reserve_table(sizeof(struct rt_probe));
	}
	if (!func_addr ||
	    (coverage ? !rt_patch_calls : !rt_patch_loops || !rt_patch_probes || !rt_patch_counted))
		return -ENOMEM;
	rt_patch_func_addr = func_addr;
	t_start = rt_now_ns();
	warn_if_threads();
	read_plan_file();
	if (plan_file.buf && !apply_plan(&plan_file)) {
		rt_note(SC_NOTE_WARN, "instrument: the patch plan %s is truncated",
			sc_str(&rt_proc.settings, SC_SET_INSTRUMENT_PLAN));
		free(plan_file.buf);
		plan_file.buf = NULL;
	}
	scan_objects();
	report();
	return 0;
}

static void thread_stop(struct rt_thread *t)
{
	(void)t;
	rt_patch_shadow_thread_stop();
}

static void unreserve(void **table, size_t size)
{
	if (*table)
		munmap(*table, (size_t)MAX_IDS * size);
	*table = NULL;
}

void rt_patch_release(void)
{
	/* A loader event that began before the recording stopped may still scan (bounded: it
	 * only reads the loaded objects' headers when nothing is patched). */
	for (int tries = 0; tries < 2000 && atomic_load(&in_loader_event); tries++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	if (!func_addr || next_id || next_loop || next_probe || plan_file.buf ||
	    atomic_load(&in_loader_event))
		return; /* patched code runs the stubs, which read the tables: they stay */
	rt_patch_func_addr = NULL;
	unreserve((void **)&func_addr, sizeof(uint64_t));
	unreserve((void **)&rt_patch_calls, sizeof(uint64_t));
	unreserve((void **)&rt_patch_counted, sizeof(uint64_t));
	unreserve((void **)&rt_patch_loops, sizeof(struct rt_loop));
	unreserve((void **)&rt_patch_probes, sizeof(struct rt_probe));
}

/* Coverage mode: every patched function of this image with its calls. */
static void record_coverage(void)
{
	uint64_t ts = rt_now_ns();

	for (uint32_t id = 0; rt_patch_calls && id < next_id; id++) {
		struct sc_rec_func_coverage *r;

		if (!func_addr[id] || !(r = rt_reserve(sizeof(*r))))
			continue;
		r->ts = ts;
		r->addr = func_addr[id];
		r->calls = __atomic_load_n(&rt_patch_calls[id], __ATOMIC_RELAXED);
		rt_commit(r, SC_REC_FUNC_COVERAGE, 0, sizeof(*r));
	}
}

/* A fork child counts its own calls. */
static void fork_child(void)
{
	if (rt_patch_calls)
		memset(rt_patch_calls, 0, (size_t)next_id * sizeof(*rt_patch_calls));
}

static void process_stop(void)
{
	uint64_t n = rt_patch_shadow_overflows();

	if (coverage)
		record_coverage();
	if (reloaded.modules)
		rt_note(SC_NOTE_INFO,
			"instrument: %u loads of libraries opened again after dlclose were patched "
			"again (%u functions in all)",
			reloaded.modules, reloaded.patched);
	if (reloaded.changed || reloaded.far)
		rt_note(SC_NOTE_WARN,
			"instrument: in libraries opened again after dlclose, %u functions were left "
			"unpatched (%u whose bytes differ from the analysis, %u out of reach)",
			reloaded.changed + reloaded.far, reloaded.changed, reloaded.far);
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
	.fork_child = fork_child,
	.process_stop = process_stop,
};
