/* SPDX-License-Identifier: MIT */
/*
 * GPU hardware counters (--gpu-events): per kernel with CUPTI's range profiler
 * (counters_range.c: auto ranges, kernel replay when the metrics need several passes, one
 * GPU_METRICS record per kernel under its correlation id), or per time interval with PM
 * sampling (counters_pm.c, --gpu-events-interval: counter tracks per GPU and metric).
 * counters_metrics.c holds what both share: the metric list, host objects and configuration
 * images, CUPTI's errors in words, and the listing and checking `syscope avail` and the
 * launcher use.
 */
#ifndef SYSCOPE_GPU_CUDA_COUNTERS_H
#define SYSCOPE_GPU_CUDA_COUNTERS_H

#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "cuda_common.h"

/* ---- counters_metrics.c ---- */

#define CUDA_DURATION_METRIC "gpu__time_duration.sum"

struct cuda_metrics {
	const char *names[SC_GPU_METRICS_MAX];
	unsigned n;
	int duration;	   /* index of gpu__time_duration.sum (added when not asked for) */
	double interval_s; /* > 0: PM sampling at this period instead of per kernel */
};

extern struct cuda_metrics cuda_metrics; /* what --gpu-events asked for; n == 0: off */

/* A configuration of metrics on a chip: the host object and its image. */
struct cuda_config {
	CUpti_Profiler_Host_Object *host;
	uint8_t *image;
	size_t size;
	size_t passes;
};

/* Parse SYSCOPE_GPU_EVENTS (space- or comma-separated); false when it names none. Per
 * kernel, gpu__time_duration.sum is added when missing: under kernel replay CUPTI gives the
 * kernels no timestamps, and the kernel's duration places it in its launch call. */
bool cuda_counters_parse(const char *list, double interval_s);
/* cuptiProfilerInitialize, once; its result. */
CUptiResult cuda_profiler_init(void);
/* The chip name of CUDA device `dev` ("GH100"), or NULL. */
const char *cuda_chip_name(uint32_t dev);
/* A host object and configuration image for `names`; frees nothing of `out` on failure. */
CUptiResult cuda_config_make(CUpti_ProfilerType type, const char *chip, const uint8_t *avail,
			     const char *const *names, unsigned n, struct cuda_config *out);
void cuda_config_free(struct cuda_config *c);
/* Values of range (or sample) `index` of a counter data image. */
CUptiResult cuda_config_evaluate(const struct cuda_config *c, const uint8_t *data, size_t size,
				 size_t index, const char *const *names, unsigned n,
				 double *values);
/* Why counters cannot be read, in words a user can act on. */
const char *cuda_counters_why(CUptiResult rc);
/* Write the GPU_METRICS names record, once per process. */
void cuda_counters_write_names(uint32_t agent);

/* ---- counters_range.c: per kernel ---- */
void cuda_range_start(CUpti_SubscriberHandle sub); /* enables the launch callbacks */
void cuda_range_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			 const CUpti_CallbackData *d);
void cuda_range_context_ending(CUcontext ctx);
void cuda_range_stop(void);

/* ---- counters_pm.c: per interval ---- */
/* The first launch into a context: start sampling its device (once per device). */
void cuda_pm_device_used(CUcontext ctx);
void cuda_pm_stop(void);

#endif /* SYSCOPE_GPU_CUDA_COUNTERS_H */
