/* SPDX-License-Identifier: MIT */
/*
 * GPU hardware counters per time interval (--gpu-events with --gpu-events-interval) with
 * CUPTI's PM sampling: the device samples its counters every interval into a hardware
 * buffer; a thread of ours decodes it every 100 ms and writes each completed sample as a
 * value of a counter track per GPU and metric ("GPU0 sm__throughput...").
 *
 * PM sampling has no replay: the metrics must fit one pass, so those that do not (in the
 * order given) are left out and named in a note. A device starts at the first kernel launch
 * into one of its contexts, and stops at the end of the process (the last samples decoded
 * first).
 */
#include "counters.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PM_DEVICES 16
#define PM_MAX_SAMPLES 2048u
#define PM_HW_BUFFER (64u << 20)

struct pm_device {
	uint32_t dev;
	CUpti_PmSampling_Object *obj;
	struct cuda_config cfg;
	const char *names[SC_GPU_METRICS_MAX];
	int tracks[SC_GPU_METRICS_MAX];
	unsigned n;
	uint8_t *data, *pristine;
	size_t data_size;
	int64_t offset; /* sample timestamp + offset = the recording clock */
	bool offset_known;
	uint64_t samples, overflows;
};

static struct pm_device devices[MAX_PM_DEVICES];
static _Atomic unsigned char started[MAX_PM_DEVICES];
static unsigned ndevices;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t decoder;
static bool decoder_running;
static atomic_bool stop_decoder;
static atomic_flag exit_hook = ATOMIC_FLAG_INIT;

