/* SPDX-License-Identifier: MIT */
/*
 * The OMPT tool: LLVM's libomp (and Intel's, AMD's, which are built on it) looks for an
 * exported ompt_start_tool when it initializes; libsyscope.so is preloaded, so it finds this
 * one. With OpenMP tracing off it returns NULL and the runtime runs without a tool.
 *
 * Callbacks become regions of category "openmp" (omp_record.h), with the names the libgomp
 * wrappers use: parallel regions (requested team size) on the encountering thread, implicit
 * tasks with the team member id and team size on every member, explicit task executions,
 * worksharing (loops with their iteration count), barriers, taskwait, taskgroup, critical
 * sections, locks and ordered (each with its waiting time inside), target regions and data
 * transfers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../rt.h"
#include "omp_record.h"
#include "ompt_abi.h"

#define EXPLICIT_TASK 1 /* our mark in a task's ompt_data_t */

static void on_parallel_begin(ompt_data_t *task, const ompt_frame_t *frame, ompt_data_t *parallel,
			      unsigned requested, int flags, const void *codeptr)
{
	/* The return address of the runtime's call; one byte back is the call itself, whose line
	 * is the construct's. */
	struct omp_arg args[2] = { OMP_U(requested, requested),
				   OMP_P(code, codeptr ? (const char *)codeptr - 1 : NULL) };

	(void)task, (void)frame, (void)parallel, (void)flags;
	omp_begin(OMP_PARALLEL, args, 2);
}

static void on_parallel_end(ompt_data_t *parallel, ompt_data_t *task, int flags,
			    const void *codeptr)
{
	(void)parallel, (void)task, (void)flags, (void)codeptr;
	omp_end(OMP_PARALLEL);
}

static void on_implicit_task(int endpoint, ompt_data_t *parallel, ompt_data_t *task, unsigned team,
			     unsigned index, int flags)
{
	(void)parallel, (void)task;
	if (flags & OMPT_TASK_INITIAL)
		return; /* the program's own thread, not a team's task */
	if (endpoint == OMPT_SCOPE_BEGIN) {
		struct omp_arg args[2] = { OMP_U(thread, index), OMP_U(team, team) };

		omp_begin(OMP_IMPLICIT_TASK, args, 2);
	} else {
		omp_end(OMP_IMPLICIT_TASK);
	}
}

static void on_task_create(ompt_data_t *parent, const ompt_frame_t *frame, ompt_data_t *task,
			   int flags, int has_dependences, const void *codeptr)
{
	(void)parent, (void)frame, (void)has_dependences, (void)codeptr;
	if (task && (flags & OMPT_TASK_EXPLICIT))
		task->value = EXPLICIT_TASK;
}

/* A thread leaves one task for another: each stretch of an explicit task is a region. */
static void on_task_schedule(ompt_data_t *prior, int status, ompt_data_t *next)
{
	(void)status;
	if (prior && prior->value == EXPLICIT_TASK)
		omp_end(OMP_TASK);
	if (next && next->value == EXPLICIT_TASK)
		omp_begin(OMP_TASK, NULL, 0);
}

static enum omp_kind work_kind(int wstype)
{
	switch (wstype) {
	case OMPT_WORK_LOOP:
	case OMPT_WORK_LOOP_STATIC:
	case OMPT_WORK_LOOP_DYNAMIC:
	case OMPT_WORK_LOOP_GUIDED:
	case OMPT_WORK_LOOP_OTHER:
		return OMP_LOOP;
	case OMPT_WORK_SECTIONS:
		return OMP_SECTIONS;
	case OMPT_WORK_SINGLE_EXECUTOR:
		return OMP_SINGLE;
	case OMPT_WORK_WORKSHARE:
		return OMP_WORKSHARE;
	case OMPT_WORK_DISTRIBUTE:
		return OMP_DISTRIBUTE;
	case OMPT_WORK_TASKLOOP:
		return OMP_TASKLOOP;
	default:
		return 0; /* the members a single construct skips; scope */
	}
}

static const char *loop_schedule(int wstype)
{
	switch (wstype) {
	case OMPT_WORK_LOOP_STATIC:
		return "static";
	case OMPT_WORK_LOOP_DYNAMIC:
		return "dynamic";
	case OMPT_WORK_LOOP_GUIDED:
		return "guided";
	default:
		return NULL; /* OMPT before 6.0 does not say */
	}
}

static void on_work(int wstype, int endpoint, ompt_data_t *parallel, ompt_data_t *task,
		    uint64_t count, const void *codeptr)
{
	enum omp_kind kind = work_kind(wstype);
	const char *schedule = loop_schedule(wstype);
	struct omp_arg args[2] = { OMP_U(iterations, count), OMP_S("schedule", schedule) };

	(void)parallel, (void)task, (void)codeptr;
	if (!kind)
		return;
	if (endpoint == OMPT_SCOPE_END)
		omp_end(kind);
	else if (kind == OMP_LOOP || kind == OMP_TASKLOOP || kind == OMP_DISTRIBUTE)
		omp_begin(kind, args, schedule ? 2 : 1);
	else
		omp_begin(kind, NULL, 0);
}

