/* SPDX-License-Identifier: MIT */
/*
 * GPU hardware counters per kernel (--gpu-events) with CUPTI's range profiler: auto ranges
 * (one per kernel) in kernel replay (CUPTI replays each kernel once per pass when the
 * metrics need several; user and application replay would need a profiler that owns the
 * program). The launch callbacks (runtime and driver API) drive it on the launching thread:
 *
 *   entry of the outermost launch call   the context's profiler is enabled at its first
 *                                        launch; its lock is taken, so that no other
 *                                        thread's kernel falls into this launch's range
 *   exit                                 stop, decode, evaluate the range just made, write
 *                                        one GPU_METRICS record under the launch's
 *                                        correlation id (its kernel's), reset the counter
 *                                        data and start again; unlock
 *
 * Kernels that other calls made (graphs) may land in the same window: the last range is
 * the launch's (it was submitted last), the others are counted in a note. Whatever fails
 * is said once in a note and the program runs on without counters.
 *
 * Under kernel replay CUPTI's kernel records have no timestamps (0, measured on an H200
 * with CUPTI 13.0): the launch call runs the kernel's passes before it returns, so the
 * kernel is placed in the middle of its launch call, as long as gpu__time_duration.sum says
 * (activity.c asks through cuda_untimed_kernel_time).
 *
 * Stream capture: stopping and decoding are not allowed while a stream captures (the
 * capture fails: measured with cudaStreamCaptureModeGlobal), so the profilers stop when a
 * capture begins and start again when the last one ends; launches meanwhile get no window
 * (captured ones run later, in a graph launch, without values).
 *
 * Graph launches: their kernels share the launch's correlation id, so no window could tell
 * them apart; the profiler stops for the call (their kernels then run as without counters,
 * timed by CUPTI) and starts again after it.
 */
#include "counters.h"

#include "activity.h"

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONTEXTS 64
/* Ranges one window can hold. CUPTI keeps the first ones and drops the rest without saying
 * (measured): a full window may not hold the launch's own kernel, and gives no values. */
#define WINDOW_RANGES 8

struct range_ctx {
	CUcontext ctx;
	uint32_t agent;
	bool failed;
	bool paused; /* stopped while a stream captures */
	pthread_mutex_t lock;
	CUpti_RangeProfiler_Object *obj;
	struct cuda_config cfg;
	uint8_t *data, *pristine;
	size_t data_size;
};

static struct range_ctx contexts[MAX_CONTEXTS];
static unsigned ncontexts;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
enum site {
	SITE_NONE,
	SITE_LAUNCH,
	SITE_GRAPH_LAUNCH,
	SITE_BEGIN_CAPTURE,
	SITE_END_CAPTURE
};
static unsigned char sites[2][(int)CUPTI_DRIVER_TRACE_CBID_SIZE > (int)CUPTI_RUNTIME_TRACE_CBID_SIZE
				      ? (int)CUPTI_DRIVER_TRACE_CBID_SIZE
				      : (int)CUPTI_RUNTIME_TRACE_CBID_SIZE];
static atomic_int capturing; /* stream captures going on, in any thread */
static __thread unsigned capture_calls;
static atomic_ullong extra_ranges, dropped_ranges, failed_kernels;
static atomic_bool stopping;
static atomic_flag exit_hook = ATOMIC_FLAG_INIT;
static void range_at_exit(void);

/* Host-side times of the kernels profiled, by correlation id, for activity.c. */
#define KERNEL_TIMES 4096
static struct {
	uint32_t corr;
	uint64_t start, end;
} kernel_times[KERNEL_TIMES];
static pthread_mutex_t times_lock = PTHREAD_MUTEX_INITIALIZER;

static __thread uint64_t launch_start;
static __thread unsigned launch_depth;
static __thread struct range_ctx *held; /* the context whose launch this thread is in */
static __thread bool held_graph;	/* ... and the launch is a graph's */

