/* SPDX-License-Identifier: MIT */
#include "hostinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

static void read_first_match(const char *path, const char *key, char *out, size_t n)
{
	FILE *f = fopen(path, "r");
	char line[512];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon;

		if (strncmp(line, key, strlen(key)) || !(colon = strchr(line, ':')))
			continue;
		colon++;
		while (*colon == ' ' || *colon == '\t')
			colon++;
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(out, n, "%s", colon);
		break;
	}
	fclose(f);
}

void sc_hostinfo_get(struct sc_hostinfo *h)
{
	struct utsname u;
	char mem[64] = "";
	FILE *f;

	memset(h, 0, sizeof(*h));
	gethostname(h->hostname, sizeof(h->hostname) - 1);
	if (!uname(&u)) {
		snprintf(h->kernel, sizeof(h->kernel), "%s %s %s", u.sysname, u.release, u.version);
		snprintf(h->machine, sizeof(h->machine), "%s", u.machine);
	}
	read_first_match("/proc/cpuinfo", "model name", h->cpu_model, sizeof(h->cpu_model));
	h->cpus_online = sysconf(_SC_NPROCESSORS_ONLN);
	read_first_match("/proc/meminfo", "MemTotal", mem, sizeof(mem));
	h->memory_bytes = 1024LL * strtoll(mem, NULL, 10);
	h->perf_event_paranoid = -100;
	f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	if (f) {
		if (fscanf(f, "%d", &h->perf_event_paranoid) != 1)
			h->perf_event_paranoid = -100;
		fclose(f);
	}
}
