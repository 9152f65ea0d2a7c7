// SPDX-License-Identifier: MIT
// NVTX beyond push/pop with ASCII strings, for tests/integration/test_cuda.py; checked there:
//
//   thread   nvtxNameOsThreadA names the main thread "nvtx-main"
//   domain   "my domain", with the registered string "registered step": one push/pop range
//            in that domain with a uint64 payload of 42
//   wide     one push/pop range with a wide-character message: "wide range \u2713"
//   start    "cross-thread": started by the main thread, ended 20 ms later by another thread
//   mark     "mark with payload", double payload 2.5 (nvtxMarkEx)
//   stream   a stream named "io stream" (nvtxNameCudaStreamA) running one kernel
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCudaRt.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

__global__ void tick(int *x)
{
	*x += 1;
}

static void *ender(void *arg)
{
	usleep(20000);
	nvtxRangeEnd(*(nvtxRangeId_t *)arg);
	return NULL;
}

int main(void)
{
	nvtxEventAttributes_t a = {};
	cudaStream_t s;
	pthread_t t;
	int *x;

	if (cudaFree(0) != cudaSuccess) /* CUDA, and with it the tracer, first */
		return 2;
	nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "nvtx-main");

	nvtxDomainHandle_t d = nvtxDomainCreateA("my domain");
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = nvtxDomainRegisterStringA(d, "registered step");
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
	a.payload.ullValue = 42;
	nvtxDomainRangePushEx(d, &a);
	usleep(1000);
	nvtxDomainRangePop(d);

	/* CUPTI 13 does not pass on the W functions (nvtxRangePushW); a wide message in the
	 * attributes of an Ex call it does. */
	nvtxEventAttributes_t w = {};
	w.version = NVTX_VERSION;
	w.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	w.messageType = NVTX_MESSAGE_TYPE_UNICODE;
	w.message.unicode = L"wide range \u2713";
	nvtxRangePushEx(&w);
	nvtxRangePop();

	nvtxRangeId_t id = nvtxRangeStartA("cross-thread");
	pthread_create(&t, NULL, ender, &id);
	pthread_join(t, NULL);

	nvtxEventAttributes_t m = {};
	m.version = NVTX_VERSION;
	m.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	m.messageType = NVTX_MESSAGE_TYPE_ASCII;
	m.message.ascii = "mark with payload";
	m.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
	m.payload.dValue = 2.5;
	nvtxMarkEx(&m);

	if (cudaStreamCreate(&s) != cudaSuccess || cudaMalloc(&x, sizeof(int)) != cudaSuccess)
		return 2;
	nvtxNameCudaStreamA(s, "io stream");
	tick<<<1, 1, 0, s>>>(x);
	if (cudaStreamSynchronize(s) != cudaSuccess)
		return 2;
	cudaFree(x);
	cudaStreamDestroy(s);
	nvtxDomainDestroy(d);
	printf("nvtx_features ok\n");
	return 0;
}
