/* SPDX-License-Identifier: MIT */
/*
 * The GPU part of the rocpd writer, following rocprofv3's conventions
 * (docs/output-formats.md, rocpd):
 *
 *   agents        rocpd_info_agent: the host is row 1 (absolute index 0), device d is row
 *                 d + 2 (absolute index d + 1, logical and type index d)
 *   streams       one rocpd_info_queue and one rocpd_info_stream row each, same id (the
 *                 kernels view finds the process through the queue)
 *   kernels       rocpd_kernel_dispatch, a rocpd_info_kernel_symbol per kernel name, all under
 *                 one rocpd_info_code_object per process. Grid sizes are in work-items, as
 *                 rocpd has them (CUDA's grid in blocks times the block size); the CUDA grid
 *                 is kept in extdata.
 *   copies, sets  rocpd_memory_copy (a set is a copy named MEMORY_SET from and to its device)
 *   allocations   rocpd_memory_allocate, type ALLOC or FREE
 *   counters      a kernel's GPU hardware counters (--gpu-events): one rocpd_info_pmc row
 *                 per metric and device, one rocpd_pmc_event per value on the kernel's
 *                 event (the pmc_events view joins them to the dispatch)
 *
 * Every row has an event whose stack_id is the correlation id of the host call that caused
 * it, which is also the stack_id of that call's region: the link rocpd readers follow.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rocpd_writer.h"

#define HOST_AGENT_ROW 1

static int64_t agent_row(uint32_t agent)
{
	return agent == SC_AGENT_HOST ? HOST_AGENT_ROW : (int64_t)agent + 2;
}

static void describe_agent(struct rp *rp, const struct sc_gpu_agent *a)
{
	bool inserted;
	char *sql;

	sc_hashmap_upsert(&rp->gpu_ids, sc_hash_u64(0xa9e47ull << 32 | a->id) | 1, 1, &inserted);
	if (!inserted || a->type != SC_AGENT_GPU)
		return;
	sql = sqlite3_mprintf("INSERT INTO \"rocpd_info_agent%s\" (id, guid, nid, pid, type, "
			      "absolute_index, logical_index, type_index, uuid, name, model_name, "
			      "vendor_name, product_name, user_name) VALUES (%lld, %Q, %lld, %d, "
			      "'GPU', %u, %u, %u, %lld, %Q, %Q, %Q, %Q, '')",
			      rp->uuid, (long long)agent_row(a->id), rp->guid, (long long)rp->nid,
			      (int)rp->proc->pid, a->id + 1, a->id, a->id,
			      (long long)(sc_hash_bytes(a->uuid, sizeof(a->uuid), 0) >> 1), a->name,
			      a->name, a->vendor, a->name);
	rp_exec(rp, sql);
	sqlite3_free(sql);
}

static void describe_stream(struct rp *rp, const struct sc_gpu_stream *g)
{
	bool inserted;
	uint64_t *slot =
		sc_hashmap_upsert(&rp->gpu_ids, sc_stream_key(g->agent, g->stream), 0, &inserted);
	char *sql;

	if (!inserted)
		return;
	*slot = (uint64_t)++rp->next_stream;
	sql = sqlite3_mprintf(
		"INSERT INTO \"rocpd_info_queue%s\" (id, guid, nid, pid, name, extdata) VALUES "
		"(%lld, %Q, %lld, %d, %Q, '{\"stream_id\":%llu,\"agent\":%u}'); INSERT INTO "
		"\"rocpd_info_stream%s\" (id, guid, nid, pid, name, extdata) VALUES (%lld, %Q, "
		"%lld, %d, %Q, '{\"stream_id\":%llu,\"agent\":%u}')",
		rp->uuid, (long long)*slot, rp->guid, (long long)rp->nid, (int)rp->proc->pid,
		g->name, (unsigned long long)g->stream, g->agent, rp->uuid, (long long)*slot,
		rp->guid, (long long)rp->nid, (int)rp->proc->pid, g->name,
		(unsigned long long)g->stream, g->agent);
	rp_exec(rp, sql);
	sqlite3_free(sql);
}

void rp_gpu_describe(struct rp *rp)
{
	for (size_t i = 0; i < rp->proc->images.n; i++) {
		const struct sc_image *img = rp->proc->images.v[i];

		for (size_t a = 0; a < img->agents.n; a++)
			describe_agent(rp, &img->agents.v[a]);
		for (size_t s = 0; s < img->streams.n; s++)
			describe_stream(rp, &img->streams.v[s]);
	}
}

static int64_t stream_row(struct rp *rp, const struct sc_gpu_op_ev *op)
{
	const uint64_t *slot =
		op->stream ? sc_hashmap_get(&rp->gpu_ids,
					    sc_stream_key(op->stream->agent, op->stream->stream))
			   : NULL;

	return slot ? (int64_t)*slot : 0; /* 0: the default queue and stream */
}

