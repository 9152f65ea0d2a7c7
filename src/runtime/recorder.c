/* SPDX-License-Identifier: MIT */
/*
 * The recorder: per-thread record streams in chunks of one file.
 *
 * Load: every sample, region or event of every thread passes through rt_reserve/rt_commit,
 * up to a few million records a second per process, many of them from signal handlers. The
 * fast path is one signal-atomic add, a countdown and a few loads; system calls happen only
 * when a chunk is exhausted or every FLUSH_NS at most.
 *
 * Each thread writes into two buffers of its own (its slot pair), reused for every chunk:
 * memory written once already costs a few nanoseconds per record, while fresh pages (a
 * shared mapping of the file, as an earlier design wrote) cost 40 to 120 ns per instrumented
 * call on virtual machines (bench/page_touch). Records reach the file with pwrite:
 *   - a chunk when its buffer is needed again (two exchanges after it was closed, when no
 *     interrupted writer can still be in it);
 *   - what a thread wrote so far, every FLUSH_NS while it records (looked at every
 *     FLUSH_EVERY reservations), so that a process killed outright (SIGKILL) loses at most
 *     its threads' last moments;
 *   - everything at a thread's end, and every thread's at the process's end, exec or fatal
 *     signal (rt_set_end).
 * Writing the same bytes again is harmless, so flushes never need to agree with each other.
 *
 * Chunk life cycle (index i):
 *
 *   unclaimed --claim_chunk()--> open, owned by one thread
 *   open --exchange() on overflow--> closed, still in the thread's slot pair
 *   closed --its buffer reused two exchanges later--> in the file
 *   open --thread exit, room left--> in the file, partial pool --pool_pop()--> open again
 *   open --thread exit, little room--> closed, in the file
 *
 * Chunks are reserved with fallocate() before first use so a full disk is an error we
 * count, not a lost write. Every lost record is counted with its cause (format.h).
 *
 * The file's descriptor is checked (device and inode) before every write: a program's raw
 * close_range/close system call passes fdguard by, and its next open() may get the number.
 * We then open the file again by its path, and never write into what might be the program's.
 */
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <linux/membarrier.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../arch/arch.h"

#define POOL_NONE 0xffffffffu
#define FLUSH_EVERY 16u		    /* reservations between looks at the clock */
#define FLUSH_NS 20000000ull	    /* a thread's records reach the file at least this often */
#define DISK_RETRY_NS 1000000000ull /* after a failed claim, wait before trying again */

struct recorder {
	int fd; /* read with file_fd(), which checks it still is our file */
	dev_t dev;
	ino_t ino;
	char path[4200];
	struct sc_file_header *hdr;
	uint32_t chunk_size;
	uint32_t max_chunks;
	uint64_t disk_reserve;
	uint32_t *pool_next;		 /* [max_chunks] partial pool links */
	uint32_t *pool_pos;		 /* [max_chunks] offset where the next owner continues */
	atomic_uint_least64_t pool_head; /* tag << 32 | index */
	atomic_uint next_chunk;
	atomic_uint_least64_t retry_after_ns;
	atomic_uint allocated;	     /* chunks below this one have their blocks */
	atomic_uint foreign_flushes; /* flushes of other threads' chunks in progress */
	bool membarrier_ok;	     /* registered for MEMBARRIER_CMD_PRIVATE_EXPEDITED */
	size_t arrays_size;
	void *arrays;
};

static struct recorder recorder = { .fd = -1 };

struct sc_file_header *rt_header(void)
{
	return recorder.hdr;
}

static void count_lost(struct rt_thread *t, uint32_t size, enum sc_lost_cause why)
{
	if (t) {
		t->pending_lost_records++;
		t->pending_lost_bytes += size;
	}
	if (recorder.hdr) {
		__atomic_fetch_add(&recorder.hdr->lost_records, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&recorder.hdr->lost_bytes, size, __ATOMIC_RELAXED);
		__atomic_fetch_add(sc_lost_counter(recorder.hdr, why), 1, __ATOMIC_RELAXED);
	}
}

/* Another thread opened the file again first, or it cannot be: keep what it left. */
static int reopen_file(int stale)
{
	struct stat st;
	int fd = open(recorder.path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_dev != recorder.dev || st.st_ino != recorder.ino) {
		RT_REAL(close)(fd); /* a new file by that name: not ours to write */
		return -1;
	}
	fd = rt_fd_adopt(fd);
	if (__atomic_compare_exchange_n(&recorder.fd, &stale, fd, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		rt_fd_forget(stale); /* the number may be the program's now: never close it */
		__atomic_fetch_add(&recorder.hdr->file_reopened, 1, __ATOMIC_RELAXED);
		return fd;
	}
	rt_fd_release(fd);
	return stale; /* the descriptor the other thread installed */
}

/* The raw file's descriptor, checked to be the raw file still; -1 when there is none. */
static int file_fd(void)
{
	int fd = __atomic_load_n(&recorder.fd, __ATOMIC_ACQUIRE);
	struct stat st;

	if (fd < 0)
		return -1;
	if (!fstat(fd, &st) && st.st_dev == recorder.dev && st.st_ino == recorder.ino)
		return fd;
	return reopen_file(fd);
}

void rt_count_lost_record(uint32_t size, enum sc_lost_cause why)
{
	count_lost(&rt_self, size, why);
}

void rt_count_lost_sample(void)
{
	if (recorder.hdr)
		__atomic_fetch_add(&recorder.hdr->lost_samples, 1, __ATOMIC_RELAXED);
}

/*
 * Under a file size limit (RLIMIT_FSIZE) a write or fallocate past it raises SIGXFSZ, which
 * kills the program by default: our own file must never do that. So, when the process has
 * a limit, SIGXFSZ is blocked around our writes, and one that our write raised (EFBIG, none
 * pending before) is taken off again; the write failed, and what it held is counted lost as
 * any failed write is. The program's own writes are left as they are. Raw system calls:
 * async-signal-safe, and past our own wrappers. Whether there is a limit is read at start
 * (a limit the program sets later is not seen).
 */
static bool fsize_limited;

struct xfsz_guard {
	bool on, was_pending;
	uint64_t old; /* the kernel's signal mask: 64 bits */
};

static void xfsz_begin(struct xfsz_guard *g)
{
	uint64_t block = 1ull << (SIGXFSZ - 1), pending = 0;

	g->on = fsize_limited &&
		!syscall(SYS_rt_sigprocmask, SIG_BLOCK, &block, &g->old, sizeof(block));
	g->was_pending = g->on && (syscall(SYS_rt_sigpending, &pending, sizeof(pending)) ||
				   (pending & block));
}

static void xfsz_end(struct xfsz_guard *g, bool failed)
{
	int saved_errno = errno;
	uint64_t block = 1ull << (SIGXFSZ - 1);
	struct timespec zero = { 0, 0 };

	if (!g->on)
		return;
	if (failed && saved_errno == EFBIG && !g->was_pending)
		syscall(SYS_rt_sigtimedwait, &block, NULL, &zero, sizeof(block));
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &g->old, NULL, sizeof(g->old));
	errno = saved_errno;
}

