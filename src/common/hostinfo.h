/* SPDX-License-Identifier: MIT */
/* Facts about the machine for metadata: host, kernel, CPU model, CPU and memory counts. */
#ifndef SYSCOPE_COMMON_HOSTINFO_H
#define SYSCOPE_COMMON_HOSTINFO_H

struct sc_hostinfo {
	char hostname[256];
	char kernel[400]; /* "Linux 6.1.0 #1 SMP ..." */
	char machine[80]; /* "x86_64" */
	char cpu_model[256];
	long cpus_online;
	long long memory_bytes;
	int perf_event_paranoid; /* -100 when unknown */
};

void sc_hostinfo_get(struct sc_hostinfo *h);

#endif
