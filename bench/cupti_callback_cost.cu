// SPDX-License-Identifier: MIT
// What enabled CUPTI callbacks cost a kernel launch, without syscope: CPU ns a launch of an
// empty kernel (20 000, 6 us of busy wait after each so that the GPU queue never holds the
// launches back; the wait subtracted) with no callback enabled, the runtime's
// cudaLaunch* callbacks, those and the driver's cuLaunch* (what the Python call sites
// enable), the driver's alone, and the NVTX domain; 5 rounds.
// Build: nvcc -O2 -o cupti_callback_cost bench/cupti_callback_cost.cu -lcupti
//        (with -I/-L the CUPTI folders where they are not the toolkit's)
#include <cupti.h>
#include <cstdio>
#include <cstring>
#include <chrono>
__global__ void k()
{
}
static void CUPTIAPI cb(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *)
{
}
static CUpti_SubscriberHandle s;
double t()
{
	int n = 20000;
	auto a = std::chrono::steady_clock::now();
	for (int i = 0; i < n; i++) {
		k<<<1, 1>>>();
		auto w = std::chrono::steady_clock::now();
		while (std::chrono::steady_clock::now() - w < std::chrono::microseconds(6))
			;
	}
	cudaDeviceSynchronize();
	return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a)
			       .count() /
		       n * 1000 -
	       6000;
}
void en(int on, CUpti_CallbackDomain d, int size, const char *p)
{
	for (int c = 1; c < size; c++) {
		const char *nm = 0;
		if (cuptiGetCallbackName(d, c, &nm) == CUPTI_SUCCESS && nm &&
		    !strncmp(nm, p, strlen(p)))
			cuptiEnableCallback(on, s, d, c);
	}
}
int main()
{
	k<<<1, 1>>>();
	cudaDeviceSynchronize();
	cuptiSubscribe(&s, cb, 0);
	for (int r = 0; r < 5; r++) {
		printf("none %.0f ", t());
		en(1, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, "cudaLaunch");
		printf("rt %.0f ", t());
		en(1, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, "cuLaunch");
		printf("rt+drv %.0f ", t());
		en(0, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, "cudaLaunch");
		printf("drv %.0f ", t());
		en(0, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, "cuLaunch");
		cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_NVTX);
		printf("nvtx %.0f\n", t());
		cuptiEnableDomain(0, s, CUPTI_CB_DOMAIN_NVTX);
	}
}
