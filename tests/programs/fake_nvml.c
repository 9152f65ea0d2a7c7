/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for the NVIDIA driver's libnvidia-ml.so.1 with known answers, so that GPU
 * telemetry is tested on machines without a GPU (put its folder on LD_LIBRARY_PATH).
 *
 * FAKE_NVML_GPUS GPUs (default 2), named "Fake GPU", UUID GPU-fake-000<i>. Per GPU i:
 * utilization 40+i % (memory 10+i %), temperature 50+i C, memory used (i+1) GiB, SM clock
 * 1980 MHz, memory clock 2619 MHz, PCIe counters that grow by 1 MiB out and 2 MiB in per
 * read. Power: GPU 0 has the instantaneous field (123.456 W), the others only the average
 * (200 W). NVLink and the encoder are not supported; the decoder answers 7 % after 5 ms (a
 * slow query). FAKE_NVML_INIT_FAIL=1: nvmlInit fails.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

#include "../../src/gpu/nvml/nvml_api.h"

struct nvmlDevice_st {
	unsigned index;
	unsigned long long pcie_tx, pcie_rx;
};

static struct nvmlDevice_st devices[8];

static unsigned ngpus(void)
{
	const char *n = getenv("FAKE_NVML_GPUS");
	unsigned v = n ? (unsigned)atoi(n) : 2;

	return v > 8 ? 8 : v;
}

nvmlReturn_t nvmlInit_v2(void)
{
	const char *fail = getenv("FAKE_NVML_INIT_FAIL");

	return fail && *fail == '1' ? 9 /* DRIVER_NOT_LOADED */ : NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
	return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case 9:
		return "Driver Not Loaded";
	}
	return "Unknown Error";
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned len)
{
	snprintf(v, len, "999.1-fake");
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count)
{
	*count = ngpus();
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
	if (i >= ngpus())
		return 2; /* INVALID_ARGUMENT */
	devices[i].index = i;
	*d = &devices[i];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned len)
{
	(void)d;
	snprintf(name, len, "Fake GPU");
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned len)
{
	snprintf(uuid, len, "GPU-fake-%04u", d->index);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
	u->gpu = 40 + d->index;
	u->memory = 10 + d->index;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *t)
{
	if (sensor != NVML_TEMPERATURE_GPU)
		return 2;
	*t = 50 + d->index;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *mw)
{
	(void)d;
	*mw = 200000;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	m->total = 141ull << 30;
	m->used = (d->index + 1ull) << 30;
	m->free = m->total - m->used;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned *mhz)
{
	(void)d;
	*mhz = type == NVML_CLOCK_SM ? 1980 : 2619;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t *f)
{
	for (int i = 0; i < n; i++) {
		f[i].nvmlReturn = NVML_SUCCESS;
		f[i].valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
		switch (f[i].fieldId) {
		case NVML_FI_DEV_POWER_INSTANT:
			if (d->index != 0)
				f[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
			f[i].valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
			f[i].value.uiVal = 123456;
			break;
		case NVML_FI_DEV_PCIE_COUNT_TX_BYTES:
			f[i].value.ullVal = d->pcie_tx += 1 << 20;
			break;
		case NVML_FI_DEV_PCIE_COUNT_RX_BYTES:
			f[i].value.ullVal = d->pcie_rx += 2 << 20;
			break;
		default:
			f[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
		}
	}
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t d, unsigned *pct, unsigned *period)
{
	(void)d;
	(void)pct;
	(void)period;
	return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t d, unsigned *pct, unsigned *period)
{
	struct timespec ts = { 0, 5000000 };

	(void)d;
	nanosleep(&ts, NULL);
	*pct = 7;
	*period = 1000000;
	return NVML_SUCCESS;
}
