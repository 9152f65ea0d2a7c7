/* SPDX-License-Identifier: MIT */
/*
 * The process-wide table of Python code objects (docs/design/python-frames.md §4): a code
 * object gets an id the first time a sample or the tracer meets it, and its PY_CODE record
 * (file name, qualified name, line table) is written then, once; samples carry the id.
 *
 * Open addressing on the object's address, lock-free: a slot's address is claimed with a
 * CAS, then its word (a fold of the fingerprint, and the id) is stored with release order.
 * Addresses are reused (code objects of an import freed, new ones allocated in their
 * place), so a slot whose fingerprint differs from the object's stands for an older object:
 * the new one gets a new id, which replaces the old in the slot. A thread that finds an
 * address claimed but no word yet writes its own record with its own id: duplicates are
 * harmless, a wait in a signal handler is not. The table is mapped and pre-faulted once
 * (first-touch faults cost microseconds in a handler) and emptied in a fork child, whose
 * raw file starts without the parent's records.
 */
#include "internal.h"

#include <sys/mman.h>

#define CODE_SLOTS 65536u /* a power of two */
#define MAX_PROBES 128u

/* word: VALID | fingerprint fold << 32 | id; 0 while the claiming thread writes the record. */
#define WORD_VALID (1ull << 63)
#define WORD_FOLD(fp) ((((fp) ^ ((fp) >> 31)) & 0x7fffffffull) << 32)

struct code_slot {
	_Atomic uint64_t addr;
	_Atomic uint64_t word;
};

static struct code_slot *_Atomic slots;
static atomic_uint next_id = 1;
static atomic_uint full_count;
atomic_uint rt_py_codes_generation;
/* The inserts this thread is in: the tracer's (normal context), a sample's handler's over
 * it. A fault recovered in the handler abandons the handler's only (rt_py_codes_abandon). */
struct insert {
	struct code_slot *slot;
	uint64_t fp;
	void *rec; /* reserved, not committed yet */
	uint32_t size;
};
#define MAX_INSERTS 4
static RT_TLS struct insert inserts[MAX_INSERTS];
static RT_TLS volatile unsigned ninserts;

/* Also from the tracer's first call when samples read no Python (--no-python): the thread
 * that loses the race to publish its mapping gives it back. */
bool rt_py_codes_init(void)
{
	struct code_slot *none = NULL;
	void *p;

	if (atomic_load(&slots))
		return true;
	p = mmap(NULL, CODE_SLOTS * sizeof(struct code_slot), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		return false;
	if (!atomic_compare_exchange_strong(&slots, &none, p))
		munmap(p, CODE_SLOTS * sizeof(struct code_slot));
	return true;
}

void rt_py_codes_fork_child(void)
{
	struct code_slot *table = atomic_load(&slots);

	if (table) /* touches every page again */
		arch_zero(table, CODE_SLOTS * sizeof(struct code_slot));
	atomic_store(&next_id, 1);
	atomic_store(&full_count, 0);
	atomic_fetch_add(&rt_py_codes_generation, 1);
	ninserts = 0;
}

unsigned rt_py_codes_mark(void)
{
	return ninserts;
}

/* The reserved space of a record that could not be written: a LOST record in its place
 * (the reader skips it) and the loss counted, so the rest of the chunk stays readable. */
static void commit_as_lost(void *rec, uint32_t size)
{
	struct sc_rec_lost *lost = rec;
	struct sc_file_header *h = rt_header();

	arch_zero(rec, size);
	lost->ts = rt_now_ns();
	lost->records = 1;
	lost->bytes = size;
	rt_commit(rec, SC_REC_LOST, 0, size);
	if (h) {
		__atomic_fetch_add(&h->lost_records, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&h->lost_bytes, size, __ATOMIC_RELAXED);
		__atomic_fetch_add(&h->lost_by_cause[SC_LOST_FAULT], 1, __ATOMIC_RELAXED);
	}
}

void rt_py_codes_abandon(unsigned mark)
{
	while (ninserts > mark) {
		struct insert *in = &inserts[ninserts - 1];

		if (!in->slot) { /* claimed, not filled yet: nothing of it was read */
			ninserts--;
			continue;
		}
		if (in->rec)
			commit_as_lost(in->rec, in->size);
		/* The object's memory faults: its slot stands for "unknown code" (id 0) from now
		 * on, with its fold, so that the next lookup finds it and does not retry. */
		atomic_store_explicit(&in->slot->word, WORD_VALID | WORD_FOLD(in->fp),
				      memory_order_release);
		ninserts--;
	}
}

uint32_t rt_py_codes_full_count(void)
{
	return atomic_load(&full_count);
}

uint32_t rt_py_codes_next_id(void)
{
	return atomic_load_explicit(&next_id, memory_order_relaxed);
}

/* Tells a code object from an earlier one at the same address: pointers to its strings and
 * line table, and its first line. */
static uint64_t fingerprint(uintptr_t co)
{
	const struct rt_py_layout *L = &rt_py.layout;
	uint64_t h = rt_py_ptr(co, L->co_filename) * 0x9e3779b97f4a7c15ull;

	h = (h ^ (h >> 29) ^ rt_py_ptr(co, L->co_name)) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (h >> 27) ^ rt_py_ptr(co, L->co_linetable)) * 0x94d049bb133111ebull;
	h ^= (uint64_t)(uint32_t)rt_py_i32(co, L->co_firstlineno);
	return (h ^ (h >> 31)) | 1; /* never 0: the reader may take 0 as "none" */
}

