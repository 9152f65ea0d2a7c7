/* SPDX-License-Identifier: MIT */
/*
 * A no-op OMPT tool: registers the callbacks syscope's tool registers (src/runtime/parallel/
 * ompt.c), each doing nothing. Preloaded into bench/omp_events_clang, it measures what libomp
 * itself spends per event once any tool is attached (its bookkeeping for the tool, the
 * callbacks' dispatch), the floor under every OMPT tool's cost; bench/run-all --only openmp
 * shows it beside syscope's, measured in the same rounds.
 */
#include <stddef.h>
#include <stdint.h>

#include "../src/runtime/parallel/ompt_abi.h"

static void nothing(void)
{
}

static int initialize(ompt_function_lookup_t lookup, int initial_device, ompt_data_t *tool_data)
{
	static const int events[] = { OMPT_CB_PARALLEL_BEGIN, OMPT_CB_PARALLEL_END,
				      OMPT_CB_IMPLICIT_TASK,  OMPT_CB_TASK_CREATE,
				      OMPT_CB_TASK_SCHEDULE,  OMPT_CB_WORK,
				      OMPT_CB_SYNC_REGION,    OMPT_CB_MUTEX_ACQUIRE,
				      OMPT_CB_MUTEX_ACQUIRED, OMPT_CB_MUTEX_RELEASED,
				      OMPT_CB_TARGET_EMI,     OMPT_CB_TARGET_DATA_OP_EMI };
	ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");

	(void)initial_device, (void)tool_data;
	for (size_t i = 0; set && i < sizeof(events) / sizeof(events[0]); i++)
		set(events[i], nothing);
	return 1;
}

static void finalize(ompt_data_t *tool_data)
{
	(void)tool_data;
}

ompt_start_tool_result_t *ompt_start_tool(unsigned omp_version, const char *runtime_version);
ompt_start_tool_result_t *ompt_start_tool(unsigned omp_version, const char *runtime_version)
{
	static ompt_start_tool_result_t result = { initialize, finalize, { 0 } };

	(void)omp_version, (void)runtime_version;
	return &result;
}
