/* SPDX-License-Identifier: MIT */
/*
 * Finding the CPython interpreter of the process (docs/design/python-frames.md §2): the
 * executable (Debian's and Ubuntu's python3.X link libpython in and export its symbols) or
 * a libpython3.*.so* (shared builds, embedders, a dlopen'ed one), looked at as each module
 * is mapped: at start, and when modules.c sees new ones, which may be from a sample's
 * handler, so everything here is async-signal-safe except the notes, which wait for normal
 * context (rt_py_flush_notes). The first interpreter found is the one used.
 *
 * Its version comes from Py_Version (3.11+), else from Py_GetVersion() outside a handler,
 * else from the module's name (python3.10, libpython3.10.so.1.0). A known minor gets
 * its layout, checked against the running interpreter before any frame is read: the type
 * of code objects is named "code", is a type, and has the size of our PyCodeObject; 3.13's
 * own _Py_DebugOffsets equal our table.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct rt_py_interp rt_py;
atomic_bool rt_py_sampling;

static atomic_int detecting, checking;
static char found_path[512];
atomic_int rt_py_pending;

/* Notes found where no note can be written (a signal handler), written later. */
enum pending_note {
	NOTE_NONE,
	NOTE_UNKNOWN_VERSION,
	NOTE_UNSUPPORTED,
	NOTE_FREE_THREADED,
	NOTE_MISSING_SYMBOL,
	NOTE_BAD_TYPE,
	NOTE_DEBUG_OFFSETS,
	NOTE_NO_MEMORY,
	NOTE_BAD_FRAMES,
	NOTE_UNLOADED,
	NOTE_GONE_PENDING,
	NOTE_BAD_TSTATE,
};
struct queued_note {
	atomic_int state; /* SLOT_FREE, SLOT_FILLING, SLOT_READY */
	unsigned seq;	  /* notes are written in the order they were queued */
	enum pending_note what;
	const char *name;
	struct rt_py_mismatch mismatch;
	uint32_t bad, checked;
};
enum {
	SLOT_FREE,
	SLOT_FILLING,
	SLOT_READY
};
#define NOTE_SLOTS 8
/* A few slots: handlers of several threads may each queue one before any is written. */
static struct queued_note notes[NOTE_SLOTS];
static atomic_uint note_seq, notes_dropped;
static atomic_int flushing;
static struct rt_py_mismatch mismatch; /* decide()'s, copied into its note */

static void queue_full_note(const struct queued_note *n)
{
	for (unsigned i = 0; i < NOTE_SLOTS; i++) {
		struct queued_note *slot = &notes[i];
		int expected = SLOT_FREE;

		if (!atomic_compare_exchange_strong(&slot->state, &expected, SLOT_FILLING))
			continue;
		slot->what = n->what;
		slot->name = n->name;
		slot->mismatch = n->mismatch;
		slot->bad = n->bad;
		slot->checked = n->checked;
		slot->seq = atomic_fetch_add(&note_seq, 1);
		atomic_store(&slot->state, SLOT_READY);
		return;
	}
	atomic_fetch_add(&notes_dropped, 1); /* said when the notes are written */
}

static void queue_note(enum pending_note what, const char *name)
{
	struct queued_note n = { .what = what, .name = name, .mismatch = mismatch };

	queue_full_note(&n);
}

