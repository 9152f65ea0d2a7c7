/* SPDX-License-Identifier: MIT */
/*
 * The recorder: per-thread record streams in chunks of one file-backed shared mapping.
 *
 * Load: every sample, region or event of every thread passes through rt_reserve/rt_commit,
 * up to a few million records a second per process, many of them from signal handlers. The
 * fast path is one signal-atomic add and a few loads; locks, allocations and system calls
 * happen only when a chunk is exhausted (one in ~100 samples at the default 64 KiB).
 *
 * Chunk life cycle (index i, segment i / chunks_per_seg):
 *
 *   unclaimed --claim_chunk()--> open, owned by one thread
 *   open --exchange() on overflow--> closed, still in the thread's slot pair
 *   closed --pushed out of the slot pair two exchanges later--> retired
 *   open --thread exit, room left--> partial pool --pool_pop()--> open, next thread
 *   open --thread exit, little room--> closed, retired
 *
 * A segment (chunks_per_seg chunks, one mmap) is unmapped when all its chunks are retired;
 * the data stays in the file. Chunks are reserved with fallocate() before first use so a
 * full disk is an error we count, not a SIGBUS in the program.
 */
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "../arch/arch.h"

#define POOL_NONE 0xffffffffu
#define CHUNKS_PER_SEG 64u
#define DISK_RETRY_NS 1000000000ull /* after a failed claim, wait before trying again */

struct recorder {
	int fd;
	struct sc_file_header *hdr;
	uint32_t chunk_size;
	uint32_t max_chunks;
	uint32_t max_segs;
	uint64_t seg_size;
	uint64_t disk_reserve;
	_Atomic(char *) *segs;		 /* [max_segs] */
	atomic_uint *seg_retired;	 /* [max_segs] */
	uint32_t *pool_next;		 /* [max_chunks] partial pool links */
	uint32_t *pool_pos;		 /* [max_chunks] offset where the next owner continues */
	atomic_uint_least64_t pool_head; /* tag << 32 | index */
	atomic_uint next_chunk;
	atomic_uint_least64_t retry_after_ns;
	size_t arrays_size;
	void *arrays;
};

static struct recorder rec = { .fd = -1 };

struct sc_file_header *rt_header(void)
{
	return rec.hdr;
}

static void count_lost(struct rt_thread *t, uint32_t size)
{
	if (t) {
		t->pending_lost_records++;
		t->pending_lost_bytes += size;
	}
	if (rec.hdr) {
		__atomic_fetch_add(&rec.hdr->lost_records, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&rec.hdr->lost_bytes, size, __ATOMIC_RELAXED);
	}
}

void rt_count_lost_sample(void)
{
	if (rec.hdr)
		__atomic_fetch_add(&rec.hdr->lost_samples, 1, __ATOMIC_RELAXED);
}

void rt_set_end(enum sc_end_reason reason, int status)
{
	if (!rec.hdr)
		return;
	rec.hdr->end_status = status;
	rec.hdr->end_ns = reason == SC_END_RUNNING ? 0 : rt_now_ns();
	__atomic_store_n(&rec.hdr->end_reason, (uint32_t)reason, __ATOMIC_RELEASE);
}

static inline char *chunk_addr(uint32_t index)
{
	char *seg = atomic_load_explicit(&rec.segs[index / CHUNKS_PER_SEG], memory_order_acquire);

	return seg ? seg + (uint64_t)(index % CHUNKS_PER_SEG) * rec.chunk_size : NULL;
}

static char *map_segment(uint32_t s)
{
	char *cur = atomic_load_explicit(&rec.segs[s], memory_order_acquire);
	char *mine;

	if (cur)
		return cur;
	mine = mmap(NULL, rec.seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, rec.fd,
		    SC_FILE_HEADER_SIZE + (off_t)s * (off_t)rec.seg_size);
	if (mine == MAP_FAILED)
		return NULL;
	if (!atomic_compare_exchange_strong(&rec.segs[s], &cur, mine)) {
		munmap(mine, rec.seg_size); /* another thread mapped it first */
		return cur;
	}
	return mine;
}

static void retire(uint32_t index)
{
	uint32_t s = index / CHUNKS_PER_SEG;

	if (atomic_fetch_add(&rec.seg_retired[s], 1) + 1 == CHUNKS_PER_SEG) {
		char *seg = atomic_exchange(&rec.segs[s], NULL);

		if (seg)
			munmap(seg, rec.seg_size);
	}
}

static bool disk_has_room(void)
{
	struct statfs st;

	if (!rec.disk_reserve || fstatfs(rec.fd, &st))
		return true;
	return (uint64_t)st.f_bavail * (uint64_t)st.f_bsize >= rec.disk_reserve + rec.chunk_size;
}

