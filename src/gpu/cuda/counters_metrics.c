/* SPDX-License-Identifier: MIT */
/*
 * What the range profiler and PM sampling share: the metric list of --gpu-events, CUPTI
 * profiler host objects and configuration images, CUPTI's errors in words, and two entry
 * points for the syscope command (loaded with dlopen, never inside a profiled program):
 * the metrics of the GPUs present (`syscope avail -H -c GPU`) and a check of metric names
 * before a run.
 */
#include "counters.h"

#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cuda_metrics cuda_metrics;

static char *metric_text; /* the names point into it */

bool cuda_counters_parse(const char *list, double interval_s)
{
	char *save = NULL;

	free(metric_text);
	memset(&cuda_metrics, 0, sizeof(cuda_metrics));
	metric_text = list ? strdup(list) : NULL;
	for (char *t = metric_text ? strtok_r(metric_text, " ,", &save) : NULL; t;
	     t = strtok_r(NULL, " ,", &save)) {
		if (cuda_metrics.n == SC_GPU_METRICS_MAX) {
			cuda_note(SC_NOTE_WARN,
				  "GPU counters: only the first %u of --gpu-events are recorded",
				  SC_GPU_METRICS_MAX);
			break;
		}
		cuda_metrics.names[cuda_metrics.n++] = t;
	}
	cuda_metrics.interval_s = interval_s;
	cuda_metrics.duration = -1;
	for (unsigned i = 0; i < cuda_metrics.n; i++)
		if (!strcmp(cuda_metrics.names[i], CUDA_DURATION_METRIC))
			cuda_metrics.duration = (int)i;
	if (cuda_metrics.n && cuda_metrics.duration < 0 && interval_s <= 0 &&
	    cuda_metrics.n < SC_GPU_METRICS_MAX) {
		cuda_metrics.duration = (int)cuda_metrics.n;
		cuda_metrics.names[cuda_metrics.n++] = CUDA_DURATION_METRIC;
	}
	return cuda_metrics.n > 0;
}

/*
 * CUPTI's profiler loads libnvperf_host.so and libnvperf_target.so, which a syscope bundle
 * does not carry (32 MB): load them first, from beside the libcupti in use, else the CUDA
 * toolkit's folders, so that CUPTI's own dlopen finds them loaded. False when one is missing.
 */
static bool preload_nvperf(void)
{
	static const char *const libs[] = { "libnvperf_host.so", "libnvperf_target.so" };
	const char *dirs[] = { NULL, SYSCOPE_CUDA_LIBDIR, "/usr/local/cuda/lib64",
			       "/usr/local/cuda/extras/CUPTI/lib64" };
	char own[4096] = "", path[4200];
	Dl_info di;
	bool all = true;

	if (dladdr((void *)cuptiGetVersion, &di) && di.dli_fname) {
		snprintf(own, sizeof(own), "%s", di.dli_fname);
		if (strrchr(own, '/'))
			*strrchr(own, '/') = '\0';
		dirs[0] = own;
	}
	for (unsigned i = 0; i < 2; i++) {
		bool found = dlopen(libs[i], RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD) != NULL;

		for (unsigned d = 0; d < sizeof(dirs) / sizeof(dirs[0]) && !found; d++) {
			if (!dirs[d] || !*dirs[d])
				continue;
			snprintf(path, sizeof(path), "%s/%s", dirs[d], libs[i]);
			found = dlopen(path, RTLD_NOW | RTLD_GLOBAL) != NULL;
		}
		if (!found)
			found = dlopen(libs[i], RTLD_NOW | RTLD_GLOBAL) !=
				NULL; /* the search path */
		all &= found;
	}
	return all;
}