static void write_note(const struct queued_note *n)
{
	unsigned minor = (rt_py.version >> 16) & 0xff;
	const struct rt_py_mismatch *m = &n->mismatch;

	switch (n->what) {
	case NOTE_NONE:
		break;
	case NOTE_UNKNOWN_VERSION:
		rt_note(SC_NOTE_WARN,
			"Python: an interpreter (%s) whose version could not be told: no Python "
			"frames, native frames only",
			n->name);
		break;
	case NOTE_UNSUPPORTED:
		rt_note(SC_NOTE_WARN,
			"CPython 3.%u: no Python frames, native frames only (syscope reads "
			"CPython 3.10 to 3.13)",
			minor);
		break;
	case NOTE_FREE_THREADED:
		rt_note(SC_NOTE_WARN,
			"CPython 3.%u free-threaded build: no Python frames, native frames only",
			minor);
		break;
	case NOTE_MISSING_SYMBOL:
		rt_note(SC_NOTE_WARN,
			"CPython 3.%u: its module exports no %s; no Python frames, native frames "
			"only",
			minor, n->name);
		break;
	case NOTE_BAD_TYPE:
		rt_note(SC_NOTE_WARN,
			"CPython 3.%u: its code objects are not laid out as syscope expects (%s); "
			"no Python frames, native frames only",
			minor, n->name);
		break;
	case NOTE_DEBUG_OFFSETS:
		rt_note(SC_NOTE_WARN,
			"CPython 3.%u: _Py_DebugOffsets %s is %llu, syscope's table says %lld; no "
			"Python frames, native frames only",
			minor, m->what, (unsigned long long)m->found, (long long)m->expected);
		break;
	case NOTE_NO_MEMORY:
		rt_note(SC_NOTE_WARN,
			"CPython 3.%u: no memory for the table of code objects; no "
			"Python frames, native frames only",
			minor);
		break;
	case NOTE_BAD_FRAMES:
		rt_note(SC_NOTE_WARN,
			"CPython 3.%u: %u of the first %u Python frames read in samples were not "
			"valid (no code object, or unreadable memory); Python frames off for the "
			"rest of this process",
			minor, n->bad, n->checked);
		break;
	case NOTE_UNLOADED:
		rt_note(SC_NOTE_INFO,
			"CPython 3.%u: its module (%s) was unloaded; Python frames off for the "
			"rest of this process",
			minor, n->name);
		break;
	case NOTE_GONE_PENDING:
		rt_note(SC_NOTE_INFO,
			"Python: an interpreter's module (%s) went away before it was relocated "
			"(a failed dlopen?); not read",
			n->name);
		break;
	case NOTE_BAD_TSTATE:
		rt_note(SC_NOTE_WARN,
			"CPython 3.%u: the thread state found through the GIL-state TSS key is not "
			"one (its %s is %llu, expected %lld): syscope's layout is wrong for this "
			"build; Python frames off for the rest of this process",
			minor, m->what, (unsigned long long)m->found, (long long)m->expected);
		break;
	}
}

/* The oldest ready note, NULL when none is. */
static struct queued_note *oldest_note(void)
{
	struct queued_note *best = NULL;

	for (unsigned i = 0; i < NOTE_SLOTS; i++)
		if (atomic_load(&notes[i].state) == SLOT_READY &&
		    (!best || (int)(notes[i].seq - best->seq) < 0))
			best = &notes[i];
	return best;
}

void rt_py_flush_notes(void)
{
	struct queued_note *n;
	unsigned dropped;

	if (atomic_exchange(&flushing, 1))
		return; /* another thread writes them */
	while ((n = oldest_note())) {
		write_note(n);
		atomic_store(&n->state, SLOT_FREE);
	}
	dropped = atomic_exchange(&notes_dropped, 0);
	if (dropped)
		rt_note(SC_NOTE_WARN, "Python: %u more notes were found than could be kept",
			dropped);
	atomic_store(&flushing, 0);
}

void rt_py_record_runtime(void)
{
	struct sc_rec_py_runtime r = {
		.ts = rt_now_ns(),
		.runtime = rt_py.runtime,
		.version = rt_py.version,
		.state = (uint16_t)atomic_load(&rt_py.state),
		.flags = rt_py.flags,
	};

	if (r.state)
		rt_record(SC_REC_PY_RUNTIME, 0, &r.ts, sizeof(r) - sizeof(r.hdr), NULL, 0);
}

/* The name a module is known by: the executable's real path for the main program. */
static const char *module_name(const struct dl_phdr_info *info)
{
	static char exe[512];
	ssize_t n;

	if (info->dlpi_name && info->dlpi_name[0])
		return info->dlpi_name;
	if (!exe[0]) {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
	}
	return exe;
}

