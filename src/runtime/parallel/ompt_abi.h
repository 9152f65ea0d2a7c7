/* SPDX-License-Identifier: MIT */
/*
 * The part of the OMPT interface (OpenMP 5.1, section 4) the tool uses, declared from the
 * specification so that syscope builds without a compiler's omp-tools.h (GCC ships none).
 */
#ifndef SYSCOPE_RUNTIME_PARALLEL_OMPT_ABI_H
#define SYSCOPE_RUNTIME_PARALLEL_OMPT_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef union ompt_data_t {
	uint64_t value;
	void *ptr;
} ompt_data_t;

typedef struct ompt_frame_t {
	ompt_data_t exit_frame, enter_frame;
	int exit_frame_flags, enter_frame_flags;
} ompt_frame_t;

typedef uint64_t ompt_id_t;
typedef uint64_t ompt_wait_id_t;
typedef void (*ompt_interface_fn_t)(void);
typedef ompt_interface_fn_t (*ompt_function_lookup_t)(const char *name);
typedef void (*ompt_callback_t)(void);
typedef int (*ompt_set_callback_t)(int event, ompt_callback_t callback);

typedef int (*ompt_initialize_t)(ompt_function_lookup_t lookup, int initial_device_num,
				 ompt_data_t *tool_data);
typedef void (*ompt_finalize_t)(ompt_data_t *tool_data);

typedef struct ompt_start_tool_result_t {
	ompt_initialize_t initialize;
	ompt_finalize_t finalize;
	ompt_data_t tool_data;
} ompt_start_tool_result_t;

enum {
	OMPT_SET_NEVER = 1, /* ompt_set_result_t: what set_callback says; above: it may be called */
	OMPT_SET_ALWAYS = 5,
};

enum ompt_callback_id {
	OMPT_CB_PARALLEL_BEGIN = 3,
	OMPT_CB_PARALLEL_END = 4,
	OMPT_CB_TASK_CREATE = 5,
	OMPT_CB_TASK_SCHEDULE = 6,
	OMPT_CB_IMPLICIT_TASK = 7,
	OMPT_CB_TARGET = 8,
	OMPT_CB_TARGET_DATA_OP = 9,
	OMPT_CB_MUTEX_RELEASED = 17,
	OMPT_CB_WORK = 20,
	OMPT_CB_SYNC_REGION = 23,
	OMPT_CB_MUTEX_ACQUIRE = 26,
	OMPT_CB_MUTEX_ACQUIRED = 27,
	OMPT_CB_TARGET_EMI = 33,
	OMPT_CB_TARGET_DATA_OP_EMI = 34,
};

enum {
	OMPT_SCOPE_BEGIN = 1,
	OMPT_SCOPE_END = 2,
	OMPT_SCOPE_BEGINEND = 3
};

enum ompt_sync_kind {
	OMPT_SYNC_BARRIER = 1,
	OMPT_SYNC_BARRIER_IMPLICIT = 2,
	OMPT_SYNC_BARRIER_EXPLICIT = 3,
	OMPT_SYNC_BARRIER_IMPLEMENTATION = 4,
	OMPT_SYNC_TASKWAIT = 5,
	OMPT_SYNC_TASKGROUP = 6,
	OMPT_SYNC_REDUCTION = 7,
	OMPT_SYNC_BARRIER_IMPLICIT_WORKSHARE = 8,
	OMPT_SYNC_BARRIER_IMPLICIT_PARALLEL = 9,
	OMPT_SYNC_BARRIER_TEAMS = 10,
};

enum ompt_work_kind {
	OMPT_WORK_LOOP = 1,
	OMPT_WORK_SECTIONS = 2,
	OMPT_WORK_SINGLE_EXECUTOR = 3,
	OMPT_WORK_SINGLE_OTHER = 4,
	OMPT_WORK_WORKSHARE = 5,
	OMPT_WORK_DISTRIBUTE = 6,
	OMPT_WORK_TASKLOOP = 7,
	OMPT_WORK_SCOPE = 8,
	OMPT_WORK_LOOP_STATIC = 10, /* OpenMP 6.0 */
	OMPT_WORK_LOOP_DYNAMIC = 11,
	OMPT_WORK_LOOP_GUIDED = 12,
	OMPT_WORK_LOOP_OTHER = 13,
};

enum ompt_mutex_kind {
	OMPT_MUTEX_LOCK = 1,
	OMPT_MUTEX_TEST_LOCK = 2,
	OMPT_MUTEX_NEST_LOCK = 3,
	OMPT_MUTEX_TEST_NEST_LOCK = 4,
	OMPT_MUTEX_CRITICAL = 5,
	OMPT_MUTEX_ATOMIC = 6,
	OMPT_MUTEX_ORDERED = 7,
};

enum {
	OMPT_TASK_INITIAL = 0x1, /* ompt_task_flag_t */
	OMPT_TASK_IMPLICIT = 0x2,
	OMPT_TASK_EXPLICIT = 0x4,
	OMPT_TASK_TARGET = 0x8,
};

enum {
	OMPT_TASK_COMPLETE = 1, /* ompt_task_status_t */
	OMPT_TASK_YIELD = 2,
	OMPT_TASK_CANCEL = 3,
	OMPT_TASK_DETACH = 4,
	OMPT_TASK_EARLY_FULFILL = 5,
	OMPT_TASK_LATE_FULFILL = 6,
	OMPT_TASK_SWITCH = 7,
	OMPT_TASKWAIT_COMPLETE = 8,
};

enum {
	OMPT_TARGET_DATA_TO_DEVICE = 2,
	OMPT_TARGET_DATA_FROM_DEVICE = 3
};

#endif /* SYSCOPE_RUNTIME_PARALLEL_OMPT_ABI_H */
