/* SPDX-License-Identifier: MIT */
/* What every file of libsyscope-cuda.so uses: the plugin table, notes, errors, flushing. */
#include "cuda_common.h"

#include <stdarg.h>
#include <stdio.h>

const struct sc_plugin_api *cuda_api;

void cuda_note(enum sc_note_level level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (cuda_api)
		cuda_api->note(level, buf);
}

const char *cuda_error(CUptiResult rc)
{
	const char *s = NULL;

	if (cuptiGetResultString(rc, &s) != CUPTI_SUCCESS || !s)
		s = "unknown CUPTI error";
	return s;
}

void cuda_flush(bool forced)
{
	cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
}