/* ---- strings: CPython's compact str objects (1, 2 or 4 bytes a character) to UTF-8 ---- */

struct str_view {
	uintptr_t data;
	unsigned kind; /* bytes per character */
	uint32_t length;
};

static bool str_view(uintptr_t s, struct str_view *v)
{
	const struct rt_py_layout *L = &rt_py.layout;
	uint32_t state;
	int64_t length;

	v->length = 0;
	if (!rt_py_is(s, rt_py.str_type))
		return false;
	state = *(const uint32_t *)(s + (uintptr_t)L->str_state);
	length = *(const int64_t *)(s + (uintptr_t)L->str_length);
	v->kind = (state >> 2) & 7;
	if (!(state & 0x20) || length < 0 || (v->kind != 1 && v->kind != 2 && v->kind != 4))
		return false; /* not compact (never the case for a code object's strings) */
	v->data = s + (uintptr_t)((state & 0x40) ? L->str_ascii_data : L->str_compact_data);
	v->length = length > 65536 ? 65536 : (uint32_t)length;
	return true;
}

static uint32_t char_at(const struct str_view *v, uint32_t i)
{
	if (v->kind == 1)
		return ((const uint8_t *)v->data)[i];
	if (v->kind == 2)
		return ((const uint16_t *)v->data)[i];
	return ((const uint32_t *)v->data)[i];
}

static unsigned utf8_size(uint32_t c)
{
	if (c < 0x80)
		return 1;
	if (c < 0x800)
		return 2;
	if (c < 0x10000 || c > 0x10ffff)
		return 3; /* beyond Unicode: U+FFFD */
	return 4;
}

/* Bytes of the UTF-8 form of `v` that fit in `max` (whole characters); *cut when not all. */
static uint32_t utf8_length(const struct str_view *v, uint32_t max, bool *cut)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < v->length; i++) {
		unsigned k = utf8_size(char_at(v, i));

		if (n + k > max) {
			*cut = true;
			break;
		}
		n += k;
	}
	return n;
}

