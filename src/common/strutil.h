/* SPDX-License-Identifier: MIT */
#ifndef SYSCOPE_COMMON_STRUTIL_H
#define SYSCOPE_COMMON_STRUTIL_H

#include <stdbool.h>
#include <stddef.h>

/* Levenshtein distance between two strings (case-sensitive). */
size_t sc_edit_distance(const char *a, const char *b);

/*
 * The candidate closest to `word`, or NULL when none is close enough to be a likely typo
 * (distance above a third of the word's length, at least 2 allowed). Also matches a
 * candidate that `word` is a prefix of.
 */
const char *sc_nearest(const char *word, const char *const *candidates, size_t n);

/* `word` is one of the words of `list`, words being separated by any of `seps`. */
bool sc_has_word(const char *list, const char *word, const char *seps);

/* `s` ends with `suffix`. */
bool sc_ends_with(const char *s, const char *suffix);
/* The file name part of `path` (after its last '/'; all of it when there is none). */
const char *sc_base_name(const char *path);

#endif
