/* SPDX-License-Identifier: MIT */
/*
 * Output formats. A sink is one descriptor in the table of output.c, chosen by its
 * --output-format token; it writes its files from the model and the profiles and never
 * reaches back into the reader. Files are written under a temporary name and renamed into
 * place, so an interrupted conversion never leaves a half-written output.
 */
#ifndef SYSCOPE_SINKS_SINK_H
#define SYSCOPE_SINKS_SINK_H

#include <jansson.h>
#include <stdio.h>

#include "../common/safe_output.h"
#include "../common/settings.h"
#include "../model/model.h"
#include "../model/profile.h"

struct sc_idle_report;
struct sc_sink_apart;

struct sc_output {
	struct sc_model *model;
	struct sc_profile_set *profiles;
	const struct sc_settings *settings;
	const char *dir;     /* where outputs go */
	VEC(char *) written; /* file names relative to dir, in the order written */
	VEC(char *) errors;
	bool from_database; /* the model was imported from rocpd: no metadata file is written */
	const char *merged_trace;    /* pftrace: every process in this one file (syscope merge) */
	struct sc_idle_report *idle; /* why the GPUs were idle, once asked (summary_idle.h) */
	struct sc_sink_apart *apart; /* a sink written by a child process (sink_apart.h) */
};

struct sc_sink {
	const char *token;
	const char *description;
	/* Write this format's files. Returns 0, or a negative errno after adding to errors. */
	int (*write)(struct sc_output *out);
	bool replays; /* reads every record again (sc_timeline_replay) */
};

extern const struct sc_sink sc_sink_text, sc_sink_json, sc_sink_folded, sc_sink_metadata,
	sc_sink_pftrace, sc_sink_rocpd, sc_sink_csv;

/* The sink for an --output-format token, or NULL. */
const struct sc_sink *sc_sink_find(const char *token);
/* Comma-separated list of tokens, for error messages and help. */
const char *sc_sink_tokens(void);
/* How many of the sinks named in OUTPUT_FORMAT read the records again. */
unsigned sc_sinks_replaying(const struct sc_settings *s);
/* Run every sink named in OUTPUT_FORMAT (but the one out->apart writes, whose child is
 * waited for here), then the metadata (of a recorded session). Returns the number of sinks
 * that failed. */
int sc_sinks_write_all(struct sc_output *out);
/* Free what the sinks left in `out`: the names of the files written, the errors. */
void sc_output_free(struct sc_output *out);

/* Call `fn` for every profile; returns 0, or -1 when any call failed (all are made). */
/* Threads the conversion may use (--convert-threads; 0: the cores online). */
unsigned sc_output_threads(const struct sc_output *out);
int sc_output_each_profile(struct sc_output *out,
			   int (*fn)(struct sc_output *out, const struct sc_profile *p));

/* An output file being written: FILE on a temporary name, renamed by sc_out_close. */
struct sc_outfile {
	FILE *f;
	char *path, *name;
	struct sc_out_file tmp;
};

int sc_out_open(struct sc_output *out, struct sc_outfile *of, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Finish: flush, rename into place and list the file; on error remove it. Returns 0 or -errno. */
int sc_out_close(struct sc_output *out, struct sc_outfile *of);

/* Strings for outputs: "<metric>-<pid>" style file stem of a profile. */
const char *sc_thread_label(const struct sc_process *p, const struct sc_thread *t, char *buf,
			    size_t n);

/* metadata.c: each counter track of a process with its values' count, min, mean (weighted by
 * how long each held), max and last; shared by the JSON profile. */
json_t *sc_counters_json(const struct sc_process *p);

/* coverage.c: coverage-<pid>.txt (`json` false) or .json of processes recorded in coverage
 * mode; nothing for the others. Returns 0 or -1. */
int sc_coverage_write(struct sc_output *out, bool json);
/* Functions patched in coverage mode over all processes, and how many ran; false if none. */
bool sc_coverage_totals(struct sc_model *m, size_t *instrumented, size_t *run);

#endif /* SYSCOPE_SINKS_SINK_H */
