/* SPDX-License-Identifier: MIT */
#include "cpu_events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef SYSCOPE_HAVE_LIBPFM
#include <perfmon/pfmlib_perf_event.h>
#endif

#include "../common/hostinfo.h"
#include "../common/log.h"
#include "../common/strutil.h"
#include "../common/vec.h"
#include "../store/format.h"
#include "cmd.h"

#define HW(name, config, d)                                         \
	{                                                           \
		name, PERF_TYPE_HARDWARE, PERF_COUNT_HW_##config, d \
	}
#define SW(name, config, d)                                         \
	{                                                           \
		name, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_##config, d \
	}
/* Cache events: cache | operation << 8 | result << 16 (perf_event_open(2)). */
#define CACHE(name, cache, op, result, d)                                                \
	{                                                                                \
		name, PERF_TYPE_HW_CACHE,                                                \
			PERF_COUNT_HW_CACHE_##cache | PERF_COUNT_HW_CACHE_OP_##op << 8 | \
				(uint64_t)PERF_COUNT_HW_CACHE_RESULT_##result << 16,     \
			d                                                                \
	}

const struct sc_cpu_event sc_cpu_events_generic[] = {
	SW("task-clock", TASK_CLOCK, "CPU time (ns)"),
	SW("cpu-clock", CPU_CLOCK, "CPU clock (ns)"),
	SW("page-faults", PAGE_FAULTS, "Page faults"),
	SW("faults", PAGE_FAULTS, "Page faults"),
	SW("minor-faults", PAGE_FAULTS_MIN, "Minor page faults"),
	SW("major-faults", PAGE_FAULTS_MAJ, "Major page faults (I/O)"),
	SW("context-switches", CONTEXT_SWITCHES, "Context switches"),
	SW("cs", CONTEXT_SWITCHES, "Context switches"),
	SW("cpu-migrations", CPU_MIGRATIONS, "Migrations to another CPU"),
	SW("migrations", CPU_MIGRATIONS, "Migrations to another CPU"),
	SW("alignment-faults", ALIGNMENT_FAULTS, "Alignment faults"),
	SW("emulation-faults", EMULATION_FAULTS, "Emulation faults"),
	HW("cycles", CPU_CYCLES, "CPU cycles"),
	HW("cpu-cycles", CPU_CYCLES, "CPU cycles"),
	HW("instructions", INSTRUCTIONS, "Instructions retired"),
	HW("cache-references", CACHE_REFERENCES, "Last-level cache accesses"),
	HW("cache-misses", CACHE_MISSES, "Last-level cache misses"),
	HW("branches", BRANCH_INSTRUCTIONS, "Branch instructions"),
	HW("branch-instructions", BRANCH_INSTRUCTIONS, "Branch instructions"),
	HW("branch-misses", BRANCH_MISSES, "Mispredicted branches"),
	HW("bus-cycles", BUS_CYCLES, "Bus cycles"),
	HW("stalled-cycles-frontend", STALLED_CYCLES_FRONTEND, "Cycles the front end stalled"),
	HW("stalled-cycles-backend", STALLED_CYCLES_BACKEND, "Cycles the back end stalled"),
	HW("ref-cycles", REF_CPU_CYCLES, "Reference cycles (not scaled by frequency)"),
	CACHE("L1-dcache-loads", L1D, READ, ACCESS, "L1 data cache loads"),
	CACHE("L1-dcache-load-misses", L1D, READ, MISS, "L1 data cache load misses"),
	CACHE("L1-dcache-stores", L1D, WRITE, ACCESS, "L1 data cache stores"),
	CACHE("L1-dcache-store-misses", L1D, WRITE, MISS, "L1 data cache store misses"),
	CACHE("L1-icache-loads", L1I, READ, ACCESS, "L1 instruction cache loads"),
	CACHE("L1-icache-load-misses", L1I, READ, MISS, "L1 instruction cache load misses"),
	CACHE("LLC-loads", LL, READ, ACCESS, "Last-level cache loads"),
	CACHE("LLC-load-misses", LL, READ, MISS, "Last-level cache load misses"),
	CACHE("LLC-stores", LL, WRITE, ACCESS, "Last-level cache stores"),
	CACHE("LLC-store-misses", LL, WRITE, MISS, "Last-level cache store misses"),
	CACHE("dTLB-loads", DTLB, READ, ACCESS, "Data TLB loads"),
	CACHE("dTLB-load-misses", DTLB, READ, MISS, "Data TLB load misses"),
	CACHE("iTLB-loads", ITLB, READ, ACCESS, "Instruction TLB loads"),
	CACHE("iTLB-load-misses", ITLB, READ, MISS, "Instruction TLB load misses"),
	CACHE("branch-loads", BPU, READ, ACCESS, "Branch predictor lookups"),
	CACHE("branch-load-misses", BPU, READ, MISS, "Branch predictor misses"),
};

