/* SPDX-License-Identifier: MIT */
/*
 * The process's memory map, recorded so that addresses can be symbolized offline: each
 * loaded ELF object's path, load bias, PT_LOAD segments and build-id, with load and unload
 * events as they happen.
 *
 * Changes are found by comparing the loader's load/unload counters (dlpi_adds, dlpi_subs)
 * with the last values seen, at every loader event, before every sample and at thread and
 * process events. This sees every dlopen and dlclose, also those made inside libc, without
 * wrapping dlopen (a wrapper would become the "caller" whose RUNPATH dlopen searches, and
 * break programs that rely on their own). The list comes from loader.c: from a sample, its
 * copy, never the loader's lock.
 */
#include "rt.h"
#include "python/python.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#define MAX_MODULES 4096

struct known_module {
	uintptr_t base;
	const void *phdr; /* with base, identifies one loaded object */
	bool seen;
	char path_hint[8]; /* first bytes of the name, for the unload record */
};

static struct known_module known[MAX_MODULES];
static unsigned nknown;
static atomic_int scanning;
static unsigned long long last_adds, last_subs;
static char exe_path[4096];
static uintptr_t vdso_addr;

struct scan {
	unsigned long long adds, subs;
	uint64_t ts;
	uint32_t flags; /* SC_MODULE_* added to every load record */
	bool record_all;
};

static size_t build_id(const struct dl_phdr_info *info, uint8_t *out, size_t cap)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p, *end;
		size_t align = ph->p_align == 8 ? 8 : 4;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof(*n);
			const char *desc = name + ((n->n_namesz + align - 1) & ~(align - 1));

			if (desc + n->n_descsz > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4)) {
				size_t len = n->n_descsz < cap ? n->n_descsz : cap;

				memcpy(out, desc, len);
				return len;
			}
			p = desc + ((n->n_descsz + align - 1) & ~(align - 1));
		}
	}
	return 0;
}

static bool is_vdso(const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && info->dlpi_addr + ph->p_vaddr <= vdso_addr &&
		    vdso_addr < info->dlpi_addr + ph->p_vaddr + ph->p_memsz)
			return true;
	}
	return false;
}

static void record_module(uint16_t type, const struct dl_phdr_info *info, const struct scan *sc)
{
	struct sc_rec_module m;
	const char *path = info->dlpi_name;
	uint32_t flags = sc->flags;
	unsigned nseg = 0;

	memset(&m, 0, sizeof(m));
	m.ts = sc->ts;
	m.base = info->dlpi_addr;
	if (vdso_addr && is_vdso(info)) {
		flags |= SC_MODULE_VDSO;
		path = "[vdso]";
	} else if (!path || !path[0]) {
		flags |= SC_MODULE_MAIN;
		path = exe_path;
	}
	for (int i = 0; i < info->dlpi_phnum && nseg < SC_MAX_SEGMENTS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		m.seg[nseg].vaddr = ph->p_vaddr;
		m.seg[nseg].memsz = ph->p_memsz;
		m.seg[nseg].offset = ph->p_offset;
		m.seg[nseg].flags = ph->p_flags;
		nseg++;
	}
	m.nsegments = nseg;
	m.build_id_len = (uint32_t)build_id(info, m.build_id, sizeof(m.build_id));
	m.path_len = (uint32_t)strlen(path) + 1;
	rt_record(type, (uint16_t)flags, &m.ts, sizeof(m) - sizeof(m.hdr), path, m.path_len);
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct scan *sc = data;
	unsigned i;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		sc->adds = info->dlpi_adds;
		sc->subs = info->dlpi_subs;
	}
	for (i = 0; i < nknown; i++) {
		if (known[i].base == info->dlpi_addr && known[i].phdr == info->dlpi_phdr) {
			known[i].seen = true;
			if (!sc->record_all)
				return 0;
			break;
		}
	}
	record_module(SC_REC_MODULE_LOAD, info, sc);
	rt_py_module_loaded(info); /* is it a Python interpreter? */
	if (i == nknown && nknown < MAX_MODULES) {
		known[nknown].base = info->dlpi_addr;
		known[nknown].phdr = info->dlpi_phdr;
		known[nknown].seen = true;
		nknown++;
	}
	return 0;
}

