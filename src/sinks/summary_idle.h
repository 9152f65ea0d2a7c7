/* SPDX-License-Identifier: MIT */
#ifndef SYSCOPE_SINKS_SUMMARY_IDLE_H
#define SYSCOPE_SINKS_SUMMARY_IDLE_H

#include <stdio.h>

#include "../model/gpu_idle.h"

struct sc_output;

/* Why each GPU was idle: a headline per GPU (prefixed "syscope: " when `brief`, for the
 * end-of-run summary), else also each cause with its names and top stacks. */
void sc_idle_print(FILE *f, struct sc_profile_set *set, const struct sc_idle_report *r, bool brief);
/* The same as JSON, with `top` stacks per cause, written to `f` as it goes: the bytes of
 * jansson's JSON_INDENT(1) | JSON_REAL_PRECISION(9) dump, and a newline. */
void sc_idle_write(FILE *f, struct sc_profile_set *set, const struct sc_idle_report *r,
		   unsigned top);

/* The analysis of an output's model, made at the first call (NULL without GPU work). */
const struct sc_idle_report *sc_output_idle(struct sc_output *out);
/* The end-of-run summary's lines: each GPU's headline, when any GPU work was recorded. */
void sc_summary_idle(FILE *f, struct sc_output *out);
/* The JSON profile's gpu-idle.json (sc_idle_write, `top` stacks per cause), when any GPU
 * work was recorded. Returns 0 or -errno. */
int sc_idle_write_json(struct sc_output *out, unsigned top);

#endif
