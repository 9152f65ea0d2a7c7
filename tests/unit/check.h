/* SPDX-License-Identifier: MIT */
/* A minimal assertion kit for the C unit tests: every failed check prints where and what, and
 * the test's exit status is the number of failures. */
#ifndef SYSCOPE_TEST_CHECK_H
#define SYSCOPE_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures, check_count;

#define CHECK(cond)                                                                        \
	do {                                                                               \
		check_count++;                                                             \
		if (!(cond)) {                                                             \
			check_failures++;                                                  \
			fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
		}                                                                          \
	} while (0)

#define CHECK_STR(a, b)                                                                           \
	do {                                                                                      \
		const char *a_ = (a), *b_ = (b);                                                  \
		check_count++;                                                                    \
		if (!a_ || !b_ || strcmp(a_, b_)) {                                               \
			check_failures++;                                                         \
			fprintf(stderr, "%s:%d: FAILED: %s == %s (\"%s\" vs \"%s\")\n", __FILE__, \
				__LINE__, #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)");        \
		}                                                                                 \
	} while (0)

#define CHECK_CONTAINS(hay, needle)                                                          \
	do {                                                                                 \
		const char *h_ = (hay), *n_ = (needle);                                      \
		check_count++;                                                               \
		if (!h_ || !strstr(h_, n_)) {                                                \
			check_failures++;                                                    \
			fprintf(stderr, "%s:%d: FAILED: \"%s\" contains \"%s\"\n", __FILE__, \
				__LINE__, h_ ? h_ : "(null)", n_);                           \
		}                                                                            \
	} while (0)

static inline int check_report(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
	return check_failures ? 1 : 0;
}

#endif
