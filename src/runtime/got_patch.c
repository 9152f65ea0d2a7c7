/* SPDX-License-Identifier: MIT */
/*
 * GOT rewriting, for syscope attach. In a process syscope did not start, the program's calls
 * reach the C library through each object's global offset table: a JUMP_SLOT entry (a call
 * through the PLT) or a GLOB_DAT one (a call without PLT, or the function's address). Our
 * wrappers are put in front of those calls by pointing the entries of the functions they
 * cover at them, and the entries get their old values back at the detach.
 *
 * An entry is patched only when it leads where the wrapper leads (`target`, with its symbol
 * version): an entry bound to another definition (an interposer of the program's, an old
 * symbol version) is left alone and counted. An entry not bound yet (lazy binding: it points
 * into the object's own PLT) is judged by the definition the loader would bind, and gets its
 * PLT address back at the detach. Entries in the RELRO part (made read-only after loading)
 * are written with the page made writable for the moment of the write.
 *
 * Objects are read from their dynamic section (elf.h, link.h): symbols, strings, relocations,
 * versions. Each one is held (dlopen RTLD_NOLOAD) while its entries are written, so that it
 * cannot be unloaded meanwhile and one still being loaded is waited for.
 */
#include "got_patch.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_SLOTS 16384
#define MAX_OBJECTS 1024
#define MAX_CANDIDATES 256
#define NAME_MAX_LEN 512

struct slot {
	void **at;
	void *old, *wrapper;
	uint16_t object;
};

struct object {
	uintptr_t base, relro_lo, relro_hi;
	const void *dynamic;
	char name[NAME_MAX_LEN];
};

/* What an object's dynamic section and program headers say. */
struct image {
	uintptr_t base, lo, hi, relro_lo, relro_hi;
	const Elf64_Sym *symtab;
	const char *strtab;
	const Elf64_Rela *rel[2];
	size_t nrel[2];
	const Elf64_Half *versym;
	const Elf64_Verneed *verneed;
	size_t nverneed;
};

static struct {
	struct slot slots[MAX_SLOTS];
	unsigned nslots;
	struct object objects[MAX_OBJECTS];
	unsigned nobjects;
	struct rt_got_counts counts;
	unsigned long long loads_seen;
} gp;

/* The loader relocates the addresses of a dynamic section it may write; the others (and
 * those of a non-PIE program, whose base is 0) are relative to the base. */
static uintptr_t address(uintptr_t base, uintptr_t p)
{
	return p < base ? p + base : p;
}

static void read_dynamic(struct image *im, const Elf64_Dyn *d)
{
	uintptr_t jmprel = 0, rela = 0;
	size_t pltsz = 0, relasz = 0;

	for (; d->d_tag != DT_NULL; d++) {
		uintptr_t p = address(im->base, d->d_un.d_ptr);

		switch (d->d_tag) {
		case DT_SYMTAB:
			im->symtab = (const Elf64_Sym *)p;
			break;
		case DT_STRTAB:
			im->strtab = (const char *)p;
			break;
		case DT_JMPREL:
			jmprel = p;
			break;
		case DT_PLTRELSZ:
			pltsz = d->d_un.d_val;
			break;
		case DT_RELA:
			rela = p;
			break;
		case DT_RELASZ:
			relasz = d->d_un.d_val;
			break;
		case DT_VERSYM:
			im->versym = (const Elf64_Half *)p;
			break;
		case DT_VERNEED:
			im->verneed = (const Elf64_Verneed *)p;
			break;
		case DT_VERNEEDNUM:
			im->nverneed = d->d_un.d_val;
			break;
		default:
			break;
		}
	}
	im->rel[0] = (const Elf64_Rela *)jmprel;
	im->nrel[0] = jmprel ? pltsz / sizeof(Elf64_Rela) : 0;
	im->rel[1] = (const Elf64_Rela *)rela;
	im->nrel[1] = rela ? relasz / sizeof(Elf64_Rela) : 0;
}

/* The pages the loader made read-only: whole pages only, so the last one, which the RELRO
 * part shares with writable data, stays writable (and must stay so). */
static void relro_pages(struct image *im, uintptr_t lo, uintptr_t hi)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

	im->relro_lo = lo & ~(page - 1);
	im->relro_hi = hi & ~(page - 1);
}

static bool read_image(struct image *im, const struct dl_phdr_info *info)
{
	const Elf64_Dyn *dyn = NULL;

	memset(im, 0, sizeof(*im));
	im->base = info->dlpi_addr;
	im->lo = UINTPTR_MAX;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const Elf64_Phdr *ph = &info->dlpi_phdr[i];
		uintptr_t lo = im->base + ph->p_vaddr, hi = lo + ph->p_memsz;

		if (ph->p_type == PT_DYNAMIC)
			dyn = (const Elf64_Dyn *)lo;
		else if (ph->p_type == PT_GNU_RELRO)
			relro_pages(im, lo, hi);
		else if (ph->p_type == PT_LOAD) {
			im->lo = lo < im->lo ? lo : im->lo;
			im->hi = hi > im->hi ? hi : im->hi;
		}
	}
	if (!dyn)
		return false; /* a static program: nothing to rewrite */
	read_dynamic(im, dyn);
	return im->symtab && im->strtab;
}

