/* SPDX-License-Identifier: MIT */
/*
 * Sorting more fixed-size items than memory should hold (one per region of a session, say):
 * items gather in a buffer of bounded size; a full buffer is sorted and written to a
 * temporary file as a run, and reading merges the runs. Memory is the buffer plus a block
 * per run, whatever the number of items. The order is the comparator's: give it a
 * tie-break (an arrival number) where equal items must keep their order.
 *
 *   sc_spill_init(&s, sizeof(struct x), by_key, 0);
 *   *(struct x *)sc_spill_push(&s) = item;  ...
 *   sc_spill_finish(&s);
 *   for (const struct x *p; (p = sc_spill_next(&s));) ...
 *   sc_spill_free(&s);
 */
#ifndef SYSCOPE_MODEL_SPILL_SORT_H
#define SYSCOPE_MODEL_SPILL_SORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sc_spill_run {
	uint64_t off, left; /* in the file: where its next unread item is, how many remain */
	char *buf;	    /* items read ahead */
	size_t pos, n;	    /* next item in buf, items in buf */
};

struct sc_spill_sort {
	size_t size; /* of an item */
	int (*cmp)(const void *, const void *);
	size_t limit; /* items the buffer may hold before a run is written */
	char *buf;
	size_t n, cap, next; /* items in buf, room, next to hand out (one run, in memory) */
	int fd;		     /* the runs' file, -1 until the first run */
	uint64_t file_items;
	struct sc_spill_run *runs;
	size_t nruns;
	size_t *heap; /* runs by their next item, while merging */
	size_t nheap;
	bool in_memory; /* no file could be written: everything stays in buf */
	uint64_t count; /* items pushed */
};

/* `mem_bytes`: the buffer's bound (0: the default, 32 MiB). */
void sc_spill_init(struct sc_spill_sort *s, size_t item_size,
		   int (*cmp)(const void *, const void *), size_t mem_bytes);
/* Room for one more item (zeroed), valid until the next push. */
void *sc_spill_push(struct sc_spill_sort *s);
/* No more pushes: sort what is buffered and get ready to read in order. */
void sc_spill_finish(struct sc_spill_sort *s);
/* The next item in order, valid until the next call, or NULL after the last. */
const void *sc_spill_next(struct sc_spill_sort *s);
/* Forget every item (the sorter can be pushed to again); sc_spill_free releases it all. */
void sc_spill_reset(struct sc_spill_sort *s);
void sc_spill_free(struct sc_spill_sort *s);

/* An unlinked file in $TMPDIR (or /tmp), -1 when none can be made; `len` bytes of `p` written
 * at `off` of it (false: not all). Shared with spill_table.c. */
int sc_spill_tmpfile(void);
bool sc_spill_write(int fd, const char *p, size_t len, uint64_t off);

#endif /* SYSCOPE_MODEL_SPILL_SORT_H */
