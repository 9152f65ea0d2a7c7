/* SPDX-License-Identifier: MIT */
/*
 * The names of the CUDA runtime and driver API functions (CUPTI's callback ids), and which of
 * them are traced: the include/exclude regexes of --cuda-api-include/--cuda-api-exclude.
 */
#include "api_names.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct api_table {
	CUpti_CallbackDomain domain;
	unsigned size;
	char **names; /* without CUPTI's _vNNNN suffix */
	bool *traced;
};

static struct api_table runtime_table = { .domain = CUPTI_CB_DOMAIN_RUNTIME_API,
					  .size = CUPTI_RUNTIME_TRACE_CBID_SIZE };
static struct api_table driver_table = { .domain = CUPTI_CB_DOMAIN_DRIVER_API,
					 .size = CUPTI_DRIVER_TRACE_CBID_SIZE };

const char *cuda_api_traced_name(bool runtime, uint32_t cbid)
{
	const struct api_table *tab = runtime ? &runtime_table : &driver_table;

	return tab->traced && cbid < tab->size && tab->traced[cbid] ? tab->names[cbid] : NULL;
}

/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel"; "cuMemAlloc_v2" stays (a real name). */
static char *display_name(const char *name)
{
	const char *v = strrchr(name, '_');
	size_t len = strlen(name);

	if (v && v[1] == 'v' && strlen(v + 2) >= 4 && strspn(v + 2, "0123456789") == strlen(v + 2))
		len = (size_t)(v - name);
	return strndup(name, len);
}

static bool compile(regex_t *re, const char *pattern, const char *setting)
{
	char err[200];
	int rc;

	if (!pattern || !*pattern)
		return false;
	rc = regcomp(re, pattern, REG_EXTENDED | REG_NOSUB);
	if (!rc)
		return true;
	regerror(rc, re, err, sizeof(err));
	cuda_note(SC_NOTE_WARN, "SYSCOPE_%s '%s' is not a valid regular expression (%s): ignored",
		  setting, pattern, err);
	return false;
}

static bool table_init(struct api_table *tab, regex_t *inc, regex_t *exc)
{
	tab->names = calloc(tab->size, sizeof(*tab->names));
	tab->traced = calloc(tab->size, sizeof(*tab->traced));
	if (!tab->names || !tab->traced)
		return false;
	for (unsigned id = 1; id < tab->size; id++) {
		const char *name = NULL;

		if (cuptiGetCallbackName(tab->domain, id, &name) != CUPTI_SUCCESS || !name)
			continue;
		tab->names[id] = display_name(name);
		if (!tab->names[id])
			continue;
		tab->traced[id] = (!inc || !regexec(inc, tab->names[id], 0, NULL, 0)) &&
				  (!exc || regexec(exc, tab->names[id], 0, NULL, 0));
	}
	return true;
}

bool cuda_api_names_init(const char *include_re, const char *exclude_re)
{
	regex_t inc, exc;
	bool has_inc = compile(&inc, include_re, "CUDA_API_INCLUDE");
	bool has_exc = compile(&exc, exclude_re, "CUDA_API_EXCLUDE");
	bool ok = table_init(&runtime_table, has_inc ? &inc : NULL, has_exc ? &exc : NULL) &&
		  table_init(&driver_table, has_inc ? &inc : NULL, has_exc ? &exc : NULL);

	if (has_inc)
		regfree(&inc);
	if (has_exc)
		regfree(&exc);
	return ok;
}

/*
 * The driver functions that start GPU work or allocate memory: recorded even when the driver
 * domain is not (CUPTI records them one by one), so that the kernels libraries launch through
 * the driver (cuBLAS) and the memory they map (NCCL's cuMem* calls) have the call that made
 * them. driver_calls.c leaves out those the runtime made for its own calls.
 */
static bool driver_work(const char *name)
{
	static const char *const prefixes[] = {
		"cuLaunch",	 "cuMemcpy",	    "cuMemset",	      "cuGraphLaunch",
		"cuMemAlloc",	 "cuMemFree",	    "cuMemCreate",    "cuMemRelease",
		"cuMemMap",	 "cuMemUnmap",	    "cuMemSetAccess", "cuMemHostAlloc",
		"cuArrayCreate", "cuArray3DCreate", "cuArrayDestroy",
	};

	if (strstr(name, "HostFunc"))
		return false; /* cuLaunchHostFunc runs on the host */
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

bool cuda_api_driver_starts_work(uint32_t cbid)
{
	return driver_table.names && cbid < driver_table.size && driver_table.names[cbid] &&
	       driver_work(driver_table.names[cbid]);
}

unsigned cuda_api_trace_driver_work(void)
{
	unsigned n = 0;

	for (unsigned id = 1; driver_table.traced && id < driver_table.size; id++)
		if (driver_table.traced[id] && driver_work(driver_table.names[id]) &&
		    cuptiActivityEnableDriverApi(id, 1) == CUPTI_SUCCESS)
			n++;
	return n;
}

/* CUPTI records no activity for the functions the include/exclude regexes leave out: each
 * record costs the calling thread, and PyTorch calls cudaGetDevice six times per op. */
static unsigned untrace(const struct api_table *tab, CUptiResult (*set)(CUpti_CallbackId, uint8_t))
{
	unsigned n = 0;

	for (unsigned id = 1; tab->traced && id < tab->size; id++)
		if (tab->names[id] && !tab->traced[id] && set(id, 0) == CUPTI_SUCCESS)
			n++;
	return n;
}

void cuda_api_untrace_excluded(unsigned domains)
{
	unsigned n = 0;

	/* With every driver call recorded and those inside runtime calls left out, the runtime
	 * calls not shown must still be recorded: they tell which driver calls were theirs. */
	if ((domains & CUDA_DOM_RUNTIME) && (domains & (CUDA_DOM_DRIVER | CUDA_DOM_DRIVER_OWN)) !=
						    (CUDA_DOM_DRIVER | CUDA_DOM_DRIVER_OWN))
		n += untrace(&runtime_table, cuptiActivityEnableRuntimeApi);
	if (domains & CUDA_DOM_DRIVER)
		n += untrace(&driver_table, cuptiActivityEnableDriverApi);
	if (n)
		cuda_note(SC_NOTE_INFO,
			  "CUDA tracing: %u API functions left out by "
			  "--cuda-api-include/--cuda-api-exclude are not recorded",
			  n);
}
