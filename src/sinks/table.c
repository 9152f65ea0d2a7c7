/* SPDX-License-Identifier: MIT */
#include "table.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void sc_table_init(struct sc_table *t, unsigned max_width, ...)
{
	va_list ap;
	const char *h;

	memset(t, 0, sizeof(*t));
	t->max_width = max_width;
	va_start(ap, max_width);
	while ((h = va_arg(ap, const char *)))
		sc_table_column(t, h);
	va_end(ap);
}

void sc_table_column(struct sc_table *t, const char *header)
{
	if (t->ncols < SC_TABLE_MAX_COLS) {
		t->right[t->ncols] = header[0] == '-';
		t->headers[t->ncols++] = header[0] == '-' ? header + 1 : header;
	}
}

void sc_table_cell(struct sc_table *t, const char *s)
{
	size_t len = strlen(s);

	if (t->max_width && len > t->max_width) {
		char *cut = sc_xstrndup(s, t->max_width);

		memcpy(cut + t->max_width - 3, "...", 3);
		*VEC_PUSH(&t->cells) = cut;
	} else {
		*VEC_PUSH(&t->cells) = sc_xstrdup(s);
	}
}

void sc_table_row(struct sc_table *t, ...)
{
	va_list ap;

	va_start(ap, t);
	for (unsigned c = 0; c < t->ncols; c++)
		sc_table_cell(t, va_arg(ap, const char *));
	va_end(ap);
}

char *sc_table_fmt(char *buf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, 64, fmt, ap);
	va_end(ap);
	return buf;
}

static void rule(FILE *f, const size_t *w, unsigned ncols, char edge)
{
	fputc(edge, f);
	for (unsigned c = 0; c < ncols; c++) {
		for (size_t i = 0; i < w[c] + 2; i++)
			fputc('-', f);
		fputc(c + 1 < ncols ? '|' : edge, f);
	}
	fputc('\n', f);
}

void sc_table_print(const struct sc_table *t, FILE *f, const char *title)
{
	size_t w[SC_TABLE_MAX_COLS] = { 0 }, total = 0, rows = t->ncols ? t->cells.n / t->ncols : 0;

	for (unsigned c = 0; c < t->ncols; c++) {
		w[c] = strlen(t->headers[c]);
		for (size_t r = 0; r < rows; r++) {
			size_t l = strlen(t->cells.v[r * t->ncols + c]);

			if (l > w[c])
				w[c] = l;
		}
		total += w[c] + 3;
	}
	total -= 1;
	rule(f, w, t->ncols, '|');
	if (title) {
		size_t tl = strlen(title), pad = tl < total ? (total - tl) / 2 : 0;

		fprintf(f, "|%*s%s%*s|\n", (int)pad, "", title,
			(int)(total > tl + pad ? total - tl - pad : 0), "");
		rule(f, w, t->ncols, '|');
	}
	fputc('|', f);
	for (unsigned c = 0; c < t->ncols; c++)
		fprintf(f, " %-*s |", (int)w[c], t->headers[c]);
	fputc('\n', f);
	rule(f, w, t->ncols, '|');
	for (size_t r = 0; r < rows; r++) {
		fputc('|', f);
		for (unsigned c = 0; c < t->ncols; c++)
			fprintf(f, t->right[c] ? " %*s |" : " %-*s |", (int)w[c],
				t->cells.v[r * t->ncols + c]);
		fputc('\n', f);
	}
	rule(f, w, t->ncols, '|');
}

void sc_table_free(struct sc_table *t)
{
	for (size_t i = 0; i < t->cells.n; i++)
		free(t->cells.v[i]);
	VEC_FREE(&t->cells);
}
