/* SPDX-License-Identifier: MIT */
/*
 * GPU telemetry on the background telemetry thread (telemetry.c). A backend (NVML for
 * NVIDIA GPUs) loads its vendor library, chooses the GPUs, defines a counter track per
 * metric and GPU, and records values at each tick. All three run on the telemetry thread,
 * except the final tick and end, which run on the thread that stops the process after
 * the telemetry thread was joined.
 */
#ifndef SYSCOPE_RUNTIME_GPU_TELEMETRY_H
#define SYSCOPE_RUNTIME_GPU_TELEMETRY_H

#include "source.h"

/* Start: false when there is nothing to sample (a note says why). */
bool rt_gpu_telemetry_begin(const struct sc_settings *s);
/* One reading of every selected metric; `slow`: also the ones kept off the fast cadence. */
void rt_gpu_telemetry_tick(uint64_t now, bool slow);
/* Stop, with a note of what it cost. */
void rt_gpu_telemetry_end(void);

/* telemetry.c: record a value of a counter track when it changed since the last tick. */
void rt_telemetry_put(int track, uint64_t ts, double value);

#endif /* SYSCOPE_RUNTIME_GPU_TELEMETRY_H */