/* The version an object asks of symbol `index` ("GLIBC_2.3.2"), or NULL. */
static const char *needed_version(const struct image *im, uint32_t index)
{
	const Elf64_Verneed *vn = im->verneed;
	Elf64_Half want;

	if (!im->versym || !vn)
		return NULL;
	want = im->versym[index] & 0x7fff;
	if (want <= 1)
		return NULL; /* local or global: unversioned */
	for (size_t i = 0; i < im->nverneed; i++) {
		const Elf64_Vernaux *va = (const Elf64_Vernaux *)((const char *)vn + vn->vn_aux);

		for (unsigned k = 0; k < vn->vn_cnt; k++) {
			if (va->vna_other == want)
				return im->strtab + va->vna_name;
			va = (const Elf64_Vernaux *)((const char *)va + va->vna_next);
		}
		if (!vn->vn_next)
			break;
		vn = (const Elf64_Verneed *)((const char *)vn + vn->vn_next);
	}
	return NULL;
}

static bool write_entry(const struct image *im, void **at, void *value)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)at & ~(uintptr_t)(page - 1);
	bool relro = (uintptr_t)at >= im->relro_lo && (uintptr_t)at < im->relro_hi;

	if (relro && mprotect((void *)start, (size_t)page, PROT_READ | PROT_WRITE))
		return false;
	__atomic_store_n(at, value, __ATOMIC_RELEASE); /* a call through it sees old or new */
	if (relro)
		mprotect((void *)start, (size_t)page, PROT_READ);
	return true;
}

static int hook_cmp(const void *name, const void *hook)
{
	return strcmp(name, ((const struct rt_got_hook *)hook)->name);
}

/* `hooks` are sorted by name: an object has thousands of entries, MPI hundreds of hooks. */
static const struct rt_got_hook *hook_of(const char *name, const struct rt_got_hook *hooks,
					 unsigned n)
{
	return bsearch(name, hooks, n, sizeof(*hooks), hook_cmp);
}

/* Where a call through the entry goes: its value, or, not bound yet, what the loader would
 * bind (the first definition of the global scope, of the version the object asks). */
static void *bound_to(const struct image *im, void *value, const char *name, const char *version)
{
	if (value && ((uintptr_t)value < im->lo || (uintptr_t)value >= im->hi))
		return value;
	return version ? dlvsym(RTLD_DEFAULT, name, version) : dlsym(RTLD_DEFAULT, name);
}

static void patch_entry(const struct image *im, const Elf64_Rela *r, uint16_t object,
			const struct rt_got_hook *hooks, unsigned n)
{
	uint32_t index = (uint32_t)ELF64_R_SYM(r->r_info);
	const Elf64_Sym *sym = &im->symtab[index];
	const struct rt_got_hook *h;
	const char *version;
	void **at = (void **)(im->base + r->r_offset);
	void *old;

	if (sym->st_shndx != SHN_UNDEF || !(h = hook_of(im->strtab + sym->st_name, hooks, n)))
		return;
	old = *at;
	if (old == h->wrapper)
		return;
	version = needed_version(im, index);
	if ((h->version && version && strcmp(version, h->version)) ||
	    bound_to(im, old, h->name, version ? version : h->version) != h->target) {
		gp.counts.elsewhere++;
		return;
	}
	if (gp.nslots == MAX_SLOTS) {
		gp.counts.table_full = true;
		return;
	}
	if (!write_entry(im, at, h->wrapper)) {
		if (!gp.counts.refused++)
			snprintf(gp.counts.refused_object, sizeof(gp.counts.refused_object),
				 "%.240s",
				 gp.objects[object].name[0] ? gp.objects[object].name
							    : "the program");
		return;
	}
	gp.slots[gp.nslots++] = (struct slot){ at, old, h->wrapper, object };
	gp.counts.entries++;
	gp.counts.parallel_entries += h->parallel;
}

static void patch_image(const struct image *im, uint16_t object, const struct rt_got_hook *hooks,
			unsigned n)
{
	unsigned before = gp.counts.entries;

	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < im->nrel[k]; i++) {
			uint32_t type = (uint32_t)ELF64_R_TYPE(im->rel[k][i].r_info);

			if (type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT)
				patch_entry(im, &im->rel[k][i], object, hooks, n);
		}
	if (gp.counts.entries > before)
		gp.counts.objects++;
}

/* Objects whose calls are not the program's: ours, the loader, the vDSO, the C library
 * (its internal calls do not go through its GOT). */