/* `call` (a file write or allocation returning < 0 on failure) without SIGXFSZ. */
#define NO_XFSZ(call)                    \
	({                               \
		struct xfsz_guard xg_;   \
		__typeof__(call) xr_;    \
		xfsz_begin(&xg_);        \
		xr_ = (call);            \
		xfsz_end(&xg_, xr_ < 0); \
		xr_;                     \
	})

/* The chunks allocated ahead and never claimed, off the end of the file: it ends where its
 * last claimed chunk does, as without the allocation ahead. A chunk claimed later allocates
 * its blocks again. */
static void trim_unclaimed(void)
{
	uint32_t claimed = atomic_load(&recorder.next_chunk);
	int fd = file_fd();

	if (claimed > recorder.max_chunks)
		claimed = recorder.max_chunks;
	atomic_store(&recorder.allocated, claimed);
	if (fd < 0 ||
	    !NO_XFSZ(ftruncate(fd, SC_FILE_HEADER_SIZE + (off_t)claimed * recorder.chunk_size)))
		return;
	/* Failed: harmless, the reader skips unclaimed chunks. */
}

static void count_unwritten_all(void);

void rt_set_end(enum sc_end_reason reason, int status)
{
	if (!recorder.hdr)
		return;
	if (reason != SC_END_RUNNING) {
		rt_recorder_flush_all(); /* what the threads' buffers hold, before the end is set */
		count_unwritten_all();
		trim_unclaimed();
	}
	recorder.hdr->end_status = status;
	recorder.hdr->end_ns = reason == SC_END_RUNNING ? 0 : rt_now_ns();
	__atomic_store_n(&recorder.hdr->end_reason, (uint32_t)reason, __ATOMIC_RELEASE);
}

/* Threads that hold chunks, for the flush at the process's end (an exited thread leaves).
 * A thread keeps its slot's index, so leaving is one store, and the slot freed last is
 * taken again by the next thread: a program that starts and ends threads all the time does
 * not make the table, nor the end-of-process flush's walk over it, grow. */
#define MAX_WRITERS 65536u
#define NO_WRITER_SLOT UINT32_MAX
static struct rt_thread *_Atomic writers[MAX_WRITERS];
static atomic_uint nwriters;
static atomic_uint free_writer_slot = NO_WRITER_SLOT;

static void register_writer(struct rt_thread *t)
{
	uint32_t i = atomic_exchange(&free_writer_slot, NO_WRITER_SLOT);
	struct rt_thread *none = NULL;

	if (i == NO_WRITER_SLOT || !atomic_compare_exchange_strong(&writers[i], &none, t)) {
		i = atomic_fetch_add(&nwriters, 1);
		/* Beyond the table, a thread's records reach the file at its flushes and its
		 * end. */
		if (i >= MAX_WRITERS) {
			t->writer_slot = 0;
			return;
		}
		atomic_store(&writers[i], t);
	}
	t->writer_slot = i + 1;
}

static void unregister_writer(struct rt_thread *t)
{
	uint32_t i = t->writer_slot;
	struct rt_thread *expected = t;

	t->writer_slot = 0;
	if (i && atomic_compare_exchange_strong(&writers[i - 1], &expected, NULL))
		atomic_store(&free_writer_slot, i - 1);
}

static off_t chunk_offset(uint32_t index)
{
	return SC_FILE_HEADER_SIZE + (off_t)index * recorder.chunk_size;
}

/*
 * A slot's `flushed` word: how many bytes of its chunk are in the file, and how often it
 * changed. The owner lowers it when it amends a record already written (rt_amend_u32), while
 * the end-of-process flusher of another thread may be copying that very record: a flush
 * claims its bytes only if the word did not change while it wrote them (a compare-and-swap),
 * else it writes again, so an amendment made during a copy (or a copy that read the amended
 * field torn) is never taken for written. An amendment changes the word when its bytes were
 * claimed, or when another thread's flush is in progress (foreign_flushes); that flush begins
 * with a process-wide memory barrier (membarrier), so that the owner, which only loads the
 * counter, either sees it or made its store visible before the copy.
 */
#define FLUSHED_BYTES(w) ((uint32_t)(w))
#define FLUSH_TRIES 4

static uint64_t flushed_next(uint64_t old, uint32_t bytes)
{
	return ((old >> 32) + 1) << 32 | bytes;
}

static uint32_t flushed_bytes(const struct rt_slot *s)
{
	return FLUSHED_BYTES(__atomic_load_n(&s->flushed, __ATOMIC_ACQUIRE));
}

/*
 * Where the whole records of a chunk's bytes [from, used) end, `from` being where one
 * starts: at the first that runs past `used` (a write cut short) or whose header is not
 * stored yet. That one's writer was interrupted by a signal handler that recorded after it
 * (and may have closed the chunk, or flushed it): a flush may write the bytes after it, but
 * must not claim them, or the record, committed later, would never reach the file and its
 * zero header would end the chunk for the reader.
 */
static uint32_t whole_records_end(const char *base, uint32_t from, uint32_t used)
{
	if (from < sizeof(struct sc_chunk_header))
		from = sizeof(struct sc_chunk_header);
	while (from + sizeof(struct sc_record) <= used) {
		uint32_t size = __atomic_load_n(&((const struct sc_record *)(base + from))->size,
						__ATOMIC_ACQUIRE);

		if (size < sizeof(struct sc_record) || size > used - from)
			break;
		from += size;
	}
	return from;
}

