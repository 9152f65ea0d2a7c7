// SPDX-License-Identifier: MIT
/*
 * For test_attach_more.py: a CUDA program started without syscope, attached to while it
 * runs. Its main thread launches loop_add on one buffer for argv[1] seconds (default 20),
 * about a thousand times a second (a millisecond's pause after each: a session of modest
 * size), copying one value back every 100 launches. A line "burst N" on stdin makes it
 * launch burst_add N times next (answered "burst N done" once they finished), "quit" ends the
 * loop early. At the end it checks the buffers on the host: "attach_cuda ok loops=L bursts=B"
 * and exit 0 when every value is what the launches made, "attach_cuda wrong ..." and 1 if not.
 * With --late as argv[2] it prints its pid before any CUDA call and starts CUDA at a line
 * "init" ("cuda ready"): CUDA starts while the process is attached.
 */
#include <atomic>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N 4096

__global__ void loop_add(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] += 1.0f;
}

__global__ void burst_add(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] += 2.0f;
}

static std::atomic<int> burst_asked, quit;

static void *commands(void *arg)
{
	char line[64];
	int n;

	(void)arg;
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "burst %d", &n) == 1 && n > 0)
			burst_asked.store(n);
		else if (!strncmp(line, "quit", 4))
			break;
	}
	quit.store(1);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool all_equal(const float *dev, float want)
{
	static float host[N];

	if (cudaMemcpy(host, dev, sizeof(host), cudaMemcpyDeviceToHost) != cudaSuccess)
		return false;
	for (int i = 0; i < N; i++)
		if (host[i] != want)
			return false;
	return true;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 20, end;
	long loops = 0, bursts = 0;
	float *a, *b, probe;
	pthread_t t;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2 && !strcmp(argv[2], "--late")) {
		char line[64];

		printf("pid=%d\n", (int)getpid());
		while (fgets(line, sizeof(line), stdin) && strncmp(line, "init", 4))
			;
	}
	if (cudaMalloc(&a, N * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&b, N * sizeof(float)) != cudaSuccess) {
		printf("attach_cuda: no GPU\n");
		return 2;
	}
	cudaMemset(a, 0, N * sizeof(float));
	cudaMemset(b, 0, N * sizeof(float));
	cudaDeviceSynchronize();
	pthread_create(&t, NULL, commands, NULL);
	if (argc > 2)
		printf("cuda ready\n");
	else
		printf("pid=%d\n", (int)getpid());
	end = now_s() + seconds;
	while (!quit.load() && now_s() < end) {
		int n = burst_asked.exchange(0);

		for (int i = 0; i < n; i++)
			burst_add<<<N / 256, 256>>>(b, N);
		bursts += n;
		if (n) {
			cudaDeviceSynchronize();
			printf("burst %d done\n", n);
		}
		loop_add<<<N / 256, 256>>>(a, N);
		if (++loops % 100 == 0)
			cudaMemcpy(&probe, a, sizeof(probe), cudaMemcpyDeviceToHost);
		usleep(1000);
	}
	cudaDeviceSynchronize();
	if (cudaGetLastError() == cudaSuccess && all_equal(a, (float)loops) &&
	    all_equal(b, 2.0f * (float)bursts)) {
		printf("attach_cuda ok loops=%ld bursts=%ld\n", loops, bursts);
		return 0;
	}
	printf("attach_cuda wrong loops=%ld bursts=%ld\n", loops, bursts);
	return 1;
}
