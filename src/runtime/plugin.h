/* SPDX-License-Identifier: MIT */
/*
 * The interface libsyscope.so offers to the libraries that extend it inside the profiled
 * process (the CUDA tracer, libsyscope-cuda.so, loaded by the CUDA driver). A plugin looks up
 * `syscope_plugin_api` with dlsym(RTLD_DEFAULT) and gets NULL when no syscope runtime is
 * recording in this process, or when the runtime speaks another ABI version.
 *
 * A plugin reads its settings from the environment itself (the same SYSCOPE_* variables);
 * through this table it only records, stamps time, leaves notes and asks to be stopped.
 * Everything here may be called from any thread, including threads the plugin's host
 * library created; nothing may be called from a signal handler.
 */
#ifndef SYSCOPE_RUNTIME_PLUGIN_H
#define SYSCOPE_RUNTIME_PLUGIN_H

#include <stdbool.h>
#include <stdint.h>

#include "../store/format.h"

#define SC_PLUGIN_ABI 2
#define SC_PLUGIN_MAX_STOP_HOOKS 4

struct sc_plugin_api {
	uint32_t abi;  /* SC_PLUGIN_ABI */
	uint32_t size; /* sizeof(struct sc_plugin_api) */
	/* Recording now; false before start, when passive and once finalization began. */
	bool (*active)(void);
	/* The recording clock (CLOCK_MONOTONIC, ns). */
	uint64_t (*now_ns)(void);
	/* Record into the calling thread's stream: see rt_record() in rt.h. */
	int (*record)(uint16_t type, uint16_t flags, const void *body, uint32_t body_size,
		      const void *tail, uint32_t tail_size);
	/* A note for the end-of-run summary and the metadata (one line, no newline). */
	void (*note)(enum sc_note_level level, const char *text);
	/* Run `fn` when the process finishes, before recording stops (flush buffers there).
	 * Returns 0, or -1 when the table of hooks is full. */
	int (*at_stop)(void (*fn)(void));
	/* A counter track of the process by name and unit (defined once; the same id for the
	 * same pair), or -1 when the process's table of tracks is full. */
	int (*counter_track)(const char *name, const char *unit);
	/* A value of that track at `ts` (the recording clock). */
	void (*counter_value)(int track, uint64_t ts, double value);
	/* Python call sites (runtime/python/callsite.c), normal context, the calling thread:
	 * does this process read Python stacks, and record the caller's for a CUDA correlation
	 * id. Check `size` before use: a runtime of the same ABI may predate them. */
	bool (*py_callsites_on)(void);
	int (*py_callsite)(uint64_t corr_id);
	/* Record in place, as rt_reserve() and rt_commit() of rt.h: the cheap way for a small
	 * fixed record on a hot path. Check `size` before use. */
	void *(*reserve)(uint32_t size);
	void (*commit)(void *rec, uint16_t type, uint16_t flags, uint32_t size);
};

typedef const struct sc_plugin_api *(*sc_plugin_api_fn)(uint32_t abi);
#define SC_PLUGIN_API_SYMBOL "syscope_plugin_api"

#endif /* SYSCOPE_RUNTIME_PLUGIN_H */