/* A write of chunk `index` stopped after `done` bytes (a disk filling up), the file holding
 * whole records up to `known` before: it must end its records at a whole one, or the reader
 * would take a record cut short (its header written, the rest zero) for whole. The header of
 * the record cut, already in the file, is zeroed there (no new blocks needed). Returns where
 * the whole records in the file end. */
static uint32_t cut_at_record(int fd, const char *base, uint32_t index, uint32_t done,
			      uint32_t known)
{
	static const char zeros[sizeof(struct sc_record)];
	uint32_t pos =
		known > sizeof(struct sc_chunk_header) ? known : sizeof(struct sc_chunk_header);

	if (done <= known)
		return known; /* nothing past what the file held: it still holds that */
	if (done <= pos)
		return 0; /* not even the chunk's header: nothing of it counts as written */
	pos = whole_records_end(base, pos, done);
	if (pos < done &&
	    NO_XFSZ(pwrite(fd, zeros, done - pos < sizeof(zeros) ? done - pos : sizeof(zeros),
			   chunk_offset(index) + pos)) < 0)
		return known; /* the cut record stays in the file: count all after `known` */
	return pos;
}

/* The first `used` bytes of chunk `index` from `base` into the file, which holds whole
 * records of it up to `known` already. Returns `used`, or, when a write failed, how many
 * bytes of whole records are in the file (0 if none); the caller tries again later, and
 * counts what never gets there as lost (count_unwritten). Async-signal-safe. */
static uint32_t write_chunk(const char *base, uint32_t index, uint32_t used, uint32_t known)
{
	uint32_t done = 0;
	int fd = file_fd();

	while (done < used) {
		ssize_t n = fd < 0 ? -1
				   : NO_XFSZ(pwrite(fd, base + done, used - done,
						    chunk_offset(index) + done));

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return fd < 0 ? known : cut_at_record(fd, base, index, done, known);
		}
		done += (uint32_t)n;
	}
	return used;
}

bool rt_recorder_write_chunk(const char *base, uint32_t index, uint32_t used, uint32_t known)
{
	return recorder.fd >= 0 && write_chunk(base, index, used, known) == used;
}