static bool skipped(const char *name)
{
	const char *base = strrchr(name, '/');

	base = base ? base + 1 : name;
	return !strncmp(base, "libsyscope", 10) || !strncmp(base, "ld-linux", 8) ||
	       !strncmp(base, "linux-vdso", 10) || !strncmp(base, "linux-gate", 10) ||
	       !strncmp(base, "libc.so", 7);
}

static bool known(uintptr_t base, const void *dynamic)
{
	for (unsigned i = 0; i < gp.nobjects; i++)
		if (gp.objects[i].base == base && gp.objects[i].dynamic == dynamic)
			return true;
	return false;
}

struct candidates {
	struct dl_phdr_info info[MAX_CANDIDATES];
	char name[MAX_CANDIDATES][NAME_MAX_LEN];
	unsigned n;
};

static const void *dynamic_of(const struct dl_phdr_info *info)
{
	for (unsigned i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			return (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	return NULL;
}

static int gather(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct candidates *c = arg;
	const char *name = info->dlpi_name ? info->dlpi_name : "";

	(void)size;
	if (c->n == MAX_CANDIDATES || skipped(name) || strlen(name) >= NAME_MAX_LEN ||
	    known(info->dlpi_addr, dynamic_of(info)))
		return 0;
	c->info[c->n] = *info;
	snprintf(c->name[c->n], NAME_MAX_LEN, "%s", name);
	c->info[c->n].dlpi_name = c->name[c->n];
	c->n++;
	return 0;
}

/* The object at `base`, held: NULL when it is gone (or is another one now). */
static void *hold(const char *name, uintptr_t base)
{
	void *h = dlopen(name[0] ? name : NULL, RTLD_LAZY | RTLD_NOLOAD);

	if (h && ((struct link_map *)h)->l_addr != base) {
		dlclose(h);
		h = NULL;
	}
	return h;
}

/* Patch the objects of one batch, each held while it is written. */
static void patch_candidates(const struct candidates *c, const struct rt_got_hook *hooks,
			     unsigned n)
{
	for (unsigned i = 0; i < c->n && gp.nobjects < MAX_OBJECTS; i++) {
		struct image im;
		struct object *o = &gp.objects[gp.nobjects];
		void *h = hold(c->name[i], c->info[i].dlpi_addr);

		if (!h)
			continue; /* being unloaded, or still loading: the next look */
		o->base = c->info[i].dlpi_addr;
		o->dynamic = dynamic_of(&c->info[i]);
		snprintf(o->name, sizeof(o->name), "%s", c->name[i]);
		if (read_image(&im, &c->info[i])) {
			o->relro_lo = im.relro_lo;
			o->relro_hi = im.relro_hi;
			patch_image(&im, (uint16_t)gp.nobjects, hooks, n);
		}
		gp.nobjects++;
		dlclose(h);
	}
}

void rt_got_patch_loaded(const struct rt_got_hook *hooks, unsigned n)
{
	static struct candidates c;
	unsigned before;

	rt_got_loads_changed(); /* what is loaded from here on is looked at next time */
	/* A batch holds MAX_CANDIDATES objects; a full one means more may wait: gather again
	 * (the patched ones are known now) while a batch still adds objects. */
	do {
		before = gp.nobjects;
		c.n = 0;
		dl_iterate_phdr(gather, &c); /* no dlopen inside: it holds a loader lock */
		patch_candidates(&c, hooks, n);
	} while (c.n == MAX_CANDIDATES && gp.nobjects > before && gp.nobjects < MAX_OBJECTS);
	if (gp.nobjects == MAX_OBJECTS && c.n)
		gp.counts.table_full = true; /* objects left unpatched: the note says so */
}

static int first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
		*(unsigned long long *)arg = info->dlpi_adds + info->dlpi_subs;
	return 1;
}

bool rt_got_loads_changed(void)
{
	unsigned long long now = 0;

	dl_iterate_phdr(first_object, &now);
	if (now == gp.loads_seen)
		return false;
	gp.loads_seen = now;
	return true;
}

void rt_got_restore(void)
{
	for (unsigned i = 0; i < gp.nobjects; i++) {
		struct object *o = &gp.objects[i];
		struct image im = { .relro_lo = o->relro_lo, .relro_hi = o->relro_hi };
		void *h = hold(o->name, o->base);

		if (!h)
			continue; /* unloaded while attached: its entries went with it */
		for (unsigned s = 0; s < gp.nslots; s++) {
			struct slot *sl = &gp.slots[s];

			/* Only what is still ours: a later writer (the lazy binder) wins. */
			if (sl->object == i &&
			    __atomic_load_n(sl->at, __ATOMIC_ACQUIRE) == sl->wrapper)
				write_entry(&im, sl->at, sl->old);
		}
		dlclose(h);
	}
	memset(&gp.counts, 0, sizeof(gp.counts));
	gp.nslots = gp.nobjects = 0;
}

const struct rt_got_counts *rt_got_counts(void)
{
	return &gp.counts;
}
