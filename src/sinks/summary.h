/* SPDX-License-Identifier: MIT */
#ifndef SYSCOPE_SINKS_SUMMARY_H
#define SYSCOPE_SINKS_SUMMARY_H

#include <stdio.h>

#include "sink.h"

/* Print the end-of-run summary of a converted session, listing `top` functions per metric. */
void sc_summary_print(FILE *f, struct sc_output *out, unsigned top);
/* Its Python lines (summary_python.c): interpreters, GIL waits, splice misses, the GPU
 * time each Python line launched (its `top` lines). */
void sc_summary_python(FILE *f, struct sc_output *out, unsigned top);
/* Its NCCL line (summary_nccl.c): calls and bytes per collective kind, when NCCL was traced. */
void sc_summary_nccl(FILE *f, struct sc_output *out);

#endif
