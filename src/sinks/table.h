/* SPDX-License-Identifier: MIT */
/* Boxed text tables in the style of rocprof-sys's wall_clock.txt, for text outputs. */
#ifndef SYSCOPE_SINKS_TABLE_H
#define SYSCOPE_SINKS_TABLE_H

#include <stdio.h>

#include "../common/vec.h"

#define SC_TABLE_MAX_COLS 16

struct sc_table {
	unsigned ncols;
	const char *headers[SC_TABLE_MAX_COLS];
	char right[SC_TABLE_MAX_COLS]; /* right-aligned column */
	VEC(char *) cells;	       /* row-major, ncols per row */
	unsigned max_width;	       /* cells longer than this are cut with "..." */
};

void sc_table_init(struct sc_table *t, unsigned max_width, ...); /* headers; "-X" = right */
void sc_table_row(struct sc_table *t, ...);			 /* ncols strings */
/* One more column (the header is kept, not copied: "-X" = right), and one cell of the row
 * being filled, for tables whose columns are known only at run time. */
void sc_table_column(struct sc_table *t, const char *header);
void sc_table_cell(struct sc_table *t, const char *s);
__attribute__((format(printf, 2, 3))) char *sc_table_fmt(char *buf, const char *fmt, ...);
void sc_table_print(const struct sc_table *t, FILE *f, const char *title);
void sc_table_free(struct sc_table *t);

#endif /* SYSCOPE_SINKS_TABLE_H */