static void utf8_write(const struct str_view *v, uint8_t *out, uint32_t size)
{
	uint8_t *end = out + size;

	for (uint32_t i = 0; i < v->length; i++) {
		uint32_t c = char_at(v, i);
		unsigned k = utf8_size(c);

		if (out + k > end)
			break;
		if ((c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
			c = 0xfffd; /* lone surrogates (str allows them) are no UTF-8 */
		if (k == 1) {
			*out++ = (uint8_t)c;
		} else if (k == 2) {
			*out++ = (uint8_t)(0xc0 | c >> 6);
			*out++ = (uint8_t)(0x80 | (c & 0x3f));
		} else if (k == 3) {
			*out++ = (uint8_t)(0xe0 | c >> 12);
			*out++ = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
			*out++ = (uint8_t)(0x80 | (c & 0x3f));
		} else {
			*out++ = (uint8_t)(0xf0 | c >> 18);
			*out++ = (uint8_t)(0x80 | ((c >> 12) & 0x3f));
			*out++ = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
			*out++ = (uint8_t)(0x80 | (c & 0x3f));
		}
	}
}

/* ---- the PY_CODE record ---- */

struct code_parts {
	struct str_view filename, qualname;
	uintptr_t linetable; /* the bytes' data */
	uint32_t filename_len, qualname_len, linetable_len;
	uint16_t flags;
};

/* Everything about the object is read and checked before the record is reserved. */
static void gather(uintptr_t co, struct code_parts *p)
{
	const struct rt_py_layout *L = &rt_py.layout;
	int32_t name_off = L->co_qualname >= 0 ? L->co_qualname : L->co_name;
	uintptr_t lt = rt_py_ptr(co, L->co_linetable);
	bool cut = false;

	p->flags = 0;
	p->filename_len = p->qualname_len = p->linetable_len = 0;
	if (str_view(rt_py_ptr(co, L->co_filename), &p->filename))
		p->filename_len = utf8_length(&p->filename, SC_PY_CODE_MAX_FILENAME, &cut);
	if (str_view(rt_py_ptr(co, name_off), &p->qualname))
		p->qualname_len = utf8_length(&p->qualname, SC_PY_CODE_MAX_QUALNAME, &cut);
	if (rt_py_is(lt, rt_py.bytes_type)) {
		int64_t n = *(const int64_t *)(lt + (uintptr_t)L->ob_size);

		if (n > (int64_t)SC_PY_CODE_MAX_LINETABLE) {
			n = SC_PY_CODE_MAX_LINETABLE;
			cut = true;
		}
		p->linetable = lt + (uintptr_t)L->bytes_data;
		p->linetable_len = n > 0 ? (uint32_t)n : 0;
	}
	if (cut)
		p->flags |= SC_PY_CODE_TRUNCATED;
}

static void write_code_record(struct insert *in, uintptr_t co, uint32_t id, uint64_t fp)
{
	struct code_parts p;
	struct sc_rec_py_code *r;
	uint32_t tail, size;
	uint8_t *at;

	gather(co, &p);
	tail = p.filename_len + p.qualname_len + p.linetable_len;
	size = sc_record_align((uint32_t)sizeof(*r) + tail);
	r = rt_reserve(size);
	if (!r)
		return; /* counted as lost by the recorder */
	in->size = size;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	in->rec = r; /* from here a fault commits it as LOST */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	r->id = id;
	r->first_line = rt_py_i32(co, rt_py.layout.co_firstlineno);
	r->address = co;
	r->fingerprint = fp;
	r->linetable_len = p.linetable_len;
	r->filename_len = (uint16_t)p.filename_len;
	r->qualname_len = (uint16_t)p.qualname_len;
	r->version = (uint16_t)(rt_py.version >> 16);
	r->flags = p.flags;
	r->reserved = 0;
	at = (uint8_t *)(r + 1);
	utf8_write(&p.filename, at, p.filename_len);
	utf8_write(&p.qualname, at + p.filename_len, p.qualname_len);
	arch_copy(at + p.filename_len + p.qualname_len, (const void *)p.linetable, p.linetable_len);
	arch_zero(at + tail, size - sizeof(*r) - tail);
	in->rec = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rt_commit(r, SC_REC_PY_CODE, 0, size);
}

static uint32_t new_code(struct code_slot *s, uintptr_t co, uint64_t fp, uint64_t seen)
{
	uint32_t id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
	uint64_t word = WORD_VALID | WORD_FOLD(fp) | id;
	unsigned n = ninserts;
	struct insert *in;

	if (n == MAX_INSERTS)
		return 0; /* not reached: a handler over the tracer is two */
	in = &inserts[n];
	in->slot = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ninserts = n + 1; /* claimed before it is filled: a handler's insert goes above it */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	*in = (struct insert){ .slot = s, .fp = fp };
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	write_code_record(in, co, id, fp);
	ninserts = n;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* Only over what this thread saw: a racing thread's newer id wins as well. */
	atomic_compare_exchange_strong_explicit(&s->word, &seen, word, memory_order_release,
						memory_order_relaxed);
	return id;
}

uint32_t rt_py_code_id(uintptr_t co)
{
	if (!rt_py_is(co, rt_py.code_type))
		return 0;
	return rt_py_code_id_of_code(co);
}

uint32_t rt_py_code_id_of_code(uintptr_t co)
{
	struct code_slot *table = atomic_load_explicit(&slots, memory_order_acquire);
	uint64_t fp;
	uint32_t h;

	if (!rt_py.layout_ok)
		return 0;
	if (__builtin_expect(!table, 0)) {
		if (!rt_py_codes_init())
			return 0;
		table = atomic_load(&slots);
	}
	fp = fingerprint(co);
	h = (uint32_t)((co >> 4) * 0x9e3779b1u);
	for (uint32_t probe = 0; probe < MAX_PROBES; probe++) {
		struct code_slot *s = &table[(h + probe) & (CODE_SLOTS - 1)];
		uint64_t addr = atomic_load_explicit(&s->addr, memory_order_acquire);
		uint64_t word;

		if (addr == 0) {
			if (!atomic_compare_exchange_strong_explicit(&s->addr, &addr, co,
								     memory_order_acq_rel,
								     memory_order_acquire) &&
			    addr != co)
				continue; /* another object took it */
			if (addr == 0)	  /* ours: claimed just now */
				return new_code(s, co, fp, 0);
		} else if (addr != co) {
			continue;
		}
		word = atomic_load_explicit(&s->word, memory_order_acquire);
		if (word == 0) /* being filled by another thread: a record of our own */
			return new_code(s, co, fp, ~0ull);
		if ((word & 0x7fffffff00000000ull) == WORD_FOLD(fp))
			return (uint32_t)word;	  /* 0 when abandoned */
		return new_code(s, co, fp, word); /* a new object at an old one's address */
	}
	atomic_fetch_add_explicit(&full_count, 1, memory_order_relaxed);
	return 0;
}