CUptiResult cuda_profiler_init(void)
{
	static atomic_int state; /* 0 not tried, else result + 1 */
	int s = atomic_load(&state);

	if (!s) {
		CUpti_Profiler_Initialize_Params p = {
			.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE
		};

		if (!preload_nvperf())
			cuda_note(SC_NOTE_WARN,
				  "GPU counters: libnvperf_host.so or "
				  "libnvperf_target.so (CUDA toolkit) not found; CUPTI's "
				  "profiler needs them (add their folder to "
				  "LD_LIBRARY_PATH)");
		s = (int)cuptiProfilerInitialize(&p) + 1;
		atomic_store(&state, s);
	}
	return (CUptiResult)(s - 1);
}

const char *cuda_chip_name(uint32_t dev)
{
	CUpti_Device_GetChipName_Params p = { .structSize =
						      CUpti_Device_GetChipName_Params_STRUCT_SIZE };

	p.deviceIndex = dev;
	return cuptiDeviceGetChipName(&p) == CUPTI_SUCCESS ? p.pChipName : NULL;
}

void cuda_config_free(struct cuda_config *c)
{
	if (c->host) {
		CUpti_Profiler_Host_Deinitialize_Params d = {
			.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE
		};

		d.pHostObject = c->host;
		cuptiProfilerHostDeinitialize(&d);
	}
	free(c->image);
	memset(c, 0, sizeof(*c));
}

static CUptiResult host_init(CUpti_ProfilerType type, const char *chip, const uint8_t *avail,
			     CUpti_Profiler_Host_Object **host)
{
	CUpti_Profiler_Host_Initialize_Params p = {
		.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE
	};
	CUptiResult rc;

	p.profilerType = type;
	p.pChipName = chip;
	p.pCounterAvailabilityImage = avail;
	rc = cuptiProfilerHostInitialize(&p);
	*host = rc == CUPTI_SUCCESS ? p.pHostObject : NULL;
	return rc;
}

static CUptiResult make_image(struct cuda_config *c, const char *const *names, unsigned n)
{
	CUpti_Profiler_Host_ConfigAddMetrics_Params a = {
		.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE
	};
	CUpti_Profiler_Host_GetConfigImageSize_Params s = {
		.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE
	};
	CUpti_Profiler_Host_GetConfigImage_Params g = {
		.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE
	};
	CUpti_Profiler_Host_GetNumOfPasses_Params np = {
		.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE
	};
	CUptiResult rc;

	a.pHostObject = c->host;
	a.ppMetricNames = (const char **)names;
	a.numMetrics = n;
	if ((rc = cuptiProfilerHostConfigAddMetrics(&a)) != CUPTI_SUCCESS)
		return rc;
	s.pHostObject = c->host;
	if ((rc = cuptiProfilerHostGetConfigImageSize(&s)) != CUPTI_SUCCESS)
		return rc;
	if (!(c->image = malloc(s.configImageSize)))
		return CUPTI_ERROR_OUT_OF_MEMORY;
	c->size = s.configImageSize;
	g.pHostObject = c->host;
	g.configImageSize = c->size;
	g.pConfigImage = c->image;
	if ((rc = cuptiProfilerHostGetConfigImage(&g)) != CUPTI_SUCCESS)
		return rc;
	np.configImageSize = c->size;
	np.pConfigImage = c->image;
	if ((rc = cuptiProfilerHostGetNumOfPasses(&np)) != CUPTI_SUCCESS)
		return rc;
	c->passes = np.numOfPasses;
	return CUPTI_SUCCESS;
}

CUptiResult cuda_config_make(CUpti_ProfilerType type, const char *chip, const uint8_t *avail,
			     const char *const *names, unsigned n, struct cuda_config *out)
{
	CUptiResult rc;

	memset(out, 0, sizeof(*out));
	if ((rc = host_init(type, chip, avail, &out->host)) != CUPTI_SUCCESS)
		return rc;
	if ((rc = make_image(out, names, n)) != CUPTI_SUCCESS)
		cuda_config_free(out);
	return rc;
}

