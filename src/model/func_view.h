/* SPDX-License-Identifier: MIT */
/*
 * Which instrumented functions the outputs show, and how they are labelled: the reader's
 * view of a model (--function-include, --function-exclude, --function-label), kept apart
 * from the model itself, which holds what was recorded whatever is shown.
 */
#ifndef SYSCOPE_MODEL_FUNC_VIEW_H
#define SYSCOPE_MODEL_FUNC_VIEW_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sc_func_view {
	bool include, exclude;
	regex_t inc, exc;
	bool label_file, label_line; /* names get [file:line] */
	uint64_t matched, seen;	     /* functions shown, and asked about */
};

/* Compile the filters (extended regexes; NULL or "" for none). Returns 0, or -1 with a
 * message naming the bad regex and its flag in `err` (nothing left to free then). */
int sc_func_view_init(struct sc_func_view *v, const char *include, const char *exclude, char *err,
		      size_t errlen);
void sc_func_view_free(struct sc_func_view *v);
/* Whether the outputs show the instrumented function `name` (counts what it is asked). A
 * NULL view shows everything. */
bool sc_func_view_shown(struct sc_func_view *v, const char *name);

#endif /* SYSCOPE_MODEL_FUNC_VIEW_H */
