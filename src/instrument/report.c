/* SPDX-License-Identifier: MIT */
/*
 * What `syscope instrument` tells the user about its choice: the lists of --print-available,
 * --print-instrumented, --print-excluded, and --dump-info's file (JSON or text), with each
 * function's address, size, instruction count, loops and the reason it was left out.
 */
#include <errno.h>
#include <jansson.h>
#include <string.h>

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

static json_t *module_json(const struct sc_module_info *mod)
{
	json_t *fns = json_array();
	size_t counts[3];

	sc_module_counts(mod, counts);
	for (size_t i = 0; i < mod->fns.n; i++) {
		const struct sc_fn *fn = &mod->fns.v[i];
		json_t *o = json_pack("{s:s, s:s, s:I, s:i, s:i, s:i, s:s}", "name", fn->pretty,
				      "symbol", fn->name, "address", (json_int_t)fn->addr, "size",
				      (int)fn->size, "instructions", (int)fn->ninsn, "loops",
				      (int)fn->nloops, "state", state_names[fn->state]);

		if (fn->reason)
			json_object_set_new(o, "reason", json_string(fn->reason));
		if (fn->state == SC_FN_INSTRUMENTED) {
			json_object_set_new(o, "patch_offset", json_integer(fn->plan.patch_off));
			json_object_set_new(o, "patch_bytes", json_integer(fn->plan.patch_len));
		}
		if (fn->loops.n) {
			json_t *loops = json_array();

			for (size_t k = 0; k < fn->loops.n; k++) {
				const struct sc_loop *l = &fn->loops.v[k];
				json_t *lo = json_pack("{s:I, s:I, s:b}", "head",
						       (json_int_t)l->head, "end",
						       (json_int_t)l->end, "recorded", !l->reason);

				if (l->reason)
					json_object_set_new(lo, "reason", json_string(l->reason));
				json_array_append_new(loops, lo);
			}
			json_object_set_new(o, "loop_regions", loops);
		}
		json_array_append_new(fns, o);
	}
	return json_pack("{s:s, s:b, s:b, s:I, s:I, s:I, s:f, s:o}", "path", mod->path, "main",
			 mod->is_main, "symtab", mod->has_symtab, "instrumented",
			 (json_int_t)counts[SC_FN_INSTRUMENTED], "excluded",
			 (json_int_t)counts[SC_FN_EXCLUDED], "unpatchable",
			 (json_int_t)counts[SC_FN_UNPATCHABLE], "analysis_ms", mod->decode_ns / 1e6,
			 "functions", fns);
}

int sc_dump_info(const char *path, const struct sc_module_info *mods, size_t nmods, bool json)
{
	FILE *f = fopen(path, "we");
	int rc = 0;

	if (!f)
		return -1;
	if (json) {
		json_t *arr = json_array(), *doc;

		for (size_t m = 0; m < nmods; m++)
			json_array_append_new(arr, module_json(&mods[m]));
		doc = json_pack("{s:o}", "modules", arr);
		rc = json_dumpf(doc, f, JSON_INDENT(1));
		json_decref(doc);
		fputc('\n', f);
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