static void note_failure(struct range_ctx *r, const char *what, CUptiResult rc)
{
	r->failed = true;
	cuda_note(SC_NOTE_WARN, "GPU counters off on GPU %u: %s failed: %s", r->agent, what,
		  cuda_counters_why(rc));
}

static struct range_ctx *context_of(CUcontext ctx)
{
	struct range_ctx *r = NULL;

	pthread_mutex_lock(&table_lock);
	for (unsigned i = 0; i < ncontexts && !r; i++)
		if (contexts[i].ctx == ctx)
			r = &contexts[i];
	if (!r && ncontexts < MAX_CONTEXTS) {
		r = &contexts[ncontexts++];
		r->ctx = ctx;
		pthread_mutex_init(&r->lock, NULL);
		if (cuptiGetDeviceId(ctx, &r->agent) != CUPTI_SUCCESS)
			r->agent = 0;
	}
	pthread_mutex_unlock(&table_lock);
	if (r)
		pthread_mutex_lock(&r->lock);
	return r;
}

static CUptiResult set_config(struct range_ctx *r)
{
	CUpti_RangeProfiler_SetConfig_Params sc = {
		.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE
	};

	sc.pRangeProfilerObject = r->obj;
	sc.configSize = r->cfg.size;
	sc.pConfig = r->cfg.image;
	sc.counterDataImageSize = r->data_size;
	sc.pCounterDataImage = r->data;
	sc.range = CUPTI_AutoRange;
	sc.replayMode = CUPTI_KernelReplay;
	sc.maxRangesPerPass = WINDOW_RANGES;
	sc.numNestingLevels = 1;
	sc.minNestingLevel = 1;
	sc.passIndex = 0;
	sc.targetNestingLevel = 1;
	return cuptiRangeProfilerSetConfig(&sc);
}

static CUptiResult start(struct range_ctx *r)
{
	CUpti_RangeProfiler_Start_Params s = {
		.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE
	};
	CUptiResult rc;

	memcpy(r->data, r->pristine, r->data_size);
	if ((rc = set_config(r)) != CUPTI_SUCCESS)
		return rc;
	s.pRangeProfilerObject = r->obj;
	return cuptiRangeProfilerStart(&s);
}

static CUptiResult counter_data(struct range_ctx *r)
{
	CUpti_RangeProfiler_GetCounterDataSize_Params s = {
		.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE
	};
	CUpti_RangeProfiler_CounterDataImage_Initialize_Params ci = {
		.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE
	};
	CUptiResult rc;

	s.pRangeProfilerObject = r->obj;
	s.pMetricNames = (const char **)cuda_metrics.names;
	s.numMetrics = cuda_metrics.n;
	s.maxNumOfRanges = WINDOW_RANGES;
	s.maxNumRangeTreeNodes = WINDOW_RANGES;
	if ((rc = cuptiRangeProfilerGetCounterDataSize(&s)) != CUPTI_SUCCESS)
		return rc;
	r->data_size = s.counterDataSize;
	r->data = malloc(r->data_size);
	r->pristine = malloc(r->data_size);
	if (!r->data || !r->pristine)
		return CUPTI_ERROR_OUT_OF_MEMORY;
	ci.pRangeProfilerObject = r->obj;
	ci.counterDataSize = r->data_size;
	ci.pCounterData = r->data;
	if ((rc = cuptiRangeProfilerCounterDataImageInitialize(&ci)) != CUPTI_SUCCESS)
		return rc;
	memcpy(r->pristine, r->data, r->data_size);
	return CUPTI_SUCCESS;
}

static bool counter_availability(CUcontext ctx, uint8_t **image)
{
	CUpti_Profiler_GetCounterAvailability_Params p = {
		.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE
	};

	p.ctx = ctx;
	*image = NULL;
	if (cuptiProfilerGetCounterAvailability(&p) != CUPTI_SUCCESS ||
	    !(*image = malloc(p.counterAvailabilityImageSize)))
		return false;
	p.pCounterAvailabilityImage = *image;
	return cuptiProfilerGetCounterAvailability(&p) == CUPTI_SUCCESS;
}

