/* SPDX-License-Identifier: MIT */
/*
 * `csv`: tables for spreadsheets and scripts (RFC 4180: a header row, fields with a comma,
 * quote or line break quoted, quotes doubled). Per process, only the tables that have rows:
 *
 *   <metric>-<pid>.csv            functions by self time, with their hottest line
 *   regions-<pid>.csv             regions and marks: category, name, thread, times, arguments
 *   counters-<pid>.csv            counter values
 *   kernels-<pid>.csv             GPU kernels: device, stream, times, grid, block, resources
 *   memory_copies-<pid>.csv       GPU copies and sets: direction, bytes, times
 *   memory_allocations-<pid>.csv  GPU allocations and frees
 *
 * Times are nanoseconds of the recording clock (CLOCK_MONOTONIC), as in the other formats;
 * Correlation_Id links a host call to the device work it caused.
 */
#include <stdlib.h>
#include <string.h>

#include "../model/timeline.h"
#include "sink.h"

enum {
	T_REGIONS,
	T_COUNTERS,
	T_KERNELS,
	T_COPIES,
	T_ALLOCS,
	T_COUNT
};

static const char *const table_names[T_COUNT] = { "regions", "counters", "kernels", "memory_copies",
						  "memory_allocations" };

static const char *const table_headers[T_COUNT] = {
	"Kind,Category,Name,Pid,Tid,Start_Timestamp,End_Timestamp,Duration_ns,Correlation_Id,"
	"Args",
	"Name,Unit,Pid,Tid,Timestamp,Value",
	"Kernel_Name,Mangled_Name,Device,Stream,Pid,Tid,Correlation_Id,Start_Timestamp,"
	"End_Timestamp,Duration_ns,Grid_X,Grid_Y,Grid_Z,Block_X,Block_Y,Block_Z,"
	"Registers_Per_Thread,Shared_Memory_Static,Shared_Memory_Dynamic,Local_Memory_Per_Thread",
	"Name,Direction,Device,Stream,Pid,Tid,Correlation_Id,Start_Timestamp,End_Timestamp,"
	"Duration_ns,Bytes,Src_Device,Dst_Device",
	"Operation,Level,Device,Pid,Tid,Correlation_Id,Timestamp,Address,Bytes",
};

struct csv {
	struct sc_output *out;
	struct sc_process *proc;
	struct sc_outfile files[T_COUNT];
	int failed;
};

/* One field, quoted when it has to be. */
static void field(FILE *f, const char *s, bool last)
{
	if (strpbrk(s, ",\"\r\n")) {
		fputc('"', f);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', f);
			fputc(*s, f);
		}
		fputc('"', f);
	} else {
		fputs(s, f);
	}
	fputc(last ? '\n' : ',', f);
}

/* The file of a table, opened with its header on first use; NULL when it cannot be. */
static FILE *table(struct csv *c, int t)
{
	if (!c->files[t].f) {
		if (sc_out_open(c->out, &c->files[t], "%s-%d.csv", table_names[t],
				(int)c->proc->pid)) {
			c->failed = 1;
			return NULL;
		}
		fprintf(c->files[t].f, "%s\n", table_headers[t]);
	}
	return c->files[t].f;
}

static void region_row(struct csv *c, const char *kind, struct sc_thread *t,
		       const struct sc_region_ev *r)
{
	FILE *f = table(c, T_REGIONS);
	const char *p = r->args, *end = r->args + r->args_len, *name, *value;
	VEC(char) args = { 0 };
	char type;

	if (!f)
		return;
	while ((p = sc_region_arg_next(p, end, &type, &name, &value))) {
		char *kv = sc_xasprintf("%s%s=%s", args.n ? ";" : "", name, value);

		for (char *k = kv; *k; k++)
			*VEC_PUSH(&args) = *k;
		free(kv);
	}
	*VEC_PUSH(&args) = '\0';
	field(f, kind, false);
	field(f, r->category, false);
	field(f, r->name, false);
	fprintf(f, "%d,%d,%llu,%llu,%llu,%llu,", (int)c->proc->pid, (int)t->tid,
		(unsigned long long)r->start, (unsigned long long)r->end,
		(unsigned long long)(r->end - r->start), (unsigned long long)r->corr_id);
	field(f, args.v, true);
	VEC_FREE(&args);
}