static enum omp_kind sync_kind(int kind)
{
	switch (kind) {
	case OMPT_SYNC_BARRIER:
	case OMPT_SYNC_BARRIER_EXPLICIT:
		return OMP_BARRIER;
	case OMPT_SYNC_BARRIER_IMPLICIT:
	case OMPT_SYNC_BARRIER_IMPLEMENTATION:
	case OMPT_SYNC_BARRIER_IMPLICIT_WORKSHARE:
	case OMPT_SYNC_BARRIER_IMPLICIT_PARALLEL:
	case OMPT_SYNC_BARRIER_TEAMS:
		return OMP_IMPLICIT_BARRIER;
	case OMPT_SYNC_TASKWAIT:
		return OMP_TASKWAIT;
	case OMPT_SYNC_TASKGROUP:
		return OMP_TASKGROUP;
	case OMPT_SYNC_REDUCTION:
		return OMP_REDUCTION;
	default:
		return 0;
	}
}

static void on_sync_region(int kind, int endpoint, ompt_data_t *parallel, ompt_data_t *task,
			   const void *codeptr)
{
	enum omp_kind k = sync_kind(kind);

	(void)parallel, (void)task, (void)codeptr;
	if (!k)
		return;
	if (endpoint == OMPT_SCOPE_BEGIN)
		omp_begin(k, NULL, 0);
	else
		omp_end(k);
}

/* Critical sections, locks and ordered: the region from the request to the release, its wait
 * inside it. A test lock is a region only once it is held. Nest locks are left out: their
 * inner acquisitions come without the events that would pair them. */
static enum omp_kind held_kind(int kind)
{
	switch (kind) {
	case OMPT_MUTEX_CRITICAL:
		return OMP_CRITICAL;
	case OMPT_MUTEX_LOCK:
	case OMPT_MUTEX_TEST_LOCK:
		return OMP_LOCK;
	case OMPT_MUTEX_ORDERED:
		return OMP_ORDERED;
	default:
		return 0;
	}
}

static void on_mutex_acquire(int kind, unsigned hint, unsigned impl, ompt_wait_id_t wait_id,
			     const void *codeptr)
{
	enum omp_kind held = held_kind(kind);

	(void)hint, (void)impl, (void)wait_id, (void)codeptr;
	if (!held || kind == OMPT_MUTEX_TEST_LOCK)
		return;
	omp_begin(held, NULL, 0);
	omp_begin((enum omp_kind)(held + 1), NULL, 0); /* its wait: the next kind */
}

static void on_mutex_acquired(int kind, ompt_wait_id_t wait_id, const void *codeptr)
{
	enum omp_kind held = held_kind(kind);

	(void)wait_id, (void)codeptr;
	if (kind == OMPT_MUTEX_TEST_LOCK)
		omp_begin(OMP_LOCK, NULL, 0);
	else if (held)
		omp_end((enum omp_kind)(held + 1));
}

static void on_mutex_released(int kind, ompt_wait_id_t wait_id, const void *codeptr)
{
	enum omp_kind held = held_kind(kind);

	(void)wait_id, (void)codeptr;
	if (held)
		omp_end(held);
}

static const char *target_kind(int kind)
{
	static const char *const names[] = { "?", "target", "enter data", "exit data", "update" };

	return kind > 0 && kind < 5 ? names[kind] : "other";
}

static void on_target_emi(int kind, int endpoint, int device, ompt_data_t *task,
			  ompt_data_t *target_task, ompt_data_t *target, const void *codeptr)
{
	struct omp_arg args[3] = { OMP_S("construct", target_kind(kind)), OMP_U(device, device),
				   OMP_P(code, codeptr) };

	(void)task, (void)target_task, (void)target;
	if (endpoint == OMPT_SCOPE_BEGIN)
		omp_begin(OMP_TARGET, args, 3);
	else
		omp_end(OMP_TARGET);
}

static void on_target(int kind, int endpoint, int device, ompt_data_t *task, ompt_id_t target_id,
		      const void *codeptr)
{
	on_target_emi(kind, endpoint, device, task, NULL, NULL, codeptr);
	(void)target_id;
}

static const char *data_op_name(int op)
{
	switch (op & 0xf) { /* the _async variants add 16 */
	case 1:
		return "alloc";
	case OMPT_TARGET_DATA_TO_DEVICE:
		return "to device";
	case OMPT_TARGET_DATA_FROM_DEVICE:
		return "from device";
	case 4:
		return "delete";
	case 5:
		return "associate";
	case 6:
		return "disassociate";
	default:
		return "other";
	}
}