/* The context's first launch: host object, configuration, profiler object, counter data. */
static void enable(struct range_ctx *r)
{
	CUpti_RangeProfiler_Enable_Params en = {
		.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE
	};
	const char *chip;
	uint8_t *avail = NULL;
	CUptiResult rc;

	if ((rc = cuda_profiler_init()) != CUPTI_SUCCESS)
		return note_failure(r, "cuptiProfilerInitialize", rc);
	if (!(chip = cuda_chip_name(r->agent)))
		return note_failure(r, "cuptiDeviceGetChipName", CUPTI_ERROR_NOT_SUPPORTED);
	if (!counter_availability(r->ctx, &avail)) {
		free(avail);
		avail = NULL; /* the chip's full list: SetConfig will tell */
	}
	rc = cuda_config_make(CUPTI_PROFILER_TYPE_RANGE_PROFILER, chip, avail, cuda_metrics.names,
			      cuda_metrics.n, &r->cfg);
	free(avail);
	if (rc != CUPTI_SUCCESS) {
		r->failed = true;
		cuda_note(SC_NOTE_WARN,
			  "GPU counters off: %s does not know every metric of --gpu-events (%s); "
			  "`syscope avail -H -c GPU` lists them",
			  chip, cuda_error(rc));
		return;
	}
	en.ctx = r->ctx;
	if ((rc = cuptiRangeProfilerEnable(&en)) != CUPTI_SUCCESS)
		return note_failure(r, "cuptiRangeProfilerEnable", rc);
	r->obj = en.pRangeProfilerObject;
	if ((rc = counter_data(r)) != CUPTI_SUCCESS)
		return note_failure(r, "the counter data image", rc);
	if ((rc = start(r)) != CUPTI_SUCCESS)
		return note_failure(r, "cuptiRangeProfilerStart", rc);
	cuda_counters_write_names(r->agent);
	if (!atomic_flag_test_and_set(&exit_hook))
		atexit(range_at_exit);
	cuda_note(SC_NOTE_INFO, "GPU counters on GPU %u (%s): %u metrics per kernel, %zu pass%s",
		  r->agent, chip, cuda_metrics.n, r->cfg.passes, r->cfg.passes == 1 ? "" : "es");
}

static CUptiResult stop_and_decode(struct range_ctx *r)
{
	CUpti_RangeProfiler_Stop_Params st = {
		.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE
	};
	CUpti_RangeProfiler_DecodeData_Params dd = {
		.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE
	};
	CUptiResult rc;

	st.pRangeProfilerObject = r->obj;
	if ((rc = cuptiRangeProfilerStop(&st)) != CUPTI_SUCCESS)
		return rc;
	dd.pRangeProfilerObject = r->obj;
	rc = cuptiRangeProfilerDecodeData(&dd);
	atomic_fetch_add(&dropped_ranges, dd.numOfRangeDropped);
	return rc;
}

static void remember_time(uint32_t corr, uint64_t start, uint64_t end)
{
	pthread_mutex_lock(&times_lock);
	kernel_times[corr % KERNEL_TIMES].corr = corr;
	kernel_times[corr % KERNEL_TIMES].start = start;
	kernel_times[corr % KERNEL_TIMES].end = end;
	pthread_mutex_unlock(&times_lock);
}

static bool kernel_time(uint32_t corr, uint64_t *start, uint64_t *end)
{
	bool found;

	pthread_mutex_lock(&times_lock);
	found = corr && kernel_times[corr % KERNEL_TIMES].corr == corr;
	if (found) {
		*start = kernel_times[corr % KERNEL_TIMES].start;
		*end = kernel_times[corr % KERNEL_TIMES].end;
	}
	pthread_mutex_unlock(&times_lock);
	return found;
}