static void on_region_end(void *ctx, struct sc_image *img, struct sc_thread *t,
			  const struct sc_region_ev *r)
{
	(void)img;
	region_row(ctx, "region", t, r);
}

static void on_mark(void *ctx, struct sc_image *img, struct sc_thread *t,
		    const struct sc_region_ev *r)
{
	(void)img;
	region_row(ctx, "mark", t, r);
}

static void on_counter(void *ctx, struct sc_image *img, struct sc_thread *t,
		       const struct sc_counter_track *track, uint64_t ts, double value)
{
	struct csv *c = ctx;
	FILE *f = table(c, T_COUNTERS);

	(void)img;
	if (!f)
		return;
	field(f, track->name, false);
	field(f, track->unit, false);
	fprintf(f, "%d,%d,%llu,%.17g\n", (int)c->proc->pid, (int)t->tid, (unsigned long long)ts,
		value);
}

static const char *device_name(uint32_t agent, char *buf, size_t n)
{
	if (agent == SC_AGENT_HOST)
		snprintf(buf, n, "host");
	else
		snprintf(buf, n, "GPU %u", agent);
	return buf;
}

static void on_gpu_op(void *ctx, struct sc_image *img, struct sc_thread *t,
		      const struct sc_gpu_op_ev *op)
{
	struct csv *c = ctx;
	const struct sc_rec_gpu_op *o = op->rec;
	int tid = t ? (int)t->tid : 0;
	char dev[32], src[32], dst[32];
	FILE *f;

	(void)img;
	device_name(o->agent, dev, sizeof(dev));
	switch (o->kind) {
	case SC_GPU_KERNEL:
	case SC_GPU_GRAPH: /* grid and block 0: a graph's execution as one row */
		if (!(f = table(c, T_KERNELS)))
			return;
		field(f, op->name, false);
		field(f, op->mangled, false);
		field(f, dev, false);
		field(f, op->stream ? op->stream->name : "", false);
		fprintf(f, "%d,%d,%llu,%llu,%llu,%llu,%u,%u,%u,%u,%u,%u,%u,%u,%u,%u\n",
			(int)c->proc->pid, tid, (unsigned long long)o->corr_id,
			(unsigned long long)o->start, (unsigned long long)o->end,
			(unsigned long long)(o->end - o->start), o->grid[0], o->grid[1], o->grid[2],
			o->block[0], o->block[1], o->block[2], o->registers, o->shared_static,
			o->shared_dynamic, o->local_per_thread);
		break;
	case SC_GPU_COPY:
	case SC_GPU_SET:
		if (!(f = table(c, T_COPIES)))
			return;
		field(f, op->name, false);
		field(f, o->kind == SC_GPU_SET ? "set" : sc_copy_kind_short(o->copy_kind), false);
		field(f, dev, false);
		field(f, op->stream ? op->stream->name : "", false);
		fprintf(f, "%d,%d,%llu,%llu,%llu,%llu,%llu,", (int)c->proc->pid, tid,
			(unsigned long long)o->corr_id, (unsigned long long)o->start,
			(unsigned long long)o->end, (unsigned long long)(o->end - o->start),
			(unsigned long long)o->bytes);
		field(f,
		      device_name(o->kind == SC_GPU_SET ? o->agent : o->src_agent, src,
				  sizeof(src)),
		      false);
		field(f,
		      device_name(o->kind == SC_GPU_SET ? o->agent : o->dst_agent, dst,
				  sizeof(dst)),
		      true);
		break;
	default:
		if (!(f = table(c, T_ALLOCS)))
			return;
		fprintf(f, "%s,%s,", sc_gpu_alloc_type(o->kind), sc_gpu_mem_level(o->copy_kind));
		field(f, dev, false);
		fprintf(f, "%d,%d,%llu,%llu,0x%llx,%llu\n", (int)c->proc->pid, tid,
			(unsigned long long)o->corr_id, (unsigned long long)o->start,
			(unsigned long long)o->address, (unsigned long long)o->bytes);
		break;
	}
}

