/* SPDX-License-Identifier: MIT */
/* Symbol lookup in a loaded object's dynamic symbol table (dynsym.h). */
#include "dynsym.h"

#include <string.h>

/* The loader relocates the table addresses of the dynamic section in place, except in
 * objects it did not load itself (the vDSO): a value below the bias is still relative. */
static uintptr_t dyn_address(uintptr_t base, uintptr_t v)
{
	return v < base ? base + v : v;
}

bool rt_dynsym_open(struct rt_dynsym *d, const struct dl_phdr_info *info)
{
	const ElfW(Dyn) *dyn = NULL;

	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	return rt_dynsym_open_dynamic(d, info->dlpi_addr, dyn);
}

bool rt_dynsym_open_dynamic(struct rt_dynsym *d, uintptr_t base, const ElfW(Dyn) * dyn)
{
	memset(d, 0, sizeof(*d));
	d->base = base;
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t v = dyn_address(d->base, dyn->d_un.d_ptr);

		switch (dyn->d_tag) {
		case DT_SYMTAB:
			d->symtab = (const ElfW(Sym) *)v;
			break;
		case DT_STRTAB:
			d->strtab = (const char *)v;
			break;
		case DT_GNU_HASH:
			d->gnu_hash = (const uint32_t *)v;
			break;
		case DT_HASH:
			d->sysv_hash = (const uint32_t *)v;
			break;
		default:
			break;
		}
	}
	return d->symtab && d->strtab && (d->gnu_hash || d->sysv_hash);
}

static uint32_t gnu_hash_of(const char *s)
{
	uint32_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

static uint32_t sysv_hash_of(const char *s)
{
	uint32_t h = 0, g;

	for (; *s; s++) {
		h = (h << 4) + (unsigned char)*s;
		g = h & 0xf0000000u;
		if (g)
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

static bool symbol_is(const struct rt_dynsym *d, uint32_t index, const char *name)
{
	const ElfW(Sym) *s = &d->symtab[index];

	return s->st_shndx != SHN_UNDEF && s->st_value && !strcmp(d->strtab + s->st_name, name);
}

/* The bounds keep a damaged table from sending the walk far away. */
#define MAX_CHAIN 65536u

static uint32_t gnu_lookup(const struct rt_dynsym *d, const char *name)
{
	const uint32_t *t = d->gnu_hash;
	uint32_t nbuckets = t[0], symoffset = t[1], bloom_size = t[2], shift = t[3];
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(t + 4);
	const uint32_t *buckets, *chain;
	const unsigned bits = 8 * sizeof(ElfW(Addr));
	uint32_t h = gnu_hash_of(name), sym;
	ElfW(Addr) word, mask;

	if (!nbuckets || !bloom_size)
		return 0;
	buckets = (const uint32_t *)(bloom + bloom_size);
	chain = buckets + nbuckets;
	word = bloom[(h / bits) % bloom_size];
	mask = ((ElfW(Addr))1 << (h % bits)) | ((ElfW(Addr))1 << ((h >> shift) % bits));
	if ((word & mask) != mask)
		return 0;
	sym = buckets[h % nbuckets];
	if (sym < symoffset)
		return 0;
	for (uint32_t n = 0; n < MAX_CHAIN; n++, sym++) {
		uint32_t h2 = chain[sym - symoffset];

		if ((h | 1) == (h2 | 1) && symbol_is(d, sym, name))
			return sym;
		if (h2 & 1)
			break;
	}
	return 0;
}

static uint32_t sysv_lookup(const struct rt_dynsym *d, const char *name)
{
	const uint32_t *t = d->sysv_hash;
	uint32_t nbucket = t[0], nchain = t[1], sym;

	if (!nbucket)
		return 0;
	sym = t[2 + sysv_hash_of(name) % nbucket];
	for (uint32_t n = 0; sym && sym < nchain && n < MAX_CHAIN; n++) {
		if (symbol_is(d, sym, name))
			return sym;
		sym = t[2 + nbucket + sym];
	}
	return 0;
}

uintptr_t rt_dynsym_lookup(const struct rt_dynsym *d, const char *name, uint64_t *size)
{
	uint32_t sym;

	if (!d->symtab)
		return 0;
	sym = d->gnu_hash ? gnu_lookup(d, name) : sysv_lookup(d, name);
	if (!sym)
		return 0;
	if (size)
		*size = d->symtab[sym].st_size;
	return d->base + d->symtab[sym].st_value;
}

size_t rt_dynsym_count(const struct rt_dynsym *d)
{
	const uint32_t *h = d->gnu_hash;
	uint32_t nbuckets, first, last = 0;
	const uint32_t *buckets, *chain;

	if (!h)
		return d->sysv_hash ? d->sysv_hash[1] : 0; /* nchain: one entry a symbol */
	/* GNU hash: the symbols past the last bucket's chain end. */
	nbuckets = h[0];
	first = h[1];
	buckets = (const uint32_t *)((const ElfW(Addr) *)(h + 4) + h[2]);
	chain = buckets + nbuckets;
	for (uint32_t i = 0; i < nbuckets; i++)
		last = buckets[i] > last ? buckets[i] : last;
	if (last < first)
		return first;
	for (uint32_t n = 0; n < MAX_CHAIN && !(chain[last - first] & 1); n++)
		last++;
	return last + 1;
}
