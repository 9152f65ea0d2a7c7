/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int sc_log_verbosity;

static const char *const level_tags[] = {
	[SC_LOG_ERROR] = "error: ", [SC_LOG_WARN] = "warning: ", [SC_LOG_INFO] = "",
	[SC_LOG_DEBUG] = "debug: ", [SC_LOG_TRACE] = "trace: ",
};

static void vlog(enum sc_log_level level, const char *fmt, va_list ap)
{
	/* One fprintf per line keeps concurrent messages from interleaving mid-line. */
	char line[2048];

	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "syscope: %s%s\n", level_tags[level], line);
}

void sc_log(enum sc_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > SC_LOG_WARN && (int)level - 1 > sc_log_verbosity)
		return;
	if (level == SC_LOG_WARN && sc_log_verbosity < 0) /* errors only */
		return;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

void sc_die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(SC_LOG_ERROR, fmt, ap);
	va_end(ap);
	exit(status);
}
