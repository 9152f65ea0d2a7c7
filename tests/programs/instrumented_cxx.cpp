// SPDX-License-Identifier: MIT
// Built with -finstrument-functions: what the compiler hooks must get right beyond plain calls.
//   exceptions   catcher -> thrower (6 calls, 6 deep); the innermost throws, catcher catches:
//                every thrower frame is left by unwinding, and each exit is still recorded
//   signal       signaller raises SIGUSR1: the handler on_usr1 runs nested inside it
//   fork         the child calls child_work 3 times (its own process and profile); the
//                parent never does
#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

static volatile int sink;

__attribute__((noinline)) static void thrower(int n)
{
	if (n == 0)
		throw std::runtime_error("deep");
	thrower(n - 1);
	sink++;
}

__attribute__((noinline)) static void catcher()
{
	try {
		thrower(5);
	} catch (const std::exception &) {
		sink++;
	}
}

static void on_usr1(int)
{
	sink++;
}

__attribute__((noinline)) static void signaller()
{
	std::signal(SIGUSR1, on_usr1);
	std::raise(SIGUSR1);
	sink++;
}

__attribute__((noinline)) static void child_work()
{
	sink++;
}

int main()
{
	catcher();
	signaller();
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 3; i++)
			child_work();
		_exit(0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	std::printf("instrumented_cxx ok %d\n", WEXITSTATUS(status));
	return 0;
}