/* Reserve the chunk's blocks in the file; a hole would turn ENOSPC into SIGBUS later. */
static int allocate_chunk_blocks(uint32_t index)
{
	off_t off = SC_FILE_HEADER_SIZE + (off_t)index * rec.chunk_size;

	if (!fallocate(rec.fd, 0, off, rec.chunk_size))
		return 0;
	if (errno != EOPNOTSUPP)
		return -errno;
	/* File systems without fallocate: extend the file; blocks come on first write. */
	return pwrite(rec.fd, "", 1, off + rec.chunk_size - 1) == 1 ? 0 : -errno;
}

/* A brand-new chunk from the end of the file. Returns its index or POOL_NONE. */
static uint32_t claim_chunk(void)
{
	uint64_t now = rt_now_ns();
	uint32_t index;

	if (now < atomic_load_explicit(&rec.retry_after_ns, memory_order_relaxed))
		return POOL_NONE;
	if (atomic_load_explicit(&rec.next_chunk, memory_order_relaxed) >= rec.max_chunks)
		return POOL_NONE;
	if (!disk_has_room()) {
		atomic_store(&rec.retry_after_ns, now + DISK_RETRY_NS);
		return POOL_NONE;
	}
	index = atomic_fetch_add(&rec.next_chunk, 1);
	if (index >= rec.max_chunks)
		return POOL_NONE;
	if (allocate_chunk_blocks(index) || !map_segment(index / CHUNKS_PER_SEG)) {
		atomic_store(&rec.retry_after_ns, now + DISK_RETRY_NS);
		retire(index); /* never used, so its segment can still be unmapped */
		return POOL_NONE;
	}
	__atomic_fetch_add(&rec.hdr->chunks_claimed, 1, __ATOMIC_RELAXED);
#ifdef MADV_POPULATE_WRITE
	/* Fault the chunk's pages in with one system call, not one fault per page while
	 * records are written (a quarter of the cost of an instrumented call on a VM). Older
	 * kernels refuse the advice: the pages then come on first write as before. */
	madvise(chunk_addr(index), rec.chunk_size, MADV_POPULATE_WRITE);
#endif
	return index;
}

static void pool_push(uint32_t index, uint32_t pos)
{
	uint64_t old = atomic_load(&rec.pool_head), nw;

	rec.pool_pos[index] = pos;
	do {
		rec.pool_next[index] = (uint32_t)old;
		nw = ((old >> 32) + 1) << 32 | index;
	} while (!atomic_compare_exchange_weak(&rec.pool_head, &old, nw));
}

static uint32_t pool_pop(void)
{
	uint64_t old = atomic_load(&rec.pool_head), nw;

	do {
		if ((uint32_t)old == POOL_NONE)
			return POOL_NONE;
		nw = ((old >> 32) + 1) << 32 | rec.pool_next[(uint32_t)old];
	} while (!atomic_compare_exchange_weak(&rec.pool_head, &old, nw));
	return (uint32_t)old;
}

static void close_chunk(char *base, uint32_t used)
{
	struct sc_chunk_header *ch = (struct sc_chunk_header *)base;

	ch->used = used < rec.chunk_size ? used : rec.chunk_size;
	__atomic_store_n(&ch->state, (uint32_t)SC_CHUNK_CLOSED, __ATOMIC_RELEASE);
}

static inline void commit_at(char *p, uint16_t type, uint16_t flags, uint32_t size)
{
	uint64_t word = (uint64_t)size | (uint64_t)type << 32 | (uint64_t)flags << 48;

	__atomic_store_n((uint64_t *)p, word, __ATOMIC_RELEASE);
}

/*
 * Give the thread a chunk and publish it in its slot pair. The first record of a continued
 * chunk (OWNER) is written before the chunk is published, so that a signal handler
 * recording on this thread cannot slip in ahead of it.
 */
static bool install_chunk(struct rt_thread *t)
{
	/* Only a thread's first chunk may be a continued one, so that every thread's records
	 * lie in increasing chunk order (format.h promises it to the reader). */
	uint32_t index = t->gen ? POOL_NONE : pool_pop(), pos;
	char *base;

	if (index != POOL_NONE) {
		struct sc_rec_owner *own;

		base = chunk_addr(index);
		pos = rec.pool_pos[index];
		own = (struct sc_rec_owner *)(base + pos);
		own->tid = t->tid;
		own->reserved = 0;
		commit_at((char *)own, SC_REC_OWNER, 0, sizeof(*own));
		pos += sizeof(*own);
	} else {
		struct sc_chunk_header *ch;

		index = claim_chunk();
		if (index == POOL_NONE)
			return false;
		base = chunk_addr(index);
		ch = (struct sc_chunk_header *)base;
		ch->index = index;
		ch->tid = t->tid;
		ch->state = SC_CHUNK_OPEN;
		ch->first_ns = rt_now_ns();
		__atomic_store_n(&ch->magic, SC_CHUNK_MAGIC, __ATOMIC_RELEASE);
		pos = sizeof(*ch);
	}

	uint32_t ng = t->gen + 1 ? t->gen + 1 : 1;
	struct rt_slot *s = &t->slot[ng & 1];

	if (s->base)
		retire(s->index); /* closed two exchanges ago: nobody can be writing there */
	s->gen = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	s->base = base;
	s->index = index;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	s->gen = ng;
	t->gen = ng;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->word = (uint64_t)ng << 32 | pos;
	return true;
}

