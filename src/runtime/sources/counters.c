/* SPDX-License-Identifier: MIT */
/*
 * CPU counters (--cpu-events): each thread counts the events with perf_event_open, as one
 * group (read together, scheduled together, scaled together when the kernel multiplexes),
 * counting only this thread, in user space unless perf_event_paranoid allows more. After
 * each sample the sampler calls rt_counters_read(): one read(2) of the group, and a PMC_READ
 * record of what was counted since the previous read, which the reader attributes to the
 * sample's stack.
 *
 * The launcher resolved the names (kernel names and libpfm4's) into perf attributes and
 * tried each on itself: SYSCOPE_CPU_EVENTS_RESOLVED holds, in the order of CPU_EVENTS,
 * "type:config:config1:config2" per event, or "-" for one that cannot be counted here (the
 * launcher said why). An event a thread cannot add to its group is left out there, in a note.
 */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct {
	unsigned n; /* events asked for */
	struct perf_event_attr attr[SC_PMC_MAX];
	bool usable[SC_PMC_MAX]; /* resolved and counted by the launcher */
	atomic_int refused_noted;
	bool at_regions; /* CPU_EVENTS_AT_REGIONS */
} pmc;

static bool enabled(const struct sc_settings *s)
{
	return *sc_str(s, SC_SET_CPU_EVENTS_RESOLVED) != '\0';
}

/* perf_event_paranoid: 2 and above allow user-space counting only. */
static bool kernel_allowed(void)
{
	char buf[16] = "";
	int fd = open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		RT_REAL(close)(fd);
	return n > 0 && atoi(buf) < 2;
}

static void write_names(const char *list)
{
	struct sc_rec_pmc_events r = { .ts = rt_now_ns(), .count = pmc.n };
	char names[SC_PMC_MAX * 128];
	size_t len = 0;
	const char *p = list;

	for (unsigned i = 0; i < pmc.n; i++) {
		size_t w;

		p += strspn(p, ", ");
		w = strcspn(p, ", ");
		memcpy(names + len, p, w > 127 ? 127 : w);
		len += w > 127 ? 127 : w;
		names[len++] = '\0';
		p += w;
	}
	r.names_len = (uint32_t)len;
	rt_record(SC_REC_PMC_EVENTS, 0, &r.ts, sizeof(r) - sizeof(r.hdr), names, r.names_len);
}

static int process_start(void)
{
	const struct sc_settings *s = &rt_proc.settings;
	const char *resolved = sc_str(s, SC_SET_CPU_EVENTS_RESOLVED);
	const char *names = sc_str(s, SC_SET_CPU_EVENTS);
	bool kernel = kernel_allowed();
	const char *p = resolved;

	pmc.n = 0;
	while (*p && pmc.n < SC_PMC_MAX) {
		struct perf_event_attr *a = &pmc.attr[pmc.n];
		unsigned long long type, config, config1, config2;

		memset(a, 0, sizeof(*a));
		if (sscanf(p, "%llx:%llx:%llx:%llx", &type, &config, &config1, &config2) == 4) {
			a->size = sizeof(*a);
			a->type = (uint32_t)type;
			a->config = config;
			a->config1 = config1;
			a->config2 = config2;
			a->exclude_kernel = !kernel;
			a->exclude_hv = 1;
			a->read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED |
					 PERF_FORMAT_TOTAL_TIME_RUNNING;
			pmc.usable[pmc.n] = true;
		}
		pmc.n++;
		p += strcspn(p, ",");
		p += *p == ',';
	}
	if (!pmc.n)
		return -EINVAL;
	pmc.at_regions = sc_bool(s, SC_SET_CPU_EVENTS_AT_REGIONS);
	write_names(names);
	return 0;
}

static void close_group(struct rt_thread *t)
{
	for (unsigned i = t->pmc_n; i-- > 0;)
		RT_REAL(close)(t->pmc_fd[i]);
	t->pmc_n = 0;
}

/* The group of thread `tid` (0: the calling one) into fds/events; returns how many. */
static unsigned open_group(pid_t tid, int *fds, uint8_t *events)
{
	unsigned n = 0;
	int leader = -1;

	for (unsigned i = 0; i < pmc.n; i++) {
		long fd;

		if (!pmc.usable[i])
			continue;
		fd = syscall(SYS_perf_event_open, &pmc.attr[i], tid, -1, leader,
			     PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			/* A group has room for as many hardware events as the PMU has counters. */
			if (!atomic_exchange(&pmc.refused_noted, 1))
				rt_note(SC_NOTE_WARN,
					"cpu counters: event %u of --cpu-events could not join its "
					"thread's group (%s); left out where it cannot",
					i + 1, strerror(errno));
			continue;
		}
		fds[n] = rt_fd_adopt((int)fd);
		events[n] = (uint8_t)i;
		if (leader < 0)
			leader = fds[0];
		n++;
	}
	return n;
}

unsigned rt_counters_open_for(pid_t tid, int *fds, uint8_t *events)
{
	return open_group(tid, fds, events);
}

static void thread_start(struct rt_thread *t)
{
	t->pmc_n = (uint8_t)open_group(0, t->pmc_fd, t->pmc_event);
	for (unsigned i = 0; i < t->pmc_n; i++)
		t->pmc_last[i] = 0;
}

static void thread_stop(struct rt_thread *t)
{
	close_group(t);
}

static void fork_child(void)
{
	/* The descriptors are copies of the parent thread's counters: the child's own are
	 * opened when its thread is set up again. */
	close_group(rt_thread_self());
}

void rt_counters_read(struct rt_thread *t, uint64_t ts)
{
	struct sc_rec_pmc_read r = { .ts = ts };
	uint64_t buf[3 + SC_PMC_MAX]; /* nr, time enabled, time running, values */
	ssize_t got;
	double scale;

	if (!t->pmc_n || t->pmc_reading)
		return; /* a sample during a region's read: its counts go with the next read */
	t->pmc_reading = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	got = read(t->pmc_fd[0], buf, sizeof(buf));
	if (got < (ssize_t)(3 * sizeof(uint64_t)) || buf[0] != t->pmc_n) {
		t->pmc_reading = 0;
		return;
	}
	/* Multiplexed: the group counted only part of the time; scale up to all of it. */
	scale = buf[2] && buf[2] < buf[1] ? (double)buf[1] / (double)buf[2] : 1.0;
	for (unsigned i = 0; i < t->pmc_n; i++) {
		uint64_t total = (uint64_t)((double)buf[3 + i] * scale);
		unsigned e = t->pmc_event[i];

		r.values[e] = total >= t->pmc_last[i] ? total - t->pmc_last[i] : 0;
		r.valid |= 1u << e;
		t->pmc_last[i] = total;
	}
	rt_record(SC_REC_PMC_READ, 0, &r.ts, sizeof(r) - sizeof(r.hdr), NULL, 0);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->pmc_reading = 0;
}

void rt_counters_read_region(uint64_t ts)
{
	if (pmc.at_regions)
		rt_counters_read(&rt_self, ts);
}

const struct rt_source rt_source_counters = {
	.name = "cpu counters",
	.enabled = enabled,
	.process_start = process_start,
	.thread_start = thread_start,
	.thread_stop = thread_stop,
	.fork_child = fork_child,
};