/* The file holds the first `used` bytes of slot `s`'s chunk (the writer thread wrote them). */
static void claim_flushed(struct rt_slot *s, uint32_t used)
{
	uint64_t w = __atomic_load_n(&s->flushed, __ATOMIC_ACQUIRE);

	while (FLUSHED_BYTES(w) < used &&
	       !__atomic_compare_exchange_n(&s->flushed, &w, flushed_next(w, used), false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
}

/*
 * The records of slot `s`'s chunk between what reached the file and `used` that never will
 * (every write of them failed, and the buffer is given up, or the image ends): counted as
 * lost once, by walking their headers. `counted` says where the last count ended, claimed
 * by compare-and-swap since the end-of-image count may run on another thread. A failed write
 * is retried by every later flush, so only giving the bytes up makes them lost.
 * Async-signal-safe.
 */
static void count_unwritten(struct rt_slot *s, uint32_t used)
{
	const char *base = s->base;
	uint32_t from = flushed_bytes(s), done = __atomic_load_n(&s->counted, __ATOMIC_ACQUIRE);
	uint64_t n = 0, bytes = 0;

	if (!base || !recorder.hdr)
		return;
	if (used > recorder.chunk_size)
		used = recorder.chunk_size;
	if (from < done)
		from = done;
	if (from >= used || !__atomic_compare_exchange_n(&s->counted, &done, used, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	while (from + sizeof(struct sc_record) <= used) {
		const struct sc_record *r = (const struct sc_record *)(base + from);
		uint32_t size = __atomic_load_n(&r->size, __ATOMIC_ACQUIRE);

		if (size < sizeof(*r) || size % SC_RECORD_ALIGN || size > used - from || !r->type)
			break; /* not written yet: nothing of it is in the file either */
		n++;
		bytes += size;
		from += size;
	}
	if (!n)
		return;
	__atomic_fetch_add(&recorder.hdr->lost_records, n, __ATOMIC_RELAXED);
	__atomic_fetch_add(&recorder.hdr->lost_bytes, bytes, __ATOMIC_RELAXED);
	__atomic_fetch_add(&recorder.hdr->lost_write_records, n, __ATOMIC_RELAXED);
	__atomic_fetch_add(&recorder.hdr->write_failed_bytes, bytes, __ATOMIC_RELAXED);
}

/* The slot's closed chunk back from the writer thread, before its buffer is reused. */
static void take_back(struct rt_slot *s)
{
	uint32_t handle = s->handoff;

	s->handoff = 0;
	if (handle && rt_writer_take_back(handle))
		claim_flushed(s, ((const struct sc_chunk_header *)s->base)->used);
}

/* The first `used` bytes of slot `s`'s chunk into the file, and those of its whole records
 * claimed as written. Async-signal-safe. */
static void flush_slot(struct rt_slot *s, uint32_t used)
{
	char *base = s->base;
	uint32_t index = s->index;

	if (!base || recorder.fd < 0)
		return;
	if (used > recorder.chunk_size)
		used = recorder.chunk_size;
	for (int tries = 0; tries < FLUSH_TRIES; tries++) {
		uint64_t seen = __atomic_load_n(&s->flushed, __ATOMIC_ACQUIRE);
		uint32_t written, whole;

		/* The slot moved on to another chunk (its owner exchanged): not ours now. */
		if (tries && (s->base != base || s->index != index))
			return;
		/* Only whole records (their headers seen before the copy): a record still being
		 * written would reach the file as its body without a header, which the reader
		 * cannot tell from damage when the image ends before a later flush (another
		 * thread's exit while this one records). */
		whole = whole_records_end(base, FLUSHED_BYTES(seen), used);
		if (whole <= FLUSHED_BYTES(seen))
			return;
		written = write_chunk(base, index, whole, FLUSHED_BYTES(seen));
		if (written < whole) {
			/* Whole records before the failure are in the file (cut_at_record): claimed,
			 * so that only those after them count as lost if it never gets better. */
			if (written > FLUSHED_BYTES(seen))
				__atomic_compare_exchange_n(&s->flushed, &seen,
							    flushed_next(seen, written), false,
							    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
			return;
		}
		if (FLUSHED_BYTES(seen) >= whole ||
		    __atomic_compare_exchange_n(&s->flushed, &seen, flushed_next(seen, whole),
						false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return;
	}
}

/* How much of slot `s` of thread `t` holds records: the write position for the current
 * chunk, the closed size for the previous one. */
static uint32_t slot_used(const struct rt_thread *t, const struct rt_slot *s)
{
	uint64_t word = t->word;
	const struct sc_chunk_header *ch = (const struct sc_chunk_header *)s->base;

	if (s->gen && s->gen == (uint32_t)(word >> 32))
		return (uint32_t)word;
	return ch->state == SC_CHUNK_CLOSED ? ch->used : recorder.chunk_size;
}

/* The thread's unwritten records into the file; `posted_too`: also the closed chunk handed
 * to the writer thread (the periodic flush leaves it to that thread). */
static void flush_thread(struct rt_thread *t, bool posted_too)
{
	for (int i = 0; i < 2; i++)
		if (t->slot[i].base && (posted_too || !t->slot[i].handoff)) {
			uint32_t used = slot_used(t, &t->slot[i]);

			if (used > flushed_bytes(&t->slot[i]))
				flush_slot(&t->slot[i], used);
		}
}

void rt_recorder_flush_self(void)
{
	flush_thread(&rt_self, true);
}

/*
 * Another thread's slots into the file, while that thread may go on recording (a thread
 * ends the image while others run). Each slot is marked as being written before its chunk
 * is looked at, and its owner, retiring the slot to reuse its memory, waits for the mark to
 * go (retire_slot): otherwise this write, still copying the old chunk out of the buffer,
 * would put the new chunk's bytes over the old one's place in the file. Either the owner
 * sees the mark, or this sees the slot retired (no base): sequentially consistent both.
 */
static void flush_foreign_thread(struct rt_thread *t)
{
	__atomic_fetch_add(&t->foreign_flushes, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 2; i++) {
		struct rt_slot *s = &t->slot[i];

		if (__atomic_load_n(&s->base, __ATOMIC_SEQ_CST)) {
			uint32_t used = slot_used(t, s);

			if (used > flushed_bytes(s))
				flush_slot(s, used);
		}
	}
	__atomic_fetch_sub(&t->foreign_flushes, 1, __ATOMIC_SEQ_CST);
}

/* Slot `s` of thread `t` (the caller's own) gives its chunk up, the caller having written
 * what it could: no foreign flush may be copying out of its memory when that is reused.
 * Bounded, so that no end of the image can hang the program: a second at most, then the
 * memory is reused anyway. */
static void retire_slot(struct rt_thread *t, struct rt_slot *s)
{
	uint64_t until = 0;

	s->gen = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&s->base, NULL, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&t->foreign_flushes, __ATOMIC_SEQ_CST)) {
		uint64_t now = rt_now_ns();

		if (!until)
			until = now + 1000000000ull;
		else if (now > until)
			break;
		sched_yield();
	}
}

/* Every thread's amendments stored before now visible here, every later one seeing the
 * count of foreign flushes (see flushed_next). Not under a seccomp filter the program may
 * have installed since (one that kills on system calls it does not know): there, and without
 * membarrier, a region ending during the flush may keep its copy without the end. */
static void barrier_all_threads(void)
{
	if (recorder.membarrier_ok && prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 0)
		syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}

void rt_recorder_flush_all(void)
{
	uint32_t n = atomic_load(&nwriters);

	atomic_fetch_add(&recorder.foreign_flushes, 1);
	barrier_all_threads();
	for (uint32_t i = 0; i < n && i < MAX_WRITERS; i++) {
		struct rt_thread *t = atomic_load(&writers[i]);

		if (t == &rt_self)
			flush_thread(t, true);
		else if (t)
			flush_foreign_thread(t);
	}
	atomic_fetch_sub(&recorder.foreign_flushes, 1);
}

/* The image ends: what every thread's buffers hold and the last flush could not write is
 * lost (count_unwritten). */
static void count_unwritten_all(void)
{
	uint32_t n = atomic_load(&nwriters);

	for (uint32_t i = 0; i < n && i < MAX_WRITERS; i++) {
		struct rt_thread *t = atomic_load(&writers[i]);

		for (int k = 0; t && k < 2; k++)
			if (t->slot[k].base)
				count_unwritten(&t->slot[k], slot_used(t, &t->slot[k]));
	}
}

/*
 * Every FLUSH_EVERY reservations: the thread's records into the file when FLUSH_NS passed.
 * With every signal held back: a handler that recorded meanwhile could fill the chunk and
 * put the next one in the very buffer being written (the slot of the chunk closed before),
 * and the write, going on, would put that new chunk's bytes where the old one belongs in the
 * file (seen as "bad chunk header" under a 5 kHz sampler). Two system calls per 20 ms.
 */
static void maybe_flush(struct rt_thread *t)
{
	sigset_t all, saved;
	uint64_t now;

	t->flush_countdown = FLUSH_EVERY;
	now = rt_now_ns();
	if (now - t->last_flush_ns < FLUSH_NS)
		return;
	t->last_flush_ns = now;
	sigfillset(&all);
	RT_REAL(pthread_sigmask)(SIG_BLOCK, &all, &saved);
	flush_thread(t, false);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &saved, NULL);
}

/* Room for `bytes` more above the reserve --buffer-disk-reserve-mb keeps free. */
static bool disk_has_room(int fd, uint64_t bytes)
{
	struct statfs st;

	if (!recorder.disk_reserve || fstatfs(fd, &st))
		return true;
	return (uint64_t)st.f_bavail * (uint64_t)st.f_bsize >= recorder.disk_reserve + bytes;
}

/* Reserve the blocks of chunks [index, index + n) in the file; a hole would turn ENOSPC into
 * SIGBUS later. */
static int allocate_blocks(int fd, uint32_t index, uint32_t n)
{
	off_t off = chunk_offset(index), len = (off_t)n * recorder.chunk_size;

	if (fd < 0)
		return -EBADF;
	if (!NO_XFSZ(fallocate(fd, 0, off, len)))
		return 0;
	if (errno != EOPNOTSUPP)
		return -errno;
	/* File systems without fallocate: extend the file; blocks come on first write. */
	return NO_XFSZ(pwrite(fd, "", 1, off + len - 1)) == 1 ? 0 : -errno;
}

/*
 * The blocks of chunk `index`, allocated ahead for the chunks that follow it (ALLOCATE_AHEAD
 * bytes at a time): one fallocate costs about the same for one chunk as for sixteen (40 us
 * on the development VM, a quarter of what a chunk of small records costs its thread). Near
 * the limit or a full disk, one chunk at a time as before. Chunks allocated and never
 * claimed stay zero at the end of the file; the reader skips them.
 */
#define ALLOCATE_AHEAD (1u << 20)

/* Chunks [index, end) have their blocks: so have all below `end` if all below `index` had. */
static void allocated_to(uint32_t index, uint32_t end)
{
	uint32_t seen = atomic_load(&recorder.allocated);

	while (seen >= index && seen < end &&
	       !atomic_compare_exchange_weak(&recorder.allocated, &seen, end))
		;
}

static int allocate_chunk_blocks(int fd, uint32_t index)
{
	uint32_t ahead = ALLOCATE_AHEAD / recorder.chunk_size;
	int rc;

	if (index < atomic_load_explicit(&recorder.allocated, memory_order_acquire))
		return 0;
	if (ahead > 1 && recorder.max_chunks - index > ahead &&
	    disk_has_room(fd, (uint64_t)ahead * recorder.chunk_size) &&
	    !allocate_blocks(fd, index, ahead)) {
		allocated_to(index, index + ahead);
		return 0;
	}
	rc = allocate_blocks(fd, index, 1);
	if (!rc)
		allocated_to(index, index + 1);
	return rc;
}

/* A brand-new chunk from the end of the file. Returns its index, or POOL_NONE and why. */
static uint32_t claim_chunk(enum sc_lost_cause *why)
{
	uint64_t now = rt_now_ns();
	uint32_t index;
	int rc, fd;

	*why = SC_LOST_LIMIT;
	if (atomic_load_explicit(&recorder.next_chunk, memory_order_relaxed) >= recorder.max_chunks)
		return POOL_NONE;
	*why = SC_LOST_DISK; /* the last claim failed on the disk: wait before trying again */
	if (now < atomic_load_explicit(&recorder.retry_after_ns, memory_order_relaxed))
		return POOL_NONE;
	fd = file_fd(); /* checked once for the claim */
	if (!disk_has_room(fd, recorder.chunk_size)) {
		atomic_store(&recorder.retry_after_ns, now + DISK_RETRY_NS);
		return POOL_NONE;
	}
	index = atomic_fetch_add(&recorder.next_chunk, 1);
	*why = SC_LOST_LIMIT;
	if (index >= recorder.max_chunks)
		return POOL_NONE;
	rc = allocate_chunk_blocks(fd, index);
	if (rc) {
		*why = rc == -EBADF ? SC_LOST_NO_FILE : SC_LOST_DISK;
		if (rc != -EBADF) /* which limit: the file's size (ulimit -f), the disk, a quota */
			__atomic_store_n(&recorder.hdr->disk_errno, -rc, __ATOMIC_RELAXED);
		atomic_store(&recorder.retry_after_ns, now + DISK_RETRY_NS);
		return POOL_NONE;
	}
	__atomic_fetch_add(&recorder.hdr->chunks_claimed, 1, __ATOMIC_RELAXED);
	return index;
}

static void pool_push(uint32_t index, uint32_t pos)
{
	uint64_t old = atomic_load(&recorder.pool_head), nw;

	recorder.pool_pos[index] = pos;
	do {
		recorder.pool_next[index] = (uint32_t)old;
		nw = ((old >> 32) + 1) << 32 | index;
	} while (!atomic_compare_exchange_weak(&recorder.pool_head, &old, nw));
}

static uint32_t pool_pop(void)
{
	uint64_t old = atomic_load(&recorder.pool_head), nw;

	do {
		if ((uint32_t)old == POOL_NONE)
			return POOL_NONE;
		nw = ((old >> 32) + 1) << 32 | recorder.pool_next[(uint32_t)old];
	} while (!atomic_compare_exchange_weak(&recorder.pool_head, &old, nw));
	return (uint32_t)old;
}

static void close_chunk(char *base, uint32_t used)
{
	struct sc_chunk_header *ch = (struct sc_chunk_header *)base;

	ch->used = used < recorder.chunk_size ? used : recorder.chunk_size;
	__atomic_store_n(&ch->state, (uint32_t)SC_CHUNK_CLOSED, __ATOMIC_RELEASE);
}

static inline void commit_at(char *p, uint16_t type, uint16_t flags, uint32_t size)
{
	uint64_t word = (uint64_t)size | (uint64_t)type << 32 | (uint64_t)flags << 48;

	__atomic_store_n((uint64_t *)p, word, __ATOMIC_RELEASE);
}

/*
 * Buffers of threads that ended, kept for the next threads (a program that starts and ends
 * a thread every few milliseconds would otherwise map, fault in and unmap two buffers each
 * time). Each place holds one buffer or NULL and changes hands by an atomic exchange, so
 * taking and giving back are lock-free and async-signal-safe.
 */
#define SPARE_BUFFERS 16
static void *_Atomic spare_buffers[SPARE_BUFFERS];

static void *take_spare_buffer(void)
{
	for (unsigned i = 0; i < SPARE_BUFFERS; i++)
		if (atomic_load_explicit(&spare_buffers[i], memory_order_relaxed)) {
			void *p = atomic_exchange(&spare_buffers[i], NULL);

			if (p)
				return p;
		}
	return NULL;
}

static void give_back_buffer(void *p)
{
	for (unsigned i = 0; i < SPARE_BUFFERS; i++) {
		void *none = NULL;

		if (atomic_compare_exchange_strong(&spare_buffers[i], &none, p))
			return;
	}
	munmap(p, recorder.chunk_size);
}

/* The slot's own memory, taken at its first chunk. */
static char *slot_buffer(struct rt_slot *s)
{
	void *p;

	if (s->buf)
		return s->buf;
	p = take_spare_buffer();
	if (p)
		return s->buf = p;
	p = mmap(NULL, recorder.chunk_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	return s->buf = p == MAP_FAILED ? NULL : p;
}

/*
 * Give the thread a chunk and publish it in its slot pair. The slot that receives it held
 * the chunk closed two exchanges ago (nobody can be writing there any more): that one goes
 * to the file first, then the memory is cleared and reused. The first record of a continued
 * chunk (OWNER) is written before the chunk is published, so that a signal handler
 * recording on this thread cannot slip in ahead of it.
 */
static bool install_chunk(struct rt_thread *t, enum sc_lost_cause *why)
{
	uint32_t ng = t->gen + 1 ? t->gen + 1 : 1, index, pos;
	struct rt_slot *s = &t->slot[ng & 1];
	char *base;

	if (s->base) {
		uint32_t used = slot_used(t, s);

		take_back(s);
		if (used > flushed_bytes(s))
			flush_slot(s, used);
		count_unwritten(s, used); /* what did not reach the file never will */
		retire_slot(t, s);
	}
	base = slot_buffer(s);
	*why = SC_LOST_NO_MEMORY;
	if (!base)
		return false;
	/* Only a thread's first chunk may be a continued one, so that every thread's records
	 * lie in increasing chunk order (format.h promises it to the reader). */
	index = t->gen ? POOL_NONE : pool_pop();
	if (!t->gen)
		register_writer(t);
	if (index != POOL_NONE) {
		struct sc_rec_owner *own;

		/* What earlier owners wrote is in the file: continue after it. */
		pos = recorder.pool_pos[index];
		if (pread(file_fd(), base, pos, chunk_offset(index)) != (ssize_t)pos)
			arch_zero(base, pos);
		arch_zero(base + pos, recorder.chunk_size - pos);
		s->counted = pos; /* what earlier owners wrote is theirs */
		own = (struct sc_rec_owner *)(base + pos);
		own->tid = t->tid;
		own->reserved = 0;
		commit_at((char *)own, SC_REC_OWNER, 0, sizeof(*own));
		pos += sizeof(*own);
	} else {
		struct sc_chunk_header *ch;

		index = claim_chunk(why);
		if (index == POOL_NONE)
			return false;
		/* A reused buffer: nothing of the last chunk may look like a record here. */
		arch_zero(base, recorder.chunk_size);
		ch = (struct sc_chunk_header *)base;
		ch->index = index;
		ch->tid = t->tid;
		ch->state = SC_CHUNK_OPEN;
		ch->first_ns = rt_now_ns();
		__atomic_store_n(&ch->magic, SC_CHUNK_MAGIC, __ATOMIC_RELEASE);
		pos = sizeof(*ch);
		s->counted = pos;
	}

	s->gen = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&s->flushed, flushed_next(s->flushed, 0), __ATOMIC_RELEASE);
	s->base = base;
	s->index = index;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	s->gen = ng;
	t->gen = ng;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->word = (uint64_t)ng << 32 | pos;
	return true;
}

/* The chunk of generation `gen` overflowed at offset `off` (or there is none: gen 0).
 * Returns false, and why, when the thread has no chunk to record into. */
static bool exchange(struct rt_thread *t, uint32_t gen, uint32_t off, enum sc_lost_cause *why)
{
	struct rt_slot *closed = NULL;

	if (gen && gen == t->gen && t->slot[gen & 1].gen == gen) {
		closed = &t->slot[gen & 1];
		close_chunk(closed->base, off);
	}
	t->word = 0; /* reservations fail over to this path until a chunk is installed */
	if (!install_chunk(t, why))
		return false;
	/* To the writer thread, unless a record of this thread's is still being written in it
	 * (this exchange interrupted it: it finishes there afterwards). */
	if (closed && !t->writing)
		closed->handoff =
			rt_writer_post(closed->base, closed->index, flushed_bytes(closed),
				       ((const struct sc_chunk_header *)closed->base)->used);
	if (t->pending_lost_records) {
		struct sc_rec_lost lost = { .ts = rt_now_ns(),
					    .records = t->pending_lost_records,
					    .bytes = t->pending_lost_bytes };

		t->pending_lost_records = 0;
		t->pending_lost_bytes = 0;
		rt_record(SC_REC_LOST, 0, &lost.ts, sizeof(lost) - sizeof(lost.hdr), NULL, 0);
	}
	return true;
}

/* The buffer limit is reached, or the disk failed a moment ago, and no partial chunk waits. */
static bool no_chunk_to_be_had(const struct rt_thread *t)
{
	if (!t->gen && (uint32_t)atomic_load(&recorder.pool_head) != POOL_NONE)
		return false;
	return atomic_load_explicit(&recorder.next_chunk, memory_order_relaxed) >=
		       recorder.max_chunks ||
	       rt_now_ns() < atomic_load_explicit(&recorder.retry_after_ns, memory_order_relaxed);
}

/*
 * An exchange with every signal held back: a handler that records (a sample, a patched
 * signal handler of the program's) would find the thread between two chunks and lose its
 * record; held, it runs a few microseconds later, once the new chunk is in place. Two system
 * calls per chunk, never on the fast path.
 */
static bool exchange_unsignalled(struct rt_thread *t, uint32_t gen, uint32_t off,
				 enum sc_lost_cause *why)
{
	/* Once no chunk can be had, every record tries again: no system calls for those. */
	bool hold = !no_chunk_to_be_had(t);
	sigset_t all, saved;
	bool ok = true;

	if (hold) {
		sigfillset(&all);
		RT_REAL(pthread_sigmask)(SIG_BLOCK, &all, &saved);
	}
	t->exchanging = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (gen == (uint32_t)(t->word >> 32) || !(t->word >> 32))
		ok = exchange(t, gen, off, why);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->exchanging = 0;
	if (hold)
		RT_REAL(pthread_sigmask)(SIG_SETMASK, &saved, NULL);
	return ok;
}

/* Why rt_reserve refuses a record before trying: no file, too large, or no thread. */
static enum sc_lost_cause refusal_cause(uint32_t size)
{
	if (recorder.fd < 0)
		return SC_LOST_NO_FILE;
	if (size > recorder.chunk_size / 2)
		return SC_LOST_TOO_LARGE;
	return SC_LOST_NO_THREAD;
}

/* One try at `size` bytes in the thread's current chunk: the record's address, or NULL with
 * where the chunk stood in `*gen` and `*off` (the space ran past its end, or no chunk yet:
 * gen 0); `*stale` when the slot changed under us (two exchanges by handlers between the add
 * and the look at the slot: cannot happen in practice). */
static inline char *try_chunk(struct rt_thread *t, uint32_t size, uint32_t *gen, uint32_t *off,
			      bool *stale)
{
	uint64_t old;

	/* Counted before the space is taken (until rt_commit): a handler that closes the chunk
	 * right after must not hand it to the writer with this record unwritten. */
	t->writing++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	old = arch_local_fetch_add(&t->word, size);
	*gen = (uint32_t)(old >> 32);
	*off = (uint32_t)old;
	if (__builtin_expect(*gen && *off + size <= recorder.chunk_size, 1)) {
		struct rt_slot *s = &t->slot[*gen & 1];
		char *base = s->base;

		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (__builtin_expect(s->gen == *gen, 1))
			return base + *off;
		*stale = true;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->writing--; /* nothing of ours is in the space taken */
	return NULL;
}

/* rt_reserve past a first try that found no room at (gen, off): the chunk exchanged for a
 * fresh one and tried again, three exchanges at most. Apart so that rt_reserve's common
 * case stays a short function. */
static __attribute__((noinline)) void *reserve_exchanging(struct rt_thread *t, uint32_t size,
							  uint32_t gen, uint32_t off, bool stale)
{
	enum sc_lost_cause why = SC_LOST_REENTRY;
	char *p;

	for (int attempt = 1; !stale && !t->exchanging; attempt++) {
		/* a handler interrupted an exchange on this thread: no second one */
		if (!exchange_unsignalled(t, gen, off, &why))
			break; /* no chunk to be had: a second try would fail the same way */
		why = SC_LOST_REENTRY;
		if (attempt == 3)
			break;
		if ((p = try_chunk(t, size, &gen, &off, &stale)))
			return p;
	}
	count_lost(t, size, why);
	return NULL;
}

void *rt_reserve(uint32_t size)
{
	struct rt_thread *t = &rt_self;
	uint32_t gen, off;
	bool stale = false;
	char *p;

	if (__builtin_expect(t->state != RT_THREAD_ACTIVE || t->forking ||
				     size > recorder.chunk_size / 2 || recorder.fd < 0,
			     0)) {
		/* A registered thread without the call (lazily registered ones take it once). */
		if (t->state == RT_THREAD_UNKNOWN)
			t = rt_thread_self();
		if (!t || t->forking || t->state == RT_THREAD_EXITED ||
		    size > recorder.chunk_size / 2 || recorder.fd < 0) {
			count_lost(t, size, refusal_cause(size));
			return NULL;
		}
	}
	if (__builtin_expect(--t->flush_countdown >= FLUSH_EVERY, 0)) /* 0 wrapped, or never set */
		maybe_flush(t);
	if (__builtin_expect((p = try_chunk(t, size, &gen, &off, &stale)) != NULL, 1))
		return p;
	return reserve_exchanging(t, size, gen, off, stale);
}

uint32_t rt_shrink_last(void *p, uint32_t reserved, uint32_t used)
{
	struct rt_thread *t = &rt_self;
	uint64_t word = t->word;
	uint32_t gen = (uint32_t)(word >> 32);
	char *base = t->slot[gen & 1].base;

	/* Only if nothing was reserved after it: the word still points at its end, and still
	 * does as it is lowered (a handler may reserve between the look and the store). */
	if (gen && base && (char *)p + reserved == base + (uint32_t)word &&
	    arch_local_cas(&t->word, word, word - (reserved - used)))
		return used;
	return reserved;
}

bool rt_amend_u32(void *rec, uint64_t ts, uint32_t *field, uint32_t value)
{
	struct rt_thread *t = &rt_self;
	uint32_t gen = (uint32_t)(t->word >> 32);
	struct rt_slot *s = &t->slot[gen & 1];
	uintptr_t off = (uintptr_t)rec - (uintptr_t)s->base;
	uint64_t w;

	/* Only the current chunk: a closed one may be reused by an exchange meanwhile. Its
	 * buffer held earlier chunks too: the record there must still be the one of `ts`. */
	if (!gen || s->gen != gen || !s->base || off > recorder.chunk_size - 16 ||
	    __atomic_load_n((uint64_t *)rec + 1, __ATOMIC_RELAXED) != ts)
		return false;
	__atomic_store_n(field, value, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* Written out before the change, or being written now by another thread: again. */
	w = __atomic_load_n(&s->flushed, __ATOMIC_RELAXED);
	if (FLUSHED_BYTES(w) <= off &&
	    !atomic_load_explicit(&recorder.foreign_flushes, memory_order_relaxed))
		return true;
	while (!__atomic_compare_exchange_n(
		&s->flushed, &w,
		flushed_next(w, FLUSHED_BYTES(w) < off ? FLUSHED_BYTES(w) : (uint32_t)off), false,
		__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
	return true;
}

int rt_record(uint16_t type, uint16_t flags, const void *body, uint32_t body_size, const void *tail,
	      uint32_t tail_size)
{
	uint32_t size = sc_record_align((uint32_t)sizeof(struct sc_record) + body_size + tail_size);
	char *p = rt_reserve(size);

	if (!p)
		return -ENOSPC;
	/* Not the C library's: a probe may be writing (arch.h). */
	arch_copy(p + sizeof(struct sc_record), body, body_size);
	if (tail_size)
		arch_copy(p + sizeof(struct sc_record) + body_size, tail, tail_size);
	arch_zero(p + sizeof(struct sc_record) + body_size + tail_size,
		  size - sizeof(struct sc_record) - body_size - tail_size);
	rt_commit(p, type, flags, size);
	return 0;
}

void rt_release_thread_chunk(void)
{
	struct rt_thread *t = &rt_self;
	uint32_t gen = (uint32_t)(t->word >> 32), off = (uint32_t)t->word;

	if (recorder.fd < 0)
		return;
	t->word = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	unregister_writer(t);
	for (int i = 0; i < 2; i++) {
		struct rt_slot *s = &t->slot[i];
		bool current = s->gen == gen && gen;

		if (s->base)
			take_back(s);
		if (s->base) {
			if (current && off + 256 <= recorder.chunk_size &&
			    recorder.chunk_size - off >= recorder.chunk_size / 8) {
				flush_slot(s, off);	  /* first: the next owner reads it back */
				pool_push(s->index, off); /* room left: a later thread continues */
			} else {
				if (current)
					close_chunk(s->base, off);
				flush_slot(s, current ? off
						      : ((struct sc_chunk_header *)s->base)->used);
			}
			count_unwritten(s,
					current ? off : ((struct sc_chunk_header *)s->base)->used);
		}
		retire_slot(t, s); /* its memory may go to another thread next */
		if (s->buf)
			give_back_buffer(s->buf);
		s->buf = NULL;
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

/* What file_fd() compares the descriptor with, and the path it reopens. */
static int remember_file(int fd)
{
	char link[64];
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st))
		return -1;
	recorder.dev = st.st_dev;
	recorder.ino = st.st_ino;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, recorder.path, sizeof(recorder.path) - 1);
	recorder.path[n > 0 ? n : 0] = '\0'; /* no path: a closed file cannot be reopened */
	return 0;
}

int rt_recorder_open(const char *session_dir, uint32_t image_seq, int fd_hint)
{
	const struct sc_settings *s = &rt_proc.settings;
	uint64_t limit = (uint64_t)sc_int(s, SC_SET_BUFFER_LIMIT_MB) << 20;
	long page = sysconf(_SC_PAGESIZE);
	struct sc_file_header *h;
	char *a;
	int fd, rc;

	recorder.chunk_size = (uint32_t)sc_int(s, SC_SET_BUFFER_CHUNK_KB) << 10;
	if (page > 0 && recorder.chunk_size % (uint32_t)page)
		recorder.chunk_size = (recorder.chunk_size / (uint32_t)page + 1) * (uint32_t)page;
	recorder.max_chunks = (uint32_t)(limit / recorder.chunk_size)
				      ? (uint32_t)(limit / recorder.chunk_size)
				      : 1;
	recorder.disk_reserve = (uint64_t)sc_int(s, SC_SET_BUFFER_DISK_RESERVE_MB) << 20;

	recorder.arrays_size = recorder.max_chunks * 2 * sizeof(uint32_t);
	recorder.arrays = map_array(recorder.arrays_size);
	if (!recorder.arrays)
		return -ENOMEM;
	a = recorder.arrays;
	recorder.pool_next = (void *)a;
	a += recorder.max_chunks * sizeof(uint32_t);
	recorder.pool_pos = (void *)a;
	atomic_store(&recorder.pool_head, POOL_NONE);
	atomic_store(&recorder.next_chunk, 0);
	atomic_store(&recorder.retry_after_ns, 0);
	atomic_store(&recorder.allocated, 0);
	atomic_store(&recorder.foreign_flushes, 0);
	{
		struct rlimit fsize;

		fsize_limited = !getrlimit(RLIMIT_FSIZE, &fsize) && fsize.rlim_cur != RLIM_INFINITY;
	}
	recorder.membarrier_ok =
		!syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);

	fd = create_file(session_dir, image_seq, fd_hint);
	if (fd < 0) {
		rc = fd;
		goto fail_arrays;
	}
	if (NO_XFSZ(fallocate(fd, 0, 0, SC_FILE_HEADER_SIZE)) &&
	    NO_XFSZ(ftruncate(fd, SC_FILE_HEADER_SIZE))) {
		rc = -errno;
		goto fail_fd;
	}
	h = mmap(NULL, SC_FILE_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED) {
		rc = -errno;
		goto fail_fd;
	}
	if (remember_file(fd)) {
		rc = -errno;
		munmap(h, SC_FILE_HEADER_SIZE);
		goto fail_fd;
	}
	recorder.fd = fd;
	recorder.hdr = h;

	memset(h, 0, sizeof(*h));
	h->version = SC_FORMAT_VERSION;
	h->header_size = SC_FILE_HEADER_SIZE;
	h->byte_order = SC_BYTE_ORDER_MARK;
	h->chunk_size = recorder.chunk_size;
	h->clock_id = CLOCK_MONOTONIC;
	h->features = SC_FEATURE_FRAMES_ARE_RETURN_ADDRS;
	if (rt_clock_uses_tsc())
		h->features |= SC_FEATURE_TSC_CLOCK;
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
	munmap(recorder.arrays, recorder.arrays_size);
	recorder.arrays = NULL;
	return rc;
}

void rt_recorder_forget(void)
{
	char *bufs[2] = { rt_self.slot[0].buf, rt_self.slot[1].buf };
	uint32_t n = atomic_load(&nwriters);

	if (recorder.arrays)
		munmap(recorder.arrays, recorder.arrays_size);
	if (recorder.hdr)
		munmap(recorder.hdr, SC_FILE_HEADER_SIZE);
	recorder.arrays = NULL;
	recorder.hdr = NULL;
	recorder.fd = -1; /* the descriptor itself is closed with the other inherited ones */
	/* The parent's chunks are the parent's: this thread starts again in the child's file,
	 * in the same memory; the parent's other threads do not exist here. */
	for (uint32_t i = 0; i < n && i < MAX_WRITERS; i++)
		atomic_store(&writers[i], NULL);
	atomic_store(&nwriters, 0);
	atomic_store(&free_writer_slot, NO_WRITER_SLOT);
	rt_self.writer_slot = 0;
	rt_writer_forget();
	memset(&rt_self.slot, 0, sizeof(rt_self.slot));
	rt_self.slot[0].buf = bufs[0];
	rt_self.slot[1].buf = bufs[1];
	rt_self.word = 0;
	rt_self.gen = 0;
}

void rt_recorder_detach_thread(struct rt_thread *t)
{
	for (int i = 0; i < 2; i++) {
		char *buf = t->slot[i].buf;

		if (t->slot[i].base)
			take_back(&t->slot[i]);
		memset(&t->slot[i], 0, sizeof(t->slot[i]));
		t->slot[i].buf = buf; /* kept for the thread's next attach */
	}
	t->word = 0;
	t->gen = 0;
}

void rt_recorder_close(void)
{
	int fd = recorder.fd;

	rt_writer_stop();
	rt_recorder_forget();
	if (fd >= 0)
		rt_fd_release(fd);
}
