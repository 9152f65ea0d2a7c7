/* SPDX-License-Identifier: MIT */
/*
 * Growable arrays for the CLI side (reader, model, sinks). Not for the runtime: growth
 * allocates. Allocation failure exits through sc_xrealloc (CLI only).
 *
 *   struct { struct sc_thread *v; size_t n, cap; } threads = { 0 };
 *   *VEC_PUSH(&threads) = t;
 */
#ifndef SYSCOPE_COMMON_VEC_H
#define SYSCOPE_COMMON_VEC_H

#include <stddef.h>
#include <stdlib.h> /* free and qsort, which the macros below expand to */

void *sc_xrealloc(void *p, size_t size);
void *sc_xcalloc(size_t n, size_t size);
char *sc_xstrdup(const char *s);
char *sc_xstrndup(const char *s, size_t n);
__attribute__((format(printf, 1, 2))) char *sc_xasprintf(const char *fmt, ...);
/* `list` (freed) of space-separated words with `word` appended unless it is there already. */
char *sc_xwith_word(char *list, const char *word);

#define VEC(type)              \
	struct {               \
		type *v;       \
		size_t n, cap; \
	}

#define VEC_RESERVE(vec, want)                                                    \
	do {                                                                      \
		if ((want) > (vec)->cap) {                                        \
			size_t c_ = (vec)->cap ? (vec)->cap * 2 : 8;              \
			while (c_ < (want))                                       \
				c_ *= 2;                                          \
			(vec)->v = sc_xrealloc((vec)->v, c_ * sizeof(*(vec)->v)); \
			(vec)->cap = c_;                                          \
		}                                                                 \
	} while (0)

/* Append one zeroed element and return its address. */
#define VEC_PUSH(vec)                                                        \
	({                                                                   \
		VEC_RESERVE(vec, (vec)->n + 1);                              \
		__builtin_memset(&(vec)->v[(vec)->n], 0, sizeof(*(vec)->v)); \
		&(vec)->v[(vec)->n++];                                       \
	})

/* qsort a VEC: an empty one's array is NULL, which qsort must not get. */
#define VEC_SORT(vec, cmp)                                                 \
	do {                                                               \
		if ((vec)->n)                                              \
			qsort((vec)->v, (vec)->n, sizeof(*(vec)->v), cmp); \
	} while (0)

#define VEC_FREE(vec)                      \
	do {                               \
		free((vec)->v);            \
		(vec)->v = NULL;           \
		(vec)->n = (vec)->cap = 0; \
	} while (0)

#endif /* SYSCOPE_COMMON_VEC_H */