const size_t sc_cpu_events_generic_count =
	sizeof(sc_cpu_events_generic) / sizeof(sc_cpu_events_generic[0]);

bool sc_cpu_event_resolve(const char *name, struct perf_event_attr *pa)
{
	memset(pa, 0, sizeof(*pa));
	pa->size = sizeof(*pa);
	for (size_t i = 0; i < sc_cpu_events_generic_count; i++)
		if (!strcasecmp(name, sc_cpu_events_generic[i].name)) {
			pa->type = sc_cpu_events_generic[i].type;
			pa->config = sc_cpu_events_generic[i].config;
			return true;
		}
#ifdef SYSCOPE_HAVE_LIBPFM
	{
		pfm_perf_encode_arg_t arg = { .attr = pa, .size = sizeof(arg) };
		static bool ready;

		if (!ready)
			ready = pfm_initialize() == PFM_SUCCESS;
		if (ready && pfm_get_os_event_encoding(name, PFM_PLM3, PFM_OS_PERF_EVENT, &arg) ==
				     PFM_SUCCESS)
			return true;
	}
#endif
	return false;
}

int sc_cpu_event_try(struct perf_event_attr *pa)
{
	long fd;

	pa->size = sizeof(*pa);
	pa->disabled = 1;
	pa->exclude_kernel = 1;
	pa->exclude_hv = 1;
	fd = syscall(SYS_perf_event_open, pa, 0, -1, -1, 0);
	if (fd < 0)
		return -errno;
	close((int)fd);
	return 0;
}

const char *sc_cpu_event_error(int err, char *buf, size_t n)
{
	struct sc_hostinfo h;

	switch (-err) {
	case 0:
		return "";
	case ENOENT:
	case EOPNOTSUPP:
		return "no hardware PMU on this machine (a virtual machine without counters?)";
	case EACCES:
	case EPERM:
		sc_hostinfo_get(&h);
		snprintf(buf, n, "not permitted (perf_event_paranoid is %d; 2 or less is needed)",
			 h.perf_event_paranoid);
		return buf;
	case ENOSYS:
		return "perf_event_open is not available (kernel or container)";
	default:
		snprintf(buf, n, "perf_event_open: %s", strerror(-err));
		return buf;
	}
}

/* An unknown name: end with the closest known names. */
static void unknown(const char *name) __attribute__((__noreturn__));
static void unknown(const char *name)
{
	const char *names[64];
	size_t n = 0;
	const char *near;

	for (size_t i = 0; i < sc_cpu_events_generic_count && n < 64; i++)
		names[n++] = sc_cpu_events_generic[i].name;
	near = sc_nearest(name, names, n);
	sc_die(SC_EXIT_USAGE,
	       "--cpu-events: unknown event '%s'%s%s%s; the kernel's names are task-clock, "
	       "page-faults, context-switches, cycles, instructions, cache-misses, "
	       "branch-misses, L1-dcache-load-misses, ... ('syscope avail -H' lists what this "
	       "machine has%s)",
	       name, near ? " (did you mean " : "", near ? near : "", near ? "?)" : "",
#ifdef SYSCOPE_HAVE_LIBPFM
	       ", with libpfm4's names"
#else
	       ""
#endif
	);
}

