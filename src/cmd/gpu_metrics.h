/* SPDX-License-Identifier: MIT */
/*
 * GPU hardware counters on the command's side: the metrics of the GPUs present (`syscope
 * avail -H -c GPU`) and the check of --gpu-events before a run, both through
 * libsyscope-cuda.so (loaded with dlopen, so that the syscope command needs neither CUDA
 * nor CUPTI), which asks CUPTI's profiler host API about each GPU's chip.
 */
#ifndef SYSCOPE_CMD_GPU_METRICS_H
#define SYSCOPE_CMD_GPU_METRICS_H

#include <stddef.h>

#include "../common/settings.h"

typedef void (*sc_gpu_metric_row_fn)(void *ctx, unsigned device, const char *chip,
				     const char *metric, const char *type, const char *unit,
				     const char *description);

/* Every base metric of each distinct GPU chip here, through `row`. Returns how many GPUs
 * were listed; 0 with `err` saying why none (no CUDA support built, no driver, no CUPTI, no
 * GPU, no permission). */
int sc_gpu_metrics_list(sc_gpu_metric_row_fn row, void *ctx, char *err, size_t errlen);

/* --gpu-events: at most SC_GPU_METRICS_MAX names, each known to GPU 0's chip when this
 * machine can tell (exits with a usage error naming the first unknown one); elsewhere the
 * run's note says. */
void sc_gpu_events_check(struct sc_settings *s);

#endif /* SYSCOPE_CMD_GPU_METRICS_H */
