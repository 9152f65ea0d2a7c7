/* SPDX-License-Identifier: MIT */
#include "strutil.h"

#include <stdlib.h>
#include <string.h>

size_t sc_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t *row = calloc(lb + 1, sizeof(*row));
	size_t d;

	if (!row)
		return (size_t)-1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	d = row[lb];
	free(row);
	return d;
}

const char *sc_nearest(const char *word, const char *const *candidates, size_t n)
{
	size_t best = (size_t)-1, limit = strlen(word) / 3;
	const char *pick = NULL;

	if (limit < 2)
		limit = 2;
	for (size_t i = 0; i < n; i++) {
		size_t d;

		if (!candidates[i])
			continue;
		d = sc_edit_distance(word, candidates[i]);
		if (!strncmp(candidates[i], word, strlen(word)) && strlen(word) >= 3)
			d = 1; /* an unambiguous abbreviation is as good as one typo */
		if (d < best) {
			best = d;
			pick = candidates[i];
		}
	}
	return best <= limit ? pick : NULL;
}

bool sc_has_word(const char *list, const char *word, const char *seps)
{
	size_t n = strlen(word);

	if (!n)
		return false;
	for (const char *p = strstr(list, word); p; p = strstr(p + 1, word))
		if ((p == list || strchr(seps, p[-1])) && (!p[n] || strchr(seps, p[n])))
			return true;
	return false;
}

bool sc_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

const char *sc_base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}