/* The chunk of generation `gen` overflowed at offset `off` (or there is none: gen 0). */
static void exchange(struct rt_thread *t, uint32_t gen, uint32_t off)
{
	if (gen && gen == t->gen && t->slot[gen & 1].gen == gen)
		close_chunk(t->slot[gen & 1].base, off);
	t->word = 0; /* reservations fail over to this path until a chunk is installed */
	if (!install_chunk(t))
		return;
	if (t->pending_lost_records) {
		struct sc_rec_lost lost = { .ts = rt_now_ns(),
					    .records = t->pending_lost_records,
					    .bytes = t->pending_lost_bytes };

		t->pending_lost_records = 0;
		t->pending_lost_bytes = 0;
		rt_record(SC_REC_LOST, 0, &lost.ts, sizeof(lost) - sizeof(lost.hdr), NULL, 0);
	}
}

void *rt_reserve(uint32_t size)
{
	struct rt_thread *t = rt_thread_self();

	if (!t || t->forking || t->state == RT_THREAD_EXITED || size > rec.chunk_size / 2 ||
	    rec.fd < 0) {
		count_lost(t, size);
		return NULL;
	}
	for (int attempt = 0; attempt < 3; attempt++) {
		uint64_t old = arch_local_fetch_add(&t->word, size);
		uint32_t gen = (uint32_t)(old >> 32), off = (uint32_t)old;

		if (gen && off + size <= rec.chunk_size) {
			struct rt_slot *s = &t->slot[gen & 1];
			char *base = s->base;

			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			if (s->gen != gen)
				break; /* two exchanges under our feet: cannot happen in practice */
			return base + off;
		}
		if (t->exchanging)
			break; /* a handler interrupted an exchange on this thread */
		t->exchanging = 1;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (gen == (uint32_t)(t->word >> 32) || !(t->word >> 32))
			exchange(t, gen, off);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->exchanging = 0;
	}
	count_lost(t, size);
	return NULL;
}

void rt_commit(void *p, uint16_t type, uint16_t flags, uint32_t size)
{
	commit_at(p, type, flags, size);
}

void rt_shrink_last(void *p, uint32_t reserved, uint32_t used)
{
	struct rt_thread *t = &rt_self;
	uint32_t gen = (uint32_t)(t->word >> 32);
	char *base = t->slot[gen & 1].base;

	/* Only if nothing was reserved after it: the word still points at its end. */
	if (gen && base && (char *)p + reserved == base + (uint32_t)t->word)
		t->word -= reserved - used;
}

int rt_record(uint16_t type, uint16_t flags, const void *body, uint32_t body_size, const void *tail,
	      uint32_t tail_size)
{
	uint32_t size = sc_record_align((uint32_t)sizeof(struct sc_record) + body_size + tail_size);
	char *p = rt_reserve(size);

	if (!p)
		return -ENOSPC;
	memcpy(p + sizeof(struct sc_record), body, body_size);
	if (tail_size)
		memcpy(p + sizeof(struct sc_record) + body_size, tail, tail_size);
	memset(p + sizeof(struct sc_record) + body_size + tail_size, 0,
	       size - sizeof(struct sc_record) - body_size - tail_size);
	rt_commit(p, type, flags, size);
	return 0;
}

void rt_release_thread_chunk(void)
{
	struct rt_thread *t = &rt_self;
	uint32_t gen = (uint32_t)(t->word >> 32), off = (uint32_t)t->word;

	if (rec.fd < 0)
		return;
	t->word = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	for (int i = 0; i < 2; i++) {
		struct rt_slot *s = &t->slot[i];

		if (!s->base)
			continue;
		if (s->gen == gen && gen && off + 256 <= rec.chunk_size &&
		    rec.chunk_size - off >= rec.chunk_size / 8)
			pool_push(s->index, off); /* room left: a later thread continues here */
		else {
			if (s->gen == gen && gen)
				close_chunk(s->base, off);
			retire(s->index);
		}
		s->base = NULL;
		s->gen = 0;
	}
}