/* The kernel symbol of a kernel name (and the process's code object, on first use). */
static int64_t kernel_symbol(struct rp *rp, const struct sc_gpu_op_ev *op)
{
	const struct sc_rec_gpu_op *o = op->rec;
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(
		&rp->gpu_ids, sc_hash_u64((uint64_t)(uintptr_t)op->mangled) | 1, 0, &inserted);
	json_t *ext;
	char *sql, *text;

	if (!inserted)
		return (int64_t)*slot;
	if (!rp->code_object) {
		rp->code_object = 1;
		sql = sqlite3_mprintf("INSERT INTO \"rocpd_info_code_object%s\" (id, guid, nid, "
				      "pid, agent_id, uri, load_base, load_size, load_delta, "
				      "storage_type) VALUES (1, %Q, %lld, %d, %lld, 'memory://"
				      "device-code', 0, 0, 0, 'MEMORY')",
				      rp->uuid, rp->guid, (long long)rp->nid, (int)rp->proc->pid,
				      (long long)agent_row(o->agent));
		rp_exec(rp, sql);
		sqlite3_free(sql);
	}
	*slot = (uint64_t)++rp->next_symbol;
	ext = json_pack("{s:s, s:s, s:s}", "formatted_kernel_name", op->name,
			"demangled_kernel_name", op->name, "truncated_kernel_name", op->name);
	text = json_dumps(ext, JSON_COMPACT);
	sql = sqlite3_mprintf(
		"INSERT INTO \"rocpd_info_kernel_symbol%s\" (id, guid, nid, pid, "
		"code_object_id, kernel_name, display_name, kernel_object, "
		"kernarg_segment_size, kernarg_segment_alignment, group_segment_size, "
		"private_segment_size, sgpr_count, arch_vgpr_count, "
		"accum_vgpr_count, extdata) VALUES (%lld, %Q, %lld, %d, 1, %Q, %Q, "
		"0, 0, 0, %u, %u, 0, %u, 0, %Q)",
		rp->uuid, (long long)*slot, rp->guid, (long long)rp->nid, (int)rp->proc->pid,
		op->mangled, op->name, o->shared_static, o->local_per_thread, o->registers, text);
	rp_exec(rp, sql);
	sqlite3_free(sql);
	free(text);
	json_decref(ext);
	return (int64_t)*slot;
}

static void kernel_row(struct rp *rp, int32_t tid, const struct sc_gpu_op_ev *op, int64_t ev)
{
	const struct sc_rec_gpu_op *o = op->rec;
	int64_t stream = stream_row(rp, op);
	char ext[128];

	snprintf(ext, sizeof(ext), "{\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u]}", o->grid[0],
		 o->grid[1], o->grid[2], o->block[0], o->block[1], o->block[2]);
	rp_run(rp, INS_DISPATCH, "tiiiiiiiiiiiiiiiiiiiit", rp->guid, rp->nid,
	       (int64_t)rp->proc->pid, (int64_t)tid, agent_row(o->agent), kernel_symbol(rp, op),
	       (int64_t)++rp->next_dispatch, stream, stream, (int64_t)o->start, (int64_t)o->end,
	       (int64_t)o->local_per_thread, (int64_t)o->shared_dynamic, (int64_t)o->block[0],
	       (int64_t)o->block[1], (int64_t)o->block[2],
	       (int64_t)o->grid[0] * (int64_t)o->block[0],
	       (int64_t)o->grid[1] * (int64_t)o->block[1],
	       (int64_t)o->grid[2] * (int64_t)o->block[2], rp_string_of(rp, ""), ev, ext);
}