static void copy_path(const char *path)
{
	size_t i = 0;

	for (; path[i] && i < sizeof(found_path) - 1; i++)
		found_path[i] = path[i];
	found_path[i] = '\0';
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* "3.N" after `prefix` at the start of `name`: PY_VERSION_HEX without the micro, or 0. */
static uint32_t version_after(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	unsigned minor = 0;
	const char *p;

	if (strncmp(name, prefix, n) || strncmp(name + n, "3.", 2))
		return 0;
	for (p = name + n + 2; *p >= '0' && *p <= '9' && minor < 1000; p++)
		minor = minor * 10 + (unsigned)(*p - '0');
	return p == name + n + 2 ? 0 : (3u << 24) | (minor << 16);
}

static bool is_candidate(const struct dl_phdr_info *info)
{
	const char *name = info->dlpi_name;

	return !name || !name[0] || version_after(base_name(name), "libpython");
}

/* PY_VERSION_HEX from "3.10.13 (main, ...)" or "3.10.0rc1 ...". */
static uint32_t parse_version(const char *s)
{
	unsigned v[3] = { 0, 0, 0 }, level = 0xf, serial = 0;

	for (int i = 0; i < 3 && *s >= '0' && *s <= '9'; i++) {
		for (; *s >= '0' && *s <= '9' && v[i] < 1000; s++)
			v[i] = v[i] * 10 + (unsigned)(*s - '0');
		if (*s == '.')
			s++;
	}
	if (*s == 'a' || *s == 'b' || *s == 'r') {
		level = *s == 'a' ? 0xa : *s == 'b' ? 0xb : 0xc;
		s += *s == 'r' ? 2 : 1;
		serial = *s >= '0' && *s <= '9' ? (unsigned)(*s - '0') : 0;
	}
	return v[0] == 3
		       ? (3u << 24) | (v[1] & 0xff) << 16 | (v[2] & 0xff) << 8 | level << 4 | serial
		       : 0;
}

/* The version of a relocated module; a signal handler must not call the interpreter, so
 * there only the name tells 3.10 and older (micro 0). */
static uint32_t find_version(const struct rt_dynsym *d, const char *path)
{
	uintptr_t hex = rt_dynsym_lookup(d, "Py_Version", NULL);
	const char *name = base_name(path);
	const char *(*get_version)(void);
	uint32_t v;

	if (hex)
		return *(const uint32_t *)hex;
	/* 3.10 and older: ask the interpreter (a formatter, no initialization needed). */
	get_version = (const char *(*)(void))rt_dynsym_lookup(d, "Py_GetVersion", NULL);
	if (get_version && !rt_self.in_sampler) {
		v = parse_version(get_version());
		if (v)
			return v;
	}
	v = version_after(name, "libpython");
	return v ? v : version_after(name, "python");
}

/* Whether the loader has relocated the module: found from its debug hook, between mapping
 * and relocation, PyCode_Type's type pointer (at 8 in every 3.x) still reads 0 or an
 * offset, and none of its functions may be called. */
static bool module_relocated(void)
{
	uintptr_t code_type = rt_dynsym_lookup(&rt_py.syms, "PyCode_Type", NULL);

	return !code_type || rt_py_plausible(rt_py_ptr(code_type, 8));
}

/* The code type is a type named "code", of the size our layout gives code objects. */
static const char *check_code_type(const struct rt_py_layout *L)
{
	uintptr_t name;

	if (rt_py_ptr(rt_py.code_type, L->ob_type) != rt_py.type_type)
		return "PyCode_Type is not a type";
	name = rt_py_ptr(rt_py.code_type, L->tp_name);
	if (name < 4096 || name >= 0x800000000000ull || memcmp((const char *)name, "code", 5))
		return "PyCode_Type is not named \"code\"";
	if (*(const int64_t *)(rt_py.code_type + (uintptr_t)L->tp_basicsize) != L->co_basicsize)
		return "PyCode_Type has another size";
	return NULL;
}

static bool find_symbols(void)
{
	static const struct {
		const char *name;
		uintptr_t *at;
	} wanted[] = {
		{ "PyCode_Type", &rt_py.code_type },
		{ "PyType_Type", &rt_py.type_type },
		{ "PyUnicode_Type", &rt_py.str_type },
		{ "PyBytes_Type", &rt_py.bytes_type },
	};

	for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
		*wanted[i].at = rt_dynsym_lookup(&rt_py.syms, wanted[i].name, NULL);
		if (!*wanted[i].at) {
			queue_note(NOTE_MISSING_SYMBOL, wanted[i].name);
			return false;
		}
	}
	return true;
}