/*
 * The kernel's place in time: the middle of its launch call, its duration long (the call's
 * middle half when the duration is unknown). The call's own region is CUPTI's, which begins
 * a microsecond or two after launch_start and ends before `end` (measured on an H200); the
 * replayed call lasts many times the kernel, so the middle lies well inside it.
 */
static void place_kernel(uint32_t corr, uint64_t end, const double *values, bool valid)
{
	double d = valid && cuda_metrics.duration >= 0 ? values[cuda_metrics.duration] : 0;
	uint64_t call = end > launch_start ? end - launch_start : 0;
	uint64_t len = d > 0 && d < (double)call ? (uint64_t)d : call / 2;
	uint64_t start = launch_start + (call - len) / 2;

	remember_time(corr, start, start + len);
}

/* The kernel's values: the last range of the window. */
static void write_values(struct range_ctx *r, uint64_t corr_id, uint64_t end)
{
	CUpti_RangeProfiler_GetCounterDataInfo_Params info = {
		.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE
	};
	struct sc_rec_gpu_metrics rec = { .corr_id = corr_id,
					  .agent = r->agent,
					  .count = cuda_metrics.n };
	double values[SC_GPU_METRICS_MAX];

	info.pCounterDataImage = r->data;
	info.counterDataImageSize = r->data_size;
	if (cuptiRangeProfilerGetCounterDataInfo(&info) != CUPTI_SUCCESS || !info.numTotalRanges ||
	    info.numTotalRanges >= WINDOW_RANGES) {
		atomic_fetch_add(&failed_kernels, 1);
		place_kernel((uint32_t)corr_id, end, values, false);
		return;
	}
	atomic_fetch_add(&extra_ranges, info.numTotalRanges - 1);
	if (cuda_config_evaluate(&r->cfg, r->data, r->data_size, info.numTotalRanges - 1,
				 cuda_metrics.names, cuda_metrics.n, values) != CUPTI_SUCCESS) {
		atomic_fetch_add(&failed_kernels, 1);
		place_kernel((uint32_t)corr_id, end, values, false);
		return;
	}
	place_kernel((uint32_t)corr_id, end, values, true);
	rec.ts = cuda_api->now_ns();
	cuda_api->record(SC_REC_GPU_METRICS, 0, &rec.ts, sizeof(rec) - sizeof(rec.hdr), values,
			 (uint32_t)(cuda_metrics.n * sizeof(double)));
}

static void launch_entry(const CUpti_CallbackData *d, bool graph)
{
	struct range_ctx *r;

	if (atomic_load(&capturing))
		return; /* no window while a stream captures */
	if (cuda_metrics.interval_s > 0) {
		cuda_pm_device_used(d->context);
		return;
	}
	if (atomic_load(&stopping) || !cuda_api->active() || !(r = context_of(d->context)))
		return;
	if (!r->obj && !r->failed)
		enable(r);
	if (r->failed || r->paused) {
		pthread_mutex_unlock(&r->lock);
		return;
	}
	if (graph) {
		CUpti_RangeProfiler_Stop_Params st = {
			.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE
		};

		st.pRangeProfilerObject = r->obj;
		cuptiRangeProfilerStop(&st);
	}
	held = r; /* unlocked at the exit */
	held_graph = graph;
	launch_start = cuda_api->now_ns();
}

static void launch_exit(const CUpti_CallbackData *d)
{
	struct range_ctx *r = held;
	CUptiResult rc;
	uint64_t end;

	if (!r)
		return;
	held = NULL;
	if (held_graph) { /* no window: start again */
		if (!r->failed && (rc = start(r)) != CUPTI_SUCCESS)
			note_failure(r, "restarting the range profiler after a graph launch", rc);
		pthread_mutex_unlock(&r->lock);
		return;
	}
	end = cuda_api->now_ns();
	if ((rc = stop_and_decode(r)) != CUPTI_SUCCESS) {
		note_failure(r, "decoding the kernel's counters", rc);
		place_kernel(d->correlationId, end, NULL, false);
	} else {
		write_values(r, d->correlationId, end);
	}
	if (!r->failed && (rc = start(r)) != CUPTI_SUCCESS)
		note_failure(r, "restarting the range profiler", rc);
	pthread_mutex_unlock(&r->lock);
}