void sc_cpu_events_prepare(struct sc_settings *s)
{
	const char *list = sc_str(s, SC_SET_CPU_EVENTS);
	char *copy = sc_xstrdup(list), *save = NULL, resolved[1024] = "", err[SC_ERRMSG_MAX];
	unsigned n = 0, usable = 0;
	/* Events that cannot be counted, grouped by why: one warning per reason. */
	struct {
		int rc;
		char names[512];
	} refused[SC_PMC_MAX];
	unsigned nrefused = 0;

	if (!*list) {
		free(copy);
		return;
	}
	for (char *w = strtok_r(copy, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
		struct perf_event_attr pa;
		char item[96];
		int rc;

		if (++n > SC_PMC_MAX)
			sc_die(SC_EXIT_USAGE, "--cpu-events: %u events at most per thread",
			       SC_PMC_MAX);
		if (!sc_cpu_event_resolve(w, &pa))
			unknown(w);
		rc = sc_cpu_event_try(&pa);
		if (rc) {
			unsigned k = 0;

			while (k < nrefused && refused[k].rc != rc)
				k++;
			if (k == nrefused) {
				refused[k].rc = rc;
				refused[k].names[0] = '\0';
				nrefused++;
			}
			snprintf(refused[k].names + strlen(refused[k].names),
				 sizeof(refused[k].names) - strlen(refused[k].names), "%s%s",
				 refused[k].names[0] ? ", " : "", w);
			snprintf(item, sizeof(item), "-");
		} else {
			snprintf(item, sizeof(item), "%x:%llx:%llx:%llx", pa.type,
				 (unsigned long long)pa.config, (unsigned long long)pa.config1,
				 (unsigned long long)pa.config2);
			usable++;
		}
		snprintf(resolved + strlen(resolved), sizeof(resolved) - strlen(resolved), "%s%s",
			 n > 1 ? "," : "", item);
	}
	free(copy);
	for (unsigned k = 0; k < nrefused; k++) {
		char why[256];

		pr_warn("--cpu-events: %s cannot be counted here: %s; left out", refused[k].names,
			sc_cpu_event_error(refused[k].rc, why, sizeof(why)));
	}
	if (!usable) {
		pr_warn("--cpu-events: none of the events can be counted here; the run goes on "
			"without CPU counters");
		return;
	}
	if (sc_settings_set(s, SC_SET_CPU_EVENTS_RESOLVED, resolved, SC_LAYER_CLI, err))
		sc_die(70, "%s", err);
}

void sc_overflow_prepare(struct sc_settings *s)
{
	const char *value = sc_str(s, SC_SET_SAMPLING_OVERFLOW);
	char event[256] = "", extra[16] = "", resolved[160], why[256], err[SC_ERRMSG_MAX];
	unsigned long long period = 0;
	struct perf_event_attr pa;
	char *end = NULL;
	char period_text[64] = "";
	int rc;

	if (!*value)
		return;
	if (sscanf(value, "%255[^, ]%*[, ]%63[^, ]%15s", event, period_text, extra) != 2)
		sc_die(SC_EXIT_USAGE,
		       "--sample-overflow: '%s' is not EVENT PERIOD (e.g. --sample-overflow "
		       "cache-misses 10000)",
		       value);
	errno = 0;
	period = strtoull(period_text, &end, 10);
	if (errno || *end || !period || period_text[0] == '-')
		sc_die(SC_EXIT_USAGE,
		       "--sample-overflow: the period '%s' is not valid (valid: a whole number of "
		       "events > 0)",
		       period_text);
	if (!sc_cpu_event_resolve(event, &pa))
		unknown(event);
	rc = sc_cpu_event_try(&pa);
	if (rc) {
		pr_warn("--sample-overflow: %s cannot be counted here: %s; no overflow sampling",
			event, sc_cpu_event_error(rc, why, sizeof(why)));
		return;
	}
	snprintf(resolved, sizeof(resolved), "%x:%llx:%llx:%llx:%llx", pa.type,
		 (unsigned long long)pa.config, (unsigned long long)pa.config1,
		 (unsigned long long)pa.config2, period);
	if (sc_settings_set(s, SC_SET_SAMPLING_OVERFLOW_RESOLVED, resolved, SC_LAYER_CLI, err))
		sc_die(70, "%s", err);
}
