/* SPDX-License-Identifier: MIT */
/*
 * Reports of the read-only verbs (summary, avail): titled tables of text cells, printed as
 * terminal tables, CSV, Markdown or JSON (numeric cells as numbers).
 */
#ifndef SYSCOPE_CMD_REPORT_H
#define SYSCOPE_CMD_REPORT_H

#include <jansson.h>
#include <stdbool.h>

#include "../common/vec.h"

enum sc_report_format {
	SC_REPORT_TABLE,
	SC_REPORT_CSV,
	SC_REPORT_JSON,
	SC_REPORT_MD,
};

struct sc_report {
	VEC(char *) cols;
	VEC(char *) cells; /* row-major */
	VEC(int) numeric;  /* per cell: print as a number */
};

/* "table", "csv", "json", "md" (or "markdown"). Returns 0 or -1. */
int sc_report_format_parse(const char *text, enum sc_report_format *out);
void sc_report_column(struct sc_report *r, const char *name);
void sc_report_cell(struct sc_report *r, const char *text, bool numeric);
void sc_report_free(struct sc_report *r);
/* Print as a table, CSV (a "# key" line, then rows) or Markdown ("### title"). Tables cut
 * cells wider than `max_width`; empty reports print nothing. */
void sc_report_print(const struct sc_report *r, enum sc_report_format fmt, const char *key,
		     const char *title, unsigned max_width);
/* The rows as a JSON array of objects. */
json_t *sc_report_json(const struct sc_report *r);

#endif /* SYSCOPE_CMD_REPORT_H */