static void *map_array(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int create_file(const char *session_dir, uint32_t image_seq, int fd_hint)
{
	char path[4200];
	int fd = fd_hint;

	if (fd >= 0)
		return fd;
	for (uint32_t n = image_seq; n < image_seq + 1000; n++) {
		if (n)
			snprintf(path, sizeof(path), "%s/raw/%d.%u" SC_RAW_SUFFIX, session_dir,
				 (int)rt_proc.pid, n);
		else
			snprintf(path, sizeof(path), "%s/raw/%d" SC_RAW_SUFFIX, session_dir,
				 (int)rt_proc.pid);
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	return fd < 0 ? -errno : rt_fd_adopt(fd);
}

int rt_recorder_open(const char *session_dir, uint32_t image_seq, int fd_hint)
{
	const struct sc_settings *s = &rt_proc.settings;
	uint64_t limit = (uint64_t)sc_int(s, SC_SET_BUFFER_LIMIT_MB) << 20;
	long page = sysconf(_SC_PAGESIZE);
	struct sc_file_header *h;
	char *a;
	int fd, rc;

	rec.chunk_size = (uint32_t)sc_int(s, SC_SET_BUFFER_CHUNK_KB) << 10;
	if (page > 0 && rec.chunk_size % (uint32_t)page)
		rec.chunk_size = (rec.chunk_size / (uint32_t)page + 1) * (uint32_t)page;
	rec.max_chunks =
		(uint32_t)(limit / rec.chunk_size) ? (uint32_t)(limit / rec.chunk_size) : 1;
	rec.max_segs = (rec.max_chunks + CHUNKS_PER_SEG - 1) / CHUNKS_PER_SEG;
	rec.seg_size = (uint64_t)rec.chunk_size * CHUNKS_PER_SEG;
	rec.disk_reserve = (uint64_t)sc_int(s, SC_SET_BUFFER_DISK_RESERVE_MB) << 20;

	rec.arrays_size = rec.max_segs * (sizeof(*rec.segs) + sizeof(*rec.seg_retired)) +
			  rec.max_chunks * 2 * sizeof(uint32_t);
	rec.arrays = map_array(rec.arrays_size);
	if (!rec.arrays)
		return -ENOMEM;
	a = rec.arrays;
	rec.segs = (void *)a;
	a += rec.max_segs * sizeof(*rec.segs);
	rec.seg_retired = (void *)a;
	a += rec.max_segs * sizeof(*rec.seg_retired);
	rec.pool_next = (void *)a;
	a += rec.max_chunks * sizeof(uint32_t);
	rec.pool_pos = (void *)a;
	atomic_store(&rec.pool_head, POOL_NONE);
	atomic_store(&rec.next_chunk, 0);
	atomic_store(&rec.retry_after_ns, 0);

	fd = create_file(session_dir, image_seq, fd_hint);
	if (fd < 0) {
		rc = fd;
		goto fail_arrays;
	}
	if (fallocate(fd, 0, 0, SC_FILE_HEADER_SIZE) && ftruncate(fd, SC_FILE_HEADER_SIZE)) {
		rc = -errno;
		goto fail_fd;
	}
	h = mmap(NULL, SC_FILE_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED) {
		rc = -errno;
		goto fail_fd;
	}
	rec.fd = fd;
	rec.hdr = h;

	memset(h, 0, sizeof(*h));
	h->version = SC_FORMAT_VERSION;
	h->header_size = SC_FILE_HEADER_SIZE;
	h->byte_order = SC_BYTE_ORDER_MARK;
	h->chunk_size = rec.chunk_size;
	h->clock_id = CLOCK_MONOTONIC;
	h->features = SC_FEATURE_FRAMES_ARE_RETURN_ADDRS;
	h->pid = rt_proc.pid;
	h->ppid = getppid();
	h->image_seq = image_seq;
	h->start_ns = rt_proc.start_ns;
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		h->start_realtime_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	gethostname(h->hostname, sizeof(h->hostname) - 1);
	/* The magic goes last: a reader never sees a half-written header as valid. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	memcpy(h->magic, SC_FILE_MAGIC, sizeof(h->magic));
	return 0;

fail_fd:
	rt_fd_release(fd);
fail_arrays:
	munmap(rec.arrays, rec.arrays_size);
	rec.arrays = NULL;
	return rc;
}

void rt_recorder_forget(void)
{
	if (rec.arrays) {
		for (uint32_t s = 0; s < rec.max_segs; s++) {
			char *seg = atomic_load(&rec.segs[s]);

			if (seg)
				munmap(seg, rec.seg_size);
		}
		munmap(rec.arrays, rec.arrays_size);
	}
	if (rec.hdr)
		munmap(rec.hdr, SC_FILE_HEADER_SIZE);
	rec.arrays = NULL;
	rec.hdr = NULL;
	rec.fd = -1; /* the descriptor itself is closed with the other inherited ones */
	memset(&rt_self.slot, 0, sizeof(rt_self.slot));
	rt_self.word = 0;
	rt_self.gen = 0;
}
