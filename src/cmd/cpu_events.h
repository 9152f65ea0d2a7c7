/* SPDX-License-Identifier: MIT */
/*
 * CPU event names -> perf_event_attr, for `--cpu-events` and `avail -H`: the kernel's names
 * (as perf spells them) from a table, anything else through libpfm4 when syscope was built
 * with it; and whether an event can be counted here, with the reason when not.
 */
#ifndef SYSCOPE_CMD_CPU_EVENTS_H
#define SYSCOPE_CMD_CPU_EVENTS_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/settings.h"

struct sc_cpu_event {
	const char *name;
	uint32_t type; /* PERF_TYPE_* */
	uint64_t config;
	const char *description;
};

/* The kernel's generic events, software first; aliases (cycles/cpu-cycles) are rows too. */
extern const struct sc_cpu_event sc_cpu_events_generic[];
extern const size_t sc_cpu_events_generic_count;

/* `name` as a perf attribute (type and config fields only); false if unknown. */
bool sc_cpu_event_resolve(const char *name, struct perf_event_attr *pa);
/* Try to count `pa` on this process (user space): 0, or a negative errno. */
int sc_cpu_event_try(struct perf_event_attr *pa);
/* Why an event cannot be counted, from sc_cpu_event_try's error ("" for 0). */
const char *sc_cpu_event_error(int err, char *buf, size_t n);

/*
 * The launcher's part of --cpu-events: resolve each name (an unknown one ends the command
 * with the closest names), try it, warn about those that cannot be counted here, and set
 * CPU_EVENTS_RESOLVED for the runtime. Nothing when CPU_EVENTS is empty.
 */
void sc_cpu_events_prepare(struct sc_settings *s);
/* The same for --sample-overflow EVENT PERIOD (SAMPLING_OVERFLOW_RESOLVED). */
void sc_overflow_prepare(struct sc_settings *s);

#endif /* SYSCOPE_CMD_CPU_EVENTS_H */