/* Stop every context's profiler before a capture begins (no window is open then). */
static void pause_all(void)
{
	pthread_mutex_lock(&table_lock);
	for (unsigned i = 0; i < ncontexts; i++) {
		struct range_ctx *r = &contexts[i];
		CUpti_RangeProfiler_Stop_Params st = {
			.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE
		};

		pthread_mutex_lock(&r->lock);
		if (r->obj && !r->failed && !r->paused) {
			st.pRangeProfilerObject = r->obj;
			cuptiRangeProfilerStop(&st);
			r->paused = true;
		}
		pthread_mutex_unlock(&r->lock);
	}
	pthread_mutex_unlock(&table_lock);
}

static void resume_all(void)
{
	CUptiResult rc;

	pthread_mutex_lock(&table_lock);
	for (unsigned i = 0; i < ncontexts; i++) {
		struct range_ctx *r = &contexts[i];

		pthread_mutex_lock(&r->lock);
		if (r->paused && r->obj && !r->failed && (rc = start(r)) != CUPTI_SUCCESS)
			note_failure(r, "restarting the range profiler after a stream capture", rc);
		r->paused = false;
		pthread_mutex_unlock(&r->lock);
	}
	pthread_mutex_unlock(&table_lock);
}

static bool call_failed(CUpti_CallbackDomain domain, const CUpti_CallbackData *d)
{
	if (!d->functionReturnValue)
		return false;
	return domain == CUPTI_CB_DOMAIN_DRIVER_API ? *(const CUresult *)d->functionReturnValue != 0
						    : *(const int *)d->functionReturnValue != 0;
}

/* Begin and end of stream captures (the outermost call of each, runtime or driver). */
static void capture_call(CUpti_CallbackDomain domain, unsigned site, const CUpti_CallbackData *d)
{
	bool begin = site == SITE_BEGIN_CAPTURE;

	if (d->callbackSite == CUPTI_API_ENTER) {
		if (capture_calls++ == 0 && begin && atomic_fetch_add(&capturing, 1) == 0)
			pause_all();
		return;
	}
	if (!capture_calls || --capture_calls)
		return;
	/* An end ends it, failed or not; a begin that failed began nothing. */
	if (!begin || call_failed(domain, d)) {
		int n = atomic_load(&capturing);

		/* never below 0: an end without a begin (an error of the program) */
		while (n > 0 && !atomic_compare_exchange_weak(&capturing, &n, n - 1))
			;
		if (n == 1)
			resume_all();
	}
}

void cuda_range_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			 const CUpti_CallbackData *d)
{
	unsigned which = domain == CUPTI_CB_DOMAIN_DRIVER_API, site;

	if (!cuda_metrics.n || cbid >= sizeof(sites[0]) || !(site = sites[which][cbid]))
		return;
	if (site == SITE_BEGIN_CAPTURE || site == SITE_END_CAPTURE) {
		capture_call(domain, site, d);
	} else if (d->callbackSite == CUPTI_API_ENTER) {
		if (launch_depth++ == 0)
			launch_entry(d, site == SITE_GRAPH_LAUNCH);
	} else if (launch_depth && --launch_depth == 0) {
		launch_exit(d);
	}
}

static bool starts_with(const char *name, const char *prefix)
{
	return !strncmp(name, prefix, strlen(prefix));
}

/* What a runtime ("cuda") or driver ("cu") function is to the counters. */
static enum site site_of(const char *name, const char *api)
{
	char launch[32], graph[32], begin[48], end[48];

