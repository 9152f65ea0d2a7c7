/* SPDX-License-Identifier: MIT */
/* Allocation helpers of the CLI: they exit on failure, so callers need no error path. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "strutil.h"
#include "vec.h"

void *sc_xrealloc(void *p, size_t size)
{
	void *q = realloc(p, size ? size : 1);

	if (!q)
		sc_die(70, "out of memory (asked for %zu bytes)", size);
	return q;
}

void *sc_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		sc_die(70, "out of memory (asked for %zu x %zu bytes)", n, size);
	return p;
}

char *sc_xstrdup(const char *s)
{
	return sc_xstrndup(s, strlen(s));
}

char *sc_xstrndup(const char *s, size_t n)
{
	char *p = sc_xrealloc(NULL, n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *sc_xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		sc_die(70, "out of memory");
	va_end(ap);
	return s;
}

char *sc_xwith_word(char *list, const char *word)
{
	char *next;

	if (sc_has_word(list, word, " "))
		return list;
	next = sc_xasprintf("%s%s%s", list, *list ? " " : "", word);
	free(list);
	return next;
}