static void on_target_data_op_emi(int endpoint, ompt_data_t *target_task, ompt_data_t *target,
				  ompt_id_t *host_op_id, int optype, void *src, int src_device,
				  void *dest, int dest_device, size_t bytes, const void *codeptr)
{
	struct omp_arg args[4] = { OMP_S("op", data_op_name(optype)), OMP_U(bytes, bytes),
				   OMP_U(from, src_device), OMP_U(to, dest_device) };

	(void)target_task, (void)target, (void)host_op_id, (void)src, (void)dest, (void)codeptr;
	if (endpoint == OMPT_SCOPE_BEGIN)
		omp_begin(OMP_TARGET_DATA, args, 4);
	else
		omp_end(OMP_TARGET_DATA);
}

/* ---- registration ---- */

struct callback {
	const char *name;
	int event;
	ompt_callback_t fn;
	int fallback; /* an older event with the same meaning, tried when this one is refused */
	ompt_callback_t fallback_fn;
};

#define CB(f) ((ompt_callback_t)(void (*)(void))(f))

static const struct callback callbacks[] = {
	{ "parallel_begin", OMPT_CB_PARALLEL_BEGIN, CB(on_parallel_begin), 0, NULL },
	{ "parallel_end", OMPT_CB_PARALLEL_END, CB(on_parallel_end), 0, NULL },
	{ "implicit_task", OMPT_CB_IMPLICIT_TASK, CB(on_implicit_task), 0, NULL },
	{ "task_create", OMPT_CB_TASK_CREATE, CB(on_task_create), 0, NULL },
	{ "task_schedule", OMPT_CB_TASK_SCHEDULE, CB(on_task_schedule), 0, NULL },
	{ "work", OMPT_CB_WORK, CB(on_work), 0, NULL },
	{ "sync_region", OMPT_CB_SYNC_REGION, CB(on_sync_region), 0, NULL },
	{ "mutex_acquire", OMPT_CB_MUTEX_ACQUIRE, CB(on_mutex_acquire), 0, NULL },
	{ "mutex_acquired", OMPT_CB_MUTEX_ACQUIRED, CB(on_mutex_acquired), 0, NULL },
	{ "mutex_released", OMPT_CB_MUTEX_RELEASED, CB(on_mutex_released), 0, NULL },
	{ "target", OMPT_CB_TARGET_EMI, CB(on_target_emi), OMPT_CB_TARGET, CB(on_target) },
	{ "target_data_op", OMPT_CB_TARGET_DATA_OP_EMI, CB(on_target_data_op_emi), 0, NULL },
};

#define NCALLBACKS (sizeof(callbacks) / sizeof(callbacks[0]))

static int initialize(ompt_function_lookup_t lookup, int initial_device, ompt_data_t *tool_data)
{
	ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
	char missing[256] = "";
	size_t len = 0;
	unsigned refused = 0;

	(void)initial_device, (void)tool_data;
	if (!set)
		return 0;
	for (size_t i = 0; i < NCALLBACKS; i++) {
		const struct callback *c = &callbacks[i];

		if (set(c->event, c->fn) > OMPT_SET_NEVER)
			continue;
		if (c->fallback && set(c->fallback, c->fallback_fn) > OMPT_SET_NEVER)
			continue;
		refused++;
		if (len + strlen(c->name) + 3 < sizeof(missing))
			len += (size_t)snprintf(missing + len, sizeof(missing) - len, "%s%s",
						len ? ", " : "", c->name);
	}
	omp_ompt_active = true;
	if (rt_active())
		rt_note(SC_NOTE_INFO, "openmp: OMPT tool started; %zu of %zu events offered%s%s",
			NCALLBACKS - refused, NCALLBACKS, refused ? "; not offered: " : "",
			missing);
	return 1; /* keep the tool */
}

static void finalize(ompt_data_t *tool_data)
{
	(void)tool_data;
}

/* Whether OpenMP tracing is asked for. libomp may start the tool before our constructor
 * read the settings, so the variables are read here as the launcher sets them. */
static bool wanted(void)
{
	const char *session = getenv("SYSCOPE_SESSION_DIR"), *on = getenv("SYSCOPE_USE_OPENMP");

	if (rt_active())
		return sc_bool(&rt_proc.settings, SC_SET_USE_OPENMP);
	return session && *session && on &&
	       (!strcmp(on, "true") || !strcmp(on, "1") || !strcmp(on, "yes") || !strcmp(on, "on"));
}

RT_EXPORT ompt_start_tool_result_t *ompt_start_tool(unsigned omp_version,
						    const char *runtime_version);
RT_EXPORT ompt_start_tool_result_t *ompt_start_tool(unsigned omp_version,
						    const char *runtime_version)
{
	static ompt_start_tool_result_t result = { initialize, finalize, { 0 } };

	(void)omp_version, (void)runtime_version;
	return wanted() ? &result : NULL;
}
