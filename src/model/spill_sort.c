/* SPDX-License-Identifier: MIT */
/*
 * The bounded sorter of spill_sort.h: runs sorted in memory, written one after another to an
 * unlinked temporary file, merged through a heap of the runs' next items. A file that cannot
 * be written (no temporary folder, a full disk) leaves the items in memory: the sort is the
 * same, only its memory is no longer bounded.
 */
#include "spill_sort.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/vec.h"

#define DEFAULT_MEM (32u << 20)
#define MERGE_MEM (16u << 20) /* read-ahead of every run together */
#define BLOCK_MAX (256u << 10)

void sc_spill_init(struct sc_spill_sort *s, size_t item_size,
		   int (*cmp)(const void *, const void *), size_t mem_bytes)
{
	memset(s, 0, sizeof(*s));
	s->size = item_size;
	s->cmp = cmp;
	s->limit = (mem_bytes ? mem_bytes : DEFAULT_MEM) / item_size;
	if (s->limit < 1024)
		s->limit = 1024;
	s->fd = -1;
}

int sc_spill_tmpfile(void)
{
	const char *dir = getenv("TMPDIR");
	char *path = sc_xasprintf("%s/syscope-sort-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(path);

	if (fd >= 0)
		unlink(path); /* gone with the descriptor, whatever happens to us */
	free(path);
	return fd;
}

bool sc_spill_write(int fd, const char *p, size_t len, uint64_t off)
{
	while (len) {
		ssize_t w = pwrite(fd, p, len, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w, len -= (size_t)w, off += (uint64_t)w;
	}
	return true;
}

/* Sort the buffer and write it as the next run; false (nothing written) when it cannot be. */
static bool spill(struct sc_spill_sort *s)
{
	struct sc_spill_run *run;

	if (s->fd < 0 && (s->fd = sc_spill_tmpfile()) < 0)
		return false;
	qsort(s->buf, s->n, s->size, s->cmp);
	if (!sc_spill_write(s->fd, s->buf, s->n * s->size, s->file_items * s->size))
		return false;
	s->runs = sc_xrealloc(s->runs, (s->nruns + 1) * sizeof(*s->runs));
	run = &s->runs[s->nruns++];
	memset(run, 0, sizeof(*run));
	run->off = s->file_items * s->size;
	run->left = s->n;
	s->file_items += s->n;
	s->n = 0;
	return true;
}

void *sc_spill_push(struct sc_spill_sort *s)
{
	char *slot;

	if (s->n >= s->limit && !s->in_memory && !spill(s)) {
		s->in_memory = true;
		pr_warn("no temporary file for sorting (%s); sorting in memory",
			errno ? strerror(errno) : "write failed");
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;

		if (cap > s->limit && !s->in_memory)
			cap = s->limit > s->n ? s->limit : s->n + 1;
		s->buf = sc_xrealloc(s->buf, cap * s->size);
		s->cap = cap;
	}
	slot = s->buf + s->n++ * s->size;
	memset(slot, 0, s->size);
	s->count++;
	return slot;
}

static const void *head(const struct sc_spill_sort *s, size_t run)
{
	const struct sc_spill_run *r = &s->runs[run];

	return r->buf + r->pos * s->size;
}

static bool heap_less(const struct sc_spill_sort *s, size_t a, size_t b)
{
	return s->cmp(head(s, s->heap[a]), head(s, s->heap[b])) < 0;
}

static void sift_down(struct sc_spill_sort *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i, t;

		if (l < s->nheap && heap_less(s, l, m))
			m = l;
		if (r < s->nheap && heap_less(s, r, m))
			m = r;
		if (m == i)
			return;
		t = s->heap[i], s->heap[i] = s->heap[m], s->heap[m] = t;
		i = m;
	}
}

/* Read the next block of run `k`; false when it has none left (or cannot be read). */
static bool refill(struct sc_spill_sort *s, size_t k, size_t block_items)
{
	struct sc_spill_run *r = &s->runs[k];
	size_t want = r->left < block_items ? (size_t)r->left : block_items;
	size_t len = want * s->size, got = 0;

	while (got < len) {
		ssize_t n = pread(s->fd, r->buf + got, len - got, (off_t)(r->off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	want = got / s->size;
	if (!want) {
		if (r->left)
			pr_warn("sorting: a temporary file could not be read back (%s)",
				strerror(errno));
		r->left = 0;
		return false;
	}
	r->off += want * s->size;
	r->left -= want;
	r->pos = 0;
	r->n = want;
	return true;
}

static size_t block_items(const struct sc_spill_sort *s)
{
	size_t bytes = s->nruns ? MERGE_MEM / s->nruns : BLOCK_MAX;

	if (bytes > BLOCK_MAX)
		bytes = BLOCK_MAX;
	return bytes / s->size ? bytes / s->size : 1;
}

void sc_spill_finish(struct sc_spill_sort *s)
{
	size_t bi;

	if (!s->nruns) {
		if (s->n)
			qsort(s->buf, s->n, s->size, s->cmp);
		s->next = 0;
		return;
	}
	/* The last part: a run on file, or merged from memory when the file failed. */
	if (s->n && (s->in_memory || !spill(s))) {
		s->runs = sc_xrealloc(s->runs, (s->nruns + 1) * sizeof(*s->runs));
		memset(&s->runs[s->nruns], 0, sizeof(*s->runs));
		qsort(s->buf, s->n, s->size, s->cmp);
		s->runs[s->nruns].buf = s->buf;
		s->runs[s->nruns].n = s->n;
		s->nruns++;
		s->buf = NULL;
	}
	free(s->buf);
	s->buf = sc_xcalloc(1, s->size); /* the item handed out */
	s->n = s->cap = 0;
	bi = block_items(s);
	s->heap = sc_xcalloc(s->nruns, sizeof(*s->heap));
	for (size_t k = 0; k < s->nruns; k++) {
		if (s->runs[k].buf) { /* the in-memory last run */
			s->heap[s->nheap++] = k;
			continue;
		}
		s->runs[k].buf = sc_xcalloc(bi, s->size);
		if (refill(s, k, bi))
			s->heap[s->nheap++] = k;
	}
	for (size_t i = s->nheap; i-- > 0;)
		sift_down(s, i);
}

const void *sc_spill_next(struct sc_spill_sort *s)
{
	struct sc_spill_run *r;

	if (!s->nruns)
		return s->next < s->n ? s->buf + s->next++ * s->size : NULL;
	if (!s->nheap)
		return NULL;
	r = &s->runs[s->heap[0]];
	memcpy(s->buf, r->buf + r->pos * s->size, s->size);
	if (++r->pos == r->n && !refill(s, s->heap[0], block_items(s)))
		s->heap[0] = s->heap[--s->nheap];
	if (s->nheap)
		sift_down(s, 0);
	return s->buf;
}

void sc_spill_reset(struct sc_spill_sort *s)
{
	size_t size = s->size, limit = s->limit;
	int (*cmp)(const void *, const void *) = s->cmp;

	sc_spill_free(s);
	sc_spill_init(s, size, cmp, limit * size);
}

void sc_spill_free(struct sc_spill_sort *s)
{
	for (size_t k = 0; k < s->nruns; k++)
		free(s->runs[k].buf);
	free(s->runs);
	free(s->heap);
	free(s->buf);
	if (s->fd >= 0)
		close(s->fd);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}
