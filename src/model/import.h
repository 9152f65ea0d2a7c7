/* SPDX-License-Identifier: MIT */
/*
 * Importing data that was not recorded as a raw session into the model, so that every sink
 * works on it: rocpd databases, syscope's own or another producer's (import_rocpd.c).
 *
 * An importer turns its input into the records a raw file would hold (format.h), made in
 * memory on each pass, and the model and the timeline replay read them as they read a raw
 * file. Call stacks come in symbolized (SC_STACK_SYMBOLIC).
 */
#ifndef SYSCOPE_MODEL_IMPORT_H
#define SYSCOPE_MODEL_IMPORT_H

#include "model.h"

/*
 * Build `m` from the rocpd databases `paths` (each may hold several processes). `s` is the
 * session problems are reported to; its `dir` is where outputs go. Returns 0, or -1 with
 * `err` naming the file and what is wrong with it (not SQLite, not rocpd, unreadable); `m`
 * is then left empty but valid for sc_model_free. The progress line (if begun) is told of
 * the rows of one pass (m->import_rows) times 1 + `later_passes`: the model's own pass and
 * those the caller will make (sinks replaying the records).
 */
int sc_model_import_rocpd(struct sc_model *m, struct sc_session *s, char *const *paths, size_t n,
			  bool inlines, unsigned later_passes, char *err, size_t errlen);

#endif /* SYSCOPE_MODEL_IMPORT_H */