CUptiResult cuda_config_evaluate(const struct cuda_config *c, const uint8_t *data, size_t size,
				 size_t index, const char *const *names, unsigned n, double *values)
{
	CUpti_Profiler_Host_EvaluateToGpuValues_Params e = {
		.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE
	};
	CUptiResult rc;

	e.pHostObject = c->host;
	e.pCounterDataImage = data;
	e.counterDataImageSize = size;
	e.rangeIndex = index;
	e.ppMetricNames = (const char **)names;
	e.numMetrics = n;
	e.pMetricValues = values;
	rc = cuptiProfilerHostEvaluateToGpuValues(&e);
	if (rc != CUPTI_SUCCESS)
		for (unsigned i = 0; i < n; i++)
			values[i] = NAN;
	return rc;
}

const char *cuda_counters_why(CUptiResult rc)
{
	switch (rc) {
	case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
	case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
		return "GPU performance counters are restricted to administrators "
		       "(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: the NVIDIA driver's "
		       "NVreg_RestrictProfilingToAdminUsers=1); run as root, or load the nvidia "
		       "module with NVreg_RestrictProfilingToAdminUsers=0";
	case CUPTI_ERROR_NOT_SUPPORTED:
	case CUPTI_ERROR_NOT_COMPATIBLE:
	case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
		return "this GPU or driver does not offer CUPTI's profiling API (the range "
		       "profiler and PM sampling need compute capability 7.0 or later)";
	case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
		return "profiling is not supported on this virtual GPU (vGPU without profiling)";
	case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
		return "profiling is not supported on a MIG instance";
	case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
		return "profiling is not supported on a CMP device";
	case CUPTI_ERROR_HARDWARE_BUSY:
		return "the GPU's counters are in use by another profiler (Nsight, DCGM "
		       "profiling, another syscope)";
	default:
		return cuda_error(rc);
	}
}

void cuda_counters_write_names(uint32_t agent)
{
	static atomic_flag once = ATOMIC_FLAG_INIT;
	struct sc_rec_gpu_metrics r = { .agent = agent, .count = cuda_metrics.n };
	char text[SC_GPU_METRICS_MAX * 128];
	uint32_t len = 0;

	if (atomic_flag_test_and_set(&once))
		return;
	for (unsigned i = 0; i < cuda_metrics.n; i++) {
		size_t l = strlen(cuda_metrics.names[i]) + 1;

		if (len + l > sizeof(text))
			l = 1; /* absurdly long: an empty name keeps the count */
		memcpy(text + len, l > 1 ? cuda_metrics.names[i] : "", l);
		len += (uint32_t)l;
	}
	r.ts = cuda_api->now_ns();
	cuda_api->record(SC_REC_GPU_METRICS, SC_GPU_METRICS_NAMES, &r.ts, sizeof(r) - sizeof(r.hdr),
			 text, len);
}

/* ---- for the syscope command (dlopen) ---- */

typedef void (*cuda_metric_row_fn)(void *ctx, unsigned device, const char *chip, const char *metric,
				   const char *type, const char *unit, const char *description);

static const char *const metric_types[] = { "counter", "ratio", "throughput" };

/* The GPUs CUDA sees; 0 with a reason in `err` when none. */
static int devices(char *err, size_t errlen)
{
	CUresult r = cuInit(0);
	int n = 0;
	const char *s = NULL;

	if (r == CUDA_SUCCESS)
		r = cuDeviceGetCount(&n);
	if (r != CUDA_SUCCESS) {
		cuGetErrorName(r, &s);
		snprintf(err, errlen, "no GPU: the CUDA driver says %s", s ? s : "an error");
		return 0;
	}
	if (!n)
		snprintf(err, errlen, "no GPU: the CUDA driver sees no device");
	return n;
}

static void list_type(CUpti_Profiler_Host_Object *host, CUpti_MetricType type, unsigned dev,
		      const char *chip, cuda_metric_row_fn row, void *ctx)
{
	CUpti_Profiler_Host_GetBaseMetrics_Params b = {
		.structSize = CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE
	};

	b.pHostObject = host;
	b.metricType = type;
	if (cuptiProfilerHostGetBaseMetrics(&b) != CUPTI_SUCCESS)
		return;
	for (size_t i = 0; i < b.numMetrics; i++) {
		CUpti_Profiler_Host_GetMetricProperties_Params q = {
			.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE
		};

		q.pHostObject = host;
		q.pMetricName = b.ppMetricNames[i];
		if (cuptiProfilerHostGetMetricProperties(&q) != CUPTI_SUCCESS)
			q.pDescription = q.pHwUnit = NULL;
		row(ctx, dev, chip, b.ppMetricNames[i], metric_types[type],
		    q.pDimUnit ? q.pDimUnit : "", q.pDescription ? q.pDescription : "");
	}
}

