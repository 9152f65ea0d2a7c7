/* SPDX-License-Identifier: MIT */
/*
 * A progress line on stderr for long conversions: shown only when stderr is a terminal and
 * the work has run for a second, redrawn at most ten times a second, erased at the end. The
 * fraction shown stops at 99% until the end: work the total left out never reads as done.
 */
#ifndef SYSCOPE_COMMON_PROGRESS_H
#define SYSCOPE_COMMON_PROGRESS_H

#include <stdint.h>

/* Start counting towards `total` units (bytes read, say) of work named `what`. */
void sc_progress_begin(const char *what, uint64_t total);
/* `n` more units to do than the total said (work that only became known). */
void sc_progress_more(uint64_t n);
/* `n` more units done. Cheap when nothing is to be drawn. */
void sc_progress_add(uint64_t n);
/* Work done by a child process (a sink written beside the others, sink_apart.c): share
 * makes a counter both sides see, before the fork; the child calls helper and from then on
 * adds there, drawing nothing; unshare (the child waited for) folds it back. */
void sc_progress_share(void);
void sc_progress_helper(void);
void sc_progress_unshare(void);
/* Erase the line, if one was drawn. */
void sc_progress_end(void);

#endif /* SYSCOPE_COMMON_PROGRESS_H */
