/* SPDX-License-Identifier: MIT */
/*
 * The part of NVML's interface syscope uses, declared here because the CUDA toolkit ships no
 * nvml.h (the driver brings libnvidia-ml.so.1). Names, numbers and layouts are NVML's own
 * (API 13); functions are looked up by their versioned names with dlsym.
 */
#ifndef SYSCOPE_GPU_NVML_API_H
#define SYSCOPE_GPU_NVML_API_H

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef int nvmlReturn_t;

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
};

enum {
	NVML_TEMPERATURE_GPU = 0
};
enum {
	NVML_CLOCK_SM = 1,
	NVML_CLOCK_MEM = 2
};

/* nvmlDeviceGetFieldValues field ids */
enum {
	NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138, /* KiB, cumulative */
	NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139,
	NVML_FI_DEV_POWER_INSTANT = 186,       /* mW */
	NVML_FI_DEV_PCIE_COUNT_TX_BYTES = 197, /* bytes, cumulative */
	NVML_FI_DEV_PCIE_COUNT_RX_BYTES = 198,
};

enum {
	NVML_VALUE_TYPE_DOUBLE = 0,
	NVML_VALUE_TYPE_UNSIGNED_INT = 1,
	NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
	NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
	NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
	NVML_VALUE_TYPE_SIGNED_INT = 5,
	NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};

typedef struct {
	unsigned int gpu, memory; /* % of the driver's sample period */
} nvmlUtilization_t;

typedef struct {
	unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;

typedef union {
	double dVal;
	unsigned int uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	long long sllVal;
	int siVal;
	unsigned short usVal;
} nvmlValue_t;

typedef struct {
	unsigned int fieldId;
	unsigned int scopeId; /* e.g. the NVLink link; ~0u: all of them */
	long long timestamp;
	long long latencyUsec;
	int valueType;
	nvmlReturn_t nvmlReturn; /* this entry's own result */
	nvmlValue_t value;
} nvmlFieldValue_t; /* 40 bytes */

#endif /* SYSCOPE_GPU_NVML_API_H */