/*
 * Every base metric of each distinct chip present, through `row`. Returns the number of GPUs
 * listed, 0 with `err` saying why none.
 */
__attribute__((visibility("default"))) int
syscope_cuda_list_metrics(cuda_metric_row_fn row, void *ctx, char *err, size_t errlen);
int syscope_cuda_list_metrics(cuda_metric_row_fn row, void *ctx, char *err, size_t errlen)
{
	int n = devices(err, errlen), listed = 0;
	const char *seen[16] = { 0 };
	CUptiResult rc;

	if (n && (rc = cuda_profiler_init()) != CUPTI_SUCCESS) {
		snprintf(err, errlen, "CUPTI's profiler cannot start: %s", cuda_counters_why(rc));
		return 0;
	}
	for (int d = 0; d < n; d++) {
		const char *chip = cuda_chip_name((uint32_t)d);
		CUpti_Profiler_Host_Object *host = NULL;
		bool dup = false;

		for (int k = 0; k < listed && k < 16; k++)
			dup |= chip && seen[k] && !strcmp(seen[k], chip);
		if (!chip || dup)
			continue;
		if ((rc = host_init(CUPTI_PROFILER_TYPE_RANGE_PROFILER, chip, NULL, &host)) !=
		    CUPTI_SUCCESS) {
			snprintf(err, errlen, "GPU %d (%s): %s", d, chip, cuda_counters_why(rc));
			continue;
		}
		for (int t = 0; t < CUPTI_METRIC_TYPE__COUNT; t++)
			list_type(host, (CUpti_MetricType)t, (unsigned)d, chip, row, ctx);
		struct cuda_config c = { .host = host };
		cuda_config_free(&c);
		if (listed < 16)
			seen[listed] = chip;
		listed++;
	}
	if (n && !listed && !*err)
		snprintf(err, errlen, "CUPTI knows none of the %d GPUs' chips", n);
	return listed;
}

/*
 * Are these metric names known to GPU 0's chip? 0: all are; 1: `err` names the first that
 * is not; -1: cannot check here (no GPU, no profiler), `err` says why.
 */
__attribute__((visibility("default"))) int
syscope_cuda_check_metrics(const char *const *names, unsigned n, char *err, size_t errlen);
int syscope_cuda_check_metrics(const char *const *names, unsigned n, char *err, size_t errlen)
{
	const char *chip;
	CUptiResult rc;

	if (!devices(err, errlen))
		return -1;
	if ((rc = cuda_profiler_init()) != CUPTI_SUCCESS) {
		snprintf(err, errlen, "CUPTI's profiler cannot start: %s", cuda_counters_why(rc));
		return -1;
	}
	if (!(chip = cuda_chip_name(0))) {
		snprintf(err, errlen, "CUPTI does not know GPU 0's chip");
		return -1;
	}
	for (unsigned i = 0; i < n; i++) {
		struct cuda_config c;

		rc = cuda_config_make(CUPTI_PROFILER_TYPE_RANGE_PROFILER, chip, NULL, &names[i], 1,
				      &c);
		if (rc == CUPTI_SUCCESS) {
			cuda_config_free(&c);
			continue;
		}
		snprintf(err, errlen,
			 "'%s' is not a metric of this GPU (%s: %s); `syscope avail -H -c GPU` "
			 "lists the base metrics, each with suffixes such as .sum, .avg, .max and "
			 ".avg.pct_of_peak_sustained_elapsed",
			 names[i], chip, cuda_error(rc));
		return 1;
	}
	return 0;
}