	snprintf(launch, sizeof(launch), "%sLaunch", api);
	snprintf(graph, sizeof(graph), "%sGraphLaunch", api);
	snprintf(begin, sizeof(begin), "%sStreamBeginCapture", api);
	snprintf(end, sizeof(end), "%sStreamEndCapture", api);
	if (starts_with(name, launch) && !strstr(name, "HostFunc"))
		return SITE_LAUNCH;
	if (starts_with(name, graph))
		return SITE_GRAPH_LAUNCH;
	if (starts_with(name, begin))
		return SITE_BEGIN_CAPTURE;
	return starts_with(name, end) ? SITE_END_CAPTURE : SITE_NONE;
}

static void enable_domain(CUpti_SubscriberHandle sub, CUpti_CallbackDomain domain, const char *api,
			  unsigned size)
{
	unsigned char *site = sites[domain == CUPTI_CB_DOMAIN_DRIVER_API];

	for (unsigned cbid = 1; cbid < size; cbid++) {
		const char *name = NULL;
		enum site what;

		if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name &&
		    (what = site_of(name, api)) != SITE_NONE &&
		    cuptiEnableCallback(1, sub, domain, cbid) == CUPTI_SUCCESS)
			site[cbid] = (unsigned char)what;
	}
}

void cuda_range_start(CUpti_SubscriberHandle sub)
{
	if (!cuda_metrics.n)
		return;
	cuda_untimed_kernel_time = kernel_time;
	enable_domain(sub, CUPTI_CB_DOMAIN_RUNTIME_API, "cuda", CUPTI_RUNTIME_TRACE_CBID_SIZE);
	enable_domain(sub, CUPTI_CB_DOMAIN_DRIVER_API, "cu", CUPTI_DRIVER_TRACE_CBID_SIZE);
}

static void disable(struct range_ctx *r)
{
	CUpti_RangeProfiler_Stop_Params st = {
		.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE
	};
	CUpti_RangeProfiler_Disable_Params dis = {
		.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE
	};

	if (!r->obj)
		return;
	st.pRangeProfilerObject = r->obj;
	cuptiRangeProfilerStop(&st);
	dis.pRangeProfilerObject = r->obj;
	cuptiRangeProfilerDisable(&dis);
	r->obj = NULL;
	r->failed = true;
	cuda_config_free(&r->cfg);
	free(r->data);
	free(r->pristine);
	r->data = r->pristine = NULL;
}

/*
 * At exit, before the destructors of CUPTI's profiler libraries (loaded after inject.c's
 * atexit handler, so theirs run first): every profiler off, its host object freed.
 */
static void range_at_exit(void)
{
	atomic_store(&stopping, true);
	pthread_mutex_lock(&table_lock);
	for (unsigned i = 0; i < ncontexts; i++)
		if (contexts[i].obj && !pthread_mutex_trylock(&contexts[i].lock)) {
			disable(&contexts[i]);
			pthread_mutex_unlock(&contexts[i].lock);
		}
	pthread_mutex_unlock(&table_lock);
}

void cuda_range_context_ending(CUcontext ctx)
{
	pthread_mutex_lock(&table_lock);
	for (unsigned i = 0; i < ncontexts; i++)
		if (contexts[i].ctx == ctx && contexts[i].obj &&
		    !pthread_mutex_trylock(&contexts[i].lock)) {
			disable(&contexts[i]);
			contexts[i].ctx = NULL; /* a new context may get the same handle */
			pthread_mutex_unlock(&contexts[i].lock);
		}
	pthread_mutex_unlock(&table_lock);
}

void cuda_range_stop(void)
{
	unsigned long long n;

	atomic_store(&stopping, true);
	if ((n = atomic_load(&extra_ranges)))
		cuda_note(SC_NOTE_INFO,
			  "GPU counters: %llu kernels ran inside another launch's window (graphs, "
			  "library calls) and have no values of their own",
			  n);
	if ((n = atomic_load(&dropped_ranges) + atomic_load(&failed_kernels)))
		cuda_note(SC_NOTE_WARN, "GPU counters: %llu kernel launches got no values", n);
}
