/* SPDX-License-Identifier: MIT */
/*
 * Category names in rocpd files (docs/output-formats.md, "Categories"). `rocpd summary`
 * groups regions by the part of the category before its first '_' and keeps only
 * categories of that PREFIX_... form, so a category like "user" would vanish from it.
 * syscope's own categories become names in rocprofiler's style (CUDA's are already
 * written that way by the CUDA plugin, as rocprofiler names its HIP API categories);
 * a category of the user's own (a region API's free text) becomes USER_<text>. The reader
 * maps them back, so a converted database gives the session's own names again.
 */
#include <stdio.h>
#include <string.h>

#include "rocpd.h"

static const struct {
	const char *syscope, *rocpd;
} known[] = {
	{ "user", "USER_REGION" },
	{ "instrumented", "HOST_INSTRUMENTED" },
	{ "mpi", "MPI_API" },
	{ "nccl", "NCCL_API" },
	{ "openmp", "OPENMP_API" },
	{ "pthread", "PTHREAD_API" },
	{ "python", "PYTHON_FUNCTION" },
	{ "user_counter", "COUNTER_USER" },
	{ "syscope", "SYSCOPE_CONTROL" }, /* recording paused and resumed */
	{ "progress", "PROGRESS_POINT" },
};

#define USER_PREFIX "USER_"

const char *sc_rocpd_category(const char *category, char *buf, size_t n)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(category, known[i].syscope))
			return known[i].rocpd;
	/* Already of the PREFIX_ form (CUDA_RUNTIME_API, timer_sampling...): kept. */
	if (strchr(category, '_') && *category != '_')
		return category;
	snprintf(buf, n, USER_PREFIX "%s", category);
	return buf;
}

const char *sc_rocpd_category_of_file(const char *category)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(category, known[i].rocpd))
			return known[i].syscope;
	if (!strncmp(category, USER_PREFIX, strlen(USER_PREFIX)) &&
	    !strchr(category + strlen(USER_PREFIX), '_') && category[strlen(USER_PREFIX)])
		return category + strlen(USER_PREFIX);
	return category;
}
