/* SPDX-License-Identifier: MIT */
/*
 * late_signal's library: its destructor, which runs after those of the libraries loaded
 * before it (syscope's runtime among them), sends the process SIGTERM, as a signal may come
 * while the process is already exiting.
 */
#include <signal.h>

int late_signal_armed;

void late_signal_arm(void)
{
	late_signal_armed = 1;
}

__attribute__((destructor)) static void late_signal_fire(void)
{
	if (late_signal_armed)
		raise(SIGTERM);
}
