/* SPDX-License-Identifier: MIT */
#include "progress.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static struct {
	bool on, drawn, helper;
	const char *what;
	uint64_t total, done;
	double start, last;
	_Atomic uint64_t *shared; /* work done by a child process (sc_progress_share) */
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

	uint64_t done;

	if (!pg.on)
		return;
	if (pg.helper) {
		atomic_fetch_add_explicit(pg.shared, n, memory_order_relaxed);
		return;
	}
	pg.done += n;
	t = now();
	if (!pg.total || t - pg.start < 1.0 || t - pg.last < 0.1)
		return;
	pg.last = t;
	done = pg.done + (pg.shared ? atomic_load_explicit(pg.shared, memory_order_relaxed) : 0);
	pct = done >= pg.total ? 99 : (unsigned)(done * 100 / pg.total);
	if (pct > 99)
		pct = 99;
	filled = pct * width / 100;
	for (unsigned i = 0; i < width; i++)
		bar[i] = i < filled ? '#' : '.';
	bar[width] = '\0';
	fprintf(stderr, "\rsyscope: %s [%s] %3u%% %.0fs", pg.what, bar, pct, t - pg.start);
	pg.drawn = true;
}

void sc_progress_share(void)
{
	void *p;

	if (!pg.on || pg.shared)
		return;
	p = mmap(NULL, sizeof(*pg.shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		 0);
	if (p != MAP_FAILED)
		pg.shared = p;
}

void sc_progress_helper(void)
{
	pg.drawn = false; /* the parent's line: erased by the parent */
	if (pg.shared)
		pg.helper = true;
	else
		pg.on = false; /* nothing to add to: the parent draws the line */
}

void sc_progress_unshare(void)
{
	if (!pg.shared)
		return;
	pg.done += atomic_load(pg.shared);
	munmap((void *)pg.shared, sizeof(*pg.shared));
	pg.shared = NULL;
}

void sc_progress_end(void)
{
	if (pg.drawn)
		fprintf(stderr, "\r\033[K");
	pg.on = pg.drawn = false;
}
