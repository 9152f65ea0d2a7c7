/* SPDX-License-Identifier: MIT */
/*
 * Uses signal SIG for itself, as a program may use any signal syscope's samplers could
 * take: installs a handler (in main, or "before" syscope starts: from .preinit_array, which
 * runs before every library's constructor), burns CPU time, then sends itself the signal in
 * every way a program can: kill, tgkill, sigqueue, and as the F_SETSIG signal of a pipe of
 * its own. It prints how many signals it sent and how many its handler saw, and exits 0 only
 * if the two agree and each arrived with the siginfo it was sent with.
 *
 * usage: own_signal SIG before|after SECONDS
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fixture.h"

static int own_sig;
static volatile sig_atomic_t received, mismatched;
static volatile int expected_code, expected_fd;

static void on_own_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	received++;
	if (sig != own_sig || si->si_code != expected_code ||
	    (expected_code == POLL_IN && si->si_fd != expected_fd))
		mismatched++;
}

static void install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_own_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(own_sig, &sa, NULL);
}

static void install_early(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc > 2 && !strcmp(argv[2], "before")) {
		own_sig = atoi(argv[1]);
		install();
	}
}

__attribute__((section(".preinit_array"), used)) static void (*preinit)(int, char **,
									char **) = install_early;

NOINLINE static double own_signal_work(double seconds)
{
	double end = fixture_cpu_now() + seconds, x = 1;

	while (fixture_cpu_left(end))
		for (int i = 0; i < 100000; i++)
			x = x * 1.0000001 + 0.5;
	return x;
}

/* Send one signal and wait (boundedly) until the handler has seen it. */
static void wait_for(int before)
{
	double end = fixture_now() + 5;

	while (received == before && fixture_now() < end)
		usleep(1000);
}

static int send_all(void)
{
	int sent = 0, fds[2];
	union sigval v = { .sival_int = 7 };

	for (int i = 0; i < 3; i++, sent++) {
		int before = received;

		expected_code = SI_USER;
		kill(getpid(), own_sig);
		wait_for(before);
	}
	for (int i = 0; i < 3; i++, sent++) {
		int before = received;

		expected_code = SI_TKILL;
		syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), own_sig);
		wait_for(before);
	}
	for (int i = 0; i < 3; i++, sent++) {
		int before = received;

		expected_code = SI_QUEUE;
		sigqueue(getpid(), own_sig, v);
		wait_for(before);
	}
	if (!pipe(fds)) {
		struct f_owner_ex owner = { .type = F_OWNER_TID,
					    .pid = (pid_t)syscall(SYS_gettid) };
		int before = received;

		expected_code = POLL_IN;
		expected_fd = fds[0];
		fcntl(fds[0], F_SETSIG, own_sig);
		fcntl(fds[0], F_SETOWN_EX, &owner);
		fcntl(fds[0], F_SETFL, O_ASYNC | O_NONBLOCK);
		if (write(fds[1], "x", 1) == 1)
			sent++;
		wait_for(before);
	}
	return sent;
}

int main(int argc, char **argv)
{
	int sent;

	if (argc < 4) {
		fprintf(stderr, "usage: own_signal SIG before|after SECONDS\n");
		return 2;
	}
	own_sig = atoi(argv[1]);
	if (strcmp(argv[2], "before"))
		install();
	fixture_sink = own_signal_work(atof(argv[3]));
	sent = send_all();
	printf("own_signal: sent %d received %d mismatched %d\n", sent, (int)received,
	       (int)mismatched);
	return sent == received && !mismatched ? 0 : 1;
}
