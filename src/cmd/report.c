/* SPDX-License-Identifier: MIT */
/* Reports: see report.h. */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sinks/table.h"

int sc_report_format_parse(const char *text, enum sc_report_format *out)
{
	static const struct {
		const char *name;
		enum sc_report_format fmt;
	} names[] = { { "table", SC_REPORT_TABLE },
		      { "csv", SC_REPORT_CSV },
		      { "json", SC_REPORT_JSON },
		      { "md", SC_REPORT_MD },
		      { "markdown", SC_REPORT_MD } };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(text, names[i].name)) {
			*out = names[i].fmt;
			return 0;
		}
	return -1;
}

void sc_report_column(struct sc_report *r, const char *name)
{
	*VEC_PUSH(&r->cols) = sc_xstrdup(name);
}

void sc_report_cell(struct sc_report *r, const char *text, bool numeric)
{
	*VEC_PUSH(&r->cells) = sc_xstrdup(text ? text : "");
	*VEC_PUSH(&r->numeric) = numeric;
}

void sc_report_free(struct sc_report *r)
{
	for (size_t i = 0; i < r->cols.n; i++)
		free(r->cols.v[i]);
	for (size_t i = 0; i < r->cells.n; i++)
		free(r->cells.v[i]);
	VEC_FREE(&r->cols);
	VEC_FREE(&r->cells);
	VEC_FREE(&r->numeric);
}

static void print_table(const struct sc_report *r, const char *title, unsigned max_width)
{
	struct sc_table t;
	size_t ncol = r->cols.n, nrow = ncol ? r->cells.n / ncol : 0;

	memset(&t, 0, sizeof(t));
	t.ncols = (unsigned)(ncol < SC_TABLE_MAX_COLS ? ncol : SC_TABLE_MAX_COLS);
	t.max_width = max_width;
	for (unsigned c = 0; c < t.ncols; c++) {
		t.headers[c] = r->cols.v[c];
		t.right[c] = nrow && r->numeric.v[c];
	}
	for (size_t i = 0; i < nrow * ncol; i++)
		if (i % ncol < t.ncols)
			*VEC_PUSH(&t.cells) = sc_xstrdup(r->cells.v[i]);
	sc_table_print(&t, stdout, title);
	sc_table_free(&t);
	putchar('\n');
}

static void csv_cell(const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

static void print_csv(const struct sc_report *r, const char *key)
{
	size_t ncol = r->cols.n;

	printf("# %s\n", key);
	for (size_t c = 0; c < ncol; c++) {
		if (c)
			putchar(',');
		csv_cell(r->cols.v[c]);
	}
	putchar('\n');
	for (size_t i = 0; i < r->cells.n; i++) {
		csv_cell(r->cells.v[i]);
		putchar(i % ncol == ncol - 1 ? '\n' : ',');
	}
	putchar('\n');
}

/* A Markdown cell: '|' escaped, newlines as spaces. */
static void md_cell(const char *s)
{
	putchar(' ');
	for (; *s; s++) {
		if (*s == '|')
			putchar('\\');
		putchar(*s == '\n' ? ' ' : *s);
	}
	fputs(" |", stdout);
}

static void print_md(const struct sc_report *r, const char *title)
{
	size_t ncol = r->cols.n;

	printf("### %s\n\n|", title);
	for (size_t c = 0; c < ncol; c++)
		md_cell(r->cols.v[c]);
	printf("\n|");
	for (size_t c = 0; c < ncol; c++)
		printf("---|");
	putchar('\n');
	for (size_t i = 0; i < r->cells.n; i++) {
		if (i % ncol == 0)
			putchar('|');
		md_cell(r->cells.v[i]);
		if (i % ncol == ncol - 1)
			putchar('\n');
	}
	putchar('\n');
}

json_t *sc_report_json(const struct sc_report *r)
{
	json_t *arr = json_array();
	size_t ncol = r->cols.n;

	for (size_t i = 0; ncol && i < r->cells.n; i += ncol) {
		json_t *row = json_object();

		for (size_t c = 0; c < ncol; c++) {
			const char *v = r->cells.v[i + c];
			json_t *val;

			if (r->numeric.v[i + c])
				val = strchr(v, '.') || strchr(v, 'e')
					      ? json_real(strtod(v, NULL))
					      : json_integer(strtoll(v, NULL, 10));
			else
				val = json_string(v);
			json_object_set_new(row, r->cols.v[c], val);
		}
		json_array_append_new(arr, row);
	}
	return arr;
}

void sc_report_print(const struct sc_report *r, enum sc_report_format fmt, const char *key,
		     const char *title, unsigned max_width)
{
	json_t *doc;

	if (!r->cells.n)
		return;
	switch (fmt) {
	case SC_REPORT_CSV:
		print_csv(r, key);
		break;
	case SC_REPORT_MD:
		print_md(r, title);
		break;
	case SC_REPORT_JSON:
		doc = json_pack("{s:o}", key, sc_report_json(r));
		json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(9));
		putchar('\n');
		json_decref(doc);
		break;
	default:
		print_table(r, title, max_width);
	}
}
