/* SPDX-License-Identifier: MIT */
/*
 * What `syscope instrument` tells the user about its choice: the lists of --print-available,
 * --print-instrumented, --print-excluded, and --dump-info's file (JSON or text), with each
 * function's address, size, instruction count, loops and the reason it was left out.
 */
#include <errno.h>
#include <string.h>

#include "../sinks/json_out.h"
#include "instrument.h"

static const char *const state_names[] = { "instrumented", "excluded", "unpatchable" };

void sc_print_functions(FILE *f, const struct sc_module_info *mod, enum sc_fn_state state,
			bool with_reason)
{
	for (size_t i = 0; i < mod->fns.n; i++) {
		const struct sc_fn *fn = &mod->fns.v[i];

		if (fn->state != state)
			continue;
		fprintf(f, "  %#10llx %6u B %5u insns  %s", (unsigned long long)fn->addr, fn->size,
			fn->ninsn, fn->pretty);
		if (with_reason && fn->reason)
			fprintf(f, "  [%s]", fn->reason);
		fputc('\n', f);
	}
}

/* --dump-info's JSON, written as it goes in the layout of jansson's JSON_INDENT(1) (one
 * member a line, indented by depth): a jansson tree of a library's thousands of functions
 * was half of the launcher's own time. */
static void line(FILE *f, int depth, const char *key)
{
	fprintf(f, "\n%*s", depth, "");
	if (key)
		fprintf(f, "\"%s\": ", key);
}

static void put_loops(FILE *f, const struct sc_fn *fn)
{
	line(f, 5, "loop_regions");
	putc('[', f);
	for (size_t k = 0; k < fn->loops.n; k++) {
		const struct sc_loop *l = &fn->loops.v[k];

		fputs(k ? "," : "", f);
		line(f, 6, NULL);
		putc('{', f);
		line(f, 7, "head");
		sc_json_put_int(f, (long long)l->head);
		putc(',', f);
		line(f, 7, "end");
		sc_json_put_int(f, (long long)l->end);
		putc(',', f);
		line(f, 7, "recorded");
		fputs(l->reason ? "false" : "true", f);
		if (l->reason) {
			putc(',', f);
			line(f, 7, "reason");
			sc_json_put_str(f, l->reason);
		}
		line(f, 6, NULL);
		putc('}', f);
	}
	line(f, 5, NULL);
	putc(']', f);
}

static void put_function(FILE *f, const struct sc_fn *fn)
{
	const struct {
		const char *key;
		long long v;
	} ints[] = { { "address", (long long)fn->addr },
		     { "size", fn->size },
		     { "instructions", fn->ninsn },
		     { "loops", fn->nloops } };

	line(f, 4, NULL);
	putc('{', f);
	line(f, 5, "name");
	sc_json_put_str(f, fn->pretty);
	putc(',', f);
	line(f, 5, "symbol");
	sc_json_put_str(f, fn->name);
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		putc(',', f);
		line(f, 5, ints[i].key);
		sc_json_put_int(f, ints[i].v);
	}
	putc(',', f);
	line(f, 5, "state");
	sc_json_put_str(f, state_names[fn->state]);
	if (fn->reason) {
		putc(',', f);
		line(f, 5, "reason");
		sc_json_put_str(f, fn->reason);
	}
	if (fn->state == SC_FN_INSTRUMENTED) {
		putc(',', f);
		line(f, 5, "patch_offset");
		sc_json_put_int(f, fn->plan.patch_off);
		putc(',', f);
		line(f, 5, "patch_bytes");
		sc_json_put_int(f, fn->plan.patch_len);
	}
	if (fn->loops.n) {
		putc(',', f);
		put_loops(f, fn);
	}
	line(f, 4, NULL);
	putc('}', f);
}

static void put_module(FILE *f, const struct sc_module_info *mod)
{
	const char *const flags[] = { "main", "symtab" };
	const bool flag_values[] = { mod->is_main, mod->has_symtab };
	size_t counts[3];

	sc_module_counts(mod, counts);
	line(f, 2, NULL);
	putc('{', f);
	line(f, 3, "path");
	sc_json_put_str(f, mod->path);
	for (int i = 0; i < 2; i++) {
		putc(',', f);
		line(f, 3, flags[i]);
		fputs(flag_values[i] ? "true" : "false", f);
	}
	for (int s = 0; s < 3; s++) {
		putc(',', f);
		line(f, 3, state_names[s]);
		sc_json_put_int(f, (long long)counts[s]);
	}
	putc(',', f);
	line(f, 3, "analysis_ms");
	sc_json_put_real_precision(f, mod->decode_ns / 1e6, 17);
	putc(',', f);
	line(f, 3, "functions");
	putc('[', f);
	for (size_t i = 0; i < mod->fns.n; i++) {
		fputs(i ? "," : "", f);
		put_function(f, &mod->fns.v[i]);
	}
	if (mod->fns.n)
		line(f, 3, NULL);
	putc(']', f);
	line(f, 2, NULL);
	putc('}', f);
}

int sc_dump_info(const char *path, const struct sc_module_info *mods, size_t nmods, bool json)
{
	FILE *f = fopen(path, "we");
	int rc = 0;

	if (!f)
		return -1;
	if (json) {
		fputs("{", f);
		line(f, 1, "modules");
		putc('[', f);
		for (size_t m = 0; m < nmods; m++) {
			fputs(m ? "," : "", f);
			put_module(f, &mods[m]);
		}
		if (nmods)
			line(f, 1, NULL);
		fputs("]\n}\n", f);
		rc = ferror(f);
	} else {
		for (size_t m = 0; m < nmods; m++) {
			size_t counts[3];

			sc_module_counts(&mods[m], counts);
			fprintf(f, "%s: %zu instrumented, %zu excluded, %zu unpatchable\n",
				mods[m].path, counts[0], counts[1], counts[2]);
			for (int s = 0; s < 3; s++) {
				fprintf(f, "%s:\n", state_names[s]);
				sc_print_functions(f, &mods[m], (enum sc_fn_state)s, true);
			}
		}
	}
	if (fclose(f))
		rc = -1;
	return rc ? -1 : 0;
}