static const char *metric_unit(const char *metric)
{
	if (strstr(metric, ".pct"))
		return "%";
	if (strstr(metric, ".per_second"))
		return "1/s";
	if (strstr(metric, "bytes"))
		return "bytes";
	if (strstr(metric, "duration"))
		return "ns";
	return strstr(metric, "cycles") ? "cycles" : "";
}

/* The rocpd_info_pmc row of a GPU metric on the kernel's device. */
static int64_t metric_row(struct rp *rp, const char *name, uint32_t agent)
{
	const void *key[2] = { name, (const void *)(uintptr_t)agent };
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(
		&rp->gpu_ids, sc_hash_bytes(key, sizeof(key), 0x676d6574726963) | 1, 0, &inserted);
	char *sql;

	if (!inserted)
		return (int64_t)*slot;
	*slot = (uint64_t)++rp->next_pmc;
	sql = sqlite3_mprintf("INSERT INTO \"rocpd_info_pmc%s\" (id, guid, nid, pid, agent_id, "
			      "target_arch, name, symbol, description, component, units, "
			      "value_type, is_constant, is_derived) VALUES (%lld, %Q, %lld, %d, "
			      "%lld, 'GPU', %Q, %Q, 'GPU hardware counter (CUPTI range profiler)', "
			      "'cupti', %Q, 'ABS', 0, 1)",
			      rp->uuid, (long long)*slot, rp->guid, (long long)rp->nid,
			      (int)rp->proc->pid, (long long)agent_row(agent), name, name,
			      metric_unit(name));
	rp_exec(rp, sql);
	sqlite3_free(sql);
	return (int64_t)*slot;
}

static void metric_rows(struct rp *rp, const struct sc_image *img, const struct sc_gpu_op_ev *op,
			int64_t ev)
{
	for (uint32_t i = 0; op->metrics && i < img->gpu_metric_n; i++)
		if (!isnan(op->metrics[i]))
			rp_run(rp, INS_PMC_EVENT, "tiid", rp->guid, ev,
			       metric_row(rp, img->gpu_metric_names[i], op->rec->agent),
			       op->metrics[i]);
}

void rp_gpu_op(void *ctx, struct sc_image *img, struct sc_thread *t, const struct sc_gpu_op_ev *op)
{
	struct rp *rp = ctx;
	const struct sc_rec_gpu_op *o = op->rec;
	int32_t tid = t ? t->tid : rp->proc->pid; /* views need a thread: the main one */
	int64_t stream, ev = rp_event(rp, sc_gpu_op_category(o->kind), (int64_t)o->corr_id, "{}",
				      "{}", "{}");
	uint32_t src, dst;

	switch (o->kind) {
	case SC_GPU_KERNEL:
	case SC_GPU_GRAPH: /* a dispatch of the whole graph: GPU time in kernels and busy */
		kernel_row(rp, tid, op, ev);
		metric_rows(rp, img, op, ev);
		break;
	case SC_GPU_COPY:
	case SC_GPU_SET:
		stream = stream_row(rp, op);
		src = o->kind == SC_GPU_SET ? o->agent : o->src_agent;
		dst = o->kind == SC_GPU_SET ? o->agent : o->dst_agent;
		rp_run(rp, INS_COPY, "tiiiiiiiiiiiiiii", rp->guid, rp->nid, (int64_t)rp->proc->pid,
		       (int64_t)tid, (int64_t)o->start, (int64_t)o->end, rp_string_of(rp, op->name),
		       agent_row(dst), (int64_t)(o->kind == SC_GPU_SET ? o->address : 0),
		       agent_row(src), (int64_t)0, (int64_t)o->bytes, stream, stream,
		       rp_string_of(rp, ""), ev);
		break;
	default:
		rp_run(rp, INS_ALLOC, "tiiiittiiiinni", rp->guid, rp->nid, (int64_t)rp->proc->pid,
		       (int64_t)tid, agent_row(o->agent), sc_gpu_alloc_type(o->kind),
		       sc_gpu_mem_level(o->copy_kind), (int64_t)o->start, (int64_t)o->end,
		       (int64_t)o->address, (int64_t)o->bytes, ev);
		break;
	}
}
