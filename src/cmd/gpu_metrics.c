/* SPDX-License-Identifier: MIT */
/* GPU metrics through libsyscope-cuda.so: listing for avail, checking before a run. */
#include "gpu_metrics.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/install.h"
#include "../common/log.h"
#include "../common/strutil.h"
#include "../common/vec.h"
#include "../store/format.h"
#include "cmd.h"

typedef int (*list_fn)(sc_gpu_metric_row_fn row, void *ctx, char *err, size_t errlen);
typedef int (*check_fn)(const char *const *names, unsigned n, char *err, size_t errlen);

/* libsyscope-cuda.so's function `symbol`, or NULL with `err` saying why. */
static void *plugin_function(const char *symbol, char *err, size_t errlen)
{
	char *dir = sc_install_path("lib/syscope");
	char *path = sc_xasprintf("%s/libsyscope-cuda.so", dir ? dir : ".");
	void *h = NULL, *fn = NULL;
	const char *why;

	if (access(path, R_OK)) {
		snprintf(err, errlen,
			 "this syscope was built without CUDA support (no CUPTI at build time)");
	} else if (!(h = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		why = dlerror();
		if (why && strstr(why, "libcuda.so"))
			snprintf(err, errlen,
				 "no NVIDIA driver here (libcuda.so.1 cannot be loaded)");
		else if (why && strstr(why, "libcupti"))
			snprintf(err, errlen, "no CUPTI library (libcupti.so): %s", why);
		else
			snprintf(err, errlen, "cannot load %s: %s", path, why ? why : "?");
	} else if (!(fn = dlsym(h, symbol))) {
		snprintf(err, errlen, "%s is older than this syscope (no %s)", path, symbol);
	}
	free(path);
	free(dir);
	return fn;
}

int sc_gpu_metrics_list(sc_gpu_metric_row_fn row, void *ctx, char *err, size_t errlen)
{
	list_fn list;

	*err = '\0';
	*(void **)&list = plugin_function("syscope_cuda_list_metrics", err, errlen);
	return list ? list(row, ctx, err, errlen) : 0;
}

void sc_gpu_events_check(struct sc_settings *s)
{
	const char *names[SC_GPU_METRICS_MAX];
	char *copy = sc_xstrdup(sc_str(s, SC_SET_GPU_EVENTS)), *save = NULL, err[1024] = "";
	unsigned n = 0;
	check_fn check;

	for (char *w = strtok_r(copy, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
		if (n == SC_GPU_METRICS_MAX)
			sc_die(SC_EXIT_USAGE, "--gpu-events: %u metrics at most",
			       SC_GPU_METRICS_MAX);
		names[n++] = w;
	}
	if (!n && sc_double(s, SC_SET_GPU_EVENTS_INTERVAL) > 0)
		sc_die(SC_EXIT_USAGE, "--gpu-events-interval samples the metrics of --gpu-events, "
				      "and none are given (e.g. --gpu-events="
				      "sm__cycles_active.avg.pct_of_peak_sustained_elapsed)");
	if (n) {
		*(void **)&check = plugin_function("syscope_cuda_check_metrics", err, sizeof(err));
		switch (check ? check(names, n, err, sizeof(err)) : -1) {
		case 0:
			break;
		case 1:
			sc_die(SC_EXIT_USAGE, "--gpu-events: %s", err);
		default:
			pr_warn("--gpu-events not checked before the run (%s); a name the GPU does "
				"not know is noted during the run",
				err);
		}
	}
	free(copy);
}
