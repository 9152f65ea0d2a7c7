/* SPDX-License-Identifier: MIT */
#include "progress.h"

#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static struct {
	bool on, drawn;
	const char *what;
	uint64_t total, done;
	double start, last;
} pg;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sc_progress_begin(const char *what, uint64_t total)
{
	pg.on = isatty(STDERR_FILENO); /* a total of 0 may grow (sc_progress_more) */
	pg.drawn = false;
	pg.what = what;
	pg.total = total;
	pg.done = 0;
	pg.start = pg.last = now();
}

void sc_progress_more(uint64_t n)
{
	pg.total += n;
}

void sc_progress_add(uint64_t n)
{
	double t;
	unsigned pct, width = 30, filled;
	char bar[32];

	if (!pg.on)
		return;
	pg.done += n;
	t = now();
	if (!pg.total || t - pg.start < 1.0 || t - pg.last < 0.1)
		return;
	pg.last = t;
	pct = pg.done >= pg.total ? 99 : (unsigned)(pg.done * 100 / pg.total);
	if (pct > 99)
		pct = 99;
	filled = pct * width / 100;
	for (unsigned i = 0; i < width; i++)
		bar[i] = i < filled ? '#' : '.';
	bar[width] = '\0';
	fprintf(stderr, "\rsyscope: %s [%s] %3u%% %.0fs", pg.what, bar, pct, t - pg.start);
	pg.drawn = true;
}

void sc_progress_end(void)
{
	if (pg.drawn)
		fprintf(stderr, "\r\033[K");
	pg.on = pg.drawn = false;
}
