/* SPDX-License-Identifier: MIT */
/* A sink written by a child process beside the other outputs (sink_apart.c). */
#ifndef SYSCOPE_SINKS_SINK_APART_H
#define SYSCOPE_SINKS_SINK_APART_H

#include <stdbool.h>
#include <sys/types.h>

#include "sink.h"

struct sc_sink_apart {
	pid_t pid; /* the child, or -1 */
	int fd;	   /* what it sends: the files it wrote, its errors */
	const struct sc_sink *sink;
};

/* Fork a child that writes `sink` from out->model (its settings, folder, from_database and
 * merged_trace), and set out->apart so that sc_sinks_write_all leaves it out (and waits). Call
 * with no other thread running and before the region profiles are built (the child builds
 * the sample profiles itself). False when no child could be made: write it here then. */
bool sc_sink_apart_start(struct sc_sink_apart *a, const struct sc_sink *sink,
			 struct sc_output *out);
/* Wait for the child; its files go first in out->written, its errors into out->errors.
 * Returns 1 when it failed (an error then names why), else 0. */
int sc_sink_apart_finish(struct sc_sink_apart *a, struct sc_output *out);

#endif /* SYSCOPE_SINKS_SINK_APART_H */
