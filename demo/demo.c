/* SPDX-License-Identifier: MIT */
/*
 * The bundled demo application of `make demo`: renders a Mandelbrot image with worker
 * threads, sorts its pixels, and writes a checksum. Three phases with distinct hot
 * functions (escape_time, merge, checksum) show what a syscope profile looks like.
 *
 *   demo [threads] [size]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct band {
	int y0, y1, size;
	uint32_t *pixels;
};

__attribute__((noinline)) static uint32_t escape_time(double cr, double ci)
{
	double zr = 0, zi = 0;
	uint32_t n = 0;

	while (n < 2000 && zr * zr + zi * zi < 4.0) {
		double t = zr * zr - zi * zi + cr;

		zi = 2 * zr * zi + ci;
		zr = t;
		n++;
	}
	return n;
}

static void *render_band(void *arg)
{
	struct band *b = arg;

	for (int y = b->y0; y < b->y1; y++)
		for (int x = 0; x < b->size; x++)
			b->pixels[y * b->size + x] =
				escape_time(-2.0 + 2.5 * x / b->size, -1.25 + 2.5 * y / b->size);
	return NULL;
}

__attribute__((noinline)) static void merge(uint32_t *a, uint32_t *tmp, size_t lo, size_t mid,
					    size_t hi)
{
	size_t i = lo, j = mid, k = lo;

	while (i < mid && j < hi)
		tmp[k++] = a[i] <= a[j] ? a[i++] : a[j++];
	while (i < mid)
		tmp[k++] = a[i++];
	while (j < hi)
		tmp[k++] = a[j++];
	memcpy(a + lo, tmp + lo, (hi - lo) * sizeof(*a));
}

static void merge_sort(uint32_t *a, uint32_t *tmp, size_t lo, size_t hi)
{
	size_t mid;

	if (hi - lo < 2)
		return;
	mid = lo + (hi - lo) / 2;
	merge_sort(a, tmp, lo, mid);
	merge_sort(a, tmp, mid, hi);
	merge(a, tmp, lo, mid, hi);
}

__attribute__((noinline)) static uint64_t checksum(const uint32_t *a, size_t n, int rounds)
{
	uint64_t h = 1469598103934665603ull;

	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < n; i++)
			h = (h ^ a[i]) * 1099511628211ull;
	return h;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 4, size = argc > 2 ? atoi(argv[2]) : 900;
	size_t n;
	pthread_t *threads;
	struct band *bands;
	uint32_t *pixels, *tmp;

	if (nthreads < 1 || nthreads > 256 || size < 16 || size > 20000) {
		fprintf(stderr, "usage: demo [threads 1-256] [size 16-20000]\n");
		return 2;
	}
	n = (size_t)size * (size_t)size;
	pixels = malloc(n * sizeof(*pixels));
	tmp = malloc(n * sizeof(*tmp));
	threads = calloc((size_t)nthreads, sizeof(*threads));
	bands = calloc((size_t)nthreads, sizeof(*bands));
	if (!pixels || !tmp || !threads || !bands)
		return 1;
	for (int i = 0; i < nthreads; i++) {
		bands[i] = (struct band){ size * i / nthreads, size * (i + 1) / nthreads, size,
					  pixels };
		pthread_create(&threads[i], NULL, render_band, &bands[i]);
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	merge_sort(pixels, tmp, 0, n);
	printf("demo: %dx%d pixels, %d threads, checksum %016llx\n", size, size, nthreads,
	       (unsigned long long)checksum(pixels, n, 40));
	free(pixels);
	free(tmp);
	free(threads);
	free(bands);
	return 0;
}