static void rescan(uint32_t flags, bool record_all)
{
	struct scan sc = { .ts = rt_now_ns(), .flags = flags, .record_all = record_all };

	for (unsigned i = 0; i < nknown; i++)
		known[i].seen = false;
	if (!rt_loader_walk(scan_cb, &sc, NULL))
		return; /* part of the list: what is missing is not gone; the next look sees */
	for (unsigned i = 0; i < nknown;) {
		if (known[i].seen) {
			i++;
			continue;
		}
		/* Unloaded: the base address is what identifies it to the reader. */
		struct sc_rec_module m;

		memset(&m, 0, sizeof(m));
		m.ts = sc.ts;
		m.base = known[i].base;
		m.path_len = 1;
		rt_record(SC_REC_MODULE_UNLOAD, 0, &m.ts, sizeof(m) - sizeof(m.hdr), "", 1);
		rt_py_module_unloaded(known[i].base); /* was it the interpreter's? */
		known[i] = known[--nknown];
	}
	last_adds = sc.adds;
	last_subs = sc.subs;
}

static int peek_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct scan *sc = data;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		sc->adds = info->dlpi_adds;
		sc->subs = info->dlpi_subs;
	}
	return 1; /* the counters are the same in every entry: stop after the first */
}

void rt_modules_check(void)
{
	struct scan sc = { 0 };

	if (!rt_loader_settled()) /* the list is changing: the loader's next event sees it */
		return;
	if (!rt_loader_walk(peek_cb, &sc, NULL))
		return;
	if (sc.adds == last_adds && sc.subs == last_subs)
		return;
	if (atomic_exchange(&scanning, 1))
		return; /* another thread is recording the change */
	rescan(0, false);
	atomic_store(&scanning, 0);
}

/* Save the vDSO's image in the session: it exists in no file the reader could open. */
static void save_vdso(void)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)vdso_addr;
	struct dl_phdr_info info = { 0 };
	uint8_t id[SC_MAX_BUILD_ID];
	char path[4200], hex[2 * SC_MAX_BUILD_ID + 1];
	size_t len, idlen;
	int fd;

	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG))
		return;
	info.dlpi_addr = vdso_addr;
	info.dlpi_phdr = (const ElfW(Phdr) *)(vdso_addr + eh->e_phoff);
	info.dlpi_phnum = eh->e_phnum;
	/* vDSO segments have vaddr == offset relative to the image start; adjust the bias. */
	for (int i = 0; i < eh->e_phnum; i++)
		if (info.dlpi_phdr[i].p_type == PT_LOAD) {
			info.dlpi_addr =
				vdso_addr - info.dlpi_phdr[i].p_vaddr + info.dlpi_phdr[i].p_offset;
			break;
		}
	idlen = build_id(&info, id, sizeof(id));
	if (!idlen)
		return;
	for (size_t i = 0; i < idlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	len = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (len < 4096 || len > (1u << 20))
		return;
	snprintf(path, sizeof(path), "%s/raw/vdso-%s.so", rt_proc.session_dir, hex);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return; /* already saved by another process of the session */
	if (write(fd, eh, len) != (ssize_t)len)
		unlink(path);
	RT_REAL(close)(fd);
}

void rt_modules_init(bool fork_child)
{
	ssize_t n;

	vdso_addr = getauxval(AT_SYSINFO_EHDR);
	if (!fork_child) {
		n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
		exe_path[n > 0 ? n : 0] = '\0';
		save_vdso();
	}
	atomic_store(&scanning, 1);
	nknown = 0;
	rescan(SC_MODULE_AT_START, true);
	atomic_store(&scanning, 0);
}