#define STATE_PENDING 0 /* decide() again once the module is relocated */

/* What syscope does with the interpreter just found; the layout is set when known. */
static enum sc_py_runtime_state decide(const char *path)
{
	const struct rt_py_layout *table;
	bool free_threaded = false;
	const char *why;

	if (!module_relocated())
		return STATE_PENDING;
	if (!rt_py.version)
		rt_py.version = find_version(&rt_py.syms, path);
	table = rt_py_layout_of_minor((rt_py.version >> 16) & 0xff);
	if (!rt_py.version) {
		queue_note(NOTE_UNKNOWN_VERSION, path);
		return SC_PY_UNSUPPORTED;
	}
	if (!table) {
		queue_note(NOTE_UNSUPPORTED, NULL);
		return SC_PY_UNSUPPORTED;
	}
	rt_py.layout = *table;
	if (table->minor >= 13 &&
	    !rt_py_layout_from_debug_offsets(table, (const void *)rt_py.runtime, rt_py.version,
					     &rt_py.layout, &free_threaded, &mismatch) &&
	    !free_threaded) {
		queue_note(NOTE_DEBUG_OFFSETS, NULL);
		return SC_PY_INVALID;
	}
	if (free_threaded) { /* its layout differs anyway: say what it is */
		queue_note(NOTE_FREE_THREADED, NULL);
		return SC_PY_FREE_THREADED;
	}
	if (!find_symbols())
		return SC_PY_INVALID;
	why = check_code_type(&rt_py.layout);
	if (why) {
		queue_note(NOTE_BAD_TYPE, why);
		return SC_PY_INVALID;
	}
	rt_py.layout_ok = true;
	if (!sc_bool(&rt_proc.settings, SC_SET_PYTHON))
		return SC_PY_OFF;
	if (!rt_py_codes_init()) {
		rt_py.layout_ok = false;
		queue_note(NOTE_NO_MEMORY, NULL);
		return SC_PY_INVALID;
	}
	return SC_PY_FRAMES;
}

static void publish(enum sc_py_runtime_state state)
{
	rt_py_capi_found(); /* a dlopen'ed interpreter gets thread names and tracing too */
	if (state == STATE_PENDING) {
		atomic_store(&rt_py_pending, 1);
		atomic_store(&rt_py_sampling,
			     true); /* the next sample looks again (rt_py_check_pending) */
		return;
	}
	atomic_store_explicit(&rt_py.state, (int)state, memory_order_release);
	atomic_store(&rt_py_pending, 0);
	atomic_store(&rt_py_sampling, state == SC_PY_FRAMES);
	rt_py_record_runtime();
	if (!rt_self.in_sampler)
		rt_py_flush_notes();
}

void rt_py_module_loaded(const struct dl_phdr_info *info)
{
	struct rt_dynsym d;
	uintptr_t runtime;

	if (atomic_load(&rt_py.state) || !is_candidate(info) || !rt_dynsym_open(&d, info))
		return;
	runtime = rt_dynsym_lookup(&d, "_PyRuntime", NULL);
	if (!runtime || atomic_exchange(&detecting, 1))
		return; /* not an interpreter, or another interpreter was found first */
	copy_path(module_name(info)); /* the loader frees its name when it is unloaded */
	rt_py.module_base = info->dlpi_addr;
	rt_py.syms = d;
	rt_py.runtime = runtime;
	rt_py.version = 0; /* decide() finds it */
	atomic_store(&checking, 1);
	publish(decide(found_path));
	atomic_store(&checking, 0);
}