static uint64_t clock_ns(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/*
 * The samples' clock: CUPTI's, which is the recording clock once inject.c gave it ours
 * (measured on an H200), else the GPU's timer near the host's real time. Taken from the
 * first sample: within a minute of the recording clock it is that clock, within a minute of
 * CLOCK_REALTIME real time (moved onto the recording clock by their difference now);
 * otherwise the first sample is taken to have ended now.
 */
static void learn_offset(struct pm_device *d, uint64_t end_ts)
{
	uint64_t now = cuda_api->now_ns(), real = clock_ns(CLOCK_REALTIME);
	const int64_t minute = 60000000000ll;
	int64_t to_real = (int64_t)(end_ts - real), to_now = (int64_t)(end_ts - now);

	if (llabs(to_now) < minute)
		d->offset = 0;
	else if (llabs(to_real) < minute)
		d->offset = (int64_t)(now - real);
	else
		d->offset = (int64_t)(now - end_ts);
	d->offset_known = true;
}

static const char *unit_of(const char *metric)
{
	if (strstr(metric, ".pct"))
		return "%";
	if (strstr(metric, ".per_second"))
		return "1/s";
	if (strstr(metric, "bytes"))
		return "bytes";
	if (strstr(metric, "cycles"))
		return "cycles";
	return "";
}

/* The metrics that fit one pass, in order; a note names those left out. */
static bool choose_metrics(struct pm_device *d, const char *chip, const uint8_t *avail)
{
	char left[512] = "";
	size_t used = 0;

	for (unsigned i = 0; i < cuda_metrics.n; i++) {
		struct cuda_config c;

		d->names[d->n] = cuda_metrics.names[i];
		if (cuda_config_make(CUPTI_PROFILER_TYPE_PM_SAMPLING, chip, avail, d->names,
				     d->n + 1, &c) == CUPTI_SUCCESS &&
		    c.passes == 1)
			d->n++;
		else if (used < sizeof(left))
			used += (size_t)snprintf(left + used, sizeof(left) - used, "%s%s",
						 used ? ", " : "", cuda_metrics.names[i]);
		cuda_config_free(&c);
	}
	if (*left)
		cuda_note(
			SC_NOTE_WARN,
			"GPU %u: PM sampling leaves out %s (unknown to %s, or more than one pass "
			"with the others; per-kernel counters, without --gpu-events-interval, can "
			"replay)",
			d->dev, left, chip);
	return d->n > 0;
}

static CUptiResult availability(uint32_t dev, uint8_t **image)
{
	CUpti_PmSampling_GetCounterAvailability_Params p = {
		.structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE
	};
	CUptiResult rc;

	*image = NULL;
	p.deviceIndex = dev;
	if ((rc = cuptiPmSamplingGetCounterAvailability(&p)) != CUPTI_SUCCESS)
		return rc;
	if (!(*image = malloc(p.counterAvailabilityImageSize)))
		return CUPTI_ERROR_OUT_OF_MEMORY;
	p.pCounterAvailabilityImage = *image;
	return cuptiPmSamplingGetCounterAvailability(&p);
}

static CUptiResult configure(struct pm_device *d)
{
	CUpti_PmSampling_SetConfig_Params sc = {
		.structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE
	};
	CUpti_PmSampling_GetCounterDataSize_Params ds = {
		.structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE
	};
	CUpti_PmSampling_CounterDataImage_Initialize_Params ci = {
		.structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE
	};
	CUptiResult rc;

	sc.pPmSamplingObject = d->obj;
	sc.configSize = d->cfg.size;
	sc.pConfig = d->cfg.image;
	sc.hardwareBufferSize = PM_HW_BUFFER;
	sc.samplingInterval = (uint64_t)(cuda_metrics.interval_s * 1e9 + 0.5);
	sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
	sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_LATEST;
	if ((rc = cuptiPmSamplingSetConfig(&sc)) != CUPTI_SUCCESS)
		return rc;
	ds.pPmSamplingObject = d->obj;
	ds.pMetricNames = d->names;
	ds.numMetrics = d->n;
	ds.maxSamples = PM_MAX_SAMPLES;
	if ((rc = cuptiPmSamplingGetCounterDataSize(&ds)) != CUPTI_SUCCESS)
		return rc;
	d->data_size = ds.counterDataSize;
	d->data = malloc(d->data_size);
	d->pristine = malloc(d->data_size);
	if (!d->data || !d->pristine)
		return CUPTI_ERROR_OUT_OF_MEMORY;
	ci.pPmSamplingObject = d->obj;
	ci.counterDataSize = d->data_size;
	ci.pCounterData = d->data;
	if ((rc = cuptiPmSamplingCounterDataImageInitialize(&ci)) != CUPTI_SUCCESS)
		return rc;
	memcpy(d->pristine, d->data, d->data_size);
	return CUPTI_SUCCESS;
}

static void write_sample(struct pm_device *d, size_t index)
{
	CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {
		.structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE
	};
	double v[SC_GPU_METRICS_MAX];

	si.pPmSamplingObject = d->obj;
	si.pCounterDataImage = d->data;
	si.counterDataImageSize = d->data_size;
	si.sampleIndex = index;
	if (cuptiPmSamplingCounterDataGetSampleInfo(&si) != CUPTI_SUCCESS ||
	    cuda_config_evaluate(&d->cfg, d->data, d->data_size, index, d->names, d->n, v) !=
		    CUPTI_SUCCESS)
		return;
	/* The first sample reaches back to before the start (measured: seconds): left out. */
	if (si.endTimestamp - si.startTimestamp > 4 * (uint64_t)(cuda_metrics.interval_s * 1e9))
		return;
	if (!d->offset_known)
		learn_offset(d, si.endTimestamp);
	for (unsigned m = 0; m < d->n; m++)
		if (d->tracks[m] >= 0 && !isnan(v[m]))
			cuda_api->counter_value(d->tracks[m],
						(uint64_t)((int64_t)si.endTimestamp + d->offset),
						v[m]);
	d->samples++;
}

/* Decode what the device has sampled since the last call. */
static void decode(struct pm_device *d)
{
	for (int round = 0; round < 64; round++) {
		CUpti_PmSampling_DecodeData_Params dd = {
			.structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE
		};
		CUpti_PmSampling_GetCounterDataInfo_Params gi = {
			.structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE
		};
		CUptiResult rc;

		dd.pPmSamplingObject = d->obj;
		dd.pCounterDataImage = d->data;
		dd.counterDataImageSize = d->data_size;
		rc = cuptiPmSamplingDecodeData(&dd);
		if (rc == CUPTI_ERROR_OUT_OF_MEMORY || dd.overflow)
			d->overflows++;
		gi.pCounterDataImage = d->data;
		gi.counterDataImageSize = d->data_size;
		if (cuptiPmSamplingGetCounterDataInfo(&gi) == CUPTI_SUCCESS)
			for (size_t i = 0; i < gi.numCompletedSamples; i++)
				write_sample(d, i);
		memcpy(d->data, d->pristine, d->data_size);
		if (rc != CUPTI_SUCCESS ||
		    dd.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL)
			break;
	}
}

static void *decode_loop(void *arg)
{
	struct timespec period = { 0, 100 * 1000 * 1000 };

	(void)arg;
	while (!atomic_load(&stop_decoder)) {
		nanosleep(&period, NULL);
		pthread_mutex_lock(&lock);
		for (unsigned i = 0; i < ndevices; i++)
			if (devices[i].obj)
				decode(&devices[i]);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void start_device(struct pm_device *d)
{
	CUpti_PmSampling_Enable_Params en = { .structSize =
						      CUpti_PmSampling_Enable_Params_STRUCT_SIZE };
	CUpti_PmSampling_Start_Params st = { .structSize =
						     CUpti_PmSampling_Start_Params_STRUCT_SIZE };
	const char *chip;
	uint8_t *avail = NULL;
	CUptiResult rc;
	const char *what = "cuptiProfilerInitialize";

	if ((rc = cuda_profiler_init()) != CUPTI_SUCCESS)
		goto fail;
	what = "cuptiDeviceGetChipName";
	rc = CUPTI_ERROR_NOT_SUPPORTED;
	if (!(chip = cuda_chip_name(d->dev)))
		goto fail;
	what = "cuptiPmSamplingGetCounterAvailability";
	if ((rc = availability(d->dev, &avail)) != CUPTI_SUCCESS)
		goto fail;
	if (!choose_metrics(d, chip, avail)) {
		free(avail);
		return;
	}
	rc = cuda_config_make(CUPTI_PROFILER_TYPE_PM_SAMPLING, chip, avail, d->names, d->n,
			      &d->cfg);
	free(avail);
	avail = NULL;
	what = "the PM sampling configuration";
	if (rc != CUPTI_SUCCESS)
		goto fail;
	en.deviceIndex = d->dev;
	what = "cuptiPmSamplingEnable";
	if ((rc = cuptiPmSamplingEnable(&en)) != CUPTI_SUCCESS)
		goto fail;
	d->obj = en.pPmSamplingObject;
	what = "cuptiPmSamplingSetConfig";
	if ((rc = configure(d)) != CUPTI_SUCCESS)
		goto fail;
	st.pPmSamplingObject = d->obj;
	what = "cuptiPmSamplingStart";
	if ((rc = cuptiPmSamplingStart(&st)) != CUPTI_SUCCESS)
		goto fail;
	for (unsigned m = 0; m < d->n; m++) {
		char name[160];

		snprintf(name, sizeof(name), "GPU%u %s", d->dev, d->names[m]);
		d->tracks[m] = cuda_api->counter_track(name, unit_of(d->names[m]));
	}
	if (!atomic_flag_test_and_set(&exit_hook))
		atexit(cuda_pm_stop); /* before the profiler libraries' destructors */
	cuda_note(SC_NOTE_INFO, "GPU %u (%s): PM sampling of %u metrics every %g ms", d->dev, chip,
		  d->n, cuda_metrics.interval_s * 1e3);
	return;
fail:
	free(avail);
	cuda_note(SC_NOTE_WARN, "GPU counters off on GPU %u: %s failed: %s", d->dev, what,
		  cuda_counters_why(rc));
	if (d->obj) {
		CUpti_PmSampling_Disable_Params dis = {
			.structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE
		};

		dis.pPmSamplingObject = d->obj;
		cuptiPmSamplingDisable(&dis);
		d->obj = NULL;
	}
}

void cuda_pm_device_used(CUcontext ctx)
{
	uint32_t dev = 0;

	if (cuptiGetDeviceId(ctx, &dev) != CUPTI_SUCCESS || dev >= MAX_PM_DEVICES ||
	    atomic_exchange(&started[dev], 1) || !cuda_api->active())
		return;
	pthread_mutex_lock(&lock);
	if (ndevices < MAX_PM_DEVICES) {
		struct pm_device *d = &devices[ndevices++];

		d->dev = dev;
		start_device(d);
		if (d->obj && !decoder_running)
			decoder_running = !pthread_create(&decoder, NULL, decode_loop, NULL);
	}
	pthread_mutex_unlock(&lock);
}

void cuda_pm_stop(void)
{
	if (decoder_running) {
		atomic_store(&stop_decoder, true);
		pthread_join(decoder, NULL);
		decoder_running = false;
	}
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < ndevices; i++) {
		struct pm_device *d = &devices[i];
		CUpti_PmSampling_Stop_Params st = {
			.structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE
		};
		CUpti_PmSampling_Disable_Params dis = {
			.structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE
		};

		if (!d->obj)
			continue;
		decode(d);
		st.pPmSamplingObject = d->obj;
		cuptiPmSamplingStop(&st);
		dis.pPmSamplingObject = d->obj;
		cuptiPmSamplingDisable(&dis);
		d->obj = NULL;
		if (d->overflows)
			cuda_note(SC_NOTE_WARN,
				  "GPU %u: the PM sampling buffer overflowed %llu times: samples "
				  "were lost (a longer --gpu-events-interval keeps them)",
				  d->dev, (unsigned long long)d->overflows);
		if (!d->samples)
			cuda_note(SC_NOTE_WARN, "GPU %u: PM sampling gave no samples", d->dev);
	}
	pthread_mutex_unlock(&lock);
}