static const struct sc_timeline_ops csv_ops = {
	.region_end = on_region_end,
	.mark = on_mark,
	.counter = on_counter,
	.gpu_op = on_gpu_op,
};

/* The columns of a function table, named for what they hold in each kind of profile. */
static const char *functions_header(unsigned kind)
{
	switch (kind) {
	case SC_PROFILE_REGIONS: /* every call; calls not made inside a call of itself */
		return "Function,Module,File,Line,Calls,Self_Seconds,Self_Percent,Outermost_Calls,"
		       "Inclusive_Seconds,Inclusive_Percent";
	case SC_PROFILE_GPU_PYTHON: /* CUDA calls with device work, and its GPU time */
		return "Function,Module,File,Line,Self_Launches,Self_GPU_Seconds,Self_Percent,"
		       "Inclusive_Launches,Inclusive_GPU_Seconds,Inclusive_Percent";
	case SC_SAMPLE_OVERFLOW: /* samples, and the events counted between them */
		return "Function,Module,File,Line,Self_Samples,Self_Events,Self_Percent,"
		       "Inclusive_Samples,Inclusive_Events,Inclusive_Percent";
	default:
		return "Function,Module,File,Line,Self_Samples,Self_Seconds,Self_Percent,"
		       "Inclusive_Samples,Inclusive_Seconds,Inclusive_Percent";
	}
}

static int write_functions(struct sc_output *out, const struct sc_profile *p)
{
	const struct sc_profile_set *set = p->set;
	struct sc_outfile of;
	size_t n;
	uint32_t *ids, *hot;
	double total = p->total.sum > 0 ? p->total.sum : 1;

	if (sc_out_open(out, &of, "%s-%d.csv", p->metric, (int)p->proc->pid))
		return -1;
	ids = sc_profile_sorted_flat(p, false, &n);
	hot = sc_profile_hot_lines(p);
	fprintf(of.f, "%s\n", functions_header(p->kind));
	for (size_t i = 0; i < n; i++) {
		const struct sc_func *fn = sc_func_of(set, ids[i]);
		const struct sc_flat *fl = &p->funcs.v[ids[i]];
		const struct sc_line *ln =
			hot[ids[i]] != UINT32_MAX ? &set->lines.v[hot[ids[i]]] : NULL;

		field(of.f, fn->name, false);
		field(of.f, fn->module, false);
		field(of.f, ln ? ln->file : "", false);
		fprintf(of.f, "%u,%llu,%.9f,%.3f,%llu,%.9f,%.3f\n", ln ? ln->line : 0,
			(unsigned long long)fl->excl.count, fl->excl.sum,
			100.0 * fl->excl.sum / total, (unsigned long long)fl->incl.count,
			fl->incl.sum, 100.0 * fl->incl.sum / total);
	}
	free(ids);
	free(hot);
	return sc_out_close(out, &of);
}

static int write_csv(struct sc_output *out)
{
	int rc = sc_output_each_profile(out, write_functions);

	for (size_t i = 0; i < out->model->processes.n; i++) {
		struct csv c = { .out = out, .proc = out->model->processes.v[i] };
		struct sc_timeline_stats stats = { 0 };

		for (size_t k = 0; k < c.proc->images.n; k++)
			sc_timeline_replay(out->model, c.proc->images.v[k], &csv_ops, &c, &stats);
		for (int t = 0; t < T_COUNT; t++)
			if (c.files[t].f && sc_out_close(out, &c.files[t]))
				c.failed = 1;
		if (c.failed)
			rc = -1;
	}
	return rc;
}

const struct sc_sink sc_sink_csv = {
	.token = "csv",
	.description = "tables of functions, regions, counters, kernels, copies, allocations "
		       "(<table>-<pid>.csv)",
	.write = write_csv,
	.replays = true,
};