void rt_py_check_pending(void)
{
	if (!atomic_load(&rt_py_pending) || atomic_exchange(&checking, 1))
		return;
	if (atomic_load(&rt_py_pending))
		publish(decide(found_path));
	atomic_store(&checking, 0);
}

/* Python frames off for good: false when they were off already (another thread's note). */
static bool turn_off(void)
{
	int expected = SC_PY_FRAMES;

	atomic_store(&rt_py_sampling, false);
	if (!atomic_compare_exchange_strong(&rt_py.state, &expected, SC_PY_INVALID)) {
		expected = SC_PY_OFF; /* --no-python: the tracer's code ids stop too */
		if (!atomic_compare_exchange_strong(&rt_py.state, &expected, SC_PY_INVALID))
			return false;
	}
	rt_py.layout_ok = false; /* the tracer's rt_py_code_id stops too */
	return true;
}

void rt_py_disable_bad_layout(uint32_t bad, uint32_t checked)
{
	struct queued_note n = { .what = NOTE_BAD_FRAMES, .bad = bad, .checked = checked };

	if (atomic_load(&rt_py.state) != SC_PY_FRAMES || !turn_off())
		return;
	queue_full_note(&n);
	rt_py_record_runtime();
}

void rt_py_disable_bad_tstate(const char *field, uint64_t found, int64_t expected)
{
	struct queued_note n = { .what = NOTE_BAD_TSTATE,
				 .mismatch = {
					 .what = field, .found = found, .expected = expected } };

	if (atomic_load(&rt_py.state) != SC_PY_FRAMES || !turn_off())
		return;
	queue_full_note(&n);
	rt_py_record_runtime();
}

/* The module looked at is gone before it was relocated: forget it, look at the next one. */
static void forget_pending(void)
{
	atomic_store(&rt_py_sampling, false);
	if (!atomic_exchange(&rt_py_pending, 0))
		return;
	queue_note(NOTE_GONE_PENDING, found_path);
	memset(&rt_py.syms, 0, sizeof(rt_py.syms));
	atomic_store(&detecting, 0);
}

void rt_py_pending_faulted(void)
{
	forget_pending();
	atomic_store(&checking, 0);
}

void rt_py_module_unloaded(uintptr_t base)
{
	if (!atomic_load(&detecting) || base != rt_py.module_base)
		return;
	if (atomic_load(&rt_py_pending)) {
		if (!atomic_exchange(&checking, 1)) {
			forget_pending();
			atomic_store(&checking, 0);
		}
		return;
	}
	atomic_store(&rt_py.module_gone, true); /* its symbol tables went with it */
	if (!turn_off())
		return;
	queue_note(NOTE_UNLOADED, found_path);
	rt_py_record_runtime();
	if (!rt_self.in_sampler)
		rt_py_flush_notes();
}

void *rt_py_symbol(const char *name)
{
	if ((!atomic_load_explicit(&rt_py.state, memory_order_acquire) &&
	     !atomic_load(&rt_py_pending)) ||
	    atomic_load(&rt_py.module_gone))
		return NULL;
	return (void *)rt_dynsym_lookup(&rt_py.syms, name, NULL);
}

void rt_py_set_tracing(bool on)
{
	rt_py.flags = on ? (uint16_t)(rt_py.flags | SC_PY_TRACING)
			 : (uint16_t)(rt_py.flags & ~SC_PY_TRACING);
	rt_py_record_runtime();
}

bool rt_py_found(void)
{
	return atomic_load_explicit(&rt_py.state, memory_order_acquire) != 0;
}

uint32_t rt_py_version(void)
{
	return rt_py_found() ? rt_py.version : 0;
}

unsigned rt_py_minor(void)
{
	return (rt_py_version() >> 16) & 0xff;
}

enum sc_py_runtime_state rt_py_state(void)
{
	return (enum sc_py_runtime_state)atomic_load_explicit(&rt_py.state, memory_order_acquire);
}

const struct rt_py_layout *rt_py_layout(void)
{
	return rt_py_found() && rt_py.layout_ok ? &rt_py.layout : NULL;
}

uintptr_t rt_py_runtime(void)
{
	return rt_py_found() ? rt_py.runtime : 0;
}
