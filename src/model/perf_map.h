/* SPDX-License-Identifier: MIT */
/*
 * Names of just-in-time compiled code from the perf map a JIT writes for its process,
 * /tmp/perf-PID.map (node --perf-basic-prof, java -XX:+DumpPerfMapAtExit, LuaJIT, .NET):
 * code outside every module gets the name the JIT gave it.
 */
#ifndef SYSCOPE_MODEL_PERF_MAP_H
#define SYSCOPE_MODEL_PERF_MAP_H

#include <stdint.h>

struct sc_image;
struct sc_strtab;
struct sc_perf_map;

/* The name (interned) of the JIT code at `addr` in `img`'s process, or NULL: no map, or
 * no entry for it. The map is read at the first lookup of each image, and only where it
 * was recorded: on another host the same pid is another process. */
const char *sc_perf_map_name(struct sc_image *img, struct sc_strtab *strings, uint64_t addr);

void sc_perf_map_free(struct sc_perf_map *map);

#endif
