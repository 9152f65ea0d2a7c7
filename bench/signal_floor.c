/* SPDX-License-Identifier: MIT */
/*
 * The floor of in-process sampling on this machine: the same fixed work as cpubound's
 * single thread, interrupted by a perf task-clock overflow signal (what syscope's CPU-time
 * sampler uses) at the given rate, with a handler that does nothing. Whatever a sampler
 * costs above this is its own; this part is the kernel's and the hypervisor's.
 *
 *   signal_floor HZ UNITS
 */
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile long signals;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	signals++;
}

__attribute__((noinline)) static double kernel_inner(double x)
{
	for (int i = 0; i < 20000; i++)
		x = x * 1.0000001 + 1.0 / (x + 3.0);
	return x;
}

int main(int argc, char **argv)
{
	double hz = argc > 1 ? atof(argv[1]) : 1000, x = 0;
	long units = argc > 2 ? atol(argv[2]) : 20000;
	struct f_owner_ex owner = { F_OWNER_TID, (pid_t)syscall(SYS_gettid) };
	struct perf_event_attr a;
	struct sigaction sa;
	struct timespec t0, t1;
	struct rusage ru;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGSTKFLT, &sa, NULL);
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = (unsigned long long)(1e9 / hz);
	a.disabled = 1;
	a.exclude_kernel = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0 || fcntl(fd, F_SETFL, O_ASYNC) || fcntl(fd, F_SETSIG, SIGSTKFLT) ||
	    fcntl(fd, F_SETOWN_EX, &owner)) {
		perror("signal_floor: perf_event_open");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	for (long u = 0; u < units; u++)
		x += kernel_inner((double)u);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &ru);
	printf("signal_floor: %ld signals, %g\n", signals, x);
	printf("cpubound-times: wall=%.6f cpu=%.6f\n",
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9,
	       (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6);
	return 0;
}
